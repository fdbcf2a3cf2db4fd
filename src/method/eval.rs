//! Built-in evaluation: each method's pairs and clusters against a truth file.
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
//! (singletons included) a true cluster's documents fall into.
//!
//! Only shingle depends on the threshold; the other methods' pairs are computed once (their
//! own settings are fixed by the index options; combined uses its default C-similarity) and
//! scored against each threshold's positives.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, IoResultExt, Result};
use crate::index::Index;
use crate::threshold::Threshold;

use super::{pairs, Method, MethodPair};

/// A truth file, by keys.
pub enum Truth {
    /// (key_a, key_b) ordered -> exact Jaccard.
    Pairs(HashMap<(String, String), f64>),
    /// key -> label.
    Labels(HashMap<String, String>),
}

fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

fn lines(path: &Path) -> Result<impl Iterator<Item = Result<(usize, String)>>> {
    let f = std::fs::File::open(path).at(path)?;
    let p = path.to_owned();
    Ok(BufReader::new(f)
        .lines()
        .enumerate()
        .map(move |(i, l)| l.at(&p).map(|l| (i + 1, l))))
}

impl Truth {
    /// Reads a truth file; `manifest` maps doc ids to keys for id-based pair truth.
    pub fn load(path: &Path, manifest: Option<&Path>) -> Result<Truth> {
        let ids: Option<HashMap<String, String>> = match manifest {
            None => None,
            Some(m) => {
                let mut map = HashMap::new();
                for item in lines(m)?.skip(1) {
                    let (_, l) = item?;
                    let mut f = l.split('\t');
                    if let (Some(id), Some(p)) = (f.next(), f.next()) {
                        map.insert(id.to_owned(), p.to_owned());
                    }
                }
                Some(map)
            }
        };
        let mut it = lines(path)?;
        let header = match it.next() {
            Some(h) => h?.1,
            None => return Err(bad(path, 1, "empty truth file")),
        };
        let cols = header.split('\t').count();
        if cols == 2 {
            let mut labels = HashMap::new();
            for item in it {
                let (n, l) = item?;
                if l.is_empty() {
                    continue;
                }
                let (k, lab) = l
                    .split_once('\t')
                    .ok_or_else(|| bad(path, n, "expected key<TAB>label"))?;
                labels.insert(k.to_owned(), lab.to_owned());
            }
            return Ok(Truth::Labels(labels));
        }
        if cols < 3 {
            return Err(bad(
                path,
                1,
                "header must have 2 (labels) or 3+ (pairs) columns",
            ));
        }
        let mut pairs = HashMap::new();
        for item in it {
            let (n, l) = item?;
            if l.is_empty() {
                continue;
            }
            let mut f = l.split('\t');
            let (Some(a), Some(b), Some(j)) = (f.next(), f.next(), f.next()) else {
                return Err(bad(path, n, "expected key_a<TAB>key_b<TAB>jaccard"));
            };
            let j: f64 = j
                .parse()
                .map_err(|_| bad(path, n, "jaccard is not a number"))?;
            let (a, b) = match &ids {
                Some(m) => (
                    m.get(a)
                        .ok_or_else(|| bad(path, n, "doc id not in the manifest"))?
                        .as_str(),
                    m.get(b)
                        .ok_or_else(|| bad(path, n, "doc id not in the manifest"))?
                        .as_str(),
                ),
                None => (a, b),
            };
            pairs.insert(ordered(a, b), j);
        }
        Ok(Truth::Pairs(pairs))
    }
}

fn bad(path: &Path, line: usize, why: &str) -> Error {
    Error::InvalidArgument(format!("{}:{line}: {why}", path.display()))
}

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
    /// Pair truth: precision and recall by document-size group (Ye et al.), the pair's group
    /// being that of its larger document (src/method/tune.rs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_size_group: Vec<super::tune::GroupScore>,
}

/// Evaluates `methods` at `thresholds` against `truth`. Methods whose data the index does not
/// store are skipped (listed in the second value).
pub fn evaluate(
    index: &Index,
    truth: &Truth,
    methods: &[Method],
    thresholds: &[Threshold],
) -> Result<(Vec<EvalRow>, Vec<(Method, String)>)> {
    let docs = super::tune::Docs::load(index)?;
    let keys = &docs.keys;
    let groups = super::tune::index_groups(index)?;
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
            if let Truth::Pairs(_) = truth {
                let pos = docs.positives(truth, t.as_f64());
                let found = found.iter().map(|p| (p.a, p.b));
                row.by_size_group = super::tune::by_group(&docs, &groups, found, &pos);
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
        clusters_per_true_cluster: None,
        by_size_group: Vec::new(),
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
                num += largest - 1;
                den += g.len() - 1;
                clusters += distinct.len();
                groups += 1;
            }
            if groups > 0 {
                row.found_ratio = Some(num as f64 / den as f64);
                row.clusters_per_true_cluster = Some(clusters as f64 / groups as f64);
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
