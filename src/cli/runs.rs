//! The `runs` subcommand of the CLI: near-duplicates in TREC runs (`ndd_index::runs`).

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use ndd_index::runs::{self, RunsRequest};
use ndd_index::{Error, Index, Threshold};

#[derive(Args)]
pub struct RunsArgs {
    /// The index directory (holding the runs' documents, keyed by docno).
    #[arg(long, value_name = "DIR")]
    index: PathBuf,
    /// Machine-readable JSON output (one object).
    #[arg(long)]
    json: bool,
    /// Run files, TREC format (`qid Q0 docno rank score tag`); a run is named by its tag.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// T: resemblance of redundancy, of run-topic duplicates and of `sources`.
    #[arg(long, value_name = "T", default_value = "0.5")]
    threshold: Threshold,
    /// List depths n, comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "10,20,50,100,200,500"
    )]
    top: Vec<usize>,
    /// Relevance judgments (`qid iter docno rel`; relevant = rel > 0).
    #[arg(long, value_name = "FILE")]
    qrels: Option<PathBuf>,
    /// Write each run again into OUT_DIR (same file name) without its redundant documents.
    #[arg(long, value_name = "OUT_DIR")]
    dedup_run: Option<PathBuf>,
    /// Draw thesis Figure 4.6 (run-topics by share of redundant documents, a line per n) and
    /// the per-topic prevalence bars into FILE (SVG).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Any docno that is not in the index is an error.
    #[arg(long)]
    strict: bool,
    /// Memory budget of the topics' inverted indexes, e.g. 512MiB (default: a quarter of RAM).
    /// The heap stays within it plus about 16 bytes per run line and 100 per distinct docno.
    #[arg(long, value_name = "SIZE", value_parser = super::parse_size)]
    mem: Option<u64>,
}

pub fn runs(a: RunsArgs) -> Result<(), Error> {
    let index = Index::open(&a.index)?;
    let req = RunsRequest {
        runs: a.runs,
        qrels: a.qrels,
        threshold: a.threshold,
        top: a.top,
        strict: a.strict,
        mem: a.mem,
    };
    let analysis = runs::analyze(&index, &req)?;
    if let Some(dir) = &a.dedup_run {
        let written = runs::write_dedup_runs(&analysis, dir)?;
        if !a.json {
            for p in written {
                eprintln!("ndd-index: wrote {}", p.display());
            }
        }
    }
    if let Some(p) = &a.plot {
        let svg = runs::svg::plot(&analysis.report);
        let mut tmp = p.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, svg).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, p).map_err(|e| Error::io(p, e))?;
    }
    let stdout_err = |e: io::Error| Error::io("<stdout>", e);
    let mut out = BufWriter::new(io::stdout().lock());
    if a.json {
        serde_json::to_writer(&mut out, &analysis.report)
            .map_err(|e| stdout_err(io::Error::other(e)))?;
        writeln!(out).map_err(stdout_err)?;
    } else {
        runs::report::write_text(&mut out, &analysis.report).map_err(stdout_err)?;
    }
    out.flush().map_err(stdout_err)
}
