//! The plain probe choice made on format-3 ranks (`query::FrequentRanks`,
//! `Matcher::choose_probe_ranks`) is the hash choice's set, and the merge join that uses it
//! finds the pairs, probe records and candidates of format 2, on an index whose frequent keys
//! have several weights, some frequent in one segment only.

use super::join::join_pairs;
use super::{for_each_pair_block, Pair, PairsConfig};
use crate::index::Index;
use crate::query::{FrequentRanks, Scratch};
use crate::sort::SortOptions;

/// Two batches of 40 pages (two segments) in segment format `format`, one word a feature:
/// 30 words in every page (weight 80), 15 in every page of batch 0 and three of batch 1
/// (frequent in segment 0 only, present in segment 1), 15 of each batch's own (frequent in
/// its segment, absent from the other), 10 shared by every other page (df 20 a segment),
/// then family words (7 families) with a word of the page's own every ninth; pages differ in
/// length.
fn frequent_index(dir: &std::path::Path, format: u32, sample: &str) -> Index {
    super::two_batch_index(dir, ("words:1", format, sample), 40, |b, d| {
        (0..150 - (d % 5) * 7)
            .filter_map(|i| match i {
                0..30 => Some(format!("boiler{i}")),
                30..45 if b == 0 || d < 3 => Some(format!("half{i}")),
                30..45 => None,
                45..60 => Some(format!("b{b}pl{i}")),
                60..70 => Some(format!("pair{}w{i}", d % 2)),
                _ if (i + d) % 9 == 0 => Some(format!("own{b}x{d}x{i}")),
                _ => Some(format!("f{}w{i}", d % 7)),
            })
            .collect()
    })
}

/// Every rank's weight is its key's probe weight, and every document's probes chosen on its
/// ranks are, mapped to keys, the set `Matcher::choose_probes` chooses from its hashes.
#[test]
fn probes_chosen_on_ranks_are_the_hash_choice() {
    if std::env::var_os(crate::segment::FORMAT_ENV).is_some() {
        return; // the format written is not the one asked for
    }
    let tmp = tempfile::tempdir().unwrap();
    let ix = frequent_index(tmp.path(), 3, "all");
    let view = ix.view();
    assert_eq!(view.segments.len(), 2);
    assert!(view.segments.iter().all(|s| s.seg.ranked_forward()));
    assert!(!view.frequent.is_empty());
    let freq = FrequentRanks::new(view);
    // Weights of every rank of both segments.
    let mut weighted = 0;
    for (si, s) in view.segments.iter().enumerate() {
        let total = s.seg.table_meta(crate::segment::POSTINGS).unwrap().entries;
        let mut keys: Vec<u64> = (0..total).collect();
        s.seg.ranks_to_keys(&mut keys, 0).unwrap();
        let w = freq.segment(si).unwrap();
        for (r, &k) in keys.iter().enumerate() {
            assert_eq!(
                w.weight(r as u64),
                view.probe_weight(k),
                "seg {si} rank {r}"
            );
            weighted += (view.probe_weight(k) > 0) as usize;
        }
    }
    // boiler (30 keys) and pair (20) in both, half (15) in both, b0pl/b1pl (15) in one each.
    assert_eq!(weighted, 2 * 30 + 2 * 20 + 2 * 15 + 2 * 15);
    let sample = ix.options().sample().unwrap();
    let (mut x, mut raw, mut ranked, mut chosen) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut scratch = Scratch::new(view.doc_ids());
    let mut with_weight = 0;
    for t in ["0.3", "0.5", "0.8", "0.95"] {
        let cfg = PairsConfig::new(sample, t.parse().unwrap());
        let matcher = cfg.matcher(view, 0);
        assert!(matcher.plain_choice());
        for a in 0..view.doc_ids() {
            let si = view.forward_raw_into(a, &mut raw).unwrap().unwrap();
            assert!(view.features_into(a, &mut x).unwrap());
            let want_some = matcher.choose_probes(&x, &mut scratch).unwrap();
            let mut want: Vec<u64> = scratch.probes().collect();
            want.sort_unstable();
            chosen.clear();
            let w = freq.segment(si).unwrap();
            let got_some = matcher.choose_probe_ranks(&raw, w, &mut ranked, &mut chosen);
            assert_eq!(got_some, want_some, "t {t} doc {a}");
            let mut got = chosen.clone();
            view.segments[si].seg.ranks_to_keys(&mut got, 0).unwrap();
            got.sort_unstable();
            assert_eq!(got, want, "t {t} doc {a}");
            // A choice that takes some frequent keys and leaves others: the weights decide.
            let frequent_chosen = want.iter().any(|&k| view.probe_weight(k) > 0);
            with_weight += (frequent_chosen && want.len() < x.len()) as usize;
        }
    }
    assert!(with_weight > 0, "some choices take frequent keys, not all");
}

/// The merge join on format 3 (probes chosen on ranks) and on format 2 (on hashes): the same
/// probe records, candidates and pairs, for several samplings, thresholds and budgets (down
/// to one probing document a group), whole index and a batch against the other.
#[test]
fn join_on_ranks_equals_join_on_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    for sample in ["all", "mod:2", "bottomk:40", "adaptive"] {
        // Cross-segment candidates the coarse-key bound ruled out unmapped (format 3, all
        // and mod:M only).
        let mut ruled_out = 0;
        let dir = tmp.path().join(sample.replace(':', "_"));
        let f2 = frequent_index(&dir.join("f2"), 2, sample);
        let f3 = frequent_index(&dir.join("f3"), 3, sample);
        let (v2, v3) = (f2.view(), f3.view());
        let s = f2.options().sample().unwrap();
        for t in ["0.3", "0.6"] {
            let cfg = PairsConfig::new(s, t.parse().unwrap());
            for (range, older) in [(0..v2.doc_ids(), 0), (40..v2.doc_ids(), 40)] {
                let mut want: Vec<Pair> = Vec::new();
                for_each_pair_block(v2, &cfg, range.clone(), older, |b| {
                    want.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                want.sort_unstable_by_key(|p| (p.a, p.b));
                assert!(!want.is_empty(), "{sample} t {t}");
                for mem in [16 << 10, 64 << 20] {
                    let sort = SortOptions::new(mem, tmp.path().join("sort"));
                    let run = |v| {
                        let mut got = Vec::new();
                        let st = join_pairs(v, &cfg, &sort, range.clone(), older, |b| {
                            got.extend_from_slice(b);
                            Ok(())
                        })
                        .unwrap();
                        (got, st)
                    };
                    let ((p2, s2), (p3, s3)) = (run(v2), run(v3));
                    let what = format!("{sample} t {t} range {range:?} mem {mem}");
                    assert_eq!(p2, want, "{what}");
                    assert_eq!(p3, want, "{what}");
                    assert_eq!(s3.probe_records, s2.probe_records, "{what}");
                    assert_eq!(s3.candidate_records, s2.candidate_records, "{what}");
                    assert_eq!(s3.candidates, s2.candidates, "{what}");
                    assert_eq!(s3.documents, s2.documents, "{what}");
                    assert_eq!(s2.ruled_out_coarse, 0, "{what}");
                    assert!(s3.ruled_out_coarse <= s3.candidates, "{what}");
                    ruled_out += s3.ruled_out_coarse;
                }
            }
        }
        let ranked = v3.segments.iter().any(|s| s.seg.ranked_forward());
        let bounded = matches!(sample, "all" | "mod:2");
        assert_eq!(ruled_out > 0, ranked && bounded, "{sample}: {ruled_out}");
    }
}
