//! The canonicalizer's oracle: the body text of a document as html5ever (Servo's WHATWG
//! parser, pinned exactly) builds the tree, with the same decoding before and the same
//! lowercasing and word rule after (`charset::decode`, `words::append_words`). Only step 3-5
//! of format-spec/canonical-text.md (tree construction and body text) is computed
//! independently, which is the part our own tree builder (`tree.rs`, `modes_*.rs`) could get
//! wrong.
//!
//! html5ever and the spec are not identical: html5ever implements the pre-2025 "in select"
//! insertion modes, while the spec follows lexbor's customizable-select parsing (the shared
//! corpus's reference). [`known_difference`] names those cases; everywhere else the two must
//! agree word for word (`tests::oracle_*` and the `canonicalize_oracle` fuzz target).

use html5ever::tendril::TendrilSink;
use html5ever::{local_name, parse_document, ParseOpts};
use markup5ever_rcdom::{Handle, NodeData, RcDom};

use super::{charset, words, DocFormat};

/// The canonical text of an HTML document by html5ever (`None`: no words, or binary).
pub fn canonical_text(bytes: &[u8], charset_hint: Option<&str>) -> Option<String> {
    let text = charset::decode(bytes, charset_hint, true);
    if text.contains(&0) {
        return None;
    }
    let text = String::from_utf8_lossy(&text);
    let mut opts = ParseOpts::default();
    opts.tree_builder.scripting_enabled = false;
    let dom = parse_document(RcDom::default(), opts).one(&*text);
    let mut raw = Vec::new();
    if let Some(body) = find_body(&dom.document) {
        body_text(&body, &mut raw);
    }
    let mut out = Vec::new();
    words::append_words(&raw, &mut out);
    (!out.is_empty()).then(|| String::from_utf8_lossy(&out).into_owned())
}

/// Our canonicalizer's answer in the same shape, for comparisons.
pub fn ours(bytes: &[u8], charset_hint: Option<&str>) -> Option<String> {
    super::canonicalize(bytes, DocFormat::Html, charset_hint)
        .ok()
        .map(|c| c.text)
}

/// Markup whose parse legitimately differs between html5ever and the spec (lexbor's
/// customizable `<select>`): any `select`, `option`, `optgroup` or `selectedcontent` tag, in
/// any case. Documents without such tags must give the same words.
pub fn known_difference(bytes: &[u8]) -> bool {
    let lower = bytes.to_ascii_lowercase();
    [
        &b"<select"[..],
        b"</select",
        b"<option",
        b"</option",
        b"<optgroup",
        b"</optgroup",
        b"<selectedcontent",
    ]
    .iter()
    .any(|t| lower.windows(t.len()).any(|w| w == *t))
}

/// The `body` child of the `html` element (a frameset document has none).
fn find_body(document: &Handle) -> Option<Handle> {
    let html = document
        .children
        .borrow()
        .iter()
        .find(|n| is_element(n, &local_name!("html")))
        .cloned()?;
    let body = html
        .children
        .borrow()
        .iter()
        .find(|n| is_element(n, &local_name!("body")))
        .cloned();
    body
}

fn is_element(n: &Handle, local: &html5ever::LocalName) -> bool {
    matches!(&n.data, NodeData::Element { name, .. } if name.local == *local
        && name.ns == html5ever::ns!(html))
}

/// Text nodes under `node` in document order, each followed by a space; `script`, `style` and
/// `template` subtrees (any namespace) are skipped. Iterative: no recursion on deep trees.
fn body_text(node: &Handle, out: &mut Vec<u8>) {
    let mut stack: Vec<Handle> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(n) = stack.pop() {
        match &n.data {
            NodeData::Text { contents } => {
                out.extend_from_slice(contents.borrow().as_bytes());
                out.push(b' ');
            }
            NodeData::Element { name, .. } => {
                let l = &name.local;
                if *l == local_name!("script")
                    || *l == local_name!("style")
                    || *l == local_name!("template")
                {
                    continue;
                }
                stack.extend(n.children.borrow().iter().rev().cloned());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic tag soup: random sequences of open/close tags (formatting, tables,
    /// lists, raw text, foreign content, misnested and stray ones), text, entities and
    /// comments. `select` and its kin are left out (see [`known_difference`]).
    fn tag_soup(seed: u64, parts: usize) -> String {
        #[rustfmt::skip]
        const TAGS: &[&str] = &[
            "p", "div", "span", "b", "i", "a", "em", "strong", "table", "tr", "td", "th",
            "tbody", "caption", "ul", "li", "ol", "dl", "dt", "dd", "h1", "h2", "pre", "br",
            "hr", "img", "code", "font", "nobr", "form", "button", "center", "blockquote",
            "svg", "math", "title", "textarea", "script", "style", "template", "noscript",
            "xmp", "iframe", "noembed", "head", "body", "html", "frameset", "plaintext",
        ];
        #[rustfmt::skip]
        const WORDS: &[&str] = &[
            "alpha", "Beta", "GAMMA", "délta", "x86-64", "v_add", "ΣΑΣ", "İstanbul", "3½",
            "foo&amp;bar", "&lt;tag&gt;", "a&nbsp;b", "&eacute;t&eacute;", "&#x41;&#66;c",
            "naïve", "日本語", "", "  ", "\n",
        ];
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let mut s = String::new();
        if next(3) == 0 {
            s.push_str("<!DOCTYPE html>");
        }
        for _ in 0..parts {
            match next(10) {
                0..=2 => {
                    s.push_str(WORDS[next(WORDS.len())]);
                    s.push(' ');
                }
                3..=5 => {
                    let t = TAGS[next(TAGS.len() - 1)]; // plaintext is rare: below
                    s.push('<');
                    s.push_str(t);
                    if next(4) == 0 {
                        s.push_str(" class=\"c\" title='x y'");
                    }
                    s.push('>');
                }
                6..=7 => {
                    s.push_str("</");
                    s.push_str(TAGS[next(TAGS.len() - 1)]);
                    s.push('>');
                }
                8 => s.push_str(["<!-- c -->", "<!---->", "<?pi?>", "</>", "<>"][next(5)]),
                _ => {
                    if next(50) == 0 {
                        s.push_str("<plaintext>");
                    }
                    s.push_str(WORDS[next(WORDS.len())]);
                }
            }
        }
        s
    }

    fn compare(name: &str, page: &[u8], failures: &mut Vec<String>) {
        let (a, b) = (ours(page, None), canonical_text(page, None));
        if a != b && !known_difference(page) {
            failures.push(format!(
                "{name}: ours {:?}\n  html5ever {:?}",
                a.as_deref().map(|s| &s[..s.len().min(300)]),
                b.as_deref().map(|s| &s[..s.len().min(300)])
            ));
        }
    }

    #[test]
    fn oracle_agrees_on_the_spec_examples() {
        for page in [
            "<p>Hello, World!</p>",
            "<title>t</title><body>a<script>x</script>b</body>",
            "a</span>b",
            "a<br>b<!---->c",
            "<table>lost<tr><td>cell</td></tr></table>",
            "<body>x</body>after",
            "<noscript><b>shown</b></noscript>",
            "<textarea><b>raw</b></textarea>",
            "<svg><style>dropped</style><text>kept</text></svg>",
            "<frameset><frame></frameset>",
        ] {
            assert_eq!(
                ours(page.as_bytes(), None),
                canonical_text(page.as_bytes(), None),
                "{page}"
            );
        }
        assert!(known_difference(b"<SELECT><option>a"));
        assert!(!known_difference(b"<p>selection</p>"));
    }

    #[test]
    fn oracle_agrees_on_generated_tag_soup() {
        agrees_on_seeds("generated pages", |seed| {
            tag_soup(seed, 20 + (seed as usize % 200))
        });
    }

    /// `compare` on the pages `page(seed)` makes for seeds 0..3000; fails naming the first five
    /// that differ from html5ever.
    fn agrees_on_seeds(what: &str, mut page: impl FnMut(u64) -> String) {
        let mut failures = Vec::new();
        for seed in 0..3000u64 {
            compare(
                &format!("seed {seed}"),
                page(seed).as_bytes(),
                &mut failures,
            );
        }
        assert!(
            failures.is_empty(),
            "{} of 3000 {what} differ from html5ever:\n{}",
            failures.len(),
            failures[..failures.len().min(5)].join("\n")
        );
    }

    /// Markup inside table cells: the in-cell mode's direct path (`Tree::tag_other`,
    /// `Tree::chars_other`) takes text and every tag `in_cell_names` does not name straight to
    /// the in-body rules. Random cell content mixing every tag the in-cell rules name (start
    /// and end), formatting elements (reconstructed and adopted across cells), foreign content,
    /// raw text, stray and misnested tags, text and comments.
    #[test]
    fn oracle_agrees_on_generated_cell_content() {
        #[rustfmt::skip]
        const PARTS: &[&str] = &[
            "<td>", "</td>", "<th>", "</th>", "<tr>", "</tr>", "<tbody>", "</tbody>", "<thead>",
            "</thead>", "<tfoot>", "</tfoot>", "<caption>", "</caption>", "<col>", "</col>",
            "<colgroup>", "</colgroup>", "<table>", "</table>", "</body>", "</html>", "<body>",
            "<html>", "<b>", "</b>", "<a href=x>", "</a>", "<i>", "</i>", "<nobr>", "</nobr>",
            "<p>", "</p>", "<div>", "</div>", "<span>", "</span>", "<code>", "</code>",
            "<br>", "</br>", "<li>", "<ul>", "</ul>", "<svg>", "</svg>", "<math><mi>",
            "</math>", "<script>s</script>", "<style>s</style>", "<template>t</template>",
            "<textarea>r</textarea>", "<form>", "</form>", "<frameset>", "<input type=hidden>",
            "<hr>", "<img>", "<foo>", "</foo>", "<!-- c -->", "word", "Wörd ", " ", "\n  ",
            "x&amp;y", "&nbsp;", "a", "b", "c", "d", "e", "f",
        ];
        agrees_on_seeds("generated cells", |seed| {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = |n: usize| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % n as u64) as usize
            };
            let mut page =
                String::from(["<table><tr><td>", "<table>\n<tr>\n<td>", "<td>"][next(3)]);
            for _ in 0..(10 + seed as usize % 60) {
                page.push_str(PARTS[next(PARTS.len())]);
            }
            page
        });
    }

    /// Every page of the shared llvm-docs corpus (skipped, with a notice, when it is absent).
    #[test]
    fn oracle_agrees_on_the_shared_corpus() {
        let (mut known, mut failures) = (0, Vec::new());
        let Some(pages) = crate::canonicalize::tests::for_each_corpus_page(|path, bytes| {
            known += known_difference(&bytes) as usize;
            compare(&path.display().to_string(), &bytes, &mut failures);
        }) else {
            return;
        };
        assert!(pages > 3000, "{pages} pages");
        eprintln!("oracle: {pages} corpus pages compared, {known} with <select> markup");
        assert!(
            failures.is_empty(),
            "{} of {pages} corpus pages differ from html5ever:\n{}",
            failures.len(),
            failures[..failures.len().min(5)].join("\n")
        );
    }
}
