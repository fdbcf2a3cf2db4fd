//! The absent-first probe choice of a batch (`query/absent_first.rs`): the same pairs as
//! brute force and as the plain rarest-first choice, in both matchings, on a batch of edited
//! recrawls, near copies of old pages, within-batch duplicates and fresh pages over an index
//! with deleted documents; fewer old blocks read; the counters; the planner.

use super::plan::{plan, PairsConfig};
use super::{
    for_each_pair, for_each_pair_block, join_pairs, word_pages_index, word_pages_index_as,
    Matching, Pair,
};
use crate::lifecycle::delete::DeleteSelector;
use crate::sort::SortOptions;
use crate::view::View;

/// Batch-1 page `d` (3,000 pages): 12 site words, 50 family words, 60 words of its own; pages
/// 1000..1100 are near copies of pages 0..100 (3 words changed).
fn old_word(d: u32, i: u32) -> String {
    if (1000..1100).contains(&d) && i % 60 == 7 {
        return format!("var{d}x{i}");
    }
    let d = if (1000..1100).contains(&d) {
        d - 1000
    } else {
        d
    };
    match i {
        _ if i < 12 => format!("site{}w{i}", d % 7),
        _ if i < 62 => format!("f{}w{i}", d % 20),
        _ => format!("own{d}x{i}"),
    }
}

/// Page `d` of 122 words from `word`, with every word at `i % 60 == at` replaced by a word of
/// its own (`{tag}{d}x{i}`): an edit of about 3 % of the words.
pub(super) fn edited(d: u32, at: u32, tag: &str, word: impl Fn(u32) -> String) -> String {
    html((0..122).map(|i| {
        if i % 60 == at {
            format!("{tag}{d}x{i}")
        } else {
            word(i)
        }
    }))
}

pub(super) fn html(words: impl Iterator<Item = String>) -> String {
    let w: Vec<String> = words.collect();
    format!("<html><body><p>{}</p></body></html>", w.join(" "))
}

/// Every pair (prober in `range`, partner above it or below `older`) by comparing feature
/// lists: the oracle.
pub(super) fn brute(
    view: &View,
    cfg: &PairsConfig,
    range: std::ops::Range<u32>,
    older: u32,
) -> Vec<(u32, u32, u64)> {
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    for a in range {
        if !view.is_live(a) || !view.features_into(a, &mut xa).unwrap() || xa.is_empty() {
            continue;
        }
        for b in 0..view.doc_ids() {
            if b == a || !(b > a || b < older) || !view.is_live(b) {
                continue;
            }
            if !view.features_into(b, &mut xb).unwrap() || xb.is_empty() {
                continue;
            }
            if let Some(ov) = cfg.sample.verify(&xa, &xb, cfg.threshold) {
                out.push((a.min(b), a.max(b), ov.inter));
            }
        }
    }
    out.sort_unstable();
    out
}

/// The join's pairs for probers `range` (partners above them or below `older`), keyed, and
/// its stats.
pub(super) fn join_keyed(
    view: &View,
    cfg: &PairsConfig,
    sort: &crate::sort::SortOptions,
    range: std::ops::Range<u32>,
    older: u32,
) -> (Vec<(u32, u32, u64)>, super::plan::PairsStats) {
    let mut got = Vec::new();
    let s = super::join_pairs(view, cfg, sort, range, older, |b| {
        got.extend_from_slice(b);
        Ok(())
    })
    .unwrap();
    (keyed(&got), s)
}

pub(super) fn keyed(v: &[Pair]) -> Vec<(u32, u32, u64)> {
    let mut k: Vec<_> = v.iter().map(|p| (p.a, p.b, p.m.inter)).collect();
    k.sort_unstable();
    k
}

#[test]
fn absent_first_finds_the_same_pairs_and_reads_fewer_old_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    // Format 2: the planner gives this batch's matching to probe matching, whose absent-first
    // choice the counters below check (in format 3 it picks the join, whose per-segment
    // probes are checked in per_segment_tests.rs).
    let mut ix = word_pages_index_as(tmp.path(), 3000, 122, Some(2), old_word);
    // Deleted old documents: originals 60..70 and the near copies of 70..80.
    let gone: Vec<String> = (60..70)
        .chain(1070..1080)
        .map(|d| format!("d{d:02}.html"))
        .collect();
    ix.delete(&DeleteSelector::Keys(gone)).unwrap();

    let docs2 = tmp.path().join("docs2");
    std::fs::create_dir_all(&docs2).unwrap();
    let put = |name: String, text: String| std::fs::write(docs2.join(name), text).unwrap();
    for d in 0..80u32 {
        // Edited recrawls (same key: the old version is replaced) of pages with live near copies
        // (0..60), deleted originals (60..70) and deleted near copies (70..80).
        put(
            format!("d{d:02}.html"),
            edited(d, 3, "edit", |i| old_word(d, i)),
        );
    }
    for d in 100..130u32 {
        // Near copies of old pages under new keys.
        put(
            format!("n{d}.html"),
            edited(d, 9, "near", |i| old_word(d, i)),
        );
    }
    let fresh = |d: u32, i: u32| match i {
        _ if i < 12 => format!("site{}w{i}", d % 7), // old site words: present in the index
        // A passage quoted from an old page: rare shingles the old segment holds (the kind
        // the plain choice probes when their hashes are small).
        _ if i < 42 => old_word((d * 37) % 1000, i + 50),
        _ => format!("fresh{d}x{i}"),
    };
    for d in 0..200u32 {
        // Fresh pages; 150..200 are near copies of 100..150 within the batch.
        let src = if d >= 150 { d - 50 } else { d };
        put(
            format!("p{d:03}.html"),
            if d >= 150 {
                edited(d, 5, "dup", |i| fresh(src, i))
            } else {
                html((0..122).map(|i| fresh(src, i)))
            },
        );
    }
    let lo = ix.view().doc_ids();
    let opts = super::IngestOptions {
        mem_bytes: 16 << 20,
        ..Default::default()
    };
    let summary = ix
        .ingest(vec![docs2], &opts, &mut |_| Ok(()), &|_| {})
        .unwrap();
    // The ingest's own matching ran absent-first, and says so.
    let ms = summary.matching_stats.clone().unwrap();
    assert!(ms["docs_absent"].as_u64().unwrap() >= 100, "{ms}");
    assert!(ms["probes_absent"].as_u64().unwrap() > 0, "{ms}");
    assert!(ms["filter_checks"].as_u64().unwrap() > 0, "{ms}");

    let view = ix.view();
    let hi = view.doc_ids();
    assert_eq!(hi - lo, 80 + 30 + 200);
    assert!(view.segments.len() >= 2);
    let sample = ix.options().sample().unwrap();
    let tmpdir = tmp.path().join("sort");
    for t in ["0.5", "0.8", "0.95"] {
        let plain = PairsConfig {
            absent_first: false,
            ..PairsConfig::new(sample, t.parse().unwrap())
        };
        // One absent-first set for all segments (per-segment probes: per_segment_tests.rs).
        let cfg = PairsConfig {
            per_segment: false,
            ..PairsConfig::new(sample, t.parse().unwrap())
        };
        let want = brute(view, &cfg, lo..hi, lo);
        if t != "0.95" {
            // recrawls x near copies, near copies x (original, copy), within-batch duplicates
            assert!(want.len() > 40, "t {t}: {} pairs", want.len());
            assert!(
                want.iter().any(|&(a, b, _)| a >= lo && b >= lo),
                "within-batch pairs"
            );
        }
        for mem in [16 << 10, 64 << 20] {
            let sort = SortOptions::new(mem, &tmpdir);
            let mut stats = Vec::new();
            for c in [&plain, &cfg] {
                let mut got = Vec::new();
                let s = join_pairs(view, c, &sort, lo..hi, lo, |b| {
                    got.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                assert_eq!(
                    keyed(&got),
                    want,
                    "join t {t} mem {mem} absent_first {}",
                    c.absent_first
                );
                let mut got = Vec::new();
                let p = for_each_pair_block(view, c, lo..hi, lo, |b| {
                    got.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                assert_eq!(
                    keyed(&got),
                    want,
                    "probe t {t} absent_first {}",
                    c.absent_first
                );
                assert_eq!(
                    (p.probes_absent, p.docs_absent, p.filter_checks),
                    (s.probes_absent, s.docs_absent, s.filter_checks),
                    "both matchings choose the same probes"
                );
                stats.push(s);
            }
            let (before, after) = (&stats[0], &stats[1]);
            eprintln!(
                "t {t} mem {mem}: blocks read {} plain, {} absent-first of {} ({} docs absent)",
                before.blocks_read,
                after.blocks_read,
                view.segments
                    .iter()
                    .filter_map(|s| s.seg.table_meta(crate::segment::POSTINGS))
                    .map(|t| t.blocks as u64)
                    .sum::<u64>(),
                after.docs_absent
            );
            assert_eq!(
                before.probe_records, after.probe_records,
                "same number of probes"
            );
            assert_eq!(
                (
                    before.probes_absent,
                    before.docs_absent,
                    before.filter_checks
                ),
                (0, 0, 0)
            );
            // 150 fresh pages and their 50 within-batch copies have enough own keys: no old block.
            assert!(after.docs_absent >= 200, "t {t}: {after:?}");
            assert!(
                after.probes_absent > after.probe_records / 2,
                "t {t}: {after:?}"
            );
        }
        // The fresh pages alone (and their within-batch copies): absent-first reads only the
        // batch's own segment, the plain choice reads old blocks for the quoted passages.
        let fresh_lo = ix.catalog().doc_by_key("p000.html").unwrap().unwrap();
        assert_eq!(hi - fresh_lo, 200, "the fresh pages come last");
        let sort = SortOptions::new(64 << 20, &tmpdir);
        let own_blocks = view.segments.last().unwrap();
        let own_blocks = own_blocks
            .seg
            .table_meta(crate::segment::POSTINGS)
            .unwrap()
            .blocks as u64;
        let mut read = Vec::new();
        for c in [&plain, &cfg] {
            let mut got = Vec::new();
            let s = join_pairs(view, c, &sort, fresh_lo..hi, lo, |b| {
                got.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            assert_eq!(keyed(&got), brute(view, c, fresh_lo..hi, lo));
            read.push(s.blocks_read);
        }
        assert!(
            read[1] <= own_blocks && read[1] < read[0],
            "t {t}: blocks read {read:?}, own segment {own_blocks}"
        );
        // A whole-index run has no old segments: the plain choice, no filter checks.
        let sort = SortOptions::new(64 << 20, &tmpdir);
        let w = join_pairs(view, &cfg, &sort, 0..hi, 0, |_| Ok(())).unwrap();
        let w0 = join_pairs(view, &plain, &sort, 0..hi, 0, |_| Ok(())).unwrap();
        assert_eq!((w.filter_checks, w.docs_absent), (0, 0));
        assert_eq!((w.pairs, w.blocks_read), (w0.pairs, w0.blocks_read));
    }
}

/// The planner: its block estimate follows the key range the probes cover (within 2x of the
/// blocks the join reads, for both probe choices), `auto` finds the same pairs, probe while the
/// index fits the budget and join when little of it does.
#[test]
fn planner_estimates_blocks_from_the_covered_key_range() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ix = word_pages_index(tmp.path(), 3000, 122, old_word);
    let docs2 = tmp.path().join("docs2");
    std::fs::create_dir_all(&docs2).unwrap();
    for d in 0..400u32 {
        // Pages made of old family words (present in the old segment) in a new order.
        let text = html((0..122).map(|i| old_word((d * 7 + i) % 3000, (i * 13 + d) % 122)));
        std::fs::write(docs2.join(format!("m{d:03}.html")), text).unwrap();
    }
    let lo = ix.view().doc_ids();
    let opts = super::IngestOptions {
        mem_bytes: 16 << 20,
        ..Default::default()
    };
    ix.ingest(vec![docs2], &opts, &mut |_| Ok(()), &|_| {})
        .unwrap();
    let view = ix.view();
    let hi = view.doc_ids();
    let sample = ix.options().sample().unwrap();
    let tmpdir = tmp.path().join("sort");
    let mut read = Vec::new();
    for absent_first in [false, true] {
        let cfg = PairsConfig {
            absent_first,
            per_segment: false,
            ..PairsConfig::new(sample, "0.8".parse().unwrap())
        };
        let sort = SortOptions::new(64 << 20, &tmpdir);
        let s = join_pairs(view, &cfg, &sort, lo..hi, lo, |_| Ok(())).unwrap();
        let p = plan(view, &cfg, lo..hi, lo, 64 << 20);
        let ratio = p.blocks / s.blocks_read as f64;
        assert!(
            (0.5..=2.0).contains(&ratio),
            "absent_first {absent_first}: estimated {} blocks, read {}",
            p.blocks,
            s.blocks_read
        );
        assert!(p.blocks < p.total_blocks as f64);
        read.push(s.blocks_read);
        // The work the planner expects of each matching, from the lists of a sample: within 2x
        // of what the runs count.
        let ps = for_each_pair_block(view, &cfg, lo..hi, lo, |_| Ok(())).unwrap();
        // (Counted as one more each, so that none expected and none found agree.)
        let within = |est: f64, got: u64| (0.5..=2.0).contains(&((est + 1.0) / (got as f64 + 1.0)));
        assert!(within(p.postings, ps.postings_visited), "{p:?} {ps:?}");
        assert!(
            within(p.join_candidate_records, s.candidate_records),
            "{p:?} {s:?}"
        );
        assert!(within(p.join_candidates, s.candidates), "{p:?} {s:?}");
        // Everything fits 64 MiB and the cache: lookups priced in cache, a close call (a small
        // batch into a small index: either matching is cheap; the join, which verifies only the
        // candidates probe matching does, saves the probe's filter checks). 4 KiB of budget
        // for a segment many times larger: every lookup a read from disk, join.
        assert_eq!((p.llc_miss, p.mem_miss), (0.0, 0.0), "{p:?}");
        assert!(
            p.cost_probe < 4.0 * p.cost_join && p.cost_join < 4.0 * p.cost_probe,
            "{p:?}"
        );
        let tight = plan(view, &cfg, lo..hi, lo, 4 << 10);
        assert_eq!(tight.choice, Matching::Join, "{tight:?}");
        assert!(tight.cost_probe > 10.0 * tight.cost_join, "{tight:?}");
        let mut auto = Vec::new();
        let st = for_each_pair(Matching::Auto, view, &cfg, &sort, lo..hi, lo, None, |b| {
            auto.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        let mut joined = Vec::new();
        join_pairs(view, &cfg, &sort, lo..hi, lo, |b| {
            joined.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(keyed(&auto), keyed(&joined));
        assert_eq!(st.matching, st.plan.as_ref().map(|p| p.choice));
    }
    // New orders of old words make new shingles: absent-first reads only the batch's own
    // segment, the plain choice the old one too.
    assert!(
        read[0] > 10 && read[1] < read[0] / 2,
        "blocks read {read:?}"
    );
}

/// A served query's absent-first choice (`Matcher::with_absent_first_for_queries`): the
/// matches of the plain rarest-first choice and of brute force, for pages the index holds,
/// near copies of them and pages new to it; a new page probes only keys no segment holds (no
/// posting list found), and a page the index holds gives the choice up after
/// `ABSENT_TRIAL` rare keys (no more filter checks than that per segment); before the key
/// filters are loaded, the plain choice.
#[test]
fn query_absent_first_answers_as_the_plain_choice() {
    use crate::canonicalize::DocFormat;
    use crate::query::{Matcher, Scratch, ABSENT_TRIAL};
    let tmp = tempfile::tempdir().unwrap();
    let ix = word_pages_index(tmp.path(), 1200, 122, old_word);
    let view = ix.view();
    let segs = view.segments.len() as u64;
    let sample = ix.options().sample().unwrap();
    let fresh = |d: u32, i: u32| match i {
        _ if i < 12 => format!("site{}w{i}", d % 7), // old site words
        _ => format!("fresh{d}x{i}"),
    };
    let pages: Vec<(&str, String)> = (0..10u32)
        .map(|d| ("held", html((0..122).map(|i| old_word(d, i)))))
        .chain((100..110u32).map(|d| ("near", edited(d, 9, "near", |i| old_word(d, i)))))
        .chain((0..10u32).map(|d| ("new", html((0..122).map(|i| fresh(d, i))))))
        .collect();
    let (mut xb, mut scratch) = (Vec::new(), Scratch::new(0));
    // Before the key filters are loaded (a one-shot `query`), the plain choice.
    let p = ix
        .prepare("q", pages[25].1.as_bytes(), DocFormat::Html, None)
        .unwrap();
    let m = Matcher::new(view, sample, "0.8".parse().unwrap()).with_absent_first_for_queries();
    assert!(m.absent_in.is_empty());
    m.search(&p.fp.features, |_| true, &mut scratch, &mut Vec::new())
        .unwrap();
    assert_eq!(Scratch::counters_only(&mut scratch).filter_checks, 0);
    for s in &view.segments {
        s.seg.load_key_filters();
    }
    for t in ["0.5", "0.8"] {
        let threshold = t.parse().unwrap();
        for (i, (kind, page)) in pages.iter().enumerate() {
            let p = ix
                .prepare(&format!("q{i}"), page.as_bytes(), DocFormat::Html, None)
                .unwrap();
            let x = &p.fp.features;
            let mut want = Vec::new();
            for b in 0..view.doc_ids() {
                if view.is_live(b) && view.features_into(b, &mut xb).unwrap() {
                    if let Some(ov) = sample.verify(x, &xb, threshold) {
                        want.push((b, ov.inter));
                    }
                }
            }
            let search = |m: &Matcher<'_>, scratch: &mut Scratch| {
                let mut found = Vec::new();
                m.search(x, |_| true, scratch, &mut found).unwrap();
                let mut got: Vec<(u32, u64)> = found.iter().map(|m| (m.doc, m.inter)).collect();
                got.sort_unstable();
                got
            };
            let plain = Matcher::new(view, sample, threshold);
            assert_eq!(search(&plain, &mut scratch), want, "t {t} {kind} page {i}");
            Scratch::counters_only(&mut scratch);
            let absent = Matcher::new(view, sample, threshold).with_absent_first_for_queries();
            assert_eq!(search(&absent, &mut scratch), want, "t {t} {kind} page {i}");
            let c = Scratch::counters_only(&mut scratch);
            match *kind {
                "held" => {
                    assert!(!want.is_empty(), "t {t} page {i}");
                    assert_eq!(c.probes_absent, 0, "t {t} page {i}: gave up");
                    assert!(
                        c.filter_checks <= ABSENT_TRIAL as u64 * segs,
                        "t {t} page {i}"
                    );
                }
                "new" => {
                    assert!(want.is_empty(), "t {t} page {i}");
                    assert!(c.probes_absent > 0, "t {t} page {i}");
                    assert_eq!(c.lists_found, 0, "t {t} page {i}: read no posting list");
                }
                _ => {}
            }
        }
    }
}
