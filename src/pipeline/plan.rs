//! What an all-pairs run searches for ([`PairsConfig`]), how it reads the postings
//! ([`Matching`]), what it finds ([`Pair`]) and what it counted ([`PairsStats`]): the types
//! both matchings share. `pairs` (the probe matching and the dispatch) and `join` (the merge
//! join) use them; `pairs` calls `join`, never the other way.

use crate::error::{Error, Result};
use crate::fingerprint::Sample;
use crate::query::Match;
use crate::threshold::Threshold;
use crate::view::View;

/// Work counters of one all-pairs run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PairsStats {
    pub documents: u64,
    pub postings_visited: u64,
    pub candidates: u64,
    /// Candidates verified by their ranks in the probing document's own format-3 segment
    /// (no rank turned back into a key; `query::verify`).
    pub verified_by_ranks: u64,
    pub pairs: u64,
    /// Blocks of probing documents processed.
    pub blocks: u64,
    /// Largest number of pairs held at once (one block's).
    pub max_block_pairs: u64,
    /// The commonality limit in force, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_df: Option<u32>,
    /// Probes the limit left out (summed over probing documents).
    pub max_df_probes_cut: u64,
    /// Over-limit keys passed over while choosing probes.
    pub max_df_keys_cut: u64,
    /// Posting entries the unfilled probes would have visited: what the limit saved.
    pub max_df_postings_skipped: u64,
    /// Probing documents whose probe set the limit left short (their pairs that share only
    /// over-limit keys can be missed).
    pub max_df_docs_cut: u64,
    /// Join pipeline only: (key, doc) probe records sorted.
    pub probe_records: u64,
    /// Join pipeline only: candidate pair records emitted by the merge join (before dedup).
    pub candidate_records: u64,
    /// Join pipeline only: posting blocks the merge join read (each at most once per segment).
    pub blocks_read: u64,
    /// Join pipeline only: of `blocks_read`, those of the old segments (holding only documents
    /// below `older_than`); the rest are the batch's own segments'.
    pub old_blocks_read: u64,
    /// Join pipeline only: run files its three sorts spilled (0 = everything fit in memory).
    pub runs_spilled: u64,
    /// Join pipeline only: (probe key, segment) lookups the segments' key filters answered
    /// "absent" before any posting block was read.
    pub keys_filtered: u64,
    /// Absent-first probe choice ([`PairsConfig::absent_first`]): probe keys no old segment
    /// may hold (they read no old posting block).
    pub probes_absent: u64,
    /// Absent-first: probing documents whose probes are all absent from the old segments.
    pub docs_absent: u64,
    /// Absent-first: (key, old segment) key-filter checks made to rank the probe keys (and,
    /// with per-segment probes, to choose them).
    pub filter_checks: u64,
    /// Per-segment probes ([`PairsConfig::per_segment`], join only): (key, old segment) lookups
    /// the probe records ask for (old segments beyond the 31st count as one group).
    pub old_lookups: u64,
    /// Per-segment probes: probing documents whose probe records ask no old segment at all.
    pub docs_no_old: u64,
    /// Per-segment probes: probing documents whose probes were chosen per segment.
    pub docs_per_segment: u64,
    /// The planner's estimates, when `Auto` was resolved by [`plan`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<MatchPlan>,
    /// The matching that ran (`auto` resolved), when chosen through [`for_each_pair`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matching: Option<Matching>,
    /// Who answered a whole-index `pairs` (`Index::pairs`): `stored` (the stored pairs,
    /// format-spec/rocksdb.md) or `matching`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// Stored pairs only: entries of the stored pairs read (kept or skipped as tombstoned,
    /// unpublished or below the threshold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_read: Option<u64>,
}

/// One found pair, `a < b` by doc id.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub a: u32,
    pub b: u32,
    pub m: Match,
}

/// What an all-pairs run searches for and how much it may hold.
#[derive(Clone, Copy, Debug)]
pub struct PairsConfig {
    pub sample: Sample,
    pub threshold: Threshold,
    /// Commonality limit (keys in more documents are not probed).
    pub max_df: Option<u32>,
    /// Budget of one block's pair buffer, in bytes.
    pub buffer_bytes: u64,
    /// Most probing documents per block.
    pub block_docs: u32,
    /// Choose the probes of documents matched against older ones (`older_than > 0`)
    /// absent-first: keys no older segment may hold before the rest
    /// ([`crate::query::Matcher::with_absent_first`]). Same pairs either way; false gives the
    /// plain rarest-first choice (for comparisons).
    pub absent_first: bool,
    /// With `absent_first`, the merge join chooses the probes **per old segment**
    /// ([`crate::query::Matcher::choose_segment_probes`]): keys absent from that segment
    /// first, so a document looks keys up only in the old segments that hold its relatives'
    /// keys. Same pairs either way; false gives one absent-first set for all segments.
    pub per_segment: bool,
}

/// Environment variable: `NDD_PER_SEGMENT=0` makes [`PairsConfig::new`] choose one probe set
/// for all segments (`per_segment: false`; for before/after measurements, BENCHMARKS.md).
pub const PER_SEGMENT_ENV: &str = "NDD_PER_SEGMENT";

/// Default and largest block of probing documents.
pub const BLOCK_DOCS: u32 = 4096;
/// Smallest block (below this, rayon has too little to share).
pub(crate) const MIN_BLOCK_DOCS: u32 = 64;

impl PairsStats {
    /// Adds the absent-first counters of one matching thread.
    pub(crate) fn add_absent_first(&mut self, s: &crate::query::Scratch) {
        self.probes_absent += s.probes_absent;
        self.docs_absent += s.docs_absent;
        self.filter_checks += s.filter_checks;
    }
}

impl PairsStats {
    /// Adds the per-segment probe counters of one matching thread.
    pub(crate) fn add_per_segment(&mut self, s: &crate::query::SegmentProbes) {
        self.old_lookups += s.old_lookups;
        self.docs_no_old += s.docs_no_old;
        self.filter_checks += s.filter_checks;
        self.docs_per_segment += s.docs_per_segment;
    }
}

impl PairsConfig {
    /// The matcher of a run of this configuration whose probing documents pair with every
    /// document below `older_than`: absent-first against the segments below it, when enabled.
    pub fn matcher<'v>(&self, view: &'v View, older_than: u32) -> crate::query::Matcher<'v> {
        let m =
            crate::query::Matcher::new(view, self.sample, self.threshold).with_max_df(self.max_df);
        if self.absent_first {
            m.with_absent_first(older_than)
        } else {
            m
        }
    }

    pub fn new(sample: Sample, threshold: Threshold) -> Self {
        PairsConfig {
            sample,
            threshold,
            max_df: None,
            buffer_bytes: 64 << 20,
            block_docs: BLOCK_DOCS,
            absent_first: true,
            per_segment: std::env::var(PER_SEGMENT_ENV).map_or(true, |v| v != "0"),
        }
    }
}

/// How matching reads the postings: all give the same pairs (tests check this).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Matching {
    /// The cheaper of the two by the cost model of [`plan`]: probe keys of a sample of the
    /// probing documents are checked against every segment's block index and key filter, and
    /// the surviving lookups and the blocks they touch are priced as random reads (`Probe`)
    /// or as three sorts plus one sequential pass over those blocks (`Join`).
    #[default]
    Auto,
    /// Sorted probe records merge-joined with each segment, candidates and pairs through the
    /// external sort ([`super::join`]): sequential reads, memory bounded by the sort budget.
    Join,
    /// Each probing document looks its probe keys up in every segment (random reads), blocks of
    /// documents in parallel ([`super::pairs::for_each_pair_block`]): fastest while the index is in memory.
    Probe,
}

impl Matching {
    /// `Auto` resolved for a whole-index run of `cfg` under a memory budget by the cost
    /// model of [`plan`]; the others as they are.
    pub fn resolve(self, view: &View, cfg: &PairsConfig, mem_bytes: u64) -> Matching {
        match self {
            Matching::Auto => plan(view, cfg, 0..view.doc_ids(), 0, mem_bytes).choice,
            m => m,
        }
    }
}

/// What the planner saw and estimated (seconds are model units calibrated on this machine,
/// BENCHMARKS.md "Matching that reads only what it needs"; only their ratio matters).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct MatchPlan {
    /// Probing documents whose probe keys were checked.
    pub sampled_docs: u64,
    /// Probing documents in the run (live, non-empty).
    pub docs: u64,
    /// Estimated probe keys of the run.
    pub probe_keys: f64,
    /// Estimated (key, segment) lookups that pass block range and key filter.
    pub surviving: f64,
    /// Estimated probe records of the join (per-segment probes: one per key a document asks
    /// of some segment; else `probe_keys`).
    pub join_records: f64,
    /// Estimated (key, segment) lookups of the join that pass block range and key filter
    /// (per-segment probes: only the segments each record asks; else `surviving`).
    pub join_surviving: f64,
    /// Estimated distinct posting blocks the join's lookups touch (what the join reads).
    pub blocks: f64,
    /// Posting blocks in all segments.
    pub total_blocks: u64,
    /// Bytes of all segments.
    pub segment_bytes: u64,
    pub cost_probe: f64,
    pub cost_join: f64,
    pub choice: Matching,
}

/// Probing documents sampled by [`plan`].
const PLAN_SAMPLE: u32 = 256;
/// Cost model (seconds): one key-filter check.
const C_FILTER: f64 = 40e-9;
/// A lookup in a block already in memory (block search, parse, find).
const C_HOT: f64 = 1.5e-6;
/// A random read of a posting block that is not in memory (fault + read + crc).
const C_COLD: f64 = 150e-6;
/// Sequential read bandwidth (bytes/s) for the join's block pass and its spilled sorts.
const SEQ_BW: f64 = 400e6;
/// Sorting one 12-byte probe record or candidate in memory.
const C_SORT: f64 = 0.25e-6;
/// The join's work per surviving lookup beyond the block: emitting its candidate records,
/// the partner sort's merge and dedup, regrouping for verification (the probe matching
/// verifies in place). With the index in memory this makes probe the cheaper, as measured on
/// llvm-docs (BENCHMARKS.md, "`--matching` on llvm-docs").
const C_CAND: f64 = 1.0e-6;

/// Estimates both matchings' costs for probing documents `docs` (pairing with every document
/// below `older_than`, as in [`super::pairs::for_each_pair`]) under `mem_bytes`, and picks
/// the cheaper. Reads only block indexes and key filters (no posting block).
pub fn plan(
    view: &View,
    cfg: &PairsConfig,
    docs: std::ops::Range<u32>,
    older_than: u32,
    mem_bytes: u64,
) -> MatchPlan {
    let end = docs.end.min(view.doc_ids());
    let live: Vec<u32> = (docs.start..end)
        .filter(|&d| view.is_live(d) && view.size(d) > 0)
        .collect();
    let mut p = MatchPlan {
        docs: live.len() as u64,
        segment_bytes: view.segments.iter().map(|s| s.seg.len_bytes()).sum(),
        total_blocks: view
            .segments
            .iter()
            .filter_map(|s| s.seg.table_meta(crate::segment::POSTINGS))
            .map(|t| t.blocks as u64)
            .sum(),
        ..Default::default()
    };
    let nseg = view.segments.len();
    // Per segment: surviving lookups of the probe matching and of the join.
    let mut surv = vec![0u64; nseg];
    let mut jsurv = vec![0u64; nseg];
    // Per segment: the range of blocks the sample's surviving join lookups fall in.
    let mut span = vec![(usize::MAX, 0usize); nseg];
    let step = (live.len() as u32 / PLAN_SAMPLE).max(1) as usize;
    let matcher = cfg.matcher(view, older_than);
    let per_segment = cfg.per_segment && matcher.per_segment();
    let bits = matcher.segment_bits();
    let mut scratch = crate::query::Scratch::new(0);
    let mut sp = crate::query::SegmentProbes::default();
    let mut x = Vec::new();
    let mut keys = 0u64;
    let mut records = 0u64;
    // A damaged filter counts as "may be present" here; the matching reports it.
    let block_of = |s: &crate::view::LiveSegment, key: u64| match s.seg.postings_block_for(key) {
        Ok(None) => None,
        Ok(Some(bi)) => Some(bi),
        Err(_) => Some(0),
    };
    for &a in live.iter().step_by(step) {
        p.sampled_docs += 1;
        if !view.features_into(a, &mut x).unwrap_or(false) {
            continue;
        }
        // The probe matching's choice (one set for all segments).
        if matcher.choose_probes(&x, &mut scratch).unwrap_or(false) {
            for key in scratch.probes() {
                keys += 1;
                for (i, s) in view.segments.iter().enumerate() {
                    if let Some(bi) = block_of(s, key) {
                        surv[i] += 1;
                        if !per_segment {
                            jsurv[i] += 1;
                            span[i] = (span[i].0.min(bi), span[i].1.max(bi));
                        }
                    }
                }
            }
        }
        // The join's per-segment records.
        if per_segment
            && matcher
                .choose_segment_probes(&x, &mut scratch, &mut sp)
                .unwrap_or(false)
        {
            for &(key, segs) in &sp.probes {
                records += 1;
                for (i, s) in view.segments.iter().enumerate() {
                    if segs & bits[i] == 0 {
                        continue;
                    }
                    if let Some(bi) = block_of(s, key) {
                        jsurv[i] += 1;
                        span[i] = (span[i].0.min(bi), span[i].1.max(bi));
                    }
                }
            }
        }
    }
    if !per_segment {
        records = keys;
    }
    let scale = if p.sampled_docs > 0 {
        p.docs as f64 / p.sampled_docs as f64
    } else {
        0.0
    };
    p.probe_keys = keys as f64 * scale;
    p.join_records = records as f64 * scale;
    for (i, s) in view.segments.iter().enumerate() {
        p.surviving += surv[i] as f64 * scale;
        let n = jsurv[i] as f64 * scale;
        p.join_surviving += n;
        // Lookups spread over the blocks of the key range the sample's survivors cover (probe
        // keys need not spread over the whole hash space: the rarest-first choice takes the
        // smallest hashes): expected distinct blocks hit.
        let all = s
            .seg
            .table_meta(crate::segment::POSTINGS)
            .map_or(0.0, |t| t.blocks as f64);
        let b = match span[i] {
            // k sampled survivors uniform over W blocks span W (k - 1) / (k + 1) of them on
            // average, so the run's lookups cover about span (k + 1) / (k - 1) blocks.
            (lo, hi) if jsurv[i] >= 2 => {
                let k = jsurv[i] as f64;
                ((hi - lo + 1) as f64 * (k + 1.0) / (k - 1.0)).min(all)
            }
            _ => all,
        };
        if b > 0.0 {
            p.blocks += b * (1.0 - (-n / b).exp());
        }
    }
    let block_bytes = if p.total_blocks > 0 {
        p.segment_bytes as f64 / p.total_blocks as f64
    } else {
        0.0
    };
    // Share of random block reads that miss memory: the part of the index beyond the budget.
    let miss = if p.segment_bytes > 0 {
        (1.0 - mem_bytes as f64 / p.segment_bytes as f64).max(0.0)
    } else {
        0.0
    };
    let filters = p.probe_keys * nseg as f64 * C_FILTER;
    p.cost_probe = filters + p.surviving * (C_HOT + miss * C_COLD);
    let spill = p.join_records * 16.0 > sorts_budget(view, mem_bytes) as f64 / 2.0;
    let sort_io = if spill {
        2.0 * p.join_records * 16.0 / SEQ_BW
    } else {
        0.0
    };
    p.cost_join = filters
        + p.join_records * C_SORT
        + sort_io
        + p.blocks * (block_bytes / SEQ_BW + C_HOT)
        + p.join_surviving * (C_SORT + C_HOT * 0.2 + C_CAND);
    p.choice = if p.cost_probe <= p.cost_join {
        Matching::Probe
    } else {
        Matching::Join
    };
    p
}

impl std::str::FromStr for Matching {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Matching::Auto),
            "join" => Ok(Matching::Join),
            "probe" => Ok(Matching::Probe),
            _ => Err(Error::InvalidArgument(format!(
                "unknown matching `{s}` (expected auto, join or probe)"
            ))),
        }
    }
}

/// What the merge join's sorts share of the budget `mem` (two alive at once, half each): all
/// of it, less what the process's key cache may take when the view holds format-3 segments
/// (FORWARD lists as ranks, mapped to keys through the cache, which the operations give
/// [`crate::segment::key_cache_share`] of the same budget: ingest, pairs). A segment's cache
/// is all of its POSTINGS keys (8 bytes each), loaded whole when it fits what is left of the
/// share, so the cache may take the keys of the segments that fit the share, at most the
/// share. So the sorts and the cache together stay within `mem` in every phase (a loaded cache
/// stays until the view drops), and an index whose segments are all too big to cache keeps
/// the whole budget for its sorts.
pub fn sorts_budget(view: &View, mem: u64) -> u64 {
    let share = crate::segment::key_cache_share(mem);
    let cacheable: u64 = view
        .segments
        .iter()
        .filter(|s| s.seg.ranked_forward())
        .filter_map(|s| s.seg.table_meta(crate::segment::POSTINGS))
        .map(|t| t.entries.saturating_mul(8))
        .filter(|&bytes| bytes <= share)
        .sum();
    mem.saturating_sub(cacheable.min(share))
}
