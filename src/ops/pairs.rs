//! `Index::pairs`: every pair of live documents a method reports, keyed, streamed.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::index::Index;
use crate::method::{self, Method};
use crate::pipeline::{self, Matching, PairsConfig, PairsStats};
use crate::sort::SortOptions;
use crate::threshold::Threshold;

/// What `pairs` computes.
#[derive(Clone, Debug)]
pub struct PairsRequest {
    pub method: Method,
    /// Minimum similarity: resemblance for shingle (required), 1 - hamming/64 for simhash
    /// (optional), C-similarity for combined and c-sim (default 355/384); others take none.
    pub threshold: Option<Threshold>,
    /// Commonality limit: `None` = the index's, `Some(0)` = no limit.
    pub max_df: Option<u32>,
    /// Memory budget: of the external sorts (join) or of one block's pair buffer (probe).
    /// `None`: a quarter of RAM for join, the default buffer for probe.
    pub mem: Option<u64>,
    /// How pairs are found (shingle); all choices give the same pairs.
    pub matching: Matching,
    /// Say of each pair whether both documents are on the same site
    /// ([`KeyedPair::same_site`]; costs one catalog read per document of a pair).
    pub sites: bool,
}

impl Default for PairsRequest {
    fn default() -> Self {
        PairsRequest {
            method: Method::Shingle,
            threshold: None,
            max_df: None,
            mem: None,
            matching: Matching::Auto,
            sites: false,
        }
    }
}

impl PairsRequest {
    /// Shingle pairs at resemblance >= `t`, every other choice at its default.
    pub fn shingle(t: Threshold) -> Self {
        PairsRequest {
            threshold: Some(t),
            ..Default::default()
        }
    }
}

/// One pair, by key (`key_a <= key_b`), with the method's similarity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyedPair {
    pub key_a: String,
    pub key_b: String,
    /// The method's similarity (resemblance for shingle; see [`method::MethodPair`]).
    pub resemblance: f64,
    #[serde(skip)]
    pub method: Method,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hamming: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agree: Option<u32>,
    /// Whether both documents are on the same site (`input::site`); only when the request
    /// asked for [`PairsRequest::sites`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_site: Option<bool>,
}

impl Index {
    /// Streams every pair of `req` to `each`, in the order of `ndd-index pairs` (by the older
    /// document's id, then the younger's). Shingle pairs are computed block by block and never
    /// held whole; the other methods' pair sets are small and computed at once. Returns the
    /// work counters of a shingle run.
    pub fn pairs(
        &self,
        req: &PairsRequest,
        mut each: impl FnMut(&KeyedPair) -> Result<()>,
    ) -> Result<Option<PairsStats>> {
        if req.method != Method::Shingle {
            let found = method::pairs(self, req.method, req.threshold)?;
            let ids: Vec<u32> = found.iter().flat_map(|p| [p.a, p.b]).collect();
            let keys = self.keys_of(&ids)?;
            let sites = self.sites_if(req.sites, &ids)?;
            for p in &found {
                let (ka, kb) = ordered(&keys, p.a, p.b);
                each(&KeyedPair {
                    key_a: ka.to_owned(),
                    key_b: kb.to_owned(),
                    resemblance: p.similarity,
                    method: req.method,
                    hamming: p.hamming,
                    agree: p.agree,
                    same_site: same_site(&sites, req.sites, p.a, p.b),
                })?;
            }
            return Ok(None);
        }
        let t = req
            .threshold
            .ok_or_else(|| Error::InvalidArgument("--method shingle needs --threshold".into()))?;
        let view = self.view();
        let mut cfg = PairsConfig::new(self.options().sample()?, t);
        cfg.max_df = super::run_max_df(self, req.max_df);
        if req.matching == Matching::Auto && cfg.max_df.is_none() && self.stored_pairs_apply(t)? {
            return self.pairs_from_store(req, t, each).map(Some);
        }
        let sort = SortOptions::new(req.mem.unwrap_or_else(super::default_mem), self.tmp_dir());
        crate::segment::set_key_cache_budget(crate::segment::key_cache_share(sort.mem_bytes));
        // The planner's estimates go into the stats whatever the request (with a forced
        // matching they say what `auto` would have chosen); they cost a sample of 256 documents.
        let planned = pipeline::plan::plan(view, &cfg, 0..view.doc_ids(), 0, sort.mem_bytes);
        // `auto` runs the prefix self-join where it applies (every live document probes, no
        // commonality limit, not adaptive sampling) and fits the budget, else the planner's
        // choice: `for_each_pair_planned` tries it first.
        let runs = match req.matching {
            Matching::Auto => planned.choice,
            m => m,
        };
        if let (Some(m), Matching::Probe) = (req.mem, runs) {
            cfg.buffer_bytes = m; // probe's budget is its pair buffer
        }
        let matching = req.matching;
        // Keys are looked up per block, never held for the whole index.
        let mut ids: Vec<u32> = Vec::new();
        let all = 0..view.doc_ids();
        let stats = pipeline::for_each_pair_planned(
            matching,
            planned,
            view,
            &cfg,
            &sort,
            all,
            0,
            |block| {
                ids.clear();
                ids.extend(block.iter().flat_map(|p| [p.a, p.b]));
                let keys = self.keys_of(&ids)?;
                let sites = self.sites_if(req.sites, &ids)?;
                for p in block {
                    let (ka, kb) = ordered(&keys, p.a, p.b);
                    each(&KeyedPair {
                        key_a: ka.to_owned(),
                        key_b: kb.to_owned(),
                        resemblance: p.m.resemblance,
                        method: Method::Shingle,
                        hamming: None,
                        agree: None,
                        same_site: same_site(&sites, req.sites, p.a, p.b),
                    })?;
                }
                Ok(())
            },
        )?;
        Ok(Some(PairsStats {
            source: Some("matching"),
            ..stats
        }))
    }

    /// Whether the stored pairs answer shingle pairs at `t` exactly (format-spec/rocksdb.md,
    /// "`pairs`: stored pairs"): the marker is there (every pair at or above the cluster
    /// threshold is stored since creation; no writer published documents without theirs),
    /// it names the index's cluster threshold and sample, the index has no commonality limit,
    /// and `t` is at least the cluster threshold. (The caller checks the run's own limit and
    /// the requested matching.)
    pub fn stored_pairs_apply(&self, t: Threshold) -> Result<bool> {
        let o = self.options();
        if o.max_df.is_some() {
            return Ok(false);
        }
        let Some(m) = self.catalog.pairs_marker()? else {
            return Ok(false);
        };
        let ct = o.cluster_threshold()?;
        let same = m.method == "shingle"
            && m.sample == o.sample
            && m.threshold.parse::<Threshold>().is_ok_and(|x| x == ct);
        Ok(same && t.at_least(ct))
    }

    /// `pairs` from the stored pairs: one scan in key order (older id, then younger: the
    /// matching's order), skipping pairs of documents this snapshot does not have (published
    /// later) or has deleted, and those below `t`; handed on in blocks with their keys.
    fn pairs_from_store(
        &self,
        req: &PairsRequest,
        t: Threshold,
        mut each: impl FnMut(&KeyedPair) -> Result<()>,
    ) -> Result<PairsStats> {
        const BLOCK: usize = 4096;
        let view = self.view();
        let mut stats = PairsStats {
            source: Some("stored"),
            ..Default::default()
        };
        let mut read = 0u64;
        let mut block: Vec<crate::store::pairs::StoredPair> = Vec::with_capacity(BLOCK);
        let mut ids: Vec<u32> = Vec::new();
        let mut flush = |block: &mut Vec<crate::store::pairs::StoredPair>,
                         stats: &mut PairsStats|
         -> Result<()> {
            if block.is_empty() {
                return Ok(());
            }
            ids.clear();
            ids.extend(block.iter().flat_map(|p| [p.a, p.b]));
            let keys = self.keys_of(&ids)?;
            let sites = self.sites_if(req.sites, &ids)?;
            for p in block.iter() {
                let (ka, kb) = ordered(&keys, p.a, p.b);
                each(&KeyedPair {
                    key_a: ka.to_owned(),
                    key_b: kb.to_owned(),
                    resemblance: p.resemblance(),
                    method: Method::Shingle,
                    hamming: None,
                    agree: None,
                    same_site: same_site(&sites, req.sites, p.a, p.b),
                })?;
            }
            stats.count_block(block.len());
            block.clear();
            Ok(())
        };
        for p in self.catalog.iter_pairs() {
            let p = p?;
            read += 1;
            if !(view.is_live(p.a) && view.is_live(p.b) && t.admits(p.inter, p.denom)) {
                continue;
            }
            block.push(p);
            if block.len() == BLOCK {
                flush(&mut block, &mut stats)?;
            }
        }
        flush(&mut block, &mut stats)?;
        stats.stored_read = Some(read);
        Ok(stats)
    }
}

impl Index {
    fn sites_if(&self, wanted: bool, ids: &[u32]) -> Result<HashMap<u32, String>> {
        if wanted {
            self.sites_of(ids)
        } else {
            Ok(HashMap::new())
        }
    }
}

fn same_site(sites: &HashMap<u32, String>, wanted: bool, a: u32, b: u32) -> Option<bool> {
    wanted.then(|| matches!((sites.get(&a), sites.get(&b)), (Some(x), Some(y)) if x == y))
}

fn ordered(keys: &HashMap<u32, String>, a: u32, b: u32) -> (&str, &str) {
    let (ka, kb) = (keys[&a].as_str(), keys[&b].as_str());
    if ka <= kb {
        (ka, kb)
    } else {
        (kb, ka)
    }
}
