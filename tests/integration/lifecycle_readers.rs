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
