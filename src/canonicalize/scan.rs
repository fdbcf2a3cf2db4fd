//! The fast scanner: the HTML5 tokenizer's data state, plain start and end tags and the common
//! character references, driving the tree builder directly from borrowed slices of the input.
//!
//! Most of a page is text runs and tags whose attributes the canonical text never uses. Here a
//! text run is one memchr for `<` or `&`, and a tag is its name plus a byte loop that only finds
//! where the tag ends (quoted attribute values are skipped with memchr; nothing is copied). It
//! implements exactly the tokenizer states it needs (tag name, before/after attribute name,
//! attribute name, before attribute value, quoted and unquoted values, after a quoted value,
//! self-closing start tag), with the same transitions as html5gum. Everything else starts over
//! at the construct's first byte in html5gum (`html::step_full`), which runs until it has
//! emitted the next token that leaves it in the data state, then hands back:
//! - `<!` (comments, doctypes, CDATA), `<?`, `</` not followed by a letter;
//! - a tag that reaches the end of the input;
//! - start tags whose attributes matter to tree construction (`input`, `font`,
//!   `annotation-xml`);
//! - the content of elements that switch the tokenizer (script, style, title, textarea, ...);
//! - character references other than `&name;` for a few common names and `&#N;` / `&#xN;` for
//!   ordinary code points.
//!
//! Only documents without CR come here (html5gum normalizes CR LF across reads; see
//! `parse_known`). Tests compare the canonical text of both paths on every corpus page, on
//! mutated pages and on random markup.

use super::html::{parse_full, step_full, Glue};
use super::tags::{name_hash, Tag};
use super::tree::Tree;
use super::tree::{AttrHint, TagTok, Tok};

/// Parses `html` into `tree`, a fresh (or recycled) tree builder; `Tree::body_text` and
/// `Tree::main_text` then give its text.
///
/// Documents without CR go through the fast scanner (`scan.rs`), which handles text runs, the
/// common character references and plain start and end tags itself and hands everything else
/// to html5gum, one construct at a time; documents with CR (whose newline normalization
/// html5gum's reader does across calls) go through html5gum alone.
#[cfg(test)]
pub(super) fn parse(html: &[u8], tree: &mut Tree) {
    parse_known(html, tree, memchr::memchr2(0, b'\r', html).is_none())
}

/// `parse` when the caller has already searched `html` for NUL and CR (one pass for both):
/// `clean` says it contains neither.
pub(super) fn parse_known(html: &[u8], tree: &mut Tree, clean: bool) {
    debug_assert_eq!(clean, memchr::memchr2(0, b'\r', html).is_none());
    tree.dom.set_source(html);
    let mut glue = Glue::new(tree);
    if clean {
        run(html, (1 << 0) | (1 << b'\r'), &mut glue);
    } else {
        parse_full(html, &mut glue);
    }
}

/// Parses all of `html` (no CR) into the glue's tree, ending with the end-of-file token;
/// `absent` is `html::absent_mask(html)`.
fn run(html: &[u8], absent: u64, glue: &mut Glue<'_>) {
    let n = html.len();
    let mut i = 0;
    loop {
        // The data state at `i`.
        let Some(k) = next_markup(html, i) else {
            if i < n {
                glue.chars(&html[i..]);
            }
            glue.process(Tok::Eof);
            return;
        };
        if k > 0 {
            glue.chars(&html[i..i + k]);
        }
        i += k;
        let handled = if html[i] == b'&' {
            char_ref(&html[i..]).map(|(len, ch)| {
                glue.chars(ch.as_bytes());
                Ok(i + len)
            })
        } else {
            tag(html, i, glue)
        };
        let (at, state) = match handled {
            Some(Ok(j)) => {
                i = j;
                continue;
            }
            // A start tag that switched the tokenizer: its content goes through html5gum.
            Some(Err((j, state))) => (j, Some(state)),
            None => (i, None),
        };
        match step_full(html, at, absent, state, glue) {
            Some(j) => i = j,
            None => return,
        }
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The eight bytes of `html` from `i` as a little-endian word, if there are eight.
#[inline(always)]
fn load8(html: &[u8], i: usize) -> Option<u64> {
    let mut a = [0u8; 8];
    a.copy_from_slice(html.get(i..i + 8)?);
    Some(u64::from_le_bytes(a))
}

/// The high bit set in the byte lanes of `w` below every byte of `below` (SWAR). The lowest
/// flag is exact (a borrow only runs upwards from a flagged byte); flags above it may be false,
/// so only `trailing_zeros` of the result (or of an OR of such results) is meaningful.
#[inline(always)]
fn below_flags(w: u64, below: u8) -> u64 {
    w.wrapping_sub(LO * u64::from(below)) & !w & HI
}

/// `below_flags` for the bytes of `w` equal to `b`: the lowest flag is the first such byte.
#[inline(always)]
fn eq_flags(w: u64, b: u8) -> u64 {
    below_flags(w ^ (LO * u64::from(b)), 1)
}

/// The offset from `i` of the next `<` or `&` in `html`, if any. Most text runs between tags
/// are short (whitespace, a word or two), so the first eight bytes are searched in a register
/// (SWAR) before memchr's vector search, whose setup costs more than such a run.
#[inline(always)]
fn next_markup(html: &[u8], i: usize) -> Option<usize> {
    if let Some(w) = load8(html, i) {
        let hit = eq_flags(w, b'<') | eq_flags(w, b'&');
        if hit != 0 {
            return Some(hit.trailing_zeros() as usize / 8);
        }
        return memchr::memchr2(b'<', b'&', &html[i + 8..]).map(|k| k + 8);
    }
    memchr::memchr2(b'<', b'&', &html[i..])
}

/// The position of the first `b` in `html` at or after `i`, if any. Most quoted attribute
/// values are short, so the first eight bytes are searched in a register before memchr.
#[inline(always)]
fn find_byte(html: &[u8], i: usize, b: u8) -> Option<usize> {
    if let Some(w) = load8(html, i) {
        let hit = eq_flags(w, b);
        if hit != 0 {
            return Some(i + hit.trailing_zeros() as usize / 8);
        }
        return memchr::memchr(b, &html[i + 8..]).map(|k| i + 8 + k);
    }
    memchr::memchr(b, html.get(i..)?).map(|k| i + k)
}

/// A decoded character reference (at most 4 bytes of UTF-8).
struct Decoded {
    buf: [u8; 4],
    len: usize,
}

impl Decoded {
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Named references decoded here: `&name;` with the semicolon (no other entity name starts
/// with `name;`, so the longest-match rule picks exactly these).
const NAMED: &[(&[u8], char)] = &[
    (b"amp", '&'),
    (b"lt", '<'),
    (b"gt", '>'),
    (b"quot", '"'),
    (b"apos", '\''),
    (b"nbsp", '\u{a0}'),
    (b"raquo", '\u{bb}'),
    (b"laquo", '\u{ab}'),
    (b"copy", '\u{a9}'),
    (b"reg", '\u{ae}'),
    (b"middot", '\u{b7}'),
    (b"times", '\u{d7}'),
    (b"ndash", '\u{2013}'),
    (b"mdash", '\u{2014}'),
    (b"hellip", '\u{2026}'),
    (b"rarr", '\u{2192}'),
];

/// The character reference at `s[0] == '&'`, if it is one this scanner decodes: returns its
/// length and its characters. Anything else (unknown names, no semicolon, code points the spec
/// replaces or flags) is left to html5gum.
fn char_ref(s: &[u8]) -> Option<(usize, Decoded)> {
    let ch = if !s
        .get(1)
        .is_some_and(|&b| b == b'#' || b.is_ascii_alphanumeric())
    {
        // Not a character reference: the `&` is text, the next byte is reconsumed.
        (1, '&')
    } else if s.get(1) == Some(&b'#') {
        let (hex, start) = match s.get(2) {
            Some(b'x' | b'X') => (true, 3),
            _ => (false, 2),
        };
        let mut v: u32 = 0;
        let mut j = start;
        while let Some(&b) = s.get(j) {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' if hex => b - b'a' + 10,
                b'A'..=b'F' if hex => b - b'A' + 10,
                _ => break,
            };
            v = v * if hex { 16 } else { 10 } + d as u32;
            j += 1;
            if j - start > 6 {
                return None;
            }
        }
        if j == start || s.get(j) != Some(&b';') {
            return None;
        }
        // Ordinary code points only: no controls (but tab and LF), C1 range, surrogates or
        // noncharacters, which the spec replaces or flags.
        let ordinary = matches!(v, 0x09 | 0x0a | 0x20..=0x7e | 0xa0..=0xd7ff | 0xe000..=0xfdcf
            | 0xfdf0..=0xfffd | 0x1_0000..=0x10_ffff)
            && v & 0xfffe != 0xfffe;
        if !ordinary {
            return None;
        }
        (j + 1, char::from_u32(v)?)
    } else {
        let end = s.iter().skip(1).position(|&b| !b.is_ascii_alphanumeric())? + 1;
        if s[end] != b';' {
            return None;
        }
        let name = &s[1..end];
        let &(_, c) = NAMED.iter().find(|(n, _)| *n == name)?;
        (end + 1, c)
    };
    let mut buf = [0u8; 4];
    let len = ch.1.encode_utf8(&mut buf).len();
    Some((ch.0, Decoded { buf, len }))
}

fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b' ')
}

/// Byte classes of the tag states (`CLASS`): HTML whitespace but CR (which never reaches
/// the scanner), `/`, `>`, `=`, `A-Z`.
const WS: u8 = 1;
const SLASH: u8 = 2;
const GT: u8 = 4;
const EQ: u8 = 8;
const UPPER: u8 = 16;

/// The class bits of every byte: one load classifies a byte for the tag-name and attribute
/// loops.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            b'\t' | b'\n' | b'\x0c' | b' ' => WS,
            b'/' => SLASH,
            b'>' => GT,
            b'=' => EQ,
            b'A'..=b'Z' => UPPER,
            _ => 0,
        };
        b += 1;
    }
    t
};

/// What `tag` did with the `<` at `html[i]`.
type TagResult = Option<Result<usize, (usize, html5gum::State)>>;

/// The markup at `html[i] == '<'`: a start or end tag this scanner handles is processed and
/// `Ok(position after it)` returned (or `Err((position, state))` when the tree builder switched
/// the tokenizer to `state`); `<` before a byte that starts no markup is text; None: html5gum's
/// turn (nothing has been processed).
fn tag(html: &[u8], i: usize, glue: &mut Glue<'_>) -> TagResult {
    let n = html.len();
    let (is_end, start) = match html.get(i + 1) {
        Some(b) if b.is_ascii_alphabetic() => (false, i + 1),
        Some(b'/') if html.get(i + 2).is_some_and(u8::is_ascii_alphabetic) => (true, i + 2),
        Some(b'!' | b'/' | b'?') | None => return None,
        Some(_) => {
            // "Invalid first character of tag name": the `<` is text, the byte is reconsumed.
            glue.chars(b"<");
            return Some(Ok(i + 1));
        }
    };
    // Tag name state: to whitespace, `/` or `>`. Names shorter than 8 bytes (most) are found,
    // lowered and packed from one 8-byte load (`short_name`); others by the byte loop.
    let (j, upper, key) = match short_name(html, start) {
        Some(found) => found,
        None => {
            let mut j = start;
            let mut upper = 0;
            loop {
                let c = CLASS[*html.get(j)? as usize];
                if c & (WS | SLASH | GT) != 0 {
                    break;
                }
                upper |= c;
                j += 1;
            }
            (j, upper & UPPER != 0, 0)
        }
    };
    let raw = &html[start..j];
    // (Lowering the name into `glue.name` is harmless when html5gum takes over: it starts
    // the tag over and clears the name.)
    let name: &[u8] = if upper {
        glue.name.clear();
        glue.name.extend(raw.iter().map(u8::to_ascii_lowercase));
        &glue.name
    } else {
        raw
    };
    let tag = if key != 0 {
        debug_assert_eq!(Tag::from_short_key(key), Tag::from_name(name));
        Tag::from_short_key(key)
    } else {
        Tag::from_name(name)
    };
    // Attributes that change tree construction: html5gum's glue reads them.
    if !is_end && matches!(tag, Tag::Input | Tag::Font | Tag::AnnotationXml) {
        return None;
    }
    let (end, self_closing) = skip_attributes(html, j)?;
    debug_assert!(end <= n);
    let hash = if tag == Tag::Other {
        name_hash(name)
    } else {
        0
    };
    let t = TagTok {
        tag,
        hash,
        self_closing,
        attr: AttrHint::default(),
    };
    if is_end {
        glue.tag(true, t);
        return Some(Ok(end));
    }
    // The glue keeps the last start tag's name for html5gum's "appropriate end tag" check,
    // which only the states entered after this tag use.
    let lowered = upper;
    glue.tag(false, t);
    let next = glue.tree.as_deref_mut().and_then(|t| t.next_state.take());
    match next {
        None => Some(Ok(end)),
        Some(state) => {
            if !lowered {
                glue.name.clear();
                glue.name.extend_from_slice(raw);
            }
            std::mem::swap(&mut glue.last_start, &mut glue.name);
            Some(Err((end, state)))
        }
    }
}

/// The tag name starting at `html[start]` (a letter) when it ends within the 8 bytes from
/// `start` at one of the tag name state's ends (whitespace, `/`, `>`): returns the position of
/// that end, whether the name may have an upper-case ASCII letter (a byte without bit 5:
/// `A-Z`, but also `@[\]^_` and some non-ASCII bytes), and a key for `Tag::from_short_key`: the
/// name's bytes with bit 5 set. That key is `tags::pack` of the lowered name when the name is
/// ASCII letters, digits and `-` (every known tag name), and for any other name it is no known
/// name's pack (it holds a byte that is none of those), so the lookup gives
/// `Tag::from_name(lowered)` for every name. None (the caller's byte loop decides) when fewer
/// than 8 bytes are left, the name is longer, or a control byte that is not whitespace comes
/// first (it belongs to the name).
#[inline(always)]
fn short_name(html: &[u8], start: usize) -> Option<(usize, bool, u64)> {
    const BIT5: u64 = 0x2020_2020_2020_2020;
    let w = load8(html, start)?;
    // Bytes below 0x21, `/` and `>`: the lowest flag of the three is exact.
    let ends = below_flags(w, 0x21) | eq_flags(w, b'/') | eq_flags(w, b'>');
    if ends == 0 {
        return None;
    }
    // The flagged byte, taken from the register: below 0x21, `/` (0x2F) or `>` (0x3E), so
    // `ENDS` (bit b set for each end byte b) says whether it ends the name.
    const ENDS: u64 = 1 << b'\t' | 1 << b'\n' | 1 << 0x0c | 1 << b' ' | 1 << b'/' | 1 << b'>';
    let at = ends.trailing_zeros() & !7;
    let b = (w >> at) as u8;
    debug_assert!(b < 64);
    if ENDS >> (b & 63) & 1 == 0 {
        return None;
    }
    let k = at as usize / 8;
    debug_assert!(k >= 1, "the first byte is a letter");
    debug_assert!(CLASS[html[start + k] as usize] & (WS | SLASH | GT) != 0);
    let name = (1u64 << at) - 1;
    let w = w & name;
    let key = w | (BIT5 & name);
    Some((start + k, key != w, key))
}

/// From the end of a tag name at `html[j]`, through the attributes to the tag's `>`: returns
/// the position after it and whether the tag is self-closing, or None if the input ends first.
/// The states and transitions are the tokenizer's (WHATWG 13.2.5.34-13.2.5.40); names and values
/// are not kept.
fn skip_attributes(html: &[u8], mut j: usize) -> Option<(usize, bool)> {
    #[derive(Clone, Copy)]
    enum S {
        BeforeName,
        Name,
        AfterName,
        BeforeValue,
        Unquoted,
        AfterQuoted,
        SelfClosing,
    }
    // Tag name state ended on whitespace (before attribute name), `/` or `>`. A `>` there
    // (most tags) ends the tag at once.
    if *html.get(j)? == b'>' {
        return Some((j + 1, false));
    }
    let mut s = S::BeforeName;
    loop {
        let b = *html.get(j)?;
        match s {
            S::BeforeName => {
                let mut c = CLASS[b as usize];
                while c == WS {
                    j += 1;
                    c = CLASS[*html.get(j)? as usize];
                }
                if c & (SLASH | GT) != 0 {
                    s = S::AfterName;
                    continue;
                }
                if c == EQ {
                    j += 1;
                }
                // The attribute name state and, for the common `name="value"`, the value,
                // without going round the state loop for each.
                c = CLASS[*html.get(j)? as usize];
                while c & (WS | SLASH | GT | EQ) == 0 {
                    j += 1;
                    c = CLASS[*html.get(j)? as usize];
                }
                if c != EQ {
                    s = S::AfterName;
                    continue;
                }
                j += 1;
                let q = *html.get(j)?;
                if q == b'"' || q == b'\'' {
                    j = find_byte(html, j + 1, q)? + 1;
                    s = S::AfterQuoted;
                } else {
                    s = S::BeforeValue;
                }
            }
            S::Name => {
                // The whole name at once: to whitespace, `/`, `>` or `=`.
                let mut c = CLASS[b as usize];
                while c & (WS | SLASH | GT | EQ) == 0 {
                    j += 1;
                    c = CLASS[*html.get(j)? as usize];
                }
                if c == EQ {
                    j += 1;
                    s = S::BeforeValue;
                } else {
                    s = S::AfterName;
                }
            }
            S::AfterName => match b {
                b'/' => {
                    j += 1;
                    s = S::SelfClosing;
                }
                b'=' => {
                    j += 1;
                    s = S::BeforeValue;
                }
                b'>' => return Some((j + 1, false)),
                _ if is_ws(b) => j += 1,
                _ => s = S::Name,
            },
            S::BeforeValue => match b {
                b'"' | b'\'' => {
                    // A character reference in the value cannot contain the quote.
                    j = find_byte(html, j + 1, b)? + 1;
                    s = S::AfterQuoted;
                }
                b'>' => return Some((j + 1, false)),
                _ if is_ws(b) => j += 1,
                _ => s = S::Unquoted,
            },
            S::Unquoted => {
                // The whole value at once: to whitespace or `>`.
                let mut c = CLASS[b as usize];
                while c & (WS | GT) == 0 {
                    j += 1;
                    c = CLASS[*html.get(j)? as usize];
                }
                if c == GT {
                    return Some((j + 1, false));
                }
                j += 1;
                s = S::BeforeName;
            }
            S::AfterQuoted => match b {
                b'/' => {
                    j += 1;
                    s = S::SelfClosing;
                }
                b'>' => return Some((j + 1, false)),
                _ if is_ws(b) => {
                    j += 1;
                    s = S::BeforeName;
                }
                _ => s = S::BeforeName,
            },
            S::SelfClosing => match b {
                b'>' => return Some((j + 1, true)),
                _ => s = S::BeforeName,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::html::parse_reference;
    use super::super::tree::Tree;
    use super::parse;

    /// Body text and main-content text of `html` through the fast scanner and through html5gum
    /// alone; panics naming `what` if they differ.
    fn same(html: &[u8], what: &str) {
        let (mut fast, mut full) = (Tree::new(), Tree::new());
        parse(html, &mut fast);
        parse_reference(html, &mut full);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        fast.body_text(html, &mut a);
        full.body_text(html, &mut b);
        assert!(
            a == b,
            "{what}: body text differs\nfast: {:?}\nfull: {:?}\ninput: {:?}",
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            String::from_utf8_lossy(html)
        );
        // The fused walk + word pass gives the words of the body text.
        let (mut words, mut reference) = (Vec::new(), Vec::new());
        fast.body_words(html, &mut words, &mut Vec::new());
        super::super::words::append_words(&a, &mut reference);
        assert!(
            words == reference,
            "{what}: body_words differs\nfused: {:?}\nreference: {:?}",
            String::from_utf8_lossy(&words),
            String::from_utf8_lossy(&reference)
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        fast.main_text(html, &mut a);
        full.main_text(html, &mut b);
        assert!(a == b, "{what}: main text differs");
    }

    /// Pieces that exercise every transition of the fast scanner and every fallback.
    const PIECES: &[&str] = &[
        "<",
        ">",
        "/",
        "=",
        "\"",
        "'",
        " ",
        "\n",
        "\t",
        "\x0c",
        "&",
        ";",
        "#",
        "x",
        "a",
        "B",
        "é",
        "Σ",
        "word",
        "<p>",
        "</p>",
        "<P class=x>",
        "<div id=\"a>b\" x='y' z=w>",
        "<span/>",
        "<br/ >",
        "<a href=x/>",
        "<b =c>",
        "<i a=\"b\"c>",
        "</span x=\"y\">",
        "</",
        "</>",
        "</ x>",
        "<!-- c -->",
        "<!doctype html>",
        "<!DOCTYPE html PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\">",
        "<?php x ?>",
        "<![CDATA[cd]]>",
        "<script>if (a<b) x='</p>';</script>",
        "<script><!--<script>x</script>-->y</script>",
        "<style>p{}</style>",
        "<title>T&amp;</title>",
        "<textarea>t</textarea>",
        "<plaintext>",
        "<xmp><b></xmp>",
        "<input type=hidden>",
        "<input type=\"text\">",
        "<font color=red>",
        "<FONT>",
        "<svg><font face=x>",
        "<math><annotation-xml encoding=\"text/html\"><p>m</annotation-xml></math>",
        "<table>",
        "<tr>",
        "<td>",
        "</table>",
        "<svg>",
        "</svg>",
        "<math>",
        "<select>",
        "<template>",
        "</template>",
        "<frameset>",
        "<body>",
        "<head>",
        "<html>",
        "&amp;",
        "&lt;",
        "&gt;",
        "&quot;",
        "&nbsp;",
        "&nbsp",
        "&raquo;",
        "&#39;",
        "&#160;",
        "&#x27;",
        "&#X41;",
        "&#128;",
        "&#0;",
        "&#xD800;",
        "&#1114112;",
        "&#xFFFE;",
        "&#;",
        "&#x;",
        "&ampx",
        "&amp",
        "&notit;",
        "&copy2",
        "&eacute;",
        "&Amp;",
        "&rarr;",
        "&#0000065;",
        "<TaBlE>",
        "<SPAN>",
        "</SPAN>",
        "<ns:x>",
        "<a\u{e9}b>",
        "<h1>",
        "<li>",
        "<noscript>",
        "<iframe>x</iframe>",
        "<noembed>n</noembed>",
    ];

    fn random_doc(seed: u64, pieces: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = Vec::new();
        for _ in 0..pieces {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(PIECES[(x % PIECES.len() as u64) as usize].as_bytes());
        }
        out
    }

    #[test]
    fn next_markup_finds_the_first_lt_or_amp() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..40 {
            for _ in 0..500 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        *[b'<', b'&', b'a', b' ', 0x80, 0xFF, b'=', 0x3B, 0x27, 0xA6]
                            .get((x % 24) as usize)
                            .unwrap_or(&b'x')
                    })
                    .collect();
                for i in 0..=len {
                    let want = s[i..].iter().position(|&b| b == b'<' || b == b'&');
                    assert_eq!(super::next_markup(&s, i), want, "{s:?} at {i}");
                }
            }
        }
    }

    /// `short_name` against the tag name state's byte loop, lowering and `tags::pack`: names
    /// of every length around 8 over letters of both cases, digits, `-`, non-ASCII bytes and
    /// control bytes, ended by every byte class, at the end of the input or not.
    #[test]
    fn short_name_equals_the_byte_loop() {
        use super::{short_name, CLASS, GT, SLASH, UPPER, WS};
        let alphabet: &[u8] =
            b"aZzAmM09-:_^\x9f\x01\x0b\x1f\x7f\x80\xc3\xa9\xff\t\n\x0c />=\"'@[`{";
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut checked = 0;
        for len in 1..=20 {
            for _ in 0..3000 {
                let mut s = vec![b'<'];
                for k in 0..len {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let b = alphabet[(x % alphabet.len() as u64) as usize];
                    // The name starts with a letter (the scanner's precondition).
                    s.push(if k == 0 && !b.is_ascii_alphabetic() {
                        b'q'
                    } else {
                        b
                    });
                }
                let mut j = 1;
                let mut upper = 0;
                let end = loop {
                    let Some(&b) = s.get(j) else { break None };
                    let c = CLASS[b as usize];
                    if c & (WS | SLASH | GT) != 0 {
                        break Some(j);
                    }
                    upper |= c;
                    j += 1;
                };
                let Some((at, up, key)) = short_name(&s, 1) else {
                    // Only names of 8 bytes or more, or inputs too short, are left to the loop.
                    // (or a control byte, part of the name, among its first 8 bytes).
                    let control = s.len() >= 9
                        && s[1..9]
                            .iter()
                            .any(|&b| b <= b' ' && CLASS[b as usize] & WS == 0);
                    assert!(end.is_none_or(|e| e > 8) || s.len() < 9 || control, "{s:?}");
                    continue;
                };
                checked += 1;
                assert_eq!(Some(at), end, "{s:?}");
                // An upper-case letter is always reported (others may be too).
                assert!(up || upper & UPPER == 0, "{s:?}");
                let lowered: Vec<u8> = s[1..at].iter().map(u8::to_ascii_lowercase).collect();
                if lowered
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
                {
                    assert_eq!(u128::from(key), super::super::tags::pack(&lowered), "{s:?}");
                }
                assert_eq!(
                    super::super::tags::Tag::from_short_key(key),
                    super::super::tags::Tag::from_name(&lowered),
                    "{s:?}"
                );
            }
        }
        assert!(checked > 10_000, "{checked}");
        // Every known tag name, in both cases, before each end.
        for &(name, tag) in super::super::tags::ALL_TAGS
            .iter()
            .filter(|(n, _)| n.len() < 8)
        {
            for end in [b' ', b'/', b'>', b'\t', b'\n', b'\x0c'] {
                for upper in [false, true] {
                    let mut s = vec![b'<'];
                    s.extend(
                        name.iter()
                            .map(|&b| if upper { b.to_ascii_uppercase() } else { b }),
                    );
                    s.push(end);
                    s.extend_from_slice(b"12345678");
                    let (at, up, key) = short_name(&s, 1).expect("a short name");
                    assert_eq!((at, up), (1 + name.len(), upper));
                    assert_eq!(u128::from(key), super::super::tags::pack(name));
                    assert_eq!(super::super::tags::Tag::from_short_key(key), tag);
                }
            }
        }
    }

    #[test]
    fn find_byte_finds_the_first_occurrence() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..40 {
            for _ in 0..300 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        *[b'"', b'\'', b'a', 0x80, 0xFF, 0x21, 0x26, 0xA2]
                            .get((x % 12) as usize)
                            .unwrap_or(&b'x')
                    })
                    .collect();
                for i in 0..=len + 1 {
                    for q in [b'"', b'\''] {
                        let want = s
                            .get(i..)
                            .and_then(|t| t.iter().position(|&b| b == q))
                            .map(|k| i + k);
                        assert_eq!(super::find_byte(&s, i, q), want, "{s:?} at {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn fast_scanner_equals_html5gum_on_pieces() {
        for p in PIECES {
            same(p.as_bytes(), p);
            same(format!("<p>a{p}b</p>").as_bytes(), p);
            same(format!("<table><tr><td>a{p}b<td>c").as_bytes(), p);
        }
        for (name, _) in super::NAMED {
            let doc = format!("<p>x&{};y", String::from_utf8_lossy(name));
            same(doc.as_bytes(), &doc);
        }
        for v in [
            9u32, 10, 32, 39, 65, 126, 160, 0xd7ff, 0xe000, 0xfdcf, 0xfdf0, 0xfffd, 0x1_f600,
            0x10_fffd,
        ] {
            same(format!("a&#{v};b&#x{v:x};c").as_bytes(), "numeric");
        }
    }

    #[test]
    fn fast_scanner_equals_html5gum_on_random_markup() {
        for seed in 0..20_000u64 {
            let doc = random_doc(seed, 1 + (seed % 60) as usize);
            same(&doc, &format!("seed {seed}"));
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_scanner_equals_html5gum_on_bytes(
            b in proptest::collection::vec(proptest::sample::select(b"<>/=\"' \n&;#xaB!-?p".to_vec()), 0..120)
        ) {
            same(&b, "proptest");
        }
    }

    /// Every page of the shared llvm-docs corpus, and each page mutated (pieces inserted at
    /// random places, then truncated): skipped, with a notice, when the corpus is absent.
    #[test]
    fn fast_scanner_equals_html5gum_on_the_shared_corpus() {
        let mut seen = 0u64;
        let Some(pages) = crate::canonicalize::tests::for_each_corpus_page(|path, bytes| {
            let what = path.display().to_string();
            same(&bytes, &what);
            // Mutations: pieces at pseudo-random positions, and a truncated copy.
            let mut x = seen.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
            let mut m = bytes.clone();
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = (x % (m.len() as u64 + 1)) as usize;
                let piece = PIECES[((x >> 32) % PIECES.len() as u64) as usize];
                m.splice(at..at, piece.bytes());
            }
            same(&m, &format!("{what} (mutated)"));
            let cut = (x % (m.len() as u64 + 1)) as usize;
            same(&m[..cut], &format!("{what} (mutated, cut at {cut})"));
            seen += 1;
        }) else {
            return;
        };
        assert!(pages > 3000, "{pages} pages");
    }
}
