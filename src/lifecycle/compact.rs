//! Compaction: merging live segments into one, dropping deleted documents.
//!
//! The merge streams: a k-way merge over the inputs' FORWARD tables (doc id order; the inputs
//! hold disjoint document sets) and POSTINGS tables (key order; the lists of a key are
//! unioned), skipping tombstoned documents and keys left with no document; FREQUENT is
//! recomputed from the merged document frequencies. The new segment is written through
//! `SegmentWriter` (tmp, fsync, rename), published by one synced catalog write of the new
//! manifest, and only then are the old files unlinked: readers that mapped them keep reading
//! (POSIX unlink semantics), and a reader that read the old manifest but finds a file gone
//! reopens its snapshot (`Index::open`).
//!
//! Postings and forward lists of live documents are copied unchanged, so every query answer
//! stays the same except that deleted documents are gone for good.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use roaring::RoaringBitmap;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::index::{Index, SEGMENTS_DIR};
use crate::segment::{self, Entries, Segment, SegmentWriter};
use crate::store::{Manifest, SegmentEntry, META_MANIFEST};
use crate::view::{LiveSegment, FREQUENT_DF, FREQUENT_TABLE};

use super::policy::{choose, choose_full, MergePolicy, SegmentInfo};

/// What a compaction did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompactSummary {
    /// Segment files merged (now removed).
    pub merged: Vec<String>,
    /// The new segment (None when nothing was merged, or every document was deleted).
    pub segment: Option<String>,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub docs: u64,
    pub deleted_docs_dropped: u64,
    pub keys: u64,
    pub postings: u64,
    pub seconds: f64,
    /// Delta documents (online adds) folded into `delta_segment` first.
    #[serde(default)]
    pub delta_docs_folded: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_segment: Option<String>,
}

impl Index {
    /// The policy's view of the live segments (exact deleted counts: a tombstone counts for the
    /// segment that still holds its forward list).
    pub fn segment_infos(&self) -> Result<Vec<SegmentInfo>> {
        let view = self.view();
        view.segments
            .iter()
            // The delta's in-memory segment is folded, not merged (`Index::fold_delta`).
            .filter(|s| s.entry.id != super::fold::DELTA_SEGMENT_ID)
            .map(|s| {
                let mut deleted = 0;
                let mut range = view.tombstones.clone();
                range.remove_range(..s.entry.doc_lo);
                range.remove_range(s.entry.doc_hi..);
                for d in &range {
                    if s.seg.get(segment::FORWARD, d as u64)?.is_some() {
                        deleted += 1;
                    }
                }
                Ok(SegmentInfo {
                    id: s.entry.id,
                    bytes: s.entry.bytes,
                    deleted_docs: deleted,
                    docs: s.seg.table_meta(segment::FORWARD).map_or(0, |t| t.entries),
                })
            })
            .collect()
    }

    /// Folds the delta (online adds) into a segment, then runs the merge policy (`full`:
    /// merge everything) and merges what it chose.
    pub fn compact(&mut self, full: bool, policy: &MergePolicy) -> Result<CompactSummary> {
        self.require_writer()?;
        let folded = self.fold_delta()?;
        let mut s = self.compact_segments(full, policy)?;
        s.delta_docs_folded = folded.docs;
        s.delta_segment = folded.segment;
        Ok(s)
    }

    /// Runs the merge policy over the segments only (the delta stays).
    pub fn compact_segments(&mut self, full: bool, policy: &MergePolicy) -> Result<CompactSummary> {
        self.require_writer()?;
        let infos = self.segment_infos()?;
        let chosen = if full {
            choose_full(&infos)
        } else {
            choose(&infos, policy)
        };
        match chosen {
            Some(ids) => self.merge_segments(&ids),
            None => Ok(CompactSummary::default()),
        }
    }

    /// Merges the live segments with these ids into one and publishes the result.
    pub fn merge_segments(&mut self, ids: &[u64]) -> Result<CompactSummary> {
        self.require_writer()?;
        let started = Instant::now();
        let view = self.view().clone();
        let inputs: Vec<&LiveSegment> = view
            .segments
            .iter()
            .filter(|s| ids.contains(&s.entry.id))
            .collect();
        if inputs.len() != ids.len() {
            return Err(Error::InvalidArgument(format!(
                "segments {ids:?} are not all live"
            )));
        }
        // Every table of the inputs is merged by what its keys and values are: doc-keyed
        // tables drop deleted documents, posting tables drop deleted ids and empty keys, and
        // FREQUENT is recomputed from the merged POSTINGS, POSTINGS_FILTER by the writer.
        let mut extra_tables: Vec<u32> = inputs
            .iter()
            .flat_map(|s| s.seg.tables().map(|t| t.id).collect::<Vec<_>>())
            .filter(|id| {
                ![
                    segment::FORWARD,
                    segment::POSTINGS,
                    FREQUENT_TABLE,
                    segment::POSTINGS_FILTER,
                ]
                .contains(id)
            })
            .collect();
        extra_tables.sort_unstable();
        extra_tables.dedup();
        for &t in &extra_tables {
            if !doc_keyed(t) && segment::value_kind(t) != segment::ValueKind::Postings {
                return Err(Error::InvalidArgument(format!(
                    "table {t} is not known to compaction"
                )));
            }
        }
        let mut manifest = self.catalog.manifest()?;
        let id = manifest.next_segment_id();
        let file = Manifest::file_name(id);
        let segs: Vec<&Segment> = inputs.iter().map(|s| s.seg.as_ref()).collect();
        let mut w = SegmentWriter::create(self.dir().join(SEGMENTS_DIR), &file)?;
        // A failed merge (disk full, I/O error) must leave no file behind, not even until the
        // next writer's open: the index stays exactly as it was.
        let mut unpublished =
            RemoveOnDrop(vec![w.tmp_path().to_path_buf(), self.segment_path(&file)]);
        let mut s = CompactSummary {
            merged: inputs.iter().map(|s| s.entry.file.clone()).collect(),
            bytes_before: inputs.iter().map(|s| s.entry.bytes).sum(),
            ..Default::default()
        };
        let dead = &view.tombstones;

        w.begin_table(segment::FORWARD)?;
        let mut prev: Option<u64> = None;
        let mut fwd_buf = Vec::new();
        merge_tables(&segs, segment::FORWARD, |doc, values| {
            if values.len() > 1 || prev == Some(doc) {
                return Err(Error::corrupt(
                    segs[values[0].0].path(),
                    0,
                    format!("doc {doc} has forward lists in several segments"),
                ));
            }
            prev = Some(doc);
            if dead.contains(doc as u32) {
                s.deleted_docs_dropped += 1;
            } else {
                s.docs += 1;
                // A FORWARD value's form depends on its segment's format version: values of
                // older segments are rewritten in the current form.
                let (i, v) = values[0];
                if segs[i].format_version() == w.format_version() {
                    w.add(doc, v)?;
                } else {
                    fwd_buf.clear();
                    segment::encode_u64s(&segs[i].decode_u64s(v)?.to_vec(), &mut fwd_buf);
                    w.add(doc, &fwd_buf)?;
                }
            }
            Ok(())
        })?;
        w.end_table()?;

        w.begin_table(segment::POSTINGS)?;
        let (mut ids_buf, mut buf) = (Vec::new(), Vec::new());
        let mut frequent: Vec<(u64, u32)> = Vec::new();
        merge_tables(&segs, segment::POSTINGS, |key, values| {
            ids_buf.clear();
            for (i, v) in values {
                let list = segment::decode_postings(v)
                    .map_err(|e| Error::corrupt(segs[*i].path(), 0, format!("key {key}: {e}")))?;
                list.for_each(|d| {
                    if !dead.contains(d) {
                        ids_buf.push(d)
                    }
                });
            }
            if ids_buf.is_empty() {
                return Ok(()); // every document of this key is deleted
            }
            ids_buf.sort_unstable();
            buf.clear();
            segment::encode_postings(&ids_buf, &mut buf);
            w.add(key, &buf)?;
            s.keys += 1;
            s.postings += ids_buf.len() as u64;
            if ids_buf.len() as u32 > FREQUENT_DF {
                frequent.push((key, ids_buf.len() as u32));
            }
            Ok(())
        })?;
        w.end_table()?;
        w.begin_table(FREQUENT_TABLE)?;
        for (k, df) in &frequent {
            w.add(*k, &df.to_le_bytes())?;
        }
        w.end_table()?;
        for &t in &extra_tables {
            w.begin_table(t)?;
            if doc_keyed(t) {
                merge_tables(&segs, t, |doc, values| {
                    if !dead.contains(doc as u32) {
                        w.add(doc, values[0].1)?;
                    }
                    Ok(())
                })?;
            } else {
                merge_tables(&segs, t, |key, values| {
                    ids_buf.clear();
                    for (i, v) in values {
                        let list = segment::decode_postings(v).map_err(|e| {
                            Error::corrupt(segs[*i].path(), 0, format!("table {t} key {key}: {e}"))
                        })?;
                        list.for_each(|d| {
                            if !dead.contains(d) {
                                ids_buf.push(d)
                            }
                        });
                    }
                    if !ids_buf.is_empty() {
                        ids_buf.sort_unstable();
                        buf.clear();
                        segment::encode_postings(&ids_buf, &mut buf);
                        w.add(key, &buf)?;
                    }
                    Ok(())
                })?;
            }
            w.end_table()?;
        }
        let meta = w.finish()?;
        let new_path = self.segment_path(&file);

        // Publish: one catalog write replaces the merged entries by the new one.
        let doc_lo = inputs.iter().map(|s| s.entry.doc_lo).min().unwrap_or(0);
        let doc_hi = inputs.iter().map(|s| s.entry.doc_hi).max().unwrap_or(0);
        manifest.segments.retain(|e| !ids.contains(&e.id));
        if s.docs > 0 {
            manifest.segments.push(SegmentEntry {
                id,
                file: file.clone(),
                doc_lo,
                doc_hi,
                bytes: meta.bytes,
                keys: s.keys,
                postings: s.postings,
            });
            s.segment = Some(file);
            s.bytes_after = meta.bytes;
        }
        manifest.segments.sort_by_key(|e| e.doc_lo);
        manifest.generation += 1;
        let mut wb = self.catalog.batch_writer();
        wb.put_meta_json(META_MANIFEST, &manifest);
        let published = self.catalog.commit(wb);
        if published.is_err() || s.docs == 0 {
            let _ = std::fs::remove_file(&new_path);
        }
        published?;
        unpublished.0.clear();
        drop(inputs);
        drop(view);
        self.reload_view()?;
        for f in &s.merged {
            let p = self.segment_path(f);
            // Unpublished already; a leftover file is removed by the next writer's open.
            let _ = std::fs::remove_file(&p);
        }
        s.seconds = started.elapsed().as_secs_f64();
        Ok(s)
    }
}

/// Files of a merged segment not (yet) published; removed when dropped.
struct RemoveOnDrop(Vec<std::path::PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Tables keyed by doc id (one value per document), as opposed to posting tables.
fn doc_keyed(table: u32) -> bool {
    table == segment::FORWARD || table == segment::SIM384
}

/// K-way merge of table `table` of `segs` in key order: `f(key, [(segment index, value)])`
/// once per distinct key, with the values of every segment holding it.
fn merge_tables<'a>(
    segs: &[&'a Segment],
    table: u32,
    mut f: impl FnMut(u64, &[(usize, &'a [u8])]) -> Result<()>,
) -> Result<()> {
    let mut iters: Vec<Entries<'a>> = segs.iter().map(|s| s.iter(table)).collect();
    let mut heads: Vec<Option<&'a [u8]>> = vec![None; segs.len()];
    let mut heap = BinaryHeap::new();
    for (i, it) in iters.iter_mut().enumerate() {
        if let Some(item) = it.next() {
            let (k, v) = item?;
            heads[i] = Some(v);
            heap.push(Reverse((k, i)));
        }
    }
    let mut group: Vec<(usize, &'a [u8])> = Vec::new();
    while let Some(Reverse((key, i))) = heap.pop() {
        group.clear();
        let mut take = |i: usize, heap: &mut BinaryHeap<Reverse<(u64, usize)>>| -> Result<()> {
            // `heads[i]` is set whenever `i` is in the heap.
            group.push((i, heads[i].take().expect("head of a queued segment")));
            if let Some(item) = iters[i].next() {
                let (k, v) = item?;
                heads[i] = Some(v);
                heap.push(Reverse((k, i)));
            }
            Ok(())
        };
        take(i, &mut heap)?;
        while let Some(&Reverse((k, j))) = heap.peek() {
            if k != key {
                break;
            }
            heap.pop();
            take(j, &mut heap)?;
        }
        f(key, &group)?;
    }
    Ok(())
}

/// Tombstones that some live segment still holds (what compaction would drop).
pub fn held_tombstones(index: &Index) -> Result<RoaringBitmap> {
    let view = index.view();
    let mut out = RoaringBitmap::new();
    for d in &view.tombstones {
        for s in &view.segments {
            if d >= s.entry.doc_lo
                && d < s.entry.doc_hi
                && s.seg.get(segment::FORWARD, d as u64)?.is_some()
            {
                out.insert(d);
            }
        }
    }
    Ok(out)
}
