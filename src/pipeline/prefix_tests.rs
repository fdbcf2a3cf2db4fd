//! The prefix self-join (`prefix.rs`) against the probe matching.

use crate::error::Result;
use crate::pipeline::pairs::for_each_pair_block;
use crate::pipeline::plan::{Matching, Pair, PairsConfig};
use crate::pipeline::prefix::{prefix_join, prefix_pairs};

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
                let mut got = Vec::new();
                let mut emit = |b: &[Pair]| {
                    got.extend_from_slice(b);
                    Ok(())
                };
                let all = 0..view.doc_ids();
                let gs = prefix_pairs(view, &cfg, 64 << 20, all, 0, &mut emit)
                    .unwrap()
                    .expect("applies and fits");
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
                    let ks = prefix_join(view, &cfg, 64 << 20, all, 0, Some(keep), &mut emit)
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
                assert!(prefix_pairs(view, &cfg, 64 << 20, 45..n, 45, &mut none)
                    .unwrap()
                    .is_none());
                assert!(prefix_pairs(view, &cfg, 64, 0..n, 0, &mut none)
                    .unwrap()
                    .is_none());
                let limited = PairsConfig {
                    max_df: Some(5),
                    ..cfg
                };
                assert!(prefix_pairs(view, &limited, 64 << 20, 0..n, 0, &mut none)
                    .unwrap()
                    .is_none());
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
