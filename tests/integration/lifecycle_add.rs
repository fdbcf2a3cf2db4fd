//! Online adds (`ndd-index add`): added documents are visible to other processes at once,
//! near-duplicates join their clusters, folding (by size and by `compact`) changes no answer,
//! keys behave as in ingest (unchanged / replaced), and a replaced document leaves its old
//! cluster (after `add` and after `ingest`). Small generated corpora (`lifecycle::write_corpus`:
//! every 4th document is an original followed by 2 near-duplicate variants).

use std::path::{Path, PathBuf};

use crate::common::*;

/// A corpus of `n` documents in `work/c`, the first `ingested` ingested into `work/idx`; the
/// index runs from `work/c` (so `add`'s keys are the bare file names, as ingest's).
fn setup(work: &Path, n: usize, ingested: usize) -> (PathBuf, TestIndex) {
    setup_with(work, n, ingested, &[])
}

fn setup_with(work: &Path, n: usize, ingested: usize, create: &[&str]) -> (PathBuf, TestIndex) {
    let c = work.join("c");
    write_corpus(&c, n, 7);
    let first = work.join("first");
    std::fs::create_dir_all(&first).unwrap();
    for i in 0..ingested {
        let f = format!("doc-{i:04}.html");
        std::fs::copy(c.join(&f), first.join(&f)).unwrap();
    }
    let idx = TestIndex::at(work.join("idx"));
    idx.ingest(&[&first], create);
    (c.clone(), idx.in_dir(&c))
}

/// Every answer we compare across folds: pairs (shingle, and every other method the index
/// stores), clusters, queries (without their timing).
#[derive(Debug, PartialEq)]
struct Answers {
    pairs: Vec<Vec<Pair>>,
    clusters: Vec<Vec<Cluster>>,
    queries: Vec<serde_json::Value>,
}

fn answers(idx: &TestIndex, probes: &[PathBuf]) -> Answers {
    let mut pairs = vec![idx.pairs("0.5"), idx.pairs_with(&["--method", "simhash"])];
    let mut clusters = vec![];
    let methods = idx.stats()["options"]["methods"].clone();
    if methods.get("dsc").is_some() {
        for m in ["dsc-ss", "combined", "imatch", "exact"] {
            pairs.push(idx.pairs_with(&["--method", m]));
        }
        clusters.push(idx.clusters_with(&["--method", "imatch"]));
    }
    clusters.push(idx.clusters());
    let queries = idx.query(probes, &["--threshold", "0.5"]);
    Answers {
        pairs,
        clusters,
        queries,
    }
}

fn doc_id(idx: &TestIndex, key: &str) -> u32 {
    let index = ndd_index::Index::open(idx.path()).unwrap();
    index.catalog().doc_by_key(key).unwrap().unwrap()
}

/// Members of `doc`'s persisted cluster (just `doc` for a singleton).
fn members_of(idx: &TestIndex, doc: u32) -> Vec<u32> {
    let index = ndd_index::Index::open(idx.path()).unwrap();
    let c = index.catalog().cluster_of(doc).unwrap();
    match index.catalog().members(c).unwrap() {
        Some(m) => m.iter().collect(),
        None => vec![doc],
    }
}

#[test]
fn added_documents_are_visible_at_once_and_join_clusters() {
    let w = temp_dir("add-visible");
    let (c, idx) = setup(w.path(), 40, 36);
    // doc-0036 is an original, 0037 and 0038 its variants; 0039 is unrelated.
    let (r, sum) = idx.add(&["doc-0036.html"], &[]);
    assert_eq!(sum["added"], 1);
    assert_eq!(sum["delta_docs"], 1);
    assert_eq!(r[0]["status"], "new");
    let d36 = r[0]["doc"].as_u64().unwrap() as u32;
    assert_eq!(d36, 36, "doc ids come from the same counter as ingest's");

    // A separate reader process finds it at once.
    let q = idx.query(&[c.join("doc-0037.html")], &[]);
    assert!(
        q[0].to_string().contains("doc-0036.html"),
        "query misses the added doc: {q:?}"
    );

    // Its near-duplicate, added by another process (the index is reopened), joins its cluster.
    let (r, sum) = idx.add(&["doc-0037.html"], &[]);
    assert_eq!(sum["near_duplicate_pairs"], 1);
    assert_eq!(r[0]["near_duplicate"]["key"], "doc-0036.html");
    assert_eq!(r[0]["cluster"], 36);
    assert_eq!(members_of(&idx, 36), vec![36, 37]);

    // A near-duplicate of an ingested document joins the ingested cluster.
    let text = std::fs::read_to_string(c.join("doc-0000.html")).unwrap();
    std::fs::write(c.join("x-0000.html"), text.replacen("w", "zz", 2)).unwrap();
    let (r, _) = idx.add(&["x-0000.html"], &[]);
    assert_eq!(r[0]["cluster"], 0);
    let m = members_of(&idx, 0);
    assert_eq!(m.len(), 4, "cluster of doc 0: {m:?}");

    let pairs = pair_keys(&idx.pairs("0.8"));
    assert!(
        pairs.contains(&("doc-0036.html".into(), "doc-0037.html".into())),
        "{pairs:?}"
    );
    let clusters = idx.clusters();
    assert!(
        clusters
            .iter()
            .any(|c| c.members.iter().any(|k| k == "x-0000.html")),
        "{clusters:?}"
    );
    let v = idx.verify();
    assert_eq!(v["delta_documents"], 3);
    assert_eq!(idx.stats()["documents"], 39);
}

#[test]
fn folding_by_size_and_by_compact_changes_no_answer() {
    let w = temp_dir("add-fold");
    let (c, idx) = setup_with(w.path(), 48, 24, &["--methods", "all"]);
    let probes: Vec<PathBuf> = (20..48)
        .step_by(3)
        .map(|i| c.join(format!("doc-{i:04}.html")))
        .collect();
    let by_size = TestIndex::at(w.path().join("by-size")).in_dir(&c);
    copy_dir(idx.path(), by_size.path());
    for i in 24..48 {
        let f = format!("doc-{i:04}.html");
        let (_, sum) = idx.add(&[&f], &["--fold-docs", "1000"]);
        assert!(sum.get("folded").is_none());
        let (_, sum) = by_size.add(&[&f], &["--fold-docs", "5"]);
        let folds = (i - 24 + 1) % 5 == 0;
        assert_eq!(sum.get("folded").is_some(), folds, "add {i}: {sum}");
    }
    assert_eq!(idx.verify()["delta_documents"], 24);
    assert_eq!(by_size.verify()["delta_documents"], 4);
    let before = answers(&idx, &probes);
    assert!(
        before
            .pairs
            .iter()
            .flatten()
            .any(|(a, b, _)| a == "doc-0044.html" && b == "doc-0045.html"),
        "{before:?}"
    );
    // The other methods see the delta documents too (dsc-ss and combined pairs among them).
    let dsc = idx.pairs_with(&["--method", "dsc-ss"]);
    let added = |k: &str| k["doc-".len()..][..4].parse::<u32>().unwrap() >= 24;
    assert!(
        dsc.iter().any(|(a, b, _)| added(a) && added(b)),
        "no dsc-ss pair among added documents: {dsc:?}"
    );
    assert_eq!(
        answers(&by_size, &probes),
        before,
        "fold by size changed an answer"
    );

    let cs = idx.compact(&[]);
    assert_eq!(cs["delta_docs_folded"], 24);
    assert_eq!(idx.verify()["delta_documents"], 0);
    assert_eq!(
        answers(&idx, &probes),
        before,
        "fold by compact changed an answer"
    );
    idx.compact(&["--full"]);
    assert_eq!(
        answers(&idx, &probes),
        before,
        "a full merge after the fold changed an answer"
    );
    idx.verify();

    // Adds after the fold (and after reopening) still match the folded documents.
    std::fs::copy(c.join("doc-0044.html"), c.join("again.html")).unwrap();
    let (r, _) = idx.add(&["again.html"], &[]);
    assert_eq!(r[0]["exact_duplicate_of"], "doc-0044.html");
    assert_eq!(r[0]["cluster"], 44);
}

#[test]
fn duplicate_keys_are_unchanged_or_replaced_and_replaced_docs_leave_their_cluster() {
    let w = temp_dir("add-keys");
    let (c, idx) = setup(w.path(), 16, 16);
    // doc-0004 (id 4) is an original with variants 5 and 6.
    assert_eq!(members_of(&idx, 4), vec![4, 5, 6]);

    // The same key with the same text: unchanged, nothing added.
    let (r, sum) = idx.add(&["doc-0005.html"], &[]);
    assert_eq!(r[0]["status"], "unchanged");
    assert_eq!(r[0]["doc"], 5);
    assert_eq!(sum["added"], 0);

    // The same key twice in one add: the second is an error, the first is kept.
    let dup = w.path().join("dup");
    std::fs::create_dir_all(dup.join("a")).unwrap();
    std::fs::write(
        dup.join("a/k.html"),
        "<p>one two three four five six seven</p>",
    )
    .unwrap();
    std::fs::write(
        dup.join("k.jsonl"),
        "{\"id\":\"a/k.html\",\"text\":\"other words entirely here\"}\n",
    )
    .unwrap();
    let (r, sum) = idx.in_dir(&dup).add(&["a/k.html", "k.jsonl"], &[]);
    assert_eq!(
        (sum["added"].as_u64(), sum["errors"].as_u64()),
        (Some(1), Some(1)),
        "{r:?}"
    );

    // The same key with a new, unrelated text: replaced; the old document leaves its cluster.
    let fresh = w.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    std::fs::write(
        fresh.join("doc-0005.html"),
        "<p>entirely unrelated words for this key now</p>",
    )
    .unwrap();
    let (r, sum) = idx.in_dir(&fresh).add(&["doc-0005.html"], &[]);
    assert_eq!(r[0]["status"], "replaced");
    assert_eq!(sum["replaced"], 1);
    let new5 = r[0]["doc"].as_u64().unwrap() as u32;
    assert_eq!(doc_id(&idx, "doc-0005.html"), new5);
    assert_eq!(
        members_of(&idx, 4),
        vec![4, 6],
        "replaced doc 5 still in its old cluster"
    );
    assert_eq!(members_of(&idx, new5), vec![new5]);
    let clusters = idx.clusters();
    assert!(
        !clusters
            .iter()
            .any(|c| c.members.iter().any(|k| k == "doc-0005.html")),
        "{clusters:?}"
    );
    idx.verify();

    // Ingest: replacing doc-0006 (a variant of 4) with a text near doc-0008's cluster moves it.
    let night = w.path().join("night");
    std::fs::create_dir_all(&night).unwrap();
    let t8 = std::fs::read_to_string(c.join("doc-0008.html")).unwrap();
    std::fs::write(night.join("doc-0006.html"), t8.replacen("w", "q", 1)).unwrap();
    let lines = idx.ingest_report(&[&night], &[]);
    assert_eq!(lines[0]["status"], "replaced");
    let new6 = lines[0]["doc"].as_u64().unwrap() as u32;
    assert_eq!(
        members_of(&idx, 4),
        vec![4],
        "cluster 4 dissolves: {:?}",
        members_of(&idx, 4)
    );
    assert_eq!(members_of(&idx, 8), vec![8, 9, 10, new6]);
    idx.verify();
    // And the whole thing folds and still answers the same.
    let probes = [
        c.join("doc-0004.html"),
        c.join("doc-0008.html"),
        fresh.join("doc-0005.html"),
    ];
    let before = answers(&idx, &probes);
    idx.compact(&[]);
    assert_eq!(answers(&idx, &probes), before);
}

#[test]
fn verify_checks_the_delta_against_the_catalog() {
    let w = temp_dir("add-verify");
    let (_, idx) = setup(w.path(), 8, 6);
    idx.add(&["doc-0006.html"], &[]);
    assert_eq!(idx.verify()["delta_documents"], 1);
    // A delta entry without a catalog record (as a bug or a bad restore would leave).
    {
        let index = ndd_index::Index::open_writer(idx.path(), &Default::default()).unwrap();
        let mut wb = index.catalog().batch_writer();
        let stray = ndd_index::store::delta::DeltaDoc {
            features: vec![1, 2, 3],
            ..Default::default()
        };
        wb.put_delta(5000, &stray);
        index.catalog().commit(wb).unwrap();
    }
    let out = idx.run_raw(&["verify"]);
    assert_eq!(out.status.code(), Some(5));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("catalog:delta/5000: delta document with no catalog record"),
        "{text}"
    );
}

#[test]
fn adds_interleaved_with_ingests_keep_every_method_answer_through_folds() {
    let w = temp_dir("add-interleaved");
    let (c, idx) = setup_with(w.path(), 44, 20, &["--methods", "all"]);
    let probes: Vec<PathBuf> = [20, 24, 30, 40]
        .iter()
        .map(|i| c.join(format!("doc-{i:04}.html")))
        .collect();
    // Adds 20..24, an ingested batch 24..32 (ids after the delta's), adds 32..44: the delta's
    // doc range then overlaps the batch's segment.
    for i in 20..24 {
        idx.add(&[&format!("doc-{i:04}.html")], &[]);
    }
    let night = w.path().join("night");
    std::fs::create_dir_all(&night).unwrap();
    for i in 24..32 {
        let f = format!("doc-{i:04}.html");
        std::fs::copy(c.join(&f), night.join(&f)).unwrap();
    }
    idx.ingest(&[&night], &[]);
    for i in 32..44 {
        idx.add(&[&format!("doc-{i:04}.html")], &[]);
    }
    idx.verify();
    let before = answers(&idx, &probes);
    let combined = pair_keys(&idx.pairs_with(&["--method", "combined"]));
    assert!(
        combined.contains(&("doc-0020.html".into(), "doc-0021.html".into())),
        "{combined:?}"
    );
    idx.compact(&[]);
    assert_eq!(answers(&idx, &probes), before, "fold changed an answer");
    idx.compact(&["--full"]);
    assert_eq!(
        answers(&idx, &probes),
        before,
        "full merge changed an answer"
    );
    idx.verify();
}

/// `Index::add_docs` of documents prepared by their check (`Index::query_to_insert` on an
/// older snapshot, with its hint) gives what the plain add of the same pages gives: reports
/// (status, ids, clusters, near and exact duplicates), pairs and clusters, even when another
/// add (a near-duplicate of the prepared pages) and a delete (of a document in a hint) land
/// between the check and the add, and with a replacement in the same call.
#[test]
fn a_prepared_add_answers_as_the_plain_add() {
    use ndd_index::canonicalize::DocFormat;
    use ndd_index::lifecycle::add::AddOptions;
    use ndd_index::lifecycle::DeleteSelector;
    use ndd_index::ops::{AddDoc, PairsRequest, QueryRequest, Source};
    use ndd_index::{CreateOptions, Index, Threshold};

    let w = temp_dir("add-prepared");
    let c = w.path().join("c");
    // {0,1,2}, {4,5,6}, {8,9,10}, {12,13,14}: an original and its near-duplicates.
    write_corpus(&c, 20, 7);
    let page = |i: usize| std::fs::read(c.join(format!("doc-{i:04}.html"))).unwrap();
    let key = |i: usize| format!("doc-{i:04}.html");
    let raw = |k: String, i: usize| (k, page(i), DocFormat::Html);
    let opts = AddOptions::default();
    let mut plain = Index::open_writer(w.path().join("plain"), &CreateOptions::default()).unwrap();
    let mut prep = Index::open_writer(w.path().join("prep"), &CreateOptions::default()).unwrap();
    let first: Vec<_> = (0..12).map(|i| raw(key(i), i)).collect();
    for ix in [&mut plain, &mut prep] {
        ix.add(
            Source::DocsWithFormat(first.clone()),
            &opts,
            &mut |_| Ok(()),
        )
        .unwrap();
    }

    // The calls' pages: 13 and 14 (near-duplicates of 12, which is added after the check),
    // a copy of 2 under a new key, doc-0003's key with 1's text (a replacement), and 15.
    let last: Vec<(String, usize)> = vec![
        (key(13), 13),
        (key(14), 14),
        ("copy-0002.html".into(), 2),
        (key(3), 1),
        (key(15), 15),
    ];
    // The checks, on a snapshot taken before the add of 12 and the delete of 0.
    let snap = prep.snapshot();
    let mut prepared = Vec::new();
    for (k, i) in &last[..4] {
        let (_, p) = snap
            .query_to_insert(k, &page(*i), &QueryRequest::default())
            .unwrap();
        let p = p.expect("a shingle check prepares the page");
        assert!(p.hint.is_some(), "{k}: a check at 0.5 <= 0.8 leaves a hint");
        prepared.push(p);
    }
    let hint_docs: Vec<u32> = prepared[2].hint.as_ref().unwrap().docs.clone();
    assert!(
        hint_docs.len() >= 3,
        "the copy of 2 finds 0, 1, 2: {hint_docs:?}"
    );
    drop(snap);
    for ix in [&mut plain, &mut prep] {
        ix.add(
            Source::DocsWithFormat(vec![raw(key(12), 12)]),
            &opts,
            &mut |_| Ok(()),
        )
        .unwrap();
        let d = ix.delete(&DeleteSelector::Keys(vec![key(0)])).unwrap();
        assert_eq!(d.deleted, 1);
    }

    let mut docs: Vec<AddDoc> = prepared.into_iter().map(AddDoc::Prepared).collect();
    docs.push(AddDoc::Raw {
        key: key(15),
        bytes: page(15),
        format: DocFormat::Html,
    });
    let (mut rp, mut rq) = (Vec::new(), Vec::new());
    let sp = plain
        .add(
            Source::DocsWithFormat(last.iter().map(|(k, i)| raw(k.clone(), *i)).collect()),
            &opts,
            &mut |r| {
                rp.push(r.clone());
                Ok(())
            },
        )
        .unwrap();
    let sq = prep
        .add_docs(docs, &opts, &mut |r| {
            rq.push(r.clone());
            Ok(())
        })
        .unwrap();
    assert_eq!(rq, rp, "reports");
    assert_eq!(
        (sq.added, sq.replaced, sq.unchanged, sq.near_duplicate_pairs),
        (sp.added, sp.replaced, sp.unchanged, sp.near_duplicate_pairs)
    );
    // The pair 12-13 came from the search of what was added after the check.
    assert!(
        rq[0].near_duplicate.is_some(),
        "13 is a near-duplicate of 12: {:?}",
        rq[0]
    );
    assert!(
        sq.near_duplicate_pairs >= 5,
        "pairs: {}",
        sq.near_duplicate_pairs
    );
    assert_eq!(
        rq[3].status,
        ndd_index::pipeline::ingest::DocStatus::Replaced
    );

    let pairs = |ix: &Index| {
        let mut out = Vec::new();
        let t = Threshold::try_from(0.5).unwrap();
        ix.pairs(&PairsRequest::shingle(t), |p| {
            out.push((p.key_a.clone(), p.key_b.clone(), p.resemblance));
            Ok(())
        })
        .unwrap();
        out
    };
    assert_eq!(pairs(&prep), pairs(&plain), "pairs");
    for doc in 0..plain.view().doc_ids() {
        let (cp, cq) = (plain.catalog(), prep.catalog());
        let members = |c: &ndd_index::store::Catalog, d: u32| {
            let id = c.cluster_of(d).unwrap();
            (id, c.members(id).unwrap())
        };
        assert_eq!(members(cq, doc), members(cp, doc), "cluster of doc {doc}");
    }
}
