//! End-to-end query latency: one document against an index built from the sample pages.

use criterion::{criterion_group, criterion_main, Criterion};
use ndd_index::canonicalize::DocFormat;
use ndd_index::pipeline::IngestOptions;
use ndd_index::query::QueryOptions;
use ndd_index::{CreateOptions, Index};

mod pages;

fn bench(c: &mut Criterion) {
    let pages = pages::sample_pages();
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for (i, p) in pages.iter().enumerate() {
        std::fs::write(docs.join(format!("p{i:05}.html")), p).unwrap();
    }
    let idx = dir.path().join("idx");
    {
        let mut w = Index::open_writer(&idx, &CreateOptions::default()).unwrap();
        w.ingest(
            vec![docs],
            &IngestOptions::default(),
            &mut |_| Ok(()),
            &|_| {},
        )
        .unwrap();
    }
    let index = Index::open(&idx).unwrap();
    let opts = QueryOptions {
        threshold: "0.5".parse().unwrap(),
        top: 10,
        max_df: None,
    };
    let mut g = c.benchmark_group("query");
    let mut i = 0;
    g.bench_function("one page, T=0.5", |b| {
        b.iter(|| {
            i = (i + 7) % pages.len();
            index
                .query_document("q", &pages[i], DocFormat::Html, None, &opts)
                .unwrap()
                .hits
                .len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
