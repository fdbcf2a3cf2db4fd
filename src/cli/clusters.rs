//! `ndd-index clusters`: duplicate clusters, `cluster_id<TAB>key` lines.

use clap::Args;
use ndd_index::method::Method;
use ndd_index::ops::ClustersRequest;
use ndd_index::{Error, Index, Threshold};

use super::{IndexArg, Out};

#[derive(Args)]
pub struct ClustersArgs {
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

pub fn run(a: ClustersArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    let req = ClustersRequest {
        method: a.method,
        threshold: a.threshold,
    };
    let mut out = Out::new();
    index.clusters(&req, |c| {
        if a.ix.json {
            let v = serde_json::json!({"cluster": c.id, "representative": c.representative, "size": c.members.len(), "members": c.members});
            return out.json(&v);
        }
        for k in &c.members {
            out.line(format_args!("{}\t{k}", c.id))?;
        }
        Ok(())
    })?;
    out.flush()
}
