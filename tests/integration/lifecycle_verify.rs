//! `verify` finds damage with the right file and offset, and reads of damaged blocks fail with
//! a checksum error instead of serving data.

use std::path::{Path, PathBuf};

use crate::common::*;

/// 120 documents of `write_corpus` in `<work>/docs`, ingested into `<work>/idx`.
fn build(name: &str) -> (TestIndex, PathBuf) {
    let idx = TestIndex::new(name);
    let docs = idx.work().join("docs");
    write_corpus(&docs, 120, 7);
    idx.ingest(&[&docs], &[]);
    (idx, docs)
}

fn flip(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[at as usize] ^= 0x10;
    std::fs::write(path, b).unwrap();
}

#[test]
fn clean_index_verifies() {
    let (idx, _docs) = build("verify-clean");
    let (code, v) = idx.verify_status();
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["problems"].as_array().unwrap().len(), 0);
    assert_eq!(v["live_documents"], 120);
    assert!(v["blocks"].as_u64().unwrap() > 0);
}

#[test]
fn bit_flips_are_reported_with_file_and_offset_and_never_served() {
    let (idx, docs) = build("verify-flip");
    let seg = idx.path().join("segments/seg-00000001.ndds");
    let len = std::fs::metadata(&seg).unwrap().len();
    // The forward table is written first: its first block starts right after the 16-byte
    // header and holds doc 0. A second flip lands in the middle of the file (postings).
    let (a, b) = (16 + 40, len / 2);
    flip(&seg, a);
    flip(&seg, b);
    let (code, v) = idx.verify_status();
    assert_eq!(code, Some(5), "verify must exit 5 on damage: {v}");
    let problems = v["problems"].as_array().unwrap();
    let seg_name = seg.display().to_string();
    for at in [a, b] {
        let hit = problems.iter().any(|p| {
            let off = p["offset"].as_u64().unwrap_or(u64::MAX);
            p["file"] == seg_name.as_str()
                && off <= at
                && at - off < 64 * 1024
                && p["reason"].as_str().unwrap().contains("checksum")
        });
        assert!(
            hit,
            "no checksum problem covering offset {at}: {problems:?}"
        );
    }
    // Text output names the file and offset too.
    let out = idx.run_raw(&["verify"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(stdout(&out).contains(&format!("{seg_name}: offset 16")));

    // Reads: the damaged forward block of doc 0 is touched by the matching of pairs and by
    // a query of doc 0. (At the cluster threshold `pairs` would answer from the stored pairs
    // in the catalog, reading no segment: the matching is forced.)
    let out = idx.run_raw(&["pairs", "--threshold", "0.8", "--matching", "probe"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("checksum mismatch") && err.contains("seg-00000001.ndds"),
        "{err}"
    );
    assert!(
        stdout(&out).is_empty(),
        "no pairs may be served from damaged data"
    );
    let q = docs.join("doc-0000.html");
    let out = idx.run_raw(&["query", q.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"));
}

#[test]
fn missing_segment_and_catalog_mismatches_are_reported() {
    let (idx, _docs) = build("verify-missing");
    let seg = idx.path().join("segments/seg-00000001.ndds");
    // Truncation: the size no longer matches the manifest.
    let b = std::fs::read(&seg).unwrap();
    std::fs::write(&seg, &b[..b.len() - 1]).unwrap();
    let (code, v) = idx.verify_status();
    assert_eq!(code, Some(5));
    let text = v.to_string();
    assert!(text.contains("the manifest says"), "{text}");
    // Gone: reported, and every live document then lacks its forward list.
    std::fs::remove_file(&seg).unwrap();
    let (code, v) = idx.verify_status();
    assert_eq!(code, Some(5));
    let problems = v["problems"].as_array().unwrap();
    assert!(problems
        .iter()
        .any(|p| p["file"] == seg.display().to_string().as_str()));
    assert!(
        problems
            .iter()
            .filter(|p| p["reason"].as_str().unwrap().contains("no forward list"))
            .count()
            == 120
    );
}

#[test]
fn not_an_index_is_a_plain_failure() {
    let w = temp_dir("verify-none");
    let out = TestIndex::at(w.path()).run_raw(&["verify"]);
    assert_eq!(out.status.code(), Some(1));
}
