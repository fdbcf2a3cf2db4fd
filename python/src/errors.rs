//! Library errors as Python exceptions. The classes live in `ndd_index/_errors.py` (plain
//! Python, so they can also derive from `ValueError`, `FileNotFoundError`, ...); the message
//! is the library's `Display`, the text the CLI prints after `ndd-index: error:`.

use ndd_index::Error;
use pyo3::prelude::*;

/// Why a binding call failed: a library error, an error already raised in Python (a
/// KeyboardInterrupt caught while waiting, a bad argument), or a closed index.
pub enum Fail {
    Lib(Error),
    Py(PyErr),
    Closed,
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Lib(e)
    }
}

impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Self {
        Fail::Py(e)
    }
}

/// An instance of `ndd_index._errors.<class>` with `msg` and the given attributes.
pub fn raise(py: Python<'_>, class: &str, msg: String, attrs: &[(&str, Attr)]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("ndd_index._errors")?.getattr(class)?;
        let inst = cls.call1((msg.clone(),))?;
        for (k, v) in attrs {
            match v {
                Attr::Str(s) => inst.setattr(*k, s)?,
                Attr::Int(i) => inst.setattr(*k, i)?,
                Attr::Obj(o) => inst.setattr(*k, o.bind(py))?,
            }
        }
        Ok(PyErr::from_value(inst))
    })();
    made.unwrap_or_else(|e| e)
}

/// Attribute values attached to an exception.
pub enum Attr {
    Str(String),
    Int(u64),
    Obj(Py<PyAny>),
}

/// The exception of a library error.
pub fn lib_err(py: Python<'_>, e: Error) -> PyErr {
    use Attr::{Int, Str};
    let msg = e.to_string();
    let path = |p: &std::path::Path| ("path", Str(p.display().to_string()));
    match &e {
        Error::Locked { path: p, holder } => raise(
            py,
            "LockedError",
            msg,
            &[path(p), ("holder", Str(holder.clone()))],
        ),
        Error::NotAnIndex { path: p } => raise(py, "NotAnIndexError", msg, &[path(p)]),
        Error::OptionConflict {
            path: p,
            option,
            stored,
            given,
        } => raise(
            py,
            "OptionError",
            msg,
            &[
                path(p),
                ("option", Str(option.to_string())),
                ("stored", Str(stored.clone())),
                ("given", Str(given.clone())),
            ],
        ),
        Error::VerifyFailed { path: p, problems } => raise(
            py,
            "CorruptionError",
            msg,
            &[path(p), ("problems", Int(*problems as u64))],
        ),
        Error::Document { key, reason } => raise(
            py,
            "DocumentError",
            msg,
            &[("key", Str(key.clone())), ("reason", Str(reason.clone()))],
        ),
        Error::InvalidArgument(_) => raise(py, "InvalidArgumentError", msg, &[]),
        Error::Io { path: p, .. } | Error::Db { path: p, .. } => {
            raise(py, "StorageError", msg, &[path(p)])
        }
        e if e.is_corruption() => raise(py, "CorruptionError", msg, &[]),
        _ => raise(py, "Error", msg, &[]),
    }
}

/// The exception of any failure; `what` names the index for `Closed`.
pub fn to_py(py: Python<'_>, f: Fail, index: &std::path::Path) -> PyErr {
    match f {
        Fail::Lib(e) => lib_err(py, e),
        Fail::Py(e) => e,
        Fail::Closed => raise(
            py,
            "ClosedIndexError",
            format!("index {} is closed", index.display()),
            &[("path", Attr::Str(index.display().to_string()))],
        ),
    }
}

/// An `InvalidArgumentError` (subclass of `ValueError`) with `msg`.
pub fn invalid(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    raise(py, "InvalidArgumentError", msg.into(), &[])
}

/// An `OptionError` (a creation option's value is bad) with `msg`.
pub fn option_err(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    raise(py, "OptionError", msg.into(), &[])
}
