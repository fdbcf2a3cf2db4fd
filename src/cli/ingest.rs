//! `ndd-index ingest`: one batch, creating the index if absent.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use ndd_index::fingerprint::adaptive::SizeGroups;
use ndd_index::fingerprint::Sample;
use ndd_index::method::{self, ImatchFilter};
use ndd_index::ops::{default_mem, CreateSpec};
use ndd_index::pipeline::{self, DocReport, IngestOptions, Progress};
use ndd_index::{Error, Index, Threshold};

use super::{merge_policy, parse_size, IndexArg, InputArgs, Out};

#[derive(Args)]
pub struct IngestArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Files, directories (recursive), .warc[.gz], .jsonl[.gz].
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Batch name (default batch-NNNNNN). Ingesting a batch name again does nothing.
    #[arg(long)]
    batch: Option<String>,
    /// Creation option: shingles of W contiguous words (default 5).
    #[arg(long, value_name = "W", conflicts_with = "shingle_chars")]
    shingle_words: Option<u32>,
    /// Creation option: the N-character shingles started at every word (e.g. 64).
    #[arg(long, value_name = "N")]
    shingle_chars: Option<u32>,
    /// Creation option: all | mod:M | minhash:K | bottomk:K | adaptive[:GROUPS] (default all).
    #[arg(long, value_name = "S")]
    sample: Option<Sample>,
    /// Creation option with `--sample adaptive`: size groups and their moduli, by distinct
    /// shingles, e.g. "0-300:1,300-1000:4,1000-:16" (the default).
    #[arg(long, value_name = "GROUPS")]
    size_groups: Option<SizeGroups>,
    /// Creation option: resemblance threshold of the clusters kept at ingest (default 0.8).
    #[arg(long, value_name = "T")]
    cluster_threshold: Option<Threshold>,
    #[command(flatten)]
    methods: MethodCreateArgs,
    /// Creation option: commonality limit; keys in more than N documents produce no
    /// candidates (they still count in resemblance). Default: no limit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_df: Option<u32>,
    /// Creation option: the site of a document whose URL and key give none (files): `path:N`,
    /// the first N directories of its key (default path:1, the host directory of a saved
    /// crawl). Documents with a URL (WARC, ARC, TREC, a JSONL url field, URL keys) have its host.
    #[arg(long, value_name = "RULE")]
    site: Option<String>,
    /// Creation option: which text of an HTML page is compared: body (all of the body's text,
    /// the default) or main (without nav, aside, header/footer outside articles and
    /// link-dense blocks such as menus; format-spec/canonical-text.md).
    #[arg(long, value_name = "body|main")]
    extract: Option<String>,
    /// Creation option: the segment format every writer of this index writes (ingest, add,
    /// compaction, the server): 3 (FORWARD lists as ranks of the segment's keys, about half
    /// the index bytes) or 2 (FORWARD lists as hashes). Default for a new index: 3 (an index
    /// created before the option existed keeps 2). Same answers either way.
    #[arg(long, value_name = "2|3", value_parser = clap::value_parser!(u32).range(2..=3))]
    segment_format: Option<u32>,
    /// Memory budget of the external sort, e.g. 512MiB, 2GiB (default: a quarter of RAM).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    mem: Option<u64>,
    /// Largest segment the merge after the batch may write, e.g. 4GiB (default 16GiB): it
    /// bounds the merge's time and the disk it needs on top of the index.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_segment: Option<u64>,
    /// How new documents are matched against the index: join (sorted probe records
    /// merge-joined with the segments, sequential reads, bounded by --mem), probe (random
    /// lookups per document), prefix (a batch into an empty index: documents sharing a key
    /// of both probe sets, no posting read; where it does not apply, auto's choice), or auto
    /// (prefix when it applies and fits a quarter of --mem, else the cheaper of join and
    /// probe by a cost model over the probe keys that pass the segments' key filters, the
    /// blocks they touch and --mem). All find the same pairs.
    #[arg(long, default_value = "auto")]
    matching: pipeline::Matching,
    /// Write one JSON line per input document to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Fail the whole batch (publish nothing) on the first bad document.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    input: InputArgs,
    /// No progress bar and no per-document errors on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Batch work that yields to a server on the same machine: run at nice 19 and IO class
    /// idle (best-effort 7 where idle is refused), every thread of the process.
    #[arg(long)]
    background: bool,
}

/// Creation options of the methods (src/method/): what is stored for them.
#[derive(Args)]
struct MethodCreateArgs {
    /// Creation option: methods whose data is stored, comma-separated (shingle, simhash,
    /// dsc-ss, combined, imatch, exact) or `all` (default: simhash; shingle and exact need
    /// nothing extra).
    #[arg(long, value_name = "LIST")]
    methods: Option<String>,
    /// Creation option: simhash tables find Hamming distance <= K (default 3).
    #[arg(long, value_name = "K")]
    simhash_k: Option<u32>,
    /// Creation option: simhash blocks B, C(B, K) tables (default 6).
    #[arg(long, value_name = "B")]
    simhash_blocks: Option<u32>,
    /// Creation option: dsc-ss min-hash values per document (default 84).
    #[arg(long, value_name = "K")]
    minhash: Option<u32>,
    /// Creation option: min-hash values per supershingle (default 14).
    #[arg(long, value_name = "S")]
    supershingle: Option<u32>,
    /// Creation option: agreeing supershingles for B-similarity (default 2).
    #[arg(long, value_name = "N")]
    b_agree: Option<u32>,
    /// Creation option: I-Match term filter idf-l-P | doc-l-P (default idf-l-10).
    #[arg(long, value_name = "F")]
    imatch_filter: Option<ImatchFilter>,
    /// Creation option: freeze the I-Match lexicon (idf statistics) from the documents at
    /// PATH, a reference collection, instead of from the first batch.
    #[arg(long, value_name = "PATH")]
    imatch_lexicon: Option<PathBuf>,
    /// Creation option: simhash token weights tf | idf (default tf; idf uses the frozen
    /// lexicon of the I-Match statistics).
    #[arg(long, value_name = "W")]
    simhash_weight: Option<String>,
    /// Creation option: simhash features words | shingles (default shingles: the distinct
    /// shingles of the index's shingle kind; words: Manku's tf simhash over word tokens).
    #[arg(long, value_name = "F")]
    simhash_features: Option<String>,
    /// Creation option: boilerplate filter: features in more than P % of the first batch's
    /// documents are left out of the simhash (default: none).
    #[arg(long, value_name = "P")]
    simhash_boilerplate: Option<u32>,
    /// Creation option: report a simhash candidate only when the resemblance of the stored
    /// shingle features reaches T (default 0.8 with shingle features, none with words), or
    /// `none`.
    #[arg(long, value_name = "T")]
    simhash_verify: Option<String>,
    /// Creation option: I-Match signatures per document, K or K:P: the lexicon and K - 1
    /// randomized copies each missing P % of its terms (Kolcz et al.; default 1, P 90).
    #[arg(long, value_name = "K[:P]")]
    imatch_lexicons: Option<String>,
}

/// `ingest --json`: the batch's summary, then the merge the policy ran after it.
#[derive(serde::Serialize)]
struct IngestJson<'a> {
    #[serde(flatten)]
    batch: &'a pipeline::IngestSummary,
    /// The merge after the batch (absent when the policy chose none).
    #[serde(skip_serializing_if = "Option::is_none")]
    compaction: Option<ndd_index::lifecycle::CompactSummary>,
    /// Why that merge failed (absent unless it did): the batch is published all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    compaction_error: Option<String>,
}

pub fn run(a: IngestArgs) -> Result<(), Error> {
    if a.background {
        // Before any worker thread starts (they inherit it).
        let p = ndd_index::ops::background::run_in_background()?;
        if !a.quiet {
            eprintln!("ndd-index ingest: running in the background ({p})");
        }
    }
    let m = a.methods;
    let create = CreateSpec {
        shingle_words: a.shingle_words,
        shingle_chars: a.shingle_chars,
        sample: a.sample.map(|s| s.to_string()),
        size_groups: a.size_groups.map(|g| g.to_string()),
        cluster_threshold: a.cluster_threshold,
        methods: m.methods,
        simhash_k: m.simhash_k,
        simhash_blocks: m.simhash_blocks,
        minhash: m.minhash,
        supershingle: m.supershingle,
        b_agree: m.b_agree,
        imatch_filter: m.imatch_filter.map(|f| f.to_string()),
        simhash_weight: m.simhash_weight,
        simhash_features: m.simhash_features,
        simhash_boilerplate: m.simhash_boilerplate,
        simhash_verify: m.simhash_verify,
        imatch_lexicons: m.imatch_lexicons,
        max_df: a.max_df,
        site: a.site,
        extract: a.extract,
        segment_format: a.segment_format,
    }
    .resolve()?;
    let opts = IngestOptions {
        batch: a.batch,
        input: a.input.options(),
        strict: a.strict,
        mem_bytes: a.mem.unwrap_or_else(default_mem),
        matching: a.matching,
    };
    // A new index: its documents are read and prepared while its catalog is created (a
    // frozen lexicon changes the methods' options after the creation: not then).
    let inputs = match &m.imatch_lexicon {
        None => pipeline::EarlyInput::start(&a.ix.index, &create, a.inputs, &opts.input),
        Some(_) => Err(a.inputs.into()),
    };
    let mut index = Index::open_writer(&a.ix.index, &create)?;
    if let Some(p) = &m.imatch_lexicon {
        method::imatch_reference::freeze_from(&index, vec![p.clone()])?;
    }
    let mut report_file = match &a.report {
        Some(p) => Some(BufWriter::new(
            File::create(p).map_err(|e| Error::io(p, e))?,
        )),
        None => None,
    };
    let bar = (!a.quiet && io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(std::time::Duration::from_millis(120));
        b
    });
    let started = std::time::Instant::now();
    let progress = |p: Progress| {
        let Some(b) = &bar else { return };
        match p {
            Progress::Read { docs, bytes } => {
                let secs = started.elapsed().as_secs_f64().max(1e-3);
                b.set_message(format!(
                    "{docs} docs, {:.1} MB read ({:.0} docs/s, {:.1} MB/s)",
                    bytes as f64 / 1e6,
                    docs as f64 / secs,
                    bytes as f64 / 1e6 / secs
                ))
            }
            Progress::Stage(s) => b.set_message(s.to_string()),
        }
    };
    let quiet = a.quiet;
    let report_path = a.report.clone();
    let mut on_report = |r: &DocReport| -> Result<(), Error> {
        if let (Some(err), false) = (&r.error, quiet) {
            eprintln!("ndd-index: skipped document {}: {err}", r.key);
        }
        if let (Some(f), Some(p)) = (report_file.as_mut(), report_path.as_ref()) {
            let line =
                serde_json::to_string(r).map_err(|e| Error::InvalidArgument(e.to_string()))?;
            writeln!(f, "{line}").map_err(|e| Error::io(p, e))?;
        }
        Ok(())
    };
    let summary = match inputs {
        Ok(early) => index.ingest_early(early, &opts, &mut on_report, &progress),
        Err(source) => index.ingest(source, &opts, &mut on_report, &progress),
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = summary?;
    let (mut compaction, mut compaction_error) = (None, None);
    if !summary.already_ingested {
        // The batch is published already: a failed merge is a warning, not a failure (the
        // index stays as the batch left it; the next ingest or `compact` merges again).
        match index.compact_after_ingest_with(&merge_policy(a.max_segment)) {
            Ok(Some(s)) => {
                if !(a.quiet || a.ix.json) {
                    eprintln!(
                        "ndd-index: compacted {} segments into {} ({:.2} s)",
                        s.merged.len(),
                        s.segment.as_deref().unwrap_or("nothing"),
                        s.seconds
                    );
                }
                compaction = Some(s);
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("ndd-index: warning: compaction after ingest failed: {e}");
                compaction_error = Some(e.to_string());
            }
        }
    }
    if let (Some(f), Some(p)) = (report_file.as_mut(), a.report.as_ref()) {
        f.flush().map_err(|e| Error::io(p, e))?;
    }
    let mut out = Out::new();
    if a.ix.json {
        return out.json(&IngestJson {
            batch: &summary,
            compaction,
            compaction_error,
        });
    }
    if summary.already_ingested {
        return out.line(format_args!(
            "batch {} was ingested already: nothing to do",
            summary.batch
        ));
    }
    out.line(format_args!(
        "batch {}: {} documents read, {} added, {} replaced, {} unchanged, {} rejected\n\
         {} exact duplicates, {} near-duplicate pairs at the cluster threshold\n\
         {:.2} s, {:.0} docs/s, {:.1} MB/s; segment {} ({} bytes)",
        summary.batch,
        summary.documents_read,
        summary.added,
        summary.replaced,
        summary.unchanged,
        summary.errors,
        summary.exact_duplicates,
        summary.near_duplicate_pairs,
        summary.seconds,
        summary.docs_per_second,
        summary.mb_per_second,
        summary.segment.as_deref().unwrap_or("-"),
        summary.segment_bytes
    ))
}
