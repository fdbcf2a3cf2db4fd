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
    /// Candidates of `candidates` compared across segments (at least one of them format 3)
    /// that the bound of their coarse keys ruled out (`segment::coarse_overlap`): no rank of
    /// theirs was mapped to its key (all and mod:M sampling; join and probe matching).
    pub ruled_out_coarse: u64,
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
    /// Join and prefix only: (key, doc) probe records sorted (prefix, in an ingest into an
    /// empty index: only those under keys of more than one document).
    pub probe_records: u64,
    /// Join pipeline: candidate pair records emitted by the merge join (before dedup); prefix:
    /// the (pair, shared probe key) records.
    pub candidate_records: u64,
    /// Prefix only: distinct candidate pairs the probe-hit and size bounds ruled out
    /// unverified.
    #[serde(default)]
    pub candidates_pruned: u64,
    /// Prefix only: documents whose lists the caller gave (ingest into an empty index: the
    /// read stage's hashes), none of them read back from the segment.
    #[serde(default)]
    pub lists_given: u64,
    /// Join pipeline only: posting blocks the merge join read (each at most once per segment).
    pub blocks_read: u64,
    /// Join pipeline only: of `blocks_read`, those of the old segments (holding only documents
    /// below `older_than`); the rest are the batch's own segments'.
    pub old_blocks_read: u64,
    /// Join pipeline only: old segments' posting blocks asked ahead of the merge join (read
    /// while the probes are chosen); with the whole read-ahead within its budget, exactly
    /// `old_blocks_read`.
    pub read_ahead_blocks: u64,
    /// Join pipeline only: bytes asked ahead: of those blocks; of the verification chunks'
    /// FORWARD blocks and the POSTINGS blocks their ranks are mapped in.
    pub read_ahead_join_bytes: u64,
    pub read_ahead_verify_bytes: u64,
    /// Join pipeline only: bytes a read-ahead left to be read on use (past its budget).
    pub read_ahead_skipped_bytes: u64,
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
    /// Per-segment probes, of `filter_checks`: the (distinct key, old segment) checks of the
    /// join's pre-pass, each old segment asked a window's sorted walk-prefix keys in one
    /// forward walk ([`crate::query::Matcher::pre_walk`]).
    pub filter_checks_sorted: u64,
    /// Per-segment probes, of `filter_checks`: the checks of the documents' chunked walks
    /// past their pre-walked prefix.
    pub filter_checks_fallback: u64,
    /// Per-segment probes: keys the documents' walks took from the pre-pass's answers.
    pub walk_keys_sorted: u64,
    /// Per-segment probes: documents whose walk went past their pre-walked prefix (or had
    /// none) and asked the filters itself there.
    pub walk_fallback_docs: u64,
    /// Per-segment probes: walk-prefix keys the pre-pass gathered (with repeats), and the
    /// distinct ones among them.
    pub prewalk_keys: u64,
    pub prewalk_distinct: u64,
    /// Per-segment probes: the most bytes one window's pre-pass held.
    pub prewalk_peak_bytes: u64,
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
    /// Counts one block of `len` pairs handed to the caller (`pairs`, `blocks`,
    /// `max_block_pairs`).
    pub fn count_block(&mut self, len: usize) {
        self.pairs += len as u64;
        self.blocks += 1;
        self.max_block_pairs = self.max_block_pairs.max(len as u64);
    }

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
        self.filter_checks_fallback += s.filter_checks_fallback;
        self.walk_keys_sorted += s.walk_keys_sorted;
        self.walk_fallback_docs += s.walk_fallback_docs;
    }

    /// Adds the counters of one window's pre-pass of the per-segment walk.
    pub(crate) fn add_pre_walk(&mut self, w: &crate::query::PreWalk) {
        self.filter_checks += w.checks;
        self.filter_checks_sorted += w.checks;
        self.prewalk_keys += w.keys;
        self.prewalk_distinct += w.distinct;
        self.prewalk_peak_bytes = self.prewalk_peak_bytes.max(w.bytes);
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
    /// The cheaper of the two by the cost model of [`plan`] and [`price`]: probe keys of a
    /// sample of the probing documents are checked against every segment's block index and
    /// key filter, and the surviving lookups are priced as random accesses, dearer in the
    /// share of the bytes they range over beyond the CPU cache and `--mem` (`Probe`), or as
    /// three sorts plus one sequential pass over the blocks they touch (`Join`).
    #[default]
    Auto,
    /// Sorted probe records merge-joined with each segment, candidates and pairs through the
    /// external sort ([`super::join`]): sequential reads, memory bounded by the sort budget.
    Join,
    /// Each probing document looks its probe keys up in every segment (random reads), blocks of
    /// documents in parallel ([`super::pairs::for_each_pair_block`]): fastest while the index is in memory.
    Probe,
    /// The prefix self-join of a whole-index run ([`super::prefix`]): candidates are the
    /// documents sharing a key of both probe sets, no posting list is read. `Auto`
    /// ([`super::pairs::for_each_pair`], [`super::pairs::for_each_pair_planned`]) takes it
    /// whenever it applies (every live document probes: a batch into an empty index, `pairs`
    /// below the stored pairs' threshold; no commonality limit, not adaptive sampling) and its
    /// records fit the memory budget. Asked for where it does not apply, the planner's choice
    /// runs.
    Prefix,
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

/// What the planner saw and estimated. Costs are in seconds of CPU of the matching on the
/// machine the constants were fitted on (BENCHMARKS.md, "The planner prices lookups by
/// segment size"); only their ratio decides.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct MatchPlan {
    /// Probing documents whose probe keys were checked.
    pub sampled_docs: u64,
    /// Probing documents in the run (live, non-empty).
    pub docs: u64,
    /// Segments of the view.
    pub segments: u64,
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
    /// Bytes the probe matching's random lookups range over: per segment, the POSTINGS blocks
    /// and key filters of the key range the sample's surviving lookups cover.
    pub probe_bytes: f64,
    /// The last-level cache the model assumed (bytes; [`llc_bytes`]).
    pub llc_bytes: u64,
    /// Share of the probe matching's random filter checks and lookups that miss the
    /// last-level cache: `1 - llc_bytes / probe_bytes`, at least 0.
    pub llc_miss: f64,
    /// Share of its random block reads that miss memory: the part of the index beyond the
    /// budget, `1 - mem / segment_bytes`, at least 0.
    pub mem_miss: f64,
    /// Share of the stored lists read to verify candidates that miss the last-level cache:
    /// the index beyond it, `1 - llc_bytes / segment_bytes`, at least 0.
    pub verify_miss: f64,
    /// Sampled documents whose posting lists were read (at most [`PLAN_LIST_DOCS`]).
    pub list_docs: u64,
    /// Estimated posting entries the probe matching walks.
    pub postings: f64,
    /// Estimated candidates the probe matching verifies (size bounds and probe hits passed).
    pub candidates: f64,
    /// Estimated candidate records the join emits (before its sort drops repeats).
    pub join_candidate_records: f64,
    /// Estimated distinct candidates the join verifies (size bounds passed).
    pub join_candidates: f64,
    /// Estimated features of the probing documents stored as ranks (format 3): the probe
    /// matching maps every prober's list to its keys.
    pub ranked_features: f64,
    /// Estimated probe records of the join whose prober is stored as ranks: its phase 1 maps
    /// the chosen ranks to their keys.
    pub ranked_records: f64,
    /// Share of that mapping done through a key cache (the segment's keys fit the key-cache
    /// share of the budget: [`crate::segment::key_cache_share`]); the rest selects the key in
    /// its POSTINGS block.
    pub ranked_cached: f64,
    /// Bytes the mapping ranges over: the key caches it may load (8 bytes a key), and the
    /// POSTINGS tables of the other ranked segments.
    pub cached_key_bytes: u64,
    pub uncached_postings_bytes: u64,
    pub cost_probe: f64,
    pub cost_join: f64,
    pub choice: Matching,
}

/// Probing documents sampled by [`plan`] (their probe keys go through every segment's block
/// index and key filter).
const PLAN_SAMPLE: u32 = 256;
/// Of them, documents whose posting lists [`plan`] reads (evenly spread), to estimate the
/// entries the probe walks and the candidates each matching emits and verifies.
pub const PLAN_LIST_DOCS: u64 = 48;

// The cost model, in CPU seconds (user + sys) of the work in which the two matchings differ
// (both choose every document's probes and read its features; that is left out). Fitted on
// this machine (AMD EPYC, 2 cores, 32 MiB L3, `lscpu`) to `pairs --threshold 0.8` with each
// matching forced (BENCHMARKS.md, "The planner prices lookups by segment size"): llvm-docs
// (3,228 pages, one 33 MB segment: everything in cache) and the 300k generated index (three
// 540 MB segments of ~7,400 blocks and ~25 M keys; the probe's lookups range over 290 MB,
// 9x the cache). A constant's source is the `perf` share of the functions named, times the
// run's CPU seconds, over the count the run's stats report.

/// A key-filter check in cache (block search in the block index, the xor filter's three
/// probes): llvm-docs probe, `Segment::postings_may_contain` 9.2 % of 0.51 s over 599 k
/// checks = 78 ns.
const C_FILTER: f64 = 78e-9;
/// What a random check adds when it misses the last-level cache (the filter's cache line and
/// its slot, a TLB miss): 300k probe, `postings_may_contain` 25.9 % of 50.7 s over 63 M
/// checks (21.1 M probe keys x 3 segments) = 207 ns, at a miss share of 0.88.
const C_FILTER_MISS: f64 = 150e-9;
/// A lookup in a posting block in cache (`BlockView::find`, `V2View::parse`, `Segment::get`,
/// `decode_postings`, `EfView::select1`): llvm-docs probe, 44 % of 0.51 s over 599 k lookups.
const C_LOOKUP: f64 = 0.4e-6;
/// What a random lookup adds when its block misses the last-level cache (the block's key
/// index and keys: dependent misses): 300k probe, the same functions 50.7 % of 50.7 s over
/// 33.4 M lookups = 0.77 us, at a miss share of 0.88.
const C_LOOKUP_MISS: f64 = 0.45e-6;
/// A random read of a posting block that is not in memory (fault + read + crc).
const C_COLD: f64 = 150e-6;
/// The probe matching's work per posting entry walked (a hit count): llvm-docs probe,
/// `View::for_each_posting_counted` 5.1 % of 0.51 s over 3.96 M entries.
const C_POSTING: f64 = 6.5e-9;
/// Verifying one candidate whose lists are in cache (`Sample::counts`, `DocLists::find`,
/// `EfView::decode_into`): llvm-docs join, 27 % of 0.44 s over 193 k candidates.
const C_VERIFY: f64 = 0.6e-6;
/// What verifying adds when the stored lists miss the cache (share: the index beyond the
/// cache): 300k join, the same functions and `View::size` 21.6 % of 17.9 s over 948 k
/// candidates = 4.1 us, at a miss share of 0.98.
const C_VERIFY_MISS: f64 = 3.5e-6;
/// Sorting one probe or candidate record in memory, with the page faults of the sort's
/// buffers: 300k join, the sorts, `memmove` and the anonymous page faults ~17 % of 17.9 s
/// over 35.7 M records = 85 ns; llvm-docs join 49 ns.
const C_SORT: f64 = 60e-9;
/// The join's seek of one segment for one probe record (the key filter, in cache):
/// `Seeker::seek` + `seek_postings` 11 % of 17.9 s over 63 M (record, segment) seeks.
const C_SEEK: f64 = 30e-9;
/// The join's work per surviving lookup in a block it holds (find, value, list decode, the
/// candidate loop): 300k join, 12.6 % of 17.9 s over 33.4 M lookups.
const C_JOIN_LOOKUP: f64 = 70e-9;
// Format 3 (FORWARD lists as ranks): what mapping ranks to keys adds, from format 3's CPU
// over format 2's on the same pages (BENCHMARKS.md, "The planner prices format 3's rank
// mapping"): llvm-docs (one 17 MB segment, 3.0 M features, T = 0.5: probe +0.05 s with
// `--mem 16MiB`, +0.00 with the key cache, join +0.00) and the 100k generated index (two
// 177 MB segments, 34.9 M features, 10.5 M join records, T = 0.7: probe +4.2 s at `--mem
// 64MiB`, +2.1 s with the key caches at 1GiB; join +1.74 s and +1.19 s). Each is a cost in
// cache plus what a miss adds, times the share of the bytes the mapping ranges over beyond
// the last-level cache (0.73 of the POSTINGS bytes, 0.67 of the key caches' at 100k).

/// The probe matching maps every prober's feature (`DocLists::map_hashes_caching`): a select
/// in the key's POSTINGS block.
const C_MAP: f64 = 17e-9;
const C_MAP_MISS: f64 = 140e-9;
/// The same through the segment's key cache (a load at the rank; nothing measurable in cache).
const C_MAP_CACHED_MISS: f64 = 90e-9;
/// What the join adds per probe record of a ranked prober (phase 1 maps the chosen ranks in
/// bulk; verification compares by ranks and coarse keys): nothing measurable in cache.
const C_MAP_JOIN_MISS: f64 = 225e-9;
const C_MAP_JOIN_CACHED_MISS: f64 = 170e-9;
/// Reading the blocks the join touches from the page cache (mapped: faults, crc): 300k join,
/// ~5 % of 17.9 s for 8,666 blocks of 72 KB = 0.7 GB/s.
const MAP_BW: f64 = 700e6;
/// Sequential read bandwidth (bytes/s) from disk: spilled sorts, blocks beyond the budget.
const DISK_BW: f64 = 400e6;

/// The last-level cache of this machine, from sysfs (the largest `cacheN/size` of cpu0), or
/// 32 MiB when it cannot be read. `NDD_LLC_BYTES` overrides it (for measurements).
pub fn llc_bytes() -> u64 {
    static LLC: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LLC.get_or_init(|| {
        if let Some(v) = std::env::var("NDD_LLC_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            return v;
        }
        let mut best = 0u64;
        for i in 0..8 {
            let p = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
            let Ok(s) = std::fs::read_to_string(p) else {
                continue;
            };
            let s = s.trim();
            let v = if let Some(k) = s.strip_suffix('K') {
                k.parse::<u64>().ok().map(|k| k << 10)
            } else if let Some(m) = s.strip_suffix('M') {
                m.parse::<u64>().ok().map(|m| m << 20)
            } else {
                s.parse().ok()
            };
            best = best.max(v.unwrap_or(0));
        }
        if best == 0 {
            32 << 20
        } else {
            best
        }
    })
}

/// Estimates both matchings' costs for probing documents `docs` (pairing with every document
/// below `older_than`, as in [`super::pairs::for_each_pair`]) under `mem_bytes`, and picks
/// the cheaper. Reads block indexes and key filters for a sample of [`PLAN_SAMPLE`]
/// documents, and the posting lists of [`PLAN_LIST_DOCS`] of them.
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
    let nseg = view.segments.len();
    let mut p = MatchPlan {
        docs: live.len() as u64,
        segments: nseg as u64,
        segment_bytes: view.segments.iter().map(|s| s.seg.len_bytes()).sum(),
        total_blocks: view
            .segments
            .iter()
            .filter_map(|s| s.seg.table_meta(crate::segment::POSTINGS))
            .map(|t| t.blocks as u64)
            .sum(),
        ..Default::default()
    };
    // Per segment: surviving lookups of the probe matching and of the join.
    let mut surv = vec![0u64; nseg];
    let mut jsurv = vec![0u64; nseg];
    // Per segment: the range of blocks the sample's surviving lookups fall in (probe, join).
    let mut pspan = vec![(usize::MAX, 0usize); nseg];
    let mut span = vec![(usize::MAX, 0usize); nseg];
    let step = (live.len() as u32 / PLAN_SAMPLE).max(1) as usize;
    let sampled = live.len().div_ceil(step) as u64;
    let list_every = sampled.div_ceil(PLAN_LIST_DOCS).max(1);
    let matcher = cfg.matcher(view, older_than);
    let per_segment = cfg.per_segment && matcher.per_segment();
    let bits = matcher.segment_bits();
    let mut scratch = crate::query::Scratch::new(0);
    let mut sp = crate::query::SegmentProbes::default();
    let mut x = Vec::new();
    let mut raw = Vec::new();
    let mut keys = 0u64;
    let mut records = 0u64;
    // Format 3: features and join records of ranked probers, and of them those whose
    // segment's keys the key cache may hold (in view order, while the share lasts).
    let cached = key_cached_segments(view, mem_bytes);
    let (mut ranked_features, mut ranked_records, mut cached_features) = (0u64, 0u64, 0u64);
    // The join's records so far: per-segment records, or one per probe key.
    let join_count = |records: u64, keys: u64| if per_segment { records } else { keys };
    // Lookups of the list documents: (key, segment) of the probe matching and of the join.
    let mut plook: Vec<(u64, usize)> = Vec::new();
    let mut jlook: Vec<(u64, usize)> = Vec::new();
    let mut lists = Lists::default();
    // The list documents: (document, features, probes chosen, lookups of each matching).
    #[allow(clippy::type_complexity)]
    let mut listed: Vec<(u32, usize, usize, Vec<(u64, usize)>, Vec<(u64, usize)>)> = Vec::new();
    let (mut sampled_features, mut list_features) = (0u64, 0u64);
    // A damaged filter counts as "may be present" here; the matching reports it.
    let block_of = |s: &crate::view::LiveSegment, key: u64| match s.seg.postings_block_for(key) {
        Ok(None) => None,
        Ok(Some(bi)) => Some(bi),
        Err(_) => Some(0),
    };
    let widen = |sp: &mut (usize, usize), bi: usize| *sp = (sp.0.min(bi), sp.1.max(bi));
    for &a in live.iter().step_by(step) {
        let with_lists = p.sampled_docs.is_multiple_of(list_every);
        p.sampled_docs += 1;
        sampled_features += view.size(a) as u64;
        plook.clear();
        jlook.clear();
        let Some(si) = view
            .features_and_raw_into(a, &mut x, &mut raw)
            .unwrap_or(None)
        else {
            continue;
        };
        let ranked = view.segments[si].seg.ranked_forward();
        let records_before = join_count(records, keys);
        if ranked {
            ranked_features += x.len() as u64;
            if cached[si] {
                cached_features += x.len() as u64;
            }
        }
        // The probe matching's choice (one set for all segments).
        if matcher.choose_probes(&x, &mut scratch).unwrap_or(false) {
            for key in scratch.probes() {
                keys += 1;
                for (i, s) in view.segments.iter().enumerate() {
                    if let Some(bi) = block_of(s, key) {
                        surv[i] += 1;
                        widen(&mut pspan[i], bi);
                        if with_lists {
                            plook.push((key, i));
                        }
                        if !per_segment {
                            jsurv[i] += 1;
                            widen(&mut span[i], bi);
                        }
                    }
                }
            }
        }
        let probes_chosen = scratch.probes().count();
        if !per_segment {
            jlook.extend_from_slice(&plook);
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
                        widen(&mut span[i], bi);
                        if with_lists {
                            jlook.push((key, i));
                        }
                    }
                }
            }
        }
        if ranked {
            ranked_records += join_count(records, keys) - records_before;
        }
        if with_lists {
            list_features += view.size(a) as u64;
            listed.push((a, x.len(), probes_chosen, plook.clone(), jlook.clone()));
        }
    }
    // The list documents' posting lists: their blocks asked at once, then read (from a cold
    // page cache, a few hundred random blocks in flight together instead of one page fault
    // with the kernel's read-around, megabytes, after another).
    let mut blocks: Vec<(usize, usize)> = (listed.iter())
        .flat_map(|(.., pl, jl)| pl.iter().chain(jl))
        .filter_map(|&(key, i)| {
            let bi = view.segments[i].seg.postings_block_for(key).ok()??;
            Some((i, bi))
        })
        .collect();
    blocks.sort_unstable();
    blocks.dedup();
    crate::view::ReadAheadQueue::new(crate::view::read_ahead_share()).ask_blocks_here(
        view,
        crate::segment::POSTINGS,
        &blocks,
    );
    for (a, n, probes_chosen, pl, jl) in &listed {
        lists.read(view, cfg, *a, older_than, *n, *probes_chosen, pl, jl);
    }
    if !per_segment {
        records = keys;
    }
    // Ratio estimates: the counts grow with a document's features (its probe keys are a share
    // of them), and pages differ in size far more than in that share.
    let all_features: u64 = live.iter().map(|&d| view.size(d) as u64).sum();
    let scale = if sampled_features > 0 {
        all_features as f64 / sampled_features as f64
    } else {
        0.0
    };
    p.probe_keys = keys as f64 * scale;
    p.join_records = records as f64 * scale;
    p.ranked_features = ranked_features as f64 * scale;
    p.ranked_records = ranked_records as f64 * scale;
    p.ranked_cached = if ranked_features > 0 {
        cached_features as f64 / ranked_features as f64
    } else {
        0.0
    };
    for (s, &c) in view.segments.iter().zip(&cached) {
        if let Some(t) = s.seg.table_meta(crate::segment::POSTINGS) {
            if c {
                p.cached_key_bytes += t.entries.saturating_mul(8);
            } else if s.seg.ranked_forward() {
                p.uncached_postings_bytes += t.bytes;
            }
        }
    }
    p.list_docs = lists.docs;
    let lscale = if list_features > 0 {
        all_features as f64 / list_features as f64
    } else {
        0.0
    };
    p.postings = lists.postings as f64 * lscale;
    p.candidates = lists.candidates as f64 * lscale;
    p.join_candidate_records = lists.join_records as f64 * lscale;
    p.join_candidates = lists.join_candidates as f64 * lscale;
    // k sampled survivors uniform over W blocks span W (k - 1) / (k + 1) of them on average,
    // so the run's lookups cover about span (k + 1) / (k - 1) blocks (probe keys need not
    // spread over the whole hash space: the rarest-first choice takes the smallest hashes).
    let covered = |sp: (usize, usize), k: u64, all: f64| match sp {
        (lo, hi) if k >= 2 => {
            let k = k as f64;
            ((hi - lo + 1) as f64 * (k + 1.0) / (k - 1.0)).min(all)
        }
        _ => all,
    };
    for (i, s) in view.segments.iter().enumerate() {
        p.surviving += surv[i] as f64 * scale;
        let n = jsurv[i] as f64 * scale;
        p.join_surviving += n;
        let Some(t) = s.seg.table_meta(crate::segment::POSTINGS) else {
            continue;
        };
        let all = t.blocks as f64;
        if all == 0.0 {
            continue;
        }
        // Distinct blocks the join's lookups hit, spread over the blocks they cover.
        let b = covered(span[i], jsurv[i], all);
        if b > 0.0 && n > 0.0 {
            p.blocks += b * (1.0 - (-n / b).exp());
        }
        // The probe's random accesses range over the covered blocks and their filters.
        if surv[i] > 0 {
            let filter = s
                .seg
                .table_meta(crate::segment::POSTINGS_FILTER)
                .map_or(0, |f| f.bytes);
            p.probe_bytes += (t.bytes + filter) as f64 * covered(pspan[i], surv[i], all) / all;
        }
    }
    price(
        &mut p,
        mem_bytes,
        sorts_budget(view, mem_bytes),
        llc_bytes(),
    );
    p
}

/// Counts of the posting lists [`plan`] reads for its list documents.
#[derive(Default)]
struct Lists {
    docs: u64,
    /// Entries the probe matching walks.
    postings: u64,
    /// Candidates it verifies.
    candidates: u64,
    /// Candidate records the join emits.
    join_records: u64,
    /// Distinct candidates the join verifies (after its probe-hit bound where it prunes).
    join_candidates: u64,
    hits: std::collections::HashMap<u32, u32>,
    seen: std::collections::HashMap<u32, u32>,
}

impl Lists {
    /// Reads the lists of probing document `a` (`n` features, `probes` of them probed by the
    /// probe matching) and counts what each matching does with them, as the matchings do
    /// (partner `d` allowed when `d > a` or `d < older_than`; size bounds; the probe
    /// matching's hit bound).
    #[allow(clippy::too_many_arguments)]
    fn read(
        &mut self,
        view: &View,
        cfg: &PairsConfig,
        a: u32,
        older_than: u32,
        n: usize,
        probes: usize,
        plook: &[(u64, usize)],
        jlook: &[(u64, usize)],
    ) {
        self.docs += 1;
        let (lo, hi) = cfg.sample.size_bounds(cfg.threshold, n);
        let ok = |d: u32| {
            d != a && (d > a || d < older_than) && !view.tombstones.contains(d) && {
                let m = view.size(d) as usize;
                m >= lo && m <= hi
            }
        };
        let list = |key: u64, i: usize| {
            view.segments[i]
                .seg
                .get_postings(crate::segment::POSTINGS, key)
                .ok()
                .flatten()
        };
        self.hits.clear();
        for &(key, i) in plook {
            if let Some(l) = list(key, i) {
                self.postings += l.len() as u64;
                l.for_each(|d| {
                    if ok(d) {
                        *self.hits.entry(d).or_insert(0) += 1;
                    }
                });
            }
        }
        let unprobed = n.saturating_sub(probes) as u64;
        self.candidates += self
            .hits
            .iter()
            .filter(|&(&d, &h)| {
                cfg.sample
                    .may_reach(cfg.threshold, n, view.size(d) as usize, h as u64 + unprobed)
            })
            .count() as u64;
        // The join's candidates, with their probe hits: where its sampling prunes and no
        // commonality limit is set, it verifies only those whose hits plus the `m - 1` keys a
        // prober leaves unprobed may reach the threshold (`join.rs`, phase 3).
        self.seen.clear();
        for &(key, i) in jlook {
            if let Some(l) = list(key, i) {
                l.for_each(|d| {
                    if d != a && (d > a || d < older_than) && !view.tombstones.contains(d) {
                        self.join_records += 1;
                        if ok(d) {
                            *self.seen.entry(d).or_insert(0) += 1;
                        }
                    }
                });
            }
        }
        let prune = cfg.max_df.is_none() && matches!(cfg.sample, Sample::All | Sample::Mod(_));
        let unprobed = cfg.sample.min_overlap(cfg.threshold, n).max(1) as u64 - 1;
        self.join_candidates += self
            .seen
            .iter()
            .filter(|&(&d, &h)| {
                !prune
                    || cfg.sample.may_reach(
                        cfg.threshold,
                        n,
                        view.size(d) as usize,
                        h as u64 + unprobed,
                    )
            })
            .count() as u64;
    }
}

/// Prices the counts of `p` ([`plan`]'s estimates, or a test's) into `cost_probe`,
/// `cost_join` and `choice`, for a memory budget `mem_bytes` of which the join's sorts get
/// `sorts_bytes`, on a machine whose last-level cache holds `llc_bytes`.
///
/// Probe: every probe key is checked against every segment's key filter and each surviving
/// lookup searches a posting block, at random; both cost more once the bytes they range over
/// (`probe_bytes`) exceed the cache, a miss per access in the share that does not fit, and a
/// block beyond `mem_bytes` is a read from disk. Then the posting entries walked and the
/// candidates verified. Join: the probe records sorted (spilled beyond half the sorts'
/// budget), one sequential pass over the blocks they touch (filters and lookups in cache),
/// the candidate records sorted, the distinct candidates verified.
pub fn price(p: &mut MatchPlan, mem_bytes: u64, sorts_bytes: u64, llc_bytes: u64) {
    let llc = llc_bytes as f64;
    let beyond = |bytes: f64| if bytes > llc { 1.0 - llc / bytes } else { 0.0 };
    p.llc_bytes = llc_bytes;
    p.llc_miss = beyond(p.probe_bytes);
    p.verify_miss = beyond(p.segment_bytes as f64);
    p.mem_miss = if p.segment_bytes > 0 {
        (1.0 - mem_bytes as f64 / p.segment_bytes as f64).max(0.0)
    } else {
        0.0
    };
    let segs = p.segments as f64;
    let verify = C_VERIFY + p.verify_miss * C_VERIFY_MISS;
    let cached = p.ranked_cached;
    let (cmiss, umiss) = (
        beyond(p.cached_key_bytes as f64),
        beyond(p.uncached_postings_bytes as f64),
    );
    p.cost_probe = p.probe_keys * segs * (C_FILTER + p.llc_miss * C_FILTER_MISS)
        + p.surviving * (C_LOOKUP + p.llc_miss * C_LOOKUP_MISS + p.mem_miss * C_COLD)
        + p.postings * C_POSTING
        + p.candidates * verify
        + p.ranked_features
            * (cached * cmiss * C_MAP_CACHED_MISS + (1.0 - cached) * (C_MAP + umiss * C_MAP_MISS));
    // A sort whose records exceed half the sorts' budget spills them: written and read once.
    let half = sorts_bytes as f64 / 2.0;
    let spill = |bytes: f64| {
        if bytes > half {
            2.0 * bytes / DISK_BW
        } else {
            0.0
        }
    };
    let block_bytes = if p.total_blocks > 0 {
        p.segment_bytes as f64 / p.total_blocks as f64
    } else {
        0.0
    };
    let block = block_bytes * ((1.0 - p.mem_miss) / MAP_BW + p.mem_miss / DISK_BW);
    p.cost_join = p.join_records * (C_SORT + segs * C_SEEK)
        + spill(p.join_records * 16.0)
        + p.blocks * block
        + p.join_surviving * C_JOIN_LOOKUP
        + p.join_candidate_records * C_SORT
        + spill(p.join_candidate_records * 8.0)
        + p.join_candidates * verify
        + p.ranked_records
            * (cached * cmiss * C_MAP_JOIN_CACHED_MISS + (1.0 - cached) * umiss * C_MAP_JOIN_MISS);
    p.choice = if p.cost_probe <= p.cost_join {
        Matching::Probe
    } else {
        Matching::Join
    };
}

impl std::str::FromStr for Matching {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Matching::Auto),
            "join" => Ok(Matching::Join),
            "probe" => Ok(Matching::Probe),
            "prefix" => Ok(Matching::Prefix),
            _ => Err(Error::InvalidArgument(format!(
                "unknown matching `{s}` (expected auto, join, probe or prefix)"
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

/// Per segment of `view`: whether the key cache of an operation with budget `mem` may hold
/// its POSTINGS keys (format 3, 8 bytes a key), the segments taken in view order while the
/// share ([`crate::segment::key_cache_share`]) lasts, as the caches load whole or not at all.
fn key_cached_segments(view: &View, mem: u64) -> Vec<bool> {
    let mut left = crate::segment::key_cache_share(mem);
    view.segments
        .iter()
        .map(|s| {
            let bytes = s
                .seg
                .table_meta(crate::segment::POSTINGS)
                .map_or(u64::MAX, |t| t.entries.saturating_mul(8));
            let fits = s.seg.ranked_forward() && bytes <= left;
            if fits {
                left -= bytes;
            }
            fits
        })
        .collect()
}

/// How many of `docs` (at least one) have lists of at most `max` entries in all.
pub(super) fn listed_prefix(view: &View, docs: &[u32], max: u64) -> usize {
    let mut n = 0u64;
    let mut k = 0;
    while k < docs.len() {
        n += view.size(docs[k]) as u64;
        if k > 0 && n > max {
            break;
        }
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    const LLC: u64 = 32 << 20;
    const RAM: u64 = 6 << 30;

    /// The counts the planner estimated for `pairs --threshold 0.8` on the 300k generated
    /// index (three segments of 540 MB; BENCHMARKS.md), the run where probe cost 4x the join.
    fn big_index() -> MatchPlan {
        MatchPlan {
            docs: 300_000,
            segments: 3,
            probe_keys: 21.7e6,
            surviving: 33.4e6,
            join_records: 21.7e6,
            join_surviving: 33.4e6,
            blocks: 7_839.0,
            total_blocks: 22_337,
            segment_bytes: 1_619_540_409,
            probe_bytes: 290e6,
            postings: 50.7e6,
            candidates: 230e3,
            join_candidate_records: 12.3e6,
            join_candidates: 942e3,
            ..Default::default()
        }
    }

    /// Big segments, lookups ranging over 9x the cache: join, by far, at any budget.
    #[test]
    fn big_segments_price_join() {
        for mem in [RAM, 512 << 20, 64 << 20] {
            let mut p = big_index();
            price(&mut p, mem, mem, LLC);
            assert_eq!(p.choice, Matching::Join, "{p:?}");
            assert!(p.cost_probe > 2.0 * p.cost_join, "{p:?}");
            assert!(p.llc_miss > 0.8, "{p:?}");
        }
    }

    /// The probe's price follows the bytes its random accesses range over: the same counts
    /// cost more once they exceed the cache, and the join's price does not change.
    #[test]
    fn probe_lookups_cost_more_beyond_the_cache() {
        let mut small = big_index();
        small.probe_bytes = (LLC / 2) as f64;
        price(&mut small, RAM, RAM, LLC);
        let mut big = big_index();
        price(&mut big, RAM, RAM, LLC);
        assert_eq!(small.llc_miss, 0.0);
        assert!(big.cost_probe > 1.5 * small.cost_probe, "{small:?} {big:?}");
        assert_eq!(big.cost_join, small.cost_join);
        // A bigger cache makes the same lookups cheaper.
        let mut roomy = big_index();
        price(&mut roomy, RAM, RAM, 1 << 30);
        assert!(roomy.cost_probe < big.cost_probe && roomy.llc_miss == 0.0);
    }

    /// A few probe keys against the big index (a small batch of fresh pages): each lookup is a
    /// cache miss, but the join would read a block for nearly each of them: probe.
    #[test]
    fn few_probe_keys_on_a_big_index_price_probe() {
        let mut p = MatchPlan {
            docs: 50,
            segments: 4,
            probe_keys: 3_600.0,
            surviving: 4_000.0,
            join_records: 3_600.0,
            join_surviving: 4_000.0,
            blocks: 3_200.0,
            total_blocks: 23_194,
            segment_bytes: 1_677_964_125,
            probe_bytes: 195e6,
            postings: 6_000.0,
            candidates: 5.0,
            join_candidate_records: 1_500.0,
            join_candidates: 80.0,
            ..Default::default()
        };
        price(&mut p, RAM, RAM, LLC);
        assert_eq!(p.choice, Matching::Probe, "{p:?}");
        assert!(p.cost_join > 5.0 * p.cost_probe, "{p:?}");
    }

    /// llvm-docs' counts (one segment of 3,228 pages, T = 0.8) without the candidates.
    fn llvm_docs_counts() -> MatchPlan {
        MatchPlan {
            docs: 3_228,
            segments: 1,
            probe_keys: 491e3,
            surviving: 491e3,
            join_records: 491e3,
            join_surviving: 491e3,
            blocks: 350.0,
            total_blocks: 350,
            segment_bytes: 33_250_642,
            probe_bytes: 12.7e6,
            postings: 4.36e6,
            join_candidate_records: 1.89e6,
            ..Default::default()
        }
    }

    /// An index in cache (llvm-docs' counts): lookups and checks at their in-cache price,
    /// probe a little cheaper; the join's many candidate records are what it pays for.
    #[test]
    fn an_index_in_cache_prices_probe() {
        let mut p = MatchPlan {
            candidates: 29e3,
            join_candidates: 192e3,
            ..llvm_docs_counts()
        };
        price(&mut p, RAM, RAM, LLC);
        assert_eq!((p.llc_miss, p.mem_miss, p.verify_miss), (0.0, 0.0, 0.0));
        assert_eq!(p.choice, Matching::Probe, "{p:?}");
        assert!(p.cost_join < 2.0 * p.cost_probe, "a close call: {p:?}");
        // The join's candidate records multiplied (a low threshold): probe by far.
        p.join_candidate_records *= 20.0;
        price(&mut p, RAM, RAM, LLC);
        assert!(p.cost_join > 3.0 * p.cost_probe, "{p:?}");
    }

    /// An index beyond the budget: a share of the probe's lookups read from disk, the join's
    /// blocks read sequentially; and a join whose sorts spill pays their bytes twice.
    #[test]
    fn budget_below_the_index_prices_disk_reads() {
        let mut p = llvm_docs_counts();
        price(&mut p, 4 << 10, 4 << 10, LLC);
        assert!(p.mem_miss > 0.99, "{p:?}");
        assert_eq!(p.choice, Matching::Join, "{p:?}");
        let spilled = p.cost_join;
        price(&mut p, 4 << 10, RAM, LLC);
        assert!(p.cost_join < spilled, "sorts in memory cost less: {p:?}");
    }

    /// Format 3's rank mapping: the big index's counts with every prober ranked. Mapping
    /// by selects in POSTINGS blocks beyond the cache costs the probe (every feature) more
    /// than the join (its records), more than through key caches; key caches that fit the
    /// cache cost nothing more; format 2's counts (nothing ranked) keep their prices.
    #[test]
    fn format_3_mapping_is_priced() {
        let mut f2 = big_index();
        price(&mut f2, RAM, RAM, LLC);
        let ranked = |cached: f64, cached_key_bytes: u64, uncached_postings_bytes: u64| {
            let mut p = MatchPlan {
                ranked_features: 105e6,
                ranked_records: 21.7e6,
                ranked_cached: cached,
                cached_key_bytes,
                uncached_postings_bytes,
                ..big_index()
            };
            price(&mut p, RAM, RAM, LLC);
            p
        };
        let selects = ranked(0.0, 0, 1_200_000_000);
        let caches = ranked(1.0, 600_000_000, 0);
        let in_cache = ranked(1.0, LLC / 2, 0);
        let (dp, dj) = (
            selects.cost_probe - f2.cost_probe,
            selects.cost_join - f2.cost_join,
        );
        assert!(dp > 10.0 && dj > 3.0 && dp > dj, "{dp} {dj}");
        assert!(caches.cost_probe < selects.cost_probe && caches.cost_probe > f2.cost_probe);
        assert!(caches.cost_join < selects.cost_join && caches.cost_join > f2.cost_join);
        assert_eq!(in_cache.cost_probe, f2.cost_probe);
        assert_eq!(in_cache.cost_join, f2.cost_join);
        assert_eq!(selects.choice, Matching::Join);
    }

    #[test]
    fn llc_bytes_is_read() {
        let b = llc_bytes();
        assert!((64 << 10..=(4u64 << 30)).contains(&b), "{b}");
    }
}
