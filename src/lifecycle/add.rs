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

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::batch::intake::{Intake, Known, DUPLICATE_KEY};
use crate::batch::report::{DocReport, DocStatus, Outcome};
use crate::batch::{self, publish, Named};
use crate::build::delta as delta_segment;
use crate::canonicalize::canonicalize_with;
use crate::canonicalize::DocFormat;
use crate::error::{Error, Result};
use crate::fingerprint::fingerprint;
use crate::index::Index;
use crate::input::{
    memory_check, memory_item, memory_origin, read_source, InputItem, InputOptions, Source,
};
use crate::method::writer::{extras as method_extras, MethodWriter};
use crate::pipeline::pairs::{collect_pairs, PairsConfig};
use crate::pipeline::plan::Pair;
use crate::query::{CheckHint, Match, Matcher, PreparedDoc, Scratch};
use crate::store::delta::DeltaDoc;
use crate::store::records::BatchRecord;
use crate::store::DocRecord;
use crate::view::View;

use super::fold::FoldSummary;

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

/// An add call's new documents, as its stages hand them on.
struct NewDocs {
    /// The first new document's id; the others follow.
    doc_lo: u32,
    /// One per input document, in input order.
    reports: Vec<DocReport>,
    /// Catalog record and delta entry of each new document.
    news: Vec<(DocRecord, DeltaDoc)>,
    /// The check's hint of each new document, if it came prepared with one.
    hints: Vec<Option<CheckHint>>,
    intake: Intake,
    methods: MethodWriter,
}

impl NewDocs {
    fn doc_hi(&self) -> u32 {
        self.doc_lo + self.news.len() as u32
    }

    /// The new documents' delta entries with their ids.
    fn delta_docs(&self) -> Vec<(u32, DeltaDoc)> {
        let lo = self.doc_lo;
        let news = self.news.iter().enumerate();
        news.map(|(i, (_, d))| (lo + i as u32, d.clone())).collect()
    }
}

/// One document of [`Index::add_docs`]: raw bytes (read as `Source::DocsWithFormat` reads
/// them), or prepared by the caller ([`Index::prepare`], with its check's hint).
#[derive(Debug)]
pub enum AddDoc {
    Raw {
        key: String,
        bytes: Vec<u8>,
        format: DocFormat,
    },
    Prepared(PreparedDoc),
}

/// What the read stage takes: an input item, or a prepared document (and its position).
enum Incoming {
    Item(InputItem),
    Prepared(usize, PreparedDoc),
}

impl Index {
    /// Adds the documents of `inputs` online. `report` receives one line per input document
    /// (the ingest report format) after the publish.
    ///
    /// The stages: name the batch (`batch::name`), `Index::read_new_docs`,
    /// `Index::finish_method_data`, `Index::match_new_docs`, `Index::publish_new_docs`,
    /// the reports, and `Index::fold_if_due`.
    pub fn add(
        &mut self,
        inputs: impl Into<Source>,
        opts: &AddOptions,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
    ) -> Result<AddSummary> {
        let items = read_source(inputs.into(), opts.input.clone()).map(Incoming::Item);
        self.add_incoming(Box::new(items), opts, report)
    }

    /// [`Index::add`] of in-memory documents, some of them prepared by the caller: a
    /// prepared document is not canonicalized or fingerprinted again, and its check's hint
    /// ([`CheckHint`]) replaces the search of the snapshot it came from (only what was added
    /// since is searched). The same answers as `add` of the same documents as
    /// `Source::DocsWithFormat`: documents, clusters, pairs and reports.
    pub fn add_docs(
        &mut self,
        docs: Vec<AddDoc>,
        opts: &AddOptions,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
    ) -> Result<AddSummary> {
        let max = opts.input.max_doc_bytes;
        let items = docs.into_iter().enumerate().map(move |(i, d)| match d {
            AddDoc::Raw { key, bytes, format } => {
                Incoming::Item(memory_item(i, key, bytes, Some(format), max))
            }
            AddDoc::Prepared(p) => Incoming::Prepared(i, p),
        });
        self.add_incoming(Box::new(items), opts, report)
    }

    fn add_incoming(
        &mut self,
        items: Box<dyn Iterator<Item = Incoming> + Send + '_>,
        opts: &AddOptions,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
    ) -> Result<AddSummary> {
        self.require_writer()?;
        let started = Instant::now();
        let mut lap = Lap(Instant::now());
        let (name, batch_id) = match batch::name(&self.catalog, opts.batch.as_deref(), "add")? {
            Named::New { name, id } => (name, id),
            Named::Done { name, id } => {
                return Ok(AddSummary {
                    batch: name,
                    batch_id: id,
                    already_added: true,
                    ..Default::default()
                })
            }
        };
        let mut s = AddSummary {
            batch: name.clone(),
            batch_id,
            ..Default::default()
        };
        let mut n = self.read_new_docs(items, opts, batch_id, &mut s)?;
        self.finish_method_data(&mut n)?;
        s.phase_micros[0] += lap.next();
        let (view, pairs) = self.match_new_docs(&n, &mut lap, &mut s)?;
        s.near_duplicate_pairs = pairs.len() as u64;
        let publish = Publish {
            name: &name,
            batch_id,
            sync: opts.sync,
        };
        let clusters = self.publish_new_docs(&n, view, &pairs, &publish, &mut lap, &mut s)?;

        // Reports (cluster ids and partners are final now).
        let outcome = Outcome::new(
            &self.catalog,
            n.doc_lo,
            &pairs,
            &n.intake.exact_of,
            &clusters,
        );
        for mut r in n.reports {
            outcome.finish(&mut r, |i| Ok(n.news[i].0.key.clone()))?;
            report(&r)?;
        }
        s.phase_micros[6] += lap.next();

        self.fold_if_due(opts, &mut s)?;
        s.phase_micros[7] += lap.next();
        s.seconds = started.elapsed().as_secs_f64();
        Ok(s)
    }

    /// The "read" stage: reads, canonicalizes and fingerprints the documents of `source` one
    /// by one and checks each (`batch::intake`): rejected, unchanged, or new with the next id,
    /// its catalog record, delta entry, method data and report.
    fn read_new_docs(
        &self,
        items: Box<dyn Iterator<Item = Incoming> + Send + '_>,
        opts: &AddOptions,
        batch_id: u32,
        s: &mut AddSummary,
    ) -> Result<NewDocs> {
        let catalog = &self.catalog;
        let fp_opts = self.options().fingerprint()?;
        let m_opts = &self.options().methods;
        let mut n = NewDocs {
            doc_lo: catalog.next_doc()?,
            reports: Vec::new(),
            news: Vec::new(),
            hints: Vec::new(),
            intake: Intake::new(self.view.tombstones.clone()),
            methods: MethodWriter::new(m_opts),
        };
        let reports = &mut n.reports;
        for item in items {
            s.documents_read += 1;
            // (key, origin, raw length, url, canonical text, fingerprint if prepared, hint)
            let (key, origin, len, url, text, prepared, hint) = match item {
                Incoming::Item(InputItem::Bad {
                    key,
                    origin,
                    reason,
                }) => {
                    reject(s, reports, opts.strict, key, origin, reason)?;
                    continue;
                }
                Incoming::Item(InputItem::Doc(raw)) => {
                    let charset = raw.charset.as_deref();
                    match canonicalize_with(&raw.bytes, raw.format, charset, fp_opts.extract) {
                        Ok(c) => {
                            let len = raw.bytes.len() as u64;
                            (raw.key, raw.origin, len, raw.url, c.text, None, None)
                        }
                        Err(why) => {
                            let r = why.to_string();
                            reject(s, reports, opts.strict, raw.key, raw.origin, r)?;
                            continue;
                        }
                    }
                }
                Incoming::Prepared(i, p) => {
                    let origin = memory_origin(i);
                    if let Err(r) = memory_check(&p.key, p.bytes, opts.input.max_doc_bytes) {
                        reject(s, reports, opts.strict, p.key, origin, r)?;
                        continue;
                    }
                    (p.key, origin, p.bytes, None, p.text, Some(p.fp), p.hint)
                }
            };
            if !n.intake.first_of_key(&key) {
                let reason = DUPLICATE_KEY.to_string();
                reject(s, reports, opts.strict, key, origin, reason)?;
                continue;
            }
            let fp = match prepared {
                Some(fp) => fp,
                None => fingerprint(&text, &fp_opts),
            };
            let status = match n.intake.known(catalog, &key, &fp.digest)? {
                Known::Unchanged(old) => {
                    s.unchanged += 1;
                    reports.push(DocReport::of(key, DocStatus::Unchanged, old));
                    continue;
                }
                Known::Replaced => {
                    s.replaced += 1;
                    DocStatus::Replaced
                }
                Known::New => DocStatus::New,
            };
            let doc = n
                .doc_lo
                .checked_add(n.news.len() as u32)
                .ok_or_else(|| Error::InvalidArgument("doc ids exhausted".into()))?;
            n.intake.exact(catalog, doc, &fp.digest)?;
            let x = method_extras(&text, &fp, &fp_opts, m_opts);
            let delta = DeltaDoc {
                has_words: fp.words > 0,
                // the SIMHASH tables' value (shingle or filtered simhashes differ from the
                // catalog's); idf and boilerplate-filtered ones are set by finish_method_data
                simhash: x.simhash.unwrap_or(fp.simhash),
                features: fp.features.clone(),
                supers: x.supers.clone(),
                sim384: x.sim384,
                imatch: Vec::new(), // set by finish_method_data, once the call's terms are known
            };
            n.methods.add(doc, &fp, x)?;
            reports.push(DocReport::of(key.clone(), status, doc));
            n.news
                .push((DocRecord::new(key, batch_id, &fp, len, url), delta));
            n.hints.push(hint);
        }
        Ok(n)
    }

    /// The "method data" stage: what needs the whole call's documents (I-Match signatures,
    /// idf-weighted or boilerplate-filtered simhashes) into their delta entries.
    fn finish_method_data(&self, n: &mut NewDocs) -> Result<()> {
        let catalog = &self.catalog;
        for (sig, doc) in n.methods.imatch_signatures(catalog)? {
            n.news[(doc - n.doc_lo) as usize].1.imatch.push(sig);
        }
        for (doc, h) in n.methods.deferred_simhashes(catalog)? {
            n.news[(doc - n.doc_lo) as usize].1.simhash = h;
        }
        Ok(())
    }

    /// The "match" stage: the new documents against everything, themselves included, through
    /// a small private segment of them (`build::delta::map`, the delta's own code: a
    /// scratch file mapped and unlinked at once).
    /// Returns the view they were matched in (replaced documents tombstoned) and the pairs at
    /// the cluster threshold. Times the "segment" and "match" phases.
    fn match_new_docs(
        &self,
        n: &NewDocs,
        lap: &mut Lap,
        s: &mut AddSummary,
    ) -> Result<(View, Vec<Pair>)> {
        let (doc_lo, doc_hi) = (n.doc_lo, n.doc_hi());
        let extra_tombs = n.intake.replaced_tombstones();
        let view = if n.news.is_empty() {
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
                .with_new_segment(Path::new(""), none, Vec::new(), &extra_tombs)?
        } else {
            let methods = &self.options().methods;
            let (entry, seg) = delta_segment::map(&n.delta_docs(), methods, 0)?
                .expect("the add has new documents");
            // Written by this call a moment ago: no need to check its blocks on first use.
            seg.assume_verified();
            let sizes: Vec<u32> = n.news.iter().map(|(r, _)| r.features).collect();
            self.view
                .with_open_segment(entry, seg, &sizes, &extra_tombs)?
        };
        s.phase_micros[1] += lap.next();
        let cfg = PairsConfig {
            max_df: self.options().max_df,
            ..PairsConfig::new(
                self.options().fingerprint()?.sample,
                self.options().cluster_threshold()?,
            )
        };
        let hinted = cfg.max_df.is_none() && n.hints.iter().any(|h| h.is_some());
        let pairs = if hinted {
            match_with_hints(&view, &cfg, n)?
        } else {
            collect_pairs(&view, &cfg, doc_lo..doc_hi, doc_lo)?.0
        };
        s.phase_micros[2] += lap.next();
        Ok((view, pairs))
    }

    /// The "publish" stage: clusters, catalog records, delta entries and batch record in ONE
    /// catalog write (synced unless `p.sync` is false); then the writer's next view: the view
    /// the documents were matched in, whose segment of them becomes a piece of the delta (no
    /// full reload). Returns the changed clusters. Times the "stage", "commit" and "snapshot"
    /// phases.
    fn publish_new_docs(
        &mut self,
        n: &NewDocs,
        view: View,
        pairs: &[Pair],
        p: &Publish<'_>,
        lap: &mut Lap,
        s: &mut AddSummary,
    ) -> Result<HashMap<u32, u32>> {
        let (name, batch_id) = (p.name, p.batch_id);
        let catalog = &self.catalog;
        let (doc_lo, doc_hi) = (n.doc_lo, n.doc_hi());
        let mut wb = catalog.batch_writer();
        let clusters = publish::stage_clusters(
            catalog,
            &mut wb,
            &view,
            self.options().fingerprint()?.sample,
            self.options().cluster_threshold()?,
            &n.intake.replaced_ids(),
            pairs,
            doc_lo,
        )?;
        // The call's pairs into the stored pairs (`pairs` answers from them).
        let options = self.options();
        let t = options.cluster_threshold()?;
        publish::stage_pairs(catalog, &mut wb, t, &options.sample, pairs)?;
        // The segment the new documents were matched in holds exactly them: the next
        // snapshot keeps it as a piece of the delta (its file goes with the temporary
        // folder, the mapping stays).
        let has_piece = !n.news.is_empty()
            && view
                .segments
                .last()
                .is_some_and(|p| p.entry.doc_lo == doc_lo && p.entry.doc_hi == doc_hi);
        let ids: Vec<u32> = (doc_lo..doc_hi).collect();
        for (doc, (_, delta)) in ids.iter().zip(&n.news) {
            wb.put_delta(*doc, delta);
        }
        let docs = ids.iter().copied().zip(n.news.iter().map(|(r, _)| r));
        publish::stage_docs(
            catalog,
            &mut wb,
            docs,
            &n.intake.digests,
            &n.intake.replaced,
        )?;
        s.added = n.news.len() as u64 - s.replaced;
        let record = BatchRecord::now(
            name,
            doc_lo,
            doc_hi,
            s.added,
            s.replaced,
            s.unchanged,
            s.errors,
            None,
        );
        publish::stage_batch(&mut wb, catalog.manifest()?, batch_id, &record);
        n.methods.stage(catalog, &mut wb)?;
        s.phase_micros[3] += lap.next();
        if p.sync {
            catalog.commit(wb)?;
        } else {
            catalog.commit_unsynced(wb)?;
        }
        s.phase_micros[4] += lap.next();
        // The new snapshot is the view the documents were matched in (no full reload, no
        // second copy of the index's per-document sizes).
        let view = if has_piece || n.news.is_empty() {
            view.after_add(&self.catalog, self.options(), has_piece)?
        } else {
            drop(view);
            View::load(self.dir(), &self.catalog, self.options())?
        };
        self.view = std::sync::Arc::new(view);
        s.phase_micros[5] += lap.next();
        Ok(clusters)
    }

    /// The "fold" stage: folds the delta into a segment once it has grown past the call's
    /// `fold_docs` or `fold_bytes`; sets `delta_docs` and `folded`.
    fn fold_if_due(&mut self, opts: &AddOptions, s: &mut AddSummary) -> Result<()> {
        let (delta_docs, delta_features) = self.view.delta_size();
        if delta_docs >= opts.fold_docs || delta_features * 8 >= opts.fold_bytes {
            s.folded = Some(self.fold_delta()?);
            s.delta_docs = 0;
        } else {
            s.delta_docs = delta_docs;
        }
        Ok(())
    }
}

/// The "match" stage of documents that came with their check's hints (no commonality
/// limit): the pairs `collect_pairs(view, cfg, doc_lo..doc_hi, doc_lo)` finds, searching
/// only what each hint does not cover. For a new document `a` whose hint is usable (same
/// sampling, its threshold at most the cluster threshold): the hint's documents still live
/// in `view`, verified again at the cluster threshold, plus a search of the segments that
/// may hold ids from the hint's snapshot on (the documents added since, this call's own
/// included) for ids from there. Every pair of the full search is found: a partner older
/// than the hint's snapshot and live now was live then, and the check's exact search found
/// it at the lower threshold. A document without a usable hint is searched in full.
fn match_with_hints(view: &View, cfg: &PairsConfig, n: &NewDocs) -> Result<Vec<Pair>> {
    let matcher = Matcher::new(view, cfg.sample, cfg.threshold);
    crate::query::with_scratch(view.doc_ids(), |scratch| {
        match_with_scratch(view, cfg, n, &matcher, scratch)
    })
}

/// [`match_with_hints`] with the thread's matcher scratch.
fn match_with_scratch(
    view: &View,
    cfg: &PairsConfig,
    n: &NewDocs,
    matcher: &Matcher<'_>,
    scratch: &mut Scratch,
) -> Result<Vec<Pair>> {
    let doc_lo = n.doc_lo;
    let (mut x, mut other, mut found) = (Vec::new(), Vec::new(), Vec::new());
    let mut recent: Option<(u32, View)> = None;
    let mut pairs = Vec::new();
    for (i, hint) in n.hints.iter().enumerate() {
        let a = doc_lo + i as u32;
        if !(view.is_live(a) && view.size(a) > 0 && view.features_into(a, &mut x)?) {
            continue;
        }
        found.clear();
        let usable = hint.as_ref().filter(|h| {
            h.sample == cfg.sample
                && h.threshold.as_f64() <= cfg.threshold.as_f64()
                && h.doc_ids <= doc_lo
        });
        match usable {
            None => matcher.search(&x, |d| d > a || d < doc_lo, scratch, &mut found)?,
            Some(h) => {
                let (lo, hi) = cfg.sample.size_bounds(cfg.threshold, x.len());
                for &b in &h.docs {
                    let m = view.size(b) as usize;
                    if b >= h.doc_ids || !view.is_live(b) || m < lo || m > hi {
                        continue;
                    }
                    if !view.features_into(b, &mut other)? {
                        continue;
                    }
                    if let Some(ov) = cfg.sample.verify(&x, &other, cfg.threshold) {
                        found.push(Match::of(b, ov));
                    }
                }
                if recent.as_ref().is_none_or(|r| r.0 != h.doc_ids) {
                    recent = Some((h.doc_ids, view.since(h.doc_ids)));
                }
                let since = &recent.as_ref().expect("set above").1;
                let from = h.doc_ids;
                Matcher::new(since, cfg.sample, cfg.threshold).search(
                    &x,
                    |d| d >= from && (d > a || d < doc_lo),
                    scratch,
                    &mut found,
                )?;
            }
        }
        pairs.extend(found.iter().map(|m| {
            let (lo, hi) = if a < m.doc { (a, m.doc) } else { (m.doc, a) };
            Pair {
                a: lo,
                b: hi,
                m: *m,
            }
        }));
    }
    pairs.sort_unstable_by_key(|p| (p.a, p.b));
    Ok(pairs)
}

/// What the publish stage writes besides the documents: the batch's name and id, and
/// whether the catalog write is synced ([`AddOptions::sync`]).
struct Publish<'a> {
    name: &'a str,
    batch_id: u32,
    sync: bool,
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
    reports.push(DocReport::rejected(key, origin, reason));
    Ok(())
}
