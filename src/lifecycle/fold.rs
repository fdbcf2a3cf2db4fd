//! Folding the delta (online adds, `store::delta`) into a segment.
//!
//! The segment is written by the segment builder (`build::delta`) with the same tables an
//! ingest writes (FORWARD, POSTINGS, FREQUENT and the method tables): the code readers use to
//! map the delta as an in-memory segment of their snapshot (`View::load`). The fold publishes
//! it and removes the folded delta entries in one synced catalog write, so a document is
//! always in exactly one of the two and every query answer stays the same (the bytes the
//! matcher reads are identical).
//!
//! A delta's doc ids need not be contiguous (ingest batches may come between adds), so a fold
//! segment's `[doc_lo, doc_hi)` may overlap other segments' ranges; readers find a document
//! through the FORWARD table of each covering segment, and compaction merges by key.

use std::time::Instant;

use serde::Serialize;

use crate::build::{delta, SegmentBuilder};
use crate::error::Result;
use crate::index::{Index, SEGMENTS_DIR};
use crate::store::{Manifest, META_MANIFEST};

/// Manifest-style id of the in-memory delta segment of a view (defined with the view).
pub use crate::view::DELTA_SEGMENT_ID;

/// What a fold did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FoldSummary {
    pub docs: u64,
    pub segment: Option<String>,
    pub bytes: u64,
    pub seconds: f64,
}

impl Index {
    /// Folds every delta document into one new segment, published atomically with the
    /// removal of their delta entries. Nothing to do for an empty delta.
    pub fn fold_delta(&mut self) -> Result<FoldSummary> {
        self.require_writer()?;
        let started = Instant::now();
        let docs = self.catalog().delta_docs()?;
        if docs.is_empty() {
            return Ok(FoldSummary::default());
        }
        let mut manifest = self.catalog().manifest()?;
        let id = manifest.next_segment_id();
        let file = Manifest::file_name(id);
        let builder = SegmentBuilder::create_version(
            self.dir().join(SEGMENTS_DIR),
            &file,
            self.options().segment_format()?,
        )?;
        let built = delta::write(builder, &docs, &self.options().methods)?;
        let (doc_lo, doc_hi) = delta::doc_range(&docs);
        let entry = built.entry(id, doc_lo, doc_hi);
        let bytes = entry.bytes;
        manifest.segments.push(entry.clone());
        manifest.generation += 1;
        let mut wb = self.catalog().batch_writer();
        wb.put_meta_json(META_MANIFEST, &manifest);
        for (doc, _) in &docs {
            wb.delete_delta(*doc);
        }
        self.catalog().commit(wb)?;
        built.keep(); // published: the file belongs to the manifest now
                      // The next view: the new segment in place of the delta pieces, without reading every
                      // document record again; a full reload only if the view's delta is not exactly the
                      // folded documents (it always is for the writer's own view).
        let (view_delta_docs, _) = self.view.delta_size();
        if view_delta_docs == docs.len() as u64 {
            let next = self.catalog().next_doc()?;
            let view =
                self.view
                    .after_relayout(self.dir(), &manifest, Some(&entry), false, next)?;
            self.view = std::sync::Arc::new(view);
        } else {
            self.reload_view()?;
        }
        Ok(FoldSummary {
            docs: docs.len() as u64,
            segment: Some(file),
            bytes,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}
