//! On the shared llvm-docs corpus, `--shingle-words 5 --sample all` must reproduce the exact
//! ground truth: pairs, resemblance values, incremental batches, queries and clusters.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::common::*;

/// The corpus indexed in one batch (shared by the tests of this file).
fn one_batch_index() -> Option<(PathBuf, TestIndex)> {
    static IDX: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    let (corpus, idx) = IDX
        .get_or_init(|| {
            let corpus = corpus_dir()?;
            let docs = extracted(&corpus);
            // A fixed path (replaced on every run) so that repeated runs leave nothing behind.
            let idx = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("corpus-exact-one-batch.idx");
            let _ = std::fs::remove_dir_all(&idx);
            TestIndex::at(&idx).ingest(&[&docs], &["--shingle-words", "5", "--sample", "all"]);
            Some((corpus, idx))
        })
        .clone()?;
    Some((corpus, TestIndex::at(idx)))
}

#[test]
fn pairs_agree_with_exact_truth() {
    let Some((corpus, idx)) = one_batch_index() else {
        return;
    };
    let truth = Truth::load(&corpus);
    let jac = truth.jaccard();
    for (t, min_pr) in [("0.8", 0.99), ("0.5", 0.98)] {
        let found = pair_map(&idx.pairs(t));
        let keys: HashSet<_> = found.keys().cloned().collect();
        let expect = truth.pairs_at(t.parse().unwrap());
        let (p, r) = precision_recall(&keys, &expect);
        eprintln!(
            "T={t}: found {} pairs, truth {}, precision {p:.5}, recall {r:.5}",
            keys.len(),
            expect.len()
        );
        assert!(
            p >= min_pr && r >= min_pr,
            "T={t}: precision {p}, recall {r}"
        );
        // Reported resemblance is the exact Jaccard (printed to 6 decimals).
        let mut checked = 0;
        for (k, v) in &found {
            if let Some(j) = jac.get(k) {
                assert!((v - j).abs() < 2e-6, "{k:?}: reported {v}, exact {j}");
                checked += 1;
            }
        }
        assert!(checked > found.len() * 9 / 10);
    }
}

#[test]
fn query_finds_truth_partners() {
    let Some((corpus, idx)) = one_batch_index() else {
        return;
    };
    let truth = Truth::load(&corpus);
    let docs = extracted(&corpus);
    let t = "0.8".parse().unwrap();
    let expect = truth.pairs_at(t);
    // Every 23rd document (about 140), each queried as a file that is already indexed.
    let chosen: Vec<&String> = truth.keys.iter().step_by(23).collect();
    let files: Vec<String> = chosen
        .iter()
        .map(|k| docs.join(k).to_string_lossy().into_owned())
        .collect();
    let answers = idx.query(&files, &["--threshold", "0.8", "--top", "0"]);
    assert_eq!(answers.len(), chosen.len(), "one answer a probe");
    let (mut want, mut got) = (0usize, 0usize);
    for (v, key) in answers.iter().zip(&chosen) {
        let hits: HashSet<String> = v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["key"].as_str().unwrap().to_owned())
            .collect();
        assert!(hits.contains(key.as_str()), "{key} does not find itself");
        for (a, b) in expect.iter().filter(|(a, b)| a == *key || b == *key) {
            let partner = if a == *key { b } else { a };
            want += 1;
            got += hits.contains(partner) as usize;
        }
    }
    let recall = got as f64 / want.max(1) as f64;
    eprintln!(
        "query recall {got}/{want} = {recall:.4} over {} documents",
        chosen.len()
    );
    assert!(want > 100, "too few truth partners to measure ({want})");
    assert!(recall >= 0.98, "query recall {recall}");
}

#[test]
fn three_batches_give_the_same_pairs_and_clusters_as_one() {
    let Some((corpus, idx_one)) = one_batch_index() else {
        return;
    };
    let docs = extracted(&corpus);
    let truth = Truth::load(&corpus);
    // Three batch folders with the corpus's relative paths (hard links, so keys are equal).
    let work = temp_dir("exact-three");
    let mut batches = vec![];
    for (i, key) in truth.keys.iter().enumerate() {
        let b = work.path().join(format!("b{}", i % 3));
        let dst = b.join(key);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::hard_link(docs.join(key), &dst).unwrap();
        if i < 3 {
            batches.push(b);
        }
    }
    let idx = TestIndex::at(work.path().join("idx"));
    for (i, b) in batches.iter().enumerate() {
        idx.ingest(&[b], &["--batch", &format!("night-{i}")]);
    }
    let one = pair_map(&idx_one.pairs("0.8"));
    let three = pair_map(&idx.pairs("0.8"));
    let k1: HashSet<_> = one.keys().collect();
    let k3: HashSet<_> = three.keys().collect();
    assert_eq!(k1.len(), k3.len());
    assert!(k1 == k3, "one batch and three batches disagree");

    // The clusters kept incrementally are the connected components of the exact pairs.
    let clusters = |idx: &TestIndex| -> HashSet<Vec<String>> {
        idx.clusters().iter().map(Cluster::sorted).collect()
    };
    let c3 = clusters(&idx);
    let c1 = clusters(&idx_one);
    let mut ids = std::collections::HashMap::new();
    let keys: Vec<&String> = truth.keys.iter().collect();
    for (i, k) in keys.iter().enumerate() {
        ids.insert(k.as_str(), i as u32);
    }
    let expect: HashSet<Vec<String>> = ndd_index::cluster::components(
        truth
            .pairs_at("0.8".parse().unwrap())
            .iter()
            .map(|(a, b)| (ids[a.as_str()], ids[b.as_str()])),
    )
    .into_iter()
    .map(|g| {
        let mut m: Vec<String> = g.iter().map(|&d| keys[d as usize].clone()).collect();
        m.sort();
        m
    })
    .collect();
    eprintln!(
        "clusters: one batch {}, three batches {}, truth {}",
        c1.len(),
        c3.len(),
        expect.len()
    );
    assert!(
        c1 == expect,
        "one-batch clusters differ from the truth's components"
    );
    assert!(
        c3 == expect,
        "three-batch clusters differ from the truth's components"
    );
}
