//! End-to-end tests: generate small corpora into temp directories and check them the way
//! the indexer will read them (keys, truth, WARC framing, canonical words).

use crate::args::{Format, Params};
use crate::doc::WordSource;
use crate::output::{generate, GEN_FILE, TRUTH_FILE};
use crate::plan::Plan;
use crate::vocab::{Vocab, Zipf};
use crate::warc::tests::parse as parse_warc;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ndd-gen-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

fn params(out: &Path, docs: u32, format: Format) -> Params {
    let mut p = Params::defaults(out.to_path_buf());
    p.docs = docs;
    p.batches = 3;
    p.format = format;
    p.sites = 5;
    p.quiet = true;
    p
}

/// Every file under `dir`, by path relative to it.
fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn read_truth(dir: &Path) -> Vec<(String, String)> {
    let text = fs::read_to_string(dir.join(TRUTH_FILE)).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("key\tlabel"));
    lines
        .map(|l| {
            l.split_once('\t')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .unwrap()
        })
        .collect()
}

/// A reference canonicalizer: drop script/style/comments, tags to spaces, decode the
/// entities ndd-gen uses, keep lowercase \w+ words.
fn canonical_words(html: &str) -> Vec<String> {
    let mut s = html.to_string();
    for (open, close) in [
        ("<script", "</script>"),
        ("<style", "</style>"),
        ("<!--", "-->"),
    ] {
        while let Some(a) = s.find(open) {
            let b = s[a..].find(close).unwrap() + a + close.len();
            s.replace_range(a..b, " ");
        }
    }
    let mut text = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '>') => {
                in_tag = false;
                text.push(' ');
            }
            (false, c) => text.push(c),
            _ => {}
        }
    }
    for (e, d) in [
        ("&nbsp;", "\u{a0}"),
        ("&eacute;", "é"),
        ("&mdash;", "—"),
        ("&quot;", "\""),
        ("&copy;", "©"),
        ("&amp;", "&"),
    ] {
        text = text.replace(e, d);
    }
    for (i, _) in text.match_indices('&') {
        let entity = text[i + 1..]
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap();
        assert!(
            entity.is_empty() || !text[i + 1 + entity.len()..].starts_with(';'),
            "undecoded &{entity};"
        );
    }
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

fn section<'a>(html: &'a str, open: &str, close: &str) -> &'a str {
    let a = html.find(open).unwrap();
    let b = html[a..].find(close).unwrap() + a;
    &html[a..b + close.len()]
}

#[test]
fn output_is_deterministic_across_runs_and_thread_counts() {
    for format in [Format::Files, Format::Warc] {
        let (a, b, c) = (temp_dir("det-a"), temp_dir("det-b"), temp_dir("det-c"));
        let mut p = params(&a, 1500, format);
        p.threads = 1;
        generate(&p).unwrap();
        p.out = b.clone();
        p.threads = 3;
        generate(&p).unwrap();
        p.out = c.clone();
        p.seed = 2;
        generate(&p).unwrap();
        let (ta, tb, tc) = (read_tree(&a), read_tree(&b), read_tree(&c));
        assert!(ta.len() >= 3);
        assert!(
            ta == tb,
            "{format:?}: same arguments must give identical bytes"
        );
        assert!(
            ta[TRUTH_FILE] != tc[TRUTH_FILE],
            "another seed must give another corpus"
        );
        // Refuses to write into a non-empty directory.
        p.out = a.clone();
        assert!(generate(&p).is_err());
        for d in [a, b, c] {
            fs::remove_dir_all(d).unwrap();
        }
    }
}

#[test]
fn truth_keys_match_written_files() {
    let dir = temp_dir("files");
    let p = params(&dir, 2000, Format::Files);
    let report = generate(&p).unwrap();
    let truth = read_truth(&dir);
    assert_eq!(truth.len(), 2000);
    let tree = read_tree(&dir);
    let mut keys = HashSet::new();
    let mut bytes = 0;
    for (rel, data) in &tree {
        if let Some(rest) = rel.strip_prefix("batch-") {
            let (_, key) = rest.split_once('/').unwrap();
            assert!(keys.insert(key.to_string()), "key {key} in two batches");
            bytes += data.len() as u64;
        }
    }
    let truth_keys: HashSet<String> = truth.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(keys, truth_keys);
    assert_eq!(bytes, report.bytes_written());
    assert_eq!(tree.len(), 2000 + 2, "docs + truth + gen.json");
    // Labels: a label is the number of a document of its cluster (the original, which
    // labels itself); singletons and originals carry their own number.
    let number = |k: &str| {
        k.rsplit("page-")
            .next()
            .unwrap()
            .trim_end_matches(".html")
            .to_string()
    };
    let own: HashMap<String, &str> = truth.iter().map(|(k, l)| (number(k), l.as_str())).collect();
    let mut variants = 0;
    for (k, l) in &truth {
        assert_eq!(
            own[l], l,
            "label {l} must be an original labelled by itself"
        );
        assert!(l <= &number(k), "the original precedes its variants");
        variants += (l != &number(k)) as u32;
    }
    assert_eq!(variants, 600);
    let json = String::from_utf8(tree[GEN_FILE].clone()).unwrap();
    assert!(json.contains("\"documents\": 2000,"), "{json}");
    assert!(json.contains("\"variants\": 600,"), "{json}");
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn warc_records_are_well_formed_and_match_truth() {
    let dir = temp_dir("warc");
    let p = params(&dir, 1200, Format::Warc);
    let report = generate(&p).unwrap();
    let mut uris = Vec::new();
    for (b, batch) in report.batches.iter().enumerate() {
        let data = fs::read(dir.join(&batch.path)).unwrap();
        assert_eq!(data.len() as u64, batch.bytes_written);
        let recs = parse_warc(&data);
        assert_eq!(recs[0].header("WARC-Type"), Some("warcinfo"));
        assert_eq!(recs.len() as u32, batch.docs + 1);
        for r in &recs[1..] {
            assert_eq!(r.header("WARC-Type"), Some("response"));
            assert!(r
                .header("WARC-Date")
                .unwrap()
                .starts_with(&format!("2024-01-{:02}T", b + 1)));
            let block = &r.block;
            let end = block.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
            let head = std::str::from_utf8(&block[..end]).unwrap();
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
            assert!(head.contains("\r\nContent-Type: text/html; charset=utf-8\r\n"));
            let len: usize = head
                .rsplit("Content-Length: ")
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(len, block.len() - end - 4, "HTTP Content-Length");
            assert!(block[end + 4..].starts_with(b"<!DOCTYPE html>"));
            uris.push(r.header("WARC-Target-URI").unwrap().to_string());
        }
    }
    let truth: Vec<String> = read_truth(&dir).into_iter().map(|(k, _)| k).collect();
    assert_eq!(uris, truth, "one record per truth key, in truth order");
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn pages_canonicalize_to_planted_words_and_boilerplate() {
    let dir = temp_dir("canon");
    let mut p = params(&dir, 600, Format::Files);
    p.batches = 1;
    generate(&p).unwrap();
    let vocab = Vocab::build(p.vocab);
    let zipf = Zipf::new(p.vocab, p.zipf);
    let plan = Plan::build(&p);
    let src = WordSource {
        seed: p.seed,
        mean_words: p.words,
        edit_rate: p.edit_rate,
        vocab: &vocab,
        zipf: &zipf,
    };
    let canon = |w: u32| canonical_words(vocab.html(w)).join(" ");
    let mut boiler: HashMap<u32, String> = HashMap::new();
    let (mut words, mut variant) = (Vec::new(), Vec::new());
    let mut variants_seen = 0;
    for doc in 0..plan.n {
        let html = fs::read_to_string(dir.join("batch-01").join(plan.key(doc))).unwrap();
        let o = plan.original(doc);
        src.original_words(o, false, &mut words);
        let body = if o == doc {
            &words
        } else {
            variants_seen += 1;
            src.variant_words(doc, &words, &mut variant);
            &variant
        };
        let expect: Vec<String> = body.iter().map(|&w| canon(w)).collect();
        assert_eq!(
            canonical_words(section(&html, "<main>", "</main>")),
            expect,
            "doc {doc}"
        );
        // Site boilerplate: identical on every page of the site, 30-80 words.
        let bp = format!(
            "{} {} {}",
            section(&html, "<header>", "</header>"),
            section(&html, "<nav", "</nav>"),
            section(&html, "<footer>", "</footer>")
        );
        let n = canonical_words(&bp).len();
        assert!((30..=80).contains(&n), "{n} boilerplate words");
        assert_eq!(
            boiler
                .entry(plan.home_site(doc))
                .or_insert_with(|| bp.clone()),
            &bp
        );
        assert!(html.contains("<script>") && html.contains("<style>") && html.contains("<title>"));
    }
    assert!(variants_seen > 100);
    assert_eq!(boiler.len(), 5);
    fs::remove_dir_all(dir).unwrap();
}

fn shingles(words: &[String]) -> HashSet<&[String]> {
    words.windows(4).collect()
}

fn jaccard(a: &HashSet<&[String]>, b: &HashSet<&[String]>) -> f64 {
    a.intersection(b).count() as f64 / a.union(b).count() as f64
}

#[test]
fn imatch_protocol_plants_similar_variants_among_unrelated_docs() {
    let dir = temp_dir("imatch");
    let mut p = params(&dir, 200, Format::Files);
    p.imatch = Some((10, 10));
    generate(&p).unwrap();
    let truth = read_truth(&dir);
    assert_eq!(truth.len(), 310);
    let mut clusters: HashMap<&str, Vec<&str>> = HashMap::new();
    for (k, l) in &truth {
        clusters.entry(l).or_default().push(k);
    }
    let planted: Vec<&Vec<&str>> = clusters.values().filter(|m| m.len() > 1).collect();
    assert_eq!(planted.len(), 10);
    assert!(planted.iter().all(|m| m.len() == 11));
    assert_eq!(clusters.len(), 10 + 200);

    let batch_of = |key: &str| -> String {
        (1..=3)
            .map(|b| dir.join(format!("batch-{b:02}")).join(key))
            .find(|p| p.exists())
            .map(|p| fs::read_to_string(p).unwrap())
            .unwrap()
    };
    let body = |key: &str| canonical_words(section(&batch_of(key), "<main>", "</main>"));
    for m in &planted {
        let original = body(m[0]); // truth order = document order: the original comes first
        let text_bytes: usize = original.iter().map(|w| w.len() + 1).sum();
        assert!((900..2200).contains(&text_bytes), "{text_bytes}");
        let so = shingles(&original);
        for v in &m[1..] {
            let vw = body(v);
            let j = jaccard(&so, &shingles(&vw));
            // 5% word edits touch ~4 shingles each: resemblance ~0.6-0.8.
            assert!(j > 0.45 && j < 0.95, "variant resemblance {j}");
        }
    }
    // Unrelated documents share almost no shingles.
    let singles: Vec<&str> = clusters
        .values()
        .filter(|m| m.len() == 1)
        .map(|m| m[0])
        .take(20)
        .collect();
    let bodies: Vec<Vec<String>> = singles.iter().map(|k| body(k)).collect();
    for i in 1..bodies.len() {
        let j = jaccard(&shingles(&bodies[0]), &shingles(&bodies[i]));
        assert!(j < 0.05, "unrelated resemblance {j}");
    }
    fs::remove_dir_all(dir).unwrap();
}
