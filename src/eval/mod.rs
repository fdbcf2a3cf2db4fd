//! Built-in evaluation (`ndd-index eval`, `tune`): each method's pairs and clusters against a
//! truth file ([`truth`]), by size group ([`groups`]), and the tuning of adaptive sampling
//! ([`tune`]). Evaluation sits above the methods: it calls them and scores what they find.
//!
//! Truth files (tab-separated, one header line):
//! - **pairs**: `key_a  key_b  jaccard [...]` (3 or more columns). With a manifest
//!   (`doc_id  path ...`, the shared corpus's `manifest.tsv`) the first two columns are doc ids
//!   translated to paths, so the corpus's `truth.tsv` is read as it is. Positives at threshold
//!   T: the pairs with jaccard >= T.
//! - **labels**: `key  label` (2 columns); positives: the pairs of keys with the same label.
//!
//! Per method and threshold: found pairs, true positives, precision, recall, F1. For pair
//! truth, the method's similarity is also compared with the exact Jaccard over the found pairs
//! the truth lists (mean absolute error, Pearson correlation; the Waterloo thesis's measures).
//! For labels, Chowdhury et al.'s measures over the true clusters of 2 or more documents:
//! `found_ratio` = sum over true clusters of (documents in its largest method cluster - 1) /
//! sum of (size - 1), and `clusters_per_true_cluster` = mean number of method clusters
//! (singletons included) a true cluster's documents fall into; `found_ratio_docs` = the share
//! of the true clusters' documents that are in a method cluster with at least one other
//! document of their own true cluster (Chowdhury et al.'s Table III: their per-original
//! values are multiples of 1/11, e.g. 100% with 3 clusters).
//!
//! Only shingle depends on the threshold; the other methods' pairs are computed once (their
//! own settings are fixed by the index options; combined uses its default C-similarity) and
//! scored against each threshold's positives.

pub mod groups;
pub mod plot;
pub mod sites;
pub mod truth;
pub mod tune;

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::index::Index;
use crate::method::{pairs, Method, MethodPair};
use crate::threshold::Threshold;

pub use groups::{Docs, GroupScore};
pub use sites::{HenzingerSplit, SiteScore};
use truth::ordered;
pub use truth::Truth;

/// One row of the evaluation.
#[derive(Clone, Debug, Serialize)]
pub struct EvalRow {
    pub method: Method,
    pub threshold: f64,
    pub found: u64,
    pub positives: u64,
    pub true_positives: u64,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_abs_error: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters_per_true_cluster: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_ratio_docs: Option<f64>,
    /// Pair truth: precision and recall by document-size group (Ye et al.), the pair's group
    /// being that of its larger document ([`groups`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_size_group: Vec<GroupScore>,
    /// Precision and recall of the pairs whose documents are on the same site, and of the
    /// others (`eval::sites`); positives are the indexed positive pairs of that kind.
    pub same_site: SiteScore,
    pub different_site: SiteScore,
}

/// Evaluates `methods` at `thresholds` against `truth`. Methods whose data the index does not
/// store are skipped (listed in the second value).
pub fn evaluate(
    index: &Index,
    truth: &Truth,
    methods: &[Method],
    thresholds: &[Threshold],
) -> Result<(Vec<EvalRow>, Vec<(Method, String)>)> {
    let docs = Docs::load(index)?;
    let keys = &docs.keys;
    let groups = groups::index_groups(index)?;
    let site_of = index.sites()?;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for &m in methods {
        let mut cached: Option<(Vec<MethodPair>, f64)> = None;
        for &t in thresholds {
            let started = std::time::Instant::now();
            let (found, secs) = if m == Method::Shingle {
                (pairs(index, m, Some(t)), None)
            } else if let Some((p, s)) = &cached {
                (Ok(p.clone()), Some(*s))
            } else {
                (pairs(index, m, None), None)
            };
            let found = match found {
                Ok(f) => f,
                Err(Error::InvalidArgument(why)) => {
                    skipped.push((m, why));
                    break;
                }
                Err(e) => return Err(e),
            };
            let secs = secs.unwrap_or_else(|| started.elapsed().as_secs_f64());
            if m != Method::Shingle && cached.is_none() {
                cached = Some((found.clone(), secs));
            }
            let mut row = score(m, t.as_f64(), &found, keys, truth, index, secs);
            let pos = sites::positive_pairs(&docs, truth, t.as_f64());
            (row.same_site, row.different_site) =
                sites::split_scores(&site_of, found.iter().map(|p| (p.a, p.b)), &pos);
            if let Truth::Pairs(_) = truth {
                let found = found.iter().map(|p| (p.a, p.b));
                row.by_size_group = groups::by_group(&docs, &groups, found, &pos);
            }
            rows.push(row);
        }
    }
    Ok((rows, skipped))
}

fn score(
    m: Method,
    t: f64,
    found: &[MethodPair],
    keys: &[String],
    truth: &Truth,
    index: &Index,
    seconds: f64,
) -> EvalRow {
    let key = |d: u32| keys.get(d as usize).map_or("", |s| s.as_str());
    let mut row = EvalRow {
        method: m,
        threshold: t,
        found: found.len() as u64,
        positives: 0,
        true_positives: 0,
        precision: 0.0,
        recall: 0.0,
        f1: 0.0,
        seconds,
        mean_abs_error: None,
        correlation: None,
        found_ratio: None,
        found_ratio_docs: None,
        clusters_per_true_cluster: None,
        by_size_group: Vec::new(),
        same_site: SiteScore::default(),
        different_site: SiteScore::default(),
    };
    match truth {
        Truth::Pairs(j) => {
            row.positives = j.values().filter(|&&x| x >= t).count() as u64;
            let mut est: Vec<(f64, f64)> = Vec::new();
            for p in found {
                if let Some(&x) = j.get(&ordered(key(p.a), key(p.b))) {
                    est.push((p.similarity, x));
                    if x >= t {
                        row.true_positives += 1;
                    }
                }
            }
            if !est.is_empty() {
                let n = est.len() as f64;
                row.mean_abs_error = Some(est.iter().map(|(a, b)| (a - b).abs()).sum::<f64>() / n);
                row.correlation = pearson(&est);
            }
        }
        Truth::Labels(l) => {
            let mut by: HashMap<&str, Vec<u32>> = HashMap::new();
            let view = index.view();
            for d in 0..keys.len() as u32 {
                if view.is_live(d) {
                    if let Some(lab) = l.get(key(d)) {
                        by.entry(lab.as_str()).or_default().push(d);
                    }
                }
            }
            let n_pos: u64 = by
                .values()
                .map(|g| (g.len() * (g.len() - 1) / 2) as u64)
                .sum();
            row.positives = n_pos;
            let lab = |d: u32| l.get(key(d));
            row.true_positives = found
                .iter()
                .filter(|p| lab(p.a).is_some() && lab(p.a) == lab(p.b))
                .count() as u64;
            let comps = crate::cluster::components(found.iter().map(|p| (p.a, p.b)));
            let mut cl: HashMap<u32, usize> = HashMap::new();
            for (i, c) in comps.iter().enumerate() {
                for &d in c {
                    cl.insert(d, i);
                }
            }
            let (mut num, mut den, mut clusters, mut groups) = (0usize, 0usize, 0usize, 0usize);
            let (mut docs_found, mut docs_all) = (0usize, 0usize);
            for g in by.values().filter(|g| g.len() > 1) {
                let mut count: HashMap<Option<usize>, usize> = HashMap::new();
                let mut distinct = HashSet::new();
                for &d in g {
                    let c = cl.get(&d).copied();
                    // A document in no method cluster is a cluster of its own.
                    distinct.insert(c.map_or(usize::MAX - d as usize, |c| c));
                    if c.is_some() {
                        *count.entry(c).or_insert(0) += 1;
                    }
                }
                let largest = count.values().copied().max().unwrap_or(1);
                docs_found += count.values().filter(|&&n| n >= 2).sum::<usize>();
                docs_all += g.len();
                num += largest - 1;
                den += g.len() - 1;
                clusters += distinct.len();
                groups += 1;
            }
            if groups > 0 {
                row.found_ratio = Some(num as f64 / den as f64);
                row.clusters_per_true_cluster = Some(clusters as f64 / groups as f64);
                row.found_ratio_docs = Some(docs_found as f64 / docs_all as f64);
            }
        }
    }
    row.precision = ratio(row.true_positives, row.found);
    row.recall = ratio(row.true_positives, row.positives);
    row.f1 = if row.precision + row.recall > 0.0 {
        2.0 * row.precision * row.recall / (row.precision + row.recall)
    } else {
        0.0
    };
    row
}

/// tp / n, 1 when n = 0 (nothing claimed is nothing wrong; nothing to find is all found).
fn ratio(tp: u64, n: u64) -> f64 {
    if n == 0 {
        1.0
    } else {
        tp as f64 / n as f64
    }
}

fn pearson(v: &[(f64, f64)]) -> Option<f64> {
    let n = v.len() as f64;
    if v.len() < 2 {
        return None;
    }
    let (ma, mb) = (
        v.iter().map(|e| e.0).sum::<f64>() / n,
        v.iter().map(|e| e.1).sum::<f64>() / n,
    );
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (a, b) in v {
        sab += (a - ma) * (b - mb);
        saa += (a - ma) * (a - ma);
        sbb += (b - mb) * (b - mb);
    }
    if saa == 0.0 || sbb == 0.0 {
        return None;
    }
    Some(sab / (saa * sbb).sqrt())
}

/// A warning when no key of the truth file is indexed (a wrong root folder or manifest makes
/// every figure 0 otherwise, without a hint); `None` when some key matches.
pub fn unmatched_warning(index: &Index, truth: &Truth) -> Result<Option<String>> {
    let docs = Docs::load(index)?;
    Ok((!docs.matches_any(truth)).then(|| {
        let example = docs
            .keys
            .iter()
            .find(|k| !k.is_empty())
            .cloned()
            .unwrap_or_default();
        format!(
            "no key of the truth file is indexed (indexed keys look like {example:?}); \
             check the ingested folder or --manifest"
        )
    }))
}
