//! `ndd-index adopt --index DIR STAGING`: publishes a staged corpus (the Spark job's
//! `--index STAGING`, format-spec/staging.md) into the index as one batch, in one atomic step.

use std::path::PathBuf;

use clap::Args;
use ndd_index::lifecycle::adopt::open_for_adopt;
use ndd_index::lifecycle::AdoptOptions;
use ndd_index::ops::default_mem;
use ndd_index::pipeline::Matching;
use ndd_index::Error;

use super::{parse_size, IndexArg, Out};

#[derive(Args)]
pub struct AdoptArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// The staging directory (`python -m ndd_index.spark dedup --index STAGING ...`).
    #[arg(value_name = "STAGING")]
    staging: PathBuf,
    /// Memory budget of the matching that computes the clusters (default: a quarter of RAM).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    mem: Option<u64>,
    /// How the adopted documents are matched (join, probe or auto), as in `ingest`.
    #[arg(long, default_value = "auto")]
    matching: Matching,
}

pub fn run(a: AdoptArgs) -> Result<(), Error> {
    let mut index = open_for_adopt(&a.ix.index, &a.staging)?;
    let opts = AdoptOptions {
        mem_bytes: a.mem.unwrap_or_else(default_mem),
        matching: a.matching,
    };
    let s = index.adopt(&a.staging, &opts)?;
    let mut out = Out::new();
    if a.ix.json {
        return out.json(&s);
    }
    out.line(format_args!(
        "batch {}: adopted {} documents (ids {}..{}) in {} segments ({} bytes{}), {} exact \
         duplicates, {} near-duplicate pairs at the cluster threshold; {:.2} s",
        s.batch,
        s.documents,
        s.doc_lo,
        s.doc_hi,
        s.segments.len(),
        s.segment_bytes,
        if s.copied > 0 {
            format!(", {} copied", s.copied)
        } else {
            String::new()
        },
        s.exact_duplicates,
        s.near_duplicate_pairs,
        s.seconds
    ))
}
