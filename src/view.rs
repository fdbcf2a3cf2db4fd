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
use crate::store::manifest::{Manifest, SEGMENTS_DIR};
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

/// Ids allocated after a [`DocSizes`] base was built that are kept apart from it; past this
/// many, the next growth copies them into a new base (so a view derived from another one
/// copies at most this many sizes, not one per document of the index).
const SIZES_TAIL_MAX: usize = 16_384;

/// Features per document id (0 = no such document): a base shared by every view derived from
/// the one that read it (`Arc`, never copied) and the ids allocated since, so the view of an
/// online add costs a copy of the small tail instead of 4 bytes per document of the index.
#[derive(Clone, Debug, Default)]
pub struct DocSizes {
    base: Arc<Vec<u32>>,
    tail: Vec<u32>,
    /// No size read: [`View::size`] reads each from the document's FORWARD list when asked
    /// ([`View::load_for_lookups`]); the ids are `0..ids`.
    from_forward: bool,
    ids: usize,
}

impl DocSizes {
    /// The ids `0..ids` with no size held: each is read from the document's FORWARD list when
    /// asked. Only for reading: growing it is a bug.
    pub fn from_forward(ids: usize) -> Self {
        DocSizes {
            from_forward: true,
            ids,
            ..DocSizes::default()
        }
    }

    /// Whether the sizes are read from the FORWARD lists when asked ([`DocSizes::from_forward`]).
    pub fn reads_forward(&self) -> bool {
        self.from_forward
    }

    /// Sizes of the ids `0..v.len()`.
    pub fn from_vec(v: Vec<u32>) -> Self {
        DocSizes {
            base: Arc::new(v),
            tail: Vec::new(),
            from_forward: false,
            ids: 0,
        }
    }

    /// Number of document ids.
    pub fn len(&self) -> usize {
        if self.from_forward {
            return self.ids;
        }
        self.base.len() + self.tail.len()
    }

    /// True when no id is allocated.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size of `doc`, if the id is allocated and its size held.
    pub fn get(&self, doc: usize) -> Option<u32> {
        match self.base.get(doc) {
            Some(&s) => Some(s),
            None => self.tail.get(doc - self.base.len()).copied(),
        }
    }

    /// Appends the sizes of the next ids.
    pub fn extend_from_slice(&mut self, sizes: &[u32]) {
        assert!(
            !self.from_forward,
            "sizes read from FORWARD lists do not grow"
        );
        self.tail.extend_from_slice(sizes);
        self.rebase_if_long();
    }

    /// Appends the sizes of the next ids, taken as they are (no copy of them or of the base)
    /// when nothing was appended since the base: a batch's sizes in the view it is matched
    /// in, which lives only for the batch (a view derived from it copies the long tail).
    pub fn append(&mut self, sizes: Vec<u32>) {
        assert!(
            !self.from_forward,
            "sizes read from FORWARD lists do not grow"
        );
        if self.tail.is_empty() {
            self.tail = sizes;
        } else {
            self.extend_from_slice(&sizes);
        }
    }

    /// Grows to `n` ids (new ones of size 0); never shrinks.
    pub fn grow_to(&mut self, n: usize) {
        assert!(
            !self.from_forward,
            "sizes read from FORWARD lists do not grow"
        );
        if n > self.len() {
            let t = n - self.base.len();
            self.tail.resize(t, 0);
            self.rebase_if_long();
        }
    }

    /// Every size held, in id order (none when they are read from the FORWARD lists).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.base.iter().chain(self.tail.iter()).copied()
    }

    fn rebase_if_long(&mut self) {
        if self.tail.len() > SIZES_TAIL_MAX {
            let mut all = Vec::with_capacity(self.len());
            all.extend_from_slice(&self.base);
            all.append(&mut self.tail);
            self.base = Arc::new(all);
        }
    }
}

/// Equal when they hold the same sizes, however split between base and tail.
impl PartialEq for DocSizes {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for DocSizes {}

/// Most changes kept apart from a [`FrequentKeys`] base before they are folded into a new one.
const FREQUENT_OVERLAY_MAX: usize = 1 << 16;

/// The document frequency of the frequent keys (df > [`FREQUENT_DF`] in some segment), summed
/// over a view's segments: a base shared by every view derived from the one that built it and
/// the signed changes of the segments added or removed since (an add's piece, a fold, a
/// merge), so deriving a view copies the small overlay, not every frequent key of the index.
/// The sums are exact: the same as a map built from the view's segments at once.
#[derive(Clone, Debug, Default)]
pub struct FrequentKeys {
    base: Arc<DfTable>,
    /// Change of each key's df against `base` (no zero entries).
    over: FeatureMap<i64>,
}

/// Keys a [`DfTable`] bucket holds: 5 keys and their dfs fill one 64-byte cache line.
const DF_BUCKET: usize = 5;

/// One cache line of a [`DfTable`]: up to [`DF_BUCKET`] keys (filled from the front; key 0
/// marks a free slot) and their dfs.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct DfBucket {
    keys: [u64; DF_BUCKET],
    dfs: [u32; DF_BUCKET],
}

/// The base of [`FrequentKeys`]: each key's summed df in a table of cache-line buckets, the
/// bucket chosen by the key's high 32 bits (the keys are uniform hashes), a full bucket
/// continuing in the next one (cyclically); at most 3/5 of the slots are used. A lookup reads
/// one cache line (rarely two), whose address is known from the key alone, so a batch of
/// lookups prefetches its lines first ([`FrequentKeys::get_many`]): the frequent keys of a
/// 10M-document index (~1.25 M) take ~27 MB, beyond the caches, and were one dependent miss
/// a lookup in a `HashMap` (of ~34 MB).
#[derive(Clone, Debug, Default)]
struct DfTable {
    buckets: Box<[DfBucket]>,
    /// The df of key 0 (the free-slot mark), 0 when it is not frequent.
    zero: u32,
    /// Keys held (key 0 included).
    len: usize,
}

impl DfTable {
    fn from_map(map: &FeatureMap<u32>) -> DfTable {
        let n = map.len();
        let slots = n.div_ceil(3) * 5;
        let mut t = DfTable {
            buckets: vec![DfBucket::default(); slots.div_ceil(DF_BUCKET)].into_boxed_slice(),
            zero: 0,
            len: n,
        };
        for (&key, &df) in map {
            if key == 0 {
                t.zero = df;
                continue;
            }
            let nb = t.buckets.len();
            let mut b = t.bucket(key);
            // Fewer keys than slots: a free slot is found.
            loop {
                let bucket = &mut t.buckets[b];
                if let Some(j) = bucket.keys.iter().position(|&k| k == 0) {
                    bucket.keys[j] = key;
                    bucket.dfs[j] = df;
                    break;
                }
                b = if b + 1 == nb { 0 } else { b + 1 };
            }
        }
        t
    }

    /// The bucket `key`'s search starts in (the table has buckets).
    #[inline]
    fn bucket(&self, key: u64) -> usize {
        (((key >> 32) * self.buckets.len() as u64) >> 32) as usize
    }

    #[inline]
    fn get(&self, key: u64) -> u32 {
        if key == 0 {
            return self.zero;
        }
        let nb = self.buckets.len();
        if nb == 0 {
            return 0;
        }
        let mut b = self.bucket(key);
        loop {
            let bucket = &self.buckets[b];
            for j in 0..DF_BUCKET {
                if bucket.keys[j] == key {
                    return bucket.dfs[j];
                }
            }
            // A bucket with a free slot never overflowed: the key is not in the table.
            if bucket.keys[DF_BUCKET - 1] == 0 {
                return 0;
            }
            b = if b + 1 == nb { 0 } else { b + 1 };
        }
    }

    /// Asks the CPU for the cache line `get(key)` reads first.
    #[inline]
    fn prefetch(&self, key: u64) {
        if !self.buckets.is_empty() {
            crate::segment::prefetch(&self.buckets[self.bucket(key)]);
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every key with its df.
    fn to_map(&self) -> FeatureMap<u32> {
        let mut m = FeatureMap::default();
        m.reserve(self.len);
        if self.zero > 0 {
            m.insert(0, self.zero);
        }
        for b in self.buckets.iter() {
            for j in 0..DF_BUCKET {
                if b.keys[j] != 0 {
                    m.insert(b.keys[j], b.dfs[j]);
                }
            }
        }
        m
    }
}

impl FrequentKeys {
    /// Keys whose buckets [`FrequentKeys::get_many`] asks for ahead of the one it reads.
    const AHEAD: usize = 16;

    /// The summed df of `key` (0 when no segment lists it as frequent).
    pub fn get(&self, key: u64) -> u32 {
        let b = self.base.get(key) as i64;
        if self.over.is_empty() {
            return b as u32;
        }
        let d = self.over.get(&key).copied().unwrap_or(0);
        (b + d).max(0) as u32
    }

    /// [`FrequentKeys::get`] of each of `keys`, appended to `out`, the base's cache lines
    /// asked for [`FrequentKeys::AHEAD`] keys ahead (their misses overlap).
    pub fn get_many(&self, keys: &[u64], out: &mut Vec<u32>) {
        out.reserve(keys.len());
        for &k in keys.iter().take(Self::AHEAD) {
            self.base.prefetch(k);
        }
        for (i, &k) in keys.iter().enumerate() {
            if let Some(&next) = keys.get(i + Self::AHEAD) {
                self.base.prefetch(next);
            }
            out.push(self.get(k));
        }
    }

    /// A base of `map`'s keys and dfs, no overlay.
    fn from_map(map: &FeatureMap<u32>) -> FrequentKeys {
        FrequentKeys {
            base: Arc::new(DfTable::from_map(map)),
            over: FeatureMap::default(),
        }
    }

    /// Every frequent key with its summed df (0 left out), however split between base and
    /// overlay.
    pub fn to_map(&self) -> FeatureMap<u32> {
        let mut all: FeatureMap<u32> = self.base.to_map();
        for (&key, &d) in &self.over {
            let v = all.get(&key).copied().unwrap_or(0) as i64 + d;
            if v > 0 {
                all.insert(key, v as u32);
            } else {
                all.remove(&key);
            }
        }
        all
    }

    /// True when no key is frequent.
    pub fn is_empty(&self) -> bool {
        self.base.is_empty() && self.over.is_empty()
    }

    /// Adds (`sign` 1) or takes out (`sign` -1) a segment's FREQUENT table.
    fn apply(&mut self, seg: &Segment, sign: i64) -> Result<()> {
        let mut keys = FeatureMap::default();
        add_frequent(seg, &mut keys)?;
        for (key, df) in keys {
            let e = self.over.entry(key).or_insert(0);
            *e += sign * df as i64;
            if *e == 0 {
                self.over.remove(&key);
            }
        }
        if self.over.len() > FREQUENT_OVERLAY_MAX {
            self.base = Arc::new(DfTable::from_map(&self.to_map()));
            self.over.clear();
        }
        Ok(())
    }

    fn add(&mut self, seg: &Segment) -> Result<()> {
        self.apply(seg, 1)
    }

    fn sub(&mut self, seg: &Segment) -> Result<()> {
        self.apply(seg, -1)
    }
}

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
    pub sizes: DocSizes,
    /// Document frequency of the frequent keys, summed over segments.
    pub frequent: FrequentKeys,
}

/// Opens a segment the manifest lists, checking its length against the manifest's.
fn open_listed(dir: &Path, entry: &SegmentEntry) -> Result<Segment> {
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
    Ok(seg)
}

impl View {
    /// Loads the snapshot described by the catalog's current manifest.
    pub fn load(dir: &Path, catalog: &Catalog, options: &IndexOptions) -> Result<View> {
        View::load_sized(dir, catalog, options, true)
    }

    /// [`View::load`] for a process that answers a few lookups and exits (the `query`
    /// command): every document's size is read from its FORWARD list when a lookup asks for
    /// it ([`View::doc_size`]), instead of from a scan of every document record at load, which
    /// is most of the load on a large index (2.2 s of 2.5 at 10M documents). The same sizes.
    /// Its lookups ask for the blocks they will read together before reading the first
    /// ([`View::for_lookups`], [`Segment::read_ranks_ahead`]).
    pub fn load_for_lookups(dir: &Path, catalog: &Catalog, options: &IndexOptions) -> Result<View> {
        View::load_sized(dir, catalog, options, false)
    }

    fn load_sized(
        dir: &Path,
        catalog: &Catalog,
        _options: &IndexOptions,
        scan_sizes: bool,
    ) -> Result<View> {
        let manifest = catalog.manifest()?;
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for entry in manifest.segments {
            let seg = open_listed(dir, &entry)?;
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
        if !scan_sizes {
            for s in &segments {
                s.seg.read_ranks_ahead(true);
            }
            return Ok(View {
                segments,
                by_doc,
                tombstones: catalog.tombstones()?,
                sizes: DocSizes::from_forward(next),
                frequent: FrequentKeys::from_map(&frequent),
            });
        }
        let mut sizes = vec![0u32; next];
        // The scan below reads the `docs` family whole: from a cold page cache, its files are
        // read ahead in large requests while the records are decoded.
        let docs = catalog.table_files(&[crate::store::CF_DOCS]);
        let _read_ahead = ReadAhead::start(
            docs.into_iter()
                .map(|(p, n)| ReadAheadRange::File(p, n))
                .collect(),
            read_ahead_share(),
        );
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
            sizes: DocSizes::from_vec(sizes),
            frequent: FrequentKeys::from_map(&frequent),
        })
    }

    /// The snapshot [`View::load`] would read from `catalog`, derived from `prev` (a view of
    /// an earlier state of the same index, e.g. a server's snapshot before another process
    /// published): segments both list are shared (not mapped again), the delta is shared
    /// when it holds the same documents, and only the document records published since
    /// `prev` are read (records never change once published, and ids below `meta/next_doc`
    /// are never removed). Tombstones are read afresh. Frequent keys are `prev`'s with the
    /// removed segments taken out and the new ones added (exact sums). Falls back to a full
    /// [`View::load`] when the catalog has fewer ids than `prev` (not an earlier state).
    /// Returns the view and the segments it opened (not in `prev`).
    pub fn load_since(
        prev: &View,
        dir: &Path,
        catalog: &Catalog,
        options: &IndexOptions,
    ) -> Result<(View, Vec<Arc<Segment>>)> {
        let manifest = catalog.manifest()?;
        let next = catalog.next_doc()?;
        if next < prev.doc_ids() {
            let v = View::load(dir, catalog, options)?;
            let opened = v.segments.iter().map(|s| Arc::clone(&s.seg)).collect();
            return Ok((v, opened));
        }
        let mut frequent = prev.frequent.clone();
        let mut opened = Vec::new();
        let mut segments = Vec::with_capacity(manifest.segments.len() + 1);
        for entry in manifest.segments {
            let old = prev
                .segments
                .iter()
                .find(|s| s.entry.id != DELTA_SEGMENT_ID && s.entry == entry);
            let live = match old {
                Some(s) => s.share(),
                None => {
                    let seg = Arc::new(open_listed(dir, &entry)?);
                    frequent.add(&seg)?;
                    opened.push(Arc::clone(&seg));
                    LiveSegment { entry, seg }
                }
            };
            segments.push(live);
        }
        for s in &prev.segments {
            if s.entry.id != DELTA_SEGMENT_ID
                && !segments
                    .iter()
                    .any(|n| Arc::ptr_eq(&n.seg, &s.seg) && n.entry == s.entry)
            {
                frequent.sub(&s.seg)?;
            }
        }
        // The delta: shared when the catalog's delta is exactly the documents of prev's.
        let delta = catalog.delta_docs()?;
        let prev_delta: Vec<&LiveSegment> = prev
            .segments
            .iter()
            .filter(|s| s.entry.id == DELTA_SEGMENT_ID)
            .collect();
        let features: u64 = delta.iter().map(|(_, d)| d.features.len() as u64).sum();
        let same_delta = prev.delta_size() == (delta.len() as u64, features)
            && delta.iter().all(|(d, _)| {
                prev_delta
                    .iter()
                    .any(|s| s.entry.doc_lo <= *d && *d < s.entry.doc_hi)
            });
        if same_delta {
            segments.extend(prev_delta.iter().map(|s| s.share()));
        } else {
            for s in &prev_delta {
                frequent.sub(&s.seg)?;
            }
            if let Some(d) = delta_segment_of(catalog, options, &delta)? {
                frequent.add(&d.seg)?;
                segments.push(d);
            }
        }
        let from = prev.doc_ids();
        let mut new_sizes = vec![0u32; (next - from) as usize];
        for item in catalog.iter_docs_from(from) {
            let (doc, rec) = item?;
            if let Some(s) = doc
                .checked_sub(from)
                .and_then(|i| new_sizes.get_mut(i as usize))
            {
                *s = rec.features;
            }
        }
        let mut sizes = prev.sizes.clone();
        sizes.extend_from_slice(&new_sizes);
        Ok((
            View {
                by_doc: doc_ranges(&segments),
                segments,
                tombstones: catalog.tombstones()?,
                sizes,
                frequent,
            },
            opened,
        ))
    }

    /// This view plus one more (not yet published) segment holding documents
    /// `entry.doc_lo..entry.doc_hi` with the given feature counts, and extra tombstones.
    /// Ingest matches a batch against this before publishing it.
    /// The view shares this one's sizes and takes `new_sizes` as they are (no copy of either:
    /// `DocSizes::append`).
    pub fn with_new_segment(
        &self,
        path: &Path,
        entry: SegmentEntry,
        new_sizes: Vec<u32>,
        extra_tombstones: &RoaringBitmap,
    ) -> Result<View> {
        let (segments, frequent) = self.opened(vec![(path.to_owned(), entry)])?;
        self.extended(
            segments,
            frequent,
            |s| s.append(new_sizes),
            extra_tombstones,
        )
    }

    /// [`View::with_new_segment`] for several segments holding consecutive documents from
    /// the view's next id on (`adopt` matches a staged corpus against this).
    pub fn with_new_segments(
        &self,
        new: Vec<(std::path::PathBuf, SegmentEntry)>,
        new_sizes: &[u32],
        extra_tombstones: &RoaringBitmap,
    ) -> Result<View> {
        let (segments, frequent) = self.opened(new)?;
        let grow = |s: &mut DocSizes| s.extend_from_slice(new_sizes);
        self.extended(segments, frequent, grow, extra_tombstones)
    }

    /// This view's segments plus the non-empty ones of `new`, opened, and the frequent keys
    /// of them all.
    fn opened(
        &self,
        new: Vec<(std::path::PathBuf, SegmentEntry)>,
    ) -> Result<(Vec<LiveSegment>, FrequentKeys)> {
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
                seg.mark_cached(); // this process's own, just written
                frequent.add(&seg)?;
                segments.push(LiveSegment {
                    entry,
                    seg: Arc::new(seg),
                });
            }
        }
        Ok((segments, frequent))
    }

    /// [`View::with_new_segment`] of a segment already open (an online add's segment of its
    /// documents, `build::delta::map`).
    pub fn with_open_segment(
        &self,
        entry: SegmentEntry,
        seg: Segment,
        new_sizes: &[u32],
        extra_tombstones: &RoaringBitmap,
    ) -> Result<View> {
        let mut segments: Vec<LiveSegment> = self.segments.iter().map(LiveSegment::share).collect();
        let mut frequent = self.frequent.clone();
        frequent.add(&seg)?;
        segments.push(LiveSegment {
            entry,
            seg: Arc::new(seg),
        });
        let grow = |s: &mut DocSizes| s.extend_from_slice(new_sizes);
        self.extended(segments, frequent, grow, extra_tombstones)
    }

    /// This view's sizes (grown by `grow`) and tombstones extended, over `segments` and
    /// `frequent`.
    fn extended(
        &self,
        segments: Vec<LiveSegment>,
        frequent: FrequentKeys,
        grow: impl FnOnce(&mut DocSizes),
        extra_tombstones: &RoaringBitmap,
    ) -> Result<View> {
        let by_doc = doc_ranges(&segments);
        let mut sizes = self.sizes.clone();
        grow(&mut sizes);
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
        self.sizes.grow_to(next);
        Ok(self)
    }

    /// The view after a publish that changed only which segment files hold the documents
    /// (a fold of the delta into a segment, a merge of segments): the segments of `manifest`
    /// in its order, those already mapped here shared and `new` (the one just written and
    /// published) opened, then this view's delta pieces unless `keep_delta` is false (a fold
    /// emptied the delta). Sizes and tombstones stay (such a publish writes neither; ids
    /// allocated since are grown to `next_doc`). The same snapshot [`View::load`] reads from
    /// the catalog, without reading every document record again: a fold at 1M documents
    /// would otherwise read a million records to change one segment.
    pub fn after_relayout(
        &self,
        dir: &Path,
        manifest: &Manifest,
        new: Option<&SegmentEntry>,
        keep_delta: bool,
        next_doc: u32,
    ) -> Result<View> {
        let mut frequent = self.frequent.clone();
        let mut segments = Vec::with_capacity(manifest.segments.len() + 4);
        for entry in &manifest.segments {
            let old = self
                .segments
                .iter()
                .find(|s| s.entry.id != DELTA_SEGMENT_ID && s.entry == *entry);
            let live = match old {
                Some(s) => s.share(),
                None if new.is_some_and(|n| n == entry) => {
                    let seg = open_listed(dir, entry)?;
                    frequent.add(&seg)?;
                    LiveSegment {
                        entry: entry.clone(),
                        seg: Arc::new(seg),
                    }
                }
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "segment {} is neither in the view nor the one just written",
                        entry.file
                    )))
                }
            };
            segments.push(live);
        }
        for s in &self.segments {
            let is_delta = s.entry.id == DELTA_SEGMENT_ID;
            if is_delta && keep_delta {
                segments.push(s.share());
            } else if is_delta || !manifest.segments.contains(&s.entry) {
                frequent.sub(&s.seg)?;
            }
        }
        let mut sizes = self.sizes.clone();
        sizes.grow_to(next_doc as usize);
        Ok(View {
            by_doc: doc_ranges(&segments),
            segments,
            tombstones: self.tombstones.clone(),
            sizes,
            frequent,
        })
    }

    /// True when this view is exactly what [`View::load`] would read from `catalog` (whose
    /// manifest is `manifest`): the same published segments in order, the same number of
    /// document ids, the same tombstones, and a delta of the same documents and features.
    /// Document records never change once written, so these decide it.
    pub fn shows(&self, catalog: &Catalog, manifest: &Manifest) -> Result<bool> {
        let published: Vec<&SegmentEntry> = self
            .segments
            .iter()
            .filter(|s| s.entry.id != DELTA_SEGMENT_ID)
            .map(|s| &s.entry)
            .collect();
        if published.len() != manifest.segments.len()
            || published
                .iter()
                .zip(&manifest.segments)
                .any(|(a, b)| *a != b)
            || catalog.next_doc()? != self.doc_ids()
            || catalog.tombstones()? != self.tombstones
        {
            return Ok(false);
        }
        let delta = catalog.delta_docs()?;
        let features: u64 = delta.iter().map(|(_, d)| d.features.len() as u64).sum();
        let mut ids = delta.iter().map(|(d, _)| *d);
        let in_view = ids.all(|d| {
            self.by_doc.iter().any(|&(lo, hi, si)| {
                lo <= d && d < hi && self.segments[si].entry.id == DELTA_SEGMENT_ID
            })
        });
        Ok(in_view && self.delta_size() == (delta.len() as u64, features))
    }

    /// The frequent keys summed afresh over this view's segments: what [`View::frequent`]
    /// must equal however it was derived (a check for tests).
    pub fn frequent_recounted(&self) -> Result<FeatureMap<u32>> {
        let mut all = FeatureMap::default();
        for s in &self.segments {
            add_frequent(&s.seg, &mut all)?;
        }
        Ok(all)
    }

    /// The same snapshot restricted to the segments that may hold documents with ids from
    /// `doc` on (those whose doc range ends above it): what an add searches for the documents
    /// added since a check's snapshot. Segments are shared; sizes, tombstones and frequent
    /// keys are this view's (copied cheaply).
    pub fn since(&self, doc: u32) -> View {
        let segments: Vec<LiveSegment> = self
            .segments
            .iter()
            .filter(|s| s.entry.doc_hi > doc)
            .map(LiveSegment::share)
            .collect();
        View {
            by_doc: doc_ranges(&segments),
            segments,
            tombstones: self.tombstones.clone(),
            sizes: self.sizes.clone(),
            frequent: self.frequent.clone(),
        }
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
                self.frequent.sub(&old.seg)?;
            }
            if let Some(piece) = delta_segment_of(catalog, options, &docs)? {
                self.frequent.add(&piece.seg)?;
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

    /// Whether this view was loaded for a few lookups ([`View::load_for_lookups`]): sizes read
    /// from the FORWARD lists, the blocks a search will read asked for together.
    pub fn for_lookups(&self) -> bool {
        self.sizes.reads_forward()
    }

    /// Whether a search asks for the blocks it will read together before reading the first:
    /// in a view for lookups, and where a segment is mapped for random access and not read
    /// whole by a warm-up (`Segment::reads_ahead`).
    pub fn reads_ahead(&self) -> bool {
        self.for_lookups() || self.segments.iter().any(|s| s.seg.reads_ahead())
    }

    /// Feature count of a document (0 when unknown, or when its FORWARD list cannot be read in
    /// a view that reads sizes from there: [`View::doc_size`] reports that).
    pub fn size(&self, doc: u32) -> u32 {
        match self.sizes.get(doc as usize) {
            Some(s) => s,
            None if self.sizes.reads_forward() => self.doc_size(doc).unwrap_or(0),
            None => 0,
        }
    }

    /// [`View::size`], with the error of a FORWARD list that cannot be read in a view that
    /// reads the sizes from there ([`View::load_for_lookups`]): the length of the document's
    /// FORWARD list in the newest segment holding it, which is the feature count its record
    /// holds.
    pub fn doc_size(&self, doc: u32) -> Result<u32> {
        if let Some(s) = self.sizes.get(doc as usize) {
            return Ok(s);
        }
        if !self.sizes.reads_forward() {
            return Ok(0);
        }
        let i = self.by_doc.partition_point(|&(lo, _, _)| lo <= doc);
        for &(lo, hi, si) in self.by_doc[..i].iter().rev() {
            if doc >= lo && doc < hi {
                let seg = &self.segments[si].seg;
                if let Some(v) = seg.get(segment::FORWARD, doc as u64)? {
                    return Ok(seg.forward_len(v)? as u32);
                }
            }
        }
        Ok(0)
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

    /// Replaces `out` with the FORWARD list of `doc` as its segment stores it (feature hashes,
    /// or in a format-3 segment their ranks: [`Segment::forward_raw_into`]) and returns the
    /// index in `segments` of that segment; None when no live segment holds the document.
    /// Two documents of the same ranked segment compare exactly by their ranks.
    pub fn forward_raw_into(&self, doc: u32, out: &mut Vec<u64>) -> Result<Option<usize>> {
        out.clear();
        let i = self.by_doc.partition_point(|&(lo, _, _)| lo <= doc);
        for &(lo, hi, si) in self.by_doc[..i].iter().rev() {
            if doc >= lo && doc < hi && self.segments[si].seg.forward_raw_into(doc as u64, out)? {
                return Ok(Some(si));
            }
        }
        Ok(None)
    }

    /// Asks the kernel to read ahead the FORWARD blocks of `docs` that this process has not
    /// read yet ([`Segment::read_table_block_ahead`]): a query verifies its candidates one
    /// after another, and from a cold page cache each one's FORWARD list would otherwise be a
    /// disk read the next one waits behind.
    pub fn read_forward_ahead(&self, docs: &[u32]) {
        let all = self.for_lookups();
        for &d in docs {
            if let Some((si, bi)) = self.forward_block(d) {
                let seg = &self.segments[si].seg;
                if all || seg.reads_ahead() {
                    seg.read_table_block_ahead(segment::FORWARD, bi);
                }
            }
        }
    }

    /// The FORWARD block a [`View::forward_raw_into`] of `doc` reads: `(index in segments,
    /// block)` of the newest segment whose doc range and FORWARD block index cover `doc`
    /// (None: none does). For read-aheads: the block index alone, nothing of the file read.
    pub fn forward_block(&self, doc: u32) -> Option<(usize, usize)> {
        let i = self.by_doc.partition_point(|&(lo, _, _)| lo <= doc);
        self.by_doc[..i]
            .iter()
            .rev()
            .filter(|&&(lo, hi, _)| doc >= lo && doc < hi)
            .find_map(|&(_, _, si)| {
                let bi = self.segments[si]
                    .seg
                    .block_covering(segment::FORWARD, doc as u64)?;
                Some((si, bi))
            })
    }

    /// [`View::features_into`] that also leaves the stored list in `raw` (the ranks, when
    /// the document's segment is ranked: [`View::forward_raw_into`]) and returns that
    /// segment's index; None (both lists empty) when no live segment holds the document.
    pub fn features_and_raw_into(
        &self,
        doc: u32,
        features: &mut Vec<u64>,
        raw: &mut Vec<u64>,
    ) -> Result<Option<usize>> {
        features.clear();
        let Some(si) = self.forward_raw_into(doc, raw)? else {
            return Ok(None);
        };
        features.extend_from_slice(raw);
        self.segments[si].seg.ranks_to_keys(features, 0)?;
        Ok(Some(si))
    }

    /// Calls `f` with every live document in the posting lists of `key`, over all segments.
    pub fn for_each_posting(&self, key: u64, f: impl FnMut(u32)) -> Result<()> {
        self.for_each_posting_counted(key, f).map(|_| ())
    }

    /// Hands `f` the documents of `list` this view has not deleted.
    fn each_live(&self, list: segment::PostingList<'_>, f: &mut impl FnMut(u32)) {
        if self.tombstones.is_empty() {
            list.for_each(f);
        } else {
            list.for_each(|d| {
                if !self.tombstones.contains(d) {
                    f(d)
                }
            });
        }
    }

    /// [`View::for_each_posting`], returning how many segments held a posting list of `key`
    /// (each such list is a block read and a decode: the probe's cost measure).
    pub fn for_each_posting_counted(&self, key: u64, mut f: impl FnMut(u32)) -> Result<u32> {
        let mut lists = 0;
        for s in &self.segments {
            if let Some(list) = s.seg.get_postings(segment::POSTINGS, key)? {
                lists += 1;
                self.each_live(list, &mut f);
            }
        }
        Ok(lists)
    }

    /// [`View::for_each_posting_counted`] of many keys at once, segment by segment, each
    /// segment's lookups batched ([`Segment::get_postings_many`]; ascending keys read its
    /// block index and blocks in file order): `f` gets the same documents, as many times, in
    /// another order. Returns the number of posting lists found (over all keys and segments).
    pub fn for_each_posting_many_counted(
        &self,
        keys: &[u64],
        mut f: impl FnMut(u32),
    ) -> Result<u64> {
        let mut lists = 0u64;
        for s in &self.segments {
            s.seg
                .get_postings_many(segment::POSTINGS, keys, |_, list| {
                    lists += 1;
                    self.each_live(list, &mut f);
                })?;
        }
        Ok(lists)
    }

    /// Document frequency of a key as far as the probe order needs it: its summed df when it is
    /// frequent somewhere, else 0 (all rare keys are equally good to probe).
    pub fn probe_weight(&self, key: u64) -> u32 {
        if self.frequent.is_empty() {
            0
        } else {
            self.frequent.get(key)
        }
    }

    /// [`View::probe_weight`] of each of `keys`, appended to `out` (the lookups' cache misses
    /// overlapped: [`FrequentKeys::get_many`]).
    pub fn probe_weights(&self, keys: &[u64], out: &mut Vec<u32>) {
        if self.frequent.is_empty() {
            out.extend(std::iter::repeat_n(0, keys.len()));
        } else {
            self.frequent.get_many(keys, out);
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

/// Environment variable: the share of `MemAvailable` (a number in [0, 1]) a read-ahead may ask
/// the kernel to read (`0`: none). Default [`READ_AHEAD_SHARE`].
pub const READ_AHEAD_ENV: &str = "NDD_READ_AHEAD";

/// Default share of `MemAvailable` (/proc/meminfo) one read-ahead may ask for: a quarter, so
/// that the pages it brings in cannot push out much of what the process and the rest of the
/// machine use, and an index far beyond RAM does not evict its own earlier pages (the ranges
/// past the budget are read on use, as without a read-ahead).
pub const READ_AHEAD_SHARE: f64 = 0.25;

/// Bytes a read-ahead asks for between two looks at its stop flag (in requests of
/// [`segment::WILLNEED_REQUEST`] bytes).
const READ_AHEAD_CHUNK: u64 = 16 << 20;

/// The share of `MemAvailable` a read-ahead may use: [`READ_AHEAD_ENV`] if set to a number
/// in [0, 1], else [`READ_AHEAD_SHARE`].
pub fn read_ahead_share() -> f64 {
    std::env::var(READ_AHEAD_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| (0.0..=1.0).contains(v))
        .unwrap_or(READ_AHEAD_SHARE)
}

/// `MemAvailable` of /proc/meminfo in bytes (`None` where there is none).
pub fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes of the segment files of the index at `dir` (`DIR/segments/*.ndds`; 0 for what
/// cannot be read).
pub fn segment_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir.join("segments")) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".ndds"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Whether a process answering lookups of the index at `dir` maps its segments for random
/// access (`segment::advise_random_on_open`): when the segment files are larger than the
/// memory available, so that a lookup's cold blocks come from the disk and the kernel's
/// read-around would bring in MBs around each. An index that fits is read into the page
/// cache whole (a server's warm-up) or by large read-arounds, which then serve every lookup
/// (measured: random access cost a 2.9 GB index 15-20 % of its steady check-and-insert rate,
/// and the 37 GB one gained 2.6-3.7x; BENCHMARKS.md, "Serving at 10M: reads of what lookups
/// need"). `(bytes, available)` for the caller's message.
pub fn lookups_want_random_access(dir: &Path) -> (bool, u64, u64) {
    let bytes = segment_bytes(dir);
    match mem_available() {
        Some(mem) => (bytes > mem, bytes, mem),
        None => (false, bytes, 0),
    }
}

/// Bytes a read-ahead may ask for: `share` (clamped to [0, 1]) of `mem_available`.
pub fn read_ahead_budget(mem_available: u64, share: f64) -> u64 {
    (mem_available as f64 * share.clamp(0.0, 1.0)) as u64
}

/// Which of the ranges of `sizes` bytes (in the order they will be needed) a read-ahead asks
/// for: in order, each that still fits in `share * mem_available` bytes together with the
/// ones taken before it. A range that does not fit is left to be read on use (later smaller
/// ones may still fit); empty ranges are skipped. The rule that bounds every read-ahead.
pub fn prefetch_plan(sizes: &[u64], mem_available: u64, share: f64) -> Vec<usize> {
    let budget = read_ahead_budget(mem_available, share);
    let mut used = 0u64;
    let mut take = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        if n > 0 && used + n <= budget {
            used += n;
            take.push(i);
        }
    }
    take
}

/// What [`warm_up`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WarmUp {
    /// Segments given.
    pub segments: usize,
    /// Segments whose key filters were loaded, and the bytes of their filter tables.
    pub filters_loaded: usize,
    pub filter_bytes: u64,
    /// Segments whose every block was checked (and faulted in), and their bytes.
    pub segments_checked: usize,
    pub checked_bytes: u64,
    /// Bytes of the segments left to be checked on first use: beyond the budget, or stopped.
    pub left_bytes: u64,
    /// The budget: `share` of `MemAvailable` (the server's: [`read_ahead_share`]).
    pub budget_bytes: u64,
    pub share: f64,
    /// Damage found (each segment's first error); the segment stays served, and the queries
    /// that reach the damage report it as before.
    pub errors: Vec<String>,
}

/// Warms a long-lived reader's segments (a server's at start, and a newly published
/// segment's before it serves), within the budget of every read-ahead ([`prefetch_plan`]: at
/// most `share` of `mem_available`):
/// 1. every segment's key filters, which every query reads: their pass is made here
///    ([`Segment::load_key_filters`]), and queries meanwhile look their filters up alone
///    instead of waiting for it;
/// 2. then whole segments, smallest first, every block checked in file order (its crc, the
///    first touch of its pages), so that queries neither check it nor fault it in one page at
///    a time.
///
/// What does not fit the budget is checked on first use, as it always is. So an index larger
/// than memory is not read through the page cache at start, each segment evicting the one
/// read before it, while the queries wait behind those reads. `stop` is looked at between
/// blocks. Without `mem_available` (no /proc/meminfo) everything is warmed, as before; with a
/// `share` of 0, nothing.
pub fn warm_up(
    segments: &[&Segment],
    mem_available: Option<u64>,
    share: f64,
    stop: &dyn Fn() -> bool,
) -> WarmUp {
    let mut out = WarmUp {
        segments: segments.len(),
        share,
        ..WarmUp::default()
    };
    let filters: Vec<u64> = segments
        .iter()
        .map(|s| s.key_filter_range().map_or(0, |(from, to)| to - from))
        .collect();
    let mut by_size: Vec<usize> = (0..segments.len()).collect();
    by_size.sort_by_key(|&i| segments[i].len_bytes());
    // The ranges in the order they are warmed: filters, then the rest of each segment.
    let mut sizes = filters.clone();
    sizes.extend(
        by_size
            .iter()
            .map(|&i| segments[i].len_bytes().saturating_sub(filters[i]).max(1)),
    );
    let take: Vec<usize> = match mem_available {
        _ if share <= 0.0 => Vec::new(),
        Some(m) => prefetch_plan(&sizes, m, share),
        None => (0..sizes.len()).filter(|&i| sizes[i] > 0).collect(),
    };
    out.budget_bytes = mem_available.map_or(u64::MAX, |m| read_ahead_budget(m, share));
    let mut whole = vec![false; segments.len()];
    for &r in &take {
        if r >= segments.len() {
            whole[by_size[r - segments.len()]] = true;
        }
    }
    for &r in take.iter().filter(|&&r| r < segments.len()) {
        if stop() {
            break;
        }
        segments[r].load_key_filters();
        out.filters_loaded += 1;
        out.filter_bytes += filters[r];
    }
    for &i in &by_size {
        let seg = segments[i];
        if !whole[i] || stop() {
            out.left_bytes += seg.len_bytes();
            continue;
        }
        match seg.check_all_blocks(stop) {
            Ok(()) if !stop() => {
                out.segments_checked += 1;
                out.checked_bytes += seg.len_bytes();
            }
            Ok(()) => out.left_bytes += seg.len_bytes(),
            Err(e) => {
                out.left_bytes += seg.len_bytes();
                out.errors.push(e.to_string());
            }
        }
    }
    out
}

impl std::fmt::Display for WarmUp {
    /// One line for a log: what was warmed and what was left to first use.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gb = |b: u64| b as f64 / 1e9;
        write!(
            f,
            "key filters of {} of {} segments loaded ({:.2} GB); {} segments checked ({:.2} GB)",
            self.filters_loaded,
            self.segments,
            gb(self.filter_bytes),
            self.segments_checked,
            gb(self.checked_bytes)
        )?;
        if self.left_bytes > 0 {
            write!(
                f,
                "; {:.2} GB left to be checked on first use (budget {:.2} GB: {} of MemAvailable)",
                gb(self.left_bytes),
                gb(self.budget_bytes),
                self.share,
            )?;
        }
        Ok(())
    }
}

/// One range a [`ReadAhead`] asks for.
pub enum ReadAheadRange {
    /// The bytes `[from, to)` of a mapped segment.
    Segment(Arc<Segment>, u64, u64),
    /// A segment's key filters, its bytes `[from, to)` ([`Segment::key_filter_range`]): asked
    /// for as [`ReadAheadRange::Segment`], then decoded ([`Segment::load_key_filters`]) once
    /// every range of the read-ahead has been asked for.
    KeyFilters(Arc<Segment>, u64, u64),
    /// A whole file (a catalog table file), of this many bytes.
    File(std::path::PathBuf, u64),
}

impl ReadAheadRange {
    fn len(&self) -> u64 {
        match self {
            ReadAheadRange::Segment(_, from, to) | ReadAheadRange::KeyFilters(_, from, to) => {
                to.saturating_sub(*from)
            }
            ReadAheadRange::File(_, n) => *n,
        }
    }

    /// Asks for the whole range, `READ_AHEAD_CHUNK` at a time; false once `stop` is set.
    fn ask_all(&self, stop: &std::sync::atomic::AtomicBool) -> bool {
        let mut file = None;
        let mut at = 0;
        while at < self.len() {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return false;
            }
            let n = READ_AHEAD_CHUNK.min(self.len() - at);
            self.ask(&mut file, at, n);
            at += n;
        }
        true
    }

    /// What follows the requests of every range: a [`ReadAheadRange::KeyFilters`] range's
    /// filters are decoded (which waits for their reads); nothing for the others.
    fn settle(&self) {
        if let ReadAheadRange::KeyFilters(seg, ..) = self {
            seg.load_key_filters();
        }
    }

    /// Asks for `[at, at + n)` of the range (offsets within it).
    fn ask(&self, file: &mut Option<std::fs::File>, at: u64, n: u64) {
        match self {
            ReadAheadRange::Segment(seg, from, _) | ReadAheadRange::KeyFilters(seg, from, _) => {
                seg.read_ahead(from + at, from + at + n)
            }
            ReadAheadRange::File(path, _) => {
                if file.is_none() {
                    *file = std::fs::File::open(path).ok();
                }
                if let Some(f) = file.as_ref() {
                    segment::file_will_need(f, at, at + n);
                }
            }
        }
    }
}

/// An asynchronous read-ahead: a thread that asks the kernel (`WILLNEED`, which issues the
/// reads without waiting for them) for ranges an operation will certainly read, in the order
/// it will read them, so that a cold page cache is filled while the operation does other
/// work (a batch's front end) instead of when it faults on them. Bounded by
/// [`prefetch_plan`]: at most `share * MemAvailable` bytes. Asking costs little CPU (the
/// kernel's page allocation for the reads); once everything is asked for, the thread decodes
/// the key filters of its [`ReadAheadRange::KeyFilters`] ranges (their crc pass touches every
/// page first, on this thread rather than the operation's). Dropping it stops it between
/// requests (or between segments' decodes) and joins it.
pub struct ReadAhead {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Bytes asked for (the planned ranges).
    pub planned_bytes: u64,
    /// Bytes of the ranges left out by the budget.
    pub skipped_bytes: u64,
}

impl ReadAhead {
    /// Starts the read-ahead of `ranges` (in the order they will be needed) within `share`
    /// of `MemAvailable`; nothing without /proc/meminfo or with a share of 0.
    pub fn start(ranges: Vec<ReadAheadRange>, share: f64) -> ReadAhead {
        let sizes: Vec<u64> = ranges.iter().map(|r| r.len()).collect();
        let total: u64 = sizes.iter().sum();
        let take = match mem_available() {
            Some(m) if share > 0.0 => prefetch_plan(&sizes, m, share),
            _ => Vec::new(),
        };
        let planned_bytes: u64 = take.iter().map(|&i| sizes[i]).sum();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // `take` ascends: keep the ranges it names, in order.
        let chosen: Vec<ReadAheadRange> = (ranges.into_iter().enumerate())
            .filter(|(i, _)| take.binary_search(i).is_ok())
            .map(|(_, r)| r)
            .collect();
        let thread = (!chosen.is_empty())
            .then(|| {
                let stop = Arc::clone(&stop);
                std::thread::Builder::new()
                    .name("ndd-readahead".into())
                    .spawn(move || {
                        for r in &chosen {
                            if !r.ask_all(&stop) {
                                return;
                            }
                        }
                        settle_all(&chosen, &stop);
                    })
                    .ok()
            })
            .flatten();
        ReadAhead {
            stop,
            thread,
            planned_bytes,
            skipped_bytes: total - planned_bytes,
        }
    }

    /// Waits until the read-ahead has asked for every planned range and settled it (decoded
    /// the key filters of its [`ReadAheadRange::KeyFilters`] ranges), instead of stopping it
    /// as dropping it does.
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// [`ReadAheadRange::settle`] of each of `ranges` in order, until `stop` is set.
fn settle_all(ranges: &[ReadAheadRange], stop: &std::sync::atomic::AtomicBool) {
    for r in ranges {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        r.settle();
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Merges touching or overlapping byte ranges `[from, to)` of one file, sorted by `from`,
/// in place: one `WILLNEED` request stream for a run of neighbouring blocks instead of one
/// per block. Empty ranges are dropped.
pub fn merge_ranges(ranges: &mut Vec<(u64, u64)>) {
    let mut w = 0;
    for i in 0..ranges.len() {
        let (from, to) = ranges[i];
        if to <= from {
            continue;
        }
        if w > 0 && from <= ranges[w - 1].1 {
            ranges[w - 1].1 = ranges[w - 1].1.max(to);
        } else {
            ranges[w] = (from, to);
            w += 1;
        }
    }
    ranges.truncate(w);
}

/// A read-ahead fed while an operation learns what it will read (a join's posting blocks as
/// its probes are chosen, a verification chunk's lists): each [`ReadAheadQueue::ask`] hands
/// ranges, in the order they will be needed, to one background thread (`ndd-readahead`) that
/// asks the kernel for them (`WILLNEED` in requests of [`segment::WILLNEED_REQUEST`] bytes,
/// as [`ReadAhead`] does), so the caller never waits on the requests. Bounded by
/// [`prefetch_plan`] over all the asks together: at most `share * MemAvailable` bytes (taken
/// when the queue is made); a range past what is left is read on use. Dropping the queue
/// stops its thread between requests and joins it.
pub struct ReadAheadQueue {
    budget: u64,
    tx: Option<std::sync::mpsc::Sender<Vec<ReadAheadRange>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Bytes asked for (the ranges taken).
    pub planned_bytes: u64,
    /// Bytes of the ranges left out by the budget.
    pub skipped_bytes: u64,
}

impl ReadAheadQueue {
    /// A queue of at most `share` of `MemAvailable` (nothing without /proc/meminfo or with a
    /// share of 0); its thread starts at the first range taken.
    pub fn new(share: f64) -> ReadAheadQueue {
        let budget = match mem_available() {
            Some(m) if share > 0.0 => (m as f64 * share.clamp(0.0, 1.0)) as u64,
            _ => 0,
        };
        ReadAheadQueue::with_budget(budget)
    }

    /// A queue of at most `budget` bytes.
    pub fn with_budget(budget: u64) -> ReadAheadQueue {
        ReadAheadQueue {
            budget,
            tx: None,
            stop: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            thread: None,
            planned_bytes: 0,
            skipped_bytes: 0,
        }
    }

    /// Bytes still within the budget.
    pub fn left(&self) -> u64 {
        self.budget.saturating_sub(self.planned_bytes)
    }

    /// Takes the ranges of `ranges` that still fit in the budget ([`prefetch_plan`] over what
    /// is left of it) and hands them to the thread; returns the bytes taken.
    pub fn ask(&mut self, ranges: Vec<ReadAheadRange>) -> u64 {
        let (chosen, planned) = self.take(ranges);
        if chosen.is_empty() {
            return 0;
        }
        if self.tx.is_none() {
            let (tx, rx) = std::sync::mpsc::channel::<Vec<ReadAheadRange>>();
            let stop = Arc::clone(&self.stop);
            let spawned = std::thread::Builder::new()
                .name("ndd-readahead".into())
                .spawn(move || {
                    for rs in rx {
                        for r in &rs {
                            if !r.ask_all(&stop) {
                                return;
                            }
                        }
                        settle_all(&rs, &stop);
                    }
                });
            match spawned {
                Ok(t) => {
                    self.thread = Some(t);
                    self.tx = Some(tx);
                }
                Err(_) => return 0,
            }
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(chosen);
        }
        planned
    }

    /// The ranges of `ranges` that fit in what is left of the budget, in order, and their
    /// bytes (counted as planned; the others as skipped).
    fn take(&mut self, ranges: Vec<ReadAheadRange>) -> (Vec<ReadAheadRange>, u64) {
        let sizes: Vec<u64> = ranges.iter().map(|r| r.len()).collect();
        let total: u64 = sizes.iter().sum();
        let take = prefetch_plan(&sizes, self.left(), 1.0);
        let planned: u64 = take.iter().map(|&i| sizes[i]).sum();
        self.planned_bytes += planned;
        self.skipped_bytes += total - planned;
        // `take` ascends: keep the ranges it names, in order.
        let chosen = (ranges.into_iter().enumerate())
            .filter(|(i, _)| take.binary_search(i).is_ok())
            .map(|(_, r)| r)
            .collect();
        (chosen, planned)
    }

    /// [`ReadAheadQueue::ask`] with the requests made by the calling thread before it returns
    /// (they are issued, not waited for, unless the device's queue is full): for reads that
    /// follow at once, which must not overtake the requests (a page fault on a range not yet
    /// asked for reads the kernel's read-around, megabytes, instead of the range).
    pub fn ask_here(&mut self, ranges: Vec<ReadAheadRange>) -> u64 {
        let (chosen, planned) = self.take(ranges);
        for r in &chosen {
            r.ask(&mut None, 0, r.len());
        }
        planned
    }

    /// Asks for blocks of `table` ([`ReadAheadQueue::ask`]): `(index in view.segments,
    /// block)` pairs, sorted, in the order they will be read; neighbouring blocks of a
    /// segment go as one range. Returns the bytes taken.
    pub fn ask_blocks(&mut self, view: &View, table: u32, blocks: &[(usize, usize)]) -> u64 {
        self.ask(block_ranges(view, table, blocks))
    }

    /// [`ReadAheadQueue::ask_blocks`] by the calling thread ([`ReadAheadQueue::ask_here`]).
    pub fn ask_blocks_here(&mut self, view: &View, table: u32, blocks: &[(usize, usize)]) -> u64 {
        self.ask_here(block_ranges(view, table, blocks))
    }
}

/// The byte ranges of blocks of `table` (`(index in view.segments, block)`, sorted), as
/// read-ahead ranges: neighbouring blocks of a segment merged into one.
fn block_ranges(view: &View, table: u32, blocks: &[(usize, usize)]) -> Vec<ReadAheadRange> {
    {
        let mut ranges = Vec::new();
        for run in blocks.chunk_by(|x, y| x.0 == y.0) {
            let seg = &view.segments[run[0].0].seg;
            let mut rs: Vec<(u64, u64)> = (run.iter())
                .filter_map(|&(_, bi)| seg.block_range(table, bi))
                .collect();
            merge_ranges(&mut rs);
            ranges.extend(
                rs.into_iter()
                    .map(|(from, to)| ReadAheadRange::Segment(Arc::clone(seg), from, to)),
            );
        }
        ranges
    }
}

impl Drop for ReadAheadQueue {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl View {
    /// What a batch's ingest into this view will certainly read, in the order it reads them:
    /// the catalog families its per-document checks look up at random (`meta`'s staged keys,
    /// `keys`, `digests`), then every segment's key filters (the matching stage's filter walk
    /// reads them whole; skipped for a segment without filters or with its filters decoded
    /// already), which the read-ahead also decodes once it has asked for everything. POSTINGS
    /// blocks and FORWARD lists are not here: which of them a batch reads depends on its keys.
    pub fn ingest_read_ahead_ranges(&self, catalog: &Catalog) -> Vec<ReadAheadRange> {
        use crate::store::{CF_DIGESTS, CF_KEYS, CF_META};
        let mut ranges: Vec<ReadAheadRange> = catalog
            .table_files(&[CF_META, CF_KEYS, CF_DIGESTS])
            .into_iter()
            .map(|(p, n)| ReadAheadRange::File(p, n))
            .collect();
        for s in &self.segments {
            if s.seg.key_filters_loaded() {
                continue;
            }
            if let Some((from, to)) = s.seg.key_filter_range() {
                ranges.push(ReadAheadRange::KeyFilters(Arc::clone(&s.seg), from, to));
            }
        }
        ranges
    }

    /// Starts the read-ahead of [`View::ingest_read_ahead_ranges`] within
    /// [`read_ahead_share`] of `MemAvailable`: a writer calls it when a batch starts, so the
    /// old segments' filters are read, checked and decoded while the batch is read and
    /// fingerprinted (from a cold page cache the first touch of their pages costs more than
    /// their crc: seconds for gigabytes of filters), not when matching begins.
    pub fn ingest_read_ahead(&self, catalog: &Catalog) -> ReadAhead {
        ReadAhead::start(self.ingest_read_ahead_ranges(catalog), read_ahead_share())
    }
}

#[cfg(test)]
mod df_table_tests {
    use super::*;

    /// A bijection spreading keys over the u64 range (MurmurHash3's finalizer).
    fn mix(h: u64) -> u64 {
        crate::segment::filter::mix(h, 0)
    }

    /// The table answers as the map it was built from: uniform keys, keys that all share
    /// their high 32 bits (one home bucket: long runs of full buckets, wrapping around past
    /// the last one), key 0, no keys; absent keys answer 0; `to_map` gives the map back; a
    /// batch of lookups (`get_many`) answers as single ones.
    #[test]
    fn df_table_equals_its_map() {
        let sets: Vec<Vec<u64>> = vec![
            vec![],
            vec![0],
            vec![0, 1, u64::MAX],
            (1..2000).map(mix).collect(),
            (1..300).map(|i| (u64::MAX << 32) | mix(i) >> 32).collect(),
            (1..300).map(|i| (7u64 << 32) | i).collect(),
        ];
        for (s, keys) in sets.iter().enumerate() {
            let map: FeatureMap<u32> = keys
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, 17 + i as u32))
                .collect();
            let t = DfTable::from_map(&map);
            assert_eq!(t.is_empty(), map.is_empty(), "set {s}");
            for (&k, &df) in &map {
                assert_eq!(t.get(k), df, "set {s} key {k:x}");
            }
            let absent: Vec<u64> = (0..3000u64)
                .map(|i| mix(i + 1_000_000))
                .chain([1u64 << 63, (u64::MAX << 32) | 12345, (7 << 32) | 5000, 0])
                .filter(|k| !map.contains_key(k))
                .collect();
            for &k in &absent {
                assert_eq!(t.get(k), 0, "set {s} absent {k:x}");
            }
            assert_eq!(t.to_map(), map, "set {s}");
            let f = FrequentKeys::from_map(&map);
            let all: Vec<u64> = keys.iter().chain(&absent).copied().collect();
            let mut got = vec![9];
            f.get_many(&all, &mut got);
            let want: Vec<u32> = [9]
                .into_iter()
                .chain(all.iter().map(|&k| f.get(k)))
                .collect();
            assert_eq!(got, want, "set {s}");
        }
    }
}

#[cfg(test)]
mod read_ahead_tests {
    use super::*;

    /// A format-3 segment of `n` one-document posting lists, with its key filters.
    fn postings_segment(dir: &std::path::Path, name: &str, n: u64) -> Segment {
        use crate::segment::{encode_postings, SegmentWriter, POSTINGS};
        let mut w = SegmentWriter::create_version(dir, name, 4096, 3).unwrap();
        w.begin_table(POSTINGS).unwrap();
        let mut keys: Vec<u64> = (0..n).map(|i| crate::segment::filter::mix(i, 7)).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut v = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            v.clear();
            encode_postings(&[i as u32], &mut v);
            w.add(k, &v).unwrap();
        }
        w.end_table().unwrap();
        w.finish().unwrap();
        Segment::open(dir.join(name)).unwrap()
    }

    /// A warm-up loads every segment's key filters, then checks whole segments, smallest
    /// first, while they fit the budget; what does not fit is left to first use (damage in it
    /// is not reached), damage in what it checks is reported and the rest still warmed; a set
    /// stop flag warms nothing.
    #[test]
    fn warm_up_takes_the_filters_then_the_smallest_segments_within_its_budget() {
        use crate::segment::POSTINGS;
        let dir = tempfile::tempdir().unwrap();
        let (small, mid) = (
            postings_segment(dir.path(), "small", 3_000),
            postings_segment(dir.path(), "mid", 20_000),
        );
        drop(postings_segment(dir.path(), "big", 60_000));
        // A flipped byte in the big segment's first POSTINGS block: found by a check of every
        // block, and by nothing else here.
        let path = dir.path().join("big");
        let (from, to) = Segment::open(&path)
            .unwrap()
            .block_range(POSTINGS, 0)
            .unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[((from + to) / 2) as usize] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let open = || ["big", "small", "mid"].map(|n| Segment::open(dir.path().join(n)).unwrap());
        let filters = |s: &Segment| s.key_filter_range().map_or(0, |(a, b)| b - a);
        assert!(filters(&small) > 0 && small.len_bytes() < mid.len_bytes());
        let all_filters: u64 = open().iter().map(filters).sum();
        let rest = |s: &Segment| s.len_bytes() - filters(s);

        // Room for the filters and the two smaller segments, not the big one.
        let segs = open();
        let refs: Vec<&Segment> = segs.iter().collect();
        let budget = all_filters + rest(&small) + rest(&mid) + 100;
        let w = warm_up(&refs, Some(budget), 1.0, &|| false);
        assert!(segs.iter().all(|s| s.key_filters_loaded()));
        assert_eq!(
            (
                w.segments,
                w.filters_loaded,
                w.filter_bytes,
                w.segments_checked
            ),
            (3, 3, all_filters, 2)
        );
        assert_eq!(w.checked_bytes, small.len_bytes() + mid.len_bytes());
        assert_eq!(w.left_bytes, segs[0].len_bytes());
        assert!(w.errors.is_empty(), "{:?}", w.errors);
        assert!(
            w.to_string().contains("left to be checked on first use"),
            "{w}"
        );

        // Without a budget everything is checked: the damage is reported, the rest warmed.
        let segs = open();
        let refs: Vec<&Segment> = segs.iter().collect();
        let w = warm_up(&refs, None, 0.25, &|| false);
        assert_eq!((w.filters_loaded, w.segments_checked), (3, 2));
        assert_eq!(w.errors.len(), 1, "{:?}", w.errors);
        assert!(w.errors[0].contains("big"), "{:?}", w.errors);
        assert_eq!(w.left_bytes, segs[0].len_bytes());

        // Half the filters' room: only the filters that fit, in order, and no segment.
        let w = warm_up(&refs[1..], Some(filters(&small) + 1), 1.0, &|| false);
        assert_eq!((w.filters_loaded, w.segments_checked), (1, 0));

        // A share of 0, or a stop flag already set: nothing.
        let segs = open();
        let refs: Vec<&Segment> = segs.iter().collect();
        for w in [
            warm_up(&refs, Some(1 << 40), 0.0, &|| false),
            warm_up(&refs, None, 0.0, &|| false),
            warm_up(&refs, None, 1.0, &|| true),
        ] {
            assert_eq!((w.filters_loaded, w.segments_checked), (0, 0), "{w:?}");
            assert_eq!(
                w.left_bytes,
                segs.iter().map(|s| s.len_bytes()).sum::<u64>()
            );
        }
        assert!(segs.iter().all(|s| !s.key_filters_loaded()));
    }

    /// The plan takes ranges in order while they fit in the budget (`share` of the available
    /// memory), skips one that does not (a later smaller one may still fit) and empty ones,
    /// and never asks for more than the budget; a share of 0 asks for nothing.
    #[test]
    fn prefetch_plan_respects_the_budget() {
        let gib = 1u64 << 30;
        // 10 segments' filters of 280 MB and three catalog families, 22 GiB available.
        let sizes = [90 << 20, 250 << 20, 290 << 20]
            .into_iter()
            .chain(std::iter::repeat_n(280u64 << 20, 10))
            .collect::<Vec<u64>>();
        let all: Vec<usize> = (0..sizes.len()).collect();
        assert_eq!(prefetch_plan(&sizes, 22 * gib, 0.25), all);
        assert_eq!(prefetch_plan(&sizes, 22 * gib, 0.0), Vec::<usize>::new());
        // 4 GiB available, a quarter: 1 GiB, i.e. the catalog families and one filter table.
        let take = prefetch_plan(&sizes, 4 * gib, 0.25);
        assert_eq!(take, vec![0, 1, 2, 3]);
        // A range larger than the budget is skipped, later ones that fit are taken.
        assert_eq!(prefetch_plan(&[5, 100, 0, 3, 2], 40, 0.25), vec![0, 3, 4]);
        assert_eq!(prefetch_plan(&[11], 40, 0.25), Vec::<usize>::new());
        assert_eq!(prefetch_plan(&[10], 40, 0.25), vec![0]);
        // Many random cases: the taken bytes never exceed the budget, and every range left
        // out (not empty) would have overflowed it at its turn.
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..500 {
            let n = (x % 20) as usize;
            let sizes: Vec<u64> = (0..n)
                .map(|_| {
                    x = crate::segment::filter::mix(x, 1);
                    x % 1000
                })
                .collect();
            let avail = x % 20_000;
            let share = (x % 101) as f64 / 100.0;
            let budget = (avail as f64 * share) as u64;
            let take = prefetch_plan(&sizes, avail, share);
            let mut used = 0;
            for (i, &s) in sizes.iter().enumerate() {
                if take.contains(&i) {
                    used += s;
                    assert!(s > 0);
                } else {
                    assert!(s == 0 || used + s > budget, "{sizes:?} {avail} {share}");
                }
            }
            assert!(used <= budget);
            assert!(take.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn merge_ranges_joins_touching_ranges() {
        let mut r = vec![
            (0, 10),
            (10, 20),
            (25, 30),
            (28, 40),
            (40, 40),
            (50, 60),
            (55, 58),
        ];
        merge_ranges(&mut r);
        assert_eq!(r, vec![(0, 20), (25, 40), (50, 60)]);
        let mut e: Vec<(u64, u64)> = vec![(5, 5)];
        merge_ranges(&mut e);
        assert!(e.is_empty());
    }

    /// A queue takes ranges while they fit in what is left of its budget, over all asks
    /// together, here and on its thread alike; the rest counts as skipped.
    #[test]
    fn read_ahead_queue_respects_its_budget() {
        let f = |n| ReadAheadRange::File("/nonexistent".into(), n);
        let mut q = ReadAheadQueue::with_budget(100);
        assert_eq!(q.ask(vec![f(40), f(50), f(30)]), 90);
        assert_eq!((q.planned_bytes, q.skipped_bytes, q.left()), (90, 30, 10));
        assert_eq!(q.ask_here(vec![f(11), f(10)]), 10);
        assert_eq!(q.ask(vec![f(1)]), 0);
        assert_eq!((q.planned_bytes, q.skipped_bytes, q.left()), (100, 42, 0));
        assert!(q.thread.is_some());
        drop(q);
        let mut q = ReadAheadQueue::with_budget(0);
        assert_eq!(q.ask(vec![f(1)]), 0);
        assert!(q.thread.is_none());
        assert_eq!(ReadAheadQueue::new(0.0).left(), 0);
    }

    /// `READ_AHEAD_ENV` sets the share; values outside [0, 1] or not numbers are ignored.
    #[test]
    fn share_defaults_and_bounds() {
        assert!((0.0..=1.0).contains(&READ_AHEAD_SHARE));
        assert!(mem_available().is_none_or(|m| m > 0));
        // A read-ahead of nothing, and of ranges with a share of 0, starts no thread.
        let r = ReadAhead::start(Vec::new(), 0.5);
        assert!(r.thread.is_none() && r.planned_bytes == 0 && r.skipped_bytes == 0);
        let r = ReadAhead::start(vec![ReadAheadRange::File("/nonexistent".into(), 4096)], 0.0);
        assert!(r.thread.is_none() && r.planned_bytes == 0 && r.skipped_bytes == 4096);
        // A file that does not exist is a hint that does nothing.
        let r = ReadAhead::start(vec![ReadAheadRange::File("/nonexistent".into(), 4096)], 0.5);
        assert_eq!(r.planned_bytes + r.skipped_bytes, 4096);
        drop(r);
    }
}
