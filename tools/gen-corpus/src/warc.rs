//! WARC/1.0 output (ISO 28500): one uncompressed `batch-XX.warc` per batch, starting with
//! a `warcinfo` record, then one `response` record (HTTP/1.1 200 + HTML) per document.
//!
//! Dates are synthetic and deterministic: batch b (0-based) is "crawled" on 2024-01-01 plus
//! b days, one document per second, so batches look like nightly crawls.

use crate::rng::{tag, Rng};
use std::fmt::Write;

/// Appends a `warcinfo` record describing the batch file.
pub fn write_warcinfo(out: &mut Vec<u8>, seed: u64, batch: u32, filename: &str) {
    let fields = format!(
        "software: ndd-gen/{}\r\nformat: WARC File Format 1.0\r\ndescription: synthetic near-duplicate corpus, seed {seed}, {filename}\r\n",
        env!("CARGO_PKG_VERSION")
    );
    let mut h = String::new();
    h.push_str("WARC/1.0\r\nWARC-Type: warcinfo\r\n");
    let _ = write!(
        h,
        "WARC-Record-ID: {}\r\n",
        record_id(seed, (1 << 40) + batch as u64)
    );
    let _ = write!(h, "WARC-Date: {}\r\n", date(batch, 0));
    let _ = write!(h, "WARC-Filename: {filename}\r\n");
    let _ = write!(
        h,
        "Content-Type: application/warc-fields\r\nContent-Length: {}\r\n\r\n",
        fields.len()
    );
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(fields.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
}

/// Appends a `response` record for document `doc` (its `second`-th in the batch).
pub fn write_response(
    out: &mut Vec<u8>,
    seed: u64,
    batch: u32,
    second: u32,
    doc: u32,
    uri: &str,
    html: &[u8],
) {
    let http = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        html.len()
    );
    let mut h = String::with_capacity(320);
    h.push_str("WARC/1.0\r\nWARC-Type: response\r\n");
    let _ = write!(h, "WARC-Record-ID: {}\r\n", record_id(seed, doc as u64));
    let _ = write!(h, "WARC-Date: {}\r\n", date(batch, second));
    let _ = write!(h, "WARC-Target-URI: {uri}\r\n");
    h.push_str("Content-Type: application/http; msgtype=response\r\n");
    let _ = write!(h, "Content-Length: {}\r\n\r\n", http.len() + html.len());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(http.as_bytes());
    out.extend_from_slice(html);
    out.extend_from_slice(b"\r\n\r\n");
}

/// A deterministic version-4-shaped UUID URN.
fn record_id(seed: u64, index: u64) -> String {
    let mut rng = Rng::stream(seed, tag::RECORD_ID, index);
    let (a, b) = (rng.next_u64(), rng.next_u64());
    format!(
        "<urn:uuid:{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}>",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

/// `2024-01-01T00:00:00Z` plus `batch` days and `second` seconds (wrapping within the day).
fn date(batch: u32, second: u32) -> String {
    // Days since 1970-01-01 to civil date (Howard Hinnant's algorithm).
    let z = 19_723 + batch as i64 + 719_468; // 19723 = 2024-01-01
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    let s = second % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub struct Record {
        pub headers: Vec<(String, String)>,
        pub block: Vec<u8>,
    }

    impl Record {
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    /// Strict reader: panics on anything that is not a well-formed WARC/1.0 record stream.
    pub fn parse(mut data: &[u8]) -> Vec<Record> {
        let mut records = Vec::new();
        while !data.is_empty() {
            let end = data
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("header end");
            let head = std::str::from_utf8(&data[..end]).expect("utf-8 headers");
            let mut lines = head.split("\r\n");
            assert_eq!(lines.next(), Some("WARC/1.0"));
            let headers: Vec<(String, String)> = lines
                .map(|l| {
                    let (n, v) = l.split_once(": ").expect("name: value");
                    (n.to_string(), v.to_string())
                })
                .collect();
            let rec = Record {
                headers,
                block: Vec::new(),
            };
            let len: usize = rec
                .header("Content-Length")
                .expect("Content-Length")
                .parse()
                .unwrap();
            let block = &data[end + 4..end + 4 + len];
            assert_eq!(
                &data[end + 4 + len..end + 8 + len],
                b"\r\n\r\n",
                "record trailer"
            );
            data = &data[end + 8 + len..];
            records.push(Record {
                block: block.to_vec(),
                ..rec
            });
        }
        records
    }

    #[test]
    fn records_are_well_formed() {
        let mut out = Vec::new();
        write_warcinfo(&mut out, 1, 0, "batch-01.warc");
        write_response(
            &mut out,
            1,
            0,
            5,
            7,
            "http://site-00.example/page-0000007.html",
            "<p>h\u{e9}</p>".as_bytes(),
        );
        let recs = parse(&out);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].header("WARC-Type"), Some("warcinfo"));
        let r = &recs[1];
        assert_eq!(r.header("WARC-Type"), Some("response"));
        assert_eq!(r.header("WARC-Date"), Some("2024-01-01T00:00:05Z"));
        assert_eq!(
            r.header("WARC-Target-URI"),
            Some("http://site-00.example/page-0000007.html")
        );
        let id = r.header("WARC-Record-ID").unwrap();
        assert!(id.starts_with("<urn:uuid:") && id.len() == 47, "{id}");
        assert_ne!(id, recs[0].header("WARC-Record-ID").unwrap());
        let http = std::str::from_utf8(&r.block).unwrap();
        assert_eq!(
            http,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 10\r\n\r\n<p>h\u{e9}</p>"
        );
    }

    #[test]
    fn dates_roll_over_months_and_years() {
        assert_eq!(date(0, 0), "2024-01-01T00:00:00Z");
        assert_eq!(date(59, 3661), "2024-02-29T01:01:01Z");
        assert_eq!(date(366, 86_399), "2025-01-01T23:59:59Z");
    }
}
