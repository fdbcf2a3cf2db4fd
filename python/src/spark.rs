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
//!   the matcher's length bounds on a partner's feature count, and `errors` the
//!   `(key, reason)` of each rejected document;
//! - `plan.verify(features_a, features_b)`: for two lists of feature-byte strings, the
//!   resemblance of each pair as the CLI prints it (`{:.6}`), or None below the threshold:
//!   `Sample::verify`, the matcher's own exact comparison.

use std::path::PathBuf;

use ndd_index::canonicalize::canonicalize;
use ndd_index::fingerprint::{fingerprint, FingerprintOptions, Sample};
use ndd_index::input::{read_source, InputItem, InputOptions, Source};
use ndd_index::ops::CreateSpec;
use ndd_index::threshold::Threshold;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::option_err;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SparkPlan>()?;
    m.add_class::<SparkFile>()?;
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
    if b.len() % 8 != 0 {
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
        size_groups=None))]
    fn new(
        py: Python<'_>,
        threshold: &str,
        shingle_words: Option<u32>,
        shingle_chars: Option<u32>,
        sample: Option<String>,
        size_groups: Option<String>,
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
);

/// The documents of one file, in input order (an iterator of chunks).
#[pyclass(module = "ndd_index._native", unsendable)]
pub struct SparkFile {
    plan: Py<SparkPlan>,
    items: Box<dyn Iterator<Item = InputItem> + Send>,
    given: String,
    key: Option<String>,
    chunk: usize,
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
        let mut seen = 0usize;
        while seen < self.chunk {
            let Some(item) = self.items.next() else { break };
            seen += 1;
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
                        canonicalize(&raw.bytes, raw.format, raw.charset.as_deref())
                            .map(|c| fingerprint(&c.text, fp).features)
                    });
                    match done {
                        Ok(f) => {
                            let (p, l, h) = plan.bounds(f.len());
                            keys.push(key);
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
        Ok(Some((keys, feats, probes, lo, hi, errors)))
    }
}

impl SparkFile {
    /// A single-document file is keyed by the key the job gave it (its relative path in a
    /// directory); records of WARC and JSONL files keep their own keys.
    fn keyed(&self, key: String) -> String {
        match &self.key {
            Some(k) if key == self.given => k.clone(),
            _ => key,
        }
    }
}
