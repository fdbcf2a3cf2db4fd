//! Single-document queries: near-duplicates of a document that is not added to the index.

mod matcher;
mod probe_ranks;
mod verify;

pub use matcher::per_segment::{PreWalk, SegmentProbes, NEW_SEGMENTS, WALK_SLACK_ENV};
pub use matcher::{Match, Matcher, Scratch, ABSENT_TRIAL};
pub use probe_ranks::{FrequentRanks, RankWeights};
pub use verify::{compares_by_order, verify_candidate, verify_listed, DocLists, Own, VerifyCounts};

use serde::Serialize;

use crate::canonicalize::{canonicalize_with, DocFormat};
use crate::error::Result;
use crate::fingerprint::{fingerprint, Fingerprint, Sample};
use crate::index::Index;
use crate::threshold::Threshold;

/// Options of a query.
#[derive(Clone, Copy, Debug)]
pub struct QueryOptions {
    /// Minimum resemblance of a reported document.
    pub threshold: Threshold,
    /// At most this many hits, best first (0 = all).
    pub top: usize,
    /// Commonality limit override: `None` = the index's stored `max_df`; `Some(0)` = no limit.
    pub max_df: Option<u32>,
}

/// One near-duplicate found for a query document.
#[derive(Clone, Debug, Serialize)]
pub struct QueryHit {
    pub key: String,
    pub doc: u32,
    pub resemblance: f64,
    /// |Q ∩ D| / |Q|: how much of the query document the indexed one contains.
    pub containment: f64,
    pub shared: u64,
    pub cluster: u32,
}

/// The answer for one query document.
#[derive(Clone, Debug, Serialize)]
pub struct QueryAnswer {
    pub input: String,
    pub words: u32,
    pub features: u32,
    /// Indexed document with exactly the same canonical text, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_duplicate: Option<String>,
    pub hits: Vec<QueryHit>,
    /// Time spent answering, canonicalization included, in microseconds.
    pub micros: u64,
}

/// A document canonicalized and fingerprinted once, for a query and then an add of the same
/// page (the server's check-and-insert: `Index::add_docs` takes it with the check's
/// [`CheckHint`] instead of doing the work again).
#[derive(Clone, Debug)]
pub struct PreparedDoc {
    pub key: String,
    /// Length of the raw document (the catalog's record, the size limit).
    pub bytes: u64,
    /// The canonical text (the methods' extra data are computed from it).
    pub text: String,
    pub fp: Fingerprint,
    /// What the check found, when it can stand for the add's matching against the snapshot
    /// it searched.
    pub hint: Option<CheckHint>,
}

/// What a query of a [`PreparedDoc`] found in its snapshot, for the add's matching: every
/// document of that snapshot (ids below `doc_ids`, live there) whose resemblance reaches
/// `threshold`, found by a search without a commonality limit (so the set does not depend on
/// the snapshot's probe order: exact). An add whose cluster threshold is at least `threshold`
/// re-verifies these at its own threshold and searches only the documents added since
/// (ids from `doc_ids` on) instead of the whole index.
#[derive(Clone, Debug)]
pub struct CheckHint {
    pub doc_ids: u32,
    pub threshold: Threshold,
    pub sample: Sample,
    /// Ascending.
    pub docs: Vec<u32>,
}

/// Work of every query searched by [`Index::query_prepared`] in this process (the server's
/// `/metrics`): (probe key, segment) lookups, the posting lists they found (each a block
/// read and decoded), posting entries visited, candidates verified.
pub mod probe_counts {
    use std::sync::atomic::AtomicU64;
    pub static SEARCHES: AtomicU64 = AtomicU64::new(0);
    pub static SEGMENT_LOOKUPS: AtomicU64 = AtomicU64::new(0);
    pub static LISTS_FOUND: AtomicU64 = AtomicU64::new(0);
    pub static POSTINGS_VISITED: AtomicU64 = AtomicU64::new(0);
    pub static CANDIDATES: AtomicU64 = AtomicU64::new(0);
}

thread_local! {
    /// The query path's matcher buffers, one set per thread: a served query would otherwise
    /// allocate (and zero) a per-document-id array for every request.
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's query scratch (sized for `doc_ids` document ids), or with a
/// fresh one when it is in use further up the stack. Also for the writes that search (a
/// server's group commits, deletes): a fresh scratch zeroes two bytes per document id of the
/// index (20 MB at 10M documents) on every call.
pub(crate) fn with_scratch<R>(doc_ids: u32, f: impl FnOnce(&mut Scratch) -> R) -> R {
    let taken = SCRATCH.with(|s| s.borrow_mut().take());
    let mut scratch = taken.unwrap_or_else(|| Scratch::new(doc_ids));
    let r = f(&mut scratch);
    Scratch::counters_only(&mut scratch); // the counters start at 0 for the next query
    SCRATCH.with(|s| *s.borrow_mut() = Some(scratch));
    r
}

impl Index {
    /// Canonicalizes and fingerprints one document for [`Index::query_prepared`] (and then
    /// an add); an unusable document is an error naming `key`.
    pub fn prepare(
        &self,
        key: &str,
        bytes: &[u8],
        format: DocFormat,
        charset: Option<&str>,
    ) -> Result<PreparedDoc> {
        let fp_opts = self.options().fingerprint()?;
        let canon = canonicalize_with(bytes, format, charset, fp_opts.extract).map_err(|why| {
            crate::error::Error::Document {
                key: key.to_owned(),
                reason: why.to_string(),
            }
        })?;
        let fp = fingerprint(&canon.text, &fp_opts);
        Ok(PreparedDoc {
            key: key.to_owned(),
            bytes: bytes.len() as u64,
            text: canon.text,
            fp,
            hint: None,
        })
    }

    /// Finds the indexed near-duplicates of one document given as bytes.
    pub fn query_document(
        &self,
        name: &str,
        bytes: &[u8],
        format: DocFormat,
        charset: Option<&str>,
        opts: &QueryOptions,
    ) -> Result<QueryAnswer> {
        let started = std::time::Instant::now();
        check_threshold(opts)?;
        let mut p = self.prepare(name, bytes, format, charset)?;
        self.query_prepared(&mut p, opts, None, started)
    }

    /// [`Index::query_document`] of a prepared document. With `hint_below: Some(t)` and a
    /// query that searches the whole snapshot exactly at a threshold of at most `t` (no
    /// commonality limit, a non-adaptive sampling), sets `p.hint` to everything it found
    /// before the `top` cut. `started`: when the request's work began (for `micros`).
    pub fn query_prepared(
        &self,
        p: &mut PreparedDoc,
        opts: &QueryOptions,
        hint_below: Option<Threshold>,
        started: std::time::Instant,
    ) -> Result<QueryAnswer> {
        check_threshold(opts)?;
        let fp_opts = self.options().fingerprint()?;
        let fp = &p.fp;
        let view = self.view();
        let max_df = match opts.max_df {
            None => self.options().max_df,
            Some(0) => None,
            Some(n) => Some(n),
        };
        // Probes absent-first (`Matcher::with_absent_first_for_queries`): a page new to the
        // index has plenty of shingles no segment holds (by the key filters), and probing
        // those reads no posting block. Any `|A| - m + 1` features find every similar
        // document (`absent_first.rs`), so the answer is the same.
        let matcher = Matcher::new(view, fp_opts.sample, opts.threshold)
            .with_max_df(max_df)
            .with_absent_first_for_queries();
        let mut found = Vec::new();
        with_scratch(view.doc_ids(), |scratch| {
            let r = matcher.search(&fp.features, |_| true, scratch, &mut found);
            use std::sync::atomic::Ordering::Relaxed;
            probe_counts::SEARCHES.fetch_add(1, Relaxed);
            probe_counts::SEGMENT_LOOKUPS.fetch_add(scratch.segment_lookups, Relaxed);
            probe_counts::LISTS_FOUND.fetch_add(scratch.lists_found, Relaxed);
            probe_counts::POSTINGS_VISITED.fetch_add(scratch.postings_visited, Relaxed);
            probe_counts::CANDIDATES.fetch_add(scratch.candidates, Relaxed);
            r
        })?;
        p.hint = match hint_below {
            Some(t)
                if max_df.is_none()
                    && !matches!(fp_opts.sample, crate::fingerprint::Sample::Adaptive(_))
                    && opts.threshold.as_f64() <= t.as_f64() =>
            {
                let mut docs: Vec<u32> = found.iter().map(|m| m.doc).collect();
                docs.sort_unstable();
                Some(CheckHint {
                    doc_ids: view.doc_ids(),
                    threshold: opts.threshold,
                    sample: fp_opts.sample,
                    docs,
                })
            }
            _ => None,
        };
        found.sort_by(|a, b| {
            b.resemblance
                .total_cmp(&a.resemblance)
                .then(a.doc.cmp(&b.doc))
        });
        if opts.top > 0 {
            found.truncate(opts.top);
        }
        let ids: Vec<u32> = found.iter().map(|m| m.doc).collect();
        let recs = self.catalog.docs(&ids)?;
        let mut hits = Vec::with_capacity(found.len());
        for (m, rec) in found.iter().zip(recs) {
            hits.push(QueryHit {
                key: rec.map(|r| r.key).unwrap_or_default(),
                doc: m.doc,
                resemblance: m.resemblance,
                containment: m.containment,
                shared: m.inter,
                cluster: self.catalog.cluster_of(m.doc)?,
            });
        }
        let exact_duplicate = match self.catalog.doc_by_digest(&fp.digest)? {
            Some(d) if view.is_live(d) => self.catalog.doc(d)?.map(|r| r.key),
            _ => None,
        };
        Ok(QueryAnswer {
            input: p.key.clone(),
            words: fp.words,
            features: fp.features.len() as u32,
            exact_duplicate,
            hits,
            micros: started.elapsed().as_micros() as u64,
        })
    }
}

/// A query's threshold must be above 0.
pub fn check_threshold(opts: &QueryOptions) -> Result<()> {
    if opts.threshold.as_f64() <= 0.0 {
        return Err(crate::error::Error::InvalidArgument(
            "query needs a threshold above 0".into(),
        ));
    }
    Ok(())
}
