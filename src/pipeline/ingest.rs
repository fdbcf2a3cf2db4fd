//! Batch ingest: read -> canonicalize and fingerprint (both cores) -> forward lists and sorted
//! postings streamed into one new segment -> match the new documents against the whole index
//! -> fold new edges into the clusters -> publish segment, documents, clusters and batch record
//! in one synced RocksDB write.
//!
//! The new documents' catalog records are staged while the batch is read (`docs`, `keys`,
//! `digests` entries above the published `meta/next_doc`, which every reader ignores:
//! `store::staged`), so the heap does not grow with the batch. Until the publishing write
//! nothing is visible: a crash before it leaves an unpublished segment file and staged entries
//! that the next writer removes, so a batch is all there or not at all. A key already indexed
//! with the same canonical text is skipped ("unchanged"), so re-running an ingest is safe.
//!
//! [`Index::ingest`] runs the stages in order, each a function of its own: name the batch
//! (`batch::name`), `Index::start_batch`, `Index::read_batch` (read, canonicalize,
//! fingerprint, and file each document: checks, doc id, FORWARD entry, sort records),
//! `NewSegment::write` (POSTINGS, FREQUENT, method tables), `Index::match_batch`,
//! `Index::publish_batch` (clusters, the one catalog write) and `Index::report_batch`.

use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::batch::intake::{Known, StagedIntake, DUPLICATE_KEY};
use crate::batch::report::Outcome;
use crate::batch::{self, publish, Named};
use crate::build::{BuiltSegment, SegmentBuilder};
use crate::canonicalize::canonicalize_with;
use crate::error::{Error, Result};
use crate::fingerprint::{fingerprint, Fingerprint, FingerprintOptions};
use crate::index::Index;
use crate::input::{read_source, InputItem, InputOptions, Source};
use crate::method::writer::{extras as method_extras, DocExtras, MethodWriter};
use crate::method::MethodOptions;
use crate::pipeline::pairs::{for_each_pair, Matching, PairsConfig};
use crate::pipeline::plan::Pair;
use crate::pipeline::spool::ReportSpool;
use crate::segment::PendingSync;
use crate::sort::prefault::Bounded;
use crate::sort::{DocKeys, DocPair, ExternalSorter, KeyDoc, SortOptions, Spool};
use crate::store::{DocRecord, Manifest};
use crate::view::View;

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
    /// CPU time of the whole process (all threads, user + system) by stage: with
    /// `stage_seconds`, how many cores a stage kept busy; unlike wall time, not inflated by
    /// other work on the machine (benchmarks).
    #[serde(default)]
    pub stage_cpu_seconds: StageSeconds,
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
        InputItem::Doc(raw) => {
            let canon = canonicalize_with(
                &raw.bytes,
                raw.format,
                raw.charset.as_deref(),
                fp_opts.extract,
            );
            let bytes = raw.bytes.len() as u64;
            drop(raw.bytes);
            match canon {
                Ok(canon) => {
                    let fp = fingerprint(&canon.text, fp_opts);
                    Prepared::Doc {
                        key: raw.key,
                        url: raw.url,
                        origin: raw.origin,
                        bytes,
                        extras: method_extras(&canon.text, &fp, fp_opts, m_opts),
                        fp,
                    }
                }
                Err(why) => Prepared::Bad {
                    key: raw.key,
                    origin: raw.origin,
                    reason: why.to_string(),
                },
            }
        }
    }
}

/// Documents read but not yet filed, at most (the reader waits beyond it); bounded in bytes
/// too, so memory stays small. A document larger than the byte bound goes alone.
const AHEAD_DOCS: usize = 512;
const AHEAD_BYTES: u64 = 64 << 20;
/// Documents between two progress calls.
const PROGRESS_DOCS: u64 = 256;
/// Consecutive documents handed from the reader to a worker, and back to the filer, as one
/// group of at most this many documents and (beyond its first) bytes: one channel message
/// and thread wake-up per group instead of per document (llvm-docs: 3,228 pages, median
/// 7 KB, were ~14k futex calls and ~4k context switches an ingest).
const GROUP_DOCS: usize = 32;
const GROUP_BYTES: u64 = 256 << 10;

/// The documents read and not yet filed, and whether the consumer is gone.
#[derive(Default)]
struct Ahead {
    docs: usize,
    bytes: u64,
    closed: bool,
    /// The reader waits for credits (only then does a give wake it).
    waiting: bool,
}

/// The read-ahead bound shared by the reader (takes) and the filer (gives back).
#[derive(Default)]
struct Credits {
    state: std::sync::Mutex<Ahead>,
    changed: std::sync::Condvar,
}

/// What [`Credits::take`] did.
#[derive(Debug, PartialEq, Eq)]
enum Take {
    Taken,
    /// It would have to wait (only when asked not to).
    Full,
    /// The consumer is gone.
    Closed,
}

impl Credits {
    /// One more document of `bytes`, waiting until it fits if `wait`, else `Full` when it
    /// does not fit now.
    fn take(&self, bytes: u64, wait: bool) -> Take {
        let Ok(mut a) = self.state.lock() else {
            return Take::Closed;
        };
        while !a.closed && a.docs > 0 && (a.docs >= AHEAD_DOCS || a.bytes + bytes > AHEAD_BYTES) {
            if !wait {
                return Take::Full;
            }
            a.waiting = true;
            a = match self.changed.wait(a) {
                Ok(a) => a,
                Err(_) => return Take::Closed,
            };
        }
        a.waiting = false;
        if a.closed {
            return Take::Closed;
        }
        a.docs += 1;
        a.bytes += bytes;
        Take::Taken
    }

    fn give(&self, bytes: u64) {
        let wake = match self.state.lock() {
            Ok(mut a) => {
                a.docs = a.docs.saturating_sub(1);
                a.bytes = a.bytes.saturating_sub(bytes);
                a.waiting
            }
            Err(_) => true,
        };
        if wake {
            self.changed.notify_all();
        }
    }

    fn close(&self) {
        if let Ok(mut a) = self.state.lock() {
            a.closed = true;
        }
        self.changed.notify_all();
    }
}

fn item_bytes(item: &InputItem) -> u64 {
    match item {
        InputItem::Doc(d) => d.bytes.len() as u64,
        InputItem::Bad { .. } => 0,
    }
}

/// Consecutive documents from sequence number `.0` on.
type Group<T> = (u64, Vec<T>);

/// The prepared documents of [`prepare_stream`] in input order.
struct PreparedStream {
    rx: Receiver<Group<(u64, Prepared)>>,
    /// Groups prepared out of order, waiting for the ones before them, by first sequence
    /// number: `(bytes read, document)` each.
    waiting: std::collections::BTreeMap<u64, Vec<(u64, Prepared)>>,
    /// The group being handed out (reversed: the next document last).
    current: Vec<(u64, Prepared)>,
    next: u64,
    credits: std::sync::Arc<Credits>,
    threads: Vec<JoinHandle<()>>,
}

impl Iterator for PreparedStream {
    type Item = Prepared;

    fn next(&mut self) -> Option<Prepared> {
        loop {
            if let Some((bytes, p)) = self.current.pop() {
                self.next += 1;
                self.credits.give(bytes);
                return Some(p);
            }
            if let Some(mut g) = self.waiting.remove(&self.next) {
                g.reverse();
                self.current = g;
                continue;
            }
            // Every document before `next` is out; the channel ends when all are prepared.
            let (seq, g) = self.rx.recv().ok()?;
            self.waiting.insert(seq, g);
        }
    }
}

impl PreparedStream {
    /// Waits for the reader and the workers (after the stream is drained).
    fn join(mut self) {
        self.credits.close();
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
    }
}

impl Drop for PreparedStream {
    /// A consumer that stops early releases the reader (the workers end when their sends fail
    /// and the reader's channel closes).
    fn drop(&mut self) {
        self.credits.close();
    }
}

/// Reads `source` on a thread of its own and canonicalizes and fingerprints its documents on
/// one worker thread per core, each taking the next group of documents as it finishes the
/// last (no chunk waits for its slowest document), so later documents are prepared while the
/// caller files earlier ones. The stream hands them out in input order; at most `AHEAD_DOCS`
/// documents and `AHEAD_BYTES` of input are read and not yet filed. Small documents travel
/// in groups (`GROUP_DOCS`, `GROUP_BYTES`); the reader sends the group it holds before it
/// would wait for credits, so it never holds back what the filer waits for. The caller
/// drains the stream, then joins it.
fn prepare_stream(
    source: Source,
    input: InputOptions,
    fp_opts: FingerprintOptions,
    m_opts: MethodOptions,
) -> PreparedStream {
    let credits = std::sync::Arc::new(Credits::default());
    let (tx, rx) = sync_channel::<Group<InputItem>>(AHEAD_DOCS);
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let mut threads = Vec::new();
    let cr = std::sync::Arc::clone(&credits);
    threads.push(std::thread::spawn(move || {
        let mut group: Group<InputItem> = (0, Vec::new());
        let mut group_bytes = 0u64;
        for (seq, item) in read_source(source, input).enumerate() {
            let bytes = item_bytes(&item);
            let full = group.1.len() >= GROUP_DOCS
                || (!group.1.is_empty() && group_bytes + bytes > GROUP_BYTES);
            let mut got = if full {
                Take::Full
            } else {
                cr.take(bytes, false)
            };
            if got == Take::Full {
                // Send what is held before waiting: the filer may be waiting for it.
                if !group.1.is_empty() {
                    let g = std::mem::replace(&mut group, (seq as u64, Vec::new()));
                    group_bytes = 0;
                    if tx.send(g).is_err() {
                        return;
                    }
                }
                got = cr.take(bytes, true);
            }
            if got != Take::Taken {
                return;
            }
            if group.1.is_empty() {
                group.0 = seq as u64;
            }
            group.1.push(item);
            group_bytes += bytes;
        }
        if !group.1.is_empty() {
            let _ = tx.send(group);
        }
    }));
    let (ptx, prx) = std::sync::mpsc::channel::<Group<(u64, Prepared)>>();
    let workers = rayon::current_num_threads().max(1);
    for _ in 0..workers {
        let (rx, ptx) = (std::sync::Arc::clone(&rx), ptx.clone());
        let (fp_opts, m_opts) = (fp_opts, m_opts.clone());
        threads.push(std::thread::spawn(move || loop {
            let got = match rx.lock() {
                Ok(r) => r.recv(),
                Err(_) => return,
            };
            let Ok((seq, items)) = got else { return };
            let done = items
                .into_iter()
                .map(|item| (item_bytes(&item), prepare(item, &fp_opts, &m_opts)))
                .collect();
            if ptx.send((seq, done)).is_err() {
                return;
            }
        }));
    }
    PreparedStream {
        rx: prx,
        waiting: std::collections::BTreeMap::new(),
        current: Vec::new(),
        next: 0,
        credits,
        threads,
    }
}

/// A batch's documents read and prepared (canonicalized, fingerprinted) while the index it
/// goes into is still being created: [`EarlyInput::start`] before `Index::open_writer`
/// creates a new index, then [`Index::ingest_early`]. Creating an index (its catalog and
/// their fsyncs) takes 0.03 s on an idle machine and 0.1 s when the disk is busy, with both
/// cores otherwise idle. The documents are read with the fingerprint and method options an
/// index created from `create` has; the ingest checks that the opened index has exactly those
/// (else it fails and nothing is ingested).
pub struct EarlyInput {
    stream: PreparedStream,
    fp: FingerprintOptions,
    methods: MethodOptions,
}

impl EarlyInput {
    /// Starts reading `inputs` for an index that `Index::open_writer(dir, create)` is about
    /// to create. None (nothing read) when `dir` holds a catalog already (its stored options
    /// decide) or when `create`'s options are invalid (the creation reports that).
    pub fn start(
        dir: &std::path::Path,
        create: &crate::options::CreateOptions,
        inputs: impl Into<Source>,
        input: &InputOptions,
    ) -> std::result::Result<EarlyInput, Source> {
        let inputs = inputs.into();
        if dir.join(crate::index::CATALOG_DIR).join("CURRENT").exists() {
            return Err(inputs);
        }
        let o = crate::options::IndexOptions::from_create(create);
        let fp = match o.fingerprint() {
            Ok(fp) if fp.validate().is_ok() && o.methods.validate().is_ok() => fp,
            _ => return Err(inputs),
        };
        let methods = o.methods.clone();
        let stream = prepare_stream(inputs, input.clone(), fp, methods.clone());
        Ok(EarlyInput {
            stream,
            fp,
            methods,
        })
    }
}

/// Where a batch's documents come from: a source read now, or read ahead already.
enum BatchInput {
    Source(Source),
    Early(EarlyInput),
}

/// The batch's new segment while its documents arrive: FORWARD entries streamed into the
/// segment builder, `(feature, doc)` records into the external sort, method data collected.
struct NewSegment {
    builder: SegmentBuilder,
    sorter: ExternalSorter<KeyDoc>,
    methods: MethodWriter,
    /// The documents' feature lists, kept instead of pushed into `sorter` while they fit.
    kept: Option<KeptLists>,
}

/// A batch's feature hashes as the read stage made them, one document's list after the other
/// from `first_doc` on, for a batch into an empty index: the postings are sorted from them
/// (`SegmentBuilder::postings_from_lists`: no sort buffer of the same records in doc order)
/// and the prefix self-join takes them instead of reading the lists back. At most a sixteenth
/// of --mem, the ends included; past it they go to the sorter and none are kept.
struct KeptLists {
    hashes: Bounded,
    /// Where each document's list ends in `hashes`.
    ends: Vec<u64>,
    first_doc: u32,
}

impl NewSegment {
    /// Adds new document `doc` (ids ascend).
    fn add(&mut self, doc: u32, fp: &Fingerprint, extras: DocExtras) -> Result<()> {
        self.builder.forward(doc, &fp.features)?;
        if !self.keep(doc, &fp.features)? {
            for &f in &fp.features {
                self.sorter.push(KeyDoc { key: f, doc })?;
            }
        }
        self.methods.add(doc, fp, extras)
    }

    /// Keeps `doc`'s features in the kept lists; false when none are kept (any more: lists
    /// that would pass their budget, or a doc id out of turn, send what was kept to the
    /// sorter first).
    fn keep(&mut self, doc: u32, features: &[u64]) -> Result<bool> {
        let Some(mut k) = self.kept.take() else {
            return Ok(false);
        };
        let in_turn = doc as u64 == k.first_doc as u64 + k.ends.len() as u64;
        let room = k.hashes.max() - k.hashes.values().len();
        if in_turn && features.len() + k.ends.len() < room && k.hashes.extend(features) {
            k.ends.push(k.hashes.values().len() as u64);
            self.kept = Some(k);
            return Ok(true);
        }
        self.sorter.push_lists(&DocKeys {
            keys: k.hashes.values(),
            ends: &k.ends,
            first_doc: k.first_doc,
        })?;
        Ok(false)
    }

    /// The "write segment" stage: POSTINGS and FREQUENT from the sorted records, straight
    /// into the segment, then the method tables. The segment stays unpublished (removed
    /// when dropped) until the catalog names it; the methods' catalog part is staged later.
    /// Its fsyncs run while the batch is matched: wait for the [`PendingSync`] before the
    /// publish.
    /// Returns the kept feature hashes too, if any.
    fn write(self, catalog: &crate::store::Catalog) -> Result<Written> {
        let NewSegment {
            mut builder,
            sorter,
            mut methods,
            kept,
        } = self;
        let hashes = match kept {
            Some(k) => {
                let lists = DocKeys {
                    keys: k.hashes.values(),
                    ends: &k.ends,
                    first_doc: k.first_doc,
                };
                builder.postings_from_lists(sorter, &lists)?;
                k.hashes.into_vec()
            }
            None => {
                builder.postings_from_sorter(sorter)?;
                None
            }
        };
        methods.write_tables(&mut builder, catalog)?;
        let (built, synced) = builder.finish_deferred_sync()?;
        Ok((built, methods, synced, hashes))
    }
}

/// What [`NewSegment::write`] returns: the segment built, the method tables' catalog part,
/// the segment's pending fsync and the batch's kept feature hashes.
type Written = (BuiltSegment, MethodWriter, PendingSync, Option<Vec<u64>>);

/// A batch being ingested: what one stage hands the next.
struct Batch {
    name: String,
    id: u32,
    s: IngestSummary,
    manifest: Manifest,
    seg_id: u64,
    doc_lo: u32,
    next_doc: u32,
    /// Reports wait for the publish (cluster ids) in a spool file under DIR/tmp.
    reports: ReportSpool,
    intake: StagedIntake,
    /// `(doc, feature count)` of each new document, in id order, spooled to a run file until
    /// the match stage reads them into the view (their records are staged in the catalog).
    sizes: Option<Spool<DocPair>>,
}

/// Capacity reserved for a batch's kept feature hashes, whatever their budget: more than
/// glibc's largest dynamic mmap threshold (32 MiB), so the buffer is a mapping of its own that
/// grows by remapping and whose release does not raise the threshold (a smaller buffer, freed,
/// raised it and left later large allocations in the heap: +29 MiB peak heap at `--mem
/// 64MiB`). Only the pages written count as memory.
const BATCH_HASHES_RESERVE: usize = (40 << 20) / 8;

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
        let inputs = BatchInput::Source(inputs.into());
        self.read_ahead_staged(|ix| ix.ingest_batch(inputs, opts, report, progress))
    }

    /// [`Index::ingest`] of documents read ahead by [`EarlyInput::start`] (with `opts.input`
    /// as they were read with). Fails, ingesting nothing, if this index's fingerprint or
    /// method options are not those the documents were prepared with (another process
    /// created the index meanwhile).
    pub fn ingest_early(
        &mut self,
        early: EarlyInput,
        opts: &IngestOptions,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<IngestSummary> {
        self.require_writer()?;
        if early.fp != self.options().fingerprint()? || early.methods != self.options().methods {
            return Err(Error::InvalidArgument(format!(
                "index {}: its options changed while the batch was read ahead (another process \
                 created it); nothing was ingested, run the ingest again",
                self.dir().display()
            )));
        }
        self.read_ahead_staged(|ix| {
            ix.ingest_batch(BatchInput::Early(early), opts, report, progress)
        })
    }

    /// Runs a batch's ingest while the old segments' key filters and the catalog families the
    /// checks look up are read ahead from a cold page cache (stopped when it returns); on an
    /// error nothing was published, so what the batch staged is removed (the next writer
    /// would).
    fn read_ahead_staged<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let _read_ahead = self.view.ingest_read_ahead(&self.catalog);
        let result = f(self);
        if result.is_err() {
            let _ = self.catalog.discard_staged();
        }
        result
    }

    fn ingest_batch(
        &mut self,
        inputs: BatchInput,
        opts: &IngestOptions,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<IngestSummary> {
        let started = Instant::now();
        let (name, id) = match batch::name(&self.catalog, opts.batch.as_deref(), "batch")? {
            Named::New { name, id } => (name, id),
            Named::Done { name, id } => {
                return Ok(IngestSummary {
                    batch: name,
                    batch_id: id,
                    already_ingested: true,
                    ..Default::default()
                })
            }
        };
        let mut cpu = CpuLap::start();
        let (mut b, seg) = self.start_batch(name, id, opts)?;
        let seg = self.read_batch(&mut b, seg, inputs, opts, progress)?;

        progress(Progress::Stage("sorting postings"));
        let mut lap = Instant::now();
        b.s.stage_seconds.read = started.elapsed().as_secs_f64();
        b.s.stage_cpu_seconds.read = cpu.lap();
        let (mut built, methods, synced, hashes) = seg.write(&self.catalog)?;
        b.s.segment_bytes = built.meta.bytes;

        progress(Progress::Stage("matching"));
        b.s.stage_seconds.postings = lap.elapsed().as_secs_f64();
        b.s.stage_cpu_seconds.postings = cpu.lap();
        lap = Instant::now();
        let (view, pairs) = self.match_batch(&mut b, &mut built, hashes, opts)?;

        progress(Progress::Stage("publishing"));
        b.s.stage_seconds.matching = lap.elapsed().as_secs_f64();
        b.s.stage_cpu_seconds.matching = cpu.lap();
        lap = Instant::now();
        synced.wait()?; // the segment on disk before the catalog names it
        let clusters = self.publish_batch(&mut b, view, built, methods, &pairs)?;
        b.s.stage_seconds.publish = lap.elapsed().as_secs_f64();
        b.s.stage_cpu_seconds.publish = cpu.lap();

        self.report_batch(b, &pairs, &clusters, started, report)
    }

    /// The "start" stage: the batch's state, its segment (FORWARD open; removed unless
    /// published), the external sort of its postings and the spool of its reports.
    fn start_batch(
        &self,
        name: String,
        id: u32,
        opts: &IngestOptions,
    ) -> Result<(Batch, NewSegment)> {
        let catalog = &self.catalog;
        // A failed batch of this handle's earlier calls may have left staged entries.
        catalog.discard_staged()?;
        let manifest = catalog.manifest()?;
        let doc_lo = catalog.next_doc()?;
        let seg_id = manifest.next_segment_id();
        // Until the catalog names the segment, any early return removes its file(s) (the next
        // writer's orphan sweep would too; this keeps a failed run from leaving litter).
        let builder = SegmentBuilder::create_version(
            self.dir().join(crate::index::SEGMENTS_DIR),
            &Manifest::file_name(seg_id),
            self.options().segment_format()?,
        )?;
        // Format 3 sorts the postings a second time, by doc, into FORWARD rank lists while
        // the first sort's output is still streaming: each sort gets half of --mem.
        let mem_bytes = if builder.ranked_forward() {
            (opts.mem_bytes / 2).max(64)
        } else {
            opts.mem_bytes
        };
        let sort = SortOptions {
            mem_bytes,
            tmp_dir: self.tmp_dir(),
            ..SortOptions::default()
        };
        let mut builder = builder.with_sort(sort.clone());
        // The POSTINGS keys stay in memory (an eighth of --mem at most) for the matching,
        // which maps the new documents' ranks through them (`Segment::seed_keys`).
        builder.keep_keys(opts.mem_bytes / 8);
        let sorter = ExternalSorter::<KeyDoc>::new(sort.clone())?;
        // Only a batch into an empty index is matched by the prefix self-join, which takes
        // the kept lists; they stay while the sort's buffer (--mem) would fill: a sixteenth
        // of --mem.
        let keep = doc_lo == 0
            && self.view.doc_ids() == 0
            && matches!(opts.matching, Matching::Auto | Matching::Prefix)
            && crate::pipeline::prefix::applies_to(&self.pairs_config()?);
        if keep {
            // The self-join skips the keys of one document, most of a batch's (a sixteenth
            // of --mem: 8 bytes a key of several documents).
            builder.keep_shared_keys(opts.mem_bytes / 16);
        }
        let seg = NewSegment {
            builder,
            sorter,
            methods: MethodWriter::new(&self.options().methods).spooled(SortOptions {
                mem_bytes: opts.mem_bytes,
                ..sort.clone()
            }),
            kept: keep.then(|| {
                let mut hashes = Bounded::new(opts.mem_bytes / 16);
                hashes.reserve_exact(BATCH_HASHES_RESERVE);
                KeptLists {
                    hashes,
                    ends: Vec::new(),
                    first_doc: doc_lo,
                }
            }),
        };
        let b = Batch {
            s: IngestSummary {
                batch: name.clone(),
                batch_id: id,
                ..Default::default()
            },
            name,
            id,
            manifest,
            seg_id,
            doc_lo,
            next_doc: doc_lo,
            reports: ReportSpool::new(&self.tmp_dir())?,
            intake: StagedIntake::new(self.view.tombstones.clone()),
            sizes: Some(Spool::new(self.tmp_dir())),
        };
        Ok((b, seg))
    }

    /// The "read" stage: reads, canonicalizes and fingerprints the input
    /// (`prepare_stream`) and files each document in input order (`Index::file_doc`).
    /// With `strict`, the first bad document fails the batch (its segment is removed).
    fn read_batch(
        &self,
        b: &mut Batch,
        mut seg: NewSegment,
        source: BatchInput,
        opts: &IngestOptions,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<NewSegment> {
        let mut prepared = match source {
            BatchInput::Source(source) => {
                let fp_opts = self.options().fingerprint()?;
                let m_opts = self.options().methods.clone();
                prepare_stream(source, opts.input.clone(), fp_opts, m_opts)
            }
            BatchInput::Early(early) => early.stream,
        };
        let mut failure: Option<Error> = None;
        for p in prepared.by_ref() {
            if failure.is_some() {
                continue; // drain the stages so they can finish
            }
            b.s.documents_read += 1;
            failure = self.file_doc(b, &mut seg, p, opts.strict)?;
            if b.s.documents_read.is_multiple_of(PROGRESS_DOCS) {
                progress(Progress::Read {
                    docs: b.s.documents_read,
                    bytes: b.s.input_bytes,
                });
            }
        }
        progress(Progress::Read {
            docs: b.s.documents_read,
            bytes: b.s.input_bytes,
        });
        prepared.join();
        match failure {
            Some(e) => Err(e),
            None => Ok(seg),
        }
    }

    /// Files one prepared document: rejected, unchanged, or new (replacing an older version
    /// of its key or not): the next doc id, its FORWARD entry, sort records and method data,
    /// its catalog record and its report. `Some` error: a rejection that fails a `strict`
    /// batch (once the input is drained).
    fn file_doc(
        &self,
        b: &mut Batch,
        seg: &mut NewSegment,
        p: Prepared,
        strict: bool,
    ) -> Result<Option<Error>> {
        let catalog = &self.catalog;
        let (key, url, origin, bytes, fp, extras) = match p {
            Prepared::Bad {
                key,
                origin,
                reason,
            } => return reject(b, strict, key, origin, reason),
            Prepared::Doc {
                key,
                url,
                origin,
                bytes,
                fp,
                extras,
            } => (key, url, origin, bytes, fp, extras),
        };
        b.s.input_bytes += bytes;
        // This document's staged catalog entries, written before the next one is filed.
        let mut wb = catalog.batch_writer();
        if !b.intake.first_of_key(catalog, &mut wb, &key)? {
            if strict {
                b.s.errors += 1; // the error names the key, not the origin
                let reason = DUPLICATE_KEY.to_string();
                return Ok(Some(Error::Document { key, reason }));
            }
            return reject(b, strict, key, origin, DUPLICATE_KEY.to_string());
        }
        let (known, replaces) = b.intake.known(catalog, &key, &fp.digest)?;
        let status = match known {
            Known::Unchanged(old) => {
                b.s.unchanged += 1;
                catalog.write_staged(wb)?;
                b.reports
                    .push(&DocReport::of(key, DocStatus::Unchanged, old))?;
                return Ok(None);
            }
            Known::Replaced => {
                b.s.replaced += 1;
                DocStatus::Replaced
            }
            Known::New => DocStatus::New,
        };
        let doc = b.next_doc;
        b.next_doc = doc
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("doc ids exhausted".into()))?;
        seg.add(doc, &fp, extras)?;
        b.s.features += fp.features.len() as u64;
        if let Some(old) = replaces {
            b.intake.replace(&mut wb, doc, old);
        }
        let mut r = DocReport::of(key.clone(), status, doc);
        if let Some(e) = b.intake.exact(catalog, &mut wb, doc, &fp.digest)? {
            b.s.exact_duplicates += 1;
            // An earlier document of the batch (staged) or an older one.
            r.exact_duplicate_of = Some(catalog.staged_doc(e)?.map(|r| r.key).unwrap_or_default());
        }
        // The rest of the report is filled in after the publish.
        b.reports.push(&r)?;
        let rec = DocRecord::new(key, b.id, &fp, bytes, url);
        wb.put_doc(doc, &rec);
        if status == DocStatus::New {
            // A replacing document's key names the replaced one until the publish.
            wb.put_key(&rec.key, doc);
        }
        catalog.write_staged(wb)?;
        if let Some(sizes) = b.sizes.as_mut() {
            sizes.push(DocPair {
                a: doc,
                b: rec.features,
            })?;
        }
        Ok(None)
    }

    /// The "match" stage: the new documents against everything, the new segment included
    /// (the view it returns has it, and the replaced documents tombstoned). Returns that view
    /// and the pairs at the cluster threshold, sorted. `hashes`: the batch's kept feature
    /// hashes ([`KeptLists`]), which the prefix self-join takes instead of reading the new
    /// documents' lists back.
    fn match_batch(
        &self,
        b: &mut Batch,
        built: &mut BuiltSegment,
        hashes: Option<Vec<u64>>,
        opts: &IngestOptions,
    ) -> Result<(View, Vec<Pair>)> {
        let (doc_lo, doc_hi) = (b.doc_lo, b.next_doc);
        let entry = built.entry(b.seg_id, doc_lo, doc_hi);
        let entry_file = entry.file.clone();
        let sizes = read_sizes(b.sizes.take(), doc_lo..doc_hi)?;
        let view = self.view.with_new_segment(
            &self.segment_path(&entry.file),
            entry,
            sizes,
            &b.intake.replaced_tombstones(),
        )?;
        let cfg = self.pairs_config()?;
        let sort = SortOptions::new(opts.mem_bytes, self.tmp_dir());
        crate::segment::set_key_cache_budget(crate::segment::key_cache_share(opts.mem_bytes));
        // The new segment, and what this process has of it: the keys the postings stage wrote
        // (instead of decoding them back from the file) and, into an empty index, the read
        // stage's hashes for the prefix self-join.
        let new = (view.segments.len().checked_sub(1))
            .filter(|&si| view.segments[si].entry.file == entry_file);
        if let (Some(keys), Some(si)) = (built.take_keys(), new) {
            view.segments[si].seg.seed_keys(keys);
        }
        let shared = built.take_shared_keys();
        let given = match (hashes, new) {
            (Some(flat), Some(si)) => {
                crate::query::DocLists::from_hashes(&view, si, doc_lo..doc_hi, flat)
                    .map(|l| l.with_shared_keys(shared))
            }
            _ => None,
        };
        let mut pairs = Vec::new();
        let mstats = for_each_pair(
            opts.matching,
            &view,
            &cfg,
            &sort,
            doc_lo..doc_hi,
            doc_lo,
            given,
            |block| {
                pairs.extend_from_slice(block);
                Ok(())
            },
        )?;
        pairs.sort_unstable_by_key(|p| (p.a, p.b));
        let s = &mut b.s;
        s.near_duplicate_pairs = pairs.len() as u64;
        s.postings_visited = mstats.postings_visited;
        s.max_df_keys_cut = mstats.max_df_keys_cut;
        s.max_df_probes_cut = mstats.max_df_probes_cut;
        s.max_df_postings_skipped = mstats.max_df_postings_skipped;
        s.matching_stats = serde_json::to_value(&mstats).ok();
        Ok((view, pairs))
    }

    /// How this index's batches are matched: its sampling and commonality limit at its
    /// cluster threshold.
    fn pairs_config(&self) -> Result<PairsConfig> {
        Ok(PairsConfig {
            max_df: self.options().max_df,
            ..PairsConfig::new(
                self.options().sample()?,
                self.options().cluster_threshold()?,
            )
        })
    }

    /// The "publish" stage: clusters (a replaced document leaves its old cluster, then the
    /// new edges are folded in), documents, manifest, batch record and the methods' catalog
    /// data in ONE synced catalog write; then the segment belongs to the manifest (an empty
    /// batch's is removed) and the writer's view is reloaded. Returns the changed clusters.
    fn publish_batch(
        &mut self,
        b: &mut Batch,
        view: View,
        built: BuiltSegment,
        methods: MethodWriter,
        pairs: &[Pair],
    ) -> Result<std::collections::HashMap<u32, u32>> {
        let catalog = &self.catalog;
        let (doc_lo, doc_hi) = (b.doc_lo, b.next_doc);
        let added = doc_hi - doc_lo;
        let mut wb = catalog.batch_writer();
        let clusters = publish::stage_clusters(
            catalog,
            &mut wb,
            &view,
            self.options().fingerprint()?.sample,
            self.options().cluster_threshold()?,
            &b.intake.replaced_ids(),
            pairs,
            doc_lo,
        )?;
        // The batch's pairs into the stored pairs (`pairs` answers from them).
        let options = self.options();
        let t = options.cluster_threshold()?;
        publish::stage_pairs(catalog, &mut wb, t, &options.sample, pairs)?;
        // The documents are staged already; what waits for the publish, and the scratch keys.
        publish::stage_staged_replacements(catalog, &mut wb)?;
        let s = &mut b.s;
        let mut manifest = std::mem::take(&mut b.manifest);
        if added > 0 {
            manifest
                .segments
                .push(built.entry(b.seg_id, doc_lo, doc_hi));
            s.segment = Some(built.meta.file_name.clone());
        }
        s.added = added as u64 - s.replaced;
        let record = BatchRecord::now(
            &b.name,
            doc_lo,
            doc_hi,
            s.added,
            s.replaced,
            s.unchanged,
            s.errors,
            s.segment.clone(),
        );
        publish::stage_batch(&mut wb, manifest, b.id, &record);
        methods.stage(catalog, &mut wb)?;
        drop(view); // an empty batch's segment file goes with `built`
        catalog.commit(wb)?;
        if added > 0 {
            built.keep(); // published: the file belongs to the manifest now
        }
        self.reload_view()?;
        Ok(clusters)
    }

    /// The "report" stage: each input document's report, now that cluster ids and keys are
    /// final, in input order; then the summary's totals.
    fn report_batch(
        &self,
        b: Batch,
        pairs: &[Pair],
        clusters: &std::collections::HashMap<u32, u32>,
        started: Instant,
        report: &mut dyn FnMut(&DocReport) -> Result<()>,
    ) -> Result<IngestSummary> {
        // Exact duplicates are in the spooled reports already.
        let no_exact = std::collections::HashMap::new();
        let outcome = Outcome::new(&self.catalog, b.doc_lo, pairs, &no_exact, clusters);
        let catalog = &self.catalog;
        b.reports.drain(|mut r| {
            outcome.finish(&mut r, |i| {
                let d = b.doc_lo + i as u32;
                Ok(catalog.doc(d)?.map(|r| r.key).unwrap_or_default())
            })?;
            report(&r)
        })?;
        let mut s = b.s;
        let secs = started.elapsed().as_secs_f64();
        s.seconds = secs;
        s.docs_per_second = s.documents_read as f64 / secs.max(1e-9);
        s.mb_per_second = s.input_bytes as f64 / 1e6 / secs.max(1e-9);
        Ok(s)
    }
}

/// The feature counts of documents `docs` from their spool (`(doc, count)` in id order), in
/// one vector of exactly their number.
fn read_sizes(spool: Option<Spool<DocPair>>, docs: std::ops::Range<u32>) -> Result<Vec<u32>> {
    let n = docs.len();
    let mut sizes = Vec::with_capacity(n);
    if let Some(spool) = spool {
        for r in spool.finish()?.read()? {
            let r = r?;
            if r.a as usize != docs.start as usize + sizes.len() || sizes.len() == n {
                return Err(Error::InvalidArgument(format!(
                    "ingest: feature count of doc {} out of place (batch docs {docs:?})",
                    r.a
                )));
            }
            sizes.push(r.b);
        }
    }
    if sizes.len() != n {
        return Err(Error::InvalidArgument(format!(
            "ingest: {} feature counts for the {n} new documents",
            sizes.len()
        )));
    }
    Ok(sizes)
}

/// The process's CPU time between calls of [`CpuLap::lap`].
struct CpuLap(f64);

impl CpuLap {
    fn start() -> CpuLap {
        CpuLap(process_cpu_seconds())
    }

    /// CPU seconds since the start or the previous lap.
    fn lap(&mut self) -> f64 {
        let now = process_cpu_seconds();
        (now - std::mem::replace(&mut self.0, now)).max(0.0)
    }
}

/// CPU seconds the process has used so far, all threads, user and system
/// (`CLOCK_PROCESS_CPUTIME_ID`); 0 where the clock is unavailable.
fn process_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A rejected document: reported (the rest of the batch goes on), or with `strict` the error
/// that fails the batch.
fn reject(
    b: &mut Batch,
    strict: bool,
    key: String,
    origin: String,
    reason: String,
) -> Result<Option<Error>> {
    b.s.errors += 1;
    if strict {
        return Ok(Some(Error::Document {
            key,
            reason: format!("{reason} ({origin})"),
        }));
    }
    b.reports.push(&DocReport::rejected(key, origin, reason))?;
    Ok(None)
}

#[cfg(test)]
mod staged_tests {
    //! A batch's catalog records are staged while it is read (store::staged): the batch still
    //! publishes as today (statuses, exact duplicates, replacements), a failed batch leaves
    //! nothing, and staged entries are invisible to readers until published.
    use super::*;
    use crate::options::CreateOptions;
    use crate::store::staged::STAGE_PREFIX;
    use crate::store::CF_DOCS;

    fn page(i: u32, edits: u32) -> Vec<u8> {
        let words: Vec<String> = (0..40)
            .map(|w| {
                if w < edits {
                    format!("edit{i}x{w}")
                } else {
                    format!("w{i}y{w}")
                }
            })
            .collect();
        format!("<html><body><p>{}</p></body></html>", words.join(" ")).into_bytes()
    }

    fn run(
        ix: &mut Index,
        name: &str,
        docs: Vec<(&str, Vec<u8>)>,
        strict: bool,
    ) -> Result<(IngestSummary, Vec<DocReport>)> {
        let docs: Vec<(String, Vec<u8>)> = docs
            .into_iter()
            .map(|(k, b)| (format!("{k}.html"), b))
            .collect();
        let opts = IngestOptions {
            batch: Some(name.into()),
            strict,
            mem_bytes: 16 << 20,
            ..IngestOptions::default()
        };
        let mut reports = Vec::new();
        let s = ix.ingest(
            Source::Docs(docs),
            &opts,
            &mut |r| {
                reports.push(r.clone());
                Ok(())
            },
            &|_| {},
        )?;
        Ok((s, reports))
    }

    /// Raw: no `docs` record at or above `meta/next_doc`, no `meta/stage/` key.
    fn assert_nothing_staged(cat: &crate::store::Catalog) {
        let next = cat.next_doc().unwrap();
        let raw_docs = cat.iter_raw(CF_DOCS).count() as u32;
        assert_eq!(raw_docs, next, "docs records beyond next_doc {next}");
        assert!(cat.meta_prefix(STAGE_PREFIX).next().is_none());
    }

    fn key_of(cat: &crate::store::Catalog, k: &str) -> Option<u32> {
        cat.doc_by_key(&format!("{k}.html")).unwrap()
    }

    #[test]
    fn staged_batch_publishes_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        let mut ix = Index::open_writer(&path, &CreateOptions::default()).unwrap();
        let docs = vec![("a", page(1, 0)), ("b", page(2, 0)), ("c", page(3, 0))];
        let (s, _) = run(&mut ix, "one", docs, false).unwrap();
        assert_eq!(s.added, 3);
        let old_a = key_of(ix.catalog(), "a").unwrap();
        let c = key_of(ix.catalog(), "c").unwrap();

        let docs = vec![
            ("d", page(4, 0)), // new
            ("a", page(1, 3)), // replaces a
            ("b", page(2, 0)), // unchanged
            ("d", page(5, 0)), // repeated key: rejected
            ("e", page(3, 0)), // exact duplicate of c (published)
            ("f", page(6, 0)), // new
            ("g", page(6, 0)), // exact duplicate of f (earlier in the batch)
            ("h", page(1, 0)), // the replaced a's text
        ];
        let (s, reports) = run(&mut ix, "two", docs.clone(), false).unwrap();
        let got: Vec<(String, DocStatus, Option<String>)> = reports
            .iter()
            .map(|r| (r.key.clone(), r.status, r.exact_duplicate_of.clone()))
            .collect();
        let want = |k: &str, st, e: Option<&str>| {
            (format!("{k}.html"), st, e.map(|e| format!("{e}.html")))
        };
        assert_eq!(
            got,
            vec![
                want("d", DocStatus::New, None),
                want("a", DocStatus::Replaced, None),
                want("b", DocStatus::Unchanged, None),
                want("d", DocStatus::Error, None),
                want("e", DocStatus::New, Some("c")),
                want("f", DocStatus::New, None),
                want("g", DocStatus::New, Some("f")),
                want("h", DocStatus::New, Some("a")),
            ]
        );
        assert_eq!((s.added, s.replaced, s.unchanged, s.errors), (5, 1, 1, 1));
        assert_eq!(s.exact_duplicates, 3);
        let cat = ix.catalog();
        let new_a = key_of(cat, "a").unwrap();
        assert!(new_a > old_a);
        assert!(cat.tombstones().unwrap().contains(old_a));
        assert_eq!(reports[1].doc, Some(new_a));
        for (k, r) in [("d", &reports[0]), ("e", &reports[4]), ("h", &reports[7])] {
            assert_eq!(key_of(cat, k), r.doc, "{k}");
        }
        let f = key_of(cat, "f").unwrap();
        let digest = |d: u32| cat.doc(d).unwrap().unwrap().digest;
        assert_eq!(cat.doc_by_digest(&digest(f)).unwrap(), Some(f));
        assert_eq!(cat.doc_by_digest(&digest(c)).unwrap(), Some(c));
        assert_eq!(cat.next_doc().unwrap(), old_a + 3 + 6);
        assert_nothing_staged(cat);
        let v = crate::lifecycle::verify::verify_index(&path).unwrap();
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        // The same batch again: nothing happens.
        let (s, _) = run(&mut ix, "two", docs, false).unwrap();
        assert!(s.already_ingested);

        // A strict batch that fails publishes nothing and leaves nothing staged.
        let next = ix.catalog().next_doc().unwrap();
        let docs = vec![("x", page(7, 0)), ("y", page(8, 0)), ("z", Vec::new())];
        assert!(run(&mut ix, "three", docs, true).is_err());
        assert_eq!(ix.catalog().next_doc().unwrap(), next);
        assert_eq!(key_of(ix.catalog(), "x"), None);
        assert_nothing_staged(ix.catalog());
        let v = crate::lifecycle::verify::verify_index(&path).unwrap();
        assert!(v.problems.is_empty(), "{:?}", v.problems);
    }

    #[test]
    fn staged_entries_are_invisible_until_published_and_discarded_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        let mut ix = Index::open_writer(&path, &CreateOptions::default()).unwrap();
        run(
            &mut ix,
            "one",
            vec![("a", page(1, 0)), ("b", page(2, 0))],
            false,
        )
        .unwrap();
        let before = ix.stats().unwrap().documents;
        // What a batch killed in its read stage leaves: a staged document of key "s".
        let cat = ix.catalog();
        let next = cat.next_doc().unwrap();
        let mut rec = cat.doc(0).unwrap().unwrap();
        rec.key = "s.html".into();
        rec.digest = [7; 16];
        let mut wb = cat.batch_writer();
        wb.put_doc(next, &rec);
        wb.put_key(&rec.key, next);
        wb.put_digest(&rec.digest, next);
        wb.stage_key_seen(&rec.key);
        wb.stage_replacement(next, 0);
        cat.write_staged(wb).unwrap();
        assert!(cat.staged_doc(next).unwrap().is_some());
        // The writer's own lookups, a reader's, stats and verify do not see it.
        assert_eq!(key_of(cat, "s"), None);
        assert_eq!(cat.doc_by_digest(&[7; 16]).unwrap(), None);
        let reader = Index::open(&path).unwrap();
        assert_eq!(key_of(reader.catalog(), "s"), None);
        assert_eq!(
            reader.catalog().docs_by_keys(&["s.html"], false).unwrap(),
            vec![None]
        );
        assert_eq!(reader.catalog().doc_by_digest(&[7; 16]).unwrap(), None);
        assert_eq!(reader.stats().unwrap().documents, before);
        let v = crate::lifecycle::verify::verify_index(&path).unwrap();
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        drop(reader);
        // The next writer removes it; the id is allocated again.
        drop(ix);
        let mut ix = Index::open_writer(&path, &CreateOptions::default()).unwrap();
        assert_nothing_staged(ix.catalog());
        assert!(ix.catalog().staged_doc(next).unwrap().is_none());
        let (s, reports) = run(&mut ix, "two", vec![("s", page(9, 0))], false).unwrap();
        assert_eq!(s.added, 1);
        assert_eq!(reports[0].doc, Some(next));
        assert_eq!(key_of(ix.catalog(), "s"), Some(next));
        assert!(!ix.catalog().tombstones().unwrap().contains(0));
        assert_eq!(ix.stats().unwrap().documents, before + 1);
    }
}

#[cfg(test)]
mod early_tests {
    //! Documents read ahead of their index's creation (`EarlyInput`) ingest exactly as
    //! documents read after it; an existing index or other options are refused.
    use super::*;
    use crate::fingerprint::ShingleKind;
    use crate::options::CreateOptions;

    /// Pages in families of seven that share most of their words (near-duplicates).
    fn docs() -> Vec<(String, Vec<u8>)> {
        (0..300u32)
            .map(|i| {
                let words: Vec<String> = (0..80u32)
                    .map(|w| format!("f{}w{}", i % 7, (w + i / 7 % 3) % 97))
                    .collect();
                let html = format!(
                    "<html><body><p>{} own{i}</p></body></html>",
                    words.join(" ")
                );
                (format!("d{i}.html"), html.into_bytes())
            })
            .collect()
    }

    fn create() -> CreateOptions {
        CreateOptions {
            shingle: Some(ShingleKind::Words(5)),
            ..CreateOptions::default()
        }
    }

    fn opts() -> IngestOptions {
        IngestOptions {
            batch: Some("b".into()),
            mem_bytes: 16 << 20,
            ..IngestOptions::default()
        }
    }

    /// A report callback that keeps the reports.
    fn collect(reports: &mut Vec<DocReport>) -> impl FnMut(&DocReport) -> Result<()> + '_ {
        move |r| {
            reports.push(r.clone());
            Ok(())
        }
    }

    /// The batch's reports and its segment's bytes.
    fn outcome(
        path: &std::path::Path,
        s: &IngestSummary,
        reports: Vec<DocReport>,
    ) -> (Vec<DocReport>, Vec<u8>) {
        let seg = s.segment.clone().expect("a segment");
        let bytes = std::fs::read(path.join("segments").join(seg)).unwrap();
        (reports, bytes)
    }

    #[test]
    fn read_ahead_ingests_as_read_after() {
        let dir = tempfile::tempdir().unwrap();
        let (late, early) = (dir.path().join("late"), dir.path().join("early"));
        let mut reports = Vec::new();
        let mut ix = Index::open_writer(&late, &create()).unwrap();
        let s = ix
            .ingest(
                Source::Docs(docs()),
                &opts(),
                &mut collect(&mut reports),
                &|_| {},
            )
            .unwrap();
        let want = outcome(&late, &s, reports);
        assert_eq!(s.added, 300);
        assert!(s.near_duplicate_pairs > 0);

        let mut reports = Vec::new();
        let pre = EarlyInput::start(&early, &create(), Source::Docs(docs()), &opts().input)
            .ok()
            .expect("a new index reads ahead");
        let mut ix = Index::open_writer(&early, &create()).unwrap();
        let s2 = ix
            .ingest_early(pre, &opts(), &mut collect(&mut reports), &|_| {})
            .unwrap();
        assert_eq!(outcome(&early, &s2, reports), want);
        assert_eq!(
            (s2.added, s2.near_duplicate_pairs, s2.features),
            (s.added, s.near_duplicate_pairs, s.features)
        );

        // An index that exists: its stored options decide, nothing is read ahead.
        match EarlyInput::start(&early, &create(), Source::Docs(docs()), &opts().input) {
            Err(Source::Docs(d)) => assert_eq!(d.len(), 300),
            _ => panic!("read ahead for an existing index"),
        }
    }

    #[test]
    fn other_options_are_refused_and_nothing_is_ingested() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        let pre = EarlyInput::start(&path, &create(), Source::Docs(docs()), &opts().input)
            .ok()
            .expect("a new index reads ahead");
        // Another process created it meanwhile, with other shingles.
        let other = CreateOptions {
            shingle: Some(ShingleKind::Words(3)),
            ..CreateOptions::default()
        };
        let mut ix = Index::open_writer(&path, &other).unwrap();
        let e = ix
            .ingest_early(pre, &opts(), &mut |_| Ok(()), &|_| {})
            .unwrap_err();
        assert!(e.to_string().contains("options changed"), "{e}");
        assert_eq!(ix.catalog().next_doc().unwrap(), 0);
        assert!(ix.catalog().manifest().unwrap().segments.is_empty());
    }
}
