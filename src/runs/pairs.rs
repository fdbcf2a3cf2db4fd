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

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
///
/// With `--sample all` or `mod:M` (the resemblance is `|A∩B| / (|A| + |B| - |A∩B|)` of the
/// stored sets) the intersections are counted instead ([`counted_pairs`]); the other samplings
/// compare candidates from the prefix index ([`prefix_pairs`]). Both give exactly the pairs
/// and counts `Sample::counts` gives.
pub fn topic_pairs(
    view: &View,
    sample: Sample,
    t: Threshold,
    docs: &[u32],
) -> Result<Vec<TopicPair>> {
    match sample {
        Sample::All | Sample::Mod(_) => counted_pairs(view, t, docs),
        _ => prefix_pairs(view, sample, t, docs),
    }
}

/// A cheap hasher for feature keys: one `mix64` (not SipHash). The keys are hashes already but
/// not uniform in every bit (`mod:M` keeps only multiples of M), so they are mixed once.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        crate::fingerprint::hash::mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

fn load_features(view: &View, docs: &[u32]) -> Result<Vec<Vec<u64>>> {
    docs.par_iter()
        .map(|&d| {
            let mut v = Vec::new();
            view.features_into(d, &mut v)?;
            Ok(v)
        })
        .collect()
}

/// Set resemblance by counting: an in-memory inverted index of ALL the topic's features, and
/// for each document a dense counter of the features it shares with each later document. A
/// pair costs one increment per shared feature (a merge would cost |A| + |B|), so pages that
/// share a site's boilerplate, all of them candidates at 0.1, stay cheap; the total is
/// `sum over features of df²/2` within the topic.
pub fn counted_pairs(view: &View, t: Threshold, docs: &[u32]) -> Result<Vec<TopicPair>> {
    debug_assert!(docs.windows(2).all(|w| w[0] < w[1]));
    let feats = load_features(view, docs)?;
    let mut entries: Vec<(u64, u32)> = feats
        .iter()
        .enumerate()
        .flat_map(|(i, x)| x.iter().map(move |&k| (k, i as u32)))
        .collect();
    entries.par_sort_unstable();
    // Where each feature's postings are: a hash lookup per (document, feature) instead of a
    // binary search over all entries (which missed the cache at every step).
    let mut ranges: HashMap<u64, (u32, u32), BuildHasherDefault<KeyHasher>> =
        HashMap::with_capacity_and_hasher(entries.len() / 2, Default::default());
    let mut s = 0usize;
    while s < entries.len() {
        let k = entries[s].0;
        let e = s + entries[s..].partition_point(|&(x, _)| x == k);
        ranges.insert(k, (s as u32, e as u32));
        s = e;
    }
    let n = docs.len();
    let found: Vec<Vec<TopicPair>> = (0..n)
        .into_par_iter()
        .map_init(
            || (vec![0u32; n], Vec::<u32>::new()),
            |(count, touched), i| {
                touched.clear();
                for k in &feats[i] {
                    let (s, e) = ranges[k];
                    let list = &entries[s as usize..e as usize];
                    // Postings are sorted by document: start after i.
                    let lo = list.partition_point(|&(_, j)| j <= i as u32);
                    for &(_, j) in &list[lo..] {
                        let c = &mut count[j as usize];
                        if *c == 0 {
                            touched.push(j);
                        }
                        *c += 1;
                    }
                }
                touched.sort_unstable();
                let mut out = Vec::new();
                let a = feats[i].len() as u64;
                for &j in touched.iter() {
                    let inter = std::mem::take(&mut count[j as usize]) as u64;
                    let denom = a + feats[j as usize].len() as u64 - inter;
                    if t.admits(inter, denom) {
                        out.push(TopicPair {
                            a: docs[i],
                            b: docs[j as usize],
                            inter,
                            denom,
                        });
                    }
                }
                out
            },
        )
        .collect();
    Ok(found.into_iter().flatten().collect())
}

/// Candidates from an index of each document's prefix (see the module comment), each compared
/// with `Sample::counts`: for the samplings whose resemblance is not a plain set ratio.
pub fn prefix_pairs(
    view: &View,
    sample: Sample,
    t: Threshold,
    docs: &[u32],
) -> Result<Vec<TopicPair>> {
    debug_assert!(docs.windows(2).all(|w| w[0] < w[1]));
    let feats = load_features(view, docs)?;
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
