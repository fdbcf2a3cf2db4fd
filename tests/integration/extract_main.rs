//! `--extract main`: on a small crawl of HTML pages with heavy site boilerplate (header, nav
//! menu, footer) and short own content, an index created with `--extract main` finds exactly
//! the pairs that brute-force Jaccard over the library's main-content text finds (the planted
//! variants only), while a body index also pairs unrelated pages of one site through their
//! boilerplate. Queries and online adds use the index's extraction; the option is stored and
//! cannot be changed later.

use std::collections::BTreeSet;

use crate::common::*;
use ndd_index::canonicalize::{canonicalize_with, DocFormat, Extract};
use ndd_index::fingerprint::{fingerprint, FingerprintOptions};
use ndd_index::threshold::Threshold;

/// (key, html): 3 sites with 600 boilerplate words each; 36 pages of 30-50 own words; every
/// third page has a variant with one word changed.
fn crawl() -> Vec<(String, String)> {
    let mut rng = Rng::new(29);
    let mut word = move |n: u64| format!("w{}", rng.below(n));
    let boiler: Vec<(String, String)> = (0..3)
        .map(|s| {
            let menu: String = (0..200)
                .map(|i| format!("<li><a href=\"/m{i}.html\">menu{s}x{i} item{s}y{i}</a></li>"))
                .collect();
            let header = format!(
                "<header><h1>Site {s}</h1><p>{}</p></header><nav><ul>{menu}</ul></nav>",
                (0..100)
                    .map(|i| format!("tag{s}x{i}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let footer = format!(
                "<footer><p>{}</p></footer>",
                (0..98)
                    .map(|i| format!("foot{s}x{i}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            (header, footer)
        })
        .collect();
    let page = |s: usize, own: &[String]| {
        format!(
            "<!doctype html><html><head><title>t</title></head><body>{}<div class=\"content\"><p>{}</p></div>{}</body></html>",
            boiler[s].0,
            own.join(" "),
            boiler[s].1
        )
    };
    let mut docs = Vec::new();
    for p in 0..36 {
        let s = p % 3;
        let own: Vec<String> = (0..30 + (p % 5) * 5).map(|_| word(5000)).collect();
        docs.push((format!("site{s}/p{p:02}.html"), page(s, &own)));
        if p % 3 == 0 {
            let mut v = own.clone();
            let at = v.len() - 1;
            v[at] = format!("edit{p}");
            docs.push((format!("site{s}/p{p:02}v.html"), page(s, &v)));
        }
    }
    docs
}

fn write(dir: &std::path::Path, docs: &[(String, String)]) {
    for (k, html) in docs {
        let p = dir.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, html).unwrap();
    }
}

/// The pairs with 5-word-shingle resemblance >= t of the documents' `extract` text.
fn brute_force(docs: &[(String, String)], extract: Extract, t: &str) -> BTreeSet<(String, String)> {
    let t: Threshold = t.parse().unwrap();
    let feats: Vec<Vec<u64>> = docs
        .iter()
        .map(|(_, h)| {
            let c = canonicalize_with(h.as_bytes(), DocFormat::Html, None, extract).unwrap();
            fingerprint(&c.text, &FingerprintOptions::default()).features
        })
        .collect();
    let mut out = BTreeSet::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let inter = feats[i]
                .iter()
                .filter(|f| feats[j].binary_search(f).is_ok())
                .count();
            let union = feats[i].len() + feats[j].len() - inter;
            if t.admits(inter as u64, union as u64) {
                out.insert(ordered(&docs[i].0, &docs[j].0));
            }
        }
    }
    out
}

#[test]
fn main_extraction_pairs_only_the_planted_variants() {
    let docs = crawl();
    let planted: BTreeSet<(String, String)> = docs
        .iter()
        .filter(|(k, _)| k.ends_with("v.html"))
        .map(|(k, _)| ordered(&k.replace("v.html", ".html"), k))
        .collect();
    let body = TestIndex::new("extract-body");
    let dir = body.work().join("crawl");
    write(&dir, &docs);
    let main = TestIndex::new("extract-main");
    body.ingest(&[&dir], &[]);
    main.ingest(&[&dir], &["--extract", "main"]);
    assert_eq!(main.stats()["options"]["extract"], "main");
    assert_eq!(body.stats()["options"]["extract"], "body");

    for t in ["0.5", "0.8"] {
        let want_main = brute_force(&docs, Extract::Main, t);
        assert_eq!(pair_keys(&main.pairs(t)), want_main, "main at {t}");
        assert_eq!(
            pair_keys(&body.pairs(t)),
            brute_force(&docs, Extract::Body, t)
        );
    }
    // The boilerplate makes unrelated pages of a site near-duplicates of each other in the
    // body index; the main-content index finds the planted variants and nothing else.
    assert_eq!(pair_keys(&main.pairs("0.8")), planted);
    let body_pairs = pair_keys(&body.pairs("0.8"));
    assert!(body_pairs.is_superset(&planted));
    assert!(
        body_pairs.len() > 3 * planted.len(),
        "{} body pairs",
        body_pairs.len()
    );

    // A query is canonicalized as the index's documents are: p01 (no variant) with its
    // boilerplate replaced by another site's finds p01, and only it.
    let (k, html) = docs.iter().find(|(k, _)| k == "site1/p01.html").unwrap();
    let other = docs.iter().find(|(k, _)| k == "site2/p02.html").unwrap();
    let mut moved = other.1.clone();
    let own = |h: &str| {
        h.split("<p>")
            .nth(2)
            .unwrap()
            .split("</p>")
            .next()
            .unwrap()
            .to_owned()
    };
    moved = moved.replace(&own(&other.1), &own(html));
    let probe = main.work().join("probe.html");
    std::fs::write(&probe, &moved).unwrap();
    let answers = main.query(&[&probe], &["--threshold", "0.8"]);
    let matches: Vec<&str> = answers[0]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    assert_eq!(matches, vec![k.as_str()], "{}", answers[0]);
    let body_answer = body.query(&[&probe], &["--threshold", "0.8"]);
    assert!(
        body_answer[0]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["key"] != k.as_str()),
        "the body index compares the other site's boilerplate too: {}",
        body_answer[0]
    );

    // Online adds use it too.
    let added = main.work().join("added");
    write(&added, &[("site2/new.html".to_string(), moved.clone())]);
    main.add(&[added.to_str().unwrap()], &[]);
    assert!(pair_keys(&main.pairs("0.8")).contains(&ordered(k, "site2/new.html")));

    // The extraction is fixed at creation.
    let again = main.run_raw(&["ingest", "--extract", "body", dir.to_str().unwrap()]);
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("--extract"), "{err}");
    let bad = TestIndex::new("extract-bad");
    let o = bad.run_raw(&["ingest", "--extract", "article", dir.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("body or main"), "{err}");
}
