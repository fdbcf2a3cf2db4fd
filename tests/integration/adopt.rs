//! `ndd-index adopt` of a staged corpus (format-spec/staging.md), the staging written here by
//! the library's `PartWriter` as the Spark job's tasks write it: the adopted index answers as
//! a plain ingest of the same documents does (pairs, clusters, verify; a one-part staging's
//! segment is byte for byte ingest's), a later ingest continues on it, and every refusal
//! (other creation options, a gap in the ids, ids not starting at the index's next id, a
//! damaged part, an incomplete staging, adopting twice) is a clear error that changes nothing.

use std::path::{Path, PathBuf};

use ndd_index::input::{read_source, InputItem, InputOptions, Source};
use ndd_index::lifecycle::stage::{staging_options, PARTS_DIR};
use ndd_index::lifecycle::{PartWriter, StagingManifest};
use ndd_index::ops::CreateSpec;

use crate::common::*;

/// Stages the documents of `corpus` (keys as `ingest` of that directory gives them) into
/// `staging`, `per` documents a part, ids from `first`, with creation options `spec`.
fn stage(
    corpus: &Path,
    staging: &Path,
    first: u32,
    per: usize,
    spec: &CreateSpec,
) -> StagingManifest {
    let options = staging_options(&spec.resolve().unwrap()).unwrap();
    let docs: Vec<_> = read_source(
        Source::Paths(vec![corpus.to_owned()]),
        InputOptions::default(),
    )
    .map(|item| match item {
        InputItem::Doc(d) => d,
        InputItem::Bad { key, reason, .. } => panic!("{key}: {reason}"),
    })
    .collect();
    let mut parts = Vec::new();
    let mut doc = first;
    for (i, chunk) in docs.chunks(per).enumerate() {
        let mut w = PartWriter::create(staging, i as u32, &options, 8 << 20).unwrap();
        for d in chunk {
            w.add(doc, d.clone()).unwrap();
            doc += 1;
        }
        parts.push(w.finish().unwrap().expect("a part with documents"));
    }
    let m = StagingManifest {
        format: "ndd-index staging".into(),
        version: 1,
        run: format!("test-{}", staging.file_name().unwrap().to_string_lossy()),
        created_unix: 0,
        options,
        doc_lo: first,
        doc_hi: doc,
        errors: 0,
        parts,
    };
    m.write(staging).unwrap();
    m
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn adopted_index_answers_as_ingest_and_continues() {
    let plain = TestIndex::new("adopt-plain");
    let corpus = plain.work().join("corpus");
    write_corpus(&corpus, 60, 17);
    plain.ingest(&[&corpus], &[]);

    // Three parts of 25, 25 and 10 documents, adopted into a path with no index yet.
    let adopted = TestIndex::new("adopt-adopted");
    let staging = adopted.work().join("staging");
    let m = stage(&corpus, &staging, 0, 25, &CreateSpec::default());
    assert_eq!(m.parts.len(), 3);
    let s = adopted.json(&["adopt", staging.to_str().unwrap()]);
    assert_eq!(s["documents"], 60);
    assert_eq!(s["segments"].as_array().unwrap().len(), 3);
    assert_eq!(s["batch"], format!("adopt-{}", m.run));
    let v = adopted.verify();
    assert_eq!(v["problems"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["live_documents"], 60);

    for t in ["0.5", "0.8", "0.85"] {
        let want = plain.stdout(&["pairs", "--threshold", t]);
        assert!(!want.is_empty(), "planted near-duplicates at {t}");
        assert_eq!(
            adopted.stdout(&["pairs", "--threshold", t]),
            want,
            "pairs at {t}"
        );
    }
    // Stored clusters (at the cluster threshold): the same ids (oldest member) and members.
    assert_eq!(adopted.clusters(), plain.clusters());
    assert!(!plain.clusters().is_empty());
    // The staging keeps its files (linked, not moved).
    assert_eq!(files(&staging.join(PARTS_DIR)).len(), 6);

    // A nightly ingest continues on both alike.
    // (Its keys are the corpus's: those documents are replaced, their clusters recomputed.)
    let night = plain.work().join("night");
    write_corpus(&night, 30, 99);
    for ix in [&plain, &adopted] {
        ix.ingest(&[&night], &["--batch", "night-1"]);
        let v = ix.verify();
        assert_eq!(v["problems"].as_array().unwrap().len(), 0, "{v}");
    }
    assert_eq!(
        adopted.stdout(&["pairs", "--threshold", "0.5"]),
        plain.stdout(&["pairs", "--threshold", "0.5"])
    );
    assert_eq!(adopted.clusters(), plain.clusters());
}

#[test]
fn one_part_is_ingests_segment_byte_for_byte() {
    // With every method that can be staged, so their tables are compared too.
    let spec = CreateSpec {
        methods: Some("simhash,dsc-ss,combined".into()),
        shingle_words: Some(4),
        ..CreateSpec::default()
    };
    let plain = TestIndex::new("adopt-bytes");
    let corpus = plain.work().join("corpus");
    write_corpus(&corpus, 40, 5);
    plain.ingest(
        &[&corpus],
        &[
            "--methods",
            "simhash,dsc-ss,combined",
            "--shingle-words",
            "4",
        ],
    );
    let staging = plain.work().join("staging");
    let m = stage(&corpus, &staging, 0, 1000, &spec);
    let staged = std::fs::read(staging.join(PARTS_DIR).join(&m.parts[0].segment)).unwrap();
    let ingested = std::fs::read(plain.path().join("segments/seg-00000001.ndds")).unwrap();
    assert!(
        staged == ingested,
        "the staged segment differs from ingest's"
    );

    // And the adopted copy answers every method as the ingested index does.
    let adopted = TestIndex::new("adopt-bytes2");
    adopted.run(&["adopt", staging.to_str().unwrap()]);
    for method in ["simhash", "dsc-ss", "combined"] {
        let a = ["pairs", "--method", method];
        assert_eq!(adopted.stdout(&a), plain.stdout(&a), "{method}");
    }
}

#[test]
fn refusals_change_nothing() {
    let ix = TestIndex::new("adopt-refuse");
    let corpus = ix.work().join("corpus");
    write_corpus(&corpus, 30, 3);
    let staging = ix.work().join("staging");
    stage(&corpus, &staging, 0, 10, &CreateSpec::default());
    let arg = staging.to_str().unwrap();

    // Other creation options than the index's.
    let other = TestIndex::new("adopt-other");
    let seed = other.work().join("seed");
    write_corpus(&seed, 4, 8);
    other.ingest(&[&seed], &["--shingle-words", "4"]);
    let o = other.run_raw(&["adopt", arg]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--shingle"), "{}", stderr(&o));

    // The first staged id is not the index's next id.
    let later = TestIndex::new("adopt-later");
    later.ingest(&[&seed], &[]);
    let o = later.run_raw(&["adopt", arg]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("next doc id is 4"), "{}", stderr(&o));
    assert_eq!(later.stats()["documents"], 4);

    // A gap in the ids: the middle part left out of the manifest.
    let gap = ix.work().join("gap");
    copy_dir(&staging, &gap);
    let mpath = gap.join("staging.json");
    let mut j: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    j["parts"].as_array_mut().unwrap().remove(1);
    std::fs::write(&mpath, serde_json::to_vec(&j).unwrap()).unwrap();
    let o = ix.run_raw(&["adopt", gap.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("gap in the doc ids"), "{}", stderr(&o));

    // An incomplete staging (no manifest: the job did not finish).
    let partial = ix.work().join("partial");
    copy_dir(&staging, &partial);
    std::fs::remove_file(partial.join("staging.json")).unwrap();
    let o = ix.run_raw(&["adopt", partial.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a complete staging"),
        "{}",
        stderr(&o)
    );

    // A damaged part: one byte of the second part's segment flipped.
    let bad = ix.work().join("bad");
    copy_dir(&staging, &bad);
    let seg = bad.join(PARTS_DIR).join("part-00001.ndds");
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();
    let o = ix.run_raw(&["adopt", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("part-00001.ndds"), "{}", stderr(&o));
    // The refusals created the index (with the staging's options) and nothing else.
    assert_eq!(ix.stats()["documents"], 0);
    assert!(files(&ix.path().join("segments")).is_empty());

    // Adopting the good staging works once; the second time is refused.
    let s = ix.json(&["adopt", arg]);
    assert_eq!(s["documents"], 30);
    let o = ix.run_raw(&["adopt", arg]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("adopted already"), "{}", stderr(&o));
    // A staging of the same documents under a new run: their keys are indexed already.
    let again = ix.work().join("again");
    stage(&corpus, &again, 30, 10, &CreateSpec::default());
    let o = ix.run_raw(&["adopt", again.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("in the index already"),
        "{}",
        stderr(&o)
    );
    let v = ix.verify();
    assert_eq!(v["problems"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["live_documents"], 30);
    assert_eq!(files(&ix.path().join("segments")).len(), 3);
}

#[test]
fn adopt_into_an_index_with_documents() {
    // Batch 2 repeats batch 1's first 30 pages under new keys: exact duplicates and clusters
    // across the old and the adopted documents.
    let plain = TestIndex::new("adopt-next-plain");
    let first = plain.work().join("first");
    write_corpus(&first, 40, 21);
    let second = plain.work().join("second");
    write_corpus(&second.join("night"), 30, 21);
    plain.ingest(&[&first], &[]);
    let s2 = plain.ingest(&[&second], &[]);
    assert!(s2["exact_duplicates"].as_u64().unwrap() >= 30, "{s2}");

    let adopted = TestIndex::new("adopt-next");
    adopted.ingest(&[&first], &[]);
    let staging = adopted.work().join("staging");
    stage(&second, &staging, 40, 12, &CreateSpec::default());
    let s = adopted.json(&["adopt", staging.to_str().unwrap()]);
    assert_eq!(
        (s["doc_lo"].as_u64(), s["doc_hi"].as_u64()),
        (Some(40), Some(70))
    );
    assert_eq!(s["exact_duplicates"], s2["exact_duplicates"]);
    assert_eq!(s["near_duplicate_pairs"], s2["near_duplicate_pairs"]);
    let v = adopted.verify();
    assert_eq!(v["problems"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(
        adopted.stdout(&["pairs", "--threshold", "0.8"]),
        plain.stdout(&["pairs", "--threshold", "0.8"])
    );
    assert_eq!(adopted.clusters(), plain.clusters());
    // The catalog records are ingest's, batch ids aside.
    let (a, b) = (
        ndd_index::Index::open(adopted.path()).unwrap(),
        ndd_index::Index::open(plain.path()).unwrap(),
    );
    let recs = |ix: &ndd_index::Index| -> Vec<_> {
        ix.catalog()
            .iter_docs()
            .map(|r| {
                let (d, mut rec) = r.unwrap();
                rec.batch = 0;
                (d, rec)
            })
            .collect()
    };
    assert_eq!(recs(&a), recs(&b));
    for digest in recs(&b).iter().map(|(_, r)| r.digest) {
        assert_eq!(
            a.catalog().doc_by_digest(&digest).unwrap(),
            b.catalog().doc_by_digest(&digest).unwrap()
        );
    }
}
