//! Out-of-core external sort for fixed-width records ((shingle hash, doc) postings and
//! (doc, doc) pairs) under a memory budget.
//!
//! Records are buffered up to `mem_bytes`, sorted in memory (rayon), and spilled as checksummed
//! run files (`run.rs` writes them, `cursor.rs` reads them; format in
//! `format-spec/sort-run.md`); `finish` then k-way merges the memory-mapped runs with a loser
//! tree (`merge.rs`), with intermediate passes when there are more runs than
//! `fan_in`. With N records and m records per run that is O(N log N) comparisons and
//! O(N log_fan_in(N/m)) bytes of run I/O. If nothing spilled, the output streams from memory.
//!
//! Memory: the buffer is allocated once at exactly the budget's worth of records (no Vec
//! doubling); merging holds per-run cursors, a 64 KiB block and the mapped pages it is
//! reading, which it hands back to the kernel as it goes.

#[doc(hidden)]
mod bucket;
mod cursor;
pub mod fuzz;
mod merge;
pub mod prefault;
mod record;
mod run;
mod spool;
mod transpose;

use std::path::PathBuf;

use rayon::slice::ParallelSliceMut;

use crate::error::{Error, IoResultExt, Result};
pub use bucket::{par_sort_keyed, DocKeys, Keyed};
pub use merge::SortedStream;
pub use record::{DocHash, DocPair, KeyDoc, ProbeRecord, Record};
pub use run::remove_stale_runs;
pub use spool::{Spool, SpoolFile, SpoolReader};
pub use transpose::{Transposed, Transposer};

/// The default memory budget of sorts and joins: a quarter of physical memory (from
/// /proc/meminfo), at least 64 MiB; 1 GiB when it cannot be read.
pub fn default_mem() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    total.map(|t| (t / 4).max(64 << 20)).unwrap_or(1 << 30)
}
use run::{RunWriter, SpilledRun};

/// Options of one sort.
#[derive(Clone, Debug)]
pub struct SortOptions {
    /// Budget for the in-memory buffer, in bytes of in-memory records (`size_of::<R>()` each,
    /// e.g. 16 for `KeyDoc`, which encodes to 12 bytes on disk). At least one record.
    pub mem_bytes: u64,
    /// Where run files go (the engine passes `<index>/tmp/`); created on first spill.
    pub tmp_dir: PathBuf,
    /// Most runs merged at once (>= 2); more runs cause intermediate merge passes.
    pub fan_in: usize,
    /// Drop exact duplicate records from the output.
    pub dedup: bool,
}

impl SortOptions {
    /// Options with the default fan-in (128) and no dedup.
    pub fn new(mem_bytes: u64, tmp_dir: impl Into<PathBuf>) -> Self {
        SortOptions {
            mem_bytes,
            tmp_dir: tmp_dir.into(),
            fan_in: DEFAULT_FAN_IN,
            dedup: false,
        }
    }
}

impl Default for SortOptions {
    /// 256 MiB, the system temp dir, fan-in 128, no dedup. The engine overrides `tmp_dir`.
    fn default() -> Self {
        SortOptions::new(DEFAULT_MEM_BYTES, std::env::temp_dir())
    }
}

/// Bytes the sort buffer is faulted in ahead at first (the step then grows with it).
const FIRST_STEP: usize = 64 << 10;

/// Default memory budget: 256 MiB.
pub const DEFAULT_MEM_BYTES: u64 = 256 << 20;

/// Default fan-in: 128 cursors of 64 KiB blocks is cheap, and 128 runs of a 256 MiB budget
/// already cover 32 GiB in a single merge pass.
pub const DEFAULT_FAN_IN: usize = 128;

/// What a sort did, for logs and for checking the O(N log(N/m)) behaviour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortStats {
    /// Records pushed (before dedup).
    pub records: u64,
    /// Runs spilled from the in-memory buffer.
    pub runs_spilled: u64,
    /// Bytes of those runs.
    pub bytes_spilled: u64,
    /// Intermediate merges (each writes one new run).
    pub intermediate_merges: u64,
    /// Bytes written by intermediate merges.
    pub bytes_merged: u64,
    /// Times the most-merged record is read back from disk: 0 = sorted in memory, 1 = one
    /// final merge, 1 + k = k intermediate levels. Set by `finish`.
    pub merge_passes: u32,
}

/// Sorts records of type `R` within a memory budget. Dropping it deletes its run files.
pub struct ExternalSorter<R: Record> {
    opts: SortOptions,
    capacity: usize,
    buf: Vec<R>,
    /// Records the buffer takes before `make_room` is called again (its capacity, or less
    /// while its pages are faulted in ahead by steps).
    ready: usize,
    runs: Vec<SpilledRun>,
    stats: SortStats,
    dir_ready: bool,
}

impl<R: Record> ExternalSorter<R> {
    /// Checks the options; allocates nothing until the first push.
    pub fn new(opts: SortOptions) -> Result<Self> {
        let per = std::mem::size_of::<R>().max(1) as u64;
        if opts.mem_bytes < per {
            return Err(Error::InvalidArgument(format!(
                "sort memory budget {} B is below one record ({per} B)",
                opts.mem_bytes
            )));
        }
        if opts.fan_in < 2 {
            return Err(Error::InvalidArgument(format!(
                "sort fan-in must be at least 2, got {}",
                opts.fan_in
            )));
        }
        let capacity = usize::try_from(opts.mem_bytes / per).unwrap_or(usize::MAX);
        Ok(ExternalSorter {
            opts,
            capacity,
            buf: Vec::new(),
            ready: 0,
            runs: Vec::new(),
            stats: SortStats::default(),
            dir_ready: false,
        })
    }

    /// Adds a record, first spilling the buffer if it is full.
    #[inline]
    pub fn push(&mut self, r: R) -> Result<()> {
        if self.buf.len() == self.ready {
            self.make_room()?;
        }
        self.buf.push(r); // within capacity: never reallocates
        self.stats.records += 1;
        Ok(())
    }

    /// Adds every record of `it`.
    pub fn extend(&mut self, it: impl IntoIterator<Item = R>) -> Result<()> {
        for r in it {
            self.push(r)?;
        }
        Ok(())
    }

    /// Statistics so far (`merge_passes` is only known after `finish`; see `SortedStream::stats`).
    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// The buffer is full up to `ready`: allocate it on first use, fault in its next pages
    /// when it has room, otherwise spill it.
    #[cold]
    fn make_room(&mut self) -> Result<()> {
        if self.buf.len() < self.buf.capacity() {
            self.ready_more();
            return Ok(());
        }
        if self.buf.capacity() == 0 {
            // Exactly the budget, once; try_ so an absurd budget is an error, not an abort.
            self.buf.try_reserve_exact(self.capacity).map_err(|e| {
                Error::InvalidArgument(format!(
                    "cannot allocate a {} B sort buffer: {e}",
                    self.opts.mem_bytes
                ))
            })?;
            self.ready_more();
            return Ok(());
        }
        self.spill()?;
        self.ready_more();
        Ok(())
    }

    /// Moves `ready` on by a step whose pages are faulted in at once (written front to back
    /// once per run, the buffer would otherwise trap once per 4 KiB page), at most to the
    /// capacity. The step grows with what the buffer holds (as much again, from 64 KiB up to
    /// `prefault::STEP`), so a small sort (a method table's few thousand records) does not
    /// fault in 4 MiB it never writes.
    fn ready_more(&mut self) {
        let len = self.buf.len();
        let size = std::mem::size_of::<R>().max(1);
        let ahead = (len * size).clamp(FIRST_STEP, prefault::STEP);
        let step = (ahead / size).max(1);
        // Pages below `ready` are in already (a spilled run's).
        let from = self.ready.max(len);
        let to = len.saturating_add(step).min(self.buf.capacity());
        if to > from {
            prefault::populate(&self.buf, from, to);
        }
        self.ready = to.max(from);
    }

    fn sort_buffer(&mut self) {
        // Small buffers are not worth waking the pool for.
        if self.buf.len() > 1 << 14 {
            self.buf.par_sort_unstable();
        } else {
            self.buf.sort_unstable();
        }
        if self.opts.dedup {
            self.buf.dedup();
        }
    }

    /// Sorts the buffer and writes it out as a level-0 run.
    fn spill(&mut self) -> Result<()> {
        self.sort_buffer();
        if !self.dir_ready {
            std::fs::create_dir_all(&self.opts.tmp_dir).at(&self.opts.tmp_dir)?;
            self.dir_ready = true;
        }
        let mut w = RunWriter::<R>::create(&self.opts.tmp_dir)?;
        for r in &self.buf {
            w.push(r)?;
        }
        let run = w.finish(0)?;
        self.stats.runs_spilled += 1;
        self.stats.bytes_spilled += run.bytes;
        self.runs.push(run);
        self.buf.clear(); // keeps the allocation for the next run
        Ok(())
    }

    /// Whether `finish_streamed` / `finish_sliced` sort in buckets on a thread of their own:
    /// nothing spilled, the records have a radix key (and no dedup), and the partition's copy
    /// of the records fits the budget too.
    fn bucket_sorted(&self) -> bool {
        R::RADIX
            && self.runs.is_empty()
            && !self.opts.dedup
            && self.buf.len() >= bucket::MIN_RECORDS
            && self.buf.len() <= self.capacity / 2
    }

    /// Ends input and hands `consume` the records in order; returns what it returns. When
    /// nothing spilled, the records have a radix key (and no dedup) and a copy of them fits
    /// the budget, the buffer is partitioned by that key into a copy and its buckets are sorted on a thread of their own while
    /// `consume` reads the ones sorted already (`bucket`); otherwise this is
    /// [`ExternalSorter::finish`]. The same records in the same order either way.
    pub fn finish_streamed<T>(
        mut self,
        consume: impl FnOnce(&mut dyn Iterator<Item = Result<R>>) -> Result<T>,
    ) -> Result<T> {
        if self.bucket_sorted() {
            let buf = std::mem::take(&mut self.buf);
            return bucket::sort_streamed(buf, consume);
        }
        consume(&mut self.finish()?)
    }

    /// [`ExternalSorter::finish_streamed`] a slice of records at a time: the bucket path hands
    /// `consume` each sorted bucket as it is, the other paths copy [`SLICE_RECORDS`] records
    /// at a time from the stream. The same records in the same order.
    pub fn finish_sliced<T>(
        mut self,
        consume: impl FnOnce(&mut dyn SortedSlices<R>) -> Result<T>,
    ) -> Result<T> {
        if self.bucket_sorted() {
            let buf = std::mem::take(&mut self.buf);
            return bucket::sort_sliced(buf, consume);
        }
        consume(&mut Buffered::new(self.finish()?))
    }

    /// Ends input and returns the records in order. Runs beyond the fan-in are merged first;
    /// the last buffer stays in memory as a merge input when that does not add a pass.
    pub fn finish(mut self) -> Result<SortedStream<R>> {
        if self.runs.is_empty() {
            self.sort_buffer();
            let buf = std::mem::take(&mut self.buf);
            return Ok(SortedStream::from_memory(buf, self.stats));
        }
        if !self.buf.is_empty() && self.runs.len() + 1 > self.opts.fan_in {
            self.spill()?;
        } else {
            self.sort_buffer();
        }
        let runs = std::mem::take(&mut self.runs);
        let runs = merge::reduce_runs::<R>(
            runs,
            self.opts.fan_in,
            &self.opts.tmp_dir,
            self.opts.dedup,
            &mut self.stats,
        )?;
        let tail = std::mem::take(&mut self.buf);
        SortedStream::merge(runs, tail, self.opts.dedup, self.stats)
    }
}

impl ExternalSorter<KeyDoc> {
    /// [`ExternalSorter::finish_sliced`] of the records `lists` gives followed by those pushed
    /// (none, where it pays): when nothing was pushed and the bucket path would take the
    /// lists' records, they are partitioned from the lists themselves (no buffer of them in
    /// doc order: the caller keeps the lists anyway); else they are pushed first. The same
    /// records in the same order either way.
    pub fn finish_sliced_lists<T>(
        mut self,
        lists: &DocKeys<'_>,
        consume: impl FnOnce(&mut dyn SortedSlices<KeyDoc>) -> Result<T>,
    ) -> Result<T> {
        if !lists.is_valid() {
            return Err(Error::InvalidArgument(format!(
                "sort input: {} lists do not end at their {} keys in ascending order",
                lists.ends.len(),
                lists.keys.len()
            )));
        }
        let n = lists.keys.len();
        if self.buf.is_empty()
            && self.runs.is_empty()
            && !self.opts.dedup
            && n >= bucket::MIN_RECORDS
            && n <= self.capacity / 2
        {
            return bucket::sort_sliced_lists(lists, consume);
        }
        self.push_lists(lists)?;
        self.finish_sliced(consume)
    }

    /// Pushes the records `lists` gives, in doc order (the lists must be valid:
    /// [`DocKeys::is_valid`]).
    pub fn push_lists(&mut self, lists: &DocKeys<'_>) -> Result<()> {
        use bucket::Parts;
        let mut pushed = Ok(());
        lists.each(0, lists.count(), |r| {
            if pushed.is_ok() {
                pushed = self.push(r);
            }
        });
        pushed
    }
}

/// Sorted records, a slice at a time ([`ExternalSorter::finish_sliced`]).
pub trait SortedSlices<R> {
    /// The next records in order (not empty), or None at the end.
    fn next_slice(&mut self) -> Result<Option<&[R]>>;
}

/// Records a [`Buffered`] copies from its stream per slice.
pub const SLICE_RECORDS: usize = 4096;

/// [`SortedSlices`] over a stream of records: copies up to [`SLICE_RECORDS`] at a time.
pub struct Buffered<I, R> {
    it: I,
    buf: Vec<R>,
}

impl<I, R> Buffered<I, R> {
    pub fn new(it: I) -> Self {
        Buffered {
            it,
            buf: Vec::new(),
        }
    }
}

impl<R: Copy, I: Iterator<Item = Result<R>>> SortedSlices<R> for Buffered<I, R> {
    fn next_slice(&mut self) -> Result<Option<&[R]>> {
        self.buf.clear();
        for r in self.it.by_ref() {
            self.buf.push(r?);
            if self.buf.len() == SLICE_RECORDS {
                break;
            }
        }
        Ok((!self.buf.is_empty()).then_some(&self.buf[..]))
    }
}

#[cfg(test)]
mod tests;
