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

use std::sync::mpsc::sync_channel;

use super::Record;
use crate::error::Result;

/// Records per bucket aimed at (a bucket of 16-byte records fits the L2 cache).
const BUCKET_RECORDS: usize = 8192;
/// Below this many records the whole buffer is sorted at once.
pub(super) const MIN_RECORDS: usize = 1 << 15;
/// Sorted buckets the sorting thread may run ahead of the consumer.
const AHEAD: usize = 256;

/// `(shift, min)`: record `r` goes to bucket `(r.radix() - min) >> shift`, which is below
/// `buckets` for every record of `buf`.
fn bucket_fn<R: Record>(buf: &[R], buckets: usize) -> (u32, u64) {
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for r in buf {
        let k = r.radix();
        lo = lo.min(k);
        hi = hi.max(k);
    }
    let span = hi.saturating_sub(lo);
    let bits = 64 - span.leading_zeros(); // bits of the largest offset
    let want = buckets.trailing_zeros(); // buckets is a power of two
    (bits.saturating_sub(want), lo)
}

/// `buf` partitioned into `buckets` (a power of two) by radix key, in bucket order, as a new
/// vector (one sequential pass: an in-place permutation of a buffer larger than the caches
/// would miss the cache at every swap); and the bucket bounds (`buckets + 1` offsets).
fn partition<R: Record>(buf: &[R], buckets: usize) -> (Vec<R>, Vec<usize>) {
    let (shift, lo) = bucket_fn(buf, buckets);
    let bucket = |r: &R| ((r.radix() - lo) >> shift) as usize;
    let mut counts = vec![0usize; buckets];
    for r in buf.iter() {
        counts[bucket(r)] += 1;
    }
    let mut bounds = Vec::with_capacity(buckets + 1);
    let mut at = 0;
    for &c in &counts {
        bounds.push(at);
        at += c;
    }
    bounds.push(at);
    let mut out = buf.to_vec();
    let mut next: Vec<usize> = bounds[..buckets].to_vec();
    for r in buf {
        let t = bucket(r);
        out[next[t]] = *r;
        next[t] += 1;
    }
    (out, bounds)
}

/// Sorts `buf` (no dedup) and hands `consume` the records in order while later buckets are
/// still being sorted; returns what `consume` returns. `consume` may stop early. Holds a
/// second copy of the records while it partitions (the caller checks the budget).
pub(super) fn sort_streamed<R: Record, T>(
    buf: Vec<R>,
    consume: impl FnOnce(&mut dyn Iterator<Item = Result<R>>) -> Result<T>,
) -> Result<T> {
    let buckets = (buf.len() / BUCKET_RECORDS).next_power_of_two().max(2);
    let (mut parted, bounds) = partition(&buf, buckets);
    drop(buf);
    let mut pieces: Vec<&mut [R]> = Vec::with_capacity(buckets);
    let mut rest = &mut parted[..];
    for w in bounds.windows(2) {
        let (piece, tail) = rest.split_at_mut(w[1] - w[0]);
        pieces.push(piece);
        rest = tail;
    }
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<&mut [R]>(AHEAD);
        s.spawn(move || {
            for piece in pieces {
                piece.sort_unstable();
                if tx.send(piece).is_err() {
                    return; // the consumer stopped
                }
            }
        });
        let mut stream = rx.into_iter().flat_map(|p| p.iter().map(|r| Ok(*r)));
        consume(&mut stream)
    })
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
        let got: Vec<R> = sort_streamed(recs, |it| it.collect::<Result<Vec<R>>>()).unwrap();
        assert_eq!(got, want);
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
