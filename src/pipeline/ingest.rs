//! Batch ingest: read -> canonicalize and fingerprint (both cores) -> forward lists and sorted
//! postings streamed into one new segment -> match the new documents against the whole index
//! -> fold new edges into the clusters -> publish segment, documents, clusters and batch record
//! in one synced RocksDB write.
//!
//! Until that write nothing is visible: a crash before it leaves an unpublished segment file
//! that the next writer removes, so a batch is all there or not at all. A key already indexed
//! with the same canonical text is skipped ("unchanged"), so re-running an ingest is safe.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::batch::publish;
use crate::canonicalize::canonicalize;
use crate::cluster;
use crate::error::{Error, Result};
use crate::fingerprint::{fingerprint, Fingerprint, FingerprintOptions};
use crate::index::Index;
use crate::input::{read_source, InputItem, InputOptions, Source};
use crate::method::writer::{extras as method_extras, DocExtras, MethodWriter};
use crate::method::MethodOptions;
use crate::pipeline::pairs::{for_each_pair, Matching, PairsConfig};
use crate::pipeline::spool::ReportSpool;
use crate::segment::{self, SegmentWriter};
use crate::sort::{ExternalSorter, KeyDoc, SortOptions};
use crate::store::{DocRecord, Manifest, SegmentEntry};
use crate::view::{FREQUENT_DF, FREQUENT_TABLE};

/// Options of one ingest run.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    /// Batch name; default `batch-NNNNNN`.
    pub batch: Option<String>,
    pub input: InputOptions,
    /// Fail the whole batch (publish nothing) on the first bad document.
    pub strict: bool,
    /// Memory budget of the external sort, in bytes.
    pub mem_bytes: u64,
    /// How the new documents are matched against the index.
    pub matching: Matching,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            batch: None,
            input: InputOptions::default(),
            strict: false,
            mem_bytes: 1 << 30,
            matching: Matching::default(),
        }
    }
}

pub use crate::batch::report::{DocReport, DocStatus, NearDup};

/// Summary of an ingest run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IngestSummary {
    pub batch: String,
    pub batch_id: u32,
    /// The batch existed already: nothing was done.
    pub already_ingested: bool,
    pub documents_read: u64,
    pub added: u64,
    pub replaced: u64,
    pub unchanged: u64,
    pub errors: u64,
    pub input_bytes: u64,
    pub features: u64,
    pub segment: Option<String>,
    pub segment_bytes: u64,
    /// Pairs at or above the cluster threshold involving a new document.
    pub near_duplicate_pairs: u64,
    pub exact_duplicates: u64,
    pub seconds: f64,
    /// Wall time by stage: read+canonicalize+fingerprint, postings (sort + write), match, publish.
    pub stage_seconds: StageSeconds,
    pub docs_per_second: f64,
    pub mb_per_second: f64,
    /// Posting entries the matching of the new documents visited.
    #[serde(default)]
    pub postings_visited: u64,
    /// What the commonality limit (`--max-df`) cut in the matching: over-limit keys passed
    /// over, probes left unfilled, and posting entries not visited because of it.
    #[serde(default)]
    pub max_df_keys_cut: u64,
    #[serde(default)]
    pub max_df_probes_cut: u64,
    #[serde(default)]
    pub max_df_postings_skipped: u64,
    /// The matching's counters (`PairsStats`: matching used, planner estimates, blocks read,
    /// keys the key filters ruled out), for benchmarks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching_stats: Option<serde_json::Value>,
}

/// Wall time of the stages of an ingest, in seconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StageSeconds {
    pub read: f64,
    pub postings: f64,
    pub matching: f64,
    pub publish: f64,
}

/// Progress of a running ingest, for progress bars.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    Read { docs: u64, bytes: u64 },
    Stage(&'static str),
}

/// The catalog record of a batch (defined with the other catalog values in `store`).
pub use crate::store::records::BatchRecord;

/// A document after the parallel stage.
enum Prepared {
    Doc {
        key: String,
        url: Option<String>,
        origin: String,
        bytes: u64,
        fp: Fingerprint,
        extras: DocExtras,
    },
    Bad {
        key: String,
        origin: String,
        reason: String,
    },
}

fn prepare(item: InputItem, fp_opts: &FingerprintOptions, m_opts: &MethodOptions) -> Prepared {
    match item {
        InputItem::Bad {
            key,
            origin,
            reason,
        } => Prepared::Bad {
            key,
            origin,
            reason,
        },
        InputItem::Doc(raw) => match canonicalize(&raw.bytes, raw.format, raw.charset.as_deref()) {
            Ok(canon) => {
                let fp = fingerprint(&canon.text, fp_opts);
                Prepared::Doc {
                    key: raw.key,
                    url: raw.url,
                    origin: raw.origin,
                    bytes: raw.bytes.len() as u64,
                    extras: method_extras(&canon.text, &fp, fp_opts, m_opts),
                    fp,
                }
            }
            Err(why) => Prepared::Bad {
                key: raw.key,
                origin: raw.origin,
                reason: why.to_string(),
            },
        },
    }
}

/// Documents read per parallel chunk; bounded in bytes too, so memory stays small.
const CHUNK_DOCS: usize = 256;
const CHUNK_BYTES: u64 = 32 << 20;

impl Index {
    /// Ingests one batch from `inputs`. `report` receives one line per input document after
    /// the batch is published; `progress` is called while it runs.
    pub fn ingest(
        &mut self,
        inputs: impl Into<Source>,
        opts: &IngestOptions,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<IngestSummary> {
        self.require_writer()?;
        let source: Source = inputs.into();
        let started = Instant::now();
        let catalog = &self.catalog;
        let existing_batches = catalog.batches::<BatchRecord>()?;
        let batch_id = existing_batches.last().map(|(id, _)| id + 1).unwrap_or(1);
        let name = opts
            .batch
            .clone()
            .unwrap_or_else(|| format!("batch-{batch_id:06}"));
        if let Some(id) = catalog.batch_by_name(&name)? {
            return Ok(IngestSummary {
                batch: name,
                batch_id: id,
                already_ingested: true,
                ..Default::default()
            });
        }
        let fp_opts = self.options().fingerprint()?;
        let manifest = catalog.manifest()?;
        let doc_lo = catalog.next_doc()?;
        let seg_id = manifest.next_segment_id();
        let seg_file = Manifest::file_name(seg_id);
        let seg_dir = self.dir().join(crate::index::SEGMENTS_DIR);
        let mut writer = SegmentWriter::create(&seg_dir, &seg_file)?;
        // Until the catalog names the segment, any early return removes its file(s) (the next
        // writer's orphan sweep would too; this keeps a failed run from leaving litter).
        let mut unpublished = Unpublished(vec![
            seg_dir.join(format!("{seg_file}.tmp")),
            seg_dir.join(&seg_file),
        ]);
        writer.begin_table(segment::FORWARD)?;
        let mut sorter = ExternalSorter::<KeyDoc>::new(SortOptions {
            mem_bytes: opts.mem_bytes,
            tmp_dir: self.tmp_dir(),
            ..SortOptions::default()
        })?;

        // Read on a thread of its own; canonicalize and fingerprint chunks on all cores.
        let (tx, rx) = sync_channel::<Vec<InputItem>>(2);
        let input_opts = opts.input.clone();
        let reader = std::thread::spawn(move || {
            let mut chunk = Vec::with_capacity(CHUNK_DOCS);
            let mut bytes = 0u64;
            for item in read_source(source, input_opts) {
                if let InputItem::Doc(d) = &item {
                    bytes += d.bytes.len() as u64;
                }
                chunk.push(item);
                if chunk.len() >= CHUNK_DOCS || bytes >= CHUNK_BYTES {
                    if tx.send(std::mem::take(&mut chunk)).is_err() {
                        return;
                    }
                    bytes = 0;
                }
            }
            if !chunk.is_empty() {
                let _ = tx.send(chunk);
            }
        });

        let mut s = IngestSummary {
            batch: name.clone(),
            batch_id,
            ..Default::default()
        };
        let mut next_doc = doc_lo;
        // Reports wait for the publish (cluster ids) in a spool file under DIR/tmp;
        // `exact_of` holds doc ids until then.
        let mut reports = ReportSpool::new(&self.tmp_dir())?;
        let mut exact_of: HashMap<u32, u32> = HashMap::new();
        let mut new_docs: Vec<DocRecord> = Vec::new();
        let mut batch_keys: HashSet<String> = HashSet::new();
        let mut batch_digests: HashMap<[u8; 16], u32> = HashMap::new();
        let mut replaced_docs: Vec<(u32, DocRecord)> = Vec::new();
        let tombstones = self.view.tombstones.clone();
        let mut failure: Option<Error> = None;

        // Canonicalize and fingerprint on a stage of its own, so that the next chunk is
        // prepared on both cores while this thread files the previous one.
        let (ptx, prx) = sync_channel::<Vec<Prepared>>(2);
        let stage_opts = fp_opts;
        let m_opts = self.options().methods.clone();
        let mut methods = MethodWriter::new(&m_opts);
        let preparer = std::thread::spawn(move || {
            for chunk in rx {
                let prepared: Vec<Prepared> = chunk
                    .into_par_iter()
                    .map(|item| prepare(item, &stage_opts, &m_opts))
                    .collect();
                if ptx.send(prepared).is_err() {
                    return;
                }
            }
        });

        for prepared in prx {
            if failure.is_some() {
                continue; // drain the stages so they can finish
            }
            for p in prepared {
                s.documents_read += 1;
                let (key, url, origin, bytes, fp, extras) = match p {
                    Prepared::Bad {
                        key,
                        origin,
                        reason,
                    } => {
                        s.errors += 1;
                        if opts.strict {
                            failure = Some(Error::Document {
                                key,
                                reason: format!("{reason} ({origin})"),
                            });
                            break;
                        }
                        reports.push(&bad_report(key, origin, reason))?;
                        continue;
                    }
                    Prepared::Doc {
                        key,
                        url,
                        origin,
                        bytes,
                        fp,
                        extras,
                    } => (key, url, origin, bytes, fp, extras),
                };
                s.input_bytes += bytes;
                if !batch_keys.insert(key.clone()) {
                    s.errors += 1;
                    let reason = "duplicate key within the batch (the first occurrence was kept)"
                        .to_string();
                    if opts.strict {
                        failure = Some(Error::Document { key, reason });
                        break;
                    }
                    reports.push(&bad_report(key, origin, reason))?;
                    continue;
                }
                let mut status = DocStatus::New;
                if let Some(old) = catalog.doc_by_key(&key)? {
                    if let Some(rec) = catalog.doc(old)? {
                        if rec.digest == fp.digest && !tombstones.contains(old) {
                            s.unchanged += 1;
                            reports.push(&DocReport {
                                key,
                                status: DocStatus::Unchanged,
                                doc: Some(old),
                                error: None,
                                origin: None,
                                exact_duplicate_of: None,
                                near_duplicate: None,
                                cluster: None,
                            })?;
                            continue;
                        }
                        status = DocStatus::Replaced;
                        s.replaced += 1;
                        replaced_docs.push((old, rec));
                    }
                }
                let doc = next_doc;
                next_doc = next_doc
                    .checked_add(1)
                    .ok_or_else(|| Error::InvalidArgument("doc ids exhausted".into()))?;
                let mut fwd = Vec::with_capacity(fp.features.len() * 8);
                segment::encode_u64s(&fp.features, &mut fwd);
                writer.add(doc as u64, &fwd)?;
                for &f in &fp.features {
                    sorter.push(KeyDoc { key: f, doc })?;
                }
                s.features += fp.features.len() as u64;
                methods.add(doc, &fp, extras);
                let exact = match batch_digests.get(&fp.digest) {
                    Some(&d) => Some(d),
                    None => {
                        batch_digests.insert(fp.digest, doc);
                        catalog
                            .doc_by_digest(&fp.digest)?
                            .filter(|d| !tombstones.contains(*d))
                    }
                };
                if let Some(e) = exact {
                    s.exact_duplicates += 1;
                    exact_of.insert(doc, e);
                }
                reports.push(&DocReport {
                    key: key.clone(),
                    status,
                    doc: Some(doc),
                    error: None,
                    origin: None,
                    exact_duplicate_of: None, // filled from `exact_of` after the publish
                    near_duplicate: None,
                    cluster: None,
                })?;
                new_docs.push(DocRecord {
                    key,
                    batch: batch_id,
                    words: fp.words,
                    shingles: fp.shingles,
                    features: fp.features.len() as u32,
                    simhash: fp.simhash,
                    digest: fp.digest,
                    bytes,
                    url,
                });
            }
            progress(Progress::Read {
                docs: s.documents_read,
                bytes: s.input_bytes,
            });
        }
        let _ = reader.join();
        let _ = preparer.join();
        if let Some(e) = failure {
            return Err(e); // the unfinished segment is dropped: only a .tmp remains, removed on open
        }
        let doc_hi = next_doc;
        writer.end_table()?;

        // Postings from the sorted (key, doc) stream, straight into the segment.
        progress(Progress::Stage("sorting postings"));
        let mut lap = Instant::now();
        s.stage_seconds.read = started.elapsed().as_secs_f64();
        let keys = write_postings_tables(&mut writer, sorter.finish()?)?;
        methods.write_tables(&mut writer, catalog)?;
        let seg_meta = writer.finish()?;
        s.segment_bytes = seg_meta.bytes;

        // Match the new documents against everything, the new segment included.
        progress(Progress::Stage("matching"));
        s.stage_seconds.postings = lap.elapsed().as_secs_f64();
        lap = Instant::now();
        let added = doc_hi - doc_lo;
        let entry = SegmentEntry {
            id: seg_id,
            file: seg_file.clone(),
            doc_lo,
            doc_hi,
            bytes: seg_meta.bytes,
            keys,
            postings: s.features,
        };
        let mut extra_tombs = roaring::RoaringBitmap::new();
        for (old, _) in &replaced_docs {
            extra_tombs.insert(*old);
        }
        let sizes: Vec<u32> = new_docs.iter().map(|r| r.features).collect();
        let view = self.view.with_new_segment(
            &self.segment_path(&seg_file),
            entry.clone(),
            &sizes,
            &extra_tombs,
        )?;
        let threshold = self.options().cluster_threshold()?;
        let cfg = PairsConfig {
            max_df: self.options().max_df,
            ..PairsConfig::new(fp_opts.sample, threshold)
        };
        let sort = SortOptions::new(opts.mem_bytes, self.tmp_dir());
        let mut pairs = Vec::new();
        let mstats = for_each_pair(
            opts.matching,
            &view,
            &cfg,
            &sort,
            doc_lo..doc_hi,
            doc_lo,
            |block| {
                pairs.extend_from_slice(block);
                Ok(())
            },
        )?;
        pairs.sort_unstable_by_key(|p| (p.a, p.b));
        s.near_duplicate_pairs = pairs.len() as u64;
        s.postings_visited = mstats.postings_visited;
        s.max_df_keys_cut = mstats.max_df_keys_cut;
        s.max_df_probes_cut = mstats.max_df_probes_cut;
        s.max_df_postings_skipped = mstats.max_df_postings_skipped;
        s.matching_stats = serde_json::to_value(&mstats).ok();

        // Stage the publish.
        progress(Progress::Stage("publishing"));
        s.stage_seconds.matching = lap.elapsed().as_secs_f64();
        lap = Instant::now();
        let mut wb = catalog.batch_writer();
        let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
        // A replaced document leaves its old cluster (recomputed as `delete` does) before the
        // new documents' edges are folded in.
        let replaced_ids: Vec<u32> = replaced_docs.iter().map(|(d, _)| *d).collect();
        let overlay = crate::lifecycle::delete::recluster_replaced(
            catalog,
            &view,
            fp_opts.sample,
            threshold,
            &mut wb,
            &replaced_ids,
        )?;
        let clusters = cluster::apply_edges_over(catalog, &overlay, &mut wb, &edges, doc_lo)?;
        let best = publish::best_partners(&pairs, doc_lo);
        let docs = new_docs
            .iter()
            .enumerate()
            .map(|(i, r)| (doc_lo + i as u32, r));
        publish::stage_docs(catalog, &mut wb, docs, &batch_digests, &replaced_docs)?;
        let mut manifest = manifest;
        if added > 0 {
            manifest.segments.push(entry);
            s.segment = Some(seg_file.clone());
        }
        s.added = added as u64 - s.replaced;
        let record = BatchRecord::now(
            &name,
            doc_lo,
            doc_hi,
            s.added,
            s.replaced,
            s.unchanged,
            s.errors,
            s.segment.clone(),
        );
        publish::stage_batch(&mut wb, manifest, batch_id, &record);
        methods.stage(catalog, &mut wb)?;
        drop(view); // an empty batch's segment file goes with `unpublished`
        catalog.commit(wb)?;
        if added > 0 {
            unpublished.0.clear(); // published: the file belongs to the manifest now
        }
        self.reload_view()?;
        s.stage_seconds.publish = lap.elapsed().as_secs_f64();

        // Reports, now that cluster ids and keys are final.
        let key_of = |d: u32| -> Result<String> {
            if d >= doc_lo {
                Ok(new_docs[(d - doc_lo) as usize].key.clone())
            } else {
                Ok(self.catalog.doc(d)?.map(|r| r.key).unwrap_or_default())
            }
        };
        let outcome = crate::batch::report::Outcome {
            exact_of: &exact_of,
            best: &best,
            clusters: &clusters,
        };
        reports.drain(|mut r| {
            outcome.finish(&mut r, &key_of)?;
            report(&r)
        })?;
        let secs = started.elapsed().as_secs_f64();
        s.seconds = secs;
        s.docs_per_second = s.documents_read as f64 / secs.max(1e-9);
        s.mb_per_second = s.input_bytes as f64 / 1e6 / secs.max(1e-9);
        Ok(s)
    }
}

/// The POSTINGS table from the sorted `(feature, doc)` stream, then the FREQUENT table (the
/// features in more than `FREQUENT_DF` of its documents, with their df), into `writer` after
/// its FORWARD table: the tables every batch segment has. Returns the number of posting keys.
/// Ingest and the staged segments of `lifecycle::stage` share it, so their segments agree
/// byte for byte.
pub(crate) fn write_postings_tables(
    writer: &mut SegmentWriter,
    sorted: impl IntoIterator<Item = Result<KeyDoc>>,
) -> Result<u64> {
    let mut frequent: Vec<(u64, u32)> = Vec::new();
    let mut keys = 0u64;
    writer.begin_table(segment::POSTINGS)?;
    {
        let mut ids: Vec<u32> = Vec::new();
        let mut cur: Option<u64> = None;
        let mut buf = Vec::new();
        let mut flush = |key: u64, ids: &mut Vec<u32>, writer: &mut SegmentWriter| -> Result<()> {
            buf.clear();
            segment::encode_postings(ids, &mut buf);
            writer.add(key, &buf)?;
            if ids.len() as u32 > FREQUENT_DF {
                frequent.push((key, ids.len() as u32));
            }
            keys += 1;
            ids.clear();
            Ok(())
        };
        for rec in sorted {
            let rec = rec?;
            if cur != Some(rec.key) {
                if let Some(k) = cur {
                    flush(k, &mut ids, writer)?;
                }
                cur = Some(rec.key);
            }
            ids.push(rec.doc);
        }
        if let Some(k) = cur {
            flush(k, &mut ids, writer)?;
        }
    }
    writer.end_table()?;
    writer.begin_table(FREQUENT_TABLE)?;
    for (k, df) in &frequent {
        writer.add(*k, &df.to_le_bytes())?;
    }
    writer.end_table()?;
    Ok(keys)
}

/// Files of a segment that is not (yet) published; removed when dropped.
struct Unpublished(Vec<PathBuf>);

impl Drop for Unpublished {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn bad_report(key: String, origin: String, reason: String) -> DocReport {
    DocReport {
        key,
        status: DocStatus::Error,
        doc: None,
        error: Some(reason),
        origin: Some(origin),
        exact_duplicate_of: None,
        near_duplicate: None,
        cluster: None,
    }
}
