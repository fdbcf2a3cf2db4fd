//! Fingerprinting throughput (shingling, hashing, sampling) on canonical text.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::fingerprint::{fingerprint, FingerprintOptions, Sample, ShingleKind};

mod pages;

fn bench(c: &mut Criterion) {
    let texts: Vec<String> = pages::sample_pages()
        .iter()
        .filter_map(|p| canonicalize(p, DocFormat::Html, None).ok().map(|c| c.text))
        .collect();
    let words: usize = texts.iter().map(|t| t.split(' ').count()).sum();
    let mut g = c.benchmark_group("shingle");
    g.throughput(Throughput::Elements(words as u64));
    for (name, shingle, sample) in [
        ("words5-all", ShingleKind::Words(5), Sample::All),
        ("words5-mod8", ShingleKind::Words(5), Sample::Mod(8)),
        (
            "words5-minhash84",
            ShingleKind::Words(5),
            Sample::MinHash(84),
        ),
        ("chars64-all", ShingleKind::Chars(64), Sample::All),
    ] {
        let opts = FingerprintOptions {
            shingle,
            sample,
            ..Default::default()
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                texts
                    .iter()
                    .map(|t| fingerprint(t, &opts).features.len())
                    .sum::<usize>()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
