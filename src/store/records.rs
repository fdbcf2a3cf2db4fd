//! Binary codecs for the values the catalog keeps in RocksDB (see format-spec/rocksdb.md).
//!
//! Document records are read on every query answer and every pair, so they are a fixed
//! little-endian header followed by the key bytes, not JSON.

use byteorder::{ByteOrder, LittleEndian as LE};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The catalog's record of one document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocRecord {
    /// The document's key (relative path, URI, JSONL id).
    pub key: String,
    /// Id of the batch that added it.
    pub batch: u32,
    /// Canonical words.
    pub words: u32,
    /// Distinct shingles before sampling.
    pub shingles: u32,
    /// Stored features (the sampled shingle set); |A| in resemblance.
    pub features: u32,
    /// 64-bit Charikar simhash.
    pub simhash: u64,
    /// Exact-duplicate digest of the canonical text.
    pub digest: [u8; 16],
    /// Size of the raw input document in bytes.
    pub bytes: u64,
    /// The document's URL, when its container named one (WARC-Target-URI, TREC DOCHDR, ARC).
    pub url: Option<String>,
}

/// Version byte of the document record encoding without a URL (and of every record written
/// before URLs were kept).
pub const DOC_RECORD_VERSION: u8 = 1;
/// Version byte of a record with a URL: version 1's layout followed by the URL.
pub const DOC_RECORD_VERSION_URL: u8 = 2;
/// Size of the fixed part of a document record, before the key bytes.
pub const DOC_RECORD_HEADER: usize = 1 + 4 + 4 + 4 + 4 + 8 + 16 + 8 + 4;

impl DocRecord {
    /// The record of a document of batch `batch` with fingerprint `fp`, whose raw input was
    /// `bytes` long: what ingest, add and a staged part store alike.
    pub fn new(
        key: String,
        batch: u32,
        fp: &crate::fingerprint::Fingerprint,
        bytes: u64,
        url: Option<String>,
    ) -> DocRecord {
        DocRecord {
            key,
            batch,
            words: fp.words,
            shingles: fp.shingles,
            features: fp.features.len() as u32,
            simhash: fp.simhash,
            digest: fp.digest,
            bytes,
            url,
        }
    }

    /// Encodes as in format-spec/rocksdb.md, "docs".
    pub fn encode(&self) -> Vec<u8> {
        let url_part = self.url.as_ref().map_or(0, |u| 4 + u.len());
        let mut out = vec![0u8; DOC_RECORD_HEADER + self.key.len() + url_part];
        out[0] = if self.url.is_some() {
            DOC_RECORD_VERSION_URL
        } else {
            DOC_RECORD_VERSION
        };
        LE::write_u32(&mut out[1..5], self.batch);
        LE::write_u32(&mut out[5..9], self.words);
        LE::write_u32(&mut out[9..13], self.shingles);
        LE::write_u32(&mut out[13..17], self.features);
        LE::write_u64(&mut out[17..25], self.simhash);
        out[25..41].copy_from_slice(&self.digest);
        LE::write_u64(&mut out[41..49], self.bytes);
        LE::write_u32(&mut out[49..53], self.key.len() as u32);
        let key_end = DOC_RECORD_HEADER + self.key.len();
        out[DOC_RECORD_HEADER..key_end].copy_from_slice(self.key.as_bytes());
        if let Some(u) = &self.url {
            LE::write_u32(&mut out[key_end..key_end + 4], u.len() as u32);
            out[key_end + 4..].copy_from_slice(u.as_bytes());
        }
        debug_assert_eq!(out.len(), key_end + url_part);
        out
    }

    /// Decodes a record; `doc` only names the entry in errors.
    pub fn decode(doc: u32, b: &[u8]) -> Result<Self> {
        let bad = |reason: &str| Error::CorruptEntry {
            what: format!("docs/{doc}"),
            reason: reason.into(),
        };
        if b.len() < DOC_RECORD_HEADER {
            return Err(bad("record shorter than its header"));
        }
        if b[0] != DOC_RECORD_VERSION && b[0] != DOC_RECORD_VERSION_URL {
            return Err(bad(&format!("unknown record version {}", b[0])));
        }
        let key_len = LE::read_u32(&b[49..53]) as usize;
        let key_end = DOC_RECORD_HEADER.saturating_add(key_len);
        let url = if b[0] == DOC_RECORD_VERSION {
            if b.len() != key_end {
                return Err(bad("key length does not match record length"));
            }
            None
        } else {
            if b.len() < key_end.saturating_add(4) {
                return Err(bad("key length does not match record length"));
            }
            let url_len = LE::read_u32(&b[key_end..key_end + 4]) as usize;
            if b.len() != key_end + 4 + url_len {
                return Err(bad("URL length does not match record length"));
            }
            Some(
                std::str::from_utf8(&b[key_end + 4..])
                    .map_err(|_| bad("URL is not UTF-8"))?
                    .to_owned(),
            )
        };
        let key = std::str::from_utf8(&b[DOC_RECORD_HEADER..key_end])
            .map_err(|_| bad("key is not UTF-8"))?
            .to_owned();
        let mut digest = [0u8; 16];
        digest.copy_from_slice(&b[25..41]);
        Ok(DocRecord {
            key,
            batch: LE::read_u32(&b[1..5]),
            words: LE::read_u32(&b[5..9]),
            shingles: LE::read_u32(&b[9..13]),
            features: LE::read_u32(&b[13..17]),
            simhash: LE::read_u64(&b[17..25]),
            digest,
            bytes: LE::read_u64(&b[41..49]),
            url,
        })
    }
}

impl DocRecord {
    /// The document's site under `rule` (its URL's host, a URL key's host, or the rule on
    /// the key; `input::site`).
    pub fn site(&self, rule: crate::input::site::SiteRule) -> String {
        rule.site(&self.key, self.url.as_deref())
    }
}

/// Doc ids as RocksDB keys: big-endian, so iteration order is id order.
pub fn doc_key(doc: u32) -> [u8; 4] {
    doc.to_be_bytes()
}

/// Inverse of [`doc_key`].
pub fn parse_doc_key(b: &[u8]) -> Result<u32> {
    <[u8; 4]>::try_from(b)
        .map(u32::from_be_bytes)
        .map_err(|_| Error::CorruptEntry {
            what: "doc id key".into(),
            reason: format!("{} bytes, expected 4", b.len()),
        })
}

/// A u32 value (doc id, cluster id) stored little-endian.
pub fn encode_u32(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

/// Inverse of [`encode_u32`]; `what` names the entry in errors.
pub fn decode_u32(what: &str, b: &[u8]) -> Result<u32> {
    <[u8; 4]>::try_from(b)
        .map(u32::from_le_bytes)
        .map_err(|_| Error::CorruptEntry {
            what: what.into(),
            reason: format!("{} bytes, expected 4", b.len()),
        })
}

// ---- stored pairs (format-spec/rocksdb.md, "`pairs`: stored pairs"; store::pairs) ----

/// What the stored pairs are complete for (`meta/pairs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairsMarker {
    /// The method whose pairs are stored (`shingle`).
    pub method: String,
    /// Every pair with resemblance at or above this threshold (the index's cluster
    /// threshold, as `meta/options.cluster_threshold` spells it) is stored.
    pub threshold: String,
    /// The sampling the resemblances are computed under (`meta/options.sample`).
    pub sample: String,
}

/// One stored pair: `a < b`, resemblance `inter / denom`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredPair {
    pub a: u32,
    pub b: u32,
    pub inter: u64,
    pub denom: u64,
}

impl StoredPair {
    /// The resemblance as the matching computes it (`fingerprint::sample::Overlap`).
    pub fn resemblance(&self) -> f64 {
        if self.denom == 0 {
            0.0
        } else {
            self.inter as f64 / self.denom as f64
        }
    }
}

/// The key of pair `(a, b)`: a BE, b BE.
pub fn pair_key(a: u32, b: u32) -> [u8; 8] {
    let mut k = [0u8; 8];
    k[..4].copy_from_slice(&a.to_be_bytes());
    k[4..].copy_from_slice(&b.to_be_bytes());
    k
}

/// The value of a pair: LEB128 `inter` then LEB128 `denom`.
pub fn encode_pair_value(inter: u64, denom: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(6);
    for mut x in [inter, denom] {
        loop {
            let byte = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                v.push(byte);
                break;
            }
            v.push(byte | 0x80);
        }
    }
    v
}

/// Decodes one stored entry; anything but an 8-byte key with `a < b` and a value of exactly
/// two varints with `inter <= denom` is corrupt.
pub fn decode_pair(k: &[u8], v: &[u8]) -> Result<StoredPair> {
    let bad = |reason: String| Error::CorruptEntry {
        what: format!("pairs/{}", hex(k)),
        reason,
    };
    if k.len() != 8 {
        return Err(bad(format!("key of {} bytes (8 expected)", k.len())));
    }
    let a = parse_doc_key(&k[..4])?;
    let b = parse_doc_key(&k[4..])?;
    if a >= b {
        return Err(bad(format!("pair ({a}, {b}) not ordered older < younger")));
    }
    let mut pos = 0;
    // Canonical LEB128 only (no overlong forms: a last byte of 0 after the first, nor bits
    // beyond 64), so a value that decodes re-encodes to the same bytes.
    let mut next = || -> Option<u64> {
        let mut x = 0u64;
        for (i, shift) in (0..64).step_by(7).enumerate() {
            let byte = *v.get(pos)?;
            pos += 1;
            let part = u64::from(byte & 0x7f);
            if (shift == 63 && part > 1) || (i > 0 && byte == 0) {
                return None;
            }
            x |= part << shift;
            if byte & 0x80 == 0 {
                return Some(x);
            }
        }
        None
    };
    let (inter, denom) = match (next(), next()) {
        (Some(i), Some(d)) => (i, d),
        _ => return Err(bad("truncated or overlong value".into())),
    };
    if pos != v.len() {
        return Err(bad(format!("{} trailing bytes", v.len() - pos)));
    }
    if inter > denom || denom == 0 {
        return Err(bad(format!("resemblance {inter}/{denom} out of range")));
    }
    Ok(StoredPair { a, b, inter, denom })
}

fn hex(k: &[u8]) -> String {
    k.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DocRecord {
        DocRecord {
            key: "docs/a/b.html".into(),
            batch: 3,
            words: 1200,
            shingles: 1100,
            features: 1100,
            simhash: 0xdead_beef_0123_4567,
            digest: [7; 16],
            bytes: 65_000,
            url: None,
        }
    }

    #[test]
    fn doc_record_with_url_round_trip_and_golden_bytes() {
        let r = DocRecord {
            url: Some("http://www.x.org/a b".into()),
            ..sample()
        };
        let enc = r.encode();
        assert_eq!(enc[0], 2);
        // Version 1's layout, then the URL's length and bytes.
        assert_eq!(&enc[1..53], &sample().encode()[1..53]);
        assert_eq!(&enc[53..66], b"docs/a/b.html");
        assert_eq!(&enc[66..70], &20u32.to_le_bytes());
        assert_eq!(&enc[70..], b"http://www.x.org/a b");
        assert_eq!(DocRecord::decode(1, &enc).unwrap(), r);
        // Corruption: any cut, a wrong URL length, a URL that is not UTF-8.
        for n in 0..enc.len() {
            assert!(DocRecord::decode(1, &enc[..n]).is_err(), "cut at {n}");
        }
        let mut v = enc.clone();
        v[66] = 21;
        assert!(DocRecord::decode(1, &v).is_err());
        let mut v = enc;
        let n = v.len();
        v[n - 1] = 0xff;
        assert!(DocRecord::decode(1, &v).is_err());
    }

    #[test]
    fn doc_record_round_trip() {
        let r = sample();
        let enc = r.encode();
        assert_eq!(enc.len(), DOC_RECORD_HEADER + r.key.len());
        assert_eq!(DocRecord::decode(1, &enc).unwrap(), r);
    }

    #[test]
    fn doc_record_golden_bytes() {
        // The layout of format-spec/rocksdb.md, "docs": any drift breaks this test.
        let enc = sample().encode();
        assert_eq!(enc[0], 1);
        assert_eq!(&enc[1..5], &[3, 0, 0, 0]);
        assert_eq!(&enc[5..9], &1200u32.to_le_bytes());
        assert_eq!(&enc[17..25], &0xdead_beef_0123_4567u64.to_le_bytes());
        assert_eq!(&enc[49..53], &13u32.to_le_bytes());
        assert_eq!(&enc[53..], b"docs/a/b.html");
    }

    #[test]
    fn doc_record_corruption_detected() {
        let enc = sample().encode();
        assert!(DocRecord::decode(1, &enc[..enc.len() - 1]).is_err());
        assert!(DocRecord::decode(1, &enc[..10]).is_err());
        let mut v = enc.clone();
        v[0] = 9;
        assert!(DocRecord::decode(1, &v).is_err());
        let mut v = enc.clone();
        v[49] = 200;
        assert!(DocRecord::decode(1, &v).is_err());
        let mut v = enc;
        let n = v.len();
        v[n - 1] = 0xff;
        assert!(DocRecord::decode(1, &v).is_err());
    }

    #[test]
    fn doc_keys_sort_by_id() {
        assert!(doc_key(1) < doc_key(256));
        assert_eq!(parse_doc_key(&doc_key(77)).unwrap(), 77);
        assert!(parse_doc_key(&[1, 2]).is_err());
        assert!(decode_u32("x", &[1]).is_err());
    }
}

/// The record of a batch kept in the catalog (`batches/id/N`, JSON; format-spec/rocksdb.md).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BatchRecord {
    pub name: String,
    pub created_unix: u64,
    pub doc_lo: u32,
    pub doc_hi: u32,
    pub added: u64,
    pub replaced: u64,
    pub unchanged: u64,
    pub errors: u64,
    pub segment: Option<String>,
}
