//! Canonicalization throughput on real HTML (the shared llvm corpus when present, else a
//! generated page).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndd_index::canonicalize::{canonicalize, DocFormat};

mod pages;

fn bench(c: &mut Criterion) {
    let pages = pages::sample_pages();
    let bytes: usize = pages.iter().map(|p| p.len()).sum();
    let mut g = c.benchmark_group("canonicalize");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function(format!("{} pages", pages.len()), |b| {
        b.iter(|| {
            let mut words = 0;
            for p in &pages {
                words += canonicalize(p, DocFormat::Html, None)
                    .map(|c| c.word_count())
                    .unwrap_or(0);
            }
            words
        })
    });
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

criterion_group!(benches, bench);
criterion_main!(benches);
