//! The plain probe choice made on a format-3 document's stored ranks, so that only the chosen
//! ranks are mapped back to keys (the merge join's phase 1 over a whole index: every document
//! is a prober, and mapping every FORWARD rank of every segment cost the join most of its
//! format-3 overhead beyond the key budget; BENCHMARKS.md).
//!
//! **Why it is the same set.** [`Matcher::choose_probes`] without a commonality limit, an
//! adaptive sampling or an absent-first order keeps the `p = n - m + 1` features of `A` that
//! are lowest by `(weight, key)`, the weight being the view's summed df of a frequent key
//! ([`crate::view::View::probe_weight`], 0 for the others); every `(weight, key)` differs, so
//! the set is well defined whatever the selection's order of work. A format-3 segment stores
//! `A` as the ranks of its features among the segment's POSTINGS keys, and the rank map is
//! strictly increasing, so rank order is key order within the segment: the `p` lowest by
//! `(weight of the key at rank r, r)` are the ranks of the `p` lowest by `(weight, key)`. The
//! weight of a rank is that of the view's frequent key with that rank in the segment
//! ([`crate::segment::Segment::ranks_of_each`] over the sorted frequent keys), 0 when no
//! frequent key has it.

use std::sync::OnceLock;

use super::Matcher;
use crate::error::Result;
use crate::view::View;

/// Per segment of a view, the probe weights of its POSTINGS ranks: the ranks of the view's
/// frequent keys the segment holds, with their weights. Built for a segment on first use
/// (a batch's probers lie in few segments), segments of formats 1 and 2 never.
pub struct FrequentRanks<'v> {
    view: &'v View,
    /// The view's frequent keys, ascending, with their weights (empty: no frequent key).
    keys: Vec<(u64, u32)>,
    segs: Vec<OnceLock<RankWeights>>,
}

/// One segment's frequent ranks and their weights, with a directory for lookups by rank.
#[derive(Debug, Default)]
pub struct RankWeights {
    /// Ranks of the frequent keys this segment holds, ascending, and their weights.
    ranks: Vec<u64>,
    weights: Vec<u32>,
    /// `dir[j]`: the position in `ranks` of the first rank at or above `j << shift`
    /// (`dir.len() - 1` buckets, the last entry `ranks.len()`): about four buckets a frequent
    /// rank, so most lookups find an empty bucket in one load.
    dir: Vec<u32>,
    shift: u32,
}

impl RankWeights {
    /// `ranks` ascending (of a segment of `total` POSTINGS keys), `weights` alongside.
    fn new(ranks: Vec<u64>, weights: Vec<u32>, total: u64) -> RankWeights {
        let per = (total / (4 * ranks.len().max(1) as u64)).max(1);
        let shift = per.ilog2();
        let buckets = (total >> shift) as usize + 1;
        let mut dir = Vec::with_capacity(buckets + 1);
        let mut i = 0usize;
        for j in 0..buckets as u64 {
            while i < ranks.len() && ranks[i] < j << shift {
                i += 1;
            }
            dir.push(i as u32);
        }
        dir.push(ranks.len() as u32);
        RankWeights {
            ranks,
            weights,
            dir,
            shift,
        }
    }

    /// Whether no rank of the segment has a weight.
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// The probe weight of the key at rank `r` (0 when it is not frequent in the view).
    #[inline]
    pub fn weight(&self, r: u64) -> u32 {
        let j = ((r >> self.shift) as usize).min(self.dir.len() - 2);
        let (lo, hi) = (self.dir[j] as usize, self.dir[j + 1] as usize);
        for i in lo..hi {
            if self.ranks[i] == r {
                return self.weights[i];
            }
        }
        0
    }
}

impl<'v> FrequentRanks<'v> {
    /// Nothing computed yet: the frequent keys are ranked per segment on first use.
    pub fn new(view: &'v View) -> FrequentRanks<'v> {
        let mut keys: Vec<(u64, u32)> = view.frequent.to_map().into_iter().collect();
        keys.sort_unstable();
        FrequentRanks {
            view,
            keys,
            segs: (0..view.segments.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The rank weights of `view.segments[si]` (a format-3 segment), computed once (a
    /// damaged block is reported, not kept: the next call reads it again).
    pub fn segment(&self, si: usize) -> Result<&RankWeights> {
        if let Some(w) = self.segs[si].get() {
            return Ok(w);
        }
        let seg = &self.view.segments[si].seg;
        let hashes: Vec<u64> = self.keys.iter().map(|&(k, _)| k).collect();
        let (mut ranks, mut weights) = (Vec::new(), Vec::new());
        seg.ranks_of_each(&hashes, |i, r| {
            ranks.push(r);
            weights.push(self.keys[i].1);
        })?;
        let total = seg
            .table_meta(crate::segment::POSTINGS)
            .map_or(0, |t| t.entries);
        Ok(self.segs[si].get_or_init(|| RankWeights::new(ranks, weights, total)))
    }
}

impl<'v> Matcher<'v> {
    /// Whether [`Matcher::choose_probes`] makes the plain choice (no commonality limit, no
    /// adaptive sampling, no absent-first order), which [`Matcher::choose_probe_ranks`] can
    /// make on a format-3 document's ranks.
    pub fn plain_choice(&self) -> bool {
        self.max_df.is_none()
            && self.absent_in.is_empty()
            && !matches!(self.sample, crate::fingerprint::Sample::Adaptive(_))
    }

    /// [`Matcher::choose_probes`] (plain choice: [`Matcher::plain_choice`]) of a document
    /// stored in a format-3 segment as the ascending ranks `raw`, `weights` being that
    /// segment's ([`FrequentRanks::segment`]): appends to `out` the ranks of the probe keys
    /// `choose_probes` would choose from the document's features (see the module docs), in
    /// no particular order. False (nothing appended) when it would return false.
    pub fn choose_probe_ranks(
        &self,
        raw: &[u64],
        weights: &RankWeights,
        ranked: &mut Vec<(u32, u64)>,
        out: &mut Vec<u64>,
    ) -> bool {
        debug_assert!(self.plain_choice());
        let n = raw.len();
        if n == 0 {
            return false;
        }
        let need = self.sample.min_overlap(self.threshold, n).max(1);
        if need > n {
            return false;
        }
        let probes = n - need + 1;
        let first = &raw[..probes];
        // When the first p ranks weigh nothing, no other rank comes before them (the usual
        // case at a high threshold): the other ranks' weights are not looked up.
        if weights.is_empty() || probes == n || first.iter().all(|&r| weights.weight(r) == 0) {
            out.extend_from_slice(first);
            return true;
        }
        ranked.clear();
        ranked.extend(raw.iter().map(|&r| (weights.weight(r), r)));
        ranked.select_nth_unstable(probes - 1);
        out.extend(ranked[..probes].iter().map(|&(_, r)| r));
        true
    }
}
