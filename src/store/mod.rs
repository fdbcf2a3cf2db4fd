//! The mutable half of the index, kept in RocksDB: document catalog, key and digest lookups,
//! batches, clusters, tombstones, options and the manifest of live segments.
//!
//! Every change of an operation goes into one [`CatalogBatch`] written with `sync`, so it is
//! atomic and durable: RocksDB is our write-ahead log (format-spec/rocksdb.md).

pub mod delta;
pub mod manifest;
pub mod pairs;
pub mod records;
#[cfg(test)]
mod spec_tests;
pub mod staged;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, IteratorMode, Options, WriteBatch, WriteOptions, DB,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
pub use manifest::{Manifest, SegmentEntry};
pub use records::DocRecord;
use records::{decode_u32, doc_key, encode_u32, parse_doc_key};

/// An undecoded (key, value) of a column family.
pub type RawEntry = (Box<[u8]>, Box<[u8]>);

/// Column families, in the order they are opened.
pub const CF_META: &str = "meta";
pub const CF_DOCS: &str = "docs";
pub const CF_KEYS: &str = "keys";
pub const CF_DIGESTS: &str = "digests";
pub const CF_BATCHES: &str = "batches";
pub const CF_CLUSTERS: &str = "clusters";
pub const CF_MEMBERS: &str = "members";
pub const CF_TOMBSTONES: &str = "tombstones";
pub use delta::CF_DELTA;
pub use pairs::CF_PAIRS;
const ALL_CFS: [&str; 10] = [
    CF_META,
    CF_DOCS,
    CF_KEYS,
    CF_DIGESTS,
    CF_BATCHES,
    CF_CLUSTERS,
    CF_MEMBERS,
    CF_TOMBSTONES,
    CF_DELTA,
    CF_PAIRS,
];

/// Attempts of a read-only open that races with the writer's RocksDB compaction.
const READ_ONLY_OPEN_RETRIES: u32 = 6;

/// Keys of the `meta` column family.
pub const META_OPTIONS: &[u8] = b"options";
pub const META_MANIFEST: &[u8] = b"manifest";
pub const META_NEXT_DOC: &[u8] = b"next_doc";
/// The catalog's format version (format-spec/rocksdb.md, "Version history"): 4 bytes, u32 LE.
pub const META_FORMAT: &[u8] = b"format";
/// The catalog format this build writes and the newest it reads.
pub const CATALOG_FORMAT: u32 = 5;

/// How to open the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A reader: never writes, may run while a writer works.
    ReadOnly,
    /// The single writer (the caller holds the index lock).
    ReadWrite,
}

/// The RocksDB database of an index.
pub struct Catalog {
    db: DB,
    path: PathBuf,
    access: Access,
    /// `meta/next_doc` as last read or committed: `docs`, `keys` and `digests` entries at or
    /// above it are staged by a batch not yet published, and invisible (rocksdb.md, "Staged
    /// entries").
    published: AtomicU32,
}

/// RocksDB's memtables of all column families together (`db_write_buffer_size`).
pub const MEMTABLE_BUDGET: usize = 64 << 20;
/// RocksDB's block cache, shared by all column families.
pub const BLOCK_CACHE: usize = 32 << 20;

/// Memtable bytes above which a writer flushes them when it closes ([`Catalog`]'s `Drop`).
const FLUSH_AT_CLOSE: u64 = 8 << 20;

impl Drop for Catalog {
    /// A reader's open replays the write-ahead log into memory: after a large ingest that is the
    /// whole catalog (a 1M-document ingest leaves a 219 MB log: 5 s of CPU and 700 MB of heap
    /// at every `runs`, `query`, `stats`). So a writer that closes with more than a few MiB in
    /// its memtables writes them out as table files first. Failure only keeps the log.
    fn drop(&mut self) {
        if self.access != Access::ReadWrite {
            return;
        }
        let cfs: Vec<&ColumnFamily> = ALL_CFS
            .iter()
            .filter_map(|n| self.db.cf_handle(n))
            .collect();
        let held: u64 = cfs
            .iter()
            .filter_map(|cf| {
                self.db
                    .property_int_value_cf(*cf, "rocksdb.cur-size-all-mem-tables")
                    .ok()
                    .flatten()
            })
            .sum();
        if held > FLUSH_AT_CLOSE {
            let _ = self
                .db
                .flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default());
        }
    }
}

impl Catalog {
    /// Opens (creating when `ReadWrite`) the catalog at `path`.
    pub fn open(path: &Path, access: Access) -> Result<Self> {
        let mut opts = Options::default();
        opts.create_if_missing(access == Access::ReadWrite);
        opts.create_missing_column_families(access == Access::ReadWrite);
        opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        opts.set_keep_log_file_num(4);
        // RocksDB opens each column family's table files on up to 16 threads of their own,
        // started and joined at every open: 150 thread starts for our 10 column families,
        // each holding a handful of files. One (the opening thread) is enough.
        opts.set_max_file_opening_threads(1);
        // A batch's records are staged into the memtables while it is read (staged.rs): all
        // column families' memtables together stay under this, so the catalog's share of an
        // ingest's heap does not grow with the batch.
        opts.set_db_write_buffer_size(MEMTABLE_BUDGET);
        // One block cache for every column family (RocksDB's default is one of 32 MiB per
        // column family, which a large ingest's lookups fill one after the other).
        let cache = rocksdb::Cache::new_lru_cache(BLOCK_CACHE);
        let cf_opts = || {
            let mut table = rocksdb::BlockBasedOptions::default();
            table.set_block_cache(&cache);
            let mut o = Options::default();
            o.set_block_based_table_factory(&table);
            o
        };
        let cfs = ALL_CFS
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(*n, cf_opts()));
        let db = match access {
            Access::ReadWrite => {
                DB::open_cf_descriptors(&opts, path, cfs).map_err(|e| db_err(path, e))?
            }
            Access::ReadOnly => {
                // A read-only open reads RocksDB's MANIFEST and then its table files; when the
                // writer's own compaction deletes a table file in between, the open fails with
                // "No such file". The next attempt reads the newer MANIFEST, so retry a few times.
                let mut attempt = 0;
                // An index written before a column family existed (e.g. `delta`, version 2)
                // lacks it until its next writer opens it: open the ones that exist.
                let present = DB::list_cf(&opts, path).unwrap_or_default();
                loop {
                    let cfs = ALL_CFS
                        .iter()
                        .filter(|n| present.is_empty() || present.iter().any(|p| p == *n))
                        .map(|n| ColumnFamilyDescriptor::new(*n, cf_opts()));
                    match DB::open_cf_descriptors_read_only(&opts, path, cfs, false) {
                        Ok(db) => break db,
                        Err(e)
                            if attempt < READ_ONLY_OPEN_RETRIES
                                && e.as_ref().contains("No such file") =>
                        {
                            attempt += 1;
                            std::thread::sleep(std::time::Duration::from_millis(5 << attempt));
                        }
                        Err(e) => return Err(db_err(path, e)),
                    }
                }
            }
        };
        let catalog = Catalog {
            db,
            path: path.to_owned(),
            access,
            published: AtomicU32::new(0),
        };
        catalog.check_format(access)?;
        catalog
            .published
            .store(catalog.next_doc()?, Ordering::SeqCst);
        Ok(catalog)
    }

    /// Refuses a catalog written by a newer format than this build reads (an older build must
    /// not misread it); a writer stamps the current format on catalogs that have none yet
    /// (created before the version was stored: formats 1 and 2 read alike).
    fn check_format(&self, access: Access) -> Result<()> {
        let found = match self.get(CF_META, META_FORMAT)? {
            Some(v) => Some(decode_u32("meta/format", &v)?),
            None => None,
        };
        match found {
            Some(f) if f > CATALOG_FORMAT => Err(Error::UnsupportedFormatVersion {
                path: self.path.clone(),
                found: f,
                supported: CATALOG_FORMAT,
            }),
            Some(f) if f == CATALOG_FORMAT => Ok(()),
            _ if access == Access::ReadWrite => {
                let mut wo = rocksdb::WriteOptions::default();
                wo.set_sync(true);
                self.db
                    .put_cf_opt(
                        self.cf(CF_META),
                        META_FORMAT,
                        encode_u32(CATALOG_FORMAT),
                        &wo,
                    )
                    .map_err(|e| db_err(&self.path, e))
            }
            _ => Ok(()),
        }
    }

    /// Directory of the RocksDB database.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn cf(&self, name: &str) -> &ColumnFamily {
        // Every name in ALL_CFS is opened (and created) in `open`, so the handle exists.
        self.db
            .cf_handle(name)
            .expect("column family opened in Catalog::open")
    }

    fn get(&self, cf: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db
            .get_cf(self.cf(cf), key)
            .map_err(|e| db_err(&self.path, e))
    }

    /// A JSON value of the `meta` column family.
    pub fn meta_json<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>> {
        match self.get(CF_META, key)? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v)
                .map(Some)
                .map_err(|e| Error::CorruptEntry {
                    what: format!("meta/{}", String::from_utf8_lossy(key)),
                    reason: e.to_string(),
                }),
        }
    }

    /// A raw value of the `meta` column family (method data, e.g. `imatch/...`).
    pub fn meta_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get(CF_META, key)
    }

    /// The `meta` entries whose key starts with `prefix`, in key order.
    pub fn meta_prefix<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = Result<(Box<[u8]>, Box<[u8]>)>> + 'a {
        self.db
            .iterator_cf(
                self.cf(CF_META),
                IteratorMode::From(prefix, rocksdb::Direction::Forward),
            )
            .map(move |item| item.map_err(|e| db_err(&self.path, e)))
            .take_while(move |item| item.as_ref().map_or(true, |(k, _)| k.starts_with(prefix)))
    }

    /// The live-segment manifest (empty for a new index).
    pub fn manifest(&self) -> Result<Manifest> {
        Ok(self.meta_json(META_MANIFEST)?.unwrap_or_else(Manifest::new))
    }

    /// The next doc id to allocate.
    pub fn next_doc(&self) -> Result<u32> {
        match self.get(CF_META, META_NEXT_DOC)? {
            None => Ok(0),
            Some(v) => decode_u32("meta/next_doc", &v),
        }
    }

    /// One document's record.
    pub fn doc(&self, doc: u32) -> Result<Option<DocRecord>> {
        self.get(CF_DOCS, &doc_key(doc))?
            .map(|v| DocRecord::decode(doc, &v))
            .transpose()
    }

    /// The table files of column families `cfs` (RocksDB's live `.sst` files): their paths
    /// and sizes in bytes, the families in the order asked and each family's files by their
    /// first key, so a read-ahead of a family read whole goes the way its scan does. Empty
    /// when RocksDB cannot list them (the read-ahead is a hint).
    pub fn table_files(&self, cfs: &[&str]) -> Vec<(PathBuf, u64)> {
        let Ok(mut live) = self.db.live_files() else {
            return Vec::new();
        };
        live.retain(|f| cfs.contains(&f.column_family_name.as_str()));
        live.sort_by(|a, b| {
            let rank = |n: &str| cfs.iter().position(|c| *c == n);
            (rank(&a.column_family_name), &a.start_key)
                .cmp(&(rank(&b.column_family_name), &b.start_key))
        });
        live.into_iter()
            .map(|f| {
                let name = f.name.trim_start_matches('/');
                (self.path.join(name), f.size as u64)
            })
            .collect()
    }

    /// Records of many documents at once (one RocksDB multi-get), in the order asked.
    pub fn docs(&self, ids: &[u32]) -> Result<Vec<Option<DocRecord>>> {
        let cf = self.cf(CF_DOCS);
        let keys: Vec<[u8; 4]> = ids.iter().map(|&d| doc_key(d)).collect();
        let got = self.db.multi_get_cf(keys.iter().map(|k| (cf, k)));
        ids.iter()
            .zip(got)
            .map(|(&d, r)| match r.map_err(|e| db_err(&self.path, e))? {
                None => Ok(None),
                Some(v) => DocRecord::decode(d, &v).map(Some),
            })
            .collect()
    }

    /// All documents in id order (deleted ones included; see [`Catalog::tombstones`]).
    /// Staged records of a batch not yet published (ids at or above `meta/next_doc`) are not
    /// listed.
    pub fn iter_docs(&self) -> impl Iterator<Item = Result<(u32, DocRecord)>> + '_ {
        self.iter_docs_from(0)
    }

    /// [`Catalog::iter_docs`] from doc id `start` on (a reader that already holds the sizes
    /// of the ids below it reads only the records published since).
    pub fn iter_docs_from(
        &self,
        start: u32,
    ) -> impl Iterator<Item = Result<(u32, DocRecord)>> + '_ {
        let published = self.published();
        let from = doc_key(start);
        self.db
            .iterator_cf(
                self.cf(CF_DOCS),
                IteratorMode::From(&from, rocksdb::Direction::Forward),
            )
            .map(move |item| {
                let (k, v) = item.map_err(|e| db_err(&self.path, e))?;
                let doc = parse_doc_key(&k)?;
                Ok((doc, v))
            })
            .take_while(move |r| r.as_ref().map_or(true, |(d, _)| *d < published))
            .map(|r| r.and_then(|(doc, v)| Ok((doc, DocRecord::decode(doc, &v)?))))
    }

    /// The published `meta/next_doc`: ids at or above it are not visible yet.
    pub fn published(&self) -> u32 {
        self.published.load(Ordering::SeqCst)
    }

    /// `Some(d)` when `d` is a published doc id (an entry naming a staged one reads as absent).
    fn visible(&self, d: u32) -> Option<u32> {
        (d < self.published()).then_some(d)
    }

    /// The live document with this key.
    pub fn doc_by_key(&self, key: &str) -> Result<Option<u32>> {
        Ok(self
            .get(CF_KEYS, key.as_bytes())?
            .map(|v| decode_u32(&format!("keys/{key}"), &v))
            .transpose()?
            .and_then(|d| self.visible(d)))
    }

    /// The live documents of many keys at once (one batched RocksDB multi-get), in the order
    /// asked. `sorted`: the keys are in byte order (RocksDB then reads each block once).
    pub fn docs_by_keys(&self, keys: &[&str], sorted: bool) -> Result<Vec<Option<u32>>> {
        let got = self.db.batched_multi_get_cf(
            self.cf(CF_KEYS),
            keys.iter().map(|k| k.as_bytes()),
            sorted,
        );
        keys.iter()
            .zip(got)
            .map(|(k, r)| match r.map_err(|e| db_err(&self.path, e))? {
                None => Ok(None),
                Some(v) => decode_u32(&format!("keys/{k}"), &v).map(|d| self.visible(d)),
            })
            .collect()
    }

    /// The first live document with this canonical-text digest.
    pub fn doc_by_digest(&self, digest: &[u8; 16]) -> Result<Option<u32>> {
        Ok(self
            .get(CF_DIGESTS, digest)?
            .map(|v| decode_u32("digests/..", &v))
            .transpose()?
            .and_then(|d| self.visible(d)))
    }

    /// The batch id registered under `name`.
    pub fn batch_by_name(&self, name: &str) -> Result<Option<u32>> {
        let key = [b"name/".as_slice(), name.as_bytes()].concat();
        self.get(CF_BATCHES, &key)?
            .map(|v| decode_u32(&format!("batches/name/{name}"), &v))
            .transpose()
    }

    /// A batch's JSON record.
    pub fn batch<T: DeserializeOwned>(&self, id: u32) -> Result<Option<T>> {
        let key = batch_id_key(id);
        match self.get(CF_BATCHES, &key)? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v)
                .map(Some)
                .map_err(|e| Error::CorruptEntry {
                    what: format!("batches/{id}"),
                    reason: e.to_string(),
                }),
        }
    }

    /// All batch records in id order.
    pub fn batches<T: DeserializeOwned>(&self) -> Result<Vec<(u32, T)>> {
        let mut out = Vec::new();
        let it = self.db.iterator_cf(
            self.cf(CF_BATCHES),
            IteratorMode::From(b"id/", rocksdb::Direction::Forward),
        );
        for item in it {
            let (k, v) = item.map_err(|e| db_err(&self.path, e))?;
            if !k.starts_with(b"id/") {
                break;
            }
            let id = parse_doc_key(&k[3..])?;
            let rec = serde_json::from_slice(&v).map_err(|e| Error::CorruptEntry {
                what: format!("batches/{id}"),
                reason: e.to_string(),
            })?;
            out.push((id, rec));
        }
        Ok(out)
    }

    /// The highest batch id, by one backward seek (None: no batch yet).
    pub fn last_batch_id(&self) -> Result<Option<u32>> {
        let mut it = self.db.raw_iterator_cf(self.cf(CF_BATCHES));
        it.seek_for_prev([b"id/".as_slice(), &[0xff; 5]].concat());
        if let Some(k) = it.key() {
            if let Some(id) = k.strip_prefix(b"id/") {
                return Ok(Some(parse_doc_key(id)?));
            }
        }
        it.status().map_err(|e| db_err(&self.path, e))?;
        Ok(None)
    }

    /// Cluster id of a document: its stored cluster, or itself when it is a singleton.
    pub fn cluster_of(&self, doc: u32) -> Result<u32> {
        Ok(self
            .get(CF_CLUSTERS, &doc_key(doc))?
            .map(|v| decode_u32("clusters/..", &v))
            .transpose()?
            .unwrap_or(doc))
    }

    /// Members of a stored (non-singleton) cluster, as a roaring bitmap.
    pub fn members(&self, cluster: u32) -> Result<Option<roaring::RoaringBitmap>> {
        match self.get(CF_MEMBERS, &doc_key(cluster))? {
            None => Ok(None),
            Some(v) => roaring::RoaringBitmap::deserialize_from(&v[..])
                .map(Some)
                .map_err(|e| Error::CorruptEntry {
                    what: format!("members/{cluster}"),
                    reason: e.to_string(),
                }),
        }
    }

    /// All stored non-singleton clusters: (cluster id, members).
    pub fn iter_members(&self) -> impl Iterator<Item = Result<(u32, roaring::RoaringBitmap)>> + '_ {
        self.db
            .iterator_cf(self.cf(CF_MEMBERS), IteratorMode::Start)
            .map(move |item| {
                let (k, v) = item.map_err(|e| db_err(&self.path, e))?;
                let id = parse_doc_key(&k)?;
                let bm = roaring::RoaringBitmap::deserialize_from(&v[..]).map_err(|e| {
                    Error::CorruptEntry {
                        what: format!("members/{id}"),
                        reason: e.to_string(),
                    }
                })?;
                Ok((id, bm))
            })
    }

    /// Deleted documents.
    pub fn tombstones(&self) -> Result<roaring::RoaringBitmap> {
        let mut bm = roaring::RoaringBitmap::new();
        for item in self
            .db
            .iterator_cf(self.cf(CF_TOMBSTONES), IteratorMode::Start)
        {
            let (k, _) = item.map_err(|e| db_err(&self.path, e))?;
            bm.insert(parse_doc_key(&k)?);
        }
        Ok(bm)
    }

    /// Every (key, value) of a column family in key order, undecoded (for `verify`).
    pub fn iter_raw(&self, cf: &str) -> impl Iterator<Item = Result<RawEntry>> + '_ {
        self.db
            .iterator_cf(self.cf(cf), IteratorMode::Start)
            .map(move |item| item.map_err(|e| db_err(&self.path, e)))
    }

    /// Starts a write batch; nothing is visible until [`Catalog::commit`].
    pub fn batch_writer(&self) -> CatalogBatch<'_> {
        CatalogBatch {
            cat: self,
            wb: WriteBatch::default(),
            next_doc: None,
            pairs_kept: false,
        }
    }

    /// Writes a batch atomically and durably (fsync of RocksDB's WAL).
    pub fn commit(&self, batch: CatalogBatch<'_>) -> Result<()> {
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        let batch = self.guard_pairs(batch);
        let next = batch.next_doc;
        self.db
            .write_opt(batch.wb, &wo)
            .map_err(|e| db_err(&self.path, e))?;
        self.publish_next_doc(next);
        Ok(())
    }

    /// A write that publishes new documents (moves `meta/next_doc` up) without declaring
    /// their stored pairs ([`CatalogBatch::keep_pairs`]) deletes the stored-pairs marker in
    /// the same atomic write: the table no longer holds every pair (store::pairs).
    fn guard_pairs<'a>(&self, mut batch: CatalogBatch<'a>) -> CatalogBatch<'a> {
        if !batch.pairs_kept && batch.next_doc.is_some_and(|n| n > self.published()) {
            batch.clear_pairs_marker();
        }
        batch
    }

    /// After a write that put `meta/next_doc`: what it staged below it is visible now.
    fn publish_next_doc(&self, next: Option<u32>) {
        if let Some(n) = next {
            self.published.store(n, Ordering::SeqCst);
        }
    }

    /// Writes a batch atomically, to RocksDB's WAL but without the fsync: NOT durable until
    /// a later [`Catalog::sync_wal`] (or synced commit) returns. A server's writer overlaps
    /// the fsync of one group commit with the work of the next this way, and answers a
    /// group only after the sync.
    pub fn commit_unsynced(&self, batch: CatalogBatch<'_>) -> Result<()> {
        let wo = WriteOptions::default();
        let batch = self.guard_pairs(batch);
        let next = batch.next_doc;
        self.db
            .write_opt(batch.wb, &wo)
            .map_err(|e| db_err(&self.path, e))?;
        self.publish_next_doc(next);
        Ok(())
    }

    /// Makes every write committed so far durable (fsync of the WAL).
    pub fn sync_wal(&self) -> Result<()> {
        self.db.flush_wal(true).map_err(|e| db_err(&self.path, e))
    }

    /// Approximate on-disk size of the RocksDB files.
    pub fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.path)
    }
}

/// Changes staged for one atomic catalog write.
pub struct CatalogBatch<'a> {
    cat: &'a Catalog,
    wb: WriteBatch,
    /// The `meta/next_doc` this batch puts, if any.
    next_doc: Option<u32>,
    /// The write holds the stored pairs of the documents it publishes (store::pairs).
    pairs_kept: bool,
}

impl CatalogBatch<'_> {
    pub fn put_meta_json<T: Serialize>(&mut self, key: &[u8], value: &T) {
        // Serializing our own plain structs to JSON cannot fail.
        let v = serde_json::to_vec(value).expect("meta values serialize");
        self.wb.put_cf(self.cat.cf(CF_META), key, v);
    }
    /// A raw `meta` value (method data, format-spec/rocksdb.md).
    pub fn put_meta_raw(&mut self, key: &[u8], value: &[u8]) {
        self.wb.put_cf(self.cat.cf(CF_META), key, value);
    }
    pub fn put_next_doc(&mut self, next: u32) {
        self.next_doc = Some(next);
        self.wb
            .put_cf(self.cat.cf(CF_META), META_NEXT_DOC, encode_u32(next));
    }
    pub fn put_doc(&mut self, doc: u32, rec: &DocRecord) {
        self.wb
            .put_cf(self.cat.cf(CF_DOCS), doc_key(doc), rec.encode());
    }
    pub fn put_key(&mut self, key: &str, doc: u32) {
        self.wb
            .put_cf(self.cat.cf(CF_KEYS), key.as_bytes(), encode_u32(doc));
    }
    pub fn delete_key(&mut self, key: &str) {
        self.wb.delete_cf(self.cat.cf(CF_KEYS), key.as_bytes());
    }
    pub fn put_digest(&mut self, digest: &[u8; 16], doc: u32) {
        self.wb
            .put_cf(self.cat.cf(CF_DIGESTS), digest, encode_u32(doc));
    }
    pub fn delete_digest(&mut self, digest: &[u8; 16]) {
        self.wb.delete_cf(self.cat.cf(CF_DIGESTS), digest);
    }
    pub fn put_batch<T: Serialize>(&mut self, id: u32, name: &str, rec: &T) {
        let v = serde_json::to_vec(rec).expect("batch records serialize");
        self.wb.put_cf(self.cat.cf(CF_BATCHES), batch_id_key(id), v);
        let nk = [b"name/".as_slice(), name.as_bytes()].concat();
        self.wb.put_cf(self.cat.cf(CF_BATCHES), nk, encode_u32(id));
    }
    pub fn put_cluster(&mut self, doc: u32, cluster: u32) {
        self.wb
            .put_cf(self.cat.cf(CF_CLUSTERS), doc_key(doc), encode_u32(cluster));
    }
    pub fn delete_cluster(&mut self, doc: u32) {
        self.wb.delete_cf(self.cat.cf(CF_CLUSTERS), doc_key(doc));
    }
    pub fn put_members(&mut self, cluster: u32, members: &roaring::RoaringBitmap) {
        let mut v = Vec::with_capacity(members.serialized_size());
        members
            .serialize_into(&mut v)
            .expect("serializing into a Vec cannot fail");
        self.wb.put_cf(self.cat.cf(CF_MEMBERS), doc_key(cluster), v);
    }
    pub fn delete_members(&mut self, cluster: u32) {
        self.wb.delete_cf(self.cat.cf(CF_MEMBERS), doc_key(cluster));
    }
    pub fn put_tombstone(&mut self, doc: u32) {
        self.wb.put_cf(self.cat.cf(CF_TOMBSTONES), doc_key(doc), []);
    }
    /// Number of staged operations.
    pub fn len(&self) -> usize {
        self.wb.len()
    }
    pub fn is_empty(&self) -> bool {
        self.wb.is_empty()
    }
}

fn batch_id_key(id: u32) -> Vec<u8> {
    [b"id/".as_slice(), &doc_key(id)].concat()
}

fn db_err(path: &Path, e: rocksdb::Error) -> Error {
    Error::Db {
        path: path.to_owned(),
        message: e.into_string(),
    }
}

/// Total size of the regular files under `dir` (not following links).
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}
