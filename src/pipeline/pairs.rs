//! All pairs of live documents whose resemblance reaches a threshold.
//!
//! Every document probes the postings with the prefix filter of [`crate::query::Matcher`] and
//! keeps only partners with a larger id, so each pair is found once; both cores share the
//! documents (rayon), each with its own scratch buffers.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::Sample;
use crate::query::{Match, Matcher, Scratch};
use crate::threshold::Threshold;
use crate::view::View;

/// Work counters of one all-pairs run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PairsStats {
    pub documents: u64,
    pub postings_visited: u64,
    pub candidates: u64,
    pub pairs: u64,
}

/// One found pair, `a < b` by doc id.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub a: u32,
    pub b: u32,
    pub m: Match,
}

/// Finds every pair with similarity >= `t` that involves a live document with id in `docs`.
/// A probing document `x` pairs with partners of larger id, and also with every partner below
/// `older_than` (ingest passes the first new id, so new documents pair with all old ones; a
/// whole-index run passes 0). Pairs come back as `a < b`, sorted by (a, b).
pub fn all_pairs(
    view: &View,
    sample: Sample,
    t: Threshold,
    docs: std::ops::Range<u32>,
    older_than: u32,
) -> Result<(Vec<Pair>, PairsStats)> {
    if t.as_f64() <= 0.0 {
        return Err(Error::InvalidArgument(
            "pairs needs a threshold above 0".into(),
        ));
    }
    let ids: Vec<u32> = docs
        .filter(|&d| view.is_live(d) && view.size(d) > 0)
        .collect();
    let matcher = Matcher::new(view, sample, t);
    let chunks: Vec<Result<(Vec<Pair>, Scratch)>> = ids
        .par_chunks(32)
        .map_init(
            || (Scratch::new(view.doc_ids()), Vec::new(), Vec::new()),
            |(scratch, x, found), chunk| {
                let mut pairs = Vec::new();
                for &a in chunk {
                    if !view.features_into(a, x)? {
                        continue;
                    }
                    found.clear();
                    matcher.search(x, |d| d > a || d < older_than, scratch, found)?;
                    pairs.extend(found.iter().map(|m| {
                        let (lo, hi) = if a < m.doc { (a, m.doc) } else { (m.doc, a) };
                        Pair {
                            a: lo,
                            b: hi,
                            m: *m,
                        }
                    }));
                }
                let counters = Scratch::counters_only(scratch);
                Ok((pairs, counters))
            },
        )
        .collect();
    let mut stats = PairsStats {
        documents: ids.len() as u64,
        ..Default::default()
    };
    let mut all = Vec::new();
    for c in chunks {
        let (p, s) = c?;
        stats.postings_visited += s.postings_visited;
        stats.candidates += s.candidates;
        all.extend(p);
    }
    all.sort_unstable_by_key(|p| (p.a, p.b));
    stats.pairs = all.len() as u64;
    Ok((all, stats))
}
