//! Adaptive sampling (Ye, Wen and Ma): the sampling ratio depends on the document's size
//! group, so small documents keep more of their shingles (format-spec/fingerprints.md, §4.5).
//!
//! A table of size groups maps a document's distinct-shingle count S to a modulus m: the
//! document keeps the shingles whose hash is 0 modulo m (MOD_m). Moduli are non-decreasing
//! over the groups and each divides the next, so a sample at m restricted to a coarser
//! modulus M is exactly the document's sample at M. Two samples are compared at the coarser
//! of their two moduli (exact Jaccard of the two MOD_M sets).
//!
//! The stored features carry no group: the modulus of a stored sample is read back as the
//! largest table modulus dividing every feature. That is the assigned one except when every
//! feature happens to be 0 modulo a coarser table modulus too (probability (m/M)^n for n
//! features: only for samples of a few features); then the sample at the assigned modulus
//! equals the sample at the coarser one, and the comparison is at that coarser modulus.

use std::fmt;

use crate::error::{Error, Result};

/// Most groups a table may have (a fixed array keeps `Sample` `Copy`).
pub const MAX_GROUPS: usize = 8;

/// The default table (README.md, "Adaptive sampling"): every shingle of documents under 300
/// distinct shingles, 1 in 4 up to 1000, 1 in 16 beyond.
pub const DEFAULT_SIZE_GROUPS: &str = "0-300:1,300-1000:4,1000-:16";

/// Size groups: group i covers S in `lo[i] .. lo[i + 1]` (the last is open) and samples with
/// modulus `m[i]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SizeGroups {
    n: u8,
    lo: [u32; MAX_GROUPS],
    m: [u64; MAX_GROUPS],
}

impl SizeGroups {
    /// Builds a table from (lower bound, modulus) rows; checks the rules of the module header.
    pub fn new(rows: &[(u32, u64)]) -> Result<SizeGroups> {
        let bad = |why: &str| Error::InvalidArgument(format!("size groups: {why}"));
        if rows.is_empty() || rows.len() > MAX_GROUPS {
            return Err(bad(&format!("need 1 to {MAX_GROUPS} groups")));
        }
        if rows[0].0 != 0 {
            return Err(bad("the first group must start at 0"));
        }
        let mut g = SizeGroups {
            n: rows.len() as u8,
            lo: [0; MAX_GROUPS],
            m: [1; MAX_GROUPS],
        };
        for (i, &(lo, m)) in rows.iter().enumerate() {
            if m == 0 {
                return Err(bad("a modulus must be at least 1"));
            }
            if i > 0 {
                let (plo, pm) = rows[i - 1];
                if lo <= plo {
                    return Err(bad("group bounds must increase"));
                }
                if m < pm || m % pm != 0 {
                    return Err(bad(
                        "each group's modulus must be a multiple of the previous group's",
                    ));
                }
            }
            g.lo[i] = lo;
            g.m[i] = m;
        }
        Ok(g)
    }

    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// (lower bound, upper bound exclusive or None, modulus) of group `i`.
    pub fn group(&self, i: usize) -> (u32, Option<u32>, u64) {
        let hi = (i + 1 < self.len()).then(|| self.lo[i + 1]);
        (self.lo[i], hi, self.m[i])
    }

    /// The group of a document with `shingles` distinct shingles.
    pub fn group_of(&self, shingles: u32) -> usize {
        self.lo[..self.len()].partition_point(|&lo| lo <= shingles) - 1
    }

    /// The modulus a document with `shingles` distinct shingles is sampled with.
    pub fn modulus_of(&self, shingles: u32) -> u64 {
        self.m[self.group_of(shingles)]
    }

    /// The same groups with other moduli (for tuning); checked like `new`.
    pub fn with_moduli(&self, m: &[u64]) -> Result<SizeGroups> {
        let rows: Vec<(u32, u64)> = (0..self.len()).map(|i| (self.lo[i], m[i])).collect();
        SizeGroups::new(&rows)
    }

    /// The features of a shingle set (sorted, unique): MOD_m for the set's group.
    pub fn apply(&self, mut set: Vec<u64>) -> Vec<u64> {
        let m = self.modulus_of(u32::try_from(set.len()).unwrap_or(u32::MAX));
        if m > 1 {
            set.retain(|h| h % m == 0);
        }
        set
    }

    /// The modulus of a stored sample: the largest table modulus dividing every feature.
    pub fn modulus_of_sample(&self, x: &[u64]) -> u64 {
        let mut best = self.m[0];
        for &m in self.m[1..self.len()].iter().rev() {
            if x.iter().all(|h| h % m == 0) {
                best = m;
                break;
            }
        }
        best
    }

    /// (|A_M ∩ B_M|, |A_M|, |B_M|) at M = the coarser modulus of the two samples.
    pub fn overlap(&self, a: &[u64], b: &[u64]) -> (u64, u64, u64) {
        let m = self.modulus_of_sample(a).max(self.modulus_of_sample(b));
        let keep = |h: &u64| h.is_multiple_of(m);
        let (mut i, mut j, mut n) = (0, 0, 0u64);
        while i < a.len() && j < b.len() {
            let (x, y) = (a[i], b[j]);
            n += (x == y && keep(&x)) as u64;
            i += (x <= y) as usize;
            j += (y <= x) as usize;
        }
        let na = a.iter().filter(|h| keep(h)).count() as u64;
        let nb = b.iter().filter(|h| keep(h)).count() as u64;
        (n, na, nb)
    }

    /// Prefix-filter probes of a stored sample `x` at threshold `t` (> 0): every sample B
    /// similar to x contains one of them. For each table modulus M the comparison may use
    /// (M >= x's modulus), B_M ⊆ B shares at least ceil(t·|x_M|) features with x_M (as
    /// |x_M ∩ B_M| >= t·|x_M ∪ B_M|), so any |x_M| + 1 - ceil(t·|x_M|) features of x_M hit B;
    /// the union over M is probed. `weight` orders the choice (rarest first).
    pub fn probes(
        &self,
        x: &[u64],
        t: crate::threshold::Threshold,
        weight: impl Fn(u64) -> u32,
    ) -> Vec<u64> {
        let own = self.modulus_of_sample(x);
        let mut out: Vec<u64> = Vec::new();
        let mut ms: Vec<u64> = self.m[..self.len()]
            .iter()
            .copied()
            .filter(|&m| m >= own)
            .collect();
        ms.dedup();
        for m in ms {
            let mut xm: Vec<(u32, u64)> = x
                .iter()
                .filter(|h| *h % m == 0)
                .map(|&h| (weight(h), h))
                .collect();
            let n = xm.len();
            let need = usize::try_from(t.ceil_of(n as u64))
                .unwrap_or(usize::MAX)
                .max(1);
            if n == 0 || need > n {
                continue;
            }
            let k = n - need + 1;
            if k < n {
                xm.select_nth_unstable(k - 1);
            }
            out.extend(xm[..k].iter().map(|&(_, h)| h));
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The sampling of `--sample S --size-groups G`: G replaces the table of an adaptive S; G
/// without `--sample adaptive` is refused rather than silently ignored.
pub fn with_groups(
    sample: Option<super::Sample>,
    groups: Option<SizeGroups>,
) -> Result<Option<super::Sample>> {
    match (sample, groups) {
        (s, None) => Ok(s),
        (Some(super::Sample::Adaptive(_)), Some(g)) => Ok(Some(super::Sample::Adaptive(g))),
        _ => Err(Error::InvalidArgument(
            "--size-groups needs --sample adaptive".into(),
        )),
    }
}

impl std::str::FromStr for SizeGroups {
    type Err = Error;

    /// Parses `LO-HI:M,...,LO-:M` (e.g. [`DEFAULT_SIZE_GROUPS`]): contiguous ranges of
    /// distinct-shingle counts starting at 0, the last one open.
    fn from_str(s: &str) -> Result<SizeGroups> {
        let bad = || {
            Error::InvalidArgument(format!(
                "invalid size groups {s:?} (expected LO-HI:M,...,LO-:M, e.g. {DEFAULT_SIZE_GROUPS})"
            ))
        };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let mut rows = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let (range, m) = p.split_once(':').ok_or_else(bad)?;
            let (lo, hi) = range.split_once('-').ok_or_else(bad)?;
            let lo: u32 = lo.trim().parse().map_err(|_| bad())?;
            let m: u64 = m.trim().parse().map_err(|_| bad())?;
            let last = i + 1 == parts.len();
            if last != hi.trim().is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "invalid size groups {s:?}: only the last group is open (LO-:M)"
                )));
            }
            if !last {
                let hi: u32 = hi.trim().parse().map_err(|_| bad())?;
                let next: u32 = parts[i + 1]
                    .split_once('-')
                    .and_then(|(l, _)| l.trim().parse().ok())
                    .ok_or_else(bad)?;
                if hi != next {
                    return Err(Error::InvalidArgument(format!(
                        "invalid size groups {s:?}: ranges must be contiguous ({hi} then {next})"
                    )));
                }
            }
            rows.push((lo, m));
        }
        SizeGroups::new(&rows)
    }
}

impl fmt::Display for SizeGroups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.len() {
            let (lo, hi, m) = self.group(i);
            if i > 0 {
                f.write_str(",")?;
            }
            match hi {
                Some(hi) => write!(f, "{lo}-{hi}:{m}")?,
                None => write!(f, "{lo}-:{m}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_display_and_rules() {
        let g: SizeGroups = DEFAULT_SIZE_GROUPS.parse().unwrap();
        assert_eq!(g.to_string(), DEFAULT_SIZE_GROUPS);
        assert_eq!(
            (g.modulus_of(0), g.modulus_of(299), g.modulus_of(300)),
            (1, 1, 4)
        );
        assert_eq!((g.modulus_of(999), g.modulus_of(1000)), (4, 16));
        assert_eq!(g.modulus_of(u32::MAX), 16);
        for bad in [
            "1-300:1,300-:4",     // not from 0
            "0-300:1,400-:4",     // gap
            "0-300:4,300-:2",     // decreasing
            "0-300:4,300-:6",     // not a multiple
            "0-300:1,300-1000:4", // last closed
            "0-:1,5-:2",
            "0-10:0,10-:1",
            "",
        ] {
            assert!(bad.parse::<SizeGroups>().is_err(), "{bad}");
        }
    }

    #[test]
    fn small_documents_are_sampled_more_densely() {
        let g: SizeGroups = "0-100:1,100-1000:4,1000-:16".parse().unwrap();
        let small: Vec<u64> = (0..99u64).map(|i| i * 7919).collect();
        let large: Vec<u64> = (0..5000u64).map(|i| i * 7919).collect();
        assert_eq!(g.apply(small.clone()), small);
        let l = g.apply(large.clone());
        assert!(l.iter().all(|h| h % 16 == 0));
        assert_eq!(l.len(), large.iter().filter(|h| *h % 16 == 0).count());
        assert_eq!(g.modulus_of_sample(&l), 16);
    }

    proptest! {
        /// The prefix-filter contract against brute force: every similar pair is found by
        /// probing x's probes in B's stored features.
        #[test]
        fn probes_find_every_similar_sample(
            a in proptest::collection::btree_set(0u64..300, 0..120),
            drop in proptest::collection::btree_set(0u64..300, 0..20),
            add in proptest::collection::btree_set(0u64..300, 0..20),
            num in 1u64..=10,
        ) {
            // B is A edited, so similar pairs are common.
            let g: SizeGroups = "0-30:1,30-80:2,80-:4".parse().unwrap();
            let t = crate::threshold::Threshold::from_ratio(num, 10);
            let b: std::collections::BTreeSet<u64> =
                a.iter().copied().filter(|h| !drop.contains(h)).chain(add).collect();
            let (sa, sb) = (g.apply(a.into_iter().collect()), g.apply(b.into_iter().collect()));
            let s = super::super::Sample::Adaptive(g);
            if s.similar(&sa, &sb, t) {
                let p = g.probes(&sa, t, |h| (h % 7) as u32);
                prop_assert!(p.iter().any(|h| sb.binary_search(h).is_ok()));
            }
        }

        /// The comparison equals the exact Jaccard of both full sets sampled at the coarser
        /// of the two assigned moduli (when the stored samples reveal their modulus).
        #[test]
        fn overlap_is_jaccard_at_the_coarser_modulus(
            a in proptest::collection::btree_set(0u64..4000, 0..600),
            b in proptest::collection::btree_set(0u64..4000, 0..600),
        ) {
            let g: SizeGroups = "0-50:1,50-200:2,200-:8".parse().unwrap();
            let (a, b): (Vec<u64>, Vec<u64>) = (a.into_iter().collect(), b.into_iter().collect());
            let (sa, sb) = (g.apply(a.clone()), g.apply(b.clone()));
            let (ma, mb) = (g.modulus_of(a.len() as u32), g.modulus_of(b.len() as u32));
            prop_assume!(g.modulus_of_sample(&sa) == ma && g.modulus_of_sample(&sb) == mb);
            let m = ma.max(mb);
            let fa: std::collections::BTreeSet<u64> = a.iter().copied().filter(|h| h % m == 0).collect();
            let fb: std::collections::BTreeSet<u64> = b.iter().copied().filter(|h| h % m == 0).collect();
            let inter = fa.intersection(&fb).count() as u64;
            prop_assert_eq!(g.overlap(&sa, &sb), (inter, fa.len() as u64, fb.len() as u64));
            prop_assert_eq!(g.overlap(&sb, &sa), (inter, fb.len() as u64, fa.len() as u64));
        }
    }
}
