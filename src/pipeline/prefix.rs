//! The prefix self-join: every pair of a whole-index run (`older_than` 0: each document pairs
//! with every later one; ingest into a new index, `pairs` without stored pairs) from the
//! documents' probe sets alone, with no posting list read.
//!
//! Why it is exact. With one probe set for all segments and no commonality limit, the probe
//! set of a document `A` ([`crate::query::Matcher::choose_probes`], no absent-first order when
//! `older_than` is 0) is its first `|A| - m_A + 1` keys in ONE order of all keys, the same for
//! every document: `(probe weight, key)`, the weight a function of the key alone (its summed
//! df where it is frequent, else 0: `View::probe_weight`). Every similar `B` shares at least
//! `m_A` features with `A` and at least `m_B` with `B` (`Sample::min_overlap`: `|A ∩ B| >=
//! m_X` for either document `X` of a similar pair, for every sampling but `adaptive`). Let `w`
//! be the first key of `A ∩ B` in the common order: `A` has at most `m_A - 1` keys after its
//! probe set, and `A ∩ B` has at least `m_A` keys, so one of them, hence `w` (no later than
//! it, and in `A`), is in `A`'s probe set; the same for `B`. So a similar pair shares a key
//! of BOTH probe sets (the prefix filter of AllPairs/PPJoin, Bayardo et al. 2007, Xiao et al.
//! 2008), where the probe and join matchings look each probe key up in the full posting lists.
//! Candidates are the pairs of documents listed together under some probe key, each verified
//! exactly as the other matchings verify (`query::verify_candidate`: same counts, same
//! `Match`, the smaller id probing).
//!
//! Cost: the probe sets (`(key, doc)` records, sorted in memory), the candidate pairs and
//! their verification, all on every core. Records that fit the cache (a batch of a few
//! thousand pages) go document by document: each probing document counts the later documents
//! under its keys in a count per document id, prunes and verifies them; no candidate array is
//! written. More go through the candidate pairs sorted and deduplicated in memory, whose
//! passes stream, when those (8 bytes each, with repeats) fit a quarter of the memory budget;
//! otherwise they too go document by document (the lists are read by then). It runs only
//! when the records fit a quarter of the budget and the per-thread counts (4 bytes a
//! document id) another ([`prefix_pairs`] gives up before emitting anything otherwise, and
//! the caller matches as before). When the documents' lists fit a third quarter, they are read once and kept for the verification (no candidate's list is
//! read again); otherwise they are read a group at a time, and again per candidate.
//! Ingest into an empty index hands over the lists it holds already, the read stage's feature
//! hashes ([`crate::query::DocLists::from_hashes`]): then no list is read back from the new
//! segment nor any rank mapped to its key, and those lists serve the verification. With them
//! comes the set of keys the postings stage found in more than one document
//! ([`crate::build::SharedKeys`]): a probe key outside it lists no pair, so its record is
//! not made (a batch of pages with little in common has most of its probe keys in one
//! document each: debdocs 619k records -> 134k).

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::error::Result;
use crate::fingerprint::Sample;
use crate::query::{verify_candidate, verify_listed, DocLists, Match, Own, Scratch, VerifyCounts};
use crate::view::View;

use super::plan::{listed_prefix, Matching, Pair, PairsConfig, PairsStats};

/// Pairs handed to the caller at once.
const EMIT_BLOCK: usize = 1 << 16;
/// Parts the sorted records are cut into for the parallel passes.
const PARTS: usize = 64;
/// Probe records from which [`prefix_join`] frees its arrays on another thread.
const FREE_ON_A_THREAD: usize = 1 << 16;
/// Probing documents per parallel step of [`by_probing_document`].
const PROBING_STEP: usize = 8;
/// At most this many probe records (16 bytes each: twice the last-level cache of the
/// measuring machine) go [`by_probing_document`], whose reads of them are random; more go
/// [`by_candidate_array`], whose passes stream. Measured (`pairs --matching prefix`): by
/// document 1.4x faster at 2.1M records (llvm-docs, T = 0.3), level at 13.5M and 8 % slower
/// at 26.6M (750k documents, T = 0.95 and 0.9).
#[cfg(not(test))]
pub(super) const BY_DOCUMENT_RECORDS: usize = 1 << 22;
#[cfg(test)]
pub(super) const BY_DOCUMENT_RECORDS: usize = 3_000;
/// Candidate pairs per parallel verification step of [`by_candidate_array`] (cut at a
/// probing document's boundary).
const VERIFY_STEP: usize = 1 << 9;

/// Up to [`PARTS`] + 1 cut points of `v` (0 first, `v.len()` last, ascending), none of them
/// between two elements `same` says belong together (sorted input: equal keys are adjacent).
fn cuts<T>(v: &[T], same: impl Fn(&T, &T) -> bool) -> Vec<usize> {
    let mut at = vec![0];
    let step = v.len().div_ceil(PARTS).max(1);
    let mut k = step;
    while k < v.len() {
        while k < v.len() && same(&v[k - 1], &v[k]) {
            k += 1;
        }
        if k < v.len() {
            at.push(k);
        }
        k += step;
    }
    at.push(v.len());
    at.dedup();
    at
}

/// Sorts `v` on every core: by its hash key's leading bits first
/// ([`crate::sort::par_sort_keyed`], a second vector of its records) when that copy and `v`'s
/// allocation fit `bound` bytes together, else in place. The same order either way.
fn sort_within<T: crate::sort::Keyed>(v: &mut Vec<T>, bound: u64) {
    let size = std::mem::size_of::<T>() as u64;
    if (v.capacity() as u64 + v.len() as u64).saturating_mul(size) <= bound {
        crate::sort::par_sort_keyed(v);
    } else {
        v.par_sort_unstable();
    }
}

/// Whether the prefix self-join finds exactly the pairs of the other matchings for this run:
/// a whole-index run (every live document probes, `older_than` 0) with one order of all keys
/// (no commonality limit, not adaptive sampling; see the module doc).
pub fn applies(
    view: &View,
    cfg: &PairsConfig,
    docs: &std::ops::Range<u32>,
    older_than: u32,
) -> bool {
    older_than == 0 && docs.start == 0 && docs.end >= view.doc_ids() && applies_to(cfg)
}

/// The part of [`applies`] that depends on the configuration alone: one order of all keys (no
/// commonality limit, not adaptive sampling) and a threshold above 0.
pub fn applies_to(cfg: &PairsConfig) -> bool {
    cfg.max_df.is_none()
        && !matches!(cfg.sample, Sample::Adaptive(_))
        && cfg.threshold.as_f64() > 0.0
}

/// The pairs of a whole-index run through the prefix self-join, handed to `emit` in global
/// `(a, b)` order in blocks, when [`applies`] and its records fit `mem_bytes` (a quarter, and
/// a quarter for either the candidates or the per-thread counts); `None` (nothing emitted)
/// otherwise.
pub fn prefix_pairs(
    view: &View,
    cfg: &PairsConfig,
    mem_bytes: u64,
    docs: std::ops::Range<u32>,
    older_than: u32,
    given: Option<DocLists>,
    emit: &mut dyn FnMut(&[Pair]) -> Result<()>,
) -> Result<Option<PairsStats>> {
    prefix_join(view, cfg, mem_bytes, docs, older_than, given, None, emit)
}

/// [`prefix_pairs`]; `given`: the lists of exactly the live documents with features, their
/// hashes mapped (ingest into a new index: [`DocLists::from_hashes`] of the read stage's
/// hashes), used instead of reading them (ignored when they are not those documents').
/// `keep_lists` overrides whether step 1 keeps every list for step 3 (None: when they fit a
/// quarter of the budget, or were given). Tests compare both ways.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prefix_join(
    view: &View,
    cfg: &PairsConfig,
    mem_bytes: u64,
    docs: std::ops::Range<u32>,
    older_than: u32,
    given: Option<DocLists>,
    keep_lists: Option<bool>,
    emit: &mut dyn FnMut(&[Pair]) -> Result<()>,
) -> Result<Option<PairsStats>> {
    if !applies(view, cfg, &docs, older_than) {
        return Ok(None);
    }
    let (sample, t) = (cfg.sample, cfg.threshold);
    let end = view.doc_ids();
    let live: Vec<u32> = (0..end)
        .filter(|&d| view.is_live(d) && view.size(d) > 0)
        .collect();
    // The records' bound, from the sizes alone: |A| - m + 1 per document.
    let records_max: u64 = live
        .iter()
        .map(|&d| {
            let n = view.size(d) as usize;
            (n + 1).saturating_sub(sample.min_overlap(t, n).max(1)) as u64
        })
        .sum();
    let quarter = mem_bytes / 4;
    if records_max * std::mem::size_of::<(u64, u32)>() as u64 > quarter {
        return Ok(None);
    }
    let mut stats = PairsStats::default();

    // 1. The probe sets: (key, doc) records, the documents' lists read a group at a time
    //    (format 3: ranks mapped in bulk).
    let matcher = cfg.matcher(view, older_than);
    // Per document id: the last key of its probe set in the common order, and how many of
    // its keys come after it (the bound of step 2).
    let mut last: Vec<(u32, u64)> = vec![(0, 0); end as usize];
    let mut after: Vec<u32> = vec![0; end as usize];
    // The lists of every live document at once when they fit a quarter of the budget (16
    // bytes a feature: stored list and hashes): step 3 then verifies from them, with no list
    // read twice. Otherwise a group of lists at a time, and step 3 reads its lists again.
    let mut given = given.filter(|l| {
        l.len() == live.len() && (0..l.len()).all(|i| l.id(i) == live[i] && l.hashes(i).is_some())
    });
    // Keys in one document's list only (most of a batch's) list no pair: when the given
    // lists know the others, records go only under those.
    let shared = given.as_mut().and_then(DocLists::take_shared_keys);
    let shared = shared.as_ref();
    // Faulted in ahead when most of the bound is written.
    let mut records: Vec<(u64, u32)> = match shared {
        None => crate::sort::prefault::with_capacity_par(records_max as usize),
        Some(_) => Vec::with_capacity(records_max as usize),
    };
    let features: u64 = live.iter().map(|&d| view.size(d) as u64).sum();
    let keep = keep_lists.unwrap_or(given.is_some() || features.saturating_mul(16) <= quarter);
    let max_listed = if keep { u64::MAX } else { 1u64 << 20 };
    let mut kept: Option<DocLists> = None;
    let mut g0 = 0;
    while g0 < live.len() {
        let (g1, lists) = match given.take() {
            Some(lists) => {
                stats.lists_given = lists.len() as u64;
                (live.len(), lists)
            }
            None => {
                let g1 = g0 + listed_prefix(view, &live[g0..], max_listed);
                let mut lists = DocLists::read(view, live[g0..g1].to_vec())?;
                lists.map_hashes_caching(view, |_| true)?;
                (g1, lists)
            }
        };
        let idx: Vec<usize> = (0..lists.len()).collect();
        type Part = (Vec<(u64, u32)>, Vec<(u32, (u32, u64), u32)>);
        let parts: Vec<Result<Part>> = {
            let lists = &lists;
            idx.par_chunks(64)
                .map_init(
                    || Scratch::new(0),
                    |scratch, chunk| {
                        let (mut out, mut ends) = (Vec::new(), Vec::new());
                        for &i in chunk {
                            let Some(x) = lists.hashes(i) else { continue };
                            if matcher.choose_probes(x, scratch)? {
                                let d = lists.id(i);
                                let p = scratch.probes().len();
                                match shared {
                                    None => out.extend(scratch.probes().map(|k| (k, d))),
                                    Some(s) => out.extend(
                                        scratch
                                            .probes()
                                            .filter(|&k| s.may_contain(k))
                                            .map(|k| (k, d)),
                                    ),
                                }
                                let e = scratch.last_probe(view).unwrap_or((0, 0));
                                ends.push((d, e, (x.len() - p) as u32));
                            }
                        }
                        Ok((out, ends))
                    },
                )
                .collect()
        };
        for part in parts {
            let (r, ends) = part?;
            records.extend(r);
            for (d, e, n) in ends {
                last[d as usize] = e;
                after[d as usize] = n;
            }
        }
        if keep && g0 == 0 && g1 == live.len() {
            kept = Some(lists);
        }
        g0 = g1;
    }
    stats.documents = live.len() as u64;
    stats.probe_records = records.len() as u64;
    sort_within(&mut records, quarter);

    // 2. Candidates: the pairs of documents under one key, a < b, each listed under h keys.
    //    Their number (with repeats) is counted first, from the groups' sizes.
    let cand_max = quarter / 8;
    let parts = cuts(&records, |x, y| x.0 == y.0);
    let counts: Vec<u64> = parts
        .par_windows(2)
        .map(|w| {
            let mut n = 0u64;
            for g in records[w[0]..w[1]].chunk_by(|x, y| x.0 == y.0) {
                n += (g.len() as u64) * (g.len() as u64 - 1) / 2;
            }
            n
        })
        .collect();
    let listed: u64 = counts.iter().sum();
    // Records that fit the cache go document by document (no candidate array: no bound on
    // the candidates); more go through one array of all candidates, sorted, when it fits an
    // eighth of the quarter, else document by document too (slower than the array by a few
    // percent at tens of millions of records, but the lists were read already). Only when
    // the per-thread counts do not fit either is the work given up.
    let tally_bytes = (end as u64 * 4).saturating_mul(rayon::current_num_threads() as u64);
    let tally_fits = tally_bytes <= quarter;
    let by_document = tally_fits && (records.len() <= BY_DOCUMENT_RECORDS || listed > cand_max);
    if !by_document && listed > cand_max {
        return Ok(None);
    }
    stats.candidate_records = listed;
    // A pair listed under h keys shares h keys of both probe sets. Say A's last probe comes
    // first in the common order: every key of A ∩ B up to it is in both probe sets (in A's
    // by definition, in B's as B's last probe is no earlier), so |A ∩ B| <= h + (A's keys
    // after its last probe). A pair that cannot reach the threshold with that many
    // (`Sample::may_reach`, as the probe and join matchings prune) or whose sizes rule it out
    // is not verified.
    let may_pair = |a: u32, b: u32, h: u64| {
        let (na, nb) = (view.size(a) as usize, view.size(b) as usize);
        let (lo, hi) = sample.size_bounds(t, na);
        let rest = if last[a as usize] <= last[b as usize] {
            after[a as usize]
        } else {
            after[b as usize]
        };
        nb >= lo && nb <= hi && sample.may_reach(t, na, nb, h + rest as u64)
    };
    let kept_lists = kept.as_ref();

    // 3. Verification, the smaller id probing (as the other matchings of a whole-index run),
    //    on every core; the pairs come out in (a, b) order.
    let (found, mut distinct, records) = if by_document {
        let found = by_probing_document(view, cfg, &records, end, kept_lists, &may_pair);
        (found, 0, records)
    } else {
        let (parts, counts) = (&parts[..], &counts[..]);
        let (found, distinct) = by_candidate_array(
            view, cfg, records, parts, counts, quarter, kept_lists, &may_pair,
        );
        (found, distinct, Vec::new())
    };
    let mut block: Vec<Pair> = Vec::with_capacity(EMIT_BLOCK);
    for r in found {
        let f = r?;
        distinct += f.distinct;
        stats.candidates += f.verified;
        stats.verified_by_ranks += f.counts.by_ranks;
        for p in f.pairs {
            block.push(p);
            if block.len() == EMIT_BLOCK {
                stats.count_block(block.len());
                emit(&block)?;
                block.clear();
            }
        }
    }
    stats.candidates_pruned = distinct - stats.candidates;
    stats.count_block(block.len());
    emit(&block)?;
    stats.matching = Some(Matching::Prefix);
    // Their pages (tens of MB for a large batch) are given back while the caller goes on.
    if stats.probe_records >= FREE_ON_A_THREAD as u64 {
        crate::sort::prefault::drop_on_a_thread((records, kept, last, after));
    }
    Ok(Some(stats))
}

/// A count per document id for the candidates of one probing document at a time, all zero
/// between documents; taken from the pool of a parallel pass (one per job running at once) and
/// put back when dropped.
struct Tally<'p> {
    counts: Vec<u32>,
    pool: &'p std::sync::Mutex<Vec<Vec<u32>>>,
}

impl<'p> Tally<'p> {
    fn take(pool: &'p std::sync::Mutex<Vec<Vec<u32>>>, docs: u32) -> Tally<'p> {
        let counts = pool.lock().ok().and_then(|mut p| p.pop());
        Tally {
            counts: counts.unwrap_or_else(|| vec![0; docs as usize]),
            pool,
        }
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(std::mem::take(&mut self.counts));
        }
    }
}

/// Each document's positions in the probe records sorted by `(key, doc)` (a counting sort
/// of the positions by document).
struct DocPositions {
    /// Where each document's positions start in `at` (`docs + 1` offsets).
    starts: Vec<u32>,
    at: Vec<u32>,
}

impl DocPositions {
    fn of(records: &[(u64, u32)], docs: u32) -> DocPositions {
        let mut starts = vec![0u32; docs as usize + 1];
        for r in records {
            starts[r.1 as usize + 1] += 1;
        }
        for d in 0..docs as usize {
            starts[d + 1] += starts[d];
        }
        let mut next = starts.clone();
        let mut at = vec![0u32; records.len()];
        for (i, r) in records.iter().enumerate() {
            let n = &mut next[r.1 as usize];
            at[*n as usize] = i as u32;
            *n += 1;
        }
        DocPositions { starts, at }
    }

    fn positions(&self, doc: u32) -> &[u32] {
        let d = doc as usize;
        &self.at[self.starts[d] as usize..self.starts[d + 1] as usize]
    }
}

/// What one step of the verification found: its pairs, its counters, the distinct candidates
/// it saw (before the pruning) and how many of them it verified.
#[derive(Default)]
struct Found {
    pairs: Vec<Pair>,
    counts: VerifyCounts,
    distinct: u64,
    verified: u64,
}

/// Step 3 of [`prefix_join`] for probe records that fit the cache: each probing document `a`
/// counts the later documents under its keys (from its positions in the sorted records) in a
/// count per document id, one per thread, then prunes (`may_pair(a, b, h)`) and verifies
/// them, a few documents per parallel step; no candidate array is written or sorted. In
/// probing order, each step's pairs in `(a, b)` order.
fn by_probing_document(
    view: &View,
    cfg: &PairsConfig,
    records: &[(u64, u32)],
    end: u32,
    kept: Option<&DocLists>,
    may_pair: &(dyn Fn(u32, u32, u64) -> bool + Sync),
) -> Vec<Result<Found>> {
    let by_doc = DocPositions::of(records, end);
    let probing: Vec<u32> = (0..end)
        .filter(|&a| !by_doc.positions(a).is_empty())
        .collect();
    let tallies = std::sync::Mutex::new(Vec::new());
    probing
        .par_chunks(PROBING_STEP)
        .map_init(
            || {
                let tally = Tally::take(&tallies, end);
                (VerifyScratch::default(), Vec::new(), Vec::new(), tally)
            },
            |(sc, bs, run, tally), chunk| {
                let mut f = Found::default();
                for &a in chunk {
                    // Each later document under one of a's keys, counted (zero again after).
                    bs.clear();
                    for &i in by_doc.positions(a) {
                        let i = i as usize;
                        let key = records[i].0;
                        for r in records[i + 1..].iter().take_while(|r| r.0 == key) {
                            let c = &mut tally.counts[r.1 as usize];
                            if *c == 0 {
                                bs.push(r.1);
                            }
                            *c += 1;
                        }
                    }
                    bs.sort_unstable();
                    run.clear();
                    for &b in bs.iter() {
                        let h = std::mem::take(&mut tally.counts[b as usize]);
                        if may_pair(a, b, h as u64) {
                            run.push((a as u64) << 32 | b as u64);
                        }
                    }
                    f.distinct += bs.len() as u64;
                    f.verified += run.len() as u64;
                    verify_step(view, cfg, kept, run, sc, &mut f)?;
                }
                Ok(f)
            },
        )
        .collect()
}

/// Step 3 of [`prefix_join`] for more probe records: the candidates `(a << 32 | b)` written in
/// parallel into one array of their exact count (`counts` per part of `parts`), sorted,
/// pruned (`may_pair` with h the times a pair is listed) and verified in steps cut at a
/// probing document's boundary; all passes stream. The records go before the sort. Returns
/// the steps' findings in order and the distinct candidates.
#[allow(clippy::too_many_arguments)]
fn by_candidate_array(
    view: &View,
    cfg: &PairsConfig,
    records: Vec<(u64, u32)>,
    parts: &[usize],
    counts: &[u64],
    quarter: u64,
    kept: Option<&DocLists>,
    may_pair: &(dyn Fn(u32, u32, u64) -> bool + Sync),
) -> (Vec<Result<Found>>, u64) {
    let listed: u64 = counts.iter().sum();
    let mut cands: Vec<u64> = crate::sort::prefault::with_capacity_par(listed as usize);
    cands.resize(listed as usize, 0);
    {
        let mut slices: Vec<&mut [u64]> = Vec::with_capacity(counts.len());
        let mut rest = &mut cands[..];
        for &n in counts {
            let (head, tail) = rest.split_at_mut(n as usize);
            slices.push(head);
            rest = tail;
        }
        slices
            .into_par_iter()
            .zip(parts.par_windows(2))
            .for_each(|(out, w)| {
                let mut k = 0;
                for g in records[w[0]..w[1]].chunk_by(|x, y| x.0 == y.0) {
                    for (i, &(_, a)) in g.iter().enumerate() {
                        for &(_, b) in &g[i + 1..] {
                            out[k] = (a as u64) << 32 | b as u64;
                            k += 1;
                        }
                    }
                }
            });
    }
    drop(records); // its memory before the candidates' sort takes more
    sort_within(&mut cands, quarter);
    // Each part keeps its survivors at its front, in place; then the parts are closed up.
    let distinct = AtomicU64::new(0);
    let parts = cuts(&cands, |x, y| x == y);
    let kept_per_part: Vec<usize> = {
        let mut slices: Vec<&mut [u64]> = Vec::with_capacity(parts.len());
        let mut rest = &mut cands[..];
        for w in parts.windows(2) {
            let (head, tail) = rest.split_at_mut(w[1] - w[0]);
            slices.push(head);
            rest = tail;
        }
        slices
            .into_par_iter()
            .map(|part| {
                let (mut i, mut kept, mut runs) = (0, 0, 0u64);
                while i < part.len() {
                    let p = part[i];
                    let mut j = i + 1;
                    while j < part.len() && part[j] == p {
                        j += 1;
                    }
                    runs += 1;
                    if may_pair((p >> 32) as u32, p as u32, (j - i) as u64) {
                        part[kept] = p;
                        kept += 1;
                    }
                    i = j;
                }
                distinct.fetch_add(runs, Ordering::Relaxed);
                kept
            })
            .collect()
    };
    let mut n = 0;
    for (w, &k) in parts.windows(2).zip(&kept_per_part) {
        cands.copy_within(w[0]..w[0] + k, n);
        n += k;
    }
    cands.truncate(n);
    cands.shrink_to_fit();
    let mut steps: Vec<&[u64]> = Vec::new();
    let mut rest = &cands[..];
    while !rest.is_empty() {
        let mut k = rest.len().min(VERIFY_STEP);
        let a = rest[k - 1] >> 32;
        while k < rest.len() && rest[k] >> 32 == a {
            k += 1;
        }
        steps.push(&rest[..k]);
        rest = &rest[k..];
    }
    let found = steps
        .par_iter()
        .map_init(VerifyScratch::default, |sc, step| {
            let mut f = Found {
                verified: step.len() as u64,
                ..Found::default()
            };
            verify_step(view, cfg, kept, step, sc, &mut f)?;
            Ok(f)
        })
        .collect();
    (found, distinct.into_inner())
}

/// A verification thread's buffers: the probing document's hashes and stored list, and the
/// comparison's scratch.
#[derive(Default)]
struct VerifyScratch {
    x: Vec<u64>,
    raw: Vec<u64>,
    buf: Vec<u64>,
}

/// Verifies the candidates of `step` (sorted `(a << 32 | b)`, runs of one probing document)
/// into `f`: from the kept lists, or reading each probing document's list once per run.
fn verify_step(
    view: &View,
    cfg: &PairsConfig,
    kept: Option<&DocLists>,
    step: &[u64],
    sc: &mut VerifyScratch,
    f: &mut Found,
) -> Result<()> {
    let (sample, t) = (cfg.sample, cfg.threshold);
    if let Some(lists) = kept {
        return verify_kept(
            view,
            cfg,
            lists,
            step,
            &mut sc.buf,
            &mut f.pairs,
            &mut f.counts,
        );
    }
    for run in step.chunk_by(|p, q| p >> 32 == q >> 32) {
        let a = (run[0] >> 32) as u32;
        let Some(sa) = view.features_and_raw_into(a, &mut sc.x, &mut sc.raw)? else {
            continue;
        };
        let own = Some(Own {
            seg: sa,
            raw: &sc.raw,
        });
        for &p in run {
            let b = p as u32;
            let ov = verify_candidate(view, sample, t, &sc.x, own, b, &mut sc.buf, &mut f.counts)?;
            f.pairs.extend(ov.map(|ov| Pair {
                a,
                b,
                m: Match::of(b, ov),
            }));
        }
    }
    Ok(())
}

/// Step 3 of [`prefix_pairs`] for one step of candidates (sorted, cut at a probing
/// document's boundary) from the lists step 1 kept: every candidate as
/// [`verify_candidate`] would verify it, without reading a list again.
fn verify_kept(
    view: &View,
    cfg: &PairsConfig,
    lists: &DocLists,
    step: &[u64],
    buf: &mut Vec<u64>,
    out: &mut Vec<Pair>,
    counts: &mut VerifyCounts,
) -> Result<()> {
    let (sample, t) = (cfg.sample, cfg.threshold);
    for run in step.chunk_by(|p, q| p >> 32 == q >> 32) {
        let a = (run[0] >> 32) as u32;
        let Some(i) = lists.find(a) else { continue };
        let (Some(sa), Some(x)) = (lists.segment(i), lists.hashes(i)) else {
            continue;
        };
        let own = Own {
            seg: sa,
            raw: lists.raw(i),
        };
        for &p in run {
            let b = p as u32;
            let ov = match lists.find(b) {
                Some(j) => verify_listed(view, sample, t, x, own, lists, j, buf, counts)?,
                // `own.raw` must be the stored list when `b`'s is read as stored.
                None => {
                    let own = (!lists.raw_is_hashes()).then_some(own);
                    verify_candidate(view, sample, t, x, own, b, buf, counts)?
                }
            };
            out.extend(ov.map(|ov| Pair {
                a,
                b,
                m: Match::of(b, ov),
            }));
        }
    }
    Ok(())
}
