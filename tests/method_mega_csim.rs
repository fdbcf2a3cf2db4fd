//! Megashingles (Fetterly et al.) stored as their own table, and the C-only method
//! (Henzinger's C-similarity of 384-bit simhashes alone): each against brute force, across
//! reopening and compaction.

mod common;

use std::collections::BTreeSet;

use common::*;
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

fn pairs(ix: &str, method: &str, extra: &[&str]) -> BTreeSet<(String, String)> {
    let mut args = vec!["pairs", "--index", ix, "--method", method];
    args.extend_from_slice(extra);
    stdout(&ndd(&args))
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].min(f[1]).to_string(), f[0].max(f[1]).to_string())
        })
        .collect()
}

#[test]
fn megashingles_and_c_only_match_brute_force() {
    let docs = corpus();
    let dir = temp_dir("mega-csim");
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for (k, t) in &docs {
        std::fs::write(input.join(k), t).unwrap();
    }
    let ix = dir.path().join("ix");
    let ixs = ix.to_str().unwrap();
    ndd(&[
        "ingest",
        "-q",
        "--index",
        ixs,
        "--methods",
        "dsc-ss,megashingle,c-sim",
        "--batch",
        "one",
        input.to_str().unwrap(),
    ]);
    let st = stats_json(&ix);
    assert_eq!(
        st["options"]["methods"]["dsc"]["megashingles"], true,
        "{st}"
    );
    let text = stdout(&ndd(&["stats", "--index", ixs]));
    assert!(
        text.contains("megashingle") && text.contains("c-sim"),
        "{text}"
    );

    // Sharing a megashingle == agreeing on at least 2 supershingles (dsc-ss at --b-agree 2).
    let mega = pairs(ixs, "megashingle", &[]);
    let dsc = pairs(ixs, "dsc-ss", &[]);
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
    assert_eq!(pairs(ixs, "c-sim", &[]), want);
    assert_eq!(pairs(ixs, "c-sim", &["--threshold", "0.9"]), c_at(0.9));

    // A second batch and a full compaction keep both tables right.
    let extra = dir.path().join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(extra.join("b00v9.txt"), &docs[0].1).unwrap();
    ndd(&[
        "ingest",
        "-q",
        "--index",
        ixs,
        "--batch",
        "two",
        extra.to_str().unwrap(),
    ]);
    ndd(&["compact", "--index", ixs, "--full"]);
    let mega2 = pairs(ixs, "megashingle", &[]);
    assert_eq!(mega2, pairs(ixs, "dsc-ss", &[]));
    assert!(mega2.len() > mega.len());
    assert!(mega2.contains(&("b00.txt".to_string(), "b00v9.txt".to_string())));
    let c2 = pairs(ixs, "c-sim", &[]);
    assert!(
        c2.is_superset(&want) && c2.contains(&("b00.txt".to_string(), "b00v9.txt".to_string()))
    );
}
