//! ndd-index: a persistent near-duplicate document index.
//!
//! Documents are canonicalized ([`canonicalize`]), fingerprinted ([`fingerprint`]) and stored
//! as immutable memory-mapped [`segment`] files (postings: feature -> doc ids; forward lists:
//! doc -> features) built by an external [`sort`], next to a RocksDB catalog ([`store`]) that
//! holds everything mutable. [`Index`] ties them together: [`Index::ingest`] adds a batch,
//! [`Index::query_document`] searches one document, [`Index::pairs`] finds every similar
//! pair and [`Index::clusters`] lists duplicate clusters; [`ops`] holds these whole operations
//! that every front end (CLI, Python, server) calls. See ARCHITECTURE.md for the whole path.

#[cfg(feature = "rocksdb")]
pub mod batch;
#[cfg(feature = "rocksdb")]
pub mod build;
pub mod canonicalize;
#[cfg(feature = "rocksdb")]
pub mod cluster;
pub mod error;
#[cfg(feature = "rocksdb")]
pub mod eval;
pub mod failpoint;
pub mod fingerprint;
#[cfg(feature = "rocksdb")]
pub mod index;
pub mod input;
#[cfg(feature = "rocksdb")]
pub mod lifecycle;
#[cfg(feature = "rocksdb")]
pub mod method;
#[cfg(feature = "rocksdb")]
pub mod ops;
#[cfg(feature = "rocksdb")]
pub mod options;
#[cfg(feature = "rocksdb")]
pub mod pipeline;
pub mod plot;
#[cfg(feature = "rocksdb")]
pub mod query;
#[cfg(feature = "rocksdb")]
pub mod runs;
pub mod segment;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "rocksdb")]
pub mod sites;
pub mod sort;
#[cfg(feature = "rocksdb")]
pub mod stats;
#[cfg(feature = "rocksdb")]
pub mod store;
/// Without the `rocksdb` feature only the catalog's pure codecs are built (the fuzz targets in
/// tools/fuzz use this, so a sanitizer build does not recompile RocksDB's C++).
#[cfg(not(feature = "rocksdb"))]
pub mod store {
    pub mod manifest;
    pub mod records;
    pub use manifest::{Manifest, SegmentEntry};
    pub use records::DocRecord;
}
pub mod threshold;
#[cfg(feature = "rocksdb")]
pub mod view;

pub use error::{Error, Result};
#[cfg(feature = "rocksdb")]
pub use index::Index;
#[cfg(feature = "rocksdb")]
pub use options::{CreateOptions, IndexOptions};
pub use threshold::Threshold;
