//! Lifecycle of an index after ingest: deleting documents, compacting segments and verifying
//! everything stored (format-spec/manifest.md, format-spec/rocksdb.md).
//!
//! Each operation is a library call; the CLI only parses arguments and prints.

pub mod add;
pub mod adopt;
pub mod compact;
pub mod delete;
pub mod fold;
pub mod policy;
pub mod stage;
pub mod verify;

pub use adopt::{AdoptOptions, AdoptSummary};
pub use compact::{build_merge, CompactSummary, PreparedMerge};
pub use delete::{DeleteSelector, DeleteSummary};
pub use policy::{choose, MergePolicy, SegmentInfo};
pub use stage::{PartWriter, StagedPart, StagingManifest};
pub use verify::{verify_index, IndexProblem, IndexVerifyReport};
