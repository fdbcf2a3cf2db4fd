//! Megashingles (Fetterly et al.) stored as their own table, and the C-only method
//! (Henzinger's C-similarity of 384-bit simhashes alone): each against brute force, across
//! reopening and compaction.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::common::*;
use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::fingerprint::simhash::{hamming_wide, simhash384};

fn corpus() -> Vec<(String, String)> {
    let mut s = 5u64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    };
    let mut docs = Vec::new();
    for b in 0..16 {
        let base: Vec<String> = (0..300).map(|_| format!("w{}", next() % 3000)).collect();
        docs.push((format!("b{b:02}.txt"), base.join(" ")));
        for v in 0..3 {
            let mut w = base.clone();
            for _ in 0..(next() % 8) {
                let at = (next() % 300) as usize;
                w[at] = format!("w{}", next() % 3000);
            }
            docs.push((format!("b{b:02}v{v}.txt"), w.join(" ")));
        }
    }
    docs
}

#[test]
fn megashingles_and_c_only_match_brute_force() {
    let docs = corpus();
    let ix = TestIndex::new("mega-csim");
    let input = ix.work().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for (k, t) in &docs {
        std::fs::write(input.join(k), t).unwrap();
    }
    ix.ingest(
        &[&input],
        &["--methods", "dsc-ss,megashingle,c-sim", "--batch", "one"],
    );
    let pairs = |method: &str, extra: &[&str]| {
        let mut a = vec!["--method", method];
        a.extend_from_slice(extra);
        pair_keys(&ix.pairs_with(&a))
    };
    let st = ix.stats();
    assert_eq!(
        st["options"]["methods"]["dsc"]["megashingles"], true,
        "{st}"
    );
    let text = ix.stdout(&["stats"]);
    assert!(
        text.contains("megashingle") && text.contains("c-sim"),
        "{text}"
    );

    // Sharing a megashingle == agreeing on at least 2 supershingles (dsc-ss at --b-agree 2).
    let mega = pairs("megashingle", &[]);
    let dsc = pairs("dsc-ss", &[]);
    assert!(mega.len() >= 10, "too few pairs: {}", mega.len());
    assert_eq!(mega, dsc);

    // C-only: brute force over the 384-bit simhashes.
    let sims: Vec<[u64; 6]> = docs
        .iter()
        .map(|(_, t)| {
            simhash384(
                &canonicalize(t.as_bytes(), DocFormat::Text, None)
                    .unwrap()
                    .text,
            )
        })
        .collect();
    let c_at = |t: f64| -> BTreeSet<(String, String)> {
        let mut v = BTreeSet::new();
        for i in 0..docs.len() {
            for j in i + 1..docs.len() {
                if 1.0 - hamming_wide(&sims[i], &sims[j]) as f64 / 384.0 >= t {
                    v.insert((docs[i].0.clone(), docs[j].0.clone()));
                }
            }
        }
        v
    };
    let want = c_at(355.0 / 384.0);
    assert!(want.len() >= 10, "too few C-similar pairs: {}", want.len());
    assert_eq!(pairs("c-sim", &[]), want);
    assert_eq!(pairs("c-sim", &["--threshold", "0.9"]), c_at(0.9));

    // A second batch and a full compaction keep both tables right.
    let extra = ix.work().join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(extra.join("b00v9.txt"), &docs[0].1).unwrap();
    ix.ingest(&[&extra], &["--batch", "two"]);
    ix.compact(&["--full"]);
    let mega2 = pairs("megashingle", &[]);
    assert_eq!(mega2, pairs("dsc-ss", &[]));
    assert!(mega2.len() > mega.len());
    assert!(mega2.contains(&("b00.txt".to_string(), "b00v9.txt".to_string())));
    let c2 = pairs("c-sim", &[]);
    assert!(
        c2.is_superset(&want) && c2.contains(&("b00.txt".to_string(), "b00v9.txt".to_string()))
    );
}

/// Documents added online (`add`: the delta) keep their megashingles: before and after the
/// fold into a segment, megashingle pairs and queries answer as in an index that ingested the
/// same documents in one batch (the delta once wrote an empty MEGASHINGLES table).
#[test]
fn online_adds_keep_megashingles_through_the_fold() {
    let docs = corpus();
    let batch = TestIndex::new("mega-batch");
    let online = TestIndex::new("mega-online");
    let all = batch.work().join("all");
    let first = online.work().join("first");
    let rest = online.work().join("rest");
    for d in [&all, &first, &rest] {
        std::fs::create_dir_all(d).unwrap();
    }
    for (i, (k, t)) in docs.iter().enumerate() {
        std::fs::write(all.join(k), t).unwrap();
        let half = if i < 16 { &first } else { &rest };
        std::fs::write(half.join(k), t).unwrap();
    }
    let methods = ["--methods", "dsc-ss,megashingle"];
    batch.ingest(&[&all], &methods);
    online.ingest(&[&first], &methods);
    // The other 48 documents in adds of 8 (several delta pieces).
    let online = online.in_dir(&rest);
    let keys: Vec<&str> = docs[16..].iter().map(|(k, _)| k.as_str()).collect();
    for chunk in keys.chunks(8) {
        let (_, summary) = online.add(chunk, &["--fold-docs", "1000"]);
        assert_eq!(summary["added"], 8, "{summary}");
    }
    assert_eq!(online.verify()["delta_documents"], 48);

    let mega = |ix: &TestIndex| pair_keys(&ix.pairs_with(&["--method", "megashingle"]));
    let want = mega(&batch);
    assert_eq!(want, pair_keys(&batch.pairs_with(&["--method", "dsc-ss"])));
    let added: BTreeSet<&str> = keys.iter().copied().collect();
    assert!(
        want.iter()
            .filter(|(a, b)| added.contains(a.as_str()) && added.contains(b.as_str()))
            .count()
            >= 10,
        "too few pairs among the added documents: {want:?}"
    );
    // Probes among the added documents (b04.., b10..), answered by their keys.
    let probes: Vec<PathBuf> = ["b04.txt", "b07v1.txt", "b10v2.txt", "b15.txt"]
        .iter()
        .map(|k| all.join(k))
        .collect();
    let matched = |ix: &TestIndex| -> Vec<BTreeSet<String>> {
        ix.query(&probes, &["--method", "megashingle"])
            .iter()
            .map(|a| {
                let m = a["hits"].as_array().expect("hits");
                m.iter()
                    .map(|x| x["key"].as_str().expect("key").to_string())
                    .collect()
            })
            .collect()
    };
    let want_q = matched(&batch);
    assert!(
        want_q.iter().filter(|m| m.len() >= 2).count() >= 3,
        "probes find their variants: {want_q:?}"
    );
    assert_eq!(mega(&online), want, "megashingle pairs with the delta");
    assert_eq!(
        matched(&online),
        want_q,
        "megashingle queries with the delta"
    );
    online.compact(&[]);
    assert_eq!(online.verify()["delta_documents"], 0);
    assert_eq!(mega(&online), want, "megashingle pairs after the fold");
    assert_eq!(
        matched(&online),
        want_q,
        "megashingle queries after the fold"
    );
}
