//! The FORWARD-table value codec: a document's sorted, unique feature hashes.
//!
//! - Format version 1: a raw array of u64 LE (no header; the entry count is `len / 8`), read in
//!   place through `U64Slice`.
//! - Format version 2: `varint n`, then (n >= 1) the first value as u64 LE, `varint span`
//!   (last - first) and the values minus the first as an Elias-Fano sequence (`ef`): about
//!   `64 - log2(n) + 2` bits a value instead of 64. Decoded by a sequential scan (`U64List`).
//!
//! Which form a value has is given by the segment's format version (`Segment::decode_u64s`).

use crate::error::Result;

use super::ef::{self, EfIter, EfView};
use super::postings::{bad_value, read_varint, write_varint};

/// Appends `values` (strictly increasing) in the FORWARD form of the current format (2).
///
/// Panics if `values` is not strictly increasing: a caller bug that would store a feature set
/// `Segment::verify` rejects and merges would miscount.
pub fn encode_u64s(values: &[u64], out: &mut Vec<u8>) {
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "feature hashes must be strictly increasing"
    );
    let n = values.len();
    if n == 0 {
        return;
    }
    let first = values[0];
    let span = values[n - 1] - first;
    write_varint(n as u64, out);
    out.extend_from_slice(&first.to_le_bytes());
    write_varint(span, out);
    ef::encode(values.iter().map(|v| v - first), n, span, false, false, out);
}

/// Appends `values` (strictly increasing) as u64 LE: the FORWARD form of format version 1.
pub fn encode_u64s_v1(values: &[u64], out: &mut Vec<u8>) {
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "feature hashes must be strictly increasing"
    );
    out.reserve(8 * values.len());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Decodes a FORWARD value of the current format (2). O(1): sizes only; the order is checked by
/// `U64List::is_strictly_increasing` (run by `Segment::verify`).
pub fn decode_u64s(bytes: &[u8]) -> Result<U64List<'_>> {
    decode_u64s_version(bytes, super::FORMAT_VERSION)
}

/// Decodes a FORWARD value of format `version`.
pub fn decode_u64s_version(bytes: &[u8], version: u32) -> Result<U64List<'_>> {
    if version < 2 {
        return U64Slice::new(bytes).map(U64List::Raw);
    }
    if bytes.is_empty() {
        return Ok(U64List::Raw(U64Slice(&[])));
    }
    let bad = |at: usize, what: &str| bad_value(at, format!("forward list: {what}"));
    let (n, a) = read_varint(bytes).ok_or_else(|| bad(0, "bad length varint"))?;
    let first = bytes
        .get(a..a + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad(a, "truncated"))?;
    let (span, b) = read_varint(&bytes[a + 8..]).ok_or_else(|| bad(a + 8, "bad span varint"))?;
    let at = a + 8 + b;
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n >= 1 && n <= bytes.len().saturating_mul(8))
        .ok_or_else(|| bad(0, "impossible length"))?;
    if first.checked_add(span).is_none() {
        return Err(bad(a, "values pass 2^64"));
    }
    let (ef, rest) = EfView::parse(&bytes[at..], n, span, false, false)
        .ok_or_else(|| bad(at, "shorter than its length says"))?;
    if !rest.is_empty() {
        return Err(bad(bytes.len() - rest.len(), "trailing bytes"));
    }
    Ok(U64List::Packed { first, span, ef })
}

/// A decoded FORWARD value: a raw u64 array (version 1) or an Elias-Fano list (version 2).
#[derive(Clone, Copy, Debug)]
pub enum U64List<'a> {
    Raw(U64Slice<'a>),
    Packed {
        first: u64,
        span: u64,
        ef: EfView<'a>,
    },
}

impl<'a> U64List<'a> {
    pub fn len(&self) -> usize {
        match self {
            U64List::Raw(s) => s.len(),
            U64List::Packed { ef, .. } => ef.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values in stored order.
    pub fn iter(&self) -> U64ListIter<'a> {
        match self {
            U64List::Raw(s) => U64ListIter::Raw(s.0.iter()),
            U64List::Packed { first, ef, .. } => U64ListIter::Packed(*first, ef.iter()),
        }
    }

    pub fn to_vec(&self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.len());
        self.extend_into(&mut v);
        v
    }

    /// Appends the values to `out` (the fast way to decode a whole list).
    pub fn extend_into(&self, out: &mut Vec<u64>) {
        match self {
            U64List::Raw(s) => out.extend(s.iter()),
            U64List::Packed { first, ef, .. } => ef.decode_into(*first, out),
        }
    }

    /// Whether the values are strictly increasing and complete (the FORWARD invariant).
    pub fn is_strictly_increasing(&self) -> bool {
        match self {
            U64List::Raw(s) => s.is_strictly_increasing(),
            U64List::Packed { span, ef, .. } => ef.validate(*span, true).is_ok(),
        }
    }

    /// |self ∩ other| for two strictly increasing sets.
    pub fn intersect_count(&self, other: &[u64]) -> usize {
        match self {
            U64List::Raw(s) => s.intersect_count(other),
            U64List::Packed { .. } => {
                let (mut it, mut j, mut count) = (self.iter(), 0, 0);
                let mut x = it.next();
                while let (Some(a), Some(&b)) = (x, other.get(j)) {
                    count += (a == b) as usize;
                    if a <= b {
                        x = it.next();
                    }
                    j += (b <= a) as usize;
                }
                count
            }
        }
    }
}

/// Iterator over a `U64List`.
#[derive(Clone)]
pub enum U64ListIter<'a> {
    Raw(std::slice::Iter<'a, [u8; 8]>),
    Packed(u64, EfIter<'a>),
}

impl Iterator for U64ListIter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        match self {
            U64ListIter::Raw(it) => it.next().map(|w| u64::from_le_bytes(*w)),
            U64ListIter::Packed(first, it) => it.next().map(|d| first.wrapping_add(d)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            U64ListIter::Raw(it) => it.size_hint(),
            U64ListIter::Packed(_, it) => it.size_hint(),
        }
    }
}

/// A borrowed array of u64 LE values (no alignment required).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U64Slice<'a>(&'a [[u8; 8]]);

impl<'a> U64Slice<'a> {
    /// Fails if the length is not a multiple of 8.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        let (words, tail) = bytes.as_chunks::<8>();
        if !tail.is_empty() {
            return Err(bad_value(
                0,
                format!("u64 array of {} bytes is not a multiple of 8", bytes.len()),
            ));
        }
        Ok(U64Slice(words))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        self.0.get(i).map(|w| u64::from_le_bytes(*w))
    }

    /// The values in stored order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + DoubleEndedIterator + 'a {
        self.0.iter().map(|w| u64::from_le_bytes(*w))
    }

    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// Whether the values are strictly increasing (the FORWARD invariant).
    pub fn is_strictly_increasing(&self) -> bool {
        self.0
            .windows(2)
            .all(|w| u64::from_le_bytes(w[0]) < u64::from_le_bytes(w[1]))
    }

    /// |self ∩ other| for two strictly increasing sets.
    pub fn intersect_count(&self, other: &[u64]) -> usize {
        let a = self.0;
        // Galloping pays when one side is much shorter; similar sizes (the common case when
        // verifying a candidate pair) take the linear merge.
        if a.len().saturating_mul(GALLOP_RATIO) < other.len() {
            return gallop_count(a.iter().map(|w| u64::from_le_bytes(*w)), other);
        }
        if other.len().saturating_mul(GALLOP_RATIO) < a.len() {
            let mut rest = a;
            let mut count = 0;
            for &x in other {
                let i = rest.partition_point(|w| u64::from_le_bytes(*w) < x);
                rest = &rest[i..];
                if rest.first().is_some_and(|w| u64::from_le_bytes(*w) == x) {
                    count += 1;
                    rest = &rest[1..];
                }
            }
            return count;
        }
        let (mut i, mut j, mut count) = (0, 0, 0);
        while i < a.len() && j < other.len() {
            let x = u64::from_le_bytes(a[i]);
            let y = other[j];
            // Branch-free advance: the comparison outcome is unpredictable on real data.
            count += (x == y) as usize;
            i += (x <= y) as usize;
            j += (y <= x) as usize;
        }
        count
    }

    /// |self ∩ other| where both are stored arrays.
    pub fn intersect_count_slice(&self, other: &U64Slice<'_>) -> usize {
        let (a, b) = (self.0, other.0);
        let (mut i, mut j, mut count) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            let x = u64::from_le_bytes(a[i]);
            let y = u64::from_le_bytes(b[j]);
            count += (x == y) as usize;
            i += (x <= y) as usize;
            j += (y <= x) as usize;
        }
        count
    }
}

const GALLOP_RATIO: usize = 16;

fn gallop_count(small: impl Iterator<Item = u64>, mut big: &[u64]) -> usize {
    let mut count = 0;
    for x in small {
        let i = big.partition_point(|&y| y < x);
        big = &big[i..];
        if big.first() == Some(&x) {
            count += 1;
            big = &big[1..];
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[u64], b: &[u64]) -> usize {
        a.iter().filter(|x| b.binary_search(x).is_ok()).count()
    }

    #[test]
    fn round_trip_and_layout() {
        let v = [1u64, 0x0102_0304_0506_0708, u64::MAX];
        let mut out = Vec::new();
        encode_u64s_v1(&v, &mut out);
        assert_eq!(out.len(), 24);
        assert_eq!(&out[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
        let s = U64Slice::new(&out).unwrap();
        assert_eq!(
            (s.len(), s.get(1), s.get(3)),
            (3, Some(0x0102_0304_0506_0708), None)
        );
        assert_eq!(s.to_vec(), v);
        assert!(s.is_strictly_increasing());
        assert!(decode_u64s(&[]).unwrap().is_empty());
        assert!(decode_u64s_version(&[], 1).unwrap().is_empty());
    }

    #[test]
    fn packed_form_round_trips_and_is_compact() {
        let mut s = 1u64;
        for n in [0usize, 1, 2, 3, 100, 353, 2000] {
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            let mut out = Vec::new();
            encode_u64s(&v, &mut out);
            let d = decode_u64s(&out).unwrap();
            assert_eq!((d.len(), d.to_vec()), (v.len(), v.clone()));
            assert!(d.is_strictly_increasing());
            if v.len() >= 100 {
                // 64 - log2(n) + 2 bits a value (plus ~12 bytes of header), not 64.
                let bound = v.len() as f64 * (66.0 - (v.len() as f64).log2()) / 8.0 + 24.0;
                assert!((out.len() as f64) < bound, "{n}: {} >= {bound}", out.len());
            }
        }
        let edge = [0u64, 1, u64::MAX - 1, u64::MAX];
        let mut out = Vec::new();
        encode_u64s(&edge, &mut out);
        assert_eq!(decode_u64s(&out).unwrap().to_vec(), edge);
        // Truncations and trailing bytes are errors, never panics.
        for cut in 0..out.len() {
            assert!(decode_u64s(&out[..cut]).is_err() || cut == 0);
        }
        out.push(0);
        assert!(decode_u64s(&out).is_err());
    }

    #[test]
    fn corrupt_lengths_and_order_are_detected() {
        for len in 1..8 {
            assert!(decode_u64s_version(&vec![0u8; 8 + len], 1).is_err());
        }
        let mut out = Vec::new();
        encode_u64s_v1(&[5, 6], &mut out);
        out[8] = 4; // 6 -> 4
        assert!(!decode_u64s_version(&out, 1)
            .unwrap()
            .is_strictly_increasing());
    }

    #[test]
    fn intersect_count_matches_naive_in_all_regimes() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand_set = |n: usize, modulus: u64| {
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state % modulus
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for (na, nb) in [(0, 10), (10, 0), (50, 60), (3, 500), (500, 3), (1000, 1000)] {
            let a = rand_set(na, 2000);
            let b = rand_set(nb, 2000);
            let mut bytes = Vec::new();
            encode_u64s_v1(&a, &mut bytes);
            let s = U64Slice::new(&bytes).unwrap();
            assert_eq!(s.intersect_count(&b), naive(&a, &b), "{na} vs {nb}");
            let mut bb = Vec::new();
            encode_u64s_v1(&b, &mut bb);
            assert_eq!(
                s.intersect_count_slice(&U64Slice::new(&bb).unwrap()),
                naive(&a, &b)
            );
            let mut packed = Vec::new();
            encode_u64s(&a, &mut packed);
            let p = decode_u64s(&packed).unwrap();
            assert_eq!(p.intersect_count(&b), naive(&a, &b), "packed {na} vs {nb}");
            assert_eq!(p.to_vec(), a);
        }
    }
}
