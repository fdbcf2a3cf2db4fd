//! End-to-end tests of `canonicalize`. Expected HTML outputs were produced by the reference
//! (`exact_truth.py`'s `canonical_words`: selectolax 1.0.2 / lexbor), except where a test says
//! it checks a documented difference (declared charsets: the reference always decodes UTF-8).

use super::*;

fn html(s: &str) -> String {
    html_bytes(s.as_bytes(), None)
}

fn html_bytes(b: &[u8], hint: Option<&str>) -> String {
    match canonicalize(b, DocFormat::Html, hint) {
        Ok(c) => c.text,
        Err(Rejection::Empty) => String::new(),
        Err(e) => panic!("rejected: {e}"),
    }
}

#[test]
fn entities_are_decoded_inside_words() {
    let s = "<p>caf&eacute; &amp; cr&egrave;me &lt;tag&gt; &#x41;&#66;c &notit; &copy2 &ampx</p>";
    assert_eq!(html(s), "café crème tag abc it 2 x");
}

#[test]
fn script_style_template_are_dropped_with_content() {
    let s = "<p>a</p><script>var x = 'hidden';</script><style>.c{color:red}</style>\
             <template><p>tmpl</p></template><p>b</p><svg><style>svgstyle</style><text>t</text></svg>";
    assert_eq!(html(s), "a b t");
    // An unclosed template swallows the rest of the document.
    assert_eq!(html("x<template>y<p>z"), "x");
}

#[test]
fn only_body_text_counts() {
    let s = "<html><head><title>Title words</title><meta charset=utf-8><style>h</style></head>\
             <body>Body <b>text</b></body></html>";
    assert_eq!(html(s), "body text");
    // Text before <head> opens the body; the later <title> is then body text.
    assert_eq!(
        html("stray<head><title>title in body now</title>"),
        "stray title in body now"
    );
    // <noscript> in the head (scripting off): its text opens the body.
    assert_eq!(
        html("<title>head title</title><noscript>ns</noscript>after"),
        "nsafter"
    );
    // Text after </body> and </html> still goes into the body, merged with what is there.
    assert_eq!(html("<p>x</body>y</html>z<!--c-->w"), "xyz w");
}

#[test]
fn comments_split_words_ignored_tags_do_not() {
    assert_eq!(
        html("a<!-- hidden -->b a</span>b a</div>b a<span>b</span>c"),
        "a b ab ab a b c"
    );
    assert_eq!(html("<!-- only a comment -->"), "");
}

#[test]
fn tree_construction_moves_text() {
    // Foster parenting: table text moves before the table and merges with "a".
    assert_eq!(html("a<table>b<tr><td>c</td>d</tr></table>e"), "abd c e");
    // <select> bounds the scope of </div> (lexbor): "a" and "b" stay one text node.
    assert_eq!(html("<div><select>a</div>b</select>c"), "ab c");
    // Adoption agency / reconstruction of formatting elements.
    assert_eq!(html("<p><b>x</p>y</b>z"), "x y z");
    assert_eq!(
        html("<ul><li>one<li>two</ul><dl><dt>t<dd>d</dl>"),
        "one two t d"
    );
    let foreign = "<math><mi>m</mi><mtext><b>y</b></mtext></math>\
                   <svg><foreignObject><p>fo</p></foreignObject><desc>d</desc></svg>";
    assert_eq!(html(foreign), "m y fo d");
    assert_eq!(html("<frameset><frame></frameset>"), "");
}

#[test]
fn raw_text_elements() {
    let s =
        "<body><noscript><b>n</b>s</noscript><textarea>t<b>x</b></textarea><title>t&amp;i</title>\
             <xmp>a&amp;b</xmp><iframe>i<b>f</b></iframe>";
    assert_eq!(html(s), "n s t b x b t i a amp b i b f b");
    assert_eq!(
        html("<p>one<plaintext>two</plaintext><b>three"),
        "one two plaintext b three"
    );
}

#[test]
fn python_lowercasing_and_word_classes() {
    assert_eq!(
        html("<p>ΟΔΟΣ İSTANBUL Straße Ⅻ ½ x²</p>"),
        "οδος i stanbul straße ⅻ ½ x²"
    );
    assert_eq!(html("<p>V_ADD_F32 x86-64</p>"), "v_add_f32 x86 64");
}

#[test]
fn deep_nesting_is_neither_recursive_nor_quadratic() {
    let start = std::time::Instant::now();
    for open in [
        "<div>", "<span>", "<b>", "<table>", "<p><div>", "<svg>", "<li>",
    ] {
        let doc = format!(
            "{}deep words{}",
            open.repeat(100_000),
            "</div>".repeat(1000)
        );
        assert_eq!(html(&doc), "deep words", "{open}");
    }
    // The reference needs about a minute for 100,000 nested divs; we must stay fast.
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
}

#[test]
fn unclosed_and_truncated_markup() {
    assert_eq!(html("<div><p>a<b>b<i>c"), "a b c");
    assert_eq!(
        html("<p>a <a href='x>y'>b</a> <img alt=\"unterminated"),
        "a b"
    );
    assert_eq!(html("a<!-- unterminated comment"), "a");
    assert_eq!(html("<script>never closed <p>x"), "");
}

#[test]
fn declared_charsets_are_respected() {
    // windows-1252 via <meta charset>: 0xE9 is é, 0x93/0x94 are curly quotes (separators).
    let mut page =
        b"<html><head><meta charset=\"windows-1252\"></head><body>Caf\xE9 \x93quoted\x94".to_vec();
    assert_eq!(html_bytes(&page, None), "café quoted");
    // Without the declaration the bytes are invalid UTF-8: U+FFFD separates the words.
    page = b"<body>Caf\xE9 ok".to_vec();
    assert_eq!(html_bytes(&page, None), "caf ok");
    // The transport's charset wins.
    assert_eq!(html_bytes(&page, Some("iso-8859-1")), "café ok");
    // Shift_JIS via http-equiv: 日本語 is 93FA 967B 8CEA.
    let sjis = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\"><p>\x93\xfa\x96\x7b\x8c\xea TEXT</p>";
    assert_eq!(html_bytes(sjis, None), "日本語 text");
    // UTF-16 with a BOM.
    let utf16: Vec<u8> = b"\xFF\xFE"
        .iter()
        .copied()
        .chain("<p>Wide</p>".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert_eq!(html_bytes(&utf16, None), "wide");
}

#[test]
fn utf8_bom_is_text_like_in_the_reference() {
    // Python's "utf-8" codec keeps U+FEFF, which opens the body before <title>.
    let s = "\u{FEFF}<html><head><title>T</title></head><body>x</body>";
    assert_eq!(html(s), "t x");
}

#[test]
fn rejections() {
    assert_eq!(
        canonicalize(b"abc\0def", DocFormat::Text, None),
        Err(Rejection::Binary)
    );
    assert_eq!(
        canonicalize(b"<p>a\0b", DocFormat::Html, None),
        Err(Rejection::Binary)
    );
    assert_eq!(
        canonicalize(b"", DocFormat::Html, None),
        Err(Rejection::Empty)
    );
    assert_eq!(
        canonicalize(b" \n\t ", DocFormat::Text, None),
        Err(Rejection::Empty)
    );
    assert_eq!(
        canonicalize(
            b"<html><head><title>t</title></head><body> <br> </body>",
            DocFormat::Html,
            None
        ),
        Err(Rejection::Empty)
    );
    assert_eq!(Rejection::Binary.to_string(), "binary data (NUL bytes)");
    let big = Rejection::TooLarge {
        bytes: 10,
        limit: 5,
    };
    assert_eq!(big.to_string(), "too large (10 bytes; the limit is 5)");
}

#[test]
fn plain_text_uses_the_word_rule_only() {
    let c = canonicalize(
        "Hello, <b>World</b>! v_add_f32".as_bytes(),
        DocFormat::Text,
        None,
    )
    .unwrap();
    assert_eq!(c.text, "hello b world b v_add_f32");
    assert_eq!(c.word_count(), 5);
    assert_eq!(
        c.words().collect::<Vec<_>>(),
        ["hello", "b", "world", "b", "v_add_f32"]
    );
    let empty = Canonical::default();
    assert_eq!(empty.word_count(), 0);
    assert_eq!(empty.words().count(), 0);
}

#[test]
fn sniffing_by_name_then_content() {
    assert_eq!(
        sniff_format(Some("a/b/page.HTM"), b"plain"),
        DocFormat::Html
    );
    assert_eq!(sniff_format(Some("notes.txt"), b"<html>"), DocFormat::Text);
    assert_eq!(
        sniff_format(Some("README"), b"  <!DOCTYPE html><html>"),
        DocFormat::Html
    );
    assert_eq!(
        sniff_format(None, b"<div class=x>hi</div>"),
        DocFormat::Html
    );
    assert_eq!(
        sniff_format(None, b"just some words, 1 < 2"),
        DocFormat::Text
    );
}

#[test]
fn golden_examples_of_the_spec() {
    let spec = include_str!("../../format-spec/canonical-text.md");
    let block = spec
        .split("```golden\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("golden block");
    let mut n = 0;
    for line in block.lines().filter(|l| !l.is_empty()) {
        let (input, want) = line.split_once('\t').expect("input<TAB>canonical text");
        assert_eq!(html(input), want, "golden line {line:?}");
        n += 1;
    }
    assert!(n >= 10, "only {n} golden lines");
}

/// The word pass's fast path against the reference on every page of the shared llvm-docs
/// corpus (skipped, with a notice, when it is absent): on the page bytes read as plain text,
/// and on the body text the tree builder extracts from them.
#[test]
fn word_fast_path_equals_reference_on_the_shared_corpus() {
    let Some(pages) = for_each_corpus_page(|path, bytes| {
        let mut body = Vec::new();
        let mut tree = tree::Tree::new();
        scan::parse(&bytes, &mut tree);
        tree.body_text(&bytes, &mut body);
        for input in [&bytes, &body] {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            words::append_words(input, &mut fast);
            words::append_words_reference(input, &mut slow);
            assert!(
                fast == slow,
                "{}: the fast word pass differs",
                path.display()
            );
        }
    }) else {
        return;
    };
    assert!(pages > 3000, "{pages} pages");
}

/// Calls `f(path, bytes)` for every page of the shared llvm-docs corpus (extracted to a
/// temporary folder) and returns how many pages there were; None, with a notice, when the
/// corpus is absent.
pub(super) fn for_each_corpus_page(mut f: impl FnMut(&std::path::Path, Vec<u8>)) -> Option<u64> {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/llvm-docs/docs.tar.zst");
    if !corpus.exists() {
        eprintln!("NOTICE: {} absent; skipping", corpus.display());
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("tar")
        .arg("--zstd")
        .arg("-xf")
        .arg(&corpus)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("run tar (is zstd installed? run tools/setup.sh)");
    assert!(st.success());
    let mut stack = vec![dir.path().to_owned()];
    let mut pages = 0;
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            f(&path, bytes);
            pages += 1;
        }
    }
    Some(pages)
}

fn main_text(s: &str) -> String {
    canonicalize_with(s.as_bytes(), DocFormat::Html, None, Extract::Main)
        .unwrap()
        .text
}

#[test]
fn main_extraction_drops_nav_aside_and_page_header_footer() {
    let page = "<header><h1><a href=/>Site</a></h1><p>tagline words</p></header>\
                <nav><ul><li><a href=/a>alpha</a><li><a href=/b>beta</a></ul></nav>\
                <p>the article text itself</p><aside>related stuff</aside>\
                <footer><p>copyright notice</p></footer>";
    assert_eq!(main_text(page), "the article text itself");
    // The body mode keeps everything, in order.
    assert_eq!(
        html(page),
        "site tagline words alpha beta the article text itself related stuff copyright notice"
    );
}

#[test]
fn main_extraction_keeps_header_and_footer_of_an_article() {
    let page = "<header>site banner</header><article><header><h1>The title</h1></header>\
                <p>body words</p><footer>by the author</footer></article>\
                <footer>page footer</footer>";
    assert_eq!(main_text(page), "the title body words by the author");
}

#[test]
fn main_extraction_uses_the_main_element_only() {
    let page = "<div>before main</div><main><h1>heading</h1><nav>in-page nav</nav>\
                <p>content</p></main><div>after main</div><main>second main</main>";
    assert_eq!(main_text(page), "heading content");
}

#[test]
fn main_extraction_drops_link_dense_blocks_but_not_cited_prose() {
    // A sidebar menu inside a plain div: many links, little other text.
    let menu: String = (0..6)
        .map(|i| format!("<li><a href=/{i}>page {i}</a></li>"))
        .collect();
    let prose = "<p>Long explanatory paragraph that cites <a href=/x>one page</a> and \
                 <a href=/y>another page</a> among many other words of running text here.</p>";
    let page = format!("<div class=sidebar><ul>{menu}</ul></div><div>{prose}</div>");
    let got = main_text(&page);
    assert!(!got.contains("page 0"), "{got}");
    assert!(
        got.starts_with("long explanatory paragraph that cites one page"),
        "{got}"
    );
    // One link is never "link-dense" however short the block.
    assert_eq!(
        main_text("<p><a href=/>only link</a></p><p>x</p>"),
        "only link x"
    );
    // Separators between menu links do not save the menu.
    let bar =
        "<div><a href=/1>home</a> | <a href=/2>docs</a> | <a href=/3>blog</a></div><p>text</p>";
    assert_eq!(main_text(bar), "text");
}

#[test]
fn main_extraction_falls_back_to_the_body_when_nothing_is_left() {
    let page = "<nav><a href=/a>alpha</a> <a href=/b>beta</a></nav>";
    assert_eq!(main_text(page), "alpha beta");
    // Plain text is the same in both modes.
    let t = canonicalize_with(b"Nav Words", DocFormat::Text, None, Extract::Main).unwrap();
    assert_eq!(t.text, "nav words");
}

#[test]
fn main_extraction_skips_script_and_keeps_word_boundaries() {
    let page = "<div><script>var a='x'</script>wo<b>rd</b> one</div><nav>n</nav>";
    assert_eq!(main_text(page), html("<div>wo<b>rd</b> one</div>"));
}

#[test]
fn extract_names_round_trip() {
    for e in [Extract::Body, Extract::Main] {
        assert_eq!(e.to_string().parse::<Extract>(), Ok(e));
    }
    assert!("article".parse::<Extract>().is_err());
}

#[test]
fn count_byte_counts_every_occurrence() {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    // Lengths around the 8-byte words and the 255-word flush; bytes from a small alphabet
    // (many hits, runs longer than 255 words of hits) and from all bytes.
    for len in (0..40).chain([2039, 2040, 2041, 2047, 4088, 10_000]) {
        for alphabet in [2u64, 256] {
            let hay: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % alphabet) as u8 + if alphabet == 2 { b' ' - 1 } else { 0 }
                })
                .collect();
            for needle in [b' ', 0, 0x80, 0xFF] {
                let want = hay.iter().filter(|&&b| b == needle).count();
                assert_eq!(count_byte(&hay, needle), want, "len {len} needle {needle}");
            }
        }
    }
    assert_eq!(count_byte(&[b' '; 5000], b' '), 5000);
}
