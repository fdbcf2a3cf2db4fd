//! ARC (the Internet Archive's format before WARC), read record by record.
//!
//! ```text
//! filedesc://name.arc 0.0.0.0 20040925000741 text/plain 1406    <- version block header
//! 1 1 InternetArchive                                            <- its block: version line,
//! URL IP-address Archive-date Content-type Archive-length        <- the record line's fields
//! <blank line>
//! http://example.com/ 93.184.216.119 20140216050221 text/html 1591   <- record line
//! HTTP/1.1 200 OK ...                                            <- 1591 bytes of block
//! ```
//!
//! A record is one line of space-separated fields (version 1: `URL IP date content-type
//! length`; version 2 adds result code, checksum, location, offset and file name before the
//! length, as its version block's field line says), then `length` bytes. The URL is the key and
//! the URL; since URLs in real ARC files hold spaces, the fields are counted from the right.
//! A block starting `HTTP/` is an HTTP response, handled as WARC responses are (headers removed,
//! chunked and gzip undone, format and charset from its Content-Type); other blocks are typed by
//! the record line's content type. `filedesc:` and `dns:` records are not documents and are
//! skipped. A malformed record line is a `Bad` item naming the line; reading resumes at the next
//! line that parses as a record line. A truncated block ends the file with a `Bad` item.

use std::io::{self, BufRead, Read};

use super::warc::{http_doc, make_doc};
use super::{read_line_bounded, InputItem};

/// Longest record line kept (real ones are a URL and a few short fields).
const MAX_LINE: usize = 64 << 10;

pub(super) struct ArcReader<R> {
    r: R,
    file: String,
    max: u64,
    offset: u64,
    line: Vec<u8>,
    /// Fields of a record line (5 in version 1, 10 in version 2), from the version block.
    fields: usize,
    /// A record line found while resynchronizing, to be used next.
    pending: Option<(u64, String)>,
    done: bool,
}

/// A parsed record line.
#[derive(Debug, PartialEq)]
struct RecordLine {
    url: String,
    content_type: String,
    length: u64,
}

/// Parses a record line with `fields` fields (the URL may hold spaces: the other fields are
/// counted from the right). Err(reason) when it is not one.
fn parse_record_line(line: &str, fields: usize) -> Result<RecordLine, String> {
    let parts: Vec<&str> = line.split(' ').filter(|p| !p.is_empty()).collect();
    if parts.len() < fields {
        return Err(format!(
            "malformed ARC record line {:?}: {} fields, expected {fields} (URL IP date \
             content-type ... length)",
            shown(line),
            parts.len()
        ));
    }
    let tail = &parts[parts.len() - (fields - 1)..];
    let url = parts[..parts.len() - (fields - 1)].join(" ");
    let len_field = tail[tail.len() - 1];
    let length = len_field.parse::<u64>().map_err(|_| {
        format!(
            "malformed ARC record line {:?}: length {len_field:?} is not a number",
            shown(line)
        )
    })?;
    let date = tail[1];
    if !date.bytes().all(|b| b.is_ascii_digit()) || !(8..=20).contains(&date.len()) {
        return Err(format!(
            "malformed ARC record line {:?}: date {date:?} is not a YYYYMMDDhhmmss timestamp",
            shown(line)
        ));
    }
    if !url.contains(':') {
        return Err(format!(
            "malformed ARC record line {:?}: {url:?} is not a URL",
            shown(line)
        ));
    }
    Ok(RecordLine {
        url,
        content_type: tail[2].to_string(),
        length,
    })
}

fn shown(line: &str) -> String {
    line.chars().take(80).collect()
}

impl<R: BufRead> ArcReader<R> {
    pub(super) fn new(r: R, file: String, max: u64) -> Self {
        ArcReader {
            r,
            file,
            max,
            offset: 0,
            line: Vec::new(),
            fields: 5,
            pending: None,
            done: false,
        }
    }

    fn read_line(&mut self) -> io::Result<usize> {
        let n = read_line_bounded(&mut self.r, &mut self.line, MAX_LINE)?;
        self.offset += n as u64;
        Ok(n)
    }

    fn origin(&self, start: u64) -> String {
        format!("{}: record at offset {start}", self.file)
    }

    fn bad(&self, start: u64, key: Option<&str>, reason: impl Into<String>) -> InputItem {
        InputItem::bad(
            key.map_or_else(|| format!("{}@{start}", self.file), str::to_string),
            self.origin(start),
            reason,
        )
    }

    /// Skips lines until one parses as a record line, which is used next.
    fn resync(&mut self) {
        loop {
            let start = self.offset;
            match self.read_line() {
                Ok(0) | Err(_) => {
                    self.done = true;
                    return;
                }
                Ok(_) => {
                    let text = String::from_utf8_lossy(&self.line);
                    let line = text.trim_end_matches(['\r', '\n']);
                    if parse_record_line(line, self.fields).is_ok() {
                        self.pending = Some((start, line.to_string()));
                        return;
                    }
                }
            }
        }
    }

    /// Reads `len` bytes of block; None (and the end of the file) when it is cut short.
    fn block(&mut self, len: u64, keep: bool) -> Option<Vec<u8>> {
        let mut block = Vec::new();
        let got = if keep {
            (&mut self.r)
                .take(len)
                .read_to_end(&mut block)
                .map(|n| n as u64)
        } else {
            io::copy(&mut (&mut self.r).take(len), &mut io::sink())
        };
        let n = got.unwrap_or(0);
        self.offset += n;
        if n != len {
            self.done = true;
            return None;
        }
        Some(block)
    }

    fn record(&mut self) -> Option<InputItem> {
        let (start, line) = match self.pending.take() {
            Some(p) => p,
            None => loop {
                let start = self.offset;
                match self.read_line() {
                    Ok(0) => {
                        self.done = true;
                        return None;
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(self.bad(start, None, format!("read error: {e}")));
                    }
                    Ok(_) if self.line.iter().all(u8::is_ascii_whitespace) => continue,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&self.line);
                        break (start, text.trim_end_matches(['\r', '\n']).to_string());
                    }
                }
            },
        };
        let rec = match parse_record_line(&line, self.fields) {
            Ok(r) => r,
            Err(reason) => {
                self.resync();
                return Some(self.bad(start, None, reason));
            }
        };
        let scheme = rec.url.split(':').next().unwrap_or("").to_ascii_lowercase();
        if scheme == "filedesc" {
            let Some(block) = self.block(rec.length, true) else {
                return Some(self.bad(start, None, "truncated ARC version block"));
            };
            // Its third line names the record line's fields (5 in version 1, 10 in version 2).
            if let Some(names) = String::from_utf8_lossy(&block).lines().nth(1) {
                let n = names.split_whitespace().count();
                if (5..=16).contains(&n) {
                    self.fields = n;
                }
            }
            return None;
        }
        let key = rec.url.clone();
        if scheme == "dns" {
            return match self.block(rec.length, false) {
                Some(_) => None,
                None => Some(self.bad(start, Some(&key), "truncated ARC record")),
            };
        }
        if rec.length > self.max {
            let complete = self.block(rec.length, false).is_some();
            self.done = !complete;
            let reason = format!(
                "document too large ({} bytes; the limit is {})",
                rec.length, self.max
            );
            return Some(self.bad(start, Some(&key), reason));
        }
        let Some(block) = self.block(rec.length, true) else {
            return Some(self.bad(start, Some(&key), "truncated ARC record"));
        };
        let origin = self.origin(start);
        let url = Some(rec.url);
        Some(if block.starts_with(b"HTTP/") {
            http_doc(block, key, url, origin, self.max)
        } else {
            make_doc(block, key, url, origin, Some(&rec.content_type))
        })
    }
}

impl<R: BufRead> Iterator for ArcReader<R> {
    type Item = InputItem;

    fn next(&mut self) -> Option<InputItem> {
        while !self.done || self.pending.is_some() {
            if let Some(item) = self.record() {
                return Some(item);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_lines_of_both_versions_and_urls_with_spaces() {
        let r = parse_record_line("http://a.com/ 1.2.3.4 20140216050221 text/html 1591", 5);
        assert_eq!(
            r.unwrap(),
            RecordLine {
                url: "http://a.com/".into(),
                content_type: "text/html".into(),
                length: 1591
            }
        );
        let r = parse_record_line(
            "http://a.com/x?t=A B C 1.2.3.4 20040925001013 text/html 9",
            5,
        );
        assert_eq!(r.unwrap().url, "http://a.com/x?t=A B C");
        let v2 = "http://b.org/ 1.2.3.4 20050614070159 text/html 200 \
                  ABCDEF - 4456 IA-1.arc 77";
        let r = parse_record_line(v2, 10).unwrap();
        assert_eq!((r.url.as_str(), r.length), ("http://b.org/", 77));
    }

    #[test]
    fn malformed_record_lines_are_named() {
        let e = parse_record_line("http://a/ 1.2.3.4 20140101000000 text/html abc", 5);
        assert!(e.unwrap_err().contains("length \"abc\" is not a number"));
        let e = parse_record_line("just three fields", 5);
        assert!(e.unwrap_err().contains("3 fields, expected 5"));
        let e = parse_record_line("http://a/ 1.2.3.4 yesterday text/html 5", 5);
        assert!(e.unwrap_err().contains("is not a YYYYMMDDhhmmss timestamp"));
    }

    #[test]
    fn records_after_a_bad_line_are_still_read() {
        let text = "filedesc://x.arc 0.0.0.0 20140101000000 text/plain 0\n\n\
                    garbage line here\n\
                    http://a.com/ 1.2.3.4 20140101000000 text/plain 6\nhello\n\n\
                    dns:a.com 1.2.3.4 20140101000000 text/dns 3\nabc\n\
                    http://b.com/ 1.2.3.4 20140101000000 text/html 49\nHTTP/1.0 200 OK\n\
                    Content-Type: text/html\n\n<p>b</p>";
        let items: Vec<InputItem> = ArcReader::new(text.as_bytes(), "f".into(), 1 << 20).collect();
        assert_eq!(items.len(), 3, "{items:?}");
        assert!(
            matches!(&items[0], InputItem::Bad { reason, .. } if reason.contains("\"garbage line here\""))
        );
        let InputItem::Doc(a) = &items[1] else {
            panic!("{items:?}")
        };
        assert_eq!(
            (a.key.as_str(), &a.bytes[..]),
            ("http://a.com/", &b"hello\n"[..])
        );
        let InputItem::Doc(b) = &items[2] else {
            panic!("{items:?}")
        };
        assert_eq!(b.url.as_deref(), Some("http://b.com/"));
        assert_eq!(b.bytes, b"<p>b</p>");
    }
}
