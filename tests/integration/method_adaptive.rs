//! Adaptive sampling (Ye, Wen and Ma): small documents sampled more densely, the size-group
//! table persisted and used the same way at ingest and query, `eval`'s precision by size
//! group, and `tune` choosing ratios that reach a precision target.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use crate::common::*;
use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::fingerprint::adaptive::SizeGroups;
use ndd_index::fingerprint::{fingerprint, FingerprintOptions, Sample};

const GROUPS: &str = "0-200:1,200-:8";

/// splitmix64, so the corpus is the same on every run.
fn rng(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Small (60 words) and large (1500 words) bases, each with 4 variants of a few edits.
fn corpus() -> Vec<(String, String)> {
    let mut s = 7u64;
    let mut docs = Vec::new();
    for b in 0..24 {
        let len = if b % 2 == 0 { 60 } else { 1500 };
        let base: Vec<String> = (0..len)
            .map(|_| format!("w{}", rng(&mut s) % 4000))
            .collect();
        docs.push((format!("b{b:02}.txt"), base.join(" ")));
        for v in 0..4 {
            let mut w = base.clone();
            for _ in 0..(rng(&mut s) % (len as u64 / 15)) {
                let at = (rng(&mut s) % len as u64) as usize;
                w[at] = format!("w{}", rng(&mut s) % 4000);
            }
            docs.push((format!("b{b:02}v{v}.txt"), w.join(" ")));
        }
    }
    docs
}

/// The corpus in `<work>/in`, ingested with `sample` options into `<work>/idx`.
fn setup(name: &str, sample: &[&str]) -> (TestIndex, Vec<(String, String)>) {
    let docs = corpus();
    let ix = TestIndex::new(name);
    let input = ix.work().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for (k, t) in &docs {
        std::fs::write(input.join(k), t).unwrap();
    }
    ix.ingest(&[&input], sample);
    (ix, docs)
}

fn full_sets(docs: &[(String, String)]) -> Vec<Vec<u64>> {
    docs.iter()
        .map(|(_, t)| {
            let c = canonicalize(t.as_bytes(), DocFormat::Text, None)
                .unwrap()
                .text;
            fingerprint(&c, &FingerprintOptions::default()).features
        })
        .collect()
}

fn base(k: &str) -> String {
    k.rsplit('/').next().unwrap().to_string()
}

#[test]
fn adaptive_sampling_is_persisted_and_matches_brute_force() {
    let (ix, docs) = setup(
        "adaptive",
        &["--sample", "adaptive", "--size-groups", GROUPS],
    );
    let input = ix.work().join("in");
    // Persisted (stats reopens the index) and checked against later creation options.
    let st = ix.stats();
    assert_eq!(
        st["options"]["sample"],
        format!("adaptive:{GROUPS}"),
        "{st}"
    );
    let other = ix.run_raw(&[
        "ingest",
        "-q",
        "--sample",
        "adaptive",
        "--size-groups",
        "0-200:1,200-:4",
        input.to_str().unwrap(),
    ]);
    assert_eq!(other.status.code(), Some(2));
    let alone = ix.run_raw(&["ingest", "-q", "--size-groups", GROUPS, "x"]);
    assert_eq!(alone.status.code(), Some(2));

    // The defining property: small documents keep every shingle, large ones 1 in 8.
    let g: SizeGroups = GROUPS.parse().unwrap();
    let full = full_sets(&docs);
    let sampled: Vec<Vec<u64>> = full.iter().map(|f| g.apply(f.clone())).collect();
    for (f, s) in full.iter().zip(&sampled) {
        if f.len() < 200 {
            assert_eq!(s, f);
        } else {
            assert!(s.len() * 4 < f.len() && s.iter().all(|h| h % 8 == 0));
        }
    }

    // Pairs at 0.5 (query path and pairs path) == brute force over the adaptive samples.
    let sample = Sample::Adaptive(g);
    let t = "0.5".parse().unwrap();
    let mut want = BTreeSet::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            if sample.similar(&sampled[i], &sampled[j], t) {
                want.insert((docs[i].0.clone(), docs[j].0.clone()));
            }
        }
    }
    assert!(want.len() > 100, "too few pairs: {}", want.len());
    let got: BTreeSet<(String, String)> = pair_keys(&ix.pairs("0.5"))
        .into_iter()
        .map(|(a, b)| {
            let (a, b) = (base(&a), base(&b));
            (a.clone().min(b.clone()), a.max(b))
        })
        .collect();
    assert_eq!(got, want);
    let probe = input.join("b01v2.txt");
    let q = ix.query(&[&probe], &["--threshold", "0.5"]);
    let hits: HashSet<String> = q
        .iter()
        .flat_map(|v| {
            v["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| base(h["key"].as_str().unwrap()))
                .collect::<Vec<_>>()
        })
        .collect();
    let partners = want
        .iter()
        .filter(|(a, b)| a == "b01v2.txt" || b == "b01v2.txt")
        .count();
    assert!(
        partners > 0 && hits.len() >= partners,
        "{partners} partners, hits {hits:?}"
    );
    for (a, b) in &want {
        if a == "b01v2.txt" {
            assert!(hits.contains(b), "query missed {b}");
        } else if b == "b01v2.txt" {
            assert!(hits.contains(a), "query missed {a}");
        }
    }
}

/// Truth over the corpus: exact Jaccard of the full shingle sets, pairs >= 0.3.
fn write_truth(path: &Path, docs: &[(String, String)]) {
    let full = full_sets(docs);
    let mut s = String::from("key_a\tkey_b\tjaccard\n");
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let c = Sample::All.compare(&full[i], &full[j]).resemblance;
            if c >= 0.3 {
                s.push_str(&format!("in/{}\tin/{}\t{c:.6}\n", docs[i].0, docs[j].0));
            }
        }
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn eval_by_size_group_tune_and_unmatched_warning() {
    let (ix, docs) = setup(
        "adaptive-eval",
        &["--sample", "all", "--methods", "shingle"],
    );
    // Keys are relative to the ingested folder; a truth keyed "in/..." matches none of them.
    let tp = ix.work().join("truth.tsv");
    write_truth(&tp, &docs);
    let o = ix.run(&[
        "eval",
        "--truth",
        tp.to_str().unwrap(),
        "--method",
        "shingle",
        "--json",
    ]);
    let v = parse_json(&stdout(&o));
    assert!(
        v["warning"]
            .as_str()
            .unwrap()
            .contains("no key of the truth"),
        "{v}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning"));

    let fixed = std::fs::read_to_string(&tp).unwrap().replace("in/", "");
    std::fs::write(&tp, fixed).unwrap();
    let eval = |ix: &TestIndex| -> serde_json::Value {
        ix.json(&[
            "eval",
            "--truth",
            tp.to_str().unwrap(),
            "--method",
            "shingle",
            "--thresholds",
            "0.8",
        ])
    };
    let v = eval(&ix);
    assert!(v.get("warning").is_none());
    let groups = v["rows"][0]["by_size_group"].as_array().unwrap();
    assert_eq!(groups.len(), 3); // the default table's groups
    let docs_in: u64 = groups
        .iter()
        .map(|g| g["documents"].as_u64().unwrap())
        .sum();
    assert_eq!(docs_in, docs.len() as u64);
    for g in groups {
        assert_eq!(g["precision"], 1.0); // --sample all is exact
        assert_eq!(g["recall"], 1.0);
    }

    // tune: the chosen table, ingested, reaches the target in every group it says passes.
    let tv = ix.json(&[
        "tune",
        "--truth",
        tp.to_str().unwrap(),
        "--precision-target",
        "0.9",
        "--size-groups",
        GROUPS,
    ]);
    let table = tv["table"].as_str().unwrap().to_string();
    let chosen: SizeGroups = table.parse().unwrap();
    assert!(
        chosen.group(1).2 > 1,
        "large documents should be sampled: {table}"
    );
    let (ix2, _) = setup(
        "adaptive-tuned",
        &["--sample", "adaptive", "--size-groups", &table],
    );
    let v2 = eval(&ix2);
    let (tuned, measured) = (
        tv["groups"].as_array().unwrap(),
        v2["rows"][0]["by_size_group"].as_array().unwrap(),
    );
    for (a, b) in tuned.iter().zip(measured) {
        assert_eq!(a["modulus"], b["modulus"]);
        assert_eq!(
            a["found"], b["found"],
            "tune and ingest+eval disagree: {a} vs {b}"
        );
        assert!(
            b["precision"].as_f64().unwrap() >= 0.9 || a["modulus"] == 1,
            "{b}"
        );
    }
}
