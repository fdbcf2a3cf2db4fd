//! Bad input never loses the rest of a batch: each bad document gets a clear error (key and
//! reason) in the report and on stderr, the good ones are indexed, and `--strict` turns any of
//! them into a failed batch with nothing published.

use std::io::Write;
use std::path::Path;

use crate::common::*;

const GOOD: &str = "<html><body><p>the quick brown fox jumps over the lazy dog again and again \
                    while the cat sleeps on the warm mat near the door</p></body></html>";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn warc_record(uri: &str, body: &str) -> String {
    let http = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{body}");
    format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        http.len()
    )
}

/// A folder with one good page and one of each kind of bad input.
fn bad_inputs(dir: &Path) {
    let w = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    w("good.html", GOOD.as_bytes());
    w(
        "binary.html",
        &[0u8, 159, 146, 150, 0, 1, 2, 3, 255, 254, 0, 0],
    );
    w("empty.html", b"");
    w("blank.txt", b"   \n\t  \n");
    w("markup-only.html", b"<html><body><div></div></body></html>");
    // Invalid UTF-8 in an otherwise fine page: decoded with replacement, indexed.
    let mut bad_utf8 = GOOD.as_bytes().to_vec();
    bad_utf8.splice(20..20, [0xC3u8, 0x28, 0xFF]);
    w("latin.html", &bad_utf8);
    // A windows-1252 page declaring its charset.
    let mut cp1252 = b"<html><head><meta charset=\"windows-1252\"></head><body>caf".to_vec();
    cp1252.extend_from_slice(&[0xE9]);
    cp1252.extend_from_slice(b" au lait and more words here to make shingles</body></html>");
    w("cp1252.html", &cp1252);
    // Deeply nested and unclosed HTML.
    let nested = format!(
        "<html><body>{}deep words inside many divs{}",
        "<div>".repeat(100_000),
        "<p><b><i>unclosed"
    );
    w("nested.html", nested.as_bytes());
    // Truncated gzip.
    let gz = gzip(GOOD.as_bytes());
    w("truncated.html.gz", &gz[..gz.len() / 2]);
    // A WARC with a good record, a truncated one at the end.
    let mut warc = warc_record("http://example.com/a", GOOD);
    let second = warc_record(
        "http://example.com/b",
        "<html><body>second page text here</body></html>",
    );
    warc.push_str(&second[..second.len() - 30]);
    w("crawl.warc", warc.as_bytes());
    // JSONL with a malformed line between two good ones and a line without content.
    w(
        "docs.jsonl",
        format!(
            "{{\"id\": \"j1\", \"html\": {}}}\nthis is not json\n{{\"id\": \"j2\"}}\n{{\"id\": \"j3\", \"text\": \"plain text document with several words in it\"}}\n",
            serde_json::to_string(GOOD).unwrap()
        )
        .as_bytes(),
    );
}

#[test]
fn bad_documents_are_reported_and_the_rest_is_indexed() {
    let tmp = temp_dir("bad-input");
    let docs = tmp.path().join("docs");
    bad_inputs(&docs);
    let idx = TestIndex::at(tmp.path().join("idx"));
    let report = tmp.path().join("report.jsonl");
    let out = idx.run(&[
        "ingest",
        "--json",
        "--report",
        report.to_str().unwrap(),
        docs.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = report_lines(&report);
    let status = |key: &str| -> String {
        let l = lines
            .iter()
            .find(|l| l["key"] == key)
            .unwrap_or_else(|| panic!("no report line for {key}: {lines:?}"));
        l["status"].as_str().unwrap().to_owned()
    };
    for key in [
        "good.html",
        "latin.html",
        "cp1252.html",
        "nested.html",
        "j1",
        "j3",
        "http://example.com/a",
    ] {
        assert_eq!(status(key), "new", "{key} should be indexed");
    }
    for key in ["binary.html", "empty.html", "blank.txt", "markup-only.html"] {
        assert_eq!(status(key), "error", "{key} should be rejected");
        assert!(
            stderr.contains(key),
            "stderr does not name {key}:\n{stderr}"
        );
    }
    // Truncated gzip, the truncated WARC record and the malformed JSONL lines are errors
    // with a reason, whatever key the reader could give them.
    let errors: Vec<&serde_json::Value> = lines.iter().filter(|l| l["status"] == "error").collect();
    assert!(errors
        .iter()
        .all(|l| !l["error"].as_str().unwrap().is_empty()));
    assert!(
        errors
            .iter()
            .any(|l| l["key"].as_str().unwrap().contains("truncated.html")),
        "{errors:?}"
    );
    assert!(errors.len() >= 4 + 1 + 1 + 2, "too few errors: {errors:?}");
    let summary = parse_json(&stdout(&out));
    assert_eq!(summary["errors"].as_u64().unwrap(), errors.len() as u64);
    assert_eq!(summary["added"].as_u64().unwrap(), 7);
    // The indexed documents answer queries.
    let stats = idx.stats();
    assert_eq!(stats["documents"], 7);
    // cp1252 was decoded with its declared charset: "café" is one word.
    let q = tmp.path().join("q.txt");
    std::fs::write(&q, "café au lait and more words here to make shingles").unwrap();
    let ans = idx.query(&[&q], &["--threshold", "0.9"]);
    assert_eq!(ans.len(), 1);
    assert_eq!(ans[0]["hits"][0]["key"], "cp1252.html", "{ans:?}");
}

#[test]
fn strict_mode_publishes_nothing() {
    let tmp = temp_dir("bad-strict");
    let docs = tmp.path().join("docs");
    bad_inputs(&docs);
    let idx = TestIndex::at(tmp.path().join("idx"));
    let out = idx.run_raw(&["ingest", "--strict", docs.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("document"), "{err}");
    let stats = idx.stats();
    assert_eq!(stats["documents"], 0);
    assert_eq!(stats["batches"], 0);
    assert!(
        std::fs::read_dir(idx.path().join("segments"))
            .unwrap()
            .next()
            .is_none(),
        "a segment file was left"
    );
    // The same batch without --strict then goes through.
    idx.ingest(&[&docs], &[]);
}

#[test]
fn duplicate_keys_within_and_across_batches() {
    let tmp = temp_dir("dup-keys");
    let idx = TestIndex::at(tmp.path().join("idx"));
    let a = tmp.path().join("a.jsonl");
    std::fs::write(
        &a,
        "{\"id\": \"k1\", \"text\": \"one two three four five six seven\"}\n{\"id\": \"k1\", \"text\": \"a different text for the same key\"}\n{\"id\": \"k2\", \"text\": \"eight nine ten eleven twelve thirteen\"}\n",
    )
    .unwrap();
    let l = idx.ingest_report(&[&a], &[]);
    assert_eq!(
        l.iter()
            .filter(|l| l["key"] == "k1" && l["status"] == "new")
            .count(),
        1
    );
    assert!(l.iter().any(|l| l["key"] == "k1" && l["status"] == "error"));
    // Across batches: same text -> unchanged, other text -> replaced (old version deleted).
    let b = tmp.path().join("b.jsonl");
    std::fs::write(
        &b,
        "{\"id\": \"k1\", \"text\": \"one two three four five six seven\"}\n{\"id\": \"k2\", \"text\": \"eight nine ten eleven twelve thirteen fourteen\"}\n",
    )
    .unwrap();
    let l = idx.ingest_report(&[&b], &[]);
    let st = |k: &str| {
        l.iter().find(|l| l["key"] == k).unwrap()["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(st("k1"), "unchanged");
    assert_eq!(st("k2"), "replaced");
    let stats = idx.stats();
    assert_eq!(stats["documents"], 2, "{stats}");
    assert_eq!(stats["deleted"], 1, "{stats}");
    // Re-running a batch by name does nothing.
    let out = idx.stdout(&["ingest", "--batch", "batch-000002", b.to_str().unwrap()]);
    assert!(out.contains("ingested already"), "{out}");
}

#[test]
fn unreadable_and_missing_inputs_are_per_document_errors() {
    let tmp = temp_dir("unreadable");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("ok.html"), GOOD).unwrap();
    let idx = TestIndex::at(tmp.path().join("idx"));
    let missing = tmp.path().join("does-not-exist.html");
    let rep = tmp.path().join("r.jsonl");
    let out = idx.run(&[
        "ingest",
        "--report",
        rep.to_str().unwrap(),
        docs.to_str().unwrap(),
        missing.to_str().unwrap(),
    ]);
    let l = report_lines(&rep);
    assert!(
        l.iter().any(
            |l| l["status"] == "error" && l["key"].as_str().unwrap().contains("does-not-exist")
        ),
        "{l:?}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("does-not-exist"));
    assert!(l
        .iter()
        .any(|l| l["key"] == "ok.html" && l["status"] == "new"));
}

#[test]
fn oversized_documents_are_rejected_and_large_ones_indexed() {
    let tmp = temp_dir("oversized");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let big = format!(
        "<html><body>{}</body></html>",
        "<p>lorem ipsum dolor sit amet consectetur</p>\n".repeat(40_000)
    );
    assert!(big.len() > 1 << 20 && big.len() < 3 << 20);
    std::fs::write(docs.join("big.html"), &big).unwrap();
    std::fs::write(docs.join("ok.html"), GOOD).unwrap();
    let idx = TestIndex::at(tmp.path().join("idx"));
    let ingest = |limit: &str| idx.ingest_report(&[&docs], &["--max-doc-bytes", limit]);
    let l = ingest("1MiB");
    let big_line = l.iter().find(|l| l["key"] == "big.html").unwrap();
    assert_eq!(big_line["status"], "error");
    assert!(
        big_line["error"].as_str().unwrap().contains("large")
            || big_line["error"].as_str().unwrap().contains("limit"),
        "{big_line}"
    );
    assert!(l
        .iter()
        .any(|l| l["key"] == "ok.html" && l["status"] == "new"));
    // With the default limit (256 MiB) the same document is indexed.
    let l = ingest("256MiB");
    assert_eq!(
        l.iter().find(|l| l["key"] == "big.html").unwrap()["status"],
        "new"
    );
}

#[test]
fn conflicting_creation_option_is_a_clear_error() {
    let tmp = temp_dir("conflict");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("a.html"), GOOD).unwrap();
    let idx = TestIndex::at(tmp.path().join("idx"));
    idx.ingest(&[&docs], &["--shingle-words", "5"]);
    let out = idx.run_raw(&["ingest", "--shingle-words", "8", docs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("words:5") && err.contains("words:8"), "{err}");
    // The same value again is fine (and "0.80" equals "0.8").
    idx.ingest(&[&docs], &["--cluster-threshold", "0.80"]);
}
