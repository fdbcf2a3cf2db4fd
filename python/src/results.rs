//! The result classes: `Match` (a query hit), `IngestReport` (one dict per document and a
//! summary) and `Pairs` (a stream of (key_a, key_b, resemblance)).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use ndd_index::Error;
use pyo3::exceptions::{PyImportError, PyIndexError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::Value;

use crate::convert::value_to_py;
use crate::errors::lib_err;

/// One near-duplicate of a queried document, best first.
///
/// `resemblance` is the method's similarity (shingle: the Jaccard resemblance of the shingle
/// sets); `containment` (shingle only) is the share of the query's shingles found in the hit;
/// `cluster` is the id of the hit's duplicate cluster (its oldest document's id).
#[pyclass(name = "Match", module = "ndd_index", frozen, eq, get_all)]
#[derive(Clone, Debug, PartialEq)]
pub struct PyMatch {
    pub key: String,
    pub resemblance: f64,
    pub containment: Option<f64>,
    pub cluster: Option<u32>,
    /// The hit's document id.
    pub doc: u32,
    /// The method that found it ("shingle", "simhash", ...).
    pub method: String,
    /// Shingles shared with the query (shingle).
    pub shared: Option<u64>,
    /// Hamming distance of the simhashes (simhash).
    pub hamming: Option<u32>,
    /// Agreeing supershingles (dsc-ss).
    pub agree: Option<u32>,
}

#[pymethods]
impl PyMatch {
    fn __repr__(&self) -> String {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "None".into());
        // {:?} prints floats as Python does (1.0, 0.9696969696969697).
        format!(
            "Match(key={:?}, resemblance={:?}, containment={}, cluster={})",
            self.key,
            self.resemblance,
            opt(self.containment.map(|c| format!("{c:?}"))),
            opt(self.cluster.map(|c| c.to_string())),
        )
    }

    /// `key, resemblance, containment, cluster = match`
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = PyTuple::new(
            py,
            [
                self.key.clone().into_pyobject(py)?.into_any(),
                self.resemblance.into_pyobject(py)?.into_any(),
                self.containment.into_pyobject(py)?.into_any(),
                self.cluster.into_pyobject(py)?.into_any(),
            ],
        )?;
        Ok(t.as_any().try_iter()?.into_any())
    }

    /// The match as a dict (every field).
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("key", &self.key)?;
        d.set_item("resemblance", self.resemblance)?;
        d.set_item("containment", self.containment)?;
        d.set_item("cluster", self.cluster)?;
        d.set_item("doc", self.doc)?;
        d.set_item("method", &self.method)?;
        d.set_item("shared", self.shared)?;
        d.set_item("hamming", self.hamming)?;
        d.set_item("agree", self.agree)?;
        Ok(d)
    }
}

/// What `ingest` or `add` did: iterate it for one dict per input document (the fields of the
/// CLI's `--report` lines: key, status, doc, exact_duplicate_of, near_duplicate, cluster, and
/// error for a rejected document); `summary` is the run's summary (the CLI's `--json`).
#[pyclass(name = "IngestReport", module = "ndd_index", frozen)]
pub struct PyReport {
    pub records: Vec<Value>,
    pub summary: Value,
    pub compaction: Option<Value>,
}

#[pymethods]
impl PyReport {
    fn __len__(&self) -> usize {
        self.records.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyAny>> {
        let n = self.records.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(PyIndexError::new_err("report index out of range"));
        }
        value_to_py(py, &self.records[j as usize])
    }

    fn __iter__(slf: Bound<'_, Self>) -> ReportIter {
        ReportIter {
            report: slf.unbind(),
            pos: AtomicUsize::new(0),
        }
    }

    /// The run's summary (documents read, added, replaced, unchanged, errors, ...).
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.summary)
    }

    /// The records of rejected documents (status "error").
    #[getter]
    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .records
            .iter()
            .filter(|r| r.get("status").and_then(Value::as_str) == Some("error"))
            .map(|r| value_to_py(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The merge the policy ran after the batch (as `ndd-index ingest` does), or None.
    #[getter]
    fn compaction<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.compaction {
            Some(v) => value_to_py(py, v),
            None => Ok(py.None().into_bound(py)),
        }
    }

    fn __repr__(&self) -> String {
        let get = |k: &str| {
            self.summary
                .get(k)
                .map(|v| v.to_string())
                .unwrap_or_default()
        };
        format!(
            "IngestReport(batch={}, documents_read={}, added={}, replaced={}, unchanged={}, errors={})",
            get("batch"),
            get("documents_read"),
            get("added"),
            get("replaced"),
            get("unchanged"),
            get("errors")
        )
    }
}

#[pyclass(module = "ndd_index", frozen)]
pub struct ReportIter {
    report: Py<PyReport>,
    pos: AtomicUsize,
}

#[pymethods]
impl ReportIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let r = self.report.get();
        let i = self.pos.fetch_add(1, Ordering::Relaxed);
        match r.records.get(i) {
            Some(v) => Ok(Some(value_to_py(py, v)?)),
            None => Ok(None),
        }
    }
}

/// One pair as the thread sends it: key_a, key_b, resemblance, and whether both documents are
/// on the same site when the caller asked (`pairs(sites=True)`).
pub type PairRow = (String, String, f64, Option<bool>);

fn row_to_py(py: Python<'_>, (a, b, r, s): PairRow) -> PyResult<Bound<'_, PyAny>> {
    Ok(match s {
        None => (a, b, r).into_pyobject(py)?.into_any(),
        Some(s) => (a, b, r, s).into_pyobject(py)?.into_any(),
    })
}

/// What the thread computing pairs sends.
pub enum Msg {
    Pairs(Vec<PairRow>),
    Done(Option<Value>),
    Failed(Error),
}

struct PairsState {
    rx: Option<Receiver<Msg>>,
    buf: VecDeque<PairRow>,
    done: bool,
    stats: Option<Value>,
}

/// Every pair of live documents at or above the threshold, as `(key_a, key_b, resemblance)`
/// tuples with key_a <= key_b, in the order `ndd-index pairs` prints them. The pairs are
/// computed by a background thread while you iterate (in blocks: memory stays bounded), from
/// the index as published when `pairs()` was called. `to_arrow()` collects the rest as a
/// pyarrow Table; `to_list()` as a list.
#[pyclass(name = "Pairs", module = "ndd_index", frozen)]
pub struct PyPairs {
    state: Mutex<PairsState>,
}

impl PyPairs {
    pub fn new(rx: Receiver<Msg>) -> Self {
        PyPairs {
            state: Mutex::new(PairsState {
                rx: Some(rx),
                buf: VecDeque::new(),
                done: false,
                stats: None,
            }),
        }
    }

    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, PairsState>> {
        self.state.try_lock().map_err(|_| {
            PyRuntimeError::new_err("a Pairs stream is being read from another thread")
        })
    }

    /// The next buffered pair, waiting (without the GIL, Ctrl-C honoured) for the next block.
    fn next_pair(&self, py: Python<'_>) -> PyResult<Option<PairRow>> {
        loop {
            let rx = {
                let mut st = self.lock()?;
                if let Some(p) = st.buf.pop_front() {
                    return Ok(Some(p));
                }
                if st.done {
                    return Ok(None);
                }
                match st.rx.take() {
                    Some(rx) => rx,
                    None => {
                        return Err(PyRuntimeError::new_err(
                            "a Pairs stream is being read from another thread",
                        ))
                    }
                }
            };
            let (rx, got) = py.detach(move || {
                let got = rx.recv_timeout(Duration::from_millis(100));
                (rx, got)
            });
            let mut st = self.lock()?;
            st.rx = Some(rx);
            match got {
                Ok(Msg::Pairs(v)) => st.buf.extend(v),
                Ok(Msg::Done(stats)) => {
                    st.done = true;
                    st.stats = stats;
                    st.rx = None; // the thread is finished
                }
                Ok(Msg::Failed(e)) => {
                    st.done = true;
                    st.rx = None;
                    return Err(lib_err(py, e));
                }
                Err(RecvTimeoutError::Timeout) => {
                    drop(st);
                    py.check_signals()?;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    st.done = true;
                    st.rx = None;
                    return Err(PyRuntimeError::new_err(
                        "the thread computing pairs ended without an answer",
                    ));
                }
            }
        }
    }
}

#[pymethods]
impl PyPairs {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.next_pair(py)?.map(|p| row_to_py(py, p)).transpose()
    }

    /// The remaining pairs as a list of (key_a, key_b, resemblance) tuples, with same_site
    /// as a 4th member when the stream was asked for sites.
    fn to_list<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let mut out = Vec::new();
        while let Some(p) = self.next_pair(py)? {
            out.push(row_to_py(py, p)?);
        }
        Ok(out)
    }

    /// The remaining pairs as a pyarrow Table with columns key_a (string), key_b (string) and
    /// resemblance (float64), and same_site (bool) when the stream was asked for sites. Needs
    /// pyarrow (`pip install pyarrow`).
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pa = py.import("pyarrow").map_err(|e| {
            PyImportError::new_err(format!(
                "Pairs.to_arrow() needs pyarrow (pip install pyarrow): {e}"
            ))
        })?;
        let (mut a, mut b, mut r, mut s) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        while let Some((x, y, z, w)) = self.next_pair(py)? {
            a.push(x);
            b.push(y);
            r.push(z);
            s.extend(w);
        }
        let with_sites = !s.is_empty() && s.len() == r.len();
        let cols = PyDict::new(py);
        cols.set_item(
            "key_a",
            pa.call_method1("array", (a, pa.call_method0("string")?))?,
        )?;
        cols.set_item(
            "key_b",
            pa.call_method1("array", (b, pa.call_method0("string")?))?,
        )?;
        cols.set_item(
            "resemblance",
            pa.call_method1("array", (r, pa.call_method0("float64")?))?,
        )?;
        if with_sites {
            cols.set_item(
                "same_site",
                pa.call_method1("array", (s, pa.call_method0("bool_")?))?,
            )?;
        }
        pa.call_method1("table", (cols,))
    }

    /// The work counters of the run (shingle pairs: postings visited, matching used, ...),
    /// once the stream is exhausted; None before, and for the other methods.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let st = self.lock()?;
        match &st.stats {
            Some(v) => value_to_py(py, v),
            None => Ok(py.None().into_bound(py)),
        }
    }
}
