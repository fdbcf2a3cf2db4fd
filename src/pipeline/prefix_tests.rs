//! The prefix self-join (`prefix.rs`) against the probe matching.

use crate::error::Result;
use crate::pipeline::pairs::for_each_pair_block;
use crate::pipeline::plan::{Matching, Pair, PairsConfig};
use crate::pipeline::prefix::{prefix_join, prefix_pairs};

/// `prefix_pairs` of the whole index under `mem` bytes (no lists given): its pairs and stats.
fn prefix_whole(
    view: &crate::view::View,
    cfg: &PairsConfig,
    mem: u64,
) -> (Vec<Pair>, Option<crate::pipeline::plan::PairsStats>) {
    let mut pairs = Vec::new();
    let mut emit = |b: &[Pair]| {
        pairs.extend_from_slice(b);
        Ok(())
    };
    let st = prefix_pairs(view, cfg, mem, 0..view.doc_ids(), 0, None, &mut emit).unwrap();
    (pairs, st)
}

/// Pages in 7 families (and some pages of their own) over two batches (two segments),
/// then a few deleted.
fn index(dir: &std::path::Path, format: u32, sample: &str) -> crate::index::Index {
    let mut ix =
        crate::pipeline::two_batch_index(dir, ("words:2", format, sample), 45, |batch, d| {
            (0..150u32)
                .map(|i| match (i * (d % 5 + 1) + d + batch) % 11 {
                    0 => format!("own{batch}x{d}x{i}"),
                    1 if d % 3 == 0 => format!("common{}", i % 17),
                    _ if d % 9 == 8 => format!("solo{batch}x{d}x{i}"),
                    _ => format!("f{}w{i}", d % 7),
                })
                .collect()
        });
    let gone = vec!["b0d03.html".to_string(), "b1d10.html".to_string()];
    ix.delete(&crate::lifecycle::DeleteSelector::Keys(gone))
        .unwrap();
    ix
}

/// The prefix self-join gives exactly the probe matching's pairs (same order, counts,
/// resemblance and containment bits, partner) for every sampling it applies to, both
/// segment formats and thresholds from 0.3 to 1; it declines what it cannot do exactly
/// or within the budget, emitting nothing.
#[test]
fn prefix_pairs_equal_probe_pairs() {
    for sample in ["all", "mod:2", "bottomk:40", "minhash:30"] {
        for format in [2, 3] {
            let tmp = tempfile::tempdir().unwrap();
            let ix = index(tmp.path(), format, sample);
            let view = ix.view();
            let s = ix.options().sample().unwrap();
            let mut verified = 0;
            for t in ["0.3", "0.5", "0.8", "0.95", "1.0"] {
                let cfg = PairsConfig::new(s, t.parse().unwrap());
                let mut want = Vec::new();
                let ws = for_each_pair_block(view, &cfg, 0..view.doc_ids(), 0, |b| {
                    want.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                let (got, gs) = prefix_whole(view, &cfg, 64 << 20);
                let gs = gs.expect("applies and fits");
                let what = format!("{sample} format {format} t {t}");
                assert_eq!(got, want, "{what}");
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.m.resemblance.to_bits(), w.m.resemblance.to_bits());
                    assert_eq!(g.m.containment.to_bits(), w.m.containment.to_bits());
                }
                assert_eq!(gs.pairs, ws.pairs, "{what}");
                // Every list kept for the verification, or read again by groups: the same.
                for keep in [true, false] {
                    let mut again = Vec::new();
                    let mut emit = |b: &[Pair]| {
                        again.extend_from_slice(b);
                        Ok(())
                    };
                    let all = 0..view.doc_ids();
                    let ks = prefix_join(view, &cfg, 64 << 20, all, 0, None, Some(keep), &mut emit)
                        .unwrap()
                        .expect("applies and fits");
                    assert_eq!(again, got, "{what}, lists kept {keep}");
                    assert_eq!(ks.candidates, gs.candidates, "{what}, lists kept {keep}");
                    assert_eq!(ks.verified_by_ranks, gs.verified_by_ranks, "{what}");
                }
                assert_eq!(gs.matching, Some(Matching::Prefix));
                assert!(gs.candidates >= gs.pairs);
                verified += gs.candidates;
                if t == "0.5" {
                    assert!(want.len() > 20, "{what}: the corpus has pairs");
                }
                // Nothing when it does not apply or does not fit.
                let mut none = |_: &[Pair]| -> Result<()> { panic!("emitted") };
                let n = view.doc_ids();
                assert!(
                    prefix_pairs(view, &cfg, 64 << 20, 45..n, 45, None, &mut none)
                        .unwrap()
                        .is_none()
                );
                assert!(prefix_pairs(view, &cfg, 64, 0..n, 0, None, &mut none)
                    .unwrap()
                    .is_none());
                let limited = PairsConfig {
                    max_df: Some(5),
                    ..cfg
                };
                assert!(
                    prefix_pairs(view, &limited, 64 << 20, 0..n, 0, None, &mut none)
                        .unwrap()
                        .is_none()
                );
            }
            assert!(verified > 0);
        }
    }
}

/// `DocLists::read` (each list decoded into its place, sized from the feature counts) reads
/// what the list-by-list gathering reads: every document, deleted ones and ids past the
/// index included, both formats; and maps the same hashes.
#[test]
fn lists_read_in_place_equal_lists_gathered() {
    use crate::query::DocLists;
    for format in [2, 3] {
        let tmp = tempfile::tempdir().unwrap();
        let ix = index(tmp.path(), format, "all");
        let view = ix.view();
        let n = view.doc_ids();
        for ids in [
            (0..n + 3).collect::<Vec<u32>>(),
            (0..n).filter(|d| d % 3 != 1).collect(),
            vec![],
        ] {
            let mut a = DocLists::read(view, ids.clone()).unwrap();
            let mut b = DocLists::read_gathered(view, ids.clone()).unwrap();
            a.map_hashes(view, |i| i % 2 == 0).unwrap();
            b.map_hashes(view, |i| i % 2 == 0).unwrap();
            assert_eq!(a.len(), ids.len());
            assert_eq!(b.len(), ids.len());
            let mut listed = 0;
            for i in 0..ids.len() {
                assert_eq!(a.id(i), b.id(i));
                assert_eq!(
                    a.segment(i),
                    b.segment(i),
                    "format {format} doc {}",
                    a.id(i)
                );
                assert_eq!(a.raw(i), b.raw(i), "format {format} doc {}", a.id(i));
                assert_eq!(a.hashes(i), b.hashes(i), "format {format} doc {}", a.id(i));
                listed += a.raw(i).len();
            }
            assert!(ids.is_empty() || listed > 0);
        }
    }
}

/// Pages of 400 words in 6 families of near-duplicates (one word the page's own).
fn family_word(d: u32, i: u32) -> String {
    if i == d * 7 % 400 {
        format!("own{d}x{i}")
    } else {
        format!("fam{}w{i}", d % 6)
    }
}

/// The pairs and stats of the prefix self-join of the whole index (`prefix_join` with
/// `given` and `keep`), which must apply and fit.
fn join_whole(
    view: &crate::view::View,
    cfg: &PairsConfig,
    given: Option<crate::query::DocLists>,
    keep: Option<bool>,
) -> (Vec<Pair>, crate::pipeline::plan::PairsStats) {
    let mut got = Vec::new();
    let mut emit = |b: &[Pair]| {
        got.extend_from_slice(b);
        Ok(())
    };
    let all = 0..view.doc_ids();
    let st = prefix_join(view, cfg, 64 << 20, all, 0, given, keep, &mut emit)
        .unwrap()
        .expect("applies and fits");
    (got, st)
}

/// The lists a caller gives (`DocLists::from_hashes`, as ingest gives the read stage's
/// hashes) yield exactly the pairs, candidates and verification counts of the lists read
/// back from the segment, kept or not, with a set of the keys in more than one document
/// (exact, or every key) or without; lists that are not the live documents' are ignored or
/// refused.
#[test]
fn given_lists_equal_lists_read() {
    use crate::query::DocLists;
    let mut fewer_records = false;
    for format in [2, 3] {
        let tmp = tempfile::tempdir().unwrap();
        let n = 48;
        let mut ix =
            crate::pipeline::word_pages_index_as(tmp.path(), n, 400, Some(format), family_word);
        let hashes = |view: &crate::view::View| {
            let (mut flat, mut buf) = (Vec::new(), Vec::new());
            for d in 0..view.doc_ids() {
                view.features_into(d, &mut buf).unwrap();
                flat.extend_from_slice(&buf);
            }
            flat
        };
        for t in ["0.3", "0.5", "0.8", "1.0"] {
            let view = ix.view();
            let s = ix.options().sample().unwrap();
            let cfg = PairsConfig::new(s, t.parse().unwrap());
            let what = format!("format {format} t {t}");
            let run = |given, keep| join_whole(view, &cfg, given, keep);
            let (want, ws) = run(None, None);
            assert_eq!(ws.lists_given, 0);
            if t == "0.5" {
                assert!(want.len() > 30, "{what}: the corpus has pairs");
            }
            // The keys in more than one document, and every key: sets of shared keys without
            // and with (many) false positives.
            let (mut shared, mut every) = (Vec::new(), hashes(view));
            every.sort_unstable();
            for g in every.chunk_by(|a, b| a == b) {
                if g.len() > 1 {
                    shared.push(g[0]);
                }
            }
            every.dedup();
            assert!(shared.len() < every.len(), "{what}: keys of one document");
            for keep in [None, Some(true), Some(false)] {
                for keys in [None, Some(&shared), Some(&every)] {
                    let all = 0..view.doc_ids();
                    let given = DocLists::from_hashes(view, 0, all, hashes(view))
                        .expect("the view's")
                        .with_shared_keys(keys.map(|k| crate::build::SharedKeys::of(k)));
                    assert!(given.raw_is_hashes());
                    let (got, gs) = run(Some(given), keep);
                    let what = format!("{what}, keep {keep:?}, shared {}", keys.is_some());
                    assert_eq!(got, want, "{what}");
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(g.m.resemblance.to_bits(), w.m.resemblance.to_bits());
                    }
                    assert_eq!(gs.lists_given, n as u64, "{what}");
                    assert_eq!(gs.candidates, ws.candidates, "{what}");
                    assert_eq!(gs.candidates_pruned, ws.candidates_pruned, "{what}");
                    assert_eq!(gs.candidate_records, ws.candidate_records, "{what}");
                    assert_eq!(gs.verified_by_ranks, ws.verified_by_ranks, "{what}");
                    // Records only under keys the set may hold: fewer with the exact set.
                    if keys == Some(&shared) {
                        assert!(gs.probe_records <= ws.probe_records, "{what}");
                        fewer_records |= gs.probe_records < ws.probe_records;
                    } else {
                        assert_eq!(gs.probe_records, ws.probe_records, "{what}");
                    }
                }
            }
            // Refused: a segment that does not hold the documents, a hash short.
            let mut flat = hashes(view);
            let all = 0..view.doc_ids();
            assert!(DocLists::from_hashes(view, 1, all.clone(), flat.clone()).is_none());
            flat.pop();
            assert!(DocLists::from_hashes(view, 0, all, flat).is_none());
        }
        // A deleted document: lists of every document are not the live ones' (ignored, the
        // lists read instead), the same pairs.
        ix.delete(&crate::lifecycle::DeleteSelector::Keys(vec![
            "d07.html".into()
        ]))
        .unwrap();
        let view = ix.view();
        let cfg = PairsConfig::new(ix.options().sample().unwrap(), "0.5".parse().unwrap());
        // Lists of every document, the deleted one's too: not the live ones', ignored.
        let given = DocLists::from_hashes(view, 0, 0..view.doc_ids(), hashes(view));
        assert!(given.is_some());
        let mut runs = Vec::new();
        for given in [None, given] {
            let (got, st) = join_whole(view, &cfg, given, None);
            assert_eq!(st.lists_given, 0);
            assert!(got.iter().all(|p| p.a != 7 && p.b != 7));
            runs.push(got);
        }
        assert_eq!(runs[0], runs[1]);
    }
    assert!(fewer_records, "the keys of one document left out");
}

/// Ingest into an empty index gives the prefix self-join the read stage's hashes (no list
/// read back) when they fit a sixteenth of `--mem`, and reads them back otherwise or when the
/// batch goes into a non-empty index: the same pairs every way.
#[test]
fn ingest_gives_the_read_stages_hashes() {
    use crate::pipeline::ingest::IngestOptions;
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    // Enough features (~80k) for the postings to be sorted from the kept lists themselves:
    // 100 pages in families, 100 of words of their own (most of the keys in one page each).
    let n = 200;
    for d in 0..n {
        let text: Vec<String> = match d < 100 {
            true => (0..400).map(|i| family_word(d, i)).collect(),
            false => (0..400).map(|i| format!("u{d}w{i}")).collect(),
        };
        let html = format!("<html><body><p>{}</p></body></html>", text.join(" "));
        std::fs::write(docs.join(format!("d{d:03}.html")), html).unwrap();
    }
    let given = |s: &crate::pipeline::IngestSummary| {
        s.matching_stats.as_ref().unwrap()["lists_given"]
            .as_u64()
            .unwrap_or(0)
    };
    let mut found = Vec::new();
    for (k, mem) in [16u64 << 20, 32 << 10].into_iter().enumerate() {
        let dir = tmp.path().join(format!("idx{k}"));
        let mut ix = crate::index::Index::open_writer(&dir, &Default::default()).unwrap();
        let opts = IngestOptions {
            mem_bytes: mem,
            ..IngestOptions::default()
        };
        let s = ix
            .ingest(vec![docs.clone()], &opts, &mut |_| Ok(()), &|_| {})
            .unwrap();
        assert!(s.near_duplicate_pairs > 30, "{}", s.near_duplicate_pairs);
        // 200 documents of ~400 hashes: ~640 KiB, within 1 MiB, not within 2 KiB.
        assert_eq!(given(&s), if k == 0 { n as u64 } else { 0 }, "mem {mem}");
        // The segment's bytes: postings sorted from the kept lists or by the external sort.
        let seg = std::fs::read(dir.join("segments").join(s.segment.as_ref().unwrap())).unwrap();
        found.push((s.near_duplicate_pairs, seg));
        if k == 0 {
            // The given lists came with the keys of several documents: records under those
            // alone, fewer than the whole probe sets the same self-join lists afterwards.
            let view = ix.view();
            let s0 = ix.options().sample().unwrap();
            let cfg = PairsConfig::new(s0, ix.options().cluster_threshold().unwrap());
            let mut none = |_: &[Pair]| Ok(());
            let all = prefix_pairs(view, &cfg, 64 << 20, 0..n, 0, None, &mut none)
                .unwrap()
                .expect("applies and fits");
            let stats = s.matching_stats.as_ref().unwrap();
            let records = stats["probe_records"].as_u64().unwrap();
            assert!(
                records < all.probe_records,
                "{records} of {}",
                all.probe_records
            );
            assert_eq!(stats["candidates"].as_u64(), Some(all.candidates));
            // A second batch (the same pages under other keys) into the non-empty index.
            let again = tmp.path().join("again");
            std::fs::create_dir_all(&again).unwrap();
            for d in 0..4 {
                std::fs::copy(
                    docs.join(format!("d{d:03}.html")),
                    again.join(format!("e{d}.html")),
                )
                .unwrap();
            }
            let s = ix
                .ingest(vec![again], &opts, &mut |_| Ok(()), &|_| {})
                .unwrap();
            assert_eq!(given(&s), 0);
        }
    }
    assert_eq!(found[0], found[1]);
}

/// The candidates the prefix self-join counts are the pairs of documents whose probe sets
/// share a key, found here by brute force from the probe sets: `candidate_records` counts
/// them once per key shared, `candidates` + `candidates_pruned` once each; and the pruning
/// keeps every pair found. Both ways of step 3 run (by probing document below
/// `BY_DOCUMENT_RECORDS` probe records, through the candidate array above).
#[test]
fn candidates_are_the_pairs_sharing_a_probe_key() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut records = Vec::new();
    for sample in ["all", "mod:2"] {
        let tmp = tempfile::tempdir().unwrap();
        let ix = index(tmp.path(), 3, sample);
        let view = ix.view();
        let s = ix.options().sample().unwrap();
        let live: Vec<u32> = (0..view.doc_ids())
            .filter(|&d| view.is_live(d) && view.size(d) > 0)
            .collect();
        let mut lists = crate::query::DocLists::read(view, live).unwrap();
        lists.map_hashes_caching(view, |_| true).unwrap();
        for t in ["0.3", "0.8"] {
            let cfg = PairsConfig::new(s, t.parse().unwrap());
            let matcher = cfg.matcher(view, 0);
            let mut scratch = crate::query::Scratch::new(0);
            let mut under: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
            for i in 0..lists.len() {
                let x = lists.hashes(i).unwrap();
                if matcher.choose_probes(x, &mut scratch).unwrap() {
                    for k in scratch.probes() {
                        under.entry(k).or_default().push(lists.id(i));
                    }
                }
            }
            let (mut listed, mut distinct) = (0u64, BTreeSet::new());
            for docs in under.values() {
                for (i, &a) in docs.iter().enumerate() {
                    for &b in &docs[i + 1..] {
                        listed += 1;
                        distinct.insert((a.min(b), a.max(b)));
                    }
                }
            }
            let (pairs, st) = prefix_whole(view, &cfg, 64 << 20);
            let st = st.expect("applies and fits");
            let what = format!("{sample} t {t}");
            assert!(
                listed > distinct.len() as u64,
                "{what}: pairs under several keys"
            );
            assert_eq!(st.candidate_records, listed, "{what}");
            assert_eq!(
                st.candidates + st.candidates_pruned,
                distinct.len() as u64,
                "{what}"
            );
            assert!(
                st.candidates_pruned > 0 || t == "0.3",
                "{what}: some pruned"
            );
            for p in &pairs {
                assert!(distinct.contains(&(p.a, p.b)), "{what}: {p:?} a candidate");
            }
            records.push(st.probe_records as usize);
        }
    }
    let by_document = crate::pipeline::prefix::BY_DOCUMENT_RECORDS;
    assert!(records.iter().any(|&r| r <= by_document), "{records:?}");
    assert!(records.iter().any(|&r| r > by_document), "{records:?}");
}

/// Past the records that go document by document, a budget whose eighth-of-a-quarter cannot
/// hold the candidates still runs the prefix self-join (document by document: the lists were
/// read by then), with the probe matching's pairs; only a budget the records do not fit
/// declines.
#[test]
fn candidates_past_the_budget_go_document_by_document() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = index(tmp.path(), 3, "all");
    let view = ix.view();
    let cfg = PairsConfig::new(ix.options().sample().unwrap(), "0.3".parse().unwrap());
    let mut want = Vec::new();
    for_each_pair_block(view, &cfg, 0..view.doc_ids(), 0, |b| {
        want.extend_from_slice(b);
        Ok(())
    })
    .unwrap();
    let by_document = crate::pipeline::prefix::BY_DOCUMENT_RECORDS as u64;
    let (mut past_budget, mut declined) = (0, 0);
    let mut mem: u64 = 64 << 20;
    while mem >= 1 << 10 {
        let (got, st) = prefix_whole(view, &cfg, mem);
        match st {
            Some(st) => {
                assert_eq!(got, want, "mem {mem}");
                assert!(st.probe_records * 16 <= mem / 4, "mem {mem}: records fit");
                if st.probe_records > by_document && st.candidate_records > mem / 4 / 8 {
                    past_budget += 1;
                }
            }
            None => {
                assert!(got.is_empty());
                declined += 1;
            }
        }
        mem = mem * 3 / 4;
    }
    assert!(
        past_budget > 0,
        "some budget held the records but not the candidates"
    );
    assert!(declined > 0, "small budgets decline");
}
