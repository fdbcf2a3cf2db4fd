//! `pairs` from the stored pairs (format-spec/rocksdb.md, "`pairs`: stored pairs") against the
//! matching, on random sequences of what changes an index: ingest batches with near-duplicates
//! and replacements by key, strict batches that fail after staging, deletes, compactions and
//! online adds (some folding). After every step `pairs` at 0.8, 0.9 and 1.0 must answer from
//! the store and give exactly what `--matching join` gives: same pairs, same order, same
//! resemblance bits. Then the fallbacks: what makes the matching answer.

use crate::index::Index;
use crate::input::Source;
use crate::lifecycle::add::AddOptions;
use crate::lifecycle::{verify_index, DeleteSelector, MergePolicy};
use crate::options::CreateOptions;
use crate::pipeline::{IngestOptions, Matching, PairsStats};
use crate::threshold::Threshold;

use super::*;

/// A deterministic stream: the splitmix64 sequence of a seed.
struct Rng(u64, u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed, 0)
    }
    fn next(&mut self) -> u64 {
        self.1 += 1;
        crate::fingerprint::hash::splitmix64_nth(self.0, self.1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A document of 80 words: base text `base` with `edits` words replaced (tag `tag`) at
/// random places near its end, so resemblances spread over 0.7 .. 1.
fn text(base: u64, edits: u64, tag: u64, rng: &mut Rng) -> Vec<u8> {
    let mut words: Vec<String> = (0..80).map(|w| format!("b{base}w{w}")).collect();
    for e in 0..edits {
        let at = 60 + rng.below(20) as usize;
        words[at] = format!("t{tag}e{e}");
    }
    format!("<html><body><p>{}</p></body></html>", words.join(" ")).into_bytes()
}

fn t(s: &str) -> Threshold {
    s.parse().unwrap()
}

type Got = Vec<(String, String, u64, Option<bool>)>;

fn run(index: &Index, req: &PairsRequest) -> (Got, PairsStats) {
    let mut v = Vec::new();
    let stats = index
        .pairs(req, |p| {
            v.push((
                p.key_a.clone(),
                p.key_b.clone(),
                p.resemblance.to_bits(),
                p.same_site,
            ));
            Ok(())
        })
        .unwrap()
        .unwrap();
    (v, stats)
}

/// `pairs` at `ts` from the store (auto) equals the join's, byte for byte; returns the
/// number of pairs at the first threshold.
fn check(index: &Index, ts: &[&str], stored: bool, what: &str) -> usize {
    let mut first = None;
    for &ts in ts {
        for sites in [false, true] {
            let req = PairsRequest {
                sites,
                ..PairsRequest::shingle(t(ts))
            };
            let (auto, s) = run(index, &req);
            let join = PairsRequest {
                matching: Matching::Join,
                ..req.clone()
            };
            let (joined, js) = run(index, &join);
            assert_eq!(auto, joined, "{what}: T={ts}: stored vs join");
            let want = if stored { "stored" } else { "matching" };
            assert_eq!(s.source, Some(want), "{what}: T={ts}");
            assert_eq!(js.source, Some("matching"));
            first.get_or_insert(auto.len());
        }
    }
    first.unwrap_or(0)
}

fn ingest(index: &mut Index, name: &str, docs: Vec<(String, Vec<u8>)>, strict: bool) -> bool {
    let opts = IngestOptions {
        batch: Some(name.into()),
        strict,
        mem_bytes: 16 << 20,
        ..IngestOptions::default()
    };
    index
        .ingest(Source::Docs(docs), &opts, &mut |_| Ok(()), &|_| {})
        .is_ok()
}

fn sequence(seed: u64, create: &CreateOptions, ts: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let mut index = Index::open_writer(&path, create).unwrap();
    let mut rng = Rng::new(seed);
    let mut keys: Vec<String> = Vec::new();
    let mut bases = 0u64;
    let mut tag = 0u64;
    let mut max_pairs = 0;
    for step in 0..12 {
        let kind = if step == 0 { 0 } else { rng.below(10) };
        let what = format!("seed {seed} step {step} kind {kind}");
        // A batch of new documents, near-duplicates of older ones, and replacements.
        let mut batch = |rng: &mut Rng, keys: &mut Vec<String>, n: u64| {
            let mut docs = Vec::new();
            for _ in 0..n {
                tag += 1;
                let base = if bases == 0 || rng.below(3) == 0 {
                    bases += 1;
                    bases - 1
                } else {
                    rng.below(bases)
                };
                let body = text(base, rng.below(4), tag, rng);
                let replace = !keys.is_empty() && rng.below(5) == 0;
                let key = if replace {
                    keys[rng.below(keys.len() as u64) as usize].clone()
                } else {
                    let k = format!("site{}/doc-{tag}.html", tag % 3);
                    keys.push(k.clone());
                    k
                };
                if docs.iter().any(|(k, _)| *k == key) {
                    continue;
                }
                docs.push((key, body));
            }
            docs
        };
        match kind {
            0..=3 => {
                let n = 3 + rng.below(8);
                let docs = batch(&mut rng, &mut keys, n);
                assert!(
                    ingest(&mut index, &format!("b{step}"), docs, false),
                    "{what}"
                );
            }
            4 | 5 => {
                let n = 1 + rng.below(4);
                let docs = batch(&mut rng, &mut keys, n);
                let opts = AddOptions {
                    batch: Some(format!("a{step}")),
                    fold_docs: if rng.below(2) == 0 { 2 } else { 1024 },
                    ..AddOptions::default()
                };
                index
                    .add(Source::Docs(docs), &opts, &mut |_| Ok(()))
                    .unwrap();
            }
            6 => {
                // Fails after staging its first documents: nothing of it may show.
                let mut docs = batch(&mut rng, &mut Vec::new(), 3);
                docs.push(("empty.html".into(), Vec::new()));
                assert!(!ingest(&mut index, &format!("f{step}"), docs, true));
            }
            7 | 8 if !keys.is_empty() => {
                let k = keys.swap_remove(rng.below(keys.len() as u64) as usize);
                index.delete(&DeleteSelector::Keys(vec![k])).unwrap();
            }
            _ => {
                index
                    .compact(rng.below(2) == 0, &MergePolicy::default())
                    .unwrap();
            }
        }
        let n = check(&index, ts, true, &what);
        max_pairs = max_pairs.max(n);
        let v = verify_index(&path).unwrap();
        assert!(v.problems.is_empty(), "{what}: {:?}", v.problems);
    }
    assert!(
        max_pairs > 1,
        "seed {seed}: too few pairs to test ({max_pairs})"
    );
    // A reader of the same index answers the same from the store.
    let reader = Index::open(&path).unwrap();
    check(&reader, &ts[..1], true, "reader");
    check(&reader, &["0.95"], true, "reader");
    dir
}

#[test]
fn stored_pairs_equal_the_join_over_random_sequences() {
    for seed in 1..=4 {
        let _ = sequence(seed, &CreateOptions::default(), &["0.8", "0.9", "1.0"]);
    }
    let bottomk = CreateOptions {
        sample: Some("bottomk:40".parse().unwrap()),
        ..CreateOptions::default()
    };
    let _ = sequence(11, &bottomk, &["0.8", "0.9", "1.0"]);
    let ct = CreateOptions {
        cluster_threshold: Some(t("0.85")),
        sample: Some("mod:2".parse().unwrap()),
        ..CreateOptions::default()
    };
    let dir = sequence(12, &ct, &["0.85", "0.9", "1.0"]);
    // Below the index's own cluster threshold the matching answers.
    check(
        &Index::open(dir.path().join("idx")).unwrap(),
        &["0.8"],
        false,
        "0.8 < 0.85",
    );
}

fn small_index(path: &std::path::Path, create: &CreateOptions) -> Index {
    let mut index = Index::open_writer(path, create).unwrap();
    let mut rng = Rng::new(7);
    let docs: Vec<(String, Vec<u8>)> = (0..12)
        .map(|i| (format!("d{i}.html"), text(i / 3, i % 3, i, &mut rng)))
        .collect();
    assert!(ingest(&mut index, "one", docs, false));
    index
}

#[test]
fn stored_pairs_fall_back_to_matching_when_they_cannot_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let index = small_index(&path, &CreateOptions::default());
    assert!(check(&index, &["0.8"], true, "stored") > 0);
    // Below the cluster threshold, a forced matching, a commonality limit for the run.
    check(&index, &["0.7", "0.5"], false, "below");
    for m in [Matching::Join, Matching::Probe] {
        let req = PairsRequest {
            matching: m,
            ..PairsRequest::shingle(t("0.9"))
        };
        assert_eq!(run(&index, &req).1.source, Some("matching"));
    }
    let limited = PairsRequest {
        max_df: Some(3),
        ..PairsRequest::shingle(t("0.9"))
    };
    assert_eq!(run(&index, &limited).1.source, Some("matching"));
    let unlimited = PairsRequest {
        max_df: Some(0),
        ..PairsRequest::shingle(t("0.9"))
    };
    assert_eq!(run(&index, &unlimited).1.source, Some("stored"));

    // An index created with --max-df never keeps the table.
    let dir2 = tempfile::tempdir().unwrap();
    let limited = CreateOptions {
        max_df: Some(1000),
        ..CreateOptions::default()
    };
    let index2 = small_index(&dir2.path().join("idx"), &limited);
    assert!(index2.catalog().pairs_marker().unwrap().is_none());
    assert_eq!(index2.catalog().iter_pairs().count(), 0);
    check(&index2, &["0.8"], false, "max-df index");

    // A write that publishes documents without their pairs (a writer that does not know the
    // table: an older build's, or any future one that forgets) drops the marker with it.
    drop(index);
    let index = Index::open_writer(&path, &CreateOptions::default()).unwrap();
    let cat = index.catalog();
    assert!(cat.pairs_marker().unwrap().is_some());
    let next = cat.next_doc().unwrap();
    let mut wb = cat.batch_writer();
    wb.put_next_doc(next); // no new document: the marker stays
    cat.commit(wb).unwrap();
    assert!(cat.pairs_marker().unwrap().is_some());
    let mut wb = cat.batch_writer();
    wb.put_next_doc(next + 1);
    wb.keep_pairs(); // declares its pairs: the marker stays
    cat.commit(wb).unwrap();
    assert!(cat.pairs_marker().unwrap().is_some());
    let mut wb = cat.batch_writer();
    wb.put_next_doc(next + 2);
    cat.commit(wb).unwrap();
    assert!(cat.pairs_marker().unwrap().is_none());
    // (The ids published above have no records: restore next_doc before using the index.)
    let mut wb = cat.batch_writer();
    wb.put_next_doc(next);
    cat.commit(wb).unwrap();
    drop(index);
    let index = Index::open(&path).unwrap();
    check(&index, &["0.8", "1.0"], false, "marker gone");
    assert!(index.catalog().iter_pairs().count() > 0);
}
