//! `ndd_index._native`: the Python extension module of ndd-index (PyO3, one abi3 wheel for
//! CPython 3.10 and later). The pure-Python package `ndd_index` (python/ndd_index/)
//! re-exports it. Every operation calls the library's whole-operation API (`ndd_index::ops`),
//! the same functions the CLI calls, without the GIL.

mod convert;
mod errors;
mod functions;
mod index;
mod results;
mod signals;
mod spark;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<index::PyIndex>()?;
    m.add_class::<results::PyMatch>()?;
    m.add_class::<results::PyReport>()?;
    m.add_class::<results::PyPairs>()?;
    m.add_function(wrap_pyfunction!(functions::canonicalize, m)?)?;
    m.add_function(wrap_pyfunction!(functions::fingerprint, m)?)?;
    spark::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
