//! Segment lookups and posting-list decode/merge: the query hot path.
//!
//! `cargo bench --bench segment`. Builds one segment in a temp dir (200k POSTINGS keys with
//! mostly short lists, 10k FORWARD lists), then times `get`, `get_postings`, a full `iter`,
//! posting decode in both forms, a 64-list union and a feature-set intersection.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndd_index::segment::{
    decode_postings, decode_u64s, encode_postings, encode_u64s, filter, Segment, SegmentWriter,
    DEFAULT_BLOCK_TARGET, FORWARD, POSTINGS,
};
use roaring::RoaringBitmap;

const KEYS: u64 = 200_000;
const DOCS: u64 = 10_000;

/// xorshift64: deterministic data without a rand dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn posting_ids(state: &mut u64) -> Vec<u32> {
    let len = match next(state) % 100 {
        0..70 => 1,
        70..90 => 2 + next(state) % 4,
        90..98 => 6 + next(state) % 20,
        _ => 30 + next(state) % 300,
    };
    let mut ids: Vec<u32> = (0..len).map(|_| (next(state) % 100_000) as u32).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn build(dir: &std::path::Path) -> (Segment, Vec<u64>) {
    let mut state = 0x2545_f491_4f6c_dd1d;
    let mut keys: Vec<u64> = (0..KEYS).map(|_| next(&mut state)).collect();
    keys.sort_unstable();
    keys.dedup();
    // Format 2: its FORWARD values are the features themselves, as written below (format
    // 3, the default, holds ranks of the POSTINGS keys, which only the builder writes).
    let mut w = SegmentWriter::create_version(dir, "bench.seg", DEFAULT_BLOCK_TARGET, 2).unwrap();
    let mut buf = Vec::new();
    w.begin_table(POSTINGS).unwrap();
    for &k in &keys {
        buf.clear();
        encode_postings(&posting_ids(&mut state), &mut buf);
        w.add(k, &buf).unwrap();
    }
    w.end_table().unwrap();
    w.begin_table(FORWARD).unwrap();
    for doc in 0..DOCS {
        let mut feats: Vec<u64> = (0..200).map(|_| next(&mut state) % 1_000_000).collect();
        feats.sort_unstable();
        feats.dedup();
        buf.clear();
        encode_u64s(&feats, &mut buf);
        w.add(doc, &buf).unwrap();
    }
    w.end_table().unwrap();
    w.finish().unwrap();
    (Segment::open(dir.join("bench.seg")).unwrap(), keys)
}

fn bench_segment(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (seg, keys) = build(dir.path());
    assert!(seg.verify().is_ok());
    let mut state = 7u64;
    let probes: Vec<u64> = (0..4096)
        .map(|_| keys[(next(&mut state) % keys.len() as u64) as usize])
        .collect();

    let mut g = c.benchmark_group("segment");
    g.throughput(Throughput::Elements(probes.len() as u64));
    g.bench_function("get_hit", |b| {
        b.iter(|| {
            for &k in &probes {
                black_box(seg.get(POSTINGS, k).unwrap());
            }
        })
    });
    g.bench_function("get_miss", |b| {
        b.iter(|| {
            for &k in &probes {
                black_box(seg.get(POSTINGS, k ^ 1).unwrap());
            }
        })
    });
    g.bench_function("get_postings_for_each", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for &k in &probes {
                seg.get_postings(POSTINGS, k)
                    .unwrap()
                    .unwrap()
                    .for_each(|id| sum += id as u64);
            }
            black_box(sum)
        })
    });
    g.throughput(Throughput::Bytes(seg.table_meta(POSTINGS).unwrap().bytes));
    g.bench_function("iter_postings", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for e in seg.iter(POSTINGS) {
                n += e.unwrap().1.len() as u64;
            }
            black_box(n)
        })
    });
    g.finish();
}

fn bench_postings(c: &mut Criterion) {
    let mut state = 11u64;
    let mut g = c.benchmark_group("postings");
    let mut small = Vec::new();
    encode_postings(&[3, 17, 90_000, 99_999], &mut small);
    g.bench_function("decode_raw_4", |b| {
        b.iter(|| black_box(decode_postings(black_box(&small)).unwrap().len()))
    });
    let mut big = Vec::new();
    let ids: Vec<u32> = (0..5000).map(|i| i * 13).collect();
    encode_postings(&ids, &mut big);
    g.bench_function("decode_roaring_5000", |b| {
        b.iter(|| black_box(decode_postings(black_box(&big)).unwrap().len()))
    });
    let lists: Vec<Vec<u8>> = (0..64)
        .map(|_| {
            let mut v = Vec::new();
            encode_postings(&posting_ids(&mut state), &mut v);
            v
        })
        .collect();
    g.bench_function("union_64_lists", |b| {
        b.iter(|| {
            let mut acc = RoaringBitmap::new();
            for l in &lists {
                decode_postings(l).unwrap().union_into(&mut acc);
            }
            black_box(acc.len())
        })
    });
    let set = |state: &mut u64| {
        let mut v: Vec<u64> = (0..400).map(|_| next(state) % 2000).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (a, b_set) = (set(&mut state), set(&mut state));
    let mut a_bytes = Vec::new();
    encode_u64s(&a, &mut a_bytes);
    g.bench_function("forward_intersect_count_400", |b| {
        b.iter(|| {
            black_box(
                decode_u64s(&a_bytes)
                    .unwrap()
                    .intersect_count(black_box(&b_set)),
            )
        })
    });
    g.finish();
}

/// The block check's crc32 on hot memory (a 64 MiB buffer, filled once): what checking a
/// segment's key filters costs when their pages are resident and touched before, against the
/// seconds a cold night spends in the same call (BENCHMARKS.md, "Cold nights: the key filters
/// decoded while the batch is read").
fn bench_crc(c: &mut Criterion) {
    let buf: Vec<u8> = (0..64u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let mut g = c.benchmark_group("crc");
    g.throughput(Throughput::Bytes(buf.len() as u64));
    g.bench_function("crc32_hot_64MiB", |b| {
        b.iter(|| crc32fast::hash(black_box(&buf)))
    });
    g.finish();
}

/// A POSTINGS block's key filter built from its keys (`segment::filter::build`): what the
/// writer's filter thread does once per block, in ingest and in every merge. 2,500 keys is a
/// 32 KiB block of the generated corpus; 200 a small last block. Each iteration takes the next
/// of 1,024 distinct key sets, as the writer never builds one block's filter twice: on one
/// set repeated, the branch predictors learn the peeling's branches (the branching
/// construction: 23.9 µs for 2,500 keys on one set, 50.7-51.7 µs over distinct ones).
fn bench_filter(c: &mut Criterion) {
    let mut g = c.benchmark_group("filter");
    for n in [200u64, 2_500] {
        let mut state = 0x9e37_79b9 ^ n;
        let sets: Vec<Vec<u64>> = (0..1024)
            .map(|_| {
                let mut keys: Vec<u64> = (0..n).map(|_| next(&mut state)).collect();
                keys.sort_unstable();
                keys.dedup();
                keys
            })
            .collect();
        let mut out = Vec::new();
        let mut i = 0;
        g.throughput(Throughput::Elements(n));
        g.bench_function(format!("build_{n}"), |b| {
            b.iter(|| {
                out.clear();
                i = (i + 1) % sets.len();
                filter::build(black_box(&sets[i]), &mut out);
                black_box(out.len())
            })
        });
    }
    g.finish();
}

/// A FORWARD list's Elias-Fano encoding (`segment::encode_u64s`), what ingest and every merge
/// do once per document: 1,000 sorted 64-bit feature hashes (a page at `--sample all`), each
/// iteration on the next of 256 distinct lists (a writer never encodes one twice).
fn bench_elias_fano(c: &mut Criterion) {
    let mut g = c.benchmark_group("elias_fano");
    let mut state = 0x5bd1_e995;
    let lists: Vec<Vec<u64>> = (0..256)
        .map(|_| {
            let mut v: Vec<u64> = (0..1_000).map(|_| next(&mut state)).collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    g.throughput(Throughput::Elements(1_000));
    g.bench_function("forward_1000", |b| {
        b.iter(|| {
            out.clear();
            i = (i + 1) % lists.len();
            encode_u64s(black_box(&lists[i]), &mut out);
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_segment,
    bench_postings,
    bench_crc,
    bench_filter,
    bench_elias_fano
);
criterion_main!(benches);
