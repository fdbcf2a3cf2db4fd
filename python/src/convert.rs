//! Conversions between Python values and the library's inputs and outputs.

use std::path::PathBuf;

use ndd_index::canonicalize::DocFormat;
use ndd_index::threshold::Threshold;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::errors::{invalid, option_err};

/// A JSON value (what the CLI prints with `--json`) as Python objects: dicts, lists, str,
/// int, float, bool, None.
pub fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| value_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, value_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// A document's text: `str` (encoded as UTF-8) or `bytes`. Bytes must be UTF-8 unless
/// `sniff` (then they are decoded as a file's bytes are: BOM, `<meta charset>`, else UTF-8).
/// `what` names the document in errors.
pub fn doc_bytes(
    obj: &Bound<'_, PyAny>,
    sniff: bool,
    what: &dyn Fn() -> String,
) -> PyResult<Vec<u8>> {
    let py = obj.py();
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_str() {
            Ok(t) => Ok(t.as_bytes().to_vec()),
            Err(_) => Err(invalid(
                py,
                format!(
                    "{}: text is not valid Unicode (lone surrogates cannot be encoded as UTF-8)",
                    what()
                ),
            )),
        };
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        let bytes = b.as_bytes();
        if !sniff {
            if let Err(e) = std::str::from_utf8(bytes) {
                return Err(invalid(
                    py,
                    format!(
                        "{}: bytes are not valid UTF-8 (at byte {}); pass str, or encoding=\"sniff\" to decode them as a file's bytes (BOM, <meta charset>, else UTF-8)",
                        what(),
                        e.valid_up_to()
                    ),
                ));
            }
        }
        return Ok(bytes.to_vec());
    }
    if let Ok(b) = obj.cast::<pyo3::types::PyByteArray>() {
        let pybytes = PyBytes::new(py, &b.to_vec());
        return doc_bytes(pybytes.as_any(), sniff, what);
    }
    Err(PyTypeError::new_err(format!(
        "{}: the document must be str or bytes, not {}",
        what(),
        type_name(obj)
    )))
}

/// A document key: a `str` that encodes as UTF-8.
pub fn doc_key(obj: &Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<String> {
    let py = obj.py();
    match obj.cast::<PyString>() {
        Ok(s) => match s.to_str() {
            Ok(t) => Ok(t.to_owned()),
            Err(_) => Err(invalid(
                py,
                format!(
                    "{}: key is not valid UTF-8 (it has lone surrogates)",
                    what()
                ),
            )),
        },
        Err(_) => Err(PyTypeError::new_err(format!(
            "{}: key must be str, not {}",
            what(),
            type_name(obj)
        ))),
    }
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// `encoding=` of ingest/add/query: "utf-8" (bytes are checked) or "sniff".
pub fn sniff_of(py: Python<'_>, encoding: &str) -> PyResult<bool> {
    match encoding.to_ascii_lowercase().as_str() {
        "utf-8" | "utf8" => Ok(false),
        "sniff" => Ok(true),
        other => Err(invalid(
            py,
            format!("encoding must be \"utf-8\" or \"sniff\", not {other:?}"),
        )),
    }
}

/// `format=`: None (sniffed from the key and bytes, as for a file), "html" or "text".
pub fn format_of(py: Python<'_>, format: Option<&str>) -> PyResult<Option<DocFormat>> {
    match format.map(|f| f.to_ascii_lowercase()) {
        None => Ok(None),
        Some(f) if f == "html" => Ok(Some(DocFormat::Html)),
        Some(f) if f == "text" => Ok(Some(DocFormat::Text)),
        Some(f) => Err(invalid(
            py,
            format!("format must be \"html\", \"text\" or None, not {f:?}"),
        )),
    }
}

/// A threshold from a float, int or decimal string ("0.8"), exact as the CLI's.
pub fn threshold(obj: &Bound<'_, PyAny>, name: &str, creation: bool) -> PyResult<Threshold> {
    let py = obj.py();
    let bad = |msg: String| {
        if creation {
            option_err(py, msg)
        } else {
            invalid(py, msg)
        }
    };
    let text = if let Ok(s) = obj.cast::<PyString>() {
        s.to_str()?.to_owned()
    } else if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a number, not bool"
        )));
    } else if let Ok(x) = obj.extract::<f64>() {
        if !x.is_finite() {
            return Err(bad(format!(
                "{name}: invalid threshold {x}: expected a number between 0 and 1"
            )));
        }
        format!("{x}")
    } else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a number or a decimal string, not {}",
            type_name(obj)
        )));
    };
    text.parse::<Threshold>()
        .map_err(|e| bad(format!("{name}: {e}")))
}

/// A size in bytes from an int or a string such as "512MiB".
pub fn size(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    let py = obj.py();
    if let Ok(s) = obj.cast::<PyString>() {
        return ndd_index::ops::parse_size(s.to_str()?)
            .map_err(|e| invalid(py, format!("{name}: {e}")));
    }
    match obj.extract::<u64>() {
        Ok(v) => Ok(v),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name} must be an int (bytes) or a size string such as \"512MiB\", not {}",
            type_name(obj)
        ))),
    }
}

/// A filesystem path from str, bytes or os.PathLike.
pub fn path_of(obj: &Bound<'_, PyAny>) -> Option<PathBuf> {
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        return None;
    }
    if obj.cast::<PyString>().is_ok() || obj.hasattr("__fspath__").unwrap_or(false) {
        return obj.extract::<PathBuf>().ok();
    }
    None
}
