//! Glue between the html5gum tokenizer and the tree builder: an `Emitter` that turns tokenizer
//! callbacks into tree-construction tokens, without allocating per token.
//!
//! Attributes are ignored except the three that change tree construction (`input type`,
//! `font color/face/size`, `annotation-xml encoding`). The doctype is reduced to the quirks
//! flag, which only decides whether `<table>` closes an open `<p>`.

use std::convert::Infallible;

use html5gum::{Emitter, Error, Reader, State, Tokenizer};

use super::quirks::doctype_is_quirks;
use super::tags::{name_hash, Ns, Tag};
use super::tree::{AttrHint, TagTok, Tok, Tree};

/// The whole document through html5gum (the reference path of the fast scanner).
pub(super) fn parse_full(html: &[u8], glue: &mut Glue<'_>) {
    let tokenizer = Tokenizer::new_with_emitter(FastReader::new(html), glue);
    for step in tokenizer {
        match step {
            Ok(()) => {}
            Err(never) => match never {},
        }
    }
}

/// Parses `html` into `tree` with html5gum alone (tests compare the fast scanner with it).
#[cfg(test)]
pub(super) fn parse_reference(html: &[u8], tree: &mut Tree) {
    tree.dom.set_source(html);
    let mut glue = Glue::new(tree);
    parse_full(html, &mut glue);
}

/// Runs html5gum on `html[at..]` (in `state`, or the data state) until it has emitted a tag
/// that leaves the tokenizer in the data state, a comment or a doctype: the fast scanner's
/// fallback for every construct it does not handle. Returns the position after that token, or
/// None when html5gum reached the end of the input (the end-of-file token is then processed).
pub(super) fn step_full(
    html: &[u8],
    at: usize,
    absent: u64,
    state: Option<State>,
    glue: &mut Glue<'_>,
) -> Option<usize> {
    let rest = std::cell::Cell::new(&html[at..]);
    glue.step = true;
    glue.eof = false;
    let mut tokenizer = Tokenizer::new_with_emitter(
        CellReader {
            input: &rest,
            absent,
        },
        &mut *glue,
    );
    if let Some(s) = state {
        tokenizer.set_state(s);
    }
    let r = tokenizer.next();
    drop(tokenizer);
    glue.step = false;
    match r {
        Some(Ok(())) if !glue.eof => Some(html.len() - rest.get().len()),
        Some(Err(never)) => match never {},
        _ => None,
    }
}

/// The bytes of the set {NUL, CR} the input does not contain, as a mask (bit b: byte b).
pub(super) fn absent_mask(input: &[u8]) -> u64 {
    let mut absent = 0u64;
    for b in [0u8, b'\r'] {
        if memchr::memchr(b, input).is_none() {
            absent |= 1 << b;
        }
    }
    absent
}

/// html5gum's in-memory reader, with a cheaper `read_until`. The tokenizer asks for the next of
/// a few ASCII bytes (`<`, `&`, `\0`, `\r`, quotes, ...). Bytes the document does not contain at
/// all (NUL always, since `canonicalize` rejects it first; CR in most documents) are dropped
/// from the set once, which leaves at most three: short runs (most text between tags) are
/// scanned with two 64-bit masks, long ones (paragraphs, scripts, attribute values) with
/// memchr's SIMD search.
struct FastReader<'a> {
    input: &'a [u8],
    /// Bit b (b < 64) set: byte b never occurs in the input.
    absent: u64,
}

/// How many bytes `read_until` scans with the masks before it switches to memchr.
const SHORT_SCAN: usize = 16;

impl<'a> FastReader<'a> {
    fn new(input: &'a [u8]) -> FastReader<'a> {
        FastReader {
            input,
            absent: absent_mask(input),
        }
    }
}

/// The position of the first byte of `needle` in `input`, if any; `absent` is `absent_mask`.
#[inline(always)]
fn find(input: &[u8], absent: u64, needle: &[u8]) -> Option<usize> {
    // `needle` is a constant at every call site in html5gum, so the masks fold away.
    let (mut lo, mut hi) = (0u64, 0u64);
    for &n in needle {
        if n < 64 {
            lo |= 1 << n;
        } else if n < 128 {
            hi |= 1 << (n - 64);
        }
    }
    let hit = |b: u8| {
        if b < 64 {
            lo >> b & 1 != 0
        } else {
            b < 128 && hi >> (b - 64) & 1 != 0
        }
    };
    let short = input.len().min(SHORT_SCAN);
    if let Some(i) = input[..short].iter().position(|&b| hit(b)) {
        return Some(i);
    }
    let rest = &input[short..];
    if rest.is_empty() {
        return None;
    }
    // A long run: search only for the needle bytes the input can contain.
    let lo_present = lo & !absent;
    let mut set = [0u8; 3];
    let k = (lo_present.count_ones() + hi.count_ones()) as usize;
    if k <= set.len() {
        let mut j = 0;
        for (mut m, base) in [(lo_present, 0u8), (hi, 64)] {
            while m != 0 {
                set[j] = base + m.trailing_zeros() as u8;
                m &= m - 1;
                j += 1;
            }
        }
    }
    let found = match k {
        0 => None,
        1 => memchr::memchr(set[0], rest),
        2 => memchr::memchr2(set[0], set[1], rest),
        3 => memchr::memchr3(set[0], set[1], set[2], rest),
        _ => rest.iter().position(|&b| hit(b)),
    };
    found.map(|i| i + short)
}

impl<'a> FastReader<'a> {
    #[inline(always)]
    fn next_byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.input.split_first()?;
        self.input = rest;
        Some(b)
    }

    /// The input up to the first byte of `needle` (at least one byte), or all of it.
    #[inline(always)]
    fn chunk_until(&mut self, needle: &[u8]) -> Option<&'a [u8]> {
        if self.input.is_empty() {
            return None;
        }
        let len = match find(self.input, self.absent, needle) {
            Some(0) => 1,
            Some(i) => i,
            None => self.input.len(),
        };
        let (chunk, rest) = self.input.split_at(len);
        self.input = rest;
        Some(chunk)
    }

    #[inline(always)]
    fn skip_string(&mut self, s: &[u8], case_sensitive: bool) -> bool {
        match self.input.get(..s.len()) {
            Some(head) if head == s || (!case_sensitive && head.eq_ignore_ascii_case(s)) => {
                self.input = &self.input[s.len()..];
                true
            }
            _ => false,
        }
    }
}

impl<'a> Reader for FastReader<'a> {
    type Error = Infallible;

    #[inline(always)]
    fn read_byte(&mut self) -> Result<Option<u8>, Infallible> {
        Ok(self.next_byte())
    }

    #[inline(always)]
    fn read_until<'b>(
        &'b mut self,
        needle: &[u8],
        _: &'b mut [u8; 4],
    ) -> Result<Option<&'b [u8]>, Infallible> {
        Ok(self.chunk_until(needle))
    }

    #[inline(always)]
    fn try_read_string(&mut self, s: &[u8], case_sensitive: bool) -> Result<bool, Infallible> {
        Ok(self.skip_string(s, case_sensitive))
    }
}

/// `FastReader` over input whose unread rest lives in a `Cell`, so that the fast scanner can
/// see where html5gum stopped (`step_full`).
struct CellReader<'a, 'c> {
    input: &'c std::cell::Cell<&'a [u8]>,
    absent: u64,
}

impl<'a, 'c> CellReader<'a, 'c> {
    /// Runs `f` on a `FastReader` over the cell's input and stores where it stopped.
    #[inline(always)]
    fn with<R>(&mut self, f: impl FnOnce(&mut FastReader<'a>) -> R) -> R {
        let mut r = FastReader {
            input: self.input.get(),
            absent: self.absent,
        };
        let out = f(&mut r);
        self.input.set(r.input);
        out
    }
}

impl<'a, 'c> Reader for CellReader<'a, 'c> {
    type Error = Infallible;

    #[inline(always)]
    fn read_byte(&mut self) -> Result<Option<u8>, Infallible> {
        Ok(self.with(|r| r.next_byte()))
    }

    #[inline(always)]
    fn read_until<'b>(
        &'b mut self,
        needle: &[u8],
        _: &'b mut [u8; 4],
    ) -> Result<Option<&'b [u8]>, Infallible> {
        Ok(self.with(|r| r.chunk_until(needle)))
    }

    #[inline(always)]
    fn try_read_string(&mut self, s: &[u8], case_sensitive: bool) -> Result<bool, Infallible> {
        Ok(self.with(|r| r.skip_string(s, case_sensitive)))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum AttrKind {
    #[default]
    Unchecked,
    Ignored,
    Input,
    Font,
    AnnotationXml,
}

#[derive(Default)]
pub(super) struct Glue<'t> {
    pub(super) tree: Option<&'t mut Tree>,
    /// `step_full` is running: `stop` after each token that leaves html5gum in the data state.
    step: bool,
    stop: bool,
    /// The end-of-file token has been processed.
    eof: bool,
    pub(super) name: Vec<u8>,
    pub(super) last_start: Vec<u8>,
    is_end: bool,
    self_closing: bool,
    attr: AttrHint,
    attr_kind: AttrKind,
    attr_name: Vec<u8>,
    attr_value: Vec<u8>,
    doctype_name: Vec<u8>,
    public_id: Option<Vec<u8>>,
    system_id: Option<Vec<u8>>,
    force_quirks: bool,
}

impl<'t> Glue<'t> {
    /// Glue that feeds `tree`.
    pub(super) fn new(tree: &'t mut Tree) -> Glue<'t> {
        Glue {
            tree: Some(tree),
            ..Glue::default()
        }
    }

    pub(super) fn process(&mut self, tok: Tok<'_>) {
        if let Some(tree) = self.tree.as_deref_mut() {
            tree.process(tok);
        }
    }

    /// `process(Tok::Chars(s))` without building the token.
    #[inline]
    pub(super) fn chars(&mut self, s: &[u8]) {
        if let Some(tree) = self.tree.as_deref_mut() {
            tree.process_chars(s);
        }
    }

    /// `process(Tok::End(t))` if `end`, else `process(Tok::Start(t))`, without building the
    /// token.
    #[inline]
    pub(super) fn tag(&mut self, end: bool, t: TagTok) {
        if let Some(tree) = self.tree.as_deref_mut() {
            tree.process_tag(end, t);
        }
    }

    /// Applies the attribute just completed, if it is one of the three that matter.
    fn finish_attribute(&mut self) {
        let (n, v) = (&self.attr_name, &self.attr_value);
        match self.attr_kind {
            AttrKind::Input if n.eq_ignore_ascii_case(b"type") => {
                self.attr.input_hidden = v.eq_ignore_ascii_case(b"hidden");
            }
            AttrKind::Font
                if [&b"color"[..], b"face", b"size"]
                    .iter()
                    .any(|a| n.eq_ignore_ascii_case(a)) =>
            {
                self.attr.font_breakout = true;
            }
            AttrKind::AnnotationXml if n.eq_ignore_ascii_case(b"encoding") => {
                self.attr.html_annotation = v.eq_ignore_ascii_case(b"text/html")
                    || v.eq_ignore_ascii_case(b"application/xhtml+xml");
            }
            _ => {}
        }
        self.attr_name.clear();
        self.attr_value.clear();
    }

    fn init_tag(&mut self, is_end: bool) {
        self.name.clear();
        self.is_end = is_end;
        self.self_closing = false;
        self.attr = AttrHint::default();
        self.attr_kind = AttrKind::Unchecked;
        self.attr_name.clear();
        self.attr_value.clear();
    }
}

impl<'g, 't> Emitter for &'g mut Glue<'t> {
    type Token = ();

    fn set_last_start_tag(&mut self, last_start_tag: Option<&[u8]>) {
        self.last_start.clear();
        self.last_start
            .extend_from_slice(last_start_tag.unwrap_or_default());
    }

    fn emit_eof(&mut self) {
        self.eof = true;
        self.process(Tok::Eof);
    }

    fn emit_error(&mut self, _error: Error) {}

    fn should_emit_errors(&mut self) -> bool {
        false
    }

    fn pop_token(&mut self) -> Option<Self::Token> {
        if self.stop {
            self.stop = false;
            Some(())
        } else {
            None
        }
    }

    fn emit_string(&mut self, c: &[u8]) {
        if !c.is_empty() {
            self.chars(c);
        }
    }

    fn init_start_tag(&mut self) {
        self.init_tag(false);
    }

    fn init_end_tag(&mut self) {
        self.init_tag(true);
    }

    fn init_comment(&mut self) {}

    fn emit_current_tag(&mut self) -> Option<State> {
        if self.attr_kind != AttrKind::Unchecked && self.attr_kind != AttrKind::Ignored {
            self.finish_attribute();
        }
        let tag = Tag::from_name(&self.name);
        let hash = if tag == Tag::Other {
            name_hash(&self.name)
        } else {
            0
        };
        let t = TagTok {
            tag,
            hash,
            self_closing: self.self_closing,
            attr: self.attr,
        };
        let next = if self.is_end {
            self.tag(true, t);
            None
        } else {
            self.tag(false, t);
            let Glue {
                last_start, name, ..
            } = &mut **self;
            std::mem::swap(last_start, name);
            self.tree
                .as_deref_mut()
                .and_then(|tree| tree.next_state.take())
        };
        self.stop = self.step && next.is_none();
        next
    }

    fn emit_current_comment(&mut self) {
        self.process(Tok::Comment);
        self.stop = self.step;
    }

    fn emit_current_doctype(&mut self) {
        let quirks = doctype_is_quirks(
            &self.doctype_name,
            self.public_id.as_deref(),
            self.system_id.as_deref(),
            self.force_quirks,
        );
        self.process(Tok::Doctype { quirks });
        self.stop = self.step;
    }

    fn set_self_closing(&mut self) {
        self.self_closing = true;
    }

    fn set_force_quirks(&mut self) {
        self.force_quirks = true;
    }

    fn push_tag_name(&mut self, s: &[u8]) {
        self.name.extend_from_slice(s);
    }

    fn push_comment(&mut self, _s: &[u8]) {}

    fn push_doctype_name(&mut self, s: &[u8]) {
        self.doctype_name.extend_from_slice(s);
    }

    fn init_doctype(&mut self) {
        self.doctype_name.clear();
        self.public_id = None;
        self.system_id = None;
        self.force_quirks = false;
    }

    fn init_attribute(&mut self) {
        match self.attr_kind {
            AttrKind::Unchecked => {
                // The tag name is complete once the first attribute starts.
                self.attr_kind = match self.name.as_slice() {
                    _ if self.is_end => AttrKind::Ignored,
                    b"input" => AttrKind::Input,
                    b"font" => AttrKind::Font,
                    b"annotation-xml" => AttrKind::AnnotationXml,
                    _ => AttrKind::Ignored,
                };
            }
            AttrKind::Ignored => {}
            _ => self.finish_attribute(),
        }
    }

    fn push_attribute_name(&mut self, s: &[u8]) {
        if !matches!(self.attr_kind, AttrKind::Ignored | AttrKind::Unchecked) {
            self.attr_name.extend_from_slice(s);
        }
    }

    fn push_attribute_value(&mut self, s: &[u8]) {
        if !matches!(self.attr_kind, AttrKind::Ignored | AttrKind::Unchecked) {
            self.attr_value.extend_from_slice(s);
        }
    }

    fn set_doctype_public_identifier(&mut self, value: &[u8]) {
        self.public_id = Some(value.to_vec());
    }

    fn set_doctype_system_identifier(&mut self, value: &[u8]) {
        self.system_id = Some(value.to_vec());
    }

    fn push_doctype_public_identifier(&mut self, s: &[u8]) {
        self.public_id
            .get_or_insert_with(Vec::new)
            .extend_from_slice(s);
    }

    fn push_doctype_system_identifier(&mut self, s: &[u8]) {
        self.system_id
            .get_or_insert_with(Vec::new)
            .extend_from_slice(s);
    }

    fn current_is_appropriate_end_tag_token(&mut self) -> bool {
        self.is_end && !self.last_start.is_empty() && self.name == self.last_start
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&mut self) -> bool {
        self.tree.as_deref().is_some_and(|t| t.cur().ns != Ns::Html)
    }
}
