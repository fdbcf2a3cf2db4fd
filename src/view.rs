//! A consistent snapshot for reading: the live segments named by one manifest, the tombstones
//! and the per-document feature counts of the same catalog state.
//!
//! Everything the query path and the pair pipeline read goes through a `View`, so an answer
//! never mixes two publishes.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::options::IndexOptions;
use crate::segment::{self, Segment};
use crate::store::manifest::SEGMENTS_DIR;
use crate::store::{Catalog, SegmentEntry};

/// The FREQUENT table (defined with the other table ids in `segment`).
pub use crate::segment::{FREQUENT as FREQUENT_TABLE, FREQUENT_DF};

/// Hasher for maps keyed by our 64-bit feature hashes: they are uniformly distributed already
/// (xxh3 output), so the identity is a perfect hash and SipHash would only cost time.
#[derive(Default, Clone, Copy)]
pub struct FeatureHasher(u64);

impl std::hash::Hasher for FeatureHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed through `write_u64`; fold anything else defensively.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// A map from feature hash to a value.
pub type FeatureMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<FeatureHasher>>;

/// One live segment with the manifest entry that published it.
pub struct LiveSegment {
    pub entry: SegmentEntry,
    pub seg: Arc<Segment>,
}

impl LiveSegment {
    /// Another handle on the same mapped segment.
    pub fn share(&self) -> LiveSegment {
        LiveSegment {
            entry: self.entry.clone(),
            seg: Arc::clone(&self.seg),
        }
    }
}

/// Manifest-style id of the delta's in-memory segments in a view (never in a manifest).
pub const DELTA_SEGMENT_ID: u64 = u64::MAX;

/// Most pieces the delta is kept in by [`View::after_add`] before they are rebuilt as one
/// segment: each piece is one more segment every query probes. The merge policy keeps at
/// most 3 pieces a size tier (tiers 4x apart), so this bound is reached only past ~1,000 adds
/// without a fold.
pub const MAX_DELTA_PIECES: usize = 16;

/// [`View::after_add`] merges the newest this many delta pieces once they are of one size
/// tier (the oldest of them at most 1.5x the newest).
const MERGE_PIECES: usize = 4;

/// A read snapshot of the index.
pub struct View {
    /// Live segments, in manifest (publish) order.
    pub segments: Vec<LiveSegment>,
    /// Segments indexed by the doc ranges of their forward tables, sorted by `doc_lo`.
    by_doc: Vec<(u32, u32, usize)>,
    /// Deleted documents.
    pub tombstones: RoaringBitmap,
    /// Features per document id (0 = no such document).
    pub sizes: Vec<u32>,
    /// Document frequency of the frequent keys, summed over segments.
    pub frequent: FeatureMap<u32>,
}

impl View {
    /// Loads the snapshot described by the catalog's current manifest.
    pub fn load(dir: &Path, catalog: &Catalog, _options: &IndexOptions) -> Result<View> {
        let manifest = catalog.manifest()?;
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for entry in manifest.segments {
            let path = dir.join(SEGMENTS_DIR).join(&entry.file);
            let seg = Segment::open(&path)?;
            if seg.len_bytes() != entry.bytes {
                return Err(Error::corrupt(
                    &path,
                    0,
                    format!(
                        "file is {} bytes, the manifest says {}",
                        seg.len_bytes(),
                        entry.bytes
                    ),
                ));
            }
            segments.push(LiveSegment {
                entry,
                seg: Arc::new(seg),
            });
        }
        if let Some(delta) = delta_segment(catalog, _options)? {
            segments.push(delta);
        }
        let by_doc = doc_ranges(&segments);
        let mut frequent = FeatureMap::default();
        for s in &segments {
            add_frequent(&s.seg, &mut frequent)?;
        }
        let next = catalog.next_doc()? as usize;
        let mut sizes = vec![0u32; next];
        for item in catalog.iter_docs() {
            let (doc, rec) = item?;
            if let Some(s) = sizes.get_mut(doc as usize) {
                *s = rec.features;
            }
        }
        Ok(View {
            segments,
            by_doc,
            tombstones: catalog.tombstones()?,
            sizes,
            frequent,
        })
    }

    /// This view plus one more (not yet published) segment holding documents
    /// `entry.doc_lo..entry.doc_hi` with the given feature counts, and extra tombstones.
    /// Ingest matches a batch against this before publishing it.
    pub fn with_new_segment(
        &self,
        path: &Path,
        entry: SegmentEntry,
        new_sizes: &[u32],
        extra_tombstones: &RoaringBitmap,
    ) -> Result<View> {
        self.with_new_segments(vec![(path.to_owned(), entry)], new_sizes, extra_tombstones)
    }

    /// [`View::with_new_segment`] for several segments holding consecutive documents from
    /// the view's next id on (`adopt` matches a staged corpus against this).
    pub fn with_new_segments(
        &self,
        new: Vec<(std::path::PathBuf, SegmentEntry)>,
        new_sizes: &[u32],
        extra_tombstones: &RoaringBitmap,
    ) -> Result<View> {
        let mut segments: Vec<LiveSegment> = self
            .segments
            .iter()
            .map(|s| LiveSegment {
                entry: s.entry.clone(),
                seg: Arc::clone(&s.seg),
            })
            .collect();
        let mut frequent = self.frequent.clone();
        for (path, entry) in new {
            if entry.doc_hi > entry.doc_lo {
                let seg = Segment::open(&path)?;
                add_frequent(&seg, &mut frequent)?;
                segments.push(LiveSegment {
                    entry,
                    seg: Arc::new(seg),
                });
            }
        }
        let by_doc = doc_ranges(&segments);
        let mut sizes = self.sizes.clone();
        sizes.extend_from_slice(new_sizes);
        Ok(View {
            segments,
            by_doc,
            tombstones: &self.tombstones | extra_tombstones,
            sizes,
            frequent,
        })
    }

    /// The view after an online add published its documents: `self` is the view the add
    /// matched them in ([`View::with_new_segment`]: this snapshot's segments, sizes,
    /// tombstones and frequent keys plus the add's own small segment, holding exactly the new
    /// documents, when `has_piece`), which becomes the next snapshot without copying anything
    /// again. The add's segment is kept as one more piece of the delta; pieces are merged
    /// like a base-4 counter (the newest [`MERGE_PIECES`] once they are of one size tier,
    /// rebuilt from the catalog's delta entries of their doc range), so a document is
    /// rewritten about log4(adds per fold) times, a merge happens at every third add or so,
    /// and the delta stays in a few pieces (at most [`MAX_DELTA_PIECES`]: past it, all pieces
    /// are merged). Answers are those of a
    /// full reload (same documents, postings and forward lists; only the per-segment FREQUENT
    /// hints that order probes differ).
    pub fn after_add(
        mut self,
        catalog: &Catalog,
        options: &IndexOptions,
        has_piece: bool,
    ) -> Result<View> {
        if has_piece {
            if let Some(p) = self.segments.last_mut() {
                p.entry.id = DELTA_SEGMENT_ID;
            }
            self.merge_delta_pieces(catalog, options)?;
            self.by_doc = doc_ranges(&self.segments);
        }
        let next = catalog.next_doc()? as usize;
        if self.sizes.len() < next {
            self.sizes.resize(next, 0);
        }
        Ok(self)
    }

    /// Merges the newest delta pieces (see [`View::after_add`]).
    fn merge_delta_pieces(&mut self, catalog: &Catalog, options: &IndexOptions) -> Result<()> {
        let is_delta = |s: &LiveSegment| s.entry.id == DELTA_SEGMENT_ID;
        let docs_of = |s: &LiveSegment| s.seg.table_meta(segment::FORWARD).map_or(0, |t| t.entries);
        loop {
            let pieces: Vec<usize> = (0..self.segments.len())
                .filter(|&i| is_delta(&self.segments[i]))
                .collect();
            let n = pieces.len();
            let from = if n > MAX_DELTA_PIECES {
                0
            } else if n >= MERGE_PIECES
                && 2 * docs_of(&self.segments[pieces[n - MERGE_PIECES]])
                    <= 3 * docs_of(&self.segments[pieces[n - 1]])
            {
                n - MERGE_PIECES
            } else {
                return Ok(());
            };
            let merged: Vec<usize> = pieces[from..].to_vec();
            let lo = merged
                .iter()
                .map(|&i| self.segments[i].entry.doc_lo)
                .min()
                .expect("pieces to merge");
            let hi = merged
                .iter()
                .map(|&i| self.segments[i].entry.doc_hi)
                .max()
                .expect("pieces to merge");
            let docs = catalog.delta_docs_in(lo, hi)?;
            for &i in merged.iter().rev() {
                let old = self.segments.remove(i);
                sub_frequent(&old.seg, &mut self.frequent)?;
            }
            if let Some(piece) = delta_segment_of(catalog, options, &docs)? {
                add_frequent(&piece.seg, &mut self.frequent)?;
                self.segments.push(piece);
            }
        }
    }

    /// Documents and features in the delta (online adds not folded yet), from the snapshot's
    /// delta segments: the fold check after every add, without reading the catalog.
    pub fn delta_size(&self) -> (u64, u64) {
        self.segments
            .iter()
            .filter(|s| s.entry.id == DELTA_SEGMENT_ID)
            .fold((0, 0), |(d, f), s| {
                let docs = s.seg.table_meta(segment::FORWARD).map_or(0, |t| t.entries);
                (d + docs, f + s.entry.postings)
            })
    }

    /// Number of allocated document ids (live, deleted and replaced).
    pub fn doc_ids(&self) -> u32 {
        self.sizes.len() as u32
    }

    /// True when `doc` exists and is not deleted.
    pub fn is_live(&self, doc: u32) -> bool {
        (doc as usize) < self.sizes.len() && !self.tombstones.contains(doc)
    }

    /// Feature count of a document (0 when unknown).
    pub fn size(&self, doc: u32) -> u32 {
        self.sizes.get(doc as usize).copied().unwrap_or(0)
    }

    /// Copies the sorted features of `doc` into `out`. Returns false when no live segment holds
    /// the document.
    pub fn features_into(&self, doc: u32, out: &mut Vec<u64>) -> Result<bool> {
        out.clear();
        let i = self.by_doc.partition_point(|&(lo, _, _)| lo <= doc);
        // Several segments may cover overlapping ranges after compaction of part of them;
        // search backwards from the last range starting at or before `doc`.
        for &(lo, hi, si) in self.by_doc[..i].iter().rev() {
            if doc >= lo && doc < hi {
                let seg = &self.segments[si].seg;
                if seg.forward_into(doc as u64, out)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Calls `f` with every live document in the posting lists of `key`, over all segments.
    pub fn for_each_posting(&self, key: u64, mut f: impl FnMut(u32)) -> Result<()> {
        for s in &self.segments {
            if let Some(list) = s.seg.get_postings(segment::POSTINGS, key)? {
                if self.tombstones.is_empty() {
                    list.for_each(&mut f);
                } else {
                    list.for_each(|d| {
                        if !self.tombstones.contains(d) {
                            f(d)
                        }
                    });
                }
            }
        }
        Ok(())
    }

    /// Document frequency of a key as far as the probe order needs it: its summed df when it is
    /// frequent somewhere, else 0 (all rare keys are equally good to probe).
    pub fn probe_weight(&self, key: u64) -> u32 {
        if self.frequent.is_empty() {
            0
        } else {
            self.frequent.get(&key).copied().unwrap_or(0)
        }
    }
}

/// The delta (online adds) as one more segment of the snapshot, built by the segment builder
/// (`build::delta`, the code that also folds it) into a private temporary folder that is
/// removed at once (the mapping stays valid), so every query path reads delta documents
/// exactly as it will read them once folded. The delta is small by construction
/// (`add --fold-docs`).
fn delta_segment(catalog: &Catalog, options: &IndexOptions) -> Result<Option<LiveSegment>> {
    delta_segment_of(catalog, options, &catalog.delta_docs()?)
}

/// [`delta_segment`] of the given delta documents (ascending doc ids).
fn delta_segment_of(
    _catalog: &Catalog,
    options: &IndexOptions,
    docs: &[(u32, crate::store::delta::DeltaDoc)],
) -> Result<Option<LiveSegment>> {
    let delta = crate::build::delta::map(docs, &options.methods, DELTA_SEGMENT_ID)?;
    Ok(delta.map(|(entry, seg)| {
        // Written by this process a moment ago: its blocks need no first-use check.
        seg.assume_verified();
        LiveSegment {
            entry,
            seg: Arc::new(seg),
        }
    }))
}

/// `(doc_lo, doc_hi, segment index)` of every segment, sorted: the forward-list lookup table.
fn doc_ranges(segments: &[LiveSegment]) -> Vec<(u32, u32, usize)> {
    let mut by_doc: Vec<(u32, u32, usize)> = segments
        .iter()
        .enumerate()
        .map(|(i, s)| (s.entry.doc_lo, s.entry.doc_hi, i))
        .collect();
    by_doc.sort_unstable();
    by_doc
}

/// Takes a segment's FREQUENT table (key -> df) out of `frequent` (the inverse of
/// [`add_frequent`]).
fn sub_frequent(seg: &Segment, frequent: &mut FeatureMap<u32>) -> Result<()> {
    let mut other = FeatureMap::default();
    add_frequent(seg, &mut other)?;
    for (key, df) in other {
        if let std::collections::hash_map::Entry::Occupied(mut e) = frequent.entry(key) {
            let left = e.get().saturating_sub(df);
            if left == 0 {
                e.remove();
            } else {
                *e.get_mut() = left;
            }
        }
    }
    Ok(())
}

/// Adds a segment's FREQUENT table (key -> df) into `frequent`.
fn add_frequent(seg: &Segment, frequent: &mut FeatureMap<u32>) -> Result<()> {
    if !seg.contains_table(FREQUENT_TABLE) {
        return Ok(());
    }
    for item in seg.iter(FREQUENT_TABLE) {
        let (key, v) = item?;
        let df = v.try_into().map(u32::from_le_bytes).map_err(|_| {
            Error::corrupt(
                seg.path(),
                0,
                format!("frequent-key value of {} bytes", v.len()),
            )
        })?;
        *frequent.entry(key).or_insert(0) += df;
    }
    Ok(())
}
