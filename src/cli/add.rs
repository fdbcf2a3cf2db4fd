//! `ndd-index add`: online adds into the delta (`ndd_index::lifecycle::add`).

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use ndd_index::lifecycle::add::{AddOptions, DEFAULT_FOLD_BYTES, DEFAULT_FOLD_DOCS};
use ndd_index::{CreateOptions, Error, Index};

use super::{parse_size, IndexArg, InputArgs};

#[derive(Args)]
pub struct AddArgs {
    /// The index (it must exist: create it with `ingest`); --json: one JSON line per input
    /// document, then the summary.
    #[command(flatten)]
    ix: IndexArg,
    /// Files, directories (recursive), .warc[.gz], .jsonl[.gz].
    #[arg(required = true, value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// Batch name (default add-NNNNNN). Adding under a batch name used before does nothing.
    #[arg(long)]
    batch: Option<String>,
    /// Fold the delta into a segment once it holds N documents.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_FOLD_DOCS)]
    fold_docs: u64,
    /// ... or SIZE bytes of features (8 per feature).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value_t = DEFAULT_FOLD_BYTES)]
    fold_bytes: u64,
    /// Fail (add nothing) on the first bad document.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    input: InputArgs,
}

pub fn run(a: AddArgs) -> Result<(), Error> {
    let dir = &a.ix.index;
    if !dir
        .join(ndd_index::index::CATALOG_DIR)
        .join("CURRENT")
        .exists()
    {
        return Err(Error::InvalidArgument(format!(
            "no index at {} (create it with `ndd-index ingest`)",
            dir.display()
        )));
    }
    let mut index = Index::open_writer(dir, &CreateOptions::default())?;
    let opts = AddOptions {
        batch: a.batch,
        input: a.input.options(),
        strict: a.strict,
        fold_docs: a.fold_docs.max(1),
        fold_bytes: a.fold_bytes.max(1),
        sync: true,
    };
    let mut out = io::stdout().lock();
    let json = a.ix.json;
    let s = index.add(a.inputs, &opts, &mut |r| {
        if json {
            let line = serde_json::to_string(r).expect("report serializes");
            writeln!(out, "{line}").map_err(|e| Error::io("<stdout>", e))?;
        } else {
            if let Some(e) = &r.error {
                eprintln!("ndd-index: {}: {e}", r.key);
            }
            let status = format!("{:?}", r.status).to_lowercase();
            let mut line = format!("{}\t{status}", r.key);
            if let Some(d) = r.doc {
                line.push_str(&format!("\tdoc={d}"));
            }
            if let Some(c) = r.cluster {
                line.push_str(&format!("\tcluster={c}"));
            }
            if let Some(e) = &r.exact_duplicate_of {
                line.push_str(&format!("\tduplicate-of={e}"));
            }
            if let Some(n) = &r.near_duplicate {
                line.push_str(&format!("\tnear={}:{:.4}", n.key, n.resemblance));
            }
            writeln!(out, "{line}").map_err(|e| Error::io("<stdout>", e))?;
        }
        Ok(())
    })?;
    if json {
        let line = serde_json::to_string(&s).expect("summary serializes");
        writeln!(out, "{line}").map_err(|e| Error::io("<stdout>", e))
    } else if s.already_added {
        writeln!(out, "batch {} was added before: nothing done", s.batch)
            .map_err(|e| Error::io("<stdout>", e))
    } else {
        writeln!(
            out,
            "batch {}: {} added, {} replaced, {} unchanged, {} errors; delta {} docs{}",
            s.batch,
            s.added,
            s.replaced,
            s.unchanged,
            s.errors,
            s.delta_docs,
            match &s.folded {
                Some(f) => format!(
                    "; folded {} docs into {}",
                    f.docs,
                    f.segment.as_deref().unwrap_or("-")
                ),
                None => String::new(),
            }
        )
        .map_err(|e| Error::io("<stdout>", e))
    }
}
