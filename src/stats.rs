//! `stats`: what an index holds and what it costs on disk.

use serde::Serialize;

use crate::error::Result;
use crate::index::Index;
use crate::options::IndexOptions;
use crate::segment;
use crate::view::FREQUENT_TABLE;

/// One live segment.
#[derive(Clone, Debug, Serialize)]
pub struct SegmentStats {
    pub file: String,
    pub doc_lo: u32,
    pub doc_hi: u32,
    pub keys: u64,
    pub postings: u64,
    pub bytes: u64,
}

/// Bytes on disk by table.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TableBytes {
    pub postings: u64,
    pub forward: u64,
    pub frequent: u64,
    /// The POSTINGS key filters (table 4, format-spec/segment.md "Key filter").
    pub key_filters: u64,
    /// The method tables (simhash, DSC-SS, I-Match ...): every other table of the segments.
    pub methods: u64,
    pub segments_total: u64,
    pub catalog: u64,
    pub total: u64,
}

/// The `stats` answer.
#[derive(Clone, Debug, Serialize)]
pub struct IndexStats {
    /// Live (not deleted) documents.
    pub documents: u64,
    pub deleted: u64,
    pub batches: u64,
    pub clusters: u64,
    pub docs_in_clusters: u64,
    pub generation: u64,
    pub segments: Vec<SegmentStats>,
    pub bytes: TableBytes,
    pub bytes_per_document: f64,
    pub options: IndexOptions,
}

impl Index {
    /// Counts and sizes of the index.
    pub fn stats(&self) -> Result<IndexStats> {
        let view = self.view();
        let manifest = self.catalog.manifest()?;
        let docs = self.catalog.iter_docs().count() as u64;
        let deleted = view.tombstones.len();
        let batches = self.catalog.batches::<serde_json::Value>()?.len() as u64;
        let (mut clusters, mut in_clusters) = (0u64, 0u64);
        for item in self.catalog.iter_members() {
            let (_, m) = item?;
            let live = m.iter().filter(|d| !view.tombstones.contains(*d)).count() as u64;
            if live > 1 {
                clusters += 1;
                in_clusters += live;
            }
        }
        let mut bytes = TableBytes::default();
        let mut segments = Vec::new();
        for s in &view.segments {
            let table = |id| s.seg.table_meta(id).map(|t| t.bytes).unwrap_or(0);
            bytes.postings += table(segment::POSTINGS);
            // Format 3's rank table exists only to map FORWARD ranks back to keys.
            bytes.forward += table(segment::FORWARD) + table(segment::POSTINGS_RANKS);
            bytes.frequent += table(FREQUENT_TABLE);
            bytes.key_filters += table(segment::POSTINGS_FILTER);
            bytes.methods += s
                .seg
                .tables()
                .filter(|t| {
                    ![
                        segment::POSTINGS,
                        segment::FORWARD,
                        FREQUENT_TABLE,
                        segment::POSTINGS_FILTER,
                        segment::POSTINGS_RANKS,
                    ]
                    .contains(&t.id)
                })
                .map(|t| t.bytes)
                .sum::<u64>();
            bytes.segments_total += s.entry.bytes;
            segments.push(SegmentStats {
                file: s.entry.file.clone(),
                doc_lo: s.entry.doc_lo,
                doc_hi: s.entry.doc_hi,
                keys: s.entry.keys,
                postings: s.entry.postings,
                bytes: s.entry.bytes,
            });
        }
        bytes.catalog = self.catalog.disk_bytes();
        bytes.total = bytes.segments_total + bytes.catalog;
        let documents = docs - deleted;
        Ok(IndexStats {
            documents,
            deleted,
            batches,
            clusters,
            docs_in_clusters: in_clusters,
            generation: manifest.generation,
            segments,
            bytes_per_document: if documents > 0 {
                bytes.total as f64 / documents as f64
            } else {
                0.0
            },
            bytes,
            options: self.options().clone(),
        })
    }
}
