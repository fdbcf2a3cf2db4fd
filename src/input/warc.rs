//! WARC 1.0 / 1.1 (and 0.18, as ClueWeb09 ships) input: `response` and `resource` records,
//! framed by Content-Length.
//!
//! A record is a `WARC/1.x` (or `WARC/0.x`) line, header lines up to a blank line, `Content-Length` bytes of
//! block, and a CRLF CRLF trailer. For `response` records whose block is an HTTP message
//! (`application/http`), the HTTP headers are stripped, chunked transfer coding and gzip/deflate
//! content coding are undone, and the charset and format come from the HTTP `Content-Type`;
//! responses whose media type is not HTML or plain text are reported as `Bad` (not documents).
//! Other record types (warcinfo, request, metadata, revisit, ...) are skipped. A malformed
//! header is `Bad` and reading resumes at the next line starting with `WARC/1.` or `WARC/0.`;
//! a truncated record is `Bad` and ends the file. The key is `WARC-TREC-ID` when present (the
//! TREC collections' document number), else `WARC-Target-URI`; the URL is `WARC-Target-URI`.
//! `WARC-Date` is never parsed, so ClueWeb09's impossible dates (`2009-03-65`) are harmless.

use std::io::{self, BufRead, Read};

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

use super::{charset_param, format_of_media_type, read_line_bounded, InputItem, RawDoc};
use crate::canonicalize::sniff_format;

/// Longest header line kept (longer ones are cut; binary garbage needs no more).
const MAX_LINE: usize = 64 << 10;

pub(super) struct WarcReader<R> {
    r: R,
    file: String,
    max: u64,
    offset: u64,
    line: Vec<u8>,
    /// A `WARC/1.` (or `WARC/0.`) line found while resynchronizing, to be used as the next header line.
    pending: Option<(u64, Vec<u8>)>,
    done: bool,
}

/// A parsed record header.
struct Header {
    start: u64,
    fields: Vec<(String, String)>,
}

impl Header {
    fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl<R: BufRead> WarcReader<R> {
    pub(super) fn new(r: R, file: String, max: u64) -> Self {
        WarcReader {
            r,
            file,
            max,
            offset: 0,
            line: Vec::new(),
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
        let origin = self.origin(start);
        InputItem::bad(
            key.map_or_else(|| format!("{}@{start}", self.file), str::to_string),
            origin,
            reason,
        )
    }

    /// Skips lines until one starts with `WARC/1.` or `WARC/0.`, which becomes the next header
    /// line.
    fn resync(&mut self) {
        loop {
            let start = self.offset;
            match self.read_line() {
                Ok(0) | Err(_) => {
                    self.done = true;
                    return;
                }
                Ok(_) if is_version_line(&self.line) => {
                    self.pending = Some((start, std::mem::take(&mut self.line)));
                    return;
                }
                Ok(_) => {}
            }
        }
    }

    /// Reads the next record header. Ok(None) at a clean end of input.
    fn header(&mut self) -> Result<Option<Header>, InputItem> {
        let (start, first) = loop {
            if let Some(p) = self.pending.take() {
                break p;
            }
            let start = self.offset;
            match self.read_line() {
                Ok(0) => return Ok(None),
                Ok(_) if self.line.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(_) => break (start, std::mem::take(&mut self.line)),
                Err(e) => return Err(self.bad(start, None, format!("read error: {e}"))),
            }
        };
        if !is_version_line(&first) {
            let shown = String::from_utf8_lossy(&first[..first.len().min(40)])
                .trim_end()
                .to_string();
            return Err(self.bad(
                start,
                None,
                format!(
                    "malformed WARC: expected a \"WARC/1.x\" or \"WARC/0.x\" line, found {shown:?}"
                ),
            ));
        }
        let mut fields: Vec<(String, String)> = Vec::new();
        loop {
            match self.read_line() {
                Ok(0) => return Err(self.bad(start, None, "truncated WARC record header")),
                Err(e) => return Err(self.bad(start, None, format!("read error: {e}"))),
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&self.line);
            let line = text.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                return Ok(Some(Header { start, fields }));
            }
            if line.starts_with([' ', '\t']) {
                if let Some(last) = fields.last_mut() {
                    last.1.push(' ');
                    last.1.push_str(line.trim());
                    continue;
                }
            }
            match line.split_once(':') {
                Some((k, v)) => fields.push((k.trim().to_string(), v.trim().to_string())),
                None => {
                    return Err(self.bad(
                        start,
                        None,
                        format!("malformed WARC header line {line:?}"),
                    ))
                }
            }
        }
    }

    /// Consumes `len` bytes; false if the input ended first.
    fn skip(&mut self, len: u64) -> bool {
        let n = io::copy(&mut (&mut self.r).take(len), &mut io::sink()).unwrap_or(0);
        self.offset += n;
        n == len
    }

    /// Consumes the CRLF CRLF after a block (tolerating LF-only or missing trailers).
    fn skip_trailer(&mut self) {
        for _ in 0..4 {
            match self.r.fill_buf() {
                Ok([b'\r' | b'\n', ..]) => {
                    self.r.consume(1);
                    self.offset += 1;
                }
                _ => return,
            }
        }
    }

    fn record(&mut self) -> Option<InputItem> {
        let h = match self.header() {
            Ok(Some(h)) => h,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(bad) => {
                self.resync();
                return Some(bad);
            }
        };
        let url = h
            .get("WARC-Target-URI")
            .map(|u| u.trim_start_matches('<').trim_end_matches('>').to_string())
            .filter(|u| !u.is_empty());
        let key = h
            .get("WARC-TREC-ID")
            .map(str::to_string)
            .filter(|k| !k.is_empty())
            .or_else(|| url.clone());
        let Some(len) = h.get("Content-Length").and_then(|v| v.parse::<u64>().ok()) else {
            let bad = self.bad(
                h.start,
                key.as_deref(),
                "WARC record without a valid Content-Length",
            );
            self.resync();
            return Some(bad);
        };
        let typ = h.get("WARC-Type").unwrap_or("").to_ascii_lowercase();
        if typ != "response" && typ != "resource" {
            if !self.skip(len) {
                self.done = true;
                return Some(self.bad(h.start, key.as_deref(), "truncated WARC record"));
            }
            self.skip_trailer();
            return None;
        }
        if len > self.max {
            let complete = self.skip(len);
            self.done = !complete;
            let reason = format!(
                "document too large ({len} bytes; the limit is {})",
                self.max
            );
            return Some(self.bad(h.start, key.as_deref(), reason));
        }
        let mut block = Vec::with_capacity(len.min(1 << 20) as usize);
        let got = (&mut self.r).take(len).read_to_end(&mut block);
        self.offset += block.len() as u64;
        if got.is_err() || block.len() as u64 != len {
            self.done = true;
            let reason = format!("truncated WARC record: {} of {len} bytes", block.len());
            return Some(self.bad(h.start, key.as_deref(), reason));
        }
        self.skip_trailer();
        let origin = self.origin(h.start);
        let key = key.unwrap_or_else(|| format!("{}@{}", self.file, h.start));
        let warc_type = h.get("Content-Type").unwrap_or("");
        let is_http = warc_type
            .to_ascii_lowercase()
            .starts_with("application/http");
        Some(if typ == "response" && is_http {
            http_doc(block, key, url, origin, self.max)
        } else {
            make_doc(block, key, url, origin, Some(warc_type))
        })
    }
}

impl<R: BufRead> Iterator for WarcReader<R> {
    type Item = InputItem;

    fn next(&mut self) -> Option<InputItem> {
        while !self.done {
            if let Some(item) = self.record() {
                return Some(item);
            }
        }
        None
    }
}

/// True for a record's first line: `WARC/1.x`, or `WARC/0.x` (ClueWeb09 is `WARC/0.18`).
fn is_version_line(line: &[u8]) -> bool {
    line.starts_with(b"WARC/1.") || line.starts_with(b"WARC/0.")
}

/// A document from a block (or HTTP body) with an optional Content-Type.
pub(super) fn make_doc(
    bytes: Vec<u8>,
    key: String,
    url: Option<String>,
    origin: String,
    content_type: Option<&str>,
) -> InputItem {
    let ct = content_type.filter(|c| !c.trim().is_empty());
    let format = match ct.map(|c| (c, format_of_media_type(c))) {
        Some((_, Some(f))) => f,
        Some((c, None)) => {
            return InputItem::bad(
                key,
                origin,
                format!("not a text document (Content-Type {c})"),
            )
        }
        None => sniff_format(Some(key.split(['?', '#']).next().unwrap_or(&key)), &bytes),
    };
    let charset = ct.and_then(charset_param);
    InputItem::Doc(RawDoc {
        key,
        url,
        bytes,
        format,
        charset,
        origin,
    })
}

/// The document in an HTTP response block (WARC response records, ARC records).
pub(super) fn http_doc(
    block: Vec<u8>,
    key: String,
    url: Option<String>,
    origin: String,
    max: u64,
) -> InputItem {
    let (head_len, body_start) = match find(&block, b"\r\n\r\n") {
        Some(i) => (i, i + 4),
        None => match find(&block, b"\n\n") {
            Some(i) => (i, i + 2),
            None => return InputItem::bad(key, origin, "HTTP response headers are not terminated"),
        },
    };
    let head = String::from_utf8_lossy(&block[..head_len]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().unwrap_or("");
    if !status.starts_with("HTTP/") {
        return InputItem::bad(
            key,
            origin,
            // At most 40 characters, not bytes: a byte cut could split a character (and
            // panicked on such input before the WARC fuzz target found it).
            format!(
                "not an HTTP response: {:?}",
                status.chars().take(40).collect::<String>()
            ),
        );
    }
    let (mut ctype, mut chunked, mut coding) = (None, false, String::new());
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim(), v.trim());
            if k.eq_ignore_ascii_case("content-type") {
                ctype = Some(v.to_string());
            } else if k.eq_ignore_ascii_case("transfer-encoding") {
                chunked |= v.to_ascii_lowercase().contains("chunked");
            } else if k.eq_ignore_ascii_case("content-encoding") {
                coding = v.to_ascii_lowercase();
            }
        }
    }
    let mut body = block;
    body.drain(..body_start);
    if chunked {
        match dechunk(&body) {
            Some(b) => body = b,
            None => return InputItem::bad(key, origin, "malformed chunked transfer encoding"),
        }
    }
    match coding.as_str() {
        "" | "identity" => {}
        "gzip" | "x-gzip" | "deflate" => match decompress(&body, &coding, max) {
            Ok(b) => body = b,
            Err(reason) => return InputItem::bad(key, origin, reason),
        },
        other => {
            return InputItem::bad(key, origin, format!("unsupported Content-Encoding {other}"))
        }
    }
    make_doc(body, key, url, origin, ctype.as_deref())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Undoes HTTP/1.1 chunked transfer coding. A body cut short keeps what arrived.
fn dechunk(b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(b.len());
    let mut p = 0;
    while p < b.len() {
        let eol = p + b[p..].iter().position(|&c| c == b'\n')?;
        let line = std::str::from_utf8(&b[p..eol]).ok()?.trim();
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        p = eol + 1;
        if size == 0 {
            break;
        }
        let end = p.saturating_add(size).min(b.len());
        out.extend_from_slice(&b[p..end]);
        p = end;
        while p < b.len() && (b[p] == b'\r' || b[p] == b'\n') && p < end + 2 {
            p += 1;
        }
    }
    Some(out)
}

/// Undoes gzip / deflate content coding, at most `max` bytes of output.
fn decompress(body: &[u8], coding: &str, max: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let limit = max.saturating_add(1);
    let res = if coding == "deflate" {
        // "deflate" is zlib-wrapped by the standard, raw deflate by some servers.
        let mut o = Vec::new();
        match ZlibDecoder::new(body).take(limit).read_to_end(&mut o) {
            Ok(_) => {
                out = o;
                Ok(0)
            }
            Err(_) => DeflateDecoder::new(body).take(limit).read_to_end(&mut out),
        }
    } else {
        MultiGzDecoder::new(body).take(limit).read_to_end(&mut out)
    };
    match res {
        Err(e) => Err(format!("corrupt {coding} Content-Encoding: {e}")),
        Ok(_) if out.len() as u64 > max => Err(format!(
            "document too large (more than {max} bytes after decompression)"
        )),
        Ok(_) => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_http_status_line_with_multibyte_characters_is_a_clean_error() {
        // Found by the `warc` fuzz target: the message cut the line at byte 40, inside a '€'.
        let mut block = "€".repeat(20).into_bytes();
        block.extend_from_slice(b"\r\n\r\n<p>body</p>");
        match http_doc(block, "k".into(), None, "o".into(), 1 << 20) {
            InputItem::Bad { reason, .. } => {
                assert!(reason.starts_with("not an HTTP response"), "{reason}");
                assert!(reason.contains(&"€".repeat(20)), "{reason}");
            }
            other => panic!("expected a bad item, got {other:?}"),
        }
    }

    #[test]
    fn dechunk_handles_extensions_and_truncation() {
        assert_eq!(
            dechunk(b"4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\n\r\n").unwrap(),
            b"Wikipedia"
        );
        assert_eq!(dechunk(b"4\r\nWi").unwrap(), b"Wi");
        assert!(dechunk(b"zz\r\nabc").is_none());
    }
}
