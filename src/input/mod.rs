//! Document input: files, directories, WARC and JSON Lines, streamed one document at a time.
//!
//! `read_inputs` turns command-line paths into a stream of `InputItem`s. Memory stays at about
//! one document plus read buffers: directories are listed (names only) up front, record files
//! (WARC, JSONL, and their .gz forms) are read record by record. Bad input never ends the
//! stream: every unreadable file, damaged record or oversized document becomes an
//! `InputItem::Bad` with a reason, and reading goes on with the next one.

mod arc;
mod fs;
#[doc(hidden)]
pub mod fuzz;
mod jsonl;
pub mod site;
mod trecweb;
mod warc;

use std::collections::VecDeque;
use std::io::{self, BufRead};
use std::path::PathBuf;

use crate::canonicalize::DocFormat;

/// How inputs are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputOptions {
    /// JSONL field holding the document key (a string or a number).
    pub jsonl_id_field: String,
    /// JSONL field holding plain text (used when the HTML field is absent).
    pub jsonl_text_field: String,
    /// JSONL field holding HTML.
    pub jsonl_html_field: String,
    /// JSONL field holding the document's URL (kept in the catalog; gives the site).
    pub jsonl_url_field: String,
    /// Documents larger than this (in bytes, after decompression) are reported as `Bad`.
    pub max_doc_bytes: u64,
}

impl Default for InputOptions {
    fn default() -> Self {
        InputOptions {
            jsonl_id_field: "id".to_string(),
            jsonl_text_field: "text".to_string(),
            jsonl_html_field: "html".to_string(),
            jsonl_url_field: "url".to_string(),
            max_doc_bytes: 256 << 20,
        }
    }
}

/// One document, not yet canonicalized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawDoc {
    /// Relative path, path as given, WARC-TREC-ID or WARC-Target-URI, TREC DOCNO, ARC URL,
    /// or JSONL id.
    pub key: String,
    /// The document's URL when its container names one (WARC-Target-URI, the first line of a
    /// TREC web DOCHDR, the ARC record line); kept in the catalog's doc record.
    pub url: Option<String>,
    pub bytes: Vec<u8>,
    pub format: DocFormat,
    /// Charset declared by the container (HTTP Content-Type in WARC; "utf-8" for JSONL).
    pub charset: Option<String>,
    /// Where it came from, for messages: file, plus record offset or line.
    pub origin: String,
}

impl RawDoc {
    /// A document its container says nothing more about (no URL, no declared charset): a file
    /// or an in-memory document.
    pub fn bare(key: String, bytes: Vec<u8>, format: DocFormat, origin: String) -> RawDoc {
        RawDoc {
            key,
            url: None,
            bytes,
            format,
            charset: None,
            origin,
        }
    }
}

/// An item of the input stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputItem {
    Doc(RawDoc),
    Bad {
        key: String,
        origin: String,
        reason: String,
    },
}

impl InputItem {
    pub(crate) fn bad(
        key: impl Into<String>,
        origin: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        InputItem::Bad {
            key: key.into(),
            origin: origin.into(),
            reason: reason.into(),
        }
    }
}

/// Streams the documents of `paths`: files, directories (recursive, in bytewise order of their
/// relative paths), `.warc`/`.warc.gz`, `.jsonl`/`.ndjson` (optionally `.gz`), other `.gz` files
/// (gunzipped, then treated by their inner name). See format-spec/canonical-text.md, "Inputs".
pub fn read_inputs(
    paths: Vec<PathBuf>,
    opts: InputOptions,
) -> impl Iterator<Item = InputItem> + Send {
    Inputs {
        queue: paths.into_iter().map(fs::Pending::TopLevel).collect(),
        current: None,
        opts,
        ahead: fs::ReadAhead::default(),
    }
}

/// What an ingest or add reads: paths (files, directories, WARC, JSONL) or documents already
/// in memory (the Python package, the server). Both become the same stream of `InputItem`s.
pub enum Source {
    /// Files, directories (recursive), `.warc[.gz]`, `.jsonl[.gz]`: see [`read_inputs`].
    Paths(Vec<PathBuf>),
    /// `(key, bytes)` documents; the format (HTML or text) is sniffed from the key's extension
    /// and the bytes, as for a file.
    Docs(Vec<(String, Vec<u8>)>),
    /// `(key, bytes, format)` documents of a known format.
    DocsWithFormat(Vec<(String, Vec<u8>, DocFormat)>),
}

impl From<Vec<PathBuf>> for Source {
    fn from(paths: Vec<PathBuf>) -> Self {
        Source::Paths(paths)
    }
}

impl From<Vec<(String, Vec<u8>)>> for Source {
    fn from(docs: Vec<(String, Vec<u8>)>) -> Self {
        Source::Docs(docs)
    }
}

/// Streams the documents of `source`. In-memory documents get the same checks as read ones:
/// an empty key or a document over `max_doc_bytes` is an `InputItem::Bad` naming it.
pub fn read_source(
    source: Source,
    opts: InputOptions,
) -> Box<dyn Iterator<Item = InputItem> + Send> {
    let max = opts.max_doc_bytes;
    let memory = move |i: usize, key: String, bytes: Vec<u8>, format: Option<DocFormat>| {
        memory_item(i, key, bytes, format, max)
    };
    match source {
        Source::Paths(paths) => Box::new(read_inputs(paths, opts)),
        Source::Docs(docs) => Box::new(
            docs.into_iter()
                .enumerate()
                .map(move |(i, (k, b))| memory(i, k, b, None)),
        ),
        Source::DocsWithFormat(docs) => Box::new(
            docs.into_iter()
                .enumerate()
                .map(move |(i, (k, b, f))| memory(i, k, b, Some(f))),
        ),
    }
}

/// The `i`-th in-memory document of a source as an input item: empty keys and documents
/// over `max_doc_bytes` are `InputItem::Bad` ([`memory_check`]); the format, unless given,
/// is sniffed from the key and the bytes.
pub fn memory_item(
    i: usize,
    key: String,
    bytes: Vec<u8>,
    format: Option<DocFormat>,
    max_doc_bytes: u64,
) -> InputItem {
    let origin = memory_origin(i);
    if let Err(reason) = memory_check(&key, bytes.len() as u64, max_doc_bytes) {
        return InputItem::bad(key, origin, reason);
    }
    let format = format.unwrap_or_else(|| crate::canonicalize::sniff_format(Some(&key), &bytes));
    InputItem::Doc(RawDoc::bare(key, bytes, format, origin))
}

/// The origin named in messages about the `i`-th in-memory document of a source.
pub fn memory_origin(i: usize) -> String {
    format!("<memory>#{i}")
}

/// The checks of an in-memory document: a key, and at most `max_doc_bytes` bytes.
pub fn memory_check(key: &str, len: u64, max_doc_bytes: u64) -> Result<(), String> {
    if key.is_empty() {
        return Err("empty document key".into());
    }
    if len > max_doc_bytes {
        return Err(format!(
            "document of {len} bytes is over the {max_doc_bytes}-byte limit"
        ));
    }
    Ok(())
}

/// A source of several items (a record file being read).
pub(crate) type Records = Box<dyn Iterator<Item = InputItem> + Send>;

struct Inputs {
    queue: VecDeque<fs::Pending>,
    current: Option<Records>,
    opts: InputOptions,
    ahead: fs::ReadAhead,
}

impl Iterator for Inputs {
    type Item = InputItem;

    fn next(&mut self) -> Option<InputItem> {
        loop {
            if let Some(records) = &mut self.current {
                if let Some(item) = records.next() {
                    return Some(item);
                }
                self.current = None;
            }
            let pending = self.queue.pop_front()?;
            self.ahead.taken(&pending);
            self.ahead.fill(&mut self.queue);
            match fs::open(pending, &self.opts) {
                fs::Opened::Item(item) => return Some(item),
                fs::Opened::Records(records) => self.current = Some(records),
                fs::Opened::Expand(entries) => {
                    for e in entries.into_iter().rev() {
                        self.queue.push_front(e);
                    }
                    self.ahead.pushed_front();
                }
            }
        }
    }
}

/// Reads one line (through `\n`) into `buf`, keeping at most `max` bytes of it; the rest of an
/// overlong line is consumed and dropped. Returns the number of bytes consumed (0 at the end).
pub(crate) fn read_line_bounded(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<usize> {
    buf.clear();
    let mut consumed = 0;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        r.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

/// Document format from a media type (`text/html; charset=...`), if it names a document type.
pub(crate) fn format_of_media_type(content_type: &str) -> Option<DocFormat> {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "text/html" | "application/xhtml+xml" => Some(DocFormat::Html),
        "text/plain" => Some(DocFormat::Text),
        _ => None,
    }
}

/// The `charset` parameter of a Content-Type value.
pub(crate) fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
    })
}

#[cfg(test)]
mod tests;
