//! `tune`: the smallest sampling ratio per size group that reaches a precision target on a
//! sample with exact truth (src/fingerprint/adaptive.rs). The groups are tuned one after the
//! other, smallest first (see [`super::groups`]).

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::fingerprint::adaptive::SizeGroups;
use crate::fingerprint::Sample;
use crate::index::Index;
use crate::threshold::Threshold;

use super::groups::{by_group, Docs, GroupScore};
use super::truth::Truth;

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
