//! Sampling a shingle set into features, and comparing two feature sets exactly
//! (format-spec/fingerprints.md, §4 and §6).
//!
//! Every comparison reduces to integer counts (`Counts`): the similarity is
//! `inter / denom`, and thresholds are decided with `Threshold::admits` on those integers,
//! never with floats, so a pair at exactly the threshold is kept on every platform.

use super::{minhash, Sample};
use crate::threshold::Threshold;

/// Integer counts behind a comparison: resemblance = inter / denom, containment =
/// inter / a_part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub inter: u64,
    pub denom: u64,
    pub a_part: u64,
}

/// A comparison of two feature sets under one sampling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overlap {
    /// The intersection count the estimator is built on (see `Sample::counts`).
    pub inter: u64,
    /// The estimator's denominator (|A∪B|, K or |U|): resemblance = inter / denom, and
    /// thresholds are decided on these two integers.
    pub denom: u64,
    /// Estimated (All/Mod: exact on the sampled sets) resemblance; 0 when undefined.
    pub resemblance: f64,
    /// Estimated containment of A in B, inter / |A| (see `Sample::counts`); 0 when undefined.
    pub containment: f64,
}

/// `n / d` in f64 (0 when `d` is 0): how every resemblance and containment is computed from
/// its integer counts, so a value recomputed from stored counts has the same bits.
#[inline]
pub fn ratio(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

impl From<Counts> for Overlap {
    fn from(c: Counts) -> Self {
        Overlap {
            inter: c.inter,
            denom: c.denom,
            resemblance: ratio(c.inter, c.denom),
            containment: ratio(c.inter, c.a_part),
        }
    }
}

/// |a ∩ b| of two sorted, duplicate-free slices (a linear merge).
pub fn intersect_count(a: &[u64], b: &[u64]) -> u64 {
    let (mut i, mut j, mut n) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        n += (x == y) as u64;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    n
}

impl Sample {
    /// The features of a document from its shingle set (sorted ascending, unique).
    /// The result is sorted ascending and unique as well.
    pub fn apply(&self, mut set: Vec<u64>) -> Vec<u64> {
        match *self {
            Sample::All => {}
            Sample::Mod(0) => set.clear(), // invalid parameter: keep nothing rather than panic
            Sample::Mod(m) => set.retain(|h| h % m == 0),
            Sample::MinHash(k) => return minhash::features(&minhash::minhash_values(&set, k)),
            Sample::BottomK(k) => set.truncate(k as usize),
            Sample::Adaptive(g) => set = g.apply(set),
        }
        // Fingerprints are held in memory by the batch; don't keep the capacity of the
        // unsampled (or not yet deduplicated) shingle list.
        if set.capacity() > set.len() + set.len() / 8 {
            set.shrink_to_fit();
        }
        set
    }

    /// The integer counts of comparing feature sets `a` and `b` (sorted, unique):
    /// - All, Mod: inter = |A∩B|, denom = |A∪B|, a_part = |A| (exact Jaccard of the sets);
    /// - MinHash(K): inter = matching positions = |A∩B| (features are position-tagged),
    ///   denom = K, a_part = |A| (so containment equals resemblance: min-hash has no
    ///   containment estimator without set sizes);
    /// - BottomK(K): with U = the K smallest of A∪B, inter = |U∩A∩B|, denom = |U|,
    ///   a_part = |U∩A| (Broder's estimators of resemblance and of containment of A in B).
    ///   Because A and B are bottom-K samples, U is also the bottom K of the full sets'
    ///   union and membership in U∩A is decided correctly by the samples.
    pub fn counts(&self, a: &[u64], b: &[u64]) -> Counts {
        match *self {
            Sample::All | Sample::Mod(_) => {
                let inter = intersect_count(a, b);
                Counts {
                    inter,
                    denom: (a.len() + b.len()) as u64 - inter,
                    a_part: a.len() as u64,
                }
            }
            Sample::MinHash(k) => Counts {
                inter: intersect_count(a, b),
                denom: k as u64,
                a_part: a.len() as u64,
            },
            Sample::BottomK(k) => bottom_k_counts(a, b, k as usize),
            Sample::Adaptive(g) => {
                let (inter, na, nb) = g.overlap(a, b);
                Counts {
                    inter,
                    denom: na + nb - inter,
                    a_part: na,
                }
            }
        }
    }

    /// Compares two feature sets (see `counts` for what each value means).
    pub fn compare(&self, a: &[u64], b: &[u64]) -> Overlap {
        self.counts(a, b).into()
    }

    /// True when the resemblance of `compare(a, b)` is at least `t`, decided exactly in
    /// integers. An undefined resemblance (two empty sets) is never similar.
    pub fn similar(&self, a: &[u64], b: &[u64], t: Threshold) -> bool {
        self.verify(a, b, t).is_some()
    }

    /// `similar`, returning the comparison when it holds (one merge for both).
    pub fn verify(&self, a: &[u64], b: &[u64], t: Threshold) -> Option<Overlap> {
        let c = self.counts(a, b);
        t.admits(c.inter, c.denom).then(|| c.into())
    }

    /// The threshold decision for an `Overlap` already computed by `compare` (exact:
    /// `inter / denom >= t` in integers). `a_len` and `b_len` are the compared sets' sizes;
    /// they are only used to check, in debug builds, that `ov` came from such a comparison.
    pub fn similar_overlap(&self, ov: &Overlap, a_len: usize, b_len: usize, t: Threshold) -> bool {
        debug_assert!(match *self {
            Sample::All | Sample::Mod(_) => ov.denom + ov.inter == (a_len + b_len) as u64,
            Sample::MinHash(k) => ov.denom == k as u64,
            Sample::BottomK(k) => ov.denom <= (k as u64).min((a_len + b_len) as u64),
            Sample::Adaptive(_) => ov.denom + ov.inter <= (a_len + b_len) as u64,
        });
        t.admits(ov.inter, ov.denom)
    }

    /// Whether a B of `b_len` features sharing at most `inter_max` of them with A (|A| =
    /// `a_len`) may still pass [`Sample::verify`] at `t`: the decision verify would make with
    /// the largest intersection the sizes allow. All, Mod: resemblance = inter / (|A| + |B| -
    /// inter) grows with inter at fixed sizes, so if the bound fails, B fails. The other
    /// samplings answer true (no such bound is used for them).
    pub fn may_reach(&self, t: Threshold, a_len: usize, b_len: usize, inter_max: u64) -> bool {
        match *self {
            Sample::All | Sample::Mod(_) => {
                let inter = inter_max.min(a_len as u64).min(b_len as u64);
                t.admits(inter, (a_len + b_len) as u64 - inter)
            }
            Sample::MinHash(_) | Sample::BottomK(_) | Sample::Adaptive(_) => true,
        }
    }

    /// Prefix-filter bound: every B with `similar(A, B, t)` shares at least this many
    /// features with A, where n = |A|. So probing the postings of any `n + 1 - m` features of
    /// A (m = this value) finds every similar B. Proofs (format-spec/fingerprints.md, §6.3):
    /// - All, Mod: |A∩B| >= t·|A∪B| >= t·n, so ceil(t·n); tight (B ⊆ A);
    /// - MinHash(K): matches >= t·K, so ceil(t·K);
    /// - BottomK(K): |A∩B| >= |U∩A∩B| >= t·|U| and |U| = min(K, |A∪B|) >= min(K, n), so
    ///   ceil(t·min(K, n)); tight (B ⊆ A).
    /// - Adaptive: 1 (a similar B shares at least one feature, as inter >= t·denom > 0), so
    ///   every feature is probed: the comparison modulus depends on B, unknown before probing.
    ///
    /// The value can exceed n (MinHash with n < K, i.e. an empty document): then no B is
    /// similar and nothing needs probing; callers should use `(n + 1).saturating_sub(m)`.
    /// It is 0 only for t = 0, when every document is similar and postings cannot find them
    /// all: callers must treat t = 0 as a full scan.
    pub fn min_overlap(&self, t: Threshold, n: usize) -> usize {
        let whole = match *self {
            Sample::All | Sample::Mod(_) => n as u64,
            Sample::MinHash(k) => k as u64,
            Sample::BottomK(k) => (n as u64).min(k as u64),
            Sample::Adaptive(_) => return usize::from(t.as_f64() > 0.0),
        };
        usize::try_from(t.ceil_of(whole)).unwrap_or(usize::MAX)
    }

    /// Length filter: the feature count |B| of any B similar to A (|A| = n) lies in the
    /// returned inclusive range. All/Mod: [ceil(t·n), floor(n / t)] (from |A∩B| >= t·|A∪B|
    /// >= t·max(|A|, |B|)); MinHash/BottomK: [min_overlap, unbounded].
    pub fn size_bounds(&self, t: Threshold, n: usize) -> (usize, usize) {
        let lo = self.min_overlap(t, n);
        match *self {
            Sample::All | Sample::Mod(_) => (
                lo,
                usize::try_from(t.floor_div(n as u64)).unwrap_or(usize::MAX),
            ),
            Sample::MinHash(_) | Sample::BottomK(_) | Sample::Adaptive(_) => (lo, usize::MAX),
        }
    }
}

/// Broder's bottom-k estimator: merge A and B ascending and stop after K union elements.
fn bottom_k_counts(a: &[u64], b: &[u64], k: usize) -> Counts {
    let (mut i, mut j) = (0, 0);
    let (mut union, mut inter, mut in_a) = (0u64, 0u64, 0u64);
    while union < k as u64 && (i < a.len() || j < b.len()) {
        let x = a.get(i).copied();
        let y = b.get(j).copied();
        match (x, y) {
            (Some(x), Some(y)) if x == y => {
                inter += 1;
                in_a += 1;
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                in_a += 1;
                i += 1;
            }
            (Some(_), None) => {
                in_a += 1;
                i += 1;
            }
            _ => j += 1, // y is the smaller (or a is exhausted)
        }
        union += 1;
    }
    Counts {
        inter,
        denom: union,
        a_part: in_a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn set(v: &[u64]) -> Vec<u64> {
        v.iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    #[test]
    fn sampling_rules() {
        let s = set(&[3, 8, 16, 17, 24, 40, 41]);
        assert_eq!(Sample::All.apply(s.clone()), s);
        assert_eq!(Sample::Mod(8).apply(s.clone()), vec![8, 16, 24, 40]);
        assert_eq!(Sample::Mod(1).apply(s.clone()), s);
        assert_eq!(Sample::Mod(0).apply(s.clone()), Vec::<u64>::new());
        assert_eq!(Sample::BottomK(3).apply(s.clone()), vec![3, 8, 16]);
        assert_eq!(Sample::BottomK(100).apply(s.clone()), s);
        let m = Sample::MinHash(84).apply(s.clone());
        assert_eq!(m.len(), 84);
        assert!(m.windows(2).all(|w| w[0] < w[1]));
        assert!(Sample::MinHash(84).apply(Vec::new()).is_empty());
    }

    #[test]
    fn exact_threshold_pairs_are_kept() {
        let t: Threshold = "0.8".parse().unwrap();
        let a: Vec<u64> = (0..5).collect();
        let b: Vec<u64> = (0..4).collect(); // J = 4/5 exactly
        assert!(Sample::All.similar(&a, &b, t));
        let o = Sample::All.verify(&a, &b, t).unwrap();
        assert_eq!(
            (o.inter, o.denom, o.resemblance, o.containment),
            (4, 5, 0.8, 0.8)
        );
        assert!(Sample::All.similar_overlap(&o, 5, 4, t));
        let o = Sample::All.compare(&a, &b[..3]);
        assert!(!Sample::All.similar_overlap(&o, 5, 3, t));
        assert_eq!(Sample::All.compare(&b, &a).containment, 1.0);
        assert!(!Sample::All.similar(&a, &(0..3).collect::<Vec<_>>(), t));
        assert!(!Sample::All.similar(&[], &[], "0".parse().unwrap()));
        assert_eq!(Sample::All.min_overlap(t, 5), 4);
        assert_eq!(Sample::All.size_bounds(t, 5), (4, 6));
        assert_eq!(Sample::MinHash(84).min_overlap(t, 84), 68); // ceil(67.2)
        assert_eq!(Sample::BottomK(10).min_overlap(t, 200), 8);
    }

    #[test]
    fn bottom_k_estimator_worked_example() {
        // A' = {1,2,4,6}, B' = {2,3,4,5}, K = 4: U = {1,2,3,4}, U∩A∩B = {2,4}, U∩A = {1,2,4}.
        let c = Sample::BottomK(4).counts(&[1, 2, 4, 6], &[2, 3, 4, 5]);
        assert_eq!(
            c,
            Counts {
                inter: 2,
                denom: 4,
                a_part: 3
            }
        );
    }

    /// Sorted unique sets over a small universe, so pairs overlap.
    fn arb_set(max_len: usize) -> impl Strategy<Value = Vec<u64>> {
        proptest::collection::btree_set(0u64..48, 0..max_len).prop_map(|s| s.into_iter().collect())
    }

    fn arb_threshold() -> impl Strategy<Value = Threshold> {
        (1u64..=40)
            .prop_flat_map(|den| (0..=den).prop_map(move |num| Threshold::from_ratio(num, den)))
    }

    fn arb_sample() -> impl Strategy<Value = Sample> {
        prop_oneof![
            Just(Sample::All),
            (1u64..4).prop_map(Sample::Mod),
            (1u32..24).prop_map(Sample::MinHash),
            (1u32..24).prop_map(Sample::BottomK),
            Just(Sample::Adaptive("0-10:1,10-20:2,20-:4".parse().unwrap())),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn compare_matches_brute_force(a in arb_set(40), b in arb_set(40)) {
            let (sa, sb): (BTreeSet<u64>, BTreeSet<u64>) =
                (a.iter().copied().collect(), b.iter().copied().collect());
            let inter = sa.intersection(&sb).count() as u64;
            let union = sa.union(&sb).count() as u64;
            let c = Sample::All.counts(&a, &b);
            prop_assert_eq!(c, Counts { inter, denom: union, a_part: a.len() as u64 });
            let o = Sample::All.compare(&a, &b);
            if union > 0 {
                prop_assert_eq!(o.resemblance, inter as f64 / union as f64);
            }
            // Bottom-k from the samples == the estimator on the full sets.
            for k in [1usize, 3, 7, 20] {
                let u: Vec<u64> = sa.union(&sb).copied().take(k).collect();
                let want = Counts {
                    inter: u.iter().filter(|x| sa.contains(x) && sb.contains(x)).count() as u64,
                    denom: u.len() as u64,
                    a_part: u.iter().filter(|x| sa.contains(x)).count() as u64,
                };
                let s = Sample::BottomK(k as u32);
                prop_assert_eq!(s.counts(&s.apply(a.clone()), &s.apply(b.clone())), want);
            }
        }

        /// The prefix-filter contract, against brute force: whenever A and B are similar,
        /// probing ANY n + 1 - m features of A hits B (checked literally on a random choice
        /// and, equivalently, as |A∩B| >= m).
        #[test]
        fn min_overlap_is_a_correct_bound(
            sample in arb_sample(), ra in arb_set(40), rb in arb_set(40),
            t in arb_threshold(), pick_seed in any::<u64>(),
        ) {
            let (a, b) = (sample.apply(ra), sample.apply(rb));
            let m = sample.min_overlap(t, a.len());
            let probes = (a.len() + 1).saturating_sub(m).min(a.len());
            let ov = sample.compare(&a, &b);
            prop_assert_eq!(sample.similar(&a, &b, t), sample.similar_overlap(&ov, a.len(), b.len(), t));
            if sample.similar(&a, &b, t) {
                prop_assert!(t.as_f64() == 0.0 || m >= 1);
                if m > 0 {
                    prop_assert!(intersect_count(&a, &b) >= m as u64);
                    // The worst case is probing the features B lacks first.
                    let mut order: Vec<u64> = a.clone();
                    order.sort_by_key(|x| (b.binary_search(x).is_ok(), x ^ pick_seed));
                    prop_assert!(order[..probes].iter().any(|x| b.binary_search(x).is_ok()));
                }
                let (lo, hi) = sample.size_bounds(t, a.len());
                prop_assert!(lo <= b.len() && b.len() <= hi);
            }
        }

        /// For set samplings the bound is tight: B = the m smallest of A is similar, and
        /// m - 1 of them is not.
        #[test]
        fn min_overlap_is_tight(a in arb_set(40), t in arb_threshold(), k in 1u32..50) {
            for sample in [Sample::All, Sample::BottomK(k)] {
                let a = sample.apply(a.clone());
                let m = sample.min_overlap(t, a.len());
                if a.is_empty() || m == 0 {
                    continue;
                }
                prop_assert!(sample.similar(&a, &a[..m], t));
                prop_assert!(!sample.similar(&a, &a[..m - 1], t));
            }
        }
    }
}
