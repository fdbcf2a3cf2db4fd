//! k-way merging of sorted sources: a loser tree over run cursors (and at most one in-memory
//! tail), intermediate merge passes when there are more runs than the fan-in allows, and the
//! [`SortedStream`] handed to callers.

use std::cmp::Reverse;
use std::path::Path;

use super::cursor::RunCursor;
use super::run::{RunWriter, SpilledRun, TempRun};
use super::{Record, SortStats};
use crate::error::Result;

/// One sorted input of a merge.
pub(crate) enum Source<R: Record> {
    Run(RunCursor<R>),
    Mem(std::vec::IntoIter<R>),
}

impl<R: Record> Source<R> {
    #[inline]
    pub(crate) fn next_record(&mut self) -> Result<Option<R>> {
        match self {
            Source::Run(c) => c.next_record(),
            Source::Mem(it) => Ok(it.next()),
        }
    }
}

/// Tournament ("loser") tree: one comparison per level per record, against the binary heap's
/// two. `losers[1..k]` hold the loser of each internal node, `losers[0]` the overall winner;
/// leaf i sits at implicit node k + i. An exhausted source's head is `None`, which loses to
/// everything.
pub(crate) struct Merger<R: Record> {
    sources: Vec<Source<R>>,
    heads: Vec<Option<R>>,
    losers: Vec<usize>,
}

impl<R: Record> Merger<R> {
    pub(crate) fn new(mut sources: Vec<Source<R>>) -> Result<Self> {
        let heads = sources
            .iter_mut()
            .map(Source::next_record)
            .collect::<Result<Vec<_>>>()?;
        let k = sources.len();
        let mut m = Merger {
            sources,
            heads,
            losers: vec![0; k.max(1)],
        };
        if k > 0 {
            m.losers[0] = m.build(1);
        }
        Ok(m)
    }

    /// Plays the subtree under `node`, records its losers, returns its winner.
    fn build(&mut self, node: usize) -> usize {
        let k = self.sources.len();
        if node >= k {
            return node - k;
        }
        let (l, r) = (self.build(2 * node), self.build(2 * node + 1));
        let (win, lose) = if self.beats(r, l) { (r, l) } else { (l, r) };
        self.losers[node] = lose;
        win
    }

    /// True if source `a`'s head sorts strictly before source `b`'s.
    #[inline]
    fn beats(&self, a: usize, b: usize) -> bool {
        match (&self.heads[a], &self.heads[b]) {
            (Some(x), Some(y)) => x < y,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The smallest remaining record across all sources.
    #[inline]
    pub(crate) fn next_record(&mut self) -> Result<Option<R>> {
        let k = self.sources.len();
        if k == 0 {
            return Ok(None);
        }
        let mut w = self.losers[0];
        let Some(out) = self.heads[w] else {
            return Ok(None);
        };
        self.heads[w] = self.sources[w].next_record()?;
        let mut node = (w + k) / 2;
        while node >= 1 {
            if self.beats(self.losers[node], w) {
                std::mem::swap(&mut self.losers[node], &mut w);
            }
            node /= 2;
        }
        self.losers[0] = w;
        Ok(Some(out))
    }
}

/// Merges more-than-`fan_in` runs down to exactly `fan_in` (or fewer if there were fewer),
/// k-ary Huffman style: always merge the smallest runs, the first merge taking just enough
/// runs that every later one takes a full `fan_in`. This minimizes bytes rewritten and gives
/// ceil(log_fan_in(runs)) levels for equal-sized runs, i.e. O(N log(N/m)) total work.
pub(crate) fn reduce_runs<R: Record>(
    mut runs: Vec<SpilledRun>,
    fan_in: usize,
    dir: &Path,
    dedup: bool,
    stats: &mut SortStats,
) -> Result<Vec<SpilledRun>> {
    debug_assert!(fan_in >= 2);
    let mut take = (runs.len().saturating_sub(2)) % (fan_in - 1) + 2;
    while runs.len() > fan_in {
        // Smallest at the end (a stable sort, so the choice among equal sizes is deterministic).
        runs.sort_by_key(|r| Reverse(r.records));
        let group = runs.split_off(runs.len() - take);
        let merged = merge_to_run::<R>(group, dir, dedup)?;
        stats.intermediate_merges += 1;
        stats.bytes_merged += merged.bytes;
        runs.push(merged);
        take = fan_in;
    }
    Ok(runs)
}

/// Merges `group` into one new run one level above its deepest input; the inputs are deleted
/// when this returns (their guards drop), the output is deleted if writing it fails.
fn merge_to_run<R: Record>(group: Vec<SpilledRun>, dir: &Path, dedup: bool) -> Result<SpilledRun> {
    let level = group.iter().map(|r| r.level).max().unwrap_or(0) + 1;
    let sources = group
        .iter()
        .map(|r| RunCursor::open(r.file.path()).map(Source::Run))
        .collect::<Result<Vec<_>>>()?;
    let mut merger = Merger::new(sources)?;
    let mut out = RunWriter::<R>::create(dir)?;
    let mut last: Option<R> = None;
    while let Some(r) = merger.next_record()? {
        if dedup && last == Some(r) {
            continue;
        }
        out.push(&r)?;
        last = Some(r);
    }
    out.finish(level)
}

enum Inner<R: Record> {
    Memory(std::vec::IntoIter<R>),
    Merge(Merger<R>),
}

/// The sorted output: an iterator of `Result<R>` that ends after the first error. Holds the
/// memory-mapped runs it merges and deletes their files when dropped.
pub struct SortedStream<R: Record> {
    // Declared before `runs`: maps are unmapped before the files are unlinked.
    inner: Inner<R>,
    runs: Vec<TempRun>,
    dedup: bool,
    last: Option<R>,
    done: bool,
    stats: SortStats,
}

impl<R: Record> SortedStream<R> {
    /// A stream over an already sorted (and, if wanted, deduplicated) buffer: nothing spilled.
    pub(crate) fn from_memory(buf: Vec<R>, stats: SortStats) -> Self {
        let inner = Inner::Memory(buf.into_iter());
        SortedStream {
            inner,
            runs: Vec::new(),
            dedup: false,
            last: None,
            done: false,
            stats,
        }
    }

    /// A final merge of `runs` (at most fan-in of them) plus an optional sorted in-memory tail.
    pub(crate) fn merge(
        runs: Vec<SpilledRun>,
        tail: Vec<R>,
        dedup: bool,
        mut stats: SortStats,
    ) -> Result<Self> {
        stats.merge_passes = runs.iter().map(|r| r.level).max().map_or(0, |l| l + 1);
        let mut sources = Vec::with_capacity(runs.len() + 1);
        for r in &runs {
            sources.push(Source::Run(RunCursor::open(r.file.path())?));
        }
        if !tail.is_empty() {
            sources.push(Source::Mem(tail.into_iter()));
        }
        let inner = Inner::Merge(Merger::new(sources)?);
        let runs = runs.into_iter().map(|r| r.file).collect();
        Ok(SortedStream {
            inner,
            runs,
            dedup,
            last: None,
            done: false,
            stats,
        })
    }

    /// Final statistics (merge passes = how often the most-merged record was read from disk).
    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// Paths of the run files this stream still holds (for tests and diagnostics).
    pub fn run_paths(&self) -> Vec<std::path::PathBuf> {
        self.runs.iter().map(|r| r.path().to_path_buf()).collect()
    }
}

impl<R: Record> Iterator for SortedStream<R> {
    type Item = Result<R>;

    #[inline]
    fn next(&mut self) -> Option<Result<R>> {
        if self.done {
            return None;
        }
        loop {
            let next = match &mut self.inner {
                Inner::Memory(it) => Ok(it.next()),
                Inner::Merge(m) => m.next_record(),
            };
            match next {
                Ok(Some(r)) => {
                    if self.dedup && self.last == Some(r) {
                        continue;
                    }
                    self.last = Some(r);
                    return Some(Ok(r));
                }
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.inner {
            Inner::Memory(it) if !self.done => it.size_hint(),
            _ => (0, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::DocPair;

    fn mem(v: Vec<u32>) -> Source<DocPair> {
        Source::Mem(
            v.into_iter()
                .map(|a| DocPair { a, b: 0 })
                .collect::<Vec<_>>()
                .into_iter(),
        )
    }

    fn drain(m: &mut Merger<DocPair>) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(r) = m.next_record().unwrap() {
            out.push(r.a);
        }
        out
    }

    #[test]
    fn loser_tree_merges_any_number_of_sources() {
        for k in 0..12u32 {
            // Source i holds i, i+k, i+2k, ... plus a shared duplicate 5 and some empties.
            let sources = (0..k)
                .map(|i| {
                    if i % 4 == 3 {
                        vec![]
                    } else {
                        (0..20).map(|j| i + j * k).chain([5]).collect::<Vec<_>>()
                    }
                })
                .map(|mut v| {
                    v.sort();
                    mem(v)
                })
                .collect();
            let mut m = Merger::new(sources).unwrap();
            let got = drain(&mut m);
            let mut want: Vec<u32> = (0..k)
                .filter(|i| i % 4 != 3)
                .flat_map(|i| (0..20).map(move |j| i + j * k).chain([5]))
                .collect();
            want.sort();
            assert_eq!(got, want, "k = {k}");
            assert_eq!(m.next_record().unwrap(), None, "stays exhausted");
        }
    }
}
