//! TREC web text (GOV2, WT10g; also the plain TREC `<DOC>` newswire layout), read record by
//! record.
//!
//! ```text
//! <DOC>
//! <DOCNO>GX000-00-0000000</DOCNO>
//! <DOCHDR>
//! http://sgra.jpl.nasa.gov/            <- the document's URL
//! HTTP/1.1 200 OK                      <- the crawl's HTTP headers
//! Content-Type: text/html
//! </DOCHDR>
//! <html> ... </html>                   <- the document
//! </DOC>
//! ```
//!
//! The key is the DOCNO, the URL the first line of the DOCHDR. The charset and format come from
//! the DOCHDR's `Content-Type` when it names HTML or plain text; otherwise (no header, or a PDF
//! or Word file whose extracted text GOV2 holds) the body's format is sniffed. Lines are the
//! unit: `<DOC>`, `</DOC>`, `<DOCHDR>` and `</DOCHDR>` each start a line (as the collections
//! ship); `<DOCNO>` may share its line with the number. Elements other than these (WT10g's
//! `<DOCOLDNO>`) before the DOCHDR are skipped. A record without a DOCNO, text outside a record,
//! or a file ending inside a record is a `Bad` item; reading resumes at the next `<DOC>` line.

use std::io::BufRead;

use super::{charset_param, format_of_media_type, read_line_bounded, InputItem, RawDoc};
use crate::canonicalize::sniff_format;

/// Longest line kept whole (a longer line is cut; an HTML body line is still kept up to here).
const MAX_LINE: usize = 16 << 20;

pub(super) struct TrecWebReader<R> {
    r: R,
    file: String,
    max: u64,
    offset: u64,
    line: Vec<u8>,
    /// A `<DOC>` line met where a record's end was expected (the previous one lacked `</DOC>`).
    pending_doc: Option<u64>,
    done: bool,
}

/// Where a record's reader is.
#[derive(PartialEq)]
enum Part {
    /// Between `<DOC>` and `<DOCHDR>` or the body's first line.
    Head,
    /// Inside `<DOCHDR>`.
    Hdr,
    Body,
}

/// True when the line, without surrounding white space, starts with `tag` (ASCII case-insensitive).
fn starts_tag(line: &[u8], tag: &[u8]) -> bool {
    let t = line.trim_ascii_start();
    t.len() >= tag.len() && t[..tag.len()].eq_ignore_ascii_case(tag)
}

impl<R: BufRead> TrecWebReader<R> {
    pub(super) fn new(r: R, file: String, max: u64) -> Self {
        TrecWebReader {
            r,
            file,
            max,
            offset: 0,
            line: Vec::new(),
            pending_doc: None,
            done: false,
        }
    }

    fn read_line(&mut self) -> std::io::Result<usize> {
        let n = read_line_bounded(&mut self.r, &mut self.line, MAX_LINE)?;
        self.offset += n as u64;
        Ok(n)
    }

    fn bad(&self, start: u64, key: Option<&str>, reason: impl Into<String>) -> InputItem {
        InputItem::bad(
            key.map_or_else(|| format!("{}@{start}", self.file), str::to_string),
            format!("{}: record at offset {start}", self.file),
            reason,
        )
    }

    /// Finds the next `<DOC>` line; Err(bad) for other text met on the way (reported once).
    fn find_doc(&mut self) -> Option<Result<u64, InputItem>> {
        if let Some(start) = self.pending_doc.take() {
            return Some(Ok(start));
        }
        let mut junk: Option<(u64, String)> = None;
        loop {
            let start = self.offset;
            match self.read_line() {
                Ok(0) => {
                    self.done = true;
                    return junk.map(|(at, shown)| Err(self.stray(at, &shown)));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.bad(start, None, format!("read error: {e}"))));
                }
                Ok(_) if starts_tag(&self.line, b"<DOC>") => {
                    if let Some((at, shown)) = junk {
                        self.pending_doc = Some(start);
                        return Some(Err(self.stray(at, &shown)));
                    }
                    return Some(Ok(start));
                }
                Ok(_) if self.line.iter().all(u8::is_ascii_whitespace) => {}
                Ok(_) => {
                    if junk.is_none() {
                        let shown: String = String::from_utf8_lossy(&self.line)
                            .trim()
                            .chars()
                            .take(40)
                            .collect();
                        junk = Some((start, shown));
                    }
                }
            }
        }
    }

    fn stray(&self, at: u64, shown: &str) -> InputItem {
        self.bad(
            at,
            None,
            format!("malformed TREC web text: expected a <DOC> line, found {shown:?}"),
        )
    }

    fn record(&mut self) -> Option<InputItem> {
        let start = match self.find_doc()? {
            Ok(s) => s,
            Err(bad) => return Some(bad),
        };
        // `<DOC>` may share its line with more (`<DOC><DOCNO>x</DOCNO>`): keep the rest.
        let mut rest: Option<Vec<u8>> = {
            let t = self.line.trim_ascii();
            (t.len() > 5).then(|| t[5..].to_vec())
        };
        let mut docno: Option<String> = None;
        let mut hdr: Vec<String> = Vec::new();
        let mut body: Vec<u8> = Vec::new();
        let mut too_large = false;
        let mut part = Part::Head;
        loop {
            let line = match rest.take() {
                Some(r) => r,
                None => match self.read_line() {
                    Ok(0) => {
                        self.done = true;
                        return Some(self.bad(
                            start,
                            docno.as_deref(),
                            "truncated TREC web record: the file ends before </DOC>",
                        ));
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(self.bad(start, docno.as_deref(), format!("read error: {e}")));
                    }
                    Ok(_) => std::mem::take(&mut self.line),
                },
            };
            let trimmed = line.trim_ascii();
            if part != Part::Hdr && starts_tag(&line, b"<DOC>") {
                // A new record before this one ended: report this one, read that one next.
                self.pending_doc = Some(self.offset - line.len() as u64);
                self.line = line;
                return Some(self.bad(start, docno.as_deref(), "TREC web record without </DOC>"));
            }
            if let Some(before) = strip_end_tag(trimmed, b"</DOC>") {
                if part == Part::Body || !before.is_empty() {
                    push_limited(&mut body, before, self.max, &mut too_large);
                }
                break;
            }
            match part {
                Part::Head if starts_tag(&line, b"<DOCNO>") => {
                    let inner = &trimmed[7..];
                    let inner = strip_end_tag(inner.trim_ascii(), b"</DOCNO>").unwrap_or(inner);
                    docno = Some(String::from_utf8_lossy(inner.trim_ascii()).into_owned());
                }
                Part::Head if starts_tag(&line, b"<DOCHDR>") => part = Part::Hdr,
                Part::Head if trimmed.is_empty() || is_head_element(trimmed) => {}
                Part::Head => {
                    part = Part::Body;
                    push_limited(&mut body, &line, self.max, &mut too_large);
                }
                Part::Hdr if starts_tag(&line, b"</DOCHDR>") => part = Part::Body,
                Part::Hdr => hdr.push(String::from_utf8_lossy(trimmed).into_owned()),
                Part::Body => push_limited(&mut body, &line, self.max, &mut too_large),
            }
        }
        let Some(key) = docno.filter(|d| !d.is_empty()) else {
            return Some(self.bad(start, None, "TREC web record without a <DOCNO>"));
        };
        if too_large {
            let reason = format!("document too large (more than {} bytes)", self.max);
            return Some(self.bad(start, Some(&key), reason));
        }
        let url = hdr.first().filter(|u| !u.is_empty()).cloned();
        let ctype = hdr.iter().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        });
        let declared = ctype.as_deref().and_then(format_of_media_type);
        let format = declared.unwrap_or_else(|| {
            let path = url
                .as_deref()
                .map(|u| u.split(['?', '#']).next().unwrap_or(u));
            sniff_format(path, &body)
        });
        let charset = declared.and(ctype.as_deref()).and_then(charset_param);
        Some(InputItem::Doc(RawDoc {
            key,
            url,
            bytes: body,
            format,
            charset,
            origin: format!("{}: record at offset {start}", self.file),
        }))
    }
}

/// Elements TREC collections put between `<DOC>` and the document other than DOCNO/DOCHDR.
fn is_head_element(line: &[u8]) -> bool {
    const TAGS: &[&[u8]] = &[b"<DOCOLDNO>", b"<DOCID>", b"<URL>"];
    TAGS.iter().any(|t| starts_tag(line, t))
}

/// `line` without a trailing `tag` (ASCII case-insensitive), if it ends with it.
fn strip_end_tag<'a>(line: &'a [u8], tag: &[u8]) -> Option<&'a [u8]> {
    let n = line.len().checked_sub(tag.len())?;
    line[n..].eq_ignore_ascii_case(tag).then(|| &line[..n])
}

/// Appends `bytes` to `body` unless that passes `max` (then only flags it: the rest of the
/// record is still consumed, not kept).
fn push_limited(body: &mut Vec<u8>, bytes: &[u8], max: u64, too_large: &mut bool) {
    if *too_large || (body.len() + bytes.len()) as u64 > max {
        *too_large = true;
        body.clear();
        return;
    }
    body.extend_from_slice(bytes);
}

impl<R: BufRead> Iterator for TrecWebReader<R> {
    type Item = InputItem;

    fn next(&mut self) -> Option<InputItem> {
        if self.done && self.pending_doc.is_none() {
            return None;
        }
        self.record()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<InputItem> {
        TrecWebReader::new(text.as_bytes(), "f".into(), 1 << 20).collect()
    }

    #[test]
    fn gov2_record_gives_docno_url_and_charset() {
        let items = read(
            "<DOC>\n<DOCNO>GX000-00-0000001</DOCNO>\n<DOCHDR>\nhttp://www.nasa.gov/a.html\n\
             HTTP/1.1 200 OK\nContent-Type: text/html; charset=iso-8859-1\n</DOCHDR>\n\
             <html><body>caf\u{e9}</body></html>\n</DOC>\n",
        );
        let [InputItem::Doc(d)] = &items[..] else {
            panic!("{items:?}")
        };
        assert_eq!(d.key, "GX000-00-0000001");
        assert_eq!(d.url.as_deref(), Some("http://www.nasa.gov/a.html"));
        assert_eq!(d.charset.as_deref(), Some("iso-8859-1"));
        assert_eq!(d.format, crate::canonicalize::DocFormat::Html);
        assert_eq!(
            String::from_utf8_lossy(&d.bytes),
            "<html><body>caf\u{e9}</body></html>\n"
        );
    }

    #[test]
    fn wt10g_oldno_and_body_ending_on_the_doc_line() {
        let items = read(
            "<DOC>\n<DOCNO> WTX001-B01-1 </DOCNO>\n<DOCOLDNO>IA1-0001</DOCOLDNO>\n<DOCHDR>\n\
             http://x.org/\n</DOCHDR>\n<p>one</p>\n<p>two</p></DOC>\n\
             <DOC>\n<DOCNO>WTX001-B01-2</DOCNO>\nplain words\n</DOC>\n",
        );
        assert_eq!(items.len(), 2, "{items:?}");
        let InputItem::Doc(a) = &items[0] else {
            panic!()
        };
        assert_eq!(a.key, "WTX001-B01-1");
        assert_eq!(String::from_utf8_lossy(&a.bytes), "<p>one</p>\n<p>two</p>");
        let InputItem::Doc(b) = &items[1] else {
            panic!()
        };
        assert_eq!((b.key.as_str(), b.url.as_deref()), ("WTX001-B01-2", None));
        assert_eq!(String::from_utf8_lossy(&b.bytes), "plain words\n");
    }

    #[test]
    fn damage_is_named_and_reading_goes_on() {
        let items = read(
            "junk before\n<DOC>\n<DOCHDR>\nhttp://a/\n</DOCHDR>\nx\n</DOC>\n\
             <DOC>\n<DOCNO>B</DOCNO>\nunterminated\n<DOC>\n<DOCNO>C</DOCNO>\nc\n</DOC>\n\
             <DOC>\n<DOCNO>D</DOCNO>\nd",
        );
        let reasons: Vec<String> = items
            .iter()
            .map(|i| match i {
                InputItem::Doc(d) => format!("doc {}", d.key),
                InputItem::Bad { key, reason, .. } => format!("bad {key}: {reason}"),
            })
            .collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert!(reasons[0].contains("expected a <DOC> line, found \"junk before\""));
        assert!(reasons[1].contains("without a <DOCNO>"), "{reasons:?}");
        assert!(reasons[2].starts_with("bad B: TREC web record without </DOC>"));
        assert_eq!(reasons[3], "doc C");
        assert!(reasons[4].starts_with("bad D: truncated TREC web record"));
    }

    #[test]
    fn oversized_documents_are_bad_and_skipped() {
        let big = "w ".repeat(100);
        let text =
            format!("<DOC>\n<DOCNO>A</DOCNO>\n{big}\n</DOC>\n<DOC>\n<DOCNO>B</DOCNO>\nb\n</DOC>\n");
        let items: Vec<InputItem> = TrecWebReader::new(text.as_bytes(), "f".into(), 50).collect();
        assert!(matches!(&items[0], InputItem::Bad { key, reason, .. }
            if key == "A" && reason.contains("too large")));
        assert!(matches!(&items[1], InputItem::Doc(d) if d.key == "B"));
    }
}
