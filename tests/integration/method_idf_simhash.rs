//! idf-weighted simhash (`--simhash-weight idf`): the stored tables hold idf simhashes over the
//! lexicon frozen from the first batch; pairs and queries find exactly the documents within
//! Hamming distance k of a brute-force computation, and the option survives reopening.

use std::collections::{BTreeSet, HashMap};

use crate::common::*;
use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::fingerprint::{hash, simhash::hamming, words};
use ndd_index::method::idf_simhash;
use ndd_index::method::imatch::Lexicon;

fn corpus() -> Vec<(String, String)> {
    let mut s = 11u64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    };
    let mut docs = Vec::new();
    for b in 0..20 {
        // Zipf-like vocabulary: low word ids are common, so idf varies.
        let base: Vec<String> = (0..200)
            .map(|_| format!("w{}", (next() % 60) * (next() % 60)))
            .collect();
        docs.push((format!("b{b:02}.txt"), base.join(" ")));
        for v in 0..3 {
            let mut w = base.clone();
            for _ in 0..(next() % 6) {
                let at = (next() % 200) as usize;
                w[at] = format!("x{}", next() % 5000);
            }
            docs.push((format!("b{b:02}v{v}.txt"), w.join(" ")));
        }
    }
    docs
}

fn terms(text: &str) -> Vec<u64> {
    let c = canonicalize(text.as_bytes(), DocFormat::Text, None)
        .unwrap()
        .text;
    let mut t: Vec<u64> = words(&c).map(hash::word_hash).collect();
    t.sort_unstable();
    t.dedup();
    t
}

#[test]
fn idf_simhash_tables_match_brute_force_and_persist() {
    let docs = corpus();
    let ix = TestIndex::new("idf-simhash");
    let input = ix.work().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for (k, t) in &docs {
        std::fs::write(input.join(k), t).unwrap();
    }
    ix.ingest(
        &[&input],
        &[
            "--methods",
            "simhash",
            "--simhash-k",
            "4",
            "--simhash-blocks",
            "6",
            "--simhash-weight",
            "idf",
        ],
    );
    let st = ix.stats();
    assert_eq!(st["options"]["methods"]["simhash"]["weight"], "idf", "{st}");
    let text = ix.stdout(&["stats"]);
    assert!(
        text.contains("simhash (k=4, blocks=6, idf-weighted)"),
        "{text}"
    );

    // The lexicon of the first batch: df over the documents' unique terms.
    let t: Vec<Vec<u64>> = docs.iter().map(|(_, x)| terms(x)).collect();
    let mut df: HashMap<u64, u32> = HashMap::new();
    for d in &t {
        for &w in d {
            *df.entry(w).or_insert(0) += 1;
        }
    }
    let lex = Lexicon {
        epoch: 1,
        docs: docs.len() as u64,
        df,
    };
    let fps: Vec<u64> = t.iter().map(|d| idf_simhash::simhash(&lex, d)).collect();
    let mut want = BTreeSet::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            if hamming(fps[i], fps[j]) <= 4 {
                want.insert((docs[i].0.clone(), docs[j].0.clone()));
            }
        }
    }
    assert!(want.len() >= 20, "too few pairs: {}", want.len());
    let got = pair_keys(&ix.pairs_with(&["--method", "simhash"]));
    assert_eq!(got, want);

    // A query computes its idf simhash with the same lexicon: it finds itself (distance 0)
    // and exactly its brute-force partners.
    let probe = input.join("b03v1.txt");
    let q = ix.query(&[&probe], &["--method", "simhash", "--top", "0"]);
    let v = &q[0];
    let hits: BTreeSet<String> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["key"].as_str().unwrap().to_string())
        .collect();
    let i = docs.iter().position(|d| d.0 == "b03v1.txt").unwrap();
    let expect: BTreeSet<String> = (0..docs.len())
        .filter(|&j| hamming(fps[i], fps[j]) <= 4)
        .map(|j| docs[j].0.clone())
        .collect();
    assert_eq!(hits, expect);
}
