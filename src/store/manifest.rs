//! The manifest: the list of live segments, published atomically with the catalog.
//!
//! Stored as one JSON value under `meta/manifest` and replaced in the same RocksDB write batch
//! as the documents it covers, so a reader sees either the old segment set with the old
//! documents or the new set with the new ones (format-spec/manifest.md).

use serde::{Deserialize, Serialize};

/// The folder of an index directory the manifest's segment files are in.
pub const SEGMENTS_DIR: &str = "segments";

/// Version of the manifest encoding.
pub const MANIFEST_VERSION: u32 = 1;

/// One live segment file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// Segment number, unique within the index, increasing.
    pub id: u64,
    /// File name under `<index>/segments/`.
    pub file: String,
    /// Documents whose forward lists this segment holds: ids in `[doc_lo, doc_hi)`.
    pub doc_lo: u32,
    pub doc_hi: u32,
    /// File size in bytes, checked on open.
    pub bytes: u64,
    /// Number of posting keys.
    pub keys: u64,
    /// Sum of posting lengths.
    pub postings: u64,
}

/// The set of live segments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// Bumped on every publish, so readers can tell snapshots apart.
    pub generation: u64,
    pub segments: Vec<SegmentEntry>,
}

impl Manifest {
    /// An empty manifest for a new index.
    pub fn new() -> Self {
        Manifest {
            version: MANIFEST_VERSION,
            generation: 0,
            segments: Vec::new(),
        }
    }

    /// The next unused segment id.
    pub fn next_segment_id(&self) -> u64 {
        self.segments.iter().map(|s| s.id + 1).max().unwrap_or(1)
    }

    /// File name for segment `id`.
    pub fn file_name(id: u64) -> String {
        format!("seg-{id:08}.ndds")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip_and_ids() {
        let mut m = Manifest::new();
        assert_eq!(m.next_segment_id(), 1);
        m.segments.push(SegmentEntry {
            id: 4,
            file: Manifest::file_name(4),
            doc_lo: 0,
            doc_hi: 10,
            bytes: 100,
            keys: 5,
            postings: 9,
        });
        assert_eq!(m.next_segment_id(), 5);
        assert_eq!(Manifest::file_name(4), "seg-00000004.ndds");
        let json = serde_json::to_vec(&m).unwrap();
        let back: Manifest = serde_json::from_slice(&json).unwrap();
        assert_eq!(back, m);
    }
}
