//! All pairs of live documents whose resemblance reaches a threshold.
//!
//! Every document probes the postings with the prefix filter of [`crate::query::Matcher`] and
//! keeps only partners with a larger id, so each pair is found once; both cores share the
//! documents (rayon), each with its own scratch buffers.
//!
//! Memory is bounded by one **block** of probing documents, not by the number of pairs: the
//! documents are taken in id order, a block at a time (matched in parallel inside the block),
//! and each block's pairs are sorted and handed to the caller before the next block starts.
//! In a whole-index run a pair `(a, b)` is found by its smaller id `a`, so the blocks come out
//! in global `(a, b)` order. The block shrinks when its pairs outgrow the pair buffer budget
//! (`PairsConfig::buffer_bytes`) and grows back when they fit easily.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::Sample;
use crate::query::{compares_by_order, DocLists, Match, Scratch};
use crate::threshold::Threshold;
use crate::view::View;

use super::plan::{listed_prefix, MIN_BLOCK_DOCS};
pub use super::plan::{Matching, Pair, PairsConfig, PairsStats, BLOCK_DOCS};

/// Streams the pairs of [`for_each_pair_block`] through the chosen [`Matching`] (`Auto`
/// resolved by the cost model of [`super::plan::plan`] for these documents under
/// `sort.mem_bytes`); the join pipeline sorts under `sort` (budget and run-file directory).
/// The stats name the matching used and hold the planner's estimates (with a forced matching,
/// what `Auto` would have chosen: a sample of 256 documents, no posting block read).
/// `given`: the lists of the live documents when the caller holds them already (ingest into
/// an empty index: [`DocLists::from_hashes`] of the read stage's hashes), which the prefix
/// self-join takes instead of reading them back; the same pairs either way.
#[allow(clippy::too_many_arguments)]
pub fn for_each_pair(
    matching: Matching,
    view: &View,
    cfg: &PairsConfig,
    sort: &crate::sort::SortOptions,
    docs: std::ops::Range<u32>,
    older_than: u32,
    given: Option<DocLists>,
    emit: impl FnMut(&[Pair]) -> Result<()>,
) -> Result<PairsStats> {
    // The prefix self-join needs no plan (it reads no posting list): tried first.
    let mut emit = emit;
    if let Some(stats) = try_prefix(
        matching,
        view,
        cfg,
        sort,
        docs.clone(),
        older_than,
        given,
        &mut emit,
    )? {
        return Ok(stats);
    }
    let planned = super::plan::plan(view, cfg, docs.clone(), older_than, sort.mem_bytes);
    run_planned(matching, planned, view, cfg, sort, docs, older_than, emit)
}

/// [`for_each_pair`] with the plan already made (by [`super::plan::plan`] for the same
/// documents, configuration and budget).
#[allow(clippy::too_many_arguments)]
pub fn for_each_pair_planned(
    matching: Matching,
    planned: super::plan::MatchPlan,
    view: &View,
    cfg: &PairsConfig,
    sort: &crate::sort::SortOptions,
    docs: std::ops::Range<u32>,
    older_than: u32,
    emit: impl FnMut(&[Pair]) -> Result<()>,
) -> Result<PairsStats> {
    let mut emit = emit;
    if let Some(mut stats) = try_prefix(
        matching,
        view,
        cfg,
        sort,
        docs.clone(),
        older_than,
        None,
        &mut emit,
    )? {
        stats.plan = Some(planned);
        return Ok(stats);
    }
    run_planned(matching, planned, view, cfg, sort, docs, older_than, emit)
}

/// The prefix self-join when `matching` allows it (`Auto`, `Prefix`) and it applies to these
/// documents under `sort.mem_bytes`; `Ok(None)`: it declined before emitting anything.
#[allow(clippy::too_many_arguments)]
fn try_prefix(
    matching: Matching,
    view: &View,
    cfg: &PairsConfig,
    sort: &crate::sort::SortOptions,
    docs: std::ops::Range<u32>,
    older_than: u32,
    given: Option<DocLists>,
    emit: &mut impl FnMut(&[Pair]) -> Result<()>,
) -> Result<Option<PairsStats>> {
    if !matches!(matching, Matching::Auto | Matching::Prefix) {
        return Ok(None);
    }
    super::prefix::prefix_pairs(view, cfg, sort.mem_bytes, docs, older_than, given, emit)
}

/// [`for_each_pair_planned`] once the prefix self-join is out of the question: the
/// planner's choice for `Auto` (and for a `Prefix` that did not apply), else the matching
/// asked for.
#[allow(clippy::too_many_arguments)]
fn run_planned(
    matching: Matching,
    planned: super::plan::MatchPlan,
    view: &View,
    cfg: &PairsConfig,
    sort: &crate::sort::SortOptions,
    docs: std::ops::Range<u32>,
    older_than: u32,
    emit: impl FnMut(&[Pair]) -> Result<()>,
) -> Result<PairsStats> {
    let used = match matching {
        Matching::Auto | Matching::Prefix => planned.choice,
        m => m,
    };
    let mut stats = match used {
        Matching::Probe => for_each_pair_block(view, cfg, docs, older_than, emit),
        _ => super::join::join_pairs(view, cfg, sort, docs, older_than, emit),
    }?;
    stats.matching = Some(used);
    stats.plan = Some(planned);
    Ok(stats)
}

/// Finds every pair with similarity >= `t` that involves a live document with id in `docs`.
/// A probing document `x` pairs with partners of larger id, and also with every partner below
/// `older_than` (ingest passes the first new id, so new documents pair with all old ones; a
/// whole-index run passes 0). Pairs come back as `a < b`, sorted by (a, b).
pub fn all_pairs(
    view: &View,
    sample: Sample,
    t: Threshold,
    docs: std::ops::Range<u32>,
    older_than: u32,
) -> Result<(Vec<Pair>, PairsStats)> {
    collect_pairs(view, &PairsConfig::new(sample, t), docs, older_than)
}

/// [`all_pairs`] with a full configuration: every pair collected in memory, sorted by (a, b).
pub fn collect_pairs(
    view: &View,
    cfg: &PairsConfig,
    docs: std::ops::Range<u32>,
    older_than: u32,
) -> Result<(Vec<Pair>, PairsStats)> {
    let mut all = Vec::new();
    let stats = for_each_pair_block(view, cfg, docs, older_than, |block| {
        all.extend_from_slice(block);
        Ok(())
    })?;
    all.sort_unstable_by_key(|p| (p.a, p.b));
    Ok((all, stats))
}

/// Streams the pairs of [`all_pairs`] block by block: `emit` gets each block's pairs sorted by
/// (a, b); with `older_than == 0` the concatenation is globally sorted.
pub fn for_each_pair_block(
    view: &View,
    cfg: &PairsConfig,
    docs: std::ops::Range<u32>,
    older_than: u32,
    mut emit: impl FnMut(&[Pair]) -> Result<()>,
) -> Result<PairsStats> {
    if cfg.threshold.as_f64() <= 0.0 {
        return Err(Error::InvalidArgument(
            "pairs needs a threshold above 0".into(),
        ));
    }
    let matcher = cfg.matcher(view, older_than);
    let mut stats = PairsStats {
        max_df: cfg.max_df,
        ..Default::default()
    };
    let max_block = cfg.block_docs.max(1);
    let mut block = max_block;
    let end = docs.end.min(view.doc_ids());
    let mut lo = docs.start;
    let mut ids: Vec<u32> = Vec::new();
    let mut pairs: Vec<Pair> = Vec::new();
    let max_listed = probe_lists(cfg.buffer_bytes);
    while lo < end {
        let hi = lo.saturating_add(block).min(end);
        ids.clear();
        ids.extend((lo..hi).filter(|&d| view.is_live(d) && view.size(d) > 0));
        pairs.clear();
        // The probing documents a group at a time, each group's lists read together.
        let mut g0 = 0;
        while g0 < ids.len() {
            let g1 = g0 + listed_prefix(view, &ids[g0..], max_listed);
            let group = Probers {
                view,
                matcher: &matcher,
                cfg,
                older_than,
                max_listed,
            };
            group.run(&ids[g0..g1], &mut stats, &mut pairs)?;
            g0 = g1;
        }
        pairs.sort_unstable_by_key(|p| (p.a, p.b));
        stats.documents += ids.len() as u64;
        stats.count_block(pairs.len());
        emit(&pairs)?;
        // Size the next block so its pairs fit the buffer budget with room to spare.
        let used = (pairs.len() * std::mem::size_of::<Pair>()) as u64;
        if used > cfg.buffer_bytes / 2 {
            block = (block / 2).max(MIN_BLOCK_DOCS.min(max_block));
        } else if used < cfg.buffer_bytes / 8 {
            block = block.saturating_mul(2).min(max_block);
        }
        lo = hi;
    }
    Ok(stats)
}

/// Stored-list entries (features) probe matching holds at once for a group of probing
/// documents or of candidates to verify: their lists as stored and their mapped hashes, up to
/// 20 bytes an entry with the bulk mapping's order, an eighth of the pair buffer's budget
/// (`--mem` when probe matching is asked for) within [`PROBE_LISTS_MIN`, `PROBE_LISTS_MAX`].
/// The more ranks of one segment are mapped at once, the more of them each POSTINGS block
/// serves.
fn probe_lists(buffer_bytes: u64) -> u64 {
    (buffer_bytes / 8 / 20).clamp(PROBE_LISTS_MIN, PROBE_LISTS_MAX)
}
const PROBE_LISTS_MIN: u64 = 1 << 18;
const PROBE_LISTS_MAX: u64 = 8 << 20;

/// Probe matching of one group of probing documents (ascending ids of one block).
///
/// Format 3 stores a document's features as ranks of its segment's POSTINGS keys, so a list
/// read to probe with, or to compare with a candidate of another segment, must have its
/// ranks mapped back to keys. List by list that is one select in a random POSTINGS block per
/// rank once a segment's keys are not decoded in memory (beyond the key budget, half of
/// `--mem`). Here the group's lists are read together and their ranks mapped **in bulk**,
/// segment by segment ([`DocLists`]): every POSTINGS block is located and checked once for
/// all the ranks that fall in it. Then each document probes and filters on its own
/// (in parallel); a candidate of the prober's own format-3 segment is verified by ranks at
/// once, one of a format-1/2 segment by its stored hashes, and the candidates of other
/// format-3 segments are verified after all the group's probes, their lists read and mapped
/// in bulk as well. The pairs are those of verifying candidate by candidate.
struct Probers<'a, 'v> {
    view: &'v View,
    matcher: &'a crate::query::Matcher<'v>,
    cfg: &'a PairsConfig,
    older_than: u32,
    max_listed: u64,
}

/// What one thread of [`Probers::run`] found: pairs verified at once, `(prober index,
/// candidate)` left for the bulk verification, the work counters.
type Probed = (Vec<Pair>, Vec<(u32, u32)>, Scratch);

impl Probers<'_, '_> {
    fn run(&self, group: &[u32], stats: &mut PairsStats, pairs: &mut Vec<Pair>) -> Result<()> {
        let (view, cfg, older_than) = (self.view, self.cfg, self.older_than);
        let (sample, t) = (cfg.sample, cfg.threshold);
        let by_order = compares_by_order(sample);
        let mut probers = DocLists::read(view, group.to_vec())?;
        probers.map_hashes_caching(view, |_| true)?;
        // Coarse keys of the probers (from their hashes) for the candidates of other format-3
        // segments (below).
        if matches!(sample, Sample::All | Sample::Mod(_))
            && view.segments.iter().any(|s| s.seg.ranked_forward())
        {
            probers.map_coarse(view, |_| true)?;
        }
        let probers = &probers;
        let idx: Vec<u32> = (0..probers.len() as u32).collect();
        let probed: Vec<Result<Probed>> = idx
            .par_chunks(32)
            .map_init(
                || (Scratch::new(view.doc_ids()), Vec::new(), Vec::new()),
                |(scratch, cands, buf), chunk| {
                    let (mut out, mut later) = (Vec::new(), Vec::new());
                    for &i in chunk {
                        let a = probers.id(i as usize);
                        let (Some(sa), Some(x)) =
                            (probers.segment(i as usize), probers.hashes(i as usize))
                        else {
                            continue;
                        };
                        let accept = |d| d > a || d < older_than;
                        self.matcher.candidates_into(x, accept, scratch, cands)?;
                        scratch.candidates += cands.len() as u64;
                        for &d in cands.iter() {
                            let Some(sd) = view.forward_raw_into(d, buf)? else {
                                continue;
                            };
                            let ranked = view.segments[sd].seg.ranked_forward();
                            let ov = if ranked && sd == sa && by_order {
                                // Same ranked segment: the two stored rank lists (verify.rs).
                                scratch.by_ranks += 1;
                                sample.verify(probers.raw(i as usize), buf, t)
                            } else if !ranked {
                                sample.verify(x, buf, t)
                            } else {
                                later.push((i, d));
                                continue;
                            };
                            out.extend(ov.map(|ov| pair_of(a, d, ov)));
                        }
                    }
                    Ok((out, later, Scratch::counters_only(scratch)))
                },
            )
            .collect();
        let mut later: Vec<(u32, u32)> = Vec::new();
        for r in probed {
            let (p, l, s) = r?;
            stats.postings_visited += s.postings_visited;
            stats.candidates += s.candidates;
            stats.verified_by_ranks += s.by_ranks;
            stats.max_df_probes_cut += s.probes_cut;
            stats.max_df_keys_cut += s.keys_cut;
            stats.max_df_postings_skipped += s.postings_skipped;
            stats.max_df_docs_cut += s.docs_cut;
            stats.add_absent_first(&s);
            pairs.extend(p);
            later.extend(l);
        }
        if later.is_empty() {
            return Ok(());
        }
        // The candidates of other format-3 segments: their lists a group at a time, mapped
        // in bulk, then each (prober, candidate) compared by hashes. With all / mod:M
        // sampling each pair is first bounded by the coarse keys of the two lists
        // (`segment::coarse_overlap`; the candidate's from its ranks, no rank mapped), and
        // only the lists of the pairs the bound lets through are mapped.
        let coarse = matches!(sample, Sample::All | Sample::Mod(_));
        later.sort_unstable_by_key(|&(i, d)| (d, i));

        let mut cands: Vec<u32> = later.iter().map(|&(_, d)| d).collect();
        cands.dedup();
        let mut c0 = 0;
        let mut l0 = 0;
        while c0 < cands.len() {
            let c1 = c0 + listed_prefix(view, &cands[c0..], self.max_listed);
            let last = cands[c1 - 1];
            let l1 = l0 + later[l0..].partition_point(|&(_, d)| d <= last);
            let mut lists = DocLists::read(view, cands[c0..c1].to_vec())?;
            let mut keep = vec![true; l1 - l0];
            // Whether the bound pays per segment (`Segment::coarse_pays`: not for a few
            // candidates).
            let mut wanted = vec![0u64; view.segments.len()];
            for j in 0..lists.len() {
                if let Some(si) = lists.segment(j) {
                    wanted[si] += lists.raw(j).len() as u64;
                }
            }
            let pays: Vec<bool> = (view.segments.iter().zip(&wanted))
                .map(|(s, &w)| w == 0 || s.seg.coarse_pays(w))
                .collect();
            if coarse && pays.iter().any(|&p| p) {
                let want: Vec<bool> = (0..lists.len())
                    .map(|j| lists.segment(j).is_some_and(|si| pays[si]))
                    .collect();
                lists.map_coarse(view, |j| want[j])?;
                let l = &lists;
                keep = later[l0..l1]
                    .par_iter()
                    .map(|&(i, d)| {
                        let x = probers.coarse(i as usize);
                        let y = l.find(d).and_then(|j| l.coarse(j));
                        let (Some(x), Some(y)) = (x, y) else {
                            return true;
                        };
                        let bound = crate::segment::coarse_overlap(x, y);
                        sample.may_reach(t, x.len(), y.len(), bound)
                    })
                    .collect();
                stats.ruled_out_coarse += keep.iter().filter(|&&k| !k).count() as u64;
                let mut need = vec![false; lists.len()];
                for (&(_, d), _) in later[l0..l1].iter().zip(&keep).filter(|(_, &k)| k) {
                    if let Some(j) = lists.find(d) {
                        need[j] = true;
                    }
                }
                lists.map_hashes_caching(view, |j| need[j])?;
            } else {
                lists.map_hashes_caching(view, |_| true)?;
            }
            let lists = &lists;
            let keep = &keep;
            let found: Vec<Vec<Pair>> = later[l0..l1]
                .par_chunks(256)
                .zip(keep.par_chunks(256))
                .map(|(chunk, keep)| {
                    let mut out = Vec::new();
                    for (&(i, d), _) in chunk.iter().zip(keep).filter(|(_, &k)| k) {
                        let (Some(x), Some(y)) = (
                            probers.hashes(i as usize),
                            lists.find(d).and_then(|j| lists.hashes(j)),
                        ) else {
                            continue;
                        };
                        let a = probers.id(i as usize);
                        out.extend(sample.verify(x, y, t).map(|ov| pair_of(a, d, ov)));
                    }
                    out
                })
                .collect();
            pairs.extend(found.into_iter().flatten());
            c0 = c1;
            l0 = l1;
        }
        Ok(())
    }
}

/// The pair of probing document `a` and its partner `d` with their comparison.
fn pair_of(a: u32, d: u32, ov: crate::fingerprint::Overlap) -> Pair {
    let (lo, hi) = if a < d { (a, d) } else { (d, a) };
    Pair {
        a: lo,
        b: hi,
        m: Match::of(d, ov),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::word_pages_index;

    /// Blocks of any size give the same pairs, in global (a, b) order, as one block.
    #[test]
    fn blocks_of_any_size_give_the_same_sorted_pairs() {
        let tmp = tempfile::tempdir().unwrap();
        // 60 pages in 12 families: a family shares most of its words, so pairs cross blocks.
        let ix = word_pages_index(tmp.path(), 60, 80, |d, i| {
            if i == d % 80 {
                format!("own{d}")
            } else {
                format!("f{}w{i}", d % 12)
            }
        });
        let view = ix.view();
        let sample = ix.options().sample().unwrap();
        let cfg = PairsConfig::new(sample, "0.5".parse().unwrap());
        let (whole, s1) = collect_pairs(view, &cfg, 0..view.doc_ids(), 0).unwrap();
        assert_eq!(s1.blocks, 1);
        assert_eq!(whole.len(), 12 * (5 * 4 / 2));
        for block_docs in [1, 7, 13] {
            let small = PairsConfig { block_docs, ..cfg };
            let mut streamed = Vec::new();
            let s = for_each_pair_block(view, &small, 0..view.doc_ids(), 0, |b| {
                assert!(
                    b.len() as u32 <= block_docs * 4,
                    "a block holds its own pairs only"
                );
                streamed.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            assert_eq!(streamed, whole, "block_docs {block_docs}");
            assert_eq!(s.blocks, 60u64.div_ceil(block_docs as u64));
            assert_eq!(s.pairs, whole.len() as u64);
        }
        // A tiny buffer budget shrinks the blocks (down to the configured minimum).
        let tight = PairsConfig {
            buffer_bytes: 1,
            ..cfg
        };
        let s = for_each_pair_block(view, &tight, 0..view.doc_ids(), 0, |_| Ok(())).unwrap();
        assert_eq!(s.pairs, whole.len() as u64);
    }

    /// Pages in 7 families over two batches (two segments), created with segment format
    /// `format`.
    fn two_batch_index(dir: &std::path::Path, format: u32, sample: &str) -> crate::index::Index {
        crate::pipeline::two_batch_index(dir, ("words:1", format, sample), 40, |batch, d| {
            (0..120u32)
                .map(|i| match (i + d + batch) % 9 {
                    0 => format!("own{batch}x{d}x{i}"),
                    _ => format!("f{}w{i}", d % 7),
                })
                .collect()
        })
    }

    /// The merge join's sorts leave the format-3 key cache what it may take of the budget:
    /// nothing to leave for format 2, or when no segment's keys fit the cache's share.
    #[test]
    fn join_sorts_leave_the_key_cache_its_share() {
        use crate::pipeline::plan::sorts_budget;
        let tmp = tempfile::tempdir().unwrap();
        let f2 = two_batch_index(&tmp.path().join("f2"), 2, "all");
        let f3 = two_batch_index(&tmp.path().join("f3"), 3, "all");
        let mem = 64u64 << 20;
        assert_eq!(sorts_budget(f2.view(), mem), mem);
        if std::env::var_os(crate::segment::FORMAT_ENV).is_some() {
            return; // the formats written are not the ones asked for
        }
        let bytes: Vec<u64> = (f3.view().segments.iter())
            .map(|s| s.seg.table_meta(crate::segment::POSTINGS).unwrap().entries * 8)
            .collect();
        assert_eq!(bytes.len(), 2);
        let all: u64 = bytes.iter().sum();
        assert_eq!(sorts_budget(f3.view(), mem), mem - all, "small segments");
        // A share that holds the smaller segment's keys only; one that holds neither.
        let (small, big) = (bytes[0].min(bytes[1]), bytes[0].max(bytes[1]));
        if small < big {
            let mem = 2 * small;
            assert_eq!(sorts_budget(f3.view(), mem), mem - small);
        }
        let mem = 2 * small - 2;
        assert_eq!(sorts_budget(f3.view(), mem), mem);
    }

    /// The planner counts what format 3 maps: every prober's features (the probe matching)
    /// and the join's records of ranked probers, all of them for format 3, none for format 2;
    /// through the key caches while the share holds the segments' keys, else by selects.
    #[test]
    fn planner_counts_format_3_mapping() {
        use crate::pipeline::plan::plan;
        let tmp = tempfile::tempdir().unwrap();
        let f2 = two_batch_index(&tmp.path().join("f2"), 2, "all");
        let f3 = two_batch_index(&tmp.path().join("f3"), 3, "all");
        let cfg = PairsConfig::new(f2.options().sample().unwrap(), "0.5".parse().unwrap());
        let big = 1u64 << 30;
        let p2 = plan(f2.view(), &cfg, 0..f2.view().doc_ids(), 0, big);
        assert_eq!(
            (p2.ranked_features, p2.ranked_records),
            (0.0, 0.0),
            "{p2:?}"
        );
        assert_eq!((p2.cached_key_bytes, p2.uncached_postings_bytes), (0, 0));
        if std::env::var_os(crate::segment::FORMAT_ENV).is_some() {
            return; // the formats written are not the ones asked for
        }
        let v3 = f3.view();
        let features: u64 = (0..v3.doc_ids())
            .filter(|&d| v3.is_live(d))
            .map(|d| v3.size(d) as u64)
            .sum();
        let keys: u64 = (v3.segments.iter())
            .map(|s| s.seg.table_meta(crate::segment::POSTINGS).unwrap().entries)
            .sum();
        let roomy = plan(v3, &cfg, 0..v3.doc_ids(), 0, big);
        // Every document is sampled here (fewer than the planner's sample): exact counts.
        assert!(v3.doc_ids() <= 256);
        assert!(
            (roomy.ranked_features - features as f64).abs() < 0.5,
            "{roomy:?}"
        );
        assert!(
            (roomy.ranked_records - roomy.join_records).abs() < 0.5,
            "{roomy:?}"
        );
        assert!(roomy.ranked_records > 0.0);
        assert_eq!(roomy.ranked_cached, 1.0);
        assert_eq!(roomy.cached_key_bytes, 8 * keys);
        assert_eq!(roomy.uncached_postings_bytes, 0);
        // A budget whose key-cache share holds no segment's keys: all mapped by selects.
        let tight = plan(v3, &cfg, 0..v3.doc_ids(), 0, 2);
        assert_eq!(tight.ranked_cached, 0.0);
        assert_eq!(tight.cached_key_bytes, 0);
        let postings: u64 = (v3.segments.iter())
            .map(|s| s.seg.table_meta(crate::segment::POSTINGS).unwrap().bytes)
            .sum();
        assert_eq!(tight.uncached_postings_bytes, postings);
        assert_eq!(tight.ranked_features, roomy.ranked_features);
        // The same counts cost the probe more than format 2's, by selects more than by cache
        // (the index is far below the cache here: only the in-cache select is priced).
        assert!(tight.cost_probe > p2.cost_probe, "{tight:?} {p2:?}");
    }

    /// Verifying by ranks (candidates of the prober's own format-3 segment) finds exactly the
    /// pairs, counts and resemblances of verifying by hashes (format 2), for every sampling
    /// that compares by order, and the probe path and the join agree on format 3.
    #[test]
    fn ranks_verify_like_hashes() {
        for sample in ["all", "mod:2", "bottomk:40", "minhash:30", "adaptive"] {
            let tmp = tempfile::tempdir().unwrap();
            let f2 = two_batch_index(&tmp.path().join("f2"), 2, sample);
            let f3 = two_batch_index(&tmp.path().join("f3"), 3, sample);
            assert_eq!(f3.options().stored_segment_format().unwrap(), 3);
            assert_eq!(f2.options().stored_segment_format().unwrap(), 2);
            if std::env::var_os(crate::segment::FORMAT_ENV).is_none() {
                assert!(f3.view().segments.iter().all(|s| s.seg.ranked_forward()));
                assert!(f2.view().segments.iter().all(|s| !s.seg.ranked_forward()));
            }
            for t in ["0.5", "0.8"] {
                let s = f2.options().sample().unwrap();
                let cfg = PairsConfig::new(s, t.parse().unwrap());
                let (v2, v3) = (f2.view(), f3.view());
                let (p2, s2) = collect_pairs(v2, &cfg, 0..v2.doc_ids(), 0).unwrap();
                let (p3, s3) = collect_pairs(v3, &cfg, 0..v3.doc_ids(), 0).unwrap();
                assert!(!p2.is_empty(), "{sample} {t}");
                assert_eq!(p3, p2, "{sample} {t}");
                assert_eq!(s3.candidates, s2.candidates);
                assert_eq!(s2.verified_by_ranks, 0);
                // Candidates of the other segment the coarse-key bound ruled out unmapped
                // (all, mod:M) are among those verification rejects.
                assert_eq!(s2.ruled_out_coarse, 0);
                assert!(s3.ruled_out_coarse <= s3.candidates - s3.pairs, "{s3:?}");
                if !matches!(sample, "all" | "mod:2") {
                    assert_eq!(s3.ruled_out_coarse, 0);
                }
                let ranked = v3.segments.iter().all(|s| s.seg.ranked_forward());
                let by_order = crate::query::compares_by_order(s);
                assert_eq!(s3.verified_by_ranks > 0, ranked && by_order, "{sample} {t}");
                if v3.segments.len() > 1 {
                    assert!(
                        s3.verified_by_ranks < s3.candidates,
                        "some pairs cross segments"
                    );
                }
                let sort = crate::sort::SortOptions::new(16 << 20, tmp.path().to_path_buf());
                let mut joined = Vec::new();
                super::super::join::join_pairs(v3, &cfg, &sort, 0..v3.doc_ids(), 0, |b| {
                    joined.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
                assert_eq!(joined, p2, "join {sample} {t}");
            }
        }
    }

    /// Probe matching in groups of any size (down to one probing document, and one candidate
    /// list, at a time) finds the pairs of matching document by document with
    /// `Matcher::search_own`, on format 2 and format 3 (lists mapped in bulk, candidates of
    /// other segments verified after the group's probes) and with two segments.
    #[test]
    fn probe_groups_of_any_size_match_document_by_document() {
        for sample in ["all", "adaptive"] {
            let tmp = tempfile::tempdir().unwrap();
            for format in [2, 3] {
                let ix = two_batch_index(&tmp.path().join(format!("f{format}")), format, sample);
                let view = ix.view();
                let s = ix.options().sample().unwrap();
                let cfg = PairsConfig::new(s, "0.5".parse().unwrap());
                let matcher = cfg.matcher(view, 0);
                // Document by document, as before the bulk mapping.
                let mut want = Vec::new();
                let mut scratch = Scratch::new(view.doc_ids());
                let (mut x, mut raw, mut found) = (Vec::new(), Vec::new(), Vec::new());
                let mut ranked = 0;
                for a in 0..view.doc_ids() {
                    let Some(seg) = view.features_and_raw_into(a, &mut x, &mut raw).unwrap() else {
                        continue;
                    };
                    let own = crate::query::Own { seg, raw: &raw };
                    found.clear();
                    (matcher.search_own(&x, Some(own), |d| d > a, &mut scratch, &mut found))
                        .unwrap();
                    ranked += scratch.by_ranks;
                    scratch.by_ranks = 0;
                    want.extend(found.iter().map(|m| Pair {
                        a: a.min(m.doc),
                        b: a.max(m.doc),
                        m: *m,
                    }));
                }
                want.sort_unstable_by_key(|p| (p.a, p.b));
                assert!(want.len() > 20, "{sample} format {format}: {}", want.len());
                let ids: Vec<u32> = (0..view.doc_ids()).collect();
                for max_listed in [1, 300, 5_000, u64::MAX] {
                    let mut got = Vec::new();
                    let mut stats = PairsStats::default();
                    let mut g0 = 0;
                    while g0 < ids.len() {
                        let g1 = g0 + listed_prefix(view, &ids[g0..], max_listed);
                        let group = Probers {
                            view,
                            matcher: &matcher,
                            cfg: &cfg,
                            older_than: 0,
                            max_listed,
                        };
                        group.run(&ids[g0..g1], &mut stats, &mut got).unwrap();
                        g0 = g1;
                    }
                    got.sort_unstable_by_key(|p| (p.a, p.b));
                    assert_eq!(
                        got, want,
                        "{sample} format {format} max_listed {max_listed}"
                    );
                    assert_eq!(stats.verified_by_ranks, ranked);
                }
            }
        }
    }

    /// The join prunes candidates by their probe hits as probe matching does: the same
    /// candidates verified, the same pairs (`all` and `mod`, no commonality limit; the other
    /// samplings verify every candidate within the length bounds).
    #[test]
    fn join_verifies_the_candidates_probe_matching_does() {
        for sample in ["all", "mod:2", "bottomk:40"] {
            let tmp = tempfile::tempdir().unwrap();
            let ix = two_batch_index(&tmp.path().join("f3"), 3, sample);
            let view = ix.view();
            let s = ix.options().sample().unwrap();
            for t in ["0.5", "0.8"] {
                let cfg = PairsConfig::new(s, t.parse().unwrap());
                let (probed, ps) = collect_pairs(view, &cfg, 0..view.doc_ids(), 0).unwrap();
                let sort = crate::sort::SortOptions::new(16 << 20, tmp.path().to_path_buf());
                let mut joined = Vec::new();
                let js =
                    super::super::join::join_pairs(view, &cfg, &sort, 0..view.doc_ids(), 0, |b| {
                        joined.extend_from_slice(b);
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(joined, probed, "{sample} {t}");
                if sample == "bottomk:40" {
                    assert!(js.candidates >= ps.candidates, "{sample} {t}");
                } else {
                    assert_eq!(js.candidates, ps.candidates, "{sample} {t}");
                    assert!(
                        js.candidate_records > js.candidates,
                        "{sample} {t}: repeats"
                    );
                }
            }
        }
    }
}
