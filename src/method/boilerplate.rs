//! The boilerplate filter of the simhash method (format-spec/fingerprints.md §8.2): features
//! (words or shingles) found in more than P % of the documents of the index's first batch are
//! left out of every stored and queried simhash. On a site's pages they are the navigation,
//! headers and footers every page repeats; they pull unrelated pages of the site together.
//!
//! The set is learned from the index's own documents when the first batch is ingested and
//! frozen then (catalog keys `simhash/frequent` and `simhash/freq/<feature>`,
//! format-spec/rocksdb.md), like the I-Match lexicon: a stored simhash depends only on the
//! document and the frozen set, so queries and later batches compute the same values.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::{Catalog, CatalogBatch};

const RECORD_KEY: &[u8] = b"simhash/frequent";
const PREFIX: &[u8] = b"simhash/freq/";

/// The frozen frequent-feature set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frequent {
    /// Documents the set was learned from.
    pub docs: u64,
    /// The percentage it was learned with.
    pub percent: u32,
    pub features: HashSet<u64>,
}

#[derive(Serialize, Deserialize)]
struct Record {
    docs: u64,
    percent: u32,
    features: u64,
}

impl Frequent {
    /// The features of `docs` (each a sorted unique feature list) in more than `percent` % of
    /// them and in at least 2.
    pub fn learn<'a>(docs: impl IntoIterator<Item = &'a [u64]>, percent: u32) -> Frequent {
        let mut df: BTreeMap<u64, u64> = BTreeMap::new();
        let mut n = 0u64;
        for d in docs {
            n += 1;
            for &f in d {
                *df.entry(f).or_insert(0) += 1;
            }
        }
        let features = df
            .into_iter()
            .filter(|&(_, c)| c >= 2 && c * 100 > percent as u64 * n)
            .map(|(f, _)| f)
            .collect();
        Frequent {
            docs: n,
            percent,
            features,
        }
    }

    pub fn contains(&self, f: u64) -> bool {
        self.features.contains(&f)
    }

    /// The frozen set of the index, if a batch has frozen one.
    pub fn load(catalog: &Catalog) -> Result<Option<Frequent>> {
        let Some(rec) = catalog.meta_json::<Record>(RECORD_KEY)? else {
            return Ok(None);
        };
        let mut features = HashSet::with_capacity(rec.features as usize);
        for item in catalog.meta_prefix(PREFIX) {
            let (k, _) = item?;
            let b: [u8; 8] = k[PREFIX.len()..]
                .try_into()
                .map_err(|_| Error::CorruptEntry {
                    what: String::from_utf8_lossy(&k).into_owned(),
                    reason: "bad simhash frequent-feature key".into(),
                })?;
            features.insert(u64::from_be_bytes(b));
        }
        if features.len() as u64 != rec.features {
            return Err(Error::CorruptEntry {
                what: "simhash/frequent".into(),
                reason: format!(
                    "record says {} frequent features, {} keys found",
                    rec.features,
                    features.len()
                ),
            });
        }
        Ok(Some(Frequent {
            docs: rec.docs,
            percent: rec.percent,
            features,
        }))
    }

    /// Stages the set (its keys and record) into a publishing write.
    pub(crate) fn stage(&self, wb: &mut CatalogBatch<'_>) {
        for &f in &self.features {
            wb.put_meta_raw(&[PREFIX, &f.to_be_bytes()].concat(), &[]);
        }
        wb.put_meta_json(
            RECORD_KEY,
            &Record {
                docs: self.docs,
                percent: self.percent,
                features: self.features.len() as u64,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_features_above_the_share() {
        let docs: Vec<Vec<u64>> = vec![
            vec![1, 2, 3, 10],
            vec![1, 2, 4, 11],
            vec![1, 2, 5, 12],
            vec![1, 6, 7, 13],
        ];
        // 1 is in 4/4, 2 in 3/4, the rest in 1/4.
        let f = Frequent::learn(docs.iter().map(|d| d.as_slice()), 50);
        assert_eq!(f.docs, 4);
        assert_eq!(f.features, HashSet::from([1, 2]));
        let f = Frequent::learn(docs.iter().map(|d| d.as_slice()), 75);
        assert_eq!(f.features, HashSet::from([1]));
        // 100 %: nothing is in more than all documents.
        let f = Frequent::learn(docs.iter().map(|d| d.as_slice()), 100);
        assert!(f.features.is_empty());
        // One document: nothing is frequent (a feature must be in at least 2).
        let one = [vec![1u64, 2]];
        assert!(Frequent::learn(one.iter().map(|d| d.as_slice()), 10)
            .features
            .is_empty());
    }
}
