//! Same-site and different-site scores (Henzinger 2006, Tables 2 and 5 split every figure
//! this way), and Henzinger's protocol for the C threshold of her combined algorithm: chosen
//! on one half of the pairs, tested on the other.
//!
//! A pair is same-site when both documents have the same site (`input::site`, from the
//! catalog: URL host, URL key, or the index's `--site path:N` rule on the key).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::error::Result;
use crate::index::Index;
use crate::method::{csim, dsc, MethodPair};
use crate::sites::Sites;
use crate::threshold::Threshold;

use super::groups::Docs;
use super::truth::Truth;

/// Precision and recall of the pairs of one kind (same-site or different-site).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SiteScore {
    pub found: u64,
    pub positives: u64,
    pub true_positives: u64,
    pub precision: f64,
    pub recall: f64,
}

impl SiteScore {
    fn finish(mut self) -> Self {
        self.precision = ratio(self.true_positives, self.found);
        self.recall = ratio(self.true_positives, self.positives);
        self
    }

    fn f1(&self) -> f64 {
        if self.precision + self.recall > 0.0 {
            2.0 * self.precision * self.recall / (self.precision + self.recall)
        } else {
            0.0
        }
    }
}

fn ratio(tp: u64, n: u64) -> f64 {
    if n == 0 {
        1.0
    } else {
        tp as f64 / n as f64
    }
}

/// The positive pairs at `t` among indexed documents, as ordered doc ids: pair truth with
/// jaccard >= t, or label truth's pairs of documents with the same label.
pub fn positive_pairs(docs: &Docs, truth: &Truth, t: f64) -> HashSet<(u32, u32)> {
    match truth {
        Truth::Pairs(_) => docs.positives(truth, t),
        Truth::Labels(l) => {
            let mut by: HashMap<&str, Vec<u32>> = HashMap::new();
            for (d, k) in docs.keys.iter().enumerate() {
                if let Some(lab) = (!k.is_empty()).then(|| l.get(k)).flatten() {
                    by.entry(lab.as_str()).or_default().push(d as u32);
                }
            }
            let mut out = HashSet::new();
            for g in by.values() {
                for (i, &a) in g.iter().enumerate() {
                    for &b in &g[i + 1..] {
                        out.insert((a.min(b), a.max(b)));
                    }
                }
            }
            out
        }
    }
}

/// Same-site and different-site scores of `found` against `positives`.
pub fn split_scores(
    sites: &Sites,
    found: impl Iterator<Item = (u32, u32)>,
    positives: &HashSet<(u32, u32)>,
) -> (SiteScore, SiteScore) {
    let (mut same, mut diff) = (SiteScore::default(), SiteScore::default());
    for &(a, b) in positives {
        if sites.same(a, b) {
            same.positives += 1;
        } else {
            diff.positives += 1;
        }
    }
    for (a, b) in found {
        let s = if sites.same(a, b) {
            &mut same
        } else {
            &mut diff
        };
        s.found += 1;
        s.true_positives += positives.contains(&(a.min(b), a.max(b))) as u64;
    }
    (same.finish(), diff.finish())
}

/// Lowest C-similarity the split-half protocol tries (agreeing bits >= 327 of 384).
pub const SPLIT_C_FLOOR: f64 = 327.0 / 384.0;

/// One C threshold on the training half.
#[derive(Clone, Debug, Serialize)]
pub struct CurvePoint {
    /// Agreeing bits required (of 384): C-similarity = agree_bits / 384.
    pub agree_bits: u32,
    /// Combined (B and C >= threshold) on the same-site training pairs.
    pub same_site: SiteScore,
    /// C >= threshold on the different-site training pairs.
    pub different_site: SiteScore,
}

/// Henzinger's protocol on one truth threshold: the C thresholds (different-site C, same-site
/// combined) that maximise F1 on the training half, and what they give on the test half.
#[derive(Clone, Debug, Serialize)]
pub struct HenzingerSplit {
    /// Truth threshold (jaccard of pair truth; labels: same label).
    pub threshold: f64,
    /// Chosen C threshold of the different-site pairs, as agreeing bits of 384.
    pub c_agree_bits: u32,
    /// Chosen C threshold of the combined algorithm on same-site pairs, as agreeing bits.
    pub combined_agree_bits: u32,
    pub train_same_site: SiteScore,
    pub train_different_site: SiteScore,
    pub test_same_site: SiteScore,
    pub test_different_site: SiteScore,
    /// Both parts together on the test half.
    pub test: SiteScore,
    /// The training half's scores at every C threshold tried (for a chart).
    pub curve: Vec<CurvePoint>,
}

/// Which half a pair of keys is in: a stable hash of the ordered keys, so the split does not
/// depend on doc ids (0: training, 1: testing).
pub fn half(key_a: &str, key_b: &str) -> u8 {
    let (a, b) = if key_a <= key_b {
        (key_a, key_b)
    } else {
        (key_b, key_a)
    };
    let mut bytes = Vec::with_capacity(a.len() + b.len() + 1);
    bytes.extend_from_slice(a.as_bytes());
    bytes.push(b'\t');
    bytes.extend_from_slice(b.as_bytes());
    (xxhash_rust::xxh3::xxh3_64(&bytes) & 1) as u8
}

/// Runs the split-half protocol for each truth threshold. The pairs are computed once at
/// [`SPLIT_C_FLOOR`] (C pairs through the piece index, combined pairs from the stored
/// supershingles) and filtered for each C threshold from there to 384 agreeing bits.
pub fn henzinger_split(
    index: &Index,
    truth: &Truth,
    thresholds: &[Threshold],
) -> Result<Vec<HenzingerSplit>> {
    let opts = &index.options().methods;
    opts.require_sim384()?;
    let o = opts.dsc()?;
    let view = index.view();
    let docs = Docs::load(index)?;
    let sites = index.sites()?;
    let key = |d: u32| docs.keys.get(d as usize).map_or("", |s| s.as_str());
    let k_max = csim::max_hamming(SPLIT_C_FLOOR).unwrap_or(0);
    let c: Vec<MethodPair> = dsc::c_sim_pairs(view, SPLIT_C_FLOOR)?
        .into_iter()
        .filter(|p| !sites.same(p.a, p.b))
        .collect();
    let comb: Vec<MethodPair> = dsc::combined_pairs(view, o, SPLIT_C_FLOOR)?
        .into_iter()
        .filter(|p| sites.same(p.a, p.b))
        .collect();
    // Every candidate pair once, with its distance and half: the curve is then cumulative
    // counts over the distance, O(pairs + distances) per truth threshold.
    let tag = |v: &[MethodPair]| -> Vec<(u32, usize, (u32, u32))> {
        v.iter()
            .filter_map(|p| {
                p.hamming
                    .map(|h| (h, half(key(p.a), key(p.b)) as usize, (p.a, p.b)))
            })
            .collect()
    };
    let (c, comb) = (tag(&c), tag(&comb));
    let k = k_max as usize;
    let mut out = Vec::new();
    for &t in thresholds {
        let pos = positive_pairs(&docs, truth, t.as_f64());
        // Positives by half and kind (index 1: same site).
        let mut npos = [[0u64; 2]; 2];
        for &(a, b) in &pos {
            npos[half(key(a), key(b)) as usize][sites.same(a, b) as usize] += 1;
        }
        // (found, true) at distance <= h, by half.
        let cumulative = |v: &[(u32, usize, (u32, u32))]| -> [Vec<(u64, u64)>; 2] {
            let mut f = [vec![(0u64, 0u64); k + 1], vec![(0u64, 0u64); k + 1]];
            for &(h, part, pair) in v {
                if let Some(e) = f[part].get_mut(h as usize) {
                    e.0 += 1;
                    e.1 += pos.contains(&pair) as u64;
                }
            }
            for part in &mut f {
                for h in 1..=k {
                    part[h].0 += part[h - 1].0;
                    part[h].1 += part[h - 1].1;
                }
            }
            f
        };
        let (cc, cs) = (cumulative(&c), cumulative(&comb));
        // The C part holds different-site pairs only, the combined part same-site pairs only,
        // so each is scored against the positives of its own kind.
        let score = |cum: &[Vec<(u64, u64)>; 2], part: usize, h: usize, same: bool| {
            SiteScore {
                found: cum[part][h].0,
                true_positives: cum[part][h].1,
                positives: npos[part][same as usize],
                ..SiteScore::default()
            }
            .finish()
        };
        let mut curve = Vec::new();
        let (mut best_c, mut best_comb) = ((-1.0, 0usize), (-1.0, 0usize));
        // From strict to loose: on ties the stricter threshold (higher precision) wins.
        for h in 0..=k {
            let same = score(&cs, 0, h, true);
            let diff = score(&cc, 0, h, false);
            if diff.f1() > best_c.0 {
                best_c = (diff.f1(), h);
            }
            if same.f1() > best_comb.0 {
                best_comb = (same.f1(), h);
            }
            curve.push(CurvePoint {
                agree_bits: csim::BITS - h as u32,
                same_site: same,
                different_site: diff,
            });
        }
        let (hc, hs) = (best_c.1, best_comb.1);
        let test_same = score(&cs, 1, hs, true);
        let test_diff = score(&cc, 1, hc, false);
        let test = SiteScore {
            found: test_same.found + test_diff.found,
            positives: test_same.positives + test_diff.positives,
            true_positives: test_same.true_positives + test_diff.true_positives,
            ..SiteScore::default()
        }
        .finish();
        out.push(HenzingerSplit {
            threshold: t.as_f64(),
            c_agree_bits: csim::BITS - hc as u32,
            combined_agree_bits: csim::BITS - hs as u32,
            train_same_site: curve[hs].same_site.clone(),
            train_different_site: curve[hc].different_site.clone(),
            test_same_site: test_same,
            test_different_site: test_diff,
            test,
            curve,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_split_by_site() {
        let sites = Sites::from_names([
            (0, "a".into()),
            (1, "a".into()),
            (2, "b".into()),
            (3, "b".into()),
        ]);
        let pos: HashSet<(u32, u32)> = [(0, 1), (0, 2), (2, 3)].into_iter().collect();
        let (s, d) = split_scores(&sites, [(0, 1), (1, 2), (0, 2)].into_iter(), &pos);
        assert_eq!((s.found, s.positives, s.true_positives), (1, 2, 1));
        assert_eq!((s.precision, s.recall), (1.0, 0.5));
        assert_eq!((d.found, d.positives, d.true_positives), (2, 1, 1));
        assert_eq!((d.precision, d.recall), (0.5, 1.0));
    }

    #[test]
    fn halves_are_stable_and_symmetric() {
        assert_eq!(half("a", "b"), half("b", "a"));
        let ones: u32 = (0..1000).map(|i| half(&format!("k{i}"), "x") as u32).sum();
        assert!((400..600).contains(&ones), "{ones}");
    }
}
