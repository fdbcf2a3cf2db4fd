//! Precision and recall by document-size group (Ye, Wen and Ma's table).
//!
//! A pair belongs to the size group of its larger document (by distinct shingles): with
//! non-decreasing moduli that document's modulus is the one the pair is compared at, so the
//! group's ratio alone decides the group's precision.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::error::Result;
use crate::fingerprint::adaptive::SizeGroups;
use crate::fingerprint::Sample;
use crate::index::Index;

use super::truth::Truth;

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
