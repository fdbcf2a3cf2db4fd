//! Catalog facts by key and by cluster, for front ends that answer about one document.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::index::Index;
use crate::store::records::BatchRecord;

/// What the index knows of one live document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DocInfo {
    pub key: String,
    pub doc: u32,
    /// Name of the batch (or add) that indexed it.
    pub batch: String,
    /// Its cluster id at the index's cluster threshold (its own id when alone).
    pub cluster: u32,
    /// The other live members of its cluster, by key.
    pub partners: Vec<String>,
}

impl Index {
    /// Keys of doc ids, looked up in the catalog in chunks (deleted ids map to "").
    pub fn keys_of(&self, ids: &[u32]) -> Result<HashMap<u32, String>> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut keys = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(4096) {
            for (d, r) in chunk.iter().zip(self.catalog.docs(chunk)?) {
                keys.insert(*d, r.map(|r| r.key).unwrap_or_default());
            }
        }
        Ok(keys)
    }

    /// The live document indexed under `key`, if any.
    pub fn document(&self, key: &str) -> Result<Option<DocInfo>> {
        let Some(doc) = self.catalog.doc_by_key(key)? else {
            return Ok(None);
        };
        if !self.view().is_live(doc) {
            return Ok(None);
        }
        let Some(rec) = self.catalog.doc(doc)? else {
            return Ok(None);
        };
        let batch = self
            .catalog
            .batch::<BatchRecord>(rec.batch)?
            .map(|b| b.name)
            .unwrap_or_default();
        let cluster = self.catalog.cluster_of(doc)?;
        let partners = self
            .cluster_members(cluster)?
            .unwrap_or_default()
            .into_iter()
            .filter(|k| k != key)
            .collect();
        Ok(Some(DocInfo {
            key: rec.key,
            doc,
            batch,
            cluster,
            partners,
        }))
    }

    /// The live members of cluster `cluster`, by key, oldest first; `None` when no such
    /// cluster has two or more live members (a single live document is its own cluster:
    /// `Some(vec![key])`).
    pub fn cluster_members(&self, cluster: u32) -> Result<Option<Vec<String>>> {
        let view = self.view();
        let ids: Vec<u32> = match self.catalog.members(cluster)? {
            Some(m) => m.iter().filter(|d| view.is_live(*d)).collect(),
            None if cluster < view.doc_ids() && view.is_live(cluster) => {
                // A document alone is not stored as a cluster; it is its own.
                if self.catalog.cluster_of(cluster)? != cluster {
                    return Ok(None);
                }
                vec![cluster]
            }
            None => return Ok(None),
        };
        if ids.is_empty() {
            return Ok(None);
        }
        let keys = self.keys_of(&ids)?;
        Ok(Some(ids.iter().map(|d| keys[d].clone()).collect()))
    }

    /// Number of live documents.
    pub fn live_documents(&self) -> Result<u64> {
        Ok(self.stats()?.documents)
    }
}
