//! Crash safety: an ingest killed with SIGKILL at a random moment leaves an index that opens,
//! answers, and holds each batch either completely or not at all; re-running the batches then
//! gives exactly the index an uninterrupted run gives (no acknowledged document lost, nothing
//! half-published). Rounds: `NDD_CRASH_ROUNDS` (default 100).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::*;

/// Writes `n` synthetic pages per batch into `dir/b<i>`: random words from a small vocabulary
/// plus shared boilerplate, every fourth page a light edit of the previous one.
fn write_batches(dir: &Path, batches: usize, n: usize) {
    let vocab: Vec<String> = (0..2000).map(|i| format!("w{i}x")).collect();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut prev = String::new();
    for b in 0..batches {
        let bd = dir.join(format!("b{b}"));
        std::fs::create_dir_all(&bd).unwrap();
        for i in 0..n {
            let body = if i % 4 == 3 {
                prev.replacen("w1", "zz", 2)
            } else {
                (0..150)
                    .map(|_| vocab[(next() % 2000) as usize].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let html = format!(
                "<html><body><nav>home docs blog about contact</nav><p>{body}</p></body></html>"
            );
            std::fs::write(bd.join(format!("p{b}-{i:04}.html")), html).unwrap();
            prev = body;
        }
    }
}

#[test]
fn killed_ingests_publish_whole_batches_or_nothing() {
    let rounds = env_count("NDD_CRASH_ROUNDS", 100);
    let tmp = temp_dir("crash");
    let (batches, per_batch) = (3, 120);
    write_batches(tmp.path(), batches, per_batch);
    // `ingest --quiet --batch night-B DIR/bB`, not started.
    let ingest = |idx: &TestIndex, b: usize| {
        let dir = tmp.path().join(format!("b{b}"));
        idx.cmd(&[
            "ingest",
            "--quiet",
            "--batch",
            &format!("night-{b}"),
            dir.to_str().unwrap(),
        ])
    };

    // The uninterrupted reference, and how long one batch takes (to spread the kills over it).
    let reference = TestIndex::at(tmp.path().join("reference"));
    let t0 = std::time::Instant::now();
    for b in 0..batches {
        let st = ingest(&reference, b).status().unwrap();
        assert!(st.success());
    }
    // Re-measured every round from the uninterrupted ingests of that round (the machine's load,
    // and the sibling tests of this binary, change how long an ingest takes).
    let mut per_batch_ms = (t0.elapsed().as_millis() as u64 / batches as u64).max(5);
    let want_pairs = reference.pairs("0.5");
    assert!(
        want_pairs.len() > 10,
        "the corpus should have near-duplicates"
    );

    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let (mut killed, mut completed) = (0, 0);
    for round in 0..rounds {
        let idx = TestIndex::at(tmp.path().join(format!("r{round}")));
        // Batches before the victim complete normally; the victim is killed at a random moment.
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let victim = (seed >> 33) as usize % batches;
        // Uninterrupted full ingests of this round (batches before and after the victim), ms.
        let mut took = Vec::new();
        for b in 0..victim {
            let t = std::time::Instant::now();
            assert!(ingest(&idx, b).status().unwrap().success());
            took.push(t.elapsed().as_millis() as u64);
        }
        let delay = (seed >> 40) % (per_batch_ms * 12 / 10 + 1);
        let mut child = ingest(&idx, victim)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        match child.try_wait().unwrap() {
            Some(_) => completed += 1,
            None => {
                child.kill().unwrap(); // SIGKILL
                killed += 1;
            }
        }
        let _ = child.wait();

        // The index opens and holds whole batches only. A kill while the very first batch
        // was creating the index may leave no index at all, which readers must say clearly.
        let probe = idx.run_raw(&["stats", "--json"]);
        if probe.status.success() {
            let s: serde_json::Value = serde_json::from_slice(&probe.stdout).unwrap();
            let docs = s["documents"].as_u64().unwrap();
            let nb = s["batches"].as_u64().unwrap();
            assert!(
                nb == victim as u64 || nb == victim as u64 + 1,
                "round {round}: {nb} batches after killing batch {victim}"
            );
            assert_eq!(
                docs,
                nb * per_batch as u64,
                "round {round}: a batch is partly visible: {s}"
            );
            idx.pairs("0.5"); // every published segment reads back without error
        } else {
            let err = String::from_utf8_lossy(&probe.stderr);
            assert_eq!(
                victim, 0,
                "round {round}: index unreadable after completed batches: {err}"
            );
            assert!(
                err.contains("not an ndd-index index"),
                "round {round}: unclear error: {err}"
            );
        }
        // Re-running every batch converges on the reference, and leaves no orphan file.
        for b in 0..batches {
            let t = std::time::Instant::now();
            assert!(ingest(&idx, b).status().unwrap().success());
            if b > victim {
                took.push(t.elapsed().as_millis() as u64);
            }
        }
        if !took.is_empty() {
            per_batch_ms = (took.iter().sum::<u64>() / took.len() as u64).max(5);
        }
        assert_eq!(
            idx.pairs("0.5"),
            want_pairs,
            "round {round}: pairs differ from the uninterrupted run"
        );
        let s = idx.stats();
        assert_eq!(
            s["documents"].as_u64().unwrap(),
            (batches * per_batch) as u64
        );
        let seg_files = std::fs::read_dir(idx.path().join("segments"))
            .unwrap()
            .count();
        assert_eq!(
            seg_files,
            s["segments"].as_array().unwrap().len(),
            "round {round}: orphan segment files"
        );
        std::fs::remove_dir_all(idx.path()).unwrap();
    }
    eprintln!(
        "crash rounds: {rounds}, killed mid-ingest {killed}, finished before the kill {completed}"
    );
    assert!(
        killed >= rounds / 3,
        "too few kills landed mid-ingest ({killed} of {rounds})"
    );
}
