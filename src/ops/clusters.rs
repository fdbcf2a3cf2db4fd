//! `Index::clusters`: duplicate clusters, keyed.

use serde::Serialize;

use crate::cluster::UnionFind;
use crate::error::Result;
use crate::index::Index;
use crate::method::{self, Method};
use crate::pipeline::{self, PairsConfig};
use crate::threshold::Threshold;

/// Which clusters.
#[derive(Clone, Debug)]
pub struct ClustersRequest {
    pub method: Method,
    /// Shingle: `None` (or the index's cluster threshold) = the clusters kept at ingest;
    /// another value = the connected components of `pairs` at that threshold. Other methods:
    /// as for their pairs (I-Match: its signature classes).
    pub threshold: Option<Threshold>,
}

impl Default for ClustersRequest {
    fn default() -> Self {
        ClustersRequest {
            method: Method::Shingle,
            threshold: None,
        }
    }
}

/// One cluster of two or more live documents. `id` is the cluster's id (for the kept
/// clusters: its oldest document's id, which `representative` names).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterOut {
    pub id: u32,
    pub representative: String,
    pub members: Vec<String>,
}

impl Index {
    /// Streams the clusters of `req` to `each`, as `ndd-index clusters` prints them.
    pub fn clusters(
        &self,
        req: &ClustersRequest,
        mut each: impl FnMut(&ClusterOut) -> Result<()>,
    ) -> Result<()> {
        let view = self.view();
        let stored = self.options().cluster_threshold()?;
        let groups: Vec<Vec<u32>> = match req.threshold {
            _ if req.method != Method::Shingle => {
                method::clusters(self, req.method, req.threshold)?
            }
            Some(t) if t != stored => {
                let mut cfg = PairsConfig::new(self.options().sample()?, t);
                cfg.max_df = self.options().max_df;
                // Edges go into the union-find block by block; no pair list is kept.
                let mut uf = UnionFind::new();
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
                for item in self.catalog.iter_members() {
                    let (_, m) = item?;
                    let live: Vec<u32> = m.iter().filter(|d| view.is_live(*d)).collect();
                    if live.len() > 1 {
                        g.push(live);
                    }
                }
                g
            }
        };
        let ids: Vec<u32> = groups.iter().flatten().copied().collect();
        let keys = self.keys_of(&ids)?;
        for g in &groups {
            let id = g[0];
            each(&ClusterOut {
                id,
                representative: keys[&id].clone(),
                members: g.iter().map(|d| keys[d].clone()).collect(),
            })?;
        }
        Ok(())
    }
}
