//! Transposing `(a, b)` records that arrive in ascending `b`: format 3's `(doc, rank)` records,
//! which the postings give in rank order and FORWARD wants grouped by document.
//!
//! A general sort would compare whole records and merge its runs record by record. Here the
//! arrival order does half the work:
//! - **Within a buffer** the records are already in `b` order, so a stable sort by `a` alone
//!   (a least-significant-digit radix sort over the buffer's range of `a`, two passes for up to
//!   16 M distinct values) gives `(a, b)` order. No comparisons.
//! - **Across runs** every `b` of run `i` is at most every `b` of run `i + 1` (the runs are
//!   consecutive pieces of the arrival order). So the records of one `a` come out of the runs
//!   already in order by concatenating what each run holds for it, run by run: no merge tree,
//!   one check of each run's head per `a`.
//! - **Off the caller's thread.** A full buffer is sorted and written by a thread of its own
//!   while the caller fills the other buffer.
//!
//! Memory: a filling buffer, a spilling one and the radix sort's scratch, a quarter of
//! `mem_bytes` each (so three quarters of the budget at most); the runs are the sort's own run
//! files (`format-spec/sort-run.md`), read back through memory-mapped cursors that hand
//! consumed pages back to the kernel.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use super::cursor::RunCursor;
use super::merge::Source;
use super::run::{RunWriter, SpilledRun};
use super::{DocPair, SortOptions};
use crate::error::{Error, IoResultExt, Result};

/// Bits of `a` a radix pass sorts by (4,096 counters: 16 KiB, in L1).
const DIGIT_BITS: u32 = 12;
/// Records below which a buffer is sorted by comparison (the counters would dominate).
const SMALL: usize = 1 << 12;
/// The smallest buffer, whatever the budget (tests run tiny budgets through many runs).
const MIN_BUFFER: usize = 256;

/// `(a, b)` records pushed in ascending `b`, returned grouped by `a` ([`Transposer::finish`]).
pub struct Transposer {
    tmp_dir: PathBuf,
    /// Records per buffer (a quarter of the budget).
    cap: usize,
    buf: Vec<DocPair>,
    last_b: u32,
    /// The buffer being sorted and written, on its thread.
    spilling: Option<JoinHandle<Result<Spilled>>>,
    /// An emptied buffer and the radix scratch, back from the last spill.
    spare: Option<Vec<DocPair>>,
    scratch: Vec<DocPair>,
    runs: Vec<SpilledRun>,
    dir_ready: bool,
}

/// What a spill thread gives back: the run, its emptied buffer and the scratch.
struct Spilled {
    run: SpilledRun,
    buf: Vec<DocPair>,
    scratch: Vec<DocPair>,
}

impl Transposer {
    /// A transposer within `opts.mem_bytes` whose runs go to `opts.tmp_dir`.
    pub fn new(opts: &SortOptions) -> Transposer {
        let cap = usize::try_from(opts.mem_bytes / 4 / std::mem::size_of::<DocPair>() as u64)
            .unwrap_or(usize::MAX)
            .max(MIN_BUFFER);
        Transposer {
            tmp_dir: opts.tmp_dir.clone(),
            cap,
            buf: Vec::new(),
            last_b: 0,
            spilling: None,
            spare: None,
            scratch: Vec::new(),
            runs: Vec::new(),
            dir_ready: false,
        }
    }

    /// Adds a record; `p.b` must be at least the last record's.
    #[inline]
    pub fn push(&mut self, p: DocPair) -> Result<()> {
        if p.b < self.last_b {
            return Err(Error::InvalidArgument(format!(
                "transpose: record ({}, {}) after b = {}",
                p.a, p.b, self.last_b
            )));
        }
        self.last_b = p.b;
        if self.buf.len() == self.buf.capacity() {
            self.make_room()?;
        }
        self.buf.push(p);
        Ok(())
    }

    /// Runs written or being written.
    pub fn runs(&self) -> usize {
        self.runs.len() + usize::from(self.spilling.is_some())
    }

    #[cold]
    fn make_room(&mut self) -> Result<()> {
        if self.buf.len() < self.cap {
            // Grows as a vector does up to the buffer's size: a small transpose never
            // allocates the whole budget.
            let want = (self.buf.len() * 2).max(SMALL).min(self.cap);
            self.buf.reserve_exact(want - self.buf.len());
            return Ok(());
        }
        self.spill()
    }

    /// Hands the full buffer to a spill thread, once the previous spill is done (whose
    /// buffer becomes the one filled next).
    fn spill(&mut self) -> Result<()> {
        self.wait()?;
        if !self.dir_ready {
            std::fs::create_dir_all(&self.tmp_dir).at(&self.tmp_dir)?;
            self.dir_ready = true;
        }
        let next = match self.spare.take() {
            Some(b) => b,
            None => {
                let mut b = Vec::new();
                b.try_reserve_exact(self.cap).map_err(|e| {
                    Error::InvalidArgument(format!("cannot allocate a transpose buffer: {e}"))
                })?;
                b
            }
        };
        let full = std::mem::replace(&mut self.buf, next);
        let scratch = std::mem::take(&mut self.scratch);
        let dir = self.tmp_dir.clone();
        let h = std::thread::Builder::new()
            .name("ndd-transpose".into())
            .spawn(move || spill_run(full, scratch, &dir))
            .map_err(|e| Error::io(self.tmp_dir.clone(), e))?;
        self.spilling = Some(h);
        Ok(())
    }

    /// Waits for the spill thread, keeping its run, buffer and scratch.
    fn wait(&mut self) -> Result<()> {
        if let Some(h) = self.spilling.take() {
            let s = h.join().map_err(|_| {
                Error::InvalidArgument("transpose: a spill thread panicked".into())
            })??;
            self.runs.push(s.run);
            self.spare = Some(s.buf);
            self.scratch = s.scratch;
        }
        Ok(())
    }

    /// Ends input: the records grouped by `a`, `b` ascending within each group.
    pub fn finish(mut self) -> Result<Transposed> {
        self.wait()?;
        self.spare = None;
        let mut tail = std::mem::take(&mut self.buf);
        let mut scratch = std::mem::take(&mut self.scratch);
        sort_by_a(&mut tail, &mut scratch);
        drop(scratch);
        let runs = std::mem::take(&mut self.runs);
        let mut sources = Vec::with_capacity(runs.len() + 1);
        for run in &runs {
            sources.push(Source::Run(RunCursor::open(run.file.path())?));
        }
        sources.push(Source::Mem(tail.into_iter()));
        let heads = sources
            .iter_mut()
            .map(Source::next_record)
            .collect::<Result<Vec<_>>>()?;
        Ok(Transposed {
            sources,
            heads,
            _runs: runs,
        })
    }
}

impl Drop for Transposer {
    fn drop(&mut self) {
        // A spill still running owns a run file: let it finish and remove it.
        if let Some(h) = self.spilling.take() {
            let _ = h.join();
        }
    }
}

/// Sorts `buf` (in `b` order) by `a` and writes it as a run; the emptied buffer and the
/// scratch go back to the transposer.
fn spill_run(mut buf: Vec<DocPair>, mut scratch: Vec<DocPair>, dir: &Path) -> Result<Spilled> {
    sort_by_a(&mut buf, &mut scratch);
    let mut w = RunWriter::<DocPair>::create(dir)?;
    for p in &buf {
        w.push(p)?;
    }
    let run = w.finish(0)?;
    buf.clear();
    Ok(Spilled { run, buf, scratch })
}

/// Sorts `v` by `a`, stably: records in `b` order come out in `(a, b)` order. A radix sort
/// over `a - min(a)` by [`DIGIT_BITS`] at a time, through `scratch` (grown to `v`'s length);
/// small buffers by comparison.
pub(crate) fn sort_by_a(v: &mut Vec<DocPair>, scratch: &mut Vec<DocPair>) {
    if v.len() < SMALL {
        v.sort_by_key(|p| p.a);
        return;
    }
    let (lo, hi) = v
        .iter()
        .fold((u32::MAX, 0), |(lo, hi), p| (lo.min(p.a), hi.max(p.a)));
    let bits = 32 - (hi - lo).leading_zeros();
    if bits == 0 {
        return; // one value of a: already in b order
    }
    let passes = bits.div_ceil(DIGIT_BITS);
    let width = bits.div_ceil(passes); // balanced digits: 20 bits are two of 10
    let buckets = 1usize << width;
    let mask = (buckets - 1) as u32;
    scratch.clear();
    scratch.reserve_exact(v.len());
    // Every slot is overwritten by the first pass; the resize is one memset.
    scratch.resize(v.len(), DocPair::default());
    let mut counts = vec![0usize; buckets];
    for pass in 0..passes {
        let shift = pass * width;
        counts.iter_mut().for_each(|c| *c = 0);
        for p in v.iter() {
            counts[((p.a - lo) >> shift & mask) as usize] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for p in v.iter() {
            let d = ((p.a - lo) >> shift & mask) as usize;
            scratch[counts[d]] = *p;
            counts[d] += 1;
        }
        std::mem::swap(v, scratch);
    }
}

/// The records of a [`Transposer`], read one `a` at a time in ascending `a`.
pub struct Transposed {
    /// The runs in order, then the last buffer (sorted).
    sources: Vec<Source<DocPair>>,
    /// Each source's next record.
    heads: Vec<Option<DocPair>>,
    /// Keeps the run files until the cursors are done with them.
    _runs: Vec<SpilledRun>,
}

impl Transposed {
    /// Appends to `out` the `b` of every record with `a` (ascending), consuming the records
    /// with a smaller `a` too: the smallest of those is returned (a record whose `a` the
    /// caller skipped), None when there was none.
    pub fn take(&mut self, a: u32, out: &mut Vec<u64>) -> Result<Option<u32>> {
        let mut skipped: Option<u32> = None;
        for (s, head) in self.sources.iter_mut().zip(&mut self.heads) {
            while let Some(p) = *head {
                if p.a > a {
                    break;
                }
                if p.a < a {
                    skipped = Some(skipped.map_or(p.a, |x| x.min(p.a)));
                } else {
                    out.push(u64::from(p.b));
                    if let Source::Run(c) = s {
                        take_in_block(c, p, out)?;
                    }
                }
                *head = s.next_record()?;
            }
        }
        Ok(skipped)
    }

    /// The smallest `a` not taken yet.
    pub fn next_a(&self) -> Option<u32> {
        self.heads.iter().filter_map(|h| h.map(|p| p.a)).min()
    }
}

/// The records of `c`'s current block that follow `p` with the same `a`, their `b`s appended
/// to `out`: a document's ranks in a run lie together, and are taken here as one slice
/// instead of one `next_record` each (the order check kept: `b` must not descend).
#[inline]
fn take_in_block(c: &mut RunCursor<DocPair>, p: DocPair, out: &mut Vec<u64>) -> Result<()> {
    let (records, _) = c.in_block().as_chunks::<8>();
    let mut last = p;
    let mut n = 0;
    for r in records {
        let q = DocPair {
            a: u32::from_le_bytes([r[0], r[1], r[2], r[3]]),
            b: u32::from_le_bytes([r[4], r[5], r[6], r[7]]),
        };
        if q.a != p.a {
            break;
        }
        if q.b < last.b {
            return Err(c.out_of_order(n));
        }
        out.push(u64::from(q.b));
        last = q;
        n += 1;
    }
    c.consume(n, last);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records in `b` order, spread over `docs` values of `a` (a small LCG: deterministic).
    fn records(n: usize, docs: u32, a0: u32) -> Vec<DocPair> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                DocPair {
                    a: a0 + ((x >> 33) as u32 % docs),
                    b: (i / 3) as u32, // equal b's too
                }
            })
            .collect()
    }

    fn expect(recs: &[DocPair]) -> Vec<DocPair> {
        let mut want = recs.to_vec();
        want.sort_unstable();
        want
    }

    #[test]
    fn sort_by_a_gives_a_then_b_order() {
        for (n, docs, a0) in [
            (10, 3, 0),
            (5000, 1, 7),
            (5000, 2, u32::MAX - 2),
            (100_000, 1000, 5),
            (100_000, 1 << 20, 0),
            (200_000, u32::MAX, 0), // three passes of 11 bits
        ] {
            let recs = records(n, docs, a0);
            let mut v = recs.clone();
            sort_by_a(&mut v, &mut Vec::new());
            assert_eq!(v, expect(&recs), "n {n} docs {docs}");
        }
    }

    fn transposed(recs: &[DocPair], mem_bytes: u64) -> (Vec<DocPair>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transposer::new(&SortOptions::new(mem_bytes, dir.path()));
        for &p in recs {
            t.push(p).unwrap();
        }
        let runs = t.runs();
        let mut out = t.finish().unwrap();
        let mut got = Vec::new();
        let mut bs = Vec::new();
        while let Some(a) = out.next_a() {
            bs.clear();
            assert_eq!(out.take(a, &mut bs).unwrap(), None);
            got.extend(bs.iter().map(|&b| DocPair { a, b: b as u32 }));
        }
        // Every run file is gone once the output is.
        drop(out);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        (got, runs)
    }

    #[test]
    fn transposes_in_memory_and_through_runs() {
        let recs = records(300_000, 5000, 100);
        let want = expect(&recs);
        // In memory (no run), then through 1, several and many runs.
        for (mem, min_runs) in [(64 << 20, 0), (2 << 20, 1), (256 << 10, 3), (64, 1000)] {
            let (got, runs) = transposed(&recs, mem);
            assert!(runs >= min_runs, "mem {mem}: {runs} runs");
            assert_eq!(got, want, "mem {mem}");
        }
    }

    #[test]
    fn take_reports_skipped_values_and_refuses_descending_b() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transposer::new(&SortOptions::new(128 << 10, dir.path()));
        for p in records(50_000, 40, 10) {
            t.push(p).unwrap();
        }
        let mut out = t.finish().unwrap();
        let mut bs = Vec::new();
        assert_eq!(out.next_a(), Some(10));
        // Asking for 12 first: 10 and 11 are skipped, 10 is named.
        assert_eq!(out.take(12, &mut bs).unwrap(), Some(10));
        assert!(!bs.is_empty());
        assert_eq!(out.next_a(), Some(13));

        let mut t = Transposer::new(&SortOptions::new(1 << 20, dir.path()));
        t.push(DocPair { a: 1, b: 5 }).unwrap();
        let e = t.push(DocPair { a: 0, b: 4 }).unwrap_err();
        assert!(e.to_string().contains("after b = 5"), "{e}");
    }
}
