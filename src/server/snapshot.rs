//! Read snapshots. Every query takes the current [`Index`] handle (an `Arc` clone under a lock
//! held only for that clone) and answers from it to the end, so a query never waits for a
//! write: the writer builds the next handle first and then swaps the pointer. An old handle
//! (its segment mappings, its catalog) is released when the last query using it ends.
//!
//! Another process (a nightly `ndd-index ingest`) publishes by writing the catalog; while this
//! server does not hold the writer lock, [`CatalogWatch`] notices that RocksDB's files changed
//! and the server reopens a read-only handle on the new manifest.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use crate::index::{Index, CATALOG_DIR};

/// The current read handle.
pub struct Snapshots {
    current: RwLock<Arc<Index>>,
}

impl Snapshots {
    pub fn new(index: Index) -> Self {
        Snapshots {
            current: RwLock::new(Arc::new(index)),
        }
    }

    /// The handle to answer one request from.
    pub fn get(&self) -> Arc<Index> {
        // A poisoned lock only means a panic elsewhere while swapping a pointer; the Arc
        // inside is whole either way.
        Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Installs a newer handle; returns the previous one.
    pub fn set(&self, index: Arc<Index>) -> Arc<Index> {
        let mut g = self.current.write().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *g, index)
    }
}

/// A cheap fingerprint of the catalog directory: names, sizes and modification times of
/// RocksDB's files. Any committed write changes the WAL or the MANIFEST, so an unchanged
/// fingerprint means an unchanged catalog.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CatalogWatch {
    files: Vec<(String, u64, Option<SystemTime>)>,
}

impl CatalogWatch {
    pub fn read(index_dir: &Path) -> CatalogWatch {
        let dir: PathBuf = index_dir.join(CATALOG_DIR);
        let mut files: Vec<(String, u64, Option<SystemTime>)> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                let name = e.file_name().to_string_lossy().into_owned();
                // RocksDB's info LOG changes without any data change.
                if name.starts_with("LOG") {
                    return None;
                }
                Some((name, m.len(), m.modified().ok()))
            })
            .collect();
        files.sort();
        CatalogWatch { files }
    }
}
