//! Megashingles (Fetterly et al.) stored as their own table, and the C-only method
//! (Henzinger's C-similarity of 384-bit simhashes alone): each against brute force, across
//! reopening and compaction.

use std::collections::BTreeSet;

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
