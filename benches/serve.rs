//! The server's in-process query path (`POST /v1/query` without the HTTP): take the current
//! snapshot, query the page (`Index::query`), build the JSON answer.

use criterion::{criterion_group, criterion_main, Criterion};
use ndd_index::ops::QueryRequest;
use ndd_index::pipeline::IngestOptions;
use ndd_index::server::matches_json;
use ndd_index::server::snapshot::Snapshots;
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
    let snapshots = Snapshots::new(Index::open(&idx).unwrap());
    let req = QueryRequest {
        threshold: Some("0.5".parse().unwrap()),
        top: 10,
        ..QueryRequest::default()
    };
    let mut g = c.benchmark_group("serve");
    let mut i = 0;
    g.bench_function("snapshot + query + JSON, T=0.5", |b| {
        b.iter(|| {
            i = (i + 7) % pages.len();
            let snap = snapshots.get();
            let res = snap.query("<request body>", &pages[i], &req).unwrap();
            let (matches, exact) = matches_json(&res, None);
            serde_json::json!({"matches": matches, "exact_duplicate_of": exact}).to_string()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
