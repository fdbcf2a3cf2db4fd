//! `pairs` from the stored pairs (format-spec/rocksdb.md, "`pairs`: stored pairs") through the
//! CLI: after ingests with near-duplicates, a batch failing between staging and publishing
//! (`NDD_FAILPOINT`), a re-ingest with replacements and unchanged pages, deletes, online adds
//! and a full compaction, `pairs --threshold T` (auto) prints byte for byte what
//! `--matching join` prints, as text and as `--json`, at T = 0.8, 0.9 and 1.0, and `--stats`
//! says the store answered; below the cluster threshold the matching answers. `verify` passes.

use std::path::Path;

use crate::common::*;

/// `pairs` at each threshold: auto's stdout equals the join's, text and JSON; returns the
/// number of text lines at the first threshold.
fn same_as_join(ix: &TestIndex, ts: &[&str], source: &str, step: &str) -> usize {
    let mut first = None;
    for t in ts {
        for json in [false, true] {
            let mut a = vec!["pairs", "--threshold", t, "--stats"];
            if json {
                a.push("--json");
            }
            let auto = ix.run(&a);
            let mut j = a.clone();
            j.extend(["--matching", "join"]);
            let join = ix.run(&j);
            assert_eq!(
                String::from_utf8_lossy(&auto.stdout),
                String::from_utf8_lossy(&join.stdout),
                "{step}: T={t} json={json}: stored vs join"
            );
            let stats = String::from_utf8_lossy(&auto.stderr);
            assert!(
                stats.contains(&format!("\"source\":\"{source}\"")),
                "{step}: T={t}: {stats}"
            );
            first.get_or_insert(auto.stdout.split(|&b| b == b'\n').count() - 1);
        }
    }
    let (code, v) = ix.verify_status();
    assert_eq!(code, Some(0), "{step}: verify: {v}");
    first.unwrap_or(0)
}

fn rewrite(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, text.replacen(from, to, 3)).unwrap();
}

#[test]
fn stored_pairs_print_what_the_join_prints_through_a_lifecycle() {
    let tmp = temp_dir("stored-pairs");
    let root = tmp.path();
    let ix = TestIndex::at(root.join("idx"));
    let ts = ["0.8", "0.9", "1.0"];
    let a = root.join("a");
    write_corpus(&a, 60, 1);
    let b = root.join("b");
    write_corpus(&b, 40, 2);
    let dir_arg = |p: &Path| p.to_str().unwrap().to_owned();

    ix.run(&["ingest", "--quiet", "--batch", "a", &dir_arg(&a)]);
    let n = same_as_join(&ix, &ts, "stored", "a");
    assert!(n > 10, "too few pairs to compare ({n})");

    // A batch failing after its documents were staged publishes nothing, pairs included.
    let failed = ix
        .cmd(&["ingest", "--quiet", "--batch", "b", &dir_arg(&b)])
        .env("NDD_FAILPOINT", "segment.sync:1")
        .output()
        .unwrap();
    assert!(!failed.status.success());
    assert_eq!(same_as_join(&ix, &ts, "stored", "failed b"), n);
    ix.run(&["ingest", "--quiet", "--batch", "b", &dir_arg(&b)]);
    same_as_join(&ix, &ts, "stored", "b");

    // Batch a again with a few pages changed: replacements (the old versions' pairs must go)
    // and unchanged pages; plus pages of b under new keys (exact duplicates).
    for i in [0, 1, 5, 9] {
        rewrite(&a.join(format!("doc-{i:04}.html")), "w", "x");
    }
    let c = root.join("c");
    std::fs::create_dir_all(&c).unwrap();
    for i in [0, 1, 2, 3] {
        let name = format!("doc-{i:04}.html");
        std::fs::copy(b.join(&name), c.join(format!("copy-{name}"))).unwrap();
    }
    ix.run(&["ingest", "--quiet", "--batch", "a2", &dir_arg(&a)]);
    ix.run(&["ingest", "--quiet", "--batch", "c", &dir_arg(&c)]);
    same_as_join(&ix, &ts, "stored", "replacements");

    // Deletes: the first pair's documents.
    let pairs = ix.pairs("0.8");
    let (k1, k2) = (pairs[0].0.clone(), pairs[pairs.len() / 2].1.clone());
    ix.delete(&[k1.as_str(), k2.as_str()]);
    same_as_join(&ix, &ts, "stored", "deletes");

    // Online adds: near-duplicates of b's pages, through the delta.
    let d = root.join("d");
    std::fs::create_dir_all(&d).unwrap();
    let mut files = Vec::new();
    for i in [4, 8] {
        let to = d.join(format!("add-{i}.html"));
        std::fs::copy(b.join(format!("doc-{i:04}.html")), &to).unwrap();
        rewrite(&to, "w1", "y1");
        files.push(dir_arg(&to));
    }
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    ix.add(&files, &[]);
    same_as_join(&ix, &ts, "stored", "adds");

    // A full compaction (folds the delta, drops deleted documents; doc ids stay).
    ix.compact(&["--full"]);
    same_as_join(&ix, &ts, "stored", "compaction");

    // Below the cluster threshold, and with a limit for the run, the matching answers.
    same_as_join(&ix, &["0.7"], "matching", "below");
    let limited = ix.run(&["pairs", "--threshold", "0.9", "--max-df", "5", "--stats"]);
    assert!(String::from_utf8_lossy(&limited.stderr).contains("\"source\":\"matching\""));
}
