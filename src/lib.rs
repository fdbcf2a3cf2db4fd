//! ndd-index: a persistent near-duplicate document index.
//!
//! Documents are canonicalized ([`canonicalize`]), fingerprinted ([`fingerprint`]) and stored
//! as immutable memory-mapped [`segment`] files (postings: feature -> doc ids; forward lists:
//! doc -> features) built by an external [`sort`], next to a RocksDB catalog ([`store`]) that
//! holds everything mutable. [`Index`] ties them together: [`Index::ingest`] adds a batch,
//! [`Index::query_document`] searches one document, [`pipeline::all_pairs`] finds every similar
//! pair and [`cluster`] keeps duplicate clusters. See ARCHITECTURE.md for the whole path.

pub mod canonicalize;
pub mod cluster;
pub mod error;
pub mod fingerprint;
pub mod index;
pub mod input;
pub mod lifecycle;
pub mod method;
pub mod options;
pub mod pipeline;
pub mod query;
pub mod segment;
pub mod sort;
pub mod stats;
pub mod store;
pub mod threshold;
pub mod view;

pub use error::{Error, Result};
pub use index::Index;
pub use options::{CreateOptions, IndexOptions};
pub use threshold::Threshold;
