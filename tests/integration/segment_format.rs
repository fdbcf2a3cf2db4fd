//! Segment format versions (format-spec/segment.md): an index whose three batches were
//! written in formats 1, 2 and 3 (`NDD_SEGMENT_FORMAT=1|2|3`; 3 is the
//! default for a new index) answers exactly like all-version-1, all-version-2 and all-version-3 indexes on the
//! llvm corpus; it verifies; `compact --full` rewrites it into one version-3 segment (and,
//! with `NDD_SEGMENT_FORMAT=2`, an all-3 index into one version-2 segment: ranks decoded back
//! to hashes) with the same pairs; version 2 takes at most 80 % of version 1's bytes and
//! version 3's FORWARD table at most 75 % of version 2's.

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
    run_version(
        idx,
        &["ingest", "--quiet", "--batch", name, dir.to_str().unwrap()],
        version,
    );
}

/// `compact --full`, writing format `version`.
fn compact_full_to(idx: &TestIndex, version: u32) {
    run_version(idx, &["compact", "--full"], version);
}

/// Runs the CLI with `args` on `idx`, writing segments of format `version` (2 is the default,
/// 3 is opt-in), and asserts it succeeded.
fn run_version(idx: &TestIndex, args: &[&str], version: u32) {
    let out = idx
        .cmd(args)
        .env("NDD_SEGMENT_FORMAT", version.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn mixed_versions_answer_alike_and_compaction_rewrites_to_version_3() {
    let Some(corpus) = corpus_dir() else {
        return;
    };
    let docs = extracted(&corpus);
    let truth = Truth::load(&corpus);
    let tmp = temp_dir("segfmt");
    let work = tmp.path();
    for (i, key) in truth.keys.iter().enumerate() {
        let dst = work.join(format!("b{}", i % 3)).join(key);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::hard_link(docs.join(key), &dst).unwrap();
    }
    let batches = [work.join("b0"), work.join("b1"), work.join("b2")];
    let build = |name: &str, versions: [u32; 3]| {
        let idx = TestIndex::new(name);
        for (i, (dir, v)) in batches.iter().zip(versions).enumerate() {
            ingest_version(&idx, dir, &format!("night-{i}"), v);
        }
        idx
    };
    let old = build("segfmt-v1", [1, 1, 1]);
    let new = build("segfmt-v2", [2, 2, 2]);
    let ranked = build("segfmt-v3", [3, 3, 3]);
    let mixed = build("segfmt-mixed", [1, 2, 3]);
    assert_eq!(segment_versions(&old), vec![1, 1, 1]);
    assert_eq!(segment_versions(&new), vec![2, 2, 2]);
    assert_eq!(segment_versions(&ranked), vec![3, 3, 3]);
    assert_eq!(segment_versions(&mixed), vec![1, 2, 3]);

    let want = old.pairs("0.8");
    assert!(want.len() > 1000, "{} pairs", want.len());
    assert_eq!(new.pairs("0.8"), want);
    assert_eq!(ranked.pairs("0.8"), want);
    assert_eq!(mixed.pairs("0.8"), want);
    assert_eq!(mixed.pairs("0.5"), old.pairs("0.5"));
    assert_eq!(ranked.pairs("0.5"), old.pairs("0.5"));
    for idx in [&old, &new, &ranked, &mixed] {
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
    assert_eq!(q(&ranked), q(&old));

    let stats = |idx: &TestIndex, what: &str| idx.stats()["bytes"][what].as_f64().unwrap();
    let (s1, s2) = (stats(&old, "segments_total"), stats(&new, "segments_total"));
    assert!(s2 <= 0.8 * s1, "version 2: {s2} bytes, version 1: {s1}");
    let (f2, f3) = (stats(&new, "forward"), stats(&ranked, "forward"));
    assert!(
        f3 <= 0.75 * f2,
        "FORWARD: version 3 {f3} bytes, version 2 {f2}"
    );
    assert!(stats(&ranked, "segments_total") < s2);

    compact_full_to(&mixed, 3);
    assert_eq!(segment_versions(&mixed), vec![3]);
    assert_eq!(mixed.pairs("0.8"), want);
    assert_eq!(q(&mixed), q(&old));
    mixed.verify();

    // Back to version 2 from version-3 inputs: FORWARD ranks are decoded to hashes.
    compact_full_to(&ranked, 2);
    assert_eq!(segment_versions(&ranked), vec![2]);
    assert_eq!(ranked.pairs("0.8"), want);
    assert_eq!(q(&ranked), q(&old));
    ranked.verify();
}

/// `ingest --segment-format 3` records the format at creation: later ingests and
/// `compact --full` without the flag write it too, `stats --json` shows it, and giving another
/// one for the existing index is refused; without the flag a new index gets format 3.
#[test]
fn segment_format_is_a_creation_option() {
    let tmp = temp_dir("segfmt-opt");
    let work = tmp.path();
    let batch = |b: u32| {
        let dir = work.join(format!("b{b}"));
        std::fs::create_dir_all(&dir).unwrap();
        for d in 0..12u32 {
            let words: Vec<String> = (0..60u32)
                .map(|i| {
                    if i == 59 {
                        format!("own{b}x{d}x{i}")
                    } else {
                        format!("f{}w{i}", d % 3)
                    }
                })
                .collect();
            let html = format!("<html><body><p>{}</p></body></html>", words.join(" "));
            std::fs::write(dir.join(format!("b{b}d{d}.html")), html).unwrap();
        }
        dir
    };
    let (b0, b1) = (batch(0), batch(1));
    let ingest = |idx: &TestIndex, dir: &Path, extra: &[&str]| {
        let mut args = vec!["ingest", "--quiet"];
        args.extend_from_slice(extra);
        args.push(dir.to_str().unwrap());
        idx.cmd(&args)
            .env_remove("NDD_SEGMENT_FORMAT")
            .output()
            .unwrap()
    };
    let three = TestIndex::new("segfmt-opt3");
    assert!(ingest(&three, &b0, &["--segment-format", "3"])
        .status
        .success());
    assert!(ingest(&three, &b1, &[]).status.success());
    assert_eq!(segment_versions(&three), vec![3, 3]);
    assert_eq!(three.stats()["options"]["segment_format"], 3);
    let refused = ingest(&three, &b1, &["--segment-format", "2"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--segment-format"));
    let two = TestIndex::new("segfmt-opt2");
    assert!(ingest(&two, &b0, &["--segment-format", "2"])
        .status
        .success());
    assert!(ingest(&two, &b1, &[]).status.success());
    assert_eq!(segment_versions(&two), vec![2, 2]);
    assert_eq!(two.stats()["options"]["segment_format"], 2);
    // Without the option a new index writes (and records) format 3, the default.
    let dflt = TestIndex::new("segfmt-optd");
    assert!(ingest(&dflt, &b0, &[]).status.success());
    assert!(ingest(&dflt, &b1, &[]).status.success());
    assert_eq!(segment_versions(&dflt), vec![3, 3]);
    assert_eq!(dflt.stats()["options"]["segment_format"], 3);
    assert_eq!(dflt.pairs("0.8"), two.pairs("0.8"));
    let bad = ingest(
        &TestIndex::new("segfmt-opt1"),
        &b0,
        &["--segment-format", "1"],
    );
    assert!(!bad.status.success());
    for t in ["0.5", "0.8"] {
        assert!(!two.pairs(t).is_empty());
        assert_eq!(three.pairs(t), two.pairs(t));
    }
    let out = three
        .cmd(&["compact", "--full"])
        .env_remove("NDD_SEGMENT_FORMAT")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(segment_versions(&three), vec![3]);
    assert_eq!(three.pairs("0.8"), two.pairs("0.8"));
    three.verify();
}
