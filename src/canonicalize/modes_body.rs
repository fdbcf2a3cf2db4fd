//! The "in body" insertion mode: where nearly all body text is inserted.
//!
//! What matters for the canonical text: which start tags create an element (a text-node
//! boundary) and which are ignored (`<td>` outside a table, a second `<body>`), which end tags
//! close something and which are ignored (`</div>` with no open div: `a</div>b` is one word),
//! and which elements switch the tokenizer to raw text (`<textarea>`, `<xmp>`, `<iframe>`, ...).

use html5gum::State;

use super::tags::{Ns, Scope, Tag};
use super::tree::{all_ws, Mode, Step, TagTok, Tok, Tree};

impl Tree {
    pub(super) fn in_body<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => {
                self.reconstruct_afe();
                self.insert_text(s);
                if self.frameset_ok && !all_ws(s) {
                    self.frameset_ok = false;
                }
                Step::Done
            }
            Tok::Comment => {
                self.insert_comment();
                Step::Done
            }
            Tok::Doctype { .. } => Step::Done,
            Tok::Eof if !self.template_modes.is_empty() => self.in_template(tok),
            Tok::Eof => Step::Done,
            Tok::Start(t) => self.body_start(t),
            Tok::End(t) => self.body_end(t),
        }
    }

    pub(super) fn body_start<'a>(&mut self, t: TagTok) -> Step<'a> {
        use Tag::*;
        match t.tag {
            Html => {}
            Base | Basefont | Bgsound | Link | Meta | Noframes | Script | Style | Template
            | Title => {
                return self.in_head(Tok::Start(t));
            }
            Body => {
                if self.stack.len() > 1 && !self.has_template() {
                    self.frameset_ok = false;
                }
            }
            Frameset => {
                if self.frameset_ok && self.stack.len() > 1 && self.stack[1].is(Body) {
                    // The body is replaced by the frameset: such a page has no body text.
                    let body = self.stack[1].node;
                    self.dom.remove(body);
                    self.truncate(1);
                    self.insert(&t);
                    self.body = super::dom::NIL;
                    self.mode = Mode::Frameset;
                }
            }
            Address | Article | Aside | Blockquote | Center | Details | Dialog | Dir | Div | Dl
            | Fieldset | Figcaption | Figure | Footer | Header | Hgroup | Main | Menu | Nav
            | Ol | P | Search | Section | Summary | Ul => {
                self.close_p_in_button_scope();
                self.insert(&t);
            }
            H1 | H2 | H3 | H4 | H5 | H6 => {
                self.close_p_in_button_scope();
                let c = self.cur();
                if c.ns == Ns::Html && c.tag.is_heading() {
                    self.pop();
                }
                self.insert(&t);
            }
            Pre | Listing => {
                self.close_p_in_button_scope();
                self.insert(&t);
                self.frameset_ok = false;
            }
            Form => {
                let template = self.has_template();
                if self.form == super::dom::NIL || template {
                    self.close_p_in_button_scope();
                    let n = self.insert(&t);
                    if !template {
                        self.form = n;
                    }
                }
            }
            Li | Dd | Dt => {
                self.frameset_ok = false;
                for i in (0..self.stack.len()).rev() {
                    let o = self.stack[i];
                    let closes = o.ns == Ns::Html
                        && if t.tag == Li {
                            o.tag == Li
                        } else {
                            matches!(o.tag, Dd | Dt)
                        };
                    if closes {
                        self.implied_end(Some(o.tag));
                        self.pop_until(o.tag);
                        break;
                    }
                    if super::tags::is_special(o.tag, o.ns)
                        && !(o.ns == Ns::Html && matches!(o.tag, Address | Div | P))
                    {
                        break;
                    }
                }
                self.close_p_in_button_scope();
                self.insert(&t);
            }
            Plaintext => {
                self.close_p_in_button_scope();
                self.insert(&t);
                self.next_state = Some(State::PlainText);
            }
            Button => {
                if self.in_scope(Button, Scope::Default) {
                    self.implied_end(None);
                    self.pop_until(Button);
                }
                self.reconstruct_afe();
                self.insert(&t);
                self.frameset_ok = false;
            }
            A => {
                let start = self
                    .afe
                    .iter()
                    .rposition(|f| f.node == super::dom::NIL)
                    .map_or(0, |m| m + 1);
                if let Some(i) = (start..self.afe.len())
                    .rev()
                    .find(|&i| self.afe[i].tag == A)
                {
                    let node = self.afe[i].node;
                    self.adoption_agency(A);
                    if let Some(k) = self.afe.iter().position(|f| f.node == node) {
                        self.afe.remove(k);
                    }
                    if let Some(k) = self.stack.iter().rposition(|o| o.node == node) {
                        self.remove_at(k);
                    }
                }
                self.reconstruct_afe();
                let n = self.insert(&t);
                self.push_afe(n, A);
            }
            B | Big | Code | Em | Font | I | S | Small | Strike | Strong | Tt | U => {
                self.reconstruct_afe();
                let n = self.insert(&t);
                self.push_afe(n, t.tag);
            }
            Nobr => {
                self.reconstruct_afe();
                if self.in_scope(Nobr, Scope::Default) {
                    self.adoption_agency(Nobr);
                    self.reconstruct_afe();
                }
                let n = self.insert(&t);
                self.push_afe(n, Nobr);
            }
            Applet | Marquee | Object => {
                self.reconstruct_afe();
                self.insert(&t);
                self.push_marker();
                self.frameset_ok = false;
            }
            Table => {
                if !self.quirks {
                    self.close_p_in_button_scope();
                }
                self.insert(&t);
                self.frameset_ok = false;
                self.mode = Mode::InTable;
            }
            Area | Br | Embed | Img | Keygen | Wbr => {
                self.reconstruct_afe();
                self.insert_void(&t);
                self.frameset_ok = false;
            }
            Image => return self.body_start(TagTok { tag: Img, ..t }),
            Input => {
                if self.in_scope(Select, Scope::Default) {
                    self.pop_until(Select);
                }
                self.reconstruct_afe();
                self.insert_void(&t);
                if !t.attr.input_hidden {
                    self.frameset_ok = false;
                }
            }
            Param | Source | Track => self.insert_void(&t),
            Hr => {
                self.close_p_in_button_scope();
                if self.in_scope(Select, Scope::Default) {
                    self.implied_end(None);
                }
                self.insert_void(&t);
                self.frameset_ok = false;
            }
            Textarea => {
                self.frameset_ok = false;
                self.raw_element(&t, State::RcData);
            }
            Xmp => {
                self.close_p_in_button_scope();
                self.reconstruct_afe();
                self.frameset_ok = false;
                self.raw_element(&t, State::RawText);
            }
            Iframe => {
                self.frameset_ok = false;
                self.raw_element(&t, State::RawText);
            }
            Noembed => self.raw_element(&t, State::RawText),
            Select => {
                if self.in_scope(Select, Scope::Default) {
                    self.pop_until(Select);
                } else {
                    self.reconstruct_afe();
                    self.insert(&t);
                    self.frameset_ok = false;
                }
            }
            Option | Optgroup => {
                if self.in_scope(Select, Scope::Default) {
                    self.implied_end(if t.tag == Option {
                        Some(Optgroup)
                    } else {
                        None
                    });
                } else if self.cur().is(Option) {
                    self.pop();
                }
                self.reconstruct_afe();
                self.insert(&t);
            }
            Rb | Rtc => {
                if self.in_scope(Ruby, Scope::Default) {
                    self.implied_end(None);
                }
                self.insert(&t);
            }
            Rp | Rt => {
                if self.in_scope(Ruby, Scope::Default) {
                    self.implied_end(Some(Rtc));
                }
                self.insert(&t);
            }
            Math | Svg => {
                self.reconstruct_afe();
                self.insert_ns(&t, if t.tag == Math { Ns::MathMl } else { Ns::Svg });
                if t.self_closing {
                    self.pop();
                }
            }
            Caption | Col | Colgroup | Frame | Head | Tbody | Td | Tfoot | Th | Thead | Tr => {}
            _ => {
                self.reconstruct_afe();
                self.insert(&t);
            }
        }
        Step::Done
    }

    pub(super) fn body_end<'a>(&mut self, t: TagTok) -> Step<'a> {
        use Tag::*;
        match t.tag {
            Template => return self.in_head(Tok::End(t)),
            Body => {
                if self.in_scope(Body, Scope::Default) {
                    self.mode = Mode::AfterBody;
                }
            }
            Html => {
                if self.in_scope(Body, Scope::Default) {
                    self.mode = Mode::AfterBody;
                    return Step::Again(Tok::End(t));
                }
            }
            Address | Article | Aside | Blockquote | Button | Center | Details | Dialog | Dir
            | Div | Dl | Fieldset | Figcaption | Figure | Footer | Header | Hgroup | Listing
            | Main | Menu | Nav | Ol | Pre | Search | Section | Select | Summary | Ul => {
                if self.in_scope(t.tag, Scope::Default) {
                    self.implied_end(None);
                    self.pop_until(t.tag);
                }
            }
            Form => {
                if self.has_template() {
                    if self.in_scope(Form, Scope::Default) {
                        self.implied_end(None);
                        self.pop_until(Form);
                    }
                } else {
                    let node = std::mem::replace(&mut self.form, super::dom::NIL);
                    if node != super::dom::NIL
                        && self.in_scope_by(|o| o.node == node, Scope::Default)
                    {
                        self.implied_end(None);
                        if let Some(i) = self.stack.iter().rposition(|o| o.node == node) {
                            self.remove_at(i);
                        }
                    }
                }
            }
            P => {
                if !self.in_scope(P, Scope::Button) {
                    self.insert_tag(P);
                }
                self.implied_end(Some(P));
                self.pop_until(P);
            }
            Li => {
                if self.in_scope(Li, Scope::ListItem) {
                    self.implied_end(Some(Li));
                    self.pop_until(Li);
                }
            }
            Dd | Dt => {
                if self.in_scope(t.tag, Scope::Default) {
                    self.implied_end(Some(t.tag));
                    self.pop_until(t.tag);
                }
            }
            H1 | H2 | H3 | H4 | H5 | H6 => {
                if self.in_scope_by(|o| o.ns == Ns::Html && o.tag.is_heading(), Scope::Default) {
                    self.implied_end(None);
                    while self.stack.len() > 1 {
                        let c = self.cur();
                        self.pop();
                        if c.ns == Ns::Html && c.tag.is_heading() {
                            break;
                        }
                    }
                }
            }
            A | B | Big | Code | Em | Font | I | Nobr | S | Small | Strike | Strong | Tt | U => {
                self.formatting_end(&t);
            }
            Applet | Marquee | Object => {
                if self.in_scope(t.tag, Scope::Default) {
                    self.implied_end(None);
                    self.pop_until(t.tag);
                    self.clear_afe_to_marker();
                }
            }
            Br => return self.body_start(TagTok::plain(Br)),
            _ => self.any_other_end(&t),
        }
        Step::Done
    }
}
