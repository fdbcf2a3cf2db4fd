//! `ndd-index`: the command-line front end. It parses arguments, calls the library and prints;
//! all the work is in the `ndd_index` crate.
//!
//! Exit codes: 0 success (an ingest may still have rejected single documents: see its
//! summary); 1 the operation failed and changed nothing; 2 bad usage; 4 another writer holds
//! the index; 5 `verify` found problems. A closed stdout (e.g. `| head`) ends the command quietly with 0.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod cli_add;
mod cli_eval;
mod cli_lifecycle;
mod cli_runs;

use clap::{Args, Parser, Subcommand};
use ndd_index::canonicalize::sniff_format;
use ndd_index::fingerprint::{Sample, ShingleKind};
use ndd_index::input::InputOptions;
use ndd_index::method::{self, ImatchFilter, Method, MethodArgs};
use ndd_index::pipeline::{DocReport, IngestOptions, Progress};
use ndd_index::query::QueryOptions;
use ndd_index::{cluster, pipeline, CreateOptions, Error, Index, Threshold};

#[derive(Parser)]
#[command(name = "ndd-index", version, about = "Persistent near-duplicate document index", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

const EXIT_CODES: &str = "Exit codes: 0 success, 1 failure (nothing changed), 2 usage error, 4 index locked by another writer, 5 verify found problems.";

#[derive(Subcommand)]
enum Cmd {
    /// Ingest one batch of documents (creating the index if absent).
    Ingest(IngestArgs),
    /// Add documents online (into the delta; no external sort): visible at once.
    Add(cli_add::AddArgs),
    /// Near-duplicates of the given documents (they are not added).
    Query(QueryArgs),
    /// Every pair of indexed documents with resemblance >= T: key_a<TAB>key_b<TAB>resemblance.
    Pairs(PairsArgs),
    /// Duplicate clusters: cluster_id<TAB>key lines.
    Clusters(ClustersArgs),
    /// Documents, batches, segments and bytes of an index.
    Stats(StatsArgs),
    /// Delete documents (by key, batch or age): gone from every answer at once.
    Delete(cli_lifecycle::DeleteArgs),
    /// Merge segments (the tiered policy, or --full), dropping deleted documents.
    Compact(cli_lifecycle::CompactArgs),
    /// Check every checksum and the catalog against the segments; exit 5 on any problem.
    Verify(cli_lifecycle::VerifyArgs),
    /// Precision, recall and F1 of each method against a truth file (pairs or labels).
    Eval(EvalArgs),
    /// Smallest adaptive sampling ratio per size group reaching a precision target.
    Tune(cli_eval::TuneArgs),
    /// Near-duplicates in TREC runs: per topic, per run and top n, against qrels.
    Runs(cli_runs::RunsArgs),
}

#[derive(Args)]
struct IndexArg {
    /// The index directory.
    #[arg(long, value_name = "DIR")]
    index: PathBuf,
    /// Machine-readable JSON output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct IngestArgs {
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
    size_groups: Option<ndd_index::fingerprint::adaptive::SizeGroups>,
    /// Creation option: resemblance threshold of the clusters kept at ingest (default 0.8).
    #[arg(long, value_name = "T")]
    cluster_threshold: Option<Threshold>,
    #[command(flatten)]
    methods: MethodCreateArgs,
    /// Creation option: commonality limit; keys in more than N documents produce no
    /// candidates (they still count in resemblance). Default: no limit.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_df: Option<u32>,
    /// Memory budget of the external sort, e.g. 512MiB, 2GiB (default: a quarter of RAM).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    mem: Option<u64>,
    /// How new documents are matched against the index: join (sorted probe records
    /// merge-joined with the segments, sequential reads, bounded by --mem), probe (random
    /// lookups per document), or auto (probe while the segments fit in --mem, else join).
    /// All find the same pairs.
    #[arg(long, default_value = "auto")]
    matching: pipeline::Matching,
    /// Write one JSON line per input document to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Fail the whole batch (publish nothing) on the first bad document.
    #[arg(long)]
    strict: bool,
    /// JSONL field holding the document id.
    #[arg(long, default_value = "id")]
    jsonl_id: String,
    /// JSONL field holding plain text.
    #[arg(long, default_value = "text")]
    jsonl_text: String,
    /// JSONL field holding HTML (preferred over the text field when present).
    #[arg(long, default_value = "html")]
    jsonl_html: String,
    /// Documents larger than this are rejected (reported, not indexed).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256MiB")]
    max_doc_bytes: u64,
    /// No progress bar and no per-document errors on stderr.
    #[arg(long, short)]
    quiet: bool,
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
    simhash_weight: Option<method::SimhashWeight>,
}

#[derive(Args)]
struct QueryArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Documents to look up.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Minimum similarity (shingle: resemblance, default 0.5; see `pairs --help`).
    #[arg(long)]
    threshold: Option<Threshold>,
    /// shingle | simhash | dsc-ss | combined | imatch | exact.
    #[arg(long, default_value = "shingle")]
    method: Method,
    /// At most K hits per document, best first (0 = all).
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Commonality limit for this query (default: the index's; 0 = no limit).
    #[arg(long, value_name = "N")]
    max_df: Option<u32>,
}

#[derive(Args)]
struct PairsArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Minimum similarity: resemblance (shingle, required), 1 - hamming/64 (simhash, optional:
    /// the index's k bounds it), C-similarity (combined, default 355/384); dsc-ss, imatch
    /// and exact take none.
    #[arg(long)]
    threshold: Option<Threshold>,
    /// shingle | simhash | dsc-ss | combined | imatch | exact.
    #[arg(long, default_value = "shingle")]
    method: Method,
    /// Commonality limit for this run (default: the index's; 0 = no limit).
    #[arg(long, value_name = "N")]
    max_df: Option<u32>,
    /// Memory budget: of the external sorts (join) or of one block's pair buffer (probe),
    /// e.g. 64MiB (default: a quarter of RAM for join, 64MiB for probe).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    mem: Option<u64>,
    /// join: the out-of-core pipeline (probe records -> merge join with the segments ->
    /// candidate pairs -> verification, all through the external sort); probe: random
    /// lookups per document; auto: probe while the segments fit in --mem, else join. All
    /// find the same pairs.
    #[arg(long, default_value = "auto")]
    matching: pipeline::Matching,
    /// Print the work counters (postings visited, what --max-df cut, blocks) as JSON on stderr.
    #[arg(long)]
    stats: bool,
}

#[derive(Args)]
struct ClustersArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Resemblance threshold; default: the clusters kept at ingest (the index's cluster
    /// threshold). Another value computes the components of `pairs --threshold T`.
    #[arg(long)]
    threshold: Option<Threshold>,
    /// shingle | simhash | dsc-ss | combined | imatch | exact (not shingle: computed from the
    /// method's pairs, or I-Match's signature classes).
    #[arg(long, default_value = "shingle")]
    method: Method,
}

#[derive(Args)]
struct EvalArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Truth: `key_a<TAB>key_b<TAB>jaccard` pairs or `key<TAB>label` lines, with a header.
    #[arg(long, value_name = "FILE")]
    truth: PathBuf,
    /// `doc_id<TAB>path` manifest: the truth's first two columns are doc ids (the shared
    /// corpus's truth.tsv and manifest.tsv).
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Thresholds, comma-separated (only shingle depends on it; positives of pair truth do).
    #[arg(long, default_value = "0.8", value_delimiter = ',')]
    thresholds: Vec<Threshold>,
    /// Methods, comma-separated (default: every method the index stores data for).
    #[arg(long, value_delimiter = ',')]
    method: Vec<Method>,
}

#[derive(Args)]
struct StatsArgs {
    #[command(flatten)]
    ix: IndexArg,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Ingest(a) => ingest(a),
        Cmd::Add(a) => cli_add::add(a),
        Cmd::Query(a) => query(a),
        Cmd::Pairs(a) => pairs(a),
        Cmd::Clusters(a) => clusters(a),
        Cmd::Stats(a) => stats(a),
        Cmd::Delete(a) => cli_lifecycle::delete(a),
        Cmd::Compact(a) => cli_lifecycle::compact(a),
        Cmd::Verify(a) => cli_lifecycle::verify(a),
        Cmd::Eval(a) => eval(a),
        Cmd::Tune(a) => cli_eval::tune(a),
        Cmd::Runs(a) => cli_runs::runs(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ndd-index: error: {e}");
            match e {
                Error::Locked { .. } => ExitCode::from(4),
                Error::VerifyFailed { .. } => ExitCode::from(5),
                Error::InvalidArgument(_) | Error::OptionConflict { .. } => ExitCode::from(2),
                _ => ExitCode::from(1),
            }
        }
    }
}

fn stdout_err(e: io::Error) -> Error {
    Error::io("<stdout>", e)
}

fn ingest(a: IngestArgs) -> Result<(), Error> {
    let shingle = match (a.shingle_words, a.shingle_chars) {
        (Some(w), _) => Some(ShingleKind::Words(w)),
        (None, Some(n)) => Some(ShingleKind::Chars(n)),
        _ => None,
    };
    if let Some(s) = &shingle {
        s.validate()?;
    }
    if let Some(s) = &a.sample {
        s.validate()?;
    }
    let sample = ndd_index::fingerprint::adaptive::with_groups(a.sample, a.size_groups)?;
    let create = CreateOptions {
        shingle,
        sample,
        cluster_threshold: a.cluster_threshold,
        methods: MethodArgs {
            methods: a.methods.methods,
            simhash_k: a.methods.simhash_k,
            simhash_blocks: a.methods.simhash_blocks,
            minhash: a.methods.minhash,
            supershingle: a.methods.supershingle,
            b_agree: a.methods.b_agree,
            imatch_filter: a.methods.imatch_filter,
            simhash_weight: a.methods.simhash_weight,
        }
        .resolve()?,
        max_df: a.max_df,
    };
    let mut index = Index::open_writer(&a.ix.index, &create)?;
    if let Some(p) = &a.methods.imatch_lexicon {
        method::imatch_reference::freeze_from(&index, vec![p.clone()])?;
    }
    let opts = IngestOptions {
        batch: a.batch,
        input: InputOptions {
            jsonl_id_field: a.jsonl_id,
            jsonl_text_field: a.jsonl_text,
            jsonl_html_field: a.jsonl_html,
            max_doc_bytes: a.max_doc_bytes,
        },
        strict: a.strict,
        mem_bytes: a.mem.unwrap_or_else(default_mem),
        matching: a.matching,
    };
    let mut report_file = match &a.report {
        Some(p) => Some(BufWriter::new(
            File::create(p).map_err(|e| Error::io(p, e))?,
        )),
        None => None,
    };
    let bar = if !a.quiet && io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(std::time::Duration::from_millis(120));
        Some(b)
    } else {
        None
    };
    let started = std::time::Instant::now();
    let progress = |p: Progress| {
        if let Some(b) = &bar {
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
    let summary = index.ingest(a.inputs, &opts, &mut on_report, &progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = summary?;
    if !summary.already_ingested {
        cli_lifecycle::compact_after_ingest(&mut index, a.quiet || a.ix.json);
    }
    if let (Some(f), Some(p)) = (report_file.as_mut(), a.report.as_ref()) {
        f.flush().map_err(|e| Error::io(p, e))?;
    }
    let mut out = io::stdout().lock();
    if a.ix.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&summary).expect("summary serializes")
        )
        .map_err(stdout_err)?;
    } else if summary.already_ingested {
        writeln!(
            out,
            "batch {} was ingested already: nothing to do",
            summary.batch
        )
        .map_err(stdout_err)?;
    } else {
        writeln!(
            out,
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
        )
        .map_err(stdout_err)?;
    }
    Ok(())
}

fn query(a: QueryArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    if a.method != Method::Shingle {
        return query_method(&index, &a);
    }
    let opts = QueryOptions {
        threshold: a
            .threshold
            .unwrap_or_else(|| "0.5".parse().expect("valid threshold")),
        top: a.top,
        max_df: a.max_df,
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let mut failed = None;
    for f in &a.files {
        let name = f.display().to_string();
        let answer = std::fs::read(f)
            .map_err(|e| Error::io(f, e))
            .and_then(|bytes| {
                index.query_document(
                    &name,
                    &bytes,
                    sniff_format(Some(&name), &bytes),
                    None,
                    &opts,
                )
            });
        match answer {
            Ok(ans) if a.ix.json => writeln!(
                out,
                "{}",
                serde_json::to_string(&ans).expect("answers serialize")
            )
            .map_err(stdout_err)?,
            Ok(ans) => {
                writeln!(
                    out,
                    "{}: {} hits (words {}, features {})",
                    ans.input,
                    ans.hits.len(),
                    ans.words,
                    ans.features
                )
                .map_err(stdout_err)?;
                if let Some(k) = &ans.exact_duplicate {
                    writeln!(out, "  exact duplicate of {k}").map_err(stdout_err)?;
                }
                for h in &ans.hits {
                    writeln!(
                        out,
                        "  {:.6}\tcontainment {:.6}\tcluster {}\t{}",
                        h.resemblance, h.containment, h.cluster, h.key
                    )
                    .map_err(stdout_err)?;
                }
            }
            Err(e) => {
                eprintln!("ndd-index: {name}: {e}");
                failed = Some(e);
            }
        }
    }
    out.flush().map_err(stdout_err)?;
    match failed {
        Some(e) if a.files.len() == 1 => Err(e),
        _ => Ok(()),
    }
}

fn query_method(index: &Index, a: &QueryArgs) -> Result<(), Error> {
    let mut out = BufWriter::new(io::stdout().lock());
    for f in &a.files {
        let name = f.display().to_string();
        let bytes = std::fs::read(f).map_err(|e| Error::io(f, e))?;
        let format = sniff_format(Some(&name), &bytes);
        let ans = index.query_method(&name, &bytes, format, a.method, a.threshold, a.top)?;
        if a.ix.json {
            let line = serde_json::to_string(&ans).expect("answers serialize");
            writeln!(out, "{line}").map_err(stdout_err)?;
            continue;
        }
        writeln!(
            out,
            "{}: {} hits by {} (words {})",
            ans.input,
            ans.hits.len(),
            ans.method,
            ans.words
        )
        .map_err(stdout_err)?;
        for h in &ans.hits {
            let extra = match (h.hamming, h.agree) {
                (Some(x), Some(y)) => format!("\thamming {x}\tagree {y}"),
                (Some(x), None) => format!("\thamming {x}"),
                (None, Some(y)) => format!("\tagree {y}"),
                _ => String::new(),
            };
            writeln!(out, "  {:.6}{extra}\t{}", h.similarity, h.key).map_err(stdout_err)?;
        }
    }
    out.flush().map_err(stdout_err)
}

/// Keys of the documents in `groups`, looked up in the catalog (not a table of every key).
fn keys_of(index: &Index, groups: &[Vec<u32>]) -> Result<HashMap<u32, String>, Error> {
    let ids: Vec<u32> = groups.iter().flatten().copied().collect();
    let mut keys = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(4096) {
        for (d, r) in chunk.iter().zip(index.catalog().docs(chunk)?) {
            keys.insert(*d, r.map(|r| r.key).unwrap_or_default());
        }
    }
    Ok(keys)
}

/// The commonality limit of a run: the index's unless overridden (0 = none).
fn run_max_df(index: &Index, over: Option<u32>) -> Option<u32> {
    match over {
        None => index.options().max_df,
        Some(0) => None,
        Some(n) => Some(n),
    }
}

fn pairs(a: PairsArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    if a.method != Method::Shingle {
        return pairs_method(&index, &a);
    }
    let t = a
        .threshold
        .ok_or_else(|| Error::InvalidArgument("--method shingle needs --threshold".into()))?;
    let sample = index.options().sample()?;
    let view = index.view();
    let mut cfg = pipeline::PairsConfig::new(sample, t);
    cfg.max_df = run_max_df(&index, a.max_df);
    let sort =
        ndd_index::sort::SortOptions::new(a.mem.unwrap_or_else(default_mem), index.tmp_dir());
    let matching = a.matching.resolve(view, sort.mem_bytes);
    if let (Some(m), pipeline::Matching::Probe) = (a.mem, matching) {
        cfg.buffer_bytes = m; // probe's budget is its pair buffer
    }
    // Pairs stream out block by block; keys are looked up per block, not held for the index.
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut ids: Vec<u32> = Vec::new();
    let mut keys: HashMap<u32, String> = HashMap::new();
    let stats = pipeline::for_each_pair(
        matching,
        view,
        &cfg,
        &sort,
        0..view.doc_ids(),
        0,
        |block| {
            ids.clear();
            ids.extend(block.iter().flat_map(|p| [p.a, p.b]));
            ids.sort_unstable();
            ids.dedup();
            keys.clear();
            for (d, r) in ids.iter().zip(index.catalog().docs(&ids)?) {
                keys.insert(*d, r.map(|r| r.key).unwrap_or_default());
            }
            for p in block {
                let (ka, kb) = (&keys[&p.a], &keys[&p.b]);
                let (ka, kb) = if ka <= kb { (ka, kb) } else { (kb, ka) };
                if a.ix.json {
                    let v = serde_json::json!({"key_a": ka, "key_b": kb, "resemblance": p.m.resemblance});
                    writeln!(out, "{v}").map_err(stdout_err)?;
                } else {
                    writeln!(out, "{ka}\t{kb}\t{:.6}", p.m.resemblance).map_err(stdout_err)?;
                }
            }
            Ok(())
        },
    )?;
    out.flush().map_err(stdout_err)?;
    if a.stats {
        eprintln!(
            "{}",
            serde_json::to_string(&stats).expect("stats serialize")
        );
    }
    Ok(())
}

/// `pairs` of the methods other than shingle (their pair sets are small: computed whole).
fn pairs_method(index: &Index, a: &PairsArgs) -> Result<(), Error> {
    let found = method::pairs(index, a.method, a.threshold)?;
    let groups: Vec<Vec<u32>> = vec![found.iter().flat_map(|p| [p.a, p.b]).collect()];
    let keys = keys_of(index, &groups)?;
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    for p in &found {
        let (ka, kb) = (&keys[&p.a], &keys[&p.b]);
        let (ka, kb) = if ka <= kb { (ka, kb) } else { (kb, ka) };
        if a.ix.json {
            let mut v = serde_json::json!({"key_a": ka, "key_b": kb, "resemblance": p.similarity});
            v["method"] = serde_json::json!(a.method);
            v["similarity"] = serde_json::json!(p.similarity);
            if let Some(h) = p.hamming {
                v["hamming"] = serde_json::json!(h);
            }
            if let Some(c) = p.agree {
                v["agree"] = serde_json::json!(c);
            }
            writeln!(out, "{v}").map_err(stdout_err)?;
        } else {
            writeln!(out, "{ka}\t{kb}\t{:.6}", p.similarity).map_err(stdout_err)?;
        }
    }
    out.flush().map_err(stdout_err)
}

fn clusters(a: ClustersArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    let view = index.view();
    let stored = index.options().cluster_threshold()?;
    let groups: Vec<Vec<u32>> = match a.threshold {
        _ if a.method != Method::Shingle => method::clusters(&index, a.method, a.threshold)?,
        Some(t) if t != stored => {
            let sample = index.options().sample()?;
            let mut cfg = pipeline::PairsConfig::new(sample, t);
            cfg.max_df = index.options().max_df;
            // Edges go into the union-find block by block; no pair list is kept.
            let mut uf = cluster::UnionFind::new();
            pipeline::for_each_pair_block(view, &cfg, 0..view.doc_ids(), 0, |block| {
                for p in block {
                    uf.union(p.a, p.b);
                }
                Ok(())
            })?;
            uf.groups().into_values().filter(|g| g.len() > 1).collect()
        }
        _ => {
            let mut g = Vec::new();
            for item in index.catalog().iter_members() {
                let (_, m) = item?;
                let live: Vec<u32> = m.iter().filter(|d| view.is_live(*d)).collect();
                if live.len() > 1 {
                    g.push(live);
                }
            }
            g
        }
    };
    let keys = keys_of(&index, &groups)?;
    let mut out = BufWriter::new(io::stdout().lock());
    for g in &groups {
        let id = g[0];
        if a.ix.json {
            let members: Vec<&str> = g.iter().map(|d| keys[d].as_str()).collect();
            let v = serde_json::json!({"cluster": id, "representative": keys[&id], "size": g.len(), "members": members});
            writeln!(out, "{v}").map_err(stdout_err)?;
        } else {
            for d in g {
                writeln!(out, "{id}\t{}", keys[d]).map_err(stdout_err)?;
            }
        }
    }
    out.flush().map_err(stdout_err)
}

fn stats(a: StatsArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    let s = index.stats()?;
    let mut out = io::stdout().lock();
    if a.ix.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&s).expect("stats serialize")
        )
        .map_err(stdout_err)?;
        return Ok(());
    }
    let o = &s.options;
    writeln!(
        out,
        "index {}\n  documents {} (deleted {}), batches {}, clusters {} ({} docs)\n  \
         options: shingle {}, sample {}, cluster threshold {}\n  \
         methods: {}\n  \
         bytes: postings {}, forward {}, segments {}, catalog {}, total {} ({:.0} per document)",
        a.ix.index.display(),
        s.documents,
        s.deleted,
        s.batches,
        s.clusters,
        s.docs_in_clusters,
        o.shingle,
        o.sample,
        o.cluster_threshold,
        o.methods.describe(),
        s.bytes.postings,
        s.bytes.forward,
        s.bytes.segments_total,
        s.bytes.catalog,
        s.bytes.total,
        s.bytes_per_document
    )
    .map_err(stdout_err)?;
    for seg in &s.segments {
        writeln!(
            out,
            "  segment {}: docs {}..{}, {} keys, {} postings, {} bytes",
            seg.file, seg.doc_lo, seg.doc_hi, seg.keys, seg.postings, seg.bytes
        )
        .map_err(stdout_err)?;
    }
    Ok(())
}

fn eval(a: EvalArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    let truth = method::eval::Truth::load(&a.truth, a.manifest.as_deref())?;
    let methods = if a.method.is_empty() {
        Method::ALL.to_vec()
    } else {
        a.method.clone()
    };
    let warning = cli_eval::unmatched_warning(&index, &truth)?;
    if let Some(w) = &warning {
        eprintln!("warning: {w}");
    }
    let (rows, skipped) = method::eval::evaluate(&index, &truth, &methods, &a.thresholds)?;
    let mut out = io::stdout().lock();
    if a.ix.json {
        let skipped: Vec<_> = skipped
            .iter()
            .map(|(m, why)| serde_json::json!({"method": m, "reason": why}))
            .collect();
        let mut v = serde_json::json!({"rows": rows, "skipped": skipped});
        if let Some(w) = warning {
            v["warning"] = serde_json::json!(w);
        }
        writeln!(out, "{v}").map_err(stdout_err)?;
        return Ok(());
    }
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
    writeln!(
        out,
        "method\tT\tfound\tpositives\ttp\tP\tR\tF1\tseconds\tmean_err\tcorr\tfound_ratio\tclusters/true"
    )
    .map_err(stdout_err)?;
    for r in &rows {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\t{:.4}\t{:.3}\t{}\t{}\t{}\t{}",
            r.method,
            r.threshold,
            r.found,
            r.positives,
            r.true_positives,
            r.precision,
            r.recall,
            r.f1,
            r.seconds,
            opt(r.mean_abs_error),
            opt(r.correlation),
            opt(r.found_ratio),
            opt(r.clusters_per_true_cluster)
        )
        .map_err(stdout_err)?;
    }
    for (m, why) in &skipped {
        writeln!(out, "# {m} skipped: {why}").map_err(stdout_err)?;
    }
    cli_eval::print_size_groups(&mut out, &rows)?;
    Ok(())
}

/// Parses sizes like `512MiB`, `2G`, `100m`, `65536`.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid size {s:?} (e.g. 512MiB, 2GiB)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("invalid size unit in {s:?} (use KiB, MiB, GiB)")),
    };
    let v = (n * mult as f64) as u64;
    if v < (1 << 20) {
        return Err(format!("size {s:?} is below the 1 MiB minimum"));
    }
    Ok(v)
}

/// A quarter of physical memory (from /proc/meminfo), at least 64 MiB; 1 GiB if unknown.
fn default_mem() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    total.map(|t| (t / 4).max(64 << 20)).unwrap_or(1 << 30)
}
