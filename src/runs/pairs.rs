//! The similar pairs inside one topic's documents, and nothing else.
//!
//! A topic collection holds at most a few tens of thousands of the index's documents, so its
//! pairs are found among them alone: their forward lists (the index's stored features) are read
//! once, a small inverted index of each document's *prefix* is built in memory, and every
//! candidate is verified with the index's own comparison (`Sample::counts`, decided exactly in
//! integers by `Threshold::admits`), as `pairs` does. No posting list of the whole index is read,
//! so the cost follows the topic's size, not the index's.
//!
//! Why the prefixes find every pair: order all features by one global order (the matcher's,
//! rarest first: `View::probe_weight`, then the key). If `sim(A, B) >= t` then
//! `|A ∩ B| >= m_A = sample.min_overlap(t, |A|)` and likewise `>= m_B`. The smallest shared
//! feature `s` has at least `|A ∩ B| - 1 >= m_A - 1` features of A after it, so it lies within
//! A's first `|A| - m_A + 1` features, and within B's first `|B| - m_B + 1` likewise: the two
//! prefixes meet at `s`. Probing A's prefix against the index of all prefixes therefore finds B.

use rayon::prelude::*;

use crate::error::Result;
use crate::fingerprint::Sample;
use crate::threshold::Threshold;
use crate::view::View;

/// Two documents of a topic with resemblance `inter / denom` (the sampling's counts) >= the
/// threshold the pairs were computed at. `a < b` (doc ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TopicPair {
    pub a: u32,
    pub b: u32,
    pub inter: u64,
    pub denom: u64,
}

impl TopicPair {
    pub fn resemblance(&self) -> f64 {
        self.inter as f64 / self.denom as f64
    }
}

/// Every pair of `docs` (sorted, unique, live doc ids) with similarity >= `t`, sorted by
/// `(a, b)`. `t` must be above zero.
pub fn topic_pairs(
    view: &View,
    sample: Sample,
    t: Threshold,
    docs: &[u32],
) -> Result<Vec<TopicPair>> {
    debug_assert!(docs.windows(2).all(|w| w[0] < w[1]));
    let feats: Vec<Vec<u64>> = docs
        .par_iter()
        .map(|&d| {
            let mut v = Vec::new();
            view.features_into(d, &mut v)?;
            Ok(v)
        })
        .collect::<Result<_>>()?;
    // Each document's prefix under the global order.
    let prefixes: Vec<Vec<u64>> = feats
        .par_iter()
        .map(|x| {
            let n = x.len();
            let need = sample.min_overlap(t, n).max(1);
            if n == 0 || need > n {
                return Vec::new(); // no document can be similar to it
            }
            let mut order: Vec<(u32, u64)> = x.iter().map(|&k| (view.probe_weight(k), k)).collect();
            let p = n - need + 1;
            if p < n {
                order.select_nth_unstable(p - 1);
                order.truncate(p);
            }
            order.into_iter().map(|(_, k)| k).collect()
        })
        .collect();
    let mut entries: Vec<(u64, u32)> = prefixes
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.iter().map(move |&k| (k, i as u32)))
        .collect();
    entries.sort_unstable();

    let n = docs.len();
    let found: Vec<Vec<TopicPair>> = (0..n)
        .into_par_iter()
        .map_init(
            || (vec![false; n], Vec::<u32>::new()),
            |(seen, cand), i| {
                cand.clear();
                for &k in &prefixes[i] {
                    let lo = entries.partition_point(|&(e, _)| e < k);
                    for &(e, j) in &entries[lo..] {
                        if e != k {
                            break;
                        }
                        if j as usize > i && !seen[j as usize] {
                            seen[j as usize] = true;
                            cand.push(j);
                        }
                    }
                }
                cand.sort_unstable();
                let mut out = Vec::new();
                for &j in cand.iter() {
                    seen[j as usize] = false;
                    let c = sample.counts(&feats[i], &feats[j as usize]);
                    if t.admits(c.inter, c.denom) {
                        out.push(TopicPair {
                            a: docs[i],
                            b: docs[j as usize],
                            inter: c.inter,
                            denom: c.denom,
                        });
                    }
                }
                out
            },
        )
        .collect();
    Ok(found.into_iter().flatten().collect())
}
