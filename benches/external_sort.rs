//! External sort throughput: in memory, one merge pass, and several merge passes (tiny budget,
//! small fan-in), on 1M random `KeyDoc` records with some duplicate keys.
//!
//! Needs in Cargo.toml: `[[bench]] name = "external_sort" harness = false`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndd_index::sort::{ExternalSorter, KeyDoc, SortOptions};

const N: u64 = 1_000_000;

fn records() -> Vec<KeyDoc> {
    // xorshift64: fixed, dependency-free data; keys mod 2^20 give ~1 duplicate key per record.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..N)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            KeyDoc {
                key: x % (1 << 20),
                doc: i as u32,
            }
        })
        .collect()
}

fn bench_external_sort(c: &mut Criterion) {
    let input = records();
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("external_sort");
    group.sample_size(10);
    group.throughput(Throughput::Elements(N));
    // (label, memory budget, fan-in): 12 B per in-memory KeyDoc.
    let cases = [
        ("in_memory", 64u64 << 20, 128usize),
        ("one_pass_8_runs", 2 << 20, 128),
        ("multi_pass_fan_in_4", 1 << 20, 4),
    ];
    for (label, mem_bytes, fan_in) in cases {
        group.bench_with_input(BenchmarkId::new(label, N), &input, |b, input| {
            b.iter(|| {
                let opts = SortOptions {
                    mem_bytes,
                    tmp_dir: tmp.path().to_path_buf(),
                    fan_in,
                    dedup: false,
                };
                let mut sorter = ExternalSorter::<KeyDoc>::new(opts).expect("sorter");
                sorter.extend(input.iter().copied()).expect("push");
                let mut last = KeyDoc::default();
                for r in sorter.finish().expect("finish") {
                    last = r.expect("record");
                }
                last
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_external_sort);
criterion_main!(benches);
