//! The whole-operation API on a small in-memory corpus: each operation against the lower-level
//! function it wraps, and in-memory sources against the same documents read from files.

use std::collections::BTreeSet;

use crate::index::Index;
use crate::input::Source;
use crate::method::Method;
use crate::options::CreateOptions;
use crate::pipeline::{DocStatus, IngestOptions};
use crate::threshold::Threshold;

use super::*;

/// `n` base texts of 60 distinct words each; text `i` variant `v` changes `v` words of it.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut docs = Vec::new();
    for i in 0..6u32 {
        for v in 0..3u32 {
            let words: Vec<String> = (0..60u32)
                .map(|w| {
                    if w >= 60 - v * 2 {
                        format!("edit{i}x{v}x{w}")
                    } else {
                        format!("word{i}y{w}")
                    }
                })
                .collect();
            let html = format!("<html><body><p>{}</p></body></html>", words.join(" "));
            docs.push((format!("doc-{i}-{v}.html"), html.into_bytes()));
        }
    }
    docs
}

fn t(s: &str) -> Threshold {
    s.parse().unwrap()
}

fn ingest(dir: &std::path::Path, source: Source) -> Index {
    let mut index = Index::open_writer(dir, &CreateOptions::default()).unwrap();
    let mut reports = Vec::new();
    let s = index
        .ingest(
            source,
            &IngestOptions::default(),
            &mut |r| {
                reports.push(r.clone());
                Ok(())
            },
            &|_| {},
        )
        .unwrap();
    assert_eq!(s.added, 18, "{reports:?}");
    assert!(reports.iter().all(|r| r.status == DocStatus::New));
    index
}

fn pairs_of(index: &Index, req: &PairsRequest) -> Vec<(String, String, String)> {
    let mut v = Vec::new();
    index
        .pairs(req, |p| {
            assert!(p.key_a <= p.key_b);
            v.push((
                p.key_a.clone(),
                p.key_b.clone(),
                format!("{:.6}", p.resemblance),
            ));
            Ok(())
        })
        .unwrap();
    v
}

#[test]
fn memory_and_files_give_the_same_pairs_clusters_and_answers() {
    let mem_dir = tempfile::tempdir().unwrap();
    let mem = ingest(mem_dir.path(), Source::Docs(corpus()));

    let files = tempfile::tempdir().unwrap();
    for (k, b) in corpus() {
        std::fs::write(files.path().join(&k), b).unwrap();
    }
    let file_dir = tempfile::tempdir().unwrap();
    let from_files = ingest(file_dir.path(), vec![files.path().to_owned()].into());

    let req = PairsRequest::shingle(t("0.8"));
    let pairs = pairs_of(&mem, &req);
    assert_eq!(pairs, pairs_of(&from_files, &req));
    // Variants 0/1/2 of each base differ in 0, 2 and 4 of 60 words: 3 pairs per base at 0.8.
    assert_eq!(pairs.len(), 18, "{pairs:?}");
    assert!(pairs
        .iter()
        .all(|(a, b, _)| a[..5] == b[..5] && a[4..6] == b[4..6]));

    // The same pairs as the method layer's whole-set computation.
    let direct = crate::method::pairs(&mem, Method::Shingle, Some(t("0.8"))).unwrap();
    assert_eq!(direct.len(), pairs.len());

    // Every matching choice gives the same pairs.
    for matching in [
        crate::pipeline::Matching::Join,
        crate::pipeline::Matching::Probe,
    ] {
        let r = PairsRequest {
            matching,
            mem: Some(8 << 20),
            ..req.clone()
        };
        assert_eq!(pairs_of(&mem, &r), pairs);
    }

    // Clusters kept at ingest = components of the pairs at the cluster threshold.
    let mut clusters = Vec::new();
    mem.clusters(&ClustersRequest::default(), |c| {
        clusters.push(c.clone());
        Ok(())
    })
    .unwrap();
    assert_eq!(clusters.len(), 6);
    for c in &clusters {
        assert_eq!(c.members.len(), 3);
        assert_eq!(c.representative, c.members[0]);
        let base: BTreeSet<&str> = c.members.iter().map(|k| &k[..5]).collect();
        assert_eq!(base.len(), 1, "{c:?}");
        assert_eq!(
            mem.cluster_members(c.id).unwrap().as_deref(),
            Some(&c.members[..])
        );
    }
    // At another threshold: computed from pairs (no edit at 0.99: no clusters).
    let mut n = 0;
    mem.clusters(
        &ClustersRequest {
            threshold: Some(t("0.99")),
            ..Default::default()
        },
        |_| {
            n += 1;
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(n, 0);

    // document(): batch, cluster and partners.
    let d = mem.document("doc-2-1.html").unwrap().unwrap();
    assert_eq!(d.batch, "batch-000001");
    assert_eq!(d.partners, vec!["doc-2-0.html", "doc-2-2.html"]);
    assert!(mem.document("nope").unwrap().is_none());
    assert_eq!(mem.live_documents().unwrap(), 18);

    // query(): an indexed document finds itself and its partners, best first.
    let (k, bytes) = &corpus()[3];
    let QueryResult::Shingle(ans) = mem.query(k, bytes, &QueryRequest::default()).unwrap() else {
        panic!("shingle answer expected");
    };
    assert_eq!(ans.exact_duplicate.as_deref(), Some(k.as_str()));
    assert_eq!(ans.hits[0].key, *k);
    assert_eq!(ans.hits[0].resemblance, 1.0);
    assert_eq!(ans.hits.len(), 3);
    // Another method goes through the method layer.
    let r = QueryRequest {
        method: Method::Simhash,
        ..Default::default()
    };
    assert!(matches!(
        mem.query(k, bytes, &r).unwrap(),
        QueryResult::Method(_)
    ));
}

#[test]
fn in_memory_documents_are_checked_like_read_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = Index::open_writer(dir.path(), &CreateOptions::default()).unwrap();
    let opts = IngestOptions {
        input: crate::input::InputOptions {
            max_doc_bytes: 1 << 20,
            ..Default::default()
        },
        ..Default::default()
    };
    let docs = vec![
        ("".to_string(), b"no key".to_vec()),
        ("big".to_string(), vec![b'a'; (1 << 20) + 1]),
        ("ok".to_string(), b"plain words here".to_vec()),
    ];
    let mut reports = Vec::new();
    let s = index
        .ingest(
            Source::Docs(docs),
            &opts,
            &mut |r| {
                reports.push(r.clone());
                Ok(())
            },
            &|_| {},
        )
        .unwrap();
    assert_eq!((s.added, s.errors), (1, 2));
    assert!(reports[0]
        .error
        .as_deref()
        .unwrap()
        .contains("empty document key"));
    assert!(reports[1].error.as_deref().unwrap().contains("over the"));
}

#[test]
fn create_spec_checks_and_names_bad_values() {
    let ok = CreateSpec {
        shingle_words: Some(4),
        sample: Some("mod:4".into()),
        cluster_threshold: Some(t("0.7")),
        ..Default::default()
    }
    .resolve()
    .unwrap();
    assert_eq!(ok.cluster_threshold, Some(t("0.7")));
    let both = CreateSpec {
        shingle_words: Some(4),
        shingle_chars: Some(8),
        ..Default::default()
    };
    assert!(both.resolve().unwrap_err().to_string().contains("exclude"));
    let bad = CreateSpec {
        sample: Some("sometimes".into()),
        ..Default::default()
    };
    assert!(bad.resolve().unwrap_err().to_string().contains("sometimes"));
    let groups = CreateSpec {
        size_groups: Some("0-:1".into()),
        ..Default::default()
    };
    assert!(groups
        .resolve()
        .unwrap_err()
        .to_string()
        .contains("adaptive"));
    let df = CreateSpec {
        max_df: Some(0),
        ..Default::default()
    };
    assert!(df.resolve().is_err());
}

#[test]
fn sizes_parse_with_units_and_refuse_tiny_or_bad_ones() {
    assert_eq!(parse_size("512MiB"), Ok(512 << 20));
    assert_eq!(parse_size("2g"), Ok(2 << 30));
    assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
    assert_eq!(parse_size("1048576"), Ok(1 << 20));
    assert!(parse_size("100k").unwrap_err().contains("minimum"));
    assert!(parse_size("12 parsecs").unwrap_err().contains("unit"));
    assert!(parse_size("lots").unwrap_err().contains("invalid size"));
}

#[test]
fn a_catalog_of_a_newer_format_is_refused_with_a_clear_error() {
    use crate::store::{CATALOG_FORMAT, META_FORMAT};
    let dir = tempfile::tempdir().unwrap();
    {
        let index = ingest(dir.path(), Source::Docs(corpus()));
        let raw = index.catalog().meta_raw(META_FORMAT).unwrap();
        assert_eq!(raw.as_deref(), Some(&CATALOG_FORMAT.to_le_bytes()[..]));
        let mut b = index.catalog().batch_writer();
        b.put_meta_raw(META_FORMAT, &(CATALOG_FORMAT + 1).to_le_bytes());
        index.catalog().commit(b).unwrap();
    }
    for e in [
        Index::open(dir.path()).err().unwrap(),
        Index::open_writer(dir.path(), &CreateOptions::default())
            .err()
            .unwrap(),
    ] {
        let msg = e.to_string();
        let want = format!(
            "unsupported format version {} (this build reads {CATALOG_FORMAT})",
            CATALOG_FORMAT + 1
        );
        assert!(msg.contains(&want), "{msg}");
    }
}

/// What a batch's ingest reads ahead: every segment's key-filter bytes (a segment whose
/// filters are decoded already is left out), then nothing else of the segments; the catalog
/// ranges are whole live table files of the catalog; the read-ahead decodes the filters it
/// read. A second batch ingests with it running and finds the same documents unchanged.
#[test]
fn ingest_read_ahead_covers_every_segments_filters() {
    use crate::view::ReadAheadRange;
    let dir = tempfile::tempdir().unwrap();
    drop(ingest(dir.path(), Source::Docs(corpus())));
    let mut docs = corpus();
    for d in &mut docs {
        d.0 = format!("second-{}", d.0);
    }
    drop(ingest(dir.path(), Source::Docs(docs)));
    let index = Index::open_writer(dir.path(), &CreateOptions::default()).unwrap();
    let view = index.view();
    assert_eq!(view.segments.len(), 2);
    let ranges = view.ingest_read_ahead_ranges(index.catalog());
    let mut seg_ranges = Vec::new();
    for r in &ranges {
        match r {
            ReadAheadRange::KeyFilters(seg, from, to) => {
                seg_ranges.push((seg.path().to_owned(), *from, *to))
            }
            ReadAheadRange::Segment(seg, ..) => panic!("{:?}: not its filters", seg.path()),
            ReadAheadRange::File(p, n) => {
                assert!(seg_ranges.is_empty(), "catalog files come first");
                assert!(p.starts_with(dir.path().join("catalog")), "{p:?}");
                assert_eq!(std::fs::metadata(p).unwrap().len(), *n, "{p:?}");
            }
        }
    }
    let want: Vec<_> = view
        .segments
        .iter()
        .map(|s| {
            let (from, to) = s.seg.key_filter_range().unwrap();
            (s.seg.path().to_owned(), from, to)
        })
        .collect();
    assert_eq!(seg_ranges, want);
    // Decoded filters are not read ahead again.
    let s0 = &view.segments[0].seg;
    let min = s0.table_meta(crate::segment::POSTINGS).unwrap().min_key;
    assert!(s0.postings_block_for(min).unwrap().is_some());
    assert!(s0.key_filters_loaded());
    let after = view.ingest_read_ahead_ranges(index.catalog());
    let segs: Vec<_> = after
        .iter()
        .filter_map(|r| match r {
            ReadAheadRange::KeyFilters(seg, ..) => Some(seg.path().to_owned()),
            ReadAheadRange::Segment(..) | ReadAheadRange::File(..) => None,
        })
        .collect();
    assert_eq!(segs, vec![want[1].0.clone()]);
    // The read-ahead decodes the filters it read (when the budget took them).
    let s1 = &view.segments[1].seg;
    assert!(!s1.key_filters_loaded());
    let ra = view.ingest_read_ahead(index.catalog());
    let took_all = ra.planned_bytes > 0 && ra.skipped_bytes == 0;
    ra.wait();
    #[cfg(target_os = "linux")]
    assert!(took_all, "a few KB of filters are within any budget");
    if took_all {
        assert!(s1.key_filters_loaded());
    }
    drop(index);
    let mut index = Index::open_writer(dir.path(), &CreateOptions::default()).unwrap();
    let s = index
        .ingest(
            Source::Docs(corpus()),
            &IngestOptions::default(),
            &mut |_| Ok(()),
            &|_| {},
        )
        .unwrap();
    assert_eq!((s.added, s.unchanged), (0, 18));
}

/// The writer's view after each publish (ingest with new and replaced documents, delete) is
/// the snapshot a fresh `View::load` reads: same segments, tombstones, sizes, frequent keys.
#[test]
fn view_after_publish_equals_a_fresh_load() {
    use crate::view::View;
    let same = |index: &Index| {
        let fresh = View::load(index.dir(), index.catalog(), index.options()).unwrap();
        let v = index.view();
        let entries = |v: &View| {
            v.segments
                .iter()
                .map(|s| s.entry.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(entries(v), entries(&fresh));
        assert_eq!(v.tombstones, fresh.tombstones);
        assert!(v.sizes == fresh.sizes);
        assert_eq!(v.frequent.to_map(), fresh.frequent.to_map());
        // A view for a few lookups (the `query` command's) reads each size from the FORWARD
        // lists: the records' sizes, and the same matches.
        let lazy = View::load_for_lookups(index.dir(), index.catalog(), index.options()).unwrap();
        assert!(lazy.sizes.reads_forward());
        assert_eq!(lazy.doc_ids(), fresh.doc_ids());
        let sample = index.options().fingerprint().unwrap().sample;
        let t: Threshold = "0.5".parse().unwrap();
        let mut x = Vec::new();
        for d in 0..fresh.doc_ids() {
            assert_eq!(lazy.doc_size(d).unwrap(), fresh.size(d), "doc {d}");
            assert_eq!(lazy.size(d), fresh.size(d), "doc {d}");
            assert_eq!(lazy.is_live(d), fresh.is_live(d), "doc {d}");
            if !fresh.features_into(d, &mut x).unwrap() {
                continue;
            }
            let found = |v: &View| {
                let mut out = Vec::new();
                let mut scratch = crate::query::Scratch::new(v.doc_ids());
                crate::query::Matcher::new(v, sample, t)
                    .search(&x, |_| true, &mut scratch, &mut out)
                    .unwrap();
                out
            };
            assert_eq!(found(&lazy), found(&fresh), "doc {d}");
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let mut index = ingest(dir.path(), Source::Docs(corpus()));
    same(&index);
    let mut docs = corpus();
    for (i, d) in docs.iter_mut().enumerate() {
        if i % 3 == 0 {
            d.1 = format!("<html><body><p>replaced {i} text of other words</p></body></html>")
                .into_bytes();
        } else {
            d.0 = format!("new-{}", d.0);
        }
    }
    let s = index
        .ingest(
            Source::Docs(docs),
            &IngestOptions::default(),
            &mut |_| Ok(()),
            &|_| {},
        )
        .unwrap();
    assert_eq!((s.added, s.replaced), (12, 6));
    same(&index);
    index
        .delete(&crate::lifecycle::DeleteSelector::Keys(vec![
            "doc-1-1.html".into(),
        ]))
        .unwrap();
    same(&index);
}
