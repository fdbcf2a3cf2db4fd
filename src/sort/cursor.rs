//! Run files, reading side: a sequential, verifying cursor over one memory-mapped run.
//!
//! Opening checks the header, trailer and block index (O(blocks)); each block's header and
//! crc32 are checked when the cursor enters it, before any of its records is returned, so a
//! damaged or truncated run yields `Error::BadMagic` / `ChecksumMismatch` / `Corrupt` naming
//! the file and offset, never wrong records and never a panic.

use std::fs::File;
use std::path::{Path, PathBuf};

use byteorder::{ByteOrder, LittleEndian as LE};
use memmap2::Mmap;

use super::run::{
    BLOCK_HEADER_LEN, END_MAGIC, HEADER_LEN, INDEX_ENTRY_LEN, MAGIC, TRAILER_LEN, VERSION,
};
use super::Record;
use crate::error::{Error, IoResultExt, Result};

/// Consumed mapped bytes are handed back to the kernel in steps of this size (checked at
/// each block boundary), so a merge's resident set stays near fan-in x 320 KiB (40 MiB at
/// fan-in 128) instead of growing to the size of the runs. One madvise per 256 KiB is noise.
const RELEASE_STEP: usize = 256 << 10;
const WHAT: &str = "sort run file";

/// Sequential, verifying reader over one memory-mapped run.
pub(crate) struct RunCursor<R: Record> {
    path: PathBuf,
    map: Mmap,
    index_offset: usize,
    block_count: usize,
    next_block: usize,
    pos: usize,
    end: usize,
    released: usize,
    last: Option<R>,
    failed: bool,
}

impl<R: Record> RunCursor<R> {
    /// Maps `path` and validates header, trailer and block index (not yet the blocks: each is
    /// checked when the cursor enters it, so opening costs O(blocks), not O(bytes)).
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).at(path)?;
        // SAFETY: a run file is private to the process that wrote it: created with
        // create_new under a name holding our pid and a process-unique counter, written once
        // and flushed before it is mapped, and never written, truncated or renamed afterwards
        // (only unlinked by its TempRun guard, which leaves a live mapping intact).
        // remove_stale_runs, in any process, only unlinks files of dead pids. So the mapped
        // bytes cannot change while the map lives, which is what makes the &[u8] view sound.
        let map = unsafe { Mmap::map(&file) }.at(path)?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential); // a hint; failure only costs speed
        let (index_offset, block_count) = validate::<R>(path, &map)?;
        Ok(RunCursor {
            path: path.to_path_buf(),
            map,
            index_offset,
            block_count,
            next_block: 0,
            pos: 0,
            end: 0,
            released: 0,
            last: None,
            failed: false,
        })
    }

    /// The next record, `Ok(None)` at the end. After an error it keeps returning `Ok(None)`.
    #[inline]
    pub(crate) fn next_record(&mut self) -> Result<Option<R>> {
        // Without this, a record found out of order was reported again on every later call
        // (the run_damaged fuzz target found it), against the contract above.
        if self.failed {
            return Ok(None);
        }
        if self.pos == self.end && !self.enter_next_block()? {
            return Ok(None);
        }
        let r = R::decode(&self.map[self.pos..self.pos + R::SIZE]);
        if let Some(prev) = self.last {
            if r < prev {
                self.failed = true;
                return Err(Error::corrupt(
                    &self.path,
                    self.pos as u64,
                    "records out of order",
                ));
            }
        }
        self.pos += R::SIZE;
        self.last = Some(r);
        Ok(Some(r))
    }

    /// The records left in the block the cursor is in, encoded (whole records; the block's
    /// crc was checked when the cursor entered it). A caller that reads some of them hands
    /// them back with [`RunCursor::consume`].
    #[inline]
    pub(crate) fn in_block(&self) -> &[u8] {
        &self.map[self.pos..self.end]
    }

    /// Consumes the next `n` records of [`RunCursor::in_block`], the last of which is `last`,
    /// after the caller checked that they do not descend (from the last record returned on).
    #[inline]
    pub(crate) fn consume(&mut self, n: usize, last: R) {
        debug_assert!(n * R::SIZE <= self.end - self.pos);
        self.pos += n * R::SIZE;
        self.last = Some(last);
    }

    /// The error for record `i` of [`RunCursor::in_block`] found out of order; the cursor
    /// returns nothing more.
    pub(crate) fn out_of_order(&mut self, i: usize) -> Error {
        self.failed = true;
        Error::corrupt(
            &self.path,
            (self.pos + i * R::SIZE) as u64,
            "records out of order",
        )
    }

    /// Moves to the next block, verifying it against its index entry and its crc.
    #[cold]
    fn enter_next_block(&mut self) -> Result<bool> {
        if self.failed || self.next_block == self.block_count {
            return Ok(false);
        }
        self.release_consumed();
        let res = self.check_block(self.next_block);
        match res {
            Ok((start, len)) => {
                self.next_block += 1;
                self.pos = start;
                self.end = start + len;
                Ok(true)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn check_block(&self, i: usize) -> Result<(usize, usize)> {
        let e = &self.map[self.index_offset + i * INDEX_ENTRY_LEN..][..INDEX_ENTRY_LEN];
        // validate() proved offsets contiguous and in bounds, so these casts and slices hold.
        let off = LE::read_u64(&e[0..8]) as usize;
        let (count, crc) = (LE::read_u32(&e[8..12]), LE::read_u32(&e[12..16]));
        let head = &self.map[off..off + BLOCK_HEADER_LEN];
        let len = count as usize * R::SIZE;
        if LE::read_u32(&head[0..4]) as usize != len || LE::read_u32(&head[4..8]) != count {
            return Err(Error::corrupt(
                &self.path,
                off as u64,
                "block header disagrees with block index",
            ));
        }
        let stored = LE::read_u32(&head[8..12]);
        let start = off + BLOCK_HEADER_LEN;
        let computed = crc32fast::hash(&self.map[start..start + len]);
        if stored != crc || computed != stored {
            let offset = start as u64;
            return Err(Error::ChecksumMismatch {
                path: self.path.clone(),
                offset,
                stored,
                computed,
            });
        }
        Ok((start, len))
    }

    /// Drops already-consumed pages from our resident set.
    fn release_consumed(&mut self) {
        #[cfg(unix)]
        {
            let upto = self.pos & !(RELEASE_STEP - 1);
            if upto > self.released {
                // SAFETY: DONTNEED on a read-only shared file mapping only evicts pages from
                // this process; a later access re-reads the same bytes from the (unchanging,
                // see `open`) file, so no borrow can observe a change. No slice of the map is
                // alive across this call (we hold &mut self).
                let _ = unsafe {
                    self.map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        self.released,
                        upto - self.released,
                    )
                };
                self.released = upto;
            }
        }
    }
}

/// Checks header, trailer and index of a mapped run; returns (index offset, block count).
fn validate<R: Record>(path: &Path, m: &[u8]) -> Result<(usize, usize)> {
    let len = m.len();
    if len < HEADER_LEN + TRAILER_LEN {
        return Err(Error::corrupt(
            path,
            len as u64,
            format!("truncated: {len} bytes is shorter than an empty run"),
        ));
    }
    if m[0..8] != MAGIC {
        return Err(Error::BadMagic {
            path: path.into(),
            offset: 0,
            what: WHAT,
        });
    }
    let version = LE::read_u32(&m[8..12]);
    if version != VERSION {
        return Err(Error::UnsupportedFormatVersion {
            path: path.into(),
            found: version,
            supported: VERSION,
        });
    }
    check_crc(path, 0, &m[0..20], LE::read_u32(&m[20..24]))?;
    let (kind, size) = (LE::read_u32(&m[12..16]), LE::read_u32(&m[16..20]));
    if kind != R::KIND || size as usize != R::SIZE {
        let why = format!(
            "run holds record kind {kind} size {size}, expected kind {} size {}",
            R::KIND,
            R::SIZE
        );
        return Err(Error::corrupt(path, 12, why));
    }
    let t_off = len - TRAILER_LEN;
    let t = &m[t_off..];
    if t[32..40] != END_MAGIC {
        // Usually a run cut short (a crash or a full disk while writing it).
        return Err(Error::corrupt(
            path,
            (len - 8) as u64,
            "no end magic: truncated or damaged run",
        ));
    }
    check_crc(path, t_off as u64, &t[0..28], LE::read_u32(&t[28..32]))?;
    let (index_offset, block_count, total) = (
        LE::read_u64(&t[0..8]),
        LE::read_u64(&t[8..16]),
        LE::read_u64(&t[16..24]),
    );
    let index_len = block_count.checked_mul(INDEX_ENTRY_LEN as u64);
    let fits = index_len.and_then(|l| l.checked_add(index_offset)) == Some(t_off as u64);
    if !fits || index_offset < HEADER_LEN as u64 {
        return Err(Error::corrupt(
            path,
            t_off as u64,
            "trailer index offset/block count do not match the file length",
        ));
    }
    let (index_offset, block_count) = (index_offset as usize, block_count as usize);
    let index = &m[index_offset..t_off];
    check_crc(path, index_offset as u64, index, LE::read_u32(&t[24..28]))?;
    // Blocks must tile [HEADER_LEN, index_offset) exactly, so cursors can trust the offsets.
    let (mut expect, mut sum) = (HEADER_LEN as u64, 0u64);
    for (i, e) in index.chunks_exact(INDEX_ENTRY_LEN).enumerate() {
        let (off, count) = (LE::read_u64(&e[0..8]), u64::from(LE::read_u32(&e[8..12])));
        let end = expect + BLOCK_HEADER_LEN as u64 + count * R::SIZE as u64;
        if off != expect || count == 0 || end > index_offset as u64 {
            let at = (index_offset + i * INDEX_ENTRY_LEN) as u64;
            return Err(Error::corrupt(
                path,
                at,
                format!("block index entry {i} does not tile the file"),
            ));
        }
        expect = end;
        sum += count;
    }
    if expect != index_offset as u64 || sum != total {
        return Err(Error::corrupt(
            path,
            t_off as u64,
            "block index does not cover the blocks or the record count",
        ));
    }
    Ok((index_offset, block_count))
}

fn check_crc(path: &Path, offset: u64, bytes: &[u8], stored: u32) -> Result<()> {
    let computed = crc32fast::hash(bytes);
    if computed != stored {
        return Err(Error::ChecksumMismatch {
            path: path.into(),
            offset,
            stored,
            computed,
        });
    }
    Ok(())
}
