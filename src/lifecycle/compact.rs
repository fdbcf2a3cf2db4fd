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

use crate::build::{BuiltSegment, SegmentBuilder};
use crate::error::{Error, Result};
use crate::index::{Index, SEGMENTS_DIR};
use crate::segment::{self, Segment};
use crate::store::{Manifest, META_MANIFEST};
use crate::view::{LiveSegment, FREQUENT_TABLE};

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
        let manifest = self.catalog.manifest()?;
        let file = Manifest::file_name(manifest.next_segment_id());
        let format = self.options().segment_format()?;
        let view = self.view().clone();
        let m = build_merge(self.dir(), format, self.tmp_dir(), &view, ids, &file)?;
        drop(view);
        let mut s = self.publish_merge(m)?;
        s.seconds = started.elapsed().as_secs_f64();
        Ok(s)
    }

    /// Publishes a merge [`build_merge`] wrote (possibly on another thread, from an older view
    /// of this writer): one catalog write replaces the merged entries by the new one, then the
    /// inputs' files are removed. The merged segments must still be live (only this writer
    /// changes the manifest while it holds the lock); documents deleted since the merge began
    /// stay tombstoned in the view and the catalog, as in any segment. A merge written under
    /// a temporary name is renamed to its segment id's file first.
    pub fn publish_merge(&mut self, m: PreparedMerge) -> Result<CompactSummary> {
        self.require_writer()?;
        let PreparedMerge {
            ids,
            built,
            mut summary,
            doc_lo,
            doc_hi,
            seconds,
        } = m;
        let mut s = std::mem::take(&mut summary);
        let started = Instant::now();
        let mut manifest = self.catalog.manifest()?;
        if !ids
            .iter()
            .all(|id| manifest.segments.iter().any(|e| e.id == *id))
        {
            return Err(Error::InvalidArgument(format!(
                "segments {ids:?} are not all live any more"
            )));
        }
        let id = manifest.next_segment_id();
        let file = Manifest::file_name(id);
        manifest.segments.retain(|e| !ids.contains(&e.id));
        let mut new_entry = None;
        if let (true, Some(b)) = (s.docs > 0, &built) {
            if b.meta.file_name != file {
                // Written under a temporary name off the writer: give it its id's name (a
                // crash from here on leaves an unlisted file, removed at the next open).
                let seg_dir = self.dir().join(SEGMENTS_DIR);
                let to = seg_dir.join(&file);
                std::fs::rename(seg_dir.join(&b.meta.file_name), &to)
                    .map_err(|e| Error::io(to.clone(), e))?;
                std::fs::File::open(&seg_dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| Error::io(seg_dir.clone(), e))?;
            }
            let mut entry = b.entry(id, doc_lo, doc_hi);
            entry.file = file.clone();
            new_entry = Some(entry.clone());
            manifest.segments.push(entry);
            s.segment = Some(file.clone());
            s.bytes_after = b.meta.bytes;
        }
        manifest.segments.sort_by_key(|e| e.doc_lo);
        manifest.generation += 1;
        let mut wb = self.catalog.batch_writer();
        wb.put_meta_json(META_MANIFEST, &manifest);
        let published = self.catalog.commit(wb);
        match built {
            Some(b) if published.is_ok() && s.docs > 0 => {
                b.keep(); // published: the file belongs to the manifest now
            }
            Some(b) => {
                let renamed = self.segment_path(&file);
                drop(b); // removes the file under its first name
                if published.is_err() && s.docs > 0 {
                    let _ = std::fs::remove_file(renamed);
                }
            }
            None => {}
        }
        published?;
        // The next view: the merged segment in place of its inputs, the rest shared (the
        // merge wrote no document record, tombstone or delta entry).
        let next = self.catalog.next_doc()?;
        let view =
            self.view
                .after_relayout(self.dir(), &manifest, new_entry.as_ref(), true, next)?;
        self.view = std::sync::Arc::new(view);
        for f in &s.merged {
            let p = self.segment_path(f);
            // Unpublished already; a leftover file is removed by the next writer's open.
            let _ = std::fs::remove_file(&p);
        }
        s.seconds = seconds + started.elapsed().as_secs_f64();
        Ok(s)
    }
}

/// A merge written by [`build_merge`] and not yet published ([`Index::publish_merge`]):
/// dropping it removes its file.
pub struct PreparedMerge {
    /// The merged segments.
    pub ids: Vec<u64>,
    built: Option<BuiltSegment>,
    summary: CompactSummary,
    doc_lo: u32,
    doc_hi: u32,
    seconds: f64,
}

impl PreparedMerge {
    /// What the merge wrote (before its publish).
    pub fn summary(&self) -> &CompactSummary {
        &self.summary
    }
}

/// The write half of a merge: the live segments `ids` of `view` (deleted documents of `view`
/// dropped) into a new file `file` of `dir`'s segments folder, not published. Reads only
/// `view`'s mapped segments, so it may run on another thread while the writer goes on
/// (the server's background merges); the writer must hold the lock until it publishes or
/// drops the result (the next writer's open removes unlisted files).
pub fn build_merge(
    dir: &std::path::Path,
    format: u32,
    tmp: std::path::PathBuf,
    view: &crate::view::View,
    ids: &[u64],
    file: &str,
) -> Result<PreparedMerge> {
    let started = Instant::now();
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
    let segs: Vec<&Segment> = inputs.iter().map(|s| s.seg.as_ref()).collect();
    let extra_tables = other_tables(&segs)?;
    // A failed merge (disk full, I/O error) must leave no file behind, not even until the
    // next writer's open: the index stays exactly as it was.
    let w = SegmentBuilder::create_version(dir.join(SEGMENTS_DIR), file, format)?.with_sort(
        crate::sort::SortOptions::new(crate::sort::DEFAULT_MEM_BYTES, tmp),
    );
    let mut s = CompactSummary {
        merged: inputs.iter().map(|s| s.entry.file.clone()).collect(),
        bytes_before: inputs.iter().map(|s| s.entry.bytes).sum(),
        ..Default::default()
    };
    let built = write_merged(w, &segs, &view.tombstones, &extra_tables, &mut s)?;
    s.keys = built.keys;
    s.postings = built.postings;
    Ok(PreparedMerge {
        ids: ids.to_vec(),
        built: Some(built),
        summary: s,
        doc_lo: inputs.iter().map(|s| s.entry.doc_lo).min().unwrap_or(0),
        doc_hi: inputs.iter().map(|s| s.entry.doc_hi).max().unwrap_or(0),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The "check" stage of a merge: the tables of `segs` besides FORWARD, POSTINGS and
/// FREQUENT, sorted; an error for a table compaction does not know how to merge.
fn other_tables(segs: &[&Segment]) -> Result<Vec<u32>> {
    // Every table of the inputs is merged by what its keys and values are: doc-keyed
    // tables drop deleted documents, posting tables drop deleted ids and empty keys, and
    // FREQUENT is recomputed from the merged POSTINGS, POSTINGS_FILTER by the writer.
    let own = [
        segment::FORWARD,
        segment::POSTINGS,
        FREQUENT_TABLE,
        segment::POSTINGS_FILTER,
        segment::POSTINGS_RANKS,
    ];
    let mut extra_tables: Vec<u32> = segs
        .iter()
        .flat_map(|s| s.tables().map(|t| t.id).collect::<Vec<_>>())
        .filter(|id| !own.contains(id))
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
    Ok(extra_tables)
}

/// The "write" stage of a merge: the merged tables of `segs` without the documents in `dead`
/// (counted in `s`) into `w`: FORWARD (doc id order; the inputs hold disjoint documents),
/// POSTINGS and FREQUENT (key order, lists unioned), then `extra_tables` by what their keys
/// are. The segment stays unpublished.
fn write_merged(
    mut w: SegmentBuilder,
    segs: &[&Segment],
    dead: &RoaringBitmap,
    extra_tables: &[u32],
    s: &mut CompactSummary,
) -> Result<BuiltSegment> {
    let mut prev: Option<u64> = None;
    let mut features: Vec<u64> = Vec::new();
    // Each input's range of documents, to tell the inputs no tombstone touches.
    let mut spans: Vec<Option<(u32, u32)>> = vec![None; segs.len()];
    merge_tables(segs, segment::FORWARD, |doc, values| {
        if values.len() > 1 || prev == Some(doc) {
            return Err(Error::corrupt(
                segs[values[0].0].path(),
                0,
                format!("doc {doc} has forward lists in several segments"),
            ));
        }
        prev = Some(doc);
        let span = &mut spans[values[0].0];
        *span = Some(span.map_or((doc as u32, doc as u32), |(lo, _)| (lo, doc as u32)));
        if dead.contains(doc as u32) {
            s.deleted_docs_dropped += 1;
        } else {
            s.docs += 1;
            // A FORWARD value's form depends on its segment's format version: values of
            // older segments are rewritten in the current form.
            let (i, v) = values[0];
            if w.ranked_forward() {
                // Format 3: the ranks are the new segment's, from its merged POSTINGS.
                w.forward_count(doc as u32, segs[i].decode_u64s(v)?.len())?;
            } else if segs[i].format_version() == w.format_version() {
                w.forward_encoded(doc, v)?;
            } else {
                features.clear();
                segs[i].decode_forward_into(v, &mut features)?;
                w.forward(doc as u32, &features)?;
            }
        }
        Ok(())
    })?;

    // An input is clean when no tombstone falls in its documents' range: its lists are
    // taken whole, without a lookup per id.
    let clean: Vec<bool> = spans
        .iter()
        .map(|s| s.is_none_or(|(lo, hi)| dead.range_cardinality(lo..=hi) == 0))
        .collect();
    // A clean input's list that no other input shares keeps its bytes when the encodings
    // agree (format 2 on: `encode_postings`), so it is decoded (for format 3's ranks) but not
    // encoded again.
    let same_bytes: Vec<bool> = segs
        .iter()
        .zip(&clean)
        .map(|(sg, &c)| c && sg.format_version() >= 2 && w.format_version() >= 2)
        .collect();
    // The merged lists go to the builder's block thread, which builds and writes the blocks
    // while this thread merges the next keys.
    let (mut ids_buf, mut buf) = (Vec::new(), Vec::new());
    w.postings_from_lists_fn(|sink| {
        merge_tables(segs, segment::POSTINGS, |key, values| {
            live_union(segs, values, &clean, dead, &mut ids_buf, || {
                format!("key {key}")
            })?;
            if ids_buf.is_empty() {
                return Ok(()); // every document of this key is deleted
            }
            let encoded = match values {
                [(i, v)] if same_bytes[*i] => Some(*v),
                _ => None,
            };
            sink(key, &ids_buf, encoded)
        })
    })?;
    // The other tables' blocks are built on the builder's block thread too.
    for &t in extra_tables {
        w.table_from_entries_fn(t, |sink| {
            if doc_keyed(t) {
                merge_tables(segs, t, |doc, values| {
                    if !dead.contains(doc as u32) {
                        sink(doc, values[0].1)?;
                    }
                    Ok(())
                })
            } else {
                merge_tables(segs, t, |key, values| {
                    live_union(segs, values, &clean, dead, &mut ids_buf, || {
                        format!("table {t} key {key}")
                    })?;
                    if !ids_buf.is_empty() {
                        buf.clear();
                        segment::encode_postings(&ids_buf, &mut buf);
                        sink(key, &buf)?;
                    }
                    Ok(())
                })
            }
        })?;
    }
    w.finish()
}

/// The live documents of one key's posting lists in the merged segments (`values`, by
/// segment index), sorted, into `ids`; `what` names the key in a decoding error. The lists of
/// `clean` inputs are taken without a tombstone lookup per id, and lists that follow one
/// another in id order (inputs of consecutive document ranges, the usual case) need no sort.
fn live_union(
    segs: &[&Segment],
    values: &[(usize, &[u8])],
    clean: &[bool],
    dead: &RoaringBitmap,
    ids: &mut Vec<u32>,
    what: impl Fn() -> String,
) -> Result<()> {
    ids.clear();
    let mut sorted = true;
    for &(i, v) in values {
        let start = ids.len();
        segment::decode_postings_into(v, ids)
            .map_err(|e| Error::corrupt(segs[i].path(), 0, format!("{}: {e}", what())))?;
        if !clean[i] {
            let mut j = start;
            for k in start..ids.len() {
                let d = ids[k];
                if !dead.contains(d) {
                    ids[j] = d;
                    j += 1;
                }
            }
            ids.truncate(j);
        }
        if start > 0 && ids.len() > start && ids[start - 1] >= ids[start] {
            sorted = false;
        }
    }
    if !sorted {
        ids.sort_unstable();
    }
    Ok(())
}

/// Tables keyed by doc id (one value per document), as opposed to posting tables.
fn doc_keyed(table: u32) -> bool {
    table == segment::FORWARD || table == segment::SIM384
}

/// K-way merge of table `table` of `segs` in key order: `f(key, [(segment index, value)])`
/// once per distinct key, with the values of every segment holding it (by segment index).
fn merge_tables<'a>(
    segs: &[&'a Segment],
    table: u32,
    f: impl FnMut(u64, &[(usize, &'a [u8])]) -> Result<()>,
) -> Result<()> {
    if segs.len() > SCAN_INPUTS {
        return merge_entries(segs.iter().map(|s| s.iter(table)).collect(), f);
    }
    // Each input's blocks checked and decoded by a thread of its own, ahead of the merge.
    std::thread::scope(|scope| {
        merge_entries(segs.iter().map(|s| s.iter_ahead(table, scope)).collect(), f)
    })
}

/// [`merge_tables`] of the inputs' entries `iters`.
fn merge_entries<'a, I>(
    mut iters: Vec<I>,
    mut f: impl FnMut(u64, &[(usize, &'a [u8])]) -> Result<()>,
) -> Result<()>
where
    I: Iterator<Item = Result<(u64, &'a [u8])>>,
{
    let mut group: Vec<(usize, &'a [u8])> = Vec::new();
    if iters.len() <= SCAN_INPUTS {
        // A merge takes a few segments (the policy's fan-in): a scan of the heads finds the
        // smallest key in fewer steps than a heap. The scan has no data-dependent branch:
        // the heads' keys sit in a fixed-size array (an input without a head holds
        // `u64::MAX` and is out of `live`), their minimum and the mask of the inputs holding
        // it are computed over all of it, and only the mask's bits are visited. Which inputs
        // hold the next key is as random as the keys, so a test per input mispredicted
        // about as often as not.
        let mut keys = [u64::MAX; SCAN_INPUTS];
        let mut values: [&'a [u8]; SCAN_INPUTS] = [&[]; SCAN_INPUTS];
        let mut live: u32 = 0;
        for (i, it) in iters.iter_mut().enumerate() {
            if let Some((k, v)) = it.next().transpose()? {
                (keys[i], values[i]) = (k, v);
                live |= 1 << i;
            }
        }
        while live != 0 {
            let key = keys.iter().fold(u64::MAX, |m, &k| m.min(k));
            let mut holders = 0u32;
            for (i, &k) in keys.iter().enumerate() {
                holders |= u32::from(k == key) << i;
            }
            holders &= live;
            group.clear();
            while holders != 0 {
                let i = holders.trailing_zeros() as usize;
                holders &= holders - 1;
                group.push((i, values[i]));
                match iters[i].next().transpose()? {
                    Some((k, v)) => (keys[i], values[i]) = (k, v),
                    None => {
                        keys[i] = u64::MAX;
                        live &= !(1 << i);
                    }
                }
            }
            f(key, &group)?;
        }
        return Ok(());
    }
    let mut heads: Vec<Option<(u64, &'a [u8])>> = iters
        .iter_mut()
        .map(|it| it.next().transpose())
        .collect::<Result<_>>()?;
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = heads
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.map(|(k, _)| Reverse((k, i))))
        .collect();
    while let Some(&Reverse((key, _))) = heap.peek() {
        group.clear();
        while let Some(&Reverse((k, i))) = heap.peek() {
            if k != key {
                break;
            }
            heap.pop();
            // `heads[i]` is set whenever `i` is in the heap.
            let (_, v) = heads[i].take().expect("head of a queued segment");
            group.push((i, v));
            if let Some((k, v)) = iters[i].next().transpose()? {
                heads[i] = Some((k, v));
                heap.push(Reverse((k, i)));
            }
        }
        // The heap gives equal keys in segment order: `group` is by segment index.
        f(key, &group)?;
    }
    Ok(())
}

/// Inputs up to which [`merge_tables`] scans the heads for the smallest key instead of
/// keeping a heap.
const SCAN_INPUTS: usize = 8;

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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::{merge_entries, SCAN_INPUTS};
    use crate::error::{Error, Result};

    /// Keys that collide across inputs often, with the ends of the key space (`u64::MAX` is
    /// also what the scan holds for an input without a head).
    fn key_sets() -> impl Strategy<Value = Vec<BTreeSet<u64>>> {
        let key = prop_oneof![
            8 => 0u64..40,
            1 => Just(0u64),
            1 => (u64::MAX - 2)..=u64::MAX,
        ];
        proptest::collection::vec(proptest::collection::btree_set(key, 0..30), 0..=12)
    }

    proptest! {
        /// Both ways of merging (a scan of up to `SCAN_INPUTS` heads, a heap above) call `f`
        /// once per distinct key in key order, with every input holding it, by input index.
        #[test]
        fn merge_groups_every_key_once_in_order(sets in key_sets()) {
            // A value names its input and key, so a value from the wrong place shows.
            let values: Vec<Vec<(u64, Vec<u8>)>> = sets
                .iter()
                .enumerate()
                .map(|(i, s)| s.iter().map(|&k| (k, format!("{i}:{k}").into_bytes())).collect())
                .collect();
            let mut want: BTreeMap<u64, Vec<(usize, Vec<u8>)>> = BTreeMap::new();
            for (i, entries) in values.iter().enumerate() {
                for (k, v) in entries {
                    want.entry(*k).or_default().push((i, v.clone()));
                }
            }
            let iters: Vec<_> = values
                .iter()
                .map(|entries| entries.iter().map(|(k, v)| Ok((*k, v.as_slice()))))
                .collect();
            let mut got: Vec<(u64, Vec<(usize, Vec<u8>)>)> = Vec::new();
            merge_entries(iters, |key, group| {
                got.push((key, group.iter().map(|&(i, v)| (i, v.to_vec())).collect()));
                Ok(())
            })
            .unwrap();
            prop_assert_eq!(got, want.into_iter().collect::<Vec<_>>());
        }
    }

    /// An input's error ends the merge with that error, in both ways of merging.
    #[test]
    fn an_input_error_ends_the_merge() {
        for inputs in [2, SCAN_INPUTS + 2] {
            let iters: Vec<Box<dyn Iterator<Item = Result<(u64, &[u8])>>>> = (0..inputs)
                .map(|i| -> Box<dyn Iterator<Item = Result<(u64, &[u8])>>> {
                    if i == 1 {
                        Box::new(
                            [
                                Ok((5, &b"v"[..])),
                                Err(Error::InvalidArgument("bad block".into())),
                            ]
                            .into_iter(),
                        )
                    } else {
                        Box::new((0..10u64).map(|k| Ok((k * 3, &b"w"[..]))))
                    }
                })
                .collect();
            let mut keys = Vec::new();
            let e = merge_entries(iters, |key, _| {
                keys.push(key);
                Ok(())
            })
            .unwrap_err();
            assert!(e.to_string().contains("bad block"), "{e}");
            // Keys up to the failing input's good entry were merged, none past its error.
            assert_eq!(keys, [0, 3], "{inputs} inputs");
        }
    }
}
