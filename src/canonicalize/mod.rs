//! Canonical text: the one definition of "the words of a document" that every fingerprint is
//! computed from (format-spec/canonical-text.md).
//!
//! HTML goes through a conforming HTML5 tokenizer (html5gum) and a tree-construction simulation
//! (`tree.rs`) so that the body text, its order and its word boundaries are those of an HTML5
//! parser (the reference is lexbor via Python's selectolax); plain text skips that stage. Both
//! then get Python's `str.lower()` and `\w+` word rule (`words.rs`).

mod charset;
mod dom;
mod foreign;
mod formatting;
mod html;
mod modes_body;
mod modes_head;
mod modes_table;
#[cfg(any(test, feature = "oracle"))]
#[doc(hidden)]
pub mod oracle;
mod quirks;
mod scan;
mod stack;
mod tables;
mod tags;
mod tree;
mod words;

#[cfg(test)]
mod tests;

use std::fmt;

/// How a document's bytes are to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocFormat {
    Html,
    Text,
}

/// Canonical text: lowercase words joined by single ASCII spaces, no leading/trailing space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Canonical {
    pub text: String,
}

impl Canonical {
    /// The words, in order (an empty iterator for empty text).
    pub fn words(&self) -> impl Iterator<Item = &str> + '_ {
        self.text.split(' ').filter(|w| !w.is_empty())
    }

    pub fn word_count(&self) -> usize {
        if self.text.is_empty() {
            0
        } else {
            count_byte(self.text.as_bytes(), b' ') + 1
        }
    }
}

/// Which text of an HTML document is canonical (format-spec/canonical-text.md, step 5 and
/// "Main-content extraction"). A creation option of an index (`--extract`), since it changes
/// every fingerprint. Plain text is the same in both modes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub enum Extract {
    /// All the body's text (the shared corpus's truth; the default).
    #[default]
    Body,
    /// The body's text without navigation, header, footer, aside and link-dense blocks; the
    /// whole body when nothing else is left.
    Main,
}

impl Extract {
    pub fn as_str(self) -> &'static str {
        match self {
            Extract::Body => "body",
            Extract::Main => "main",
        }
    }
}

impl fmt::Display for Extract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for Extract {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Extract> for String {
    fn from(e: Extract) -> String {
        e.as_str().to_owned()
    }
}

impl std::str::FromStr for Extract {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "body" => Ok(Extract::Body),
            "main" => Ok(Extract::Main),
            _ => Err(format!("unknown extraction {s:?} (expected body or main)")),
        }
    }
}

/// Why a document was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The decoded text contains NUL characters: not a text document.
    Binary,
    /// The document has no words (empty, whitespace, or markup without body text).
    Empty,
    /// The document is larger than this implementation accepts.
    TooLarge { bytes: u64, limit: u64 },
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Binary => f.write_str("binary data (NUL bytes)"),
            Rejection::Empty => f.write_str("no words (empty, whitespace or markup only)"),
            Rejection::TooLarge { bytes, limit } => {
                write!(f, "too large ({bytes} bytes; the limit is {limit})")
            }
        }
    }
}

impl std::error::Error for Rejection {}

/// The largest document `canonicalize` accepts (the tree arena indexes nodes with u32).
pub const MAX_CANONICALIZE_BYTES: u64 = 2 << 30;

/// Per-thread allocations reused from one HTML document to the next (the tree builder's arenas
/// and the body text): allocating them per document cost page faults and reallocation copies
/// worth about a tenth of the parse time.
#[derive(Default)]
struct Scratch {
    tree: Option<tree::Tree>,
    raw: Vec<u8>,
}

/// A thread keeps its scratch only while it holds at most this much heap, so one huge document
/// does not pin its arenas for the life of the thread.
const MAX_SCRATCH_BYTES: usize = 32 << 20;

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

/// Canonicalizes one document (all its body text, `Extract::Body`). `charset_hint` is the
/// transport's declared charset (HTTP `Content-Type`), which wins over an in-document
/// `<meta charset>`.
pub fn canonicalize(
    bytes: &[u8],
    format: DocFormat,
    charset_hint: Option<&str>,
) -> Result<Canonical, Rejection> {
    canonicalize_with(bytes, format, charset_hint, Extract::Body)
}

/// Canonicalizes one document with the given extraction (an index's `--extract`).
pub fn canonicalize_with(
    bytes: &[u8],
    format: DocFormat,
    charset_hint: Option<&str>,
    extract: Extract,
) -> Result<Canonical, Rejection> {
    if bytes.len() as u64 > MAX_CANONICALIZE_BYTES {
        return Err(Rejection::TooLarge {
            bytes: bytes.len() as u64,
            limit: MAX_CANONICALIZE_BYTES,
        });
    }
    let text = charset::decode(bytes, charset_hint, format == DocFormat::Html);
    // HTML without NUL and CR (most pages) takes the fast scanner: one pass answers both.
    let clean = format == DocFormat::Html && memchr::memchr2(0, b'\r', &text).is_none();
    if !clean && memchr::memchr(0, &text).is_some() {
        return Err(Rejection::Binary);
    }
    let mut out = Vec::with_capacity(text.len() / 2);
    match format {
        DocFormat::Html => SCRATCH.with(|cell| {
            // Taken, not borrowed: a panic mid-parse leaves None behind, never a broken tree.
            let mut scratch = cell.take().unwrap_or_default();
            let mut tree = match scratch.tree.take() {
                Some(t) => t.recycle(),
                None => tree::Tree::new(),
            };
            scratch.raw.clear();
            scan::parse_known(&text, &mut tree, clean);
            if extract == Extract::Main {
                tree.main_text(&text, &mut scratch.raw);
                words::append_words(&scratch.raw, &mut out);
                // Nothing but boilerplate: the page's words are its whole body.
                if out.is_empty() {
                    scratch.raw.clear();
                }
            }
            if out.is_empty() {
                tree.body_words(&text, &mut out, &mut scratch.raw);
            }
            if tree.heap_bytes() + scratch.raw.capacity() <= MAX_SCRATCH_BYTES {
                scratch.tree = Some(tree);
                cell.set(Some(scratch));
            }
        }),
        DocFormat::Text => words::append_words(&text, &mut out),
    }
    if out.is_empty() {
        return Err(Rejection::Empty);
    }
    // append_words writes ASCII bytes and whole encoded chars only, so this never falls back.
    let text = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(Canonical { text })
}

/// How many times `needle` occurs in `hay` (the words of a canonical text are its spaces plus
/// one). Eight bytes at a time (SWAR): each byte equal to `needle` becomes a 1 in its byte
/// lane of an accumulator, which is summed every 255 words. (A version with 32 u8 lane
/// counters left the vectorizing to the compiler, which loaded the bytes one by one.)
pub fn count_byte(hay: &[u8], needle: u8) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const PAIRS: u64 = 0x00FF_00FF_00FF_00FF;
    let pat = LO * u64::from(needle);
    // The sum of the eight byte lanes of `acc` (each at most 255).
    let lanes = |acc: u64| {
        let pairs = (acc & PAIRS) + ((acc >> 8) & PAIRS);
        (pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize
    };
    let mut total = 0;
    let mut words = hay.chunks_exact(8);
    loop {
        let mut acc = 0u64;
        let mut k = 0;
        for c in words.by_ref().take(255) {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            let x = u64::from_le_bytes(a) ^ pat;
            // High bit of a byte set iff the byte of x is zero (no carries between bytes).
            let zero = !(((x & LOW7) + LOW7) | x | LOW7);
            acc += zero >> 7;
            k += 1;
        }
        total += lanes(acc);
        if k < 255 {
            break;
        }
    }
    total + words.remainder().iter().filter(|&&x| x == needle).count()
}

/// Guesses the format: by the name's extension, else by looking for HTML markup near the start.
pub fn sniff_format(name_hint: Option<&str>, bytes: &[u8]) -> DocFormat {
    if let Some(name) = name_hint {
        let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
        if let Some((_, ext)) = base.rsplit_once('.') {
            let ext = ext.to_ascii_lowercase();
            match ext.as_str() {
                "html" | "htm" | "xhtml" | "xht" | "shtml" => return DocFormat::Html,
                "txt" | "text" | "md" | "rst" => return DocFormat::Text,
                _ => {}
            }
        }
    }
    let head = &bytes[..bytes.len().min(1024)];
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    const MARKERS: &[&[u8]] = &[
        b"<!doctype html",
        b"<html",
        b"<head",
        b"<body",
        b"<title",
        b"<meta",
        b"<div",
        b"<p>",
        b"<p ",
        b"<br",
        b"<table",
        b"<a href",
        b"<h1",
        b"<script",
        b"<!--",
    ];
    let is_html = MARKERS
        .iter()
        .any(|m| lower.windows(m.len()).any(|w| w == *m));
    if is_html {
        DocFormat::Html
    } else {
        DocFormat::Text
    }
}
