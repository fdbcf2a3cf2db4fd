//! Nightly increments on generated corpora: five batches ingested one after another give the
//! same pairs and the same partition into clusters as the same documents ingested at once, and
//! the clusters at T = 0.8 recover every planted cluster whose members are truly >= 0.8 similar
//! (exact Jaccard of 5-word shingle sets, computed here with the library's canonicalize +
//! fingerprint).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::common::*;
use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::fingerprint::fingerprint;
use ndd_index::IndexOptions;

const BATCHES: usize = 5;

/// Hard-links every file under `from` into `to` at the same relative path.
fn link_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            link_tree(&e.path(), &dst);
        } else {
            std::fs::hard_link(e.path(), &dst).unwrap();
        }
    }
}

/// Every file under `dir` by its key (path relative to `root`).
fn files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(root, &p, out);
        } else {
            let key = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((key, p));
        }
    }
}

/// The partition printed by `clusters --json` (at `--threshold t`), as sets of keys.
fn partition(idx: &TestIndex, t: Option<&str>) -> BTreeSet<BTreeSet<String>> {
    let extra = t.map(|t| vec!["--threshold", t]).unwrap_or_default();
    idx.clusters_with(&extra)
        .into_iter()
        .map(|c| c.members.into_iter().collect())
        .collect()
}

#[test]
fn five_batches_equal_one_bulk_ingest_and_recover_planted_clusters() {
    let tmp = temp_dir("incr");
    let corpus = tmp.path().join("corpus");
    // A low edit rate so that many planted clusters are truly >= 0.8 similar, and some are not.
    ndd_gen(&[
        "--out",
        corpus.to_str().unwrap(),
        "--docs",
        "1500",
        "--batches",
        "5",
        "--edit-rate",
        "0.015",
        "--seed",
        "11",
        "--quiet",
    ]);
    let incr = TestIndex::at(tmp.path().join("incr"));
    let bulk = TestIndex::at(tmp.path().join("bulk"));
    let all = tmp.path().join("all");
    std::fs::create_dir_all(&all).unwrap();
    for b in 1..=BATCHES {
        let dir = corpus.join(format!("batch-{b:02}"));
        incr.ingest(&[&dir], &[]);
        link_tree(&dir, &all);
    }
    bulk.ingest(&[&all], &[]);

    for t in ["0.8", "0.5"] {
        let (pi, pb) = (pair_map(&incr.pairs(t)), pair_map(&bulk.pairs(t)));
        assert!(pi.len() > 50, "T={t}: only {} pairs", pi.len());
        assert_eq!(pi, pb, "T={t}: incremental and bulk pairs differ");
        assert_eq!(
            partition(&incr, Some(t)),
            partition(&bulk, Some(t)),
            "T={t}"
        );
    }
    // The clusters kept at ingest (T = 0.8, the default), batch by batch vs at once.
    let kept = partition(&incr, None);
    assert_eq!(kept, partition(&bulk, None));
    assert_eq!(kept, partition(&incr, Some("0.8")));

    // Planted clusters whose members are connected by exact-Jaccard >= 0.8 edges must each lie
    // inside one found cluster.
    let truth = gen_truth(&corpus);
    let fp_opts = IndexOptions::default().fingerprint().unwrap();
    let mut paths = Vec::new();
    files(&all, &all, &mut paths);
    let features: HashMap<String, Vec<u64>> = paths
        .iter()
        .map(|(k, p)| {
            let bytes = std::fs::read(p).unwrap();
            let canon = canonicalize(&bytes, DocFormat::Html, None).unwrap();
            (k.clone(), fingerprint(&canon.text, &fp_opts).features)
        })
        .collect();
    let jaccard = |a: &[u64], b: &[u64]| {
        let (mut i, mut j, mut inter) = (0, 0, 0usize);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    inter += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        inter as f64 / (a.len() + b.len() - inter) as f64
    };
    let mut planted: HashMap<&str, Vec<&str>> = HashMap::new();
    for (k, label) in &truth {
        planted.entry(label.as_str()).or_default().push(k.as_str());
    }
    let found_of: HashMap<&str, usize> = kept
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.iter().map(move |k| (k.as_str(), i)))
        .collect();
    let (mut checked, mut not_similar) = (0, 0);
    for members in planted.values().filter(|m| m.len() > 1) {
        let mut uf = ndd_index::cluster::UnionFind::new();
        for i in 0..members.len() {
            for j in i + 1..members.len() {
                if jaccard(&features[members[i]], &features[members[j]]) >= 0.8 {
                    uf.union(i as u32, j as u32);
                }
            }
        }
        let whole = (0..members.len() as u32).all(|i| uf.find(i) == uf.find(0));
        if !whole {
            not_similar += 1;
            continue;
        }
        checked += 1;
        let c = found_of
            .get(members[0])
            .unwrap_or_else(|| panic!("{members:?} not clustered"));
        for m in members {
            assert_eq!(
                found_of.get(m),
                Some(c),
                "planted cluster {members:?} split"
            );
        }
    }
    eprintln!("{checked} planted clusters >= 0.8 recovered whole; {not_similar} below 0.8");
    assert!(
        checked >= 30 && not_similar > 0,
        "{checked} / {not_similar}"
    );
}
