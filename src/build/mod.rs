//! The segment builder: the one place that writes an index segment's tables (FORWARD,
//! POSTINGS, FREQUENT and the method tables) over `segment::SegmentWriter`, and the one guard
//! that removes a segment nobody published.
//!
//! Every producer of segments goes through it: batch ingest (`pipeline::ingest`), the staged
//! parts of `lifecycle::stage`, compaction (`lifecycle::compact`), and the delta
//! ([`delta`]: the fold, an add's matching segment, a snapshot's delta). So their segments
//! agree byte for byte where they hold the same documents.
//!
//! Call sequence: [`SegmentBuilder::create`] (FORWARD is open) -> [`SegmentBuilder::forward`]
//! per document in id order -> the postings, from a sorted `(feature, doc)` stream
//! ([`SegmentBuilder::postings_from_sorted`]) or list by list
//! ([`SegmentBuilder::begin_postings`], [`SegmentBuilder::posting_list`],
//! [`SegmentBuilder::end_postings`], which writes FREQUENT) -> method tables ->
//! [`SegmentBuilder::finish`], which returns a [`BuiltSegment`]: its files are removed when
//! it is dropped unless [`BuiltSegment::keep`] says the catalog (or a rename) owns them now.
//!
//! Layer: above the codecs and storage (segment, sort, store), below the read view; it
//! imports nothing from `view` or above (tests/integration/layers.rs).

pub mod delta;

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fingerprint::manku::PermutedTables;
use crate::fingerprint::simhash::encode_sim384;
use crate::segment::{self, SegmentMeta, SegmentWriter, FREQUENT, FREQUENT_DF};
use crate::sort::prefault::Bounded;
use crate::sort::{
    Buffered, DocHash, DocKeys, DocPair, ExternalSorter, KeyDoc, SortOptions, SortedSlices, Spool,
    SpoolFile, Transposer,
};
use crate::store::SegmentEntry;

/// Files of a segment that is not (yet) published: removed when dropped, unless
/// [`Unpublished::keep`] was called.
#[derive(Debug, Default)]
pub struct Unpublished(Vec<PathBuf>);

impl Unpublished {
    /// Guards these files.
    pub fn new(files: Vec<PathBuf>) -> Unpublished {
        Unpublished(files)
    }

    /// Guards one more file.
    pub fn push(&mut self, file: PathBuf) {
        self.0.push(file);
    }

    /// The files belong to someone else now (a published manifest, a rename, a private
    /// temporary folder): they are no longer removed.
    pub fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for Unpublished {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes one segment's tables. See the module docs for the call sequence.
pub struct SegmentBuilder {
    w: SegmentWriter,
    files: Unpublished,
    buf: Vec<u8>,
    /// What the POSTINGS lists added so far leave besides their bytes.
    lists: ListsSeen,
}

/// What a builder keeps of the POSTINGS lists besides their bytes (apart from the writer, so
/// that [`SegmentBuilder::postings_from_sorted`] can hand the writer to a thread of its own).
struct ListsSeen {
    /// Posting keys written to POSTINGS.
    keys: u64,
    /// Posting entries (doc ids) written to POSTINGS.
    postings: u64,
    /// `(key, df)` of the POSTINGS keys in more than `FREQUENT_DF` documents.
    frequent: Vec<(u64, u32)>,
    /// Format 3 (FORWARD lists are ranks of POSTINGS keys): the FORWARD table is written
    /// after POSTINGS, from its inversion. None for formats 1 and 2 (FORWARD streamed first).
    ranked: Option<RankedForward>,
    /// Format 3, when asked for ([`SegmentBuilder::keep_keys`]): the POSTINGS keys so far, in
    /// rank order (added with the blocks, on the block thread), while within the bound.
    kept: Option<Bounded>,
    /// When asked for ([`SegmentBuilder::keep_shared_keys`]): the POSTINGS keys so far whose
    /// lists hold more than one document, ascending, while within the bound.
    shared: Option<Bounded>,
}

impl ListsSeen {
    /// Counts the posting list of `key` (added to POSTINGS as the next key): its df for
    /// FREQUENT and, in format 3, its documents' ranks for FORWARD.
    fn note(&mut self, key: u64, ids: &[u32]) -> Result<()> {
        if self.ranked.is_some() {
            let rank = self.next_rank()?;
            if let Some(r) = self.ranked.as_mut() {
                for &doc in ids {
                    r.push(DocPair { a: doc, b: rank })?;
                }
            }
        }
        if ids.len() as u32 > FREQUENT_DF {
            self.frequent.push((key, ids.len() as u32));
        }
        if ids.len() > 1 {
            self.note_shared(key);
        }
        self.keys += 1;
        self.postings += ids.len() as u64;
        Ok(())
    }

    /// Keeps `key` (a list of more than one document) among the shared keys, if asked for;
    /// gives them up once they are more than half the keys (`SHARED_CHECKED_AFTER` keys on).
    #[inline]
    fn note_shared(&mut self, key: u64) {
        if let Some(s) = self.shared.as_mut() {
            s.extend(&[key]);
            if self.keys >= SHARED_CHECKED_AFTER && s.values().len() as u64 * 2 > self.keys {
                self.shared = None;
            }
        }
    }

    /// The rank of the next POSTINGS key (format 3: FORWARD lists hold ranks as u32).
    fn next_rank(&self) -> Result<u32> {
        u32::try_from(self.keys).map_err(|_| {
            crate::error::Error::InvalidArgument(
                "a format-3 segment holds at most 2^32 POSTINGS keys".into(),
            )
        })
    }

    /// Adds the posting list of `key` to `chunk` and notes it.
    fn add_list(&mut self, chunk: &mut EncodedLists, key: u64, ids: &[u32]) -> Result<()> {
        self.add_list_encoded(chunk, key, ids, None)
    }

    /// [`ListsSeen::add_list`] with the list's bytes, if given, copied instead of encoded
    /// (they must be `encode_postings(ids)`'s: compaction passes a list it did not change).
    fn add_list_encoded(
        &mut self,
        chunk: &mut EncodedLists,
        key: u64,
        ids: &[u32],
        encoded: Option<&[u8]>,
    ) -> Result<()> {
        match encoded {
            Some(b) => chunk.bytes.extend_from_slice(b),
            None => segment::encode_postings(ids, &mut chunk.bytes),
        }
        chunk.keys.push(key);
        chunk.ends.push(chunk.bytes.len());
        self.note(key, ids)
    }

    /// Adds the posting lists of `recs` (the next records, sorted by key, then doc) to
    /// `chunk`, handing each full chunk to `hand` (false: the block thread failed; so does
    /// this call). Each run of one key is a list; the slice's last run waits in `run`, as the
    /// next slice may go on with it (`run` holds the run the previous slice left).
    fn add_slice(
        &mut self,
        recs: &[KeyDoc],
        run: &mut Run,
        chunk: &mut EncodedLists,
        hand: &mut dyn FnMut(&mut EncodedLists) -> bool,
    ) -> Result<bool> {
        let Some(last) = recs.last().map(|r| r.key) else {
            return Ok(true);
        };
        let mut from = 0;
        if let Some(k) = run.key {
            from = recs.iter().take_while(|r| r.key == k).count();
            run.ids.extend(recs[..from].iter().map(|r| r.doc));
            if from == recs.len() {
                return Ok(true);
            }
            self.add_list(chunk, k, &run.ids)?;
            run.ids.clear();
            run.key = None;
            if chunk.full() && !hand(chunk) {
                return Ok(false);
            }
        }
        // The last run starts at `tail`, not before `from`: `recs[from]` is not of key `k`.
        let tail = recs.len() - recs.iter().rev().take_while(|r| r.key == last).count();
        if !self.add_runs(&recs[from..tail], &mut run.ids, chunk, hand)? {
            return Ok(false);
        }
        run.ids.clear();
        run.ids.extend(recs[tail..].iter().map(|r| r.doc));
        run.key = Some(last);
        Ok(true)
    }

    /// [`ListsSeen::add_slice`] of records whose runs all end within them, with the rank
    /// placement chosen once for all of them.
    fn add_runs(
        &mut self,
        recs: &[KeyDoc],
        ids: &mut Vec<u32>,
        chunk: &mut EncodedLists,
        hand: &mut dyn FnMut(&mut EncodedLists) -> bool,
    ) -> Result<bool> {
        let mut ranked = self.ranked.take();
        let added = match ranked.as_mut() {
            None => self.runs(&mut NoRanks, recs, ids, chunk, hand),
            Some(RankedForward {
                direct: Some(d),
                docs,
                ..
            }) => self.runs(&mut DirectRanks { d, docs }, recs, ids, chunk, hand),
            Some(r) => self.runs(&mut SortedRanks(r), recs, ids, chunk, hand),
        };
        self.ranked = ranked;
        added
    }

    /// [`ListsSeen::add_runs`] placing the ranks with `place`: what
    /// [`ListsSeen::add_list`] does per list, with a one-document list (most keys of a
    /// batch) taken without `ids`.
    #[inline]
    fn runs<P: PlaceRanks>(
        &mut self,
        place: &mut P,
        recs: &[KeyDoc],
        ids: &mut Vec<u32>,
        chunk: &mut EncodedLists,
        hand: &mut dyn FnMut(&mut EncodedLists) -> bool,
    ) -> Result<bool> {
        let mut j = 0;
        while j < recs.len() {
            let key = recs[j].key;
            let rank = if P::RANKED { self.next_rank()? } else { 0 };
            let n = 1 + recs[j + 1..].iter().take_while(|r| r.key == key).count();
            if n == 1 {
                let doc = recs[j].doc;
                segment::encode_one_posting(doc, &mut chunk.bytes);
                place.place(doc, rank)?;
            } else {
                ids.clear();
                ids.extend(recs[j..j + n].iter().map(|r| r.doc));
                segment::encode_postings(ids, &mut chunk.bytes);
                for &doc in ids.iter() {
                    place.place(doc, rank)?;
                }
                if n as u32 > FREQUENT_DF {
                    self.frequent.push((key, n as u32));
                }
                self.note_shared(key);
            }
            chunk.keys.push(key);
            chunk.ends.push(chunk.bytes.len());
            self.keys += 1;
            self.postings += n as u64;
            j += n;
            if chunk.full() && !hand(chunk) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The run of one key that a slice of records ended with (the next slice may go on with it).
#[derive(Default)]
struct Run {
    key: Option<u64>,
    ids: Vec<u32>,
}

/// Where [`ListsSeen::runs`] places a document's rank (format 3), what
/// [`RankedForward::push`] does, chosen once per slice.
trait PlaceRanks {
    /// Whether ranks are placed (then each key's rank must fit a u32).
    const RANKED: bool = true;
    fn place(&mut self, doc: u32, rank: u32) -> Result<()>;
}

/// Formats 1 and 2: no ranks.
struct NoRanks;

impl PlaceRanks for NoRanks {
    const RANKED: bool = false;
    #[inline]
    fn place(&mut self, _: u32, _: u32) -> Result<()> {
        Ok(())
    }
}

/// Format 3, the ranks placed directly.
struct DirectRanks<'a> {
    d: &'a mut Direct,
    docs: &'a [(u32, u32)],
}

impl PlaceRanks for DirectRanks<'_> {
    #[inline]
    fn place(&mut self, doc: u32, rank: u32) -> Result<()> {
        self.d.push(self.docs, doc, rank);
        Ok(())
    }
}

/// Format 3, the ranks sorted.
struct SortedRanks<'a>(&'a mut RankedForward);

impl PlaceRanks for SortedRanks<'_> {
    #[inline]
    fn place(&mut self, doc: u32, rank: u32) -> Result<()> {
        self.0.push(DocPair { a: doc, b: rank })
    }
}

/// What a format-3 builder keeps until POSTINGS is complete: the documents and their feature
/// counts (8 bytes a document; none when [`SegmentBuilder::with_sort`] gave a folder: they are
/// spooled to a run file there), and the `(doc, rank)` records of the postings: when the
/// announced features fit an eighth of the sort budget at 8 bytes each, each rank goes
/// straight into its document's slot of one array ([`Direct`], 4 bytes a feature: keys come
/// in rank order, so every document's ranks come out sorted, with no sort); otherwise they are
/// sorted within the budget (in memory up to an eighth of it, then through an external sort).
struct RankedForward {
    /// `(doc, feature count)` in id order, as `forward` received them (in memory when not
    /// spooled, or for the direct placement).
    docs: Vec<(u32, u32)>,
    /// The same, spooled as `DocPair { a: doc, b: count }` (set by `with_sort` before the first
    /// document).
    spool: Option<Spool<DocPair>>,
    /// Documents announced, their features in all, and the last id.
    ndocs: u64,
    total: u64,
    last: Option<u32>,
    sort: SortOptions,
    /// The `(doc, rank)` records, transposed by document within the budget (in memory up to
    /// a quarter of it, then through runs: [`Transposer`]).
    pairs: Option<Transposer>,
    /// Set by `begin_postings` when the ranks fit in memory.
    direct: Option<Direct>,
    /// FORWARD is written (by `end_postings`, or `finish` for a segment without postings).
    written: bool,
}

/// The ranks of every announced document in one array, placed as the postings arrive (a
/// counting sort by document): document `docs[i]` owns `ranks[range(i)]`, and
/// `slots[i].at - range(i).start` counts the postings that listed it (more than its count is
/// an error, reported by `end_postings` as the sorting path reports it).
struct Direct {
    /// `docs[0].0` when the ids are consecutive (`slot = doc - first`); else binary search.
    dense_first: Option<u32>,
    slots: Vec<Slot>,
    ranks: Vec<u32>,
    /// The smallest listed doc that has no FORWARD entry.
    unknown: Option<u32>,
}

/// A document's place in [`Direct::ranks`]: its next rank goes to `at` while `at < end`
/// (`at` goes on counting past `end`: too many postings).
#[derive(Clone, Copy)]
struct Slot {
    at: usize,
    end: usize,
}

impl Direct {
    fn new(docs: &[(u32, u32)]) -> Direct {
        let dense = match (docs.first(), docs.last()) {
            (Some(f), Some(l)) => (l.0 - f.0) as usize + 1 == docs.len(),
            _ => false,
        };
        let mut slots = Vec::with_capacity(docs.len());
        let mut total = 0usize;
        for &(_, c) in docs {
            let at = total;
            total += c as usize;
            slots.push(Slot { at, end: total });
        }
        // Written all over as the postings arrive: faulted in at once.
        let mut ranks = crate::sort::prefault::with_capacity(total);
        ranks.resize(total, 0);
        Direct {
            dense_first: dense.then(|| docs[0].0),
            slots,
            ranks,
            unknown: None,
        }
    }

    /// The ranks of document `docs[i]`.
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let start = match i {
            0 => 0,
            _ => self.slots[i - 1].end,
        };
        start..self.slots[i].end
    }

    /// How many postings listed document `docs[i]`.
    fn fill(&self, i: usize) -> usize {
        self.slots[i].at - self.range(i).start
    }

    #[inline]
    fn slot(&self, docs: &[(u32, u32)], doc: u32) -> Option<usize> {
        match self.dense_first {
            Some(first) => {
                let i = doc.wrapping_sub(first) as usize;
                (i < self.slots.len()).then_some(i)
            }
            None => docs.binary_search_by_key(&doc, |d| d.0).ok(),
        }
    }

    /// Places `rank` in the slot of document `i`.
    #[inline]
    fn place(&mut self, i: usize, rank: u32) {
        let s = &mut self.slots[i];
        if s.at < s.end {
            if let Some(r) = self.ranks.get_mut(s.at) {
                *r = rank;
            }
        }
        s.at += 1;
    }

    /// A listed doc with no slot.
    #[cold]
    fn unknown(&mut self, doc: u32) {
        self.unknown = Some(self.unknown.map_or(doc, |u| u.min(doc)));
    }

    #[inline]
    fn push(&mut self, docs: &[(u32, u32)], doc: u32, rank: u32) {
        match self.slot(docs, doc) {
            Some(i) => self.place(i, rank),
            None => self.unknown(doc),
        }
    }
}

impl RankedForward {
    fn push(&mut self, p: DocPair) -> Result<()> {
        if let Some(d) = self.direct.as_mut() {
            d.push(&self.docs, p.a, p.b);
            return Ok(());
        }
        self.pairs
            .get_or_insert_with(|| Transposer::new(&self.sort))
            .push(p)
    }
}

impl SegmentBuilder {
    /// Starts the segment `<dir>/<name>` (published durably by `finish`: tmp, fsync, rename,
    /// fsync the folder) with its FORWARD table open. Until [`BuiltSegment::keep`], an error or
    /// a drop removes its files.
    pub fn create(dir: impl AsRef<Path>, name: &str) -> Result<SegmentBuilder> {
        Self::over(
            SegmentWriter::create(dir.as_ref(), name)?,
            dir.as_ref(),
            name,
        )
    }

    /// [`SegmentBuilder::create`] writing format `version` whatever `NDD_SEGMENT_FORMAT` says:
    /// an index's writers pass `IndexOptions::segment_format()` (the version recorded at
    /// creation, or the variable's override); tests pass the format they test.
    pub fn create_version(
        dir: impl AsRef<Path>,
        name: &str,
        version: u32,
    ) -> Result<SegmentBuilder> {
        let w = SegmentWriter::create_version(
            dir.as_ref(),
            name,
            segment::DEFAULT_BLOCK_TARGET,
            version,
        )?;
        Self::over(w, dir.as_ref(), name)
    }

    /// [`SegmentBuilder::create`] for a private temporary segment (a snapshot's delta, an
    /// add's matching segment): the same bytes, without the fsyncs of a published segment.
    /// These pieces are never published (a fold writes the index's own format through
    /// [`SegmentBuilder::create_version`]), so they keep format 2 whatever the index's format
    /// (a server rewrites them at every group commit; format 3 would add its second sort and
    /// the rank mapping to every piece), unless `NDD_SEGMENT_FORMAT` says otherwise.
    pub fn temporary(dir: impl AsRef<Path>, name: &str) -> Result<SegmentBuilder> {
        let version = segment::format_override().unwrap_or(2);
        let w = SegmentWriter::create_version(
            dir.as_ref(),
            name,
            segment::DEFAULT_BLOCK_TARGET,
            version,
        )?
        .temporary();
        Self::over(w, dir.as_ref(), name)
    }

    fn over(mut w: SegmentWriter, dir: &Path, name: &str) -> Result<SegmentBuilder> {
        let files = Unpublished(vec![w.tmp_path().to_path_buf(), dir.join(name)]);
        let ranked =
            (w.format_version() >= segment::RANKED_FORWARD_VERSION).then(|| RankedForward {
                docs: Vec::new(),
                spool: None,
                ndocs: 0,
                total: 0,
                last: None,
                sort: SortOptions::default(),
                pairs: None,
                direct: None,
                written: false,
            });
        if ranked.is_none() {
            w.begin_table(segment::FORWARD)?;
        }
        Ok(SegmentBuilder {
            w,
            files,
            buf: Vec::new(),
            lists: ListsSeen {
                keys: 0,
                postings: 0,
                frequent: Vec::new(),
                ranked,
                kept: None,
                shared: None,
            },
        })
    }

    /// Format 3: keeps the POSTINGS keys in memory as they are written (8 bytes each, in
    /// rank order) while they fit `max_bytes`, for [`BuiltSegment::take_keys`]: a writer that
    /// reads the new segment's FORWARD lists right away (ingest's matching) maps their ranks
    /// through them instead of decoding the key sequences back from the file. Call before
    /// the postings; nothing kept in formats 1 and 2 (their FORWARD lists are the keys).
    pub fn keep_keys(&mut self, max_bytes: u64) {
        if self.lists.ranked.is_some() && self.lists.keys == 0 {
            self.lists.kept = Some(Bounded::new(max_bytes));
        }
    }

    /// Keeps the POSTINGS keys whose lists hold more than one document (8 bytes each) while
    /// they fit `max_bytes` and are at most half the keys, for
    /// [`BuiltSegment::take_shared_keys`]: a matching of the segment's documents among
    /// themselves skips every other key, under which no two of them are listed. Call before
    /// the postings.
    pub fn keep_shared_keys(&mut self, max_bytes: u64) {
        if self.lists.keys == 0 {
            self.lists.shared = Some(Bounded::new(max_bytes));
        }
    }

    /// Memory budget and run-file folder of the sort that turns the postings into FORWARD
    /// rank lists (format 3; default: 256 MiB in the system temp folder). Call before the
    /// postings; called before the first FORWARD entry, the entries' feature counts are
    /// spooled to a run file in that folder instead of memory.
    pub fn with_sort(mut self, opts: SortOptions) -> Self {
        if let Some(r) = self.lists.ranked.as_mut() {
            if r.ndocs == 0 {
                r.spool = Some(Spool::new(opts.tmp_dir.clone()));
            }
            r.sort = opts;
        }
        self
    }

    /// Whether this segment's FORWARD lists are ranks of its POSTINGS keys (format 3): then
    /// FORWARD is written after POSTINGS and [`SegmentBuilder::forward_encoded`] is refused.
    pub fn ranked_forward(&self) -> bool {
        self.lists.ranked.is_some()
    }

    /// Format version being written.
    pub fn format_version(&self) -> u32 {
        self.w.format_version()
    }

    /// Adds the FORWARD entry of `doc` (ids ascend): its sorted unique features, which the
    /// postings must list `doc` under (format 3 writes the entry from them).
    pub fn forward(&mut self, doc: u32, features: &[u64]) -> Result<()> {
        if self.lists.ranked.is_some() {
            assert!(
                features.windows(2).all(|w| w[0] < w[1]),
                "feature hashes must be strictly increasing"
            );
            return self.forward_count(doc, features.len());
        }
        self.buf.clear();
        segment::encode_u64s(features, &mut self.buf);
        self.w.add(doc as u64, &self.buf)
    }

    /// Format 3: announces the FORWARD entry of `doc` (ids ascend) with `count` features; its
    /// ranks come from the postings, which must list `doc` under exactly `count` keys.
    pub fn forward_count(&mut self, doc: u32, count: usize) -> Result<()> {
        let Some(r) = self.lists.ranked.as_mut() else {
            return Err(crate::error::Error::InvalidArgument(
                "forward_count on a segment of format < 3".into(),
            ));
        };
        if r.written || r.direct.is_some() {
            return Err(crate::error::Error::InvalidArgument(format!(
                "FORWARD: doc {doc} after the postings began"
            )));
        }
        if let Some(last) = r.last.filter(|&d| d >= doc) {
            return Err(crate::error::Error::InvalidArgument(format!(
                "FORWARD: doc {doc} after doc {last}"
            )));
        }
        let count = u32::try_from(count).map_err(|_| {
            crate::error::Error::InvalidArgument(format!("doc {doc}: too many features"))
        })?;
        match r.spool.as_mut() {
            Some(s) => s.push(DocPair { a: doc, b: count })?,
            None => r.docs.push((doc, count)),
        }
        r.last = Some(doc);
        r.ndocs += 1;
        r.total += count as u64;
        Ok(())
    }

    /// Adds a FORWARD value already encoded (`encode_u64s`; compaction copies them between
    /// segments of format 1 or 2). Refused in format 3, where values are this segment's ranks.
    pub fn forward_encoded(&mut self, doc: u64, value: &[u8]) -> Result<()> {
        if self.lists.ranked.is_some() {
            return Err(crate::error::Error::InvalidArgument(
                "forward_encoded: format-3 FORWARD values are ranks of this segment".into(),
            ));
        }
        self.w.add(doc, value)
    }

    /// Closes FORWARD (formats 1, 2) and opens POSTINGS.
    pub fn begin_postings(&mut self) -> Result<()> {
        match self.lists.ranked.as_mut() {
            None => self.w.end_table()?,
            Some(r) => {
                // The ranks placed directly (4 bytes each) when the sorted path would keep
                // them in memory too (8 bytes each, up to an eighth of the budget), and the
                // documents (8 bytes each) and their slots (16 bytes each) fit an eighth of it too.
                if r.direct.is_none()
                    && r.pairs.is_none()
                    && r.total.saturating_mul(8) < r.sort.mem_bytes / 8
                    && r.ndocs.saturating_mul(24) < r.sort.mem_bytes / 8
                {
                    if let Some(s) = r.spool.take() {
                        for p in s.finish()?.read()? {
                            let p = p?;
                            r.docs.push((p.a, p.b));
                        }
                    }
                    r.direct = Some(Direct::new(&r.docs));
                }
                // At most one key per feature: reserved (not touched) once, never regrown.
                if let Some(k) = self.lists.kept.as_mut() {
                    k.reserve_exact(usize::try_from(r.total).unwrap_or(k.max()).min(k.max()));
                }
            }
        }
        self.w.begin_table(segment::POSTINGS)
    }

    /// Adds the posting list of `key` (keys ascend; `ids` sorted, unique, not empty).
    pub fn posting_list(&mut self, key: u64, ids: &[u32]) -> Result<()> {
        self.buf.clear();
        segment::encode_postings(ids, &mut self.buf);
        self.w.add(key, &self.buf)?;
        if let Some(k) = self.lists.kept.as_mut() {
            k.extend(&[key]);
        }
        self.lists.note(key, ids)
    }

    /// Closes POSTINGS and writes FREQUENT: the keys in more than `FREQUENT_DF` documents,
    /// with their df; in format 3 then FORWARD, from the postings.
    pub fn end_postings(&mut self) -> Result<()> {
        self.w.end_table()?;
        self.w.begin_table(FREQUENT)?;
        for (k, df) in std::mem::take(&mut self.lists.frequent) {
            self.w.add(k, &df.to_le_bytes())?;
        }
        self.w.end_table()?;
        self.write_ranked_forward()
    }

    /// Format 3, once: the FORWARD table (see [`SegmentBuilder::ranked_forward_table`]).
    fn write_ranked_forward(&mut self) -> Result<()> {
        let Some(r) = self.lists.ranked.as_mut().filter(|r| !r.written) else {
            return Ok(());
        };
        r.written = true;
        let r = RankedForward {
            docs: std::mem::take(&mut r.docs),
            spool: r.spool.take(),
            ndocs: r.ndocs,
            total: r.total,
            last: r.last,
            sort: r.sort.clone(),
            pairs: r.pairs.take(),
            direct: r.direct.take(),
            written: true,
        };
        match r.direct {
            Some(d) => self.direct_forward_table(&r.docs, d),
            None => self.ranked_forward_table(r),
        }
    }

    /// Format 3: the FORWARD table from ranks placed directly ([`Direct`]); the same bytes and
    /// the same errors as [`SegmentBuilder::ranked_forward_table`].
    fn direct_forward_table(&mut self, docs: &[(u32, u32)], d: Direct) -> Result<()> {
        use crate::error::Error;
        let mismatch = docs
            .iter()
            .enumerate()
            .map(|(i, doc)| (doc.0, doc.1, d.fill(i)))
            .find(|&(_, count, fill)| fill != count as usize);
        match (d.unknown, mismatch) {
            (Some(u), m) if m.is_none_or(|(doc, _, _)| u < doc) => {
                return Err(Error::InvalidArgument(format!(
                    "POSTINGS lists doc {u} that has no FORWARD entry"
                )));
            }
            (_, Some((doc, count, fill))) => {
                return Err(Error::InvalidArgument(format!(
                    "doc {doc}: {count} features, but POSTINGS lists it under {fill} keys"
                )));
            }
            _ => {}
        }
        self.w.begin_table(segment::FORWARD)?;
        // The lists encoded on every core, a group of documents at a time (in order), while
        // this thread adds the previous group's values to the table: the same bytes.
        use rayon::prelude::*;
        let encode = |group: std::ops::Range<usize>| -> (Vec<u8>, Vec<usize>) {
            let (mut bytes, mut ends) = (Vec::new(), Vec::with_capacity(group.len()));
            let mut ranks: Vec<u64> = Vec::new();
            for i in group {
                ranks.clear();
                ranks.extend(d.ranks[d.range(i)].iter().map(|&r| r as u64));
                segment::encode_u64s(&ranks, &mut bytes);
                ends.push(bytes.len());
            }
            (bytes, ends)
        };
        let groups: Vec<std::ops::Range<usize>> = (0..docs.len())
            .step_by(FORWARD_GROUP)
            .map(|g| g..(g + FORWARD_GROUP).min(docs.len()))
            .collect();
        let mut done: Option<(usize, (Vec<u8>, Vec<usize>))> = None;
        for g in &groups {
            // Encode group k (cut in pieces across the cores) while group k - 1 is added.
            let pieces: Vec<std::ops::Range<usize>> = g
                .clone()
                .step_by(FORWARD_PIECE)
                .map(|p| p..(p + FORWARD_PIECE).min(g.end))
                .collect();
            let w = &mut self.w;
            let prev = done.take();
            let (encoded, added) = rayon::join(
                || {
                    pieces
                        .into_par_iter()
                        .map(|p| (p.start, encode(p)))
                        .collect::<Vec<_>>()
                },
                || -> Result<()> {
                    if let Some((start, (bytes, ends))) = prev {
                        add_encoded(w, docs, start, &bytes, &ends)?;
                    }
                    Ok(())
                },
            );
            added?;
            for (start, (bytes, ends)) in encoded {
                match done.take() {
                    None => done = Some((start, (bytes, ends))),
                    Some((s0, (mut b0, mut e0))) => {
                        let base = b0.len();
                        b0.extend_from_slice(&bytes);
                        e0.extend(ends.iter().map(|e| e + base));
                        done = Some((s0, (b0, e0)));
                    }
                }
            }
        }
        if let Some((start, (bytes, ends))) = done {
            add_encoded(&mut self.w, docs, start, &bytes, &ends)?;
        }
        // A large rank array's pages are given back on a thread of their own while this one
        // goes on.
        if d.ranks.len() >= FREE_ON_A_THREAD {
            crate::sort::prefault::drop_on_a_thread(d);
        }
        self.w.end_table()
    }

    /// Format 3: the FORWARD table from the `(doc, rank)` records of the postings, grouped by
    /// doc (ranks ascending within a doc): each announced document gets its ranks (as many as
    /// its feature count).
    fn ranked_forward_table(&mut self, r: RankedForward) -> Result<()> {
        use crate::error::Error;
        let RankedForward {
            docs, spool, pairs, ..
        } = r;
        // The documents from their spool, or from memory.
        let spooled = spool.map(|s| s.finish()).transpose()?;
        let docs: Box<dyn Iterator<Item = Result<(u32, u32)>>> = match &spooled {
            Some(f) => Box::new(f.read()?.map(|p| p.map(|p| (p.a, p.b)))),
            None => Box::new(docs.into_iter().map(Ok)),
        };
        let mut grouped = pairs.map(Transposer::finish).transpose()?;
        let unknown = |doc: u32| {
            Error::InvalidArgument(format!(
                "POSTINGS lists doc {doc} that has no FORWARD entry"
            ))
        };
        self.w.begin_table(segment::FORWARD)?;
        // This thread gathers and encodes each document's ranks; the blocks are built on a
        // thread of their own.
        let mut ranks: Vec<u64> = Vec::new();
        let mut value: Vec<u8> = Vec::new();
        entries_on_block_thread(&mut self.w, |sink| {
            for d in docs {
                let (doc, count) = d?;
                ranks.clear();
                if let Some(g) = grouped.as_mut() {
                    if let Some(skipped) = g.take(doc, &mut ranks)? {
                        return Err(unknown(skipped));
                    }
                }
                if ranks.len() != count as usize {
                    return Err(Error::InvalidArgument(format!(
                        "doc {doc}: {count} features, but POSTINGS lists it under {} keys",
                        ranks.len()
                    )));
                }
                value.clear();
                segment::encode_u64s(&ranks, &mut value);
                sink(doc as u64, &value)?;
            }
            if let Some(a) = grouped.as_ref().and_then(|g| g.next_a()) {
                return Err(unknown(a));
            }
            Ok(())
        })?;
        self.w.end_table()
    }

    /// [`SegmentBuilder::postings_from_sorted`] from a sorter's records, streamed while the
    /// sorter still sorts ([`ExternalSorter::finish_sliced`]).
    pub fn postings_from_sorter(&mut self, sorter: ExternalSorter<KeyDoc>) -> Result<()> {
        sorter.finish_sliced(|sorted| self.postings_from_slices(sorted))
    }

    /// [`SegmentBuilder::postings_from_sorter`] of the records `lists` gives (the batch's
    /// feature lists in doc order) and those pushed into `sorter`
    /// ([`ExternalSorter::finish_sliced_lists`]).
    pub fn postings_from_lists(
        &mut self,
        sorter: ExternalSorter<KeyDoc>,
        lists: &DocKeys<'_>,
    ) -> Result<()> {
        sorter.finish_sliced_lists(lists, |sorted| self.postings_from_slices(sorted))
    }

    /// POSTINGS and FREQUENT from the `(feature, doc)` records sorted by feature, then doc.
    ///
    /// This thread groups the records into lists, encodes them and places their ranks
    /// (format 3); once a first chunk of [`CHUNK_LISTS`] lists is ready, the blocks (their
    /// key filters, Elias-Fano keys, CRCs and writes) are built by a thread of its own, fed
    /// chunks of encoded lists over a channel [`CHUNKS_AHEAD`] deep. The writer gets the same
    /// `add` calls in the same order as [`SegmentBuilder::posting_list`] makes: the same bytes.
    pub fn postings_from_sorted(
        &mut self,
        sorted: impl IntoIterator<Item = Result<KeyDoc>>,
    ) -> Result<()> {
        self.postings_from_slices(&mut Buffered::new(sorted.into_iter()))
    }

    /// [`SegmentBuilder::postings_from_sorted`] from the records a slice at a time.
    fn postings_from_slices(&mut self, sorted: &mut dyn SortedSlices<KeyDoc>) -> Result<()> {
        self.postings_on_block_thread(|lists, chunk, hand| {
            let mut run = Run::default();
            while let Some(slice) = sorted.next_slice()? {
                if !lists.add_slice(slice, &mut run, chunk, hand)? {
                    return Ok(()); // the block thread failed: its error is returned
                }
            }
            if let Some(k) = run.key.filter(|_| !run.ids.is_empty()) {
                lists.add_list(chunk, k, &run.ids)?;
                if chunk.full() {
                    hand(chunk); // if the thread failed, its error is returned
                }
            }
            Ok(())
        })
    }

    /// POSTINGS and FREQUENT (and FORWARD, in format 3) from the posting lists `produce`
    /// hands its sink, keys ascending, ids sorted, unique and not empty: the same bytes as
    /// [`SegmentBuilder::posting_list`] for each, with the blocks (key filters, Elias-Fano
    /// keys, CRCs and writes) built on a thread of their own as in
    /// [`SegmentBuilder::postings_from_sorted`]. Compaction's merged lists come this way.
    /// A list may come with its bytes already encoded (`encode_postings(ids)`'s bytes, which
    /// are then copied: compaction's lists found in one input only). The sink fails once the
    /// block thread has; the thread's error is returned then.
    pub fn postings_from_lists_fn(
        &mut self,
        produce: impl FnOnce(&mut dyn FnMut(u64, &[u32], Option<&[u8]>) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        self.postings_on_block_thread(|lists, chunk, hand| {
            let mut sink = |key: u64, ids: &[u32], encoded: Option<&[u8]>| -> Result<()> {
                debug_assert!(encoded.is_none_or(|b| {
                    let mut want = Vec::new();
                    segment::encode_postings(ids, &mut want);
                    want == b
                }));
                lists.add_list_encoded(chunk, key, ids, encoded)?;
                if chunk.full() && !hand(chunk) {
                    return Err(crate::error::Error::InvalidArgument(
                        "the segment's block thread stopped".into(),
                    ));
                }
                Ok(())
            };
            produce(&mut sink)
        })
    }

    /// Writes table `table` (after the ones written so far) from the entries `produce` hands
    /// its sink, keys ascending: the same bytes as `begin_table`, an `add` per entry and
    /// `end_table` on the writer, with the blocks (Elias-Fano keys and value ends, CRCs,
    /// writes) built on a thread of their own while `produce` makes the next entries.
    /// Compaction's other tables come this way. The sink fails once the block thread has;
    /// the thread's error is returned then.
    pub fn table_from_entries_fn(
        &mut self,
        table: u32,
        produce: impl FnOnce(&mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        self.w.begin_table(table)?;
        entries_on_block_thread(&mut self.w, produce)?;
        self.w.end_table()
    }

    /// Begins POSTINGS, runs `feed` (which adds lists to the chunk it is given and hands each
    /// full chunk to the block thread: false when that thread has failed), writes the last
    /// chunk and ends POSTINGS. The block thread starts with the first full chunk; a feed
    /// that never fills one writes its lists on this thread. The block thread's error comes
    /// first: the feed stopped because of it.
    fn postings_on_block_thread(
        &mut self,
        feed: impl FnOnce(
            &mut ListsSeen,
            &mut EncodedLists,
            &mut dyn FnMut(&mut EncodedLists) -> bool,
        ) -> Result<()>,
    ) -> Result<()> {
        self.begin_postings()?;
        let Self { w, lists, .. } = self;
        let mut kept = lists.kept.take();
        on_block_thread(w, kept.as_mut(), |chunk, hand| feed(lists, chunk, hand))?;
        lists.kept = kept;
        self.end_postings()
    }

    /// A table of posting lists (a method's table) from `(key, doc)` entries sorted by key,
    /// then doc; a doc repeated under a key counts once.
    pub fn postings_table(&mut self, table: u32, entries: &[(u64, u32)]) -> Result<()> {
        let sorted = entries.iter().map(|&(key, doc)| Ok(KeyDoc { key, doc }));
        self.postings_table_sorted(table, sorted)
    }

    /// [`SegmentBuilder::postings_table`] from a stream of records sorted by key, then doc
    /// (an external sort's output): the same bytes, one posting list in memory at a time.
    pub fn postings_table_sorted(
        &mut self,
        table: u32,
        sorted: impl IntoIterator<Item = Result<KeyDoc>>,
    ) -> Result<()> {
        self.w.begin_table(table)?;
        let mut ids: Vec<u32> = Vec::new();
        let mut cur: Option<u64> = None;
        for rec in sorted {
            let KeyDoc { key, doc } = rec?;
            if cur != Some(key) {
                if let Some(k) = cur {
                    self.buf.clear();
                    segment::encode_postings(&ids, &mut self.buf);
                    self.w.add(k, &self.buf)?;
                    ids.clear();
                }
                cur = Some(key);
            }
            if ids.last() != Some(&doc) {
                ids.push(doc);
            }
        }
        if let Some(k) = cur {
            self.buf.clear();
            segment::encode_postings(&ids, &mut self.buf);
            self.w.add(k, &self.buf)?;
        }
        self.w.end_table()
    }

    /// The simhash tables (`segment::simhash_table(t)` for each permutation `t`) of the
    /// documents' `(doc, simhash)`.
    pub fn simhash_tables(&mut self, tables: &PermutedTables, docs: &[(u32, u64)]) -> Result<()> {
        for t in 0..tables.tables() {
            let entries = table_entries(tables, t, docs);
            self.postings_table(segment::simhash_table(t as u32), &entries)?;
        }
        Ok(())
    }

    /// [`SegmentBuilder::simhash_tables`] of `(doc, simhash)` records spooled in doc order
    /// (ingest: nothing per document held while the batch is read): the spool is read once per
    /// table and each table's entries sorted within `sort`'s budget. The same bytes.
    pub fn simhash_tables_spooled(
        &mut self,
        tables: &PermutedTables,
        docs: &SpoolFile<DocHash>,
        sort: &SortOptions,
    ) -> Result<()> {
        for t in 0..tables.tables() {
            let mut entries = ExternalSorter::<KeyDoc>::new(sort.clone())?;
            for r in docs.read()? {
                let r = r?;
                entries.push(KeyDoc {
                    key: tables.permute(t, r.hash),
                    doc: r.doc,
                })?;
            }
            entries.finish_streamed(|sorted| {
                self.postings_table_sorted(segment::simhash_table(t as u32), sorted)
            })?;
        }
        Ok(())
    }

    /// The SIM384 table: doc id -> 384-bit simhash (ids ascend).
    pub fn sim384_table(&mut self, docs: &[(u32, [u64; 6])]) -> Result<()> {
        self.w.begin_table(segment::SIM384)?;
        for (d, s) in docs {
            self.w.add(*d as u64, &encode_sim384(s))?;
        }
        self.w.end_table()
    }

    /// The segment writer, for a table none of the above writes (compaction copies tables
    /// by key); `begin_table`/`end_table` are the caller's.
    pub fn writer(&mut self) -> &mut SegmentWriter {
        &mut self.w
    }

    /// Writes directory and footer and renames the file into place. The files stay guarded.
    pub fn finish(mut self) -> Result<BuiltSegment> {
        self.write_ranked_forward()?;
        let meta = self.w.finish()?;
        Ok(BuiltSegment {
            meta,
            keys: self.lists.keys,
            postings: self.lists.postings,
            files: self.files,
            kept_keys: self.lists.kept.take().and_then(Bounded::into_vec),
            shared_keys: self.lists.shared.take().and_then(Bounded::into_vec),
        })
    }

    /// [`SegmentBuilder::finish`] with the file's fsyncs left running
    /// ([`SegmentWriter::finish_deferred_sync`]): wait for them before publishing it.
    pub fn finish_deferred_sync(mut self) -> Result<(BuiltSegment, segment::PendingSync)> {
        self.write_ranked_forward()?;
        let (meta, synced) = self.w.finish_deferred_sync()?;
        let built = BuiltSegment {
            meta,
            keys: self.lists.keys,
            postings: self.lists.postings,
            files: self.files,
            kept_keys: self.lists.kept.take().and_then(Bounded::into_vec),
            shared_keys: self.lists.shared.take().and_then(Bounded::into_vec),
        };
        Ok((built, synced))
    }
}

/// Documents whose FORWARD lists (format 3, ranks placed directly) are encoded per group, and
/// per piece of a group on one core.
/// (Tests: small, so that their few hundred documents make several groups and pieces.)
#[cfg(not(test))]
const FORWARD_GROUP: usize = 1024;
#[cfg(not(test))]
const FORWARD_PIECE: usize = 128;
#[cfg(test)]
const FORWARD_GROUP: usize = 40;
#[cfg(test)]
const FORWARD_PIECE: usize = 7;

/// Ranks (4 bytes each) from which [`SegmentBuilder::direct_forward_table`] frees its array on
/// another thread.
const FREE_ON_A_THREAD: usize = 1 << 20;

/// Adds the FORWARD values of `docs[start..]`, encoded one after the other in `bytes` (value
/// `k` ends at `ends[k]`).
fn add_encoded(
    w: &mut SegmentWriter,
    docs: &[(u32, u32)],
    start: usize,
    bytes: &[u8],
    ends: &[usize],
) -> Result<()> {
    let mut lo = 0;
    for (k, &hi) in ends.iter().enumerate() {
        w.add(docs[start + k].0 as u64, &bytes[lo..hi])?;
        lo = hi;
    }
    Ok(())
}

/// Posting lists a [`BlockThread`] gets at a time (tests: small, so that their few hundred
/// lists make several chunks), and chunks that may wait for it: ~1 MiB of lists in all.
#[cfg(not(test))]
const CHUNK_LISTS: usize = 4096;
#[cfg(test)]
const CHUNK_LISTS: usize = 16;
/// A chunk is also handed over once its encoded lists reach this many bytes, so that lists
/// of frequent keys (boilerplate in every document) keep the chunks in flight within
/// `(CHUNKS_AHEAD + 2) * CHUNK_BYTES` plus one list, whatever the batch.
const CHUNK_BYTES: usize = 256 << 10;
const CHUNKS_AHEAD: usize = 4;

/// Encoded posting lists in key order: list `k` is `bytes[ends[k - 1]..ends[k]]` (from 0
/// for the first), under key `keys[k]`.
#[derive(Default)]
struct EncodedLists {
    keys: Vec<u64>,
    ends: Vec<usize>,
    bytes: Vec<u8>,
}

impl EncodedLists {
    /// Adds the lists to `w`, and their keys to `kept`.
    fn add_to(&self, w: &mut SegmentWriter, kept: Option<&mut Bounded>) -> Result<()> {
        w.add_many(&self.keys, &self.ends, &self.bytes)?;
        if let Some(k) = kept {
            k.extend(&self.keys);
        }
        Ok(())
    }

    /// Whether the chunk is ready for the block thread.
    #[inline]
    fn full(&self) -> bool {
        self.keys.len() >= CHUNK_LISTS || self.bytes.len() >= CHUNK_BYTES
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.ends.clear();
        self.bytes.clear();
    }
}

/// Runs `feed` (which adds entries to the chunk it is given and hands each full chunk to the
/// block thread: false when that thread has failed), then adds the last chunk to `w`'s open
/// table (and its keys to `kept`). The [`BlockThread`] starts with the first full chunk; a
/// feed that never fills one is written on this thread. The block thread's error comes
/// first: the feed stopped because of it.
fn on_block_thread(
    w: &mut SegmentWriter,
    kept: Option<&mut Bounded>,
    feed: impl FnOnce(&mut EncodedLists, &mut dyn FnMut(&mut EncodedLists) -> bool) -> Result<()>,
) -> Result<()> {
    std::thread::scope(|s| -> Result<()> {
        let mut kept = kept;
        let mut chunk = EncodedLists::default();
        let mut blocks: Option<BlockThread<'_>> = None;
        let mut w = Some(w);
        // Hands a full chunk to the block thread (started by the first one) and puts a
        // spare one in its place; false when the thread has failed.
        let mut hand = |chunk: &mut EncodedLists| -> bool {
            if blocks.is_none() {
                match w.take() {
                    Some(w) => blocks = Some(BlockThread::start(s, w, kept.take())),
                    None => return false,
                }
            }
            let spare = blocks.as_mut().map(|b| b.spare()).unwrap_or_default();
            let full = std::mem::replace(chunk, spare);
            blocks.as_mut().is_some_and(|b| b.send(full))
        };
        let fed = feed(&mut chunk, &mut hand);
        // The last chunk, then the thread's result (its error comes first: it stopped
        // taking chunks because of it).
        let written = match blocks {
            Some(b) => b.finish(fed.is_ok().then_some(chunk)),
            None => match (&fed, w) {
                (Ok(()), Some(w)) => chunk.add_to(w, kept),
                _ => Ok(()),
            },
        };
        written.and(fed)
    })
}

/// Adds to `w`'s open table the entries `produce` hands its sink (keys ascending), through
/// [`on_block_thread`].
fn entries_on_block_thread(
    w: &mut SegmentWriter,
    produce: impl FnOnce(&mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()>,
) -> Result<()> {
    on_block_thread(w, None, |chunk, hand| {
        produce(&mut |key: u64, value: &[u8]| -> Result<()> {
            chunk.bytes.extend_from_slice(value);
            chunk.keys.push(key);
            chunk.ends.push(chunk.bytes.len());
            if chunk.full() && !hand(chunk) {
                return Err(crate::error::Error::InvalidArgument(
                    "the segment's block thread stopped".into(),
                ));
            }
            Ok(())
        })
    })
}

/// The thread that adds chunks of encoded posting lists to the segment writer (builds and
/// writes the blocks) while [`SegmentBuilder::postings_from_sorted`] encodes the next ones.
struct BlockThread<'s> {
    tx: std::sync::mpsc::SyncSender<EncodedLists>,
    back: std::sync::mpsc::Receiver<EncodedLists>,
    handle: std::thread::ScopedJoinHandle<'s, Result<()>>,
}

impl<'s> BlockThread<'s> {
    fn start<'e>(
        s: &'s std::thread::Scope<'s, 'e>,
        w: &'s mut SegmentWriter,
        mut kept: Option<&'s mut Bounded>,
    ) -> Self
    where
        'e: 's,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel::<EncodedLists>(CHUNKS_AHEAD);
        let (back_tx, back) = std::sync::mpsc::channel();
        let handle = s.spawn(move || -> Result<()> {
            for mut chunk in rx {
                chunk.add_to(w, kept.as_deref_mut())?;
                chunk.clear();
                let _ = back_tx.send(chunk); // the encoder may be gone: nothing to reuse
            }
            Ok(())
        });
        BlockThread { tx, back, handle }
    }

    /// An emptied chunk to fill (its allocations reused), or a new one.
    fn spare(&mut self) -> EncodedLists {
        self.back.try_recv().unwrap_or_default()
    }

    /// Queues a chunk (waits while `CHUNKS_AHEAD` wait); false when the thread has ended
    /// (an error, which [`BlockThread::finish`] returns).
    fn send(&mut self, chunk: EncodedLists) -> bool {
        self.tx.send(chunk).is_ok()
    }

    /// Queues `last` (if any), ends the input and returns the thread's result.
    fn finish(self, last: Option<EncodedLists>) -> Result<()> {
        if let Some(c) = last.filter(|c| !c.keys.is_empty()) {
            let _ = self.tx.send(c); // if it ended, its error is what join returns
        }
        drop(self.tx);
        match self.handle.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        }
    }
}

/// A finished segment nobody has published yet: removed when dropped, unless
/// [`BuiltSegment::keep`].
#[derive(Debug)]
pub struct BuiltSegment {
    pub meta: SegmentMeta,
    /// POSTINGS keys.
    pub keys: u64,
    /// POSTINGS entries.
    pub postings: u64,
    files: Unpublished,
    /// The POSTINGS keys in rank order, if [`SegmentBuilder::keep_keys`] kept them all.
    kept_keys: Option<Vec<u64>>,
    /// The POSTINGS keys of lists of several documents, if
    /// [`SegmentBuilder::keep_shared_keys`] kept them all.
    shared_keys: Option<Vec<u64>>,
}

impl BuiltSegment {
    /// The manifest entry of the segment as document range `[doc_lo, doc_hi)` under id `id`.
    pub fn entry(&self, id: u64, doc_lo: u32, doc_hi: u32) -> SegmentEntry {
        SegmentEntry {
            id,
            file: self.meta.file_name.clone(),
            doc_lo,
            doc_hi,
            bytes: self.meta.bytes,
            keys: self.keys,
            postings: self.postings,
        }
    }

    /// The POSTINGS keys in rank order, once, when [`SegmentBuilder::keep_keys`] was asked
    /// for and they all fitted its bound (for [`crate::segment::Segment::seed_keys`]).
    pub fn take_keys(&mut self) -> Option<Vec<u64>> {
        self.kept_keys
            .take()
            .filter(|k| k.len() as u64 == self.keys)
    }

    /// The keys listed with more than one document, as a set with false positives
    /// ([`SharedKeys`]), once, when [`SegmentBuilder::keep_shared_keys`] was asked for, they
    /// all fitted its bound and they are at most half the keys (more would spare a caller
    /// too little to pay for its lookups: llvm-docs has 87 % of its keys in several pages,
    /// debdocs 8 %).
    pub fn take_shared_keys(&mut self) -> Option<SharedKeys> {
        let keys = self.keys;
        self.shared_keys
            .take()
            .filter(|k| (k.len() as u64).saturating_mul(2) <= keys)
            .map(|k| SharedKeys::of(&k))
    }

    /// The file belongs to someone else now (a published manifest, a rename, a private
    /// temporary folder): it is no longer removed.
    pub fn keep(self) -> SegmentMeta {
        self.files.keep();
        self.meta
    }
}

/// POSTINGS keys after which [`ListsSeen`] gives up its shared keys when they are more than
/// half of them (keys ascend, so the first ones are a fair sample of uniform hashes).
const SHARED_CHECKED_AFTER: u64 = 1 << 16;

/// A set of keys with false positives: one bit per hashed key in a table of about 16 bits a key
/// (a false positive for about one other key in sixteen), by the murmur finalizer's top bits.
#[derive(Clone, Debug, Default)]
pub struct SharedKeys {
    bits: Vec<u64>,
    /// 64 minus the bits of a bit's index.
    shift: u32,
}

impl SharedKeys {
    /// The set of `keys`.
    pub fn of(keys: &[u64]) -> SharedKeys {
        let n = keys.len().saturating_mul(16).next_power_of_two().max(64);
        let mut s = SharedKeys {
            bits: vec![0; n / 64],
            shift: 64 - n.trailing_zeros(),
        };
        for &k in keys {
            let i = s.slot(k);
            s.bits[i / 64] |= 1 << (i % 64);
        }
        s
    }

    #[inline]
    fn slot(&self, key: u64) -> usize {
        (segment::filter::mix(key, 0) >> self.shift) as usize
    }

    /// False if `key` is certainly not in the set.
    #[inline]
    pub fn may_contain(&self, key: u64) -> bool {
        let i = self.slot(key);
        self.bits
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
}

/// `(permuted simhash, doc)` of table `t`, sorted.
pub fn table_entries(tables: &PermutedTables, t: usize, docs: &[(u32, u64)]) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = docs
        .iter()
        .map(|&(d, fp)| (tables.permute(t, fp), d))
        .collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::segment::Segment;

    /// Documents with overlapping feature sets (some empty), and their sorted postings.
    fn corpus() -> (Vec<(u32, Vec<u64>)>, Vec<KeyDoc>) {
        let docs: Vec<(u32, Vec<u64>)> = (0..300u32)
            .map(|d| {
                let f: BTreeSet<u64> = (0..(d % 37) as u64)
                    .map(|j| (j * 7919 + (d as u64 % 11)).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    .collect();
                (d * 2, f.into_iter().collect())
            })
            .collect();
        let pairs = records(&docs);
        (docs, pairs)
    }

    /// The `(key, doc)` records of `docs`' features, sorted.
    fn records(docs: &[(u32, Vec<u64>)]) -> Vec<KeyDoc> {
        let mut pairs: Vec<KeyDoc> = docs
            .iter()
            .flat_map(|(d, f)| f.iter().map(move |&key| KeyDoc { key, doc: *d }))
            .collect();
        pairs.sort_unstable();
        pairs
    }

    /// Segment `name` (format `format`) of `docs`, its postings from `pairs` sorted, with
    /// `keep` asked of the builder first.
    fn built_with(
        dir: &std::path::Path,
        (name, format): (&str, u32),
        (docs, pairs): (&[(u32, Vec<u64>)], &[KeyDoc]),
        keep: impl FnOnce(&mut SegmentBuilder),
    ) -> BuiltSegment {
        let b = SegmentBuilder::create_version(dir, name, format).unwrap();
        let mut b = b.with_sort(SortOptions::new(1 << 20, dir.join("tmp")));
        keep(&mut b);
        for (d, f) in docs {
            b.forward(*d, f).unwrap();
        }
        b.postings_from_sorted(pairs.iter().map(|p| Ok(*p)))
            .unwrap();
        b.finish().unwrap()
    }

    /// Format 3: the POSTINGS keys kept by `keep_keys` are the keys the file holds in rank
    /// order (as `decode_keys` reads them back), seeded into a fresh reader they give every
    /// document's features as the file does, and keys that disagree with the file's index
    /// are refused. Too many keys for the bound: none kept.
    #[test]
    fn kept_keys_are_the_decoded_keys_and_seed_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let (docs, pairs) = corpus();
        let distinct = {
            let mut k: Vec<u64> = pairs.iter().map(|p| p.key).collect();
            k.dedup();
            k.len()
        };
        for (name, block) in [("big", 64 << 10), ("small", 512)] {
            let w = SegmentWriter::create_version(dir.path(), name, block, 3).unwrap();
            let mut b = SegmentBuilder::over(w, dir.path(), name).unwrap();
            b.keep_keys(distinct as u64 * 8);
            for (d, f) in &docs {
                b.forward(*d, f).unwrap();
            }
            b.postings_from_sorted(pairs.iter().map(|p| Ok(*p)))
                .unwrap();
            let mut built = b.finish().unwrap();
            let keys = built.take_keys().expect("keys kept");
            assert!(built.take_keys().is_none(), "handed out once");
            built.keep();
            assert_eq!(keys.len(), distinct);
            let seg = Segment::open(dir.path().join(name)).unwrap();
            let decoded = Segment::open(dir.path().join(name)).unwrap();
            assert!(decoded.decode_keys());
            let mut all = Vec::new();
            for r in 0..keys.len() as u64 {
                all.push(r);
            }
            decoded.ranks_to_keys_bulk(&mut all).unwrap();
            assert_eq!(all, keys, "{name}: kept keys = decoded keys");
            // Keys that disagree with the index: refused, nothing kept.
            let mut swapped = keys.clone();
            swapped.swap(3, 4);
            let mut edge = keys.clone();
            *edge.last_mut().unwrap() += 1;
            for (what, bad) in [
                ("short", keys[..keys.len() - 1].to_vec()),
                ("swapped", swapped),
                ("last key", edge),
            ] {
                assert!(!seg.keys_agree(&bad), "{name}: {what}");
                assert!(!seg.seed_keys(bad), "{name}: {what}");
                assert_eq!(seg.cached_key_count(), None, "{name}: {what}");
            }
            assert!(seg.keys_agree(&keys));
            let (limit, taken) = segment::key_cache_usage();
            let seeded = seg.seed_keys(keys.clone());
            assert!(
                seeded || limit.saturating_sub(taken) < keys.len() as u64 * 8,
                "{name}: refused with room in the budget"
            );
            if seeded {
                assert_eq!(seg.cached_key_count(), Some(keys.len()));
                assert!(!seg.seed_keys(keys.clone()), "seeded once");
            }
            let mut out = Vec::new();
            for (d, f) in &docs {
                assert!(seg.forward_into(*d as u64, &mut out).unwrap());
                assert_eq!(&out, f, "{name}: seeded: doc {d}");
            }
        }
        // More keys than the bound: none kept (and the segment the same).
        let corpus = (&docs[..], &pairs[..]);
        let bound = (distinct as u64 - 1) * 8;
        let mut built = built_with(dir.path(), ("bound", 3), corpus, |b| b.keep_keys(bound));
        assert!(built.take_keys().is_none());
        assert_eq!(built.keys, distinct as u64);
        // Formats 1 and 2 keep none.
        let mut built = built_with(dir.path(), ("v2", 2), corpus, |b| b.keep_keys(1 << 20));
        assert!(built.take_keys().is_none());
    }

    /// `keep_shared_keys` keeps exactly the keys of lists of more than one document, in both
    /// formats and whether the lists come from sorted records or one by one; past its bound,
    /// or when they are more than half the keys, none. Their set has no false negatives and
    /// about one false positive in sixteen.
    #[test]
    fn shared_keys_are_the_keys_of_several_documents() {
        let dir = tempfile::tempdir().unwrap();
        // 250 keys of its own per document, 10 of a group of 30 documents: more keys than
        // `SHARED_CHECKED_AFTER`, few shared.
        let docs: Vec<(u32, Vec<u64>)> = (0..300u64)
            .map(|d| {
                let own = (0..250).map(|j| segment::filter::mix(d * 1000 + j, 1));
                let group = (0..10).map(|j| segment::filter::mix(d % 10 * 100 + j, 2));
                let f: BTreeSet<u64> = own.chain(group).collect();
                (d as u32 * 2, f.into_iter().collect())
            })
            .collect();
        let pairs = records(&docs);
        let mut want: Vec<u64> = pairs
            .chunk_by(|a, b| a.key == b.key)
            .filter(|g| g.len() > 1)
            .map(|g| g[0].key)
            .collect();
        want.dedup();
        assert_eq!(want.len(), 100);
        let singles: Vec<u64> = pairs
            .chunk_by(|a, b| a.key == b.key)
            .filter(|g| g.len() == 1)
            .map(|g| g[0].key)
            .collect();
        for (format, one_by_one) in [(2, false), (3, false), (3, true)] {
            let name = format!("v{format}{one_by_one}");
            let b = SegmentBuilder::create_version(dir.path(), &name, format).unwrap();
            let mut b = b.with_sort(SortOptions::new(1 << 20, dir.path().join("tmp")));
            b.keep_shared_keys(want.len() as u64 * 8);
            for (d, f) in &docs {
                b.forward(*d, f).unwrap();
            }
            if one_by_one {
                b.begin_postings().unwrap();
                for g in pairs.chunk_by(|a, b| a.key == b.key) {
                    let ids: Vec<u32> = g.iter().map(|p| p.doc).collect();
                    b.posting_list(g[0].key, &ids).unwrap();
                }
                b.end_postings().unwrap();
            } else {
                b.postings_from_sorted(pairs.iter().map(|p| Ok(*p)))
                    .unwrap();
            }
            let mut built = b.finish().unwrap();
            assert_eq!(built.shared_keys.as_deref(), Some(&want[..]), "{name}");
            let set = built.take_shared_keys().expect("kept");
            assert!(built.take_shared_keys().is_none(), "handed out once");
            assert!(want.iter().all(|&k| set.may_contain(k)), "{name}");
            let fp = singles.iter().filter(|&&k| set.may_contain(k)).count();
            assert!(fp * 8 < singles.len(), "{name}: {fp} of {}", singles.len());
        }
        // One key more than the bound: none kept.
        let bound = (want.len() as u64 - 1) * 8;
        let input = (&docs[..], &pairs[..]);
        let mut built = built_with(dir.path(), ("bound", 3), input, |b| {
            b.keep_shared_keys(bound)
        });
        assert!(built.take_shared_keys().is_none());
        // More than half the keys shared (most of `corpus()`'s): none.
        let (docs, pairs) = corpus();
        let input = (&docs[..], &pairs[..]);
        let mut built = built_with(dir.path(), ("most", 3), input, |b| {
            b.keep_shared_keys(1 << 20)
        });
        let shared = built.shared_keys.as_ref().map_or(0, |k| k.len() as u64);
        assert!(shared * 2 > built.keys, "{shared} of {}", built.keys);
        assert!(built.take_shared_keys().is_none());
        // Past `SHARED_CHECKED_AFTER` keys, most shared (documents in pairs): given up then.
        let docs: Vec<(u32, Vec<u64>)> = (0..1_400u64)
            .map(|d| {
                let f: BTreeSet<u64> = (0..100)
                    .map(|j| segment::filter::mix(d / 2 * 100 + j, 3))
                    .collect();
                (d as u32, f.into_iter().collect())
            })
            .collect();
        let pairs = records(&docs);
        let input = (&docs[..], &pairs[..]);
        let built = built_with(dir.path(), ("pairs", 3), input, |b| {
            b.keep_shared_keys(1 << 30)
        });
        assert_eq!(built.keys, 70_000);
        assert!(built.shared_keys.is_none(), "given up");
        // The set of many keys: about 1/16 false positives.
        let keys: Vec<u64> = (0..50_000u64).map(|i| segment::filter::mix(i, 7)).collect();
        let set = SharedKeys::of(&keys);
        assert!(keys.iter().all(|&k| set.may_contain(k)));
        let others = (0..200_000u64)
            .filter(|&i| set.may_contain(segment::filter::mix(i + (1 << 20), 7)))
            .count();
        assert!((8_000..17_000).contains(&others), "{others} of 200,000");
        assert!(!SharedKeys::of(&[]).may_contain(5));
    }

    /// Format 3: FORWARD is the inversion of POSTINGS, as ranks, read back as the documents'
    /// hashes, whether the (doc, rank) records stay in memory or go through sorted runs.
    #[test]
    fn ranked_forward_reads_back_the_features_in_memory_and_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let (docs, pairs) = corpus();
        for (name, mem) in [("mem", 1u64 << 20), ("spill", 64)] {
            let b = SegmentBuilder::create_version(dir.path(), name, 3).unwrap();
            let mut b = b.with_sort(SortOptions::new(mem, dir.path().join("tmp")));
            assert!(b.ranked_forward() && b.format_version() == 3);
            for (d, f) in &docs {
                b.forward(*d, f).unwrap();
            }
            b.postings_from_sorted(pairs.iter().map(|p| Ok(*p)))
                .unwrap();
            let built = b.finish().unwrap();
            assert_eq!(built.postings, pairs.len() as u64);
            built.keep();
            let seg = Segment::open(dir.path().join(name)).unwrap();
            assert!(seg.ranked_forward());
            // The first pass maps ranks one select at a time until the segment has mapped a
            // sixteenth of its keys, then decodes its whole key sequence; the second pass (and
            // `verify`) read only that.
            assert_eq!(seg.cached_key_count(), None);
            let keys = seg.table_meta(segment::POSTINGS).unwrap().entries as usize;
            let mut out = Vec::new();
            for pass in 0..2 {
                for (d, f) in &docs {
                    assert!(seg.forward_into(*d as u64, &mut out).unwrap());
                    assert_eq!(&out, f, "{name}: pass {pass}: doc {d}");
                }
                assert_eq!(seg.cached_key_count(), Some(keys), "{name}");
            }
            assert!(seg.verify().is_ok(), "{:?}", seg.verify().problems);
            assert_eq!(seg.table_meta(segment::FORWARD).unwrap().entries, 300);
            assert!(!seg.forward_into(1, &mut out).unwrap());
        }
        // Keys decoded up front (in groups of KEY_CACHE_GROUP blocks on every core, small
        // blocks here): the same features.
        let w = SegmentWriter::create_version(dir.path(), "small", 512, 3).unwrap();
        let mut b = SegmentBuilder::over(w, dir.path(), "small").unwrap();
        for (d, f) in &docs {
            b.forward(*d, f).unwrap();
        }
        b.postings_from_sorted(pairs.iter().map(|p| Ok(*p)))
            .unwrap();
        b.finish().unwrap().keep();
        let seg = Segment::open(dir.path().join("small")).unwrap();
        let blocks = seg.table_meta(segment::POSTINGS).unwrap().blocks;
        assert!(blocks >= 3, "{blocks} POSTINGS blocks");
        assert!(seg.decode_keys());
        let keys = seg.table_meta(segment::POSTINGS).unwrap().entries as usize;
        assert_eq!(seg.cached_key_count(), Some(keys));
        let mut out = Vec::new();
        for (d, f) in &docs {
            assert!(seg.forward_into(*d as u64, &mut out).unwrap());
            assert_eq!(&out, f, "decoded up front: doc {d}");
        }
        drop(seg);
        // Ranks placed directly (the 1 MiB budget) and sorted through runs: the same bytes.
        let mem = std::fs::read(dir.path().join("mem")).unwrap();
        assert_eq!(mem, std::fs::read(dir.path().join("spill")).unwrap());
    }

    /// The posting lists' blocks built on a thread of their own (`postings_from_sorted`, in
    /// chunks of `CHUNK_LISTS` lists) give the bytes of `posting_list` on one thread, in
    /// formats 2 and 3, for fewer lists than a chunk (no thread), exactly one chunk, and many;
    /// the stream's error and the writer's error both come back.
    #[test]
    fn tables_from_entries_equal_entries_added_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let value = |k: u64| vec![k as u8; (k % 7) as usize];
        let table = 40;
        // Fewer entries than a chunk (written on the calling thread), one chunk, several.
        for n in [3u64, CHUNK_LISTS as u64, 10 * CHUNK_LISTS as u64 + 5] {
            let keys: Vec<u64> = (0..n).map(|i| i * i + 3).collect();
            let mut b = SegmentBuilder::create_version(dir.path(), &format!("add-{n}"), 3).unwrap();
            let w = b.writer();
            w.begin_table(table).unwrap();
            for &k in &keys {
                w.add(k, &value(k)).unwrap();
            }
            w.end_table().unwrap();
            b.finish().unwrap().keep();
            let mut b = SegmentBuilder::create_version(dir.path(), &format!("fn-{n}"), 3).unwrap();
            b.table_from_entries_fn(table, |sink| {
                keys.iter().try_for_each(|&k| sink(k, &value(k)))
            })
            .unwrap();
            b.finish().unwrap().keep();
            let read = |name: String| std::fs::read(dir.path().join(name)).unwrap();
            assert_eq!(
                read(format!("add-{n}")),
                read(format!("fn-{n}")),
                "{n} entries"
            );
        }
        // The producer's error, and the block thread's (keys out of order, after a first full
        // chunk), which the sink reports to the producer as it stops; no file is left.
        for (tag, want) in [
            ("p", "producer"),
            ("k", "not greater than the previous key"),
        ] {
            let name = format!("bad-{tag}");
            let mut b = SegmentBuilder::create_version(dir.path(), &name, 3).unwrap();
            let e = b
                .table_from_entries_fn(table, |sink| {
                    for i in 0..4 * CHUNK_LISTS as u64 {
                        if tag == "p" && i == 2 * CHUNK_LISTS as u64 {
                            return Err(crate::error::Error::InvalidArgument("producer".into()));
                        }
                        let k = if tag == "k" && i == CHUNK_LISTS as u64 + 1 {
                            0
                        } else {
                            i + 1
                        };
                        sink(k, b"v")?;
                    }
                    Ok(())
                })
                .unwrap_err();
            assert!(e.to_string().contains(want), "{tag}: {e}");
            drop(b);
            assert!(!dir.path().join(&name).exists());
        }
    }

    #[test]
    fn postings_in_chunks_equal_lists_added_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let (docs, pairs) = corpus();
        let keys: Vec<u64> = pairs
            .iter()
            .map(|p| p.key)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert!(keys.len() > 10 * CHUNK_LISTS, "{} keys", keys.len());
        for version in [2, 3] {
            for nkeys in [CHUNK_LISTS - 1, CHUNK_LISTS, 2 * CHUNK_LISTS, keys.len()] {
                let last = keys[nkeys - 1];
                let part: Vec<KeyDoc> = pairs.iter().copied().filter(|p| p.key <= last).collect();
                let fwd: Vec<(u32, Vec<u64>)> = docs
                    .iter()
                    .map(|(d, f)| (*d, f.iter().copied().filter(|&k| k <= last).collect()))
                    .collect();
                let mut bytes = Vec::new();
                for way in ["chunks", "lists", "lists_fn"] {
                    let name = format!("v{version}-{nkeys}-{way}");
                    let mut b = SegmentBuilder::create_version(dir.path(), &name, version).unwrap();
                    for (d, f) in &fwd {
                        b.forward(*d, f).unwrap();
                    }
                    // One posting list per key of `part`, in order.
                    let lists = || {
                        part.chunk_by(|x, y| x.key == y.key)
                            .map(|run| (run[0].key, run.iter().map(|p| p.doc).collect::<Vec<_>>()))
                    };
                    if way == "chunks" {
                        b.postings_from_sorted(part.iter().map(|p| Ok(*p))).unwrap();
                    } else if way == "lists_fn" {
                        // Every other list with its bytes (as compaction passes lists
                        // it did not change): the same bytes either way.
                        b.postings_from_lists_fn(|sink| {
                            let mut enc = Vec::new();
                            lists().enumerate().try_for_each(|(i, (key, ids))| {
                                enc.clear();
                                segment::encode_postings(&ids, &mut enc);
                                sink(key, &ids, (i % 2 == 1).then_some(&enc[..]))
                            })
                        })
                        .unwrap();
                    } else {
                        b.begin_postings().unwrap();
                        let mut i = 0;
                        while i < part.len() {
                            let key = part[i].key;
                            let ids: Vec<u32> = part[i..]
                                .iter()
                                .take_while(|p| p.key == key)
                                .map(|p| p.doc)
                                .collect();
                            i += ids.len();
                            b.posting_list(key, &ids).unwrap();
                        }
                        b.end_postings().unwrap();
                    }
                    let built = b.finish().unwrap();
                    assert_eq!(built.keys, nkeys as u64);
                    assert_eq!(built.postings, part.len() as u64);
                    built.keep();
                    bytes.push(std::fs::read(dir.path().join(&name)).unwrap());
                }
                assert_eq!(bytes[0], bytes[1], "format {version}, {nkeys} keys");
                assert_eq!(
                    bytes[0], bytes[2],
                    "format {version}, {nkeys} keys, lists_fn"
                );
                let seg =
                    Segment::open(dir.path().join(format!("v{version}-{nkeys}-chunks"))).unwrap();
                assert!(seg.verify().is_ok(), "{:?}", seg.verify().problems);
            }
        }
        // An error in the stream after several chunks, and keys out of order (the writer's
        // error, on the block thread), both fail the call.
        for version in [2, 3] {
            let mut b =
                SegmentBuilder::create_version(dir.path(), &format!("e-{version}"), version)
                    .unwrap();
            for (d, f) in &docs {
                b.forward(*d, f).unwrap();
            }
            let bad = pairs
                .iter()
                .take(pairs.len() / 2)
                .map(|p| Ok(*p))
                .chain(std::iter::once(Err(crate::error::Error::InvalidArgument(
                    "stream".into(),
                ))));
            let e = b.postings_from_sorted(bad).unwrap_err();
            assert!(e.to_string().contains("stream"), "{e}");
            let mut b =
                SegmentBuilder::create_version(dir.path(), &format!("o-{version}"), version)
                    .unwrap();
            for (d, f) in &docs {
                b.forward(*d, f).unwrap();
            }
            let mut back: Vec<KeyDoc> = pairs.clone();
            let n = back.len();
            back[n / 2..]
                .iter_mut()
                .for_each(|p| p.key = p.key.wrapping_sub(u64::MAX / 2));
            let e = b
                .postings_from_sorted(back.iter().map(|p| Ok(*p)))
                .unwrap_err();
            assert!(
                e.to_string().contains("not greater than the previous key"),
                "{e}"
            );
            // The same through `postings_from_lists_fn`: the producer's error, and the block
            // thread's (keys out of order), which the sink reports to the producer as it stops.
            let lists = |recs: &[KeyDoc]| {
                recs.chunk_by(|x, y| x.key == y.key)
                    .map(|run| (run[0].key, run.iter().map(|p| p.doc).collect::<Vec<_>>()))
                    .collect::<Vec<_>>()
            };
            for (tag, recs, fail_at, want) in [
                ("p", &pairs, true, "producer"),
                ("k", &back, false, "not greater than the previous key"),
            ] {
                let mut b = SegmentBuilder::create_version(
                    dir.path(),
                    &format!("f{tag}-{version}"),
                    version,
                )
                .unwrap();
                for (d, f) in &docs {
                    b.forward(*d, f).unwrap();
                }
                let all = lists(recs);
                let e = b
                    .postings_from_lists_fn(|sink| {
                        for (i, (key, ids)) in all.iter().enumerate() {
                            if fail_at && i == all.len() / 2 {
                                return Err(crate::error::Error::InvalidArgument(
                                    "producer".into(),
                                ));
                            }
                            sink(*key, ids, None)?;
                        }
                        Ok(())
                    })
                    .unwrap_err();
                assert!(e.to_string().contains(want), "{tag}: {e}");
                drop(b);
                assert!(!dir.path().join(format!("f{tag}-{version}")).exists());
            }
        }
    }

    /// The direct placement of ranks, on sparse (binary-searched) and consecutive doc ids,
    /// gives the bytes of the sorting path, and refuses disagreeing postings alike.
    #[test]
    fn direct_ranks_equal_sorted_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let (sparse, _) = corpus();
        let dense: Vec<(u32, Vec<u64>)> = sparse
            .iter()
            .enumerate()
            .map(|(i, (_, f))| (1000 + i as u32, f.clone()))
            .collect();
        for (tag, docs) in [("sparse", &sparse), ("dense", &dense)] {
            let mut pairs: Vec<KeyDoc> = docs
                .iter()
                .flat_map(|(d, f)| f.iter().map(move |&key| KeyDoc { key, doc: *d }))
                .collect();
            pairs.sort_unstable();
            let mut bytes = Vec::new();
            for mem in [1u64 << 20, 64] {
                let name = format!("{tag}-{mem}");
                let b = SegmentBuilder::create_version(dir.path(), &name, 3).unwrap();
                let mut b = b.with_sort(SortOptions::new(mem, dir.path().join("tmp")));
                for (d, f) in docs {
                    b.forward(*d, f).unwrap();
                }
                b.postings_from_sorted(pairs.iter().map(|p| Ok(*p)))
                    .unwrap();
                assert!(
                    b.forward(u32::MAX, &[]).is_err(),
                    "a doc after the postings"
                );
                b.finish().unwrap().keep();
                bytes.push(std::fs::read(dir.path().join(&name)).unwrap());
            }
            assert_eq!(bytes[0], bytes[1], "{tag}");
        }
        // Errors name the same document on both paths.
        for mem in [1u64 << 20, 64] {
            let sort = SortOptions::new(mem, dir.path().join("tmp"));
            let mut b = SegmentBuilder::create_version(dir.path(), "e1", 3)
                .unwrap()
                .with_sort(sort.clone());
            b.forward(1, &[5, 9]).unwrap();
            b.forward(2, &[5]).unwrap();
            b.begin_postings().unwrap();
            b.posting_list(5, &[1, 2]).unwrap();
            b.posting_list(9, &[0, 1]).unwrap();
            let e = b.end_postings().unwrap_err().to_string();
            assert!(e.contains("doc 0 that has no FORWARD entry"), "{mem}: {e}");
            let mut b = SegmentBuilder::create_version(dir.path(), "e2", 3)
                .unwrap()
                .with_sort(sort);
            b.forward(1, &[5]).unwrap();
            b.forward(2, &[5, 9]).unwrap();
            b.begin_postings().unwrap();
            b.posting_list(5, &[1, 2]).unwrap();
            b.posting_list(9, &[1, 2]).unwrap();
            let e = b.end_postings().unwrap_err().to_string();
            assert!(
                e.contains("doc 1: 1 features, but POSTINGS lists it under 2 keys"),
                "{mem}: {e}"
            );
        }
    }

    /// Records as a sorter hands them over: slices of the given sizes (cycled).
    struct Cut<'a> {
        recs: &'a [KeyDoc],
        sizes: std::iter::Cycle<std::vec::IntoIter<usize>>,
    }

    impl SortedSlices<KeyDoc> for Cut<'_> {
        fn next_slice(&mut self) -> Result<Option<&[KeyDoc]>> {
            if self.recs.is_empty() {
                return Ok(None);
            }
            let n = self.sizes.next().unwrap_or(1).min(self.recs.len());
            let (slice, rest) = self.recs.split_at(n);
            self.recs = rest;
            Ok(Some(slice))
        }
    }

    /// Records cut into slices of any sizes (runs of a key across slices, slices of one
    /// record) give the bytes of the lists added one by one, in format 2 and in format 3
    /// (ranks placed directly on consecutive and on sparse ids, and sorted), and postings
    /// that disagree with FORWARD get the same errors.
    #[test]
    fn postings_from_slices_of_any_size_equal_lists_added_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        // Most keys in one document, some in a few, one in every document (FREQUENT).
        let mixed = |first: u32, step: u32| -> Vec<(u32, Vec<u64>)> {
            (0..120u32)
                .map(|i| {
                    let mut f: BTreeSet<u64> = (0..(i % 9) as u64)
                        .map(|j| ((i as u64) << 20 | j).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                        .collect();
                    f.insert(0x5555);
                    if i % 3 == 0 {
                        f.insert(((i % 7) as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1));
                    }
                    (first + i * step, f.into_iter().collect())
                })
                .collect()
        };
        let ways = ["lists", "1", "1-2-3-5-8", "7", "4096"];
        for (tag, docs) in [("dense", mixed(7, 1)), ("sparse", mixed(3, 5))] {
            let mut pairs: Vec<KeyDoc> = docs
                .iter()
                .flat_map(|(d, f)| f.iter().map(move |&key| KeyDoc { key, doc: *d }))
                .collect();
            pairs.sort_unstable();
            let single = pairs
                .chunk_by(|a, b| a.key == b.key)
                .filter(|r| r.len() == 1)
                .count();
            assert!(single > pairs.len() / 2, "{single} of {}", pairs.len());
            // The postings as given, one record short (a document under too few keys), and
            // one more (a document without a FORWARD entry).
            let short: Vec<KeyDoc> = pairs
                .iter()
                .copied()
                .filter(|p| !(p.doc == docs[50].0 && p.key == docs[50].1[0]))
                .collect();
            let mut extra = pairs.clone();
            extra.push(KeyDoc {
                key: u64::MAX,
                doc: 1,
            });
            for version in [2, 3] {
                for mem in [1u64 << 20, 64] {
                    for (case, recs) in [("ok", &pairs), ("short", &short), ("extra", &extra)] {
                        let mut outcomes = Vec::new();
                        for way in ways {
                            let name = format!("{tag}-v{version}-{mem}-{case}-{way}");
                            let b = SegmentBuilder::create_version(dir.path(), &name, version)
                                .unwrap()
                                .with_sort(SortOptions::new(mem, dir.path().join("tmp")));
                            let mut b = b;
                            for (d, f) in &docs {
                                b.forward(*d, f).unwrap();
                            }
                            let done = if way == "lists" {
                                b.begin_postings().unwrap();
                                for run in recs.chunk_by(|a, b| a.key == b.key) {
                                    let ids: Vec<u32> = run.iter().map(|r| r.doc).collect();
                                    b.posting_list(run[0].key, &ids).unwrap();
                                }
                                b.end_postings()
                            } else {
                                let sizes: Vec<usize> =
                                    way.split('-').map(|n| n.parse().unwrap()).collect();
                                b.postings_from_slices(&mut Cut {
                                    recs,
                                    sizes: sizes.into_iter().cycle(),
                                })
                            };
                            let outcome = match done {
                                Err(e) => Err(e.to_string()),
                                Ok(()) => {
                                    let built = b.finish().unwrap();
                                    let keys = recs.chunk_by(|a, b| a.key == b.key).count();
                                    assert_eq!(built.keys, keys as u64, "{name}");
                                    assert_eq!(built.postings, recs.len() as u64, "{name}");
                                    built.keep();
                                    Ok(std::fs::read(dir.path().join(&name)).unwrap())
                                }
                            };
                            outcomes.push(outcome);
                        }
                        let what = format!("{tag} format {version} mem {mem} {case}");
                        match (version, case) {
                            (3, "short") => {
                                let e = outcomes[0].as_ref().unwrap_err();
                                assert!(e.contains("features, but POSTINGS lists"), "{what}: {e}");
                            }
                            (3, "extra") => {
                                let e = outcomes[0].as_ref().unwrap_err();
                                assert!(e.contains("doc 1 that has no FORWARD"), "{what}: {e}");
                            }
                            _ => assert!(outcomes[0].is_ok(), "{what}"),
                        }
                        for (way, o) in ways.iter().zip(&outcomes) {
                            assert!(*o == outcomes[0], "{what}: {way}");
                        }
                    }
                }
            }
        }
    }

    /// Postings that do not list exactly the announced documents' features are refused.
    #[test]
    fn ranked_forward_refuses_postings_that_disagree() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = SegmentBuilder::create_version(dir.path(), "short", 3).unwrap();
        b.forward(1, &[5, 9]).unwrap();
        b.begin_postings().unwrap();
        b.posting_list(5, &[1]).unwrap();
        let e = b.end_postings().unwrap_err().to_string();
        assert!(e.contains("doc 1: 2 features"), "{e}");
        drop(b);
        assert!(!dir.path().join("short").exists());

        let mut b = SegmentBuilder::create_version(dir.path(), "extra", 3).unwrap();
        b.forward(1, &[5]).unwrap();
        b.begin_postings().unwrap();
        b.posting_list(5, &[1, 3]).unwrap();
        let e = b.end_postings().unwrap_err().to_string();
        assert!(e.contains("doc 3 that has no FORWARD entry"), "{e}");

        let mut b = SegmentBuilder::create_version(dir.path(), "order", 3).unwrap();
        b.forward(4, &[]).unwrap();
        assert!(b.forward(4, &[]).is_err());
        assert!(b.forward_encoded(5, &[]).is_err());
    }

    /// The simhash tables from a spool, each table sorted within any budget (in memory, or
    /// through runs), are the bytes of the tables from the in-memory `(doc, simhash)` list.
    #[test]
    fn spooled_simhash_tables_equal_in_memory_ones() {
        let dir = tempfile::tempdir().unwrap();
        let tables = PermutedTables::new(3, 4).unwrap();
        // Repeated simhashes (exact duplicates), consecutive and sparse ids.
        let docs: Vec<(u32, u64)> = (0..2_000u32)
            .map(|d| {
                let h = (d as u64 % 700).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                (d * 3 + d % 2, h)
            })
            .collect();
        let write = |name: &str, spooled: Option<u64>| {
            let mut b = SegmentBuilder::create_version(dir.path(), name, 2).unwrap();
            b.begin_postings().unwrap();
            b.end_postings().unwrap();
            match spooled {
                None => b.simhash_tables(&tables, &docs).unwrap(),
                Some(mem) => {
                    let tmp = dir.path().join("tmp");
                    let mut spool = crate::sort::Spool::<DocHash>::new(&tmp);
                    for &(doc, hash) in &docs {
                        spool.push(DocHash { doc, hash }).unwrap();
                    }
                    let file = spool.finish().unwrap();
                    let sort = SortOptions::new(mem, &tmp);
                    b.simhash_tables_spooled(&tables, &file, &sort).unwrap();
                }
            }
            b.finish().unwrap().keep();
            std::fs::read(dir.path().join(name)).unwrap()
        };
        let mem = write("mem", None);
        assert_eq!(write("spool", Some(64 << 20)), mem);
        assert_eq!(
            write("spool-runs", Some(4 << 10)),
            mem,
            "sorted through runs"
        );
        let tmp = dir.path().join("tmp");
        assert_eq!(
            std::fs::read_dir(tmp).unwrap().count(),
            0,
            "spool and runs removed"
        );
        let seg = Segment::open(dir.path().join("spool")).unwrap();
        assert!(seg.table_meta(segment::simhash_table(0)).unwrap().entries > 0);
    }
}
