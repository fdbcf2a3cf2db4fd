//! Tests of `read_inputs` over real files in a temporary directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

use super::*;

fn write(dir: &Path, rel: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, bytes).unwrap();
    p
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn read(paths: Vec<PathBuf>, opts: InputOptions) -> Vec<InputItem> {
    read_inputs(paths, opts).collect()
}

/// (key, content or "BAD: reason") per item.
fn summary(items: &[InputItem]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|i| match i {
            InputItem::Doc(d) => (
                d.key.clone(),
                String::from_utf8_lossy(&d.bytes).into_owned(),
            ),
            InputItem::Bad { key, reason, .. } => (key.clone(), format!("BAD: {reason}")),
        })
        .collect()
}

fn doc(items: &[InputItem], i: usize) -> &RawDoc {
    match &items[i] {
        InputItem::Doc(d) => d,
        other => panic!("item {i} is not a document: {other:?}"),
    }
}

fn warc_record(typ: &str, uri: &str, content_type: &str, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Target-URI: {uri}\r\nWARC-Record-ID: <urn:uuid:x>\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

fn http(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!("HTTP/1.1 200 OK\r\n{headers}\r\n").into_bytes();
    v.extend_from_slice(body);
    v
}

const HTTP_RESPONSE: &str = "application/http; msgtype=response";

#[test]
fn directory_keys_are_relative_and_sorted_bytewise() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "b.html", b"<p>b");
    write(t.path(), "a/b.txt", b"ab");
    write(t.path(), "a-c.txt", b"ac");
    write(t.path(), "a/z/deep.htm", b"<p>deep");
    write(t.path(), "README", b"<!DOCTYPE html><p>readme");
    let items = read(vec![t.path().to_path_buf()], InputOptions::default());
    let keys: Vec<&str> = items
        .iter()
        .map(|i| match i {
            InputItem::Doc(d) => d.key.as_str(),
            InputItem::Bad { key, .. } => key.as_str(),
        })
        .collect();
    assert_eq!(
        keys,
        ["README", "a-c.txt", "a/b.txt", "a/z/deep.htm", "b.html"]
    );
    assert_eq!(
        doc(&items, 0).format,
        DocFormat::Html,
        "sniffed from content"
    );
    assert_eq!(doc(&items, 1).format, DocFormat::Text);
    assert_eq!(doc(&items, 3).format, DocFormat::Html);
    assert_eq!(
        doc(&items, 3).origin,
        t.path().join("a/z/deep.htm").to_string_lossy()
    );
}

#[test]
fn files_named_directly_and_missing_paths() {
    let t = tempfile::tempdir().unwrap();
    let p = write(t.path(), "page.html", b"<p>x");
    let missing = t.path().join("nope.html");
    let items = read(vec![missing.clone(), p.clone()], InputOptions::default());
    assert_eq!(items.len(), 2);
    match &items[0] {
        InputItem::Bad { key, reason, .. } => {
            assert_eq!(key, &missing.to_string_lossy());
            assert!(reason.contains("No such file"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(doc(&items, 1).key, p.to_string_lossy());
}

#[test]
fn gzip_files_and_size_limits() {
    let t = tempfile::tempdir().unwrap();
    let good = write(t.path(), "page.html.gz", &gz(b"<p>zipped"));
    let mut cut = gz(b"<p>this gzip stream is cut short before its end");
    cut.truncate(cut.len() - 12);
    let truncated = write(t.path(), "cut.txt.gz", &cut);
    let big = write(t.path(), "big.txt", &[b'a'; 100]);
    let small = write(t.path(), "small.txt", b"ok");
    let opts = InputOptions {
        max_doc_bytes: 50,
        ..InputOptions::default()
    };
    let items = read(vec![good, truncated, big, small], opts);
    let s = summary(&items);
    assert_eq!(s[0].1, "<p>zipped");
    assert_eq!(doc(&items, 0).format, DocFormat::Html);
    assert!(
        s[1].1.starts_with("BAD: corrupt or truncated gzip"),
        "{}",
        s[1].1
    );
    assert!(s[2].1.starts_with("BAD: document too large"), "{}", s[2].1);
    assert_eq!(s[3].1, "ok");
}

#[test]
fn warc_response_resource_and_skipped_records() {
    let t = tempfile::tempdir().unwrap();
    let mut w = warc_record(
        "warcinfo",
        "",
        "application/warc-fields",
        b"software: test\r\n",
    );
    w.extend(warc_record(
        "request",
        "http://a/",
        "application/http; msgtype=request",
        b"GET / HTTP/1.1\r\n\r\n",
    ));
    w.extend(warc_record(
        "response",
        "http://a/",
        HTTP_RESPONSE,
        &http(
            "Content-Type: text/html; charset=ISO-8859-1\r\n",
            b"<p>caf\xe9",
        ),
    ));
    w.extend(warc_record(
        "resource",
        "file:///notes.txt",
        "text/plain",
        b"plain words",
    ));
    w.extend(warc_record(
        "response",
        "http://a/chunked",
        HTTP_RESPONSE,
        &http(
            "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\n",
            b"3\r\n<p>\r\n5\r\nhello\r\n0\r\n\r\n",
        ),
    ));
    w.extend(warc_record(
        "response",
        "http://a/gz",
        HTTP_RESPONSE,
        &http(
            "Content-Type: text/html\r\nContent-Encoding: gzip\r\n",
            &gz(b"<p>inflated"),
        ),
    ));
    w.extend(warc_record(
        "response",
        "http://a/img.png",
        HTTP_RESPONSE,
        &http("Content-Type: image/png\r\n", b"\x89PNG"),
    ));
    let path = write(t.path(), "crawl.warc", &w);
    let items = read(vec![path], InputOptions::default());
    let s = summary(&items);
    assert_eq!(s.len(), 5, "{s:?}");
    assert_eq!(
        s[0],
        ("http://a/".to_string(), "<p>caf\u{FFFD}".to_string())
    );
    let d = doc(&items, 0);
    assert_eq!(
        (d.format, d.charset.as_deref()),
        (DocFormat::Html, Some("ISO-8859-1"))
    );
    assert!(
        d.origin.contains("crawl.warc: record at offset"),
        "{}",
        d.origin
    );
    assert_eq!(
        s[1],
        ("file:///notes.txt".to_string(), "plain words".to_string())
    );
    assert_eq!(doc(&items, 1).format, DocFormat::Text);
    assert_eq!(s[2].1, "<p>hello");
    assert_eq!(s[3].1, "<p>inflated");
    assert_eq!(s[4].0, "http://a/img.png");
    assert!(s[4].1.starts_with("BAD: not a text document"), "{}", s[4].1);
}

#[test]
fn warc_gz_multi_member() {
    let t = tempfile::tempdir().unwrap();
    let mut w = gz(&warc_record("resource", "u1", "text/html", b"<p>one"));
    w.extend(gz(&warc_record("resource", "u2", "text/html", b"<p>two")));
    let path = write(t.path(), "x.warc.gz", &w);
    let s = summary(&read(vec![path], InputOptions::default()));
    assert_eq!(
        s,
        [
            ("u1".to_string(), "<p>one".to_string()),
            ("u2".to_string(), "<p>two".to_string())
        ]
    );
}

#[test]
fn warc_malformed_records_resync() {
    let t = tempfile::tempdir().unwrap();
    let mut w = warc_record("resource", "u1", "text/html", b"<p>one");
    w.extend_from_slice(b"garbage that is not a record\r\nmore garbage\r\n");
    w.extend(warc_record("resource", "u2", "text/html", b"<p>two"));
    w.extend_from_slice(b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: u3\r\n\r\n");
    w.extend(warc_record("resource", "u4", "text/html", b"<p>four"));
    let big = warc_record("resource", "u5", "text/html", &[b'x'; 200]);
    w.extend(big);
    w.extend(warc_record("resource", "u6", "text/html", b"<p>six"));
    let mut cut = warc_record("resource", "u7", "text/html", b"<p>this record is cut");
    cut.truncate(cut.len() - 10);
    w.extend(cut);
    let path = write(t.path(), "bad.warc", &w);
    let s = summary(&read(
        vec![path],
        InputOptions {
            max_doc_bytes: 100,
            ..InputOptions::default()
        },
    ));
    assert_eq!(s.len(), 8, "{s:?}");
    assert_eq!(s[0].1, "<p>one");
    assert!(s[1].1.starts_with("BAD: malformed WARC"), "{}", s[1].1);
    assert_eq!(s[2], ("u2".to_string(), "<p>two".to_string()));
    assert_eq!(s[3].0, "u3");
    assert!(s[3].1.contains("Content-Length"), "{}", s[3].1);
    assert_eq!(s[4], ("u4".to_string(), "<p>four".to_string()));
    assert!(s[5].1.starts_with("BAD: document too large"), "{}", s[5].1);
    assert_eq!(s[6], ("u6".to_string(), "<p>six".to_string()));
    assert_eq!(s[7].0, "u7");
    assert!(
        s[7].1.starts_with("BAD: truncated WARC record"),
        "{}",
        s[7].1
    );
}

#[test]
fn jsonl_good_malformed_and_missing_fields() {
    let t = tempfile::tempdir().unwrap();
    let lines = concat!(
        "{\"id\": \"a\", \"html\": \"<p>one\"}\n",
        "{\"id\": 7, \"text\": \"two\"}\n",
        "\n",
        "{\"id\": \"b\", \"text\": \"tr\n",
        "[1, 2]\n",
        "{\"id\": \"c\"}\n",
        "{\"text\": \"no id\"}\n",
        "{\"id\": \"d\", \"html\": 5}\n",
        "{\"id\": \"e\", \"html\": \"<meta charset=latin1><p>caf\u{e9}\", \"text\": \"ignored\"}\n",
    );
    let path = write(t.path(), "docs.jsonl", lines.as_bytes());
    let file = path.to_string_lossy().into_owned();
    let items = read(vec![path], InputOptions::default());
    let s = summary(&items);
    assert_eq!(s.len(), 8, "{s:?}");
    assert_eq!(s[0], ("a".to_string(), "<p>one".to_string()));
    assert_eq!(doc(&items, 0).format, DocFormat::Html);
    assert_eq!(s[1], ("7".to_string(), "two".to_string()));
    assert_eq!(doc(&items, 1).format, DocFormat::Text);
    assert_eq!(doc(&items, 1).origin, format!("{file}:2"));
    assert_eq!(s[2].0, format!("{file}:4"));
    assert!(s[2].1.starts_with("BAD: malformed JSON"), "{}", s[2].1);
    assert!(s[3].1.starts_with("BAD: not a JSON object"), "{}", s[3].1);
    assert_eq!(s[4].0, "c");
    assert!(
        s[4].1.starts_with("BAD: no \"html\" or \"text\" field"),
        "{}",
        s[4].1
    );
    assert_eq!(s[5], (format!("{file}:7"), "no id".to_string()));
    assert!(
        s[6].1.starts_with("BAD: field \"html\" is not a string"),
        "{}",
        s[6].1
    );
    let e = doc(&items, 7);
    assert_eq!(
        (e.key.as_str(), e.format, e.charset.as_deref()),
        ("e", DocFormat::Html, Some("utf-8"))
    );
}

#[test]
fn jsonl_gz_and_custom_fields() {
    let t = tempfile::tempdir().unwrap();
    let path = write(
        t.path(),
        "d.ndjson.gz",
        &gz(b"{\"url\": \"u\", \"body\": \"<b>x\"}\n"),
    );
    let opts = InputOptions {
        jsonl_id_field: "url".into(),
        jsonl_html_field: "body".into(),
        ..InputOptions::default()
    };
    let items = read(vec![path], opts);
    assert_eq!(summary(&items), [("u".to_string(), "<b>x".to_string())]);
}

#[test]
fn stream_is_send_and_lazy() {
    fn assert_send<T: Send>(_: &T) {}
    let it = read_inputs(
        vec![
            PathBuf::from("/nonexistent/a"),
            PathBuf::from("/nonexistent/b"),
        ],
        InputOptions::default(),
    );
    assert_send(&it);
    assert_eq!(it.take(1).count(), 1);
}

#[test]
fn helpers() {
    assert_eq!(
        charset_param("text/html; Charset=\"UTF-8\""),
        Some("UTF-8".to_string())
    );
    assert_eq!(charset_param("text/html"), None);
    assert_eq!(
        format_of_media_type("TEXT/HTML;charset=x"),
        Some(DocFormat::Html)
    );
    assert_eq!(format_of_media_type("application/pdf"), None);
    let mut buf = Vec::new();
    let mut r = std::io::Cursor::new(b"0123456789\nab".to_vec());
    assert_eq!(read_line_bounded(&mut r, &mut buf, 4).unwrap(), 11);
    assert_eq!(buf, b"0123");
    assert_eq!(read_line_bounded(&mut r, &mut buf, 4).unwrap(), 2);
    assert_eq!(buf, b"ab");
    assert_eq!(read_line_bounded(&mut r, &mut buf, 4).unwrap(), 0);
}
