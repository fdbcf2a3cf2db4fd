//! Every document's site (`input::site`), derived from what the catalog stores: the URL and
//! key of its doc record and the index's site rule (`meta/options`, `site`). Nothing more is
//! stored: the derivation is exact (the inputs are kept verbatim) and cheap (one string
//! scan per record), see format-spec/rocksdb.md, "Sites".

use std::collections::HashMap;

use crate::error::Result;
use crate::index::Index;

/// Site ids of all doc ids of an index (one pass over the catalog's doc records).
#[derive(Clone, Debug, Default)]
pub struct Sites {
    /// Site id per doc id; [`Sites::NONE`] for ids with no record (deleted or never used).
    of: Vec<u32>,
    names: Vec<String>,
}

impl Sites {
    const NONE: u32 = u32::MAX;

    /// Sites from (doc, site) pairs, for callers that already hold the names.
    pub fn from_names(docs: impl IntoIterator<Item = (u32, String)>) -> Sites {
        let mut s = Sites::default();
        let mut ids: HashMap<String, u32> = HashMap::new();
        for (d, name) in docs {
            let next = ids.len() as u32;
            let id = *ids.entry(name.clone()).or_insert_with(|| {
                s.names.push(name);
                next
            });
            if s.of.len() <= d as usize {
                s.of.resize(d as usize + 1, Self::NONE);
            }
            s.of[d as usize] = id;
        }
        s
    }

    /// The site id of `doc`, if it has a record.
    pub fn id(&self, doc: u32) -> Option<u32> {
        self.of
            .get(doc as usize)
            .copied()
            .filter(|&i| i != Self::NONE)
    }

    /// The site name of `doc`.
    pub fn name(&self, doc: u32) -> Option<&str> {
        self.id(doc).map(|i| self.names[i as usize].as_str())
    }

    /// Whether both documents have a site and it is the same.
    pub fn same(&self, a: u32, b: u32) -> bool {
        matches!((self.id(a), self.id(b)), (Some(x), Some(y)) if x == y)
    }

    /// Number of distinct sites.
    pub fn count(&self) -> usize {
        self.names.len()
    }
}

impl Index {
    /// The site of every document that has a catalog record.
    pub fn sites(&self) -> Result<Sites> {
        let rule = self.options().site_rule()?;
        let mut v = Vec::new();
        for item in self.catalog().iter_docs() {
            let (d, r) = item?;
            v.push((d, r.site(rule)));
        }
        Ok(Sites::from_names(v))
    }

    /// Sites of some doc ids, looked up in the catalog in chunks (ids without a record are
    /// left out).
    pub fn sites_of(&self, ids: &[u32]) -> Result<HashMap<u32, String>> {
        let rule = self.options().site_rule()?;
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut out = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(4096) {
            for (d, r) in chunk.iter().zip(self.catalog().docs(chunk)?) {
                if let Some(r) = r {
                    out.insert(*d, r.site(rule));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_ids_are_interned_and_missing_docs_have_none() {
        let s = Sites::from_names([(0, "a".into()), (2, "b".into()), (3, "a".into())]);
        assert_eq!(s.count(), 2);
        assert!(s.same(0, 3));
        assert!(!s.same(0, 2));
        assert!(!s.same(0, 1), "doc 1 has no site");
        assert!(!s.same(1, 1));
        assert_eq!(s.name(2), Some("b"));
        assert_eq!(s.name(9), None);
    }
}
