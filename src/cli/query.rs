//! `ndd-index query`: near-duplicates of documents that are not added.

use std::path::PathBuf;

use clap::Args;
use ndd_index::method::Method;
use ndd_index::ops::{QueryRequest, QueryResult};
use ndd_index::{Error, Index, Threshold};

use super::{IndexArg, Out};

#[derive(Args)]
pub struct QueryArgs {
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

/// Answers each file; a file that cannot be read or parsed is reported on stderr and the
/// others are still answered (with a single file, its error is the command's).
pub fn run(a: QueryArgs) -> Result<(), Error> {
    // A few lookups of an index larger than memory: the blocks they read, not the kernel's
    // read-around of MBs around each.
    let (random, _, _) = ndd_index::view::lookups_want_random_access(&a.ix.index);
    ndd_index::segment::advise_random_on_open(random);
    // A process that answers its files and exits: no scan of every document record at open.
    let index = Index::open_for_lookups(&a.ix.index)?;
    let req = QueryRequest {
        method: a.method,
        threshold: a.threshold,
        top: a.top,
        max_df: a.max_df,
        format: None,
    };
    let mut out = Out::new();
    let mut failed = None;
    for f in &a.files {
        let name = f.display().to_string();
        let answer = std::fs::read(f)
            .map_err(|e| Error::io(f, e))
            .and_then(|bytes| index.query(&name, &bytes, &req));
        match answer {
            Ok(ans) if a.ix.json => out.json(&ans)?,
            Ok(ans) => print(&mut out, &ans)?,
            Err(e) if a.method != Method::Shingle => return Err(e),
            Err(e) => {
                eprintln!("ndd-index: {name}: {e}");
                failed = Some(e);
            }
        }
    }
    out.flush()?;
    match failed {
        Some(e) if a.files.len() == 1 => Err(e),
        _ => Ok(()),
    }
}

fn print(out: &mut Out, ans: &QueryResult) -> Result<(), Error> {
    match ans {
        QueryResult::Shingle(ans) => {
            out.line(format_args!(
                "{}: {} hits (words {}, features {})",
                ans.input,
                ans.hits.len(),
                ans.words,
                ans.features
            ))?;
            if let Some(k) = &ans.exact_duplicate {
                out.line(format_args!("  exact duplicate of {k}"))?;
            }
            for h in &ans.hits {
                out.line(format_args!(
                    "  {:.6}\tcontainment {:.6}\tcluster {}\t{}",
                    h.resemblance, h.containment, h.cluster, h.key
                ))?;
            }
        }
        QueryResult::Method(ans) => {
            out.line(format_args!(
                "{}: {} hits by {} (words {})",
                ans.input,
                ans.hits.len(),
                ans.method,
                ans.words
            ))?;
            for h in &ans.hits {
                let extra = match (h.hamming, h.agree) {
                    (Some(x), Some(y)) => format!("\thamming {x}\tagree {y}"),
                    (Some(x), None) => format!("\thamming {x}"),
                    (None, Some(y)) => format!("\tagree {y}"),
                    _ => String::new(),
                };
                out.line(format_args!("  {:.6}{extra}\t{}", h.similarity, h.key))?;
            }
        }
    }
    Ok(())
}
