//! Lowercasing and word extraction: Python's `str.lower()` followed by `re.findall(r"\w+")`.
//!
//! Both use the generated tables of `tables.rs` (Python 3.11, Unicode 14.0.0), never Rust's
//! `char` methods, so the canonical text does not change when the Rust toolchain moves to a newer
//! Unicode version. Lowercasing comes first, as in the reference: `İ` lowercases to `i` plus
//! U+0307 COMBINING DOT ABOVE, which is not a word character, so "İstanbul" gives "i", "stanbul".

use super::tables::{CASED, CASE_IGNORABLE, LOWER, WORD_RANGES};

/// For each ASCII byte: its lowercase form if it is a word character (`[0-9A-Za-z_]`), else 0.
static ASCII_WORD: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = match c {
            b'0'..=b'9' | b'a'..=b'z' | b'_' => c,
            b'A'..=b'Z' => c + 32,
            _ => 0,
        };
        b += 1;
    }
    t
};

fn in_ranges(ranges: &[(u32, u32)], c: u32) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Python's `\w` for one code point: `str.isalnum()` or `_`.
pub(super) fn is_word_char(c: char) -> bool {
    let u = c as u32;
    if u < 128 {
        ASCII_WORD[u as usize] != 0
    } else {
        in_ranges(&WORD_RANGES, u)
    }
}

/// Python's `str.lower()` of one code point (1 to 3 code points), without the final-sigma rule.
fn lower_char(c: char) -> [char; 3] {
    let u = c as u32;
    match LOWER.binary_search_by_key(&u, |&(k, _)| k) {
        Ok(i) => {
            let m = LOWER[i].1;
            // The table only holds valid scalar values (generated from Python str objects);
            // 0 marks an unused slot.
            [
                char::from_u32(m[0]).unwrap_or(c),
                char::from_u32(m[1]).unwrap_or('\0'),
                char::from_u32(m[2]).unwrap_or('\0'),
            ]
        }
        Err(_) => [c, '\0', '\0'],
    }
}

/// Decodes the UTF-8 character starting at `b[i]` (a non-ASCII lead byte). Returns the char and
/// its length, or None and 1 for a byte that does not start a valid sequence: the reference
/// decodes those to U+FFFD, which is neither a word character nor cased, so callers treat them
/// exactly like that.
fn decode_at(b: &[u8], i: usize) -> (Option<char>, usize) {
    let len = match b[i] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return (None, 1),
    };
    match b.get(i..i + len).and_then(|s| std::str::from_utf8(s).ok()) {
        Some(s) => (s.chars().next(), len),
        None => (None, 1),
    }
}

/// The character ending just before `b[i]`, if valid UTF-8, and its start.
fn decode_before(b: &[u8], i: usize) -> (Option<char>, usize) {
    let mut s = i - 1;
    while s > 0 && i - s < 4 && (0x80..0xC0).contains(&b[s]) {
        s -= 1;
    }
    if b[s] < 0x80 {
        // An ASCII byte is a char by itself only right before `i`; else b[i-1] is a stray
        // continuation byte.
        return if s == i - 1 {
            (Some(b[s] as char), s)
        } else {
            (None, i - 1)
        };
    }
    match decode_at(b, s) {
        (Some(c), len) if s + len == i => (Some(c), s),
        _ => (None, i - 1),
    }
}

fn is_ignorable(c: Option<char>) -> bool {
    c.is_some_and(|c| in_ranges(&CASE_IGNORABLE, c as u32))
}

fn is_cased(c: Option<char>) -> bool {
    c.is_some_and(|c| in_ranges(&CASED, c as u32))
}

/// Python's final-sigma rule for the U+03A3 at byte `i` of `b`: a cased letter before it and
/// none after it (skipping case-ignorable characters both ways).
fn final_sigma(b: &[u8], i: usize) -> bool {
    let mut j = i;
    let mut before = None;
    while j > 0 {
        let (c, start) = decode_before(b, j);
        j = start;
        if !is_ignorable(c) {
            before = Some(c);
            break;
        }
    }
    if !before.is_some_and(is_cased) {
        return false;
    }
    let mut k = i + 'Σ'.len_utf8();
    while k < b.len() {
        let (c, len) = if b[k] < 0x80 {
            (Some(b[k] as char), 1)
        } else {
            decode_at(b, k)
        };
        if !is_ignorable(c) {
            return !is_cased(c);
        }
        k += len;
    }
    true
}

/// For each byte: its lowercase form if it is an ASCII word character (`[0-9A-Za-z_]`), else 0
/// (ASCII separators and every byte >= 0x80). One lookup classifies and lowercases.
static WORD_BYTE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = ASCII_WORD[b];
        b += 1;
    }
    t
};

/// Eight bytes at a time (SWAR): which bytes are ASCII word characters, and their lowercase.
mod swar {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;

    /// High bit of each byte set iff that byte is in `a..=b`, for bytes below 0x80 (both
    /// additions then stay inside their byte: at most 0x7F + 0x7F).
    #[inline(always)]
    fn in_range(x: u64, a: u8, b: u8) -> u64 {
        let ge_a = x.wrapping_add(LO * (0x80 - a as u64));
        let gt_b = x.wrapping_add(LO * (0x7F - b as u64));
        ge_a & !gt_b & HI
    }

    /// (word, lower): `word` has the high bit set in each byte that is `[0-9A-Za-z_]`; `lower`
    /// is the eight bytes with `A-Z` lowercased (other bytes unchanged).
    #[inline(always)]
    pub(super) fn classify(w: u64) -> (u64, u64) {
        let ascii = !w & HI;
        let x = w & !HI;
        let upper = in_range(x, b'A', b'Z');
        let lower = in_range(x | (LO * 0x20), b'a', b'z');
        let word = (lower | in_range(x, b'0', b'9') | in_range(x, b'_', b'_')) & ascii;
        (word, w | (upper >> 2))
    }

    /// The eight bytes at `i` as a little-endian word (byte i is the lowest).
    #[inline(always)]
    pub(super) fn load(b: &[u8], i: usize) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(a)
    }

    /// How many leading bytes (0..=8) have the high bit set in `mask`.
    #[inline(always)]
    pub(super) fn leading(mask: u64) -> usize {
        ((!mask & HI).trailing_zeros() / 8) as usize
    }
}

/// Appends the lowercase words of UTF-8 `text` to `out`, each preceded by a space unless `out`
/// is empty: the canonical text format. Invalid UTF-8 separates words, as U+FFFD would.
///
/// ASCII runs take a fast path, eight bytes at a time: the classification and lowercasing of
/// a block are a few integer operations (`swar`), a word is copied lowercased block by block,
/// and a separator run is skipped block by block. Only non-ASCII characters are decoded and
/// looked up in the Unicode tables.
pub(super) fn append_words(b: &[u8], out: &mut Vec<u8>) {
    append_words_inline(b, out)
}

/// `append_words`, inlined into the caller (the DOM walk's one call site).
#[inline(always)]
pub(super) fn append_words_inline(b: &[u8], out: &mut Vec<u8>) {
    // ASCII output never outgrows the input: a word is copied as is, and every space before a
    // word but the first stands for at least one separator byte of the input.
    // (Plus 8: the word loop stores eight bytes at a time before cutting to the word.)
    out.reserve(b.len() + 1 + 8);
    let n = b.len();
    let mut in_word = false;
    let mut i = 0;
    while i < n {
        let c = b[i];
        if WORD_BYTE[c as usize] != 0 {
            if !in_word && !out.is_empty() {
                out.push(b' ');
            }
            // A non-ASCII word character right after the run continues this word.
            in_word = true;
            while i + 8 <= n {
                let (word, lower) = swar::classify(swar::load(b, i));
                let k = swar::leading(word);
                // All eight bytes, then cut to the word's k: a fixed-size store instead of
                // a call to memcpy for k bytes.
                let len = out.len();
                out.extend_from_slice(&lower.to_le_bytes());
                out.truncate(len + k);
                i += k;
                if k < 8 {
                    break;
                }
            }
            if i + 8 > n {
                while i < n && WORD_BYTE[b[i] as usize] != 0 {
                    out.push(WORD_BYTE[b[i] as usize]);
                    i += 1;
                }
            }
            continue;
        }
        if c < 0x80 {
            in_word = false;
            i += 1;
            // Skip to the next word or non-ASCII byte.
            while i + 8 <= n {
                let w = swar::load(b, i);
                let (word, _) = swar::classify(w);
                let k = swar::leading(!(word | (w & 0x8080_8080_8080_8080)));
                i += k;
                if k < 8 {
                    break;
                }
            }
            if i + 8 > n {
                while i < n && b[i] < 0x80 && WORD_BYTE[b[i] as usize] == 0 {
                    i += 1;
                }
            }
            continue;
        }
        i += push_char(b, i, out, &mut in_word);
    }
}

/// The non-ASCII character at `b[i]` (or an invalid sequence, which separates words like
/// U+FFFD): appends its lowercase word characters to `out` as `append_words` does, updating
/// `in_word`; returns its length in bytes. Shared by the fast path and its test reference,
/// which differ only in how they walk ASCII.
fn push_char(b: &[u8], i: usize, out: &mut Vec<u8>, in_word: &mut bool) -> usize {
    let (ch, len) = decode_at(b, i);
    let lowered = match ch {
        None => ['\u{FFFD}', '\0', '\0'],
        Some('Σ') => [if final_sigma(b, i) { 'ς' } else { 'σ' }, '\0', '\0'],
        Some(ch) => lower_char(ch),
    };
    for lc in lowered.into_iter().take_while(|&lc| lc != '\0') {
        if is_word_char(lc) {
            if !*in_word {
                if !out.is_empty() {
                    out.push(b' ');
                }
                *in_word = true;
            }
            let mut buf = [0u8; 4];
            out.extend_from_slice(lc.encode_utf8(&mut buf).as_bytes());
        } else {
            *in_word = false;
        }
    }
    len
}

#[cfg(test)]
/// The byte-at-a-time `append_words` this module had before its fast path, kept as the
/// reference the fast path is tested against (byte-identical output).
///
/// Appends the lowercase words of UTF-8 `text` to `out`, each preceded by a space unless `out`
/// is empty: the canonical text format. Invalid UTF-8 separates words, as U+FFFD would.
pub(super) fn append_words_reference(b: &[u8], out: &mut Vec<u8>) {
    let mut in_word = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c < 0x80 {
            let l = ASCII_WORD[c as usize];
            if l == 0 {
                in_word = false;
                i += 1;
                continue;
            }
            if !in_word {
                if !out.is_empty() {
                    out.push(b' ');
                }
                in_word = true;
            }
            out.push(l);
            i += 1;
            // The rest of an ASCII run, without the per-byte bookkeeping above.
            while let Some(&c) = b.get(i) {
                let l = if c < 0x80 { ASCII_WORD[c as usize] } else { 0 };
                if l == 0 {
                    break;
                }
                out.push(l);
                i += 1;
            }
            continue;
        }
        i += push_char(b, i, out, &mut in_word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> String {
        let mut out = Vec::new();
        append_words(s.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn ascii_words_and_underscore() {
        assert_eq!(
            words("  Hello, World! v_add_f32 x86-64 "),
            "hello world v_add_f32 x86 64"
        );
        assert_eq!(words(""), "");
        assert_eq!(words(" \t\n.,;"), "");
    }

    #[test]
    fn python_lower_special_cases() {
        // İ -> i + U+0307 (not \w): splits the word, as in Python.
        assert_eq!(words("İstanbul"), "i stanbul");
        // ß stays ß (lower), ẞ -> ß.
        assert_eq!(words("Straße STRAẞE"), "straße straße");
        // Final sigma: word-final Σ -> ς, inside -> σ, alone -> σ.
        assert_eq!(words("ΟΔΟΣ ΟΔΟΣΟ Σ"), "οδος οδοσο σ");
        // A case-ignorable '.' between letters keeps the sigma medial (Python: 'ΑΣ.Β' -> 'ασ.β').
        assert_eq!(words("ΑΣ.Β"), "ασ β");
    }

    #[test]
    fn unicode_word_classes() {
        // Digits of other scripts and numeric characters are \w; combining marks are not.
        assert_eq!(words("٣٤ Ⅻ ½ ²"), "٣٤ ⅻ ½ ²");
        assert_eq!(words("e\u{301}"), "e");
        assert_eq!(words("日本語テキスト"), "日本語テキスト");
        assert_eq!(words("a\u{FFFD}b"), "a b");
        assert_eq!(words("a\u{FEFF}b"), "a b");
    }

    /// Pieces that exercise every branch: ASCII words and separators, multi-byte letters,
    /// expanding lowercase (İ), sigma in every context, invalid and truncated UTF-8.
    const PIECES: &[&[u8]] = &[
        b"a",
        b"Z",
        b"_",
        b"9",
        b"word",
        b"MiXeD",
        b" ",
        b"-",
        b".",
        b"'",
        b"\n",
        b"\x7f",
        "é".as_bytes(),
        "É".as_bytes(),
        "İ".as_bytes(),
        "Σ".as_bytes(),
        "ς".as_bytes(),
        "ẞ".as_bytes(),
        "日本".as_bytes(),
        "\u{301}".as_bytes(),
        "\u{FEFF}".as_bytes(),
        "½".as_bytes(),
        "😀".as_bytes(),
        "ᾈ".as_bytes(),
        b"\xFF",
        b"\xC3",
        b"\xE2\x80",
        b"\x80",
        b"\xF4\x90\x80\x80",
    ];

    fn both(b: &[u8], prefix: &[u8]) {
        let (mut fast, mut slow) = (prefix.to_vec(), prefix.to_vec());
        append_words(b, &mut fast);
        append_words_reference(b, &mut slow);
        assert_eq!(fast, slow, "input {:?}", String::from_utf8_lossy(b));
    }

    proptest::proptest! {
        /// The fast path gives the reference's bytes on any mix of the tricky pieces.
        #[test]
        fn fast_path_equals_reference(
            idx in proptest::collection::vec(0..PIECES.len(), 0..40),
            nonempty_out in proptest::bool::ANY,
        ) {
            let b: Vec<u8> = idx.iter().flat_map(|&i| PIECES[i].iter().copied()).collect();
            both(&b, if nonempty_out { b"x" } else { b"" });
        }

        /// And on arbitrary bytes.
        #[test]
        fn fast_path_equals_reference_on_bytes(b in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            both(&b, b"");
        }
    }

    #[test]
    fn tables_are_sorted() {
        assert!(WORD_RANGES.windows(2).all(|w| w[0].1 < w[1].0));
        assert!(LOWER.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(CASED.windows(2).all(|w| w[0].1 < w[1].0));
        assert!(CASE_IGNORABLE.windows(2).all(|w| w[0].1 < w[1].0));
    }
}
