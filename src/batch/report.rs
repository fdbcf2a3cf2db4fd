//! What a batch reports for each input document (`--report FILE`, JSON lines; the server's
//! and Python's per-document answers): the same records for `ingest` and `add`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::pipeline::plan::Pair;
use crate::store::Catalog;

/// What happened to one input document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocStatus {
    /// Added as a new document.
    New,
    /// Added, replacing an older version of the same key (the old one is deleted).
    Replaced,
    /// The key is indexed already with the same canonical text: skipped.
    Unchanged,
    /// Rejected (see `error`).
    Error,
}

/// The best near-duplicate of a new document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NearDup {
    pub key: String,
    pub doc: u32,
    pub resemblance: f64,
}

/// One line of the ingest report (`--report FILE`, JSON lines).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocReport {
    pub key: String,
    pub status: DocStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Key of an older document with the same canonical text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_duplicate_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub near_duplicate: Option<NearDup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<u32>,
}

impl DocReport {
    /// The report of a document given id `doc` (the rest is filled in after the publish).
    pub fn of(key: String, status: DocStatus, doc: u32) -> DocReport {
        DocReport {
            key,
            status,
            doc: Some(doc),
            error: None,
            origin: None,
            exact_duplicate_of: None,
            near_duplicate: None,
            cluster: None,
        }
    }

    /// The report of a rejected document.
    pub fn rejected(key: String, origin: String, reason: String) -> DocReport {
        DocReport {
            key,
            status: DocStatus::Error,
            doc: None,
            error: Some(reason),
            origin: Some(origin),
            exact_duplicate_of: None,
            near_duplicate: None,
            cluster: None,
        }
    }
}

/// What a published batch knows about its new documents (ids from `doc_lo`), to fill in
/// their reports: each one's older exact duplicate (`exact_of`), best near-duplicate (from
/// the batch's pairs) and cluster (`clusters`; absent = its own).
pub(crate) struct Outcome<'a> {
    catalog: &'a Catalog,
    doc_lo: u32,
    exact_of: &'a HashMap<u32, u32>,
    best: HashMap<u32, (u32, f64)>,
    clusters: &'a HashMap<u32, u32>,
}

impl<'a> Outcome<'a> {
    pub(crate) fn new(
        catalog: &'a Catalog,
        doc_lo: u32,
        pairs: &[Pair],
        exact_of: &'a HashMap<u32, u32>,
        clusters: &'a HashMap<u32, u32>,
    ) -> Outcome<'a> {
        Outcome {
            catalog,
            doc_lo,
            exact_of,
            best: super::publish::best_partners(pairs, doc_lo),
            clusters,
        }
    }

    /// Completes the report of a new or replacing document (others pass unchanged);
    /// `new_key(i)` is the key of the batch's i-th new document (id `doc_lo + i`), older
    /// documents are named by the catalog.
    pub(crate) fn finish(
        &self,
        r: &mut DocReport,
        new_key: impl Fn(usize) -> Result<String>,
    ) -> Result<()> {
        let Some(doc) = r.doc else { return Ok(()) };
        if !matches!(r.status, DocStatus::New | DocStatus::Replaced) {
            return Ok(());
        }
        let key_of = |d: u32| -> Result<String> {
            if d >= self.doc_lo {
                new_key((d - self.doc_lo) as usize)
            } else {
                Ok(self.catalog.doc(d)?.map(|r| r.key).unwrap_or_default())
            }
        };
        if let Some(&e) = self.exact_of.get(&doc) {
            r.exact_duplicate_of = Some(key_of(e)?);
        }
        if let Some(&(y, res)) = self.best.get(&doc) {
            r.near_duplicate = Some(NearDup {
                key: key_of(y)?,
                doc: y,
                resemblance: res,
            });
        }
        r.cluster = Some(self.clusters.get(&doc).copied().unwrap_or(doc));
        Ok(())
    }
}
