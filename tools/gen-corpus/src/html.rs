//! HTML rendering: per-site boilerplate and the web-like markup around a document's words.
//!
//! The markup is chosen so that canonicalization (drop <script>/<style>/comments, strip
//! tags, decode entities, keep \w+ words, lowercase) recovers exactly: title words, site
//! header and nav, the document's words in order, site footer. Tags and entities sit
//! between words, never inside one, except `&eacute;`, which is part of a word's form
//! (see vocab.rs). Markup choices use the document's own stream, so a variant's markup
//! differs from its original's the way re-rendered copies on the web do.

use crate::plan::Plan;
use crate::rng::{tag, Rng};
use crate::vocab::{Vocab, Zipf};

/// A site's shared boilerplate, rendered once.
pub struct Site {
    name: String,
    head: String,
    header_nav: String,
    footer: String,
}

const INLINE_TAGS: &[&str] = &["em", "strong", "b", "i", "code", "span", "a"];

impl Site {
    /// Builds site `index`: 30-80 boilerplate words in header, nav and footer.
    /// `nav_words` (>= 12) fixes the number of boilerplate words instead.
    pub fn build(
        seed: u64,
        index: u32,
        vocab: &Vocab,
        zipf: &Zipf,
        nav_words: Option<u32>,
    ) -> Site {
        let mut rng = Rng::stream(seed, tag::SITE, index as u64);
        let drawn = rng.range(30, 80) as usize;
        let budget = nav_words.map_or(drawn, |w| w as usize);
        let word = |rng: &mut Rng| vocab.html(zipf.sample(rng)).to_string();
        let name_words: Vec<String> = (0..rng.range(1, 2))
            .map(|_| capitalize(&word(&mut rng)))
            .collect();
        let name = name_words.join(" ");
        let year = rng.range(2015, 2024);
        let tagline: Vec<String> = (0..rng.range(3, 7)).map(|_| word(&mut rng)).collect();
        // Words used so far: name in header and footer, tagline, the footer's year.
        let fixed = 2 * name_words.len() + tagline.len() + 1;
        let rest = budget - fixed;
        let nav_words = rest / 2;
        let footer_words = rest - nav_words;

        let color = rng.below(0x1000000);
        let class = vocab.html(zipf.sample(&mut rng)).replace("&eacute;", "e");
        let mut head = format!(
            "<link rel=\"stylesheet\" href=\"/static/{class}.css\">\n<style>\nbody{{font-family:Georgia,serif;color:#{color:06x};margin:0 auto;max-width:{w}px}}\n.{class}-nav li{{display:inline;padding:0 {p}px}}\nfooter p{{font-size:small}}\n</style>\n",
            w = rng.range(600, 1200),
            p = rng.range(2, 12),
        );
        head.push_str(&format!(
            "<script>\n(function(w,d){{w.{class}=w.{class}||[];w.{class}.push({{site:\"site-{index}\",t:Date.now()}});var s=d.createElement(\"script\");s.async=true;s.src=\"/static/{class}.js\";d.head.appendChild(s);}})(window,document);\n</script>\n"
        ));

        let mut header_nav = format!(
            "<header>\n<h1><a href=\"/\">{name}</a></h1>\n<p class=\"tagline\">{}</p>\n</header>\n<nav class=\"{class}-nav\">\n<ul>\n",
            tagline.join(" ")
        );
        let mut left = nav_words;
        while left > 0 {
            let k = (rng.range(1, 3) as usize).min(left);
            left -= k;
            let item: Vec<String> = (0..k).map(|_| word(&mut rng)).collect();
            let text = if k == 2 && rng.chance(0.3) {
                item.join(" &amp; ")
            } else {
                item.join(" ")
            };
            header_nav.push_str(&format!(
                "<li><a href=\"/{}.html\">{}</a></li>\n",
                item.join("-"),
                capitalize(&text)
            ));
        }
        header_nav.push_str("</ul>\n</nav>\n");

        let blurb: Vec<String> = (0..footer_words).map(|_| word(&mut rng)).collect();
        let footer = format!(
            "<footer>\n<p>{}.</p>\n<p>&copy; {year} {name}</p>\n</footer>\n",
            capitalize(&blurb.join(" "))
        );
        Site {
            name,
            head,
            header_nav,
            footer,
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_capitalized(&mut out, s);
    out
}

fn push_capitalized(out: &mut String, s: &str) {
    let mut chars = s.chars();
    if let Some(c) = chars.next() {
        out.push(c.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
}

pub struct Renderer<'a> {
    pub seed: u64,
    pub vocab: &'a Vocab,
    pub sites: &'a [Site],
    pub plan: &'a Plan,
}

impl Renderer<'_> {
    /// Appends the HTML page of `doc` with body `words` (vocabulary ranks) to `out`.
    pub fn render(&self, doc: u32, words: &[u32], out: &mut String) {
        let mut rng = Rng::stream(self.seed, tag::MARKUP, doc as u64);
        let site = &self.sites[self.plan.home_site(doc) as usize];
        let page = self.plan.page_number(doc);
        let heading_len = (rng.range(3, 8) as usize).min(words.len());
        let (heading, body) = words.split_at(heading_len);

        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str(
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
        );
        self.run(heading, true, &mut rng, out); // plain: no inline markup in titles
        out.push_str(" | ");
        out.push_str(&site.name);
        out.push_str("</title>\n<!-- ndd-gen -->\n");
        out.push_str(&site.head);
        out.push_str("</head>\n<body>\n");
        out.push_str(&site.header_nav);
        out.push_str("<main>\n<article>\n<h2>");
        self.run(heading, false, &mut rng, out);
        out.push_str("</h2>\n");

        let mut rest = body;
        while !rest.is_empty() {
            let r = rng.f64();
            if r < 0.08 {
                let (h, t) = rest.split_at((rng.range(2, 6) as usize).min(rest.len()));
                out.push_str("<h3>");
                self.run(h, false, &mut rng, out);
                out.push_str("</h3>\n");
                rest = t;
            } else if r < 0.22 {
                out.push_str("<ul>\n");
                for _ in 0..rng.range(2, 5) {
                    if rest.is_empty() {
                        break;
                    }
                    let (item, t) = rest.split_at((rng.range(2, 10) as usize).min(rest.len()));
                    out.push_str("<li>");
                    self.run(item, false, &mut rng, out);
                    out.push_str("</li>\n");
                    rest = t;
                }
                out.push_str("</ul>\n");
            } else {
                out.push_str("<p>");
                for s in 0..rng.range(1, 5) {
                    if rest.is_empty() {
                        break;
                    }
                    let (sentence, t) = rest.split_at((rng.range(5, 22) as usize).min(rest.len()));
                    if s > 0 {
                        out.push(' ');
                    }
                    self.run(sentence, false, &mut rng, out);
                    let end = rng.below(100);
                    out.push(if end < 5 {
                        '?'
                    } else if end < 8 {
                        '!'
                    } else {
                        '.'
                    });
                    rest = t;
                }
                out.push_str("</p>\n");
            }
        }
        out.push_str("</article>\n</main>\n");
        out.push_str(&site.footer);
        // Per-page script: its tokens differ between pages, so keeping scripts would hurt.
        out.push_str("<script>var nddPage=\"");
        out.push_str(&page);
        out.push_str("\",nddTags=[");
        for k in 0..3 {
            let w = words
                .get(rng.below(words.len().max(1) as u64) as usize)
                .copied()
                .unwrap_or(0);
            out.push_str(if k == 0 { "\"" } else { ",\"" });
            out.push_str(self.vocab.html(w));
            out.push('"');
        }
        out.push_str("];</script>\n</body>\n</html>\n");
    }

    /// Writes `words` (first one capitalized) separated by spaces, with occasional inline
    /// tags, quotes, entities and commas between words; `plain` writes spaces only and
    /// draws nothing from `rng`.
    fn run(&self, words: &[u32], plain: bool, rng: &mut Rng, out: &mut String) {
        let mut close: Option<(&str, usize)> = None; // (closing text, words left in span)
        for (j, &w) in words.iter().enumerate() {
            if j > 0 {
                let sep = if plain { 100 } else { rng.below(100) };
                out.push_str(match sep {
                    0 => "&nbsp;",
                    1 => " &amp; ",
                    2 => " &mdash; ",
                    3..=5 => ", ",
                    _ => " ",
                });
            }
            if !plain && close.is_none() && rng.chance(0.05) {
                let span = rng.range(1, 4) as usize;
                let pick = rng.below(INLINE_TAGS.len() as u64 + 1) as usize;
                match INLINE_TAGS.get(pick).copied() {
                    Some("a") => {
                        let target = rng.below(self.plan.n as u64) as u32;
                        out.push_str("<a href=\"/page-");
                        out.push_str(&self.plan.page_number(target));
                        out.push_str(".html\">");
                        close = Some(("</a>", span));
                    }
                    Some(t) => {
                        out.push('<');
                        out.push_str(t);
                        out.push('>');
                        close = Some((closing(t), span));
                    }
                    None => {
                        out.push_str("&quot;");
                        close = Some(("&quot;", span));
                    }
                }
            }
            let form = self.vocab.html(w);
            if j == 0 {
                push_capitalized(out, form);
            } else {
                out.push_str(form);
            }
            if let Some((text, left)) = close {
                if left <= 1 || j + 1 == words.len() {
                    out.push_str(text);
                    close = None;
                } else {
                    close = Some((text, left - 1));
                }
            }
        }
    }
}

fn closing(t: &str) -> &'static str {
    match t {
        "em" => "</em>",
        "strong" => "</strong>",
        "b" => "</b>",
        "i" => "</i>",
        "code" => "</code>",
        _ => "</span>",
    }
}
