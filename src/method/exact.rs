//! Exact duplicates: documents with the same digest of their canonical text (the 16-byte
//! digest of every catalog document record, format-spec/fingerprints.md §10).
//!
//! The catalog's `digests` column family names only the first document of a digest, so pairs
//! and queries group the digests of the document records (one sequential catalog scan).
//! Documents without words are left out, as in every other method (they have no content to
//! compare; all of them would be "identical").

use std::collections::HashMap;

use crate::error::Result;
use crate::index::Index;

use super::MethodPair;

/// Live documents with words, grouped by digest (groups in doc-id order).
pub fn groups(index: &Index) -> Result<HashMap<[u8; 16], Vec<u32>>> {
    let view = index.view();
    let mut by: HashMap<[u8; 16], Vec<u32>> = HashMap::new();
    for item in index.catalog().iter_docs() {
        let (doc, rec) = item?;
        if rec.words > 0 && view.is_live(doc) {
            by.entry(rec.digest).or_default().push(doc);
        }
    }
    Ok(by)
}

/// Every pair of live documents with identical canonical text (similarity 1).
pub fn pairs(index: &Index) -> Result<Vec<MethodPair>> {
    let mut out = Vec::new();
    for g in groups(index)?.values() {
        for (i, &a) in g.iter().enumerate() {
            for &b in &g[i + 1..] {
                out.push(MethodPair::new(a, b, 1.0));
            }
        }
    }
    Ok(out)
}

/// Live documents whose canonical text has `digest`.
pub fn query(index: &Index, digest: &[u8; 16]) -> Result<Vec<u32>> {
    Ok(groups(index)?.remove(digest).unwrap_or_default())
}
