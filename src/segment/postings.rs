//! The posting-list value codec of the POSTINGS and SIMHASH tables: a sorted set of u32 doc ids.
//!
//! Two forms, chosen by the encoder:
//! - `TAG_RAW` (0x01) + the ids as u32 LE, strictly increasing. Used for every list of at most
//!   `RAW_MAX` ids, and for longer lists whenever it is not larger than the roaring form (sparse
//!   ids spread over many 2^16 chunks). Decoding it borrows the bytes: no allocation.
//! - `TAG_ROARING` (0x02) + the Roaring portable serialization
//!   (<https://github.com/RoaringBitmap/RoaringFormatSpec>), as written by roaring 0.11's
//!   `serialize_into`. Used for long lists where it is strictly smaller.
//!
//! Most shingles occur in one or a few documents, so the raw form is the common case; its
//! decode cost is a length check and an order check.

use std::slice;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};

/// Tag of the raw form.
pub const TAG_RAW: u8 = 0x01;
/// Tag of the roaring form.
pub const TAG_ROARING: u8 = 0x02;
/// Lists of at most this many ids are always written raw. A roaring bitmap of k ids takes at
/// least 16 + 2k bytes (one array container), the raw form 4k, so raw is never larger below 8;
/// up to 16 raw is at most 1.33x the roaring size and decodes without allocating (see the
/// measurements in format-spec/segment.md).
pub const RAW_MAX: usize = 16;

/// Placeholder path for errors of a value decoded outside a segment; `Segment::get_postings`
/// replaces it with the file and the value's offset.
pub(super) const VALUE_PATH: &str = "(segment value)";

pub(super) fn bad_value(offset: usize, reason: impl Into<String>) -> Error {
    Error::corrupt(VALUE_PATH, offset as u64, reason)
}

/// Appends the encoding of `ids` (strictly increasing) to `out`.
///
/// Panics if `ids` is not strictly increasing: that is a caller bug, and writing it would store
/// a value every reader rejects.
pub fn encode_postings(ids: &[u32], out: &mut Vec<u8>) {
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "posting ids must be strictly increasing"
    );
    if ids.len() > RAW_MAX {
        // from_sorted_iter cannot fail on strictly increasing input (asserted above).
        if let Ok(mut bitmap) = RoaringBitmap::from_sorted_iter(ids.iter().copied()) {
            bitmap.optimize();
            if bitmap.serialized_size() < 4 * ids.len() {
                write_roaring(&bitmap, out);
                return;
            }
        }
    }
    write_raw(ids.iter().copied(), ids.len(), out);
}

/// Appends the encoding of `bitmap` to `out`, with the same form rule as `encode_postings`.
/// (`encode_postings` run-compresses with `optimize()`; call it on `bitmap` first to match.)
pub fn encode_bitmap(bitmap: &RoaringBitmap, out: &mut Vec<u8>) {
    let n = bitmap.len() as usize;
    if n > RAW_MAX && bitmap.serialized_size() < 4 * n {
        write_roaring(bitmap, out);
    } else {
        write_raw(bitmap.iter(), n, out);
    }
}

fn write_raw(ids: impl Iterator<Item = u32>, n: usize, out: &mut Vec<u8>) {
    out.reserve(1 + 4 * n);
    out.push(TAG_RAW);
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

fn write_roaring(bitmap: &RoaringBitmap, out: &mut Vec<u8>) {
    out.reserve(1 + bitmap.serialized_size());
    out.push(TAG_ROARING);
    // Writing into a Vec<u8> cannot fail.
    let _ = bitmap.serialize_into(&mut *out);
}

/// Decodes a posting-list value. Never panics; rejects unknown tags, ragged or unsorted raw
/// lists, invalid roaring data and trailing bytes.
pub fn decode_postings(bytes: &[u8]) -> Result<PostingList<'_>> {
    match bytes.split_first() {
        None => Err(bad_value(0, "empty posting-list value")),
        Some((&TAG_RAW, rest)) => {
            let (ids, tail) = rest.as_chunks::<4>();
            if !tail.is_empty() {
                return Err(bad_value(
                    0,
                    format!(
                        "raw posting list of {} bytes is not a multiple of 4",
                        rest.len()
                    ),
                ));
            }
            if let Some(i) = ids
                .windows(2)
                .position(|w| u32::from_le_bytes(w[0]) >= u32::from_le_bytes(w[1]))
            {
                return Err(bad_value(
                    1 + 4 * (i + 1),
                    "raw posting ids do not increase",
                ));
            }
            Ok(PostingList(Repr::Raw(ids)))
        }
        Some((&TAG_ROARING, rest)) => {
            let mut reader = rest;
            let bitmap = RoaringBitmap::deserialize_from(&mut reader)
                .map_err(|e| bad_value(1, format!("invalid roaring bitmap: {e}")))?;
            if !reader.is_empty() {
                return Err(bad_value(
                    bytes.len() - reader.len(),
                    "trailing bytes after roaring bitmap",
                ));
            }
            Ok(PostingList(Repr::Bitmap(bitmap)))
        }
        Some((tag, _)) => Err(bad_value(0, format!("unknown posting-list tag {tag:#04x}"))),
    }
}

/// A decoded posting list: borrowed raw ids, or an owned roaring bitmap.
#[derive(Clone, Debug, PartialEq)]
pub struct PostingList<'a>(Repr<'a>);

#[derive(Clone, Debug, PartialEq)]
enum Repr<'a> {
    Raw(&'a [[u8; 4]]),
    Bitmap(RoaringBitmap),
}

impl<'a> PostingList<'a> {
    /// Number of ids.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Raw(ids) => ids.len(),
            Repr::Bitmap(b) => b.len() as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if stored in the raw form (no allocation was made to decode it).
    pub fn is_raw(&self) -> bool {
        matches!(self.0, Repr::Raw(_))
    }

    /// The ids in increasing order.
    pub fn iter(&self) -> PostingIter<'_> {
        match &self.0 {
            Repr::Raw(ids) => PostingIter(IterRepr::Raw(ids.iter())),
            Repr::Bitmap(b) => PostingIter(IterRepr::Bitmap(b.iter())),
        }
    }

    /// Calls `f` on each id in increasing order.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(u32)) {
        match &self.0 {
            Repr::Raw(ids) => ids.iter().for_each(|b| f(u32::from_le_bytes(*b))),
            Repr::Bitmap(b) => b.iter().for_each(f),
        }
    }

    /// Whether `id` is in the list.
    pub fn contains(&self, id: u32) -> bool {
        match &self.0 {
            Repr::Raw(ids) => ids
                .binary_search_by_key(&id, |b| u32::from_le_bytes(*b))
                .is_ok(),
            Repr::Bitmap(b) => b.contains(id),
        }
    }

    /// Adds every id to `acc` (the merge step of a posting-list union).
    pub fn union_into(&self, acc: &mut RoaringBitmap) {
        match &self.0 {
            Repr::Raw(ids) => ids.iter().for_each(|b| {
                acc.insert(u32::from_le_bytes(*b));
            }),
            Repr::Bitmap(b) => *acc |= b,
        }
    }

    /// The ids as a bitmap (a clone for the roaring form).
    pub fn to_bitmap(&self) -> RoaringBitmap {
        match &self.0 {
            Repr::Raw(_) => self.iter().collect(),
            Repr::Bitmap(b) => b.clone(),
        }
    }

    /// The ids as a bitmap, without cloning the roaring form.
    pub fn into_bitmap(self) -> RoaringBitmap {
        match self.0 {
            Repr::Raw(_) => self.iter().collect(),
            Repr::Bitmap(b) => b,
        }
    }

    /// The ids as a vector.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

/// Iterator over the ids of a `PostingList`.
pub struct PostingIter<'b>(IterRepr<'b>);

enum IterRepr<'b> {
    Raw(slice::Iter<'b, [u8; 4]>),
    Bitmap(roaring::bitmap::Iter<'b>),
}

impl Iterator for PostingIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match &mut self.0 {
            IterRepr::Raw(it) => it.next().map(|b| u32::from_le_bytes(*b)),
            IterRepr::Bitmap(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Raw(it) => it.size_hint(),
            IterRepr::Bitmap(it) => it.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_postings(ids, &mut out);
        out
    }

    #[test]
    fn small_form_bytes_and_round_trip() {
        assert_eq!(enc(&[]), vec![TAG_RAW]);
        assert_eq!(
            enc(&[1, 0x0102_0304]),
            vec![TAG_RAW, 1, 0, 0, 0, 4, 3, 2, 1]
        );
        for n in 0..=RAW_MAX {
            let ids: Vec<u32> = (0..n as u32).map(|i| i * 3).collect();
            let bytes = enc(&ids);
            assert_eq!(bytes.len(), 1 + 4 * n);
            let list = decode_postings(&bytes).unwrap();
            assert!(list.is_raw());
            assert_eq!(list.len(), n);
            assert_eq!(list.to_vec(), ids);
            assert_eq!(list.to_bitmap().iter().collect::<Vec<_>>(), ids);
        }
    }

    #[test]
    fn large_dense_lists_use_roaring_and_sparse_ones_stay_raw() {
        let dense: Vec<u32> = (1000..3000).collect();
        let bytes = enc(&dense);
        assert_eq!(bytes[0], TAG_ROARING);
        assert!(
            bytes.len() < 64,
            "a run compresses to a few bytes, got {}",
            bytes.len()
        );
        let list = decode_postings(&bytes).unwrap();
        assert!(!list.is_raw());
        assert_eq!(list.to_vec(), dense);
        assert!(list.contains(2999) && !list.contains(3000));

        // 40 ids each in its own 2^16 chunk: roaring needs 8 + 10 per id > 4 per id.
        let sparse: Vec<u32> = (0..40).map(|i| i << 16).collect();
        let bytes = enc(&sparse);
        assert_eq!((bytes[0], bytes.len()), (TAG_RAW, 1 + 160));
        assert_eq!(decode_postings(&bytes).unwrap().to_vec(), sparse);

        // Canonical: the bitmap encoder agrees with the slice encoder.
        for ids in [
            dense,
            sparse,
            (0..17).collect::<Vec<u32>>(),
            (0..5000).map(|i| i * 7).collect(),
        ] {
            let mut b: RoaringBitmap = ids.iter().copied().collect();
            b.optimize();
            let mut out = Vec::new();
            encode_bitmap(&b, &mut out);
            assert_eq!(out, enc(&ids));
            let mut acc = RoaringBitmap::new();
            decode_postings(&out).unwrap().union_into(&mut acc);
            assert_eq!(acc, b);
            let mut seen = Vec::new();
            decode_postings(&out).unwrap().for_each(|id| seen.push(id));
            assert_eq!(seen, ids);
        }
    }

    #[test]
    fn corrupt_values_are_rejected() {
        assert!(decode_postings(&[]).is_err());
        assert!(decode_postings(&[0x00]).is_err());
        assert!(decode_postings(&[0x03, 1, 2, 3, 4]).is_err());
        assert!(decode_postings(&[TAG_RAW, 1, 0, 0]).is_err(), "ragged");
        assert!(
            decode_postings(&[TAG_RAW, 2, 0, 0, 0, 1, 0, 0, 0]).is_err(),
            "unsorted"
        );
        assert!(
            decode_postings(&[TAG_RAW, 2, 0, 0, 0, 2, 0, 0, 0]).is_err(),
            "duplicate"
        );
        let mut good = enc(&(0..100).map(|i| i * 2).collect::<Vec<u32>>());
        assert_eq!(good[0], TAG_ROARING);
        good.push(0);
        assert!(decode_postings(&good).is_err(), "trailing byte");
        assert!(decode_postings(&[TAG_ROARING]).is_err());
        // Every truncation and every single-byte change decodes to an error or some valid list;
        // never a panic. (Integrity is the block crc's job; the codec only must not crash.)
        good.pop();
        for cut in 0..good.len() {
            assert!(decode_postings(&good[..cut]).is_err(), "truncated at {cut}");
        }
        for i in 0..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = good.clone();
                b[i] ^= x;
                if let Ok(list) = decode_postings(&b) {
                    let v = list.to_vec();
                    assert!(v.windows(2).all(|w| w[0] < w[1]));
                    assert_eq!(v.len(), list.len());
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "strictly increasing")]
    fn unsorted_input_is_a_caller_bug() {
        enc(&[3, 2]);
    }
}
