//! The delta: documents added online (`ndd-index add`) that no segment holds yet.
//!
//! Column family `delta` maps a doc id (u32 BE) to everything a segment would hold for the
//! document: its sorted feature list (FORWARD, and POSTINGS by inversion) and the method data
//! the index options ask for (simhash, supershingles, 384-bit simhash, I-Match signature).
//! Readers turn the delta into one in-memory segment (`view`), so every query path sees delta
//! documents exactly as segment documents; folding writes the same bytes into a real segment
//! and removes the entries in the publishing write (format-spec/rocksdb.md, "delta").

use rocksdb::IteratorMode;

use super::records::{doc_key, parse_doc_key};
use super::{db_err, Catalog, CatalogBatch};
use crate::error::{Error, Result};

pub const CF_DELTA: &str = "delta";

/// Version byte of a delta value.
pub const DELTA_VERSION: u8 = 1;
const FLAG_WORDS: u8 = 1;
const FLAG_SIM384: u8 = 2;

/// One delta document (value of `delta/<doc>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeltaDoc {
    /// The document has words (documents without words are in no method table).
    pub has_words: bool,
    pub simhash: u64,
    /// Sorted unique features (the FORWARD list).
    pub features: Vec<u64>,
    /// Supershingles (dsc-ss), when the index stores them.
    pub supers: Vec<u64>,
    pub sim384: Option<[u64; 6]>,
    /// I-Match signatures (0 or 1), computed at add time against the catalog's lexicon.
    pub imatch: Vec<u64>,
}

impl DeltaDoc {
    /// Bytes: version u8, flags u8, simhash u64, then three u32-counted u64 lists (features,
    /// supershingles, I-Match signatures), then 6 x u64 when flag SIM384; all little endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(
            22 + 8 * (self.features.len() + self.supers.len() + self.imatch.len()) + 48,
        );
        v.push(DELTA_VERSION);
        let mut flags = 0;
        if self.has_words {
            flags |= FLAG_WORDS;
        }
        if self.sim384.is_some() {
            flags |= FLAG_SIM384;
        }
        v.push(flags);
        v.extend_from_slice(&self.simhash.to_le_bytes());
        for list in [&self.features, &self.supers, &self.imatch] {
            v.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for x in list.iter() {
                v.extend_from_slice(&x.to_le_bytes());
            }
        }
        if let Some(s) = &self.sim384 {
            for x in s {
                v.extend_from_slice(&x.to_le_bytes());
            }
        }
        v
    }

    pub fn decode(doc: u32, b: &[u8]) -> Result<DeltaDoc> {
        let bad = |reason: String| Error::CorruptEntry {
            what: format!("delta/{doc}"),
            reason,
        };
        let mut r = Reader { b, pos: 0 };
        let version = r.u8().ok_or_else(|| bad("empty value".into()))?;
        if version != DELTA_VERSION {
            return Err(bad(format!("unknown version {version}")));
        }
        let flags = r.u8().ok_or_else(|| bad("truncated flags".into()))?;
        if flags & !(FLAG_WORDS | FLAG_SIM384) != 0 {
            return Err(bad(format!("unknown flags {flags:#x}")));
        }
        let simhash = r.u64().ok_or_else(|| bad("truncated simhash".into()))?;
        let mut lists: [Vec<u64>; 3] = Default::default();
        for l in lists.iter_mut() {
            let n = r.u32().ok_or_else(|| bad("truncated list length".into()))? as usize;
            if n > (b.len() - r.pos) / 8 {
                return Err(bad(format!("list of {n} values overruns the value")));
            }
            l.extend((0..n).map(|_| r.u64().expect("length checked above")));
        }
        let sim384 = if flags & FLAG_SIM384 != 0 {
            let mut s = [0u64; 6];
            for x in s.iter_mut() {
                *x = r.u64().ok_or_else(|| bad("truncated sim384".into()))?;
            }
            Some(s)
        } else {
            None
        };
        if r.pos != b.len() {
            return Err(bad(format!("{} trailing bytes", b.len() - r.pos)));
        }
        let [features, supers, imatch] = lists;
        if features.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("features not sorted and unique".into()));
        }
        Ok(DeltaDoc {
            has_words: flags & FLAG_WORDS != 0,
            simhash,
            features,
            supers,
            sim384,
            imatch,
        })
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let s = self.b.get(self.pos..self.pos + N)?;
        self.pos += N;
        s.try_into().ok()
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take::<8>().map(u64::from_le_bytes)
    }
}

impl Catalog {
    /// Every delta document in doc id order. An index from before the delta (opened read-only,
    /// so the column family was not created) has none.
    pub fn delta_docs(&self) -> Result<Vec<(u32, DeltaDoc)>> {
        let Some(cf) = self.db.cf_handle(CF_DELTA) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in self.db.iterator_cf(cf, IteratorMode::Start) {
            let (k, v) = item.map_err(|e| db_err(&self.path, e))?;
            let doc = parse_doc_key(&k)?;
            out.push((doc, DeltaDoc::decode(doc, &v)?));
        }
        Ok(out)
    }

    /// The delta documents with `lo <= doc < hi`, in doc id order (one range scan: merging
    /// a few of the snapshot's delta pieces reads only their documents).
    pub fn delta_docs_in(&self, lo: u32, hi: u32) -> Result<Vec<(u32, DeltaDoc)>> {
        let Some(cf) = self.db.cf_handle(CF_DELTA) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let from = doc_key(lo);
        let mode = IteratorMode::From(&from, rocksdb::Direction::Forward);
        for item in self.db.iterator_cf(cf, mode) {
            let (k, v) = item.map_err(|e| db_err(&self.path, e))?;
            let doc = parse_doc_key(&k)?;
            if doc >= hi {
                break;
            }
            out.push((doc, DeltaDoc::decode(doc, &v)?));
        }
        Ok(out)
    }

    /// Doc ids in the delta, without decoding the values.
    pub fn delta_ids(&self) -> Result<Vec<u32>> {
        let Some(cf) = self.db.cf_handle(CF_DELTA) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in self.db.iterator_cf(cf, IteratorMode::Start) {
            let (k, _) = item.map_err(|e| db_err(&self.path, e))?;
            out.push(parse_doc_key(&k)?);
        }
        Ok(out)
    }
}

impl CatalogBatch<'_> {
    pub fn put_delta(&mut self, doc: u32, d: &DeltaDoc) {
        self.wb
            .put_cf(self.cat.cf(CF_DELTA), doc_key(doc), d.encode());
    }
    pub fn delete_delta(&mut self, doc: u32) {
        self.wb.delete_cf(self.cat.cf(CF_DELTA), doc_key(doc));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_values_round_trip_and_reject_damage() {
        let d = DeltaDoc {
            has_words: true,
            simhash: 0xdead_beef,
            features: vec![1, 5, 9],
            supers: vec![7, 3],
            sim384: Some([1, 2, 3, 4, 5, 6]),
            imatch: vec![42],
        };
        let b = d.encode();
        assert_eq!(b.len(), 2 + 8 + 4 + 24 + 4 + 16 + 4 + 8 + 48);
        assert_eq!(DeltaDoc::decode(3, &b).unwrap(), d);
        let plain = DeltaDoc::default();
        assert_eq!(DeltaDoc::decode(0, &plain.encode()).unwrap(), plain);
        assert!(DeltaDoc::decode(3, &b[..b.len() - 1]).is_err());
        let mut v = b.clone();
        v[0] = 9;
        assert!(DeltaDoc::decode(3, &v).is_err());
        let mut v = b.clone();
        v.push(0);
        assert!(DeltaDoc::decode(3, &v).is_err());
        let mut v = b;
        v[10] = 0xff; // feature count far beyond the value
        assert!(DeltaDoc::decode(3, &v).is_err());
    }
}
