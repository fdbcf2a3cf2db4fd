//! Deleting documents: tombstones, key and digest entries, and the clusters they leave.
//!
//! A deleted document gets a `tombstones` entry (the view drops it from every posting list at
//! once; its bytes go at the next compaction), loses its `keys` entry, and its `digests` entry
//! moves to another live document with the same canonical text (exact duplicates are always in
//! the same cluster, so the candidates are the cluster's members) or is removed.
//!
//! Clusters: a deleted document leaves its cluster, and the cluster's remaining live members
//! are re-clustered from scratch: the pairs among them at the cluster threshold are computed
//! again (the matcher over the live view, restricted to the members) and their connected
//! components become the new clusters, each keyed by its oldest member. So a cluster whose
//! members were connected only through the deleted document splits, a representative that is
//! deleted is replaced by the oldest survivor, and a cluster left with one member dissolves.
//! Everything is one atomic catalog write.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use roaring::RoaringBitmap;
use serde::Serialize;

use crate::cluster;
use crate::error::{Error, Result};
use crate::index::Index;
use crate::query::{Matcher, Scratch};
use crate::store::records::BatchRecord;
use crate::store::{Catalog, CatalogBatch};
use crate::view::View;

/// Which documents to delete.
#[derive(Clone, Debug)]
pub enum DeleteSelector {
    /// Documents by key.
    Keys(Vec<String>),
    /// Every document of the named batch.
    Batch(String),
    /// Every document of batches created before this unix time (seconds).
    OlderThan(u64),
}

/// What a delete did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DeleteSummary {
    /// Documents deleted now.
    pub deleted: u64,
    /// Keys given that name no live document.
    pub not_found: Vec<String>,
    /// Batches whose documents were selected.
    pub batches: Vec<String>,
    /// Clusters touched (before the change) and clusters that exist after it among their
    /// remaining members.
    pub clusters_touched: u64,
    pub clusters_after: u64,
}

impl Index {
    /// Deletes the selected documents in one atomic catalog write.
    pub fn delete(&mut self, sel: &DeleteSelector) -> Result<DeleteSummary> {
        self.require_writer()?;
        let mut s = DeleteSummary::default();
        let view = self.view().clone();
        let catalog = &self.catalog;
        let mut victims = RoaringBitmap::new();
        match sel {
            DeleteSelector::Keys(keys) => {
                for k in keys {
                    match catalog.doc_by_key(k)? {
                        Some(d) if view.is_live(d) => {
                            victims.insert(d);
                        }
                        _ => s.not_found.push(k.clone()),
                    }
                }
            }
            DeleteSelector::Batch(name) => {
                let id = catalog
                    .batch_by_name(name)?
                    .ok_or_else(|| Error::InvalidArgument(format!("no batch named {name:?}")))?;
                let b: BatchRecord = catalog.batch(id)?.ok_or_else(|| Error::CorruptEntry {
                    what: format!("batches/{id}"),
                    reason: "named by batches/name but missing".into(),
                })?;
                victims.insert_range(b.doc_lo..b.doc_hi);
                s.batches.push(b.name);
            }
            DeleteSelector::OlderThan(t) => {
                for (_, b) in catalog.batches::<BatchRecord>()? {
                    if b.created_unix < *t {
                        victims.insert_range(b.doc_lo..b.doc_hi);
                        s.batches.push(b.name);
                    }
                }
            }
        }
        victims -= &view.tombstones;
        victims.remove_range(view.doc_ids()..);
        s.deleted = victims.len();
        if victims.is_empty() {
            return Ok(s);
        }

        let mut wb = catalog.batch_writer();
        let mut touched: BTreeSet<u32> = BTreeSet::new();
        let ids: Vec<u32> = victims.iter().collect();
        let recs = catalog.docs(&ids)?;
        let mut digest_owners = Vec::new();
        for (&d, rec) in ids.iter().zip(recs) {
            let rec = rec.ok_or_else(|| Error::CorruptEntry {
                what: format!("docs/{d}"),
                reason: "live document without a record".into(),
            })?;
            wb.put_tombstone(d);
            if catalog.doc_by_key(&rec.key)? == Some(d) {
                wb.delete_key(&rec.key);
            }
            if catalog.doc_by_digest(&rec.digest)? == Some(d) {
                digest_owners.push((d, rec.digest));
            }
            touched.insert(catalog.cluster_of(d)?);
        }
        let gone = &view.tombstones | &victims;
        let threshold = self.options().cluster_threshold()?;
        let sample = self.options().sample()?;
        let matcher = Matcher::new(&view, sample, threshold);
        let mut new_cluster: HashMap<u32, u32> = HashMap::new();
        for &c in &touched {
            let Some(members) = catalog.members(c)? else {
                continue; // a singleton: nothing to re-cluster
            };
            s.clusters_touched += 1;
            let remaining = &members - &gone;
            let groups = recluster(&matcher, &remaining)?;
            s.clusters_after += groups.len() as u64;
            write_clusters(&mut wb, c, &members, &groups);
            for g in groups.values() {
                for &d in g {
                    new_cluster.insert(d, g[0]);
                }
            }
        }
        // Re-point digests to a surviving exact duplicate (same cluster), else remove them.
        for (d, digest) in digest_owners {
            let c = catalog.cluster_of(d)?;
            let heir = match catalog.members(c)? {
                Some(m) => first_with_digest(catalog, &(&m - &gone), &digest)?,
                None => None,
            };
            match heir {
                Some(h) => wb.put_digest(&digest, h),
                None => wb.delete_digest(&digest),
            }
        }
        catalog.commit(wb)?;
        self.reload_view()?;
        Ok(s)
    }
}

/// Re-clusters the clusters of `replaced` documents (same key, new text: tombstoned in `view`
/// already) the way `delete` does: each old cluster is recomputed from the pairs of its
/// remaining members, staged in `wb`. Returns the changes as an overlay for
/// `cluster::apply_edges_over`, which then folds the new documents' edges in on top.
pub(crate) fn recluster_replaced(
    catalog: &Catalog,
    view: &View,
    sample: crate::fingerprint::Sample,
    threshold: crate::threshold::Threshold,
    wb: &mut CatalogBatch<'_>,
    replaced: &[u32],
) -> Result<cluster::Overlay> {
    let mut overlay = cluster::Overlay::default();
    let mut touched = BTreeSet::new();
    for &d in replaced {
        touched.insert(catalog.cluster_of(d)?);
    }
    let matcher = Matcher::new(view, sample, threshold);
    for c in touched {
        let Some(members) = catalog.members(c)? else {
            continue; // a singleton: nothing to re-cluster
        };
        let remaining = &members - &view.tombstones;
        let groups = recluster(&matcher, &remaining)?;
        write_clusters(wb, c, &members, &groups);
        for d in &members {
            overlay.cluster_of.insert(d, d);
            overlay.members.insert(d, None);
        }
        for (&root, g) in &groups {
            for &d in g {
                overlay.cluster_of.insert(d, root);
            }
            overlay.members.insert(
                root,
                Some(
                    RoaringBitmap::from_sorted_iter(g.iter().copied())
                        .expect("components are sorted and unique"),
                ),
            );
        }
    }
    Ok(overlay)
}

/// Connected components of the pairs at the matcher's threshold among `docs`, keyed by their
/// smallest member (components of two or more).
fn recluster(matcher: &Matcher<'_>, docs: &RoaringBitmap) -> Result<BTreeMap<u32, Vec<u32>>> {
    let view: &View = matcher.view;
    let (mut x, mut found) = (Vec::new(), Vec::new());
    let mut edges = Vec::new();
    crate::query::with_scratch(view.doc_ids(), |scratch: &mut Scratch| -> Result<()> {
        for a in docs {
            if !view.features_into(a, &mut x)? {
                continue;
            }
            found.clear();
            matcher.search(&x, |d| d > a && docs.contains(d), scratch, &mut found)?;
            edges.extend(found.iter().map(|m| (a, m.doc)));
        }
        Ok(())
    })?;
    Ok(cluster::components(edges)
        .into_iter()
        .map(|g| (g[0], g))
        .collect())
}

/// Replaces old cluster `c` (with `members`) by `groups`: entries of members that end up in
/// no group are removed, every group is written keyed by its oldest member.
fn write_clusters(
    wb: &mut CatalogBatch<'_>,
    c: u32,
    members: &RoaringBitmap,
    groups: &BTreeMap<u32, Vec<u32>>,
) {
    if !groups.contains_key(&c) {
        wb.delete_members(c);
    }
    let mut placed = RoaringBitmap::new();
    for (&root, g) in groups {
        let bm = RoaringBitmap::from_sorted_iter(g.iter().copied())
            .expect("components are sorted and unique");
        for &d in g {
            wb.put_cluster(d, root);
        }
        wb.put_members(root, &bm);
        placed |= bm;
    }
    for d in members - placed {
        wb.delete_cluster(d);
    }
}

fn first_with_digest(
    catalog: &Catalog,
    docs: &RoaringBitmap,
    digest: &[u8; 16],
) -> Result<Option<u32>> {
    let ids: Vec<u32> = docs.iter().collect();
    for (d, rec) in ids.iter().zip(catalog.docs(&ids)?) {
        if rec.is_some_and(|r| &r.digest == digest) {
            return Ok(Some(*d));
        }
    }
    Ok(None)
}

/// Parses `--older-than`: `YYYY-MM-DD` (midnight UTC) or unix seconds.
pub fn parse_date(s: &str) -> Result<u64> {
    let bad = || {
        Error::InvalidArgument(format!(
            "invalid date {s:?} (use YYYY-MM-DD or unix seconds)"
        ))
    };
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(secs);
    }
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts[..] else {
        return Err(bad());
    };
    let (y, m, d): (i64, i64, i64) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    // Days from civil (Howard Hinnant's algorithm), proleptic Gregorian, UTC.
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok((days * 86_400) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_as_utc_midnight_or_seconds() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 0);
        assert_eq!(parse_date("2000-03-01").unwrap(), 951_868_800);
        assert_eq!(parse_date("2026-11-21").unwrap(), 1_795_219_200);
        assert_eq!(parse_date("1763700000").unwrap(), 1_763_700_000);
        assert!(parse_date("2026-13-01").is_err());
        assert!(parse_date("yesterday").is_err());
    }
}
