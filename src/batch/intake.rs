//! Which documents of a batch are new: the checks `ingest` and `add` make for each input
//! document, in input order -- a key repeated within the batch, a key indexed already with
//! the same text (`unchanged`) or another one (`replaced`), and an exact duplicate (same
//! canonical text) of an older live document or of an earlier document of the batch.

use std::collections::{HashMap, HashSet};

use roaring::RoaringBitmap;

use crate::error::Result;
use crate::store::{Catalog, DocRecord};

/// Why the second document with a key in one batch is rejected.
pub(crate) const DUPLICATE_KEY: &str =
    "duplicate key within the batch (the first occurrence was kept)";

/// What the index knows of a document's key.
pub(crate) enum Known {
    /// Nothing: a new document.
    New,
    /// An older document with another text, which the new one replaces.
    Replaced,
    /// This live document has the same text: nothing to add.
    Unchanged(u32),
}

/// The batch's documents so far, as the checks need them.
pub(crate) struct Intake {
    /// Deleted documents (when the batch started).
    tombstones: RoaringBitmap,
    keys: HashSet<String>,
    /// The batch's first document with each digest.
    pub digests: HashMap<[u8; 16], u32>,
    /// New document -> the older (or earlier) document with the same text.
    pub exact_of: HashMap<u32, u32>,
    /// The documents replaced by new ones, with their records.
    pub replaced: Vec<(u32, DocRecord)>,
}

impl Intake {
    pub fn new(tombstones: RoaringBitmap) -> Intake {
        Intake {
            tombstones,
            keys: HashSet::new(),
            digests: HashMap::new(),
            exact_of: HashMap::new(),
            replaced: Vec::new(),
        }
    }

    /// False when `key` came earlier in the batch (the first occurrence is kept).
    pub fn first_of_key(&mut self, key: &str) -> bool {
        self.keys.insert(key.to_string())
    }

    /// What the index knows of `key` with a text of digest `digest`; a replaced document is
    /// remembered in `replaced`.
    pub fn known(&mut self, catalog: &Catalog, key: &str, digest: &[u8; 16]) -> Result<Known> {
        if let Some(old) = catalog.doc_by_key(key)? {
            if let Some(rec) = catalog.doc(old)? {
                if rec.digest == *digest && !self.tombstones.contains(old) {
                    return Ok(Known::Unchanged(old));
                }
                self.replaced.push((old, rec));
                return Ok(Known::Replaced);
            }
        }
        Ok(Known::New)
    }

    /// Files new document `doc` under its digest. True when an earlier document of the batch
    /// or an older live one has the same text (then in `exact_of`).
    pub fn exact(&mut self, catalog: &Catalog, doc: u32, digest: &[u8; 16]) -> Result<bool> {
        let exact = match self.digests.get(digest) {
            Some(&d) => Some(d),
            None => {
                self.digests.insert(*digest, doc);
                catalog
                    .doc_by_digest(digest)?
                    .filter(|d| !self.tombstones.contains(*d))
            }
        };
        if let Some(e) = exact {
            self.exact_of.insert(doc, e);
        }
        Ok(exact.is_some())
    }

    /// The ids of the replaced documents.
    pub fn replaced_ids(&self) -> Vec<u32> {
        self.replaced.iter().map(|(d, _)| *d).collect()
    }

    /// The replaced documents as tombstones (the view a batch is matched in has them).
    pub fn replaced_tombstones(&self) -> RoaringBitmap {
        self.replaced.iter().map(|(d, _)| *d).collect()
    }
}
