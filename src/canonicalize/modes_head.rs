//! Insertion modes before and after the body: initial, before html/head, in head (and its
//! noscript variant), after head, after body, after after body.
//!
//! For the canonical text these decide one thing: what belongs to `<head>` (not used) and what
//! opens `<body>`. Non-whitespace text anywhere before `<body>` opens the body and is kept;
//! `<title>` text in the head is not; text after `</body>` or `</html>` still goes into the body.

use html5gum::State;

use super::tags::Tag;
use super::tree::{is_ws, Mode, Step, Tok, Tree};

/// Splits off leading HTML whitespace: (whitespace, rest).
fn split_ws(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|&&b| is_ws(b)).count();
    s.split_at(n)
}

impl Tree {
    pub(super) fn initial<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => match split_ws(s) {
                (_, []) => Step::Done,
                (_, rest) => self.no_doctype(Tok::Chars(rest)),
            },
            Tok::Comment => Step::Done,
            Tok::Doctype { quirks } => {
                self.quirks = quirks;
                self.mode = Mode::BeforeHtml;
                Step::Done
            }
            _ => self.no_doctype(tok),
        }
    }

    fn no_doctype<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        self.quirks = true;
        self.mode = Mode::BeforeHtml;
        Step::Again(tok)
    }

    pub(super) fn before_html<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => match split_ws(s) {
                (_, []) => Step::Done,
                (_, rest) => self.enter_before_head(Tok::Chars(rest)),
            },
            Tok::Comment | Tok::Doctype { .. } => Step::Done,
            Tok::Start(t) if t.tag == Tag::Html => {
                self.mode = Mode::BeforeHead;
                Step::Done
            }
            Tok::End(t) if !matches!(t.tag, Tag::Head | Tag::Body | Tag::Html | Tag::Br) => {
                Step::Done
            }
            _ => self.enter_before_head(tok),
        }
    }

    fn enter_before_head<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        self.mode = Mode::BeforeHead;
        Step::Again(tok)
    }

    pub(super) fn before_head<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => match split_ws(s) {
                (_, []) => Step::Done,
                (_, rest) => self.implied_head(Tok::Chars(rest)),
            },
            Tok::Comment | Tok::Doctype { .. } => Step::Done,
            Tok::Start(t) if t.tag == Tag::Html => self.in_body(tok),
            Tok::Start(t) if t.tag == Tag::Head => {
                self.head = self.insert(&t);
                self.mode = Mode::InHead;
                Step::Done
            }
            Tok::End(t) if !matches!(t.tag, Tag::Head | Tag::Body | Tag::Html | Tag::Br) => {
                Step::Done
            }
            _ => self.implied_head(tok),
        }
    }

    fn implied_head<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        self.head = self.insert_tag(Tag::Head);
        self.mode = Mode::InHead;
        Step::Again(tok)
    }

    /// "In head"; also used by other modes for head elements (`<title>`, `<style>`, ...), which
    /// are then inserted wherever the current node is (in the body, their text is body text).
    pub(super) fn in_head<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => {
                let (ws, rest) = split_ws(s);
                if !ws.is_empty() {
                    self.insert_text(ws);
                }
                if rest.is_empty() {
                    Step::Done
                } else {
                    self.leave_head(Tok::Chars(rest))
                }
            }
            Tok::Comment => {
                self.insert_comment();
                Step::Done
            }
            Tok::Doctype { .. } => Step::Done,
            Tok::Start(t) => match t.tag {
                Tag::Html => self.in_body(tok),
                Tag::Base | Tag::Basefont | Tag::Bgsound | Tag::Link | Tag::Meta => {
                    self.insert_void(&t);
                    Step::Done
                }
                Tag::Title => {
                    self.raw_element(&t, State::RcData);
                    Step::Done
                }
                // Scripting is disabled (as in lexbor): <noscript> content is parsed as markup.
                Tag::Noscript => {
                    self.insert(&t);
                    self.mode = Mode::InHeadNoscript;
                    Step::Done
                }
                Tag::Noframes | Tag::Style => {
                    self.raw_element(&t, State::RawText);
                    Step::Done
                }
                Tag::Script => {
                    self.raw_element(&t, State::ScriptData);
                    Step::Done
                }
                Tag::Template => {
                    self.insert(&t);
                    self.push_marker();
                    self.frameset_ok = false;
                    self.mode = Mode::InTemplate;
                    self.template_modes.push(Mode::InTemplate);
                    Step::Done
                }
                Tag::Head => Step::Done,
                _ => self.leave_head(tok),
            },
            Tok::End(t) => match t.tag {
                Tag::Head => {
                    self.pop();
                    self.mode = Mode::AfterHead;
                    Step::Done
                }
                Tag::Body | Tag::Html | Tag::Br => self.leave_head(tok),
                Tag::Template => {
                    if self.has_template() {
                        self.implied_end_thorough();
                        self.pop_until(Tag::Template);
                        self.clear_afe_to_marker();
                        self.template_modes.pop();
                        self.reset_insertion_mode();
                    }
                    Step::Done
                }
                _ => Step::Done,
            },
            Tok::Eof => self.leave_head(tok),
        }
    }

    fn leave_head<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        self.pop();
        self.mode = Mode::AfterHead;
        Step::Again(tok)
    }

    pub(super) fn in_head_noscript<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Doctype { .. } => Step::Done,
            Tok::Start(t) if t.tag == Tag::Html => self.in_body(tok),
            Tok::End(t) if t.tag == Tag::Noscript => {
                self.pop();
                self.mode = Mode::InHead;
                Step::Done
            }
            Tok::Chars(s) => match split_ws(s) {
                (ws, []) => self.in_head(Tok::Chars(ws)),
                (ws, rest) => {
                    if !ws.is_empty() {
                        self.insert_text(ws);
                    }
                    self.leave_noscript(Tok::Chars(rest))
                }
            },
            Tok::Comment => self.in_head(tok),
            Tok::Start(t)
                if matches!(
                    t.tag,
                    Tag::Basefont
                        | Tag::Bgsound
                        | Tag::Link
                        | Tag::Meta
                        | Tag::Noframes
                        | Tag::Style
                ) =>
            {
                self.in_head(tok)
            }
            Tok::Start(t) if matches!(t.tag, Tag::Head | Tag::Noscript) => Step::Done,
            Tok::End(t) if t.tag != Tag::Br => Step::Done,
            _ => self.leave_noscript(tok),
        }
    }

    fn leave_noscript<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        self.pop();
        self.mode = Mode::InHead;
        Step::Again(tok)
    }

    pub(super) fn after_head<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => {
                let (ws, rest) = split_ws(s);
                if !ws.is_empty() {
                    self.insert_text(ws);
                }
                if rest.is_empty() {
                    Step::Done
                } else {
                    self.implied_body(Tok::Chars(rest))
                }
            }
            Tok::Comment => {
                self.insert_comment();
                Step::Done
            }
            Tok::Doctype { .. } => Step::Done,
            Tok::Start(t) => match t.tag {
                Tag::Html => self.in_body(tok),
                Tag::Body => {
                    self.body = self.insert(&t);
                    self.frameset_ok = false;
                    self.mode = Mode::InBody;
                    Step::Done
                }
                Tag::Frameset => {
                    self.insert(&t);
                    self.mode = Mode::Frameset;
                    Step::Done
                }
                Tag::Base
                | Tag::Basefont
                | Tag::Bgsound
                | Tag::Link
                | Tag::Meta
                | Tag::Noframes
                | Tag::Script
                | Tag::Style
                | Tag::Template
                | Tag::Title => {
                    // The head element goes back on the stack for this one element, so it is
                    // inserted into the head, not the body.
                    let head = self.head;
                    if head == super::dom::NIL {
                        return self.implied_body(tok);
                    }
                    self.push(super::tree::Open {
                        node: head,
                        tag: Tag::Head,
                        ns: super::tags::Ns::Html,
                        hash: 0,
                        html_ip: false,
                    });
                    let r = self.in_head(tok);
                    if let Some(i) = self.stack.iter().rposition(|o| o.node == head) {
                        self.remove_at(i);
                    }
                    r
                }
                Tag::Head => Step::Done,
                _ => self.implied_body(tok),
            },
            Tok::End(t) => match t.tag {
                Tag::Body | Tag::Html | Tag::Br => self.implied_body(tok),
                Tag::Template => self.in_head(tok),
                _ => Step::Done,
            },
            Tok::Eof => self.implied_body(tok),
        }
    }

    /// "In template": the content of a `<template>` (dropped from the text, but parsed like the
    /// spec says so that the template ends where a browser ends it).
    pub(super) fn in_template<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        use Tag::*;
        let switch = |tree: &mut Tree, mode: Mode| {
            tree.template_modes.pop();
            tree.template_modes.push(mode);
            tree.mode = mode;
            Step::Again(tok)
        };
        match tok {
            Tok::Chars(_) | Tok::Comment | Tok::Doctype { .. } => self.in_body(tok),
            Tok::Start(t) => match t.tag {
                Base | Basefont | Bgsound | Link | Meta | Noframes | Script | Style | Template
                | Title => self.in_head(tok),
                Caption | Colgroup | Tbody | Tfoot | Thead => switch(self, Mode::InTable),
                Col => switch(self, Mode::InColumnGroup),
                Tr => switch(self, Mode::InTableBody),
                Td | Th => switch(self, Mode::InRow),
                _ => switch(self, Mode::InBody),
            },
            Tok::End(t) if t.tag == Template => self.in_head(tok),
            Tok::End(_) => Step::Done,
            Tok::Eof => {
                if !self.has_template() {
                    return Step::Done;
                }
                self.pop_until(Template);
                self.clear_afe_to_marker();
                self.template_modes.pop();
                self.reset_insertion_mode();
                Step::Again(tok)
            }
        }
    }

    fn implied_body<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        self.body = self.insert_tag(Tag::Body);
        self.mode = Mode::InBody;
        Step::Again(tok)
    }

    pub(super) fn after_body<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) if super::tree::all_ws(s) => self.in_body(tok),
            // A comment after </body> is appended to the html element, so it does not split
            // the body's last text node.
            Tok::Comment => {
                let c = self.dom.new_comment();
                let html = self.stack[0].node;
                self.dom.insert(html, super::dom::NIL, c);
                Step::Done
            }
            Tok::Doctype { .. } | Tok::Eof => Step::Done,
            Tok::Start(t) if t.tag == Tag::Html => self.in_body(tok),
            Tok::End(t) if t.tag == Tag::Html => {
                self.mode = Mode::AfterAfterBody;
                Step::Done
            }
            _ => {
                self.mode = Mode::InBody;
                Step::Again(tok)
            }
        }
    }

    pub(super) fn after_after_body<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Comment | Tok::Eof => Step::Done,
            Tok::Doctype { .. } => self.in_body(tok),
            Tok::Chars(s) if super::tree::all_ws(s) => self.in_body(tok),
            Tok::Start(t) if t.tag == Tag::Html => self.in_body(tok),
            _ => {
                self.mode = Mode::InBody;
                Step::Again(tok)
            }
        }
    }
}
