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
    /// Of `filter_checks`: (key, old segment) checks of the chunked walk past a document's
    /// pre-walked prefix ([`PreWalk`]), or of a document without one.
    pub filter_checks_fallback: u64,
    /// Keys the documents' walks took from their pre-walked prefix's answers.
    pub walk_keys_sorted: u64,
    /// Documents whose walk went past their pre-walked prefix (or had none).
    pub walk_fallback_docs: u64,
}

impl SegmentProbes {
    /// Takes the counters out (resetting them), leaving the buffers.
    pub fn take_counters(&mut self) -> SegmentProbes {
        SegmentProbes {
            old_lookups: std::mem::take(&mut self.old_lookups),
            docs_no_old: std::mem::take(&mut self.docs_no_old),
            filter_checks: std::mem::take(&mut self.filter_checks),
            docs_per_segment: std::mem::take(&mut self.docs_per_segment),
            filter_checks_fallback: std::mem::take(&mut self.filter_checks_fallback),
            walk_keys_sorted: std::mem::take(&mut self.walk_keys_sorted),
            walk_fallback_docs: std::mem::take(&mut self.walk_fallback_docs),
            ..Default::default()
        }
    }
}

/// One walked key: each group in `open` that does not hold it (`present`: the groups that
/// may) counts one more absent key, and a group with `probes` absent keys closes.
fn count_absent(open: &mut u32, absent: &mut [usize; GROUPS], present: u32, probes: usize) {
    let mut still = *open & !present;
    while still != 0 {
        let g = still.trailing_zeros() as usize;
        still &= still - 1;
        absent[g] += 1;
        if absent[g] == probes {
            *open &= !(1 << g);
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
        self.choose_segment_probes_with(x, &[], scratch, sp)
    }

    /// [`Matcher::choose_segment_probes`] with the old groups' answers for a prefix of `x`
    /// already known: `pre[t]` holds the group bits (bit `min(j, 30)` for the j-th old
    /// segment) of the groups that may hold `x[t]`, as [`Matcher::pre_walk`] computes them.
    /// The walk reads those answers for `x[..pre.len()]` and asks the filters (chunked) only
    /// past it: the same walk, so the same probes.
    pub fn choose_segment_probes_with(
        &self,
        x: &[u64],
        pre: &[u32],
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
                self.view.probe_weights(x, &mut sp.weights);
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
        // The pre-walked prefix (its answers for every group) comes first, as one chunk.
        let pre = &pre[..pre.len().min(n)];
        let mut pos = 0;
        while pos < n && open != 0 {
            let keys = if pos < pre.len() {
                sp.chunk_bits.clear();
                sp.chunk_bits.extend_from_slice(&pre[pos..]);
                &x[pos..pre.len()]
            } else {
                if pos == pre.len() {
                    sp.walk_fallback_docs += 1;
                }
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
                keys
            };
            let from_pre = pos < pre.len();
            let walked_before = sp.walked.len();
            for (t, &k) in keys.iter().enumerate() {
                let present = sp.chunk_bits[t] & open;
                count_absent(&mut open, &mut absent, present, probes);
                sp.walked.push((k, present));
                if open == 0 {
                    break;
                }
            }
            if from_pre {
                sp.walk_keys_sorted += (sp.walked.len() - walked_before) as u64;
            }
            pos += keys.len();
        }
        sp.filter_checks += checks;
        sp.filter_checks_fallback += checks;
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
                self.view.probe_weights(x, &mut sp.weights);
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

/// Environment variable: the keys past `p` a document's pre-walked prefix holds
/// ([`Matcher::walk_prefix`]; default [`walk_slack`]); `0` and up. For measurements.
pub const WALK_SLACK_ENV: &str = "NDD_WALK_SLACK";

/// Keys past `p = |x| - m + 1` the pre-pass answers for a document: the walk goes on past
/// `p` while some old group still finds keys it may hold (shared boilerplate, filter false
/// positives).
fn walk_slack(p: usize) -> usize {
    static ENV: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let env = *ENV.get_or_init(|| {
        std::env::var(WALK_SLACK_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
    });
    env.unwrap_or(p / 4 + 16)
}

/// The old groups' key-filter answers for the keys each document of a window walks, found by
/// [`Matcher::pre_walk`]: forward walks per old segment over the window's sorted keys.
#[derive(Default)]
pub struct PreWalk {
    /// Document `i`'s answers are `bits[offsets[i]..offsets[i] + filled[i]]` (room for its
    /// whole list from `offsets[i]`).
    offsets: Vec<usize>,
    filled: Vec<u32>,
    /// Per walked key: the bits of the old groups that may hold it (as the walk's chunks;
    /// past the prefix, only the groups still open there are asked, the others read 0).
    bits: Vec<u32>,
    /// Keys gathered (documents' walk prefixes and continuations, with repeats).
    pub keys: u64,
    /// Of `keys`: the continuations past the prefix of documents whose walk goes on.
    pub continued: u64,
    /// Distinct keys per run, summed.
    pub distinct: u64,
    /// (distinct key, old segment) key-filter checks of the sorted walks.
    pub checks: u64,
    /// Peak bytes the pre-pass held: (key, position, groups) entries, distinct keys and
    /// their bits, the answers.
    pub bytes: u64,
}

impl PreWalk {
    /// The group bits of the keys `x[..len]` of document `i` the pre-pass answered (empty
    /// when none).
    pub fn prefix(&self, i: usize) -> &[u32] {
        match (self.offsets.get(i), self.filled.get(i)) {
            (Some(&a), Some(&l)) => &self.bits[a..a + l as usize],
            _ => &[],
        }
    }
}

impl<'v> Matcher<'v> {
    /// The keys of a feature list of `n` keys that [`Matcher::pre_walk`] answers ahead: the
    /// first `min(n, p + slack)` when [`Matcher::choose_segment_probes`] walks old groups
    /// for it, else 0.
    pub fn walk_prefix(&self, n: usize) -> usize {
        if !self.per_segment() || n == 0 {
            return 0;
        }
        let need = self.sample.min_overlap(self.threshold, n).max(1);
        if need > n || need == 1 {
            return 0;
        }
        let p = n - need + 1;
        n.min(p + walk_slack(p))
    }

    /// The old groups still open after the walk of a list of `n` keys went through the
    /// answers `pre` (as [`Matcher::choose_segment_probes_with`] walks; `n` has a walk).
    fn open_after(&self, n: usize, pre: &[u32]) -> u32 {
        let need = self.sample.min_overlap(self.threshold, n).max(1);
        let probes = n - need + 1;
        let groups = self.absent_in.len().min(GROUPS);
        let mut open: u32 = (1u32 << groups) - 1;
        let mut absent = [0usize; GROUPS];
        for &b in pre {
            count_absent(&mut open, &mut absent, b, probes);
            if open == 0 {
                break;
            }
        }
        open
    }

    /// The old groups' answers for the keys each document of a window walks (`docs[i]`: its
    /// sorted feature list, `None`: no walk), asked in key order, in two rounds: first the
    /// walk prefix of every document ([`Matcher::walk_prefix`]) of every old segment; then,
    /// for the documents whose walk goes on past it (an old group still open: a relative
    /// there, or more present keys than the slack), the rest of the list of the groups still
    /// open. A round sorts (key, position, groups) entries by key (both cores), answers each
    /// distinct key once per old segment that some entry asks by
    /// [`Segment::postings_may_hold_sorted`] (the segment's block index and filters read
    /// once, forward), and scatters the answers back to the positions. The documents go in
    /// runs of at most `max_keys` keys (at least one document a run; 32 bytes a key while a
    /// run is sorted and walked: entry, distinct key, its groups and answers), beside 4 bytes
    /// per key of the lists for the answers. Same
    /// answers as the walk's chunks, so the same probes.
    ///
    /// [`Segment::postings_may_hold_sorted`]: crate::segment::Segment::postings_may_hold_sorted
    pub fn pre_walk(&self, docs: &[Option<&[u64]>], max_keys: usize) -> PreWalk {
        let mut w = PreWalk::default();
        w.offsets.reserve(docs.len() + 1);
        let mut total = 0usize;
        let mut spans: Vec<(usize, usize, usize, u32)> = Vec::new();
        let groups = self.absent_in.len().min(GROUPS);
        let all: u32 = (1u32 << groups) - 1;
        for (i, x) in docs.iter().enumerate() {
            w.offsets.push(total);
            let l = x.map_or(0, |x| self.walk_prefix(x.len()));
            w.filled.push(l as u32);
            if l > 0 {
                spans.push((i, 0, l, all));
                total += x.map_or(0, |x| x.len());
            }
        }
        if total == 0 || total > u32::MAX as usize {
            w.offsets.clear();
            w.filled.clear();
            return w;
        }
        w.bits = vec![0u32; total];
        // Every old segment's filters are read by the walks below: from a cold page cache,
        // the kernel reads them ahead at once (a hint; nothing after a segment's first window).
        for &i in &self.absent_in {
            self.view.segments[i].seg.prefetch_key_filters();
        }
        let mut run_bytes = 0;
        self.walk_spans(docs, &spans, max_keys, &mut w, &mut run_bytes);
        // Round 2: the walks that go on past their prefix, for the groups still open.
        spans.clear();
        for (i, x) in docs.iter().enumerate() {
            let (Some(x), l) = (x, w.filled[i] as usize) else {
                continue;
            };
            if l == 0 || l == x.len() {
                continue;
            }
            let open = self.open_after(x.len(), &w.bits[w.offsets[i]..w.offsets[i] + l]);
            if open != 0 {
                spans.push((i, l, x.len(), open));
                w.filled[i] = x.len() as u32;
                w.continued += (x.len() - l) as u64;
            }
        }
        self.walk_spans(docs, &spans, max_keys, &mut w, &mut run_bytes);
        w.bytes = (run_bytes
            + w.bits.capacity() * 4
            + w.offsets.capacity() * 8
            + w.filled.capacity() * 4) as u64;
        w
    }

    /// One round of [`Matcher::pre_walk`]: for each span `(doc, from, to, groups)`, the
    /// answers of `groups` for `docs[doc][from..to]` into `w.bits` (`w.offsets[doc] + t`
    /// for key `t`).
    fn walk_spans(
        &self,
        docs: &[Option<&[u64]>],
        spans: &[(usize, usize, usize, u32)],
        max_keys: usize,
        w: &mut PreWalk,
        run_bytes: &mut usize,
    ) {
        use rayon::prelude::*;
        let segs = &self.view.segments;
        let mut entries: Vec<(u64, u32, u32)> = Vec::new();
        let mut keys: Vec<u64> = Vec::new();
        let mut need: Vec<u32> = Vec::new();
        let mut kbits: Vec<u32> = Vec::new();
        let mut lo = 0;
        while lo < spans.len() {
            let mut len = spans[lo].2 - spans[lo].1;
            let mut hi = lo + 1;
            while hi < spans.len() && len + spans[hi].2 - spans[hi].1 <= max_keys {
                len += spans[hi].2 - spans[hi].1;
                hi += 1;
            }
            entries.clear();
            entries.reserve_exact(len);
            for &(i, from, to, groups) in &spans[lo..hi] {
                let Some(x) = docs[i] else { continue };
                let at = w.offsets[i];
                let keys = x[from..to].iter().enumerate();
                entries.extend(keys.map(|(t, &k)| (k, (at + from + t) as u32, groups)));
            }
            lo = hi;
            if entries.is_empty() {
                continue;
            }
            entries.par_sort_unstable_by_key(|e| e.0);
            keys.clear();
            need.clear();
            keys.reserve_exact(entries.len());
            need.reserve_exact(entries.len());
            for &(k, _, g) in &entries {
                if keys.last() == Some(&k) {
                    *need.last_mut().unwrap_or(&mut 0) |= g;
                } else {
                    keys.push(k);
                    need.push(g);
                }
            }
            kbits.clear();
            kbits.resize(keys.len(), 0);
            let chunk = (keys.len())
                .div_ceil(4 * rayon::current_num_threads())
                .max(4096);
            let checks: u64 = (kbits.par_chunks_mut(chunk))
                .zip(keys.par_chunks(chunk))
                .zip(need.par_chunks(chunk))
                .map_init(
                    || (Vec::new(), Vec::new(), Vec::new()),
                    |(hold, sub, at), ((b, k), nd)| {
                        let mut checks = 0u64;
                        for (j, &i) in self.absent_in.iter().enumerate() {
                            let g = 1u32 << j.min(GROUPS - 1);
                            if nd.iter().all(|&m| m & g != 0) {
                                segs[i].seg.postings_may_hold_sorted(k, hold);
                                checks += k.len() as u64;
                                for (bb, &h) in b.iter_mut().zip(hold.iter()) {
                                    if h {
                                        *bb |= g;
                                    }
                                }
                                continue;
                            }
                            sub.clear();
                            at.clear();
                            for (t, (&key, &m)) in k.iter().zip(nd).enumerate() {
                                if m & g != 0 {
                                    sub.push(key);
                                    at.push(t as u32);
                                }
                            }
                            if sub.is_empty() {
                                continue;
                            }
                            segs[i].seg.postings_may_hold_sorted(sub, hold);
                            checks += sub.len() as u64;
                            for (&t, &h) in at.iter().zip(hold.iter()) {
                                if h {
                                    b[t as usize] |= g;
                                }
                            }
                        }
                        checks
                    },
                )
                .sum();
            let mut d = 0usize;
            for (e, &(k, pos, _)) in entries.iter().enumerate() {
                if e > 0 && entries[e - 1].0 != k {
                    d += 1;
                }
                w.bits[pos as usize] = kbits[d];
            }
            w.keys += entries.len() as u64;
            w.distinct += keys.len() as u64;
            w.checks += checks;
            *run_bytes = (*run_bytes).max(
                entries.capacity() * std::mem::size_of::<(u64, u32, u32)>()
                    + keys.capacity() * 8
                    + need.capacity() * 4
                    + kbits.capacity() * 4
                    + chunk.min(keys.len()) * 13 * rayon::current_num_threads(), // hold, sub, at
            );
        }
    }
}
