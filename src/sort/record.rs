//! The fixed-width records the external sort handles, and their byte encodings.
//!
//! A run file stores records as `SIZE` little-endian bytes each. The in-memory order (`Ord`)
//! is what the sort uses; it is *not* the memcmp order of the encoding (little-endian integers
//! do not compare bytewise), which is why runs are merged on decoded values.

use byteorder::{ByteOrder, LittleEndian};

/// A fixed-width record with a total order equal to the order of its encoded bytes as defined
/// by the record (not necessarily memcmp): `decode(encode(x)) == x`, so sorting decoded values
/// sorts the file.
///
/// Contract for implementors: `encode` writes exactly `out[..SIZE]` and `decode` reads exactly
/// `bytes[..SIZE]`; callers always pass slices of exactly `SIZE` bytes, so the fixed-offset
/// reads inside can't go out of bounds. Every `SIZE`-byte pattern must decode to *some* value
/// (no validation, no panic); corruption is caught by the run file's crc32, not here.
pub trait Record: Copy + Ord + Send + Sync + 'static {
    /// Encoded width in bytes (> 0).
    const SIZE: usize;
    /// Record kind stored in the run-file header, so a run of one kind is never read as another.
    /// 1 = [`KeyDoc`], 2 = [`DocPair`], 4 = [`ProbeRecord`], 5 = [`DocHash`] (3 is the join's
    /// verified pair);
    /// other implementors pick an unused value.
    const KIND: u32;
    /// Writes the record into `out[..SIZE]`.
    fn encode(&self, out: &mut [u8]);
    /// Reads a record from `bytes[..SIZE]`.
    fn decode(bytes: &[u8]) -> Self;
    /// Whether [`Record::radix`] is defined (the in-memory sort then partitions by it first).
    const RADIX: bool = false;
    /// A key monotone in the order: `a <= b` implies `a.radix() <= b.radix()`.
    #[inline]
    fn radix(&self) -> u64 {
        0
    }
}

/// A (shingle hash, doc id) posting. Order: key, then doc.
///
/// Encoding (12 bytes): `key: u64 LE`, `doc: u32 LE`.
///
/// In memory 12 bytes too (`packed(4)`: no padding after `doc`), not 16: an ingest holds one
/// per posting twice (the sort buffer and its bucket partition), and every fresh page costs a
/// kernel zeroing (BENCHMARKS.md, "Packed postings records"). Fields are read by value (a
/// reference to the unaligned `key` is refused by the compiler).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(C, packed(4))]
pub struct KeyDoc {
    pub key: u64,
    pub doc: u32,
}

impl Record for KeyDoc {
    const SIZE: usize = 12;
    const KIND: u32 = 1;
    const RADIX: bool = true;

    #[inline]
    fn radix(&self) -> u64 {
        self.key
    }

    #[inline]
    fn encode(&self, out: &mut [u8]) {
        LittleEndian::write_u64(&mut out[0..8], self.key);
        LittleEndian::write_u32(&mut out[8..12], self.doc);
    }

    #[inline]
    fn decode(bytes: &[u8]) -> Self {
        KeyDoc {
            key: LittleEndian::read_u64(&bytes[0..8]),
            doc: LittleEndian::read_u32(&bytes[8..12]),
        }
    }
}

/// A probe of the merge join with the segments it is for (`src/pipeline/join.rs`,
/// per-segment probes): probing document `doc` looks `key` up in the segments whose bit
/// is set in `segs` (bit assignment: [`crate::query::Matcher::segment_bits`]). Order: key,
/// then doc, then segs.
///
/// Encoding (16 bytes): `key: u64 LE`, `doc: u32 LE`, `segs: u32 LE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ProbeRecord {
    pub key: u64,
    pub doc: u32,
    pub segs: u32,
}

impl Record for ProbeRecord {
    const SIZE: usize = 16;
    const KIND: u32 = 4;

    #[inline]
    fn encode(&self, out: &mut [u8]) {
        LittleEndian::write_u64(&mut out[0..8], self.key);
        LittleEndian::write_u32(&mut out[8..12], self.doc);
        LittleEndian::write_u32(&mut out[12..16], self.segs);
    }

    #[inline]
    fn decode(bytes: &[u8]) -> Self {
        ProbeRecord {
            key: LittleEndian::read_u64(&bytes[0..8]),
            doc: LittleEndian::read_u32(&bytes[8..12]),
            segs: LittleEndian::read_u32(&bytes[12..16]),
        }
    }
}

/// A pair of doc ids (candidate pair, edge of the duplicate graph). Order: a, then b.
///
/// Encoding (8 bytes): `a: u32 LE`, `b: u32 LE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DocPair {
    pub a: u32,
    pub b: u32,
}

impl Record for DocPair {
    const SIZE: usize = 8;
    const KIND: u32 = 2;
    const RADIX: bool = true;

    #[inline]
    fn radix(&self) -> u64 {
        (self.a as u64) << 32 | self.b as u64
    }

    #[inline]
    fn encode(&self, out: &mut [u8]) {
        LittleEndian::write_u32(&mut out[0..4], self.a);
        LittleEndian::write_u32(&mut out[4..8], self.b);
    }

    #[inline]
    fn decode(bytes: &[u8]) -> Self {
        DocPair {
            a: LittleEndian::read_u32(&bytes[0..4]),
            b: LittleEndian::read_u32(&bytes[4..8]),
        }
    }
}

/// A 64-bit value of a document, spooled in doc-id order (`Spool`: a batch's simhashes until
/// the method tables are written). Order: doc, then hash.
///
/// Encoding (12 bytes): `doc: u32 LE`, `hash: u64 LE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DocHash {
    pub doc: u32,
    pub hash: u64,
}

impl Record for DocHash {
    const SIZE: usize = 12;
    const KIND: u32 = 5;

    #[inline]
    fn encode(&self, out: &mut [u8]) {
        LittleEndian::write_u32(&mut out[0..4], self.doc);
        LittleEndian::write_u64(&mut out[4..12], self.hash);
    }

    #[inline]
    fn decode(bytes: &[u8]) -> Self {
        DocHash {
            doc: LittleEndian::read_u32(&bytes[0..4]),
            hash: LittleEndian::read_u64(&bytes[4..12]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keydoc_encoding_is_key_le_then_doc_le() {
        let mut buf = [0u8; 12];
        KeyDoc {
            key: 0x0102_0304_0506_0708,
            doc: 0x0A0B_0C0D,
        }
        .encode(&mut buf);
        assert_eq!(buf, [8, 7, 6, 5, 4, 3, 2, 1, 0x0D, 0x0C, 0x0B, 0x0A]);
        assert_eq!(
            KeyDoc::decode(&buf),
            KeyDoc {
                key: 0x0102_0304_0506_0708,
                doc: 0x0A0B_0C0D
            }
        );
    }

    #[test]
    fn probe_record_encoding_is_key_doc_segs_le() {
        let mut buf = [0u8; 16];
        let r = ProbeRecord {
            key: 0x0102_0304_0506_0708,
            doc: 0x0A0B_0C0D,
            segs: 0x8000_0003,
        };
        r.encode(&mut buf);
        assert_eq!(
            buf,
            [8, 7, 6, 5, 4, 3, 2, 1, 0x0D, 0x0C, 0x0B, 0x0A, 3, 0, 0, 0x80]
        );
        assert_eq!(ProbeRecord::decode(&buf), r);
        // Order: key, then doc, then segs.
        let at = |key, doc, segs| ProbeRecord { key, doc, segs };
        assert!(at(1, 9, 9) < at(256, 0, 0));
        assert!(at(5, 1, 9) < at(5, 2, 0));
        assert!(at(5, 1, 1) < at(5, 1, 2));
    }

    #[test]
    fn docpair_encoding_round_trips() {
        let mut buf = [0u8; 8];
        let p = DocPair { a: 7, b: u32::MAX };
        p.encode(&mut buf);
        assert_eq!(buf, [7, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(DocPair::decode(&buf), p);
    }

    #[test]
    fn order_is_field_order_not_memcmp() {
        // 256 encodes as [0, 1, ..] and 1 as [1, 0, ..]: memcmp would put 256 first.
        let small = KeyDoc { key: 1, doc: 9 };
        let big = KeyDoc { key: 256, doc: 0 };
        assert!(small < big);
        assert!(KeyDoc { key: 5, doc: 1 } < KeyDoc { key: 5, doc: 2 });
        assert!(DocPair { a: 1, b: 100 } < DocPair { a: 2, b: 0 });
    }
}
