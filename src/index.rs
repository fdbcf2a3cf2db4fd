//! `Index`: an index directory opened for reading or for writing.
//!
//! Layout of an index directory (format-spec/README.md):
//! ```text
//! DIR/catalog/           RocksDB: documents, keys, batches, clusters, options, manifest
//! DIR/segments/*.ndds    immutable segment files named by the manifest
//! DIR/tmp/               sort runs and unpublished segments (removed on open)
//! DIR/LOCK               held (flock) by the one writer; says who it is
//! ```

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, IoResultExt, Result};
use crate::options::{CreateOptions, IndexOptions};
use crate::store::{Access, Catalog, Manifest, META_OPTIONS};
use crate::view::View;

/// Sub-directory names inside an index directory.
pub const CATALOG_DIR: &str = "catalog";
pub use crate::store::manifest::SEGMENTS_DIR;
pub const TMP_DIR: &str = "tmp";
pub const LOCK_FILE: &str = "LOCK";

/// An open index. Readers and the writer share this type; only a writer (opened with
/// [`Index::open_writer`]) may call the mutating operations.
pub struct Index {
    dir: PathBuf,
    /// Shared with the read handles of [`Index::snapshot`] (RocksDB allows concurrent readers).
    pub(crate) catalog: Arc<Catalog>,
    options: IndexOptions,
    pub(crate) view: Arc<View>,
    lock: Option<File>,
}

impl Index {
    /// Opens an existing index for reading. Readers take no lock: they see the snapshot that
    /// was published when they opened.
    pub fn open(dir: impl AsRef<Path>) -> Result<Index> {
        Index::open_sized(dir.as_ref(), View::load)
    }

    /// [`Index::open`] for a process that answers a few queries and exits (the `query`
    /// command): the view reads a document's size from its FORWARD list when a query needs
    /// it ([`View::load_for_lookups`]) instead of scanning every document record at open.
    /// The same answers; a long-lived reader (a server, a batch) should use `open`.
    pub fn open_for_lookups(dir: impl AsRef<Path>) -> Result<Index> {
        Index::open_sized(dir.as_ref(), View::load_for_lookups)
    }

    fn open_sized(
        dir: &Path,
        load: fn(&Path, &Catalog, &IndexOptions) -> Result<View>,
    ) -> Result<Index> {
        let dir = dir.to_owned();
        if !dir.join(CATALOG_DIR).join("CURRENT").exists() {
            return Err(Error::NotAnIndex { path: dir });
        }
        let mut catalog = Catalog::open(&dir.join(CATALOG_DIR), Access::ReadOnly)?;
        let options: IndexOptions = catalog
            .meta_json(META_OPTIONS)?
            .ok_or_else(|| Error::NotAnIndex { path: dir.clone() })?;
        let view = match load(&dir, &catalog, &options) {
            // A compaction published a new manifest and unlinked a segment between our read of
            // the manifest and the open of the file: the newer snapshot has what we need.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                catalog = Catalog::open(&dir.join(CATALOG_DIR), Access::ReadOnly)?;
                load(&dir, &catalog, &options)?
            }
            other => other?,
        };
        let view = Arc::new(view);
        Ok(Index {
            dir,
            catalog: Arc::new(catalog),
            options,
            view,
            lock: None,
        })
    }

    /// [`Index::open`] for a reader that already holds `prev`, a read handle on an earlier
    /// state of the same directory (a server reopening after another process wrote the
    /// catalog): the catalog is opened afresh, and its view is `prev`'s own (shared, nothing
    /// read) when it shows the same published state ([`View::shows`]: another process's
    /// writes staged for a batch it has not published yet change nothing), else derived from
    /// `prev`'s with [`View::load_since`] (new segments mapped, only the records published
    /// since read) instead of reading every document record. Also returns the segments
    /// mapped anew (for a caller that wants to check their blocks before using the handle).
    pub fn open_since(prev: &Index) -> Result<(Index, Vec<Arc<crate::segment::Segment>>)> {
        let mut attempt = 0;
        loop {
            match Index::try_open_since(prev) {
                // A compaction published a new manifest and unlinked a segment between our
                // read of the manifest and the open of the file (as in `open`): a newer
                // catalog has what we need.
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound && attempt < 3 =>
                {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn try_open_since(prev: &Index) -> Result<(Index, Vec<Arc<crate::segment::Segment>>)> {
        let dir = prev.dir.clone();
        if !dir.join(CATALOG_DIR).join("CURRENT").exists() {
            return Err(Error::NotAnIndex { path: dir });
        }
        let catalog = Catalog::open(&dir.join(CATALOG_DIR), Access::ReadOnly)?;
        let options: IndexOptions = catalog
            .meta_json(META_OPTIONS)?
            .ok_or_else(|| Error::NotAnIndex { path: dir.clone() })?;
        let manifest = catalog.manifest()?;
        let (view, opened) = if prev.view.shows(&catalog, &manifest)? {
            (Arc::clone(&prev.view), Vec::new())
        } else {
            let (v, o) = View::load_since(&prev.view, &dir, &catalog, &options)?;
            (Arc::new(v), o)
        };
        Ok((
            Index {
                dir,
                catalog: Arc::new(catalog),
                options,
                view,
                lock: None,
            },
            opened,
        ))
    }

    /// Opens the index for writing, creating it (with `create`'s options) when absent.
    /// Fails with [`Error::Locked`] when another writer holds the index, and with
    /// [`Error::OptionConflict`] when `create` disagrees with the stored options.
    pub fn open_writer(dir: impl AsRef<Path>, create: &CreateOptions) -> Result<Index> {
        Index::open_writer_reusing(dir, create, None)
    }

    /// [`Index::open_writer`] that takes `reuse` (the view of a read handle on the same
    /// directory, e.g. the server's current snapshot) as its view when it shows exactly the
    /// catalog state the writer opened ([`View::shows`]: same manifest, document ids,
    /// tombstones and delta), instead of loading one: at 1M documents a load reads a million
    /// document records. Anything else (another process published since) loads as usual.
    pub fn open_writer_reusing(
        dir: impl AsRef<Path>,
        create: &CreateOptions,
        reuse: Option<&Arc<View>>,
    ) -> Result<Index> {
        let dir = dir.as_ref().to_owned();
        fs::create_dir_all(&dir).at(&dir)?;
        let lock = acquire_lock(&dir)?;
        for sub in [SEGMENTS_DIR, TMP_DIR] {
            fs::create_dir_all(dir.join(sub)).at(dir.join(sub))?;
        }
        let catalog_dir = dir.join(CATALOG_DIR);
        if !catalog_dir.join("CURRENT").exists() {
            create_catalog(&dir, create)?;
        }
        let catalog = Catalog::open(&catalog_dir, Access::ReadWrite)?;
        let options = match catalog.meta_json::<IndexOptions>(META_OPTIONS)? {
            Some(stored) => {
                stored.check_compatible(create, &dir)?;
                stored
            }
            None => return Err(Error::NotAnIndex { path: dir }),
        };
        let manifest = catalog.manifest()?;
        remove_orphans(&dir, &manifest)?;
        // A batch killed before its publishing write left staged catalog entries behind.
        catalog.discard_staged()?;
        let view = match reuse {
            Some(v) if v.shows(&catalog, &manifest)? => Arc::clone(v),
            _ => Arc::new(View::load(&dir, &catalog, &options)?),
        };
        Ok(Index {
            dir,
            catalog: Arc::new(catalog),
            options,
            view,
            lock: Some(lock),
        })
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The options the index was created with.
    pub fn options(&self) -> &IndexOptions {
        &self.options
    }

    /// The catalog (RocksDB).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The current snapshot of segments, tombstones and per-document sizes.
    pub fn view(&self) -> &Arc<View> {
        &self.view
    }

    /// A read-only handle on the current snapshot: it shares this index's catalog (no RocksDB
    /// open) and its current view (no segment mapping), so it costs two reference counts. It
    /// keeps answering from that view while the writer publishes newer ones; catalog lookups
    /// (keys, clusters of documents) read the shared catalog. Long-running front ends (the
    /// server) take one after each publish instead of reopening the index.
    pub fn snapshot(&self) -> Index {
        Index {
            dir: self.dir.clone(),
            catalog: Arc::clone(&self.catalog),
            options: self.options.clone(),
            view: Arc::clone(&self.view),
            lock: None,
        }
    }

    /// True when opened with [`Index::open_writer`].
    pub fn is_writer(&self) -> bool {
        self.lock.is_some()
    }

    pub(crate) fn require_writer(&self) -> Result<()> {
        if self.is_writer() {
            Ok(())
        } else {
            Err(Error::InvalidArgument("index opened read-only".into()))
        }
    }

    /// Reloads the view after a publish: [`View::load_since`] the current one (the same
    /// snapshot as a full [`View::load`], but the segments kept are shared and only the
    /// document records published since are read: a batch into a 10M-document index no
    /// longer decodes all 10M records again, ~3 s).
    pub(crate) fn reload_view(&mut self) -> Result<()> {
        let (view, _) = View::load_since(&self.view, &self.dir, &self.catalog, &self.options)?;
        self.view = Arc::new(view);
        Ok(())
    }

    /// Path of a segment file.
    pub fn segment_path(&self, file: &str) -> PathBuf {
        self.dir.join(SEGMENTS_DIR).join(file)
    }

    /// The temporary directory (sort runs, unpublished segments).
    pub fn tmp_dir(&self) -> PathBuf {
        self.dir.join(TMP_DIR)
    }
}

/// Creates the catalog of a new index atomically: it is built (column families, options, empty
/// manifest) under `catalog.new`, closed, and renamed to `catalog`, so a crash at any point
/// leaves either no index or a complete empty one. Readers only look at `catalog/CURRENT`.
fn create_catalog(dir: &Path, create: &CreateOptions) -> Result<()> {
    let options = IndexOptions::from_create(create);
    options.fingerprint()?.validate()?; // reject bad values before anything is stored
    options.methods.validate()?;
    if options.cluster_threshold()?.as_f64() <= 0.0 {
        return Err(Error::InvalidArgument(
            "--cluster-threshold must be above 0".into(),
        ));
    }
    let staging = dir.join(format!("{CATALOG_DIR}.new"));
    if staging.exists() {
        fs::remove_dir_all(&staging).at(&staging)?; // a creation that crashed
    }
    {
        let catalog = Catalog::open(&staging, Access::ReadWrite)?;
        let mut b = catalog.batch_writer();
        b.put_meta_json(META_OPTIONS, &options);
        b.put_meta_json(crate::store::META_MANIFEST, &Manifest::new());
        if options.max_df.is_none() {
            // Empty: every pair at the cluster threshold is stored, so far (store::pairs).
            b.put_pairs_marker(&crate::store::pairs::PairsMarker {
                method: "shingle".into(),
                threshold: options.cluster_threshold.clone(),
                sample: options.sample.clone(),
            });
        }
        catalog.commit(b)?;
    }
    let target = dir.join(CATALOG_DIR);
    if target.exists() {
        // Never created by us (we only rename complete catalogs into place): refuse to guess.
        return Err(Error::corrupt(
            &target,
            0,
            "catalog folder without a RocksDB CURRENT file; not touching it",
        ));
    }
    fs::rename(&staging, &target).at(&target)?;
    File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
    Ok(())
}

/// Takes the writer lock, recording who holds it so a second writer can name the holder.
fn acquire_lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .at(&path)?;
    // The lock is flock(2), held by an open file description. A child this process forks
    // (for any reason: a test, a helper tool) holds a copy of that description from fork to
    // exec, close-on-exec or not; a lock we released just before can look held by "us" for
    // that instant. So when the holder named in the file is this very process, retry for up
    // to a second (a second writer in one process is still refused, a second later); any other holder is reported at once.
    let ours = format!("pid {} ", std::process::id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        match f.try_lock() {
            Ok(()) => break,
            Err(fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = f.rewind();
                let _ = f.read_to_string(&mut holder);
                let holder = holder.trim();
                if holder.starts_with(&ours) && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
                let holder = if holder.is_empty() {
                    "unknown process".to_owned()
                } else {
                    holder.to_owned()
                };
                return Err(Error::Locked {
                    path: dir.to_owned(),
                    holder,
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
    let me = format!(
        "pid {} ({})",
        std::process::id(),
        std::env::args()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(200)
            .collect::<String>()
    );
    f.set_len(0).at(&path)?;
    f.rewind().at(&path)?;
    f.write_all(me.as_bytes()).at(&path)?;
    Ok(f)
}

/// Removes what a crashed writer may have left: unpublished segments (not in the manifest),
/// `.tmp` files and sort runs.
fn remove_orphans(dir: &Path, manifest: &Manifest) -> Result<()> {
    let seg_dir = dir.join(SEGMENTS_DIR);
    let live: std::collections::HashSet<&str> =
        manifest.segments.iter().map(|s| s.file.as_str()).collect();
    for e in fs::read_dir(&seg_dir).at(&seg_dir)? {
        let e = e.at(&seg_dir)?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !live.contains(name.as_ref()) {
            fs::remove_file(e.path()).at(e.path())?;
        }
    }
    let tmp = dir.join(TMP_DIR);
    for e in fs::read_dir(&tmp).at(&tmp)? {
        let e = e.at(&tmp)?;
        let p = e.path();
        if p.is_dir() {
            fs::remove_dir_all(&p).at(&p)?;
        } else {
            fs::remove_file(&p).at(&p)?;
        }
    }
    Ok(())
}
