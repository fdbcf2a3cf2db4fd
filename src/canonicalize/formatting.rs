//! The list of active formatting elements: reconstruction and the adoption agency algorithm.
//!
//! These decide whether a formatting end tag (`</b>`, `</a>`, ...) closes something (a text
//! node boundary) or is ignored (no boundary), and they create the elements that separate text
//! after misnested markup such as `<p><b>x</p>y</b>z` (three words, not "x" and "yz").

use super::dom::NIL;
use super::tags::{is_special, Ns, Scope, Tag};
use super::tree::{Fmt, Open, TagTok, Tree};

impl Tree {
    /// Pushes a formatting element, applying the "Noah's Ark" clause (at most three entries of
    /// the same tag after the last marker). The spec compares attributes too; we compare tag
    /// names only, which changes which duplicate is forgotten but never the text.
    pub(super) fn push_afe(&mut self, node: u32, tag: Tag) {
        let start = self
            .afe
            .iter()
            .rposition(|f| f.node == NIL)
            .map_or(0, |m| m + 1);
        let same: Vec<usize> = (start..self.afe.len())
            .filter(|&i| self.afe[i].tag == tag)
            .collect();
        if same.len() >= 3 {
            self.afe.remove(same[0]);
        }
        self.afe.push(Fmt { node, tag });
    }

    pub(super) fn push_marker(&mut self) {
        self.afe.push(Tree::marker());
    }

    pub(super) fn clear_afe_to_marker(&mut self) {
        while let Some(f) = self.afe.pop() {
            if f.node == NIL {
                return;
            }
        }
    }

    /// "Reconstruct the active formatting elements". Inlined: nearly always there is nothing
    /// to reconstruct (the list is empty or its last entry is a marker or open).
    #[inline]
    pub(super) fn reconstruct_afe(&mut self) {
        let Some(last) = self.afe.last() else { return };
        if last.node == NIL || self.is_open(last.node) {
            return;
        }
        self.reconstruct_afe_entries();
    }

    /// `reconstruct_afe` when the last entry is neither a marker nor open.
    #[inline(never)]
    fn reconstruct_afe_entries(&mut self) {
        let mut i = self.afe.len() - 1;
        while i > 0 {
            let e = self.afe[i - 1];
            if e.node == NIL || self.is_open(e.node) {
                break;
            }
            i -= 1;
        }
        for k in i..self.afe.len() {
            let tag = self.afe[k].tag;
            let n = self.insert_tag(tag);
            self.afe[k].node = n;
        }
    }

    /// The adoption agency algorithm for end tag `subject`. Returns false when the caller must
    /// fall back to "any other end tag".
    pub(super) fn adoption_agency(&mut self, subject: Tag) -> bool {
        let c = self.cur();
        if c.is(subject) && !self.afe.iter().any(|f| f.node == c.node) {
            self.pop();
            return true;
        }
        for _ in 0..8 {
            // The last formatting element named `subject` after the last marker.
            let mut fi = None;
            for i in (0..self.afe.len()).rev() {
                let f = self.afe[i];
                if f.node == NIL {
                    break;
                }
                if f.tag == subject {
                    fi = Some(i);
                    break;
                }
            }
            let Some(fi) = fi else { return false };
            let fe = self.afe[fi].node;
            let Some(si) = self.stack.iter().rposition(|o| o.node == fe) else {
                self.afe.remove(fi);
                return true;
            };
            if !self.in_scope_by(|o| o.node == fe, Scope::Default) {
                return true;
            }
            let furthest = (si + 1..self.stack.len()).find(|&k| {
                let o = self.stack[k];
                is_special(o.tag, o.ns)
            });
            let Some(fbi) = furthest else {
                self.truncate(si);
                self.afe.remove(fi);
                return true;
            };
            let fb = self.stack[fbi].node;
            let common = self.stack[si - 1];
            let mut bookmark = fi;
            let mut node_i = fbi;
            let mut last = fb;
            let mut inner = 0;
            loop {
                inner += 1;
                node_i -= 1;
                let node = self.stack[node_i].node;
                if node == fe {
                    break;
                }
                let mut ai = self.afe.iter().position(|f| f.node == node);
                if inner > 3 {
                    if let Some(a) = ai {
                        self.afe.remove(a);
                        if a < bookmark {
                            bookmark -= 1;
                        }
                        ai = None;
                    }
                }
                let Some(a) = ai else {
                    self.remove_at(node_i);
                    continue;
                };
                let tag = self.afe[a].tag;
                let new = self.dom.new_element(tag);
                self.afe[a].node = new;
                // Same tag in the same stack slot: only the node identity changes.
                self.stack[node_i].node = new;
                self.set_open(node, false);
                self.set_open(new, true);
                if last == fb {
                    bookmark = a + 1;
                }
                self.dom.remove(last);
                self.dom.insert(new, NIL, last);
                last = new;
            }
            self.dom.remove(last);
            let (parent, before) = self.location(common);
            self.dom.insert(parent, before, last);

            let new = self.dom.new_element(subject);
            self.dom.move_children(fb, new);
            self.dom.insert(fb, NIL, new);
            if let Some(fa) = self.afe.iter().position(|f| f.node == fe) {
                self.afe.remove(fa);
                if fa < bookmark {
                    bookmark -= 1;
                }
            }
            let bookmark = bookmark.min(self.afe.len());
            self.afe.insert(
                bookmark,
                Fmt {
                    node: new,
                    tag: subject,
                },
            );
            if let Some(sfe) = self.stack.iter().rposition(|o| o.node == fe) {
                self.remove_at(sfe);
            }
            if let Some(sfb) = self.stack.iter().rposition(|o| o.node == fb) {
                self.insert_open(
                    sfb + 1,
                    Open {
                        node: new,
                        tag: subject,
                        ns: Ns::Html,
                        hash: 0,
                        html_ip: false,
                    },
                );
            }
        }
        true
    }

    /// In-body handling of a formatting end tag.
    pub(super) fn formatting_end(&mut self, t: &TagTok) {
        if !self.adoption_agency(t.tag) {
            self.any_other_end(t);
        }
    }
}
