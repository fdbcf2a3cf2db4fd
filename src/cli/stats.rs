//! `ndd-index stats`: documents, batches, segments and bytes.

use clap::Args;
use ndd_index::{Error, Index};

use super::{IndexArg, Out};

#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    ix: IndexArg,
}

pub fn run(a: StatsArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    let s = index.stats()?;
    let mut out = Out::new();
    if a.ix.json {
        return out.json_pretty(&s);
    }
    let o = &s.options;
    out.line(format_args!(
        "index {}\n  documents {} (deleted {}), batches {}, clusters {} ({} docs)\n  \
         options: shingle {}, sample {}, cluster threshold {}\n  \
         methods: {}\n  \
         bytes: postings {}, forward {}, frequent {}, method tables {}, segments {}, catalog {}, total {} ({:.0} per document)",
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
        s.bytes.frequent,
        s.bytes.methods,
        s.bytes.segments_total,
        s.bytes.catalog,
        s.bytes.total,
        s.bytes_per_document
    ))?;
    for seg in &s.segments {
        out.line(format_args!(
            "  segment {}: docs {}..{}, {} keys, {} postings, {} bytes",
            seg.file, seg.doc_lo, seg.doc_hi, seg.keys, seg.postings, seg.bytes
        ))?;
    }
    Ok(())
}
