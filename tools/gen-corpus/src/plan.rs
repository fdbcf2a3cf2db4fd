//! The corpus plan: which document is a variant of which original, batch boundaries,
//! sites, and the keys the indexer will use for each document.
//!
//! Documents are numbered 0..n in output order (batch-01 first). The plan is the only
//! per-document state ndd-gen keeps (4 bytes per document: the position of its cluster's
//! original); document contents are regenerated from it on demand, so memory stays at
//! ~40 MB for 10M documents whatever their size.
//!
//! Cluster members are drawn uniformly from all positions, and the earliest member is the
//! original: variants are scattered over the same and later batches, which is what
//! nightly increments have to catch.

use crate::args::{Format, Params};
use crate::rng::{tag, Rng};
use std::fmt::Write;

/// Above this many documents keys get a shard directory level, so no directory of the
/// output holds more than this many entries.
pub const MAX_DIR_ENTRIES: u32 = 10_000;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanStats {
    /// Clusters with at least one variant (each has exactly one original).
    pub clusters: u32,
    pub variants: u32,
    /// Documents in no planted cluster.
    pub singletons: u32,
    pub largest_cluster: u32,
}

pub struct Plan {
    pub n: u32,
    orig: Vec<u32>,
    /// Sorted positions of I-Match originals, which are long documents.
    long_originals: Vec<u32>,
    /// `batch_starts[b]..batch_starts[b+1]` are the documents of batch b (0-based).
    pub batch_starts: Vec<u32>,
    pub stats: PlanStats,
    seed: u64,
    sites: u32,
    cross_site: f64,
    format: Format,
    page_width: usize,
    site_width: usize,
    batch_width: usize,
    key_prefix: String,
    /// Width of the shard directory, if keys have one.
    shard_width: Option<usize>,
}

impl Plan {
    pub fn build(p: &Params) -> Plan {
        let n = p.total_docs() as u32; // validated <= 2^31
        let mut rng = Rng::stream(p.seed, tag::PLAN, 0);
        let mut orig: Vec<u32> = (0..n).collect();
        let mut long_originals = Vec::new();
        let mut stats = PlanStats::default();
        {
            // Lazy Fisher-Yates: `take` draws the next uniformly random unused position.
            let mut perm: Vec<u32> = (0..n).collect();
            let mut next = 0usize;
            let mut take = |rng: &mut Rng, k: usize| -> Vec<u32> {
                let mut members = Vec::with_capacity(k);
                for _ in 0..k {
                    let j = rng.range(next as u64, n as u64 - 1) as usize;
                    perm.swap(next, j);
                    members.push(perm[next]);
                    next += 1;
                }
                members
            };
            let mut plant = |members: Vec<u32>, stats: &mut PlanStats| -> u32 {
                let o = *members.iter().min().expect("clusters have >= 2 members");
                for &m in &members {
                    orig[m as usize] = o;
                }
                stats.clusters += 1;
                stats.variants += members.len() as u32 - 1;
                stats.largest_cluster = stats.largest_cluster.max(members.len() as u32);
                o
            };
            match p.imatch {
                Some((originals, variants)) => {
                    for _ in 0..originals {
                        let members = take(&mut rng, variants as usize + 1);
                        if members.len() >= 2 {
                            long_originals.push(plant(members, &mut stats));
                        } else {
                            long_originals.push(members[0]);
                        }
                    }
                }
                None => {
                    let target = (p.dup_fraction * n as f64).round() as u64;
                    let mut used = 0u64;
                    let mut made = 0u64;
                    while made < target && used + 2 <= n as u64 {
                        let size = rng.range(2, p.cluster_size as u64);
                        let variants = (size - 1).min(target - made).min(n as u64 - used - 1);
                        plant(take(&mut rng, variants as usize + 1), &mut stats);
                        made += variants;
                        used += variants + 1;
                    }
                }
            }
        }
        long_originals.sort_unstable();
        stats.singletons = n - stats.clusters - stats.variants;
        let batch_starts = (0..=p.batches as u64)
            .map(|b| (b * n as u64 / p.batches as u64) as u32)
            .collect();
        let digits = |x: u64| x.to_string().len();
        Plan {
            n,
            orig,
            long_originals,
            batch_starts,
            stats,
            seed: p.seed,
            sites: p.sites,
            cross_site: p.cross_site,
            format: p.format,
            page_width: digits(n as u64 - 1).max(7),
            site_width: digits(p.sites as u64 - 1).max(2),
            batch_width: digits(p.batches as u64).max(2),
            key_prefix: p.key_prefix.clone(),
            shard_width: (n > MAX_DIR_ENTRIES)
                .then(|| digits(((n - 1) / MAX_DIR_ENTRIES) as u64).max(3)),
        }
    }

    /// Position of the original of `doc`'s cluster (`doc` itself if it is not a variant).
    #[inline]
    pub fn original(&self, doc: u32) -> u32 {
        self.orig[doc as usize]
    }

    /// Whether `doc` is an I-Match protocol original (a long document).
    pub fn is_long(&self, doc: u32) -> bool {
        self.long_originals.binary_search(&doc).is_ok()
    }

    pub fn long_originals(&self) -> &[u32] {
        &self.long_originals
    }

    /// A document's site: its original's, so a cluster shares boilerplate.
    /// The site whose boilerplate `doc` carries: its cluster original's. A `--cross-site`
    /// variant is a mirror: the original's page, boilerplate included, on another host.
    pub fn home_site(&self, doc: u32) -> u32 {
        Rng::stream(self.seed, tag::SITE_OF, self.original(doc) as u64).below(self.sites as u64)
            as u32
    }

    /// The site `doc` is published on (its key's host or directory): its home site, or for a
    /// `--cross-site` variant another one.
    pub fn site(&self, doc: u32) -> u32 {
        let own = self.home_site(doc);
        if self.cross_site > 0.0 && self.sites > 1 && self.original(doc) != doc {
            let mut r = Rng::stream(self.seed, tag::CROSS_SITE, doc as u64);
            if r.chance(self.cross_site) {
                let other = r.below(self.sites as u64 - 1) as u32;
                return if other >= own { other + 1 } else { other };
            }
        }
        own
    }

    pub fn batches(&self) -> u32 {
        self.batch_starts.len() as u32 - 1
    }

    /// `batch-01`, ... (`b` is 0-based).
    pub fn batch_name(&self, b: u32) -> String {
        format!("batch-{:0w$}", b + 1, w = self.batch_width)
    }

    /// The key the indexer will give `doc`: its path relative to the batch directory
    /// (files), or its WARC-Target-URI (warc).
    pub fn write_key(&self, doc: u32, out: &mut String) {
        let site = self.site(doc);
        let (sw, pw) = (self.site_width, self.page_width);
        // Writing to a String cannot fail.
        let _ = match (self.format, self.shard_width) {
            (Format::Warc, _) => {
                let kp = &self.key_prefix;
                write!(
                    out,
                    "http://site-{site:0sw$}.example/{kp}page-{doc:0pw$}.html"
                )
            }
            (Format::Files, None) => write!(out, "site-{site:0sw$}/page-{doc:0pw$}.html"),
            (Format::Files, Some(hw)) => {
                let shard = doc / MAX_DIR_ENTRIES;
                write!(out, "site-{site:0sw$}/{shard:0hw$}/page-{doc:0pw$}.html")
            }
        };
    }

    pub fn key(&self, doc: u32) -> String {
        let mut s = String::new();
        self.write_key(doc, &mut s);
        s
    }

    /// The truth label of `doc`: its cluster original's number, padded as in its key.
    pub fn write_label(&self, doc: u32, out: &mut String) {
        let _ = write!(out, "{:0w$}", self.original(doc), w = self.page_width);
    }

    /// Zero-padded document number, as in keys (used for in-page ids and links).
    pub fn page_number(&self, doc: u32) -> String {
        format!("{:0w$}", doc, w = self.page_width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn params(docs: u32) -> Params {
        let mut p = Params::defaults("unused".into());
        p.docs = docs;
        p.batches = 4;
        p
    }

    #[test]
    fn cross_site_moves_only_variants_and_about_the_asked_fraction() {
        let mut p = params(4000);
        p.sites = 10;
        let same = Plan::build(&p);
        p.cross_site = 0.5;
        let cross = Plan::build(&p);
        let (mut variants, mut moved) = (0, 0);
        for d in 0..cross.n {
            if cross.original(d) == d {
                assert_eq!(cross.site(d), same.site(d), "originals stay");
            } else {
                variants += 1;
                assert_eq!(same.site(d), same.site(same.original(d)));
                moved += (cross.site(d) != cross.site(cross.original(d))) as u32;
                assert!(cross.site(d) < 10);
            }
        }
        assert!(variants > 500, "{variants}");
        let f = moved as f64 / variants as f64;
        assert!((0.4..0.6).contains(&f), "{f}");
    }

    #[test]
    fn clusters_respect_fraction_size_and_star_shape() {
        let p = params(20_000);
        let plan = Plan::build(&p);
        let mut sizes: HashMap<u32, u32> = HashMap::new();
        for d in 0..plan.n {
            let o = plan.original(d);
            assert!(o <= d, "original must come first");
            assert_eq!(plan.original(o), o, "originals are their own original");
            assert_eq!(plan.site(d), plan.site(o));
            *sizes.entry(o).or_default() += 1;
        }
        let variants: u32 = sizes.values().map(|s| s - 1).sum();
        assert_eq!(variants, plan.stats.variants);
        assert_eq!(variants, 6000, "30% of 20000");
        assert!(sizes.values().all(|&s| s <= 8));
        assert_eq!(plan.stats.largest_cluster, 8);
        assert_eq!(
            plan.stats.singletons as usize,
            sizes.values().filter(|&&s| s == 1).count()
        );
        // Variants spread over later batches.
        let later = (0..plan.n)
            .filter(|&d| plan.original(d) < plan.batch_starts[1] && d >= plan.batch_starts[3])
            .count();
        assert!(later > 100, "{later}");
    }

    #[test]
    fn imatch_plan_and_keys() {
        let mut p = params(1000);
        p.imatch = Some((10, 10));
        let plan = Plan::build(&p);
        assert_eq!(plan.n, 1110);
        assert_eq!(plan.stats.clusters, 10);
        assert_eq!(plan.stats.variants, 100);
        assert_eq!(plan.long_originals().len(), 10);
        assert!(plan
            .long_originals()
            .iter()
            .all(|&o| plan.original(o) == o && plan.is_long(o)));
        assert_eq!(plan.batch_starts, vec![0, 277, 555, 832, 1110]);
        let k = plan.key(42);
        assert!(
            k.starts_with("site-") && k.ends_with("/page-0000042.html"),
            "{k}"
        );
        p.format = Format::Warc;
        let plan = Plan::build(&p);
        assert!(plan.key(42).starts_with("http://site-"));
        assert!(plan.key(42).ends_with(".example/page-0000042.html"));
        let tagged = Plan::build(&Params {
            key_prefix: "p2-".into(),
            ..p.clone()
        });
        assert!(tagged.key(42).ends_with(".example/p2-page-0000042.html"));
        assert_eq!(plan.batch_name(0), "batch-01");
    }

    #[test]
    fn large_corpora_get_a_shard_level() {
        let mut p = params(25_000);
        p.dup_fraction = 0.0;
        let plan = Plan::build(&p);
        assert_eq!(plan.stats.singletons, 25_000);
        let k = plan.key(24_999);
        assert!(k.ends_with("/002/page-0024999.html"), "{k}");
    }
}
