//! Simhash near-duplicates through Manku's permuted tables (format-spec/segment.md, SIMHASH
//! tables; format-spec/fingerprints.md §9).
//!
//! Table `SIMHASH_BASE + t` of a segment maps the t-th permutation of a document's 64-bit
//! simhash to the documents having it. Two simhashes within Hamming distance k agree on the
//! prefix of at least one table, so:
//! - a query range-scans, in every table, the keys sharing its permuted prefix and keeps
//!   those within distance k (a bit permutation keeps Hamming distances);
//! - all pairs: per table, every segment's entries merged into one sorted list, cut into runs
//!   of equal prefix, every pair of a run checked; pairs found by several tables are deduped.
//!
//! Similarity is reported as 1 - hamming/64 (so k = 3 means similarity >= 0.953), or, when
//! the index verifies candidates (`verify`, format-spec/fingerprints.md §8.3), as the
//! resemblance of the two documents' stored shingle features, and only pairs reaching the
//! verification threshold are reported.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::fingerprint::manku::PermutedTables;
use crate::fingerprint::simhash::hamming;
use crate::fingerprint::Sample;
use crate::segment::{self, simhash_table};
use crate::threshold::Threshold;
use crate::view::View;

use super::{missing_table, table_postings, MethodPair};

/// The method's similarity for a Hamming distance.
pub fn similarity(h: u32) -> f64 {
    1.0 - h as f64 / 64.0
}

fn pair(a: u32, b: u32, h: u32) -> MethodPair {
    let mut p = MethodPair::new(a, b, similarity(h));
    p.hamming = Some(h);
    p
}

/// Candidate verification: the stored features compared under the index's sampling.
#[derive(Clone, Copy, Debug)]
pub struct Verify {
    pub sample: Sample,
    pub threshold: Threshold,
}

impl Verify {
    /// The resemblance of `a` and `b` if it reaches the threshold.
    pub fn check(&self, a: &[u64], b: &[u64]) -> Option<f64> {
        self.sample
            .verify(a, b, self.threshold)
            .map(|ov| ov.resemblance)
    }
}

/// Every pair of live documents whose simhashes differ in at most k bits (and, with
/// `verify`, whose stored features reach its resemblance threshold).
pub fn pairs(
    view: &View,
    tables: PermutedTables,
    verify: Option<Verify>,
) -> Result<Vec<MethodPair>> {
    let mut found = candidate_pairs(view, tables)?;
    let Some(v) = verify else {
        return Ok(found);
    };
    // Sorted by a, so each document's features are read once as the left side.
    found.sort_unstable_by_key(|p| (p.a, p.b));
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    let mut left: Option<(u32, bool)> = None;
    let mut out = Vec::with_capacity(found.len());
    for mut p in found {
        if left.is_none_or(|(d, _)| d != p.a) {
            left = Some((p.a, view.features_into(p.a, &mut fa)?));
        }
        if left.is_some_and(|(_, ok)| !ok) || !view.features_into(p.b, &mut fb)? {
            continue;
        }
        if let Some(r) = v.check(&fa, &fb) {
            p.similarity = r;
            out.push(p);
        }
    }
    Ok(out)
}

/// Every pair of live documents whose simhashes differ in at most k bits.
fn candidate_pairs(view: &View, tables: PermutedTables) -> Result<Vec<MethodPair>> {
    let k = tables.k();
    let mut seen: HashSet<(u32, u32)> = HashSet::new();
    let mut out = Vec::new();
    for t in 0..tables.tables() {
        let entries = table_postings(view, simhash_table(t as u32))?;
        let shift = 64 - tables.prefix_bits(t);
        let prefix = |key: u64| if shift >= 64 { 0 } else { key >> shift };
        let mut start = 0;
        while start < entries.len() {
            let p = prefix(entries[start].0);
            let end = start
                + entries[start..]
                    .iter()
                    .take_while(|e| prefix(e.0) == p)
                    .count();
            let run = &entries[start..end];
            for (i, &(ki, di)) in run.iter().enumerate() {
                for &(kj, dj) in &run[i + 1..] {
                    let h = hamming(ki, kj);
                    if h <= k && di != dj {
                        let key = if di < dj { (di, dj) } else { (dj, di) };
                        if seen.insert(key) {
                            out.push(pair(key.0, key.1, h));
                        }
                    }
                }
            }
            start = end;
        }
    }
    Ok(out)
}

/// Live documents whose simhash is within distance k of `fp`: (doc, hamming), by doc id.
pub fn query(view: &View, tables: &PermutedTables, fp: u64) -> Result<Vec<(u32, u32)>> {
    let k = tables.k();
    let mut found: Vec<(u32, u32)> = Vec::new();
    for s in &view.segments {
        if s.entry.doc_hi <= s.entry.doc_lo {
            continue;
        }
        for t in 0..tables.tables() {
            let id = simhash_table(t as u32);
            if !s.seg.contains_table(id) {
                return Err(missing_table(s.seg.path(), id));
            }
            let (lo, hi) = tables.prefix_range(t, fp);
            let q = tables.permute(t, fp);
            for item in s.seg.range(id, lo, hi) {
                let (key, bytes) = item?;
                let h = hamming(key, q);
                if h > k {
                    continue;
                }
                let list = segment::decode_postings(bytes)
                    .map_err(|e| Error::corrupt(s.seg.path(), 0, format!("table {id}: {e}")))?;
                list.for_each(|d| {
                    if view.is_live(d) {
                        found.push((d, h))
                    }
                });
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// The (permuted key, doc) entries of table `t` for a batch of (doc, simhash), sorted: what
/// the ingest writes (one posting list per distinct key).
pub use crate::build::table_entries;
