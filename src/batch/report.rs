//! What a batch reports for each input document (`--report FILE`, JSON lines; the server's
//! and Python's per-document answers): the same records for `ingest` and `add`.

use serde::{Deserialize, Serialize};

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

/// What a published batch knows about its new documents, to fill in their reports: each new
/// document's older exact duplicate (`exact_of`), best near-duplicate (`best`, from
/// [`super::publish::best_partners`]) and cluster (`clusters`; absent = its own).
pub(crate) struct Outcome<'a> {
    pub exact_of: &'a std::collections::HashMap<u32, u32>,
    pub best: &'a std::collections::HashMap<u32, (u32, f64)>,
    pub clusters: &'a std::collections::HashMap<u32, u32>,
}

impl Outcome<'_> {
    /// Completes the report of a new or replacing document (others pass unchanged);
    /// `key_of` names a doc id.
    pub(crate) fn finish(
        &self,
        r: &mut DocReport,
        key_of: &dyn Fn(u32) -> crate::error::Result<String>,
    ) -> crate::error::Result<()> {
        let Some(doc) = r.doc else { return Ok(()) };
        if !matches!(r.status, DocStatus::New | DocStatus::Replaced) {
            return Ok(());
        }
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
