//! Sites and Henzinger's combined algorithm as she ran it: on a small crawl of several sites
//! (JSONL with URLs; files under `--site path:N`), `pairs --json` says which pairs are
//! same-site, and `--method henzinger` gives exactly C-similar different-site pairs plus
//! B-similar same-site pairs with C >= 355/384, each computed here by brute force from the
//! canonical texts. `eval` splits its scores by site and runs the split-half protocol.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::fingerprint::simhash::{hamming_wide, simhash384};
use ndd_index::fingerprint::{fingerprint, FingerprintOptions};
use ndd_index::method::dsc::supershingles;
use ndd_index::method::DscOptions;

/// (key, url host, text): 4 sites, each with a long navigation boilerplate; pages with
/// short own content (same-site pages look alike); variants on the same site and copies on
/// other sites.
fn crawl() -> Vec<(String, String, String)> {
    let mut rng = Rng::new(15);
    let mut word = |n: u64| format!("w{}", rng.below(n));
    let nav: Vec<Vec<String>> = (0..4)
        .map(|s| (0..120).map(|i| format!("nav{s}x{i}")).collect())
        .collect();
    let mut docs = Vec::new();
    for p in 0..40 {
        let site = p % 4;
        let own: Vec<String> = (0..40 + (p % 7) * 30).map(|_| word(4000)).collect();
        let page = |own: &[String], s: usize| {
            let mut v = nav[s].clone();
            v.extend_from_slice(own);
            v.join(" ")
        };
        docs.push((
            format!("p{p:02}"),
            format!("site{site}.example"),
            page(&own, site),
        ));
        if p % 3 == 0 {
            // A variant on the same site: a few words changed.
            let mut v = own.clone();
            for _ in 0..2 {
                let at = (word(1000).len() * 7 + p) % v.len();
                v[at] = format!("edit{p}");
            }
            docs.push((
                format!("p{p:02}v"),
                format!("site{site}.example"),
                page(&v, site),
            ));
        }
        if p % 4 == 1 {
            // A mirror on another site (the whole page, the original's boilerplate).
            docs.push((
                format!("p{p:02}m"),
                format!("mirror{}.example", p % 2),
                page(&own, site),
            ));
        }
    }
    docs
}

fn write_jsonl(path: &std::path::Path, docs: &[(String, String, String)]) {
    let mut s = String::new();
    for (k, host, text) in docs {
        let line = serde_json::json!({"id": k, "url": format!("http://www.{host}/{k}.html"), "text": text});
        s.push_str(&format!("{line}\n"));
    }
    std::fs::write(path, s).unwrap();
}

fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.into(), b.into())
    } else {
        (b.into(), a.into())
    }
}

#[test]
fn henzinger_pairs_and_same_site_flags_match_brute_force() {
    let docs = crawl();
    let ix = TestIndex::new("sites-henzinger");
    let input = ix.work().join("crawl.jsonl");
    write_jsonl(&input, &docs);
    ix.ingest(&[&input], &["--methods", "all"]);

    // Brute force: C-similarity of the 384-bit simhashes, B-similarity of Henzinger's
    // supershingles (84 min values, 6 of 14, 2 agreeing) over the full 5-word shingle sets.
    let texts: Vec<String> = docs
        .iter()
        .map(|(_, _, t)| {
            canonicalize(t.as_bytes(), DocFormat::Text, None)
                .unwrap()
                .text
        })
        .collect();
    let sims: Vec<[u64; 6]> = texts.iter().map(|t| simhash384(t)).collect();
    let o = DscOptions::default();
    let supers: Vec<Vec<u64>> = texts
        .iter()
        .map(|t| supershingles(&fingerprint(t, &FingerprintOptions::default()).features, &o))
        .collect();
    let mut want = BTreeSet::new();
    let mut same_site = BTreeMap::new();
    let (mut n_same, mut n_diff) = (0, 0);
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let c = 1.0 - hamming_wide(&sims[i], &sims[j]) as f64 / 384.0;
            let agree = supers[i]
                .iter()
                .zip(&supers[j])
                .filter(|(x, y)| x == y)
                .count() as u32;
            let same = docs[i].1 == docs[j].1;
            let key = ordered(&docs[i].0, &docs[j].0);
            same_site.insert(key.clone(), same);
            let hit = if same {
                agree >= o.min_agree && c >= 355.0 / 384.0
            } else {
                c >= 355.0 / 384.0
            };
            if hit {
                want.insert(key);
                if same {
                    n_same += 1
                } else {
                    n_diff += 1
                }
            }
        }
    }
    assert!(
        n_same >= 5 && n_diff >= 5,
        "too few pairs: {n_same} same-site, {n_diff} other"
    );

    let got = json_lines(&ix.stdout(&["pairs", "--json", "--method", "henzinger"]));
    let keys: BTreeSet<(String, String)> = got
        .iter()
        .map(|p| ordered(p["key_a"].as_str().unwrap(), p["key_b"].as_str().unwrap()))
        .collect();
    assert_eq!(keys, want);
    for p in &got {
        let k = ordered(p["key_a"].as_str().unwrap(), p["key_b"].as_str().unwrap());
        assert_eq!(p["same_site"], same_site[&k], "{p}");
        assert_eq!(p["method"], "henzinger");
    }

    // c-sim through the piece index: the brute-force C pairs, at two thresholds.
    for t in ["0.9", "0.97"] {
        let tf: f64 = t.parse().unwrap();
        let mut c = BTreeSet::new();
        for i in 0..docs.len() {
            for j in i + 1..docs.len() {
                if 1.0 - hamming_wide(&sims[i], &sims[j]) as f64 / 384.0 >= tf {
                    c.insert(ordered(&docs[i].0, &docs[j].0));
                }
            }
        }
        assert!(!c.is_empty());
        assert_eq!(
            pair_keys(&ix.pairs_with(&["--method", "c-sim", "--threshold", t])),
            c
        );
    }

    // Shingle pairs: JSON has same_site, the tab output keeps its three columns.
    let sh = json_lines(&ix.stdout(&["pairs", "--json", "--threshold", "0.5"]));
    assert!(sh.iter().any(|p| p["same_site"] == true));
    for p in &sh {
        let k = ordered(p["key_a"].as_str().unwrap(), p["key_b"].as_str().unwrap());
        assert_eq!(p["same_site"], same_site[&k], "{p}");
    }
    let text = ix.stdout(&["pairs", "--threshold", "0.5"]);
    assert_eq!(text.lines().count(), sh.len());
    assert!(text.lines().all(|l| l.split('\t').count() == 3), "{text}");

    // eval: every method's same-site and different-site counts add up to its totals; the
    // split-half protocol reports thresholds and test scores.
    let truth = ix.work().join("truth.tsv");
    let mut t = String::from("key\tlabel\n");
    for (k, _, _) in &docs {
        let label = k.trim_end_matches(['v', 'm']);
        t.push_str(&format!("{k}\t{label}\n"));
    }
    std::fs::write(&truth, t).unwrap();
    let ev = ix.json(&["eval", "--truth", truth.to_str().unwrap()]);
    for r in ev["rows"].as_array().unwrap() {
        let (s, d) = (&r["same_site"], &r["different_site"]);
        let sum = |f: &str| s[f].as_u64().unwrap() + d[f].as_u64().unwrap();
        assert_eq!(sum("found"), r["found"].as_u64().unwrap(), "{r}");
        assert_eq!(sum("true_positives"), r["true_positives"].as_u64().unwrap());
        assert_eq!(sum("positives"), r["positives"].as_u64().unwrap());
    }
    let split = &ev["henzinger_split"][0];
    let bits = split["c_agree_bits"].as_u64().unwrap();
    assert!((327..=384).contains(&bits), "{split}");
    assert!(split["test"]["positives"].as_u64().unwrap() > 0, "{split}");
}

#[test]
fn files_get_their_site_from_the_path_rule() {
    let ix = TestIndex::new("sites-path");
    let input = ix.work().join("crawl");
    let mut rng = Rng::new(3);
    let body: Vec<String> = (0..200).map(|_| format!("w{}", rng.below(5000))).collect();
    let body = body.join(" ");
    // The same page under a/x, a/y and b/x: path:1 puts a/x and a/y on one site, path:2 not.
    for dir in ["a/x", "a/y", "b/x"] {
        std::fs::create_dir_all(input.join(dir)).unwrap();
        std::fs::write(input.join(dir).join("p.txt"), &body).unwrap();
    }
    let flags = |ix: &TestIndex| -> BTreeMap<(String, String), bool> {
        json_lines(&ix.stdout(&["pairs", "--json", "--threshold", "0.9"]))
            .iter()
            .map(|p| {
                (
                    ordered(p["key_a"].as_str().unwrap(), p["key_b"].as_str().unwrap()),
                    p["same_site"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    ix.ingest(&[&input], &[]);
    let k = |a: &str, b: &str| ordered(a, b);
    let f = flags(&ix);
    assert_eq!(f.len(), 3, "{f:?}");
    // Keys are relative to the ingested folder: a/x/p.txt, ...; the default is path:1.
    assert_eq!(ix.stats()["options"]["site"], "path:1");
    assert!(f[&k("a/x/p.txt", "a/y/p.txt")]);
    assert!(!f[&k("a/x/p.txt", "b/x/p.txt")]);

    let ix2 = TestIndex::new("sites-path2");
    ix2.ingest(&[&input], &["--site", "path:2"]);
    let f = flags(&ix2);
    assert!(!f[&k("a/x/p.txt", "a/y/p.txt")]);
    assert_eq!(ix2.stats()["options"]["site"], "path:2");
    // The rule is a creation option: another one for the same index is refused.
    let out = ix2.run_raw(&[
        "ingest",
        "--quiet",
        "--site",
        "path:1",
        input.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--site"));
    let out = ix.run_raw(&[
        "ingest",
        "--quiet",
        "--site",
        "path:0",
        input.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("site rule"));
}
