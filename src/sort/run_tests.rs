//! Tests of the run-file codec: round trip, golden bytes from the spec, corruption detection,
//! cleanup of temporary and stale runs.

use super::*;
use crate::sort::cursor::RunCursor;
use crate::sort::{DocPair, KeyDoc};
use byteorder::{ByteOrder, LittleEndian as LE};

fn write_run<R: Record>(dir: &Path, recs: &[R], block_records: usize) -> SpilledRun {
    let mut w = RunWriter::<R>::with_block_records(dir, block_records).unwrap();
    for r in recs {
        w.push(r).unwrap();
    }
    w.finish(0).unwrap()
}

fn read_all<R: Record>(path: &Path) -> Result<Vec<R>> {
    let mut c = RunCursor::<R>::open(path)?;
    let mut out = Vec::new();
    while let Some(r) = c.next_record()? {
        out.push(r);
    }
    Ok(out)
}

fn keydocs(n: u64) -> Vec<KeyDoc> {
    (0..n)
        .map(|i| KeyDoc {
            key: i / 3 * 0x1_0000_0001,
            doc: (i % 3) as u32,
        })
        .collect()
}

#[test]
fn round_trip_various_sizes_and_block_sizes() {
    let dir = tempfile::tempdir().unwrap();
    for n in [0u64, 1, 2, 3, 4, 7, 9, 100, 20_000] {
        for block in [1usize, 3, 1000, 1 << 20] {
            let recs = keydocs(n);
            let run = write_run(dir.path(), &recs, block);
            assert_eq!(run.records, n);
            let len = std::fs::metadata(run.file.path()).unwrap().len();
            assert_eq!(run.bytes, len, "reported bytes = file size");
            let blocks = n.div_ceil(block as u64);
            let expect = (HEADER_LEN + TRAILER_LEN) as u64
                + blocks * (BLOCK_HEADER_LEN + INDEX_ENTRY_LEN) as u64
                + 12 * n;
            assert_eq!(len, expect, "n={n} block={block}");
            assert_eq!(read_all::<KeyDoc>(run.file.path()).unwrap(), recs);
        }
    }
}

#[test]
fn default_blocks_are_about_64_kib() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RunWriter::<KeyDoc>::create(dir.path()).unwrap();
    for r in keydocs(20_000) {
        w.push(&r).unwrap();
    }
    let run = w.finish(0).unwrap();
    // 65536 / 12 = 5461 records per block -> 4 blocks.
    let m = std::fs::read(run.file.path()).unwrap();
    let t = &m[m.len() - TRAILER_LEN..];
    assert_eq!(LE::read_u64(&t[8..16]), 4);
    assert_eq!(LE::read_u32(&m[HEADER_LEN + 4..]), 5461);
}

/// Hex bytes of the golden example in the spec (between the golden markers; `#` starts a
/// comment), so the spec and the writer cannot drift apart.
fn spec_golden() -> Vec<u8> {
    spec_golden_named("golden")
}

/// The hex bytes between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in the spec.
fn spec_golden_named(name: &str) -> Vec<u8> {
    let spec = include_str!("../../format-spec/sort-run.md");
    let start = spec
        .find(&format!("<!-- {name}:begin -->"))
        .expect("golden begin marker in spec");
    let end = spec
        .find(&format!("<!-- {name}:end -->"))
        .expect("golden end marker in spec");
    let mut out = Vec::new();
    for line in spec[start..end].lines().skip(1) {
        let line = line.split('#').next().unwrap_or("");
        if line.trim_start().starts_with("```") {
            continue;
        }
        for tok in line.split_whitespace() {
            out.push(
                u8::from_str_radix(tok, 16).unwrap_or_else(|_| panic!("bad hex {tok:?} in spec")),
            );
        }
    }
    out
}

#[test]
fn writer_output_matches_golden_bytes_in_spec() {
    let dir = tempfile::tempdir().unwrap();
    let recs = [
        DocPair { a: 1, b: 2 },
        DocPair { a: 1, b: 3 },
        DocPair { a: 0x0100, b: 0 },
    ];
    let run = write_run(dir.path(), &recs, 2);
    let bytes = std::fs::read(run.file.path()).unwrap();
    assert_eq!(
        bytes,
        spec_golden(),
        "writer output differs from format-spec/sort-run.md"
    );
    assert_eq!(read_all::<DocPair>(run.file.path()).unwrap(), recs);
}

#[test]
fn probe_record_run_matches_golden_bytes_in_spec() {
    use crate::sort::ProbeRecord;
    let dir = tempfile::tempdir().unwrap();
    let recs = [
        ProbeRecord {
            key: 1,
            doc: 2,
            segs: 1,
        },
        ProbeRecord {
            key: 0x0100,
            doc: 0,
            segs: 0x8000_0002,
        },
    ];
    let run = write_run(dir.path(), &recs, 2);
    let bytes = std::fs::read(run.file.path()).unwrap();
    assert_eq!(
        bytes,
        spec_golden_named("golden-kind4"),
        "writer output differs from format-spec/sort-run.md (kind 4)"
    );
    assert_eq!(read_all::<ProbeRecord>(run.file.path()).unwrap(), recs);
    // A run of another kind is not read as probe records, nor this one as another kind.
    assert!(read_all::<KeyDoc>(run.file.path()).is_err());
    let keydocs = write_run(dir.path(), &keydocs(3), 2);
    assert!(read_all::<ProbeRecord>(keydocs.file.path()).is_err());
}

#[test]
fn doc_hash_run_matches_golden_bytes_in_spec() {
    use crate::sort::DocHash;
    let dir = tempfile::tempdir().unwrap();
    let recs = [
        DocHash { doc: 1, hash: 2 },
        DocHash {
            doc: 0x0100,
            hash: 0x8000_0000_0000_0001,
        },
    ];
    let run = write_run(dir.path(), &recs, 2);
    let bytes = std::fs::read(run.file.path()).unwrap();
    assert_eq!(
        bytes,
        spec_golden_named("golden-kind5"),
        "writer output differs from format-spec/sort-run.md (kind 5)"
    );
    assert_eq!(read_all::<DocHash>(run.file.path()).unwrap(), recs);
    assert!(
        read_all::<KeyDoc>(run.file.path()).is_err(),
        "same size, other kind"
    );
}

// Damage is applied in place (pwrite / set_len): rewriting a file from scratch costs
// milliseconds on ext4, which over a thousand cases would dominate the test run.

#[test]
fn every_bit_flip_is_detected_never_wrong_data() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let recs: Vec<DocPair> = (0..7).map(|i| DocPair { a: i / 2, b: i }).collect();
    let run = write_run(dir.path(), &recs, 3);
    let good = std::fs::read(run.file.path()).unwrap();
    let path = dir.path().join("flipped.run");
    std::fs::write(&path, &good).unwrap();
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    for byte in 0..good.len() {
        for bit in 0..8 {
            f.write_all_at(&[good[byte] ^ (1 << bit)], byte as u64)
                .unwrap();
            match read_all::<DocPair>(&path) {
                Ok(v) => panic!("flip of byte {byte} bit {bit} undetected, read {v:?}"),
                Err(e) => {
                    assert!(e.is_corruption(), "byte {byte} bit {bit}: {e}");
                    assert!(
                        e.to_string().contains("flipped.run"),
                        "error names the file: {e}"
                    );
                }
            }
        }
        f.write_all_at(&good[byte..byte + 1], byte as u64).unwrap();
    }
    assert_eq!(
        read_all::<DocPair>(&path).unwrap(),
        recs,
        "restored file reads fine"
    );
}

#[test]
fn every_truncation_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let recs: Vec<DocPair> = (0..7).map(|i| DocPair { a: i, b: i }).collect();
    let run = write_run(dir.path(), &recs, 3);
    let good = std::fs::read(run.file.path()).unwrap();
    let path = dir.path().join("short.run");
    std::fs::write(&path, &good).unwrap();
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    for len in (0..good.len()).rev() {
        f.set_len(len as u64).unwrap();
        let e = read_all::<DocPair>(&path).expect_err(&format!("truncation to {len} undetected"));
        assert!(e.is_corruption(), "len {len}: {e}");
    }
}

#[test]
fn payload_damage_reports_block_offset_after_yielding_only_verified_records() {
    let dir = tempfile::tempdir().unwrap();
    let recs = keydocs(9);
    let run = write_run(dir.path(), &recs, 3);
    let mut bytes = std::fs::read(run.file.path()).unwrap();
    // Block 1 starts after the header and block 0 (12-byte header + 36-byte payload).
    let block1_payload = HEADER_LEN + (BLOCK_HEADER_LEN + 36) + BLOCK_HEADER_LEN;
    bytes[block1_payload + 5] ^= 0x40;
    let path = dir.path().join("bad.run");
    std::fs::write(&path, &bytes).unwrap();
    let mut c = RunCursor::<KeyDoc>::open(&path).unwrap();
    for want in &recs[..3] {
        assert_eq!(c.next_record().unwrap(), Some(*want));
    }
    match c.next_record() {
        Err(Error::ChecksumMismatch {
            path: p, offset, ..
        }) => {
            assert_eq!(p, path);
            assert_eq!(offset, block1_payload as u64);
        }
        other => panic!("expected checksum mismatch, got {other:?}"),
    }
    assert_eq!(
        c.next_record().unwrap(),
        None,
        "cursor stops after an error"
    );
}

#[test]
fn out_of_order_records_are_corrupt() {
    // A writer bug (not a bit flip) must still not produce unsorted output.
    let dir = tempfile::tempdir().unwrap();
    let run = write_run(
        dir.path(),
        &[DocPair { a: 2, b: 0 }, DocPair { a: 1, b: 0 }],
        8,
    );
    let e = read_all::<DocPair>(run.file.path()).unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e}");
}

#[test]
fn wrong_record_kind_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_run(dir.path(), &[DocPair { a: 1, b: 2 }], 8);
    let e = read_all::<KeyDoc>(run.file.path()).unwrap_err();
    assert!(matches!(e, Error::Corrupt { offset: 12, .. }), "{e}");
}

#[test]
fn foreign_file_and_future_version() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_run(dir.path(), &[DocPair { a: 1, b: 2 }], 8);
    let mut bytes = std::fs::read(run.file.path()).unwrap();
    let path = dir.path().join("x.run");
    bytes[8] = 2;
    std::fs::write(&path, &bytes).unwrap();
    let e = read_all::<DocPair>(&path).unwrap_err();
    assert!(
        matches!(
            e,
            Error::UnsupportedFormatVersion {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{e}"
    );
    std::fs::write(&path, vec![b'x'; 200]).unwrap();
    let e = read_all::<DocPair>(&path).unwrap_err();
    assert!(matches!(e, Error::BadMagic { offset: 0, .. }), "{e}");
}

#[test]
fn run_files_are_named_and_deleted_with_their_guard() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_run(dir.path(), &keydocs(5), 2);
    let path = run.file.path().to_path_buf();
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(run_file_pid(&name), Some(std::process::id()), "{name}");
    assert!(name.starts_with(&format!("sort-{}-", std::process::id())) && name.ends_with(".run"));
    assert!(path.exists());
    drop(run);
    assert!(!path.exists());
    // A writer abandoned halfway (an error while spilling) also leaves nothing.
    let mut w = RunWriter::<KeyDoc>::with_block_records(dir.path(), 2).unwrap();
    for r in keydocs(5) {
        w.push(&r).unwrap();
    }
    drop(w);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn stale_runs_of_dead_processes_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    // u32::MAX is above every OS's pid limit, so that "process" is surely dead.
    for n in ["sort-4294967295-0.run", "sort-4294967295-17.run"] {
        std::fs::write(p(n), b"leftover").unwrap();
    }
    let mine = format!("sort-{}-999999999.run", std::process::id());
    for n in [
        mine.as_str(),
        "sort-1-x.run",
        "sort-abc-1.run",
        "notes.txt",
        "sort-4294967295-1.tmp",
    ] {
        std::fs::write(p(n), b"keep").unwrap();
    }
    assert_eq!(remove_stale_runs(dir.path()).unwrap(), 2);
    assert!(!p("sort-4294967295-0.run").exists() && !p("sort-4294967295-17.run").exists());
    for n in [
        mine.as_str(),
        "sort-1-x.run",
        "sort-abc-1.run",
        "notes.txt",
        "sort-4294967295-1.tmp",
    ] {
        assert!(p(n).exists(), "{n} must be kept");
    }
    assert_eq!(remove_stale_runs(&dir.path().join("missing")).unwrap(), 0);
}

#[test]
fn run_file_names_parse_strictly() {
    assert_eq!(run_file_pid("sort-12-3.run"), Some(12));
    for bad in [
        "sort-12-3.run.bak",
        "sort--3.run",
        "sort-12-.run",
        "sort-12.run",
        "xsort-1-2.run",
        "sort-99999999999-1.run",
    ] {
        assert_eq!(run_file_pid(bad), None, "{bad}");
    }
}
