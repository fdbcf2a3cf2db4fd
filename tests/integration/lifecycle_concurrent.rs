//! Readers keep answering while a writer ingests and compacts: every answer a reader gets
//! equals the answer of some published state (after 0, 1, ..., n batches, or after the
//! compaction), never a mix. A second writer is refused with exit code 4 naming the holder.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::*;
use ndd_index::canonicalize::DocFormat;
use ndd_index::query::QueryOptions;
use ndd_index::{Error, Index};

const BATCHES: usize = 4;

/// Batch `b` holds 600 filler pages and 3 edits of the query page (so each batch changes the
/// query's answer).
fn write_corpus(dir: &Path, query: &str) {
    let mut x: u64 = 0x1234_5678_9ABC_DEF1;
    let mut word = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        format!("v{}", x % 5000)
    };
    for b in 0..BATCHES {
        let d = dir.join(format!("b{b}"));
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..600 {
            let body: Vec<String> = (0..120).map(|_| word()).collect();
            std::fs::write(
                d.join(format!("f{b}-{i}.html")),
                format!("<body><p>{}</p></body>", body.join(" ")),
            )
            .unwrap();
        }
        for e in 0..3 {
            let edited = query.replacen("alpha", &format!("edit{b}x{e}"), 1 + e);
            std::fs::write(
                d.join(format!("q{b}-{e}.html")),
                format!("<body><p>{edited}</p></body>"),
            )
            .unwrap();
        }
    }
}

type Answer = BTreeMap<String, String>; // key -> resemblance printed to 6 decimals

fn answer(idx: &Path, query: &[u8]) -> Result<Answer, Error> {
    let index = Index::open(idx)?;
    let opts = QueryOptions {
        threshold: "0.3".parse().unwrap(),
        top: 0,
        max_df: None,
    };
    let ans = index.query_document("q", query, DocFormat::Html, None, &opts)?;
    Ok(ans
        .hits
        .into_iter()
        .map(|h| (h.key, format!("{:.6}", h.resemblance)))
        .collect())
}

/// `ingest --quiet --batch nB DIR/bB`, not started.
fn ingest_cmd(idx: &TestIndex, dir: &Path, b: usize) -> std::process::Command {
    let input = dir.join(format!("b{b}"));
    idx.cmd(&[
        "ingest",
        "--quiet",
        "--batch",
        &format!("n{b}"),
        input.to_str().unwrap(),
    ])
}

fn ingest(idx: &TestIndex, dir: &Path, b: usize) -> std::process::Output {
    ingest_cmd(idx, dir, b).output().unwrap()
}

#[test]
fn readers_see_whole_publishes_while_ingest_and_compaction_run() {
    let tmp = temp_dir("concurrent");
    let query_text: String = (0..200)
        .map(|i| {
            if i % 17 == 0 {
                "alpha".to_string()
            } else {
                format!("q{i}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    write_corpus(tmp.path(), &query_text);
    let query = format!("<body><p>{query_text}</p></body>").into_bytes();

    // Reference answers after each batch, from an index built without readers.
    let reference = TestIndex::at(tmp.path().join("reference"));
    let mut valid: BTreeSet<Answer> = BTreeSet::new();
    for b in 0..BATCHES {
        assert!(ingest(&reference, tmp.path(), b).status.success());
        valid.insert(answer(reference.path(), &query).unwrap());
    }
    assert_eq!(valid.len(), BATCHES, "each batch should change the answer");

    let idx = TestIndex::at(tmp.path().join("live"));
    let done = AtomicBool::new(false);
    let (answers, refused) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut n = 0usize;
            while !done.load(Ordering::Acquire) {
                match answer(idx.path(), &query) {
                    Ok(a) => {
                        assert!(
                            a.is_empty() || valid.contains(&a),
                            "a reader saw a state that was never published: {a:?}"
                        );
                        n += 1;
                    }
                    Err(Error::NotAnIndex { .. }) => {} // before the first publish
                    Err(e) => panic!("reader failed: {e}"),
                }
            }
            n
        });
        // Stop the reader however this closure ends (a failed assertion must not hang).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let _stop = Stop(&done);
        let mut refused = 0;
        for b in 0..BATCHES {
            // Two writers race for the same batch: whichever loses while the other holds the
            // lock is refused with exit code 4 naming the holder; the other publishes the
            // batch (or finds it published already).
            let child = ingest_cmd(&idx, tmp.path(), b)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let second = ingest(&idx, tmp.path(), b);
            let first = child.wait_with_output().unwrap();
            let mut ok = 0;
            for out in [&first, &second] {
                if out.status.success() {
                    ok += 1;
                } else {
                    assert_eq!(
                        out.status.code(),
                        Some(4),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let err = String::from_utf8_lossy(&out.stderr);
                    assert!(err.contains("locked by another writer"), "{err}");
                    refused += 1;
                }
            }
            if ok == 0 {
                // Both lost to each other's short-lived lock: publish the batch now.
                assert!(ingest(&idx, tmp.path(), b).status.success());
            }
        }
        idx.compact(&["--full"]);
        drop(_stop);
        (reader.join().unwrap(), refused)
    });
    eprintln!("reader answers checked: {answers}; second writers refused: {refused}");
    assert!(answers > 0);
    assert_eq!(
        answer(idx.path(), &query).unwrap(),
        answer(reference.path(), &query).unwrap()
    );
}
