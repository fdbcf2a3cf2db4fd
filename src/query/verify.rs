//! Exact verification of one candidate against a probing document, by ranks where it can.
//!
//! A format-3 segment stores a document's features as their ranks among the segment's own
//! POSTINGS keys (format-spec/segment.md). The rank map is strictly increasing, so two
//! documents of the same ranked segment share exactly as many ranks as features, and ranks
//! compare in the order their hashes do: every sampling whose comparison looks only at
//! equality and order of features (all, mod:M, minhash:K, bottomk:K) gives the same counts on
//! the two rank lists as on the two hash lists. So a candidate stored in the probing
//! document's own segment is verified from its stored list as it is, with no rank turned
//! back into a key; only `adaptive`, which tests each hash modulo M, needs the hashes. A
//! candidate of another segment (or any candidate of a format-1/2 segment) is compared by
//! its feature hashes, as before.

use crate::error::Result;
use crate::fingerprint::{Overlap, Sample};
use crate::threshold::Threshold;
use crate::view::View;

/// The probing document's own stored list: the index in `view.segments` of the segment
/// holding it and its FORWARD list as stored there (ranks in a format-3 segment), from
/// [`View::features_and_raw_into`].
#[derive(Clone, Copy, Debug)]
pub struct Own<'a> {
    pub seg: usize,
    pub raw: &'a [u64],
}

/// Whether `sample` compares two feature lists by equality and order alone (so ranks of one
/// segment stand for hashes): every sampling but `adaptive`.
pub fn compares_by_order(sample: Sample) -> bool {
    !matches!(sample, Sample::Adaptive(_))
}

/// Counters of how candidates were verified.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyCounts {
    /// Candidates compared by their ranks (same ranked segment as the prober).
    pub by_ranks: u64,
    /// Candidates compared by their feature hashes (their lists decoded to hashes).
    pub by_hashes: u64,
}

/// Verifies candidate `d` against the probing document with sorted features `x` (and, when
/// it is stored in `view`, its own stored list `own`) at `t` under `sample`; `buf` is scratch.
/// The comparison when `d` is similar enough (None when it is not, or no live segment holds it). Exactly the answer of
/// `sample.verify(x, features of d, t)`.
#[allow(clippy::too_many_arguments)]
pub fn verify_candidate(
    view: &View,
    sample: Sample,
    t: Threshold,
    x: &[u64],
    own: Option<Own<'_>>,
    d: u32,
    buf: &mut Vec<u64>,
    counts: &mut VerifyCounts,
) -> Result<Option<Overlap>> {
    let ov = match own {
        Some(o) if compares_by_order(sample) => {
            let Some(si) = view.forward_raw_into(d, buf)? else {
                return Ok(None);
            };
            let seg = &view.segments[si].seg;
            if si == o.seg && seg.ranked_forward() {
                counts.by_ranks += 1;
                debug_assert_eq!(o.raw.len(), x.len());
                sample.verify(o.raw, buf, t)
            } else {
                counts.by_hashes += 1;
                seg.ranks_to_keys(buf, 0)?;
                sample.verify(x, buf, t)
            }
        }
        _ => {
            if !view.features_into(d, buf)? {
                return Ok(None);
            }
            counts.by_hashes += 1;
            sample.verify(x, buf, t)
        }
    };
    Ok(ov)
}

/// [`verify_candidate`] of candidate `lists.id(j)` from its list in `lists` (read with
/// [`DocLists::read`], hashes mapped where its segment stores ranks) instead of reading it
/// again: the same comparison, counts and answer. `own` is the probing document's stored
/// list and `x` its hashes, as for [`verify_candidate`]; `sample` compares by order (every
/// sampling but `adaptive`; the caller checks [`compares_by_order`]).
#[allow(clippy::too_many_arguments)]
pub fn verify_listed(
    view: &View,
    sample: Sample,
    t: Threshold,
    x: &[u64],
    own: Own<'_>,
    lists: &DocLists,
    j: usize,
    buf: &mut Vec<u64>,
    counts: &mut VerifyCounts,
) -> Result<Option<Overlap>> {
    debug_assert!(compares_by_order(sample));
    let Some(si) = lists.segment(j) else {
        return Ok(None);
    };
    let seg = &view.segments[si].seg;
    if si == own.seg && seg.ranked_forward() {
        counts.by_ranks += 1;
        debug_assert_eq!(own.raw.len(), x.len());
        return Ok(sample.verify(own.raw, lists.raw(j), t));
    }
    counts.by_hashes += 1;
    let hashes = match lists.hashes(j) {
        Some(h) => h,
        None => {
            buf.clear();
            buf.extend_from_slice(lists.raw(j));
            seg.ranks_to_keys(buf, 0)?;
            buf
        }
    };
    Ok(sample.verify(x, hashes, t))
}

/// The stored lists of many documents read at once (a join's verification chunk, a block of
/// probing documents), with the feature hashes of those that need them mapped **in bulk**:
/// the ranks of all such documents of one format-3 segment go through
/// [`crate::segment::Segment::ranks_to_keys_bulk`] together, so each POSTINGS block is read
/// once for all of them instead of once per rank (which is what decoding list after list does
/// when the segment's keys are not cached: nearly every rank of a list lies in another block).
#[derive(Default)]
pub struct DocLists {
    /// The documents, ascending, distinct.
    ids: Vec<u32>,
    /// Per document: index in `view.segments` of the segment holding it (`NONE`: none).
    seg: Vec<u32>,
    /// Per document: start of its stored list in `raw` (one more entry at the end).
    raw_at: Vec<usize>,
    raw: Vec<u64>,
    /// Per document: where its hashes lie, `(segment buffer, start, end)`; `NONE` as the
    /// buffer for "not mapped", `RAW` for "the stored list is the hashes" (formats 1 and 2).
    hash_at: Vec<(u32, usize, usize)>,
    /// Per segment: the mapped hashes of its documents, one after the other.
    hashes: Vec<Vec<u64>>,
    /// Per document: where its coarse keys lie in `coarse` (None: not computed).
    coarse_at: Vec<Option<(usize, usize)>>,
    coarse: Vec<u16>,
    /// `raw` holds every document's feature hashes in place of its stored list
    /// ([`DocLists::from_hashes`]).
    raw_hashes: bool,
    /// A set (with false positives) of the keys in more than one of these lists, if known
    /// ([`DocLists::with_shared_keys`]).
    shared: Option<crate::build::SharedKeys>,
}

const NONE: u32 = u32::MAX;
/// Fewest ranks per piece [`DocLists::map_hashes`] maps on one core.
const MAP_PIECE_MIN: usize = 1 << 16;
const RAW: u32 = u32::MAX - 1;

impl DocLists {
    /// Reads the stored lists of `ids` (ascending, distinct) in parallel; no hash mapped yet.
    /// Each list is decoded straight into its place in one array sized up front from the
    /// documents' feature counts (`View::size`), so the array is written once and never
    /// regrown; should a list's length differ from its count (a document no live segment
    /// holds), the lists are gathered piece by piece instead. The same lists either way.
    pub fn read(view: &View, ids: Vec<u32>) -> Result<DocLists> {
        use rayon::prelude::*;
        debug_assert!(ids.windows(2).all(|w| w[0] < w[1]));
        // Small chunks: list lengths vary a lot (llvm-docs: 256-document chunks left one core
        // decoding alone for the last ~30 ms of a batch's read-back).
        const CHUNK: usize = 32;
        let mut raw_at = Vec::with_capacity(ids.len() + 1);
        raw_at.push(0usize);
        for &d in &ids {
            raw_at.push(raw_at[raw_at.len() - 1] + view.size(d) as usize);
        }
        let total = raw_at[ids.len()];
        // Zeroed pages from the allocator, faulted in by the threads that write them.
        let mut raw = vec![0u64; total];
        let chunks = ids.len().div_ceil(CHUNK);
        let mut slices: Vec<&mut [u64]> = Vec::with_capacity(chunks);
        let mut rest = &mut raw[..];
        for k in 0..chunks {
            let (lo, hi) = (raw_at[k * CHUNK], raw_at[((k + 1) * CHUNK).min(ids.len())]);
            let (head, tail) = rest.split_at_mut(hi - lo);
            slices.push(head);
            rest = tail;
        }
        let at = &raw_at;
        let placed: Vec<Result<Option<Vec<u32>>>> = ids
            .par_chunks(CHUNK)
            .enumerate()
            .zip(slices.into_par_iter())
            .map_init(Vec::new, |buf, ((k, chunk), out)| {
                let mut seg = Vec::with_capacity(chunk.len());
                let i0 = k * CHUNK;
                for (j, &d) in chunk.iter().enumerate() {
                    match view.forward_raw_into(d, buf)? {
                        Some(si) => seg.push(si as u32),
                        None => seg.push(NONE),
                    }
                    let (lo, hi) = (at[i0 + j] - at[i0], at[i0 + j + 1] - at[i0]);
                    if buf.len() != hi - lo {
                        return Ok(None);
                    }
                    out[lo..hi].copy_from_slice(buf);
                }
                Ok(Some(seg))
            })
            .collect();
        let mut seg = Vec::with_capacity(ids.len());
        for p in placed {
            match p? {
                Some(s) => seg.extend(s),
                None => return Self::read_gathered(view, ids),
            }
        }
        Ok(DocLists {
            seg,
            raw_at,
            raw,
            hash_at: vec![(NONE, 0, 0); ids.len()],
            coarse_at: vec![None; ids.len()],
            ids,
            ..Default::default()
        })
    }

    /// The lists of documents `docs` of segment `si` of `view` from feature hashes the caller
    /// holds already (ingest: the read stage's), nothing read from the segment: `flat` holds
    /// their sorted hashes one list after the other, each as long as its document's feature
    /// count in `view` ([`View::size`]). Documents without features are left out. Each list's
    /// [`DocLists::raw`] is its hashes in place of its stored ranks: within one ranked segment
    /// the rank map is strictly increasing, so hashes compare as the ranks do and
    /// [`verify_listed`] gives the answers and counts it gives for lists read
    /// ([`DocLists::raw_is_hashes`] tells callers that pass `raw` on to [`verify_candidate`],
    /// which reads the other list as stored). None when the counts do not add up to
    /// `flat.len()` or `si` does not hold a document.
    pub fn from_hashes(
        view: &View,
        si: usize,
        docs: std::ops::Range<u32>,
        flat: Vec<u64>,
    ) -> Option<DocLists> {
        if si >= view.segments.len() {
            return None;
        }
        let (mut ids, mut raw_at) = (Vec::new(), vec![0usize]);
        let mut at = 0usize;
        for d in docs {
            let n = view.size(d) as usize;
            if n == 0 {
                continue;
            }
            if view.forward_block(d).map(|(s, _)| s) != Some(si) {
                return None;
            }
            at += n;
            ids.push(d);
            raw_at.push(at);
        }
        if at != flat.len() {
            return None;
        }
        Some(DocLists {
            seg: vec![si as u32; ids.len()],
            raw_at,
            raw: flat,
            hash_at: vec![(RAW, 0, 0); ids.len()],
            coarse_at: vec![None; ids.len()],
            ids,
            raw_hashes: true,
            ..Default::default()
        })
    }

    /// These lists with `shared`, a set holding every key in more than one of them (false
    /// positives allowed): the segment builder's keys of lists of several documents, for
    /// lists of that segment's documents.
    pub fn with_shared_keys(mut self, shared: Option<crate::build::SharedKeys>) -> DocLists {
        self.shared = shared;
        self
    }

    /// The set given by [`DocLists::with_shared_keys`], taken out.
    pub fn take_shared_keys(&mut self) -> Option<crate::build::SharedKeys> {
        self.shared.take()
    }

    /// Whether [`DocLists::raw`] gives the hashes in place of the stored lists
    /// ([`DocLists::from_hashes`]).
    pub fn raw_is_hashes(&self) -> bool {
        self.raw_hashes
    }

    /// [`DocLists::read`] list by list, for lists whose lengths are not the feature counts.
    pub(crate) fn read_gathered(view: &View, ids: Vec<u32>) -> Result<DocLists> {
        use rayon::prelude::*;
        let parts: Vec<Result<(Vec<u32>, Vec<usize>, Vec<u64>)>> = ids
            .par_chunks(256)
            .map_init(Vec::new, |buf, chunk| {
                let (mut seg, mut lens, mut flat) = (Vec::new(), Vec::new(), Vec::new());
                for &d in chunk {
                    match view.forward_raw_into(d, buf)? {
                        Some(si) => seg.push(si as u32),
                        None => seg.push(NONE),
                    }
                    lens.push(buf.len());
                    flat.extend_from_slice(buf);
                }
                Ok((seg, lens, flat))
            })
            .collect();
        let mut out = DocLists {
            seg: Vec::with_capacity(ids.len()),
            raw_at: Vec::with_capacity(ids.len() + 1),
            hash_at: vec![(NONE, 0, 0); ids.len()],
            coarse_at: vec![None; ids.len()],
            ids,
            ..Default::default()
        };
        out.raw_at.push(0);
        for p in parts {
            let (seg, lens, flat) = p?;
            out.seg.extend(seg);
            for l in lens {
                let last = out.raw_at[out.raw_at.len() - 1];
                out.raw_at.push(last + l);
            }
            out.raw.extend(flat);
        }
        Ok(out)
    }

    /// The FORWARD blocks [`DocLists::read`] of `ids` reads, as `(index in view.segments,
    /// block)`, sorted and distinct ([`View::forward_block`]): what a read-ahead asks for.
    pub fn forward_blocks(view: &View, ids: &[u32]) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> =
            ids.iter().filter_map(|&d| view.forward_block(d)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The POSTINGS blocks [`DocLists::map_hashes`] with `need` reads to map ranks to keys,
    /// as `(index in view.segments, block)`, sorted and distinct
    /// ([`crate::segment::Segment::rank_blocks`]): none for a document mapped already, stored
    /// as hashes, or of a segment whose keys are decoded in memory.
    pub fn rank_blocks(
        &self,
        view: &View,
        need: impl Fn(usize) -> bool,
    ) -> Result<Vec<(usize, usize)>> {
        let mut by_seg: Vec<Vec<u64>> = vec![Vec::new(); view.segments.len()];
        for i in 0..self.ids.len() {
            let Some(si) = self.segment(i) else { continue };
            if need(i) && self.hash_at[i].0 == NONE && view.segments[si].seg.ranked_forward() {
                by_seg[si].extend_from_slice(self.raw(i));
            }
        }
        let mut out = Vec::new();
        let mut blocks = Vec::new();
        for (si, ranks) in by_seg.iter().enumerate() {
            blocks.clear();
            view.segments[si].seg.rank_blocks(ranks, &mut blocks)?;
            out.extend(blocks.iter().map(|&b| (si, b)));
        }
        Ok(out)
    }

    /// How many documents were read.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no document was read.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Position of `doc` among the documents read, if it is one of them.
    pub fn find(&self, doc: u32) -> Option<usize> {
        self.ids.binary_search(&doc).ok()
    }

    /// The segment holding document `i` (None: no live segment does; its lists are empty).
    pub fn segment(&self, i: usize) -> Option<usize> {
        (self.seg[i] != NONE).then_some(self.seg[i] as usize)
    }

    /// Document `i`'s list as stored (ranks in a format-3 segment), or its hashes when the
    /// lists came from [`DocLists::from_hashes`].
    pub fn raw(&self, i: usize) -> &[u64] {
        &self.raw[self.raw_at[i]..self.raw_at[i + 1]]
    }

    /// Document `i`'s feature hashes, if [`DocLists::map_hashes`] mapped them.
    pub fn hashes(&self, i: usize) -> Option<&[u64]> {
        match self.hash_at[i] {
            (NONE, _, _) => None,
            (RAW, _, _) => Some(self.raw(i)),
            (b, lo, hi) => Some(&self.hashes[b as usize][lo..hi]),
        }
    }

    /// Document `i`'s id.
    pub fn id(&self, i: usize) -> u32 {
        self.ids[i]
    }

    /// Maps the hashes of every document `i` with `need(i)`: per format-3 segment, all their
    /// ranks in one bulk pass (segments in parallel); formats 1 and 2 store the hashes.
    /// The ranks do not count towards decoding a segment's keys (the join maps only its
    /// candidates' lists: [`crate::segment::Segment::ranks_to_keys_bulk`]).
    pub fn map_hashes(&mut self, view: &View, need: impl Fn(usize) -> bool) -> Result<()> {
        self.map_hashes_as(view, need, false)
    }

    /// [`DocLists::map_hashes`] for probe matching, which maps every probing document's
    /// list: the ranks count towards decoding a segment's keys once, when its budget allows
    /// ([`crate::segment::Segment::ranks_to_keys_bulk_caching`]).
    pub fn map_hashes_caching(&mut self, view: &View, need: impl Fn(usize) -> bool) -> Result<()> {
        self.map_hashes_as(view, need, true)
    }

    /// Computes the coarse keys ([`crate::segment::coarse_key`]) of every document `i` with
    /// `need(i)`, in parallel: from its hashes when they are mapped or stored, else from its
    /// ranks through its segment's rank -> coarse table ([`crate::segment::Segment::coarse_into`]),
    /// with no rank mapped to its key. A document whose segment has no such table gets none.
    pub fn map_coarse(&mut self, view: &View, need: impl Fn(usize) -> bool + Sync) -> Result<()> {
        use rayon::prelude::*;
        let todo: Vec<usize> = (0..self.ids.len())
            .filter(|&i| self.seg[i] != NONE && self.coarse_at[i].is_none() && need(i))
            .collect();
        // Each segment's table built once, before the documents share it.
        let mut segs: Vec<usize> = todo
            .iter()
            .filter(|&&i| self.hashes(i).is_none())
            .map(|&i| self.seg[i] as usize)
            .collect();
        segs.sort_unstable();
        segs.dedup();
        segs.par_iter().try_for_each(|&si| {
            view.segments[si]
                .seg
                .coarse_into(&[], &mut Vec::new())
                .map(|_| ())
        })?;
        let this = &*self;
        let parts: Vec<Result<(Vec<(usize, usize)>, Vec<u16>)>> = todo
            .par_chunks(256)
            .map(|chunk| {
                let (mut lens, mut flat) = (Vec::new(), Vec::new());
                for &i in chunk {
                    let before = flat.len();
                    let ok = match this.hashes(i) {
                        Some(h) => {
                            flat.extend(h.iter().map(|&x| crate::segment::coarse_key(x)));
                            true
                        }
                        None => {
                            let seg = &view.segments[this.seg[i] as usize].seg;
                            seg.coarse_into(this.raw(i), &mut flat)?
                        }
                    };
                    if ok {
                        lens.push((i, flat.len() - before));
                    }
                }
                Ok((lens, flat))
            })
            .collect();
        for p in parts {
            let (lens, flat) = p?;
            let mut at = self.coarse.len();
            for (i, len) in lens {
                self.coarse_at[i] = Some((at, len));
                at += len;
            }
            self.coarse.extend(flat);
        }
        Ok(())
    }

    /// Document `i`'s coarse keys, if [`DocLists::map_coarse`] computed them.
    pub fn coarse(&self, i: usize) -> Option<&[u16]> {
        self.coarse_at[i].map(|(at, len)| &self.coarse[at..at + len])
    }

    fn map_hashes_as(
        &mut self,
        view: &View,
        need: impl Fn(usize) -> bool,
        caching: bool,
    ) -> Result<()> {
        use rayon::prelude::*;
        let segs = view.segments.len();
        self.hashes.resize(segs, Vec::new());
        // What earlier calls mapped stays as it is; only what this call adds is mapped.
        let done: Vec<usize> = self.hashes.iter().map(|b| b.len()).collect();
        // Where each document's hashes go (each segment's buffer grows once, by what this
        // call adds), and the documents to map per segment, in order.
        let mut adds = vec![0usize; segs];
        let mut todo: Vec<Vec<usize>> = vec![Vec::new(); segs];
        for i in 0..self.ids.len() {
            let Some(si) = self.segment(i) else { continue };
            if !need(i) || self.hash_at[i].0 != NONE {
                continue;
            }
            if !view.segments[si].seg.ranked_forward() {
                self.hash_at[i] = (RAW, 0, 0);
                continue;
            }
            let lo = done[si] + adds[si];
            adds[si] += self.raw_at[i + 1] - self.raw_at[i];
            self.hash_at[i] = (si as u32, lo, done[si] + adds[si]);
            todo[si].push(i);
        }
        for (si, b) in self.hashes.iter_mut().enumerate() {
            if adds[si] > 0 && b.is_empty() {
                // Zeroed pages from the allocator, faulted in by the threads that fill them.
                *b = vec![0u64; adds[si]];
            } else if adds[si] > 0 {
                b.resize(done[si] + adds[si], 0);
            }
        }
        let (raw, raw_at) = (&self.raw, &self.raw_at);
        self.hashes
            .par_iter_mut()
            .enumerate()
            .filter(|(si, _)| adds[*si] > 0)
            .map(|(si, b)| {
                let seg = &view.segments[si].seg;
                let docs = &todo[si];
                let region = &mut b[done[si]..];
                // Cut in pieces mapped on every core when each piece alone maps through the
                // segment's decoded keys (they are, or a piece brings the ranks that decode
                // them, more than a sixteenth of its keys, and the key-cache budget has room
                // for them); otherwise in one call, which reads each POSTINGS block once for
                // all of them.
                let keys = seg
                    .table_meta(crate::segment::POSTINGS)
                    .map_or(u64::MAX, |t| t.entries);
                let cached = seg.cached_key_count().is_some();
                let (limit, taken) = crate::segment::key_cache_usage();
                let room = keys.saturating_mul(8) <= limit.saturating_sub(taken);
                let piece = (region.len() / (2 * rayon::current_num_threads()).max(1))
                    .max(MAP_PIECE_MIN)
                    .max(if cached { 0 } else { (keys / 16 + 1) as usize });
                let split = (cached || (caching && room)) && region.len() > piece;
                if split && !cached {
                    // The first piece would decode the keys while the others wait for them:
                    // decode them here, on every core (`Segment::decode_keys`).
                    seg.decode_keys();
                }
                let mut pieces: Vec<(&[usize], &mut [u64])> = Vec::new();
                let (mut rest, mut d0, mut len) = (region, 0, 0);
                for (k, &i) in docs.iter().enumerate() {
                    len += raw_at[i + 1] - raw_at[i];
                    if k + 1 == docs.len() || (split && len >= piece) {
                        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
                        pieces.push((&docs[d0..=k], head));
                        (rest, d0, len) = (tail, k + 1, 0);
                    }
                }
                pieces
                    .into_par_iter()
                    .map(|(docs, out)| {
                        let mut at = 0;
                        for &i in docs {
                            let list = &raw[raw_at[i]..raw_at[i + 1]];
                            out[at..at + list.len()].copy_from_slice(list);
                            at += list.len();
                        }
                        if caching {
                            seg.ranks_to_keys_bulk_caching(out)
                        } else {
                            seg.ranks_to_keys_bulk(out)
                        }
                    })
                    .collect::<Result<()>>()
            })
            .collect::<Result<()>>()
    }
}
