//! `adopt`: publishes a staged corpus (`lifecycle::stage`, format-spec/staging.md) into an
//! index as one batch, in one atomic step.
//!
//! 1. Checks, before anything is touched: the staging manifest (format, version, parts with
//!    consecutive ranges), creation options equal to the index's, the first staged id equal to
//!    the index's next doc id, the batch `adopt-<run>` not there yet (adopting twice), every
//!    part's two files (size, then every crc and block by the segment verifier, FORWARD and
//!    records tables holding exactly the part's ids), each record's feature count against its
//!    forward list, keys unique and not live in the index.
//! 2. Links each staged segment into `DIR/segments/` under the index's next segment ids (a
//!    copy, fsynced, where a hard link is impossible); the staging keeps its files, so a crash
//!    here leaves only unpublished files the next writer removes as orphans, and the same
//!    staging can be adopted again.
//! 3. Clusters at the index's cluster threshold from the engine's own matching of the adopted
//!    documents against the whole index (`for_each_pair`, as `ingest` matches a batch), folded
//!    in by `cluster::apply_edges`: the clusters `ingest` of the same documents would keep.
//! 4. One synced RocksDB write: documents, keys, digests, clusters, batch record, next doc id
//!    and the manifest naming the new segments (`pipeline::publish`, as `ingest`'s publish).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::batch::publish;
use crate::build::Unpublished;
use crate::cluster;
use crate::error::{Error, IoResultExt, Result};
use crate::index::{Index, SEGMENTS_DIR};
use crate::options::IndexOptions;
use crate::pipeline::pairs::{for_each_pair, Matching, PairsConfig};
use crate::segment::{self, Segment};
use crate::sort::SortOptions;
use crate::store::records::BatchRecord;
use crate::store::{DocRecord, Manifest, SegmentEntry};

use super::stage::{StagedPart, StagingManifest, PARTS_DIR, RECORDS_TABLE};

/// Options of an adopt run.
#[derive(Clone, Debug)]
pub struct AdoptOptions {
    /// Memory budget of the matching's external sorts, in bytes.
    pub mem_bytes: u64,
    /// How the adopted documents are matched against the index (as `ingest --matching`).
    pub matching: Matching,
}

impl Default for AdoptOptions {
    fn default() -> Self {
        AdoptOptions {
            mem_bytes: 1 << 30,
            matching: Matching::default(),
        }
    }
}

/// What `adopt` published.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AdoptSummary {
    pub batch: String,
    pub batch_id: u32,
    /// The staging's run name.
    pub run: String,
    pub documents: u64,
    pub doc_lo: u32,
    pub doc_hi: u32,
    /// Input documents the job rejected (from the staging manifest).
    pub errors: u64,
    /// The index's segment files the parts became, in part order.
    pub segments: Vec<String>,
    pub segment_bytes: u64,
    /// Parts copied because a hard link was impossible (another file system).
    pub copied: usize,
    /// Pairs at or above the cluster threshold involving an adopted document.
    pub near_duplicate_pairs: u64,
    pub exact_duplicates: u64,
    pub seconds: f64,
}

/// The first creation option where `staged` and `index` differ: (option, index's, staged).
fn options_differ(
    index: &IndexOptions,
    staged: &IndexOptions,
) -> Option<(&'static str, String, String)> {
    if index.shingle != staged.shingle {
        return Some(("--shingle", index.shingle.clone(), staged.shingle.clone()));
    }
    if index.sample != staged.sample {
        return Some(("--sample", index.sample.clone(), staged.sample.clone()));
    }
    if index.cluster_threshold != staged.cluster_threshold {
        return Some((
            "--cluster-threshold",
            index.cluster_threshold.clone(),
            staged.cluster_threshold.clone(),
        ));
    }
    if index.methods != staged.methods {
        return Some(("--methods", json(&index.methods), json(&staged.methods)));
    }
    if index.max_df != staged.max_df {
        let s = |v: Option<u32>| v.map_or("none".to_string(), |n| n.to_string());
        return Some(("--max-df", s(index.max_df), s(staged.max_df)));
    }
    // The segment format changes no answer, and every reader reads every version: a staging
    // written in another format than the index's is adopted as it is (a mixed index).
    let same_format = |o: &IndexOptions| IndexOptions {
        segment_format: None,
        ..o.clone()
    };
    if same_format(index) != same_format(staged) {
        return Some(("options", json(index), json(staged)));
    }
    None
}

/// JSON text of a value, for messages.
fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Checks one part's two files; returns the segment's POSTINGS key count.
fn check_part(staging: &Path, p: &StagedPart) -> Result<u64> {
    let dir = staging.join(PARTS_DIR);
    let mut keys = 0;
    for (file, bytes, table) in [
        (&p.segment, p.bytes, segment::FORWARD),
        (&p.records, p.records_bytes, RECORDS_TABLE),
    ] {
        if file.contains(['/', '\\']) || file.starts_with('.') {
            return Err(Error::InvalidArgument(format!(
                "staging {}: bad part file name {file:?}",
                staging.display()
            )));
        }
        let path = dir.join(file);
        let len = std::fs::metadata(&path).at(&path)?.len();
        if len != bytes {
            return Err(Error::corrupt(
                &path,
                0,
                format!("file is {len} bytes, the staging manifest says {bytes}"),
            ));
        }
        let rep = Segment::verify_file(&path)?;
        if let Some(first) = rep.problems.first() {
            return Err(Error::corrupt(
                &path,
                first.offset,
                format!(
                    "staged file fails verification ({} problems; the first: {})",
                    rep.problems.len(),
                    first.reason
                ),
            ));
        }
        let seg = Segment::open(&path)?;
        let want = (p.doc_hi - p.doc_lo) as u64;
        let ok = seg.table_meta(table).is_some_and(|t| {
            t.entries == want && t.min_key == p.doc_lo as u64 && t.max_key == p.doc_hi as u64 - 1
        });
        if !ok {
            return Err(Error::corrupt(
                &path,
                0,
                format!(
                    "table {table} does not hold exactly the documents [{}, {}) of the part",
                    p.doc_lo, p.doc_hi
                ),
            ));
        }
        if table == segment::FORWARD {
            keys = seg.table_meta(segment::POSTINGS).map_or(0, |t| t.entries);
        }
    }
    Ok(keys)
}

/// Puts `from` at `to`: a hard link, or a copy (fsynced) where linking fails. True if copied.
fn link_or_copy(from: &Path, to: &Path) -> Result<bool> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(false);
    }
    let tmp = to.with_extension("ndds.tmp");
    std::fs::copy(from, &tmp).at(&tmp)?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .at(&tmp)?;
    std::fs::rename(&tmp, to).at(to)?;
    Ok(true)
}

impl Index {
    /// Publishes the staged corpus at `staging` as one batch (`adopt-<run>`); see the module
    /// docs. Every refusal is an error before the index changes.
    pub fn adopt(&mut self, staging: &Path, opts: &AdoptOptions) -> Result<AdoptSummary> {
        self.require_writer()?;
        let started = Instant::now();
        let m = StagingManifest::read(staging)?;
        let refuse = |why: String| {
            Error::InvalidArgument(format!("cannot adopt {}: {why}", staging.display()))
        };
        if let Some((option, stored, given)) = options_differ(self.options(), &m.options) {
            return Err(Error::OptionConflict {
                path: self.dir().to_owned(),
                option,
                stored,
                given,
            });
        }
        let catalog = &self.catalog;
        let name = format!("adopt-{}", m.run);
        if let Some(id) = catalog.batch_by_name(&name)? {
            return Err(refuse(format!(
                "it was adopted already (batch {name}, id {id})"
            )));
        }
        let doc_lo = catalog.next_doc()?;
        if m.doc_lo != doc_lo {
            return Err(refuse(format!(
                "its doc ids start at {}, the index's next doc id is {doc_lo} (stage with \
                 first_doc={doc_lo}, or adopt into the index it was staged for)",
                m.doc_lo
            )));
        }
        let doc_hi = m.doc_hi;
        let mut keys_of = Vec::with_capacity(m.parts.len());
        for p in &m.parts {
            keys_of.push(check_part(staging, p)?);
        }

        // Records, checked against the forward lists; keys new and unique.
        let tombstones = self.view.tombstones.clone();
        let mut docs: Vec<DocRecord> = Vec::with_capacity((doc_hi - doc_lo) as usize);
        let mut sizes: Vec<u32> = Vec::with_capacity(docs.capacity());
        let mut keys: HashSet<String> = HashSet::new();
        let batch_id = catalog.last_batch_id()?.map_or(1, |b| b + 1);
        let dir = staging.join(PARTS_DIR);
        for p in &m.parts {
            let seg = Segment::open(dir.join(&p.segment))?;
            let recs = Segment::open(dir.join(&p.records))?;
            for (f, r) in seg.iter(segment::FORWARD).zip(recs.iter(RECORDS_TABLE)) {
                let ((d, fwd), (rd, rec)) = (f?, r?);
                let mut rec = DocRecord::decode(rd as u32, rec)?;
                let n = seg.decode_u64s(fwd)?.len() as u32;
                if d != rd || n != rec.features {
                    return Err(Error::corrupt(
                        recs.path(),
                        0,
                        format!(
                            "record of doc {rd} ({}) disagrees with the forward list of doc {d} \
                             ({n} features, the record says {})",
                            rec.key, rec.features
                        ),
                    ));
                }
                if !keys.insert(rec.key.clone()) {
                    return Err(refuse(format!("key {} is staged twice (doc {d})", rec.key)));
                }
                if let Some(old) = catalog.doc_by_key(&rec.key)? {
                    if !tombstones.contains(old) {
                        return Err(refuse(format!(
                            "key {} (staged doc {d}) is in the index already as doc {old}: \
                             adopt only adds new documents (ingest replaces)",
                            rec.key
                        )));
                    }
                }
                rec.batch = batch_id;
                sizes.push(rec.features);
                docs.push(rec);
            }
        }
        drop(keys);

        // Link the segments in under new ids; unpublished until the catalog write.
        let mut manifest = catalog.manifest()?;
        let first_id = manifest.next_segment_id();
        let seg_dir = self.dir().join(SEGMENTS_DIR);
        let mut unpublished = Unpublished::default();
        let mut s = AdoptSummary {
            batch: name.clone(),
            batch_id,
            run: m.run.clone(),
            documents: (doc_hi - doc_lo) as u64,
            doc_lo,
            doc_hi,
            errors: m.errors,
            ..Default::default()
        };
        let mut entries = Vec::with_capacity(m.parts.len());
        for (i, (p, keys)) in m.parts.iter().zip(keys_of).enumerate() {
            let id = first_id + i as u64;
            let file = Manifest::file_name(id);
            let to = seg_dir.join(&file);
            unpublished.push(to.clone());
            if link_or_copy(&dir.join(&p.segment), &to)? {
                s.copied += 1;
            }
            let postings = docs[(p.doc_lo - doc_lo) as usize..(p.doc_hi - doc_lo) as usize]
                .iter()
                .map(|r| r.features as u64)
                .sum();
            s.segment_bytes += p.bytes;
            s.segments.push(file.clone());
            entries.push(SegmentEntry {
                id,
                file,
                doc_lo: p.doc_lo,
                doc_hi: p.doc_hi,
                bytes: p.bytes,
                keys,
                postings,
            });
        }
        std::fs::File::open(&seg_dir)
            .and_then(|d| d.sync_all())
            .at(&seg_dir)?;

        // Clusters: the engine's matching of the adopted documents against everything.
        let new: Vec<(PathBuf, SegmentEntry)> = entries
            .iter()
            .map(|e| (seg_dir.join(&e.file), e.clone()))
            .collect();
        let view = self
            .view
            .with_new_segments(new, &sizes, &roaring::RoaringBitmap::new())?;
        let threshold = self.options().cluster_threshold()?;
        let cfg = PairsConfig {
            max_df: self.options().max_df,
            ..PairsConfig::new(self.options().sample()?, threshold)
        };
        let sort = SortOptions::new(opts.mem_bytes, self.tmp_dir());
        let mut pairs: Vec<crate::pipeline::plan::Pair> = Vec::new();
        for_each_pair(
            opts.matching,
            &view,
            &cfg,
            &sort,
            doc_lo..doc_hi,
            doc_lo,
            None,
            |block| {
                pairs.extend_from_slice(block);
                Ok(())
            },
        )?;
        pairs.sort_unstable_by_key(|p| (p.a, p.b));
        let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
        s.near_duplicate_pairs = edges.len() as u64;

        // One synced write, as ingest's publish.
        let mut wb = catalog.batch_writer();
        cluster::apply_edges(catalog, &mut wb, &edges, doc_lo)?;
        let sample = self.options().sample.clone();
        publish::stage_pairs(catalog, &mut wb, threshold, &sample, &pairs)?;
        drop(pairs);
        let mut batch_digests: HashMap<[u8; 16], u32> = HashMap::new();
        for (i, r) in docs.iter().enumerate() {
            let d = doc_lo + i as u32;
            if let std::collections::hash_map::Entry::Vacant(e) = batch_digests.entry(r.digest) {
                e.insert(d);
                if catalog
                    .doc_by_digest(&r.digest)?
                    .is_some_and(|o| !tombstones.contains(o))
                {
                    s.exact_duplicates += 1;
                }
            } else {
                s.exact_duplicates += 1;
            }
        }
        publish::stage_docs(
            catalog,
            &mut wb,
            docs.iter().enumerate().map(|(i, r)| (doc_lo + i as u32, r)),
            &batch_digests,
            &[],
        )?;
        let record = BatchRecord::now(
            &name,
            doc_lo,
            doc_hi,
            s.documents,
            0,
            0,
            m.errors,
            s.segments.first().cloned(),
        );
        manifest.segments.extend(entries);
        publish::stage_batch(&mut wb, manifest, batch_id, &record);
        drop(view);
        catalog.commit(wb)?;
        unpublished.keep(); // published: the files belong to the manifest now
        self.reload_view()?;
        s.seconds = started.elapsed().as_secs_f64();
        Ok(s)
    }
}

/// Opens the index at `dir` for adopting `staging`: as a writer, created with the staging's
/// creation options when there is no index there yet.
pub fn open_for_adopt(dir: &Path, staging: &Path) -> Result<Index> {
    let m = StagingManifest::read(staging)?;
    let create = if dir.join(crate::index::CATALOG_DIR).join("CURRENT").exists() {
        crate::options::CreateOptions::default()
    } else {
        super::stage::create_options(&m.options)?
    };
    Index::open_writer(dir, &create)
}
