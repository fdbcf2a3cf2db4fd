//! Which documents of a batch are new: the checks `ingest` and `add` make for each input
//! document, in input order -- a key repeated within the batch, a key indexed already with
//! the same text (`unchanged`) or another one (`replaced`), and an exact duplicate (same
//! canonical text) of an older live document or of an earlier document of the batch.

use std::collections::{HashMap, HashSet};

use roaring::RoaringBitmap;

use crate::error::Result;
use crate::store::{Catalog, CatalogBatch, DocRecord};

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
        let (known, replaced) = known(catalog, &self.tombstones, key, digest)?;
        self.replaced.extend(replaced);
        Ok(known)
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

/// What the index knows of `key` with a text of digest `digest`, and the record of the
/// document a `Replaced` one replaces.
fn known(
    catalog: &Catalog,
    tombstones: &RoaringBitmap,
    key: &str,
    digest: &[u8; 16],
) -> Result<(Known, Option<(u32, DocRecord)>)> {
    if let Some(old) = catalog.doc_by_key(key)? {
        if let Some(rec) = catalog.doc(old)? {
            if rec.digest == *digest && !tombstones.contains(old) {
                return Ok((Known::Unchanged(old), None));
            }
            return Ok((Known::Replaced, Some((old, rec))));
        }
    }
    Ok((Known::New, None))
}

/// The same checks as [`Intake`] for a batch of any size (`ingest`): what they remember of
/// the batch's earlier documents is staged in the catalog (format-spec/rocksdb.md, "Staged
/// entries") through each document's staged write `wb`, not held in memory; only the ids of
/// the replaced documents are (a bitmap).
pub(crate) struct StagedIntake {
    /// Deleted documents (when the batch started).
    tombstones: RoaringBitmap,
    /// The published documents replaced by new ones.
    replaced: RoaringBitmap,
}

impl StagedIntake {
    pub fn new(tombstones: RoaringBitmap) -> StagedIntake {
        StagedIntake {
            tombstones,
            replaced: RoaringBitmap::new(),
        }
    }

    /// False when `key` came earlier in the batch (the first occurrence is kept).
    pub fn first_of_key(
        &mut self,
        catalog: &Catalog,
        wb: &mut CatalogBatch<'_>,
        key: &str,
    ) -> Result<bool> {
        if catalog.staged_key_seen(key)? {
            return Ok(false);
        }
        wb.stage_key_seen(key);
        Ok(true)
    }

    /// What the index knows of `key` (published documents only); for `Replaced`, the id of
    /// the document replaced, to give [`StagedIntake::replace`] with the new one's id.
    pub fn known(
        &self,
        catalog: &Catalog,
        key: &str,
        digest: &[u8; 16],
    ) -> Result<(Known, Option<u32>)> {
        let (k, replaced) = known(catalog, &self.tombstones, key, digest)?;
        Ok((k, replaced.map(|(old, _)| old)))
    }

    /// New document `new` replaces published document `old`.
    pub fn replace(&mut self, wb: &mut CatalogBatch<'_>, new: u32, old: u32) {
        self.replaced.insert(old);
        wb.stage_replacement(new, old);
    }

    /// Files new document `doc` under its digest: the batch's first with it gets the staged
    /// `digests` entry (or, when a published document has the digest, a `stage/d/` note).
    /// Returns the earlier document of the batch or older live one with the same text.
    pub fn exact(
        &mut self,
        catalog: &Catalog,
        wb: &mut CatalogBatch<'_>,
        doc: u32,
        digest: &[u8; 16],
    ) -> Result<Option<u32>> {
        if let Some(first) = catalog.staged_first_digest(digest)? {
            return Ok(Some(first));
        }
        let published = catalog.doc_by_digest(digest)?;
        match published {
            Some(_) => wb.stage_first_digest(digest, doc),
            None => wb.put_digest(digest, doc),
        }
        Ok(published.filter(|d| !self.tombstones.contains(*d)))
    }

    /// The ids of the replaced documents.
    pub fn replaced_ids(&self) -> Vec<u32> {
        self.replaced.iter().collect()
    }

    /// The replaced documents as tombstones (the view a batch is matched in has them).
    pub fn replaced_tombstones(&self) -> RoaringBitmap {
        self.replaced.clone()
    }
}
