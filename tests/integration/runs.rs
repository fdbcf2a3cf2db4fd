//! `ndd-index runs` on a held-out collection: generated near-duplicate pages shipped as a
//! ClueWeb09-style WARC/0.18 file and a GOV2-style TREC web file, several topics and runs, and
//! qrels. Every count of the report is checked against a brute-force exact-Jaccard computation
//! done here, from the generated words alone (5-word shingles as strings, every pair compared).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use crate::common::*;
use ndd_index::Threshold;
use serde_json::Value;

const T_NUM: u64 = 5; // T = 0.5
const TOPS: [usize; 3] = [5, 10, 20];

/// splitmix64: a small deterministic generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn word(rng: &mut Rng) -> String {
    (0..6)
        .map(|_| (b'a' + rng.below(26) as u8) as char)
        .collect()
}

struct Doc {
    docno: String,
    url: String,
    words: Vec<String>,
    in_warc: bool,
}

/// Families of near-duplicates: a base page and variants with k of its words replaced, on the
/// same site (with or without `www.`) or on another.
fn collection() -> Vec<Doc> {
    let mut rng = Rng(17);
    let mut docs = Vec::new();
    let edits = [0usize, 1, 2, 4, 7, 11, 16, 24];
    for f in 0..14 {
        let base: Vec<String> = (0..60).map(|_| word(&mut rng)).collect();
        let variants = 1 + rng.below(4);
        for v in 0..=variants {
            let mut words = base.clone();
            if v > 0 {
                for _ in 0..edits[rng.below(edits.len())] {
                    let i = rng.below(words.len());
                    words[i] = word(&mut rng);
                }
            }
            let url = match (v, rng.below(3)) {
                (0, _) => format!("http://www.site{f}.com/page"),
                (_, 0) => format!("http://site{f}.com/page?v={v}"),
                (_, 1) => format!("https://WWW.site{f}.com:8080/copy/{v}"),
                _ => format!("http://mirror{}.org/f{f}/{v}", rng.below(5)),
            };
            let in_warc = rng.below(2) == 0;
            let docno = if in_warc {
                format!("clueweb09-en0000-{f:02}-{v:05}")
            } else {
                format!("GX{f:03}-00-{v:07}")
            };
            docs.push(Doc {
                docno,
                url,
                words,
                in_warc,
            });
        }
    }
    docs
}

fn html(d: &Doc) -> String {
    format!(
        "<html><head><title>t</title></head><body><p>{}</p></body></html>",
        d.words.join(" ")
    )
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The collection as it would ship: WARC/0.18 (one gzip member per record, ClueWeb09's odd
/// dates) and TREC web text in a gzip file named only `00.gz`.
fn write_collection(dir: &Path, docs: &[Doc]) {
    let mut warc = gzip(
        b"WARC/0.18\r\nWARC-Type: warcinfo\r\nWARC-Date: 2009-03-65T08:43:19-0800\r\n\
          Content-Length: 0\r\n\r\n\r\n\r\n",
    );
    let mut trec = String::new();
    for d in docs {
        if d.in_warc {
            let http = format!(
                "HTTP/1.1 200 OK\nContent-Type: text/html; charset=utf-8\n\n{}",
                html(d)
            );
            let rec = format!(
                "WARC/0.18\r\nWARC-Type: response\r\nWARC-Target-URI: {}\r\n\
                 WARC-Date: 2009-03-65T08:43:19-0800\r\nWARC-TREC-ID: {}\r\n\
                 Content-Type: application/http;msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
                d.url,
                d.docno,
                http.len()
            );
            warc.extend(gzip(rec.as_bytes()));
        } else {
            trec.push_str(&format!(
                "<DOC>\n<DOCNO>{}</DOCNO>\n<DOCHDR>\n{}\nHTTP/1.1 200 OK\nContent-Type: text/html\n\
                 </DOCHDR>\n{}\n</DOC>\n",
                d.docno,
                d.url,
                html(d)
            ));
        }
    }
    std::fs::write(dir.join("en0000-00.warc.gz"), warc).unwrap();
    std::fs::create_dir_all(dir.join("GX000")).unwrap();
    std::fs::write(dir.join("GX000/00.gz"), gzip(trec.as_bytes())).unwrap();
}

/// Exact Jaccard of 5-word shingle sets, as (intersection, union).
fn jaccard(a: &[String], b: &[String]) -> (u64, u64) {
    let sh = |w: &[String]| -> HashSet<String> { w.windows(5).map(|s| s.join(" ")).collect() };
    let (x, y) = (sh(a), sh(b));
    let inter = x.intersection(&y).count() as u64;
    (inter, (x.len() + y.len()) as u64 - inter)
}

/// `inter / union >= k / 10`.
fn at(j: (u64, u64), k: u64) -> bool {
    j.1 > 0 && j.0 * 10 >= k * j.1
}

fn site(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    let host = rest.split(['/', '?']).next().unwrap();
    let host = host.split(':').next().unwrap().to_ascii_lowercase();
    host.strip_prefix("www.").unwrap_or(&host).to_string()
}

/// A run line: (topic, docno, score text).
type Line = (String, String, String);

/// Runs: for each topic, a pool of documents; each run lists a random part of it with random
/// scores (ties included) and an unresolved docno now and then.
fn make_runs(docs: &[Doc]) -> (Vec<(String, Vec<Line>)>, Vec<(String, String, i32)>) {
    let mut rng = Rng(99);
    let topics = ["101", "7", "55", "12"];
    let mut runs: Vec<(String, Vec<Line>)> =
        (0..3).map(|r| (format!("run{r}"), Vec::new())).collect();
    let mut qrels = Vec::new();
    for (ti, topic) in topics.iter().enumerate() {
        // The topic's pool: several whole families plus stray documents.
        let mut pool: Vec<usize> = (0..docs.len())
            .filter(|&i| (docs[i].words[0].len() + i + ti).is_multiple_of(3) || rng.below(4) == 0)
            .collect();
        pool.truncate(30);
        for (_, lines) in runs.iter_mut() {
            let mut chosen: Vec<usize> =
                pool.iter().copied().filter(|_| rng.below(3) != 0).collect();
            if rng.below(2) == 0 {
                chosen.push(usize::MAX); // not in the index
            }
            for (k, &i) in chosen.iter().enumerate() {
                let docno = if i == usize::MAX {
                    format!("clueweb09-en9999-{ti:02}-{k:05}")
                } else {
                    docs[i].docno.clone()
                };
                let score = format!("{}.{}", rng.below(6), rng.below(3) * 5);
                lines.push((topic.to_string(), docno, score));
            }
        }
        for &i in pool.iter().step_by(2) {
            qrels.push((
                topic.to_string(),
                docs[i].docno.clone(),
                rng.below(3) as i32 - 1,
            ));
        }
        qrels.push((topic.to_string(), format!("GX999-00-{ti:07}"), 1)); // relevant, unresolved
    }
    (runs, qrels)
}

fn write_run(path: &Path, tag: &str, lines: &[Line]) {
    let mut s = String::new();
    for (k, (topic, docno, score)) in lines.iter().enumerate() {
        s.push_str(&format!("{topic} Q0 {docno} {} {score} {tag}\n", k + 1));
    }
    std::fs::write(path, s).unwrap();
}

/// trec_eval order of a topic's lines: score descending, docno descending.
fn ordered(lines: &[Line], topic: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = lines
        .iter()
        .filter(|l| l.0 == topic)
        .map(|l| (l.1.clone(), l.2.clone()))
        .collect();
    v.sort_by(|a, b| {
        let (x, y): (f64, f64) = (a.1.parse().unwrap(), b.1.parse().unwrap());
        y.total_cmp(&x).then_with(|| b.0.cmp(&a.0))
    });
    v
}

struct Oracle<'a> {
    words: HashMap<&'a str, &'a [String]>,
    cache: std::cell::RefCell<HashMap<(String, String), (u64, u64)>>,
}

impl<'a> Oracle<'a> {
    fn j(&self, a: &str, b: &str) -> Option<(u64, u64)> {
        let (x, y) = (self.words.get(a)?, self.words.get(b)?);
        let key = (a.min(b).to_string(), a.max(b).to_string());
        Some(
            *self
                .cache
                .borrow_mut()
                .entry(key)
                .or_insert_with(|| jaccard(x, y)),
        )
    }
    fn similar(&self, a: &str, b: &str, k: u64) -> bool {
        a != b && self.j(a, b).is_some_and(|j| at(j, k))
    }
    /// Documents of `set` duplicated at k/10 within it.
    fn duplicated(&self, set: &[&str], k: u64) -> u64 {
        set.iter()
            .filter(|a| set.iter().any(|b| self.similar(a, b, k)))
            .count() as u64
    }
    fn redundant(&self, list: &[&str]) -> Vec<bool> {
        let mut kept: Vec<&str> = Vec::new();
        list.iter()
            .map(|d| {
                if kept.iter().any(|k| self.similar(d, k, T_NUM)) {
                    true
                } else {
                    kept.push(d);
                    false
                }
            })
            .collect()
    }
}

fn levels_of(v: &Value) -> Vec<u64> {
    (1..=9)
        .map(|k| v[format!("0.{k}")].as_u64().unwrap())
        .collect()
}

#[test]
fn runs_report_equals_brute_force_exact_jaccard() {
    let tmp = temp_dir("runs");
    let docs = collection();
    let coll = tmp.path().join("collection");
    std::fs::create_dir_all(&coll).unwrap();
    write_collection(&coll, &docs);
    let index = tmp.path().join("ix");
    let index_s = index.to_str().unwrap();
    ndd(&["ingest", "--index", index_s, "-q", coll.to_str().unwrap()]);

    let (runs, qrels) = make_runs(&docs);
    let mut run_paths = Vec::new();
    for (tag, lines) in &runs {
        let p = tmp.path().join(format!("{tag}.txt"));
        write_run(&p, tag, lines);
        run_paths.push(p.to_str().unwrap().to_string());
    }
    let qrels_path = tmp.path().join("qrels.txt");
    let qtext: String = qrels
        .iter()
        .map(|(t, d, r)| format!("{t} 0 {d} {r}\n"))
        .collect();
    std::fs::write(&qrels_path, qtext).unwrap();
    let dedup = tmp.path().join("dedup");
    let mut args = vec![
        "runs",
        "--index",
        index_s,
        "--json",
        "--top",
        "5,10,20",
        "--threshold",
        "0.5",
        "--qrels",
        qrels_path.to_str().unwrap(),
        "--dedup-run",
        dedup.to_str().unwrap(),
    ];
    args.extend(run_paths.iter().map(String::as_str));
    let rep: Value = serde_json::from_str(&stdout(&ndd(&args))).unwrap();

    let oracle = Oracle {
        words: docs
            .iter()
            .map(|d| (d.docno.as_str(), d.words.as_slice()))
            .collect(),
        cache: Default::default(),
    };
    let known = |d: &str| oracle.words.contains_key(d);
    let topics: BTreeSet<String> = runs
        .iter()
        .flat_map(|(_, l)| l.iter().map(|x| x.0.clone()))
        .collect();

    // topics: the union of the runs' documents per topic.
    let rows = rep["topics"].as_array().unwrap();
    assert_eq!(rows.len(), topics.len());
    let mut sources: BTreeSet<(String, String)> = BTreeSet::new();
    for row in rows {
        let topic = row["topic"].as_str().unwrap();
        let docset: BTreeSet<&str> = runs
            .iter()
            .flat_map(|(_, l)| l.iter().filter(|x| x.0 == topic).map(|x| x.1.as_str()))
            .collect();
        assert_eq!(
            row["docs"].as_u64().unwrap(),
            docset.len() as u64,
            "topic {topic}"
        );
        let set: Vec<&str> = docset.iter().copied().filter(|d| known(d)).collect();
        let want: Vec<u64> = (1..=9).map(|k| oracle.duplicated(&set, k)).collect();
        assert_eq!(levels_of(&row["duplicated"]), want, "topic {topic}");
        assert!(
            want[0] > 0 && want[8] < want[0],
            "the collection spans levels: {want:?}"
        );
        for a in &set {
            for b in &set {
                if a < b && oracle.similar(a, b, T_NUM) {
                    sources.insert((a.to_string(), b.to_string()));
                }
            }
        }
    }
    // Topic order is numeric.
    let order: Vec<&str> = rows.iter().map(|r| r["topic"].as_str().unwrap()).collect();
    assert_eq!(order, ["7", "12", "55", "101"]);

    // run_topics, and the walk kept for the dedup check.
    let mut expect_rt: Vec<(String, String, usize, u64, u64, u64)> = Vec::new();
    let mut walks: HashMap<(String, String), Vec<bool>> = HashMap::new();
    for (tag, lines) in &runs {
        for topic in &topics {
            let list = ordered(lines, topic);
            if list.is_empty() {
                continue;
            }
            let names: Vec<&str> = list.iter().map(|x| x.0.as_str()).collect();
            let red = oracle.redundant(&names);
            for n in TOPS {
                let k = n.min(names.len());
                let top: Vec<&str> = names[..k].to_vec();
                let dup = oracle.duplicated(&top, T_NUM);
                let r = red[..k].iter().filter(|&&x| x).count() as u64;
                expect_rt.push((tag.clone(), topic.clone(), n, k as u64, dup, r));
            }
            walks.insert((tag.clone(), topic.clone()), red);
        }
    }
    let mut got_rt: Vec<(String, String, usize, u64, u64, u64)> = rep["run_topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run"].as_str().unwrap().to_string(),
                r["topic"].as_str().unwrap().to_string(),
                r["n"].as_u64().unwrap() as usize,
                r["docs"].as_u64().unwrap(),
                r["duplicated"].as_u64().unwrap(),
                r["redundant"].as_u64().unwrap(),
            )
        })
        .collect();
    got_rt.sort();
    expect_rt.sort();
    assert_eq!(got_rt, expect_rt);
    assert!(
        expect_rt.iter().any(|r| r.5 > 0),
        "some run-topic has redundant documents"
    );

    // table: Table 4.1 from the oracle's run-topics, within 0.01.
    let table = rep["table"].as_array().unwrap();
    assert_eq!(table.len(), TOPS.len());
    for (t, n) in table.iter().zip(TOPS) {
        assert_eq!(t["n"].as_u64().unwrap() as usize, n);
        let rts: Vec<_> = expect_rt.iter().filter(|r| r.2 == n && r.3 > 0).collect();
        let rows = t["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 19);
        for (i, row) in rows.iter().enumerate() {
            let p = 5 * (i as u64 + 1);
            assert_eq!(row["at_least_percent"].as_u64().unwrap(), p);
            let c = rts.iter().filter(|r| r.5 * 100 >= p * r.3).count();
            let want = 100.0 * c as f64 / rts.len() as f64;
            let got = row["run_topics_percent"].as_f64().unwrap();
            assert!((got - want).abs() < 0.01, "n={n} {p}%: {got} vs {want}");
        }
    }

    // qrels: among each topic's relevant documents.
    let q = &rep["qrels"];
    let mut total = 0u64;
    let mut dup = [0u64; 9];
    for (ti, row) in q["topics"].as_array().unwrap().iter().enumerate() {
        let topic = row["topic"].as_str().unwrap();
        let rel: BTreeSet<&str> = qrels
            .iter()
            .filter(|(t, _, r)| t == topic && *r > 0)
            .map(|(_, d, _)| d.as_str())
            .collect();
        assert_eq!(
            row["relevant"].as_u64().unwrap(),
            rel.len() as u64,
            "row {ti}"
        );
        let set: Vec<&str> = rel.iter().copied().filter(|d| known(d)).collect();
        let want: Vec<u64> = (1..=9).map(|k| oracle.duplicated(&set, k)).collect();
        assert_eq!(levels_of(&row["duplicated"]), want, "qrels topic {topic}");
        total += rel.len() as u64;
        for (s, w) in dup.iter_mut().zip(&want) {
            *s += w;
        }
    }
    assert_eq!(q["relevant"].as_u64().unwrap(), total);
    assert_eq!(levels_of(&q["duplicated"]), dup.to_vec());

    // sources: distinct pairs at >= T inside a topic collection, by site.
    let url: HashMap<&str, &str> = docs
        .iter()
        .map(|d| (d.docno.as_str(), d.url.as_str()))
        .collect();
    let same = sources
        .iter()
        .filter(|(a, b)| site(url[a.as_str()]) == site(url[b.as_str()]))
        .count() as u64;
    let s = &rep["sources"];
    assert_eq!(s["pairs"].as_u64().unwrap(), sources.len() as u64);
    assert_eq!(s["same_site"].as_u64().unwrap(), same);
    assert_eq!(
        s["different_site"].as_u64().unwrap(),
        sources.len() as u64 - same
    );
    assert_eq!(s["unknown_site"].as_u64().unwrap(), 0);
    assert!(same > 0 && same < sources.len() as u64, "both kinds occur");

    // unresolved: the runs' and the relevant judgments' docnos that are not in the index.
    let mut missing: BTreeSet<&str> = runs
        .iter()
        .flat_map(|(_, l)| l.iter().map(|x| x.1.as_str()))
        .filter(|d| !known(d))
        .collect();
    missing.extend(
        qrels
            .iter()
            .filter(|(_, d, r)| *r > 0 && !known(d))
            .map(|(_, d, _)| d.as_str()),
    );
    let u = &rep["unresolved"];
    assert_eq!(u["count"].as_u64().unwrap(), missing.len() as u64);
    let ex: Vec<&str> = u["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ex, missing.iter().take(10).copied().collect::<Vec<_>>());

    // --dedup-run: each run again, without the redundant documents, ranks 1..k, scores kept.
    for (tag, lines) in &runs {
        let text = std::fs::read_to_string(dedup.join(format!("{tag}.txt"))).unwrap();
        let mut got: BTreeMap<String, Vec<(String, u64, String)>> = BTreeMap::new();
        for l in text.lines() {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 6, "{l}");
            assert_eq!((f[1], f[5]), ("Q0", tag.as_str()));
            got.entry(f[0].to_string()).or_default().push((
                f[2].to_string(),
                f[3].parse().unwrap(),
                f[4].to_string(),
            ));
        }
        for topic in &topics {
            let list = ordered(lines, topic);
            let red = &walks[&(tag.clone(), topic.clone())];
            let want: Vec<(String, u64, String)> = list
                .iter()
                .zip(red)
                .filter(|(_, &r)| !r)
                .enumerate()
                .map(|(i, ((d, s), _))| (d.clone(), i as u64 + 1, s.clone()))
                .collect();
            assert_eq!(
                got.get(topic).cloned().unwrap_or_default(),
                want,
                "{tag} {topic}"
            );
        }
    }
    // Scoring the deduplicated run again finds nothing redundant left.
    let again: Vec<String> = runs
        .iter()
        .map(|(tag, _)| {
            dedup
                .join(format!("{tag}.txt"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut args = vec!["runs", "--index", index_s, "--json", "--top", "20"];
    args.extend(again.iter().map(String::as_str));
    let rep2: Value = serde_json::from_str(&stdout(&ndd(&args))).unwrap();
    for r in rep2["run_topics"].as_array().unwrap() {
        assert_eq!(r["redundant"].as_u64().unwrap(), 0, "{r}");
    }

    // --plot: one line per n in Figure 4.6, nested bars per topic.
    let svg_path = tmp.path().join("fig.svg");
    let mut args = vec![
        "runs",
        "--index",
        index_s,
        "--top",
        "5,10,20",
        "--plot",
        svg_path.to_str().unwrap(),
    ];
    args.extend(run_paths.iter().map(String::as_str));
    ndd(&args);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<polyline").count(), TOPS.len());
    assert_eq!(svg.matches("<title>topic ").count(), topics.len() * 5);

    // The text form carries the same sections.
    let mut args = vec![
        "runs",
        "--index",
        index_s,
        "--qrels",
        qrels_path.to_str().unwrap(),
    ];
    args.extend(run_paths.iter().map(String::as_str));
    let text = stdout(&ndd(&args));
    for h in [
        "# topics",
        "# run_topics",
        "# table",
        "# qrels",
        "# sources",
        "# unresolved",
    ] {
        assert!(text.contains(h), "{h} missing:\n{text}");
    }

    // --strict: the unresolved docnos are an error.
    let mut args = vec!["runs", "--index", index_s, "--strict"];
    args.extend(run_paths.iter().map(String::as_str));
    let out = ndd_raw(&args);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--strict") && err.contains("not in the index"),
        "{err}"
    );
}

#[test]
fn malformed_runs_and_qrels_are_named_and_nothing_is_written() {
    let tmp = temp_dir("runs-bad");
    let docs = collection();
    let coll = tmp.path().join("collection");
    std::fs::create_dir_all(&coll).unwrap();
    write_collection(&coll, &docs);
    let index = tmp.path().join("ix");
    let index_s = index.to_str().unwrap();
    ndd(&["ingest", "--index", index_s, "-q", coll.to_str().unwrap()]);
    let good = tmp.path().join("good.run");
    std::fs::write(&good, format!("1 Q0 {} 1 2.5 g\n", docs[0].docno)).unwrap();
    let dedup = tmp.path().join("out");
    let cases = [
        (
            "bad.run",
            "1 Q0 a 1 2.0 b\n1 Q0 c 2 1.0\n",
            None,
            "bad.run:2: malformed run line: 5 fields, expected 6",
        ),
        (
            "bad.run",
            "1 Q0 a 1 x b\n",
            None,
            "bad.run:1: malformed run line: score \"x\" is not a number",
        ),
        (
            "bad.run",
            "1 Q0 a 1 1 b\n1 Q0 a 2 0 b\n",
            None,
            "bad.run:2: document a is listed twice for topic 1 (also on line 1)",
        ),
        (
            "ok.run",
            "1 Q0 a 1 1 b\n",
            Some("1 0 a 1\n1 0 b maybe\n"),
            "qrels.txt:2: malformed qrels line: judgment \"maybe\" is not an integer",
        ),
    ];
    for (name, run, qrels, want) in cases {
        let p = tmp.path().join(name);
        std::fs::write(&p, run).unwrap();
        let q = tmp.path().join("qrels.txt");
        let mut args = vec![
            "runs",
            "--index",
            index_s,
            "--dedup-run",
            dedup.to_str().unwrap(),
            good.to_str().unwrap(),
            p.to_str().unwrap(),
        ];
        if let Some(text) = qrels {
            std::fs::write(&q, text).unwrap();
            args.extend(["--qrels", q.to_str().unwrap()]);
        }
        let out = ndd_raw(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(want), "expected {want:?} in {err:?}");
        assert!(out.stdout.is_empty());
        assert!(
            !dedup.exists(),
            "nothing is written when an input is malformed"
        );
    }
}

/// The samplings other than `all`/`mod` take the prefix-index path: every count there must
/// match `ndd-index pairs` (the index's global matcher) restricted to the topic.
#[test]
fn sampled_index_agrees_with_pairs() {
    let tmp = temp_dir("runs-bottomk");
    let docs = collection();
    let coll = tmp.path().join("collection");
    std::fs::create_dir_all(&coll).unwrap();
    write_collection(&coll, &docs);
    let index = tmp.path().join("ix");
    let index_s = index.to_str().unwrap();
    ndd(&[
        "ingest",
        "--index",
        index_s,
        "-q",
        "--sample",
        "bottomk:20",
        coll.to_str().unwrap(),
    ]);
    // One topic holding every document, all relevant.
    let run = tmp.path().join("all.run");
    let qrels = tmp.path().join("all.qrels");
    let mut r = String::new();
    let mut q = String::new();
    for (i, d) in docs.iter().enumerate() {
        r.push_str(&format!("1 Q0 {} {} {} all\n", d.docno, i + 1, 1000 - i));
        q.push_str(&format!("1 0 {} 1\n", d.docno));
    }
    std::fs::write(&run, r).unwrap();
    std::fs::write(&qrels, q).unwrap();
    let rep: Value = serde_json::from_str(&stdout(&ndd(&[
        "runs",
        "--index",
        index_s,
        "--json",
        "--qrels",
        qrels.to_str().unwrap(),
        run.to_str().unwrap(),
    ])))
    .unwrap();
    for k in 1..=9u64 {
        let t = format!("0.{k}");
        let listed = stdout(&ndd(&["pairs", "--index", index_s, "--threshold", &t]));
        let in_pairs: HashSet<&str> = listed.lines().flat_map(|l| l.split('\t').take(2)).collect();
        assert_eq!(
            rep["qrels"]["duplicated"][&t].as_u64().unwrap(),
            in_pairs.len() as u64,
            "t = {t}"
        );
        assert_eq!(
            rep["topics"][0]["duplicated"][&t].as_u64().unwrap(),
            in_pairs.len() as u64
        );
        if k == 5 {
            assert_eq!(
                rep["sources"]["pairs"].as_u64().unwrap(),
                listed.lines().count() as u64
            );
        }
    }
}

/// `--mem`: a budget smaller than a topic's inverted index splits its features into partitions
/// read one after another; every count stays the same. Checked on a generated corpus (sites
/// with boilerplate, planted near-duplicates) through the CLI (a large and the least budget give
/// the same report) and through the library (the topic's pairs under a budget of a few KiB
/// equal a brute-force intersection of the stored feature sets, down to 0.1).
#[test]
fn mem_budget_keeps_every_count() {
    let tmp = temp_dir("runs-mem");
    let gen = tmp.path().join("gen");
    ndd_gen(&[
        "--out",
        gen.to_str().unwrap(),
        "--docs",
        "600",
        "--format",
        "warc",
        "--seed",
        "11",
        "--sites",
        "4",
        "--words",
        "150",
    ]);
    let index = tmp.path().join("ix");
    let index_s = index.to_str().unwrap();
    ndd(&["ingest", "--index", index_s, "-q", gen.to_str().unwrap()]);
    let keys: Vec<String> = std::fs::read_to_string(gen.join("truth-clusters.tsv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 600);
    // Two runs over three topics of 250 documents each (topics overlap), in different orders.
    let mut rng = Rng(5);
    let mut run_paths = Vec::new();
    for tag in ["memA", "memB"] {
        let mut text = String::new();
        for topic in 1..=3 {
            let mut docs: Vec<&str> = keys[(topic - 1) * 150..(topic - 1) * 150 + 250]
                .iter()
                .map(String::as_str)
                .collect();
            for i in (1..docs.len()).rev() {
                docs.swap(i, rng.below(i + 1));
            }
            for (r, d) in docs.iter().enumerate() {
                text.push_str(&format!("{topic} Q0 {d} {} {} {tag}\n", r + 1, 500 - r));
            }
        }
        let p = tmp.path().join(format!("{tag}.run"));
        std::fs::write(&p, text).unwrap();
        run_paths.push(p.to_str().unwrap().to_string());
    }
    let report = |mem: &str| {
        let mut args = vec!["runs", "--index", index_s, "--json", "--mem", mem];
        args.extend(run_paths.iter().map(String::as_str));
        let mut v: Value = serde_json::from_str(&stdout(&ndd(&args))).unwrap();
        v.as_object_mut().unwrap().remove("seconds");
        v
    };
    let big = report("1GiB");
    let small = report("1MiB");
    assert_eq!(big, small);
    assert!(big["sources"]["pairs"].as_u64().unwrap() > 0);
    assert!(big["topics"][0]["duplicated"]["0.1"].as_u64().unwrap() > 0);

    // The library: one topic's pairs under a tiny budget against brute force.
    let ix = ndd_index::Index::open(&index).unwrap();
    let view = ix.view();
    let docs: Vec<u32> = (0..view.doc_ids()).filter(|&d| view.is_live(d)).collect();
    let feats: Vec<Vec<u64>> = docs
        .iter()
        .map(|&d| {
            let mut v = Vec::new();
            view.features_into(d, &mut v).unwrap();
            v
        })
        .collect();
    let t = Threshold::from_ratio(1, 10);
    let mut want = Vec::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let inter = feats[i]
                .iter()
                .filter(|k| feats[j].binary_search(k).is_ok())
                .count() as u64;
            let denom = (feats[i].len() + feats[j].len()) as u64 - inter;
            if inter > 0 && t.admits(inter, denom) {
                want.push((docs[i], docs[j], inter, denom));
            }
        }
    }
    assert!(
        want.len() > 100,
        "the corpus has pairs at 0.1: {}",
        want.len()
    );
    for mem in [u64::MAX, 64 << 10, 4096] {
        let got: Vec<(u32, u32, u64, u64)> = ndd_index::runs::pairs::counted_pairs(
            view,
            t,
            &docs,
            mem,
            &ndd_index::runs::pairs::keep_all,
        )
        .unwrap()
        .into_iter()
        .map(|p| (p.a, p.b, p.inter, p.denom))
        .collect();
        assert_eq!(got, want, "mem {mem}");
    }
}
