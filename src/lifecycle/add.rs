//! Online adds (`ndd-index add`): a few documents at a time, without an external sort.
//!
//! Each call reads its documents (any input `ingest` reads), canonicalizes and fingerprints
//! them, matches them against the whole index (the new ones included, through a small
//! temporary segment exactly like ingest's), folds the pairs at the cluster threshold into the
//! persisted clusters and publishes everything in ONE synced catalog write: the catalog records
//! (doc ids from the same counter, key, digest, a batch record named `add-NNNNNN` unless
//! given), the delta entries (`store::delta`) and the clusters. An acknowledged add is durable
//! and atomic, and visible to every reader that opens a snapshot afterwards.
//!
//! Keys behave as in ingest: a key indexed with the same canonical text is `unchanged`; with a
//! new text the new document `replaced` the old one, which is tombstoned and leaves its
//! cluster (re-clustered as `delete` does). When the delta passes `fold_docs` documents or
//! `fold_bytes` of features it is folded into a segment (`Index::fold_delta`).

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use serde::Serialize;

use crate::batch::publish;
use crate::batch::report::{DocReport, DocStatus};
use crate::canonicalize::canonicalize;
use crate::cluster;
use crate::error::{Error, Result};
use crate::fingerprint::fingerprint;
use crate::index::Index;
use crate::input::{read_source, InputItem, InputOptions, Source};
use crate::method::writer::{extras as method_extras, MethodWriter};
use crate::pipeline::pairs::{collect_pairs, PairsConfig};
use crate::store::delta::DeltaDoc;
use crate::store::records::BatchRecord;
use crate::store::DocRecord;
use crate::view::View;

use super::fold::{write_temp_delta_segment, FoldSummary};

/// Default fold size of the delta, in documents.
pub const DEFAULT_FOLD_DOCS: u64 = 1024;
/// Default fold size of the delta, in feature bytes (8 per feature).
pub const DEFAULT_FOLD_BYTES: u64 = 32 << 20;

/// Options of one `add` call.
#[derive(Clone, Debug)]
pub struct AddOptions {
    /// Batch name; default `add-NNNNNN` (NNNNNN = the batch id). A name used before: nothing
    /// is done (`already_added`), so a retried add is safe.
    pub batch: Option<String>,
    pub input: InputOptions,
    /// Fail (add nothing) on the first bad document.
    pub strict: bool,
    /// Fold the delta into a segment once it holds this many documents...
    pub fold_docs: u64,
    /// ...or this many bytes of features.
    pub fold_bytes: u64,
    /// Sync the catalog write before returning (durable when `add` returns). `false` leaves
    /// the fsync to the caller ([`crate::store::Catalog::sync_wal`]): the server's writer
    /// answers a group commit only after it. A fold still syncs its own write.
    pub sync: bool,
}

impl Default for AddOptions {
    fn default() -> Self {
        AddOptions {
            batch: None,
            input: InputOptions::default(),
            strict: false,
            fold_docs: DEFAULT_FOLD_DOCS,
            fold_bytes: DEFAULT_FOLD_BYTES,
            sync: true,
        }
    }
}

/// The phases of an add, in order, as timed in [`AddSummary::phase_micros`]: reading,
/// canonicalizing and fingerprinting the documents with their catalog look-ups; writing and
/// mapping their small segment; matching them; staging replacements, clusters and records;
/// the synced catalog write; the next snapshot; the reports; the fold of the delta.
pub const ADD_PHASES: [&str; 8] = [
    "read", "segment", "match", "stage", "commit", "snapshot", "report", "fold",
];

/// Summary of one `add` call.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AddSummary {
    pub batch: String,
    pub batch_id: u32,
    pub already_added: bool,
    pub documents_read: u64,
    pub added: u64,
    pub replaced: u64,
    pub unchanged: u64,
    pub errors: u64,
    /// Pairs at or above the cluster threshold involving a new document.
    pub near_duplicate_pairs: u64,
    /// Documents in the delta after the call (0 after a fold).
    pub delta_docs: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded: Option<FoldSummary>,
    pub seconds: f64,
    /// Microseconds spent in each of [`ADD_PHASES`] (the server's `/metrics`).
    #[serde(skip)]
    pub phase_micros: [u64; ADD_PHASES.len()],
}

impl Index {
    /// Adds the documents of `inputs` online. `report` receives one line per input document
    /// (the ingest report format) after the publish.
    pub fn add(
        &mut self,
        inputs: impl Into<Source>,
        opts: &AddOptions,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
    ) -> Result<AddSummary> {
        self.require_writer()?;
        let source: Source = inputs.into();
        let started = Instant::now();
        let mut lap = Lap(Instant::now());
        let catalog = &self.catalog;
        // The last batch id by one seek: reading every batch record made each add slower
        // than the one before (the server adds a batch per group commit).
        let batch_id = catalog.last_batch_id()?.map(|id| id + 1).unwrap_or(1);
        let name = opts
            .batch
            .clone()
            .unwrap_or_else(|| format!("add-{batch_id:06}"));
        let mut s = AddSummary {
            batch: name.clone(),
            batch_id,
            ..Default::default()
        };
        if let Some(id) = catalog.batch_by_name(&name)? {
            s.batch_id = id;
            s.already_added = true;
            return Ok(s);
        }
        let fp_opts = self.options().fingerprint()?;
        let m_opts = self.options().methods.clone();
        let tombstones = self.view.tombstones.clone();
        let doc_lo = catalog.next_doc()?;
        let mut reports: Vec<DocReport> = Vec::new();
        let mut news: Vec<(DocRecord, DeltaDoc)> = Vec::new();
        let mut keys: HashSet<String> = HashSet::new();
        let mut digests: HashMap<[u8; 16], u32> = HashMap::new();
        let mut exact_of: HashMap<u32, u32> = HashMap::new();
        let mut replaced: Vec<(u32, DocRecord)> = Vec::new();
        let mut mw = MethodWriter::new(&m_opts);
        for item in read_source(source, opts.input.clone()) {
            s.documents_read += 1;
            let (raw, canon) = match item {
                InputItem::Bad {
                    key,
                    origin,
                    reason,
                } => {
                    reject(&mut s, &mut reports, opts.strict, key, origin, reason)?;
                    continue;
                }
                InputItem::Doc(raw) => {
                    match canonicalize(&raw.bytes, raw.format, raw.charset.as_deref()) {
                        Ok(c) => (raw, c),
                        Err(why) => {
                            let r = why.to_string();
                            reject(&mut s, &mut reports, opts.strict, raw.key, raw.origin, r)?;
                            continue;
                        }
                    }
                }
            };
            if !keys.insert(raw.key.clone()) {
                let reason = "duplicate key within the batch (the first occurrence was kept)";
                reject(
                    &mut s,
                    &mut reports,
                    opts.strict,
                    raw.key,
                    raw.origin,
                    reason.into(),
                )?;
                continue;
            }
            let fp = fingerprint(&canon.text, &fp_opts);
            let mut status = DocStatus::New;
            if let Some(old) = catalog.doc_by_key(&raw.key)? {
                if let Some(rec) = catalog.doc(old)? {
                    if rec.digest == fp.digest && !tombstones.contains(old) {
                        s.unchanged += 1;
                        reports.push(doc_report(raw.key, DocStatus::Unchanged, old));
                        continue;
                    }
                    status = DocStatus::Replaced;
                    s.replaced += 1;
                    replaced.push((old, rec));
                }
            }
            let doc = doc_lo
                .checked_add(news.len() as u32)
                .ok_or_else(|| Error::InvalidArgument("doc ids exhausted".into()))?;
            let exact = match digests.get(&fp.digest) {
                Some(&d) => Some(d),
                None => {
                    digests.insert(fp.digest, doc);
                    catalog
                        .doc_by_digest(&fp.digest)?
                        .filter(|d| !tombstones.contains(*d))
                }
            };
            if let Some(e) = exact {
                exact_of.insert(doc, e);
            }
            let x = method_extras(&canon.text, &fp, &fp_opts, &m_opts);
            let delta = DeltaDoc {
                has_words: fp.words > 0,
                // the SIMHASH tables' value (shingle or filtered simhashes differ from the
                // catalog's); idf and boilerplate-filtered ones are set below
                simhash: x.simhash.unwrap_or(fp.simhash),
                features: fp.features.clone(),
                supers: x.supers.clone(),
                sim384: x.sim384,
                imatch: Vec::new(), // filled below, once the whole call's terms are known
            };
            mw.add(doc, &fp, x);
            reports.push(doc_report(raw.key.clone(), status, doc));
            news.push((
                DocRecord {
                    key: raw.key,
                    batch: batch_id,
                    words: fp.words,
                    shingles: fp.shingles,
                    features: fp.features.len() as u32,
                    simhash: fp.simhash,
                    digest: fp.digest,
                    bytes: raw.bytes.len() as u64,
                    url: raw.url,
                },
                delta,
            ));
        }
        let doc_hi = doc_lo + news.len() as u32;
        for (sig, doc) in mw.imatch_signatures(catalog)? {
            news[(doc - doc_lo) as usize].1.imatch.push(sig);
        }
        for (doc, h) in mw.deferred_simhashes(catalog)? {
            news[(doc - doc_lo) as usize].1.simhash = h;
        }

        s.phase_micros[0] += lap.next();
        // Match against everything, the new documents included (a small temporary segment).
        let mut extra_tombs = roaring::RoaringBitmap::new();
        extra_tombs.extend(replaced.iter().map(|(d, _)| *d));
        let tmp = tempfile::tempdir_in(self.tmp_dir()).map_err(|e| Error::io(self.tmp_dir(), e))?;
        let delta_docs: Vec<(u32, DeltaDoc)> = news
            .iter()
            .enumerate()
            .map(|(i, (_, d))| (doc_lo + i as u32, d.clone()))
            .collect();
        let view = if news.is_empty() {
            let none = crate::store::SegmentEntry {
                id: 0,
                file: String::new(),
                doc_lo,
                doc_hi,
                bytes: 0,
                keys: 0,
                postings: 0,
            };
            self.view
                .with_new_segment(tmp.path(), none, &[], &extra_tombs)?
        } else {
            let entry =
                write_temp_delta_segment(tmp.path(), "add.ndds", &delta_docs, &m_opts, catalog)?;
            let sizes: Vec<u32> = news.iter().map(|(r, _)| r.features).collect();
            let v = self.view.with_new_segment(
                &tmp.path().join("add.ndds"),
                entry,
                &sizes,
                &extra_tombs,
            )?;
            // Written by this call a moment ago: no need to check its blocks on first use.
            if let Some(p) = v.segments.last() {
                p.seg.assume_verified();
            }
            v
        };
        s.phase_micros[1] += lap.next();
        let threshold = self.options().cluster_threshold()?;
        let cfg = PairsConfig {
            max_df: self.options().max_df,
            ..PairsConfig::new(fp_opts.sample, threshold)
        };
        let (pairs, _) = collect_pairs(&view, &cfg, doc_lo..doc_hi, doc_lo)?;
        s.near_duplicate_pairs = pairs.len() as u64;

        s.phase_micros[2] += lap.next();
        // One synced write: catalog records, delta entries, clusters, batch record.
        let mut wb = catalog.batch_writer();
        let replaced_ids: Vec<u32> = replaced.iter().map(|(d, _)| *d).collect();
        let overlay = super::delete::recluster_replaced(
            catalog,
            &view,
            fp_opts.sample,
            threshold,
            &mut wb,
            &replaced_ids,
        )?;
        let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
        let clusters = cluster::apply_edges_over(catalog, &overlay, &mut wb, &edges, doc_lo)?;
        // The segment the new documents were matched in holds exactly them: the next
        // snapshot keeps it as a piece of the delta (its file is gone with `tmp`, the
        // mapping stays).
        let has_piece = !news.is_empty()
            && view
                .segments
                .last()
                .is_some_and(|p| p.entry.doc_lo == doc_lo && p.entry.doc_hi == doc_hi);
        let ids: Vec<u32> = delta_docs.iter().map(|(d, _)| *d).collect();
        for (doc, (_, delta)) in ids.iter().zip(&news) {
            wb.put_delta(*doc, delta);
        }
        let docs = ids.iter().copied().zip(news.iter().map(|(r, _)| r));
        publish::stage_docs(catalog, &mut wb, docs, &digests, &replaced)?;
        s.added = news.len() as u64 - s.replaced;
        let record = BatchRecord::now(
            &name,
            doc_lo,
            doc_hi,
            s.added,
            s.replaced,
            s.unchanged,
            s.errors,
            None,
        );
        publish::stage_batch(&mut wb, catalog.manifest()?, batch_id, &record);
        mw.stage(catalog, &mut wb)?;
        s.phase_micros[3] += lap.next();
        if opts.sync {
            catalog.commit(wb)?;
        } else {
            catalog.commit_unsynced(wb)?;
        }
        s.phase_micros[4] += lap.next();
        drop(tmp);
        // The new snapshot is the view the documents were matched in (no full reload, no
        // second copy of the index's per-document sizes).
        let view = if has_piece || news.is_empty() {
            view.after_add(&self.catalog, self.options(), has_piece)?
        } else {
            drop(view);
            View::load(self.dir(), &self.catalog, self.options())?
        };
        self.view = std::sync::Arc::new(view);

        s.phase_micros[5] += lap.next();
        // Reports (cluster ids and partners are final now).
        let best = publish::best_partners(&pairs, doc_lo);
        let key_of = |d: u32| -> Result<String> {
            if d >= doc_lo {
                Ok(news[(d - doc_lo) as usize].0.key.clone())
            } else {
                Ok(self.catalog.doc(d)?.map(|r| r.key).unwrap_or_default())
            }
        };
        let outcome = crate::batch::report::Outcome {
            exact_of: &exact_of,
            best: &best,
            clusters: &clusters,
        };
        for mut r in reports {
            outcome.finish(&mut r, &key_of)?;
            report(&r)?;
        }

        s.phase_micros[6] += lap.next();
        // Fold when the delta has grown past its size.
        let (delta_docs, delta_features) = self.view.delta_size();
        if delta_docs >= opts.fold_docs || delta_features * 8 >= opts.fold_bytes {
            s.folded = Some(self.fold_delta()?);
            s.delta_docs = 0;
        } else {
            s.delta_docs = delta_docs;
        }
        s.phase_micros[7] += lap.next();
        s.seconds = started.elapsed().as_secs_f64();
        Ok(s)
    }
}

/// A stopwatch of consecutive phases.
struct Lap(Instant);

impl Lap {
    /// Microseconds since the last call (or the start).
    fn next(&mut self) -> u64 {
        let now = Instant::now();
        let us = now.duration_since(self.0).as_micros() as u64;
        self.0 = now;
        us
    }
}

fn doc_report(key: String, status: DocStatus, doc: u32) -> DocReport {
    DocReport {
        key,
        status,
        doc: Some(doc),
        error: None,
        origin: None,
        exact_duplicate_of: None,
        near_duplicate: None,
        cluster: None,
    }
}

/// A rejected document: reported (the rest is added), or the whole call fails with `strict`.
fn reject(
    s: &mut AddSummary,
    reports: &mut Vec<DocReport>,
    strict: bool,
    key: String,
    origin: String,
    reason: String,
) -> Result<()> {
    s.errors += 1;
    if strict {
        return Err(Error::Document {
            key,
            reason: format!("{reason} ({origin})"),
        });
    }
    reports.push(DocReport {
        key,
        status: DocStatus::Error,
        doc: None,
        error: Some(reason),
        origin: Some(origin),
        exact_duplicate_of: None,
        near_duplicate: None,
        cluster: None,
    });
    Ok(())
}
