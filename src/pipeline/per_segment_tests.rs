//! Per-segment probes of the merge join (`query/per_segment.rs`): the same pairs as brute
//! force, as one absent-first set for all segments and as the plain choice, on a batch of
//! edited recrawls, near copies, within-batch duplicates and fresh pages over an index of
//! several old segments with deleted documents, with spilled sorts (kind 4 run files); fewer
//! old lookups and blocks; more than 31 old segments (grouped bits).

use super::absent_first_tests::{brute, edited, html, join_keyed, keyed};
use super::plan::{plan, PairsConfig};
use super::{for_each_pair, for_each_pair_block, join_pairs, word_pages_index, Matching};
use crate::lifecycle::delete::DeleteSelector;
use crate::sort::SortOptions;

/// Batch-1 page `d`: 12 site words, 50 family words (20 families), 60 words of its own.
fn old_word(d: u32, i: u32) -> String {
    match i {
        _ if i < 12 => format!("site{}w{i}", d % 7),
        _ if i < 62 => format!("f{}w{i}", d % 20),
        _ => format!("own{d}x{i}"),
    }
}

fn write_batch(dir: &std::path::Path, pages: Vec<(String, String)>) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for (name, text) in pages {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir.to_owned()
}

/// Ingests `dir` with the merge join (the planner would pick probe for these small indexes).
fn ingest(ix: &mut crate::index::Index, dir: std::path::PathBuf) -> crate::pipeline::IngestSummary {
    let opts = super::IngestOptions {
        mem_bytes: 16 << 20,
        matching: Matching::Join,
        ..Default::default()
    };
    ix.ingest(vec![dir], &opts, &mut |_| Ok(()), &|_| {})
        .unwrap()
}

/// Three configurations: plain rarest-first, one absent-first set, per-segment (default).
fn configs(sample: crate::fingerprint::Sample, t: &str) -> [PairsConfig; 3] {
    let c = PairsConfig::new(sample, t.parse().unwrap());
    assert!(
        c.absent_first && c.per_segment,
        "per-segment is the default"
    );
    [
        PairsConfig {
            absent_first: false,
            per_segment: false,
            ..c
        },
        PairsConfig {
            per_segment: false,
            ..c
        },
        c,
    ]
}

#[test]
fn per_segment_probes_find_the_same_pairs_and_look_up_fewer_old_keys() {
    let tmp = tempfile::tempdir().unwrap();
    // Segment A: 3,000 pages.
    let mut ix = word_pages_index(tmp.path(), 3000, 122, old_word);
    // Segment B: near copies of pages 1500..2100 (same families as A) under new keys.
    let b = (1500..2100u32)
        .map(|d| {
            let t = edited(d, 5, "bcopy", |i| old_word(d, i));
            (format!("b{d}.html"), t)
        })
        .collect();
    ingest(&mut ix, write_batch(&tmp.path().join("docs-b"), b));
    // Deleted old documents in both segments.
    let gone: Vec<String> = (60..70)
        .map(|d| format!("d{d:02}.html"))
        .chain((1500..1510).map(|d| format!("b{d}.html")))
        .collect();
    ix.delete(&DeleteSelector::Keys(gone)).unwrap();

    let mut c = Vec::new();
    for d in 0..80u32 {
        // Edited copies of A pages (relatives only in A, family words also in B); 60..70
        // were deleted; 0..20 are recrawls under the same key (the old version is replaced).
        let key = if d < 20 {
            format!("d{d:02}.html")
        } else {
            format!("r{d:02}.html")
        };
        c.push((key, edited(d, 3, "edit", |i| old_word(d, i))));
    }
    for d in 1500..1530u32 {
        // Near copies of pages with relatives in both A and B (1500..1510: B's copy deleted).
        c.push((
            format!("n{d}.html"),
            edited(d, 9, "near", |i| old_word(d, i)),
        ));
    }
    let fresh = |d: u32, i: u32| match i {
        _ if i < 12 => format!("site{}w{i}", d % 7),
        _ if i < 42 => old_word((d * 37) % 3000, i + 20), // a quoted family passage
        _ => format!("fresh{d}x{i}"),
    };
    for d in 0..150u32 {
        // Fresh pages; 100..150 are near copies of 50..100 within the batch.
        let src = if d >= 100 { d - 50 } else { d };
        let t = if d >= 100 {
            edited(d, 5, "dup", |i| fresh(src, i))
        } else {
            html((0..122).map(|i| fresh(src, i)))
        };
        c.push((format!("p{d:03}.html"), t));
    }
    let lo = ix.view().doc_ids();
    let summary = ingest(&mut ix, write_batch(&tmp.path().join("docs-c"), c));
    // The ingest's own join ran per segment and says so.
    let ms = summary.matching_stats.clone().unwrap();
    assert!(ms["docs_per_segment"].as_u64().unwrap() > 200, "{ms}");
    assert!(ms["docs_no_old"].as_u64().unwrap() >= 150, "{ms}");

    let view = ix.view();
    let hi = view.doc_ids();
    assert_eq!(hi - lo, 80 + 30 + 150);
    assert_eq!(view.segments.len(), 3);
    let sample = ix.options().sample().unwrap();
    let tmpdir = tmp.path().join("sort");
    for t in ["0.5", "0.8", "0.95"] {
        let cfgs = configs(sample, t);
        let want = brute(view, &cfgs[2], lo..hi, lo);
        if t != "0.95" {
            assert!(want.len() > 80, "t {t}: {} pairs", want.len());
            assert!(want.iter().any(|&(a, b, _)| a >= lo && b >= lo));
            assert!(want.iter().any(|&(a, b, _)| a < 3000 && b >= lo));
            // B's copies (another edit) reach 0.5 with the near copies, not 0.8.
            let with_b = want
                .iter()
                .any(|&(a, b, _)| (3000..lo).contains(&a) && b >= lo);
            assert_eq!(with_b, t == "0.5", "t {t}");
        }
        for mem in [16 << 10, 64 << 20] {
            let sort = SortOptions::new(mem, &tmpdir);
            let mut stats = Vec::new();
            for c in &cfgs {
                let (got, s) = join_keyed(view, c, &sort, lo..hi, lo);
                assert_eq!(got, want, "join t {t} mem {mem} {c:?}");
                if mem == 16 << 10 {
                    assert!(s.runs_spilled > 0, "the probe records spill: {s:?}");
                }
                stats.push(s);
            }
            // The probe matching ignores `per_segment` and finds the same pairs.
            let mut got = Vec::new();
            for_each_pair_block(view, &cfgs[2], lo..hi, lo, |b| {
                got.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            assert_eq!(keyed(&got), want, "probe t {t}");
            let (one, per) = (&stats[1], &stats[2]);
            eprintln!(
                "t {t} mem {mem}: blocks read plain {} absent-first {} per-segment {}; \
                 postings {} / {} / {}; old lookups {}, docs with none {}",
                stats[0].blocks_read,
                one.blocks_read,
                per.blocks_read,
                stats[0].postings_visited,
                one.postings_visited,
                per.postings_visited,
                per.old_lookups,
                per.docs_no_old,
            );
            assert_eq!((one.old_lookups, one.docs_per_segment), (0, 0));
            assert_eq!(per.docs_per_segment, (hi - lo) as u64, "every batch doc");
            // Fresh pages and their copies need no old lookup; the recrawls of A pages look
            // keys up in A only, so per-segment visits fewer postings and reads no more blocks.
            assert!(per.docs_no_old >= 150, "t {t}: {per:?}");
            assert!(per.blocks_read <= one.blocks_read, "t {t}: {one:?} {per:?}");
            assert!(
                per.old_blocks_read <= one.old_blocks_read,
                "t {t}: {one:?} {per:?}"
            );
            assert!(
                per.old_blocks_read < per.blocks_read,
                "the batch's segment is read too"
            );
            if t != "0.95" {
                // (at 0.95 no document looks up an old key either way; the batch's own
                // segment is probed with the plain choice, not the absent-first one)
                assert!(
                    per.postings_visited < one.postings_visited,
                    "t {t}: {one:?} {per:?}"
                );
            }
        }
        // The planner prices the join from the per-segment records.
        let p = plan(view, &cfgs[2], lo..hi, lo, 64 << 20);
        let p1 = plan(view, &cfgs[1], lo..hi, lo, 64 << 20);
        assert!(p.join_surviving <= p1.join_surviving, "{p:?} {p1:?}");
        assert!(
            t == "0.95" || p.join_surviving < p1.join_surviving,
            "{p:?} {p1:?}"
        );
        assert_eq!(p.surviving, p1.surviving, "the probe side is the same");
        let sort = SortOptions::new(4 << 10, &tmpdir);
        let mut auto = Vec::new();
        for_each_pair(
            Matching::Auto,
            view,
            &cfgs[2],
            &sort,
            lo..hi,
            lo,
            None,
            |b| {
                auto.extend_from_slice(b);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(keyed(&auto), want);
    }
    // A whole-index run has no old segments: one set for all, no per-segment counters.
    let cfgs = configs(sample, "0.8");
    let sort = SortOptions::new(64 << 20, &tmpdir);
    let w = join_pairs(view, &cfgs[2], &sort, 0..hi, 0, |_| Ok(())).unwrap();
    let w0 = join_pairs(view, &cfgs[0], &sort, 0..hi, 0, |_| Ok(())).unwrap();
    assert_eq!((w.docs_per_segment, w.old_lookups), (0, 0));
    assert_eq!((w.pairs, w.blocks_read), (w0.pairs, w0.blocks_read));
    // Every run file was removed.
    let left = std::fs::read_dir(&tmpdir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0);
}

/// 34 old segments: old segments from the 31st on share bit 31 (a group chosen against the
/// union of its members); the pairs stay exact, and a page whose relatives live in one
/// segment looks keys up in that segment (or its group) only.
#[test]
fn more_than_31_old_segments_share_the_last_bit() {
    let tmp = tempfile::tempdir().unwrap();
    // Batch k (0..34): 12 pages, page d = 12 k + j of family d % 5.
    let word = |d: u32, i: u32| match i {
        _ if i < 40 => format!("fam{}w{i}", d % 5),
        _ => format!("own{d}x{i}"),
    };
    let mut ix = word_pages_index(tmp.path(), 12, 100, word);
    for k in 1..34u32 {
        let pages = (12 * k..12 * k + 12)
            .map(|d| (format!("d{d:02}.html"), html((0..100).map(|i| word(d, i)))))
            .collect();
        ingest(
            &mut ix,
            write_batch(&tmp.path().join(format!("b{k}")), pages),
        );
    }
    assert_eq!(ix.view().segments.len(), 34);
    let lo = ix.view().doc_ids();
    // Recrawls of one page in each of 8 segments spread over the bits, and fresh pages.
    let mut c: Vec<(String, String)> = [0u32, 13, 100, 250, 370, 380, 395, 405]
        .iter()
        .map(|&d| {
            let t = html((0..100).map(|i| {
                if i % 50 == 45 {
                    format!("edit{d}x{i}")
                } else {
                    word(d, i)
                }
            }));
            (format!("r{d:02}.html"), t)
        })
        .collect();
    for d in 0..20u32 {
        c.push((
            format!("p{d}.html"),
            html((0..100).map(|i| {
                if i < 40 {
                    word(d, i)
                } else {
                    format!("fresh{d}x{i}")
                }
            })),
        ));
    }
    ingest(&mut ix, write_batch(&tmp.path().join("docs-c"), c));
    let view = ix.view();
    let hi = view.doc_ids();
    assert_eq!(view.segments.len(), 35);
    let sample = ix.options().sample().unwrap();
    let tmpdir = tmp.path().join("sort");
    let cfgs = configs(sample, "0.8");
    let m = cfgs[2].matcher(view, lo);
    let bits = m.segment_bits();
    assert_eq!(bits[0], 1 << 1);
    assert_eq!(bits[29], 1 << 30);
    assert!(bits[30..34].iter().all(|&b| b == 1 << 31), "{bits:?}");
    assert_eq!(bits[34], crate::query::NEW_SEGMENTS);
    for t in ["0.5", "0.8"] {
        let cfgs = configs(sample, t);
        let want = brute(view, &cfgs[2], lo..hi, lo);
        assert!(
            want.len() >= 8,
            "t {t}: the recrawls pair with their old versions"
        );
        let sort = SortOptions::new(64 << 20, &tmpdir);
        let mut per = None;
        for c in &cfgs {
            let (got, s) = join_keyed(view, c, &sort, lo..hi, lo);
            assert_eq!(got, want, "t {t} {c:?}");
            per = Some(s);
        }
        let per = per.unwrap();
        // Each recrawl's own words are in one segment only; the family words in every one:
        // each document looks keys up in at most one old group.
        assert!(per.old_lookups > 0, "{per:?}");
        assert!(per.docs_no_old >= 20, "{per:?}");
    }
}

/// The probes `choose_segment_probes` must choose for the sorted feature set `x`, from their
/// definition rather than a walk: the plain rarest-first `p = |x| - m + 1` keys for the
/// batch's own segments; for each old group (segments sharing a bit), nothing when `x` has
/// at least `p` keys absent from every member, else all of `x`'s present keys' cheapest
/// `p - absent` by (weight, key). One entry per key, bits or-ed, ascending. None when the
/// per-segment choice does not apply to `x` (one set for all).
fn oracle_probes(
    view: &crate::view::View,
    cfg: &PairsConfig,
    bits: &[u32],
    x: &[u64],
) -> Option<Vec<(u64, u32)>> {
    let n = x.len();
    let need = if n == 0 {
        0
    } else {
        cfg.sample.min_overlap(cfg.threshold, n).max(1)
    };
    if n == 0 || need > n || need == 1 {
        return None;
    }
    let p = n - need + 1;
    let cheapest = |keys: Vec<u64>, want: usize| -> Vec<u64> {
        let mut r: Vec<(u32, u64)> = keys
            .into_iter()
            .map(|k| (view.probe_weight(k), k))
            .collect();
        r.sort_unstable();
        r.truncate(want);
        r.into_iter().map(|(_, k)| k).collect()
    };
    let mut out: Vec<(u64, u32)> = Vec::new();
    if bits.contains(&crate::query::NEW_SEGMENTS) {
        out.extend(
            cheapest(x.to_vec(), p)
                .into_iter()
                .map(|k| (k, crate::query::NEW_SEGMENTS)),
        );
    }
    let mut groups: Vec<u32> = bits
        .iter()
        .copied()
        .filter(|&b| b != crate::query::NEW_SEGMENTS)
        .collect();
    groups.sort_unstable();
    groups.dedup();
    for g in groups {
        let absent = |k: u64| {
            (view.segments.iter().zip(bits))
                .filter(|(_, &b)| b == g)
                .all(|(s, _)| matches!(s.seg.postings_block_for(k), Ok(None)))
        };
        let present: Vec<u64> = x.iter().copied().filter(|&k| !absent(k)).collect();
        let a = n - present.len();
        if a < p {
            out.extend(cheapest(present, p - a).into_iter().map(|k| (k, g)));
        }
    }
    out.sort_unstable();
    let mut merged: Vec<(u64, u32)> = Vec::new();
    for (k, b) in out {
        match merged.last_mut() {
            Some(last) if last.0 == k => last.1 |= b,
            _ => merged.push((k, b)),
        }
    }
    Some(merged)
}

/// `choose_segment_probes` (a chunked walk over batched key-filter answers) chooses exactly
/// the oracle's probes for every document of `docs`; returns the documents compared.
fn walk_equals_oracle(
    view: &crate::view::View,
    cfg: &PairsConfig,
    docs: std::ops::Range<u32>,
    older_than: u32,
) -> usize {
    let m = cfg.matcher(view, older_than);
    assert!(m.per_segment());
    let bits = m.segment_bits();
    let ids: Vec<u32> = docs
        .filter(|&d| view.is_live(d) && view.size(d) > 0)
        .collect();
    let mut lists = crate::query::DocLists::read(view, ids).unwrap();
    lists.map_hashes_caching(view, |_| true).unwrap();
    let mut scratch = crate::query::Scratch::new(0);
    let mut sp = crate::query::SegmentProbes::default();
    let xs: Vec<Option<&[u64]>> = (0..lists.len())
        .map(|i| lists.segment(i).and_then(|_| lists.hashes(i)))
        .collect();
    // The pre-pass in one run, in runs of one document, and in runs of ~200 keys.
    let pres = [
        m.pre_walk(&xs, usize::MAX),
        m.pre_walk(&xs, 0),
        m.pre_walk(&xs, 200),
    ];
    for p in &pres[1..] {
        assert_eq!(p.keys, pres[0].keys);
        assert!(p.distinct >= pres[0].distinct);
    }
    let mut compared = 0;
    let mut overran = 0;
    let mut continued = 0u64;
    for (i, x) in xs.iter().enumerate().take(lists.len()) {
        let Some(x) = *x else {
            continue;
        };
        let Some(want) = oracle_probes(view, cfg, &bits, x) else {
            assert!(pres.iter().all(|p| p.prefix(i).is_empty()));
            continue;
        };
        assert!(m.choose_segment_probes(x, &mut scratch, &mut sp).unwrap());
        assert_eq!(sp.probes, want, "document {}", lists.id(i));
        let c = sp.take_counters();
        assert_eq!((c.walk_keys_sorted, c.walk_fallback_docs), (0, 1));
        // With the pre-walked prefix of each run shape, and with shortened ones (documents
        // whose walk overruns the prefix).
        let full = pres[0].prefix(i);
        // The walk prefix, or the whole list when the walk goes on past it.
        assert!(full.len() == m.walk_prefix(x.len()) || full.len() == x.len());
        assert!(!full.is_empty() && full.len() <= x.len());
        continued += (full.len() > m.walk_prefix(x.len())) as u64;
        // Past the prefix, a run answers the groups some document of it still walks: the
        // bits may differ between run shapes only in groups closed for this document.
        let others: Vec<&[u32]> = pres[1..].iter().map(|p| p.prefix(i)).collect();
        let l = m.walk_prefix(x.len());
        for p in &others {
            assert_eq!(p.len(), full.len(), "document {}", lists.id(i));
            assert_eq!(p[..l], full[..l], "document {}", lists.id(i));
        }
        for pre in [
            full,
            &full[..full.len() / 2],
            &full[..1],
            others[0],
            others[1],
        ] {
            assert!((m.choose_segment_probes_with(x, pre, &mut scratch, &mut sp)).unwrap());
            assert_eq!(
                sp.probes,
                want,
                "document {} prefix {}",
                lists.id(i),
                pre.len()
            );
            let c = sp.take_counters();
            assert!(c.walk_keys_sorted >= 1 && c.walk_keys_sorted <= pre.len() as u64);
            if pre.len() == 1 {
                overran += c.walk_fallback_docs;
            }
            if pre.len() == full.len() {
                // The pre-pass answered every key the walk went through.
                assert_eq!(c.walk_fallback_docs, 0, "document {}", lists.id(i));
                assert_eq!(c.filter_checks_fallback, 0);
            }
            if c.walk_fallback_docs == 0 {
                assert_eq!(c.filter_checks_fallback, 0);
            }
        }
        compared += 1;
    }
    // Walks past a one-key prefix.
    assert!(overran > compared as u64 / 2, "{overran} of {compared}");
    assert_eq!(pres[0].continued > 0, continued > 0);
    compared
}

/// The chunked walk chooses the oracle's probes, for one group per old segment (3 segments,
/// relatives in one, both or none of them) and for grouped segments (34 old segments), at
/// several thresholds.
#[test]
fn chunked_filter_walk_chooses_the_defined_probes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ix = word_pages_index(tmp.path(), 1500, 122, old_word);
    let b = (700..1000u32)
        .map(|d| {
            (
                format!("b{d}.html"),
                edited(d, 5, "bcopy", |i| old_word(d, i)),
            )
        })
        .collect();
    ingest(&mut ix, write_batch(&tmp.path().join("docs-b"), b));
    let mut c = Vec::new();
    for d in 0..60u32 {
        c.push((
            format!("r{d:02}.html"),
            edited(d, 3, "edit", |i| old_word(d, i)),
        ));
    }
    for d in 700..760u32 {
        c.push((
            format!("n{d}.html"),
            edited(d, 9, "near", |i| old_word(d, i)),
        ));
    }
    for d in 0..80u32 {
        let t = html((0..122).map(|i| match i {
            _ if i < 12 => format!("site{}w{i}", d % 7),
            _ if i < 42 => old_word((d * 37) % 1500, i + 20),
            _ => format!("fresh{d}x{i}"),
        }));
        c.push((format!("p{d:03}.html"), t));
    }
    let lo = ix.view().doc_ids();
    ingest(&mut ix, write_batch(&tmp.path().join("docs-c"), c));
    let view = ix.view();
    assert_eq!(view.segments.len(), 3);
    let hi = view.doc_ids();
    let sample = ix.options().sample().unwrap();
    for t in ["0.3", "0.5", "0.8", "0.95"] {
        let cfg = &configs(sample, t)[2];
        assert_eq!(walk_equals_oracle(view, cfg, lo..hi, lo), 200, "t {t}");
        // Matched against segment A alone (B is then the "new" side): another grouping.
        walk_equals_oracle(view, cfg, 1500..hi, 1500);
    }

    // 34 old segments of 3 pages (the last 4 share bit 31) and a batch of recrawls.
    let tmp = tempfile::tempdir().unwrap();
    let word = |d: u32, i: u32| match i {
        _ if i < 40 => format!("fam{}w{i}", d % 5),
        _ => format!("own{d}x{i}"),
    };
    let mut ix = word_pages_index(tmp.path(), 3, 100, word);
    for k in 1..34u32 {
        let pages = (3 * k..3 * k + 3)
            .map(|d| (format!("d{d:02}.html"), html((0..100).map(|i| word(d, i)))))
            .collect();
        ingest(
            &mut ix,
            write_batch(&tmp.path().join(format!("b{k}")), pages),
        );
    }
    let lo = ix.view().doc_ids();
    let c = (0..102u32)
        .step_by(3)
        .map(|d| {
            let t = html((0..100).map(|i| {
                if i % 50 == 45 {
                    format!("edit{d}x{i}")
                } else {
                    word(d, i)
                }
            }));
            (format!("r{d:02}.html"), t)
        })
        .collect();
    ingest(&mut ix, write_batch(&tmp.path().join("docs-c"), c));
    let view = ix.view();
    assert_eq!(view.segments.len(), 35);
    let hi = view.doc_ids();
    for t in ["0.5", "0.8"] {
        let cfg = &configs(sample, t)[2];
        assert_eq!(walk_equals_oracle(view, cfg, lo..hi, lo), 34, "t {t}");
    }
}
