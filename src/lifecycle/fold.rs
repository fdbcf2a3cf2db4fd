//! Folding the delta (online adds, `store::delta`) into a segment.
//!
//! [`write_delta_segment`] writes delta documents through the ordinary `SegmentWriter` with the
//! same tables an ingest writes (FORWARD, POSTINGS, FREQUENT and the method tables). Readers
//! use it to turn the delta into an in-memory segment of their snapshot (`View::load`); the
//! writer uses it to fold: the segment is published and the folded delta entries removed in
//! one synced catalog write, so a document is always in exactly one of the two and every query
//! answer stays the same (the bytes the matcher reads are identical).
//!
//! A delta's doc ids need not be contiguous (ingest batches may come between adds), so a fold
//! segment's `[doc_lo, doc_hi)` may overlap other segments' ranges; readers find a document
//! through the FORWARD table of each covering segment, and compaction merges by key.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::error::Result;
use crate::index::{Index, SEGMENTS_DIR};
use crate::method::writer::MethodWriter;
use crate::method::MethodOptions;
use crate::segment::{self, SegmentWriter};
use crate::store::delta::DeltaDoc;
use crate::store::{Catalog, Manifest, SegmentEntry, META_MANIFEST};
use crate::view::{FREQUENT_DF, FREQUENT_TABLE};

/// Manifest-style id of the in-memory delta segment of a view (never in a manifest).
pub const DELTA_SEGMENT_ID: u64 = u64::MAX;

/// What a fold did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FoldSummary {
    pub docs: u64,
    pub segment: Option<String>,
    pub bytes: u64,
    pub seconds: f64,
}

/// Writes `docs` (sorted by id, unique) as segment `<dir>/<name>` and returns its manifest
/// entry (with `id` 0: the caller sets it). Memory: the documents' (feature, doc) pairs,
/// sorted in memory -- the delta is small by construction (`add --fold-docs`).
pub fn write_delta_segment(
    dir: &Path,
    name: &str,
    docs: &[(u32, DeltaDoc)],
    methods: &MethodOptions,
    catalog: &Catalog,
) -> Result<SegmentEntry> {
    write_segment_of(
        SegmentWriter::create(dir, name)?,
        name,
        docs,
        methods,
        catalog,
    )
}

/// [`write_delta_segment`] for a private temporary segment (a snapshot's view of the delta, an
/// add's matching segment): the same bytes, without the fsyncs of a published segment.
pub fn write_temp_delta_segment(
    dir: &Path,
    name: &str,
    docs: &[(u32, DeltaDoc)],
    methods: &MethodOptions,
    catalog: &Catalog,
) -> Result<SegmentEntry> {
    let w = SegmentWriter::create(dir, name)?.temporary();
    write_segment_of(w, name, docs, methods, catalog)
}

fn write_segment_of(
    mut w: SegmentWriter,
    name: &str,
    docs: &[(u32, DeltaDoc)],
    methods: &MethodOptions,
    catalog: &Catalog,
) -> Result<SegmentEntry> {
    w.begin_table(segment::FORWARD)?;
    let mut buf = Vec::new();
    let mut pairs: Vec<(u64, u32)> = Vec::new();
    for (doc, d) in docs {
        buf.clear();
        segment::encode_u64s(&d.features, &mut buf);
        w.add(*doc as u64, &buf)?;
        pairs.extend(d.features.iter().map(|&f| (f, *doc)));
    }
    w.end_table()?;
    pairs.sort_unstable();
    let postings = pairs.len() as u64;
    let mut keys = 0u64;
    let mut frequent: Vec<(u64, u32)> = Vec::new();
    w.begin_table(segment::POSTINGS)?;
    let mut ids: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let k = pairs[i].0;
        ids.clear();
        while i < pairs.len() && pairs[i].0 == k {
            ids.push(pairs[i].1);
            i += 1;
        }
        buf.clear();
        segment::encode_postings(&ids, &mut buf);
        w.add(k, &buf)?;
        if ids.len() as u32 > FREQUENT_DF {
            frequent.push((k, ids.len() as u32));
        }
        keys += 1;
    }
    w.end_table()?;
    w.begin_table(FREQUENT_TABLE)?;
    for (k, df) in &frequent {
        w.add(*k, &df.to_le_bytes())?;
    }
    w.end_table()?;
    let mut mw = MethodWriter::new(methods);
    for (doc, d) in docs {
        mw.add_stored(*doc, d);
    }
    mw.write_tables(&mut w, catalog)?;
    let meta = w.finish()?;
    Ok(SegmentEntry {
        id: 0,
        file: name.to_string(),
        doc_lo: docs.first().map_or(0, |d| d.0),
        doc_hi: docs.last().map_or(0, |d| d.0 + 1),
        bytes: meta.bytes,
        keys,
        postings,
    })
}

/// Removes a file that was not published when dropped.
struct Unpublished(Option<PathBuf>);

impl Drop for Unpublished {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
            let _ = std::fs::remove_file(p.with_extension("ndds.tmp"));
        }
    }
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
        let seg_dir = self.dir().join(SEGMENTS_DIR);
        let guard = Unpublished(Some(seg_dir.join(&file)));
        let mut entry = write_delta_segment(
            &seg_dir,
            &file,
            &docs,
            &self.options().methods,
            self.catalog(),
        )?;
        entry.id = id;
        let bytes = entry.bytes;
        manifest.segments.push(entry);
        manifest.generation += 1;
        let mut wb = self.catalog().batch_writer();
        wb.put_meta_json(META_MANIFEST, &manifest);
        for (doc, _) in &docs {
            wb.delete_delta(*doc);
        }
        self.catalog().commit(wb)?;
        std::mem::forget(guard); // published: the file belongs to the manifest now
        self.reload_view()?;
        Ok(FoldSummary {
            docs: docs.len() as u64,
            segment: Some(file),
            bytes,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}
