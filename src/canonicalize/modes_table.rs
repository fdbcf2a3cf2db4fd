//! The table insertion modes: in table, in table text, in caption, in column group, in table
//! body, in row, in cell.
//!
//! Tables matter to the canonical text because of foster parenting: text and elements that are
//! not allowed directly in a table are moved *before* the table, so `a<table>b<tr><td>c</table>`
//! reads "ab c", not "a b c". The move happens in the DOM (`Tree::location`), so the text order
//! and the text-node merging follow the spec.

use super::tags::{Scope, Tag};
use super::tree::{all_ws, in_cell_names, Mode, Step, Tok, Tree};

impl Tree {
    pub(super) fn in_table<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        match tok {
            Tok::Chars(_) => {
                let c = self.cur();
                if c.ns == super::tags::Ns::Html
                    && matches!(c.tag, Table | Tbody | Template | Tfoot | Thead | Tr)
                {
                    self.pending.clear();
                    self.pending_nonws = false;
                    self.orig_mode = self.mode;
                    self.mode = Mode::InTableText;
                    Step::Again(tok)
                } else {
                    self.foster_in_body(tok)
                }
            }
            Tok::Comment => {
                self.insert_comment();
                Step::Done
            }
            Tok::Doctype { .. } => Step::Done,
            Tok::Start(t) => match t.tag {
                Caption => {
                    self.clear_back_to(&[Table, Template, Html]);
                    self.push_marker();
                    self.insert(&t);
                    self.mode = Mode::InCaption;
                    Step::Done
                }
                Colgroup => {
                    self.clear_back_to(&[Table, Template, Html]);
                    self.insert(&t);
                    self.mode = Mode::InColumnGroup;
                    Step::Done
                }
                Col => {
                    self.clear_back_to(&[Table, Template, Html]);
                    self.insert_tag(Colgroup);
                    self.mode = Mode::InColumnGroup;
                    Step::Again(tok)
                }
                Tbody | Tfoot | Thead => {
                    self.clear_back_to(&[Table, Template, Html]);
                    self.insert(&t);
                    self.mode = Mode::InTableBody;
                    Step::Done
                }
                Td | Th | Tr => {
                    self.clear_back_to(&[Table, Template, Html]);
                    self.insert_tag(Tbody);
                    self.mode = Mode::InTableBody;
                    Step::Again(tok)
                }
                Table => {
                    if !self.in_scope(Table, Scope::Table) {
                        return Step::Done;
                    }
                    self.pop_until(Table);
                    self.reset_insertion_mode();
                    Step::Again(tok)
                }
                Style | Script | Template => self.in_head(tok),
                Input if t.attr.input_hidden => {
                    self.insert_void(&t);
                    Step::Done
                }
                Form => {
                    if !self.has_template() && self.form == super::dom::NIL {
                        self.form = self.insert(&t);
                        self.pop();
                    }
                    Step::Done
                }
                _ => self.foster_in_body(tok),
            },
            Tok::End(t) => match t.tag {
                Table => {
                    if self.in_scope(Table, Scope::Table) {
                        self.pop_until(Table);
                        self.reset_insertion_mode();
                    }
                    Step::Done
                }
                Body | Caption | Col | Colgroup | Html | Tbody | Td | Tfoot | Th | Thead | Tr => {
                    Step::Done
                }
                Template => self.in_head(tok),
                _ => self.foster_in_body(tok),
            },
            Tok::Eof => self.in_body(tok),
        }
    }

    /// "Process the token using the rules for the in body insertion mode, with foster
    /// parenting enabled".
    fn foster_in_body<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        self.foster = true;
        let r = self.in_body(tok);
        self.foster = false;
        r
    }

    pub(super) fn in_table_text<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        if let Tok::Chars(s) = tok {
            self.pending.extend_from_slice(s);
            if !all_ws(s) {
                self.pending_nonws = true;
            }
            return Step::Done;
        }
        let pending = std::mem::take(&mut self.pending);
        if self.pending_nonws {
            // Non-whitespace table text is foster-parented, as "anything else" in table.
            self.foster = true;
            self.reconstruct_afe();
            self.insert_text(&pending);
            self.foster = false;
            self.frameset_ok = false;
        } else if !pending.is_empty() {
            self.insert_text(&pending);
        }
        self.pending = pending;
        self.pending.clear();
        self.mode = self.orig_mode;
        Step::Again(tok)
    }

    pub(super) fn in_caption<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        let closes = match tok {
            Tok::Start(t) => matches!(
                t.tag,
                Caption | Col | Colgroup | Tbody | Td | Tfoot | Th | Thead | Tr
            ),
            Tok::End(t) => matches!(t.tag, Table | Caption),
            _ => false,
        };
        if closes {
            if !self.in_scope(Caption, Scope::Table) {
                return Step::Done;
            }
            self.implied_end(None);
            self.pop_until(Caption);
            self.clear_afe_to_marker();
            self.mode = Mode::InTable;
            return match tok {
                Tok::End(t) if t.tag == Caption => Step::Done,
                _ => Step::Again(tok),
            };
        }
        match tok {
            Tok::End(t)
                if matches!(
                    t.tag,
                    Body | Col | Colgroup | Html | Tbody | Td | Tfoot | Th | Thead | Tr
                ) =>
            {
                Step::Done
            }
            _ => self.in_body(tok),
        }
    }

    pub(super) fn in_column_group<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        match tok {
            Tok::Chars(s) => {
                let n = s.iter().take_while(|&&b| super::tree::is_ws(b)).count();
                if n > 0 {
                    self.insert_text(&s[..n]);
                }
                if n == s.len() {
                    Step::Done
                } else {
                    self.leave_colgroup(Tok::Chars(&s[n..]))
                }
            }
            Tok::Comment => {
                self.insert_comment();
                Step::Done
            }
            Tok::Doctype { .. } => Step::Done,
            Tok::Start(t) if t.tag == Html => self.in_body(tok),
            Tok::Start(t) if t.tag == Col => {
                self.insert_void(&t);
                Step::Done
            }
            Tok::End(t) if t.tag == Colgroup => {
                if self.cur().is(Colgroup) {
                    self.pop();
                    self.mode = Mode::InTable;
                }
                Step::Done
            }
            Tok::End(t) if t.tag == Col => Step::Done,
            Tok::Start(t) | Tok::End(t) if t.tag == Template => self.in_head(tok),
            Tok::Eof => self.in_body(tok),
            _ => self.leave_colgroup(tok),
        }
    }

    fn leave_colgroup<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        if !self.cur().is(Tag::Colgroup) {
            return Step::Done;
        }
        self.pop();
        self.mode = Mode::InTable;
        Step::Again(tok)
    }

    pub(super) fn in_table_body<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        const CTX: &[Tag] = &[Tbody, Tfoot, Thead, Template, Html];
        match tok {
            Tok::Start(t) if t.tag == Tr => {
                self.clear_back_to(CTX);
                self.insert(&t);
                self.mode = Mode::InRow;
                Step::Done
            }
            Tok::Start(t) if matches!(t.tag, Th | Td) => {
                self.clear_back_to(CTX);
                self.insert_tag(Tr);
                self.mode = Mode::InRow;
                Step::Again(tok)
            }
            Tok::End(t) if matches!(t.tag, Tbody | Tfoot | Thead) => {
                if self.in_scope(t.tag, Scope::Table) {
                    self.clear_back_to(CTX);
                    self.pop();
                    self.mode = Mode::InTable;
                }
                Step::Done
            }
            Tok::Start(t) if matches!(t.tag, Caption | Col | Colgroup | Tbody | Tfoot | Thead) => {
                self.leave_table_body(tok)
            }
            Tok::End(t) if t.tag == Table => self.leave_table_body(tok),
            Tok::End(t)
                if matches!(t.tag, Body | Caption | Col | Colgroup | Html | Td | Th | Tr) =>
            {
                Step::Done
            }
            _ => self.in_table(tok),
        }
    }

    fn leave_table_body<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        let in_scope = self.in_scope_by(
            |o| o.ns == super::tags::Ns::Html && matches!(o.tag, Tbody | Thead | Tfoot),
            Scope::Table,
        );
        if !in_scope {
            return Step::Done;
        }
        self.clear_back_to(&[Tbody, Tfoot, Thead, Template, Html]);
        self.pop();
        self.mode = Mode::InTable;
        Step::Again(tok)
    }

    pub(super) fn in_row<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        const CTX: &[Tag] = &[Tr, Template, Html];
        match tok {
            Tok::Start(t) if matches!(t.tag, Th | Td) => {
                self.clear_back_to(CTX);
                self.insert(&t);
                self.mode = Mode::InCell;
                self.push_marker();
                Step::Done
            }
            Tok::End(t) if t.tag == Tr => {
                if self.in_scope(Tr, Scope::Table) {
                    self.clear_back_to(CTX);
                    self.pop();
                    self.mode = Mode::InTableBody;
                }
                Step::Done
            }
            Tok::Start(t)
                if matches!(t.tag, Caption | Col | Colgroup | Tbody | Tfoot | Thead | Tr) =>
            {
                self.leave_row(tok)
            }
            Tok::End(t) if t.tag == Table => self.leave_row(tok),
            Tok::End(t) if matches!(t.tag, Tbody | Tfoot | Thead) => {
                if !self.in_scope(t.tag, Scope::Table) {
                    return Step::Done;
                }
                self.leave_row(tok)
            }
            Tok::End(t) if matches!(t.tag, Body | Caption | Col | Colgroup | Html | Td | Th) => {
                Step::Done
            }
            _ => self.in_table(tok),
        }
    }

    fn leave_row<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        if !self.in_scope(Tag::Tr, Scope::Table) {
            return Step::Done;
        }
        self.clear_back_to(&[Tag::Tr, Tag::Template, Tag::Html]);
        self.pop();
        self.mode = Mode::InTableBody;
        Step::Again(tok)
    }

    pub(super) fn in_cell<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        let named = match &tok {
            Tok::Start(t) => in_cell_names(false, t.tag),
            Tok::End(t) => in_cell_names(true, t.tag),
            _ => false,
        };
        if !named {
            // Text, comments, doctypes, end of file and every other tag (`process_tag` and
            // `process_chars` take this path directly for tags and text).
            return self.in_body(tok);
        }
        match tok {
            Tok::End(t) if matches!(t.tag, Td | Th) => {
                if self.in_scope(t.tag, Scope::Table) {
                    self.implied_end(None);
                    self.pop_until(t.tag);
                    self.clear_afe_to_marker();
                    self.mode = Mode::InRow;
                }
                Step::Done
            }
            Tok::Start(t)
                if matches!(
                    t.tag,
                    Caption | Col | Colgroup | Tbody | Td | Tfoot | Th | Thead | Tr
                ) =>
            {
                if !(self.in_scope(Td, Scope::Table) || self.in_scope(Th, Scope::Table)) {
                    return Step::Done;
                }
                self.close_cell();
                Step::Again(tok)
            }
            Tok::End(t) if matches!(t.tag, Body | Caption | Col | Colgroup | Html) => Step::Done,
            Tok::End(t) if matches!(t.tag, Table | Tbody | Tfoot | Thead | Tr) => {
                if !self.in_scope(t.tag, Scope::Table) {
                    return Step::Done;
                }
                self.close_cell();
                Step::Again(tok)
            }
            // Only the tags of `in_cell_names` get here.
            _ => self.in_body(tok),
        }
    }

    fn close_cell(&mut self) {
        self.implied_end(None);
        while self.stack.len() > 1 {
            let c = self.cur();
            self.pop();
            if c.is(Tag::Td) || c.is(Tag::Th) {
                break;
            }
        }
        self.clear_afe_to_marker();
        self.mode = Mode::InRow;
    }
}
