//! The stack of open elements and node insertion (WHATWG HTML 13.2.4.2, 13.2.6.1).
//!
//! Stack queries ("has an element in scope"), pops, implied end tags, and "the appropriate
//! place for inserting a node", which is where foster parenting happens.

use html5gum::State;

use super::dom::{NodeId, NIL};
use super::tags::{Ns, Scope, Tag};
use super::tree::{Mode, Open, TagTok, Tree};

impl Tree {
    pub(super) fn cur(&self) -> Open {
        // The html element is pushed in new() and never popped.
        self.stack[self.stack.len() - 1]
    }

    pub(super) fn push(&mut self, o: Open) {
        // `insert_open` at the top, without Vec::insert's shift (a memmove call).
        self.set_open(o.node, true);
        if o.ns == Ns::Html {
            self.counts[o.tag as usize] += 1;
        }
        self.stack.push(o);
    }

    /// Puts `o` on the stack at index `i` (the adoption agency inserts below the top).
    pub(super) fn insert_open(&mut self, i: usize, o: Open) {
        self.set_open(o.node, true);
        if o.ns == Ns::Html {
            self.counts[o.tag as usize] += 1;
        }
        self.stack.insert(i, o);
    }

    fn forget(&mut self, o: Open) {
        self.set_open(o.node, false);
        if o.ns == Ns::Html {
            self.counts[o.tag as usize] -= 1;
        }
    }

    pub(super) fn is_open(&self, node: NodeId) -> bool {
        self.open.get(node as usize).copied().unwrap_or(false)
    }

    /// Pops the current node (never the html element).
    pub(super) fn pop(&mut self) {
        if self.stack.len() > 1 {
            if let Some(o) = self.stack.pop() {
                self.forget(o);
            }
        }
    }

    /// Pops elements until an HTML element `tag` has been popped (or only html is left).
    pub(super) fn pop_until(&mut self, tag: Tag) {
        while self.stack.len() > 1 {
            let o = self.cur();
            self.pop();
            if o.is(tag) {
                return;
            }
        }
    }

    /// Pops everything above index `i`, and `i` itself.
    pub(super) fn truncate(&mut self, i: usize) {
        while self.stack.len() > i.max(1) {
            self.pop();
        }
    }

    /// Removes the element at stack index `i` (not necessarily the current node).
    pub(super) fn remove_at(&mut self, i: usize) {
        if i > 0 && i < self.stack.len() {
            let o = self.stack.remove(i);
            self.forget(o);
        }
    }

    pub(super) fn in_scope(&self, tag: Tag, scope: Scope) -> bool {
        self.counts[tag as usize] > 0 && self.in_scope_by(|o| o.is(tag), scope)
    }

    /// Number of open HTML elements named `tag`.
    pub(super) fn open_count(&self, tag: Tag) -> u32 {
        self.counts[tag as usize]
    }

    pub(super) fn in_scope_by(&self, pred: impl Fn(&Open) -> bool, scope: Scope) -> bool {
        for o in self.stack.iter().rev() {
            if pred(o) {
                return true;
            }
            if scope.stops_at(o.tag, o.ns) {
                return false;
            }
        }
        false
    }

    pub(super) fn has_template(&self) -> bool {
        self.open_count(Tag::Template) > 0
    }

    /// "Generate all implied end tags thoroughly".
    pub(super) fn implied_end_thorough(&mut self) {
        loop {
            let c = self.cur();
            if c.ns == Ns::Html && c.tag.is_implied_end_thorough() {
                self.pop();
            } else {
                return;
            }
        }
    }

    /// "Generate implied end tags", except for `except`.
    pub(super) fn implied_end(&mut self, except: Option<Tag>) {
        loop {
            let c = self.cur();
            if c.ns == Ns::Html && c.tag.is_implied_end() && Some(c.tag) != except {
                self.pop();
            } else {
                return;
            }
        }
    }

    pub(super) fn close_p_in_button_scope(&mut self) {
        if self.in_scope(Tag::P, Scope::Button) {
            self.implied_end(Some(Tag::P));
            self.pop_until(Tag::P);
        }
    }

    /// "Clear the stack back to a ... context": pop until the current node is one of `tags`.
    pub(super) fn clear_back_to(&mut self, tags: &[Tag]) {
        while self.stack.len() > 1 {
            let c = self.cur();
            if c.ns == Ns::Html && tags.contains(&c.tag) {
                return;
            }
            self.pop();
        }
    }

    // ---- inserting nodes ------------------------------------------------------------------

    /// "The appropriate place for inserting a node" as (parent, insert-before), with foster
    /// parenting when enabled and the target is a table-structure element.
    #[inline]
    pub(super) fn location(&self, target: Open) -> (NodeId, NodeId) {
        // Without foster parenting (nearly always), the target itself.
        if !self.foster {
            return (target.node, NIL);
        }
        self.foster_location(target)
    }

    /// `location` when foster parenting is enabled.
    #[inline(never)]
    fn foster_location(&self, target: Open) -> (NodeId, NodeId) {
        let table_like = target.ns == Ns::Html
            && matches!(
                target.tag,
                Tag::Table | Tag::Tbody | Tag::Tfoot | Tag::Thead | Tag::Tr
            );
        if !(self.foster && table_like) {
            return (target.node, NIL);
        }
        let last_template = self.stack.iter().rposition(|o| o.is(Tag::Template));
        let last_table = self.stack.iter().rposition(|o| o.is(Tag::Table));
        match (last_template, last_table) {
            (Some(tp), Some(tb)) if tp > tb => (self.stack[tp].node, NIL),
            (Some(tp), None) => (self.stack[tp].node, NIL),
            (_, None) => (self.stack[0].node, NIL),
            (_, Some(tb)) => {
                let table = self.stack[tb].node;
                let parent = self.dom.parent(table);
                if parent != NIL {
                    (parent, table)
                } else {
                    (self.stack[tb.saturating_sub(1)].node, NIL)
                }
            }
        }
    }

    /// Inserts an element for `t` in namespace `ns` and pushes it.
    pub(super) fn insert_ns(&mut self, t: &TagTok, ns: Ns) -> NodeId {
        let (parent, before) = self.location(self.cur());
        let n = if before == NIL {
            self.dom.append_element(parent, t.tag)
        } else {
            let n = self.dom.new_element(t.tag);
            self.dom.insert(parent, before, n);
            n
        };
        self.push(Self::open_entry(n, t, ns));
        n
    }

    /// The stack entry of element `n` inserted for `t` in namespace `ns`.
    #[inline(always)]
    fn open_entry(n: NodeId, t: &TagTok, ns: Ns) -> Open {
        Open {
            node: n,
            tag: t.tag,
            ns,
            hash: if t.tag == Tag::Other { t.hash } else { 0 },
            html_ip: ns == Ns::MathMl && t.tag == Tag::AnnotationXml && t.attr.html_annotation,
        }
    }

    /// `insert_ns(t, Ns::Html)`, inlined where nothing is foster-parented (nearly always): the
    /// element is appended to the current node.
    #[inline]
    pub(super) fn insert(&mut self, t: &TagTok) -> NodeId {
        if self.foster {
            return self.insert_ns(t, Ns::Html);
        }
        let parent = self.cur().node;
        let n = self.dom.append_element(parent, t.tag);
        self.push(Self::open_entry(n, t, Ns::Html));
        n
    }

    pub(super) fn insert_tag(&mut self, tag: Tag) -> NodeId {
        self.insert(&TagTok::plain(tag))
    }

    /// Inserts a void element (inserted and immediately popped).
    pub(super) fn insert_void(&mut self, t: &TagTok) {
        self.insert(t);
        self.pop();
    }

    pub(super) fn insert_text(&mut self, s: &[u8]) {
        let (parent, before) = self.location(self.cur());
        self.dom.insert_text(parent, before, s);
    }

    pub(super) fn insert_comment(&mut self) {
        let (parent, before) = self.location(self.cur());
        let c = self.dom.new_comment();
        self.dom.insert(parent, before, c);
    }

    /// Starts an RCDATA / RAWTEXT / script element: the tokenizer switches state and the
    /// tree goes to the "text" insertion mode until the matching end tag.
    pub(super) fn raw_element(&mut self, t: &TagTok, state: State) {
        self.insert(t);
        self.next_state = Some(state);
        self.orig_mode = self.mode;
        self.mode = Mode::Text;
    }
}
