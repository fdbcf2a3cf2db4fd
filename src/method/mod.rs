//! The classic near-duplicate methods over one index, selected with `--method`.
//!
//! - [`Method::Shingle`]: Broder resemblance over the stored shingle features (the core path,
//!   `pipeline::all_pairs` and `query::Matcher`; nothing here);
//! - [`Method::Simhash`]: 64-bit Charikar simhash, Manku's permuted tables ([`simhash`]);
//! - [`Method::DscSs`]: Broder's DSC-SS supershingles, B-similarity ([`dsc`]);
//! - [`Method::Combined`]: Henzinger's combined algorithm: B-similar pairs kept when the
//!   C-similarity of their 384-bit simhashes reaches a threshold ([`dsc`]);
//! - [`Method::CSim`]: C-similarity alone, through indexed pieces of the bit strings
//!   ([`csim`]);
//! - [`Method::Henzinger`]: C for pairs on different sites, combined for pairs on the same
//!   site (Henzinger 2006's proposal; sites from `input::site`);
//! - [`Method::Imatch`]: Chowdhury et al.'s I-Match signatures ([`imatch`]);
//! - [`Method::Exact`]: identical canonical text (the catalog digest, [`exact`]).
//!
//! What a method needs stored is chosen at index creation ([`MethodOptions`], kept in the
//! index options) and written at ingest by [`writer::MethodWriter`] into extra tables of each
//! segment (format-spec/segment.md) and, for I-Match, into the catalog
//! (format-spec/rocksdb.md).

pub mod boilerplate;
pub mod csim;
pub mod dsc;
pub mod exact;
pub mod idf_simhash;
pub mod imatch;
pub mod imatch_reference;
/// The method options live with the index options (`crate::options::methods`): creation
/// options are below the methods that read them.
pub use crate::options::methods as options;
pub mod query;
pub mod simhash;
pub mod writer;

#[cfg(test)]
mod tests;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::index::Index;
use crate::segment::Segment;
use crate::threshold::Threshold;
use crate::view::View;

pub use options::{
    DscOptions, ImatchFilter, ImatchOptions, Method, MethodArgs, MethodOptions, SimhashFeatures,
    SimhashOptions, SimhashWeight,
};

/// A pair found by a method (a < b). `similarity` is the method's own score in [0, 1]:
/// resemblance (shingle), 1 - hamming/64 (simhash), agreeing supershingles / supershingles
/// (dsc-ss), C-similarity = agreeing bits / 384 (combined, c-sim), 1 (exact, imatch,
/// megashingle).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MethodPair {
    pub a: u32,
    pub b: u32,
    pub similarity: f64,
    /// Hamming distance of the 64-bit simhashes (simhash) or of the 384-bit ones (combined).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hamming: Option<u32>,
    /// Agreeing supershingles (dsc-ss, combined).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agree: Option<u32>,
}

impl MethodPair {
    pub(crate) fn new(a: u32, b: u32, similarity: f64) -> Self {
        let (a, b) = if a < b { (a, b) } else { (b, a) };
        MethodPair {
            a,
            b,
            similarity,
            hamming: None,
            agree: None,
        }
    }
}

/// Default C-similarity threshold of the combined method: Henzinger's 355 of 384 bits.
pub const DEFAULT_COMBINED_THRESHOLD: f64 = 355.0 / 384.0;

/// Every pair of live documents the method reports, sorted by (a, b). `threshold` is the
/// resemblance for shingle (required), a floor on 1 - hamming/64 for simhash (optional), the
/// C-similarity for combined, c-sim and henzinger (the different-site pairs' C threshold; the
/// same-site pairs use the combined default) (default [`DEFAULT_COMBINED_THRESHOLD`]); dsc-ss, imatch and exact
/// have no threshold (their similarity notion is fixed by the index options).
pub fn pairs(
    index: &Index,
    method: Method,
    threshold: Option<Threshold>,
) -> Result<Vec<MethodPair>> {
    let view = index.view();
    let opts = &index.options().methods;
    let mut out = match method {
        Method::Shingle => {
            let t = threshold.ok_or_else(|| {
                Error::InvalidArgument("--method shingle needs --threshold".into())
            })?;
            let sample = index.options().sample()?;
            let (found, _) = crate::pipeline::all_pairs(view, sample, t, 0..view.doc_ids(), 0)?;
            found
                .iter()
                .map(|p| MethodPair::new(p.a, p.b, p.m.resemblance))
                .collect()
        }
        Method::Simhash => {
            let verify = match opts.simhash.and_then(|s| s.verify_threshold()) {
                Some(threshold) => Some(simhash::Verify {
                    sample: index.options().sample()?,
                    threshold,
                }),
                None => None,
            };
            let mut v = simhash::pairs(view, opts.simhash_tables()?, verify)?;
            if let Some(t) = threshold {
                v.retain(|p| p.similarity >= t.as_f64());
            }
            v
        }
        Method::DscSs => dsc::pairs(view, opts.dsc()?)?,
        Method::Combined => {
            let t = threshold.map_or(DEFAULT_COMBINED_THRESHOLD, |t| t.as_f64());
            opts.require_sim384()?;
            dsc::combined_pairs(view, opts.dsc()?, t)?
        }
        Method::Imatch => {
            opts.imatch()?;
            imatch::pairs(view)?
        }
        Method::Exact => exact::pairs(index)?,
        Method::Megashingle => dsc::megashingle_pairs(view, opts.require_megashingles()?)?,
        Method::CSim => {
            opts.require_sim384()?;
            let t = threshold.map_or(DEFAULT_COMBINED_THRESHOLD, |t| t.as_f64());
            dsc::c_sim_pairs(view, t)?
        }
        Method::Henzinger => {
            opts.require_sim384()?;
            let t = threshold.map_or(DEFAULT_COMBINED_THRESHOLD, |t| t.as_f64());
            let sites = index.sites()?;
            dsc::henzinger_pairs(view, opts.dsc()?, &sites, t, DEFAULT_COMBINED_THRESHOLD)?
        }
    };
    out.sort_unstable_by_key(|p| (p.a, p.b));
    out.dedup_by_key(|p| (p.a, p.b));
    Ok(out)
}

/// Clusters of the method: connected components of its pairs, except I-Match whose clusters
/// are its signature classes (each document in exactly one cluster; only those of 2 or more
/// members are returned, like the other methods).
pub fn clusters(
    index: &Index,
    method: Method,
    threshold: Option<Threshold>,
) -> Result<Vec<Vec<u32>>> {
    if method == Method::Imatch {
        index.options().methods.imatch()?;
        return imatch::clusters(index.view());
    }
    let p = pairs(index, method, threshold)?;
    Ok(crate::cluster::components(p.iter().map(|p| (p.a, p.b))))
}

/// The live segment holding `doc`. Doc ranges may overlap (merged and fold segments, the
/// delta), so the segment is the one whose FORWARD table holds the document.
pub(crate) fn segment_of(view: &View, doc: u32) -> Option<&Segment> {
    view.segments
        .iter()
        .filter(|s| doc >= s.entry.doc_lo && doc < s.entry.doc_hi)
        .find(|s| {
            // A damaged block reads as "not here"; the reads that follow report it.
            matches!(s.seg.get(crate::segment::FORWARD, doc as u64), Ok(Some(_)))
        })
        .map(|s| &*s.seg)
}

/// (key, doc) of every live posting of `table` over all segments, sorted.
pub(crate) fn table_postings(view: &View, table: u32) -> Result<Vec<(u64, u32)>> {
    let mut v = Vec::new();
    for s in &view.segments {
        if s.entry.doc_hi <= s.entry.doc_lo {
            continue;
        }
        if !s.seg.contains_table(table) {
            return Err(missing_table(s.seg.path(), table));
        }
        for item in s.seg.iter(table) {
            let (key, bytes) = item?;
            let list = crate::segment::decode_postings(bytes)
                .map_err(|e| Error::corrupt(s.seg.path(), 0, format!("table {table}: {e}")))?;
            list.for_each(|d| {
                if view.is_live(d) {
                    v.push((key, d))
                }
            });
        }
    }
    v.sort_unstable();
    Ok(v)
}

pub(crate) fn missing_table(path: &std::path::Path, table: u32) -> Error {
    Error::corrupt(
        path,
        0,
        format!("segment has no table {table} although the index options require it"),
    )
}
