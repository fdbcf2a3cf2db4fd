//! The integration tests, compiled as one test crate (one binary linking RocksDB once; the
//! layout of ripgrep's tests). Each scenario file is a module here; the shared support (the
//! `TestIndex` harness, synthetic corpora, the shared llvm-docs corpus and its truth) is
//! `crate::common`, the folder tests/common/.
//!
//! Run one file's tests with `cargo test --release --test integration lifecycle_add::`, one
//! test by (part of) its name.
//!
//! Adding a scenario: write `tests/integration/NAME.rs` (start it with a `//!` comment saying
//! what it checks, `use crate::common::*;`) and add `mod NAME;` below. A top-level
//! `tests/NAME.rs` (with `mod common;` and `use common::*;`) also works, but is a binary of
//! its own that links RocksDB again: move it in here (see tests/README.md).

#[path = "../common/mod.rs"]
mod common;

mod adopt;
mod corpus_exact;
mod crash_kill;
mod crash_kill_ops;
mod eval_plot;
mod extract_main;
mod ingest_bad_input;
mod layers;
mod lifecycle_add;
mod lifecycle_concurrent;
mod lifecycle_delete_compact;
mod lifecycle_faults;
mod lifecycle_model;
mod lifecycle_readers;
mod lifecycle_verify;
mod method_adaptive;
mod method_idf_simhash;
mod method_imatch_lexicons;
mod method_imatch_reference;
mod method_mega_csim;
mod method_properties;
mod pipeline_incremental;
mod pipeline_max_df;
mod runs;
mod segment_format;
mod serve;
mod sites_henzinger;
mod stored_pairs;
