//! Crash safety of the other writers: `add` (with a fold of the delta), `delete` and
//! `compact --full` (which folds the delta first), each killed with SIGKILL at a random moment.
//! After every kill the index opens, `verify` passes, the operation is entirely there or not at
//! all, every acknowledged document (an earlier `add` that exited 0) is still live, and
//! re-running the operation gives the answers of an uninterrupted run, with no orphan files.
//! Rounds: `NDD_CRASH_OPS_ROUNDS` (default 48, spread over the three operations; the ingest
//! rounds of `crash_kill.rs` come on top).

mod common;
mod lifecycle;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use lifecycle::*;

const BIN: &str = env!("CARGO_BIN_EXE_ndd-index");

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn keys(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("doc-{i:04}.html")).collect()
}

/// The arguments of one operation on `idx` (files are relative to the corpus dir, the cwd).
fn op_args(op: usize, idx: &Path) -> Vec<String> {
    let mut a: Vec<String> = match op {
        // 8 documents (two planted clusters) into a delta of 8: passes --fold-docs 12, folds.
        0 => vec![
            "add".into(),
            "--batch".into(),
            "add-x".into(),
            "--fold-docs".into(),
            "12".into(),
        ],
        1 => vec!["delete".into()],
        _ => vec!["compact".into(), "--full".into()],
    };
    a.extend(["--index".into(), s(idx)]);
    match op {
        0 => a.extend(keys(128..136)),
        1 => a.extend(
            [
                "doc-0001.html",
                "doc-0004.html",
                "doc-0005.html",
                "doc-0121.html",
                "doc-0124.html",
            ]
            .map(String::from),
        ),
        _ => {}
    }
    a
}

fn run_op(op: usize, idx: &Path, corpus: &Path) -> bool {
    Command::new(BIN)
        .args(op_args(op, idx))
        .current_dir(corpus)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Live documents among `keys`.
fn live(idx: &Path, keys: &[String]) -> usize {
    let index = ndd_index::Index::open(idx).unwrap();
    keys.iter()
        .filter(|k| {
            index
                .catalog()
                .doc_by_key(k)
                .unwrap()
                .is_some_and(|d| index.view().is_live(d))
        })
        .count()
}

fn pairs(idx: &Path) -> String {
    stdout(&ndd(&["pairs", "--index", &s(idx), "--threshold", "0.5"]))
        + &stdout(&ndd(&["clusters", "--index", &s(idx)]))
}

fn assert_verifies(idx: &Path, what: &str) {
    let out = ndd_raw(&["verify", "--index", &s(idx)]);
    assert!(
        out.status.success(),
        "{what}: verify failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn no_orphans(idx: &Path, what: &str) {
    let files = std::fs::read_dir(idx.join("segments")).unwrap().count();
    let m = ndd_index::Index::open(idx)
        .unwrap()
        .catalog()
        .manifest()
        .unwrap();
    assert_eq!(files, m.segments.len(), "{what}: orphan segment files");
}

#[test]
fn killed_adds_deletes_and_compactions_keep_the_index_whole() {
    let rounds: u64 = std::env::var("NDD_CRASH_OPS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let tmp = temp_dir("crash-ops");
    let corpus = tmp.path().join("c");
    write_corpus(&corpus, 140, 11);
    let first = tmp.path().join("first");
    std::fs::create_dir_all(&first).unwrap();
    for k in keys(0..120) {
        std::fs::copy(corpus.join(&k), first.join(&k)).unwrap();
    }
    // The base: one ingested batch, then 8 acknowledged adds in the delta.
    let base = tmp.path().join("base");
    ndd(&["ingest", "--quiet", "--index", &s(&base), &s(&first)]);
    let acked = keys(120..128);
    for pair in acked.chunks(2) {
        let st = Command::new(BIN)
            .args(["add", "--index", &s(&base), &pair[0], &pair[1]])
            .current_dir(&corpus)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    assert_eq!(live(&base, &acked), 8);
    let base_pairs = pairs(&base);

    // Uninterrupted reference of each operation, and how long it takes.
    let mut want = Vec::new();
    let mut took = Vec::new();
    for op in 0..3 {
        let r = tmp.path().join(format!("ref{op}"));
        copy_dir(&base, &r);
        let t0 = Instant::now();
        assert!(run_op(op, &r, &corpus), "reference op {op} failed");
        took.push((t0.elapsed().as_millis() as u64).max(5));
        assert_verifies(&r, "reference");
        want.push(pairs(&r));
    }
    assert_eq!(want[2], base_pairs, "compaction changed an answer");
    assert_ne!(want[0], base_pairs, "the add should bring near-duplicates");
    assert_ne!(want[1], base_pairs, "the delete should remove pairs");

    let added = keys(128..136);
    let deleted: Vec<String> = op_args(1, Path::new("x"))[3..].to_vec();
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut killed = [0u64; 3];
    for round in 0..rounds {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let op = round as usize % 3;
        let what = format!("round {round} (op {op})");
        let idx: PathBuf = tmp.path().join(format!("r{round}"));
        copy_dir(&base, &idx);
        let delay = (seed >> 33) % (took[op] * 12 / 10 + 1);
        let mut child = Command::new(BIN)
            .args(op_args(op, &idx))
            .current_dir(&corpus)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        let finished = match child.try_wait().unwrap() {
            Some(st) => {
                assert!(st.success(), "{what}: the operation failed");
                true
            }
            None => {
                child.kill().unwrap(); // SIGKILL
                killed[op] += 1;
                false
            }
        };
        let _ = child.wait();

        // Opens, verifies, holds the operation whole or not at all, lost no acknowledged doc.
        assert_verifies(&idx, &what);
        // (the delete removes two of them on purpose: those are checked with its victims)
        let kept: Vec<String> = acked
            .iter()
            .filter(|k| op != 1 || !deleted.contains(k))
            .cloned()
            .collect();
        assert_eq!(
            live(&idx, &kept),
            kept.len(),
            "{what}: an acknowledged add was lost"
        );
        match op {
            0 => {
                let n = live(&idx, &added);
                assert!(n == 0 || n == 8, "{what}: {n} of 8 added documents visible");
                assert!(!finished || n == 8, "{what}: a finished add is not visible");
            }
            1 => {
                let n = live(&idx, &deleted);
                assert!(
                    n == 0 || n == 5,
                    "{what}: {n} of 5 deleted documents still live"
                );
                assert!(
                    !finished || n == 0,
                    "{what}: a finished delete is not visible"
                );
            }
            _ => assert_eq!(
                pairs(&idx),
                base_pairs,
                "{what}: a killed compaction changed an answer"
            ),
        }
        // Re-running converges on the uninterrupted answers, with no orphan files left.
        assert!(run_op(op, &idx, &corpus), "{what}: re-run failed");
        assert_verifies(&idx, &what);
        assert_eq!(
            pairs(&idx),
            want[op],
            "{what}: answers differ from the uninterrupted run"
        );
        no_orphans(&idx, &what);
        std::fs::remove_dir_all(&idx).unwrap();
    }
    eprintln!("crash rounds: {rounds}; killed mid-add/delete/compact: {killed:?}");
    let total: u64 = killed.iter().sum();
    assert!(
        total >= rounds / 4,
        "too few kills landed mid-operation ({killed:?} of {rounds})"
    );
}
