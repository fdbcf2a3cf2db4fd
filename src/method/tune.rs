//! Precision and recall by document-size group (Ye, Wen and Ma's table), and `tune`: the
//! smallest sampling ratio per size group that reaches a precision target on a sample with
//! exact truth (src/fingerprint/adaptive.rs).
//!
//! A pair belongs to the size group of its larger document (by distinct shingles): with
//! non-decreasing moduli that document's modulus is the one the pair is compared at, so the
//! group's ratio alone decides the group's precision, and the groups can be tuned one after
//! the other, smallest first.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::fingerprint::adaptive::SizeGroups;
use crate::fingerprint::Sample;
use crate::index::Index;
use crate::threshold::Threshold;

use super::eval::Truth;

/// Precision and recall of one size group.
#[derive(Clone, Debug, Serialize)]
pub struct GroupScore {
    /// `LO-HI` or `LO-` distinct shingles.
    pub group: String,
    /// The group's sampling modulus (1 in m shingles kept).
    pub modulus: u64,
    pub documents: u64,
    pub found: u64,
    pub positives: u64,
    pub true_positives: u64,
    pub precision: f64,
    pub recall: f64,
}

/// Per document: key and distinct-shingle count, indexed by doc id.
pub struct Docs {
    pub keys: Vec<String>,
    pub shingles: Vec<u32>,
    by_key: HashMap<String, u32>,
}

impl Docs {
    pub fn load(index: &Index) -> Result<Docs> {
        let n = index.view().doc_ids() as usize;
        let (mut keys, mut shingles) = (vec![String::new(); n], vec![0u32; n]);
        let mut by_key = HashMap::new();
        for item in index.catalog().iter_docs() {
            let (d, r) = item?;
            if (d as usize) < n && index.view().is_live(d) {
                by_key.insert(r.key.clone(), d);
                keys[d as usize] = r.key;
                shingles[d as usize] = r.shingles;
            }
        }
        Ok(Docs {
            keys,
            shingles,
            by_key,
        })
    }

    /// The pair's group: that of its larger document.
    fn group(&self, g: &SizeGroups, a: u32, b: u32) -> usize {
        let s = |d: u32| self.shingles.get(d as usize).copied().unwrap_or(0);
        g.group_of(s(a).max(s(b)))
    }

    /// Positive pairs at `t` (both keys indexed), as ordered doc ids.
    pub fn positives(&self, truth: &Truth, t: f64) -> HashSet<(u32, u32)> {
        let mut out = HashSet::new();
        if let Truth::Pairs(j) = truth {
            for ((ka, kb), &x) in j {
                if x < t {
                    continue;
                }
                if let (Some(&a), Some(&b)) = (self.by_key.get(ka), self.by_key.get(kb)) {
                    out.insert((a.min(b), a.max(b)));
                }
            }
        }
        out
    }

    /// True when some key of the truth is indexed (`eval` warns otherwise).
    pub fn matches_any(&self, truth: &Truth) -> bool {
        match truth {
            Truth::Pairs(j) => j
                .keys()
                .any(|(a, b)| self.by_key.contains_key(a) || self.by_key.contains_key(b)),
            Truth::Labels(l) => l.keys().any(|k| self.by_key.contains_key(k)),
        }
    }
}

/// Scores found pairs by size group against the positives.
pub fn by_group(
    docs: &Docs,
    g: &SizeGroups,
    found: impl Iterator<Item = (u32, u32)>,
    positives: &HashSet<(u32, u32)>,
) -> Vec<GroupScore> {
    let mut rows: Vec<GroupScore> = (0..g.len())
        .map(|i| {
            let (lo, hi, m) = g.group(i);
            GroupScore {
                group: hi.map_or(format!("{lo}-"), |hi| format!("{lo}-{hi}")),
                modulus: m,
                documents: 0,
                found: 0,
                positives: 0,
                true_positives: 0,
                precision: 1.0,
                recall: 1.0,
            }
        })
        .collect();
    for (d, key) in docs.keys.iter().enumerate() {
        if !key.is_empty() {
            rows[g.group_of(docs.shingles[d])].documents += 1;
        }
    }
    for &(a, b) in positives {
        rows[docs.group(g, a, b)].positives += 1;
    }
    for (a, b) in found {
        let r = &mut rows[docs.group(g, a, b)];
        r.found += 1;
        r.true_positives += positives.contains(&(a.min(b), a.max(b))) as u64;
    }
    for r in &mut rows {
        if r.found > 0 {
            r.precision = r.true_positives as f64 / r.found as f64;
        }
        if r.positives > 0 {
            r.recall = r.true_positives as f64 / r.positives as f64;
        }
    }
    rows
}

/// The size groups of an index: its adaptive table, or the default table's groups.
pub fn index_groups(index: &Index) -> Result<SizeGroups> {
    match index.options().sample()? {
        Sample::Adaptive(g) => Ok(g),
        _ => crate::fingerprint::adaptive::DEFAULT_SIZE_GROUPS.parse(),
    }
}

/// The result of `tune`: the chosen table and its per-group scores.
#[derive(Clone, Debug, Serialize)]
pub struct Tuned {
    pub table: String,
    pub precision_target: f64,
    pub threshold: f64,
    pub groups: Vec<GroupScore>,
}

/// Largest modulus tried.
const MAX_MODULUS: u64 = 1024;

/// Picks, group by group (smallest documents first), the largest power-of-two modulus (the
/// smallest ratio) whose pairs in that group reach `target` precision at threshold `t`; a
/// group where even the densest allowed ratio misses the target keeps it. A group with no
/// positives and nothing found passes; one with positives and nothing found fails. The index
/// must store every shingle (`--sample all`): the samples are taken from its features.
pub fn tune(
    index: &Index,
    truth: &Truth,
    groups: SizeGroups,
    target: f64,
    t: Threshold,
) -> Result<Tuned> {
    if index.options().sample()? != Sample::All {
        return Err(Error::InvalidArgument(
            "tune needs an index created with --sample all (it resamples the full shingle sets)"
                .into(),
        ));
    }
    if t.as_f64() <= 0.0 {
        return Err(Error::InvalidArgument(
            "tune needs a threshold above 0".into(),
        ));
    }
    let docs = Docs::load(index)?;
    let positives = docs.positives(truth, t.as_f64());
    let view = index.view();
    let mut full: Vec<Vec<u64>> = vec![Vec::new(); docs.keys.len()];
    for (d, f) in full.iter_mut().enumerate() {
        if !docs.keys[d].is_empty() {
            view.features_into(d as u32, f)?;
        }
    }
    let mut chosen: Vec<u64> = Vec::new();
    let mut scores = Vec::new();
    for gi in 0..groups.len() {
        let floor = chosen.last().copied().unwrap_or(1);
        let mut m = MAX_MODULUS.max(floor);
        let mut pick = None;
        while m >= floor {
            let mut table: Vec<u64> = chosen.clone();
            table.resize(groups.len(), m);
            let g = groups.with_moduli(&table)?;
            let found = group_pairs(&g, gi, &full, &docs, t);
            let row = by_group(&docs, &g, found.into_iter(), &positives).swap_remove(gi);
            let pass = row.precision >= target && (row.found > 0 || row.positives == 0);
            if pass || m == floor {
                pick = Some((m, row));
                break;
            }
            m /= 2;
        }
        // The loop runs at least once (m starts >= floor) and stops at the floor.
        let (m, row) = pick.expect("the densest allowed modulus is always scored");
        chosen.push(m);
        scores.push(row);
    }
    let g = groups.with_moduli(&chosen)?;
    Ok(Tuned {
        table: g.to_string(),
        precision_target: target,
        threshold: t.as_f64(),
        groups: scores,
    })
}

/// Pairs of group `gi` (larger document in `gi`) found under table `g`, by an in-memory
/// prefix-filtered search over the resampled sets.
fn group_pairs(
    g: &SizeGroups,
    gi: usize,
    full: &[Vec<u64>],
    docs: &Docs,
    t: Threshold,
) -> Vec<(u32, u32)> {
    let size = |d: usize| (docs.shingles[d], d);
    let sampled: Vec<Option<Vec<u64>>> = full
        .par_iter()
        .enumerate()
        .map(|(d, f)| {
            let live = !docs.keys[d].is_empty() && g.group_of(docs.shingles[d]) <= gi;
            live.then(|| g.apply(f.clone()))
        })
        .collect();
    let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
    for (d, s) in sampled.iter().enumerate() {
        for &h in s.iter().flatten() {
            postings.entry(h).or_default().push(d as u32);
        }
    }
    let sample = Sample::Adaptive(*g);
    (0..sampled.len())
        .into_par_iter()
        .filter(|&a| g.group_of(docs.shingles[a]) == gi)
        .flat_map_iter(|a| {
            let x = sampled[a].as_deref().unwrap_or(&[]);
            let mut cand: Vec<u32> = g
                .probes(x, t, |_| 0)
                .iter()
                .filter_map(|h| postings.get(h))
                .flatten()
                .copied()
                .filter(|&b| size(b as usize) < size(a))
                .collect();
            cand.sort_unstable();
            cand.dedup();
            cand.into_iter()
                .filter(|&b| {
                    let y = sampled[b as usize].as_deref().unwrap_or(&[]);
                    sample.similar(x, y, t)
                })
                .map(|b| (b.min(a as u32), b.max(a as u32)))
                .collect::<Vec<_>>()
        })
        .collect()
}
