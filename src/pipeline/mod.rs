//! Bulk operations over the index: batch ingest (documents -> sorted postings -> a new
//! segment -> new-vs-old matching -> clusters -> one atomic publish) and all-pairs.

pub mod ingest;
pub mod join;
pub mod pairs;
pub mod spool;

pub use ingest::{DocReport, DocStatus, IngestOptions, IngestSummary, NearDup, Progress};
pub use join::join_pairs;
pub use pairs::{
    all_pairs, collect_pairs, for_each_pair, for_each_pair_block, Matching, Pair, PairsConfig,
    PairsStats,
};
