//! DSC-SS (Broder's supershingles) and Henzinger's combined algorithm.
//!
//! Every document with shingles gets K min values (`minhash_values` over its full shingle
//! set), grouped into K / s supershingles (format-spec/fingerprints.md §7). The segment table
//! SUPERSHINGLES maps a supershingle to the documents having it; supershingles are seeded with
//! their position, so equal keys mean agreement at the same position. Two documents are
//! B-similar when at least `min_agree` of their supershingles agree: all pairs count, per
//! supershingle key, the pairs of its posting list.
//!
//! Combined (Henzinger 2006): the B-similar pairs whose C-similarity (agreeing bits of the
//! 384-bit simhashes, table SIM384, / 384) reaches a threshold.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::fingerprint::minhash;
use crate::fingerprint::simhash::hamming_wide;
use crate::view::View;

use super::{missing_table, segment_of, table_postings, DscOptions, MethodPair};

pub use crate::fingerprint::simhash::{decode_sim384, encode_sim384};
pub use crate::segment::{MEGASHINGLES, SIM384, SUPERSHINGLES};

/// The supershingles of a document from its full (unsampled) shingle set.
pub fn supershingles(shingles: &[u64], o: &DscOptions) -> Vec<u64> {
    let mins = minhash::minhash_values(shingles, o.minhash);
    minhash::supershingles(&mins, o.supershingle as usize)
}

/// Agreement counts of every pair of live documents sharing at least one supershingle.
fn agreement_counts(view: &View) -> Result<HashMap<(u32, u32), u32>> {
    let entries = table_postings(view, SUPERSHINGLES)?;
    let mut counts: HashMap<(u32, u32), u32> = HashMap::new();
    let mut start = 0;
    while start < entries.len() {
        let key = entries[start].0;
        let end = start + entries[start..].iter().take_while(|e| e.0 == key).count();
        let run = &entries[start..end];
        for (i, &(_, a)) in run.iter().enumerate() {
            for &(_, b) in &run[i + 1..] {
                *counts.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        start = end;
    }
    Ok(counts)
}

/// Every B-similar pair; similarity = agreeing supershingles / supershingles.
pub fn pairs(view: &View, o: DscOptions) -> Result<Vec<MethodPair>> {
    let n = o.supershingles() as f64;
    Ok(agreement_counts(view)?
        .into_iter()
        .filter(|&(_, c)| c >= o.min_agree)
        .map(|((a, b), c)| {
            let mut p = MethodPair::new(a, b, c as f64 / n);
            p.agree = Some(c);
            p
        })
        .collect())
}

/// The stored 384-bit simhash of `doc`.
pub fn sim384(view: &View, doc: u32) -> Result<Option<[u64; 6]>> {
    let Some(seg) = segment_of(view, doc) else {
        return Ok(None);
    };
    if !seg.contains_table(SIM384) {
        return Err(missing_table(seg.path(), SIM384));
    }
    match seg.get(SIM384, doc as u64)? {
        None => Ok(None),
        Some(v) => decode_sim384(v).map(Some).ok_or_else(|| {
            Error::corrupt(seg.path(), 0, format!("SIM384 value of {} bytes", v.len()))
        }),
    }
}

/// C-similarity of two 384-bit simhashes: agreeing bits / 384.
pub fn c_similarity(a: &[u64; 6], b: &[u64; 6]) -> (f64, u32) {
    let h = hamming_wide(a, b);
    (1.0 - h as f64 / 384.0, h)
}

/// B-similar pairs kept when their C-similarity is >= `t`; similarity = C-similarity.
pub fn combined_pairs(view: &View, o: DscOptions, t: f64) -> Result<Vec<MethodPair>> {
    let mut out = Vec::new();
    for p in pairs(view, o)? {
        let (Some(a), Some(b)) = (sim384(view, p.a)?, sim384(view, p.b)?) else {
            continue;
        };
        let (c, h) = c_similarity(&a, &b);
        if c >= t {
            out.push(MethodPair {
                similarity: c,
                hamming: Some(h),
                ..p
            });
        }
    }
    Ok(out)
}

/// Every pair of live documents sharing a megashingle (agreeing on >= 2 supershingles, up
/// to hash collisions); similarity 1, `agree` = shared megashingles.
pub fn megashingle_pairs(view: &View, _o: DscOptions) -> Result<Vec<MethodPair>> {
    let entries = table_postings(view, MEGASHINGLES)?;
    let mut counts: HashMap<(u32, u32), u32> = HashMap::new();
    let mut start = 0;
    while start < entries.len() {
        let key = entries[start].0;
        let end = start + entries[start..].iter().take_while(|e| e.0 == key).count();
        let run = &entries[start..end];
        for (i, &(_, a)) in run.iter().enumerate() {
            for &(_, b) in &run[i + 1..] {
                *counts.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        start = end;
    }
    Ok(counts
        .into_iter()
        .map(|((a, b), c)| {
            let mut p = MethodPair::new(a, b, 1.0);
            p.agree = Some(c);
            p
        })
        .collect())
}

/// Every live document's stored 384-bit simhash, by doc id.
pub(crate) fn all_sim384(view: &View) -> Result<Vec<(u32, [u64; 6])>> {
    let mut v = Vec::new();
    for s in &view.segments {
        if s.entry.doc_hi <= s.entry.doc_lo {
            continue;
        }
        if !s.seg.contains_table(SIM384) {
            return Err(missing_table(s.seg.path(), SIM384));
        }
        for item in s.seg.iter(SIM384) {
            let (d, bytes) = item?;
            let d = d as u32;
            if !view.is_live(d) || segment_of(view, d).map(|x| x.path()) != Some(s.seg.path()) {
                continue;
            }
            let x = decode_sim384(bytes).ok_or_else(|| {
                Error::corrupt(
                    s.seg.path(),
                    0,
                    format!("SIM384 value of {} bytes", bytes.len()),
                )
            })?;
            v.push((d, x));
        }
    }
    v.sort_unstable_by_key(|e| e.0);
    v.dedup_by_key(|e| e.0);
    Ok(v)
}

/// The C-only method: every pair of live documents whose C-similarity is >= `t`, found
/// through indexed pieces of the 384-bit strings ([`super::csim`]): exactly the pairs that
/// comparing all n²/2 pairs gives.
pub fn c_sim_pairs(view: &View, t: f64) -> Result<Vec<MethodPair>> {
    let all = all_sim384(view)?;
    let Some(k) = super::csim::max_hamming(t) else {
        return Ok(Vec::new());
    };
    let strings: Vec<[u64; 6]> = all.iter().map(|e| e.1).collect();
    Ok(super::csim::pairs_within(&strings, k)
        .into_iter()
        .map(|(i, j, h)| {
            let (c, h2) = c_similarity(&strings[i as usize], &strings[j as usize]);
            debug_assert_eq!(h, h2);
            let mut p = MethodPair::new(all[i as usize].0, all[j as usize].0, c);
            p.hamming = Some(h);
            p
        })
        .collect())
}

/// Henzinger's combined algorithm as she proposed to run it (2006, end of section 6): the
/// C-similar pairs (>= `t_c`) of documents on different sites, and the combined algorithm's
/// pairs (B-similar with C-similarity >= `t_same`) of documents on the same site.
pub fn henzinger_pairs(
    view: &View,
    o: DscOptions,
    sites: &crate::sites::Sites,
    t_c: f64,
    t_same: f64,
) -> Result<Vec<MethodPair>> {
    let mut out: Vec<MethodPair> = c_sim_pairs(view, t_c)?
        .into_iter()
        .filter(|p| !sites.same(p.a, p.b))
        .collect();
    out.extend(
        combined_pairs(view, o, t_same)?
            .into_iter()
            .filter(|p| sites.same(p.a, p.b)),
    );
    Ok(out)
}

/// Live documents whose C-similarity to `q` is >= `t`: (doc, hamming), by doc id.
pub fn c_sim_query(view: &View, q: &[u64; 6], t: f64) -> Result<Vec<(u32, u32)>> {
    Ok(all_sim384(view)?
        .into_iter()
        .filter_map(|(d, s)| {
            let (c, h) = c_similarity(q, &s);
            (c >= t).then_some((d, h))
        })
        .collect())
}

/// Live documents B-similar to a document with supershingles `supers`: (doc, agreements).
pub fn query(view: &View, o: DscOptions, supers: &[u64]) -> Result<Vec<(u32, u32)>> {
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for s in &view.segments {
        if s.entry.doc_hi <= s.entry.doc_lo {
            continue;
        }
        if !s.seg.contains_table(SUPERSHINGLES) {
            return Err(missing_table(s.seg.path(), SUPERSHINGLES));
        }
        for &ss in supers {
            if let Some(list) = s.seg.get_postings(SUPERSHINGLES, ss)? {
                list.for_each(|d| {
                    if view.is_live(d) {
                        *counts.entry(d).or_insert(0) += 1
                    }
                });
            }
        }
    }
    let mut v: Vec<(u32, u32)> = counts
        .into_iter()
        .filter(|&(_, c)| c >= o.min_agree)
        .collect();
    v.sort_unstable();
    Ok(v)
}
