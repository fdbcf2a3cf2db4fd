//! The stored pairs (format-spec/rocksdb.md, "`pairs`: stored pairs"): every pair at or above
//! the index's cluster threshold that a batch's matching found, kept so that `pairs` at a
//! threshold at least that high is answered by one scan of this column family instead of a
//! self-join of the whole index.
//!
//! Column family `pairs` maps `older doc id (u32 BE) ++ younger doc id (u32 BE)` to the two
//! integers the resemblance is computed from, `inter` and `denom` (LEB128 varints, in that
//! order): the resemblance printed is `inter as f64 / denom as f64`, the very bits the matching
//! computes, and a threshold `t` keeps the pair when `inter / denom >= t` in integers
//! (`Threshold::admits`), as the matching decides. Key order is the order `pairs` prints.
//!
//! The table is trusted only while `meta/pairs` (the marker, JSON [`PairsMarker`]) is there:
//! written when the index is created (without `--max-df`), it says "every pair at or above
//! `threshold` under `sample` among the documents published since creation is stored". A
//! write that publishes new documents without putting their pairs
//! ([`CatalogBatch::keep_pairs`] not called) deletes the marker in that same atomic write
//! ([`super::Catalog::commit`]), so from then on `pairs` falls back to matching. Deletions
//! and replacements leave the table as it is: a reader skips pairs naming a tombstoned
//! document (a deletion never creates a pair, and tombstones are never lifted).

use rocksdb::IteratorMode;

pub use super::records::{decode_pair, encode_pair_value, pair_key, PairsMarker, StoredPair};
use super::{db_err, Catalog, CatalogBatch, CF_META};
use crate::error::Result;

pub const CF_PAIRS: &str = "pairs";
/// `meta` key of the marker.
pub const META_PAIRS: &[u8] = b"pairs";

impl Catalog {
    /// The marker, if the stored pairs are complete (see the module doc).
    pub fn pairs_marker(&self) -> Result<Option<PairsMarker>> {
        self.meta_json(META_PAIRS)
    }

    /// The stored pairs in key order (older id, then younger), raw: tombstoned and staged
    /// documents included. Empty for an index written before the table existed.
    pub fn iter_pairs(&self) -> impl Iterator<Item = Result<StoredPair>> + '_ {
        self.db
            .cf_handle(CF_PAIRS)
            .map(|cf| self.db.iterator_cf(cf, IteratorMode::Start))
            .into_iter()
            .flatten()
            .map(move |item| {
                let (k, v) = item.map_err(|e| db_err(&self.path, e))?;
                decode_pair(&k, &v)
            })
    }

    /// Every raw entry of `pairs` (for `verify`), undecoded.
    pub fn iter_pairs_raw(&self) -> impl Iterator<Item = Result<super::RawEntry>> + '_ {
        self.db
            .cf_handle(CF_PAIRS)
            .map(|cf| self.db.iterator_cf(cf, IteratorMode::Start))
            .into_iter()
            .flatten()
            .map(move |item| item.map_err(|e| db_err(&self.path, e)))
    }
}

impl CatalogBatch<'_> {
    /// Puts one pair (`a < b`).
    pub fn put_pair(&mut self, a: u32, b: u32, inter: u64, denom: u64) {
        debug_assert!(a < b);
        self.wb.put_cf(
            self.cat.cf(CF_PAIRS),
            pair_key(a, b),
            encode_pair_value(inter, denom),
        );
    }

    /// Declares that this write holds every stored pair of the documents it publishes, so
    /// [`Catalog::commit`] keeps the marker.
    pub fn keep_pairs(&mut self) {
        self.pairs_kept = true;
    }

    /// Puts the marker (a new, empty index).
    pub fn put_pairs_marker(&mut self, m: &PairsMarker) {
        self.put_meta_json(META_PAIRS, m);
    }

    /// Deletes the marker: `pairs` falls back to matching from now on.
    pub fn clear_pairs_marker(&mut self) {
        self.wb.delete_cf(self.cat.cf(CF_META), META_PAIRS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_round_trip_and_golden_bytes() {
        assert_eq!(encode_pair_value(4, 5), vec![4, 5]);
        assert_eq!(encode_pair_value(300, 301), vec![0xac, 0x02, 0xad, 0x02]);
        assert_eq!(pair_key(1, 258), [0, 0, 0, 1, 0, 0, 1, 2]);
        let p = decode_pair(&pair_key(1, 258), &[0xac, 0x02, 0xad, 0x02]).unwrap();
        assert_eq!((p.a, p.b, p.inter, p.denom), (1, 258, 300, 301));
        for (i, d) in [(1u64, 1u64), (127, 128), (1 << 20, 1 << 33)] {
            let v = encode_pair_value(i, d);
            let p = decode_pair(&pair_key(0, 1), &v).unwrap();
            assert_eq!((p.inter, p.denom), (i, d));
        }
        // Corrupt: trailing bytes, truncation, unordered key, inter > denom, short key.
        assert!(decode_pair(&pair_key(0, 1), &[4, 5, 0]).is_err());
        assert!(decode_pair(&pair_key(0, 1), &[4]).is_err());
        assert!(decode_pair(&pair_key(0, 1), &[0x84]).is_err());
        assert!(decode_pair(&pair_key(2, 1), &[4, 5]).is_err());
        assert!(decode_pair(&pair_key(1, 1), &[4, 5]).is_err());
        assert!(decode_pair(&pair_key(0, 1), &[6, 5]).is_err());
        assert!(decode_pair(&pair_key(0, 1), &[0, 0]).is_err());
        assert!(decode_pair(&[0, 0, 0, 1], &[4, 5]).is_err());
        // Overlong varints (a zero last byte after the first; bits past 64) are corrupt.
        assert!(decode_pair(&pair_key(0, 1), &[0x84, 0x00, 5]).is_err());
        let mut big = vec![0xff; 9];
        big.push(0x02);
        big.push(1);
        assert!(decode_pair(&pair_key(0, 1), &big).is_err());
        let max = encode_pair_value(u64::MAX, u64::MAX);
        assert_eq!(max.len(), 20);
        assert_eq!(decode_pair(&pair_key(0, 1), &max).unwrap().denom, u64::MAX);
    }
}
