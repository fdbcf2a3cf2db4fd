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
