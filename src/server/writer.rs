//! The single writer: one thread owns the index's writer handle and applies every write.
//!
//! **Group commit.** Insert requests queue on a channel; the writer takes the first one and
//! every other insert already waiting (up to `max_group_docs` documents, keys disjoint), and
//! applies them as ONE [`Index::add`] call: one synced RocksDB write for the whole group, then
//! one new read snapshot ([`Index::snapshot`]: the writer's catalog and freshly updated view,
//! no reopen), then every request of the group is answered. While a group commits, the next
//! one queues up, so groups grow with the load by themselves: no timer, no added latency when
//! the server is idle.
//!
//! **Sharing the index with other processes.** The writer lock (and RocksDB's) is taken at the
//! first write and given back after `idle` without writes, so a nightly `ndd-index ingest` can
//! run between bursts. While another process holds it, a write waits up to `write_wait` and is
//! then answered 503 with `Retry-After`. Before giving the lock back the writer installs a
//! read-only snapshot and waits until no query still uses the writer's catalog.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use tokio::sync::oneshot;

use super::api::{AddDoc, PreparedDoc};
use super::error::ApiError;
use super::metrics::Metrics;
use super::snapshot::Snapshots;
use crate::canonicalize::DocFormat;
use crate::error::Error;
use crate::lifecycle::add::AddOptions;
use crate::lifecycle::{DeleteSelector, DeleteSummary};
use crate::lifecycle::{MergePolicy, PreparedMerge};
use crate::pipeline::ingest::DocReport;
use crate::{CreateOptions, Index};

/// One document of an insert.
#[derive(Debug)]
pub struct InsertDoc {
    pub key: String,
    pub bytes: Vec<u8>,
    pub format: DocFormat,
    /// The page canonicalized and fingerprinted by its check (then `bytes` is not read),
    /// with the check's hint for the add's matching.
    pub prepared: Option<PreparedDoc>,
}

/// The answer to an insert: one report per document, in order.
pub type InsertReply = Result<Vec<DocReport>, ApiError>;

/// A write request.
pub enum Op {
    Insert {
        docs: Vec<InsertDoc>,
        reply: oneshot::Sender<InsertReply>,
        /// Until when it may wait for another process's writer lock.
        deadline: Instant,
    },
    Delete {
        key: String,
        reply: oneshot::Sender<Result<DeleteSummary, ApiError>>,
        deadline: Instant,
    },
    /// Finish what is queued, give the lock back, end the thread.
    Shutdown,
}

/// Writer settings.
#[derive(Clone, Debug)]
pub struct WriterConfig {
    pub dir: PathBuf,
    /// How long a write waits for another process's writer lock before a 503.
    pub write_wait: Duration,
    /// The lock is given back after this long without writes.
    pub idle: Duration,
    /// Most documents in one group commit.
    pub max_group_docs: usize,
    /// Fold the delta into a segment once it holds this many documents (`add --fold-docs`).
    pub fold_docs: u64,
    /// Requests that may wait in the queue; more are answered 503 at once.
    pub queue: usize,
    /// Sync the WAL on a second thread (the next group is prepared meanwhile); `false`:
    /// every group's write is synced by the writer itself before the next group starts.
    pub pipeline_sync: bool,
    /// With `pipeline_sync`: while the previous group's sync is still in flight, a group of
    /// fewer than `max_group_docs` documents waits up to this long for more requests (its
    /// answer cannot come before that sync anyway). Larger groups pay the per-group costs
    /// (snapshot, matching set-up, delta piece) for more documents. Zero: no waiting.
    pub linger: Duration,
}

/// The handle request handlers use.
pub struct WriterHandle {
    tx: SyncSender<Op>,
    /// True while this server holds the writer lock.
    pub held: Arc<AtomicBool>,
    /// Serializes snapshot swaps between the writer and the manifest watcher.
    pub swap: Arc<Mutex<()>>,
    retry_after: u64,
}

impl WriterHandle {
    /// Queues a write; a full queue is a 503 at once.
    pub fn submit(&self, op: Op) -> Result<(), ApiError> {
        match self.tx.try_send(op) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(ApiError::unavailable(
                "the write queue is full; retry later",
                self.retry_after,
            )),
            Err(TrySendError::Disconnected(_)) => Err(ApiError::unavailable(
                "the server is shutting down",
                self.retry_after,
            )),
        }
    }

    /// Asks the writer to finish (queued writes are still applied).
    pub fn shutdown(&self) {
        let _ = self.tx.send(Op::Shutdown);
    }
}

/// Starts the writer thread.
pub fn spawn(
    cfg: WriterConfig,
    snapshots: Arc<Snapshots>,
    metrics: Arc<Metrics>,
) -> std::io::Result<(WriterHandle, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::sync_channel(cfg.queue.max(1));
    let held = Arc::new(AtomicBool::new(false));
    let swap = Arc::new(Mutex::new(()));
    let retry_after = cfg.write_wait.as_secs().max(1);
    let syncer = if cfg.pipeline_sync {
        Some(Syncer::spawn(
            Arc::clone(&snapshots),
            Arc::clone(&metrics),
            Arc::clone(&swap),
        )?)
    } else {
        None
    };
    let mut w = Writer {
        syncer,
        cfg,
        rx,
        pending: VecDeque::new(),
        index: None,
        snapshots,
        metrics,
        held: Arc::clone(&held),
        swap: Arc::clone(&swap),
        merging: None,
        merge_seq: 0,
    };
    let join = std::thread::Builder::new()
        .name("ndd-writer".into())
        .spawn(move || w.run())?;
    Ok((
        WriterHandle {
            tx,
            held,
            swap,
            retry_after,
        },
        join,
    ))
}

struct Writer {
    cfg: WriterConfig,
    rx: Receiver<Op>,
    /// Requests taken from the channel but left for a later group (a key already in the group).
    pending: VecDeque<Op>,
    index: Option<Index>,
    snapshots: Arc<Snapshots>,
    metrics: Arc<Metrics>,
    held: Arc<AtomicBool>,
    swap: Arc<Mutex<()>>,
    /// Group commits written but not yet synced, answered by the sync thread.
    syncer: Option<Syncer>,
    /// The background merge being written (`Writer::start_merge`), published between groups.
    merging: Option<std::thread::JoinHandle<crate::error::Result<PreparedMerge>>>,
    /// Background merges started (their temporary file names).
    merge_seq: u64,
}

/// How often an idle writer looks at a running background merge (to publish it and start
/// the next one the policy asks for) before it gives the writer lock back.
const MERGE_POLL: Duration = Duration::from_millis(50);

/// The server's merge policy: small segments (folds of the delta and their merges) merge in
/// pairs of one size (a binary counter: after `k` folds at most popcount(k) of them, each
/// document rewritten about log2(k) times), so a probe key visits few segments and a page's
/// earlier copies sit in few of them; no automatic merge writes more than 2 GiB (larger
/// levels are left to `compact`). The merges run off the writer thread.
pub const SERVER_MERGE_POLICY: MergePolicy = MergePolicy {
    min_merge: 2,
    // A level spans sizes within a factor of 1.68, below the ~2x of a merged pair, so a pair
    // merged from one level does not join the next smaller one at once.
    level_log2: 0.75,
    min_level_bytes: 4 << 20,
    max_deleted_fraction: 0.3,
    max_merged_bytes: 2 << 30,
};

/// A group commit whose write is in RocksDB's WAL but not yet synced: after the sync its
/// snapshot is installed and its requests answered.
struct SyncJob {
    snapshot: Arc<Index>,
    answers: Vec<(oneshot::Sender<InsertReply>, InsertReply)>,
}

/// The sync thread: takes every waiting job, syncs the WAL once for all of them (an fsync
/// covers every write before it), installs the newest snapshot, then answers. A failed sync
/// answers every job 500 and marks the writer for a reopen.
struct Syncer {
    tx: SyncSender<SyncJob>,
    join: std::thread::JoinHandle<()>,
    /// Jobs handed over and not yet answered.
    in_flight: Arc<(Mutex<usize>, std::sync::Condvar)>,
    failed: Arc<AtomicBool>,
}

impl Syncer {
    fn spawn(
        snapshots: Arc<Snapshots>,
        metrics: Arc<Metrics>,
        swap: Arc<Mutex<()>>,
    ) -> std::io::Result<Syncer> {
        let (tx, rx) = mpsc::sync_channel::<SyncJob>(256);
        let in_flight = Arc::new((Mutex::new(0usize), std::sync::Condvar::new()));
        let failed = Arc::new(AtomicBool::new(false));
        let (fl, fa) = (Arc::clone(&in_flight), Arc::clone(&failed));
        let join = std::thread::Builder::new()
            .name("ndd-wal-sync".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut jobs = vec![first];
                    while let Ok(j) = rx.try_recv() {
                        jobs.push(j);
                    }
                    let t = Instant::now();
                    let last = &jobs[jobs.len() - 1].snapshot;
                    let synced = last.catalog().sync_wal();
                    metrics.wal_syncs.fetch_add(1, Relaxed);
                    metrics
                        .wal_sync_micros
                        .fetch_add(t.elapsed().as_micros() as u64, Relaxed);
                    match synced {
                        Ok(()) => {
                            let _g = swap.lock().unwrap_or_else(|p| p.into_inner());
                            snapshots.set(Arc::clone(last));
                            metrics.snapshots.fetch_add(1, Relaxed);
                        }
                        Err(e) => {
                            fa.store(true, Relaxed);
                            let msg = e.to_string();
                            for j in jobs.iter_mut() {
                                for a in j.answers.iter_mut() {
                                    a.1 = Err(ApiError::new(
                                        StatusCode::INTERNAL_SERVER_ERROR,
                                        "write_failed",
                                        format!("the write failed and was not acknowledged: {msg}"),
                                    ));
                                }
                            }
                        }
                    }
                    let n = jobs.len();
                    for j in jobs {
                        drop(j.snapshot);
                        for (reply, answer) in j.answers {
                            let _ = reply.send(answer);
                        }
                    }
                    let (m, cv) = &*fl;
                    let mut c = m.lock().unwrap_or_else(|p| p.into_inner());
                    *c -= n;
                    cv.notify_all();
                }
            })?;
        Ok(Syncer {
            tx,
            join,
            in_flight,
            failed,
        })
    }

    fn submit(&self, job: SyncJob) {
        *self.in_flight.0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        if let Err(e) = self.tx.send(job) {
            // The thread is gone (it cannot be while the writer runs); answer here.
            let job = e.0;
            for (reply, _) in job.answers {
                let _ = reply.send(Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the sync thread stopped",
                )));
            }
            *self.in_flight.0.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        }
    }

    /// True while a job handed over is not answered yet (its WAL sync is in flight).
    fn busy(&self) -> bool {
        *self.in_flight.0.lock().unwrap_or_else(|p| p.into_inner()) > 0
    }

    /// Waits until every job handed over is answered.
    fn wait(&self) {
        let (m, cv) = &*self.in_flight;
        let mut c = m.lock().unwrap_or_else(|p| p.into_inner());
        while *c > 0 {
            c = cv.wait(c).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Writer {
    /// Waits for the sync thread to answer everything handed to it, so a publish or release
    /// of the writer never races an older snapshot; reopens after a failed sync.
    fn drain_syncs(&mut self) {
        if let Some(s) = &self.syncer {
            s.wait();
            if s.failed.swap(false, Relaxed) {
                self.release_now();
            }
        }
    }

    fn run(&mut self) {
        let mut stopping = false;
        // When the last request was applied: the writer lock is given back `idle` after it.
        let mut last_op = Instant::now();
        loop {
            let op = match self.pending.pop_front() {
                Some(op) => op,
                None if stopping => break,
                None => {
                    let wait = if self.index.is_none() {
                        Duration::from_secs(3600)
                    } else if self.merging.is_some() {
                        // A background merge runs: look at it often, so that a quiet server
                        // publishes it and lets the policy start the next one.
                        MERGE_POLL.min(self.cfg.idle.saturating_sub(last_op.elapsed()))
                    } else {
                        self.cfg.idle.saturating_sub(last_op.elapsed())
                    };
                    match self.rx.recv_timeout(wait) {
                        Ok(op) => op,
                        Err(RecvTimeoutError::Timeout) => {
                            if self.index.is_some() && last_op.elapsed() < self.cfg.idle {
                                self.finish_merge(false);
                            } else {
                                self.release();
                            }
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            };
            last_op = Instant::now();
            match op {
                Op::Shutdown => {
                    stopping = true;
                    // Apply what is already queued, then stop.
                    while let Ok(op) = self.rx.try_recv() {
                        if !matches!(op, Op::Shutdown) {
                            self.pending.push_back(op);
                        }
                    }
                }
                Op::Delete {
                    key,
                    reply,
                    deadline,
                } => {
                    let r = self.delete(&key, deadline);
                    let _ = reply.send(r);
                }
                insert @ Op::Insert { .. } => self.group_commit(insert),
            }
        }
        self.release();
        if let Some(s) = self.syncer.take() {
            drop(s.tx);
            let _ = s.join.join();
        }
    }

    /// Takes the writer lock if not held, waiting up to `deadline` for another process.
    fn ensure_writer(&mut self, deadline: Instant) -> Result<(), ApiError> {
        if self.index.is_some() {
            return Ok(());
        }
        loop {
            let _g = self.swap.lock().unwrap_or_else(|p| p.into_inner());
            // The current snapshot's view is the writer's when nothing changed since it was
            // read (no reload of every document record).
            let current = Arc::clone(self.snapshots.get().view());
            let opened = Index::open_writer_reusing(
                &self.cfg.dir,
                &CreateOptions::default(),
                Some(&current),
            );
            drop(current);
            match opened {
                Ok(ix) => {
                    self.held.store(true, Relaxed);
                    self.snapshots.set(Arc::new(ix.snapshot()));
                    self.metrics.snapshots.fetch_add(1, Relaxed);
                    self.index = Some(ix);
                    return Ok(());
                }
                Err(Error::Locked { holder, .. }) => {
                    drop(_g);
                    if Instant::now() >= deadline {
                        self.metrics.writer_busy.fetch_add(1, Relaxed);
                        return Err(ApiError::unavailable(
                            format!(
                                "another process holds the index's writer lock ({holder}); \
                                 waited {:.1} s",
                                self.cfg.write_wait.as_secs_f64()
                            ),
                            self.cfg.write_wait.as_secs().max(1),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Gives the writer lock back: installs a read-only snapshot, waits until no query uses
    /// the writer's catalog any more, then closes it.
    fn release(&mut self) {
        self.drain_syncs();
        self.release_now();
    }

    /// [`Writer::release`] once nothing is left with the sync thread.
    fn release_now(&mut self) {
        // A merge writes into the segments folder only while this writer holds the lock
        // (the next writer's open removes unlisted files): finish it first.
        self.finish_merge(true);
        let Some(w) = self.index.take() else {
            return;
        };
        let _g = self.swap.lock().unwrap_or_else(|p| p.into_inner());
        match Index::open(&self.cfg.dir) {
            Ok(ro) => {
                self.snapshots.set(Arc::new(ro));
                self.metrics.snapshots.fetch_add(1, Relaxed);
            }
            Err(e) => {
                // Keep writing with what we have rather than leave readers without an index.
                eprintln!("ndd-index serve: cannot reopen read-only, keeping the writer: {e}");
                self.index = Some(w);
                return;
            }
        }
        let until = Instant::now() + Duration::from_secs(60);
        while Arc::strong_count(&w.catalog) > 1 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(w);
        self.held.store(false, Relaxed);
    }

    /// Installs the writer's current state as the read snapshot.
    fn publish(&self) {
        if let Some(w) = &self.index {
            self.snapshots.set(Arc::new(w.snapshot()));
            self.metrics.snapshots.fetch_add(1, Relaxed);
        }
    }

    fn delete(&mut self, key: &str, deadline: Instant) -> Result<DeleteSummary, ApiError> {
        self.drain_syncs();
        self.ensure_writer(deadline)?;
        let w = self.index.as_mut().expect("writer held");
        let r = w.delete(&DeleteSelector::Keys(vec![key.to_owned()]));
        if r.is_err() {
            self.release(); // reopen (and clean up) before the next write
        } else {
            self.publish();
        }
        Ok(r?)
    }

    /// The next request for a group being collected, when none is waiting: while the previous
    /// group's WAL sync is in flight (the sync thread is busy), waits for one until `until`;
    /// None once the sync is done, the time is up, or without a sync thread.
    fn linger_recv(&self, until: Instant) -> Option<Op> {
        let syncer = self.syncer.as_ref()?;
        loop {
            let now = Instant::now();
            if now >= until || !syncer.busy() {
                return None;
            }
            let slice = (until - now).min(Duration::from_micros(200));
            match self.rx.recv_timeout(slice) {
                Ok(op) => {
                    self.metrics.linger_hits.fetch_add(1, Relaxed);
                    return Some(op);
                }
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Collects a group starting with `first`, applies it in one add, answers everyone; then
    /// publishes a finished background merge and starts the next one the policy asks for.
    fn group_commit(&mut self, first: Op) {
        let folded = self.group_commit_inner(first);
        if self.index.is_some() {
            self.finish_merge(false);
            if folded {
                self.start_merge();
            }
        }
    }

    /// The merge policy of the server's segments (see [`SERVER_MERGE_POLICY`]), when no merge
    /// is running: the chosen segments are merged on a thread of their own from the current
    /// view, and published by [`Writer::finish_merge`] between groups.
    fn start_merge(&mut self) {
        if self.merging.is_some() {
            return;
        }
        let Some(w) = self.index.as_ref() else {
            return;
        };
        let chosen = w
            .segment_infos()
            .map(|infos| crate::lifecycle::choose(&infos, &SERVER_MERGE_POLICY));
        let ids = match chosen {
            Ok(Some(ids)) => ids,
            Ok(None) => return,
            Err(e) => {
                eprintln!("ndd-index serve: merge policy: {e}");
                return;
            }
        };
        let format = match w.options().segment_format() {
            Ok(f) => f,
            Err(e) => {
                eprintln!("ndd-index serve: merge: {e}");
                return;
            }
        };
        let view = Arc::clone(w.view());
        let (dir, tmp) = (w.dir().to_owned(), w.tmp_dir());
        self.merge_seq += 1;
        // An unlisted name: a crash leaves an orphan the next writer's open removes.
        let file = format!("merging-{}-{}.ndds", std::process::id(), self.merge_seq);
        let spawned = std::thread::Builder::new()
            .name("ndd-merge".into())
            .spawn(move || {
                let r = crate::lifecycle::build_merge(&dir, format, tmp, &view, &ids, &file);
                drop(view);
                r
            });
        match spawned {
            Ok(h) => self.merging = Some(h),
            Err(e) => eprintln!("ndd-index serve: cannot start a merge thread: {e}"),
        }
    }

    /// Publishes the background merge once it is written (`wait`: waits for it), then lets
    /// the policy start the next one. A failed merge changed nothing; it is logged.
    fn finish_merge(&mut self, wait: bool) {
        let Some(h) = self.merging.take() else {
            return;
        };
        if !wait && !h.is_finished() {
            self.merging = Some(h);
            return;
        }
        let built = h.join();
        let Some(w) = self.index.as_mut() else {
            return; // dropping the merge removes its file
        };
        let r = match built {
            Ok(Ok(m)) => {
                let r = w.publish_merge(m);
                if let Ok(s) = &r {
                    let us = (s.seconds * 1e6) as u64;
                    self.metrics.merge_micros.fetch_add(us, Relaxed);
                }
                r.map(|_| ())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::InvalidArgument("the merge thread panicked".into())),
        };
        match r {
            Ok(()) => {
                self.metrics.merges.fetch_add(1, Relaxed);
                if !wait {
                    self.start_merge();
                }
            }
            Err(e) => {
                self.metrics.merge_failures.fetch_add(1, Relaxed);
                eprintln!("ndd-index serve: background merge failed (nothing published): {e}");
            }
        }
    }

    /// [`Writer::group_commit`]'s group; true when its add folded the delta.
    fn group_commit_inner(&mut self, first: Op) -> bool {
        let mut group: Vec<(Vec<InsertDoc>, oneshot::Sender<InsertReply>, Instant)> = Vec::new();
        let mut keys: HashSet<String> = HashSet::new();
        let mut n = 0usize;
        let mut later: VecDeque<Op> = VecDeque::new();
        let mut next = Some(first);
        let linger_until = Instant::now() + self.cfg.linger;
        while let Some(op) = next.take() {
            match op {
                Op::Insert {
                    docs,
                    reply,
                    deadline,
                } => {
                    let clash = docs.iter().any(|d| keys.contains(&d.key));
                    if clash || (n > 0 && n + docs.len() > self.cfg.max_group_docs) {
                        later.push_back(Op::Insert {
                            docs,
                            reply,
                            deadline,
                        });
                    } else {
                        keys.extend(docs.iter().map(|d| d.key.clone()));
                        n += docs.len();
                        group.push((docs, reply, deadline));
                    }
                }
                other => {
                    // A delete or shutdown keeps its place: after this group.
                    later.push_back(other);
                    break;
                }
            }
            if n >= self.cfg.max_group_docs {
                break;
            }
            next = match self.pending.pop_front() {
                Some(op) => Some(op),
                None => match self.rx.try_recv() {
                    Ok(op) => Some(op),
                    Err(_) => self.linger_recv(linger_until),
                },
            };
        }
        // Deferred requests go before anything still pending, in their order.
        while let Some(op) = later.pop_back() {
            self.pending.push_front(op);
        }

        if self.syncer.as_ref().is_some_and(|s| s.failed.load(Relaxed)) {
            self.drain_syncs(); // a sync failed: reopen before writing again
        }
        let deadline = group
            .iter()
            .map(|g| g.2)
            .max()
            .expect("group has a request");
        if let Err(e) = self.ensure_writer(deadline) {
            for (_, reply, _) in group {
                let _ = reply.send(Err(ApiError {
                    status: e.status,
                    code: e.code,
                    message: e.message.clone(),
                    retry_after: e.retry_after,
                }));
            }
            return false;
        }
        let started = Instant::now();
        let mut counts: Vec<usize> = Vec::with_capacity(group.len());
        let mut docs: Vec<AddDoc> = Vec::with_capacity(n);
        let mut keys_in_order: Vec<String> = Vec::with_capacity(n);
        let mut replies = Vec::with_capacity(group.len());
        for (ds, reply, _) in group {
            counts.push(ds.len());
            for d in ds {
                keys_in_order.push(d.key.clone());
                docs.push(match d.prepared {
                    Some(p) => AddDoc::Prepared(p),
                    None => AddDoc::Raw {
                        key: d.key,
                        bytes: d.bytes,
                        format: d.format,
                    },
                });
            }
            replies.push(reply);
        }
        let opts = AddOptions {
            fold_docs: self.cfg.fold_docs.max(1),
            sync: self.syncer.is_none(),
            ..AddOptions::default()
        };
        let mut reports: HashMap<String, VecDeque<DocReport>> = HashMap::new();
        let w = self.index.as_mut().expect("writer held");
        let result = w.add_docs(docs, &opts, &mut |r| {
            reports
                .entry(r.key.clone())
                .or_default()
                .push_back(r.clone());
            Ok(())
        });
        let mut add_micros = 0;
        let folded = result.as_ref().is_ok_and(|s| s.folded.is_some());
        if let Ok(s) = &result {
            for (m, us) in self.metrics.group_phase_micros.iter().zip(s.phase_micros) {
                m.fetch_add(us, Relaxed);
                add_micros += us;
            }
        }
        self.metrics.groups.fetch_add(1, Relaxed);
        self.metrics
            .group_docs
            .fetch_add(keys_in_order.len() as u64, Relaxed);
        match result {
            Ok(_) => {
                self.metrics
                    .group_micros
                    .fetch_add(started.elapsed().as_micros() as u64, Relaxed);
                let mut keys = keys_in_order.into_iter();
                // The writer's own part: the merge policy after a fold, the snapshot swap.
                let phases = &self.metrics.group_phase_micros;
                let total = started.elapsed().as_micros() as u64;
                phases[phases.len() - 1].fetch_add(total.saturating_sub(add_micros), Relaxed);
                let mut answers = Vec::with_capacity(replies.len());
                for (count, reply) in counts.into_iter().zip(replies) {
                    let mut out = Vec::with_capacity(count);
                    for key in keys.by_ref().take(count) {
                        match reports.get_mut(&key).and_then(|q| q.pop_front()) {
                            Some(r) => out.push(r),
                            None => {
                                out.clear();
                                break;
                            }
                        }
                    }
                    let answer = if out.len() == count {
                        Ok(out)
                    } else {
                        Err(ApiError::new(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "internal",
                            "the index reported fewer documents than were sent",
                        ))
                    };
                    answers.push((reply, answer));
                }
                match (&self.syncer, &self.index) {
                    (Some(syncer), Some(w)) => {
                        // Durable and visible once the sync thread has synced the WAL.
                        syncer.submit(SyncJob {
                            snapshot: Arc::new(w.snapshot()),
                            answers,
                        });
                    }
                    _ => {
                        self.publish();
                        for (reply, answer) in answers {
                            let _ = reply.send(answer);
                        }
                    }
                }
            }
            Err(e) => {
                // Nothing was acknowledged. Reopen the writer before the next write so its
                // state is read again from disk (a retry of a committed document is
                // `unchanged`).
                self.release();
                let msg = e.to_string();
                for reply in replies {
                    let _ = reply.send(Err(ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "write_failed",
                        format!("the write failed and was not acknowledged: {msg}"),
                    )));
                }
            }
        }
        folded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::{choose, SegmentInfo};

    /// Folds of ~5 MB each under the server's policy, each merge applied at once: the small
    /// segments behave as a binary counter (at most popcount(folds) of them, besides the
    /// large base segment that never takes part), and no segment is rewritten more than
    /// log2(folds) + 1 times.
    #[test]
    fn server_policy_is_a_binary_counter_of_folds() {
        const MB: u64 = 1 << 20;
        let base = SegmentInfo {
            id: 0,
            bytes: 5000 * MB,
            deleted_docs: 0,
            docs: 1_000_000,
        };
        // (info, times its documents were rewritten)
        let mut segs: Vec<(SegmentInfo, u32)> = vec![(base, 0)];
        let mut next = 1;
        let mut max_count = 0;
        for fold in 1..=200u32 {
            let bytes = 5 * MB + (fold as u64 % 7) * MB / 10; // folds differ a little
            segs.push((
                SegmentInfo {
                    id: next,
                    bytes,
                    deleted_docs: 0,
                    docs: 1024,
                },
                0,
            ));
            next += 1;
            loop {
                let infos: Vec<SegmentInfo> = segs.iter().map(|s| s.0).collect();
                let Some(ids) = choose(&infos, &SERVER_MERGE_POLICY) else {
                    break;
                };
                assert!(!ids.contains(&0), "the base segment is never merged");
                let (merged, rest): (Vec<_>, Vec<_>) =
                    segs.into_iter().partition(|s| ids.contains(&s.0.id));
                segs = rest;
                let info = SegmentInfo {
                    id: next,
                    bytes: merged.iter().map(|s| s.0.bytes).sum(),
                    deleted_docs: 0,
                    docs: merged.iter().map(|s| s.0.docs).sum(),
                };
                next += 1;
                let rewrites = merged.iter().map(|s| s.1).max().unwrap() + 1;
                assert!(
                    rewrites <= 32 - fold.leading_zeros() + 1,
                    "fold {fold}: a document rewritten {rewrites} times"
                );
                segs.push((info, rewrites));
            }
            let small = segs.len() - 1;
            assert!(
                small <= fold.count_ones() as usize + 1,
                "fold {fold}: {small} small segments"
            );
            max_count = max_count.max(small);
        }
        assert!(max_count <= 8, "{max_count}");
    }
}
