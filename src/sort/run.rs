//! Run files, writing side: the sorted spills of the external sort (format:
//! `format-spec/sort-run.md`), their names, and their deletion.
//!
//! A run is written once by [`RunWriter`], never modified, read back through a memory map by
//! `cursor::RunCursor`, and deleted when its [`TempRun`] guard drops. Every byte is
//! checksummed (header, each block, the block index, the trailer) so that reading a damaged
//! run fails instead of yielding wrong records.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use byteorder::{ByteOrder, LittleEndian as LE};

use super::Record;
use crate::error::{Error, IoResultExt, Result};

/// First 8 bytes of every run file.
pub(crate) const MAGIC: [u8; 8] = *b"NDDSRUN\0";
/// Last 8 bytes of every complete run file (a truncated run lacks them).
pub(crate) const END_MAGIC: [u8; 8] = *b"NDDSEND\0";
/// Run-file format version written and read by this build.
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_LEN: usize = 24;
pub(crate) const BLOCK_HEADER_LEN: usize = 12;
pub(crate) const INDEX_ENTRY_LEN: usize = 16;
pub(crate) const TRAILER_LEN: usize = 40;
/// Target payload bytes per block: small enough that a corrupt block is found before much is
/// consumed, large enough that the 12-byte header and the crc call are noise.
pub(crate) const BLOCK_BYTES: usize = 64 << 10;

/// Process-wide run counter: names stay unique across concurrent sorters of one process.
static NEXT_RUN: AtomicU64 = AtomicU64::new(0);

/// Owns a run file's path and deletes the file when dropped (success, error or panic alike).
#[derive(Debug)]
pub(crate) struct TempRun {
    path: PathBuf,
}

impl TempRun {
    /// Creates a fresh `sort-<pid>-<n>.run` in `dir`, never reusing an existing name.
    fn create(dir: &Path) -> Result<(TempRun, File)> {
        loop {
            let n = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("sort-{}-{n}.run", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok((TempRun { path }, file)),
                // A leftover of an earlier process that had our pid: skip the name.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(path, e)),
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempRun {
    fn drop(&mut self) {
        // Nothing useful to do with a failure here; remove_stale_runs is the backstop.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A finished run: its file guard, size, and merge level (0 = spilled from memory,
/// k = produced by a merge whose deepest input had level k-1).
#[derive(Debug)]
pub(crate) struct SpilledRun {
    pub(crate) file: TempRun,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    pub(crate) level: u32,
}

/// Streams non-decreasing records into a new run file.
pub(crate) struct RunWriter<R: Record> {
    file: TempRun,
    out: BufWriter<File>,
    block: Vec<u8>,
    block_records: usize,
    in_block: u32,
    index: Vec<u8>,
    offset: u64,
    total: u64,
    _record: PhantomData<R>,
}

impl<R: Record> RunWriter<R> {
    /// Starts a run in `dir` with the default block size.
    pub(crate) fn create(dir: &Path) -> Result<Self> {
        Self::with_block_records(dir, (BLOCK_BYTES / R::SIZE).max(1))
    }

    /// Starts a run whose blocks hold at most `block_records` records (tests use tiny blocks).
    pub(crate) fn with_block_records(dir: &Path, block_records: usize) -> Result<Self> {
        let block_records = block_records.clamp(1, u32::MAX as usize / R::SIZE);
        let (file, f) = TempRun::create(dir)?;
        let mut out = BufWriter::with_capacity(256 << 10, f);
        let mut header = [0u8; HEADER_LEN];
        header[0..8].copy_from_slice(&MAGIC);
        LE::write_u32(&mut header[8..12], VERSION);
        LE::write_u32(&mut header[12..16], R::KIND);
        LE::write_u32(&mut header[16..20], R::SIZE as u32);
        let crc = crc32fast::hash(&header[0..20]);
        LE::write_u32(&mut header[20..24], crc);
        out.write_all(&header).at(file.path())?;
        Ok(RunWriter {
            file,
            out,
            block: Vec::with_capacity(block_records * R::SIZE),
            block_records,
            in_block: 0,
            index: Vec::new(),
            offset: HEADER_LEN as u64,
            total: 0,
            _record: PhantomData,
        })
    }

    /// Appends one record; callers push in non-decreasing order (checked by readers).
    #[inline]
    pub(crate) fn push(&mut self, r: &R) -> Result<()> {
        let at = self.block.len();
        self.block.resize(at + R::SIZE, 0);
        r.encode(&mut self.block[at..]);
        self.in_block += 1;
        if self.in_block as usize == self.block_records {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.in_block == 0 {
            return Ok(());
        }
        let crc = crc32fast::hash(&self.block);
        let mut head = [0u8; BLOCK_HEADER_LEN];
        LE::write_u32(&mut head[0..4], self.block.len() as u32);
        LE::write_u32(&mut head[4..8], self.in_block);
        LE::write_u32(&mut head[8..12], crc);
        crate::failpoint::check("run.write").at(self.file.path())?;
        self.out.write_all(&head).at(self.file.path())?;
        self.out.write_all(&self.block).at(self.file.path())?;
        let mut entry = [0u8; INDEX_ENTRY_LEN];
        LE::write_u64(&mut entry[0..8], self.offset);
        LE::write_u32(&mut entry[8..12], self.in_block);
        LE::write_u32(&mut entry[12..16], crc);
        self.index.extend_from_slice(&entry);
        self.offset += (BLOCK_HEADER_LEN + self.block.len()) as u64;
        self.total += u64::from(self.in_block);
        self.block.clear();
        self.in_block = 0;
        Ok(())
    }

    /// Writes the last block, the index and the trailer, and closes the file.
    pub(crate) fn finish(mut self, level: u32) -> Result<SpilledRun> {
        self.flush_block()?;
        let path = self.file.path().to_path_buf();
        self.out.write_all(&self.index).at(&path)?;
        let mut trailer = [0u8; TRAILER_LEN];
        LE::write_u64(&mut trailer[0..8], self.offset);
        LE::write_u64(
            &mut trailer[8..16],
            (self.index.len() / INDEX_ENTRY_LEN) as u64,
        );
        LE::write_u64(&mut trailer[16..24], self.total);
        LE::write_u32(&mut trailer[24..28], crc32fast::hash(&self.index));
        let crc = crc32fast::hash(&trailer[0..28]);
        LE::write_u32(&mut trailer[28..32], crc);
        trailer[32..40].copy_from_slice(&END_MAGIC);
        self.out.write_all(&trailer).at(&path)?;
        // No fsync: a run only has to outlive this process's use of it.
        self.out.flush().at(&path)?;
        let bytes = self.offset + (self.index.len() + TRAILER_LEN) as u64;
        Ok(SpilledRun {
            file: self.file,
            records: self.total,
            bytes,
            level,
        })
    }
}

/// Deletes `sort-<pid>-<n>.run` files left in `dir` by processes that no longer run (a crash
/// skips the guards' cleanup). Files of this process, of live processes (where that can be
/// told: Linux `/proc`) and files not named like runs are left alone. A missing `dir` is
/// fine. Returns how many files were removed.
pub fn remove_stale_runs(dir: &Path) -> Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(run_file_pid) else {
            continue;
        };
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(entry.path(), e)),
        }
    }
    Ok(removed)
}

/// The pid in a run-file name `sort-<pid>-<n>.run`, or None for any other name.
fn run_file_pid(name: &str) -> Option<u32> {
    let (pid, n) = name
        .strip_prefix("sort-")?
        .strip_suffix(".run")?
        .split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

fn process_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        Path::new("/proc").join(pid.to_string()).exists()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        false
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
