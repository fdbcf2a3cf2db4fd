//! TEMPORARY stand-in for `crate::ops` until the whole-operation API lands on main (then this
//! file becomes re-exports only).
#![allow(dead_code)]

use crate::canonicalize::{sniff_format, DocFormat};
use crate::method::query::MethodAnswer;
use crate::method::Method;
use crate::query::{QueryAnswer, QueryOptions};
use crate::{Index, Result, Threshold};

pub enum Source {
    DocsWithFormat(Vec<(String, Vec<u8>, DocFormat)>),
}

pub struct QueryRequest {
    pub method: Method,
    pub threshold: Option<Threshold>,
    pub top: usize,
    pub max_df: Option<u32>,
    pub format: Option<DocFormat>,
}

pub enum QueryResult {
    Shingle(QueryAnswer),
    Method(MethodAnswer),
}

#[derive(serde::Serialize)]
pub struct DocInfo {
    pub key: String,
    pub doc: u32,
    pub batch: String,
    pub cluster: u32,
    pub partners: Vec<String>,
}

pub trait Ops {
    fn query(&self, name: &str, bytes: &[u8], req: &QueryRequest) -> Result<QueryResult>;
    fn document(&self, key: &str) -> Result<Option<DocInfo>>;
    fn cluster_members(&self, cluster: u32) -> Result<Option<Vec<String>>>;
    fn live_documents(&self) -> Result<u64>;
    fn compact_after_ingest(&mut self) -> Result<()>;
    fn add_docs(
        &mut self,
        s: Source,
        opts: &crate::lifecycle::add::AddOptions,
        report: &mut dyn FnMut(&crate::pipeline::DocReport) -> Result<()>,
    ) -> Result<crate::lifecycle::add::AddSummary>;
}

impl Ops for Index {
    fn query(&self, name: &str, bytes: &[u8], req: &QueryRequest) -> Result<QueryResult> {
        let format = req
            .format
            .unwrap_or_else(|| sniff_format(Some(name), bytes));
        if req.method != Method::Shingle {
            return Ok(QueryResult::Method(self.query_method(
                name,
                bytes,
                format,
                req.method,
                req.threshold,
                req.top,
            )?));
        }
        let opts = QueryOptions {
            threshold: req.threshold.unwrap_or_else(|| "0.5".parse().unwrap()),
            top: req.top,
            max_df: req.max_df,
        };
        Ok(QueryResult::Shingle(
            self.query_document(name, bytes, format, None, &opts)?,
        ))
    }
    fn document(&self, key: &str) -> Result<Option<DocInfo>> {
        let Some(doc) = self.catalog().doc_by_key(key)? else {
            return Ok(None);
        };
        if !self.view().is_live(doc) {
            return Ok(None);
        }
        let cluster = self.catalog().cluster_of(doc)?;
        let partners = self
            .cluster_members(cluster)?
            .unwrap_or_default()
            .into_iter()
            .filter(|k| k != key)
            .collect();
        Ok(Some(DocInfo {
            key: key.into(),
            doc,
            batch: String::new(),
            cluster,
            partners,
        }))
    }
    fn cluster_members(&self, cluster: u32) -> Result<Option<Vec<String>>> {
        let view = self.view();
        let ids: Vec<u32> = match self.catalog().members(cluster)? {
            Some(m) => m.iter().filter(|d| view.is_live(*d)).collect(),
            None if view.is_live(cluster) && self.catalog().cluster_of(cluster)? == cluster => {
                vec![cluster]
            }
            None => return Ok(None),
        };
        if ids.is_empty() {
            return Ok(None);
        }
        let recs = self.catalog().docs(&ids)?;
        Ok(Some(
            recs.into_iter()
                .map(|r| r.map(|r| r.key).unwrap_or_default())
                .collect(),
        ))
    }
    fn live_documents(&self) -> Result<u64> {
        Ok(self.stats()?.documents)
    }
    fn compact_after_ingest(&mut self) -> Result<()> {
        self.compact(false, &crate::lifecycle::MergePolicy::default())?;
        Ok(())
    }
    fn add_docs(
        &mut self,
        s: Source,
        opts: &crate::lifecycle::add::AddOptions,
        report: &mut dyn FnMut(&crate::pipeline::DocReport) -> Result<()>,
    ) -> Result<crate::lifecycle::add::AddSummary> {
        let Source::DocsWithFormat(docs) = s;
        let tmp = tempfile::tempdir().unwrap();
        for (k, b, _f) in docs.iter() {
            let p = tmp.path().join(k);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b).unwrap();
        }
        let paths = vec![tmp.path().to_path_buf()];
        self.add(paths, opts, report)
    }
}
