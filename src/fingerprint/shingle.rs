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
    let mut out = Vec::new();
    word_shingles_into(word_hash_bytes, w, &mut out);
    out
}

/// [`word_shingles`] appended to `out` (a buffer the caller reuses).
pub fn word_shingles_into(word_hash_bytes: &[u8], w: usize, out: &mut Vec<u64>) {
    let n_words = word_hash_bytes.len() / 8;
    if w == 0 || n_words < w {
        return;
    }
    let count = n_words - w + 1;
    out.reserve(count);
    // The window of shingle i is a plain sub-slice: no copying, no allocation per shingle.
    for i in 0..count {
        out.push(hash::word_shingle_hash(
            &word_hash_bytes[8 * i..8 * (i + w)],
        ));
    }
}

/// The word-shingle hashes of the word hashes `words` (in text order) appended to `out`: the
/// same values as [`word_shingles_into`] of their little-endian bytes. For 3 <= w <= 16 the
/// window's length is a compile-time constant and the hash is computed on the words
/// ([`hash::word_shingle_hash_words`]: four 128-bit multiplies and the avalanche for w = 5,
/// no dispatch on the length).
pub fn word_shingles_of_words(words: &[u64], w: usize, out: &mut Vec<u64>) {
    if w == 0 || words.len() < w {
        return;
    }
    macro_rules! by_w {
        ($($n:literal)*) => {
            match w {
                $($n => return fixed::<$n>(words, out),)*
                _ => {}
            }
        };
    }
    by_w!(3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    let bytes: Vec<u8> = words.iter().flat_map(|h| h.to_le_bytes()).collect();
    word_shingles_into(&bytes, w, out);
}

/// The shingles of `W` words.
#[inline]
fn fixed<const W: usize>(words: &[u64], out: &mut Vec<u64>) {
    out.extend(words.windows(W).map(|win| {
        let win: &[u64; W] = win.try_into().expect("windows of W words");
        hash::word_shingle_hash_words(win)
    }));
}

/// Buffers of [`sort_unique`], reused between calls.
#[derive(Default)]
pub struct SortScratch {
    starts: Vec<u32>,
    tmp: Vec<u64>,
}

impl SortScratch {
    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        4 * self.starts.capacity() + 8 * self.tmp.capacity()
    }
}

/// Below this many hashes `sort_unique` uses `sort_unstable`.
const SMALL_SORT: usize = 64;
/// Moves per value the insertion pass may make before it hands the rest to `sort_unstable`
/// (hashes far from uniform), so it never goes quadratic.
const MAX_MOVES_PER_VALUE: usize = 8;

/// The sorted, unique values of `v` (shingle hashes, in any order, duplicates included), in a
/// vector of their own sized to them; `v`'s contents are left unspecified.
///
/// Hashes are near uniform, so one counting pass on their top bits (about two per bucket) and
/// a scatter leave every value within its small bucket; an insertion pass then finishes the
/// order with about one comparison per value, and duplicates (always in the same bucket, next
/// to each other once sorted) are dropped on the way out. The result is the same as
/// `sort_unstable` + `dedup` for any input: an insertion pass that needs more than
/// `MAX_MOVES_PER_VALUE` moves per value falls back to that (equal values never move).
pub fn sort_unique(v: &mut [u64], sc: &mut SortScratch) -> Vec<u64> {
    let n = v.len();
    if n < SMALL_SORT {
        v.sort_unstable();
        return unique_prefix(v);
    }
    // 2^bits buckets with n / 2^bits in [2, 4).
    let bits = (usize::BITS - 1 - n.leading_zeros())
        .saturating_sub(1)
        .min(16);
    let shift = 64 - bits;
    let buckets = 1usize << bits;
    let starts = &mut sc.starts;
    starts.clear();
    starts.resize(buckets + 1, 0);
    for &x in v.iter() {
        starts[(x >> shift) as usize + 1] += 1;
    }
    for b in 0..buckets {
        starts[b + 1] += starts[b];
    }
    let tmp = &mut sc.tmp;
    tmp.clear();
    tmp.resize(n, 0);
    for &x in v.iter() {
        let b = (x >> shift) as usize;
        let at = starts[b];
        tmp[at as usize] = x;
        starts[b] = at + 1;
    }
    // Each value is now within its bucket (about two values) of where it belongs. The
    // insertion pass keeps the last four values of the sorted prefix in registers (a <= b <=
    // c <= d): a value at least `a` (nearly all) goes into them by min and max, without a
    // branch that depends on the data (the old pass's loop exit was its costliest branch), and
    // `a` leaves for good; a smaller one (a bucket of five or more out of order) takes the
    // branch, which writes the four back and inserts it in memory.
    let mut budget = MAX_MOVES_PER_VALUE * n;
    // The first four: an ordinary insertion (n >= SMALL_SORT).
    for i in 1..4 {
        let x = tmp[i];
        let mut j = i;
        while j > 0 && tmp[j - 1] > x {
            tmp[j] = tmp[j - 1];
            j -= 1;
        }
        tmp[j] = x;
    }
    let (mut a, mut b, mut c, mut d) = (tmp[0], tmp[1], tmp[2], tmp[3]);
    for i in 4..n {
        let x = tmp[i];
        if x < a {
            tmp[i - 4] = a;
            tmp[i - 3] = b;
            tmp[i - 2] = c;
            tmp[i - 1] = d;
            let mut j = i;
            while j > 0 && tmp[j - 1] > x {
                tmp[j] = tmp[j - 1];
                j -= 1;
            }
            tmp[j] = x;
            budget = budget.saturating_sub(i - j);
            if budget == 0 {
                // Still a permutation of v: finish it the general way.
                tmp.sort_unstable();
                return unique_prefix(tmp);
            }
            (a, b, c, d) = (tmp[i - 3], tmp[i - 2], tmp[i - 1], tmp[i]);
        } else {
            // a <= x: the sorted [b, c, d, x] is the new window.
            tmp[i - 4] = a;
            (a, b, c, d) = (b.min(x), b.max(c.min(x)), c.max(d.min(x)), d.max(x));
        }
    }
    tmp[n - 4] = a;
    tmp[n - 3] = b;
    tmp[n - 2] = c;
    tmp[n - 1] = d;
    unique_prefix(tmp)
}

/// The distinct values of sorted `v`, in a vector of their own (v's front is overwritten).
fn unique_prefix(v: &mut [u64]) -> Vec<u64> {
    if v.is_empty() {
        return Vec::new();
    }
    // v[..=u]: the distinct values so far; `last` is v[u], kept in a register so that no
    // load of v waits on the previous value's store (duplicates are rare: the branch
    // predicts well).
    let mut u = 0;
    let mut last = v[0];
    for i in 1..v.len() {
        let x = v[i];
        if x != last {
            u += 1;
            v[u] = x;
            last = x;
        }
    }
    v[..=u].to_vec()
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

    /// `sort_unique` is `sort_unstable` + `dedup` on every kind of input: uniform hashes,
    /// many duplicates, values in a narrow range (one bucket: the insertion pass's fallback),
    /// extremes, sizes around the small-sort threshold and the bucket counts' steps.
    #[test]
    fn sort_unique_equals_sort_dedup() {
        let mut sc = SortScratch::default();
        let mut x = 7u64;
        let mut next = || {
            x = hash::mix64(x.wrapping_add(hash::GOLDEN_GAMMA));
            x
        };
        let sizes = (0..200).chain([255, 256, 257, 511, 512, 513, 1000, 1024, 4095, 5000, 20_000]);
        for n in sizes {
            for kind in 0..7 {
                let mut v: Vec<u64> = (0..n)
                    .map(|i| {
                        let r = next();
                        match kind {
                            0 => r,
                            1 => r % 50,                // many duplicates, one bucket
                            2 => (r >> 40) | (7 << 60), // a narrow range of the top bits
                            3 => [0, u64::MAX, r][(r % 3) as usize], // extremes
                            4 => r & !0xFF,             // duplicates of uniform values
                            5 => i as u64 * 3 / 2,      // ascending, with repeats
                            _ => r,
                        }
                    })
                    .collect();
                if kind == 6 {
                    // Uniform hashes in descending order: every bucket of five or more
                    // takes the in-memory insertion, within the move budget.
                    v.sort_unstable_by(|a, b| b.cmp(a));
                }
                let mut want = v.clone();
                want.sort_unstable();
                want.dedup();
                let mut got_in = v.clone();
                let got = sort_unique(&mut got_in, &mut sc);
                assert_eq!(got, want, "n={n} kind={kind}");
                assert_eq!(got.capacity(), got.len());
            }
        }
    }

    /// The word-level path (a window length known at compile time) gives the byte-level
    /// path's values for every w, including those it leaves to the byte path.
    #[test]
    fn word_shingles_of_words_equal_bytes() {
        for n in [0usize, 1, 2, 4, 5, 6, 17, 100, 333] {
            let words: Vec<u64> = (0..n as u64)
                .map(|i| hash::splitmix64_nth(9, i % 41))
                .collect();
            let bytes: Vec<u8> = words.iter().flat_map(|h| h.to_le_bytes()).collect();
            for w in 0..=20 {
                let mut got = Vec::new();
                word_shingles_of_words(&words, w, &mut got);
                assert_eq!(got, word_shingles(&bytes, w), "n={n} w={w}");
            }
        }
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
