//! The absent-first probe choice of a nightly batch (issue 14: matching that reads only what
//! it needs).
//!
//! Any `|A| - m + 1` features of `A` find every similar document (the matcher's module docs),
//! so a batch document may take the ones that cost least. A key that no old segment may hold
//! (its block range or its block's key filter rules it out, in memory) costs no old posting
//! block; a key an old segment holds costs a block read there. So the keys are ranked by
//! `(weight, some old segment may hold it, key)`: rare keys (weight 0: frequent nowhere)
//! first, among them the absent ones, then the present ones in hash order. Hash order, not
//! "fewest old segments first", for the present ones: the whole batch's present probes then
//! fall in the low end of the key space and share its posting blocks; ranking them by segment
//! count spread them over every block (measured: 2x the blocks of the plain choice at 250k
//! documents, BENCHMARKS.md). A page new to the index has plenty of own shingles absent from every old segment and
//! reads no old block at all; only (near-)copies of old pages read blocks, so the blocks a batch
//! reads are bounded by the batch, not by the index. The batch's own segment holds every key of
//! its documents (their own postings): within-batch pairs are found there as before.
//!
//! Cost: the rare keys are checked in hash order (the plain order among them) only until
//! enough absent ones are found; only a document without enough of them has every key ranked.
//! A key-filter false positive (1/256 per block) ranks an absent key as present: it costs
//! at most a block read, never a pair.

use super::{Matcher, Scratch};

impl<'v> Matcher<'v> {
    /// Fills `scratch.order` with `probes` keys of the sorted feature set `x`, absent-first
    /// against the segments `self.absent_in` (see the module docs). `probes < x.len()`.
    /// Returns false, with `scratch.order` left empty, when it gives up
    /// ([`Matcher::absent_give_up`]): the first [`super::ABSENT_TRIAL`] rare keys
    /// were mostly present.
    pub(super) fn choose_absent_first(
        &self,
        x: &[u64],
        probes: usize,
        scratch: &mut Scratch,
    ) -> bool {
        let segs = &self.view.segments;
        let mut checks = 0u64;
        // 1 when some old segment may hold `k` (checking stops at the first), else 0.
        let mut count = |k: u64| -> u32 {
            for &i in &self.absent_in {
                checks += 1;
                // A damaged filter counts as "may hold": the read of the block reports it.
                if !matches!(segs[i].seg.postings_block_for(k), Ok(None)) {
                    return 1;
                }
            }
            0
        };
        let ranked = &mut scratch.ranked;
        ranked.clear();
        let mut free = 0usize;
        let mut rare = 0usize;
        for &k in x {
            let w = self.view.probe_weight(k);
            if w > 0 {
                ranked.push((w, u32::MAX, k)); // counted below, if it comes to that
                continue;
            }
            let c = count(k);
            free += (c == 0) as usize;
            rare += 1;
            ranked.push((0, c, k));
            if free == probes {
                break;
            }
            if self.absent_give_up && rare == super::ABSENT_TRIAL && free * 4 < rare {
                scratch.filter_checks += checks;
                scratch.order.clear();
                return false;
            }
        }
        if free == probes {
            ranked.retain(|&(w, c, _)| w == 0 && c == 0);
            scratch.docs_absent += 1;
        } else {
            // Too few absent keys (a near-copy of indexed pages): every key was walked; the
            // frequent ones get their counts too, then the cheapest `probes` keys win.
            for e in ranked.iter_mut() {
                if e.1 == u32::MAX {
                    e.1 = count(e.2);
                }
            }
            ranked.select_nth_unstable(probes - 1);
            ranked.truncate(probes);
        }
        scratch.filter_checks += checks;
        scratch.probes_absent += ranked.iter().filter(|e| e.1 == 0).count() as u64;
        scratch.order.clear();
        (scratch.order).extend(ranked.iter().map(|&(w, _, k)| (w, k)));
        true
    }
}
