//! Duplicate clusters: connected components of the similarity graph at the cluster threshold.
//!
//! The persisted form (RocksDB `clusters` and `members`) is a union-find whose root is the
//! oldest document, i.e. the smallest doc id: ids are allocated in ingest order, so merging two
//! clusters keeps the older id and a document's cluster id only changes when its cluster merges
//! into an older one. Documents in no pair are singletons and have no entry (their cluster id
//! is their own doc id). An ingest only touches the clusters its new edges reach.

use std::collections::{BTreeMap, HashMap};

use roaring::RoaringBitmap;

use crate::error::Result;
use crate::store::{Catalog, CatalogBatch};

/// In-memory union-find over sparse ids; the root of a set is its smallest id.
#[derive(Default)]
pub struct UnionFind {
    parent: HashMap<u32, u32>,
}

impl UnionFind {
    pub fn new() -> Self {
        Self::default()
    }

    /// The root of `x`'s set (with path halving).
    pub fn find(&mut self, x: u32) -> u32 {
        let mut x = x;
        loop {
            let p = *self.parent.entry(x).or_insert(x);
            if p == x {
                return x;
            }
            let gp = *self.parent.entry(p).or_insert(p);
            self.parent.insert(x, gp);
            x = gp;
        }
    }

    /// Merges the sets of `a` and `b`; the smaller root survives.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent.insert(hi, lo);
        }
    }

    /// Every id seen, grouped by root (roots and members in increasing order).
    pub fn groups(&mut self) -> BTreeMap<u32, Vec<u32>> {
        let ids: Vec<u32> = self.parent.keys().copied().collect();
        let mut out: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for id in ids {
            let r = self.find(id);
            out.entry(r).or_default().push(id);
        }
        for v in out.values_mut() {
            v.sort_unstable();
        }
        out
    }
}

/// Connected components of `edges` (pairs of doc ids), components of two or more only,
/// each sorted, ordered by their smallest member.
pub fn components(edges: impl IntoIterator<Item = (u32, u32)>) -> Vec<Vec<u32>> {
    let mut uf = UnionFind::new();
    for (a, b) in edges {
        uf.union(a, b);
    }
    uf.groups().into_values().filter(|g| g.len() > 1).collect()
}

/// Folds new edges into the persisted clusters. Documents with ids `>= new_lo` are the new
/// batch (not in the catalog yet). Stages the changes in `wb` and returns the cluster id of
/// every document the edges touch.
pub fn apply_edges(
    catalog: &Catalog,
    wb: &mut CatalogBatch<'_>,
    edges: &[(u32, u32)],
    new_lo: u32,
) -> Result<HashMap<u32, u32>> {
    apply_edges_over(catalog, &Overlay::default(), wb, edges, new_lo)
}

/// Cluster changes staged earlier in the same write (re-clustering after a document was
/// replaced), which `apply_edges_over` must read instead of the committed catalog.
#[derive(Default, Debug)]
pub struct Overlay {
    /// Document -> its new cluster id (itself when it became a singleton).
    pub cluster_of: HashMap<u32, u32>,
    /// Cluster id -> its new member set (None: no longer a cluster of two or more).
    pub members: HashMap<u32, Option<RoaringBitmap>>,
}

impl Overlay {
    fn cluster_of(&self, catalog: &Catalog, d: u32) -> Result<u32> {
        match self.cluster_of.get(&d) {
            Some(&c) => Ok(c),
            None => catalog.cluster_of(d),
        }
    }
    fn members(&self, catalog: &Catalog, c: u32) -> Result<Option<RoaringBitmap>> {
        match self.members.get(&c) {
            Some(m) => Ok(m.clone()),
            None => catalog.members(c),
        }
    }
}

/// [`apply_edges`] on top of `overlay` (changes staged earlier in `wb`; later puts win).
pub fn apply_edges_over(
    catalog: &Catalog,
    overlay: &Overlay,
    wb: &mut CatalogBatch<'_>,
    edges: &[(u32, u32)],
    new_lo: u32,
) -> Result<HashMap<u32, u32>> {
    // Current cluster of each endpoint.
    let mut cluster_of: HashMap<u32, u32> = HashMap::new();
    for &(a, b) in edges {
        for d in [a, b] {
            if let std::collections::hash_map::Entry::Vacant(e) = cluster_of.entry(d) {
                e.insert(if d >= new_lo {
                    d
                } else {
                    overlay.cluster_of(catalog, d)?
                });
            }
        }
    }
    let mut uf = UnionFind::new();
    for &(a, b) in edges {
        uf.union(cluster_of[&a], cluster_of[&b]);
    }
    // For each resulting root: merge the member sets of the clusters that joined it.
    let mut root_of_cluster: HashMap<u32, u32> = HashMap::new();
    for (root, clusters) in uf.groups() {
        let mut members = overlay
            .members(catalog, root)?
            .unwrap_or_else(|| RoaringBitmap::from_iter([root]));
        let before = members.len();
        for &c in &clusters {
            root_of_cluster.insert(c, root);
            if c == root {
                continue;
            }
            let m = match overlay.members(catalog, c)? {
                Some(m) => {
                    wb.delete_members(c);
                    m
                }
                None => RoaringBitmap::from_iter([c]),
            };
            for d in &m {
                wb.put_cluster(d, root);
            }
            members |= m;
        }
        if members.len() != before || before == 1 {
            if before == 1 {
                wb.put_cluster(root, root);
            }
            wb.put_members(root, &members);
        }
    }
    Ok(cluster_of
        .into_iter()
        .map(|(d, c)| (d, root_of_cluster.get(&c).copied().unwrap_or(c)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_find_keeps_smallest_root() {
        let mut uf = UnionFind::new();
        uf.union(5, 9);
        uf.union(9, 2);
        uf.union(7, 8);
        assert_eq!(uf.find(9), 2);
        assert_eq!(uf.find(5), 2);
        assert_eq!(uf.find(8), 7);
        let g = uf.groups();
        assert_eq!(g[&2], vec![2, 5, 9]);
        assert_eq!(g[&7], vec![7, 8]);
    }

    #[test]
    fn components_drop_singletons_and_sort() {
        let c = components([(3, 1), (4, 3), (10, 11), (6, 6)]);
        assert_eq!(c, vec![vec![1, 3, 4], vec![10, 11]]);
    }
}
