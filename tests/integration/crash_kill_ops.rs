//! Crash safety of the other writers: `add` (with a fold of the delta), `delete` and
//! `compact --full` (which folds the delta first), each killed with SIGKILL at a random moment.
//! After every kill the index opens, `verify` passes, the operation is entirely there or not at
//! all, every acknowledged document (an earlier `add` that exited 0) is still live, and
//! re-running the operation gives the answers of an uninterrupted run, with no orphan files.
//! Rounds: `NDD_CRASH_OPS_ROUNDS` (default 48, spread over the three operations; the ingest
//! rounds of `crash_kill.rs` come on top).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

fn keys(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("doc-{i:04}.html")).collect()
}

/// The arguments of one operation (files are relative to the corpus dir, the cwd).
fn op_args(op: usize) -> Vec<String> {
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

/// `ndd-index` running operation `op` on `idx` from the corpus dir, not started.
fn op_cmd(op: usize, idx: &TestIndex, corpus: &Path) -> std::process::Command {
    let a = op_args(op);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    idx.in_dir(corpus).cmd(&a)
}

fn run_op(op: usize, idx: &TestIndex, corpus: &Path) -> bool {
    op_cmd(op, idx, corpus)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Live documents among `keys`.
fn live(idx: &TestIndex, keys: &[String]) -> usize {
    let index = ndd_index::Index::open(idx.path()).unwrap();
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

/// The answers compared across kills: pairs at 0.5 and the clusters kept at ingest.
fn answers(idx: &TestIndex) -> (Vec<Pair>, Vec<Cluster>) {
    (idx.pairs("0.5"), idx.clusters())
}

fn assert_verifies(idx: &TestIndex, what: &str) {
    let (code, v) = idx.verify_status();
    assert_eq!(code, Some(0), "{what}: verify failed: {v}");
}

fn no_orphans(idx: &TestIndex, what: &str) {
    let files = std::fs::read_dir(idx.path().join("segments"))
        .unwrap()
        .count();
    let m = ndd_index::Index::open(idx.path())
        .unwrap()
        .catalog()
        .manifest()
        .unwrap();
    assert_eq!(files, m.segments.len(), "{what}: orphan segment files");
}

#[test]
fn killed_adds_deletes_and_compactions_keep_the_index_whole() {
    let rounds = env_count("NDD_CRASH_OPS_ROUNDS", 48);
    let tmp = temp_dir("crash-ops");
    let corpus = tmp.path().join("c");
    write_corpus(&corpus, 140, 11);
    let first = tmp.path().join("first");
    std::fs::create_dir_all(&first).unwrap();
    for k in keys(0..120) {
        std::fs::copy(corpus.join(&k), first.join(&k)).unwrap();
    }
    // The base: one ingested batch, then 8 acknowledged adds in the delta.
    let base = TestIndex::at(tmp.path().join("base"));
    base.ingest(&[&first], &[]);
    let acked = keys(120..128);
    for pair in acked.chunks(2) {
        base.in_dir(&corpus).add(&[&pair[0], &pair[1]], &[]);
    }
    assert_eq!(live(&base, &acked), 8);
    let base_pairs = answers(&base);

    // Uninterrupted reference of each operation, and how long it takes.
    let mut want = Vec::new();
    let mut took = Vec::new();
    for op in 0..3 {
        let r = TestIndex::at(tmp.path().join(format!("ref{op}")));
        copy_dir(base.path(), r.path());
        let t0 = Instant::now();
        assert!(run_op(op, &r, &corpus), "reference op {op} failed");
        took.push((t0.elapsed().as_millis() as u64).max(5));
        assert_verifies(&r, "reference");
        want.push(answers(&r));
    }
    assert_eq!(want[2], base_pairs, "compaction changed an answer");
    assert_ne!(want[0], base_pairs, "the add should bring near-duplicates");
    assert_ne!(want[1], base_pairs, "the delete should remove pairs");

    let added = keys(128..136);
    let deleted: Vec<String> = op_args(1)[1..].to_vec();
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut killed = [0u64; 3];
    for round in 0..rounds {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let op = round as usize % 3;
        let what = format!("round {round} (op {op})");
        let idx = TestIndex::at(tmp.path().join(format!("r{round}")));
        copy_dir(base.path(), idx.path());
        let delay = (seed >> 33) % (took[op] * 12 / 10 + 1);
        let mut child = op_cmd(op, &idx, &corpus)
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
                answers(&idx),
                base_pairs,
                "{what}: a killed compaction changed an answer"
            ),
        }
        // Re-running converges on the uninterrupted answers, with no orphan files left.
        assert!(run_op(op, &idx, &corpus), "{what}: re-run failed");
        assert_verifies(&idx, &what);
        assert_eq!(
            answers(&idx),
            want[op],
            "{what}: answers differ from the uninterrupted run"
        );
        no_orphans(&idx, &what);
        std::fs::remove_dir_all(idx.path()).unwrap();
    }
    eprintln!("crash rounds: {rounds}; killed mid-add/delete/compact: {killed:?}");
    let total: u64 = killed.iter().sum();
    assert!(
        total >= rounds / 4,
        "too few kills landed mid-operation ({killed:?} of {rounds})"
    );
}
