//! Segment format versions (format-spec/segment.md): an index whose first batch was written in
//! format 1 (`NDD_SEGMENT_FORMAT=1`, the old writer path) and whose second is format 2 answers
//! exactly like an all-version-1 and an all-version-2 index on the llvm corpus; it verifies;
//! `compact --full` rewrites it into one version-2 segment with the same pairs; and version 2
//! takes at most 80 % of version 1's bytes.

use std::path::{Path, PathBuf};

use crate::common::*;

/// Format version of a segment file (the footer's field, 16 bytes from the end).
fn file_version(path: &Path) -> u32 {
    let b = std::fs::read(path).unwrap();
    u32::from_le_bytes(b[b.len() - 16..b.len() - 12].try_into().unwrap())
}

fn segment_versions(idx: &TestIndex) -> Vec<u32> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(idx.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ndds"))
        .collect();
    files.sort();
    files.iter().map(|p| file_version(p)).collect()
}

/// Ingests `dir` as batch `name`, writing segments of format `version`.
fn ingest_version(idx: &TestIndex, dir: &Path, name: &str, version: u32) {
    let mut c = idx.cmd(&["ingest", "--quiet", "--batch", name, dir.to_str().unwrap()]);
    if version == 1 {
        c.env("NDD_SEGMENT_FORMAT", "1");
    } else {
        c.env_remove("NDD_SEGMENT_FORMAT");
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn mixed_versions_answer_alike_and_compaction_rewrites_to_version_2() {
    let Some(corpus) = corpus_dir() else {
        return;
    };
    let docs = extracted(&corpus);
    let truth = Truth::load(&corpus);
    let work = temp_dir("segfmt").keep();
    for (i, key) in truth.keys.iter().enumerate() {
        let dst = work.join(format!("b{}", i % 2)).join(key);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::hard_link(docs.join(key), &dst).unwrap();
    }
    let (b0, b1) = (work.join("b0"), work.join("b1"));
    let build = |name: &str, v0: u32, v1: u32| {
        let idx = TestIndex::new(name);
        ingest_version(&idx, &b0, "night-0", v0);
        ingest_version(&idx, &b1, "night-1", v1);
        idx
    };
    let old = build("segfmt-v1", 1, 1);
    let new = build("segfmt-v2", 2, 2);
    let mixed = build("segfmt-mixed", 1, 2);
    assert_eq!(segment_versions(&old), vec![1, 1]);
    assert_eq!(segment_versions(&new), vec![2, 2]);
    assert_eq!(segment_versions(&mixed), vec![1, 2]);

    let want = old.pairs("0.8");
    assert!(want.len() > 1000, "{} pairs", want.len());
    assert_eq!(new.pairs("0.8"), want);
    assert_eq!(mixed.pairs("0.8"), want);
    assert_eq!(mixed.pairs("0.5"), old.pairs("0.5"));
    for idx in [&old, &new, &mixed] {
        idx.verify();
    }
    // Queries read FORWARD lists of both versions for exact verification.
    let probe = docs.join(&truth.keys[1]);
    let q = |idx: &TestIndex| {
        idx.query(&[&probe], &["--threshold", "0.5"])
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(q(&mixed), q(&old));

    let stats = |idx: &TestIndex| idx.stats()["bytes"]["segments_total"].as_f64().unwrap();
    let (s1, s2) = (stats(&old), stats(&new));
    assert!(s2 <= 0.8 * s1, "version 2: {s2} bytes, version 1: {s1}");

    mixed.compact(&["--full"]);
    assert_eq!(segment_versions(&mixed), vec![2]);
    assert_eq!(mixed.pairs("0.8"), want);
    assert_eq!(q(&mixed), q(&old));
    mixed.verify();
}
