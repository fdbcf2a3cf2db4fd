//! HTML5 tree construction (WHATWG HTML, section 13.2.6), reduced to what decides body text.
//!
//! The reference canonicalization parses with lexbor, a conforming HTML5 parser. Which text ends
//! up under `<body>`, in which order, and split into which text nodes is decided by the
//! tree-construction stage, not by the tokenizer: text before `<body>` is moved into the body,
//! text in tables is foster-parented before the table, a stray `</span>` is ignored (so `a</span>b`
//! is one word) while a comment is a node (so `a<!---->b` is two). This module follows the spec's
//! algorithm (stack of open elements, list of active formatting elements, insertion modes,
//! foster parenting, the adoption agency algorithm, foreign content) over the small DOM of
//! `dom.rs`. It skips what cannot change text: attributes (except the three that change parsing),
//! namespaced tag-name adjustment and scripting (off, as in lexbor). Template contents are
//! built as children of the template element, which the text walk skips.
//!
//! This file holds the token types, the builder state and the dispatcher; the stack of open
//! elements and node insertion are in `stack.rs`, the insertion-mode rules in `modes_head.rs`,
//! `modes_body.rs` and `modes_table.rs`, SVG/MathML in `foreign.rs`, and the list of active
//! formatting elements in `formatting.rs`.

use html5gum::State;

use super::dom::{Dom, NodeId, NIL};
use super::tags::{is_special, Ns, Tag, TAG_COUNT};

/// The insertion modes of the spec ("in select" and "in select in table" are gone since the
/// 2025 customizable-select change, which lexbor follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Initial,
    BeforeHtml,
    BeforeHead,
    InHead,
    InHeadNoscript,
    AfterHead,
    InBody,
    Text,
    InTable,
    InTableText,
    InCaption,
    InColumnGroup,
    InTableBody,
    InRow,
    InCell,
    InTemplate,
    AfterBody,
    AfterAfterBody,
    /// In frameset / after frameset / after after frameset: a frameset page has no body text.
    Frameset,
}

/// The attributes that change tree construction, extracted by the tokenizer glue.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct AttrHint {
    /// `<input type=hidden>` is not foster-parented out of tables.
    pub(super) input_hidden: bool,
    /// `<font color|face|size>` breaks out of SVG/MathML content.
    pub(super) font_breakout: bool,
    /// `<annotation-xml encoding=text/html|application/xhtml+xml>` is an HTML integration point.
    pub(super) html_annotation: bool,
}

/// A start or end tag token.
#[derive(Clone, Copy, Debug)]
pub(super) struct TagTok {
    pub(super) tag: Tag,
    /// Name hash, used to match `Tag::Other` names; 0 for known tags.
    pub(super) hash: u64,
    pub(super) self_closing: bool,
    pub(super) attr: AttrHint,
}

impl TagTok {
    pub(super) fn plain(tag: Tag) -> TagTok {
        TagTok {
            tag,
            hash: 0,
            self_closing: false,
            attr: AttrHint::default(),
        }
    }
}

/// A token from the tokenizer.
#[derive(Clone, Copy, Debug)]
pub(super) enum Tok<'a> {
    Start(TagTok),
    End(TagTok),
    Chars(&'a [u8]),
    Comment,
    Doctype { quirks: bool },
    Eof,
}

/// What a rule asks the dispatcher to do next.
pub(super) enum Step<'a> {
    Done,
    /// Reprocess this token (in the current, possibly changed, insertion mode).
    Again(Tok<'a>),
}

/// An entry of the stack of open elements.
#[derive(Clone, Copy, Debug)]
pub(super) struct Open {
    pub(super) node: NodeId,
    pub(super) tag: Tag,
    pub(super) ns: Ns,
    pub(super) hash: u64,
    /// MathML annotation-xml that is an HTML integration point.
    pub(super) html_ip: bool,
}

impl Open {
    pub(super) fn is(&self, tag: Tag) -> bool {
        self.ns == Ns::Html && self.tag == tag
    }

    /// Same element name as the token (namespace aside).
    pub(super) fn same_name(&self, t: &TagTok) -> bool {
        self.tag == t.tag && (t.tag != Tag::Other || self.hash == t.hash)
    }
}

/// An entry of the list of active formatting elements (`node == NIL` is a marker).
#[derive(Clone, Copy, Debug)]
pub(super) struct Fmt {
    pub(super) node: NodeId,
    pub(super) tag: Tag,
}

const MARKER: Fmt = Fmt {
    node: NIL,
    tag: Tag::Other,
};

/// The tree builder's state.
pub(super) struct Tree {
    pub(super) dom: Dom,
    pub(super) stack: Vec<Open>,
    pub(super) afe: Vec<Fmt>,
    /// `open[node]`: the element is on the stack of open elements.
    pub(super) open: Vec<bool>,
    /// Number of HTML elements of each tag on the stack, so that "has a p element in button
    /// scope" is O(1) when there is none (without it, 100,000 nested `<div>`s take quadratic
    /// time, as they do in the reference parser).
    pub(super) counts: [u32; TAG_COUNT],
    pub(super) mode: Mode,
    pub(super) orig_mode: Mode,
    pub(super) head: NodeId,
    pub(super) body: NodeId,
    pub(super) form: NodeId,
    pub(super) frameset_ok: bool,
    pub(super) quirks: bool,
    pub(super) foster: bool,
    /// The stack of template insertion modes.
    pub(super) template_modes: Vec<Mode>,
    pub(super) pending: Vec<u8>,
    pub(super) pending_nonws: bool,
    /// Tokenizer state the last start tag switches to (RCDATA, RAWTEXT, ...).
    pub(super) next_state: Option<State>,
}

/// HTML whitespace (defined with the DOM arena, which measures text by it).
pub(super) use super::dom::is_ws;

pub(super) fn all_ws(s: &[u8]) -> bool {
    s.iter().all(|&b| is_ws(b))
}

impl Tree {
    pub(super) fn new() -> Tree {
        Tree::with_buffers(
            Dom::new(),
            Vec::with_capacity(64),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        )
    }

    /// A fresh tree that reuses this one's allocations (emptied): parsing many documents on one
    /// thread then allocates, grows and page-faults its arenas once instead of per document.
    /// The destructuring names every field, so a new field cannot be forgotten here.
    pub(super) fn recycle(self) -> Tree {
        let Tree {
            mut dom,
            mut stack,
            mut afe,
            mut open,
            counts: _,
            mode: _,
            orig_mode: _,
            head: _,
            body: _,
            form: _,
            frameset_ok: _,
            quirks: _,
            foster: _,
            mut template_modes,
            mut pending,
            pending_nonws: _,
            next_state: _,
        } = self;
        dom.clear();
        stack.clear();
        afe.clear();
        open.clear();
        template_modes.clear();
        pending.clear();
        Tree::with_buffers(dom, stack, afe, open, template_modes, pending)
    }

    /// Bytes of heap the tree holds (what keeping it for reuse costs).
    pub(super) fn heap_bytes(&self) -> usize {
        self.dom.heap_bytes()
            + self.stack.capacity() * std::mem::size_of::<Open>()
            + self.afe.capacity() * std::mem::size_of::<Fmt>()
            + self.open.capacity()
            + self.template_modes.capacity()
            + self.pending.capacity()
    }

    fn with_buffers(
        mut dom: Dom,
        stack: Vec<Open>,
        afe: Vec<Fmt>,
        open: Vec<bool>,
        template_modes: Vec<Mode>,
        pending: Vec<u8>,
    ) -> Tree {
        debug_assert!(stack.is_empty() && afe.is_empty() && open.is_empty());
        debug_assert!(template_modes.is_empty() && pending.is_empty());
        let html = dom.new_element(Tag::Html);
        let mut t = Tree {
            dom,
            stack,
            afe,
            open,
            counts: [0; TAG_COUNT],
            mode: Mode::Initial,
            orig_mode: Mode::InBody,
            head: NIL,
            body: NIL,
            form: NIL,
            frameset_ok: true,
            quirks: false,
            foster: false,
            template_modes,
            pending,
            pending_nonws: false,
            next_state: None,
        };
        // The html element is always at the bottom of the stack; no rule ever pops it.
        t.push(Open {
            node: html,
            tag: Tag::Html,
            ns: Ns::Html,
            hash: 0,
            html_ip: false,
        });
        t
    }

    /// Runs one token through the tree-construction dispatcher.
    pub(super) fn process(&mut self, tok: Tok<'_>) {
        match tok {
            Tok::Chars(s) => self.process_chars(s),
            Tok::Start(t) => self.process_tag(false, t),
            Tok::End(t) => self.process_tag(true, t),
            _ => self.dispatch(tok),
        }
    }

    /// `process(Tok::Chars(s))`. The most common token, text in the body inside an HTML
    /// element with nothing to reconstruct and no foster parenting, goes straight to the DOM
    /// (what in_body would do, minus dispatch).
    #[inline]
    pub(super) fn process_chars(&mut self, s: &[u8]) {
        if self.mode == Mode::InBody {
            if let Some(node) = self.direct_text_target() {
                self.dom.insert_text(node, NIL, s);
                return;
            }
        }
        self.chars_other(s);
    }

    /// `process_chars` outside the in-body mode's direct path. Text in a table cell takes the
    /// same direct path: the "in cell" rules send character tokens to the in-body rules.
    #[inline(never)]
    fn chars_other(&mut self, s: &[u8]) {
        if self.mode == Mode::InCell {
            if let Some(node) = self.direct_text_target() {
                self.dom.insert_text(node, NIL, s);
                return;
            }
        }
        self.dispatch(Tok::Chars(s));
    }

    /// Where the in-body rules put a character token, if that is simply the end of the
    /// current node: an HTML current node, `frameset-ok` already "not ok" (so the rules do
    /// not change it), nothing to reconstruct in the active formatting elements, and no
    /// foster parenting (only on while the in-table rules run).
    #[inline(always)]
    fn direct_text_target(&self) -> Option<NodeId> {
        let c = self.cur();
        (c.ns == Ns::Html
            && !self.frameset_ok
            && self
                .afe
                .last()
                .is_none_or(|f| f.node == NIL || self.is_open(f.node)))
        .then_some(c.node)
    }

    /// `process(Tok::End(t))` if `end`, else `process(Tok::Start(t))`. In the body with an
    /// HTML current node (no foreign rules: `use_foreign_rules` is false for every token
    /// there), the tag goes straight to the in-body rules: the token is not built and copied
    /// through the dispatcher (its byte-wise stores and wide reloads stalled store
    /// forwarding).
    #[inline]
    pub(super) fn process_tag(&mut self, end: bool, t: TagTok) {
        if self.mode == Mode::InBody && self.cur().ns == Ns::Html {
            self.body_tag(end, t);
            return;
        }
        self.tag_other(end, t);
    }

    /// A tag for the in-body rules, then the dispatcher if they ask to reprocess it.
    #[inline(always)]
    fn body_tag(&mut self, end: bool, t: TagTok) {
        let step = if end {
            self.body_end(t)
        } else {
            self.body_start(t)
        };
        if let Step::Again(tok) = step {
            self.dispatch(tok);
        }
    }

    /// `process_tag` outside the in-body mode's direct path. In a table cell with an HTML
    /// current node, every tag the "in cell" rules do not name (`in_cell_names`) takes the
    /// same direct path: those rules send it to the in-body rules.
    #[inline(never)]
    fn tag_other(&mut self, end: bool, t: TagTok) {
        if self.mode == Mode::InCell && !in_cell_names(end, t.tag) && self.cur().ns == Ns::Html {
            self.body_tag(end, t);
            return;
        }
        self.dispatch(if end { Tok::End(t) } else { Tok::Start(t) });
    }

    /// The dispatcher: the current insertion mode's rules (or foreign content's), until a
    /// rule is done with the token.
    #[inline(never)]
    fn dispatch(&mut self, tok: Tok<'_>) {
        let mut tok = tok;
        // Every reprocessing step changes the mode or shrinks the stack, so a handful of rounds
        // suffice; the bound only guarantees termination on inputs nobody foresaw.
        for _ in 0..32 {
            let step = if self.use_foreign_rules(&tok) {
                self.foreign(tok)
            } else {
                self.by_mode(self.mode, tok)
            };
            match step {
                Step::Done => return,
                Step::Again(t) => tok = t,
            }
        }
    }

    /// Processes `tok` with the rules of `mode` (without switching to it).
    pub(super) fn by_mode<'a>(&mut self, mode: Mode, tok: Tok<'a>) -> Step<'a> {
        match mode {
            Mode::Initial => self.initial(tok),
            Mode::BeforeHtml => self.before_html(tok),
            Mode::BeforeHead => self.before_head(tok),
            Mode::InHead => self.in_head(tok),
            Mode::InHeadNoscript => self.in_head_noscript(tok),
            Mode::AfterHead => self.after_head(tok),
            Mode::InBody => self.in_body(tok),
            Mode::Text => self.text_mode(tok),
            Mode::InTable => self.in_table(tok),
            Mode::InTableText => self.in_table_text(tok),
            Mode::InCaption => self.in_caption(tok),
            Mode::InColumnGroup => self.in_column_group(tok),
            Mode::InTableBody => self.in_table_body(tok),
            Mode::InRow => self.in_row(tok),
            Mode::InCell => self.in_cell(tok),
            Mode::InTemplate => self.in_template(tok),
            Mode::AfterBody => self.after_body(tok),
            Mode::AfterAfterBody => self.after_after_body(tok),
            Mode::Frameset => Step::Done,
        }
    }

    // ---- modes ----------------------------------------------------------------------------

    fn text_mode<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => self.insert_text(s),
            Tok::Eof => {
                self.pop();
                self.mode = self.orig_mode;
                return Step::Again(tok);
            }
            Tok::End(_) => {
                self.pop();
                self.mode = self.orig_mode;
            }
            _ => {}
        }
        Step::Done
    }

    /// "Reset the insertion mode appropriately".
    pub(super) fn reset_insertion_mode(&mut self) {
        for i in (0..self.stack.len()).rev() {
            let last = i == 0;
            let o = self.stack[i];
            if o.ns != Ns::Html {
                continue;
            }
            let mode = match o.tag {
                Tag::Td | Tag::Th if !last => Mode::InCell,
                Tag::Tr => Mode::InRow,
                Tag::Tbody | Tag::Thead | Tag::Tfoot => Mode::InTableBody,
                Tag::Caption => Mode::InCaption,
                Tag::Template => self.template_modes.last().copied().unwrap_or(Mode::InBody),
                Tag::Colgroup => Mode::InColumnGroup,
                Tag::Table => Mode::InTable,
                Tag::Head if !last => Mode::InHead,
                Tag::Body => Mode::InBody,
                Tag::Frameset => Mode::Frameset,
                Tag::Html if self.head == NIL => Mode::BeforeHead,
                Tag::Html => Mode::AfterHead,
                _ => continue,
            };
            self.mode = mode;
            return;
        }
        self.mode = Mode::InBody;
    }

    // ---- "any other end tag" --------------------------------------------------------------

    /// The in-body rule for an end tag no other rule names: close the nearest open element of
    /// that name unless a special element comes first (then the tag is ignored).
    pub(super) fn any_other_end(&mut self, t: &TagTok) {
        // The current node itself (well-nested pages): no implied end tag can be generated
        // above it (it is of the token's name, the exception), so it is just popped.
        let c = self.cur();
        if c.ns == Ns::Html && c.same_name(t) {
            self.pop();
            return;
        }
        for i in (0..self.stack.len()).rev() {
            let o = self.stack[i];
            if o.ns == Ns::Html && o.same_name(t) {
                self.implied_end(Some(t.tag));
                self.truncate(i);
                return;
            }
            if is_special(o.tag, o.ns) {
                return;
            }
        }
    }

    /// The canonical text's input: the body's text nodes, each preceded by a space. `source`
    /// is the document this tree was parsed from.
    #[cfg(test)]
    pub(super) fn body_text(&self, source: &[u8], out: &mut Vec<u8>) {
        if self.body != NIL {
            self.dom.body_text(self.body, source, out);
        }
    }

    /// `body_text` followed by `words::append_words` on it, in one walk without the body
    /// text (`Dom::body_words`); `scratch` is a reusable buffer.
    pub(super) fn body_words(&self, source: &[u8], out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        if self.body != NIL {
            self.dom.body_words(self.body, source, out, scratch);
        }
    }

    /// The main-content text (`Extract::Main`): the body's text without boilerplate blocks
    /// (`Dom::main_text`).
    pub(super) fn main_text(&self, source: &[u8], out: &mut Vec<u8>) {
        if self.body != NIL {
            self.dom.main_text(self.body, source, out);
        }
    }

    #[inline]
    pub(super) fn set_open(&mut self, node: NodeId, open: bool) {
        let i = node as usize;
        if let Some(slot) = self.open.get_mut(i) {
            *slot = open;
        } else {
            self.grow_open(i, open);
        }
    }

    #[cold]
    fn grow_open(&mut self, i: usize, open: bool) {
        // Room for the nodes to come too, so growing is rare.
        self.open
            .resize((i + 1).max(self.open.len() * 2).max(256), false);
        self.open[i] = open;
    }

    pub(super) fn marker() -> Fmt {
        MARKER
    }
}

/// The tags the "in cell" insertion mode has rules of its own for (end tags if `end`, else
/// start tags); it sends every other tag to the in-body rules.
#[inline(always)]
pub(super) fn in_cell_names(end: bool, tag: Tag) -> bool {
    use Tag::*;
    if end {
        matches!(
            tag,
            Td | Th | Body | Caption | Col | Colgroup | Html | Table | Tbody | Tfoot | Thead | Tr
        )
    } else {
        matches!(
            tag,
            Caption | Col | Colgroup | Tbody | Td | Tfoot | Th | Thead | Tr
        )
    }
}
