//! `Index::query`: one document's near-duplicates, by any method.

use serde::Serialize;

use crate::canonicalize::{sniff_format, DocFormat};
use crate::error::Result;
use crate::index::Index;
use crate::method::query::MethodAnswer;
use crate::method::Method;
use crate::query::{check_threshold, PreparedDoc, QueryAnswer, QueryOptions};
use crate::threshold::Threshold;

/// A query's parameters.
#[derive(Clone, Debug)]
pub struct QueryRequest {
    pub method: Method,
    /// Minimum similarity; shingle's default is resemblance 0.5 (other methods: as `pairs`).
    pub threshold: Option<Threshold>,
    /// At most this many hits, best first (0 = all).
    pub top: usize,
    /// Commonality limit (shingle): `None` = the index's, `Some(0)` = none.
    pub max_df: Option<u32>,
    /// The document's format; `None`: sniffed from its name and bytes as for a file.
    pub format: Option<DocFormat>,
}

impl Default for QueryRequest {
    fn default() -> Self {
        QueryRequest {
            method: Method::Shingle,
            threshold: None,
            top: 10,
            max_df: None,
            format: None,
        }
    }
}

/// The default resemblance threshold of a shingle query.
pub const DEFAULT_QUERY_THRESHOLD: f64 = 0.5;

/// A query's answer: shingle answers carry resemblance, containment and clusters; the other
/// methods their own similarity.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum QueryResult {
    Shingle(QueryAnswer),
    Method(MethodAnswer),
}

impl Index {
    /// Near-duplicates of one document (`name` is used for messages and format sniffing); it
    /// is not added.
    pub fn query(&self, name: &str, bytes: &[u8], req: &QueryRequest) -> Result<QueryResult> {
        let format = req
            .format
            .unwrap_or_else(|| sniff_format(Some(name), bytes));
        if req.method != Method::Shingle {
            let ans = self.query_method(name, bytes, format, req.method, req.threshold, req.top)?;
            return Ok(QueryResult::Method(ans));
        }
        let ans = self.query_document(name, bytes, format, None, &shingle_options(req))?;
        Ok(QueryResult::Shingle(ans))
    }

    /// The check of a check-and-insert of the page `bytes` under `key`: [`Index::query`]'s
    /// answer, and for a shingle query the page prepared for the add
    /// ([`crate::lifecycle::add::AddDoc::Prepared`]): canonicalized and fingerprinted once,
    /// with what the check found when that can stand for the add's search of this snapshot
    /// (a threshold at most the cluster threshold, no commonality limit).
    pub fn query_to_insert(
        &self,
        key: &str,
        bytes: &[u8],
        req: &QueryRequest,
    ) -> Result<(QueryResult, Option<PreparedDoc>)> {
        if req.method != Method::Shingle {
            return Ok((self.query(key, bytes, req)?, None));
        }
        let started = std::time::Instant::now();
        let format = req.format.unwrap_or_else(|| sniff_format(Some(key), bytes));
        let opts = shingle_options(req);
        check_threshold(&opts)?;
        let mut p = self.prepare(key, bytes, format, None)?;
        let cluster = self.options().cluster_threshold()?;
        let ans = self.query_prepared(&mut p, &opts, Some(cluster), started)?;
        Ok((QueryResult::Shingle(ans), Some(p)))
    }
}

/// The shingle query options of a request (resemblance [`DEFAULT_QUERY_THRESHOLD`] unless
/// given).
fn shingle_options(req: &QueryRequest) -> QueryOptions {
    QueryOptions {
        threshold: req.threshold.unwrap_or_else(|| {
            Threshold::try_from(DEFAULT_QUERY_THRESHOLD).expect("valid threshold")
        }),
        top: req.top,
        max_df: req.max_df,
    }
}
