//! `verify`: checks every byte an index stores against its checksums and every cross-reference
//! between the catalog and the segments, and reports each problem with the file (or catalog
//! entry) and the byte offset where it was found.
//!
//! It opens the catalog and the segments itself instead of through `Index::open`, because a
//! damaged segment must be reported, not make the open fail.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use roaring::RoaringBitmap;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::index::{CATALOG_DIR, SEGMENTS_DIR};
use crate::segment::{self, Segment};
use crate::store::records::BatchRecord;
use crate::store::records::{decode_u32, parse_doc_key};
use crate::store::{
    Access, Catalog, DocRecord, Manifest, CF_CLUSTERS, CF_DIGESTS, CF_KEYS, META_OPTIONS,
};
use crate::view::{FREQUENT_DF, FREQUENT_TABLE};

/// One problem: where (a file path, or `catalog:<cf>/<entry>`), at which byte offset when the
/// place is a file region, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IndexProblem {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    pub reason: String,
}

impl std::fmt::Display for IndexProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{}: offset {o}: {}", self.file, self.reason),
            None => write!(f, "{}: {}", self.file, self.reason),
        }
    }
}

/// What `verify` checked and the problems it found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IndexVerifyReport {
    pub segments: usize,
    pub blocks: u64,
    pub entries: u64,
    pub segment_bytes: u64,
    pub documents: u64,
    pub live_documents: u64,
    /// Documents in the delta (online adds not folded yet).
    pub delta_documents: u64,
    /// Entries of the stored pairs (format-spec/rocksdb.md, "`pairs`: stored pairs").
    pub stored_pairs: u64,
    pub problems: Vec<IndexProblem>,
}

impl IndexVerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
    fn at(&mut self, file: impl Into<String>, offset: Option<u64>, reason: impl Into<String>) {
        self.problems.push(IndexProblem {
            file: file.into(),
            offset,
            reason: reason.into(),
        });
    }
    fn catalog(&mut self, entry: impl std::fmt::Display, reason: impl Into<String>) {
        self.at(format!("catalog:{entry}"), None, reason);
    }
    fn error(&mut self, e: &Error) {
        match e {
            Error::CorruptEntry { what, reason } => self.catalog(what, reason.clone()),
            Error::ChecksumMismatch { path, offset, .. }
            | Error::Corrupt { path, offset, .. }
            | Error::BadMagic { path, offset, .. } => {
                self.at(path.display().to_string(), Some(*offset), e.to_string())
            }
            other => self.catalog("", other.to_string()),
        }
    }
}

/// Where each document's forward list was found: segment index and feature count.
type ForwardMap = HashMap<u32, (usize, u32)>;

/// Checks the index at `dir`. `Err` only when `dir` is not an index at all; every kind of
/// damage is a problem in the report.
pub fn verify_index(dir: &Path) -> Result<IndexVerifyReport> {
    if !dir.join(CATALOG_DIR).join("CURRENT").exists() {
        return Err(Error::NotAnIndex {
            path: dir.to_owned(),
        });
    }
    let mut r = IndexVerifyReport::default();
    let catalog = match Catalog::open(&dir.join(CATALOG_DIR), Access::ReadOnly) {
        Ok(c) => c,
        Err(e) => {
            r.catalog("", format!("cannot open the catalog: {e}"));
            return Ok(r);
        }
    };
    if let Err(e) = catalog.meta_json::<serde_json::Value>(META_OPTIONS) {
        r.error(&e);
    }
    let next_doc = catalog.next_doc().unwrap_or_else(|e| {
        r.error(&e);
        u32::MAX
    });
    let tombstones = catalog.tombstones().unwrap_or_else(|e| {
        r.error(&e);
        RoaringBitmap::new()
    });
    let mut docs: BTreeMap<u32, DocRecord> = BTreeMap::new();
    // Records at or above next_doc are staged by a batch not published (rocksdb.md, "Staged
    // entries"): not part of the index, not listed, removed by the next writer.
    for item in catalog.iter_docs() {
        match item {
            Ok((d, rec)) => {
                docs.insert(d, rec);
            }
            Err(e) => r.error(&e),
        }
    }
    r.documents = docs.len() as u64;
    r.live_documents = docs.keys().filter(|d| !tombstones.contains(**d)).count() as u64;
    for t in &tombstones {
        if !docs.contains_key(&t) {
            r.catalog(format!("tombstones/{t}"), "no such document");
        }
    }

    let mut forward = match catalog.manifest() {
        Ok(m) => check_segments(dir, &m, next_doc, &mut r),
        Err(e) => {
            r.error(&e);
            None
        }
    };
    check_delta(&catalog, &docs, next_doc, forward.as_mut(), &mut r);
    if let Some(fwd) = &forward {
        for (&d, rec) in &docs {
            match fwd.get(&d) {
                None if !tombstones.contains(d) => r.catalog(
                    format!("docs/{d}"),
                    format!(
                        "live document {} has no forward list in any segment",
                        rec.key
                    ),
                ),
                Some(&(_, n)) if n != rec.features => r.catalog(
                    format!("docs/{d}"),
                    format!(
                        "record says {} features, forward list has {n}",
                        rec.features
                    ),
                ),
                _ => {}
            }
        }
        for &d in fwd.keys() {
            if !docs.contains_key(&d) {
                r.catalog(
                    format!("docs/{d}"),
                    "forward list of a document with no record",
                );
            }
        }
    }
    check_pairs(&catalog, &docs, next_doc, &mut r);
    check_keys_and_digests(&catalog, &docs, &tombstones, &mut r);
    check_clusters(&catalog, next_doc, &mut r);
    match catalog.batches::<BatchRecord>() {
        Ok(batches) => {
            for (id, b) in batches {
                if b.doc_lo > b.doc_hi || b.doc_hi > next_doc {
                    r.catalog(format!("batches/{id}"), "doc range beyond next_doc");
                }
                match catalog.batch_by_name(&b.name) {
                    Ok(Some(x)) if x == id => {}
                    _ => r.catalog(
                        format!("batches/name/{}", b.name),
                        "does not name batch {id}",
                    ),
                }
            }
        }
        Err(e) => r.error(&e),
    }
    Ok(r)
}

/// Checks each segment of the manifest (existence, size, every block, postings against the
/// forward table, frequent keys). Returns where each document's forward list is, or None when
/// the manifest itself is unusable.
/// The delta (online adds): every entry decodes, has a catalog record and an id below
/// `next_doc`, and no segment holds the same document; its forward lists join `fwd` so the
/// catalog-vs-forward checks cover delta documents too.
fn check_delta(
    catalog: &Catalog,
    docs: &BTreeMap<u32, DocRecord>,
    next_doc: u32,
    fwd: Option<&mut ForwardMap>,
    r: &mut IndexVerifyReport,
) {
    let delta = match catalog.delta_docs() {
        Ok(d) => d,
        Err(e) => {
            r.error(&e);
            return;
        }
    };
    r.delta_documents = delta.len() as u64;
    let mut fwd = fwd;
    for (d, dd) in &delta {
        if !docs.contains_key(d) {
            r.catalog(
                format!("delta/{d}"),
                "delta document with no catalog record",
            );
        }
        if *d >= next_doc {
            r.catalog(format!("delta/{d}"), format!("id >= next_doc {next_doc}"));
        }
        if let Some(f) = fwd.as_deref_mut() {
            if f.contains_key(d) {
                r.catalog(
                    format!("delta/{d}"),
                    "document both in the delta and in a segment",
                );
            }
            f.insert(*d, (usize::MAX, dd.features.len() as u32));
        }
    }
}

/// The stored pairs: every entry decodes (8-byte key, older < younger, two varints with
/// 0 < denom and inter <= denom), keys ascend, both documents have a catalog record below
/// `next_doc` (live or tombstoned: pairs of deleted documents stay, skipped when read), and
/// with the marker each resemblance reaches the marker's threshold.
fn check_pairs(
    catalog: &Catalog,
    docs: &BTreeMap<u32, DocRecord>,
    next_doc: u32,
    r: &mut IndexVerifyReport,
) {
    let marker = match catalog.pairs_marker() {
        Ok(m) => m,
        Err(e) => {
            r.error(&e);
            None
        }
    };
    let threshold = match marker.map(|m| m.threshold.parse::<crate::threshold::Threshold>()) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            r.catalog("meta/pairs", format!("threshold: {e}"));
            None
        }
        None => None,
    };
    let mut last: Option<(u32, u32)> = None;
    for item in catalog.iter_pairs_raw() {
        let p = match item.and_then(|(k, v)| crate::store::pairs::decode_pair(&k, &v)) {
            Ok(p) => p,
            Err(e) => {
                r.error(&e);
                continue;
            }
        };
        r.stored_pairs += 1;
        let what = format!("pairs/{}-{}", p.a, p.b);
        if last.is_some_and(|l| l >= (p.a, p.b)) {
            r.catalog(&what, "pairs out of order");
        }
        last = Some((p.a, p.b));
        if p.b >= next_doc {
            r.catalog(&what, format!("id >= next_doc {next_doc}"));
        } else {
            for d in [p.a, p.b] {
                if !docs.contains_key(&d) {
                    r.catalog(&what, format!("document {d} has no catalog record"));
                }
            }
        }
        if let Some(t) = threshold {
            if !t.admits(p.inter, p.denom) {
                r.catalog(
                    &what,
                    format!(
                        "resemblance {}/{} below the stored threshold",
                        p.inter, p.denom
                    ),
                );
            }
        }
    }
}

fn check_segments(
    dir: &Path,
    m: &Manifest,
    next_doc: u32,
    r: &mut IndexVerifyReport,
) -> Option<ForwardMap> {
    let mut fwd: ForwardMap = HashMap::new();
    let mut ids = HashSet::new();
    for (si, e) in m.segments.iter().enumerate() {
        r.segments += 1;
        let path = dir.join(SEGMENTS_DIR).join(&e.file);
        let name = path.display().to_string();
        if !ids.insert(e.id) || e.file != Manifest::file_name(e.id) {
            r.catalog(
                "meta/manifest",
                format!("segment id {} repeated or misnamed", e.id),
            );
        }
        let len = match std::fs::metadata(&path) {
            Ok(md) => md.len(),
            Err(err) => {
                r.at(&name, None, format!("segment named by the manifest: {err}"));
                continue;
            }
        };
        if len != e.bytes {
            r.at(
                &name,
                None,
                format!("file is {len} bytes, the manifest says {}", e.bytes),
            );
            continue;
        }
        let rep = match Segment::verify_file(&path) {
            Ok(rep) => rep,
            Err(err) => {
                r.at(&name, None, err.to_string());
                continue;
            }
        };
        r.blocks += rep.blocks;
        r.entries += rep.entries;
        r.segment_bytes += rep.bytes;
        if !rep.is_ok() {
            for p in rep.problems {
                r.at(&name, Some(p.offset), p.reason);
            }
            continue; // its tables cannot be trusted for the cross checks
        }
        // The file passed every crc: reading it below cannot fail on damage.
        let seg = match Segment::open(&path) {
            Ok(s) => s,
            Err(err) => {
                r.error(&err);
                continue;
            }
        };
        if let Err(err) = check_tables(&seg, si, e, next_doc, &mut fwd, r) {
            r.error(&err);
        }
    }
    Some(fwd)
}

fn check_tables(
    seg: &Segment,
    si: usize,
    e: &crate::store::SegmentEntry,
    next_doc: u32,
    fwd: &mut ForwardMap,
    r: &mut IndexVerifyReport,
) -> Result<()> {
    let name = seg.path().display().to_string();
    let mut mine = RoaringBitmap::new();
    for item in seg.iter(segment::FORWARD) {
        let (key, v) = item?;
        let n = seg.decode_u64s(v)?.len() as u32;
        if key < e.doc_lo as u64 || key >= e.doc_hi as u64 || key >= next_doc as u64 {
            r.at(
                &name,
                None,
                format!(
                    "forward doc {key} outside [{}, {}) or >= next_doc",
                    e.doc_lo, e.doc_hi
                ),
            );
            continue;
        }
        let d = key as u32;
        mine.insert(d);
        if fwd.insert(d, (si, n)).is_some() {
            r.at(
                &name,
                None,
                format!("doc {d} has forward lists in two segments"),
            );
        }
    }
    let (mut keys, mut postings) = (0u64, 0u64);
    let mut frequent: HashMap<u64, u32> = HashMap::new();
    for item in seg.iter(segment::POSTINGS) {
        let (key, v) = item?;
        let list = segment::decode_postings(v)?;
        keys += 1;
        postings += list.len() as u64;
        if list.is_empty() {
            r.at(
                &name,
                None,
                format!("posting key {key:#018x} has no documents"),
            );
        }
        let mut bad = None;
        list.for_each(|d| {
            if !mine.contains(d) && bad.is_none() {
                bad = Some(d);
            }
        });
        if let Some(d) = bad {
            r.at(&name, None, format!("posting key {key:#018x} lists doc {d}, which has no forward list in this segment"));
        }
        if list.len() as u32 > FREQUENT_DF {
            frequent.insert(key, list.len() as u32);
        }
    }
    if keys != e.keys || postings != e.postings {
        r.at(
            &name,
            None,
            format!(
                "{keys} keys / {postings} postings, the manifest says {} / {}",
                e.keys, e.postings
            ),
        );
    }
    let mut listed = 0usize;
    for item in seg.iter(FREQUENT_TABLE) {
        let (key, v) = item?;
        listed += 1;
        let df = <[u8; 4]>::try_from(v).map(u32::from_le_bytes).ok();
        if df.is_none() || frequent.get(&key) != df.as_ref() {
            r.at(
                &name,
                None,
                format!("frequent key {key:#018x}: df {df:?} disagrees with its posting list"),
            );
        }
    }
    if listed != frequent.len() {
        r.at(
            &name,
            None,
            format!(
                "{} keys have df > {FREQUENT_DF}, the frequent table lists {listed}",
                frequent.len()
            ),
        );
    }
    Ok(())
}

fn check_keys_and_digests(
    catalog: &Catalog,
    docs: &BTreeMap<u32, DocRecord>,
    tombstones: &RoaringBitmap,
    r: &mut IndexVerifyReport,
) {
    let mut key_doc: HashMap<String, u32> = HashMap::new();
    for item in catalog.iter_raw(CF_KEYS) {
        let (k, v) = match item {
            Ok(kv) => kv,
            Err(e) => return r.error(&e),
        };
        let key = String::from_utf8_lossy(&k).into_owned();
        let what = format!("keys/{key}");
        let d = match decode_u32(&what, &v) {
            Ok(d) => d,
            Err(e) => {
                r.error(&e);
                continue;
            }
        };
        if d >= catalog.published() {
            continue; // staged by a batch not published (rocksdb.md, "Staged entries")
        }
        match docs.get(&d) {
            None => r.catalog(&what, format!("names doc {d}, which has no record")),
            Some(_) if tombstones.contains(d) => r.catalog(&what, format!("names deleted doc {d}")),
            Some(rec) if rec.key != key => r.catalog(&what, format!("doc {d} has key {}", rec.key)),
            _ => {}
        }
        key_doc.insert(key, d);
    }
    for (&d, rec) in docs {
        if !tombstones.contains(d) && key_doc.get(&rec.key) != Some(&d) {
            r.catalog(
                format!("keys/{}", rec.key),
                format!("does not name live doc {d}"),
            );
        }
    }
    for item in catalog.iter_raw(CF_DIGESTS) {
        let (k, v) = match item {
            Ok(kv) => kv,
            Err(e) => return r.error(&e),
        };
        let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
        let what = format!("digests/{hex}");
        match decode_u32(&what, &v) {
            Err(e) => r.error(&e),
            Ok(d) if d >= catalog.published() => {} // staged, not published
            Ok(d) => match docs.get(&d) {
                Some(rec) if !tombstones.contains(d) && rec.digest[..] == k[..] => {}
                _ => r.catalog(
                    &what,
                    format!("doc {d} is not a live document with this digest"),
                ),
            },
        }
    }
}

fn check_clusters(catalog: &Catalog, next_doc: u32, r: &mut IndexVerifyReport) {
    let mut cluster_of: HashMap<u32, u32> = HashMap::new();
    for item in catalog.iter_raw(CF_CLUSTERS) {
        let parsed = item.and_then(|(k, v)| {
            let d = parse_doc_key(&k)?;
            Ok((d, decode_u32(&format!("clusters/{d}"), &v)?))
        });
        match parsed {
            Ok((d, c)) => {
                if d >= next_doc {
                    r.catalog(format!("clusters/{d}"), "doc id >= next_doc");
                }
                cluster_of.insert(d, c);
            }
            Err(e) => r.error(&e),
        }
    }
    let mut in_members: HashSet<u32> = HashSet::new();
    for item in catalog.iter_members() {
        let (c, m) = match item {
            Ok(x) => x,
            Err(e) => {
                r.error(&e);
                continue;
            }
        };
        if m.len() < 2 || m.min() != Some(c) {
            r.catalog(
                format!("members/{c}"),
                format!(
                    "{} members, smallest {:?}: not a cluster keyed by its oldest member",
                    m.len(),
                    m.min()
                ),
            );
        }
        for d in &m {
            in_members.insert(d);
            if cluster_of.get(&d) != Some(&c) {
                r.catalog(
                    format!("members/{c}"),
                    format!("member {d} has cluster {:?}", cluster_of.get(&d)),
                );
            }
        }
    }
    for (d, c) in cluster_of {
        if !in_members.contains(&d) {
            r.catalog(
                format!("clusters/{d}"),
                format!("cluster {c} does not list it as a member"),
            );
        }
    }
}
