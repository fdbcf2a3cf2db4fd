//! `SegmentWriter`: writes a segment sequentially from sorted streams and publishes it
//! atomically (write `<name>.tmp`, fsync, rename to `<name>`, fsync the directory).
//!
//! Memory stays bounded by one block buffer, the current table's block index (32 bytes per
//! block) and one directory entry per finished table.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::error::{Error, IoResultExt, Result};

use super::block::BlockBuilder;
use super::format::{
    encode_header, BlockRef, DirEntry, Footer, DIR_ENTRY_LEN, FOOTER_LEN, FORMAT_VERSION,
    HEADER_LEN, INDEX_ENTRY_LEN,
};
use super::{
    SegmentMeta, TableMeta, DEFAULT_BLOCK_TARGET, MAX_VALUE_LEN, POSTINGS, POSTINGS_FILTER,
    POSTINGS_RANKS, RANKED_FORWARD_VERSION,
};

/// Filter values held in memory before the spool moves to a file.
const SPOOL_MEM: usize = 4 << 20;

/// The POSTINGS blocks' key filters (`super::filter`), kept until `finish` writes them as table
/// `POSTINGS_FILTER`: `u32 LE length + value` per block, in memory up to `SPOOL_MEM` bytes,
/// then appended to `<name>.filter.tmp` (removed on drop), so the writer's memory stays
/// bounded whatever the table's size.
struct FilterSpool {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    mem: Vec<u8>,
    count: u64,
}

impl FilterSpool {
    fn push(&mut self, value: &[u8]) -> std::io::Result<()> {
        self.mem
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.mem.extend_from_slice(value);
        self.count += 1;
        if self.mem.len() >= SPOOL_MEM {
            if self.file.is_none() {
                let f = File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&self.path)?;
                self.file = Some(BufWriter::with_capacity(256 * 1024, f));
            }
            if let Some(f) = self.file.as_mut() {
                f.write_all(&self.mem)?;
            }
            self.mem.clear();
        }
        Ok(())
    }

    /// Everything spooled, in order.
    fn reader(&mut self) -> std::io::Result<impl Read + '_> {
        let file = match self.file.take() {
            Some(w) => {
                let mut f = w.into_inner().map_err(|e| e.into_error())?;
                f.rewind()?;
                Some(BufReader::with_capacity(256 * 1024, f))
            }
            None => None,
        };
        let head: Box<dyn Read> = match file {
            Some(f) => Box::new(f),
            None => Box::new(std::io::empty()),
        };
        Ok(head.chain(&self.mem[..]))
    }
}

impl Drop for FilterSpool {
    fn drop(&mut self) {
        if self.file.is_some() || self.path.exists() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// POSTINGS blocks written inline before the key filters move to a thread of their own
/// ([`FilterThread`]): a small segment (an add's) starts no thread.
pub(super) const FILTER_THREAD_AFTER: u64 = 8;
/// Blocks' keys the filter thread may hold before the writer waits for it.
const FILTER_AHEAD: usize = 64;

/// Builds the POSTINGS blocks' key filters on a thread of its own while the writer encodes
/// and writes the next blocks (the filter of a 32 KiB block costs about as much as encoding
/// it). It takes each block's keys in order and hands back `(filter, keys)` in the same order
/// (the keys' vector to be reused); the writer pushes the filters into its spool itself, so
/// spool errors and the order stay the writer's. Bytes identical to building them inline.
struct FilterThread {
    tx: Option<SyncSender<Vec<u64>>>,
    rx: Receiver<(Vec<u8>, Vec<u64>)>,
    handle: Option<JoinHandle<()>>,
    /// Keys' vectors that came back, for the next blocks.
    spare: Vec<Vec<u64>>,
    /// Blocks sent, blocks whose filter came back.
    sent: u64,
    received: u64,
}

impl FilterThread {
    fn start() -> std::io::Result<FilterThread> {
        let (tx, keys_rx) = sync_channel::<Vec<u64>>(FILTER_AHEAD);
        let (done_tx, rx) = channel();
        let handle = std::thread::Builder::new()
            .name("ndd-filters".into())
            .spawn(move || {
                for keys in keys_rx {
                    let mut f = Vec::new();
                    super::filter::build(&keys, &mut f);
                    if done_tx.send((f, keys)).is_err() {
                        return; // the writer is gone
                    }
                }
            })?;
        Ok(FilterThread {
            tx: Some(tx),
            rx,
            handle: Some(handle),
            spare: Vec::new(),
            sent: 0,
            received: 0,
        })
    }

    /// Queues one block's keys (waits while the thread is `FILTER_AHEAD` blocks behind).
    fn send(&mut self, keys: Vec<u64>) -> std::io::Result<()> {
        let sent = self.tx.as_ref().map(|tx| tx.send(keys).is_ok());
        if sent != Some(true) {
            return Err(std::io::Error::other("the key filter thread ended early"));
        }
        self.sent += 1;
        Ok(())
    }

    /// The filters built so far, in block order, without waiting.
    fn ready(&mut self) -> Vec<(Vec<u8>, Vec<u64>)> {
        let got: Vec<_> = self.rx.try_iter().collect();
        self.received += got.len() as u64;
        got
    }

    /// Every remaining filter, in block order, once the thread has built them all.
    fn finish(&mut self) -> std::io::Result<Vec<(Vec<u8>, Vec<u64>)>> {
        drop(self.tx.take());
        let got: Vec<_> = self.rx.iter().collect();
        self.received += got.len() as u64;
        let joined = self.handle.take().map(|h| h.join().is_ok());
        if joined == Some(false) || self.received != self.sent {
            return Err(std::io::Error::other(format!(
                "the key filter thread built {} of {} filters",
                self.received, self.sent
            )));
        }
        Ok(got)
    }
}

/// The table being written.
struct OpenTable {
    id: u32,
    entries: u64,
    min_key: u64,
    last_key: Option<u64>,
    data_offset: u64,
    value_bytes: u64,
    blocks: Vec<BlockRef>,
}

/// Writes one segment file. See the module docs of `segment` for the call sequence.
pub struct SegmentWriter {
    tmp_path: PathBuf,
    final_path: PathBuf,
    dir: PathBuf,
    file_name: String,
    out: BufWriter<File>,
    /// Bytes written so far (the offset of the next byte).
    pos: u64,
    block_target: usize,
    block: BlockBuilder,
    table: Option<OpenTable>,
    done: Vec<DirEntry>,
    /// Set after an I/O error: the file is in an unknown state and must not be published.
    poisoned: bool,
    /// Fsync the file and its directory in `finish` (not for private temporary segments).
    durable: bool,
    /// Format version being written (`FORMAT_VERSION`, or 1 for compatibility tests).
    version: u32,
    /// Scratch for values transcoded to format version 1.
    v1_buf: Vec<u8>,
    /// Key filters of the POSTINGS blocks written so far (None: not writing filters).
    filters: Option<FilterSpool>,
    /// Keys of the current POSTINGS block (for its filter).
    filter_keys: Vec<u64>,
    /// Scratch for one filter value.
    filter_buf: Vec<u8>,
    /// Builds the filters once the POSTINGS table has `filter_thread_after` blocks.
    filter_thread: Option<FilterThread>,
    /// `FILTER_THREAD_AFTER` (tests: `u64::MAX`, every filter inline).
    filter_thread_after: u64,
    /// Rank of the first key of every POSTINGS block written so far (None: format < 3, which
    /// has no table `POSTINGS_RANKS`); 8 bytes per block, like the block index.
    rank_starts: Option<Vec<u64>>,
    /// POSTINGS entries in the blocks written so far.
    postings_flushed: u64,
}

/// Environment variable that overrides the format version writers write: an index's writers
/// otherwise write the version recorded in its options (`ingest --segment-format 2|3`,
/// `IndexOptions::segment_format`), `SegmentWriter::create` [`DEFAULT_WRITE_VERSION`]. `3` is
/// the half-size index (FORWARD lists as ranks, format-spec/segment.md), `1` and `2` are for
/// compatibility tests and before/after benchmarks.
pub const FORMAT_ENV: &str = "NDD_SEGMENT_FORMAT";

/// Format version written when `NDD_SEGMENT_FORMAT` is unset, and by a new index unless
/// created with `--segment-format 2`: 3, the half-size index (FORWARD lists as ranks). An
/// index created before the option existed keeps writing 2 (`options::LEGACY_SEGMENT_FORMAT`).
/// CPU against version 2: BENCHMARKS "Format 3 by default: verification across segments by
/// coarse keys".
pub const DEFAULT_WRITE_VERSION: u32 = 3;

/// The version `NDD_SEGMENT_FORMAT` asks for (1, 2 or 3), if it is set to one of them.
pub fn format_override() -> Option<u32> {
    match std::env::var(FORMAT_ENV).ok().as_deref().map(str::trim) {
        Some("1") => Some(1),
        Some("2") => Some(2),
        Some("3") => Some(3),
        _ => None,
    }
}

impl SegmentWriter {
    /// Starts `<dir>/<name>.tmp` with the default block target (32 KiB).
    pub fn create(dir: impl AsRef<Path>, name: &str) -> Result<Self> {
        Self::create_with_block_target(dir, name, DEFAULT_BLOCK_TARGET)
    }

    /// Like `create`, with blocks closed once they reach about `block_target` bytes (tests use
    /// tiny blocks to exercise many of them; readers do not depend on the value).
    pub fn create_with_block_target(
        dir: impl AsRef<Path>,
        name: &str,
        block_target: usize,
    ) -> Result<Self> {
        let version = format_override().unwrap_or(DEFAULT_WRITE_VERSION);
        Self::create_version(dir, name, block_target, version)
    }

    /// Like `create_with_block_target`, writing format `version` (1, 2 or 3). Values are given in
    /// the current format's codecs (`encode_postings`, `encode_u64s`); a version-1 writer
    /// transcodes posting lists and FORWARD lists to version 1's forms. For tests of old
    /// segments.
    #[doc(hidden)]
    pub fn create_version(
        dir: impl AsRef<Path>,
        name: &str,
        block_target: usize,
        version: u32,
    ) -> Result<Self> {
        if !(super::format::MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::InvalidArgument(format!(
                "cannot write segment format version {version}"
            )));
        }
        let dir = dir.as_ref().to_path_buf();
        if name.is_empty()
            || name.contains(['/', '\\'])
            || name == "."
            || name == ".."
            || name.ends_with(".tmp")
        {
            return Err(Error::InvalidArgument(format!(
                "bad segment file name {name:?}"
            )));
        }
        let final_path = dir.join(name);
        if final_path.exists() {
            let e =
                std::io::Error::new(std::io::ErrorKind::AlreadyExists, "segment already exists");
            return Err(Error::io(final_path, e));
        }
        let tmp_path = dir.join(format!("{name}.tmp"));
        // A leftover .tmp is an orphan of a crashed writer: truncating it is safe.
        let file = File::create(&tmp_path).at(&tmp_path)?;
        let spool_path = dir.join(format!("{name}.filter.tmp"));
        let mut w = SegmentWriter {
            tmp_path,
            final_path,
            dir,
            file_name: name.to_string(),
            out: BufWriter::with_capacity(256 * 1024, file),
            pos: 0,
            block_target: block_target.max(1),
            block: BlockBuilder::new(version),
            table: None,
            done: Vec::new(),
            poisoned: false,
            durable: true,
            version,
            v1_buf: Vec::new(),
            // Format 1 never had the table; its writer stays byte-identical to old builds.
            filters: (version >= 2).then(|| FilterSpool {
                path: spool_path,
                file: None,
                mem: Vec::new(),
                count: 0,
            }),
            filter_keys: Vec::new(),
            filter_buf: Vec::new(),
            filter_thread: None,
            filter_thread_after: FILTER_THREAD_AFTER,
            rank_starts: (version >= RANKED_FORWARD_VERSION).then(Vec::new),
            postings_flushed: 0,
        };
        if let Err(e) = w.write(&encode_header(version)) {
            // The caller never got a writer, so it cannot clean up: leave nothing behind.
            let _ = std::fs::remove_file(&w.tmp_path);
            return Err(e);
        }
        debug_assert_eq!(w.pos, HEADER_LEN as u64);
        Ok(w)
    }

    /// Writes no POSTINGS key filter (table `POSTINGS_FILTER`): the segment reads as one of
    /// format 2 written before the table existed. For tests and before/after benchmarks.
    #[doc(hidden)]
    pub fn without_key_filter(mut self) -> Self {
        self.filters = None;
        self
    }

    /// Builds every key filter on the writing thread (tests: the bytes of both ways).
    #[cfg(test)]
    pub(crate) fn inline_filters(mut self) -> Self {
        self.filter_thread_after = u64::MAX;
        self
    }

    /// Path of the temporary file being written.
    pub fn tmp_path(&self) -> &Path {
        &self.tmp_path
    }

    /// Bytes written so far (lets the caller roll over to a new segment at a size limit).
    pub fn bytes_written(&self) -> u64 {
        self.pos + self.block.encoded_len() as u64
    }

    /// Starts table `id`. Tables may be written in any order; each id at most once.
    pub fn begin_table(&mut self, id: u32) -> Result<()> {
        self.check_usable()?;
        if let Some(t) = &self.table {
            return Err(misuse(format!(
                "begin_table({id}) while table {} is open",
                t.id
            )));
        }
        if self.done.iter().any(|d| d.table_id == id) {
            return Err(misuse(format!("table {id} written twice")));
        }
        if id == POSTINGS_FILTER || id == POSTINGS_RANKS {
            return Err(misuse(format!(
                "table {id} ({}) is written by the writer itself",
                if id == POSTINGS_FILTER {
                    "POSTINGS_FILTER"
                } else {
                    "POSTINGS_RANKS"
                }
            )));
        }
        self.open_table(id);
        Ok(())
    }

    fn open_table(&mut self, id: u32) {
        let data_offset = self.pos;
        self.table = Some(OpenTable {
            id,
            entries: 0,
            min_key: 0,
            last_key: None,
            data_offset,
            value_bytes: 0,
            blocks: Vec::new(),
        });
    }

    /// Format version this writer writes.
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// Appends an entry to the open table; `key` must be greater than the previous key.
    /// Posting-list and FORWARD values are in the current format's codecs.
    pub fn add(&mut self, key: u64, value: &[u8]) -> Result<()> {
        if self.version == 1 {
            if let Some(t) = &self.table {
                let kind = super::value_kind(t.id);
                let mut buf = std::mem::take(&mut self.v1_buf);
                buf.clear();
                let done = match kind {
                    super::ValueKind::Postings => super::decode_postings(value)
                        .map(|l| super::postings::encode_postings_v1(&l.to_vec(), &mut buf)),
                    super::ValueKind::U64s => super::decode_u64s(value)
                        .map(|l| super::u64s::encode_u64s_v1(&l.to_vec(), &mut buf)),
                    super::ValueKind::Opaque => {
                        self.v1_buf = buf;
                        return self.add_stored(key, value);
                    }
                };
                let r = done.and_then(|()| self.add_stored(key, &buf));
                self.v1_buf = buf;
                return r;
            }
        }
        self.add_stored(key, value)
    }

    /// [`SegmentWriter::add`] of entries `keys[k]` with values `bytes[ends[k - 1]..ends[k]]`
    /// (from 0 for the first), in order: the same blocks and bytes, with the checks made once
    /// for the run and the values copied into each block at once. Any entry `add` would refuse
    /// (key order, value size, bad `ends`) makes the whole run go through `add` one by one, so
    /// the entries before it are added and its error returned, as `add` would.
    pub fn add_many(&mut self, keys: &[u64], ends: &[usize], bytes: &[u8]) -> Result<()> {
        let well_formed = || {
            let last = self.table.as_ref().and_then(|t| t.last_key);
            let mut lo = 0usize;
            keys.len() == ends.len()
                && keys.first().is_none_or(|&k| last.is_none_or(|l| k > l))
                && keys.windows(2).all(|w| w[0] < w[1])
                && ends.iter().all(|&hi| {
                    let ok = hi >= lo && hi - lo <= MAX_VALUE_LEN;
                    lo = hi;
                    ok
                })
                && lo <= bytes.len()
        };
        if self.version == 1 || self.poisoned || self.table.is_none() || !well_formed() {
            let mut lo = 0;
            for (&key, &hi) in keys.iter().zip(ends) {
                let value = bytes.get(lo..hi).ok_or_else(|| {
                    misuse(format!(
                        "value ends {lo}..{hi} out of {} bytes",
                        bytes.len()
                    ))
                })?;
                self.add(key, value)?;
                lo = hi;
            }
            if keys.len() != ends.len() {
                return Err(misuse(format!(
                    "{} keys and {} value ends",
                    keys.len(),
                    ends.len()
                )));
            }
            return Ok(());
        }
        let (Some(&k0), Some(&kn), Some(&vn)) = (keys.first(), keys.last(), ends.last()) else {
            return Ok(());
        };
        if let Some(t) = self.table.as_mut() {
            if t.last_key.is_none() {
                t.min_key = k0;
            }
            t.last_key = Some(kn);
            t.entries += keys.len() as u64;
            t.value_bytes += vn as u64;
        }
        let limit = self.block_target.min(super::MAX_BLOCK_LEN);
        let filter = self.filters.is_some() && t_id_is_postings(&self.table);
        let mut i = 0;
        while i < keys.len() {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            let c = self
                .block
                .push_run(&keys[i..], &ends[i..], start, bytes, limit);
            if filter {
                self.filter_keys.extend_from_slice(&keys[i..i + c]);
            }
            i += c;
            if i < keys.len() {
                self.flush_block()?;
            }
        }
        Ok(())
    }

    /// `add` of a value already in this writer's format.
    fn add_stored(&mut self, key: u64, value: &[u8]) -> Result<()> {
        self.check_usable()?;
        let Some(t) = self.table.as_mut() else {
            return Err(misuse("add() outside begin_table/end_table".to_string()));
        };
        if let Some(last) = t.last_key.filter(|&last| key <= last) {
            return Err(misuse(format!(
                "table {}: key {key} is not greater than the previous key {last}",
                t.id
            )));
        }
        if value.len() > MAX_VALUE_LEN {
            return Err(misuse(format!(
                "table {}: value of {} bytes exceeds {MAX_VALUE_LEN}",
                t.id,
                value.len()
            )));
        }
        if t.last_key.is_none() {
            t.min_key = key;
        }
        t.last_key = Some(key);
        t.entries += 1;
        t.value_bytes += value.len() as u64;
        // Close the block before it would pass the target. A value larger than the target thus
        // lands in a block of its own, and no block exceeds max(target, one entry).
        let limit = self.block_target.min(super::MAX_BLOCK_LEN);
        if !self.block.is_empty() && !self.block.fits(key, value.len(), limit) {
            self.flush_block()?;
        }
        self.block.push(key, value);
        if self.filters.is_some() && t_id_is_postings(&self.table) {
            self.filter_keys.push(key);
        }
        Ok(())
    }

    /// Closes the open table: flushes its last block and writes its block index.
    pub fn end_table(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.table.is_none() {
            return Err(misuse("end_table() without begin_table()".to_string()));
        }
        if !self.block.is_empty() {
            self.flush_block()?;
        }
        let Some(t) = self.table.take() else {
            return Ok(());
        };
        let index_offset = self.pos;
        let mut crc = crc32fast::Hasher::new();
        for b in &t.blocks {
            let bytes = b.encode();
            crc.update(&bytes);
            self.write(&bytes)?;
        }
        debug_assert_eq!(
            self.pos - index_offset,
            (t.blocks.len() * INDEX_ENTRY_LEN) as u64
        );
        let block_count = u32::try_from(t.blocks.len())
            .map_err(|_| misuse(format!("table {} has more than 2^32 blocks", t.id)))?;
        self.done.push(DirEntry {
            table_id: t.id,
            block_count,
            entry_count: t.entries,
            min_key: t.min_key,
            max_key: t.last_key.unwrap_or(0),
            data_offset: t.data_offset,
            data_len: index_offset - t.data_offset,
            index_offset,
            value_bytes: t.value_bytes,
            index_crc: crc.finalize(),
            reserved: 0,
        });
        Ok(())
    }

    /// A private temporary segment (a snapshot's view of the delta, an add's matching
    /// segment): `finish` renames it into place without the fsyncs, which only make a
    /// published segment durable.
    pub fn temporary(mut self) -> Self {
        self.durable = false;
        self
    }

    /// Writes directory and footer, fsyncs, renames `<name>.tmp` to `<name>`, fsyncs the
    /// directory, and describes what was written.
    pub fn finish(self) -> Result<SegmentMeta> {
        self.finish_as(false).map(|(meta, _)| meta)
    }

    /// [`SegmentWriter::finish`] that renames the file into place at once and leaves its
    /// fsync and the directory's to a thread of their own: the caller reads the segment (from
    /// the page cache) meanwhile, and waits for [`PendingSync::wait`] before anything names
    /// it durably (a catalog commit). A crash before then leaves a file no manifest names,
    /// which the next writer removes as an orphan (as it would the `.tmp`).
    pub fn finish_deferred_sync(self) -> Result<(SegmentMeta, PendingSync)> {
        let (meta, pending) = self.finish_as(true)?;
        Ok((meta, pending.unwrap_or_default()))
    }

    fn finish_as(mut self, defer: bool) -> Result<(SegmentMeta, Option<PendingSync>)> {
        self.check_usable()?;
        if let Some(t) = &self.table {
            return Err(misuse(format!("finish() while table {} is open", t.id)));
        }
        self.write_filters()?;
        self.write_ranks()?;
        // The directory is sorted by table id so readers can binary-search it.
        self.done.sort_by_key(|d| d.table_id);
        let dir_offset = self.pos;
        let mut crc = crc32fast::Hasher::new();
        for d in std::mem::take(&mut self.done).iter() {
            let bytes = d.encode();
            crc.update(&bytes);
            self.write(&bytes)?;
            self.done.push(*d);
        }
        let dir_len = self.pos - dir_offset;
        debug_assert_eq!(dir_len, (self.done.len() * DIR_ENTRY_LEN) as u64);
        let footer = Footer {
            dir_offset,
            dir_len,
            file_len: self.pos + FOOTER_LEN as u64,
            dir_crc: crc.finalize(),
            table_count: self.done.len() as u32,
            version: self.version,
        };
        self.write(&footer.encode())?;
        debug_assert_eq!(self.pos, footer.file_len);

        let tmp = self.tmp_path.clone();
        let file = self
            .out
            .into_inner()
            .map_err(|e| Error::io(&tmp, e.into_error()))?;
        let mut pending = None;
        if self.durable && defer {
            std::fs::rename(&tmp, &self.final_path).at(&self.final_path)?;
            let (path, dir) = (self.final_path.clone(), self.dir.clone());
            let handle = std::thread::Builder::new()
                .name("ndd-sync".into())
                .spawn(move || {
                    crate::failpoint::check("segment.sync")
                        .and_then(|()| file.sync_all())
                        .at(&path)?;
                    drop(file);
                    sync_dir(&dir)
                })
                .map_err(|e| Error::io(&self.final_path, e))?;
            pending = Some(PendingSync {
                handle: Some(handle),
                path: self.final_path.clone(),
            });
        } else {
            if self.durable {
                crate::failpoint::check("segment.sync")
                    .and_then(|()| file.sync_all())
                    .at(&tmp)?;
            }
            drop(file);
            std::fs::rename(&tmp, &self.final_path).at(&self.final_path)?;
            if self.durable {
                sync_dir(&self.dir)?;
            }
        }

        let tables = self.done.iter().map(table_meta).collect();
        let meta = SegmentMeta {
            file_name: self.file_name,
            bytes: self.pos,
            tables,
        };
        Ok((meta, pending))
    }

    /// Writes the spooled POSTINGS key filters as table `POSTINGS_FILTER` (key = POSTINGS block
    /// number), if a non-empty POSTINGS table was written.
    fn write_filters(&mut self) -> Result<()> {
        self.drain_filters(true)?;
        let Some(mut spool) = self.filters.take() else {
            return Ok(());
        };
        if spool.count == 0 {
            return Ok(());
        }
        let path = spool.path.clone();
        let mut reader = spool.reader().map_err(|e| Error::io(&path, e))?;
        self.open_table(POSTINGS_FILTER);
        let mut value = Vec::new();
        let mut i = 0u64;
        loop {
            let mut len = [0u8; 4];
            match reader.read_exact(&mut len) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(Error::io(&path, e)),
            }
            value.resize(u32::from_le_bytes(len) as usize, 0);
            reader
                .read_exact(&mut value)
                .map_err(|e| Error::io(&path, e))?;
            self.add_stored(i, &value)?;
            i += 1;
        }
        drop(reader);
        self.end_table()
    }

    /// Writes table `POSTINGS_RANKS` (key = POSTINGS block number, value = the rank of the
    /// block's first key, u64 LE) if this is format 3 and a non-empty POSTINGS table was written.
    fn write_ranks(&mut self) -> Result<()> {
        let Some(starts) = self.rank_starts.take() else {
            return Ok(());
        };
        if starts.is_empty() {
            return Ok(());
        }
        self.open_table(POSTINGS_RANKS);
        for (b, start) in starts.iter().enumerate() {
            self.add_stored(b as u64, &start.to_le_bytes())?;
        }
        self.end_table()
    }

    fn flush_block(&mut self) -> Result<()> {
        if let Some(starts) = self.rank_starts.as_mut() {
            if t_id_is_postings(&self.table) {
                starts.push(self.postings_flushed);
                self.postings_flushed += self.block.entries() as u64;
            }
        }
        if self.filters.is_some() && t_id_is_postings(&self.table) {
            self.filter_block()?;
        }
        let offset = self.pos;
        let expected = self.block.encoded_len();
        let written = match crate::failpoint::check("segment.write")
            .and_then(|()| self.block.write_to(&mut self.out))
        {
            Ok(w) => w,
            Err(e) => {
                self.poisoned = true;
                return Err(Error::io(&self.tmp_path, e));
            }
        };
        self.pos += written.len as u64;
        debug_assert_eq!(written.len as usize, expected);
        if let Some(t) = self.table.as_mut() {
            t.blocks.push(BlockRef {
                first_key: written.first_key,
                last_key: written.last_key,
                offset,
                len: written.len,
                crc: written.crc,
            });
        }
        Ok(())
    }

    /// The key filter of the POSTINGS block being flushed: built inline for the first
    /// `FILTER_THREAD_AFTER` blocks, then by the [`FilterThread`]; the filters are spooled in
    /// block order either way.
    fn filter_block(&mut self) -> Result<()> {
        let inline = self.filter_thread.is_none()
            && self
                .filters
                .as_ref()
                .is_some_and(|s| s.count < self.filter_thread_after);
        if inline {
            self.filter_buf.clear();
            super::filter::build(&self.filter_keys, &mut self.filter_buf);
            self.filter_keys.clear();
            if let Some(spool) = self.filters.as_mut() {
                if let Err(e) = spool.push(&self.filter_buf) {
                    self.poisoned = true;
                    return Err(Error::io(&spool.path, e));
                }
            }
            return Ok(());
        }
        if self.filter_thread.is_none() {
            match FilterThread::start() {
                Ok(t) => self.filter_thread = Some(t),
                Err(e) => {
                    self.poisoned = true;
                    return Err(Error::io(&self.tmp_path, e));
                }
            }
        }
        self.drain_filters(false)?;
        let keys = match self.filter_thread.as_mut() {
            Some(t) => {
                let spare = t.spare.pop().unwrap_or_default();
                std::mem::replace(&mut self.filter_keys, spare)
            }
            None => return Ok(()),
        };
        if let Some(t) = self.filter_thread.as_mut() {
            if let Err(e) = t.send(keys) {
                self.poisoned = true;
                return Err(Error::io(&self.tmp_path, e));
            }
        }
        Ok(())
    }

    /// Spools the filters the thread has built (`all`: every one, ending the thread).
    fn drain_filters(&mut self, all: bool) -> Result<()> {
        let Some(t) = self.filter_thread.as_mut() else {
            return Ok(());
        };
        let got = if all {
            let r = t.finish();
            self.filter_thread = None;
            r
        } else {
            Ok(t.ready())
        };
        let got = match got {
            Ok(g) => g,
            Err(e) => {
                self.poisoned = true;
                return Err(Error::io(&self.tmp_path, e));
            }
        };
        for (f, mut keys) in got {
            if let Some(spool) = self.filters.as_mut() {
                if let Err(e) = spool.push(&f) {
                    self.poisoned = true;
                    return Err(Error::io(&spool.path, e));
                }
            }
            if let Some(t) = self.filter_thread.as_mut() {
                keys.clear();
                t.spare.push(keys);
            }
        }
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if let Err(e) =
            crate::failpoint::check("segment.write").and_then(|()| self.out.write_all(bytes))
        {
            self.poisoned = true;
            return Err(Error::io(&self.tmp_path, e));
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn check_usable(&self) -> Result<()> {
        if self.poisoned {
            return Err(misuse(format!(
                "{}: writer failed earlier and cannot continue",
                self.tmp_path.display()
            )));
        }
        Ok(())
    }
}

/// The fsyncs of a segment finished by [`SegmentWriter::finish_deferred_sync`], running on a
/// thread of their own (none for a temporary segment). Dropping it waits for them too.
#[derive(Default)]
pub struct PendingSync {
    handle: Option<JoinHandle<Result<()>>>,
    path: PathBuf,
}

impl PendingSync {
    /// Waits for the segment file and its directory to be on disk: its error if they failed.
    pub fn wait(mut self) -> Result<()> {
        match self.handle.take().map(|h| h.join()) {
            None => Ok(()),
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::io(
                &self.path,
                std::io::Error::other("the segment's sync thread panicked"),
            )),
        }
    }
}

impl Drop for PendingSync {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn t_id_is_postings(t: &Option<OpenTable>) -> bool {
    t.as_ref().is_some_and(|t| t.id == POSTINGS)
}

/// The public description of a finished table.
pub(super) fn table_meta(d: &DirEntry) -> TableMeta {
    TableMeta {
        id: d.table_id,
        entries: d.entry_count,
        min_key: d.min_key,
        max_key: d.max_key,
        bytes: d.data_len + d.index_len(),
        value_bytes: d.value_bytes,
        blocks: d.block_count,
    }
}

fn misuse(reason: String) -> Error {
    Error::InvalidArgument(reason)
}

/// Makes the rename durable: on POSIX a rename is only persistent once the directory is synced.
fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
