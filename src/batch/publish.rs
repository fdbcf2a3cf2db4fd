//! The parts of a batch's one synced catalog write that `ingest` and `add` share: the new
//! documents' records, the tombstones of the documents they replace, the manifest, the next
//! doc id and the batch record; and each new document's best near-duplicate for its report.

use std::collections::HashMap;

use crate::error::Result;
use crate::store::{Catalog, CatalogBatch, DocRecord, Manifest, META_MANIFEST};

use crate::fingerprint::Sample;
use crate::pipeline::plan::Pair;
use crate::store::records::BatchRecord;
use crate::threshold::Threshold;
use crate::view::View;

/// Stages the catalog records of the new documents `(doc id, record)`, with a digest entry for
/// the first document of the batch carrying each digest (`batch_digests`) when no older one
/// does, and tombstones the documents they replace (dropping a digest entry that named them).
pub(crate) fn stage_docs<'r>(
    catalog: &Catalog,
    wb: &mut CatalogBatch<'_>,
    docs: impl Iterator<Item = (u32, &'r DocRecord)>,
    batch_digests: &HashMap<[u8; 16], u32>,
    replaced: &[(u32, DocRecord)],
) -> Result<()> {
    for (doc, rec) in docs {
        wb.put_doc(doc, rec);
        wb.put_key(&rec.key, doc);
        if batch_digests.get(&rec.digest) == Some(&doc)
            && catalog.doc_by_digest(&rec.digest)?.is_none()
        {
            wb.put_digest(&rec.digest, doc);
        }
    }
    for (old, rec) in replaced {
        wb.put_tombstone(*old);
        if catalog.doc_by_digest(&rec.digest)? == Some(*old) {
            wb.delete_digest(&rec.digest);
        }
    }
    Ok(())
}

/// The publishing write's part of a batch whose new documents were staged as they came
/// (`ingest`; format-spec/rocksdb.md, "Staged entries"): their `docs`, new `keys` and
/// `digests` entries are in the catalog already, below the new `meta/next_doc`. What a staged
/// entry cannot say before the batch is published goes here, as [`stage_docs`] writes it: the
/// key of each replacing document (it names the replaced one until then), the tombstone of the
/// replaced document and the removal of a digest entry that named it. Then the `stage/`
/// scratch keys go. Returns the number of replacements.
pub(crate) fn stage_staged_replacements(
    catalog: &Catalog,
    wb: &mut CatalogBatch<'_>,
) -> Result<u64> {
    let mut n = 0;
    for item in catalog.staged_replacements() {
        let (new, old) = item?;
        let rec = catalog
            .staged_doc(new)?
            .ok_or_else(|| crate::error::Error::CorruptEntry {
                what: format!("docs/{new}"),
                reason: "a staged replacement has no staged record".into(),
            })?;
        wb.put_key(&rec.key, new);
        wb.put_tombstone(old);
        if let Some(old_rec) = catalog.doc(old)? {
            if catalog.doc_by_digest(&old_rec.digest)? == Some(old) {
                wb.delete_digest(&old_rec.digest);
            }
        }
        n += 1;
    }
    wb.clear_stage();
    Ok(n)
}

/// Stages the clusters after a batch: those of the `replaced` documents (tombstoned in `view`)
/// recomputed without them as `delete` does, then the new documents' (ids from `doc_lo`)
/// pairs at the cluster threshold folded in. Returns the new cluster of each document whose
/// cluster changed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stage_clusters(
    catalog: &Catalog,
    wb: &mut CatalogBatch<'_>,
    view: &View,
    sample: Sample,
    threshold: Threshold,
    replaced: &[u32],
    pairs: &[Pair],
    doc_lo: u32,
) -> Result<HashMap<u32, u32>> {
    let overlay = crate::lifecycle::delete::recluster_replaced(
        catalog, view, sample, threshold, wb, replaced,
    )?;
    let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
    crate::cluster::apply_edges_over(catalog, &overlay, wb, &edges, doc_lo)
}

/// Stages the batch's pairs at the cluster threshold (every pair involving one of its new
/// documents, as its matching found them) into the stored pairs and declares the table kept
/// (format-spec/rocksdb.md, "`pairs`: stored pairs"), when the index keeps the table (its
/// marker is there and names `threshold` and `sample`, the matching's); otherwise nothing is
/// put and the publishing write deletes the marker (`Catalog::commit`). Each pair is stored
/// with the counts its verification found (`Match::inter`, `Match::denom`), so the stored
/// resemblance is the matching's by construction. Returns the number of pairs put.
pub(crate) fn stage_pairs(
    catalog: &Catalog,
    wb: &mut CatalogBatch<'_>,
    threshold: Threshold,
    sample: &str,
    pairs: &[Pair],
) -> Result<u64> {
    let Some(marker) = catalog.pairs_marker()? else {
        return Ok(0);
    };
    let same_threshold = marker
        .threshold
        .parse::<Threshold>()
        .is_ok_and(|t| t == threshold);
    if marker.method != "shingle" || !same_threshold || marker.sample != sample {
        return Ok(0);
    }
    // A verified pair is ordered and has 0 < denom, inter <= denom (`Threshold::admits`);
    // anything else is a bug of the matching, refused before it is written.
    if let Some(p) = pairs
        .iter()
        .find(|p| p.a >= p.b || p.m.denom == 0 || p.m.inter > p.m.denom)
    {
        return Err(crate::error::Error::CorruptEntry {
            what: format!("pair ({}, {})", p.a, p.b),
            reason: format!("not a verified pair: counts {}/{}", p.m.inter, p.m.denom),
        });
    }
    for p in pairs {
        wb.put_pair(p.a, p.b, p.m.inter, p.m.denom);
    }
    wb.keep_pairs();
    Ok(pairs.len() as u64)
}

/// Stages the new generation of `manifest`, the next doc id and the batch record.
pub(crate) fn stage_batch(
    wb: &mut CatalogBatch<'_>,
    mut manifest: Manifest,
    batch_id: u32,
    record: &BatchRecord,
) {
    manifest.generation += 1;
    wb.put_meta_json(META_MANIFEST, &manifest);
    wb.put_next_doc(record.doc_hi);
    wb.put_batch(batch_id, &record.name, record);
}

impl BatchRecord {
    /// A record stamped with the current time.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn now(
        name: &str,
        doc_lo: u32,
        doc_hi: u32,
        added: u64,
        replaced: u64,
        unchanged: u64,
        errors: u64,
        segment: Option<String>,
    ) -> BatchRecord {
        BatchRecord {
            name: name.to_string(),
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            doc_lo,
            doc_hi,
            added,
            replaced,
            unchanged,
            errors,
            segment,
        }
    }
}

/// For every new document (id >= `doc_lo`) in `pairs`, its most similar partner and the
/// resemblance (ties: the smaller partner id).
pub(crate) fn best_partners(pairs: &[Pair], doc_lo: u32) -> HashMap<u32, (u32, f64)> {
    let mut best: HashMap<u32, (u32, f64)> = HashMap::new();
    for p in pairs {
        for (x, y) in [(p.a, p.b), (p.b, p.a)] {
            if x >= doc_lo {
                let e = best.entry(x).or_insert((y, -1.0));
                if p.m.resemblance > e.1 || (p.m.resemblance == e.1 && y < e.0) {
                    *e = (y, p.m.resemblance);
                }
            }
        }
    }
    best
}
