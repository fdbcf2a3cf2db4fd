//! The out-of-core matching pipeline: probe records -> merge join against the segments ->
//! candidate pair records -> exact verification -> sorted pairs, every stage bounded by the
//! memory budget through the external sort.
//!
//! It finds exactly the pairs of [`super::pairs::for_each_pair_block`] (the same prefix filter,
//! the same verification), but turns the per-document random lookups into sequential passes:
//!
//! 1. **Probe records.** Each probing document `a` chooses its probe keys per segment
//!    ([`Matcher::choose_segment_probes`], `src/query/per_segment.rs`: `|A| - m + 1` keys per
//!    segment, the ones an old segment rules out first, so a page whose relatives live in one
//!    old segment looks keys up only there; the old segments' key filters answer a window's
//!    walked keys in key order beforehand, [`crate::query::Matcher::pre_walk`]) and emits
//!    `(key, a, segments)` records
//!    ([`ProbeRecord`]); an external sort orders them by key. A batch matched against the
//!    whole index at once (`older_than` 0), a commonality limit or adaptive sampling keep one
//!    probe set for all segments (every bit set). Under the plain choice (no commonality
//!    limit, no adaptive sampling, no absent-first order: a whole-index run), a prober of a
//!    format-3 segment chooses on its stored ranks and only the chosen ranks are mapped to
//!    keys (`query::FrequentRanks`; the same set as the choice on hashes).
//! 2. **Merge join.** The sorted probe stream is joined with every segment's POSTINGS table
//!    through a forward-only [`Seeker`]: each segment is read once, at increasing offsets, and
//!    only for the keys some record asks of it, in the blocks whose key filter (table
//!    `POSTINGS_FILTER`) admits the key: a key the filter rules out costs three bytes of the
//!    filter, no block read. Each
//!    posting `d` of a probed key gives a candidate `(d, a)` when `a` is allowed to pair with it
//!    (`d > a`, or `d` older than the batch); a second external sort orders the candidates by
//!    partner and drops repeats (a pair sharing several probe keys).
//! 3. **Verification.** Candidates come grouped by partner `d`, so each partner's forward list
//!    is read once and in doc-id order (sequential over the old segments); each is compared
//!    exactly with its probing documents (size bounds first), in parallel.
//! 4. **Output.** Verified pairs go through a third sort (`a < b` order) and are handed to the
//!    caller in blocks, so a whole-index run never holds its pairs in memory.
//!
//! Memory: at most two sorts are alive at once (the stream being read and the sort being
//! filled), each with half the budget (of what the format-3 key cache leaves of it:
//! [`super::plan::sorts_budget`]), plus one verification chunk.

use std::ops::Range;

use byteorder::{ByteOrder, LittleEndian};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::Sample;
use crate::query::{Match, Scratch, SegmentProbes};
use crate::segment::{self, Seeker};
use crate::sort::{DocPair, ExternalSorter, ProbeRecord, Record, SortOptions};
use crate::view::View;

use super::plan::{sorts_budget, Pair, PairsConfig, PairsStats};

/// Candidates verified per parallel step of phase 3 (extended to the end of a partner group).
const VERIFY_CHUNK: usize = 1 << 20;
/// Stored-list entries (features) one verification chunk reads at most (cut at a partner
/// boundary), and one group of probing documents of phase 1 (their lists read and mapped
/// together), as a share of the memory budget: the chunk's lists and their mapped hashes
/// cost up to 20 bytes an entry (list, hashes, the bulk mapping's order), and an eighth of
/// `--mem` goes to them; within [`VERIFY_LISTS_MIN`, `VERIFY_LISTS_MAX`]. The more ranks of
/// one segment a chunk maps at once, the more of them each POSTINGS block serves.
fn verify_lists(mem_bytes: u64) -> u64 {
    (mem_bytes / 8 / 20).clamp(VERIFY_LISTS_MIN, VERIFY_LISTS_MAX)
}
const VERIFY_LISTS_MIN: u64 = 1 << 18;
const VERIFY_LISTS_MAX: u64 = 8 << 20;
/// Pairs handed to the caller at once.
const EMIT_BLOCK: usize = 1 << 16;

/// A verified pair as the output sort stores it (record kind 3, 36 bytes, format-spec/sort-run.md):
/// `a: u32`, `b: u32`, `doc: u32` (the partner the probing document found), `inter: u64`,
/// `denom: u64` (the resemblance is `inter / denom`, recomputed bit for bit as the
/// verification computed it), `containment: f64 bits`, all little-endian. Order: `(a, b)` first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct PairRecord {
    a: u32,
    b: u32,
    doc: u32,
    inter: u64,
    denom: u64,
    containment: u64,
}

impl Record for PairRecord {
    const SIZE: usize = 36;
    const KIND: u32 = 3;

    fn encode(&self, out: &mut [u8]) {
        LittleEndian::write_u32(&mut out[0..4], self.a);
        LittleEndian::write_u32(&mut out[4..8], self.b);
        LittleEndian::write_u32(&mut out[8..12], self.doc);
        LittleEndian::write_u64(&mut out[12..20], self.inter);
        LittleEndian::write_u64(&mut out[20..28], self.denom);
        LittleEndian::write_u64(&mut out[28..36], self.containment);
    }

    fn decode(bytes: &[u8]) -> Self {
        PairRecord {
            a: LittleEndian::read_u32(&bytes[0..4]),
            b: LittleEndian::read_u32(&bytes[4..8]),
            doc: LittleEndian::read_u32(&bytes[8..12]),
            inter: LittleEndian::read_u64(&bytes[12..20]),
            denom: LittleEndian::read_u64(&bytes[20..28]),
            containment: LittleEndian::read_u64(&bytes[28..36]),
        }
    }
}

impl PairRecord {
    fn from_pair(p: &Pair) -> Self {
        PairRecord {
            a: p.a,
            b: p.b,
            doc: p.m.doc,
            inter: p.m.inter,
            denom: p.m.denom,
            containment: p.m.containment.to_bits(),
        }
    }

    fn to_pair(self) -> Pair {
        Pair {
            a: self.a,
            b: self.b,
            m: Match {
                doc: self.doc,
                inter: self.inter,
                denom: self.denom,
                resemblance: crate::fingerprint::ratio(self.inter, self.denom),
                containment: f64::from_bits(self.containment),
            },
        }
    }
}

/// The old segments' POSTINGS blocks the merge join (phase 2) will read, asked ahead while
/// phase 1 chooses the probes: each probe record naming an old segment (its bit) is a seek
/// of its key there, and the seeker reads the block [`segment::Segment::postings_block_for`]
/// names (the block index, then the key filter): so the blocks asked are exactly the blocks
/// the join reads in those segments, each once, in the order of the file. On a cold page
/// cache they come in while the filter walk runs instead of as page faults (with the
/// kernel's read-around) when the join reaches them.
struct JoinAhead {
    /// (index in `view.segments`, bit) of each old segment.
    old: Vec<(usize, u32)>,
    /// Union of the old segments' bits.
    mask: u32,
    /// Per old segment: the probe keys noted since the last [`JoinAhead::flush`].
    keys: Vec<Vec<u64>>,
    /// Per old segment: its blocks asked already, a bit each.
    asked: Vec<Vec<u64>>,
    /// Blocks asked.
    blocks: u64,
    queue: crate::view::ReadAheadQueue,
}

impl JoinAhead {
    /// Over the old segments of `bits` (those not [`crate::query::NEW_SEGMENTS`]); None when
    /// there are none or the share is 0.
    fn new(view: &View, bits: &[u32], share: f64) -> Option<JoinAhead> {
        let old: Vec<(usize, u32)> = (bits.iter().enumerate())
            .filter(|&(_, &b)| b != crate::query::NEW_SEGMENTS)
            .map(|(i, &b)| (i, b))
            .collect();
        if old.is_empty() || share <= 0.0 {
            return None;
        }
        let asked = (old.iter())
            .map(|&(si, _)| {
                let n = view.segments[si].seg.block_count(segment::POSTINGS);
                vec![0u64; n.div_ceil(64)]
            })
            .collect();
        Some(JoinAhead {
            mask: old.iter().fold(0, |m, &(_, b)| m | b),
            keys: vec![Vec::new(); old.len()],
            old,
            asked,
            blocks: 0,
            queue: crate::view::ReadAheadQueue::new(share),
        })
    }

    /// Notes the keys of `recs` the join will seek in old segments.
    fn note(&mut self, recs: &[ProbeRecord]) {
        for r in recs.iter().filter(|r| r.segs & self.mask != 0) {
            for (j, &(_, bit)) in self.old.iter().enumerate() {
                if r.segs & bit != 0 {
                    self.keys[j].push(r.key);
                }
            }
        }
    }

    /// The blocks of the keys noted that were not asked yet: `(index in view.segments,
    /// block)`, sorted. A key whose block cannot be found (a damaged filter) is left to the
    /// join, which reports it.
    fn new_blocks(&mut self, view: &View) -> Vec<(usize, usize)> {
        let found: Vec<Vec<usize>> = (self.keys.par_iter_mut().zip(&self.old))
            .map(|(keys, &(si, _))| {
                keys.sort_unstable();
                keys.dedup();
                let seg = &view.segments[si].seg;
                let mut b: Vec<usize> = (keys.iter())
                    .filter_map(|&k| seg.postings_block_for(k).ok().flatten())
                    .collect();
                keys.clear();
                b.dedup(); // ascending with the keys
                b
            })
            .collect();
        let mut out = Vec::new();
        for ((blocks, asked), &(si, _)) in found.iter().zip(&mut self.asked).zip(&self.old) {
            for &bi in blocks {
                let (w, bit) = (bi / 64, 1u64 << (bi % 64));
                if let Some(a) = asked.get_mut(w) {
                    if *a & bit == 0 {
                        *a |= bit;
                        out.push((si, bi));
                    }
                }
            }
        }
        out
    }

    /// Asks for the blocks of the keys noted since the last flush.
    fn flush(&mut self, view: &View) {
        let blocks = self.new_blocks(view);
        self.blocks += blocks.len() as u64;
        self.queue.ask_blocks(view, segment::POSTINGS, &blocks);
    }
}

/// The verification's read-ahead: each chunk's FORWARD blocks, and the POSTINGS blocks its
/// ranks are mapped in, asked as soon as they are known (see `join_pairs`, phase 3), each
/// block once over all chunks (one budget for them all), none of the segments skipped (a
/// batch's own segments: just written, in the page cache).
struct VerifyAhead {
    /// Per segment and table (FORWARD, POSTINGS): its blocks asked already, a bit each.
    asked: Vec<[Vec<u64>; 2]>,
    skip: Vec<bool>,
    queue: crate::view::ReadAheadQueue,
}

impl VerifyAhead {
    fn new(view: &View, skip: Vec<bool>, share: f64) -> VerifyAhead {
        let bits = |si: usize, table: u32| {
            vec![0u64; view.segments[si].seg.block_count(table).div_ceil(64)]
        };
        VerifyAhead {
            asked: (0..view.segments.len())
                .map(|si| [bits(si, segment::FORWARD), bits(si, segment::POSTINGS)])
                .collect(),
            skip,
            queue: crate::view::ReadAheadQueue::new(share),
        }
    }

    /// Of `blocks` (`(index in view.segments, block)` of `table`, sorted), those not asked
    /// yet nor in a skipped segment, now marked asked.
    fn fresh(&mut self, table: u32, blocks: &[(usize, usize)]) -> Vec<(usize, usize)> {
        let t = usize::from(table != segment::FORWARD);
        (blocks.iter().copied())
            .filter(|&(si, bi)| {
                if self.skip.get(si).copied().unwrap_or(true) {
                    return false;
                }
                let (w, bit) = (bi / 64, 1u64 << (bi % 64));
                match self.asked[si][t].get_mut(w) {
                    Some(a) if *a & bit == 0 => {
                        *a |= bit;
                        true
                    }
                    _ => false,
                }
            })
            .collect()
    }

    /// Asks for the blocks of `table` not asked yet, by the calling thread (the reads follow
    /// at once, in parallel: a request queued behind them would come too late).
    fn ask(&mut self, view: &View, table: u32, blocks: &[(usize, usize)]) {
        let fresh = self.fresh(table, blocks);
        self.queue.ask_blocks_here(view, table, &fresh);
    }
}

/// The pairs of [`super::pairs::for_each_pair_block`] (same arguments, same result), computed
/// by the sort/merge-join pipeline of this module under `sort.mem_bytes`; run files go to
/// `sort.tmp_dir`. `emit` gets the pairs in global `(a, b)` order, in blocks.
pub fn join_pairs(
    view: &View,
    cfg: &PairsConfig,
    sort: &SortOptions,
    docs: Range<u32>,
    older_than: u32,
    mut emit: impl FnMut(&[Pair]) -> Result<()>,
) -> Result<PairsStats> {
    if cfg.threshold.as_f64() <= 0.0 {
        return Err(Error::InvalidArgument(
            "pairs needs a threshold above 0".into(),
        ));
    }
    let half = SortOptions {
        mem_bytes: (sorts_budget(view, sort.mem_bytes) / 2).max(4 << 10),
        dedup: false,
        ..sort.clone()
    };
    let matcher = cfg.matcher(view, older_than);
    let mut stats = PairsStats {
        max_df: cfg.max_df,
        ..Default::default()
    };

    // 1. Probe records, sorted by key.
    let per_segment = cfg.per_segment && matcher.per_segment();
    let bits: Vec<u32> = if per_segment {
        matcher.segment_bits()
    } else {
        vec![u32::MAX; view.segments.len()]
    };
    let mut probes = ExternalSorter::<ProbeRecord>::new(half.clone())?;
    // Old segments' posting blocks the join will read, asked as the probes are chosen.
    let mut ahead = if per_segment {
        JoinAhead::new(view, &bits, crate::view::read_ahead_share())
    } else {
        None
    };
    // The plain choice is made on a format-3 prober's stored ranks, and only the chosen
    // ranks are mapped to keys (query::FrequentRanks): a fifth or so of its list at t = 0.8.
    let plain = !per_segment && matcher.plain_choice();
    let freq = plain.then(|| crate::query::FrequentRanks::new(view));
    let max_listed = verify_lists(sort.mem_bytes);
    // Per-segment probes: the window's lists (16 bytes an entry: stored list and hashes)
    // share the window's budget (20 bytes an entry of `max_listed`) with the pre-pass of the
    // filter walk (`Matcher::pre_walk`: 4 bytes a listed entry for the answers, 32 bytes a
    // key of a run of at most `max_listed / 8`): four fifths of the entries a window.
    let window = if per_segment {
        max_listed * 4 / 5
    } else {
        max_listed
    };
    let end = docs.end.min(view.doc_ids());
    // The ranks chosen on ranks, segment by segment: (rank, prober), mapped to keys in bulk
    // once they fill the share of the budget the candidates' sort takes after this phase
    // (that sort does not exist yet; 24 bytes an entry: rank and prober, the bulk mapping's
    // order, room for the vectors' growth), not group by group: the more ranks
    // of a segment one mapping holds, the more of them each POSTINGS block serves (at a small
    // `--mem` a group's ranks are a few a block, each a select at a random position).
    let mut by_seg: Vec<(Vec<u64>, Vec<u32>)> = vec![Default::default(); view.segments.len()];
    let max_chosen = (half.mem_bytes / 24).max(1 << 16);
    let mut chosen = 0u64;
    let map_chosen = |by_seg: &mut Vec<(Vec<u64>, Vec<u32>)>,
                      probes: &mut ExternalSorter<ProbeRecord>|
     -> Result<()> {
        by_seg
            .par_iter_mut()
            .enumerate()
            .filter(|(_, (r, _))| !r.is_empty())
            .map(|(si, (r, _))| view.segments[si].seg.ranks_to_keys_bulk_caching(r))
            .collect::<Result<()>>()?;
        for (keys, docs) in by_seg.iter_mut() {
            probes.extend(
                std::mem::take(keys)
                    .into_iter()
                    .zip(std::mem::take(docs))
                    .map(|(key, doc)| ProbeRecord {
                        key,
                        doc,
                        segs: u32::MAX,
                    }),
            )?;
        }
        Ok(())
    };
    let mut lo = docs.start;
    while lo < end {
        // The probers' lists a group at a time (as many as `max_listed` entries), their ranks
        // mapped to keys in bulk, segment by segment (query::DocLists): each POSTINGS block
        // located and checked once for all the ranks in it, not once per rank.
        let mut hi = lo;
        let mut listed = 0u64;
        while hi < end && (hi == lo || listed + view.size(hi) as u64 <= window) {
            listed += view.size(hi) as u64;
            hi += 1;
        }
        let ids: Vec<u32> = (lo..hi)
            .filter(|&d| view.is_live(d) && view.size(d) > 0)
            .collect();
        let mut lists = crate::query::DocLists::read(view, ids)?;
        // Probers of a format-3 segment under the plain choice choose on their ranks; the
        // others need their hashes (stored as they are in formats 1 and 2).
        let by_ranks: Vec<bool> = (0..lists.len())
            .map(|i| {
                freq.is_some()
                    && lists
                        .segment(i)
                        .is_some_and(|si| view.segments[si].seg.ranked_forward())
            })
            .collect();
        lists.map_hashes_caching(view, |i| !by_ranks[i])?;
        if let Some(freq) = &freq {
            let mut segs: Vec<usize> = (0..lists.len())
                .filter(|&i| by_ranks[i])
                .filter_map(|i| lists.segment(i))
                .collect();
            segs.sort_unstable();
            segs.dedup();
            for si in segs {
                freq.segment(si)?;
            }
        }
        // Per-segment probes: the old segments' filter answers for each prober's walk
        // prefix, asked in key order (one forward walk per segment for a run of probers).
        let pre = if per_segment {
            let xs: Vec<Option<&[u64]>> = (0..lists.len())
                .map(|i| lists.segment(i).and_then(|_| lists.hashes(i)))
                .collect();
            matcher.pre_walk(&xs, (max_listed / 8) as usize)
        } else {
            crate::query::PreWalk::default()
        };
        stats.add_pre_walk(&pre);
        let pre = &pre;
        let lists = &lists;
        let by_ranks = &by_ranks;
        let freq = &freq;
        let idx: Vec<usize> = (0..lists.len()).collect();
        // Per chunk: records of the probers chosen on hashes; (prober position, rank) of
        // those chosen on ranks.
        type Chunk = (Vec<ProbeRecord>, Vec<(u32, u64)>, Scratch, SegmentProbes);
        let chunks: Vec<Result<Chunk>> = idx
            .par_chunks(64)
            .map_init(
                || {
                    let s = (Scratch::new(0), SegmentProbes::default());
                    (s, Vec::new(), Vec::new())
                },
                |((scratch, sp), ranked, chosen), chunk| {
                    let mut out = Vec::new();
                    let mut out_ranks = Vec::new();
                    for &i in chunk {
                        let a = lists.id(i);
                        let Some(si) = lists.segment(i) else {
                            continue;
                        };
                        if by_ranks[i] {
                            let Some(freq) = freq else { continue };
                            let w = freq.segment(si)?;
                            chosen.clear();
                            if matcher.choose_probe_ranks(lists.raw(i), w, ranked, chosen) {
                                out_ranks.extend(chosen.iter().map(|&r| (i as u32, r)));
                            }
                            continue;
                        }
                        let Some(x) = lists.hashes(i) else {
                            continue;
                        };
                        if per_segment {
                            if matcher.choose_segment_probes_with(x, pre.prefix(i), scratch, sp)? {
                                out.extend(sp.probes.iter().map(|&(key, segs)| ProbeRecord {
                                    key,
                                    doc: a,
                                    segs,
                                }));
                            }
                        } else if matcher.choose_probes(x, scratch)? {
                            out.extend(scratch.probes().map(|key| ProbeRecord {
                                key,
                                doc: a,
                                segs: u32::MAX,
                            }));
                        }
                    }
                    Ok((
                        out,
                        out_ranks,
                        Scratch::counters_only(scratch),
                        sp.take_counters(),
                    ))
                },
            )
            .collect();
        for c in chunks {
            let (recs, ranks, s, sp) = c?;
            stats.add_per_segment(&sp);
            stats.max_df_probes_cut += s.probes_cut;
            stats.max_df_keys_cut += s.keys_cut;
            stats.max_df_postings_skipped += s.postings_skipped;
            stats.max_df_docs_cut += s.docs_cut;
            stats.add_absent_first(&s);
            if let Some(ahead) = &mut ahead {
                ahead.note(&recs);
            }
            probes.extend(recs)?;
            for (i, r) in ranks {
                if let Some(si) = lists.segment(i as usize) {
                    by_seg[si].0.push(r);
                    by_seg[si].1.push(lists.id(i as usize));
                    chosen += 1;
                }
            }
        }
        stats.documents += lists.len() as u64;
        if let Some(ahead) = &mut ahead {
            ahead.flush(view);
        }
        lo = hi;
        if chosen >= max_chosen {
            map_chosen(&mut by_seg, &mut probes)?;
            chosen = 0;
        }
    }
    map_chosen(&mut by_seg, &mut probes)?;
    stats.probe_records = probes.stats().records;
    let probes = probes.finish()?;
    stats.runs_spilled += probes.stats().runs_spilled;

    // 2. Merge join of the probe stream with each segment's postings -> candidates by partner.
    // With a sampling whose `may_reach` bound prunes (all, mod:M) and no commonality limit
    // (so every prober probed exactly `|A| - m + 1` keys in each segment), the candidate
    // records are kept with their repeats: a (partner, prober) record comes once per probe
    // key whose posting list holds the partner, and that count bounds their overlap as in
    // probe matching (`Matcher::search`). Otherwise the sort drops the repeats.
    let prune = cfg.max_df.is_none() && matches!(cfg.sample, Sample::All | Sample::Mod(_));
    let mut cands = ExternalSorter::<DocPair>::new(SortOptions {
        dedup: !prune,
        ..half.clone()
    })?;
    let mut seekers: Vec<Seeker<'_>> = view
        .segments
        .iter()
        .map(|s| s.seg.seeker(segment::POSTINGS))
        .collect();
    // (probing document, its segment bits) of the current key.
    let mut probers: Vec<(u32, u32)> = Vec::new();
    let mut cur: Option<u64> = None;
    let join_key = |key: u64,
                    probers: &[(u32, u32)],
                    seekers: &mut [Seeker<'_>],
                    cands: &mut ExternalSorter<DocPair>,
                    stats: &mut PairsStats|
     -> Result<()> {
        let asked = probers.iter().fold(0u32, |u, &(_, s)| u | s);
        for (sk, &bit) in seekers.iter_mut().zip(&bits) {
            if asked & bit == 0 {
                continue; // no prober needs this segment for this key (per-segment probes)
            }
            let Some(list) = sk.seek_postings(key)? else {
                continue;
            };
            stats.postings_visited += list.len() as u64;
            for d in list.iter() {
                if view.tombstones.contains(d) {
                    continue;
                }
                for &(a, segs) in probers {
                    if segs & bit != 0 && d != a && (d > a || d < older_than) {
                        cands.push(DocPair { a: d, b: a })?;
                    }
                }
            }
        }
        Ok(())
    };
    for rec in probes {
        let rec = rec?;
        if cur != Some(rec.key) {
            if let Some(k) = cur {
                join_key(k, &probers, &mut seekers, &mut cands, &mut stats)?;
            }
            cur = Some(rec.key);
            probers.clear();
        }
        probers.push((rec.doc, rec.segs));
    }
    if let Some(k) = cur {
        join_key(k, &probers, &mut seekers, &mut cands, &mut stats)?;
    }
    stats.blocks_read = seekers.iter().map(|s| s.blocks_read).sum();
    let old = matcher.segment_bits();
    stats.old_blocks_read = (seekers.iter().zip(&old))
        .filter(|(_, &b)| b != crate::query::NEW_SEGMENTS)
        .map(|(s, _)| s.blocks_read)
        .sum();
    stats.keys_filtered = seekers.iter().map(|s| s.keys_filtered).sum();
    drop(seekers);
    if let Some(ahead) = ahead.take() {
        stats.read_ahead_blocks = ahead.blocks;
        stats.read_ahead_join_bytes = ahead.queue.planned_bytes;
        stats.read_ahead_skipped_bytes += ahead.queue.skipped_bytes;
    }
    stats.candidate_records = cands.stats().records;
    let cands = cands.finish()?;
    stats.runs_spilled += cands.stats().runs_spilled;

    // 3. Verification, partner by partner, into the output sort.
    let mut found = ExternalSorter::<PairRecord>::new(half)?;
    // The verification's read-ahead: every segment's blocks, but those of a batch's own
    // segments (per-segment probes: the segments not old), written a moment ago.
    let skip: Vec<bool> = if per_segment {
        bits.iter()
            .map(|&b| b == crate::query::NEW_SEGMENTS)
            .collect()
    } else {
        vec![false; view.segments.len()]
    };
    let mut ahead = VerifyAhead::new(view, skip, crate::view::read_ahead_share());
    let mut chunk: Vec<DocPair> = Vec::with_capacity(VERIFY_CHUNK + 64);
    let mut verify_chunk = |chunk: &[DocPair], found: &mut ExternalSorter<PairRecord>| {
        let by_order = crate::query::compares_by_order(cfg.sample);
        let in_bounds = |d_len: usize, a: u32| {
            let (lo, hi) = cfg.sample.size_bounds(cfg.threshold, view.size(a) as usize);
            lo <= d_len && d_len <= hi
        };
        // Every partner's and prober's stored list once; the hashes of those compared by
        // hashes (a pair not within one format-3 segment) mapped in bulk, segment by segment
        // (query::DocLists): each POSTINGS block read once for all of them.
        let mut ids: Vec<u32> = Vec::with_capacity(chunk.len() * 2);
        for g in chunk.chunk_by(|x, y| x.a == y.a) {
            let d_len = view.size(g[0].a) as usize;
            ids.push(g[0].a);
            ids.extend(g.iter().filter(|c| in_bounds(d_len, c.b)).map(|c| c.b));
        }
        ids.sort_unstable();
        ids.dedup();
        // From a cold page cache: the chunk's FORWARD blocks asked at once, and below the
        // POSTINGS blocks its ranks are mapped in, as soon as the lists name them: exact
        // ranges in flight together, no read-around.
        let fb = crate::query::DocLists::forward_blocks(view, &ids);
        ahead.ask(view, segment::FORWARD, &fb);
        let mut lists = crate::query::DocLists::read(view, ids)?;
        // Each partner group with its first position in `chunk`.
        let groups: Vec<(usize, &[DocPair])> = chunk
            .chunk_by(|x, y| x.a == y.a)
            .scan(0usize, |at, g| {
                let here = *at;
                *at += g.len();
                Some((here, g))
            })
            .collect();
        let ranked = |si: usize| view.segments[si].seg.ranked_forward();
        // The pairs compared by hashes (not within one format-3 segment), as `(di, ai)`
        // positions in `lists`, by their position in `chunk`.
        let by_hashes = |lists: &crate::query::DocLists, c: &DocPair, sd: usize| {
            let ai = lists.find(c.b)?;
            (!(by_order && ranked(sd) && lists.segment(ai) == Some(sd))).then_some(ai)
        };
        // The pairs within the size bounds compared by hashes, as `(position in chunk, di,
        // ai, segment of d)`: found once, for the coarse bound and for the mapping.
        let mut hashed: Vec<(usize, usize, usize, usize)> = Vec::new();
        for &(at, g) in &groups {
            let Some(di) = lists.find(g[0].a) else {
                continue;
            };
            let Some(sd) = lists.segment(di) else {
                continue;
            };
            let d_len = lists.raw(di).len();
            for (k, c) in g.iter().enumerate() {
                if !in_bounds(d_len, c.b) {
                    continue;
                }
                if let Some(ai) = by_hashes(&lists, c, sd) {
                    hashed.push((at + k, di, ai, sd));
                }
            }
        }
        // With all / mod:M sampling (the decision grows with the intersection at fixed
        // sizes), a pair compared by hashes with a format-3 side is first bounded by its
        // coarse keys (`segment::coarse_overlap`: 16 bits a feature, from a 0.4 MB table per
        // segment, no rank mapped to its key); only the pairs the bound lets through get
        // their lists mapped. A pair ruled out is one the verification would reject.
        let coarse = matches!(cfg.sample, Sample::All | Sample::Mod(_));
        let mut ruled_out = vec![false; chunk.len()];
        if coarse {
            // The documents of such pairs; then, per segment, whether the bound pays
            // (`Segment::coarse_pays`: not for a few candidates, as an ingest's).
            let mut cross = vec![false; lists.len()];
            for &(_, di, ai, sd) in &hashed {
                if lists.segment(ai).is_some_and(|sa| ranked(sa) || ranked(sd)) {
                    cross[di] = true;
                    cross[ai] = true;
                }
            }
            let mut wanted = vec![0u64; view.segments.len()];
            for i in (0..lists.len()).filter(|&i| cross[i]) {
                if let Some(si) = lists.segment(i) {
                    wanted[si] += lists.raw(i).len() as u64;
                }
            }
            let pays: Vec<bool> = (view.segments.iter().zip(&wanted))
                .map(|(s, &w)| w == 0 || s.seg.coarse_pays(w))
                .collect();
            let need_c: Vec<bool> = (0..lists.len())
                .map(|i| cross[i] && lists.segment(i).is_some_and(|si| pays[si]))
                .collect();
            lists.map_coarse(view, |i| need_c[i])?;
            let lists = &lists;
            let outs: Vec<Vec<usize>> = groups
                .par_iter()
                .map(|&(at, g)| {
                    let mut out = Vec::new();
                    let Some(di) = lists.find(g[0].a) else {
                        return out;
                    };
                    let (Some(sd), Some(cd)) = (lists.segment(di), lists.coarse(di)) else {
                        return out;
                    };
                    for (k, c) in g.iter().enumerate() {
                        if !in_bounds(cd.len(), c.b) {
                            continue;
                        }
                        let Some(ai) = by_hashes(lists, c, sd) else {
                            continue;
                        };
                        let Some(ca) = lists.coarse(ai) else { continue };
                        let bound = segment::coarse_overlap(ca, cd);
                        if !cfg
                            .sample
                            .may_reach(cfg.threshold, ca.len(), cd.len(), bound)
                        {
                            out.push(at + k);
                        }
                    }
                    out
                })
                .collect();
            for k in outs.into_iter().flatten() {
                ruled_out[k] = true;
            }
        }
        let mut need = vec![false; lists.len()];
        for &(pos, di, ai, _) in &hashed {
            if !ruled_out[pos] {
                need[di] = true;
                need[ai] = true;
            }
        }
        let rb = lists.rank_blocks(view, |i| need[i])?;
        ahead.ask(view, segment::POSTINGS, &rb);
        lists.map_hashes(view, |i| need[i])?;
        let lists = &lists;
        let ruled_out = &ruled_out;
        let results: Vec<Result<(Vec<Pair>, u64, u64)>> = groups
            .par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |(xa, xd), &(at, group)| {
                    let d = group[0].a;
                    let mut out = Vec::new();
                    let (mut checked, mut ruled) = (0u64, 0u64);
                    let Some(di) = lists.find(d) else {
                        return Ok((out, checked, ruled));
                    };
                    let Some(sd) = lists.segment(di) else {
                        return Ok((out, checked, ruled));
                    };
                    let rd = lists.raw(di);
                    let by_ranks = view.segments[sd].seg.ranked_forward() && by_order;
                    let m = rd.len();
                    for (k, c) in group.iter().enumerate() {
                        let a = c.b;
                        if !in_bounds(m, a) {
                            continue;
                        }
                        checked += 1;
                        if ruled_out[at + k] {
                            ruled += 1;
                            continue;
                        }
                        // A prober the size estimate left out (its size unlike its list):
                        // read here, as list by list did.
                        let (sa, ra, ha) = match lists.find(a) {
                            Some(ai) => match lists.segment(ai) {
                                Some(sa) => (sa, lists.raw(ai), lists.hashes(ai)),
                                None => continue,
                            },
                            None => {
                                let Some(sa) = view.forward_raw_into(a, xa)? else {
                                    continue;
                                };
                                (sa, &xa[..], None)
                            }
                        };
                        let ov = if by_ranks && sa == sd {
                            cfg.sample.verify(ra, rd, cfg.threshold)
                        } else {
                            let ha = match ha {
                                Some(h) => h,
                                None => {
                                    let mut v = ra.to_vec();
                                    view.segments[sa].seg.ranks_to_keys(&mut v, 0)?;
                                    *xa = v;
                                    &xa[..]
                                }
                            };
                            let hd = match lists.hashes(di) {
                                Some(h) => h,
                                None => {
                                    if xd.is_empty() {
                                        xd.extend_from_slice(rd);
                                        view.segments[sd].seg.ranks_to_keys(xd, 0)?;
                                    }
                                    &xd[..]
                                }
                            };
                            cfg.sample.verify(ha, hd, cfg.threshold)
                        };
                        if let Some(ov) = ov {
                            let (x, y) = if a < d { (a, d) } else { (d, a) };
                            out.push(Pair {
                                a: x,
                                b: y,
                                m: Match::of(d, ov),
                            });
                        }
                    }
                    xd.clear();
                    Ok((out, checked, ruled))
                },
            )
            .collect();
        let (mut n, mut r_out) = (0u64, 0u64);
        for r in results {
            let (pairs, checked, ruled) = r?;
            n += checked;
            r_out += ruled;
            for p in &pairs {
                found.push(PairRecord::from_pair(p))?;
            }
        }
        Ok::<(u64, u64), Error>((n, r_out))
    };
    // Stored-list entries the chunk reads: partners, and the probers within their size
    // bounds, counted per candidate (an upper bound).
    let max_listed = verify_lists(sort.mem_bytes);
    let mut listed = 0u64;
    let mut unreleased = 0u64;
    // A candidate's probe hits: how many records of it the sorted stream holds (1 when the
    // sort dropped the repeats). A prober `a` of `n` features that probed `p = n - m + 1` keys
    // shares at most `hits + (n - p)` features with the partner (`Matcher::search`): when
    // even that cannot reach the threshold at the partner's size, the pair is not verified.
    let mut pending: Option<(DocPair, u64)> = None;
    let mut next = move |c: Option<DocPair>| -> Option<(DocPair, u64)> {
        match (pending, c) {
            (Some((p, h)), Some(c)) if p == c => {
                pending = Some((p, h + 1));
                None
            }
            (done, c) => {
                pending = c.map(|c| (c, 1));
                done
            }
        }
    };
    let may_reach = |c: &DocPair, hits: u64| {
        if !prune {
            return true;
        }
        let n = view.size(c.b) as usize;
        let m = cfg.sample.min_overlap(cfg.threshold, n).max(1);
        let unprobed = (m - 1) as u64;
        let d_len = view.size(c.a) as usize;
        cfg.sample
            .may_reach(cfg.threshold, n, d_len, hits + unprobed)
    };
    let cands = (cands.map(|c| c.map(Some))).chain(std::iter::once(Ok(None)));
    for c in cands {
        let Some((c, hits)) = next(c?) else {
            continue;
        };
        if !may_reach(&c, hits) {
            continue;
        }
        // Cut chunks at partner boundaries so each partner's list is read once.
        let new_partner = chunk.last().is_none_or(|l| l.a != c.a);
        if new_partner && (chunk.len() >= VERIFY_CHUNK || listed >= max_listed) {
            let (n, r) = verify_chunk(&chunk, &mut found)?;
            stats.candidates += n;
            stats.ruled_out_coarse += r;
            chunk.clear();
            // The mapped pages go back after as many entries as the largest chunk lists, not
            // after every chunk: a format-3 chunk maps ranks in (nearly) every POSTINGS block,
            // and small chunks (small `--mem`) would fault the same pages in again each time.
            unreleased += listed;
            if unreleased >= VERIFY_LISTS_MAX {
                release_all(view);
                unreleased = 0;
            }
            listed = 0;
        }
        let d_len = view.size(c.a) as usize;
        if new_partner {
            listed += d_len as u64;
        }
        let (lo, hi) = cfg
            .sample
            .size_bounds(cfg.threshold, view.size(c.b) as usize);
        if lo <= d_len && d_len <= hi {
            listed += view.size(c.b) as u64;
        }
        chunk.push(c);
    }
    let (n, r) = verify_chunk(&chunk, &mut found)?;
    stats.candidates += n;
    stats.ruled_out_coarse += r;
    stats.read_ahead_verify_bytes = ahead.queue.planned_bytes;
    stats.read_ahead_skipped_bytes += ahead.queue.skipped_bytes;
    drop(ahead);
    drop(chunk);
    release_all(view);
    let found = found.finish()?;
    stats.runs_spilled += found.stats().runs_spilled;

    // 4. Pairs in (a, b) order, block by block.
    let mut block: Vec<Pair> = Vec::with_capacity(EMIT_BLOCK);
    for r in found {
        block.push(r?.to_pair());
        if block.len() == EMIT_BLOCK {
            stats.count_block(block.len());
            emit(&block)?;
            block.clear();
        }
    }
    if !block.is_empty() {
        stats.count_block(block.len());
        emit(&block)?;
    }
    Ok(stats)
}

/// Hands every segment's mapped pages back to the kernel (they stay in the page cache): the
/// verification reads forward lists all over the old segments, and without this the process
/// would count every page it ever touched as resident.
fn release_all(view: &View) {
    for s in &view.segments {
        s.seg.release(0, s.seg.len_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{for_each_pair_block, word_pages_index};

    fn record_roundtrip(r: PairRecord) -> PairRecord {
        let mut buf = [0u8; PairRecord::SIZE];
        r.encode(&mut buf);
        PairRecord::decode(&buf)
    }

    /// An index of 3000 pages (dozens of POSTINGS blocks) and a batch of 40 after it: 2
    /// near copies of batch-1 pages, 38 of unseen words. Returns the first batch document.
    fn two_batches(dir: &std::path::Path) -> (crate::index::Index, u32) {
        let word = |d: u32, i: u32| {
            if i < 60 {
                format!("f{}w{i}", d % 20)
            } else {
                format!("own{d}x{i}")
            }
        };
        let mut ix = word_pages_index(dir, 3000, 120, word);
        let lo = ix.view().doc_ids();
        let docs2 = dir.join("docs2");
        std::fs::create_dir_all(&docs2).unwrap();
        for d in 0..40u32 {
            let text: Vec<String> = (0..120)
                .map(|i| {
                    if d < 2 {
                        word(d, i)
                    } else {
                        format!("new{d}y{i}")
                    }
                })
                .collect();
            let html = format!("<html><body><p>{}</p></body></html>", text.join(" "));
            std::fs::write(docs2.join(format!("n{d:02}.html")), html).unwrap();
        }
        let opts = crate::pipeline::IngestOptions {
            mem_bytes: 16 << 20,
            ..Default::default()
        };
        ix.ingest(vec![docs2], &opts, &mut |_| Ok(()), &|_| {})
            .unwrap();
        (ix, lo)
    }

    /// The join's read-ahead asks for exactly the old segments' posting blocks its seekers
    /// read for the same probe records, each once over several flushes; and the whole join
    /// (per-segment probes) asks for as many blocks as it reads in old segments.
    #[test]
    fn join_read_ahead_asks_the_blocks_the_seekers_read() {
        let tmp = tempfile::tempdir().unwrap();
        let (ix, lo) = two_batches(tmp.path());
        let view = ix.view();
        let sample = ix.options().sample().unwrap();
        let cfg = PairsConfig::new(sample, "0.5".parse().unwrap());
        let bits = cfg.matcher(view, lo).segment_bits();
        let old: Vec<usize> = (0..bits.len())
            .filter(|&i| bits[i] != crate::query::NEW_SEGMENTS)
            .collect();
        assert!(!old.is_empty() && old.len() < bits.len(), "{bits:?}");
        // Probe records: every feature of every batch document (present in old segments or
        // not), and some keys no document has; the segment bits vary.
        let mut recs = Vec::new();
        let mut x = Vec::new();
        for d in lo..view.doc_ids() {
            view.features_into(d, &mut x).unwrap();
            for (j, &key) in x.iter().enumerate() {
                let segs = match j % 3 {
                    0 => u32::MAX,
                    1 => bits[old[0]],
                    _ => crate::query::NEW_SEGMENTS,
                };
                recs.push(ProbeRecord { key, doc: d, segs });
            }
        }
        for d in 0..200u32 {
            view.features_into(d * 13, &mut x).unwrap();
            recs.extend(x.iter().map(|&key| ProbeRecord {
                key,
                doc: lo,
                segs: u32::MAX,
            }));
        }
        recs.extend((0..500u64).map(|k| ProbeRecord {
            key: k.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            doc: lo,
            segs: u32::MAX,
        }));
        // Asked in two flushes (the second half repeats keys of the first).
        let mut ahead = JoinAhead::new(view, &bits, 0.25).unwrap();
        let half = recs.len() / 2;
        ahead.note(&recs[..half]);
        let mut asked = ahead.new_blocks(view);
        ahead.note(&recs[half / 2..]);
        let more = ahead.new_blocks(view);
        assert!(more.iter().all(|b| !asked.contains(b)), "asked twice");
        asked.extend(more);
        asked.sort_unstable();
        // What the join's seekers read for the same records, in key order.
        recs.sort_unstable_by_key(|r| r.key);
        let mut read = Vec::new();
        for &si in &old {
            let seg = &view.segments[si].seg;
            let mut sk = seg.seeker(segment::POSTINGS);
            for r in recs.iter().filter(|r| r.segs & bits[si] != 0) {
                let before = sk.blocks_read;
                sk.seek_postings(r.key).unwrap();
                if sk.blocks_read > before {
                    read.push((si, seg.block_covering(segment::POSTINGS, r.key).unwrap()));
                }
            }
        }
        read.sort_unstable();
        assert!(read.len() > 10, "{} blocks", read.len());
        assert_eq!(asked, read);
        assert_eq!(ahead.blocks, 0, "new_blocks alone counts nothing");
        // The whole join: per-segment probes ask for what the old segments' seekers read.
        let sort = SortOptions::new(64 << 20, tmp.path().join("sort"));
        let s = join_pairs(view, &cfg, &sort, lo..view.doc_ids(), lo, |_| Ok(())).unwrap();
        assert!(s.old_blocks_read > 0, "{s:?}");
        assert_eq!(s.read_ahead_blocks, s.old_blocks_read, "{s:?}");
        assert!(s.read_ahead_join_bytes >= s.old_blocks_read * 64, "{s:?}");
        assert!(s.read_ahead_verify_bytes > 0, "{s:?}");
        assert_eq!(s.read_ahead_skipped_bytes, 0, "{s:?}");
        // A share of 0 asks for nothing.
        assert!(JoinAhead::new(view, &bits, 0.0).is_none());
    }

    /// The verification's read-ahead names exactly the FORWARD blocks holding the lists it
    /// reads, and the POSTINGS blocks holding the keys their ranks map to.
    #[test]
    fn verification_read_ahead_names_the_blocks_it_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let (ix, lo) = two_batches(tmp.path());
        let view = ix.view();
        let ids: Vec<u32> = (0..view.doc_ids())
            .filter(|d| d % 7 == 0 || *d >= lo)
            .collect();
        let fb = crate::query::DocLists::forward_blocks(view, &ids);
        // Each list's stored bytes lie in a block named; each block named holds a list.
        let mut want = Vec::new();
        for &d in &ids {
            for (si, s) in view.segments.iter().enumerate() {
                let Some(v) = s.seg.get(segment::FORWARD, d as u64).unwrap() else {
                    continue;
                };
                let at = s.seg.offset_in_file(v).unwrap();
                let bi = (0..s.seg.block_count(segment::FORWARD))
                    .find(|&bi| {
                        let (from, to) = s.seg.block_range(segment::FORWARD, bi).unwrap();
                        from <= at && at + v.len() as u64 <= to
                    })
                    .unwrap();
                want.push((si, bi));
            }
        }
        want.sort_unstable();
        want.dedup();
        assert!(want.len() > 3, "{want:?}");
        assert_eq!(fb, want);
        // Rank blocks: the POSTINGS blocks whose key ranges hold the mapped keys.
        let lists = crate::query::DocLists::read(view, ids.clone()).unwrap();
        let need = |i: usize| i.is_multiple_of(2);
        let rb = lists.rank_blocks(view, need).unwrap();
        let mut want = Vec::new();
        for i in (0..lists.len()).filter(|&i| need(i)) {
            let Some(si) = lists.segment(i) else { continue };
            let seg = &view.segments[si].seg;
            if !seg.ranked_forward() || seg.cached_key_count().is_some() {
                continue;
            }
            let mut keys = lists.raw(i).to_vec();
            seg.ranks_to_keys_by_blocks(&mut keys).unwrap();
            want.extend(
                keys.iter()
                    .map(|&k| (si, seg.block_covering(segment::POSTINGS, k).unwrap())),
            );
        }
        want.sort_unstable();
        want.dedup();
        assert!(want.len() > 3, "{want:?}");
        assert_eq!(rb, want);
    }

    #[test]
    fn pair_records_round_trip() {
        let r = PairRecord {
            a: 1,
            b: u32::MAX,
            doc: 7,
            inter: 1 << 40,
            denom: (1 << 41) + 3,
            containment: 1.0f64.to_bits(),
        };
        assert_eq!(record_roundtrip(r), r);
    }

    /// The join pipeline finds exactly the probe pipeline's pairs, with the same figures, for
    /// several thresholds and memory budgets small enough to spill every sort, and for a
    /// new-vs-old range as ingest uses it.
    #[test]
    fn join_equals_probe_pipeline() {
        let tmp = tempfile::tempdir().unwrap();
        // 90 pages in 15 families sharing most words, plus some shared boilerplate.
        let ix = word_pages_index(tmp.path(), 90, 120, |d, i| match i {
            _ if i % 40 == d % 40 => format!("own{d}x{i}"),
            _ if i < 20 => format!("boiler{i}"),
            _ => format!("f{}w{i}", d % 15),
        });
        let view = ix.view();
        let sample = ix.options().sample().unwrap();
        let tmpdir = tmp.path().join("sort");
        for t in ["0.3", "0.5", "0.9"] {
            let cfg = PairsConfig::new(sample, t.parse().unwrap());
            for (range, older) in [(0..view.doc_ids(), 0), (60..view.doc_ids(), 60)] {
                let mut want = Vec::new();
                for_each_pair_block(view, &cfg, range.clone(), older, |b| {
                    want.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                want.sort_unstable_by_key(|p| (p.a, p.b));
                assert!(
                    t == "0.9" || !want.is_empty(),
                    "t {t}: the corpus has pairs"
                );
                for mem in [16 << 10, 64 << 20] {
                    let sort = SortOptions::new(mem, &tmpdir);
                    let mut got = Vec::new();
                    let s = join_pairs(view, &cfg, &sort, range.clone(), older, |b| {
                        got.extend_from_slice(b);
                        Ok(())
                    })
                    .unwrap();
                    assert_eq!(got.len(), want.len(), "t {t} mem {mem} range {range:?}");
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!((g.a, g.b), (w.a, w.b));
                        // The counts as verified, and the resemblance recomputed from them
                        // bit for bit.
                        assert_eq!((g.m.inter, g.m.denom), (w.m.inter, w.m.denom));
                        assert_eq!(g.m.resemblance.to_bits(), w.m.resemblance.to_bits());
                        assert!(w.m.denom > 0 && w.m.inter <= w.m.denom);
                    }
                    assert_eq!(s.pairs, want.len() as u64);
                    if mem == 16 << 10 && t == "0.3" && older == 0 {
                        assert!(s.runs_spilled > 0, "a small budget spills: {s:?}");
                    }
                }
            }
        }
        // Every run file was removed.
        let left = std::fs::read_dir(&tmpdir).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, 0);
    }

    /// A second batch matched against the first: the old segment's key filters rule out the
    /// new pages' own shingles before any block is read, and the pairs are exactly those of
    /// the probe pipeline (which reads through `Segment::get`, filtered too) for every budget.
    #[test]
    fn key_filters_skip_blocks_and_keep_the_pairs() {
        let tmp = tempfile::tempdir().unwrap();
        // ~180k distinct shingles: dozens of POSTINGS blocks; 2 near copies, 38 unseen pages.
        let (ix, lo) = two_batches(tmp.path());
        let view = ix.view();
        assert!(view.segments.len() >= 2);
        assert!(view.segments.iter().all(|s| s.seg.has_key_filter()));
        let sample = ix.options().sample().unwrap();
        let tmpdir = tmp.path().join("sort");
        for t in ["0.5", "0.8"] {
            // One probe set for all segments: the join's key filters answer the old
            // segment's absent keys (per-segment probes never ask it for them; compared below).
            let cfg = PairsConfig {
                per_segment: false,
                ..PairsConfig::new(sample, t.parse().unwrap())
            };
            let range = lo..view.doc_ids();
            let mut want = Vec::new();
            for_each_pair_block(view, &cfg, range.clone(), lo, |b| {
                want.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            want.sort_unstable_by_key(|p| (p.a, p.b));
            assert!(!want.is_empty(), "the near copies pair with batch 1");
            for mem in [16 << 10, 64 << 20] {
                let sort = SortOptions::new(mem, &tmpdir);
                let mut got = Vec::new();
                let s = join_pairs(view, &cfg, &sort, range.clone(), lo, |b| {
                    got.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                let pairs =
                    |v: &[Pair]| v.iter().map(|p| (p.a, p.b, p.m.inter)).collect::<Vec<_>>();
                assert_eq!(pairs(&got), pairs(&want), "t {t} mem {mem}");
                // 38 pages' probes of unseen words: the old segment's filters rule most out,
                // and the blocks holding none of the true hits are never read.
                let blocks: u64 = view
                    .segments
                    .iter()
                    .filter_map(|s| s.seg.table_meta(segment::POSTINGS))
                    .map(|t| t.blocks as u64)
                    .sum();
                assert!(blocks > 30, "{blocks} blocks");
                assert!(s.keys_filtered > 100, "{s:?}");
                assert!(
                    s.blocks_read < blocks,
                    "{} of {blocks} blocks read",
                    s.blocks_read
                );
                // Per-segment probes: the same pairs, no more blocks, and the old segment is
                // asked only for keys it may hold.
                let per = PairsConfig {
                    per_segment: true,
                    ..cfg
                };
                let mut got = Vec::new();
                let ps = join_pairs(view, &per, &sort, range.clone(), lo, |b| {
                    got.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                assert_eq!(pairs(&got), pairs(&want), "per-segment t {t} mem {mem}");
                assert!(ps.blocks_read <= s.blocks_read, "{ps:?} {s:?}");
                assert!(ps.docs_no_old >= 38, "{ps:?}");
                // The planner sees the same: far fewer surviving lookups than probe keys x segments.
                let p = crate::pipeline::plan::plan(view, &cfg, range.clone(), lo, mem);
                assert!(
                    p.probe_keys > 0.0 && p.surviving < p.probe_keys * view.segments.len() as f64,
                    "{p:?}"
                );
                // Auto picks one of the two and finds the same pairs.
                let mut auto = Vec::new();
                let st = crate::pipeline::for_each_pair(
                    crate::pipeline::Matching::Auto,
                    view,
                    &cfg,
                    &sort,
                    range.clone(),
                    lo,
                    None,
                    |b| {
                        auto.extend_from_slice(b);
                        Ok(())
                    },
                )
                .unwrap();
                auto.sort_unstable_by_key(|p| (p.a, p.b));
                assert_eq!(pairs(&auto), pairs(&want));
                assert_eq!(st.matching, st.plan.as_ref().map(|p| p.choice));
            }
        }
    }
}
