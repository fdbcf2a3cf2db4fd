//! The lifecycle subcommands of the CLI (`delete`, `compact`, `verify`): argument structs and
//! thin handlers over `ndd_index::lifecycle`.

use std::io::{self, Write};

use clap::Args;
use ndd_index::lifecycle::{delete::parse_date, verify_index, DeleteSelector};
use ndd_index::{CreateOptions, Error, Index};

use super::{merge_policy, parse_size, stdout_err as out_err, IndexArg};

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["keys", "batch", "older_than"])))]
pub struct DeleteArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Keys of the documents to delete.
    #[arg(value_name = "KEY")]
    keys: Vec<String>,
    /// Delete every document of this batch.
    #[arg(long, value_name = "NAME")]
    batch: Option<String>,
    /// Delete every document of the batches created before DATE (YYYY-MM-DD UTC, or unix
    /// seconds).
    #[arg(long, value_name = "DATE")]
    older_than: Option<String>,
}

pub fn delete(a: DeleteArgs) -> Result<(), Error> {
    let sel = match (a.batch, a.older_than) {
        (Some(b), _) => DeleteSelector::Batch(b),
        (None, Some(d)) => DeleteSelector::OlderThan(parse_date(&d)?),
        (None, None) => DeleteSelector::Keys(a.keys),
    };
    let mut index = Index::open_writer(&a.ix.index, &CreateOptions::default())?;
    let s = index.delete(&sel)?;
    let mut out = io::stdout().lock();
    for k in &s.not_found {
        eprintln!("ndd-index: no live document with key {k}");
    }
    if a.ix.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&s).expect("summary serializes")
        )
        .map_err(out_err)
    } else {
        writeln!(
            out,
            "deleted {} documents ({} keys not found); {} clusters re-clustered into {}",
            s.deleted,
            s.not_found.len(),
            s.clusters_touched,
            s.clusters_after
        )
        .map_err(out_err)
    }
}

#[derive(Args)]
pub struct CompactArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Merge every segment into one (dropping all deleted documents).
    #[arg(long)]
    full: bool,
    /// Largest segment a merge of the tiered policy may write (not `--full`), e.g. 4GiB
    /// (default 16GiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "full")]
    max_segment: Option<u64>,
    /// Yield to a server on the same machine: nice 19 and IO class idle (as `ingest
    /// --background`).
    #[arg(long)]
    background: bool,
}

pub fn compact(a: CompactArgs) -> Result<(), Error> {
    if a.background {
        ndd_index::ops::background::run_in_background()?;
    }
    let mut index = Index::open_writer(&a.ix.index, &CreateOptions::default())?;
    let s = index.compact(a.full, &merge_policy(a.max_segment))?;
    let mut out = io::stdout().lock();
    if a.ix.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&s).expect("summary serializes")
        )
        .map_err(out_err)
    } else if s.merged.is_empty() {
        writeln!(out, "nothing to compact").map_err(out_err)
    } else {
        writeln!(
            out,
            "merged {} segments ({} bytes) into {} ({} bytes): {} docs, {} deleted dropped, {:.2} s",
            s.merged.len(),
            s.bytes_before,
            s.segment.as_deref().unwrap_or("nothing"),
            s.bytes_after,
            s.docs,
            s.deleted_docs_dropped,
            s.seconds
        )
        .map_err(out_err)
    }
}

#[derive(Args)]
pub struct VerifyArgs {
    /// --json: the whole report.
    #[command(flatten)]
    ix: IndexArg,
}

/// Prints every problem (text: one per line, `file: offset N: reason`); fails with
/// `Error::VerifyFailed` (exit code 5) when there is any.
pub fn verify(a: VerifyArgs) -> Result<(), Error> {
    let r = verify_index(&a.ix.index)?;
    let mut out = io::stdout().lock();
    if a.ix.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&r).expect("report serializes")
        )
        .map_err(out_err)?;
    } else {
        for p in &r.problems {
            writeln!(out, "{p}").map_err(out_err)?;
        }
        writeln!(
            out,
            "{}: {} segments, {} blocks, {} entries, {} documents ({} live): {} problems",
            a.ix.index.display(),
            r.segments,
            r.blocks,
            r.entries,
            r.documents,
            r.live_documents,
            r.problems.len()
        )
        .map_err(out_err)?;
    }
    if r.is_ok() {
        Ok(())
    } else {
        Err(Error::VerifyFailed {
            path: a.ix.index,
            problems: r.problems.len(),
        })
    }
}
