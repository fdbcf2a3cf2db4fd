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
    /// Join pipeline only: run files its three sorts spilled (0 = everything fit in memory).
    pub runs_spilled: u64,
    /// The matching that ran (`auto` resolved), when chosen through [`for_each_pair`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matching: Option<Matching>,
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
}

/// Default and largest block of probing documents.
pub const BLOCK_DOCS: u32 = 4096;
/// Smallest block (below this, rayon has too little to share).
pub(crate) const MIN_BLOCK_DOCS: u32 = 64;

impl PairsConfig {
    pub fn new(sample: Sample, threshold: Threshold) -> Self {
        PairsConfig {
            sample,
            threshold,
            max_df: None,
            buffer_bytes: 64 << 20,
            block_docs: BLOCK_DOCS,
        }
    }
}

/// How matching reads the postings: all give the same pairs (tests check this).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Matching {
    /// `Probe` when the live segments fit in the memory budget (random lookups then hit
    /// memory and avoid three sorts), else `Join`: the planner's choice between an index
    /// nested-loop and a sort-merge join.
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
    /// `Auto` resolved against a view and a memory budget; the others as they are.
    pub fn resolve(self, view: &View, mem_bytes: u64) -> Matching {
        match self {
            Matching::Auto => {
                let bytes: u64 = view.segments.iter().map(|s| s.entry.bytes).sum();
                if bytes <= mem_bytes {
                    Matching::Probe
                } else {
                    Matching::Join
                }
            }
            m => m,
        }
    }
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
