//! The near-duplicate search shared by `query`, `pairs` and ingest: a prefix filter over the
//! posting lists, then exact verification against the forward lists.
//!
//! Why it is exact: if `sim(A, B) >= t` then `|A ∩ B| >= m = sample.min_overlap(t, |A|)`, so
//! `B` contains at least one of ANY `|A| - m + 1` features of `A`. Probing the postings of that
//! many features of `A` therefore finds every similar `B`; which features we pick only changes
//! the cost, so we pick the rarest (frequent keys, by document frequency, last). Each candidate
//! is then compared exactly, so nothing dissimilar is reported.

use crate::error::Result;
use crate::fingerprint::{Overlap, Sample};
use crate::threshold::Threshold;
use crate::view::View;

use super::verify::{verify_candidate, Own, VerifyCounts};

/// One verified near-duplicate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Match {
    pub doc: u32,
    /// Shared features: the estimator's intersection count ([`Overlap::inter`]).
    pub inter: u64,
    /// The estimator's denominator ([`Overlap::denom`]): `resemblance` is `inter as f64 /
    /// denom as f64`, and the stored pairs keep these two integers as the verification
    /// counted them (format-spec/rocksdb.md, "`pairs`: stored pairs").
    pub denom: u64,
    /// Estimated (with sampling) or exact (with `--sample all`) resemblance.
    pub resemblance: f64,
    /// Shared features over the probing document's features.
    pub containment: f64,
}

impl Match {
    /// The match of partner `doc` from its verified comparison.
    #[inline]
    pub fn of(doc: u32, ov: Overlap) -> Match {
        Match {
            doc,
            inter: ov.inter,
            denom: ov.denom,
            resemblance: ov.resemblance,
            containment: ov.containment,
        }
    }
}

/// Per-thread buffers, reused across searches so the hot loop does not allocate.
pub struct Scratch {
    /// Per document id: how many probe keys' posting lists held it in the current search
    /// (0 = not a candidate yet; saturating). Reset for every touched document at its end.
    hits: Vec<u16>,
    touched: Vec<u32>,
    order: Vec<(u32, u64)>,
    /// The probe keys of `order`, ascending: looked up together, segment by segment.
    keys: Vec<u64>,
    other: Vec<u64>,
    /// Posting entries visited by the last searches (a cost measure for stats and benches).
    pub postings_visited: u64,
    /// (probe key, segment) lookups made by the last searches.
    pub segment_lookups: u64,
    /// Of those, the ones that found a posting list (a block read and decoded).
    pub lists_found: u64,
    /// Candidates verified by the last searches.
    pub candidates: u64,
    /// Of those, the ones compared by their ranks in the prober's own format-3 segment
    /// (`verify.rs`), with no rank turned back into a key.
    pub by_ranks: u64,
    /// Candidates within the length bounds that the probe-hit bound ruled out without reading
    /// their features (see [`Matcher::search`]).
    pub pruned: u64,
    /// Probes the commonality limit (`max_df`) left out: per searched document, how many of
    /// the `|A| - m + 1` probes could not be filled with keys under the limit.
    pub probes_cut: u64,
    /// Over-limit keys passed over while choosing probes.
    pub keys_cut: u64,
    /// Posting entries the unfilled probes would have visited (the rarest over-limit keys).
    pub postings_skipped: u64,
    /// Searched documents whose probe set the limit left short.
    pub docs_cut: u64,
    /// Absent-first choice only ([`Matcher::with_absent_first`]; see `absent_first.rs`):
    /// (weight, 1 if an old segment may hold the key else 0, key) of the keys ranked.
    ranked: Vec<(u32, u32, u64)>,
    /// Plain choice: the (weight, key) of the keys with a nonzero weight met while choosing.
    heavy: Vec<(u32, u64)>,
    /// Whether `order` holds each key's probe weight (the plain choice with a frequent-key
    /// table), so [`Scratch::last_probe`] needs no lookup.
    weighted: bool,
    /// Absent-first: chosen probe keys that no old segment may hold (they read no old block).
    pub probes_absent: u64,
    /// Absent-first: (key, old segment) key-filter checks made to rank the keys.
    pub filter_checks: u64,
    /// Absent-first: documents all of whose probes are absent from the old segments.
    pub docs_absent: u64,
}

impl Scratch {
    /// The probe keys the last [`Matcher::choose_probes`] chose.
    pub fn probes(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.order.iter().map(|&(_, k)| k)
    }

    /// The last of the probe keys [`Matcher::choose_probes`] chose in the order it chose them
    /// by, `(probe weight, key)`, when that order is the plain rarest-first one: the probe
    /// set is then every key of the document up to this one in that order, the same order
    /// for every document (`pipeline::prefix`). Only meaningful after a plain choice (no
    /// commonality limit, absent-first or adaptive sampling); `view` gives the weights.
    pub fn last_probe(&self, view: &View) -> Option<(u32, u64)> {
        if self.weighted {
            return self.order.iter().copied().max();
        }
        self.order
            .iter()
            .map(|&(_, k)| (view.probe_weight(k), k))
            .max()
    }

    /// Takes the work counters out of `s` (resetting them) as a buffer-less `Scratch`.
    pub fn counters_only(s: &mut Scratch) -> Scratch {
        let out = Scratch {
            hits: Vec::new(),
            touched: Vec::new(),
            order: Vec::new(),
            keys: Vec::new(),
            other: Vec::new(),
            postings_visited: s.postings_visited,
            segment_lookups: s.segment_lookups,
            lists_found: s.lists_found,
            candidates: s.candidates,
            by_ranks: s.by_ranks,
            pruned: s.pruned,
            probes_cut: s.probes_cut,
            keys_cut: s.keys_cut,
            postings_skipped: s.postings_skipped,
            docs_cut: s.docs_cut,
            ranked: Vec::new(),
            heavy: Vec::new(),
            weighted: false,
            probes_absent: s.probes_absent,
            filter_checks: s.filter_checks,
            docs_absent: s.docs_absent,
        };
        s.probes_absent = 0;
        s.filter_checks = 0;
        s.docs_absent = 0;
        s.postings_visited = 0;
        s.segment_lookups = 0;
        s.lists_found = 0;
        s.candidates = 0;
        s.by_ranks = 0;
        s.pruned = 0;
        s.probes_cut = 0;
        s.keys_cut = 0;
        s.postings_skipped = 0;
        s.docs_cut = 0;
        out
    }

    pub fn new(doc_ids: u32) -> Self {
        Scratch {
            hits: vec![0u16; doc_ids as usize],
            touched: Vec::new(),
            order: Vec::new(),
            keys: Vec::new(),
            other: Vec::new(),
            postings_visited: 0,
            segment_lookups: 0,
            lists_found: 0,
            candidates: 0,
            by_ranks: 0,
            pruned: 0,
            probes_cut: 0,
            keys_cut: 0,
            postings_skipped: 0,
            docs_cut: 0,
            ranked: Vec::new(),
            heavy: Vec::new(),
            weighted: false,
            probes_absent: 0,
            filter_checks: 0,
            docs_absent: 0,
        }
    }
}

/// Searches one view for documents similar to a feature set.
pub struct Matcher<'v> {
    pub view: &'v View,
    pub sample: Sample,
    pub threshold: Threshold,
    /// Commonality limit: keys in more than this many documents (posting lengths summed over
    /// segments) are never probed. They still count in the verification.
    pub max_df: Option<u32>,
    /// Indexes into `view.segments` of the "old" segments whose key filters order the probe
    /// keys absent-first ([`Matcher::with_absent_first`]); empty: the plain rarest-first order.
    pub absent_in: Vec<usize>,
    /// Whether the absent-first choice gives up for the plain one when the first
    /// [`ABSENT_TRIAL`] rare keys are mostly present ([`Matcher::with_absent_first_for_queries`]).
    pub absent_give_up: bool,
}

/// Rare keys an absent-first choice that may give up ([`Matcher::absent_give_up`]) checks
/// before it decides: if fewer than half of them are absent, the page is a (near-)copy of
/// indexed pages, and checking its every key against every segment would cost more than the
/// plain choice's reads.
pub const ABSENT_TRIAL: usize = 16;

impl<'v> Matcher<'v> {
    pub fn new(view: &'v View, sample: Sample, threshold: Threshold) -> Self {
        Matcher {
            view,
            sample,
            threshold,
            max_df: None,
            absent_in: Vec::new(),
            absent_give_up: false,
        }
    }

    /// The same matcher with a commonality limit (`None`: no limit).
    pub fn with_max_df(mut self, max_df: Option<u32>) -> Self {
        self.max_df = max_df;
        self
    }

    /// The same matcher choosing probes **absent-first** against the segments holding only
    /// documents below `older_than` (a batch's old segments; none when it is 0): keys no such
    /// segment may hold (by block range and key filter) come first, so a document new to the
    /// index reads no old posting block at all (`absent_first.rs`). Exact for any choice (the
    /// module docs); with a commonality limit or adaptive sampling the old order stays.
    pub fn with_absent_first(mut self, older_than: u32) -> Self {
        self.absent_in = (self.view.segments.iter().enumerate())
            .filter(|(_, s)| older_than > 0 && s.entry.doc_hi <= older_than)
            .map(|(i, _)| i)
            .collect();
        self
    }

    /// The same matcher choosing a single query's probes absent-first against every segment,
    /// the smallest asked first (a copy of a page added lately is found present there at
    /// once), and giving the choice up for the plain one when the first keys are mostly
    /// present ([`ABSENT_TRIAL`]): a page new to the index then reads no posting block, and
    /// one the index holds costs a few filter checks more than the plain choice. Only where
    /// some segment's key filters are loaded (a server's, after its warm-up): in a one-shot
    /// `query` each of those filter checks would be a read from the disk, so it keeps the
    /// plain choice.
    pub fn with_absent_first_for_queries(self) -> Self {
        let ids = self.view.doc_ids();
        let mut m = self.with_absent_first(ids);
        let segs = &m.view.segments;
        if !segs.iter().any(|s| s.seg.key_filters_loaded()) {
            m.absent_in.clear();
        }
        m.absent_in.sort_by_key(|&i| (segs[i].seg.len_bytes(), i));
        m.absent_give_up = true;
        m
    }

    /// Document frequency of `key` for the commonality limit: the sum of its posting lengths
    /// over the live segments (deleted documents included: the limit is about how much a probe
    /// would read).
    pub fn df(&self, key: u64) -> Result<u64> {
        let mut df = 0u64;
        for s in &self.view.segments {
            if let Some(list) = s.seg.get_postings(crate::segment::POSTINGS, key)? {
                df += list.len() as u64;
            }
        }
        Ok(df)
    }

    /// Fills `order` with up to `probes` keys of `x` under the commonality limit, rarest
    /// first, and counts what the limit cut.
    fn choose_under_limit(
        &self,
        x: &[u64],
        probes: usize,
        limit: u32,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let limit = limit as u64;
        // The FREQUENT tables give, per key, the df summed over the segments where it exceeds
        // FREQUENT_DF; elsewhere it has at most FREQUENT_DF postings per segment. So
        // `w <= df <= w + FREQUENT_DF * segments`: only keys between the bounds need a lookup.
        let slack = crate::view::FREQUENT_DF as u64 * self.view.segments.len() as u64;
        let mut all: Vec<(u32, u64)> = x.iter().map(|&k| (self.view.probe_weight(k), k)).collect();
        all.sort_unstable();
        scratch.order.clear();
        // df of the over-limit keys in the order they would have been probed.
        let mut over: Vec<u64> = Vec::new();
        for &(w, k) in &all {
            if scratch.order.len() == probes {
                break;
            }
            let w = w as u64;
            let df = if w > limit {
                w // a lower bound is enough to rule it out
            } else if w + slack <= limit {
                0 // surely under
            } else {
                self.df(k)?
            };
            if df > limit {
                scratch.keys_cut += 1;
                over.push(df);
                continue;
            }
            scratch.order.push((w as u32, k));
        }
        if scratch.order.len() < probes {
            let missing = probes - scratch.order.len();
            scratch.probes_cut += missing as u64;
            // What the unfilled probes would have read: the rarest over-limit keys.
            over.sort_unstable();
            scratch.postings_skipped += over.iter().take(missing).sum::<u64>();
            scratch.docs_cut += 1;
        }
        Ok(())
    }

    /// The plain choice: the first `probes` keys of `x` in `(probe weight, key)` order (keys
    /// distinct, so the set is unique), into `scratch.order` with their weights. Every key of
    /// weight 0 comes before every other, and `x` is sorted: so the keys are looked up in
    /// `x`'s order until `probes` of weight 0 are found (most keys are not frequent: the rest
    /// of `x` is never looked up); only when there are fewer are the heavier keys met on the
    /// way ranked to fill the set. The same set as ranking every key and selecting.
    fn choose_plain(&self, x: &[u64], probes: usize, scratch: &mut Scratch) {
        scratch.heavy.clear();
        scratch.weighted = true;
        for &k in x {
            let w = self.view.probe_weight(k);
            if w == 0 {
                scratch.order.push((0, k));
                if scratch.order.len() == probes {
                    return;
                }
            } else {
                scratch.heavy.push((w, k));
            }
        }
        let missing = probes - scratch.order.len();
        // x has at least `probes` keys, so `heavy` holds at least `missing`.
        let heavy = &mut scratch.heavy;
        if missing < heavy.len() {
            heavy.select_nth_unstable(missing - 1);
        }
        scratch.order.extend_from_slice(&heavy[..missing]);
    }

    /// Chooses the probe keys of the sorted feature set `x` into `scratch` (read them with
    /// [`Scratch::probes`]): `|x| - m + 1` of its features, rarest first, under the commonality
    /// limit when there is one. Returns false when no document can reach the threshold with `x`
    /// (empty `x`, or fewer features than the overlap needs), so there is nothing to probe.
    pub fn choose_probes(&self, x: &[u64], scratch: &mut Scratch) -> Result<bool> {
        let n = x.len();
        scratch.order.clear();
        scratch.weighted = false;
        if n == 0 {
            return Ok(false);
        }
        // A zero threshold would make every document similar to every other; callers reject it.
        let need = self.sample.min_overlap(self.threshold, n).max(1);
        if need > n {
            return Ok(false); // nothing can share enough (e.g. minhash with fewer values than K)
        }
        let probes = n - need + 1;
        if let crate::fingerprint::Sample::Adaptive(g) = self.sample {
            // The comparison modulus depends on the candidate: probe for each possible one
            // (src/fingerprint/adaptive.rs). The commonality limit does not apply.
            let w = |k| self.view.probe_weight(k);
            scratch
                .order
                .extend(g.probes(x, self.threshold, w).into_iter().map(|k| (0, k)));
        } else if let Some(limit) = self.max_df {
            self.choose_under_limit(x, probes, limit, scratch)?;
        } else if !self.absent_in.is_empty() && probes < n {
            if !self.choose_absent_first(x, probes, scratch) {
                self.choose_rarest(x, probes, scratch);
            }
        } else {
            self.choose_rarest(x, probes, scratch);
        }
        Ok(true)
    }

    /// The plain choice: `probes` keys of `x`, rarest first.
    fn choose_rarest(&self, x: &[u64], probes: usize, scratch: &mut Scratch) {
        if self.view.frequent.is_empty() || probes == x.len() {
            scratch.order.extend(x.iter().take(probes).map(|&k| (0, k)));
        } else {
            self.choose_plain(x, probes, scratch);
        }
    }

    /// Appends to `out` every live document `d` with `accept(d)` whose similarity to the sorted
    /// feature set `x` reaches the threshold.
    pub fn search(
        &self,
        x: &[u64],
        accept: impl Fn(u32) -> bool,
        scratch: &mut Scratch,
        out: &mut Vec<Match>,
    ) -> Result<()> {
        self.search_own(x, None, accept, scratch, out)
    }

    /// [`Matcher::search`] for a probing document stored in the view, given its own stored
    /// list (`own`, from `View::features_and_raw_into`): candidates of its own format-3
    /// segment are verified by their ranks (`verify.rs`). The same matches as `search`.
    pub fn search_own(
        &self,
        x: &[u64],
        own: Option<Own<'_>>,
        accept: impl Fn(u32) -> bool,
        scratch: &mut Scratch,
        out: &mut Vec<Match>,
    ) -> Result<()> {
        if !self.prefilter(x, accept, scratch)? {
            return Ok(());
        }

        // Verify each remaining candidate exactly (by ranks where it can: verify.rs).
        let mut counts = VerifyCounts::default();
        for i in 0..scratch.touched.len() {
            let d = scratch.touched[i];
            scratch.candidates += 1;
            let (s, t) = (self.sample, self.threshold);
            let ov = verify_candidate(self.view, s, t, x, own, d, &mut scratch.other, &mut counts)?;
            out.extend(ov.map(|ov| Match::of(d, ov)));
        }
        scratch.by_ranks += counts.by_ranks;
        scratch.touched.clear();
        Ok(())
    }

    /// The prefix filter of [`Matcher::search`] without the verification: replaces `out` with
    /// the live documents `d` with `accept(d)` that may reach the threshold with the sorted
    /// feature set `x` (within the length bounds, enough probe hits), each once, for the
    /// caller to verify exactly (`pipeline::pairs` verifies a block's candidates together, so
    /// their lists are mapped in bulk). Counts as `search` does, except `candidates`.
    pub fn candidates_into(
        &self,
        x: &[u64],
        accept: impl Fn(u32) -> bool,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        out.clear();
        if self.prefilter(x, accept, scratch)? {
            out.append(&mut scratch.touched);
        }
        Ok(())
    }

    /// Probes and filters: leaves the candidates of `x` in `scratch.touched` (false, and none
    /// left, when there is nothing to probe).
    fn prefilter(
        &self,
        x: &[u64],
        accept: impl Fn(u32) -> bool,
        scratch: &mut Scratch,
    ) -> Result<bool> {
        if !self.choose_probes(x, scratch)? {
            scratch.touched.clear();
            return Ok(false);
        }
        let n = x.len();

        // Union of their posting lists, counting for each document how many of the probes
        // it holds. The keys are looked up together, segment by segment, in ascending order
        // (`View::for_each_posting_many_counted`: the lookups' cache misses overlap); the
        // counts do not depend on the order.
        let Scratch {
            hits,
            touched,
            order,
            keys,
            ..
        } = scratch;
        if hits.len() < self.view.doc_ids() as usize {
            hits.resize(self.view.doc_ids() as usize, 0);
        }
        touched.clear();
        keys.clear();
        keys.extend(order.iter().map(|&(_, k)| k));
        keys.sort_unstable();
        let mut visited = 0u64;
        let walked = self.view.for_each_posting_many_counted(keys, |d| {
            visited += 1;
            let h = &mut hits[d as usize];
            if *h == 0 {
                if !accept(d) {
                    return;
                }
                touched.push(d);
            }
            *h = h.saturating_add(1);
        });
        scratch.postings_visited += visited;
        if let Ok(lists) = &walked {
            scratch.lists_found += lists;
        }
        scratch.segment_lookups += (order.len() * self.view.segments.len()) as u64;

        // Keep the candidates whose sizes and probe hits allow the threshold, resetting every
        // count (also after an error: the scratch is reused): a candidate B holding h of the
        // probed keys shares at most h + (features of x not probed) with x, and `may_reach`
        // asks whether even that much would reach the threshold at B's size. No feature list
        // is read for that, except in a view for a few lookups (`View::load_for_lookups`),
        // which reads the sizes from the FORWARD lists: there every touched document's
        // FORWARD block is asked for together first. Where segments are mapped for random
        // access (`View::reads_ahead`: a server), the kept candidates' blocks, which the
        // verification reads next, are asked for together after the pruning: the pruned ones'
        // blocks are never read, so asking for them would cost a disk read each from a cold
        // page cache, and a system call on every later query that touches them.
        let unprobed = n.saturating_sub(scratch.order.len()) as u64;
        let (lo, hi) = self.sample.size_bounds(self.threshold, n);
        let sizes_read = self.view.for_lookups();
        if sizes_read && scratch.touched.len() > 1 {
            self.view.read_forward_ahead(&scratch.touched);
        }
        let mut unread = None;
        let mut kept = 0;
        for i in 0..scratch.touched.len() {
            let d = scratch.touched[i];
            let h = std::mem::take(&mut scratch.hits[d as usize]);
            let m = match self.view.doc_size(d) {
                Ok(m) => m as usize,
                Err(e) => {
                    unread.get_or_insert(e);
                    continue;
                }
            };
            if m < lo || m > hi {
                continue;
            }
            if !self
                .sample
                .may_reach(self.threshold, n, m, h as u64 + unprobed)
            {
                scratch.pruned += 1;
                continue;
            }
            scratch.touched[kept] = d;
            kept += 1;
        }
        scratch.touched.truncate(kept);
        if !sizes_read && kept > 1 && self.view.reads_ahead() {
            self.view.read_forward_ahead(&scratch.touched);
        }
        if let Some(e) = walked.err().or(unread) {
            scratch.touched.clear();
            return Err(e);
        }
        // Verified, and so reported, in id order: the matches' order does not depend on the
        // order the segments and keys were looked up in.
        scratch.touched.sort_unstable();
        Ok(true)
    }
}

#[path = "absent_first.rs"]
mod absent_first;

#[path = "per_segment.rs"]
pub(super) mod per_segment;

#[cfg(test)]
#[path = "matcher_tests.rs"]
mod tests;
