//! Canonicalization throughput on real HTML (the shared llvm corpus when present, else a
//! generated page), next to the physical limits on the same bytes: one pass of a SIMD byte
//! search (memchr counting `<`), a sum of all bytes, and a memcpy. The `canonicalize` group
//! measures wall time; `canonicalize-cpu` the same rows in thread CPU time, which stays
//! comparable when other processes load the machine (see benches/pages/cputime.rs).

use criterion::measurement::Measurement;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ndd_index::canonicalize::{canonicalize, DocFormat};

mod pages;

use pages::cputime::ThreadCpuTime;

fn rows<M: Measurement>(g: &mut BenchmarkGroup<'_, M>, pages: &[Vec<u8>]) {
    g.bench_function(format!("{} pages", pages.len()), |b| {
        b.iter(|| {
            let mut words = 0;
            for p in pages {
                words += canonicalize(p, DocFormat::Html, None)
                    .map(|c| c.word_count())
                    .unwrap_or(0);
            }
            words
        })
    });
    // The limits: what any parser has to pay at least to look at every byte once.
    g.bench_function("limit: memchr count of '<'", |b| {
        b.iter(|| {
            pages
                .iter()
                .map(|p| memchr::memchr_iter(b'<', p).count())
                .sum::<usize>()
        })
    });
    g.bench_function("limit: sum of bytes", |b| {
        b.iter(|| {
            pages
                .iter()
                .map(|p| p.iter().map(|&x| x as u64).sum::<u64>())
                .sum::<u64>()
        })
    });
    let mut buf = vec![0u8; pages.iter().map(|p| p.len()).max().unwrap_or(0)];
    g.bench_function("limit: memcpy", |b| {
        b.iter(|| {
            for p in pages {
                buf[..p.len()].copy_from_slice(p);
                std::hint::black_box(&mut buf);
            }
        })
    });
}

fn bench(c: &mut Criterion) {
    let pages = pages::sample_pages();
    let bytes: usize = pages.iter().map(|p| p.len()).sum();
    let mut g = c.benchmark_group("canonicalize");
    g.throughput(Throughput::Bytes(bytes as u64));
    rows(&mut g, &pages);
    // The oracle (html5ever + RcDom, the same decoding and word rule): what switching the tree
    // builder would cost. `cargo bench --features oracle --bench canonicalize`.
    #[cfg(feature = "oracle")]
    g.bench_function(format!("{} pages, html5ever oracle", pages.len()), |b| {
        b.iter(|| {
            let mut words = 0;
            for p in &pages {
                words += ndd_index::canonicalize::oracle::canonical_text(p, None)
                    .map(|t| t.split(' ').count())
                    .unwrap_or(0);
            }
            words
        })
    });
    g.finish();
}

fn bench_cpu(c: &mut Criterion<ThreadCpuTime>) {
    let pages = pages::sample_pages();
    let bytes: usize = pages.iter().map(|p| p.len()).sum();
    let mut g = c.benchmark_group("canonicalize-cpu");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(20);
    rows(&mut g, &pages);
    g.finish();
}

criterion_group!(benches, bench);
criterion_group! {
    name = benches_cpu;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = bench_cpu
}
criterion_main!(benches, benches_cpu);
