//! The delta (online adds, `store::delta`) as a segment: the fold publishes it
//! (`lifecycle::fold`), an add matches its documents in it, and a read snapshot maps it as
//! one more segment (`View`), so every query path reads delta documents exactly as it will
//! read them once folded.
//!
//! A delta document carries everything its segment stores, computed when it was added
//! (`store::delta::DeltaDoc`): features, the SIMHASH tables' value, supershingles, 384-bit
//! simhash and I-Match signatures; its megashingles are derived from its supershingles here,
//! as ingest derives them (`method::writer`). So this needs neither the catalog nor the methods' code:
//! it writes the same tables, in the same order, as ingest (`method::writer::MethodWriter`)
//! for the enabled methods.
//!
//! Memory: the documents' `(feature, doc)` pairs, sorted in memory -- the delta is small by
//! construction (`add --fold-docs`).

use std::path::Path;

use crate::error::Result;
use crate::fingerprint::minhash::megashingles;
use crate::options::methods::MethodOptions;
use crate::segment::{self, Segment};
use crate::sort::KeyDoc;
use crate::store::delta::DeltaDoc;
use crate::store::SegmentEntry;

use super::{BuiltSegment, SegmentBuilder};

/// Writes `docs` (sorted by id, unique) with `b` and finishes it: FORWARD, POSTINGS,
/// FREQUENT and the tables of the methods `methods` enables. The manifest entry is
/// `built.entry(id, ..)` with [`doc_range`].
pub fn write(
    mut b: SegmentBuilder,
    docs: &[(u32, DeltaDoc)],
    methods: &MethodOptions,
) -> Result<BuiltSegment> {
    let mut pairs: Vec<(u64, u32)> = Vec::new();
    for (doc, d) in docs {
        b.forward(*doc, &d.features)?;
        pairs.extend(d.features.iter().map(|&f| (f, *doc)));
    }
    pairs.sort_unstable();
    b.postings_from_sorted(pairs.into_iter().map(|(key, doc)| Ok(KeyDoc { key, doc })))?;
    // The method tables, in MethodWriter's order; documents without words are in none.
    let with_words = || docs.iter().filter(|(_, d)| d.has_words);
    if methods.simhash.is_some() {
        let hashes: Vec<(u32, u64)> = with_words().map(|(doc, d)| (*doc, d.simhash)).collect();
        b.simhash_tables(&methods.simhash_tables()?, &hashes)?;
    }
    if methods.dsc.is_some() {
        let supers = keyed(docs, |d| &d.supers);
        b.postings_table(segment::SUPERSHINGLES, &supers)?;
    }
    if methods.dsc.is_some_and(|d| d.megashingles) {
        // Derived from the stored supershingles, as `MethodWriter` derives them at ingest.
        let mut megas: Vec<(u64, u32)> = with_words()
            .flat_map(|(doc, d)| megashingles(&d.supers).into_iter().map(move |m| (m, *doc)))
            .collect();
        megas.sort_unstable();
        b.postings_table(segment::MEGASHINGLES, &megas)?;
    }
    if methods.sim384 {
        let sims: Vec<(u32, [u64; 6])> = with_words()
            .filter_map(|(doc, d)| d.sim384.map(|s| (*doc, s)))
            .collect();
        b.sim384_table(&sims)?;
    }
    if methods.imatch.is_some() {
        b.postings_table(segment::IMATCH, &keyed(docs, |d| &d.imatch))?;
    }
    b.finish()
}

/// `(key, doc)` of the keys `keys_of` gives each document with words, sorted.
fn keyed(docs: &[(u32, DeltaDoc)], keys_of: impl Fn(&DeltaDoc) -> &[u64]) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = docs
        .iter()
        .filter(|(_, d)| d.has_words)
        .flat_map(|(doc, d)| keys_of(d).iter().map(move |&k| (k, *doc)))
        .collect();
    v.sort_unstable();
    v
}

/// `[doc_lo, doc_hi)` of a delta segment holding `docs` (sorted by id): its ids need not be
/// contiguous (ingest batches may come between adds).
pub fn doc_range(docs: &[(u32, DeltaDoc)]) -> (u32, u32) {
    (
        docs.first().map_or(0, |d| d.0),
        docs.last().map_or(0, |d| d.0 + 1),
    )
}

/// `docs` as a private segment mapped from a temporary folder that is removed at once (the
/// mapping stays valid), with its manifest entry (id `id`). None for no documents.
pub fn map(
    docs: &[(u32, DeltaDoc)],
    methods: &MethodOptions,
    id: u64,
) -> Result<Option<(SegmentEntry, Segment)>> {
    if docs.is_empty() {
        return Ok(None);
    }
    match map_in(&scratch_dir(), docs, methods, id) {
        // A full or failing memory file system (a small /dev/shm in a container) must not
        // fail the add: the system's temporary directory takes the piece instead.
        Err(_) if std::env::var_os("TMPDIR").is_none() && scratch_dir() != std::env::temp_dir() => {
            map_in(&std::env::temp_dir(), docs, methods, id)
        }
        other => other,
    }
}

fn map_in(
    dir: &Path,
    docs: &[(u32, DeltaDoc)],
    methods: &MethodOptions,
    id: u64,
) -> Result<Option<(SegmentEntry, Segment)>> {
    // A file of its own directly in the scratch directory (no folder per piece: a mkdir
    // and rmdir per merge of the delta's pieces showed in the server's profile), named by
    // process and a counter, removed as soon as it is mapped.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = dir.to_path_buf();
    let name = loop {
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("ndd-delta-{}-{seq}.ndds", std::process::id());
        let taken = |n: &str| dir.join(n).exists();
        if !taken(&name) && !taken(&format!("{name}.tmp")) {
            break name;
        }
    };
    let path = dir.join(&name);
    let written = write_temp(&dir, &name, docs, methods);
    let opened = written.and_then(|mut entry| {
        entry.id = id;
        let seg = Segment::open(&path)?;
        seg.mark_cached(); // just written
        Ok((entry, seg))
    });
    let _ = std::fs::remove_file(&path);
    Ok(Some(opened?))
}

/// Where [`map`] writes its private segments: `$TMPDIR` when set, else `/dev/shm` when it is
/// a writable directory (memory: no file system journal or disk writes for a file that lives
/// a moment: the server writes one per group commit and per merge of the delta's pieces),
/// else the system's temporary directory (which [`map`] also falls back to when writing in
/// /dev/shm fails, e.g. a container's small one is full). Each file is unlinked as soon as it is mapped; only
/// a crash between the two leaves one behind (`ndd-delta-<pid>-<n>.ndds[.tmp]`): the first
/// use in a process removes those of processes no longer running (`/proc/<pid>` absent), in
/// every directory a piece may have been written to ([`stale_sweep_dirs`]).
fn scratch_dir() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = pick_scratch_dir();
        for d in stale_sweep_dirs(&dir) {
            remove_stale_scratch(&d);
        }
        dir
    })
    .clone()
}

/// Where a crashed process may have left scratch files: the scratch directory in use and the
/// system's temporary directory, which [`map`] falls back to (and which an earlier process
/// with `TMPDIR` set, or without a writable /dev/shm, used).
fn stale_sweep_dirs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    let tmp = std::env::temp_dir();
    if tmp != dir {
        dirs.push(tmp);
    }
    let shm = Path::new("/dev/shm");
    if dirs.iter().all(|d| d != shm) && shm.is_dir() {
        dirs.push(shm.to_path_buf());
    }
    dirs
}

fn pick_scratch_dir() -> std::path::PathBuf {
    if std::env::var_os("TMPDIR").is_none() {
        let shm = Path::new("/dev/shm");
        let probe = shm.join(format!("ndd-probe-{}", std::process::id()));
        if std::fs::write(&probe, b"").is_ok() {
            let _ = std::fs::remove_file(&probe);
            return shm.to_path_buf();
        }
    }
    std::env::temp_dir()
}

/// Removes the scratch files [`map`] left in `dir` when a process crashed between writing
/// and unlinking one: those named by a pid that `/proc` does not list (nothing without
/// `/proc`; a live process with a reused pid keeps its name's files).
fn remove_stale_scratch(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("ndd-delta-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Writes `docs` as the private temporary segment `<dir>/<name>` (the folder is the
/// caller's, and so is the file) and returns its manifest entry, with id 0.
pub fn write_temp(
    dir: &Path,
    name: &str,
    docs: &[(u32, DeltaDoc)],
    methods: &MethodOptions,
) -> Result<SegmentEntry> {
    let built = write(SegmentBuilder::temporary(dir, name)?, docs, methods)?;
    let (lo, hi) = doc_range(docs);
    let entry = built.entry(0, lo, hi);
    built.keep();
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first use sweeps the scratch directory in use and the places [`map`] writes
    /// otherwise (the system's temporary directory, /dev/shm), each once.
    #[test]
    fn stale_scratch_is_swept_wherever_pieces_are_written() {
        let used = pick_scratch_dir();
        let dirs = stale_sweep_dirs(&used);
        assert_eq!(dirs[0], used);
        assert!(dirs.contains(&std::env::temp_dir()));
        if Path::new("/dev/shm").is_dir() {
            assert!(dirs.iter().any(|d| d == Path::new("/dev/shm")));
        }
        let mut unique = dirs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), dirs.len());
    }

    /// Scratch files of processes that are gone are removed; this process's and other
    /// files stay.
    #[test]
    fn stale_scratch_files_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let names = [
            "ndd-delta-4000000000-3.ndds".to_string(),
            "ndd-delta-4000000001-0.ndds.tmp".to_string(),
            format!("ndd-delta-{me}-7.ndds"),
            "ndd-delta-x-1.ndds".to_string(),
            "other-file".to_string(),
        ];
        for n in &names {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        remove_stale_scratch(dir.path());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = vec![names[2].clone(), names[3].clone(), names[4].clone()];
        want.sort();
        if Path::new("/proc/self").exists() {
            assert_eq!(left, want);
        }
    }
}
