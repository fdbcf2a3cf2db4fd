//! Shingles: the overlapping pieces of a canonical text whose hash set is a document's
//! features (format-spec/fingerprints.md, §3).
//!
//! Both functions return raw shingle hashes in text order, duplicates included; the caller
//! sorts and dedups once (set semantics), which is cheaper than a hash set per shingle.

use super::hash;
use super::ShingleKind;

/// Hashes of the contiguous w-word shingles, given the little-endian bytes of the per-word
/// hashes (8 bytes per word, in text order). A text with fewer than w words (or w == 0) has
/// no shingles, as in the corpus truth.
pub fn word_shingles(word_hash_bytes: &[u8], w: usize) -> Vec<u64> {
    let n_words = word_hash_bytes.len() / 8;
    if w == 0 || n_words < w {
        return Vec::new();
    }
    let count = n_words - w + 1;
    let mut out = Vec::with_capacity(count);
    // The window of shingle i is a plain sub-slice: no copying, no allocation per shingle.
    for i in 0..count {
        out.push(hash::word_shingle_hash(
            &word_hash_bytes[8 * i..8 * (i + w)],
        ));
    }
    out
}

/// Hashes of the n-character shingles started at every word.
///
/// Characters are Unicode scalar values of the text, spaces included, and a word starts at
/// every non-space character that is first in the text or follows a space. Word start s
/// gives the window chars[s, min(s+n, L)) (L = characters in the text), and the scan stops
/// after the first window that reaches the end of the text: later words lie inside it, and
/// their clipped windows would only be suffixes of it. So the last shingle may be shorter
/// than n, a text shorter than n characters has exactly one shingle (the whole text, from
/// its first word), and a text with no words has none.
pub fn char_shingles(text: &str, n: usize) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 4 + 1);
    if text.is_ascii() {
        // One byte per character: character offsets are byte offsets.
        let mut prev_space = true;
        for (s, &b) in bytes.iter().enumerate() {
            let starts = b != b' ' && prev_space;
            prev_space = b == b' ';
            if !starts {
                continue;
            }
            let end = (s + n).min(bytes.len());
            out.push(hash::char_shingle_hash(&bytes[s..end]));
            if end == bytes.len() {
                break;
            }
        }
        return out;
    }
    // General case: the byte offset of every character, plus the end of the text.
    let mut offsets: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
    let n_chars = offsets.len();
    offsets.push(bytes.len());
    let mut prev_space = true;
    for (ci, c) in text.chars().enumerate() {
        let starts = c != ' ' && prev_space;
        prev_space = c == ' ';
        if !starts {
            continue;
        }
        let end = (ci + n).min(n_chars);
        out.push(hash::char_shingle_hash(&bytes[offsets[ci]..offsets[end]]));
        if end == n_chars {
            break;
        }
    }
    out
}

/// The sorted, unique shingle set of a canonical text (the unsampled features). Convenience
/// for tests and tools; `fingerprint` computes the same set without hashing words twice.
pub fn shingle_set(text: &str, kind: ShingleKind) -> Vec<u64> {
    let mut set = match kind {
        ShingleKind::Words(w) => {
            let mut bytes = Vec::new();
            for word in super::words(text) {
                bytes.extend_from_slice(&hash::word_hash(word).to_le_bytes());
            }
            word_shingles(&bytes, w as usize)
        }
        ShingleKind::Chars(n) => char_shingles(text, n as usize),
    };
    set.sort_unstable();
    set.dedup();
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wsh(words: &[&str]) -> u64 {
        let mut b = Vec::new();
        for w in words {
            b.extend_from_slice(&hash::word_hash(w.as_bytes()).to_le_bytes());
        }
        hash::word_shingle_hash(&b)
    }

    #[test]
    fn word_shingle_counts() {
        let seven = "a b c d e f g";
        assert_eq!(shingle_set(seven, ShingleKind::Words(5)).len(), 3);
        assert_eq!(shingle_set(seven, ShingleKind::Words(7)).len(), 1);
        assert_eq!(shingle_set(seven, ShingleKind::Words(8)).len(), 0);
        assert_eq!(shingle_set(seven, ShingleKind::Words(1)).len(), 7);
        assert_eq!(shingle_set("", ShingleKind::Words(1)).len(), 0);
        assert_eq!(shingle_set("a b c d", ShingleKind::Words(5)).len(), 0);
        // "a b a b a b": the 2-shingles are {ab, ba}; duplicates count once.
        assert_eq!(shingle_set("a b a b a b", ShingleKind::Words(2)).len(), 2);
        assert_eq!(
            shingle_set("x x x x x x x x", ShingleKind::Words(5)).len(),
            1
        );
    }

    #[test]
    fn word_shingles_are_the_windows() {
        let set = shingle_set("a b c d e f g", ShingleKind::Words(5));
        let mut want = vec![
            wsh(&["a", "b", "c", "d", "e"]),
            wsh(&["b", "c", "d", "e", "f"]),
            wsh(&["c", "d", "e", "f", "g"]),
        ];
        want.sort_unstable();
        assert_eq!(set, want);
        // Order matters: a shingle is a sequence, not a bag.
        assert_ne!(wsh(&["a", "b"]), wsh(&["b", "a"]));
        // Word boundaries matter: "ab c" is not "a bc".
        assert_ne!(wsh(&["ab", "c"]), wsh(&["a", "bc"]));
    }

    #[test]
    fn char_shingles_start_at_words() {
        let c = |s: &str| hash::char_shingle_hash(s.as_bytes());
        // Words start at 0, 3, 7 ("ab cde fg", 9 chars); n = 4.
        let got = char_shingles("ab cde fg", 4);
        assert_eq!(got, vec![c("ab c"), c("cde "), c("fg")]);
        // n = 7: the window at 3 is clipped to "cde fg" and reaches the end, so the scan
        // stops and "fg" (a suffix of it) starts no shingle.
        assert_eq!(
            char_shingles("ab cde fg", 7),
            vec![c("ab cde "), c("cde fg")]
        );
        // A full window that ends exactly at the end also stops the scan.
        assert_eq!(char_shingles("ab c de", 4), vec![c("ab c"), c("c de")]);
        // Shorter than n: one shingle, the whole text.
        assert_eq!(char_shingles("ab cde fg", 64), vec![c("ab cde fg")]);
        assert_eq!(char_shingles("x", 64), vec![c("x")]);
        assert!(char_shingles("", 64).is_empty());
        assert_eq!(shingle_set("ab ab ab ab", ShingleKind::Chars(2)).len(), 1);
    }

    #[test]
    fn char_shingles_count_scalar_values_not_bytes() {
        let c = |s: &str| hash::char_shingle_hash(s.as_bytes());
        // "é" is 2 bytes, "中" 3: 4-character shingles, not 4-byte ones.
        assert_eq!(char_shingles("été 中文 x", 4), vec![c("été "), c("中文 x")]);
        assert_eq!(
            char_shingles("été 中文 xy", 4),
            vec![c("été "), c("中文 x"), c("xy")]
        );
        assert_eq!(char_shingles("中文", 64), vec![c("中文")]);
        // The ASCII and general paths agree on ASCII text.
        let ascii = "the quick brown fox jumps over the lazy dog";
        let mut with_marker = char_shingles(&format!("{ascii} é"), 10);
        let plain = char_shingles(ascii, 10);
        with_marker.truncate(plain.len() - 1);
        assert_eq!(with_marker[..], plain[..plain.len() - 1]);
    }
}
