//! The commonality limit's semantics on a small index: over-limit keys are never probed, a
//! probe set that cannot be filled probes what it can (so pairs sharing only over-limit keys are
//! missed), and the keys still count in the resemblance.

use super::*;
use crate::index::Index;
use crate::options::CreateOptions;
use crate::pipeline::IngestOptions;

/// 40 "boilerplate" pages: the same 100 words plus 3 words of their own (pairwise ~0.9
/// similar, through boilerplate shingles only), and two near-duplicate pages P, Q with 60
/// words of their own each (shared by both), followed by the boilerplate.
fn build(dir: &std::path::Path) -> Index {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let boiler: Vec<String> = (0..100).map(|i| format!("boiler{i}")).collect();
    let page = |own: &[String]| {
        format!(
            "<html><body><p>{} {}</p></body></html>",
            own.join(" "),
            boiler.join(" ")
        )
    };
    for d in 0..40 {
        let own: Vec<String> = (0..3).map(|i| format!("own{d}x{i}")).collect();
        std::fs::write(docs.join(format!("b{d:02}.html")), page(&own)).unwrap();
    }
    let shared: Vec<String> = (0..60).map(|i| format!("pq{i}")).collect();
    std::fs::write(docs.join("p.html"), page(&shared)).unwrap();
    let mut q = shared.clone();
    q[30] = "changed".into();
    std::fs::write(docs.join("q.html"), page(&q)).unwrap();
    let mut ix = Index::open_writer(dir.join("idx"), &CreateOptions::default()).unwrap();
    let opts = IngestOptions {
        mem_bytes: 16 << 20,
        ..IngestOptions::default()
    };
    ix.ingest(vec![docs], &opts, &mut |_| Ok(()), &|_| {})
        .unwrap();
    ix
}

fn search_all(m: &Matcher<'_>, ix: &Index) -> (Vec<(u32, u32, f64)>, Scratch) {
    let view = ix.view();
    let mut scratch = Scratch::new(view.doc_ids());
    let (mut x, mut found, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
    for a in 0..view.doc_ids() {
        assert!(view.features_into(a, &mut x).unwrap());
        found.clear();
        m.search(&x, |d| d > a, &mut scratch, &mut found).unwrap();
        pairs.extend(found.iter().map(|f| (a, f.doc, f.resemblance)));
    }
    (pairs, scratch)
}

#[test]
fn max_df_cuts_probes_of_common_keys_but_keeps_them_in_resemblance() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = build(tmp.path());
    let view = ix.view();
    let sample = ix.options().sample().unwrap();
    let t: Threshold = "0.8".parse().unwrap();
    let key_of = |d: u32| ix.catalog().doc(d).unwrap().unwrap().key;

    let free = Matcher::new(view, sample, t);
    let (all, s_all) = search_all(&free, &ix);
    // Without a limit: the 40 boilerplate pages are pairwise similar, and so are P and Q.
    let boiler_pairs = all
        .iter()
        .filter(|(a, b, _)| key_of(*a).starts_with('b') && key_of(*b).starts_with('b'))
        .count();
    assert_eq!(boiler_pairs, 40 * 39 / 2);
    let pq: Vec<_> = all
        .iter()
        .filter(|(a, b, _)| {
            let (ka, kb) = (key_of(*a), key_of(*b));
            ka.ends_with("p.html") && kb.ends_with("q.html")
                || ka.ends_with("q.html") && kb.ends_with("p.html")
        })
        .collect();
    assert_eq!(pq.len(), 1);
    assert_eq!(s_all.probes_cut + s_all.keys_cut + s_all.docs_cut, 0);

    // With max_df = 10 the boilerplate shingles (df 42) are never probed.
    let bounded = Matcher::new(view, sample, t).with_max_df(Some(10));
    let boiler_key = crate::fingerprint::fingerprint(
        "boiler0 boiler1 boiler2 boiler3 boiler4",
        &ix.options().fingerprint().unwrap(),
    )
    .features[0];
    assert_eq!(bounded.df(boiler_key).unwrap(), 42);
    let (cut, s_cut) = search_all(&bounded, &ix);
    // The boilerplate pages share only over-limit keys: their pairs are missed, and their
    // probe sets come up short.
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert!(s_cut.docs_cut >= 40, "{}", s_cut.docs_cut);
    assert!(s_cut.probes_cut > 0 && s_cut.keys_cut > 0);
    assert_eq!(s_cut.postings_skipped, 42 * s_cut.probes_cut);
    assert!(s_cut.postings_visited * 10 < s_all.postings_visited);
    // P-Q is still found (its own shingles are under the limit) and its resemblance is the
    // same: the boilerplate still counts in verification.
    let (a, b, r) = cut[0];
    assert_eq!((a, b), (pq[0].0, pq[0].1));
    assert_eq!(r, pq[0].2);
    assert!(r < 0.98, "boilerplate counted: {r}");

    // A limit above every df changes nothing.
    let loose = Matcher::new(view, sample, t).with_max_df(Some(1000));
    let (same, s_same) = search_all(&loose, &ix);
    assert_eq!(same, all);
    assert_eq!(s_same.keys_cut + s_same.probes_cut, 0);
}

/// A corpus where the probe-hit bound has work to do: documents are random sets of 3..=70
/// words (one-word shingles, so features are words) over a 90-word vocabulary, the first 12
/// words in most documents (boilerplate, frequent in every segment); two batches (two
/// segments), and a few deletions.
fn build_random(dir: &std::path::Path, seed: u64, sample: &str) -> Index {
    let mut rng = seed;
    let mut next = move || {
        // xorshift64*
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let create = CreateOptions {
        shingle: Some("words:1".parse().unwrap()),
        sample: Some(sample.parse().unwrap()),
        ..CreateOptions::default()
    };
    let mut ix = Index::open_writer(dir.join("idx"), &create).unwrap();
    let mut base: Vec<Vec<String>> = Vec::new();
    for batch in 0..2 {
        let docs = dir.join(format!("docs{batch}"));
        std::fs::create_dir_all(&docs).unwrap();
        for d in 0..150 {
            let mut words: Vec<String> = if d % 3 == 0 && !base.is_empty() {
                // A near-duplicate of an earlier document: drop and add a few words.
                let mut w = base[next() as usize % base.len()].clone();
                let drop = next() as usize % 4;
                for _ in 0..drop.min(w.len().saturating_sub(1)) {
                    w.remove(next() as usize % w.len());
                }
                w
            } else {
                let boiler = (0..12).filter(|_| next() % 10 < 8).map(|i| format!("w{i}"));
                boiler.collect()
            };
            let extra = 3 + next() as usize % 60;
            words.extend((0..extra).map(|_| format!("w{}", next() % 90)));
            std::fs::write(docs.join(format!("d{batch}-{d:03}.txt")), words.join(" ")).unwrap();
            base.push(words);
        }
        let opts = IngestOptions {
            mem_bytes: 16 << 20,
            ..IngestOptions::default()
        };
        ix.ingest(vec![docs], &opts, &mut |_| Ok(()), &|_| {})
            .unwrap();
    }
    let keys: Vec<String> = (0..8).map(|i| format!("d0-{:03}.txt", i * 17)).collect();
    ix.delete(&crate::lifecycle::DeleteSelector::Keys(keys))
        .unwrap();
    ix
}

/// Every search equals brute force over all live documents' forward lists (same documents,
/// same intersections, resemblance and containment), at several thresholds, with the
/// probe-hit bound pruning some candidates; and a reused scratch gives the same answers as a
/// fresh one.
#[test]
fn search_with_hit_bound_equals_brute_force() {
    for (seed, sample) in [(1u64, "all"), (7, "all"), (3, "mod:2")] {
        let tmp = tempfile::tempdir().unwrap();
        let ix = build_random(tmp.path(), seed, sample);
        let view = ix.view();
        assert!(!view.frequent.is_empty(), "boilerplate words are frequent");
        assert!(!view.tombstones.is_empty());
        let sample = ix.options().sample().unwrap();
        let live: Vec<u32> = (0..view.doc_ids()).filter(|&d| view.is_live(d)).collect();
        let fwd: Vec<Vec<u64>> = (0..view.doc_ids())
            .map(|d| {
                let mut v = Vec::new();
                view.features_into(d, &mut v).unwrap();
                v
            })
            .collect();
        let mut reused = Scratch::new(view.doc_ids());
        let (mut pruned, mut verified, mut found_total) = (0, 0, 0);
        for t in ["0.3", "0.5", "0.7", "0.9"] {
            let t: Threshold = t.parse().unwrap();
            let m = Matcher::new(view, sample, t);
            for &a in &live {
                let x = &fwd[a as usize];
                let mut want: Vec<(u32, u64, f64, f64)> = live
                    .iter()
                    .filter_map(|&d| {
                        let ov = sample.verify(x, &fwd[d as usize], t)?;
                        Some((d, ov.inter, ov.resemblance, ov.containment))
                    })
                    .collect();
                want.sort_by_key(|w| w.0);
                let mut got = Vec::new();
                m.search(x, |_| true, &mut reused, &mut got).unwrap();
                let mut got: Vec<(u32, u64, f64, f64)> = got
                    .iter()
                    .map(|f| (f.doc, f.inter, f.resemblance, f.containment))
                    .collect();
                got.sort_by_key(|g| g.0);
                assert_eq!(got, want, "doc {a} at {t:?} ({sample:?})");
                let mut fresh = Scratch::new(view.doc_ids());
                let mut again = Vec::new();
                m.search(x, |_| true, &mut fresh, &mut again).unwrap();
                assert_eq!(again.len(), got.len());
                found_total += got.len();
            }
        }
        pruned += reused.pruned;
        verified += reused.candidates;
        // The bound is exercised: it ruled out candidates the length filter let through.
        assert!(pruned > 0, "nothing pruned ({sample:?})");
        assert!(found_total > live.len() * 4, "near-duplicates exist");
        eprintln!("{sample:?}: {pruned} pruned, {verified} verified, {found_total} found");
    }
}

/// The batched lookups the search makes (`View::for_each_posting_many_counted`) visit the
/// same documents as many times, and count the same lists, as the lookups one key at a time
/// over every segment (two segments and tombstones here); the search reports its matches in
/// ascending id order whatever the order of the lookups.
#[test]
fn batched_lookups_equal_per_key_lookups_and_matches_come_in_id_order() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = build_random(tmp.path(), 5, "all");
    let view = ix.view();
    assert!(view.segments.len() >= 2 && !view.tombstones.is_empty());
    let sample = ix.options().sample().unwrap();
    let m = Matcher::new(view, sample, "0.4".parse().unwrap());
    let mut scratch = Scratch::new(view.doc_ids());
    let (mut x, mut found) = (Vec::new(), Vec::new());
    let mut matches = 0;
    for a in 0..view.doc_ids() {
        if !view.features_into(a, &mut x).unwrap() {
            continue;
        }
        for keys in [&x[..], &x[..x.len() / 2], &x[x.len() / 3..]] {
            let (mut want, mut want_lists) = (Vec::new(), 0u64);
            for &k in keys {
                want_lists += view.for_each_posting_counted(k, |d| want.push(d)).unwrap() as u64;
            }
            let mut got = Vec::new();
            let got_lists = view
                .for_each_posting_many_counted(keys, |d| got.push(d))
                .unwrap();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!((got, got_lists), (want, want_lists), "doc {a}");
        }
        found.clear();
        m.search(&x, |_| true, &mut scratch, &mut found).unwrap();
        assert!(found.windows(2).all(|w| w[0].doc < w[1].doc), "doc {a}");
        matches += found.len();
    }
    assert!(matches > view.doc_ids() as usize, "near-duplicates exist");
}
