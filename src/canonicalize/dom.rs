//! A minimal DOM arena: just enough of a document tree to reproduce an HTML5 parser's text nodes.
//!
//! The canonical text depends on which characters end up in the *same* text node (an ignored
//! end tag such as a stray `</span>` does not split a word, a comment does) and on the document
//! order of text after the parser has moved nodes around (foster parenting out of tables, the
//! adoption agency algorithm). Keeping a real tree of element and text nodes makes both exact,
//! at the cost of one small arena entry per element and text node.
//!
//! Text data lives in one byte arena; a text node is a chain of chunks, so appending to a text
//! node that is not the newest one (text foster-parented before a table) never copies data.
//! Nothing here recurses, so 100,000 nested elements cost no native stack.

use super::tags::Tag;

/// HTML whitespace: tab, LF, FF, CR, space.
pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// Index of a node in the arena.
pub(super) type NodeId = u32;
/// "No node".
pub(super) const NIL: NodeId = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    /// An element; only its tag matters (for dropping script/style/template content).
    Element {
        tag: Tag,
    },
    /// First and last chunk of the node's data.
    Text {
        first: u32,
        last: u32,
    },
    Comment,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    parent: NodeId,
    prev: NodeId,
    next: NodeId,
    first: NodeId,
    last: NodeId,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
struct Chunk {
    start: usize,
    end: usize,
    next: u32,
}

/// The node arena plus the text data of all text nodes.
///
/// Text the tokenizer hands over as a slice of the input document (most text) is not copied:
/// its chunks hold offsets into the input, marked with [`IN_SOURCE`], and the text walks take
/// the input again (`body_text`, `main_text`). Other text (decoded character references, table
/// text the builder buffered) is copied into `data`.
#[derive(Debug, Default)]
pub(super) struct Dom {
    nodes: Vec<Node>,
    chunks: Vec<Chunk>,
    data: Vec<u8>,
    /// Address and length of the input document (`set_source`); (0, 0) for none.
    source: (usize, usize),
}

/// A chunk bound with this bit set is an offset into the input document, not into `data`.
const IN_SOURCE: usize = 1 << (usize::BITS - 1);

impl Dom {
    pub(super) fn new() -> Dom {
        Dom::default()
    }

    /// Empties the arena, keeping its allocations for the next document.
    pub(super) fn clear(&mut self) {
        self.nodes.clear();
        self.chunks.clear();
        self.data.clear();
        self.source = (0, 0);
    }

    /// The input document being parsed: text slices of it are referenced, not copied. Only
    /// its address and length are kept; the text walks must be given the same slice.
    pub(super) fn set_source(&mut self, input: &[u8]) {
        debug_assert!(input.len() < IN_SOURCE);
        self.source = (input.as_ptr() as usize, input.len());
    }

    /// `s`'s bounds in chunk form: offsets into the input (marked) if `s` lies inside it,
    /// else into `data` after copying it there.
    fn store(&mut self, s: &[u8]) -> (usize, usize) {
        let off = (s.as_ptr() as usize).wrapping_sub(self.source.0);
        if off < self.source.1 && s.len() <= self.source.1 - off {
            return (off | IN_SOURCE, (off + s.len()) | IN_SOURCE);
        }
        let start = self.data.len();
        self.data.extend_from_slice(s);
        (start, self.data.len())
    }

    /// A chunk's bytes.
    fn bytes<'a>(&'a self, ch: &Chunk, source: &'a [u8]) -> &'a [u8] {
        if ch.start & IN_SOURCE != 0 {
            &source[ch.start & !IN_SOURCE..ch.end & !IN_SOURCE]
        } else {
            &self.data[ch.start..ch.end]
        }
    }

    /// Bytes of heap the arena holds.
    pub(super) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.chunks.capacity() * std::mem::size_of::<Chunk>()
            + self.data.capacity()
    }

    fn alloc(&mut self, kind: Kind) -> NodeId {
        self.nodes.push(Node {
            parent: NIL,
            prev: NIL,
            next: NIL,
            first: NIL,
            last: NIL,
            kind,
        });
        // The arena never outgrows u32: it is bounded by the input size, and canonicalize()
        // rejects inputs of 4 GiB or more before parsing.
        (self.nodes.len() - 1) as NodeId
    }

    pub(super) fn new_element(&mut self, tag: Tag) -> NodeId {
        self.alloc(Kind::Element { tag })
    }

    /// A new element appended to `parent`'s children: `new_element` then `insert(parent,
    /// NIL, _)`, with the node written once.
    #[inline]
    pub(super) fn append_element(&mut self, parent: NodeId, tag: Tag) -> NodeId {
        self.append_new(parent, Kind::Element { tag })
    }

    /// `alloc(kind)` and `insert(parent, NIL, _)` in one step.
    #[inline]
    fn append_new(&mut self, parent: NodeId, kind: Kind) -> NodeId {
        // As in alloc: the arena never outgrows u32.
        let n = self.nodes.len() as NodeId;
        let p = &mut self.nodes[parent as usize];
        let prev = p.last;
        p.last = n;
        if prev == NIL {
            p.first = n;
        } else {
            self.nodes[prev as usize].next = n;
        }
        self.nodes.push(Node {
            parent,
            prev,
            next: NIL,
            first: NIL,
            last: NIL,
            kind,
        });
        n
    }

    pub(super) fn new_comment(&mut self) -> NodeId {
        self.alloc(Kind::Comment)
    }

    pub(super) fn parent(&self, n: NodeId) -> NodeId {
        self.nodes[n as usize].parent
    }

    /// Inserts detached node `n` into `parent`, before `before` (or last if `before` is NIL).
    pub(super) fn insert(&mut self, parent: NodeId, before: NodeId, n: NodeId) {
        let prev = if before == NIL {
            self.nodes[parent as usize].last
        } else {
            self.nodes[before as usize].prev
        };
        {
            let node = &mut self.nodes[n as usize];
            node.parent = parent;
            node.prev = prev;
            node.next = before;
        }
        if prev == NIL {
            self.nodes[parent as usize].first = n;
        } else {
            self.nodes[prev as usize].next = n;
        }
        if before == NIL {
            self.nodes[parent as usize].last = n;
        } else {
            self.nodes[before as usize].prev = n;
        }
    }

    /// Detaches `n` (with its subtree) from its parent; a no-op for a detached node.
    pub(super) fn remove(&mut self, n: NodeId) {
        let Node {
            parent, prev, next, ..
        } = self.nodes[n as usize];
        if parent == NIL {
            return;
        }
        if prev == NIL {
            self.nodes[parent as usize].first = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            self.nodes[parent as usize].last = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        let node = &mut self.nodes[n as usize];
        node.parent = NIL;
        node.prev = NIL;
        node.next = NIL;
    }

    /// Moves all children of `from` to the end of `to`'s children.
    pub(super) fn move_children(&mut self, from: NodeId, to: NodeId) {
        let mut c = self.nodes[from as usize].first;
        while c != NIL {
            let next = self.nodes[c as usize].next;
            self.remove(c);
            self.insert(to, NIL, c);
            c = next;
        }
    }

    /// Inserts character data at (parent, before): appended to the text node immediately before
    /// that location if there is one (the spec's rule), else as a new text node.
    #[inline(always)]
    pub(super) fn insert_text(&mut self, parent: NodeId, before: NodeId, s: &[u8]) {
        let prev = if before == NIL {
            self.nodes[parent as usize].last
        } else {
            self.nodes[before as usize].prev
        };
        let (start, end) = self.store(s);
        if prev != NIL {
            if let Kind::Text { first, last } = self.nodes[prev as usize].kind {
                let chunk = &mut self.chunks[last as usize];
                if chunk.end == start {
                    chunk.end = end;
                } else {
                    let c = self.push_chunk(start, end);
                    self.chunks[last as usize].next = c;
                    self.nodes[prev as usize].kind = Kind::Text { first, last: c };
                }
                return;
            }
        }
        let c = self.push_chunk(start, end);
        let kind = Kind::Text { first: c, last: c };
        if before == NIL {
            self.append_new(parent, kind);
        } else {
            let t = self.alloc(kind);
            self.insert(parent, before, t);
        }
    }

    fn push_chunk(&mut self, start: usize, end: usize) -> u32 {
        self.chunks.push(Chunk {
            start,
            end,
            next: u32::MAX,
        });
        (self.chunks.len() - 1) as u32
    }

    /// Appends the text of `root`'s subtree to `out` in document order, one space before each
    /// text node, skipping `script`, `style` and `template` elements (of any namespace) with
    /// their content. Iterative: no recursion however deep the tree.
    #[cfg(test)]
    pub(super) fn body_text(&self, root: NodeId, source: &[u8], out: &mut Vec<u8>) {
        self.walk(root, |_, node| match node.kind {
            Kind::Text { first, .. } => {
                out.push(b' ');
                self.push_text(first, source, out);
                false
            }
            Kind::Element { tag } => !tag.drops_content(),
            Kind::Comment => false,
        });
    }

    /// `body_text` and then `words::append_words` on it, without building the body text:
    /// each text node's words go to `out` straight from its bytes (in the input document for
    /// most nodes; a node of several chunks is first joined in `scratch`). The same bytes:
    /// the space `body_text` puts before each node ends any word and stops the final-sigma
    /// rule's look around a `Σ` (a space is neither cased nor case-ignorable) just as the
    /// node's ends do, and `append_words` starts every call outside a word.
    #[inline(never)]
    pub(super) fn body_words(
        &self,
        root: NodeId,
        source: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) {
        self.walk(root, |_, node| match node.kind {
            Kind::Text { first, last } => {
                let text = if first == last {
                    self.bytes(&self.chunks[first as usize], source)
                } else {
                    scratch.clear();
                    self.push_text(first, source, scratch);
                    &scratch[..]
                };
                // Short whitespace between tags (a third of the text nodes) has no words:
                // bytes up to the space are ASCII non-word characters.
                if !(text.len() <= 16 && text.iter().all(|&b| b <= b' ')) {
                    super::words::append_words_inline(text, out);
                }
                false
            }
            Kind::Element { tag } => !tag.drops_content(),
            Kind::Comment => false,
        });
    }

    /// The text of `root`'s subtree as `body_text` gives it, without boilerplate blocks
    /// (format-spec/canonical-text.md, "Main-content extraction"):
    /// - if the subtree holds a `main` element, only the first one's subtree is used;
    /// - `nav` and `aside` elements are left out, and `header` and `footer` elements unless
    ///   they are inside an `article` or `main` (there they hold the article's own title and
    ///   byline);
    /// - an element with at least [`DENSE_MIN_LINKS`] `a` descendants whose text outside links
    ///   is at most half its text inside links and less than [`DENSE_MAX_OTHER`] bytes (a menu,
    ///   a table of contents, a list of related pages) is left out.
    ///
    /// Text is measured in non-whitespace bytes of the text nodes. Iterative, like `body_text`.
    pub(super) fn main_text(&self, root: NodeId, source: &[u8], out: &mut Vec<u8>) {
        let n = self.nodes.len();
        // Pre-order of the elements and text nodes under root (dropped-content subtrees and
        // comments contribute nothing and are not entered).
        let mut order: Vec<NodeId> = Vec::new();
        self.walk(root, |id, node| {
            order.push(id);
            match node.kind {
                Kind::Element { tag } => !tag.drops_content(),
                _ => false,
            }
        });
        // Bottom-up sums: text bytes, text bytes inside links, links.
        let mut text = vec![0u32; n];
        let mut linked = vec![0u32; n];
        let mut links = vec![0u32; n];
        for &id in order.iter().rev() {
            let node = &self.nodes[id as usize];
            match node.kind {
                Kind::Text { first, .. } => text[id as usize] = self.text_bytes(first, source),
                Kind::Element { tag: Tag::A } => {
                    linked[id as usize] = text[id as usize];
                    links[id as usize] += 1;
                }
                _ => {}
            }
            if node.parent != NIL && id != root {
                let (p, i) = (node.parent as usize, id as usize);
                text[p] = text[p].saturating_add(text[i]);
                linked[p] = linked[p].saturating_add(linked[i]);
                links[p] = links[p].saturating_add(links[i]);
            }
        }
        let start = order
            .iter()
            .copied()
            .find(|&id| {
                matches!(
                    self.nodes[id as usize].kind,
                    Kind::Element { tag: Tag::Main }
                )
            })
            .unwrap_or(root);
        // Top-down: in_article[e] = e is inside an article or main (below start).
        let mut in_article = vec![false; n];
        let mut keep = |id: NodeId, node: &Node| -> bool {
            let i = id as usize;
            let inside = node.parent != NIL && in_article[node.parent as usize];
            let Kind::Element { tag } = node.kind else {
                return true;
            };
            in_article[i] = inside || matches!(tag, Tag::Article | Tag::Main);
            if id == start {
                return true;
            }
            let boilerplate = match tag {
                Tag::Nav | Tag::Aside => true,
                Tag::Header | Tag::Footer => !inside,
                _ => false,
            };
            let other = text[i] - linked[i].min(text[i]);
            let dense = links[i] >= DENSE_MIN_LINKS
                && other.saturating_mul(2) <= linked[i]
                && other < DENSE_MAX_OTHER;
            !(boilerplate || dense || tag.drops_content())
        };
        self.walk(start, |id, node| {
            if !keep(id, node) {
                return false;
            }
            if let Kind::Text { first, .. } = node.kind {
                out.push(b' ');
                self.push_text(first, source, out);
            }
            true
        });
    }

    /// Visits `root`'s descendants in document order; `visit` returns whether to enter the
    /// node's children. Iterative.
    #[inline(always)]
    fn walk(&self, root: NodeId, mut visit: impl FnMut(NodeId, &Node) -> bool) {
        let nodes = &self.nodes[..];
        let mut n = nodes[root as usize].first;
        while n != NIL {
            let node = &nodes[n as usize];
            if visit(n, node) && node.first != NIL {
                n = node.first;
                continue;
            }
            // `n` is never the root (the walk starts at the root's first child and climbs no
            // higher than the root): its next sibling first, without the climb loop's tests.
            if node.next != NIL {
                n = node.next;
                continue;
            }
            // Climb to the first ancestor below the root with a next sibling.
            let mut m = node.parent;
            loop {
                if m == root || m == NIL {
                    return;
                }
                let mn = &nodes[m as usize];
                if mn.next != NIL {
                    n = mn.next;
                    break;
                }
                m = mn.parent;
            }
        }
    }

    /// Appends a text node's data (its chunk chain starting at `first`).
    fn push_text(&self, first: u32, source: &[u8], out: &mut Vec<u8>) {
        let mut c = first;
        while c != u32::MAX {
            let ch = &self.chunks[c as usize];
            out.extend_from_slice(self.bytes(ch, source));
            c = ch.next;
        }
    }

    /// Non-whitespace bytes of a text node.
    fn text_bytes(&self, first: u32, source: &[u8]) -> u32 {
        let mut total = 0u32;
        let mut c = first;
        while c != u32::MAX {
            let ch = &self.chunks[c as usize];
            let k = self
                .bytes(ch, source)
                .iter()
                .filter(|&&b| !is_ws(b))
                .count();
            total = total.saturating_add(k as u32);
            c = ch.next;
        }
        total
    }
}

/// `main_text`: the fewest links that make a block a candidate for "link-dense".
pub(super) const DENSE_MIN_LINKS: u32 = 2;
/// `main_text`: a link-dense block has less text than this (non-whitespace bytes) outside its
/// links, so a long paragraph that cites many pages stays.
pub(super) const DENSE_MAX_OTHER: u32 = 200;
