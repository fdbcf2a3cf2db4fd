//! What the Spark job (`ndd_index.spark`, python/ndd_index/spark.py) needs from the library,
//! per document and per candidate pair, so that its output is the CLI's to the last digit:
//!
//! - `SparkPlan(threshold, shingle_words=, shingle_chars=, sample=, size_groups=)`: the
//!   creation options and threshold of one run (built once per Spark task, cheap);
//! - `plan.read_file(path, key=None, chunk=1024, jsonl_*)`: the documents of one input file as
//!   ingest reads them (`input::read_source`, `canonicalize`, `fingerprint`), in input order,
//!   chunk by chunk: `(keys, features, probes, lo, hi, errors)` where `features[i]` is the
//!   sorted feature set as little-endian u64 bytes, `probes[i]` the prefix-filter length
//!   `|A| - m + 1` of the library's matcher (0: nothing can reach the threshold), `lo[i]..=hi[i]`
//!   the matcher's length bounds on a partner's feature count, `errors` the
//!   `(key, reason)` of each rejected document, and `idx[i]` the document's item number in
//!   the file (documents and rejected records counted alike: `read_raw` numbers them alike);
//! - `plan.verify(features_a, features_b)`: for two lists of feature-byte strings, the
//!   resemblance of each pair as the CLI prints it (`{:.6}`), or None below the threshold:
//!   `Sample::verify`, the matcher's own exact comparison;
//! - for `--index STAGING` (format-spec/staging.md): `read_raw(path, key=None, ...)`, the raw
//!   documents of one file with their item numbers; `stage_options(...)`, the creation
//!   options of a staging (JSON); `StagedPart(staging, part, options, mem_bytes)` with
//!   `add(doc, key, url, data, html, charset)` and `finish()`, one part written by the
//!   library's `lifecycle::stage::PartWriter`; `write_staging(...)`, the staging manifest.

use std::path::PathBuf;

use ndd_index::canonicalize::{canonicalize_with, DocFormat};
use ndd_index::fingerprint::{fingerprint, FingerprintOptions, Sample};
use ndd_index::input::{read_source, InputItem, InputOptions, RawDoc, Source};
use ndd_index::lifecycle::stage;
use ndd_index::ops::CreateSpec;
use ndd_index::options::IndexOptions;
use ndd_index::threshold::Threshold;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{invalid, lib_err, option_err};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SparkPlan>()?;
    m.add_class::<SparkFile>()?;
    m.add_class::<SparkRawFile>()?;
    m.add_class::<StagedPart>()?;
    m.add_function(wrap_pyfunction!(read_raw, m)?)?;
    m.add_function(wrap_pyfunction!(stage_options, m)?)?;
    m.add_function(wrap_pyfunction!(write_staging, m)?)?;
    Ok(())
}

/// The creation options and threshold of a Spark run.
#[pyclass(module = "ndd_index._native", frozen)]
pub struct SparkPlan {
    fp: FingerprintOptions,
    sample: Sample,
    threshold: Threshold,
}

fn to_bytes(features: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(features.len() * 8);
    for f in features {
        out.extend_from_slice(&f.to_le_bytes());
    }
    out
}

fn from_bytes(py: Python<'_>, b: &[u8]) -> PyResult<Vec<u64>> {
    if !b.len().is_multiple_of(8) {
        return Err(option_err(
            py,
            format!("feature bytes of length {} (not a multiple of 8)", b.len()),
        ));
    }
    Ok(b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

#[pymethods]
impl SparkPlan {
    #[new]
    #[pyo3(signature = (threshold, *, shingle_words=None, shingle_chars=None, sample=None,
        size_groups=None, extract=None))]
    fn new(
        py: Python<'_>,
        threshold: &str,
        shingle_words: Option<u32>,
        shingle_chars: Option<u32>,
        sample: Option<String>,
        size_groups: Option<String>,
        extract: Option<String>,
    ) -> PyResult<Self> {
        let threshold: Threshold = threshold
            .parse()
            .map_err(|e| option_err(py, format!("--threshold {threshold}: {e}")))?;
        if threshold.as_f64() <= 0.0 {
            return Err(option_err(py, "--threshold must be above 0"));
        }
        let spec = CreateSpec {
            shingle_words,
            shingle_chars,
            sample,
            size_groups,
            extract,
            ..CreateSpec::default()
        };
        let fp = spec
            .fingerprint_options()
            .map_err(|e| option_err(py, e.to_string()))?;
        Ok(SparkPlan {
            sample: fp.sample,
            fp,
            threshold,
        })
    }

    /// The documents of one input file (a single document, WARC or JSONL), chunk by chunk.
    /// `key`: the key of a single-document file (its path relative to the directory named on
    /// the command line); None keys it by `path` as given, as the CLI does.
    #[pyo3(signature = (path, key=None, *, chunk=1024, jsonl_id="id", jsonl_text="text",
        jsonl_html="html"))]
    #[allow(clippy::too_many_arguments)]
    fn read_file(
        slf: Py<Self>,
        path: PathBuf,
        key: Option<String>,
        chunk: usize,
        jsonl_id: &str,
        jsonl_text: &str,
        jsonl_html: &str,
    ) -> SparkFile {
        let opts = InputOptions {
            jsonl_id_field: jsonl_id.to_owned(),
            jsonl_text_field: jsonl_text.to_owned(),
            jsonl_html_field: jsonl_html.to_owned(),
            ..InputOptions::default()
        };
        let given = path.to_string_lossy().into_owned();
        SparkFile {
            plan: slf,
            items: read_source(Source::Paths(vec![path]), opts),
            given,
            key,
            chunk: chunk.max(1),
            item_no: 0,
        }
    }

    /// `(probes, lo, hi)` of a document with `n` features (see the module doc).
    fn bounds(&self, n: usize) -> (usize, usize, usize) {
        let need = self.sample.min_overlap(self.threshold, n).max(1);
        let probes = if n == 0 || need > n { 0 } else { n - need + 1 };
        let (lo, hi) = self.sample.size_bounds(self.threshold, n);
        (probes, lo, hi.min(i64::MAX as usize))
    }

    /// The CLI's resemblance (`{:.6}`) of each pair `(a[i], b[i])` (a: the older document),
    /// or None when the pair is under the threshold.
    fn verify(
        &self,
        py: Python<'_>,
        a: Vec<Vec<u8>>,
        b: Vec<Vec<u8>>,
    ) -> PyResult<Vec<Option<String>>> {
        if a.len() != b.len() {
            return Err(option_err(py, "verify: a and b differ in length"));
        }
        let mut out = Vec::with_capacity(a.len());
        for (x, y) in a.iter().zip(&b) {
            let (x, y) = (from_bytes(py, x)?, from_bytes(py, y)?);
            out.push(
                self.sample
                    .verify(&x, &y, self.threshold)
                    .map(|ov| format!("{:.6}", ov.resemblance)),
            );
        }
        Ok(out)
    }
}

/// One chunk of a file's documents.
type Chunk<'py> = (
    Vec<String>,
    Vec<Bound<'py, PyBytes>>,
    Vec<usize>,
    Vec<usize>,
    Vec<usize>,
    Vec<(String, String)>,
    Vec<usize>,
);

/// The documents of one file, in input order (an iterator of chunks).
#[pyclass(module = "ndd_index._native", unsendable)]
pub struct SparkFile {
    plan: Py<SparkPlan>,
    items: Box<dyn Iterator<Item = InputItem> + Send>,
    given: String,
    key: Option<String>,
    chunk: usize,
    /// Input items (documents and rejected records) read so far.
    item_no: usize,
}

#[pymethods]
impl SparkFile {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Chunk<'py>>> {
        let plan = self.plan.get();
        let mut keys = Vec::new();
        let mut feats = Vec::new();
        let (mut probes, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
        let mut errors = Vec::new();
        let mut idx = Vec::new();
        let mut seen = 0usize;
        while seen < self.chunk {
            let Some(item) = self.items.next() else { break };
            seen += 1;
            let item_no = self.item_no;
            self.item_no += 1;
            match item {
                InputItem::Bad {
                    key,
                    origin,
                    reason,
                } => errors.push((self.keyed(key), format!("{reason} ({origin})"))),
                InputItem::Doc(raw) => {
                    let key = self.keyed(raw.key);
                    let fp = &plan.fp;
                    let done = py.detach(|| {
                        let charset = raw.charset.as_deref();
                        canonicalize_with(&raw.bytes, raw.format, charset, fp.extract)
                            .map(|c| fingerprint(&c.text, fp).features)
                    });
                    match done {
                        Ok(f) => {
                            let (p, l, h) = plan.bounds(f.len());
                            keys.push(key);
                            idx.push(item_no);
                            feats.push(PyBytes::new(py, &to_bytes(&f)));
                            probes.push(p);
                            lo.push(l);
                            hi.push(h);
                        }
                        Err(why) => errors.push((key, format!("{why} ({})", raw.origin))),
                    }
                }
            }
        }
        if seen == 0 {
            return Ok(None);
        }
        Ok(Some((keys, feats, probes, lo, hi, errors, idx)))
    }
}

impl SparkFile {
    fn keyed(&self, key: String) -> String {
        keyed(&self.key, &self.given, key)
    }
}

/// A single-document file is keyed by the key the job gave it (its relative path in a
/// directory); records of WARC and JSONL files keep their own keys.
fn keyed(given_key: &Option<String>, given: &str, key: String) -> String {
    match given_key {
        Some(k) if key == given => k.clone(),
        _ => key,
    }
}

/// The raw documents of one input file, in input order: chunks of
/// `(idx, keys, urls, data, html, charsets)`, `idx[i]` the document's item number in the file
/// (as `read_file` numbers them; rejected records are skipped but counted). A chunk holds at
/// most `chunk` documents or about `chunk_bytes` bytes.
#[pyfunction]
#[pyo3(signature = (path, key=None, *, chunk=64, chunk_bytes=32 << 20, jsonl_id="id",
    jsonl_text="text", jsonl_html="html"))]
#[allow(clippy::too_many_arguments)]
fn read_raw(
    path: PathBuf,
    key: Option<String>,
    chunk: usize,
    chunk_bytes: usize,
    jsonl_id: &str,
    jsonl_text: &str,
    jsonl_html: &str,
) -> SparkRawFile {
    let opts = InputOptions {
        jsonl_id_field: jsonl_id.to_owned(),
        jsonl_text_field: jsonl_text.to_owned(),
        jsonl_html_field: jsonl_html.to_owned(),
        ..InputOptions::default()
    };
    let given = path.to_string_lossy().into_owned();
    SparkRawFile {
        items: read_source(Source::Paths(vec![path]), opts),
        given,
        key,
        chunk: chunk.max(1),
        chunk_bytes: chunk_bytes.max(1),
        item_no: 0,
    }
}

/// One chunk of raw documents.
type RawChunk<'py> = (
    Vec<usize>,
    Vec<String>,
    Vec<Option<String>>,
    Vec<Bound<'py, PyBytes>>,
    Vec<bool>,
    Vec<Option<String>>,
);

/// The raw documents of one file (an iterator of chunks).
#[pyclass(module = "ndd_index._native", unsendable)]
pub struct SparkRawFile {
    items: Box<dyn Iterator<Item = InputItem> + Send>,
    given: String,
    key: Option<String>,
    chunk: usize,
    chunk_bytes: usize,
    item_no: usize,
}

#[pymethods]
impl SparkRawFile {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> Option<RawChunk<'py>> {
        let mut c: RawChunk<'py> = Default::default();
        let (mut seen, mut bytes) = (0usize, 0usize);
        while seen < self.chunk && bytes < self.chunk_bytes {
            let Some(item) = py.detach(|| self.items.next()) else {
                break;
            };
            seen += 1;
            let no = self.item_no;
            self.item_no += 1;
            if let InputItem::Doc(raw) = item {
                bytes += raw.bytes.len();
                c.0.push(no);
                c.1.push(keyed(&self.key, &self.given, raw.key));
                c.2.push(raw.url);
                c.3.push(PyBytes::new(py, &raw.bytes));
                c.4.push(raw.format == DocFormat::Html);
                c.5.push(raw.charset);
            }
        }
        (seen > 0).then_some(c)
    }
}

/// The creation options of a staging, as JSON (`meta/options` of the index it becomes):
/// the keywords of `Index.create`, checked as an index creation checks them. I-Match and
/// idf-weighted simhash are refused (their tables need an index-wide lexicon).
#[pyfunction]
#[pyo3(signature = (*, shingle_words=None, shingle_chars=None, sample=None, size_groups=None,
    cluster_threshold=None, methods=None, simhash_k=None, simhash_blocks=None, minhash=None,
    supershingle=None, b_agree=None, max_df=None, extract=None))]
#[allow(clippy::too_many_arguments)]
fn stage_options(
    py: Python<'_>,
    shingle_words: Option<u32>,
    shingle_chars: Option<u32>,
    sample: Option<String>,
    size_groups: Option<String>,
    cluster_threshold: Option<String>,
    methods: Option<String>,
    simhash_k: Option<u32>,
    simhash_blocks: Option<u32>,
    minhash: Option<u32>,
    supershingle: Option<u32>,
    b_agree: Option<u32>,
    max_df: Option<u32>,
    extract: Option<String>,
) -> PyResult<String> {
    let cluster_threshold = cluster_threshold
        .map(|t| {
            t.parse::<Threshold>()
                .map_err(|e| option_err(py, format!("--cluster-threshold {t}: {e}")))
        })
        .transpose()?;
    let spec = CreateSpec {
        shingle_words,
        shingle_chars,
        sample,
        size_groups,
        cluster_threshold,
        methods,
        simhash_k,
        simhash_blocks,
        minhash,
        supershingle,
        b_agree,
        max_df,
        extract,
        ..CreateSpec::default()
    };
    let o = spec
        .resolve()
        .and_then(|c| stage::staging_options(&c))
        .map_err(|e| option_err(py, e.to_string()))?;
    Ok(serde_json::to_string(&o).expect("options serialize"))
}

fn parse_options(py: Python<'_>, json: &str) -> PyResult<IndexOptions> {
    serde_json::from_str(json).map_err(|e| option_err(py, format!("staging options: {e}")))
}

/// One part of a staging being written (`lifecycle::stage::PartWriter`).
#[pyclass(module = "ndd_index._native", unsendable)]
pub struct StagedPart {
    w: Option<stage::PartWriter>,
}

#[pymethods]
impl StagedPart {
    #[new]
    #[pyo3(signature = (staging, part, options, mem_bytes=256 << 20))]
    fn new(
        py: Python<'_>,
        staging: PathBuf,
        part: u32,
        options: &str,
        mem_bytes: u64,
    ) -> PyResult<Self> {
        let o = parse_options(py, options)?;
        let w = py
            .detach(|| stage::PartWriter::create(&staging, part, &o, mem_bytes))
            .map_err(|e| lib_err(py, e))?;
        Ok(StagedPart { w: Some(w) })
    }

    /// Adds document `doc` (the part's next id) with its raw bytes, as read by `read_raw`.
    #[pyo3(signature = (doc, key, url, data, html, charset=None))]
    fn add(
        &mut self,
        py: Python<'_>,
        doc: u32,
        key: String,
        url: Option<String>,
        data: Vec<u8>,
        html: bool,
        charset: Option<String>,
    ) -> PyResult<()> {
        let w = self
            .w
            .as_mut()
            .ok_or_else(|| invalid(py, "StagedPart: finished already"))?;
        let raw = RawDoc {
            origin: key.clone(),
            key,
            url,
            bytes: data,
            format: if html {
                DocFormat::Html
            } else {
                DocFormat::Text
            },
            charset,
        };
        py.detach(|| w.add(doc, raw)).map_err(|e| lib_err(py, e))
    }

    /// Finishes the part's files: its staging-manifest entry as JSON, None without documents.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Option<String>> {
        let w = self
            .w
            .take()
            .ok_or_else(|| invalid(py, "StagedPart: finished already"))?;
        let part = py.detach(|| w.finish()).map_err(|e| lib_err(py, e))?;
        Ok(part.map(|p| serde_json::to_string(&p).expect("part serializes")))
    }
}

/// Writes `STAGING/staging.json` from the parts' entries (JSON, any order) once every part is
/// written; checks that they cover `[doc_lo, doc_hi)` without gaps.
#[pyfunction]
#[pyo3(signature = (staging, options, parts, *, run, doc_lo, doc_hi, errors=0))]
#[allow(clippy::too_many_arguments)]
fn write_staging(
    py: Python<'_>,
    staging: PathBuf,
    options: &str,
    parts: Vec<String>,
    run: String,
    doc_lo: u32,
    doc_hi: u32,
    errors: u64,
) -> PyResult<()> {
    let options = parse_options(py, options)?;
    let mut ps = Vec::with_capacity(parts.len());
    for p in &parts {
        ps.push(
            serde_json::from_str::<stage::StagedPart>(p)
                .map_err(|e| invalid(py, format!("staged part {p}: {e}")))?,
        );
    }
    ps.sort_by_key(|p| p.doc_lo);
    let m = stage::StagingManifest {
        format: stage::STAGING_FORMAT.into(),
        version: stage::STAGING_VERSION,
        run,
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        options,
        doc_lo,
        doc_hi,
        errors,
        parts: ps,
    };
    py.detach(|| m.write(&staging)).map_err(|e| lib_err(py, e))
}
