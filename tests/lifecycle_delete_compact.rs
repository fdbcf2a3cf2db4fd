//! Delete and compaction on the llvm corpus in three batches: deleted documents vanish from
//! pairs, clusters and queries at once, clusters are re-keyed/split/dissolved exactly as the
//! components of the remaining pairs, and compaction changes no answer. Plus the tiered policy
//! after ingest on a small generated corpus.

mod common;
mod lifecycle;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::*;
use lifecycle::*;

/// The corpus in three batches (night-0..2, documents i % 3), and its docs folder.
fn three_batches() -> Option<(PathBuf, PathBuf)> {
    static IDX: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    IDX.get_or_init(|| {
        let corpus = corpus_dir()?;
        let docs = extracted(&corpus);
        let truth = Truth::load(&corpus);
        let work = temp_dir("lc-three").keep();
        for (i, key) in truth.keys.iter().enumerate() {
            let dst = work.join(format!("b{}", i % 3)).join(key);
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::hard_link(docs.join(key), &dst).unwrap();
        }
        let idx = work.join("idx");
        for i in 0..3 {
            let b = work.join(format!("b{i}"));
            let name = format!("night-{i}");
            ndd(&[
                "ingest",
                "--quiet",
                "--index",
                idx.to_str()?,
                "--batch",
                &name,
                b.to_str()?,
            ]);
        }
        Some((idx, docs))
    })
    .clone()
}

fn copy_of(idx: &Path, name: &str) -> (tempfile::TempDir, PathBuf) {
    let w = temp_dir(name);
    let to = w.path().join("idx");
    copy_dir(idx, &to);
    (w, to)
}

fn run(args: &[&str]) -> String {
    let out = stdout(&ndd(args));
    if args.first() == Some(&"query") && args.contains(&"--json") {
        // Answers carry their own timing ("micros"), which is not part of the answer.
        return out
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("micros");
                v.to_string() + "\n"
            })
            .collect();
    }
    out
}

fn pairs(idx: &Path, t: &str) -> String {
    run(&["pairs", "--index", idx.to_str().unwrap(), "--threshold", t])
}

fn clusters(idx: &Path) -> String {
    run(&["clusters", "--json", "--index", idx.to_str().unwrap()])
}

fn assert_verifies(idx: &Path) {
    let out = ndd_raw(&["verify", "--index", idx.to_str().unwrap()]);
    assert!(out.status.success(), "verify failed:\n{}", stdout(&out));
}

/// The stored clusters are exactly the components of the pairs at the cluster threshold,
/// each keyed by its oldest (smallest id) member.
fn assert_clusters_are_components(idx: &Path) {
    let c = parse_clusters(&clusters(idx));
    let stored: BTreeSet<Vec<String>> = c.values().cloned().collect();
    assert_eq!(stored, components(&pairs(idx, "0.8")));
}

#[test]
fn delete_keys_removes_docs_everywhere_and_reclusters() {
    let Some((base, docs)) = three_batches() else {
        return;
    };
    let (_w, idx) = copy_of(&base, "lc-del-keys");
    let p0 = pairs(&idx, "0.8");
    let mut c0: Vec<(u64, Vec<String>)> = parse_clusters(&clusters(&idx)).into_iter().collect();
    c0.sort_by_key(|(id, m)| (std::cmp::Reverse(m.len()), *id));
    // Representatives (oldest members) of the three largest clusters, and a document in no pair.
    let in_pairs = keys_in_pairs(&p0);
    let listing = clusters(&idx);
    let reps: Vec<String> = c0[..3]
        .iter()
        .map(|(id, _)| {
            let line = listing
                .lines()
                .find(|l| l.contains(&format!("\"cluster\":{id},")))
                .unwrap();
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            v["representative"].as_str().unwrap().to_owned()
        })
        .collect();
    let mut victims = reps.clone();
    let truth = Truth::load(&corpus_dir().unwrap());
    let single = truth
        .keys
        .iter()
        .find(|k| !in_pairs.contains(*k))
        .unwrap()
        .clone();
    victims.push(single);
    let mut args = vec!["delete", "--json", "--index", idx.to_str().unwrap()];
    args.extend(victims.iter().map(String::as_str));
    args.push("no/such/key");
    let v: serde_json::Value = serde_json::from_str(run(&args).trim()).unwrap();
    assert_eq!(v["deleted"], 4);
    assert_eq!(v["not_found"], serde_json::json!(["no/such/key"]));

    // Pairs: exactly the old ones minus those of deleted documents.
    let gone: HashSet<&str> = victims.iter().map(String::as_str).collect();
    let expect: BTreeSet<String> = pair_lines(&p0)
        .into_iter()
        .filter(|l| !l.split('\t').take(2).any(|k| gone.contains(k)))
        .collect();
    let p1 = pairs(&idx, "0.8");
    assert_eq!(pair_lines(&p1), expect);
    // Clusters: the components of the remaining pairs; the old ids of the deleted
    // representatives are gone (re-keyed to the oldest survivor).
    assert_clusters_are_components(&idx);
    let c1 = parse_clusters(&clusters(&idx));
    for (id, _) in &c0[..3] {
        assert!(
            !c1.contains_key(id),
            "cluster {id} kept the id of its deleted representative"
        );
    }
    // A query with a deleted document's text finds its old near-duplicates but not itself; a
    // query hit's cluster id is the cluster listed by `clusters`.
    let q = docs.join(&reps[0]);
    let out = run(&[
        "query",
        "--json",
        "--top",
        "0",
        "--threshold",
        "0.8",
        "--index",
        idx.to_str().unwrap(),
        q.to_str().unwrap(),
    ]);
    let ans: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let hits = ans["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    for h in hits {
        let key = h["key"].as_str().unwrap();
        assert!(!gone.contains(key), "deleted {key} served by query");
        let cid = h["cluster"].as_u64().unwrap();
        assert!(
            c1.get(&cid).is_some_and(|m| m.iter().any(|k| k == key)),
            "{key} not in cluster {cid}"
        );
    }
    assert_verifies(&idx);

    // Compaction changes no answer; the deleted documents' bytes are gone.
    let simhash_pairs = |idx: &Path| {
        run(&[
            "pairs",
            "--method",
            "simhash",
            "--index",
            idx.to_str().unwrap(),
        ])
    };
    let before = (pairs(&idx, "0.5"), clusters(&idx), out, simhash_pairs(&idx));
    assert!(
        before.3.lines().count() > 100,
        "simhash tables should give pairs"
    );
    let v: serde_json::Value = serde_json::from_str(
        run(&[
            "compact",
            "--full",
            "--json",
            "--index",
            idx.to_str().unwrap(),
        ])
        .trim(),
    )
    .unwrap();
    assert_eq!(v["merged"].as_array().unwrap().len(), 3);
    assert_eq!(v["deleted_docs_dropped"], 4);
    assert!(v["bytes_after"].as_u64().unwrap() < v["bytes_before"].as_u64().unwrap());
    let out = run(&[
        "query",
        "--json",
        "--top",
        "0",
        "--threshold",
        "0.8",
        "--index",
        idx.to_str().unwrap(),
        q.to_str().unwrap(),
    ]);
    assert_eq!(pairs(&idx, "0.5"), before.0);
    assert_eq!(clusters(&idx), before.1);
    assert_eq!(out, before.2);
    assert_eq!(
        simhash_pairs(&idx),
        before.3,
        "compaction changed simhash answers"
    );
    let files: Vec<_> = std::fs::read_dir(idx.join("segments")).unwrap().collect();
    assert_eq!(files.len(), 1, "old segment files must be removed");
    assert_verifies(&idx);
}

#[test]
fn delete_batches_by_name_and_age() {
    let Some((base, _docs)) = three_batches() else {
        return;
    };
    let (_w, idx) = copy_of(&base, "lc-del-batch");
    let truth = Truth::load(&corpus_dir().unwrap());
    let p0 = pairs(&idx, "0.8");
    run(&[
        "delete",
        "--index",
        idx.to_str().unwrap(),
        "--batch",
        "night-1",
    ]);
    let b1: HashSet<&str> = truth
        .keys
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 1)
        .map(|(_, k)| k.as_str())
        .collect();
    let expect: BTreeSet<String> = pair_lines(&p0)
        .into_iter()
        .filter(|l| !l.split('\t').take(2).any(|k| b1.contains(k)))
        .collect();
    assert_eq!(pair_lines(&pairs(&idx, "0.8")), expect);
    assert_clusters_are_components(&idx);
    assert_verifies(&idx);
    // Nothing is older than 1970-01-02; everything is older than tomorrow.
    let v = run(&[
        "delete",
        "--json",
        "--index",
        idx.to_str().unwrap(),
        "--older-than",
        "1970-01-02",
    ]);
    assert!(v.contains("\"deleted\":0"), "{v}");
    let tomorrow = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400;
    let v = run(&[
        "delete",
        "--json",
        "--index",
        idx.to_str().unwrap(),
        "--older-than",
        &tomorrow.to_string(),
    ]);
    let v: serde_json::Value = serde_json::from_str(v.trim()).unwrap();
    assert_eq!(
        v["deleted"].as_u64().unwrap() as usize,
        truth.keys.len() - b1.len()
    );
    assert!(pairs(&idx, "0.5").is_empty());
    assert!(clusters(&idx).is_empty());
    assert_verifies(&idx);
    // Compacting an index whose documents are all deleted leaves no segment.
    run(&["compact", "--full", "--index", idx.to_str().unwrap()]);
    assert_eq!(std::fs::read_dir(idx.join("segments")).unwrap().count(), 0);
    assert_verifies(&idx);
}

#[test]
fn policy_merges_small_segments_after_ingest_without_changing_answers() {
    let w = temp_dir("lc-policy");
    let all = w.path().join("all");
    write_corpus(&all, 160, 11);
    let mut names: Vec<_> = std::fs::read_dir(&all)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let idx = w.path().join("idx");
    for (b, chunk) in names.chunks(40).enumerate() {
        let dir = w.path().join(format!("b{b}"));
        std::fs::create_dir_all(&dir).unwrap();
        for n in chunk {
            std::fs::copy(all.join(n), dir.join(n)).unwrap();
        }
        ndd(&[
            "ingest",
            "--quiet",
            "--index",
            idx.to_str().unwrap(),
            dir.to_str().unwrap(),
        ]);
        let segs = std::fs::read_dir(idx.join("segments")).unwrap().count();
        // Four segments of similar size make a full level: merged right after the 4th ingest.
        assert_eq!(segs, if b < 3 { b + 1 } else { 1 }, "after batch {b}");
    }
    let one = w.path().join("one");
    ndd(&[
        "ingest",
        "--quiet",
        "--index",
        one.to_str().unwrap(),
        all.to_str().unwrap(),
    ]);
    let p = pairs(&idx, "0.5");
    assert!(!p.is_empty());
    assert_eq!(p, pairs(&one, "0.5"));
    assert_clusters_are_components(&idx);
    assert_verifies(&idx);
    // Nothing left to do for the policy.
    assert!(run(&["compact", "--index", idx.to_str().unwrap()]).contains("nothing to compact"));
}

/// A cluster whose members are connected only through its representative splits when the
/// representative is deleted; the part that stays connected is re-keyed to its oldest member.
#[test]
fn deleting_the_hub_of_a_chain_splits_and_rekeys_the_cluster() {
    let w = temp_dir("lc-chain");
    let docs = w.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let mut rng = Rng::new(3);
    let base: Vec<String> = (0..300)
        .map(|_| format!("w{}", rng.below(100_000)))
        .collect();
    let edit = |words: &[String], at: &[usize], tag: &str| -> Vec<String> {
        let mut v = words.to_vec();
        for &i in at {
            v[i] = format!("{tag}{i}");
        }
        v
    };
    // Exact resemblance of 5-word shingles (296 per document): hub-a 0.873, a-e 0.967,
    // hub-e 0.844, hub-c 0.873, but a-c 0.762 and e-c 0.747: one cluster through the hub.
    let a = edit(&base, &[10, 30, 50, 70], "a");
    let e = edit(&a, &[120], "e");
    let c = edit(&base, &[200, 220, 240, 260], "c");
    for (name, words) in [("d0-hub", &base), ("d1-a", &a), ("d2-e", &e), ("d3-c", &c)] {
        let html = format!("<html><body><p>{}</p></body></html>", words.join(" "));
        std::fs::write(docs.join(format!("{name}.html")), html).unwrap();
    }
    let idx = w.path().join("idx");
    ndd(&[
        "ingest",
        "--quiet",
        "--index",
        idx.to_str().unwrap(),
        docs.to_str().unwrap(),
    ]);
    let c0 = parse_clusters(&clusters(&idx));
    assert_eq!(c0.len(), 1);
    assert_eq!(c0[&0].len(), 4, "{c0:?}");

    run(&["delete", "--index", idx.to_str().unwrap(), "d0-hub.html"]);
    let c1 = parse_clusters(&clusters(&idx));
    assert_eq!(c1.len(), 1, "{c1:?}");
    assert_eq!(
        c1[&1],
        vec!["d1-a.html".to_string(), "d2-e.html".to_string()]
    );
    assert_clusters_are_components(&idx);
    assert_verifies(&idx);

    // Left with one member, the cluster dissolves.
    run(&["delete", "--index", idx.to_str().unwrap(), "d1-a.html"]);
    assert!(clusters(&idx).is_empty());
    assert_verifies(&idx);
}

/// The digest entry of a deleted document moves to a surviving exact duplicate.
#[test]
fn exact_duplicate_lookup_survives_deleting_the_first_copy() {
    let w = temp_dir("lc-digest");
    let docs = w.path().join("docs");
    write_corpus(&docs, 8, 9);
    let text = std::fs::read(docs.join("doc-0005.html")).unwrap();
    std::fs::write(docs.join("doc-0006.html"), &text).unwrap();
    std::fs::write(docs.join("doc-0007.html"), &text).unwrap();
    let idx = w.path().join("idx");
    let ix = idx.to_str().unwrap();
    ndd(&["ingest", "--quiet", "--index", ix, docs.to_str().unwrap()]);
    let q = docs.join("doc-0005.html");
    let exact = |idx: &str| -> Option<String> {
        let out = run(&["query", "--json", "--index", idx, q.to_str().unwrap()]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        v["exact_duplicate"].as_str().map(str::to_owned)
    };
    assert_eq!(exact(ix).as_deref(), Some("doc-0005.html"));
    run(&["delete", "--index", ix, "doc-0005.html"]);
    assert_eq!(exact(ix).as_deref(), Some("doc-0006.html"));
    run(&["delete", "--index", ix, "doc-0006.html", "doc-0007.html"]);
    assert_eq!(exact(ix), None);
    assert_verifies(&idx);
}
