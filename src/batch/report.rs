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
