//! End-to-end query latency: one document against an index built from the sample pages.
//!
//! With `NDD_BENCH_INDEX=DIR NDD_BENCH_PAGES=FILE.warc|DIR` it runs on an existing index
//! instead (opened read-only; e.g. tools/bench_serve.sh's 1M index and its query.warc, up to
//! `NDD_BENCH_MAX_PAGES`=2000 pages), and first prints the matcher's work per query: probes,
//! posting entries visited, candidates pruned by the probe-hit bound and candidates verified
//! (forward lists read); `NDD_BENCH_THRESHOLD` sets the threshold (default 0.5). Such an index is warmed up first as `ndd-index serve` does (key
//! filters loaded, whole segments read within the read-ahead budget), so the figures are a
//! server's steady state once the pages were queried (the first pass over them, untimed).

use criterion::{criterion_group, criterion_main, Criterion};
use ndd_index::canonicalize::{canonicalize_with, DocFormat};
use ndd_index::fingerprint::fingerprint;
use ndd_index::input::{read_inputs, InputItem, InputOptions};
use ndd_index::pipeline::IngestOptions;
use ndd_index::query::{Matcher, QueryOptions, Scratch};
use ndd_index::{CreateOptions, Index};

mod pages;

/// The sample pages in a fresh index (kept alive by the returned directory).
fn sample_index() -> (tempfile::TempDir, Index, Vec<(Vec<u8>, DocFormat)>) {
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
    let pages = pages.into_iter().map(|p| (p, DocFormat::Html)).collect();
    (dir, index, pages)
}

/// An existing index and pages to query it with, from the environment.
fn external_index() -> Option<(Index, Vec<(Vec<u8>, DocFormat)>)> {
    let ix = std::env::var_os("NDD_BENCH_INDEX")?;
    let src = std::env::var_os("NDD_BENCH_PAGES").expect("NDD_BENCH_PAGES with NDD_BENCH_INDEX");
    let max: usize = std::env::var("NDD_BENCH_MAX_PAGES")
        .ok()
        .map_or(2000, |v| v.parse().expect("NDD_BENCH_MAX_PAGES"));
    let index = Index::open(ix).unwrap();
    let pages = read_inputs(vec![src.into()], InputOptions::default())
        .filter_map(|item| match item {
            InputItem::Doc(d) => Some((d.bytes, d.format)),
            InputItem::Bad { .. } => None,
        })
        .take(max)
        .collect::<Vec<_>>();
    assert!(!pages.is_empty(), "no pages in NDD_BENCH_PAGES");
    Some((index, pages))
}

fn bench(c: &mut Criterion) {
    let mut _keep = None;
    let (index, pages) = match external_index() {
        Some(x) => {
            // As a server does before its first request: the key filters loaded, then whole
            // segments read within the read-ahead budget.
            let segs: Vec<&ndd_index::segment::Segment> =
                x.0.view().segments.iter().map(|s| &*s.seg).collect();
            let w = ndd_index::view::warm_up(
                &segs,
                ndd_index::view::mem_available(),
                ndd_index::view::read_ahead_share(),
                &|| false,
            );
            eprintln!("query bench: warm-up: {w}");
            x
        }
        None => {
            let (dir, index, pages) = sample_index();
            _keep = Some(dir);
            (index, pages)
        }
    };
    // NDD_BENCH_THRESHOLD: the queries' threshold (default 0.5; a server's default is 0.8).
    let threshold = std::env::var("NDD_BENCH_THRESHOLD").unwrap_or_else(|_| "0.5".into());
    let opts = QueryOptions {
        threshold: threshold.parse().expect("NDD_BENCH_THRESHOLD"),
        top: 10,
        max_df: None,
    };
    // The matcher's work per query, on the pages' features (canonicalized once, here).
    let fp_opts = index.options().fingerprint().unwrap();
    let features: Vec<Vec<u64>> = pages
        .iter()
        .filter_map(|(p, f)| {
            let canon = canonicalize_with(p, *f, None, fp_opts.extract).ok()?;
            Some(fingerprint(&canon.text, &fp_opts).features)
        })
        .collect();
    let view = index.view();
    let matcher =
        Matcher::new(view, fp_opts.sample, opts.threshold).with_max_df(index.options().max_df);
    let mut scratch = Scratch::new(view.doc_ids());
    let (mut probes, mut found) = (0usize, Vec::new());
    for x in &features {
        found.clear();
        matcher
            .search(x, |_| true, &mut scratch, &mut found)
            .unwrap();
        probes += scratch.probes().count();
    }
    let q = features.len().max(1) as f64;
    eprintln!(
        "query bench: {} docs, {} pages; per query: {:.0} features, {:.0} probes, {:.0} postings visited, {:.1} pruned, {:.1} verified",
        view.doc_ids(),
        features.len(),
        features.iter().map(|x| x.len()).sum::<usize>() as f64 / q,
        probes as f64 / q,
        scratch.postings_visited as f64 / q,
        scratch.pruned as f64 / q,
        scratch.candidates as f64 / q,
    );

    let mut g = c.benchmark_group("query");
    let mut i = 0;
    g.bench_function(format!("one page, T={threshold}"), |b| {
        b.iter(|| {
            i = (i + 7) % pages.len();
            let (page, format) = &pages[i];
            index
                .query_document("q", page, *format, None, &opts)
                .unwrap()
                .hits
                .len()
        })
    });
    let mut j = 0;
    g.bench_function(
        format!("matcher only (features given), T={threshold}"),
        |b| {
            b.iter(|| {
                j = (j + 7) % features.len();
                found.clear();
                matcher
                    .search(&features[j], |_| true, &mut scratch, &mut found)
                    .unwrap();
                found.len()
            })
        },
    );
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
