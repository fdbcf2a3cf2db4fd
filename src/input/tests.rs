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
fn jsonl_url_field_is_the_documents_url() {
    let t = tempfile::tempdir().unwrap();
    let path = write(
        t.path(),
        "u.jsonl",
        b"{\"id\": \"a\", \"url\": \"http://www.a.org/x\", \"text\": \"t\"}\n\
          {\"id\": \"b\", \"text\": \"t\"}\n\
          {\"id\": \"c\", \"url\": 7, \"text\": \"t\"}\n\
          {\"id\": \"d\", \"link\": \"http://d.org/\", \"text\": \"t\"}\n",
    );
    let items = read(vec![path.clone()], InputOptions::default());
    assert_eq!(doc(&items, 0).url.as_deref(), Some("http://www.a.org/x"));
    assert_eq!(doc(&items, 1).url, None);
    let s = summary(&items);
    assert!(
        s[2].1.contains("field \"url\" is not a string"),
        "{}",
        s[2].1
    );
    assert_eq!(doc(&items, 3).url, None);
    let opts = InputOptions {
        jsonl_url_field: "link".into(),
        ..InputOptions::default()
    };
    let items = read(vec![path], opts);
    assert_eq!(doc(&items, 3).url.as_deref(), Some("http://d.org/"));
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

/// The files of a directory are opened ahead of their turn, at most `AHEAD_FILES` at a time,
/// and read in key order all the same: a file removed after it was opened ahead is still
/// read, one removed before is reported at its turn.
#[test]
fn files_are_opened_ahead_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let n = fs::AHEAD_FILES + 40;
    for i in 0..n {
        write(
            dir.path(),
            &format!("d/{i:04}.html"),
            format!("<p>{i}").as_bytes(),
        );
    }
    write(dir.path(), "e/x.html.gz", &gz(b"<p>gz"));
    let mut inputs = Inputs {
        queue: [fs::Pending::TopLevel(dir.path().to_path_buf())].into(),
        current: None,
        opts: InputOptions::default(),
        ahead: fs::ReadAhead::default(),
    };
    // The first document: the next files (all small) are open ahead, up to the bound.
    let first = inputs.next().unwrap();
    assert_eq!(summary(&[first]), [("d/0000.html".into(), "<p>0".into())]);
    assert_eq!(inputs.ahead.open_files(), fs::AHEAD_FILES);
    // d/0005 is open ahead (removing it does not stop its read); the last ones are not.
    std::fs::remove_file(dir.path().join("d/0005.html")).unwrap();
    let late = format!("d/{:04}.html", n - 1);
    std::fs::remove_file(dir.path().join(&late)).unwrap();
    let mut items = Vec::new();
    while let Some(item) = inputs.next() {
        assert!(inputs.ahead.open_files() <= fs::AHEAD_FILES);
        items.push(item);
    }
    assert_eq!(inputs.ahead.open_files(), 0);
    let got = summary(&items);
    assert_eq!(got.len(), n);
    for (i, (key, content)) in got.iter().take(n - 2).enumerate() {
        assert_eq!(key, &format!("d/{:04}.html", i + 1));
        assert_eq!(content, &format!("<p>{}", i + 1));
    }
    assert_eq!(got[n - 2].0, late);
    assert!(got[n - 2].1.starts_with("BAD: "), "{:?}", got[n - 2]);
    assert_eq!(got[n - 1], ("e/x.html.gz".into(), "<p>gz".into()));
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

/// A ClueWeb09-style record: WARC/0.18, a TREC id, an impossible date, LF-only HTTP headers.
fn clueweb09_record(trec_id: &str, uri: &str, body: &str) -> Vec<u8> {
    let block = http(
        "Content-Type: text/html; charset=utf-8\r\n",
        body.as_bytes(),
    );
    let mut r = format!(
        "WARC/0.18\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\n\
         WARC-Date: 2009-03-65T08:43:19-0800\r\nWARC-TREC-ID: {trec_id}\r\n\
         Content-Type: application/http;msgtype=response\r\nContent-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(&block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

#[test]
fn warc_0_18_trec_ids_odd_dates_and_resync() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = b"WARC/0.18\r\nWARC-Type: warcinfo\r\nWARC-Date: 2009-03-65T08:43:19-0800\r\n\
                  Content-Length: 4\r\n\r\nabcd\r\n\r\n"
        .to_vec();
    w.extend(clueweb09_record(
        "clueweb09-en0000-00-00000",
        "http://www.a.com/x",
        "<p>first</p>",
    ));
    // A damaged header: reading must resume at the next WARC/0.18 line.
    w.extend_from_slice(b"WARC/0.18\r\nthis is not a header\r\nmore junk\r\n");
    w.extend(clueweb09_record(
        "clueweb09-en0000-00-00002",
        "http://b.org/y",
        "<p>second</p>",
    ));
    // Without a TREC id the URI is the key.
    w.extend(warc_record(
        "resource",
        "http://c.net/z",
        "text/plain",
        b"third",
    ));
    let items = read(
        vec![write(dir.path(), "cw.warc.gz", &gz(&w))],
        InputOptions::default(),
    );
    let s = summary(&items);
    assert_eq!(s.len(), 4, "{s:?}");
    assert_eq!(s[0].0, "clueweb09-en0000-00-00000");
    assert_eq!(doc(&items, 0).url.as_deref(), Some("http://www.a.com/x"));
    assert!(
        s[1].1.starts_with("BAD: malformed WARC header line"),
        "{s:?}"
    );
    assert_eq!(s[2].0, "clueweb09-en0000-00-00002");
    assert_eq!(doc(&items, 2).url.as_deref(), Some("http://b.org/y"));
    assert_eq!(s[3], ("http://c.net/z".to_string(), "third".to_string()));
    assert_eq!(doc(&items, 3).url.as_deref(), Some("http://c.net/z"));
}

#[test]
fn trec_web_text_detected_by_content_gz_too() {
    let dir = tempfile::tempdir().unwrap();
    let gov2 = "<DOC>\n<DOCNO>GX000-00-0000000</DOCNO>\n<DOCHDR>\nhttp://www.x.gov/a\n\
                HTTP/1.1 200 OK\nContent-Type: text/html\n</DOCHDR>\n<html>a</html>\n</DOC>\n\
                <DOC>\n<DOCNO>GX000-00-0000001</DOCNO>\n<DOCHDR>\nhttp://x.gov/b\n</DOCHDR>\n\
                <p>b</p>\n</DOC>\n";
    write(dir.path(), "GX000/00.gz", &gz(gov2.as_bytes()));
    write(
        dir.path(),
        "WTX001/B01",
        gov2.replace("GX", "WT").as_bytes(),
    );
    let items = read(vec![dir.path().to_path_buf()], InputOptions::default());
    let keys: Vec<&str> = items
        .iter()
        .map(|i| match i {
            InputItem::Doc(d) => d.key.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        keys,
        [
            "GX000-00-0000000",
            "GX000-00-0000001",
            "WT000-00-0000000",
            "WT000-00-0000001"
        ]
    );
    assert_eq!(doc(&items, 1).url.as_deref(), Some("http://x.gov/b"));
    assert_eq!(doc(&items, 0).bytes, b"<html>a</html>\n");
}

fn warcio(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/warcio")
        .join(name)
}

#[test]
fn warcio_arc_files_are_read_as_records() {
    for name in ["example.arc", "example.arc.gz"] {
        let items = read(vec![warcio(name)], InputOptions::default());
        assert_eq!(items.len(), 1, "{name}: {items:?}");
        let d = doc(&items, 0);
        assert_eq!(d.key, "http://example.com/");
        assert_eq!(d.url.as_deref(), Some("http://example.com/"));
        assert!(
            d.bytes.starts_with(b"<!doctype html>"),
            "{name}: HTTP headers kept"
        );
        assert!(String::from_utf8_lossy(&d.bytes).contains("Example Domain"));
    }
    let items = read(
        vec![warcio("example-space-in-url.arc")],
        InputOptions::default(),
    );
    // Its block is 12 bytes shorter than the record line says: a truncated record, reported
    // under the URL (spaces and all) read from the right-hand fields.
    assert_eq!(items.len(), 1, "{items:?}");
    assert!(
        matches!(&items[0], InputItem::Bad { key, reason, .. }
            if key == "http://example.com/index.cfm?FuseAction=Email&EmailTitle=Examples From The Live Web&IsPopUp=False"
                && reason == "truncated ARC record"),
        "{items:?}"
    );
}

#[test]
fn warcio_bad_arc_names_the_malformed_lines() {
    let items = read(vec![warcio("bad.arc")], InputOptions::default());
    let bad: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            InputItem::Bad { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert!(bad.len() >= 2, "{items:?}");
    assert!(bad
        .iter()
        .all(|r| r.starts_with("malformed ARC record line")));
    assert!(bad.iter().any(|r| r.contains("length \"-1\"")), "{bad:?}");
    assert!(bad.iter().any(|r| r.contains("length \"abc\"")), "{bad:?}");
}

#[test]
fn warcio_warc_files() {
    let items = read(
        vec![warcio("example-iana.org-chunked.warc")],
        InputOptions::default(),
    );
    assert_eq!(items.len(), 1, "{items:?}");
    let d = doc(&items, 0);
    assert_eq!(d.key, "http://www.iana.org/");
    assert!(
        d.bytes.starts_with(b"<!doctype html>"),
        "chunk size line removed"
    );
    assert!(d.bytes.ends_with(b"</html>\n"), "last chunk kept whole");
    let items = read(vec![warcio("example.warc.gz")], InputOptions::default());
    assert!(
        items
            .iter()
            .any(|i| matches!(i, InputItem::Doc(d) if d.key == "http://example.com/")),
        "{items:?}"
    );
    let items = read(vec![warcio("example-trunc.warc")], InputOptions::default());
    assert!(
        items.iter().any(|i| matches!(i, InputItem::Bad { .. })),
        "a truncated file is reported: {items:?}"
    );
}
