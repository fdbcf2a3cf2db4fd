//! The in-memory end of a sort whose records carry a radix key ([`Record::radix`]): the
//! buffer is partitioned by the key's leading bits into buckets of about eight thousand
//! records, and the buckets are sorted one by one on a thread of their own while the caller
//! already consumes the sorted ones. So the sort's comparisons run in cache-sized pieces and
//! overlap with whatever the caller does with the stream (the segment builder's writes),
//! instead of sorting the whole buffer first.
//!
//! The output is exactly the buffer in `Ord` order: the bucket of a record is a monotone
//! function of its radix key, which is monotone in `Ord`, so every record of a bucket sorts
//! before every record of the next one.

use std::sync::mpsc::{sync_channel, Receiver};

use rayon::prelude::*;

use super::{KeyDoc, Record};
use crate::error::Result;

/// Records per bucket aimed at (a bucket of 12- or 16-byte records fits the L2 cache).
const BUCKET_RECORDS: usize = 8192;
/// Below this many records the whole buffer is sorted at once.
pub(super) const MIN_RECORDS: usize = 1 << 15;
/// Sorted buckets the sorting thread may run ahead of the consumer.
const AHEAD: usize = 256;

/// What the partition and the pieces sort by: a key monotone in `Ord` (`a <= b` implies
/// `a.key() <= b.key()`), ideally spread over its range (hashes).
pub trait Keyed: Copy + Ord + Send + Sync {
    fn key(&self) -> u64;
}

/// A record's radix key ([`Record::radix`]; only sorted by it where `R::RADIX`).
impl<R: Record> Keyed for R {
    #[inline]
    fn key(&self) -> u64 {
        self.radix()
    }
}

impl Keyed for u64 {
    #[inline]
    fn key(&self) -> u64 {
        *self
    }
}

impl Keyed for (u64, u32) {
    #[inline]
    fn key(&self) -> u64 {
        self.0
    }
}

/// Records [`partition`] reads a part at a time, in order: a slice of them, or [`DocKeys`].
pub(super) trait Parts<R>: Sync {
    fn count(&self) -> usize;
    /// Calls `f` on records `from..to` in order.
    fn each(&self, from: usize, to: usize, f: impl FnMut(R));
    /// The smallest and largest key, if known without a pass over the records (a guess:
    /// [`partition`] checks every record against it and makes the pass when it was wrong).
    fn key_range(&self) -> Option<(u64, u64)> {
        None
    }
}

impl<R: Copy + Sync> Parts<R> for [R] {
    fn count(&self) -> usize {
        self.len()
    }

    #[inline]
    fn each(&self, from: usize, to: usize, mut f: impl FnMut(R)) {
        for &r in &self[from..to] {
            f(r);
        }
    }
}

/// The `(feature, doc)` records of documents `first_doc`, `first_doc + 1`, ... as their
/// feature lists one after the other: document `first_doc + i` has `keys[ends[i - 1]..ends[i]]`
/// (from 0 for the first). The records in doc order, as pushing each list's
/// [`KeyDoc`]s would give, without a copy of their own.
#[derive(Clone, Copy, Debug)]
pub struct DocKeys<'a> {
    pub keys: &'a [u64],
    /// Ascending, the last one `keys.len()`.
    pub ends: &'a [u64],
    pub first_doc: u32,
}

impl DocKeys<'_> {
    /// Whether the ends are ascending and end at the keys' end, and the doc ids fit a u32.
    pub fn is_valid(&self) -> bool {
        self.ends.windows(2).all(|w| w[0] <= w[1])
            && self.ends.last().copied().unwrap_or(0) == self.keys.len() as u64
            && u32::try_from(self.ends.len())
                .ok()
                .and_then(|n| self.first_doc.checked_add(n))
                .is_some()
    }
}

impl Parts<KeyDoc> for DocKeys<'_> {
    fn count(&self) -> usize {
        self.keys.len()
    }

    /// The lists' first and last keys: their smallest and largest when each list ascends,
    /// as documents' feature lists do.
    fn key_range(&self) -> Option<(u64, u64)> {
        let mut from = 0;
        let (mut lo, mut hi) = (u64::MAX, 0);
        for &end in self.ends {
            if let Some(list) = self.keys.get(from..end as usize).filter(|l| !l.is_empty()) {
                lo = lo.min(list[0]);
                hi = hi.max(list[list.len() - 1]);
            }
            from = end as usize;
        }
        (lo <= hi).then_some((lo, hi))
    }

    #[inline]
    fn each(&self, from: usize, to: usize, mut f: impl FnMut(KeyDoc)) {
        // The document holding record `from`: the first whose list ends after it.
        let mut d = self.ends.partition_point(|&e| e as usize <= from);
        let mut at = from;
        while at < to {
            let end = (self.ends[d] as usize).min(to);
            let doc = self.first_doc + d as u32;
            for &key in &self.keys[at..end] {
                f(KeyDoc { key, doc });
            }
            at = end;
            d += 1;
        }
    }
}

/// Part `p` of `n` records: `p * PART_RECORDS..` up to the next part or `n`.
fn part_range(p: usize, n: usize) -> (usize, usize) {
    (p * PART_RECORDS, ((p + 1) * PART_RECORDS).min(n))
}

/// Sorts `v` into `Ord` order on every core: partitioned by [`Keyed::key`] into buckets of
/// about [`BUCKET_RECORDS`] (into a second vector, which replaces `v`: the caller's memory
/// bound counts both), then the buckets sorted in parallel by [`sort_piece`]. The same vector
/// as `v.sort_unstable()` (records equal in `Ord` are equal: `u64`, `(u64, u32)`). Below
/// [`MIN_RECORDS`], `par_sort_unstable`.
pub fn par_sort_keyed<R: Keyed>(v: &mut Vec<R>) {
    if v.len() < MIN_RECORDS {
        v.par_sort_unstable();
        return;
    }
    let buckets = (v.len() / BUCKET_RECORDS).next_power_of_two().max(2);
    let (mut parted, bounds) = partition(&v[..], buckets);
    *v = Vec::new(); // the input's pages go before the pieces are sorted
    let pieces = split_pieces(&mut parted, &bounds);
    pieces
        .into_par_iter()
        .for_each_init(Vec::new, |scratch, piece| sort_piece(piece, scratch));
    *v = parted;
}

/// `(shift, min)`: record `r` goes to bucket `(r.radix() - min) >> shift`, which is below
/// `buckets` for every record of `buf`.
fn bucket_fn<R: Keyed, P: Parts<R> + ?Sized>(src: &P, buckets: usize) -> (u32, u64) {
    let n = src.count();
    let (lo, hi) = (0..n.div_ceil(PART_RECORDS))
        .into_par_iter()
        .map(|p| {
            let (from, to) = part_range(p, n);
            let (mut lo, mut hi) = (u64::MAX, 0u64);
            src.each(from, to, |r| {
                let k = r.key();
                lo = lo.min(k);
                hi = hi.max(k);
            });
            (lo, hi)
        })
        .reduce(|| (u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    bucket_fn_of(lo, hi, buckets)
}

/// [`bucket_fn`] of keys from `lo` to `hi`.
fn bucket_fn_of(lo: u64, hi: u64, buckets: usize) -> (u32, u64) {
    let span = hi.saturating_sub(lo);
    let bits = 64 - span.leading_zeros(); // bits of the largest offset
    let want = buckets.trailing_zeros(); // buckets is a power of two
    (bits.saturating_sub(want), lo)
}

/// Bucket of `r` for keys from `lo` on, shifted by `shift`: past the last (`buckets` or more)
/// for a key below `lo` or too far above the range the shift was made for.
#[inline]
fn raw_bucket<R: Keyed>(r: &R, lo: u64, shift: u32, buckets: usize) -> usize {
    match r.key().checked_sub(lo) {
        Some(off) => usize::try_from(off >> shift).unwrap_or(usize::MAX),
        None => buckets,
    }
}

/// Each part's count of records per bucket, a record past the last counted in the last
/// (as [`partition`] places it), and whether any was.
fn bucket_counts<R: Keyed, P: Parts<R> + ?Sized>(
    src: &P,
    buckets: usize,
    (lo, shift): (u64, u32),
) -> (Vec<Vec<usize>>, bool) {
    let n = src.count();
    let parts: Vec<(Vec<usize>, bool)> = (0..n.div_ceil(PART_RECORDS))
        .into_par_iter()
        .map(|p| {
            let (from, to) = part_range(p, n);
            let mut c = vec![0usize; buckets];
            let mut outside = false;
            src.each(from, to, |r| {
                let b = raw_bucket(&r, lo, shift, buckets);
                outside |= b >= buckets;
                c[b.min(buckets - 1)] += 1;
            });
            (c, outside)
        })
        .collect();
    let outside = parts.iter().any(|p| p.1);
    (parts.into_iter().map(|p| p.0).collect(), outside)
}

/// Records per part of the parallel passes of [`partition`].
const PART_RECORDS: usize = 1 << 18;

/// The output vector of [`partition`], written through a raw pointer by several threads at
/// disjoint positions.
#[derive(Clone, Copy)]
struct Out<R>(*mut R);
// SAFETY: each thread writes only the positions its part owns (disjoint ranges of the
// bucket offsets), and the vector outlives the scope of the writes.
unsafe impl<R: Send> Send for Out<R> {}
unsafe impl<R: Send> Sync for Out<R> {}

/// `buf` partitioned into `buckets` (a power of two) by radix key, in bucket order, as a new
/// vector (sequential passes: an in-place permutation of a buffer larger than the caches
/// would miss the cache at every swap); and the bucket bounds (`buckets + 1` offsets). The
/// passes run on every core, each over parts of `buf` in order: a part's records go to its
/// own stretch of each bucket, after the earlier parts' (the same vector as one pass over
/// `buf` would write).
fn partition<R: Keyed, P: Parts<R> + ?Sized>(src: &P, buckets: usize) -> (Vec<R>, Vec<usize>) {
    let n = src.count();
    // The key range the source knows, checked by the counts (a key below it, or so far above
    // it that its bucket is past the last, gives it up; a key above it within the buckets
    // keeps the order), else one pass for it.
    let guess = src
        .key_range()
        .map(|(lo, hi)| bucket_fn_of(lo, hi, buckets));
    let guessed = guess.and_then(|(shift, lo)| {
        let (counts, outside) = bucket_counts(src, buckets, (lo, shift));
        (!outside).then_some((shift, lo, counts))
    });
    let (shift, lo, counts) = guessed.unwrap_or_else(|| {
        // From the true range no record is past the last bucket.
        let (shift, lo) = bucket_fn(src, buckets);
        let (counts, _) = bucket_counts(src, buckets, (lo, shift));
        (shift, lo, counts)
    });
    // As the counts placed each record (so the scatter fills exactly their stretches).
    let bucket = |r: &R| raw_bucket(r, lo, shift, buckets).min(buckets - 1);
    let mut bounds = Vec::with_capacity(buckets + 1);
    // starts[p][b]: where part p's first record of bucket b goes.
    let mut starts: Vec<Vec<usize>> = vec![vec![0; buckets]; counts.len()];
    let mut at = 0;
    for b in 0..buckets {
        bounds.push(at);
        for (p, c) in counts.iter().enumerate() {
            starts[p][b] = at;
            at += c[b];
        }
    }
    bounds.push(at);
    debug_assert_eq!(at, n);
    let mut out: Vec<R> = super::prefault::with_capacity_par(n);
    let dst = Out(out.as_mut_ptr());
    starts
        .into_par_iter()
        .enumerate()
        .for_each(|(p, mut next)| {
            // The whole `Out` (Send) is captured, not its raw pointer field (not Send).
            #[allow(clippy::redundant_locals)]
            let dst = dst;
            let (from, to) = part_range(p, n);
            src.each(from, to, |r| {
                let t = bucket(&r);
                // SAFETY: next[t] stays within part p's stretch of bucket t (its count of
                // records of that bucket), which no other part writes, and below n.
                unsafe { dst.0.add(next[t]).write(r) };
                next[t] += 1;
            });
        });
    // SAFETY: the stretches cover 0..n exactly (the counts sum to it), every position
    // written once above.
    unsafe { out.set_len(n) };
    (out, bounds)
}

/// Below this many records a bucket (or a sub-bucket of [`sort_piece`]) is sorted by
/// comparisons alone.
const SMALL_PIECE: usize = 64;
/// Records per sub-bucket aimed at by [`sort_piece`].
const SUB_RECORDS: usize = 4;
/// Sub-buckets of at most this many records are finished by insertion sort.
const INSERTION_MAX: usize = 24;

/// Sorts `piece` into `Ord` order: one more counting pass by the radix key's next leading
/// bits (from the piece's own smallest and largest key) into sub-buckets of a few records,
/// a stable scatter from a copy in `scratch`, then each sub-bucket sorted by comparisons
/// (insertion sort when small). Exact for any keys: the sub-bucket is a monotone function
/// of the radix key, which is monotone in `Ord`; a skewed piece only makes some sub-buckets
/// larger (sorted by `sort_unstable`). On the uniform hash keys of a segment's postings
/// this costs about three passes over a cache-sized piece instead of a comparison sort.
fn sort_piece<R: Keyed>(piece: &mut [R], scratch: &mut Vec<R>) {
    let n = piece.len();
    if n < SMALL_PIECE {
        piece.sort_unstable();
        return;
    }
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for r in piece.iter() {
        let k = r.key();
        lo = lo.min(k);
        hi = hi.max(k);
    }
    if lo == hi {
        piece.sort_unstable();
        return;
    }
    let subs = (n / SUB_RECORDS).next_power_of_two();
    let bits = 64 - (hi - lo).leading_zeros(); // bits of the largest offset
    let shift = bits.saturating_sub(subs.trailing_zeros());
    let sub = |r: &R| ((r.key() - lo) >> shift) as usize;
    // The largest offset >> shift is below 2^(bits - shift) <= subs.
    let mut starts = vec![0usize; subs + 1];
    for r in piece.iter() {
        starts[sub(r) + 1] += 1;
    }
    for i in 1..=subs {
        starts[i] += starts[i - 1];
    }
    scratch.clear();
    scratch.extend_from_slice(piece);
    let mut next = starts.clone();
    for r in scratch.iter() {
        let t = sub(r);
        piece[next[t]] = *r;
        next[t] += 1;
    }
    for w in starts.windows(2) {
        let s = &mut piece[w[0]..w[1]];
        if s.len() <= INSERTION_MAX {
            insertion_sort(s);
        } else {
            s.sort_unstable();
        }
    }
}

/// Sorts a short slice by insertion.
#[inline]
fn insertion_sort<R: Ord + Copy>(s: &mut [R]) {
    for i in 1..s.len() {
        let x = s[i];
        let mut j = i;
        while j > 0 && x < s[j - 1] {
            s[j] = s[j - 1];
            j -= 1;
        }
        s[j] = x;
    }
}

/// Sorts `buf` (no dedup) and hands `consume` the records in order while later buckets are
/// still being sorted; returns what `consume` returns. `consume` may stop early. Holds a
/// second copy of the records while it partitions (the caller checks the budget).
pub(super) fn sort_streamed<R: Record, T>(
    buf: Vec<R>,
    consume: impl FnOnce(&mut dyn Iterator<Item = Result<R>>) -> Result<T>,
) -> Result<T> {
    sorted_pieces(buf, |rx| {
        let mut stream = rx.into_iter().flat_map(|p| p.iter().map(|r| Ok(*r)));
        consume(&mut stream)
    })
}

/// The buckets of `parted` as disjoint slices: bucket `i` is `parted[bounds[i]..bounds[i + 1]]`
/// (`bounds` as [`partition`] returns them).
fn split_pieces<'a, R>(parted: &'a mut [R], bounds: &[usize]) -> Vec<&'a mut [R]> {
    let mut pieces = Vec::with_capacity(bounds.len().saturating_sub(1));
    let mut rest = parted;
    for w in bounds.windows(2) {
        let (piece, tail) = rest.split_at_mut(w[1] - w[0]);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// [`sort_streamed`] handing `consume` each sorted bucket as a slice.
pub(super) fn sort_sliced<R: Record, T>(
    buf: Vec<R>,
    consume: impl FnOnce(&mut dyn super::SortedSlices<R>) -> Result<T>,
) -> Result<T> {
    sorted_pieces(buf, |rx| consume(&mut Pieces { rx }))
}

/// [`sort_sliced`] of the records `lists` gives (no copy of them in doc order: the partition
/// reads the lists). The same slices as `sort_sliced` of those records pushed in doc order.
pub(super) fn sort_sliced_lists<T>(
    lists: &DocKeys<'_>,
    consume: impl FnOnce(&mut dyn super::SortedSlices<KeyDoc>) -> Result<T>,
) -> Result<T> {
    let (parted, bounds) = partition(lists, buckets_for(lists.keys.len()));
    pieces_sorted(parted, bounds, |rx| consume(&mut Pieces { rx }))
}

/// Buckets of [`partition`] for `n` records.
fn buckets_for(n: usize) -> usize {
    (n / BUCKET_RECORDS).next_power_of_two().max(2)
}

/// Partitions `buf` into buckets and sorts them in order on a thread of their own, while
/// `consume` receives the sorted ones.
fn sorted_pieces<R: Record, T>(
    buf: Vec<R>,
    consume: impl FnOnce(Receiver<&mut [R]>) -> Result<T>,
) -> Result<T> {
    let (parted, bounds) = partition(&buf[..], buckets_for(buf.len()));
    drop(buf);
    pieces_sorted(parted, bounds, consume)
}

/// The buckets of `parted` (`bounds` as [`partition`] returns them) sorted in order on a
/// thread of their own, while `consume` receives the sorted ones.
fn pieces_sorted<R: Record, T>(
    mut parted: Vec<R>,
    bounds: Vec<usize>,
    consume: impl FnOnce(Receiver<&mut [R]>) -> Result<T>,
) -> Result<T> {
    let pieces = split_pieces(&mut parted, &bounds);
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<&mut [R]>(AHEAD);
        s.spawn(move || {
            let mut scratch = Vec::new();
            for piece in pieces {
                sort_piece(piece, &mut scratch);
                if tx.send(piece).is_err() {
                    return; // the consumer stopped
                }
            }
        });
        consume(rx)
    })
}

/// The sorted buckets as they arrive, empty ones skipped.
struct Pieces<'a, R> {
    rx: Receiver<&'a mut [R]>,
}

impl<R> super::SortedSlices<R> for Pieces<'_, R> {
    fn next_slice(&mut self) -> Result<Option<&[R]>> {
        for p in self.rx.iter() {
            if !p.is_empty() {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::{DocPair, KeyDoc};

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed
    }

    fn check<R: Record + std::fmt::Debug>(recs: Vec<R>) {
        let mut want = recs.clone();
        want.sort_unstable();
        let got: Vec<R> = sort_streamed(recs.clone(), |it| it.collect::<Result<Vec<R>>>()).unwrap();
        assert_eq!(got, want);
        let sliced: Vec<R> = sort_sliced(recs, |s| {
            let mut all = Vec::new();
            while let Some(p) = s.next_slice()? {
                assert!(!p.is_empty());
                all.extend_from_slice(p);
            }
            Ok(all)
        })
        .unwrap();
        assert_eq!(sliced, want);
    }

    /// Uniform keys, skewed keys, a narrow key range, equal keys with several docs, one key:
    /// always the `Ord` order.
    #[test]
    fn buckets_give_the_sorted_order() {
        let mut seed = 7;
        let n = 100_000;
        let uniform: Vec<KeyDoc> = (0..n)
            .map(|i| KeyDoc {
                key: lcg(&mut seed),
                doc: i as u32 % 977,
            })
            .collect();
        check(uniform.clone());
        // Every key repeated under several docs, in doc order as ingest pushes them.
        let repeated: Vec<KeyDoc> = uniform
            .iter()
            .take(n / 8)
            .flat_map(|r| (0..8).map(move |d| KeyDoc { key: r.key, doc: d }))
            .collect();
        check(repeated);
        let skewed: Vec<KeyDoc> = (0..n)
            .map(|i| KeyDoc {
                key: (lcg(&mut seed) >> (lcg(&mut seed) % 64)),
                doc: i as u32,
            })
            .collect();
        check(skewed);
        let narrow: Vec<KeyDoc> = (0..n)
            .map(|i| KeyDoc {
                key: 1_000_000 + lcg(&mut seed) % 5_000,
                doc: (n - i) as u32,
            })
            .collect();
        check(narrow);
        let one: Vec<KeyDoc> = (0..n)
            .map(|i| KeyDoc {
                key: 42,
                doc: (i * 7919 % n) as u32,
            })
            .collect();
        check(one);
        let extremes: Vec<KeyDoc> = (0..n)
            .map(|i| KeyDoc {
                key: if i % 2 == 0 {
                    0
                } else {
                    u64::MAX - (i as u64 % 3)
                },
                doc: i as u32,
            })
            .collect();
        check(extremes);
        let pairs: Vec<DocPair> = (0..n)
            .map(|_| DocPair {
                a: lcg(&mut seed) as u32 % 1000,
                b: lcg(&mut seed) as u32,
            })
            .collect();
        check(pairs);
    }

    /// Documents' feature lists (`DocKeys`): `docs` lists of up to `max_len` ascending keys
    /// drawn from `pool` values (so keys repeat across documents), a seventh of them empty.
    fn doc_lists(seed: &mut u64, docs: usize, max_len: u64, pool: u64) -> (Vec<u64>, Vec<u64>) {
        let (mut keys, mut ends) = (Vec::new(), Vec::new());
        for _ in 0..docs {
            let len = if lcg(seed).is_multiple_of(7) {
                0
            } else {
                lcg(seed) % (max_len + 1)
            };
            let mut l: Vec<u64> = (0..len).map(|_| (lcg(seed) >> 20) % pool).collect();
            l.sort_unstable();
            l.dedup();
            keys.extend(l);
            ends.push(keys.len() as u64);
        }
        (keys, ends)
    }

    /// The records of documents' lists sort as the same records pushed in doc order: one
    /// partition part and several (`PART_RECORDS`), empty lists first, inside and last.
    #[test]
    fn lists_sort_as_their_records() {
        let mut seed = 11;
        for (docs, max_len, pool, first_doc, parts) in [
            (300usize, 400u64, u64::MAX >> 20, 0u32, 1usize),
            (2_000, 500, 50_000, 1_000_000, 2),
            (40, 3_000, 1 << 40, 7, 1),
        ] {
            let (keys, mut ends) = doc_lists(&mut seed, docs, max_len, pool);
            ends.insert(0, 0); // an empty first list
            ends.push(keys.len() as u64); // an empty last one
            let lists = DocKeys {
                keys: &keys,
                ends: &ends,
                first_doc,
            };
            assert!(lists.is_valid());
            let mut recs = Vec::new();
            let mut start = 0;
            for (d, &end) in ends.iter().enumerate() {
                for &key in &keys[start..end as usize] {
                    recs.push(KeyDoc {
                        key,
                        doc: first_doc + d as u32,
                    });
                }
                start = end as usize;
            }
            assert!(recs.len() >= MIN_RECORDS, "{}", recs.len());
            assert!(recs.len().div_ceil(PART_RECORDS) >= parts, "{}", recs.len());
            let collect = |s: &mut dyn crate::sort::SortedSlices<KeyDoc>| {
                let mut all = Vec::new();
                while let Some(p) = s.next_slice()? {
                    assert!(!p.is_empty());
                    all.extend_from_slice(p);
                }
                Ok(all)
            };
            let got = sort_sliced_lists(&lists, collect).unwrap();
            // The same partition as the records' own (bucket bounds and order within).
            let buckets = buckets_for(recs.len());
            assert_eq!(partition(&lists, buckets), partition(&recs[..], buckets));
            let mut want = recs.clone();
            want.sort_unstable();
            assert_eq!(got, want, "{docs} docs");
            assert_eq!(sort_sliced(recs, collect).unwrap(), want);
        }
    }

    /// Lists that do not ascend make the lists' first and last keys a wrong guess of the key
    /// range: a key below it (here every list reversed) sends the partition to its pass over
    /// the records, a key above it (one list's last key raised) keeps the guess or not; the
    /// records sort the same either way.
    #[test]
    fn lists_out_of_order_sort_as_their_records() {
        let mut seed = 5;
        let (keys, ends) = doc_lists(&mut seed, 2_000, 500, u64::MAX >> 20);
        // Spread over all 64 bits, as hashes are (a key below the range then wraps into the
        // buckets, unless the partition checks for it).
        let keys: Vec<u64> = keys.iter().map(|k| k << 20 | k & 0xfffff).collect();
        let lists = DocKeys {
            keys: &keys,
            ends: &ends,
            first_doc: 3,
        };
        let (lo, hi) = lists.key_range().unwrap();
        assert_eq!(lo, *keys.iter().min().unwrap());
        assert_eq!(hi, *keys.iter().max().unwrap());
        let mut reversed = Vec::new();
        let mut raised = keys.clone();
        let mut start = 0;
        for &end in &ends {
            let list = &keys[start..end as usize];
            reversed.extend(list.iter().rev());
            start = end as usize;
        }
        // Inside two lists (neither first nor last): a key above the guessed range by a
        // little, and the largest key.
        let mut long = (1..ends.len()).filter(|&i| ends[i] - ends[i - 1] >= 3);
        let (a, b) = (long.next().unwrap(), long.next().unwrap());
        raised[ends[a - 1] as usize + 1] = hi + 1;
        raised[ends[b - 1] as usize + 1] = u64::MAX;
        assert_eq!(
            DocKeys {
                keys: &raised,
                ..lists
            }
            .key_range(),
            Some((lo, hi))
        );
        for keys in [reversed, raised] {
            let lists = DocKeys {
                keys: &keys,
                ends: &ends,
                first_doc: 3,
            };
            let mut want = Vec::new();
            lists.each(0, lists.count(), |r| want.push(r));
            want.sort_unstable();
            let got = sort_sliced_lists(&lists, |s| {
                let mut all = Vec::new();
                while let Some(p) = s.next_slice()? {
                    all.extend_from_slice(p);
                }
                Ok(all)
            })
            .unwrap();
            assert_eq!(got, want);
        }
    }

    /// Lists whose ends do not fit their keys are not valid.
    #[test]
    fn lists_ends_must_fit_the_keys() {
        let keys = [1u64, 5, 9, 2];
        let ok = DocKeys {
            keys: &keys,
            ends: &[3, 3, 4],
            first_doc: 0,
        };
        assert!(ok.is_valid());
        for ends in [&[3u64, 2, 4][..], &[3, 5], &[3], &[]] {
            assert!(
                !DocKeys {
                    keys: &keys,
                    ends,
                    first_doc: 0
                }
                .is_valid(),
                "{ends:?}"
            );
        }
        assert!(!DocKeys {
            keys: &keys,
            ends: &[4, 4],
            first_doc: u32::MAX - 1
        }
        .is_valid());
        assert!(DocKeys {
            keys: &[],
            ends: &[],
            first_doc: 0
        }
        .is_valid());
    }

    /// `par_sort_keyed` gives `sort_unstable`'s vector for the prefix join's records (hash
    /// keys, docs ascending within a key, several docs a key) and candidate pairs (`a << 32 |
    /// b`, few distinct `a`, many repeats), for skewed and one-value inputs, at sizes around
    /// `MIN_RECORDS` and over several partition parts.
    #[test]
    fn par_sort_keyed_equals_sort_unstable() {
        let mut seed = 11;
        for n in [0, 1, MIN_RECORDS - 1, MIN_RECORDS, 3 * PART_RECORDS / 2] {
            let keys: Vec<u64> = (0..n / 4 + 1).map(|_| lcg(&mut seed)).collect();
            let mut records: Vec<(u64, u32)> = (0..n)
                .map(|i| (keys[lcg(&mut seed) as usize % keys.len()], i as u32))
                .collect();
            let mut cands: Vec<u64> = (0..n)
                .map(|_| {
                    let a = lcg(&mut seed) % 300;
                    let b = a + 1 + lcg(&mut seed) % 50;
                    a << 32 | b
                })
                .collect();
            let mut skewed: Vec<u64> = (0..n)
                .map(|i| {
                    if i % 10 == 0 {
                        lcg(&mut seed)
                    } else {
                        5 + (i as u64 % 3)
                    }
                })
                .collect();
            let mut same: Vec<u64> = vec![42; n];
            for v in [&mut cands, &mut skewed, &mut same] {
                let mut want = v.clone();
                want.sort_unstable();
                par_sort_keyed(v);
                assert_eq!(*v, want, "{n}");
            }
            let mut want = records.clone();
            want.sort_unstable();
            par_sort_keyed(&mut records);
            assert_eq!(records, want, "{n}");
        }
    }

    /// The parallel partition over several parts writes the vector one sequential pass over
    /// the buffer writes (each bucket's records in buffer order), with the same bounds.
    #[test]
    fn parallel_partition_equals_one_pass() {
        let mut seed = 11;
        let n = 3 * PART_RECORDS + 12_345;
        let recs: Vec<KeyDoc> = (0..n)
            .map(|i| KeyDoc {
                key: lcg(&mut seed) >> (i % 3),
                doc: i as u32,
            })
            .collect();
        for buckets in [2usize, 64, 512] {
            let (got, bounds) = partition(&recs[..], buckets);
            let (shift, lo) = bucket_fn(&recs[..], buckets);
            let mut want: Vec<Vec<KeyDoc>> = vec![Vec::new(); buckets];
            for r in &recs {
                want[((r.key - lo) >> shift) as usize].push(*r);
            }
            let mut at = 0;
            let mut want_bounds = vec![0];
            for w in &want {
                at += w.len();
                want_bounds.push(at);
            }
            assert_eq!(bounds, want_bounds, "{buckets} buckets");
            assert_eq!(got, want.concat(), "{buckets} buckets");
        }
        check(recs);
    }

    /// `sort_piece` gives `sort_unstable`'s order for uniform, skewed, narrow, clustered and
    /// equal keys, at every size around its thresholds, with the scratch reused.
    #[test]
    fn sort_piece_equals_sort_unstable() {
        let mut seed = 5;
        let mut scratch = Vec::new();
        for n in [0usize, 1, 2, 63, 64, 65, 100, 1000, 8191, 8192, 20_000] {
            let gens: Vec<Box<dyn Fn(&mut u64, usize) -> KeyDoc>> = vec![
                Box::new(|s, i| KeyDoc {
                    key: lcg(s),
                    doc: (i % 13) as u32,
                }),
                Box::new(|s, i| KeyDoc {
                    key: lcg(s) >> (lcg(s) % 64),
                    doc: i as u32,
                }),
                Box::new(|s, _| KeyDoc {
                    key: 77 + lcg(s) % 50,
                    doc: (lcg(s) % 5) as u32,
                }),
                Box::new(|_, i| KeyDoc {
                    key: 9,
                    doc: (i * 7919 % 1000) as u32,
                }),
                Box::new(|s, i| KeyDoc {
                    key: if i % 3 == 0 {
                        u64::MAX - lcg(s) % 4
                    } else {
                        lcg(s) % 4
                    },
                    doc: (n - i) as u32,
                }),
                // Runs of equal keys under several docs, in doc order and reversed.
                Box::new(|s, i| KeyDoc {
                    key: (lcg(s) >> 40) << 3 | (i as u64 % 2),
                    doc: (i % 7) as u32,
                }),
            ];
            for g in &gens {
                let mut v: Vec<KeyDoc> = (0..n).map(|i| g(&mut seed, i)).collect();
                let mut want = v.clone();
                want.sort_unstable();
                sort_piece(&mut v, &mut scratch);
                assert_eq!(v, want, "{n} records");
            }
            let mut pairs: Vec<DocPair> = (0..n)
                .map(|_| DocPair {
                    a: lcg(&mut seed) as u32 % 100,
                    b: lcg(&mut seed) as u32,
                })
                .collect();
            let mut want = pairs.clone();
            want.sort_unstable();
            sort_piece(&mut pairs, &mut Vec::new());
            assert_eq!(pairs, want, "{n} pairs");
        }
    }

    /// A consumer that stops early (an error) ends the sorting thread too.
    #[test]
    fn an_early_stop_ends_the_sort() {
        let mut seed = 3;
        let recs: Vec<KeyDoc> = (0..200_000)
            .map(|i| KeyDoc {
                key: lcg(&mut seed),
                doc: i,
            })
            .collect();
        let got = sort_streamed(recs, |it| {
            let first: Vec<KeyDoc> = it.take(10).collect::<Result<_>>()?;
            Err::<(), _>(crate::error::Error::InvalidArgument(format!(
                "stop after {}",
                first.len()
            )))
        });
        assert!(got.unwrap_err().to_string().contains("stop after 10"));
    }
}
