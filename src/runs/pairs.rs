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
/// `(a, b)`, that `keep` keeps. `t` must be above zero. `mem` bounds the working memory of the
/// topic's inverted index (see [`counted_pairs`]).
///
/// `keep(i, j, pair)` sees every pair found (`i < j` its documents' indexes in `docs`), on any
/// thread: a caller that only needs a summary of the low-similarity pairs (the prevalence
/// levels) takes it there and keeps only the pairs it needs (those >= T), so the pairs down to
/// 0.1 (millions in a topic whose pages share a site's boilerplate) are never held.
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
    mem: u64,
    keep: Keep<'_>,
) -> Result<Vec<TopicPair>> {
    match sample {
        Sample::All | Sample::Mod(_) => counted_pairs(view, t, docs, mem, keep),
        _ => prefix_pairs(view, sample, t, docs, keep),
    }
}

/// Which found pairs [`topic_pairs`] returns: `keep(i, j, pair)`, `i < j` indexes in `docs`.
pub type Keep<'a> = &'a (dyn Fn(usize, usize, &TopicPair) -> bool + Sync);

/// Keeps every pair.
pub fn keep_all(_: usize, _: usize, _: &TopicPair) -> bool {
    true
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

/// Working bytes per stored feature of a topic's documents while its inverted index is built:
/// the `(feature, document)` entry (16 bytes) and its copy in the bucket sort.
pub const BYTES_PER_FEATURE: u64 = 32;

/// Documents per parallel task when the features are loaded.
const LOAD_CHUNK: usize = 256;

/// Bits of the key that choose its bucket in the bucket sort.
const BUCKET_BITS: u32 = 16;

/// Features whose in-topic posting lists are identical, counted once with a weight.
///
/// The pages of a site share its boilerplate, so its dozens of shingles have one and the same
/// posting list in a topic (every page of the site there); a near-duplicate cluster's shared
/// shingles likewise. Counting a group once with its weight costs `df²/2` for the group instead
/// of `df²/2` per feature, and adds exactly the same numbers.
#[derive(Default)]
struct Groups {
    /// Signature of a posting list -> the group holding it (the first group, on a collision).
    by_sig: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    /// Per group: where its posting list starts in `post`, its length, its features.
    start: Vec<usize>,
    len: Vec<u32>,
    weight: Vec<u32>,
    /// The posting lists (indexes into the topic's `docs`, ascending), one after another.
    post: Vec<u32>,
}

impl Groups {
    /// Adds the features of `entries` (sorted by `(feature, document)`) that occur in at least
    /// two documents; features in one document cannot make a pair.
    fn add_sorted(&mut self, entries: &[(u64, u32)]) {
        let mut s = 0;
        while s < entries.len() {
            let k = entries[s].0;
            let mut e = s + 1;
            while e < entries.len() && entries[e].0 == k {
                e += 1;
            }
            if e - s >= 2 {
                self.add_list(&entries[s..e]);
            }
            s = e;
        }
    }

    fn add_list(&mut self, list: &[(u64, u32)]) {
        let mut sig = list.len() as u64;
        for &(_, j) in list {
            sig = crate::fingerprint::hash::mix64(sig ^ j as u64);
        }
        match self.by_sig.entry(sig) {
            std::collections::hash_map::Entry::Occupied(o) => {
                let g = *o.get() as usize;
                let same = self.len[g] as usize == list.len()
                    && self.post[self.start[g]..self.start[g] + list.len()]
                        .iter()
                        .zip(list)
                        .all(|(&a, &(_, b))| a == b);
                if same {
                    self.weight[g] += 1;
                } else {
                    // Two lists with one signature: the second is a group of its own (not found
                    // by later lists, which only costs counting them apart).
                    self.push(list);
                }
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(self.len.len() as u32);
                self.push(list);
            }
        }
    }

    fn push(&mut self, list: &[(u64, u32)]) {
        self.start.push(self.post.len());
        self.len.push(list.len() as u32);
        self.weight.push(1);
        self.post.extend(list.iter().map(|&(_, j)| j));
    }
}

/// The topic's stored features with their keys in partition `part` of `parts` (all when
/// `parts` is 1), as `(feature, index in docs)` sorted, and the full feature count of each
/// document into `sizes` when `part` is 0.
fn sorted_entries(
    view: &View,
    docs: &[u32],
    part: u64,
    parts: u64,
    sizes: &mut [u32],
) -> Result<Vec<(u64, u32)>> {
    let in_part =
        |k: u64| parts == 1 || ((crate::fingerprint::hash::mix64(k) >> 32) * parts) >> 32 == part;
    let chunks: Vec<Result<(Vec<(u64, u32)>, Vec<u32>)>> = docs
        .par_chunks(LOAD_CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut buf = Vec::new();
            let mut out = Vec::new();
            let mut n = Vec::with_capacity(chunk.len());
            for (o, &d) in chunk.iter().enumerate() {
                view.features_into(d, &mut buf)?;
                n.push(buf.len() as u32);
                let i = (c * LOAD_CHUNK + o) as u32;
                out.extend(buf.iter().filter(|&&k| in_part(k)).map(|&k| (k, i)));
            }
            Ok((out, n))
        })
        .collect();
    let chunks: Vec<(Vec<(u64, u32)>, Vec<u32>)> = chunks.into_iter().collect::<Result<_>>()?;
    if part == 0 {
        for (c, (_, n)) in chunks.iter().enumerate() {
            sizes[c * LOAD_CHUNK..c * LOAD_CHUNK + n.len()].copy_from_slice(n);
        }
    }
    // Bucket sort: scatter by the key's top bits (keys are hashes), then sort each bucket.
    let shift = 64 - BUCKET_BITS;
    let mut counts = vec![0usize; (1 << BUCKET_BITS) + 1];
    for (out, _) in &chunks {
        for &(k, _) in out {
            counts[(k >> shift) as usize + 1] += 1;
        }
    }
    for b in 1..counts.len() {
        counts[b] += counts[b - 1];
    }
    let total = counts[counts.len() - 1];
    let mut sorted = vec![(0u64, 0u32); total];
    let mut at = counts.clone();
    for (out, _) in chunks {
        for (k, i) in out {
            let b = (k >> shift) as usize;
            sorted[at[b]] = (k, i);
            at[b] += 1;
        }
    }
    let mut buckets: Vec<&mut [(u64, u32)]> = Vec::with_capacity(1 << BUCKET_BITS);
    let mut rest: &mut [(u64, u32)] = &mut sorted;
    for b in 0..1 << BUCKET_BITS {
        let (head, tail) = rest.split_at_mut(counts[b + 1] - counts[b]);
        buckets.push(head);
        rest = tail;
    }
    buckets
        .into_par_iter()
        .with_min_len(256)
        .for_each(|b| b.sort_unstable());
    Ok(sorted)
}

/// Set resemblance by counting over an in-memory inverted index of the topic's features.
///
/// The topic's `(feature, document)` entries are bucket-sorted, the features found in one
/// document only are dropped, and features with identical in-topic posting lists become one
/// weighted group ([`Groups`]). Then for each document a dense counter adds, for each group it
/// is in, the group's weight to every later document of the group: a pair costs one increment
/// per shared group, and the total is `sum over groups of df²/2` within the topic.
///
/// When the entries would take more than `mem` bytes ([`BYTES_PER_FEATURE`] each), the
/// features are split by a hash of the key into partitions read one after another (each
/// document's list read once per partition); the groups of all partitions are kept.
pub fn counted_pairs(
    view: &View,
    t: Threshold,
    docs: &[u32],
    mem: u64,
    keep: Keep<'_>,
) -> Result<Vec<TopicPair>> {
    debug_assert!(docs.windows(2).all(|w| w[0] < w[1]));
    let n = docs.len();
    let features: u64 = docs.iter().map(|&d| view.size(d) as u64).sum();
    let parts = (features * BYTES_PER_FEATURE).div_ceil(mem.max(1)).max(1);
    let mut sizes = vec![0u32; n];
    let mut groups = Groups::default();
    for part in 0..parts {
        let entries = sorted_entries(view, docs, part, parts, &mut sizes)?;
        groups.add_sorted(&entries);
    }
    let Groups {
        start,
        len,
        weight,
        post,
        ..
    } = groups;
    // For each document, the groups it is in with a later document: (group, its position).
    let mut first = vec![0usize; n + 1];
    for g in 0..len.len() {
        for &i in &post[start[g]..start[g] + len[g] as usize - 1] {
            first[i as usize + 1] += 1;
        }
    }
    for i in 1..=n {
        first[i] += first[i - 1];
    }
    let mut member = vec![(0u32, 0u32); first[n]];
    let mut at = first.clone();
    for g in 0..len.len() {
        for (pos, &i) in post[start[g]..start[g] + len[g] as usize - 1]
            .iter()
            .enumerate()
        {
            member[at[i as usize]] = (g as u32, pos as u32);
            at[i as usize] += 1;
        }
    }
    drop(at);
    let found: Vec<Vec<TopicPair>> = (0..n)
        .into_par_iter()
        .map_init(
            || (vec![0u32; n], Vec::<u32>::new()),
            |(count, touched), i| {
                let mine = &member[first[i]..first[i + 1]];
                if mine.is_empty() {
                    return Vec::new();
                }
                touched.clear();
                for &(g, pos) in mine {
                    let g = g as usize;
                    let w = weight[g];
                    let s = start[g];
                    for &j in &post[s + pos as usize + 1..s + len[g] as usize] {
                        let c = &mut count[j as usize];
                        if *c == 0 {
                            touched.push(j);
                        }
                        *c += w;
                    }
                }
                touched.sort_unstable();
                let mut out = Vec::new();
                let a = sizes[i] as u64;
                for &j in touched.iter() {
                    let inter = std::mem::take(&mut count[j as usize]) as u64;
                    let denom = a + sizes[j as usize] as u64 - inter;
                    if t.admits(inter, denom) {
                        let p = TopicPair {
                            a: docs[i],
                            b: docs[j as usize],
                            inter,
                            denom,
                        };
                        if keep(i, j as usize, &p) {
                            out.push(p);
                        }
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
    keep: Keep<'_>,
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
                        let p = TopicPair {
                            a: docs[i],
                            b: docs[j as usize],
                            inter: c.inter,
                            denom: c.denom,
                        };
                        if keep(i, j as usize, &p) {
                            out.push(p);
                        }
                    }
                }
                out
            },
        )
        .collect();
    Ok(found.into_iter().flatten().collect())
}
