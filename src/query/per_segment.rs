//! Per-segment probes of a nightly batch (issue 14: matching that reads only what it needs).
//!
//! The absent-first choice (`absent_first.rs`) picks one probe set per document for all
//! segments, so a document with relatives in one old segment probes present keys in every old
//! segment that shares a common shingle with it. Here each old segment gets its own probe set.
//!
//! **Why it is exact.** Let `A` have `n` features, `m = min_overlap(t, n)` and `p = n - m + 1`
//! (the matcher's module docs). Every document `B` of the index lives in one segment `S` whose
//! POSTINGS table lists `B` under each of `B`'s features (a segment is built from whole
//! documents; compaction merges whole segments), and `sim(A, B) >= t` implies
//! `|A ∩ B| >= m`, so `B` holds at least one key of **any** `p` features `P_S` of `A`: that
//! key's posting list **in `S`** holds `B`. The prefix filter's bound therefore holds segment
//! by segment, and `P_S` may differ from segment to segment. A key that `S`'s block range or
//! key filter rules out has no posting in `S` (the xor filter has no false negatives), so it
//! finds nothing there and needs no lookup: only `P_S ∩ present(S)` is looked up in `S`.
//! Choosing `P_S` as the first `p` keys in an order where the keys absent from `S` come first
//! makes that intersection empty whenever `A` has `p` keys absent from `S` (a page new to the
//! index, or one whose relatives live elsewhere). Segments are grouped when there are more
//! than 31 old ones (the record has 32 bits): a group's probe set is chosen against the union
//! of its members (a key is absent from the group when every member rules it out), which
//! looks up a superset of each member's `P_S ∩ present(S)`: still exact. Looking up more
//! keys than needed only adds candidates, and every candidate is verified exactly, so the
//! pairs are those of any other choice. A key-filter false positive counts a key as present:
//! it costs a lookup, never a pair.
//!
//! The segments that hold documents of the batch itself (at or above `older_than`) hold every
//! key of its documents; they get the plain rarest-first set (bit 0).

use super::{Matcher, Scratch};
use crate::error::Result;

/// Bit of the segments that are not old (the batch's own): probed with the plain choice.
pub const NEW_SEGMENTS: u32 = 1;
/// Old segment groups (bits 1..=31).
const GROUPS: usize = 31;
/// Fewest keys the filter walk asks an old group's filters about at once.
const WALK_CHUNK_MIN: usize = 8;

/// Per-thread buffers and counters of [`Matcher::choose_segment_probes`].
#[derive(Default)]
pub struct SegmentProbes {
    /// The last choice: `(key, segment bits)`, ascending by key, each key once.
    pub probes: Vec<(u64, u32)>,
    /// Walked keys with the old groups that may hold them.
    walked: Vec<(u64, u32)>,
    /// (weight, key) candidates of one selection.
    ranked: Vec<(u32, u64)>,
    /// Old groups that may hold each key of the walk's current chunk.
    chunk_bits: Vec<u32>,
    /// One segment's answers for the current chunk.
    hold: Vec<bool>,
    /// The current document's key weights (`View::probe_weight`), when computed.
    weights: Vec<u32>,
    /// (key, old segment group) lookups the chosen probes ask for.
    pub old_lookups: u64,
    /// Documents whose probes ask for no old lookup at all.
    pub docs_no_old: u64,
    /// (key, old segment) key-filter checks made to choose.
    pub filter_checks: u64,
    /// Documents chosen per segment (the others got one set for all segments).
    pub docs_per_segment: u64,
}

impl SegmentProbes {
    /// Takes the counters out (resetting them), leaving the buffers.
    pub fn take_counters(&mut self) -> SegmentProbes {
        SegmentProbes {
            old_lookups: std::mem::take(&mut self.old_lookups),
            docs_no_old: std::mem::take(&mut self.docs_no_old),
            filter_checks: std::mem::take(&mut self.filter_checks),
            docs_per_segment: std::mem::take(&mut self.docs_per_segment),
            ..Default::default()
        }
    }
}

impl<'v> Matcher<'v> {
    /// Whether [`Matcher::choose_segment_probes`] chooses per segment: absent-first against
    /// old segments, no commonality limit, no adaptive sampling (else one set for all).
    pub fn per_segment(&self) -> bool {
        !self.absent_in.is_empty()
            && self.max_df.is_none()
            && !matches!(self.sample, crate::fingerprint::Sample::Adaptive(_))
    }

    /// The bit of each of `view.segments` in a probe's segment set: [`NEW_SEGMENTS`] for the
    /// segments that are not old, `1 << (1 + min(j, 30))` for the j-th old one.
    pub fn segment_bits(&self) -> Vec<u32> {
        let mut bits = vec![NEW_SEGMENTS; self.view.segments.len()];
        for (j, &i) in self.absent_in.iter().enumerate() {
            bits[i] = 1 << (1 + j.min(GROUPS - 1));
        }
        bits
    }

    /// Chooses the probes of the sorted feature set `x` per segment into `sp.probes` (see the
    /// module docs): the plain rarest-first set for the segments that are not old, and for
    /// each old segment group the first `|x| - m + 1` keys absent from it, completed with its
    /// present keys in rarest-first order. Without [`Matcher::per_segment`], the one set of
    /// [`Matcher::choose_probes`] for every segment. Returns false when there is nothing to
    /// probe (as `choose_probes`).
    pub fn choose_segment_probes(
        &self,
        x: &[u64],
        scratch: &mut Scratch,
        sp: &mut SegmentProbes,
    ) -> Result<bool> {
        sp.probes.clear();
        let n = x.len();
        let need = if n == 0 {
            0
        } else {
            self.sample.min_overlap(self.threshold, n).max(1)
        };
        if !self.per_segment() || n == 0 || need > n || need == 1 {
            if !self.choose_probes(x, scratch)? {
                return Ok(false);
            }
            sp.probes.extend(scratch.probes().map(|k| (k, u32::MAX)));
            sp.probes.sort_unstable();
            return Ok(true);
        }
        let probes = n - need + 1;
        sp.docs_per_segment += 1;
        let w = |k: u64| self.view.probe_weight(k);
        // `x`'s weights, once per document (a FrequentKeys lookup each), when some choice
        // ranks by them; empty otherwise.
        sp.weights.clear();

        // Bit 0: the batch's own segments hold every key; the plain rarest-first choice.
        if self.absent_in.len() < self.view.segments.len() {
            if self.view.frequent.is_empty() {
                sp.probes
                    .extend(x.iter().take(probes).map(|&k| (k, NEW_SEGMENTS)));
            } else {
                sp.weights.clear();
                sp.weights.extend(x.iter().map(|&k| w(k)));
                sp.ranked.clear();
                sp.ranked
                    .extend(sp.weights.iter().zip(x).map(|(&wk, &k)| (wk, k)));
                sp.ranked.select_nth_unstable(probes - 1);
                (sp.probes).extend(sp.ranked[..probes].iter().map(|&(_, k)| (k, NEW_SEGMENTS)));
            }
        }

        // Old groups: walk the keys in hash order until every group has `probes` absent keys
        // (then none needs a lookup) or the keys run out.
        let segs = &self.view.segments;
        let groups = self.absent_in.len().min(GROUPS);
        let mut open: u32 = (1u32 << groups) - 1; // groups <= 31
        let mut absent = [0usize; GROUPS];
        let mut checks = 0u64;
        sp.walked.clear();
        // The walk goes a chunk of keys at a time: each open group's filters answer the whole
        // chunk at once (`Segment::postings_may_hold_many`, its cache misses overlapped), then
        // the keys are walked one by one on those answers exactly as a key-by-key walk would
        // (a group closed within the chunk ignores the rest of it). A chunk is as long as the
        // fewest keys any open group still needs before it can close (so no group's answers
        // are wasted), at least `WALK_CHUNK_MIN`.
        let mut pos = 0;
        while pos < n && open != 0 {
            let mut need = usize::MAX;
            let mut o = open;
            while o != 0 {
                let g = o.trailing_zeros() as usize;
                o &= o - 1;
                need = need.min(probes - absent[g]);
            }
            let keys = &x[pos..(pos + need.max(WALK_CHUNK_MIN)).min(n)];
            sp.chunk_bits.clear();
            sp.chunk_bits.resize(keys.len(), 0);
            for (j, &i) in self.absent_in.iter().enumerate() {
                let g = 1u32 << j.min(GROUPS - 1);
                if open & g == 0 {
                    continue;
                }
                checks += keys.len() as u64;
                segs[i].seg.postings_may_hold_many(keys, &mut sp.hold);
                for (b, &h) in sp.chunk_bits.iter_mut().zip(&sp.hold) {
                    if h {
                        *b |= g;
                    }
                }
            }
            for (t, &k) in keys.iter().enumerate() {
                let present = sp.chunk_bits[t] & open;
                let mut still = open & !present;
                while still != 0 {
                    let g = still.trailing_zeros() as usize;
                    still &= still - 1;
                    absent[g] += 1;
                    if absent[g] == probes {
                        open &= !(1 << g);
                    }
                }
                sp.walked.push((k, present));
                if open == 0 {
                    break;
                }
            }
            pos += keys.len();
        }
        sp.filter_checks += checks;
        if open == 0 {
            sp.docs_no_old += 1;
        }
        // Each group still open saw every key: it looks up its cheapest present keys, as many
        // as its absent ones fall short of `probes` (there are enough: absent + present = n).
        let mut bits = open;
        while bits != 0 {
            let g = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let want = probes - absent[g];
            if sp.weights.len() != n {
                sp.weights.clear();
                sp.weights.extend(x.iter().map(|&k| w(k)));
            }
            // The walk went through `x` in order: walked key t is x[t].
            sp.ranked.clear();
            sp.ranked.extend(
                (sp.walked.iter().zip(&sp.weights))
                    .filter(|&(&(_, p), _)| p & (1 << g) != 0)
                    .map(|(&(k, _), &wk)| (wk, k)),
            );
            debug_assert!(sp.ranked.len() >= want);
            if want < sp.ranked.len() {
                sp.ranked.select_nth_unstable(want - 1);
            }
            let bit = 1u32 << (1 + g);
            (sp.probes).extend(sp.ranked[..want].iter().map(|&(_, k)| (k, bit)));
            sp.old_lookups += want as u64;
        }
        // One entry per key with the union of its bits.
        sp.probes.sort_unstable();
        let mut out = 0;
        for i in 0..sp.probes.len() {
            if out > 0 && sp.probes[out - 1].0 == sp.probes[i].0 {
                sp.probes[out - 1].1 |= sp.probes[i].1;
            } else {
                sp.probes[out] = sp.probes[i];
                out += 1;
            }
        }
        sp.probes.truncate(out);
        Ok(true)
    }
}
