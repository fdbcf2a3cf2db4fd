//! Character-encoding determination and decoding (format-spec/canonical-text.md, "Decoding").
//!
//! Order: a byte-order mark, then the transport's charset (HTTP `Content-Type`, WARC), then for
//! HTML the `<meta charset>` / `http-equiv` declaration found by the WHATWG prescan of the first
//! 1024 bytes, else UTF-8. Invalid sequences become U+FFFD (a word separator).

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252, X_USER_DEFINED};

/// How many bytes the meta prescan looks at (as in the WHATWG encoding sniffing algorithm).
const PRESCAN_BYTES: usize = 1024;

/// Decodes `bytes` to text. `html` enables the meta prescan.
///
/// A UTF-8 byte-order mark is decoded as U+FEFF and kept, as the reference does (Python's
/// "utf-8" codec does not strip it); in HTML it is then character data that opens the body
/// early. UTF-16 byte-order marks select UTF-16 and are dropped.
///
/// UTF-8 input is returned as is, without validation: the tokenizer and the word pass work on
/// bytes, and treat a byte that starts no valid sequence exactly like the U+FFFD the reference
/// decodes it to (a separator, never part of markup syntax since UTF-8 decoders never swallow
/// ASCII bytes). Other encodings are decoded to UTF-8.
pub(super) fn decode<'a>(bytes: &'a [u8], hint: Option<&str>, html: bool) -> Cow<'a, [u8]> {
    fn owned(s: Cow<'_, str>) -> Cow<'_, [u8]> {
        match s {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        }
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Cow::Borrowed(bytes);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return owned(UTF_16BE.decode_without_bom_handling(rest).0);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return owned(UTF_16LE.decode_without_bom_handling(rest).0);
    }
    let declared = hint
        .and_then(|h| Encoding::for_label(h.trim().as_bytes()))
        .or_else(|| {
            if html {
                prescan(&bytes[..bytes.len().min(PRESCAN_BYTES)])
            } else {
                None
            }
        });
    match declared {
        Some(enc) if enc != UTF_8 => owned(enc.decode_without_bom_handling(bytes).0),
        _ => Cow::Borrowed(bytes),
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, 0x09 | 0x0A | 0x0C | 0x0D | 0x20)
}

/// The WHATWG "prescan a byte stream to determine its encoding" over `s`.
pub(super) fn prescan(s: &[u8]) -> Option<&'static Encoding> {
    let mut p = 0;
    while p < s.len() {
        let rest = &s[p..];
        if rest[0] != b'<' {
            // Every rule below starts at a '<'; any other byte just advances by one, so jump.
            p += memchr::memchr(b'<', rest)?;
            continue;
        }
        if rest.starts_with(b"<!--") {
            // To the '>' of the first "-->" after "<!" ("<!-->" closes itself).
            p += 2 + find(&rest[2..], b"-->")? + 3;
        } else if rest.len() >= 6
            && rest[..5].eq_ignore_ascii_case(b"<meta")
            && (is_space(rest[5]) || rest[5] == b'/')
        {
            p += 6;
            if let Some(enc) = meta(s, &mut p) {
                return Some(enc);
            }
        } else if rest.len() >= 2
            && rest[0] == b'<'
            && (rest[1].is_ascii_alphabetic()
                || (rest[1] == b'/' && rest.get(2).is_some_and(|b| b.is_ascii_alphabetic())))
        {
            p += rest.iter().position(|&b| is_space(b) || b == b'>')?;
            while attribute(s, &mut p)?.is_some() {}
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            p += rest.iter().position(|&b| b == b'>')? + 1;
        } else {
            p += 1;
        }
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The attributes of one `<meta`: returns its encoding if it declares one.
fn meta(s: &[u8], p: &mut usize) -> Option<&'static Encoding> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let (mut got_pragma, mut need_pragma, mut charset) = (false, None, None);
    while let Some((name, value)) = attribute(s, p)? {
        if seen.contains(&name) {
            continue;
        }
        match name.as_slice() {
            b"http-equiv" => got_pragma |= value == b"content-type",
            b"content" if charset.is_none() => {
                if let Some(label) = charset_from_content(&value) {
                    charset = Encoding::for_label(label);
                    need_pragma = Some(true);
                }
            }
            b"charset" => {
                charset = Encoding::for_label(&value);
                need_pragma = Some(false);
            }
            _ => {}
        }
        seen.push(name);
    }
    let enc = match need_pragma {
        None => return None,
        Some(true) if !got_pragma => return None,
        _ => charset?,
    };
    Some(if enc == UTF_16BE || enc == UTF_16LE {
        UTF_8
    } else if enc == X_USER_DEFINED {
        WINDOWS_1252
    } else {
        enc
    })
}

/// "Get an attribute": Ok(None) at `>`, None when the prescan runs out of bytes.
#[allow(clippy::type_complexity)]
fn attribute(s: &[u8], p: &mut usize) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    while is_space(*s.get(*p)?) || s[*p] == b'/' {
        *p += 1;
    }
    if s[*p] == b'>' {
        return Some(None);
    }
    let (mut name, mut value) = (Vec::new(), Vec::new());
    loop {
        let b = *s.get(*p)?;
        if b == b'=' && !name.is_empty() {
            *p += 1;
            break;
        } else if is_space(b) {
            while is_space(*s.get(*p)?) {
                *p += 1;
            }
            if s[*p] != b'=' {
                return Some(Some((name, value)));
            }
            *p += 1;
            break;
        } else if b == b'/' || b == b'>' {
            return Some(Some((name, value)));
        }
        name.push(b.to_ascii_lowercase());
        *p += 1;
    }
    while is_space(*s.get(*p)?) {
        *p += 1;
    }
    let b = *s.get(*p)?;
    if b == b'"' || b == b'\'' {
        loop {
            *p += 1;
            let c = *s.get(*p)?;
            if c == b {
                *p += 1;
                return Some(Some((name, value)));
            }
            value.push(c.to_ascii_lowercase());
        }
    }
    if b == b'>' {
        return Some(Some((name, value)));
    }
    loop {
        let c = *s.get(*p)?;
        if is_space(c) || c == b'>' {
            return Some(Some((name, value)));
        }
        value.push(c.to_ascii_lowercase());
        *p += 1;
    }
}

/// "Extracting a character encoding from a meta element" (the `content` attribute).
fn charset_from_content(v: &[u8]) -> Option<&[u8]> {
    let mut p = 0;
    loop {
        p += find(&v[p..], b"charset")? + 7;
        while v.get(p).is_some_and(|&b| is_space(b)) {
            p += 1;
        }
        if v.get(p) == Some(&b'=') {
            break;
        }
    }
    p += 1;
    while v.get(p).is_some_and(|&b| is_space(b)) {
        p += 1;
    }
    match *v.get(p)? {
        q @ (b'"' | b'\'') => {
            let len = v[p + 1..].iter().position(|&b| b == q)?;
            Some(&v[p + 1..p + 1 + len])
        }
        _ => {
            let len = v[p..]
                .iter()
                .position(|&b| is_space(b) || b == b';')
                .unwrap_or(v.len() - p);
            (len > 0).then(|| &v[p..p + len])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prescan_finds_meta_charset_and_pragma() {
        assert_eq!(
            prescan(b"<html><head><meta charset=\"Shift_JIS\">"),
            Some(encoding_rs::SHIFT_JIS)
        );
        assert_eq!(prescan(b"<META CHARSET=windows-1252>"), Some(WINDOWS_1252));
        let pragma =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-2\">";
        assert_eq!(prescan(pragma), Some(encoding_rs::ISO_8859_2));
        // content without http-equiv: not a declaration.
        assert_eq!(
            prescan(b"<meta content=\"text/html; charset=iso-8859-2\">"),
            None
        );
        // Inside a comment: ignored. UTF-16 declarations mean UTF-8.
        assert_eq!(prescan(b"<!-- <meta charset=koi8-r> --><p>"), None);
        assert_eq!(prescan(b"<meta charset=utf-16le>"), Some(UTF_8));
        assert_eq!(prescan(b"<meta charset=bogus-label>"), None);
        assert_eq!(prescan(b""), None);
    }

    #[test]
    fn decode_order_bom_hint_meta_default() {
        let decode =
            |b: &[u8], h, html| String::from_utf8_lossy(&super::decode(b, h, html)).into_owned();
        // BOM wins over everything; a UTF-8 BOM is kept as U+FEFF.
        assert_eq!(decode(b"\xEF\xBB\xBFa", Some("latin1"), true), "\u{FEFF}a");
        assert_eq!(decode(b"\xFF\xFEa\x00", None, true), "a");
        // The transport's charset beats the meta declaration.
        assert_eq!(
            decode(b"<meta charset=utf-8>\xE9", Some("windows-1252"), true),
            "<meta charset=utf-8>é"
        );
        assert_eq!(
            decode(b"<meta charset=windows-1252>\xE9", None, true),
            "<meta charset=windows-1252>é"
        );
        // Plain text does not look for meta; invalid UTF-8 becomes U+FFFD.
        assert_eq!(
            decode(b"<meta charset=windows-1252>\xE9", None, false),
            "<meta charset=windows-1252>\u{FFFD}"
        );
        assert_eq!(
            decode(b"caf\xC3\xA9", Some("no-such-charset"), true),
            "café"
        );
    }
}
