//! The defining property of every method, checked through the CLI (so through a reopened
//! index) against brute force computed independently from the documents' texts:
//! - simhash: the permuted tables find exactly the pairs within Hamming k;
//! - dsc-ss: the pairs are exactly those with >= 2 agreeing supershingles;
//! - combined: exactly the B-similar pairs with C-similarity >= the threshold;
//! - exact: exactly the pairs of identical canonical text;
//! - imatch: every document in exactly one signature class; variants that differ only in
//!   word order, repetitions or terms the filter drops share a signature, across batches.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::common::{pair_keys, temp_dir, TestIndex};
use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::fingerprint::simhash::{hamming, hamming_wide, simhash, simhash384};
use ndd_index::fingerprint::{fingerprint, minhash, FingerprintOptions};
use ndd_index::method::{self, DscOptions, Method};
use ndd_index::Index;

/// Deterministic pseudo-random numbers (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn word(i: usize) -> String {
    // Letters only, so canonicalization keeps each as one word.
    let mut s = String::new();
    let mut x = i + 1;
    while x > 0 {
        s.push((b'a' + (x % 26) as u8) as char);
        x /= 26;
    }
    format!("w{s}")
}

/// Base documents of 150 random words, each with variants of 0..=8 substituted words.
fn corpus(seed: u64, bases: usize, variants: usize) -> Vec<(String, String)> {
    let mut r = Rng(seed);
    let mut docs = Vec::new();
    for b in 0..bases {
        let base: Vec<String> = (0..150).map(|_| word(r.below(3000))).collect();
        docs.push((format!("b{b:03}.txt"), base.join(" ")));
        for v in 0..variants {
            let mut w = base.clone();
            for _ in 0..r.below(9) {
                let at = r.below(w.len());
                w[at] = word(r.below(3000));
            }
            docs.push((format!("b{b:03}v{v}.txt"), w.join(" ")));
        }
    }
    docs
}

fn write(dir: &Path, docs: &[(String, String)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (k, t) in docs {
        std::fs::write(dir.join(k), t).unwrap();
    }
}

fn canon(text: &str) -> String {
    canonicalize(text.as_bytes(), DocFormat::Text, None)
        .unwrap()
        .text
}

/// The key the index gives a file of the ingested directory (the file name here).
fn key_of(k: &str) -> String {
    k.to_string()
}

fn pairs_of(ix: &TestIndex, m: &str, extra: &[&str]) -> BTreeSet<(String, String)> {
    let mut args = vec!["--method", m];
    args.extend_from_slice(extra);
    pair_keys(&ix.pairs_with(&args))
        .into_iter()
        .map(|(a, b)| {
            let (a, b) = (base_name(&a), base_name(&b));
            if a < b {
                (a, b)
            } else {
                (b, a)
            }
        })
        .collect()
}

fn base_name(k: &str) -> String {
    k.rsplit('/').next().unwrap().to_string()
}

/// File names of the hits of `query --method M --json` for `probe` (plus `extra` arguments).
fn query_hits(ix: &TestIndex, method: &str, probe: &Path, extra: &[&str]) -> BTreeSet<String> {
    let mut args = vec!["--method", method];
    args.extend_from_slice(extra);
    let answers = ix.query(&[probe], &args);
    assert_eq!(answers.len(), 1);
    answers[0]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| base_name(h["key"].as_str().unwrap()))
        .collect()
}

fn brute<F: Fn(usize, usize) -> bool>(
    docs: &[(String, String)],
    f: F,
) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            if f(i, j) {
                let (a, b) = (key_of(&docs[i].0), key_of(&docs[j].0));
                out.insert(if a < b { (a, b) } else { (b, a) });
            }
        }
    }
    out
}

#[test]
fn simhash_tables_find_every_pair_within_k() {
    let docs = corpus(7, 50, 6);
    let dir = temp_dir("m-simhash");
    write(&dir.path().join("in"), &docs);
    let sims: Vec<u64> = docs.iter().map(|(_, t)| simhash(&canon(t))).collect();
    for (k, blocks) in [(3u32, 6u32), (6, 8)] {
        let ix = TestIndex::at(dir.path().join(format!("ix{k}")));
        let (ks, bs) = (k.to_string(), blocks.to_string());
        ix.ingest(
            &[dir.path().join("in")],
            &[
                "--methods",
                "simhash",
                "--simhash-features",
                "words",
                "--simhash-k",
                &ks,
                "--simhash-blocks",
                &bs,
            ],
        );
        let want = brute(&docs, |i, j| hamming(sims[i], sims[j]) <= k);
        assert!(
            want.len() > 100,
            "too few pairs within {k} to be a test: {}",
            want.len()
        );
        let got = pairs_of(&ix, "simhash", &[]);
        assert_eq!(got, want, "k={k} blocks={blocks}");
        // Reported Hamming distances and similarities are the true ones.
        let json = ix.stdout(&["pairs", "--method", "simhash", "--json"]);
        let idx: HashMap<String, usize> = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.0.clone(), i))
            .collect();
        for l in json.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let (a, b) = (
                idx[&base_name(v["key_a"].as_str().unwrap())],
                idx[&base_name(v["key_b"].as_str().unwrap())],
            );
            let h = hamming(sims[a], sims[b]);
            assert_eq!(v["hamming"].as_u64().unwrap(), h as u64);
            assert!((v["similarity"].as_f64().unwrap() - (1.0 - h as f64 / 64.0)).abs() < 1e-12);
        }
        // A query finds exactly the indexed documents within k of it.
        let probe = dir.path().join("probe.txt");
        std::fs::write(&probe, &docs[3].1).unwrap();
        let got = query_hits(&ix, "simhash", &probe, &["--top", "0"]);
        let want: BTreeSet<String> = (0..docs.len())
            .filter(|&j| hamming(sims[3], sims[j]) <= k)
            .map(|j| docs[j].0.clone())
            .collect();
        assert_eq!(got, want);
    }
    // The library agrees after a plain reopen.
    let ix = Index::open(dir.path().join("ix3")).unwrap();
    assert_eq!(
        method::pairs(&ix, Method::Simhash, None).unwrap().len(),
        brute(&docs, |i, j| hamming(sims[i], sims[j]) <= 3).len()
    );
}

/// The default simhash of a new index (fingerprints.md §8.2-8.3): the shingle-set simhash,
/// Hamming distance <= 10, then verified: exactly the pairs within 10 bits whose exact
/// shingle resemblance is >= 0.8, each reported with that resemblance.
#[test]
fn default_simhash_is_the_verified_shingle_simhash() {
    let docs = corpus(9, 40, 6);
    let dir = temp_dir("m-simhash-default");
    write(&dir.path().join("in"), &docs);
    let fo = FingerprintOptions::default();
    let fps: Vec<Vec<u64>> = docs
        .iter()
        .map(|(_, t)| fingerprint(&canon(t), &fo).features)
        .collect();
    let sims: Vec<u64> = fps
        .iter()
        .map(|f| ndd_index::fingerprint::simhash::simhash_of_set(f, |_| true))
        .collect();
    let jac = |i: usize, j: usize| {
        let (a, b) = (&fps[i], &fps[j]);
        let inter = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
        inter as f64 / (a.len() + b.len() - inter) as f64
    };
    let ix = TestIndex::at(dir.path().join("ix"));
    ix.ingest(&[dir.path().join("in")], &[]); // the default methods: simhash only
    let want = brute(&docs, |i, j| {
        hamming(sims[i], sims[j]) <= 10 && jac(i, j) >= 0.8
    });
    let near = brute(&docs, |i, j| hamming(sims[i], sims[j]) <= 10);
    assert!(
        want.len() > 50 && near.len() > want.len(),
        "not a test: {} verified of {} candidates",
        want.len(),
        near.len()
    );
    assert_eq!(pairs_of(&ix, "simhash", &[]), want);
    let idx: HashMap<String, usize> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.0.clone(), i))
        .collect();
    for l in ix
        .stdout(&["pairs", "--method", "simhash", "--json"])
        .lines()
    {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let (a, b) = (
            idx[&base_name(v["key_a"].as_str().unwrap())],
            idx[&base_name(v["key_b"].as_str().unwrap())],
        );
        assert!((v["similarity"].as_f64().unwrap() - jac(a, b)).abs() < 1e-9);
        assert_eq!(
            v["hamming"].as_u64().unwrap(),
            hamming(sims[a], sims[b]) as u64
        );
    }
    // A query verifies against the probe's own features the same way.
    let probe = dir.path().join("probe.txt");
    std::fs::write(&probe, &docs[5].1).unwrap();
    let got = query_hits(&ix, "simhash", &probe, &["--top", "0"]);
    let want: BTreeSet<String> = (0..docs.len())
        .filter(|&j| hamming(sims[5], sims[j]) <= 10 && jac(5, j) >= 0.8)
        .map(|j| docs[j].0.clone())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn dsc_combined_and_exact_match_brute_force() {
    let mut docs = corpus(11, 40, 5);
    // Exact duplicates (the same canonical text under other keys, case and spacing differ).
    for i in [0usize, 7, 13] {
        let t = docs[i].1.to_uppercase().replace(' ', "  ");
        docs.push((format!("dup{i}.txt"), t));
    }
    let dir = temp_dir("m-dsc");
    write(&dir.path().join("in"), &docs);
    let ix = TestIndex::at(dir.path().join("ix"));
    ix.ingest(
        &[dir.path().join("in")],
        &["--methods", "dsc-ss,combined,exact"],
    );
    let o = DscOptions::default();
    let fo = FingerprintOptions::default();
    let texts: Vec<String> = docs.iter().map(|(_, t)| canon(t)).collect();
    let supers: Vec<Vec<u64>> = texts
        .iter()
        .map(|t| {
            let fp = fingerprint(t, &fo); // sample all: the features are the shingle set
            minhash::supershingles(
                &minhash::minhash_values(&fp.features, o.minhash),
                o.supershingle as usize,
            )
        })
        .collect();
    let want = brute(&docs, |i, j| {
        minhash::agreements(&supers[i], &supers[j]) >= 2
    });
    assert!(want.len() > 50, "too few B-similar pairs: {}", want.len());
    assert!(want.len() < docs.len() * docs.len() / 4);
    assert_eq!(pairs_of(&ix, "dsc-ss", &[]), want);

    let s384: Vec<[u64; 6]> = texts.iter().map(|t| simhash384(t)).collect();
    let t = 0.95;
    let want_c = brute(&docs, |i, j| {
        minhash::agreements(&supers[i], &supers[j]) >= 2
            && 1.0 - hamming_wide(&s384[i], &s384[j]) as f64 / 384.0 >= t
    });
    let got_c = pairs_of(&ix, "combined", &["--threshold", "0.95"]);
    assert_eq!(got_c, want_c);
    assert!(
        got_c.len() < want.len(),
        "the C-similarity filter removed nothing"
    );

    // Queries find the same documents (the queried text itself is indexed: it is a hit).
    let query_keys = |m: &str, i: usize, extra: &[&str]| -> BTreeSet<String> {
        let probe = dir.path().join(format!("probe{i}.txt"));
        std::fs::write(&probe, &docs[i].1).unwrap();
        let mut args = vec!["--top", "0"];
        args.extend_from_slice(extra);
        query_hits(&ix, m, &probe, &args)
    };
    for i in [0usize, 1, 6, 30] {
        let want: BTreeSet<String> = (0..docs.len())
            .filter(|&j| minhash::agreements(&supers[i], &supers[j]) >= 2)
            .map(|j| docs[j].0.clone())
            .collect();
        assert_eq!(query_keys("dsc-ss", i, &[]), want, "dsc-ss query {i}");
        let want_c: BTreeSet<String> = (0..docs.len())
            .filter(|&j| {
                minhash::agreements(&supers[i], &supers[j]) >= 2
                    && 1.0 - hamming_wide(&s384[i], &s384[j]) as f64 / 384.0 >= t
            })
            .map(|j| docs[j].0.clone())
            .collect();
        assert_eq!(
            query_keys("combined", i, &["--threshold", "0.95"]),
            want_c,
            "combined query {i}"
        );
        let want_e: BTreeSet<String> = (0..docs.len())
            .filter(|&j| texts[j] == texts[i])
            .map(|j| docs[j].0.clone())
            .collect();
        assert_eq!(query_keys("exact", i, &[]), want_e, "exact query {i}");
    }

    // With sampled features, min-hash still runs over the full shingle set: same pairs.
    let ix2 = TestIndex::at(dir.path().join("ix-sampled"));
    ix2.ingest(
        &[dir.path().join("in")],
        &["--sample", "bottomk:16", "--methods", "dsc-ss"],
    );
    assert_eq!(pairs_of(&ix2, "dsc-ss", &[]), want);

    let want_e = brute(&docs, |i, j| texts[i] == texts[j]);
    assert!(want_e.len() >= 3); // the dups, and variants drawn with no edit
    assert_eq!(pairs_of(&ix, "exact", &[]), want_e);
    let clustered: usize = ix
        .clusters_with(&["--method", "exact"])
        .iter()
        .map(|c| c.members.len())
        .sum();
    let members: BTreeSet<&String> = want_e.iter().flat_map(|(a, b)| [a, b]).collect();
    assert_eq!(clustered, members.len());
}

#[test]
fn imatch_one_cluster_per_document_and_stable_signatures() {
    let mut r = Rng(5);
    // Every document holds the word "common", so idf-l-10 drops it.
    let mut docs: Vec<(String, String)> = Vec::new();
    let mut bases = Vec::new();
    for b in 0..30 {
        let w: Vec<String> = (0..120).map(|_| word(r.below(3000))).collect();
        bases.push(w.clone());
        docs.push((format!("b{b:02}.txt"), format!("common {}", w.join(" "))));
        // Same terms, another order and a repeated word.
        let mut s = w.clone();
        s.reverse();
        s.push(w[0].clone());
        docs.push((format!("b{b:02}r.txt"), format!("{} common", s.join(" "))));
        // One substituted word: another term set, so another signature.
        let mut e = w.clone();
        e[5] = "zzzunique".to_string() + &b.to_string();
        docs.push((format!("b{b:02}e.txt"), format!("common {}", e.join(" "))));
    }
    let dir = temp_dir("m-imatch");
    write(&dir.path().join("in1"), &docs);
    let ix = TestIndex::at(dir.path().join("ix"));
    ix.ingest(&[dir.path().join("in1")], &["--methods", "imatch"]);
    // A second batch: variants that add words the frozen lexicon has never seen.
    let later: Vec<(String, String)> = (0..30)
        .map(|b| {
            (
                format!("b{b:02}n.txt"),
                format!("common {} neverseenword{b}", bases[b].join(" ")),
            )
        })
        .collect();
    write(&dir.path().join("in2"), &later);
    ix.ingest(&[dir.path().join("in2")], &[]);

    let index = Index::open(ix.path()).unwrap();
    let classes = method::imatch::signature_classes(index.view()).unwrap();
    let mut seen: Vec<u32> = classes.iter().flatten().copied().collect();
    seen.sort_unstable();
    let n = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), n, "a document is in two classes");
    assert_eq!(n, docs.len() + later.len(), "a document is in no class");

    let got = pairs_of(&ix, "imatch", &[]);
    let mut want = BTreeSet::new();
    for b in 0..30 {
        let names = [
            format!("b{b:02}.txt"),
            format!("b{b:02}r.txt"),
            format!("b{b:02}n.txt"),
        ];
        for i in 0..3 {
            for j in i + 1..3 {
                let (x, y) = (names[i].clone(), names[j].clone());
                want.insert(if x < y { (x, y) } else { (y, x) });
            }
        }
    }
    assert_eq!(got, want);
    let clustered: usize = ix
        .clusters_with(&["--method", "imatch"])
        .iter()
        .map(|c| c.members.len())
        .sum();
    assert_eq!(clustered, 90);
    // A query: the original with a word the lexicon has never seen, in another order.
    let probe = dir.path().join("probe.txt");
    let mut w = bases[4].clone();
    w.rotate_left(17);
    std::fs::write(&probe, format!("{} brandnewterm common", w.join(" "))).unwrap();
    let got = query_hits(&ix, "imatch", &probe, &[]);
    let want: BTreeSet<String> = ["b04.txt", "b04r.txt", "b04n.txt"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn method_options_are_checked_and_persisted() {
    let dir = temp_dir("m-opts");
    let docs = corpus(3, 3, 1);
    write(&dir.path().join("in"), &docs);
    let ix = TestIndex::at(dir.path().join("ix"));
    let input = dir.path().join("in");
    ix.ingest(&[&input], &[]);
    // Default: simhash tables only; dsc-ss was not stored.
    let out = ix.run_raw(&["pairs", "--method", "dsc-ss"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--methods dsc-ss"));
    // Other method options for an existing index conflict.
    let out = ix.run_raw(&["ingest", "--methods", "all", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    // Parameters without --methods are refused.
    let out = ix.run_raw(&["ingest", "--simhash-k", "4", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    // The default of a new index (issue 15): verified shingle simhash, stored as such.
    let v = ix.stats();
    let s = &v["options"]["methods"]["simhash"];
    assert_eq!(
        (s["k"].as_u64(), s["blocks"].as_u64()),
        (Some(10), Some(11))
    );
    assert_eq!(
        (s["features"].as_str(), s["verify"].as_u64()),
        (Some("shingles"), Some(80))
    );
}

/// `eval`: shingle over every shingle scores P = R = 1 against exact Jaccard truth (the
/// truth computed here from the texts), and label truth gives Chowdhury's measures.
#[test]
fn eval_scores_pairs_and_labels() {
    let docs = corpus(21, 25, 4);
    let dir = temp_dir("m-eval");
    write(&dir.path().join("in"), &docs);
    let ix = TestIndex::at(dir.path().join("ix"));
    ix.ingest(&[dir.path().join("in")], &["--methods", "exact"]);
    let fo = FingerprintOptions::default();
    let sets: Vec<Vec<u64>> = docs
        .iter()
        .map(|(_, t)| fingerprint(&canon(t), &fo).features)
        .collect();
    let jac = |i: usize, j: usize| {
        let a: BTreeSet<u64> = sets[i].iter().copied().collect();
        let inter = sets[j].iter().filter(|x| a.contains(x)).count();
        inter as f64 / (sets[i].len() + sets[j].len() - inter) as f64
    };
    let mut truth = String::from("key_a\tkey_b\tjaccard\n");
    let mut at8 = 0;
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let x = jac(i, j);
            if x >= 0.3 {
                truth.push_str(&format!("{}\t{}\t{x:.6}\n", docs[i].0, docs[j].0));
                at8 += (x >= 0.8) as usize;
            }
        }
    }
    assert!(at8 > 20, "too few pairs at 0.8: {at8}");
    let tp = dir.path().join("truth.tsv");
    std::fs::write(&tp, truth).unwrap();
    let v = ix.json(&[
        "eval",
        "--truth",
        tp.to_str().unwrap(),
        "--thresholds",
        "0.5,0.8",
        "--method",
        "shingle,exact,dsc-ss",
    ]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4); // dsc-ss is not stored: skipped, and said so
    assert_eq!(v["skipped"][0]["method"], "dsc-ss");
    for r in rows.iter().filter(|r| r["method"] == "shingle") {
        assert_eq!(r["precision"], 1.0);
        assert_eq!(r["recall"], 1.0);
        assert!(r["mean_abs_error"].as_f64().unwrap() < 1e-6);
    }
    let r8 = rows
        .iter()
        .find(|r| r["method"] == "shingle" && r["threshold"] == 0.8)
        .unwrap();
    assert_eq!(r8["positives"], at8 as u64);

    // Labels: the base and its variants share a label.
    let mut labels = String::from("key\tlabel\n");
    for (k, _) in &docs {
        labels.push_str(&format!("{k}\t{}\n", &k[..4]));
    }
    let lp = dir.path().join("labels.tsv");
    std::fs::write(&lp, labels).unwrap();
    let v = ix.json(&[
        "eval",
        "--truth",
        lp.to_str().unwrap(),
        "--thresholds",
        "0.3",
        "--method",
        "shingle",
    ]);
    let r = &v["rows"][0];
    assert_eq!(r["positives"], 25 * 10); // C(5, 2) pairs per base
                                         // At 0.3 every variant (at most 8 of 150 words edited) resembles its base: one cluster each.
    assert_eq!(r["found_ratio"], 1.0);
    assert_eq!(r["clusters_per_true_cluster"], 1.0);
}
