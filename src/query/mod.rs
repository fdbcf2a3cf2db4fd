//! Single-document queries: near-duplicates of a document that is not added to the index.

mod matcher;

pub use matcher::{Match, Matcher, Scratch};

use serde::Serialize;

use crate::canonicalize::{canonicalize_with, DocFormat};
use crate::error::Result;
use crate::fingerprint::fingerprint;
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

thread_local! {
    /// The query path's matcher buffers, one set per thread: a served query would otherwise
    /// allocate (and zero) a per-document-id array for every request.
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's query scratch (sized for `doc_ids` document ids), or with a
/// fresh one when it is in use further up the stack.
fn with_scratch<R>(doc_ids: u32, f: impl FnOnce(&mut Scratch) -> R) -> R {
    let taken = SCRATCH.with(|s| s.borrow_mut().take());
    let mut scratch = taken.unwrap_or_else(|| Scratch::new(doc_ids));
    let r = f(&mut scratch);
    Scratch::counters_only(&mut scratch); // the counters start at 0 for the next query
    SCRATCH.with(|s| *s.borrow_mut() = Some(scratch));
    r
}

impl Index {
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
        if opts.threshold.as_f64() <= 0.0 {
            return Err(crate::error::Error::InvalidArgument(
                "query needs a threshold above 0".into(),
            ));
        }
        let fp_opts = self.options().fingerprint()?;
        let canon = canonicalize_with(bytes, format, charset, fp_opts.extract).map_err(|why| {
            crate::error::Error::Document {
                key: name.to_owned(),
                reason: why.to_string(),
            }
        })?;
        let fp = fingerprint(&canon.text, &fp_opts);
        let view = self.view();
        let max_df = match opts.max_df {
            None => self.options().max_df,
            Some(0) => None,
            Some(n) => Some(n),
        };
        let matcher = Matcher::new(view, fp_opts.sample, opts.threshold).with_max_df(max_df);
        let mut found = Vec::new();
        with_scratch(view.doc_ids(), |scratch| {
            matcher.search(&fp.features, |_| true, scratch, &mut found)
        })?;
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
            input: name.to_owned(),
            words: fp.words,
            features: fp.features.len() as u32,
            exact_duplicate,
            hits,
            micros: started.elapsed().as_micros() as u64,
        })
    }
}
