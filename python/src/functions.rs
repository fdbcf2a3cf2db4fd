//! Module functions: `canonicalize` and `fingerprint`, the library's own.

use ndd_index::canonicalize::{self as canon, sniff_format, Extract, Rejection};
use ndd_index::fingerprint::{self as fp, FingerprintOptions};
use ndd_index::ops::CreateSpec;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{doc_bytes, format_of, sniff_of};
use crate::errors::{option_err, raise, Attr};

/// Canonical text, or "" for a document without words; a binary or too large document is a
/// DocumentError.
fn canonical(
    py: Python<'_>,
    html: &Bound<'_, PyAny>,
    format: Option<&str>,
    encoding: &str,
    extract: Extract,
) -> PyResult<String> {
    let bytes = doc_bytes(html, sniff_of(py, encoding)?, &|| "document".to_owned())?;
    let format = format_of(py, format)?.unwrap_or_else(|| sniff_format(None, &bytes));
    match py.detach(|| canon::canonicalize_with(&bytes, format, None, extract)) {
        Ok(c) => Ok(c.text),
        Err(Rejection::Empty) => Ok(String::new()),
        Err(r) => Err(raise(
            py,
            "DocumentError",
            format!("document: {r}"),
            &[("reason", Attr::Str(r.to_string()))],
        )),
    }
}

/// The canonical text of a document (str or bytes): lowercase words joined by single spaces,
/// exactly what every fingerprint is computed from (format-spec/canonical-text.md). `format`:
/// None (sniffed: HTML when it looks like markup), "html" or "text". `extract`: "body" (all of
/// the body's text) or "main" (the main content, as an index created with extract="main").
#[pyfunction]
#[pyo3(signature = (html, *, format=None, encoding="utf-8", extract="body"))]
pub fn canonicalize(
    py: Python<'_>,
    html: &Bound<'_, PyAny>,
    format: Option<&str>,
    encoding: &str,
    extract: &str,
) -> PyResult<String> {
    let extract: Extract = extract
        .parse()
        .map_err(|e: String| option_err(py, format!("extract: {e}")))?;
    canonical(py, html, format, encoding, extract)
}

pub fn fingerprint_with<'py>(
    py: Python<'py>,
    html: &Bound<'py, PyAny>,
    opts: FingerprintOptions,
    format: Option<&str>,
    encoding: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let text = canonical(py, html, format, encoding, opts.extract)?;
    let f = py.detach(|| fp::fingerprint(&text, &opts));
    let d = PyDict::new(py);
    d.set_item("features", f.features)?;
    d.set_item("shingles", f.shingles)?;
    d.set_item("words", f.words)?;
    d.set_item("simhash", f.simhash)?;
    let hex: String = f.digest.iter().map(|b| format!("{b:02x}")).collect();
    d.set_item("digest", hex)?;
    d.set_item("shingle", opts.shingle.to_string())?;
    d.set_item("sample", opts.sample.to_string())?;
    Ok(d)
}

/// The fingerprint of a document as an index with these creation options would store it: a
/// dict with `features` (the sorted sampled shingle hashes), `shingles` (distinct shingles
/// before sampling), `words`, `simhash` (64-bit), `digest` (hex of the exact-duplicate
/// digest), `shingle` and `sample`. `extract`: as for `canonicalize`. Two documents' resemblance is
/// |A ∩ B| / |A ∪ B| of their `features` (with sample="all").
#[pyfunction]
#[pyo3(signature = (html, *, shingle_words=None, shingle_chars=None, sample=None,
    size_groups=None, format=None, encoding="utf-8", extract=None))]
#[allow(clippy::too_many_arguments)]
pub fn fingerprint<'py>(
    py: Python<'py>,
    html: &Bound<'py, PyAny>,
    shingle_words: Option<u32>,
    shingle_chars: Option<u32>,
    sample: Option<String>,
    size_groups: Option<String>,
    format: Option<&str>,
    encoding: &str,
    extract: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = CreateSpec {
        shingle_words,
        shingle_chars,
        sample,
        size_groups,
        extract,
        ..CreateSpec::default()
    };
    let opts = spec
        .fingerprint_options()
        .map_err(|e| option_err(py, e.to_string()))?;
    fingerprint_with(py, html, opts, format, encoding)
}
