//! Read snapshots. Every query takes the current [`Index`] handle (an `Arc` clone under a lock
//! held only for that clone) and answers from it to the end, so a query never waits for a
//! write: the writer builds the next handle first and then swaps the pointer. An old handle
//! (its segment mappings, its catalog) is released when the last query using it ends.
//!
//! Another process (a nightly `ndd-index ingest`) publishes by writing the catalog; while this
//! server does not hold the writer lock, [`CatalogWatch`] notices that RocksDB's files changed
//! and the server reopens a read-only handle on the new manifest.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use crate::index::{Index, CATALOG_DIR};

/// The current read handle, and a thread that releases replaced ones.
///
/// Releasing a handle is not free: a read-only RocksDB catalog closes, segment files are
/// unmapped, the per-document arrays of a million documents are freed. Whoever drops the last
/// reference pays it, so a query must not be that one: queries give their handle back with
/// [`Snapshots::put_back`], which drops it in place only while it is still the current one
/// (the current pointer holds another reference, so that is never the last) and otherwise
/// sends it to the release thread, as does [`Snapshots::set`] with the handle it replaces.
/// `T` is [`Index`] but for tests.
pub struct Snapshots<T: Send + Sync + 'static = Index> {
    current: RwLock<Arc<T>>,
    release: Mutex<Option<mpsc::Sender<Arc<T>>>>,
}

impl<T: Send + Sync + 'static> Snapshots<T> {
    pub fn new(index: T) -> Self {
        let (tx, rx) = mpsc::channel::<Arc<T>>();
        // Without the thread (cannot spawn) handles are dropped where they are given back.
        let tx = std::thread::Builder::new()
            .name("ndd-snapshot-release".into())
            .spawn(move || {
                while let Ok(old) = rx.recv() {
                    drop(old);
                }
            })
            .ok()
            .map(|_| tx);
        Snapshots {
            current: RwLock::new(Arc::new(index)),
            release: Mutex::new(tx),
        }
    }

    /// The handle to answer one request from.
    pub fn get(&self) -> Arc<T> {
        // A poisoned lock only means a panic elsewhere while swapping a pointer; the Arc
        // inside is whole either way.
        Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Gives back a handle from [`Snapshots::get`] at the end of a request, so that a replaced
    /// snapshot is released on the release thread, never by a query.
    pub fn put_back(&self, snap: Arc<T>) {
        let cur = self.current.read().unwrap_or_else(|p| p.into_inner());
        if Arc::ptr_eq(&cur, &snap) {
            // `cur` keeps it alive while the read lock is held: not the last reference.
            drop(snap);
            drop(cur);
        } else {
            drop(cur);
            self.retire(snap);
        }
    }

    /// Installs a newer handle; the previous one goes to the release thread.
    pub fn set(&self, index: Arc<T>) {
        let old = {
            let mut g = self.current.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *g, index)
        };
        self.retire(old);
    }

    fn retire(&self, old: Arc<T>) {
        let tx = self.release.lock().unwrap_or_else(|p| p.into_inner());
        match tx.as_ref() {
            // The receiver lives as long as `self` (a failed send drops the handle here).
            Some(tx) => {
                let _ = tx.send(old);
            }
            None => drop(old),
        }
    }
}

impl<T: Send + Sync + 'static> Drop for Snapshots<T> {
    fn drop(&mut self) {
        // Ends the release thread once it has released what it was sent.
        self.release
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// A handle that records the thread it was released on.
    struct Handle {
        id: usize,
        released_on: Arc<Mutex<Vec<(usize, String)>>>,
    }

    impl Drop for Handle {
        fn drop(&mut self) {
            let name = std::thread::current().name().unwrap_or("").to_owned();
            self.released_on.lock().unwrap().push((self.id, name));
        }
    }

    #[test]
    fn replaced_snapshots_are_released_on_the_release_thread_never_by_a_query() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let h = |id| Handle {
            id,
            released_on: Arc::clone(&log),
        };
        let snaps = Arc::new(Snapshots::new(h(0)));
        let stop = Arc::new(AtomicUsize::new(0));
        let served = Arc::new(AtomicUsize::new(0));
        // "Queries": take the current handle, hold it a moment, give it back.
        let queries: Vec<_> = (0..4)
            .map(|q| {
                let (snaps, stop, served) =
                    (Arc::clone(&snaps), Arc::clone(&stop), Arc::clone(&served));
                std::thread::Builder::new()
                    .name(format!("query-{q}"))
                    .spawn(move || {
                        let mut last = 0;
                        while stop.load(SeqCst) == 0 {
                            let s = snaps.get();
                            // Handles only move forward.
                            assert!(s.id >= last);
                            last = s.id;
                            std::thread::yield_now();
                            snaps.put_back(s);
                            served.fetch_add(1, SeqCst);
                        }
                    })
                    .unwrap()
            })
            .collect();
        // Swaps while the queries run (each waits for some queries on the current handle).
        for id in 1..=200 {
            let seen = served.load(SeqCst);
            while served.load(SeqCst) < seen + 8 {
                std::thread::yield_now();
            }
            snaps.set(Arc::new(h(id)));
        }
        stop.store(1, SeqCst);
        for q in queries {
            q.join().unwrap();
        }
        assert_eq!(snaps.get().id, 200);
        drop(snaps);
        // The release thread ends once the last sender is gone; the current handle goes with
        // `Snapshots`' own drop (here, the test thread).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while log.lock().unwrap().len() < 201 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let log = log.lock().unwrap();
        let mut ids: Vec<usize> = log.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            (0..=200).collect::<Vec<_>>(),
            "each handle released once"
        );
        for (id, thread) in log.iter() {
            if *id < 200 {
                assert_eq!(
                    thread, "ndd-snapshot-release",
                    "handle {id} released by {thread}"
                );
            } else {
                assert!(
                    !thread.starts_with("query-"),
                    "current handle released by {thread}"
                );
            }
        }
    }
}
