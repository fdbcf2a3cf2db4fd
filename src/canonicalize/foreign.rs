//! "The rules for parsing tokens in foreign content" (SVG and MathML, WHATWG HTML 13.2.6.5).
//!
//! Inside `<svg>`/`<math>`, tags such as `<style>`, `<title>` or `<xmp>` are plain elements
//! (no raw text), CDATA sections are text, and a few HTML tags break back out to HTML rules.

use super::tags::{Ns, Tag};
use super::tree::{all_ws, Step, Tok, Tree};

impl Tree {
    pub(super) fn use_foreign_rules(&self, tok: &Tok<'_>) -> bool {
        let c = self.cur();
        if c.ns == Ns::Html {
            return false;
        }
        let mathml_text_ip = c.ns == Ns::MathMl
            && matches!(c.tag, Tag::Mi | Tag::Mo | Tag::Mn | Tag::Ms | Tag::Mtext);
        let html_ip = c.html_ip
            || (c.ns == Ns::Svg && matches!(c.tag, Tag::ForeignObject | Tag::Desc | Tag::Title));
        match tok {
            Tok::Eof => false,
            Tok::Chars(_) => !(mathml_text_ip || html_ip),
            Tok::Start(t) => {
                if mathml_text_ip && !matches!(t.tag, Tag::Mglyph | Tag::Malignmark) {
                    return false;
                }
                if c.ns == Ns::MathMl && c.tag == Tag::AnnotationXml && t.tag == Tag::Svg {
                    return false;
                }
                !html_ip
            }
            _ => true,
        }
    }

    /// "The rules for parsing tokens in foreign content".
    pub(super) fn foreign<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        match tok {
            Tok::Chars(s) => {
                self.insert_text(s);
                if !all_ws(s) {
                    self.frameset_ok = false;
                }
            }
            Tok::Comment => self.insert_comment(),
            Tok::Doctype { .. } | Tok::Eof => {}
            Tok::Start(t)
                if t.tag.breaks_out_of_foreign()
                    || (t.tag == Tag::Font && t.attr.font_breakout) =>
            {
                return self.break_out_of_foreign(tok);
            }
            Tok::End(t) if matches!(t.tag, Tag::Br | Tag::P) => {
                return self.break_out_of_foreign(tok)
            }
            Tok::Start(t) => {
                let ns = self.cur().ns;
                self.insert_ns(&t, ns);
                if t.self_closing {
                    self.pop();
                }
            }
            Tok::End(t) => {
                let mut i = self.stack.len() - 1;
                loop {
                    if i == 0 {
                        return Step::Done;
                    }
                    if self.stack[i].same_name(&t) {
                        self.truncate(i);
                        return Step::Done;
                    }
                    i -= 1;
                    if self.stack[i].ns == Ns::Html {
                        return self.by_mode(self.mode, tok);
                    }
                }
            }
        }
        Step::Done
    }

    fn break_out_of_foreign<'a>(&mut self, tok: Tok<'a>) -> Step<'a> {
        while self.stack.len() > 1 {
            let c = self.cur();
            let ip = c.ns == Ns::Html
                || c.html_ip
                || (c.ns == Ns::MathMl
                    && matches!(c.tag, Tag::Mi | Tag::Mo | Tag::Mn | Tag::Ms | Tag::Mtext))
                || (c.ns == Ns::Svg
                    && matches!(c.tag, Tag::ForeignObject | Tag::Desc | Tag::Title));
            if ip {
                break;
            }
            self.pop();
        }
        // "Reprocess the token according to the rules ... in HTML content": not through the
        // dispatcher, whose foreign-content check would send it straight back here.
        self.by_mode(self.mode, tok)
    }
}
