//! Delete and compaction on the llvm corpus in three batches: deleted documents vanish from
//! pairs, clusters and queries at once, clusters are re-keyed/split/dissolved exactly as the
//! components of the remaining pairs, and compaction changes no answer. Plus the tiered policy
//! after ingest on a small generated corpus.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::*;

/// The corpus in three batches (night-0..2, documents i % 3), and its docs folder.
fn three_batches() -> Option<(PathBuf, PathBuf)> {
    static IDX: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    IDX.get_or_init(|| {
        let corpus = corpus_dir()?;
        let docs = extracted(&corpus);
        let truth = Truth::load(&corpus);
        // A fixed path (replaced on every run): the fixture outlives every test of the process,
        // so a temp dir's guard would never be dropped and each run would leave a copy behind.
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lc-three");
        let _ = std::fs::remove_dir_all(&work);
        for (i, key) in truth.keys.iter().enumerate() {
            let dst = work.join(format!("b{}", i % 3)).join(key);
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::hard_link(docs.join(key), &dst).unwrap();
        }
        let idx = work.join("idx");
        for i in 0..3 {
            let b = work.join(format!("b{i}"));
            TestIndex::at(&idx).ingest(&[&b], &["--batch", &format!("night-{i}")]);
        }
        Some((idx, docs))
    })
    .clone()
}

/// A copy of the index at `idx` (in a temp dir of its own).
fn copy_of(idx: &Path, name: &str) -> TestIndex {
    let to = TestIndex::new(name);
    copy_dir(idx, to.path());
    to
}

/// The stored clusters are exactly the components of the pairs at the cluster threshold,
/// each keyed by its oldest (smallest id) member.
fn assert_clusters_are_components(idx: &TestIndex) {
    let stored: BTreeSet<Vec<String>> = idx.clusters().iter().map(Cluster::sorted).collect();
    assert_eq!(stored, components(&idx.pairs("0.8")));
}

#[test]
fn delete_keys_removes_docs_everywhere_and_reclusters() {
    let Some((base, docs)) = three_batches() else {
        return;
    };
    let idx = copy_of(&base, "lc-del-keys");
    let p0 = idx.pairs("0.8");
    let listing = idx.clusters();
    let mut c0: Vec<(u64, Vec<String>)> = cluster_map(&listing).into_iter().collect();
    c0.sort_by_key(|(id, m)| (std::cmp::Reverse(m.len()), *id));
    // Representatives (oldest members) of the three largest clusters, and a document in no pair.
    let in_pairs = keys_in_pairs(&p0);
    let reps: Vec<String> = c0[..3]
        .iter()
        .map(|(id, _)| {
            let c = listing.iter().find(|c| c.id == *id).unwrap();
            c.representative.clone()
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
    let mut args: Vec<&str> = victims.iter().map(String::as_str).collect();
    args.push("no/such/key");
    let v = idx.delete(&args);
    assert_eq!(v["deleted"], 4);
    assert_eq!(v["not_found"], serde_json::json!(["no/such/key"]));

    // Pairs: exactly the old ones minus those of deleted documents.
    let gone: HashSet<&str> = victims.iter().map(String::as_str).collect();
    let expect: Vec<Pair> = by_keys(&p0)
        .into_iter()
        .filter(|(a, b, _)| !gone.contains(a.as_str()) && !gone.contains(b.as_str()))
        .collect();
    let p1 = idx.pairs("0.8");
    assert_eq!(by_keys(&p1), expect);
    // Clusters: the components of the remaining pairs; the old ids of the deleted
    // representatives are gone (re-keyed to the oldest survivor).
    assert_clusters_are_components(&idx);
    let c1 = cluster_map(&idx.clusters());
    for (id, _) in &c0[..3] {
        assert!(
            !c1.contains_key(id),
            "cluster {id} kept the id of its deleted representative"
        );
    }
    // A query with a deleted document's text finds its old near-duplicates but not itself; a
    // query hit's cluster id is the cluster listed by `clusters`.
    let q = docs.join(&reps[0]);
    let query = |idx: &TestIndex| idx.query(&[&q], &["--top", "0", "--threshold", "0.8"]);
    let out = query(&idx);
    assert_eq!(out.len(), 1);
    let hits = out[0]["hits"].as_array().unwrap();
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
    idx.verify();

    // Compaction changes no answer; the deleted documents' bytes are gone.
    let simhash_pairs = |idx: &TestIndex| idx.pairs_with(&["--method", "simhash"]);
    let before = (idx.pairs("0.5"), idx.clusters(), out, simhash_pairs(&idx));
    assert!(before.3.len() > 100, "simhash tables should give pairs");
    let v = idx.compact(&["--full"]);
    assert_eq!(v["merged"].as_array().unwrap().len(), 3);
    assert_eq!(v["deleted_docs_dropped"], 4);
    assert!(v["bytes_after"].as_u64().unwrap() < v["bytes_before"].as_u64().unwrap());
    let out = query(&idx);
    assert_eq!(idx.pairs("0.5"), before.0);
    assert_eq!(idx.clusters(), before.1);
    assert_eq!(out, before.2);
    assert_eq!(
        simhash_pairs(&idx),
        before.3,
        "compaction changed simhash answers"
    );
    let files: Vec<_> = std::fs::read_dir(idx.path().join("segments"))
        .unwrap()
        .collect();
    assert_eq!(files.len(), 1, "old segment files must be removed");
    idx.verify();
}

#[test]
fn delete_batches_by_name_and_age() {
    let Some((base, _docs)) = three_batches() else {
        return;
    };
    let idx = copy_of(&base, "lc-del-batch");
    let truth = Truth::load(&corpus_dir().unwrap());
    let p0 = idx.pairs("0.8");
    idx.run(&["delete", "--batch", "night-1"]);
    let b1: HashSet<&str> = truth
        .keys
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 1)
        .map(|(_, k)| k.as_str())
        .collect();
    let expect: Vec<Pair> = by_keys(&p0)
        .into_iter()
        .filter(|(a, b, _)| !b1.contains(a.as_str()) && !b1.contains(b.as_str()))
        .collect();
    assert_eq!(by_keys(&idx.pairs("0.8")), expect);
    assert_clusters_are_components(&idx);
    idx.verify();
    // Nothing is older than 1970-01-02; everything is older than tomorrow.
    let v = idx.delete(&["--older-than", "1970-01-02"]);
    assert_eq!(v["deleted"], 0, "{v}");
    let tomorrow = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400;
    let v = idx.delete(&["--older-than", &tomorrow.to_string()]);
    assert_eq!(
        v["deleted"].as_u64().unwrap() as usize,
        truth.keys.len() - b1.len()
    );
    assert!(idx.pairs("0.5").is_empty());
    assert!(idx.clusters().is_empty());
    idx.verify();
    // Compacting an index whose documents are all deleted leaves no segment.
    idx.compact(&["--full"]);
    assert_eq!(
        std::fs::read_dir(idx.path().join("segments"))
            .unwrap()
            .count(),
        0
    );
    idx.verify();
}

/// Files in the index's segments directory.
fn segment_count(idx: &TestIndex) -> usize {
    std::fs::read_dir(idx.path().join("segments"))
        .unwrap()
        .count()
}

#[test]
fn policy_merges_small_segments_after_ingest_without_changing_answers() {
    let w = temp_dir("lc-policy");
    let all = w.path().join("all");
    write_corpus(&all, 160, 11);
    let idx = TestIndex::at(w.path().join("idx"));
    for (b, dir) in split_batches(&all, w.path(), 40).into_iter().enumerate() {
        let v = idx.ingest(&[&dir], &[]);
        // Four segments of similar size make a full level: merged right after the 4th ingest.
        assert_eq!(
            segment_count(&idx),
            if b < 3 { b + 1 } else { 1 },
            "after batch {b}"
        );
        // `--json` says what the merge after the batch did.
        assert!(v.get("compaction_error").is_none(), "{v}");
        if b < 3 {
            assert!(v.get("compaction").is_none(), "after batch {b}: {v}");
        } else {
            let c = &v["compaction"];
            assert_eq!(c["merged"].as_array().map(Vec::len), Some(4), "{v}");
            assert_eq!(c["docs"], 160, "{v}");
            assert!(
                c["segment"].as_str().is_some_and(|s| s.ends_with(".ndds")),
                "{v}"
            );
        }
    }
    let one = TestIndex::at(w.path().join("one"));
    one.ingest(&[&all], &[]);
    let p = idx.pairs("0.5");
    assert!(!p.is_empty());
    assert_eq!(p, one.pairs("0.5"));
    assert_clusters_are_components(&idx);
    idx.verify();
    // Nothing left to do for the policy.
    assert!(idx.stdout(&["compact"]).contains("nothing to compact"));
}

/// A merge after ingest that fails (an I/O error at its segment's fsync, the second one of
/// the run) leaves the batch published: the ingest succeeds, warns, and its `--json` names the
/// error; the index keeps the four segments, answers as before, and `compact` merges them.
#[test]
fn a_failed_merge_after_ingest_is_reported_and_the_batch_stays() {
    let w = temp_dir("lc-merge-fails");
    let all = w.path().join("all");
    write_corpus(&all, 160, 13);
    let idx = TestIndex::at(w.path().join("idx"));
    let batches = split_batches(&all, w.path(), 40);
    for dir in &batches[..3] {
        idx.ingest(&[dir], &[]);
    }
    let mut cmd = idx.cmd(&["ingest", "--quiet", "--json", batches[3].to_str().unwrap()]);
    let out = cmd.env("NDD_FAILPOINT", "segment.sync:2").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: compaction after ingest failed"),
        "{err}"
    );
    let v = parse_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(v["added"], 40, "{v}");
    assert!(v.get("compaction").is_none(), "{v}");
    let e = v["compaction_error"].as_str().unwrap_or_default();
    assert!(e.contains("injected"), "{v}");
    assert_eq!(segment_count(&idx), 4);
    idx.verify();
    let one = TestIndex::at(w.path().join("one"));
    one.ingest(&[&all], &[]);
    let p = idx.pairs("0.5");
    assert!(!p.is_empty());
    assert_eq!(p, one.pairs("0.5"));
    assert!(idx.stdout(&["compact"]).contains("merged 4 segments"));
    assert_eq!(segment_count(&idx), 1);
    assert_eq!(idx.pairs("0.5"), p);
}

/// `--max-segment` caps what the policy may write: a full level whose total exceeds it is not
/// merged (fewer than four of its members fit), after ingest or by `compact`; without the cap
/// the same level merges, and no answer changes either way.
#[test]
fn max_segment_caps_the_policy_merge() {
    let w = temp_dir("lc-maxseg");
    let all = w.path().join("all");
    write_corpus(&all, 320, 12);
    let idx = TestIndex::at(w.path().join("idx"));
    let segments = || -> Vec<u64> {
        std::fs::read_dir(idx.path().join("segments"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .collect()
    };
    // Format 2: its segments are large enough for the precondition below (format 3's are
    // half the size).
    for dir in split_batches(&all, w.path(), 80) {
        idx.ingest(&[&dir], &["--max-segment", "1MiB", "--segment-format", "2"]);
    }
    let sizes = segments();
    assert!(
        sizes.iter().sum::<u64>() > 1 << 20,
        "precondition: the segments ({sizes:?}) must not fit 1 MiB together"
    );
    assert_eq!(
        sizes.len(),
        4,
        "the cap kept the policy from merging: {sizes:?}"
    );
    let before = idx.pairs("0.5");
    assert!(!before.is_empty());
    assert!(idx
        .stdout(&["compact", "--max-segment", "1MiB"])
        .contains("nothing to compact"));
    assert_eq!(segments().len(), 4);
    assert!(idx.stdout(&["compact"]).contains("merged 4 segments"));
    assert_eq!(segments().len(), 1);
    assert_eq!(idx.pairs("0.5"), before);
    idx.verify();
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
    let idx = TestIndex::at(w.path().join("idx"));
    idx.ingest(&[&docs], &[]);
    let c0 = cluster_map(&idx.clusters());
    assert_eq!(c0.len(), 1);
    assert_eq!(c0[&0].len(), 4, "{c0:?}");

    idx.delete(&["d0-hub.html"]);
    let c1 = cluster_map(&idx.clusters());
    assert_eq!(c1.len(), 1, "{c1:?}");
    assert_eq!(
        c1[&1],
        vec!["d1-a.html".to_string(), "d2-e.html".to_string()]
    );
    assert_clusters_are_components(&idx);
    idx.verify();

    // Left with one member, the cluster dissolves.
    idx.delete(&["d1-a.html"]);
    assert!(idx.clusters().is_empty());
    idx.verify();
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
    let idx = TestIndex::at(w.path().join("idx"));
    idx.ingest(&[&docs], &[]);
    let q = docs.join("doc-0005.html");
    let exact = |idx: &TestIndex| -> Option<String> {
        let out = idx.query(&[&q], &[]);
        assert_eq!(out.len(), 1);
        out[0]["exact_duplicate"].as_str().map(str::to_owned)
    };
    assert_eq!(exact(&idx).as_deref(), Some("doc-0005.html"));
    idx.delete(&["doc-0005.html"]);
    assert_eq!(exact(&idx).as_deref(), Some("doc-0006.html"));
    idx.delete(&["doc-0006.html", "doc-0007.html"]);
    assert_eq!(exact(&idx), None);
    idx.verify();
}
