//! The FORWARD-table value codec: a document's sorted, unique feature hashes as a raw array of
//! u64 LE (no header; the entry count is `len / 8`), read in place through `U64Slice`.
//!
//! Exact resemblance is computed by merging two such arrays, so `intersect_count` is the hot
//! loop of query verification.

use crate::error::Result;

use super::postings::bad_value;

/// Appends `values` (strictly increasing) as u64 LE.
///
/// Panics if `values` is not strictly increasing: a caller bug that would store a feature set
/// `Segment::verify` rejects and merges would miscount.
pub fn encode_u64s(values: &[u64], out: &mut Vec<u8>) {
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "feature hashes must be strictly increasing"
    );
    out.reserve(8 * values.len());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Views `bytes` as a u64 array. O(1): only the length is checked; `U64Slice::is_strictly_increasing`
/// (run by `Segment::verify`) checks the order.
pub fn decode_u64s(bytes: &[u8]) -> Result<U64Slice<'_>> {
    U64Slice::new(bytes)
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
        encode_u64s(&v, &mut out);
        assert_eq!(out.len(), 24);
        assert_eq!(&out[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
        let s = decode_u64s(&out).unwrap();
        assert_eq!(
            (s.len(), s.get(1), s.get(3)),
            (3, Some(0x0102_0304_0506_0708), None)
        );
        assert_eq!(s.to_vec(), v);
        assert!(s.is_strictly_increasing());
        assert!(decode_u64s(&[]).unwrap().is_empty());
    }

    #[test]
    fn corrupt_lengths_and_order_are_detected() {
        for len in 1..8 {
            assert!(decode_u64s(&vec![0u8; 8 + len]).is_err());
        }
        let mut out = Vec::new();
        encode_u64s(&[5, 6], &mut out);
        out[8] = 4; // 6 -> 4
        assert!(!decode_u64s(&out).unwrap().is_strictly_increasing());
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
            encode_u64s(&a, &mut bytes);
            let s = decode_u64s(&bytes).unwrap();
            assert_eq!(s.intersect_count(&b), naive(&a, &b), "{na} vs {nb}");
            let mut bb = Vec::new();
            encode_u64s(&b, &mut bb);
            assert_eq!(
                s.intersect_count_slice(&decode_u64s(&bb).unwrap()),
                naive(&a, &b)
            );
        }
    }
}
