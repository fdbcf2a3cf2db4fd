//! A reader that opened the index before a compaction keeps answering from its snapshot after
//! the merged segment files are unlinked, and a reader opened afterwards gets the same answers.

use crate::common::*;
use ndd_index::{pipeline, CreateOptions, Index, Threshold};

fn all_pairs(index: &Index) -> Vec<(u32, u32, u64)> {
    let view = index.view();
    let t: Threshold = "0.5".parse().unwrap();
    let sample = index.options().sample().unwrap();
    let (found, _) = pipeline::all_pairs(view, sample, t, 0..view.doc_ids(), 0).unwrap();
    found.iter().map(|p| (p.a, p.b, p.m.inter)).collect()
}

#[test]
fn old_readers_survive_compaction_and_new_readers_agree() {
    let w = temp_dir("lc-readers");
    let all = w.path().join("all");
    write_corpus(&all, 90, 5);
    let ix = TestIndex::at(w.path().join("idx"));
    let idx = ix.path();
    for dir in split_batches(&all, w.path(), 30) {
        ix.ingest(&[&dir], &[]);
    }
    let reader = Index::open(idx).unwrap();
    let before = all_pairs(&reader);
    assert!(!before.is_empty());
    assert_eq!(reader.view().segments.len(), 3);

    let mut writer = Index::open_writer(idx, &CreateOptions::default()).unwrap();
    let s = writer.compact(true, &Default::default()).unwrap();
    assert_eq!(s.merged.len(), 3);
    for f in &s.merged {
        assert!(
            !idx.join("segments").join(f).exists(),
            "{f} should be unlinked"
        );
    }
    // The old reader still maps the unlinked files.
    assert_eq!(all_pairs(&reader), before);
    assert_eq!(all_pairs(&writer), before);
    drop(writer);
    let fresh = Index::open(idx).unwrap();
    assert_eq!(fresh.view().segments.len(), 1);
    assert_eq!(all_pairs(&fresh), before);
}

/// Everything a reader's view holds, comparable: published segment entries in order, the
/// delta's doc ranges, sizes, tombstones, frequent keys (derived and recounted).
fn view_facts(index: &Index) -> impl PartialEq + std::fmt::Debug {
    let v = index.view();
    let entries: Vec<String> = v
        .segments
        .iter()
        .map(|s| {
            if s.entry.id == ndd_index::view::DELTA_SEGMENT_ID {
                format!("delta {}..{}", s.entry.doc_lo, s.entry.doc_hi)
            } else {
                format!("{:?}", s.entry)
            }
        })
        .collect();
    let mut frequent: Vec<(u64, u32)> = v.frequent.to_map().into_iter().collect();
    frequent.sort_unstable();
    let mut recounted: Vec<(u64, u32)> = v.frequent_recounted().unwrap().into_iter().collect();
    recounted.sort_unstable();
    assert_eq!(
        frequent, recounted,
        "derived frequent keys are not the recounted ones"
    );
    let sizes: Vec<u32> = v.sizes.iter().collect();
    (
        entries,
        sizes,
        v.tombstones.clone(),
        frequent,
        v.delta_size(),
    )
}

/// `Index::open_since` (the server's reopen after another process wrote the catalog) gives
/// what a fresh `Index::open` gives after every kind of publish, shares the view when nothing
/// was published, and maps only the segments that are new.
#[test]
fn open_since_equals_a_fresh_open_after_each_publish() {
    let w = temp_dir("lc-open-since");
    let all = w.path().join("all");
    write_corpus(&all, 120, 7);
    let ix = TestIndex::at(w.path().join("idx"));
    let idx = ix.path();
    let batches = split_batches(&all, w.path(), 30);
    ix.ingest(&[&batches[0]], &["--batch", "b1"]);
    ix.ingest(&[&batches[1]], &["--batch", "b2"]);
    let mut reader = Index::open(idx).unwrap();
    let base_pairs = all_pairs(&reader);
    assert!(!base_pairs.is_empty());

    // Nothing published: the same view, shared; nothing mapped.
    let (same, opened) = Index::open_since(&reader).unwrap();
    assert!(std::sync::Arc::ptr_eq(same.view(), reader.view()));
    assert!(opened.is_empty());

    let check = |step: &str, reader: &mut Index, expect_new: usize| {
        let (next, opened) = Index::open_since(reader).unwrap();
        let fresh = Index::open(idx).unwrap();
        assert_eq!(view_facts(&next), view_facts(&fresh), "after {step}");
        assert_eq!(all_pairs(&next), all_pairs(&fresh), "pairs after {step}");
        assert_eq!(
            opened.len(),
            expect_new,
            "segments mapped anew after {step}"
        );
        // Segments both views list are the same mappings.
        for s in &next.view().segments {
            let old =
                reader.view().segments.iter().find(|o| {
                    o.entry == s.entry && o.entry.id != ndd_index::view::DELTA_SEGMENT_ID
                });
            if let Some(o) = old {
                assert!(
                    std::sync::Arc::ptr_eq(&o.seg, &s.seg),
                    "{step}: {:?}",
                    s.entry
                );
            }
        }
        *reader = next;
    };
    // A new batch: one segment more, its records read.
    ix.ingest(&[&batches[2]], &["--batch", "b3"]);
    check("an ingest", &mut reader, 1);
    // Deletes: tombstones only.
    ix.delete(&["--batch", "b1"]);
    check("a delete", &mut reader, 0);
    // Online adds: the delta rebuilt from the catalog.
    let files: Vec<String> = std::fs::read_dir(&batches[3])
        .unwrap()
        .take(5)
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    ix.add(&files, &[]);
    check("an add", &mut reader, 0);
    // The rest as a batch (the delta stays), then a full compaction (every segment new).
    ix.ingest(&[&batches[3]], &["--batch", "b4"]);
    check("a second ingest", &mut reader, 1);
    let c = ix.compact(&["--full"]);
    let expect = new_segments(idx, &reader);
    assert!(
        expect > 0 || c["merged"].as_array().is_none_or(|m| m.is_empty()),
        "a compaction that merged must publish a new segment: {c}"
    );
    check("a full compaction", &mut reader, expect);
    assert_eq!(all_pairs(&reader).is_empty(), base_pairs.is_empty());
}

/// Published segments of the index now that `reader` does not list (what it maps anew).
fn new_segments(idx: &std::path::Path, reader: &Index) -> usize {
    Index::open(idx)
        .unwrap()
        .view()
        .segments
        .iter()
        .filter(|s| s.entry.id != ndd_index::view::DELTA_SEGMENT_ID)
        .filter(|s| !reader.view().segments.iter().any(|o| o.entry == s.entry))
        .count()
}
