//! Staged entries (format-spec/rocksdb.md, "Staged entries"): a batch of any size writes its
//! new documents' `docs`, `keys` and `digests` entries while it is read, in small unsynced
//! writes, instead of holding them for one write at the end. They name doc ids at or above the
//! published `meta/next_doc`, so every reader ignores them ([`Catalog::published`]) until the
//! batch's one synced publishing write moves `meta/next_doc` past them: the batch still
//! becomes visible all at once. What the writer needs to check the rest of the batch against
//! its earlier documents (keys seen, the batch's first document of a digest, the documents it
//! replaces) is kept under `meta` keys `stage/...`, private to the writer, removed by the
//! publishing write. A batch that fails or is killed leaves staged entries behind: the next
//! writer removes them ([`Catalog::discard_staged`]) before it changes anything.

use rocksdb::{IteratorMode, WriteOptions};

use super::records::{decode_u32, doc_key, encode_u32, parse_doc_key};
use super::{db_err, Catalog, CatalogBatch, DocRecord, CF_DIGESTS, CF_DOCS, CF_KEYS, CF_META};
use crate::error::Result;

/// Prefix of the writer's private scratch keys in `meta`; `STAGE_END` is the first key after.
pub const STAGE_PREFIX: &[u8] = b"stage/";
const STAGE_END: &[u8] = b"stage0";
/// `stage/k/` + key: a key seen in the batch (empty value).
const SEEN_KEY: &[u8] = b"stage/k/";
/// `stage/d/` + 16-byte digest: u32 LE, the batch's first document with the digest, when a
/// published document has it too (otherwise the staged `digests` entry says it).
const FIRST_DIGEST: &[u8] = b"stage/d/";
/// `stage/r/` + new doc id u32 BE: u32 LE, the published document it replaces.
const REPLACES: &[u8] = b"stage/r/";

/// Staged entries removed per write by [`Catalog::discard_staged`].
const DISCARD_CHUNK: usize = 4096;

fn cat(prefix: &[u8], rest: &[u8]) -> Vec<u8> {
    [prefix, rest].concat()
}

impl Catalog {
    /// Writes staged entries: unsynced (the publishing write's sync makes them durable, the
    /// WAL being sequential), visible to this writer's raw reads at once.
    pub fn write_staged(&self, batch: CatalogBatch<'_>) -> Result<()> {
        debug_assert!(batch.next_doc.is_none(), "staged writes never publish");
        self.db
            .write_opt(batch.wb, &WriteOptions::default())
            .map_err(|e| db_err(&self.path, e))
    }

    /// True when `key` was seen earlier in the batch being staged.
    pub fn staged_key_seen(&self, key: &str) -> Result<bool> {
        Ok(self.get(CF_META, &cat(SEEN_KEY, key.as_bytes()))?.is_some())
    }

    /// The batch's first document with `digest` (staged `digests` entry, or `stage/d/`).
    pub fn staged_first_digest(&self, digest: &[u8; 16]) -> Result<Option<u32>> {
        if let Some(v) = self.get(CF_DIGESTS, digest)? {
            let d = decode_u32("digests/..", &v)?;
            if d >= self.published() {
                return Ok(Some(d));
            }
        }
        self.get(CF_META, &cat(FIRST_DIGEST, digest))?
            .map(|v| decode_u32("meta/stage/d/..", &v))
            .transpose()
    }

    /// A staged document's record (raw read: ids at or above `meta/next_doc` included).
    pub fn staged_doc(&self, doc: u32) -> Result<Option<DocRecord>> {
        self.get(CF_DOCS, &doc_key(doc))?
            .map(|v| DocRecord::decode(doc, &v))
            .transpose()
    }

    /// The batch's replacements staged so far: (new doc, the published doc it replaces), in
    /// new-doc order.
    pub fn staged_replacements(&self) -> impl Iterator<Item = Result<(u32, u32)>> + '_ {
        self.db
            .iterator_cf(
                self.cf(CF_META),
                IteratorMode::From(REPLACES, rocksdb::Direction::Forward),
            )
            .map(move |item| item.map_err(|e| db_err(&self.path, e)))
            .take_while(|item| item.as_ref().map_or(true, |(k, _)| k.starts_with(REPLACES)))
            .map(|item| {
                let (k, v) = item?;
                let new = parse_doc_key(&k[REPLACES.len()..])?;
                Ok((new, decode_u32("meta/stage/r/..", &v)?))
            })
    }

    /// Removes what a batch that was never published staged: `docs` records at or above
    /// `meta/next_doc`, the `keys` and `digests` entries naming them, and the `stage/` scratch
    /// keys. Idempotent; a writer calls it before it changes anything. Returns the number of
    /// staged documents removed.
    pub fn discard_staged(&self) -> Result<u64> {
        let next = self.next_doc()?;
        self.published
            .store(next, std::sync::atomic::Ordering::SeqCst);
        let mut removed = 0u64;
        let mut from = next;
        loop {
            let mut wb = self.batch_writer();
            let mut n = 0;
            let start = doc_key(from);
            let it = self.db.iterator_cf(
                self.cf(CF_DOCS),
                IteratorMode::From(&start[..], rocksdb::Direction::Forward),
            );
            for item in it.take(DISCARD_CHUNK) {
                let (k, v) = item.map_err(|e| db_err(&self.path, e))?;
                let d = parse_doc_key(&k)?;
                from = d.saturating_add(1);
                // A record that does not decode still goes; its key and digest cannot be named.
                if let Ok(rec) = DocRecord::decode(d, &v) {
                    if self.raw_u32(CF_KEYS, rec.key.as_bytes())? == Some(d) {
                        wb.wb.delete_cf(self.cf(CF_KEYS), rec.key.as_bytes());
                    }
                    if self.raw_u32(CF_DIGESTS, &rec.digest)? == Some(d) {
                        wb.wb.delete_cf(self.cf(CF_DIGESTS), rec.digest);
                    }
                }
                wb.wb.delete_cf(self.cf(CF_DOCS), doc_key(d));
                n += 1;
            }
            if n == 0 {
                break;
            }
            removed += n as u64;
            self.write_staged(wb)?;
        }
        let scratch = self.meta_prefix(STAGE_PREFIX).next().transpose()?.is_some();
        if removed > 0 || scratch {
            let mut wb = self.batch_writer();
            wb.clear_stage();
            self.commit(wb)?; // synced: the removals above with it
        }
        Ok(removed)
    }

    fn raw_u32(&self, cf: &str, key: &[u8]) -> Result<Option<u32>> {
        self.get(cf, key)?.map(|v| decode_u32(cf, &v)).transpose()
    }
}

impl CatalogBatch<'_> {
    /// Notes `key` as seen in the batch being staged.
    pub fn stage_key_seen(&mut self, key: &str) {
        self.wb
            .put_cf(self.cat.cf(CF_META), cat(SEEN_KEY, key.as_bytes()), []);
    }
    /// Notes `doc` as the batch's first document with `digest`, which a published document
    /// has too.
    pub fn stage_first_digest(&mut self, digest: &[u8; 16], doc: u32) {
        self.wb.put_cf(
            self.cat.cf(CF_META),
            cat(FIRST_DIGEST, digest),
            encode_u32(doc),
        );
    }
    /// Notes that new document `new` replaces published document `old`.
    pub fn stage_replacement(&mut self, new: u32, old: u32) {
        self.wb.put_cf(
            self.cat.cf(CF_META),
            cat(REPLACES, &doc_key(new)),
            encode_u32(old),
        );
    }
    /// Removes every `stage/` scratch key (in the publishing write).
    pub fn clear_stage(&mut self) {
        self.wb
            .delete_range_cf(self.cat.cf(CF_META), STAGE_PREFIX, STAGE_END);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Access;

    /// The `meta/stage/` scratch keys byte for byte as format-spec/rocksdb.md's table says, and
    /// gone after a publishing write (`clear_stage`) or a discard.
    #[test]
    fn stage_keys_golden_bytes_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path(), Access::ReadWrite).unwrap();
        let mut wb = cat.batch_writer();
        wb.stage_key_seen("a/b.html");
        wb.stage_first_digest(&[0xAB; 16], 258);
        wb.stage_replacement(0x0102_0304, 7);
        cat.write_staged(wb).unwrap();
        let raw: Vec<(Vec<u8>, Vec<u8>)> = cat
            .meta_prefix(STAGE_PREFIX)
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        let digest_key = [b"stage/d/".as_slice(), &[0xAB; 16]].concat();
        assert_eq!(
            raw,
            vec![
                (digest_key, vec![2, 1, 0, 0]),
                (b"stage/k/a/b.html".to_vec(), vec![]),
                (b"stage/r/\x01\x02\x03\x04".to_vec(), vec![7, 0, 0, 0]),
            ]
        );
        assert!(cat.staged_key_seen("a/b.html").unwrap());
        assert_eq!(cat.staged_first_digest(&[0xAB; 16]).unwrap(), Some(258));
        let reps: Vec<(u32, u32)> = cat.staged_replacements().map(|r| r.unwrap()).collect();
        assert_eq!(reps, vec![(0x0102_0304, 7)]);
        let mut wb = cat.batch_writer();
        wb.clear_stage();
        cat.commit(wb).unwrap();
        assert!(cat.meta_prefix(STAGE_PREFIX).next().is_none());
        assert!(!cat.staged_key_seen("a/b.html").unwrap());
    }
}
