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
#[derive(Debug, Default)]
pub(super) struct Dom {
    nodes: Vec<Node>,
    chunks: Vec<Chunk>,
    data: Vec<u8>,
}

impl Dom {
    pub(super) fn new() -> Dom {
        Dom::default()
    }

    /// Empties the arena, keeping its allocations for the next document.
    pub(super) fn clear(&mut self) {
        self.nodes.clear();
        self.chunks.clear();
        self.data.clear();
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
    pub(super) fn insert_text(&mut self, parent: NodeId, before: NodeId, s: &[u8]) {
        let prev = if before == NIL {
            self.nodes[parent as usize].last
        } else {
            self.nodes[before as usize].prev
        };
        let start = self.data.len();
        self.data.extend_from_slice(s);
        let end = self.data.len();
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
        let t = self.alloc(Kind::Text { first: c, last: c });
        self.insert(parent, before, t);
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
    pub(super) fn body_text(&self, root: NodeId, out: &mut Vec<u8>) {
        let mut n = self.nodes[root as usize].first;
        while n != NIL {
            let node = &self.nodes[n as usize];
            let mut descend = false;
            match node.kind {
                Kind::Text { first, .. } => {
                    out.push(b' ');
                    let mut c = first;
                    while c != u32::MAX {
                        let ch = &self.chunks[c as usize];
                        out.extend_from_slice(&self.data[ch.start..ch.end]);
                        c = ch.next;
                    }
                }
                Kind::Element { tag, .. } => descend = !tag.drops_content(),
                Kind::Comment => {}
            }
            if descend && node.first != NIL {
                n = node.first;
                continue;
            }
            // Next in document order: the next sibling of the nearest ancestor-or-self that has
            // one, without leaving `root`.
            let mut m = n;
            loop {
                if m == root {
                    return;
                }
                let mn = &self.nodes[m as usize];
                if mn.next != NIL {
                    n = mn.next;
                    break;
                }
                m = mn.parent;
                if m == NIL {
                    return;
                }
            }
        }
    }
}
