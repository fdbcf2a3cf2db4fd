//! The posting-list value codec of the POSTINGS and SIMHASH tables: a sorted set of u32 doc ids.
//!
//! Format version 2 writes two forms (`encode_postings`):
//! - the delta form: LEB128 varints, the first `4 id0 + 3` (so the first byte's low two bits are
//!   `11`, which no other form's tag has), then `id[i] - id[i-1] - 1` for each further id. A
//!   single document costs 1-4 bytes instead of 5 (below 2^26), a run of near ids about a byte
//!   each.
//! - `TAG_RAW` when that is strictly smaller (ids far apart), `TAG_ROARING` when that is
//!   strictly smaller than both (long dense lists).
//!
//! Version 1 wrote (`encode_postings_v1`), and every reader still reads:
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
/// The delta form is recognized by the low two bits of its first byte (`first & 3 == 3`).
pub const DELTA_MARK: u8 = 0x03;
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

/// Appends a LEB128 varint.
#[inline]
pub(super) fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint of at most 10 bytes that fits a u64: (value, bytes read).
#[inline]
pub(super) fn read_varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        let part = (byte & 0x7f) as u64;
        if i == 9 && part > 1 {
            return None;
        }
        v |= part << (7 * i);
        if byte < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Size of the delta form of `ids` (non-empty, strictly increasing).
fn delta_len(ids: impl Iterator<Item = u32>) -> usize {
    let mut prev: Option<u32> = None;
    let mut len = 0;
    for id in ids {
        len += match prev {
            None => varint_len(4 * id as u64 + 3),
            Some(p) => varint_len((id - p - 1) as u64),
        };
        prev = Some(id);
    }
    len
}

fn write_delta(ids: impl Iterator<Item = u32>, out: &mut Vec<u8>) {
    let mut prev: Option<u32> = None;
    for id in ids {
        match prev {
            None => write_varint(4 * id as u64 + 3, out),
            Some(p) => write_varint((id - p - 1) as u64, out),
        }
        prev = Some(id);
    }
}

/// Appends the encoding of `ids` (strictly increasing) to `out`, in the forms of the current
/// format (2): the delta form, unless the raw form is strictly smaller (ids far apart), or
/// roaring is strictly smaller than both (long dense lists, more than `RAW_MAX` ids); an empty
/// list is the raw form's single tag byte.
///
/// Panics if `ids` is not strictly increasing: that is a caller bug, and writing it would store
/// a value every reader rejects.
pub fn encode_postings(ids: &[u32], out: &mut Vec<u8>) {
    // One document (most keys of a batch): the delta form's one varint, never longer than the
    // raw form's 5 bytes (4 id + 3 < 2^34 takes at most 5), so always the delta form.
    if let [id] = *ids {
        encode_one_posting(id, out);
        return;
    }
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "posting ids must be strictly increasing"
    );
    if ids.is_empty() {
        out.push(TAG_RAW);
        return;
    }
    let dlen = delta_len(ids.iter().copied());
    let rlen = 1 + 4 * ids.len();
    if ids.len() > RAW_MAX {
        if let Ok(mut bitmap) = RoaringBitmap::from_sorted_iter(ids.iter().copied()) {
            bitmap.optimize();
            if 1 + bitmap.serialized_size() < dlen.min(rlen) {
                write_roaring(&bitmap, out);
                return;
            }
        }
    }
    if rlen < dlen {
        write_raw(ids.iter().copied(), ids.len(), out);
        return;
    }
    out.reserve(dlen);
    write_delta(ids.iter().copied(), out);
}

/// `encode_postings(&[id], out)`: a list of one document (most keys of a batch) is always the
/// delta form's one varint.
#[inline]
pub fn encode_one_posting(id: u32, out: &mut Vec<u8>) {
    write_varint(4 * id as u64 + 3, out);
}

/// Appends the encoding of `ids` (strictly increasing) in the forms of format version 1 (raw up
/// to `RAW_MAX` ids, roaring when strictly smaller than raw).
pub fn encode_postings_v1(ids: &[u32], out: &mut Vec<u8>) {
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
    if n == 0 {
        out.push(TAG_RAW);
        return;
    }
    let dlen = delta_len(bitmap.iter());
    let rlen = 1 + 4 * n;
    if n > RAW_MAX && 1 + bitmap.serialized_size() < dlen.min(rlen) {
        write_roaring(bitmap, out);
    } else if rlen < dlen {
        write_raw(bitmap.iter(), n, out);
    } else {
        write_delta(bitmap.iter(), out);
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
        Some((&first, _)) if first & DELTA_MARK == DELTA_MARK => {
            let mut len = 0usize;
            delta_walk(bytes, |_| len += 1)?;
            Ok(PostingList(Repr::Delta(bytes, len)))
        }
        Some((tag, _)) => Err(bad_value(0, format!("unknown posting-list tag {tag:#04x}"))),
    }
}

/// Appends the ids of a posting-list value to `out`, in increasing order: what
/// `decode_postings(bytes)?.for_each(|id| out.push(id))` does, with the delta form (most
/// lists) checked and decoded in one pass instead of two. The same checks and errors; on an
/// error `out` may hold some of the ids.
pub fn decode_postings_into(bytes: &[u8], out: &mut Vec<u32>) -> Result<()> {
    match bytes.first() {
        Some(&first) if first & DELTA_MARK == DELTA_MARK => {
            delta_walk(bytes, |id| out.push(id as u32))
        }
        _ => {
            decode_postings(bytes)?.for_each(|id| out.push(id));
            Ok(())
        }
    }
}

/// Walks a delta-form value (`bytes` starts with a delta-marked byte), calling `f` on each id
/// (below 2^32) in order; an error at the first bad varint or id past 2^32.
#[inline]
fn delta_walk(bytes: &[u8], mut f: impl FnMut(u64)) -> Result<()> {
    let mut prev: Option<u64> = None;
    let mut at = 0;
    while at < bytes.len() {
        let (v, k) = match bytes[at] {
            b if b < 0x80 => (b as u64, 1),
            _ => read_varint(&bytes[at..])
                .ok_or_else(|| bad_value(at, "bad varint in posting list"))?,
        };
        let id = match prev {
            None => v >> 2,
            Some(p) => p + v + 1,
        };
        if id > u32::MAX as u64 {
            return Err(bad_value(at, "posting id passes 2^32"));
        }
        f(id);
        prev = Some(id);
        at += k;
    }
    Ok(())
}

/// Iterator over the ids of a delta-form value (already validated by `decode_postings`).
#[derive(Clone)]
pub struct DeltaIter<'a> {
    bytes: &'a [u8],
    prev: Option<u32>,
    left: usize,
}

impl Iterator for DeltaIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        let (v, k) = match self.bytes.first() {
            Some(&b) if b < 0x80 => (b as u64, 1),
            _ => read_varint(self.bytes)?,
        };
        self.bytes = &self.bytes[k..];
        self.left -= 1;
        let id = match self.prev {
            None => (v >> 2) as u32,
            Some(p) => p.wrapping_add(v as u32).wrapping_add(1),
        };
        self.prev = Some(id);
        Some(id)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// A decoded posting list: borrowed raw ids, or an owned roaring bitmap.
#[derive(Clone, Debug, PartialEq)]
pub struct PostingList<'a>(Repr<'a>);

#[derive(Clone, Debug, PartialEq)]
enum Repr<'a> {
    Raw(&'a [[u8; 4]]),
    Bitmap(RoaringBitmap),
    /// The delta form's bytes and its number of ids.
    Delta(&'a [u8], usize),
}

impl<'a> PostingList<'a> {
    /// Number of ids.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Raw(ids) => ids.len(),
            Repr::Bitmap(b) => b.len() as usize,
            Repr::Delta(_, n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if stored in the raw or delta form (no allocation was made to decode it).
    pub fn is_raw(&self) -> bool {
        matches!(self.0, Repr::Raw(_) | Repr::Delta(..))
    }

    fn delta(bytes: &[u8], n: usize) -> DeltaIter<'_> {
        DeltaIter {
            bytes,
            prev: None,
            left: n,
        }
    }

    /// The ids in increasing order.
    pub fn iter(&self) -> PostingIter<'_> {
        match &self.0 {
            Repr::Raw(ids) => PostingIter(IterRepr::Raw(ids.iter())),
            Repr::Bitmap(b) => PostingIter(IterRepr::Bitmap(b.iter())),
            Repr::Delta(b, n) => PostingIter(IterRepr::Delta(Self::delta(b, *n))),
        }
    }

    /// Calls `f` on each id in increasing order.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(u32)) {
        match &self.0 {
            Repr::Raw(ids) => ids.iter().for_each(|b| f(u32::from_le_bytes(*b))),
            Repr::Bitmap(b) => b.iter().for_each(f),
            Repr::Delta(b, n) => Self::delta(b, *n).for_each(f),
        }
    }

    /// Whether `id` is in the list.
    pub fn contains(&self, id: u32) -> bool {
        match &self.0 {
            Repr::Raw(ids) => ids
                .binary_search_by_key(&id, |b| u32::from_le_bytes(*b))
                .is_ok(),
            Repr::Bitmap(b) => b.contains(id),
            Repr::Delta(b, n) => Self::delta(b, *n).take_while(|&x| x <= id).any(|x| x == id),
        }
    }

    /// Adds every id to `acc` (the merge step of a posting-list union).
    pub fn union_into(&self, acc: &mut RoaringBitmap) {
        match &self.0 {
            Repr::Raw(ids) => ids.iter().for_each(|b| {
                acc.insert(u32::from_le_bytes(*b));
            }),
            Repr::Bitmap(b) => *acc |= b,
            Repr::Delta(b, n) => Self::delta(b, *n).for_each(|id| {
                acc.insert(id);
            }),
        }
    }

    /// The ids as a bitmap (a clone for the roaring form).
    pub fn to_bitmap(&self) -> RoaringBitmap {
        match &self.0 {
            Repr::Raw(_) | Repr::Delta(..) => self.iter().collect(),
            Repr::Bitmap(b) => b.clone(),
        }
    }

    /// The ids as a bitmap, without cloning the roaring form.
    pub fn into_bitmap(self) -> RoaringBitmap {
        match self.0 {
            Repr::Raw(_) | Repr::Delta(..) => self.iter().collect(),
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
    Delta(DeltaIter<'b>),
}

impl Iterator for PostingIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match &mut self.0 {
            IterRepr::Raw(it) => it.next().map(|b| u32::from_le_bytes(*b)),
            IterRepr::Bitmap(it) => it.next(),
            IterRepr::Delta(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Raw(it) => it.size_hint(),
            IterRepr::Bitmap(it) => it.size_hint(),
            IterRepr::Delta(it) => it.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Format version 1's encoder.
    fn enc(ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_postings_v1(ids, &mut out);
        out
    }

    /// The current encoder.
    fn enc2(ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_postings(ids, &mut out);
        out
    }

    /// `encode_postings`' one-id path gives the bytes of the general rule (`encode_bitmap`:
    /// the shortest of delta and raw), after what the buffer holds, at every varint length.
    #[test]
    fn one_id_lists_equal_the_general_rule() {
        let mut ids: Vec<u32> = vec![0, 1, 31, 32, 33, u32::MAX - 1, u32::MAX];
        for bits in [5u32, 12, 19, 26, 30] {
            // 4 id + 3 crosses a varint length at id = 2^bits (7 bits a byte, 2 for the tag).
            ids.extend([(1 << bits) - 1, 1 << bits, (1 << bits) + 1]);
        }
        let mut s = 9u64;
        ids.extend((0..5000).map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s as u32) >> (s >> 59)
        }));
        for id in ids {
            let bm: RoaringBitmap = [id].into_iter().collect();
            let (mut want, mut got) = (vec![0xee], vec![0xee]);
            encode_bitmap(&bm, &mut want);
            encode_postings(&[id], &mut got);
            assert_eq!(got, want, "id {id}");
            assert_eq!(decode_postings(&got[1..]).unwrap().to_vec(), vec![id]);
        }
    }

    #[test]
    fn delta_form_bytes_and_round_trip() {
        assert_eq!(enc2(&[]), vec![TAG_RAW]);
        assert_eq!(enc2(&[0]), vec![0x03]);
        assert_eq!(enc2(&[7]), vec![0x1f]); // 4 * 7 + 3 = 31
        assert_eq!(enc2(&[1, 2]), vec![0x07, 0x00]);
        // 4 * 1000 + 3 = 4003 = 0x0fa3 -> a3 1f; gap 1005 - 1000 - 1 = 4.
        assert_eq!(enc2(&[1000, 1005]), vec![0xa3, 0x1f, 0x04]);
        assert_eq!(enc2(&[u32::MAX]).len(), 5);
        let mut s = 5u64;
        for n in [1usize, 2, 16, 17, 100, 5000] {
            for spread in [2u64, 50, 100_000, u32::MAX as u64] {
                let mut ids: Vec<u32> = (0..n)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        (s % spread) as u32
                    })
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                let b = enc2(&ids);
                let list = decode_postings(&b).unwrap();
                let mut into = vec![7];
                decode_postings_into(&b, &mut into).unwrap();
                assert_eq!(into[1..], ids[..], "decode_postings_into appends the ids");
                assert_eq!(list.len(), ids.len());
                assert_eq!(list.to_vec(), ids);
                assert_eq!(list.iter().count(), ids.len());
                for &id in ids.iter().take(20) {
                    assert!(list.contains(id));
                }
                let mut bm: RoaringBitmap = ids.iter().copied().collect();
                bm.optimize();
                let mut via_bitmap = Vec::new();
                encode_bitmap(&bm, &mut via_bitmap);
                assert_eq!(via_bitmap, b, "bitmap encoder agrees");
                // Never larger than version 1's encoding.
                assert!(b.len() <= enc(&ids).len());
            }
        }
    }

    #[test]
    fn corrupt_delta_values_are_rejected_without_panic() {
        assert!(decode_postings(&[0x83]).is_err(), "unterminated varint");
        assert!(
            decode_postings(&[0x03, 0x80]).is_err(),
            "unterminated varint"
        );
        // 4 * 2^32 + 3: an id past u32.
        let mut b = Vec::new();
        write_varint(4 * (1u64 << 32) + 3, &mut b);
        assert!(decode_postings(&b).is_err());
        let mut b = Vec::new();
        write_varint(4 * (u32::MAX as u64) + 3, &mut b);
        b.push(0);
        assert!(decode_postings(&b).is_err(), "second id past u32");
        let good = enc2(&(0..300).map(|i| i * 37).collect::<Vec<u32>>());
        for i in 0..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = good.clone();
                b[i] ^= x;
                // The one-pass decode accepts and rejects exactly what the other does.
                let mut into = Vec::new();
                match (decode_postings(&b), decode_postings_into(&b, &mut into)) {
                    (Ok(list), Ok(())) => assert_eq!(list.to_vec(), into),
                    (Err(e), Err(f)) => assert_eq!(e.to_string(), f.to_string()),
                    (d, e) => panic!("byte {i}: {d:?} against {e:?}"),
                }
                if let Ok(list) = decode_postings(&b) {
                    let v = list.to_vec();
                    assert!(v.windows(2).all(|w| w[0] < w[1]));
                    assert_eq!(v.len(), list.len());
                }
            }
        }
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
            assert_eq!(out, enc2(&ids));
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
        assert!(decode_postings(&[0x04, 1, 2, 3, 4]).is_err());
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
                // The one-pass decode accepts and rejects exactly what the other does.
                let mut into = Vec::new();
                match (decode_postings(&b), decode_postings_into(&b, &mut into)) {
                    (Ok(list), Ok(())) => assert_eq!(list.to_vec(), into),
                    (Err(e), Err(f)) => assert_eq!(e.to_string(), f.to_string()),
                    (d, e) => panic!("byte {i}: {d:?} against {e:?}"),
                }
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
