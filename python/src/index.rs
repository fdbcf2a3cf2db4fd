//! `ndd_index.Index`: an index directory opened from Python. Every operation is one call of
//! the library's whole-operation API (`ndd_index::ops`, the `Index` methods the CLI calls),
//! made without the GIL.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;
use std::sync::RwLock;

use ndd_index::canonicalize::DocFormat;
use ndd_index::index::CATALOG_DIR;
use ndd_index::input::InputOptions;
use ndd_index::lifecycle::add::{AddOptions, DEFAULT_FOLD_BYTES, DEFAULT_FOLD_DOCS};
use ndd_index::lifecycle::delete::parse_date;
use ndd_index::lifecycle::{verify_index, DeleteSelector, MergePolicy};
use ndd_index::method::Method;
use ndd_index::ops::{
    default_mem, ClustersRequest, CreateSpec, PairsRequest, QueryRequest, QueryResult, Source,
};
use ndd_index::pipeline::{DocReport, IngestOptions, Matching, Progress};
use ndd_index::{CreateOptions, Error, Index, Threshold};
use pyo3::exceptions::{
    PyFileNotFoundError, PyKeyError, PyKeyboardInterrupt, PyTypeError, PyUserWarning,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use rayon::prelude::*;
use serde_json::Value;

use crate::convert::{
    self, doc_bytes, doc_key, format_of, path_of, size, sniff_of, type_name, value_to_py,
};
use crate::errors::{invalid, option_err, raise, to_py, Attr, Fail};
use crate::results::{Msg, PairRow, PyMatch, PyPairs, PyReport};
use crate::signals::{Interrupted, Watch};

/// How many queries `query_many` runs between two checks for Ctrl-C.
const QUERY_CHUNK: usize = 256;
/// Pairs per message from the thread computing them.
const PAIRS_BLOCK: usize = 1024;

/// A near-duplicate index on disk.
///
/// `Index.create(path, ...)` makes a new one, `Index.open(path)` opens an existing one (for
/// writing: one writer at a time, others get LockedError; `readonly=True`: any number of
/// readers, each seeing the index as published when it opened). Use it as a context manager,
/// or call `close()`, to release the writer lock.
#[pyclass(name = "Index", module = "ndd_index", frozen)]
pub struct PyIndex {
    inner: RwLock<Option<Index>>,
    path: PathBuf,
    writer: bool,
}

fn exists(path: &Path) -> bool {
    path.join(CATALOG_DIR).join("CURRENT").exists()
}

/// The library error that stands for "a callback saw Ctrl-C"; replaced by the exception.
fn interrupted(watch: &Watch, e: Error) -> Fail {
    match watch.take() {
        Some(p) => Fail::Py(p),
        None => Fail::Lib(e),
    }
}

impl PyIndex {
    /// Runs `f` on the open index without the GIL (the lock is only ever taken detached, so
    /// a thread holding it can always get the GIL back).
    fn read<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Index) -> Result<T, Fail> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let g = self.inner.read().unwrap_or_else(|e| e.into_inner());
            match g.as_ref() {
                Some(ix) => f(ix),
                None => Err(Fail::Closed),
            }
        })
        .map_err(|e| to_py(py, e, &self.path))
    }

    /// Runs `f` with the writer's slot (it may reopen the index) without the GIL.
    fn write_slot<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Option<Index>) -> Result<T, Fail> + Send,
    ) -> PyResult<T> {
        if !self.writer {
            return Err(invalid(
                py,
                format!(
                    "index {} was opened read-only (Index.open(path) without readonly=True to change it)",
                    self.path.display()
                ),
            ));
        }
        py.detach(|| {
            let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
            if g.is_none() {
                return Err(Fail::Closed);
            }
            f(&mut g)
        })
        .map_err(|e| to_py(py, e, &self.path))
    }

    fn write<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Index) -> Result<T, Fail> + Send,
    ) -> PyResult<T> {
        self.write_slot(py, |slot| match slot.as_mut() {
            Some(ix) => f(ix),
            None => Err(Fail::Closed),
        })
    }
}

/// The documents of `ingest`/`add`: one path, an iterable of paths, a dict key -> html, or an
/// iterable of (key, html) tuples.
fn source_of(docs: &Bound<'_, PyAny>, sniff: bool, format: Option<DocFormat>) -> PyResult<Source> {
    let py = docs.py();
    if let Some(p) = path_of(docs) {
        return paths_source(py, vec![p]);
    }
    if docs.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(PyTypeError::new_err(
            "docs must be a path, or an iterable of (key, html) tuples or of paths, not bytes",
        ));
    }
    let iter = if let Ok(d) = docs.cast::<PyDict>() {
        d.items().into_any().try_iter()?
    } else {
        docs.try_iter().map_err(|_| {
            PyTypeError::new_err(format!(
                "docs must be a path, or an iterable of (key, html) tuples or of paths, not {}",
                type_name(docs)
            ))
        })?
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut items: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, item) in iter.enumerate() {
        let item = item?;
        if let Some(p) = path_of(&item) {
            paths.push(p);
        } else if item.is_instance_of::<PyTuple>() || item.is_instance_of::<PyList>() {
            if item.len()? != 2 {
                return Err(PyTypeError::new_err(format!(
                    "document #{i}: expected a (key, html) pair, got a {} of length {}",
                    type_name(&item),
                    item.len()?
                )));
            }
            let key = doc_key(&item.get_item(0)?, &|| format!("document #{i}"))?;
            let bytes = doc_bytes(&item.get_item(1)?, sniff, &|| {
                format!("document #{i} ({key:?})")
            })?;
            items.push((key, bytes));
        } else {
            return Err(PyTypeError::new_err(format!(
                "document #{i}: expected a (key, html) tuple or a path, not {}",
                type_name(&item)
            )));
        }
        if !paths.is_empty() && !items.is_empty() {
            return Err(PyTypeError::new_err(format!(
                "document #{i}: docs mix paths and (key, html) tuples; pass one kind per call"
            )));
        }
    }
    if !paths.is_empty() {
        return paths_source(py, paths);
    }
    Ok(match format {
        Some(f) => Source::DocsWithFormat(items.into_iter().map(|(k, b)| (k, b, f)).collect()),
        None => Source::Docs(items),
    })
}

fn paths_source(_py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Source> {
    for p in &paths {
        if !p.exists() {
            return Err(PyFileNotFoundError::new_err((
                2,
                format!("no such file or directory: {}", p.display()),
                p.display().to_string(),
            )));
        }
    }
    Ok(Source::Paths(paths))
}

fn method_of(py: Python<'_>, m: &str) -> PyResult<Method> {
    m.parse::<Method>().map_err(|e| invalid(py, e.to_string()))
}

fn matching_of(py: Python<'_>, m: &str) -> PyResult<Matching> {
    m.parse::<Matching>()
        .map_err(|e| invalid(py, e.to_string()))
}

fn input_options(
    py: Python<'_>,
    jsonl_id: &str,
    jsonl_text: &str,
    jsonl_html: &str,
    max_doc_bytes: Option<&Bound<'_, PyAny>>,
) -> PyResult<InputOptions> {
    let mut o = InputOptions {
        jsonl_id_field: jsonl_id.to_owned(),
        jsonl_text_field: jsonl_text.to_owned(),
        jsonl_html_field: jsonl_html.to_owned(),
        ..InputOptions::default()
    };
    if let Some(m) = max_doc_bytes {
        o.max_doc_bytes = size(m, "max_doc_bytes")?;
    }
    let _ = py;
    Ok(o)
}

fn json<T: serde::Serialize>(v: &T) -> Result<Value, Fail> {
    serde_json::to_value(v).map_err(|e| Fail::Lib(Error::InvalidArgument(e.to_string())))
}

/// Query answers as `Match`es; hits of the other methods get their cluster from the catalog.
fn matches(ix: &Index, r: QueryResult) -> Result<Vec<PyMatch>, Error> {
    Ok(match r {
        QueryResult::Shingle(a) => a
            .hits
            .into_iter()
            .map(|h| PyMatch {
                key: h.key,
                resemblance: h.resemblance,
                containment: Some(h.containment),
                cluster: Some(h.cluster),
                doc: h.doc,
                method: Method::Shingle.name().to_owned(),
                shared: Some(h.shared),
                hamming: None,
                agree: None,
            })
            .collect(),
        QueryResult::Method(a) => {
            let mut out = Vec::with_capacity(a.hits.len());
            for h in a.hits {
                let cluster = ix.document(&h.key)?.map(|d| d.cluster);
                out.push(PyMatch {
                    key: h.key,
                    resemblance: h.similarity,
                    containment: None,
                    cluster,
                    doc: h.doc,
                    method: a.method.name().to_owned(),
                    shared: None,
                    hamming: h.hamming,
                    agree: h.agree,
                });
            }
            out
        }
    })
}

fn opt_threshold(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Threshold>> {
    obj.filter(|o| !o.is_none())
        .map(|o| convert::threshold(o, name, false))
        .transpose()
}

#[pymethods]
impl PyIndex {
    /// Creates a new index at `path` with the given creation options (the CLI's `ingest`
    /// creation flags, by keyword) and opens it for writing. Options left at None take the
    /// defaults: shingle_words=5, sample="all", cluster_threshold=0.8, methods="simhash", no
    /// max_df, site="path:1" (the site of documents without a URL: the first N directories of
    /// the key, `path:N`), extract="body" ("main": compare the page's main content, without
    /// nav, aside, header/footer outside articles and link-dense blocks). Raises IndexExistsError if there is an index at `path` already, unless
    /// `exist_ok=True` (then the given options must agree with the stored ones: OptionError).
    #[staticmethod]
    #[pyo3(signature = (path, *, shingle_words=None, shingle_chars=None, sample=None,
        size_groups=None, cluster_threshold=None, methods=None, simhash_k=None,
        simhash_blocks=None, minhash=None, supershingle=None, b_agree=None, imatch_filter=None,
        simhash_weight=None, max_df=None, imatch_lexicon=None, site=None, extract=None,
        exist_ok=false))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        shingle_words: Option<u32>,
        shingle_chars: Option<u32>,
        sample: Option<String>,
        size_groups: Option<String>,
        cluster_threshold: Option<&Bound<'_, PyAny>>,
        methods: Option<&Bound<'_, PyAny>>,
        simhash_k: Option<u32>,
        simhash_blocks: Option<u32>,
        minhash: Option<u32>,
        supershingle: Option<u32>,
        b_agree: Option<u32>,
        imatch_filter: Option<String>,
        simhash_weight: Option<String>,
        max_df: Option<u32>,
        imatch_lexicon: Option<PathBuf>,
        site: Option<String>,
        extract: Option<String>,
        exist_ok: bool,
    ) -> PyResult<PyIndex> {
        let cluster_threshold = match cluster_threshold.filter(|o| !o.is_none()) {
            Some(o) => Some(convert::threshold(o, "cluster_threshold", true)?),
            None => None,
        };
        // methods: "simhash,dsc-ss", "all" or a list of names.
        let methods = match methods.filter(|o| !o.is_none()) {
            None => None,
            Some(m) if m.cast::<PyString>().is_ok() => Some(m.extract::<String>()?),
            Some(m) => Some(
                m.extract::<Vec<String>>()
                    .map_err(|_| {
                        PyTypeError::new_err(format!(
                            "methods must be a str (\"simhash,dsc-ss\" or \"all\") or a list of str, not {}",
                            type_name(m)
                        ))
                    })?
                    .join(","),
            ),
        };
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
            imatch_filter,
            simhash_weight,
            max_df,
            site,
            extract,
            ..CreateSpec::default()
        };
        let create = spec.resolve().map_err(|e| option_err(py, e.to_string()))?;
        if let Some(p) = &imatch_lexicon {
            if !p.exists() {
                return Err(PyFileNotFoundError::new_err((
                    2,
                    format!("imatch_lexicon: no such file or directory: {}", p.display()),
                    p.display().to_string(),
                )));
            }
        }
        if exists(&path) && !exist_ok {
            return Err(raise(
                py,
                "IndexExistsError",
                format!(
                    "an index exists at {} already (Index.open(path) opens it; exist_ok=True accepts it)",
                    path.display()
                ),
                &[("path", Attr::Str(path.display().to_string()))],
            ));
        }
        let p = path.clone();
        let ix = py
            .detach(move || -> Result<Index, Error> {
                let ix = Index::open_writer(&p, &create)?;
                if let Some(lex) = imatch_lexicon {
                    ndd_index::method::imatch_reference::freeze_from(&ix, vec![lex])?;
                }
                Ok(ix)
            })
            .map_err(|e| to_py(py, Fail::Lib(e), &path))?;
        Ok(PyIndex {
            inner: RwLock::new(Some(ix)),
            path,
            writer: true,
        })
    }

    /// Opens the index at `path`: for writing (the default; one writer at a time, another
    /// gets LockedError naming the holder) or, with `readonly=True`, as a reader that takes
    /// no lock and sees the index as it was published when it opened (`refresh()` moves it
    /// on). NotAnIndexError if there is no index at `path`.
    #[staticmethod]
    #[pyo3(signature = (path, readonly=false))]
    fn open(py: Python<'_>, path: PathBuf, readonly: bool) -> PyResult<PyIndex> {
        if !exists(&path) {
            return Err(to_py(
                py,
                Fail::Lib(Error::NotAnIndex { path: path.clone() }),
                &path,
            ));
        }
        let p = path.clone();
        let ix = py
            .detach(move || {
                if readonly {
                    Index::open(&p)
                } else {
                    Index::open_writer(&p, &CreateOptions::default())
                }
            })
            .map_err(|e| to_py(py, Fail::Lib(e), &path))?;
        Ok(PyIndex {
            inner: RwLock::new(Some(ix)),
            path,
            writer: !readonly,
        })
    }

    /// The index directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// True when opened with readonly=True.
    #[getter]
    fn readonly(&self) -> bool {
        !self.writer
    }

    /// True after close().
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.inner.read().map(|g| g.is_none()).unwrap_or(true))
    }

    /// The creation options stored in the index (shingle, sample, cluster_threshold, ...).
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self.read(py, |ix| json(ix.options()))?;
        value_to_py(py, &v)
    }

    /// Releases the index (and the writer lock). Later calls raise ClosedIndexError.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
            *g = None;
        })
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = if self.closed(py) {
            "closed"
        } else if self.writer {
            "writer"
        } else {
            "readonly"
        };
        format!(
            "<ndd_index.Index {:?} {state}>",
            self.path.display().to_string()
        )
    }

    /// A reader moves to the index as published now (a writer always sees its own writes).
    fn refresh(&self, py: Python<'_>) -> PyResult<()> {
        if self.writer {
            return self.read(py, |_| Ok(()));
        }
        let p = self.path.clone();
        let fresh = py
            .detach(|| Index::open(&p))
            .map_err(|e| to_py(py, Fail::Lib(e), &self.path))?;
        py.detach(|| {
            let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
            match g.as_mut() {
                Some(slot) => {
                    *slot = fresh;
                    Ok(())
                }
                None => Err(Fail::Closed),
            }
        })
        .map_err(|e| to_py(py, e, &self.path))
    }

    /// Ingests one batch (what `ndd-index ingest` does): `docs` is an iterable of (key, html)
    /// tuples (html: str, or bytes), a dict key -> html, or paths (files, directories, WARC,
    /// JSONL). Returns an IngestReport: one dict per document and `.summary`. The batch is
    /// atomic: published whole at the end, or not at all (Ctrl-C before the publish leaves
    /// the index as it was). A batch name ingested before does nothing. Bad documents are
    /// reported (status "error") and skipped, unless `strict=True` (DocumentError, nothing
    /// published). Afterwards the merge policy may compact segments, as the CLI does
    /// (`compact=False` skips that).
    #[pyo3(signature = (docs, *, batch=None, strict=false, mem=None, matching="auto",
        format=None, encoding="utf-8", jsonl_id="id", jsonl_text="text", jsonl_html="html",
        max_doc_bytes=None, compact=true))]
    #[allow(clippy::too_many_arguments)]
    fn ingest(
        &self,
        py: Python<'_>,
        docs: &Bound<'_, PyAny>,
        batch: Option<String>,
        strict: bool,
        mem: Option<&Bound<'_, PyAny>>,
        matching: &str,
        format: Option<&str>,
        encoding: &str,
        jsonl_id: &str,
        jsonl_text: &str,
        jsonl_html: &str,
        max_doc_bytes: Option<&Bound<'_, PyAny>>,
        compact: bool,
    ) -> PyResult<PyReport> {
        let sniff = sniff_of(py, encoding)?;
        let format = format_of(py, format)?;
        let opts = IngestOptions {
            batch,
            input: input_options(py, jsonl_id, jsonl_text, jsonl_html, max_doc_bytes)?,
            strict,
            mem_bytes: match mem {
                Some(m) if !m.is_none() => size(m, "mem")?,
                _ => default_mem(),
            },
            matching: matching_of(py, matching)?,
        };
        let source = source_of(docs, sniff, format)?;
        let path = self.path.clone();
        let (report, warning) = self.write_slot(py, move |slot| {
            let ix = slot.as_mut().ok_or(Fail::Closed)?;
            let watch = Watch::new();
            let mut records = Vec::new();
            let progress = |_p: Progress| {
                if watch.poll() {
                    resume_unwind(Box::new(Interrupted));
                }
            };
            let ran = catch_unwind(AssertUnwindSafe(|| {
                ix.ingest(
                    source,
                    &opts,
                    &mut |r: &DocReport| {
                        records.push(serde_json::to_value(r).map_err(|e| {
                            Error::InvalidArgument(format!("report of {}: {e}", r.key))
                        })?);
                        Ok(())
                    },
                    &progress,
                )
            }));
            let summary = match ran {
                Ok(r) => r?,
                Err(payload) if payload.is::<Interrupted>() => {
                    // Nothing was published. Reopen, so the writer starts from what is on
                    // disk and the unfinished batch's files are removed.
                    *slot = None;
                    *slot = Some(Index::open_writer(&path, &CreateOptions::default())?);
                    return Err(Fail::Py(watch.take().unwrap_or_else(|| {
                        PyKeyboardInterrupt::new_err("ingest interrupted")
                    })));
                }
                Err(payload) => resume_unwind(payload),
            };
            let (mut compaction, mut warning) = (None, None);
            if compact && !summary.already_ingested {
                match ix.compact_after_ingest() {
                    Ok(Some(c)) => compaction = Some(json(&c)?),
                    Ok(None) => {}
                    Err(e) => {
                        warning = Some(format!("compaction after ingest failed: {e}"));
                    }
                }
            }
            Ok((
                PyReport {
                    records,
                    summary: json(&summary)?,
                    compaction,
                },
                warning,
            ))
        })?;
        if let Some(w) = warning {
            let msg = std::ffi::CString::new(w.replace('\0', " "))?;
            PyErr::warn(py, py.get_type::<PyUserWarning>().as_any(), &msg, 1)?;
        }
        Ok(report)
    }

    /// Adds documents online (what `ndd-index add` does): same inputs as `ingest`; they are
    /// matched against the whole index and durable when the call returns. Each call is a
    /// batch (named `batch`, default add-NNNNNN; a name used before does nothing). Returns an
    /// IngestReport (`.summary` has delta_docs and folded).
    #[pyo3(signature = (docs, *, batch=None, strict=false, fold_docs=DEFAULT_FOLD_DOCS,
        fold_bytes=None, format=None, encoding="utf-8", jsonl_id="id", jsonl_text="text",
        jsonl_html="html", max_doc_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        py: Python<'_>,
        docs: &Bound<'_, PyAny>,
        batch: Option<String>,
        strict: bool,
        fold_docs: u64,
        fold_bytes: Option<&Bound<'_, PyAny>>,
        format: Option<&str>,
        encoding: &str,
        jsonl_id: &str,
        jsonl_text: &str,
        jsonl_html: &str,
        max_doc_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyReport> {
        let sniff = sniff_of(py, encoding)?;
        let format = format_of(py, format)?;
        let opts = AddOptions {
            batch,
            input: input_options(py, jsonl_id, jsonl_text, jsonl_html, max_doc_bytes)?,
            strict,
            fold_docs: fold_docs.max(1),
            fold_bytes: match fold_bytes {
                Some(b) if !b.is_none() => size(b, "fold_bytes")?.max(1),
                _ => DEFAULT_FOLD_BYTES,
            },
            sync: true,
        };
        let source = source_of(docs, sniff, format)?;
        self.write(py, move |ix| {
            let mut records = Vec::new();
            let summary = ix.add(source, &opts, &mut |r: &DocReport| {
                records
                    .push(serde_json::to_value(r).map_err(|e| {
                        Error::InvalidArgument(format!("report of {}: {e}", r.key))
                    })?);
                Ok(())
            })?;
            Ok(PyReport {
                records,
                summary: json(&summary)?,
                compaction: None,
            })
        })
    }

    /// Near-duplicates of one document (str or bytes; it is not added), best first, as
    /// `ndd-index query` finds them: a list of Match(key, resemblance, containment, cluster).
    /// `threshold`: minimum similarity (shingle: resemblance, default 0.5); `top`: at most
    /// this many (0 = all); `method`: shingle, simhash, dsc-ss, combined, imatch, exact,
    /// megashingle, c-sim (the index must store its data); `max_df`: commonality limit for
    /// this query (None: the index's, 0: none).
    #[pyo3(signature = (html, *, threshold=None, top=10, method="shingle", max_df=None,
        name=None, format=None, encoding="utf-8"))]
    #[allow(clippy::too_many_arguments)]
    fn query(
        &self,
        py: Python<'_>,
        html: &Bound<'_, PyAny>,
        threshold: Option<&Bound<'_, PyAny>>,
        top: usize,
        method: &str,
        max_df: Option<u32>,
        name: Option<String>,
        format: Option<&str>,
        encoding: &str,
    ) -> PyResult<Vec<PyMatch>> {
        let name = name.unwrap_or_else(|| "<query>".to_owned());
        let bytes = doc_bytes(html, sniff_of(py, encoding)?, &|| format!("query {name:?}"))?;
        let req = query_request(py, threshold, top, method, max_df, format)?;
        self.read(py, move |ix| {
            let r = ix.query(&name, &bytes, &req)?;
            Ok(matches(ix, r)?)
        })
    }

    /// `query` for many documents, run in parallel on all cores without the GIL: a list with
    /// one list of Matches per document, in order. `names` (optional) name the documents in
    /// errors and for format sniffing.
    #[pyo3(signature = (htmls, *, threshold=None, top=10, method="shingle", max_df=None,
        names=None, format=None, encoding="utf-8"))]
    #[allow(clippy::too_many_arguments)]
    fn query_many(
        &self,
        py: Python<'_>,
        htmls: &Bound<'_, PyAny>,
        threshold: Option<&Bound<'_, PyAny>>,
        top: usize,
        method: &str,
        max_df: Option<u32>,
        names: Option<Vec<String>>,
        format: Option<&str>,
        encoding: &str,
    ) -> PyResult<Vec<Vec<PyMatch>>> {
        if htmls.cast::<PyString>().is_ok() || htmls.is_instance_of::<pyo3::types::PyBytes>() {
            return Err(PyTypeError::new_err(
                "query_many takes an iterable of documents (use query for one)",
            ));
        }
        let sniff = sniff_of(py, encoding)?;
        let mut docs: Vec<(String, Vec<u8>)> = Vec::new();
        for (i, h) in htmls.try_iter()?.enumerate() {
            let h = h?;
            let name = match &names {
                Some(n) => n.get(i).cloned().ok_or_else(|| {
                    invalid(
                        py,
                        format!("names has fewer entries than htmls (no name for #{i})"),
                    )
                })?,
                None => format!("<query #{i}>"),
            };
            let bytes = doc_bytes(&h, sniff, &|| format!("query #{i} ({name:?})"))?;
            docs.push((name, bytes));
        }
        let req = query_request(py, threshold, top, method, max_df, format)?;
        let mut out = Vec::with_capacity(docs.len());
        for chunk in docs.chunks(QUERY_CHUNK) {
            let answers = self.read(py, |ix| {
                chunk
                    .par_iter()
                    .map(|(name, bytes)| ix.query(name, bytes, &req).and_then(|r| matches(ix, r)))
                    .collect::<Result<Vec<_>, Error>>()
                    .map_err(Fail::Lib)
            })?;
            out.extend(answers);
            py.check_signals()?;
        }
        Ok(out)
    }

    /// Every pair of live documents at or above `threshold` (shingle: resemblance; default the
    /// index's cluster threshold), streamed as (key_a, key_b, resemblance) in the CLI's order
    /// with key_a <= key_b. Returns a Pairs stream (`.to_arrow()`, `.to_list()`, `.stats`).
    /// `method` as for query; `max_df` (None: the index's, 0: none), `mem` (the sorts' or
    /// the pair buffer's budget, e.g. "512MiB") and `matching` ("auto", "join", "probe")
    /// as `ndd-index pairs`. `sites=True`: each pair gets a 4th member, same_site (both
    /// documents on one site: URL host, or the index's `site` rule on the key), and
    /// `.to_arrow()` a `same_site` column.
    #[pyo3(signature = (threshold=None, *, method="shingle", max_df=None, mem=None,
        matching="auto", sites=false))]
    fn pairs(
        &self,
        py: Python<'_>,
        threshold: Option<&Bound<'_, PyAny>>,
        method: &str,
        max_df: Option<u32>,
        mem: Option<&Bound<'_, PyAny>>,
        matching: &str,
        sites: bool,
    ) -> PyResult<PyPairs> {
        let method = method_of(py, method)?;
        let mut req = PairsRequest {
            method,
            threshold: opt_threshold(threshold, "threshold")?,
            max_df,
            mem: match mem {
                Some(m) if !m.is_none() => Some(size(m, "mem")?),
                _ => None,
            },
            matching: matching_of(py, matching)?,
            sites,
        };
        let stored = self.read(py, |ix| Ok(ix.options().cluster_threshold()?))?;
        if method == Method::Shingle && req.threshold.is_none() {
            req.threshold = Some(stored);
        }
        let (tx, rx) = sync_channel::<Msg>(4);
        let path = self.path.clone();
        std::thread::Builder::new()
            .name("ndd-pairs".into())
            .spawn(move || {
                let mut block: Vec<PairRow> = Vec::with_capacity(PAIRS_BLOCK);
                let gone = || Error::InvalidArgument("the Pairs stream was dropped".into());
                let ran = Index::open(&path).and_then(|ix| {
                    let stats = ix.pairs(&req, |p| {
                        block.push((p.key_a.clone(), p.key_b.clone(), p.resemblance, p.same_site));
                        if block.len() >= PAIRS_BLOCK {
                            tx.send(Msg::Pairs(std::mem::take(&mut block)))
                                .map_err(|_| gone())?;
                        }
                        Ok(())
                    })?;
                    if !block.is_empty() {
                        tx.send(Msg::Pairs(std::mem::take(&mut block)))
                            .map_err(|_| gone())?;
                    }
                    Ok(stats.and_then(|s| serde_json::to_value(&s).ok()))
                });
                let _ = tx.send(match ran {
                    Ok(stats) => Msg::Done(stats),
                    Err(e) => Msg::Failed(e),
                });
            })
            .map_err(|e| invalid(py, format!("cannot start the pairs thread: {e}")))?;
        Ok(PyPairs::new(rx))
    }

    /// Duplicate clusters as a dict cluster_id -> list of keys (clusters of two or more, as
    /// `ndd-index clusters` lists them; the id is the oldest member's document id, the
    /// representative, listed first). Without `threshold` (or with the index's cluster
    /// threshold): the clusters kept at ingest; another threshold computes the connected
    /// components of `pairs(threshold)`. `method` as for query.
    #[pyo3(signature = (threshold=None, *, method="shingle"))]
    fn clusters<'py>(
        &self,
        py: Python<'py>,
        threshold: Option<&Bound<'py, PyAny>>,
        method: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let req = ClustersRequest {
            method: method_of(py, method)?,
            threshold: opt_threshold(threshold, "threshold")?,
        };
        let found = self.read(py, move |ix| {
            let watch = Watch::new();
            let mut out: Vec<(u32, Vec<String>)> = Vec::new();
            ix.clusters(&req, |c| {
                watch.check()?;
                out.push((c.id, c.members.clone()));
                Ok(())
            })
            .map_err(|e| interrupted(&watch, e))?;
            Ok(out)
        })?;
        let d = PyDict::new(py);
        for (id, members) in found {
            d.set_item(id, members)?;
        }
        Ok(d)
    }

    /// The cluster id of a live document (its own document id when it has no near-duplicate;
    /// `clusters()` lists only clusters of two or more). KeyError if no live document has
    /// this key.
    fn cluster_of(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u32> {
        let k = doc_key(key, &|| "cluster_of".to_owned())?;
        let k2 = k.clone();
        match self.read(py, move |ix| Ok(ix.document(&k2)?))? {
            Some(d) => Ok(d.cluster),
            None => Err(PyKeyError::new_err(k)),
        }
    }

    /// The live member keys of a cluster id (representative first). KeyError if none.
    fn members(&self, py: Python<'_>, cluster: u32) -> PyResult<Vec<String>> {
        match self.read(py, move |ix| Ok(ix.cluster_members(cluster)?))? {
            Some(m) => Ok(m),
            None => Err(PyKeyError::new_err(cluster)),
        }
    }

    /// Catalog facts of a live document: dict with key, doc, batch, cluster and partners (the
    /// other live members of its cluster); None when no live document has this key.
    fn document<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let k = doc_key(key, &|| "document".to_owned())?;
        let v = self.read(py, move |ix| match ix.document(&k)? {
            Some(d) => Ok(Some(json(&d)?)),
            None => Ok(None),
        })?;
        match v {
            Some(v) => value_to_py(py, &v),
            None => Ok(py.None().into_bound(py)),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = doc_key(key, &|| "`in`".to_owned())?;
        self.read(py, move |ix| Ok(ix.document(&k)?.is_some()))
    }

    /// The number of live documents.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.read(py, |ix| Ok(ix.live_documents()? as usize))
    }

    /// Deletes documents by key (a str or an iterable of str), in one atomic write; they
    /// leave every answer at once and their clusters are re-clustered. Returns the summary
    /// dict (deleted, not_found: keys naming no live document, clusters_touched, ...).
    fn delete<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keys: Vec<String> = if keys.cast::<PyString>().is_ok() {
            vec![doc_key(keys, &|| "delete".to_owned())?]
        } else {
            let mut v = Vec::new();
            let it = keys.try_iter().map_err(|_| {
                PyTypeError::new_err(format!(
                    "delete takes a key or an iterable of keys, not {}",
                    type_name(keys)
                ))
            })?;
            for (i, k) in it.enumerate() {
                v.push(doc_key(&k?, &|| format!("delete: key #{i}"))?);
            }
            v
        };
        self.delete_sel(py, DeleteSelector::Keys(keys))
    }

    /// Deletes every document of the named batch. Returns the summary dict.
    fn delete_batch<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        self.delete_sel(py, DeleteSelector::Batch(name.to_owned()))
    }

    /// Deletes every document of the batches created before `date`: "YYYY-MM-DD" (UTC), unix
    /// seconds (int), a datetime.date, or a datetime.datetime (naive = UTC). Returns the
    /// summary dict.
    fn delete_older_than<'py>(
        &self,
        py: Python<'py>,
        date: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bad = |e: Error| invalid(py, e.to_string());
        let secs: u64 = if let Ok(s) = date.cast::<PyString>() {
            parse_date(s.to_str()?).map_err(bad)?
        } else if date.is_instance_of::<pyo3::types::PyInt>() {
            date.extract::<u64>()
                .map_err(|_| invalid(py, "delete_older_than: unix seconds must be >= 0"))?
        } else if date.hasattr("hour")? && date.hasattr("timestamp")? {
            let dt = if date.getattr("tzinfo")?.is_none() {
                let utc = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
                let kw = PyDict::new(py);
                kw.set_item("tzinfo", utc)?;
                date.call_method("replace", (), Some(&kw))?
            } else {
                date.clone()
            };
            let t: f64 = dt.call_method0("timestamp")?.extract()?;
            if t < 0.0 {
                return Err(invalid(
                    py,
                    "delete_older_than: dates before 1970 are not supported",
                ));
            }
            t as u64
        } else if date.hasattr("isoformat")? {
            let s: String = date.call_method0("isoformat")?.extract()?;
            parse_date(&s).map_err(bad)?
        } else {
            return Err(PyTypeError::new_err(format!(
                "delete_older_than takes \"YYYY-MM-DD\", unix seconds, a date or a datetime, not {}",
                type_name(date)
            )));
        };
        self.delete_sel(py, DeleteSelector::OlderThan(secs))
    }

    /// Merges segments (the tiered policy, or all of them with full=True), dropping deleted
    /// documents; no answer changes. Returns the summary dict.
    #[pyo3(signature = (full=false))]
    fn compact<'py>(&self, py: Python<'py>, full: bool) -> PyResult<Bound<'py, PyAny>> {
        let v = self.write(py, move |ix| {
            json(&ix.compact(full, &MergePolicy::default())?)
        })?;
        value_to_py(py, &v)
    }

    /// Checks every checksum and the catalog against the segments (`ndd-index verify`).
    /// Returns the report dict when the index is sound; raises CorruptionError (its `report`
    /// attribute holds the dict, `problems` the count) when anything is wrong.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let path = self.path.clone();
        let (ok, v, n) = self.read(py, move |_ix| {
            let r = verify_index(&path)?;
            Ok((r.is_ok(), json(&r)?, r.problems.len()))
        })?;
        let report = value_to_py(py, &v)?;
        if ok {
            return Ok(report);
        }
        let mut msg = Error::VerifyFailed {
            path: self.path.clone(),
            problems: n,
        }
        .to_string();
        if let Some(ps) = v.get("problems").and_then(Value::as_array) {
            for p in ps.iter().take(20) {
                let file = p.get("file").and_then(Value::as_str).unwrap_or("?");
                let reason = p.get("reason").and_then(Value::as_str).unwrap_or("?");
                match p.get("offset").and_then(Value::as_u64) {
                    Some(o) => msg.push_str(&format!("\n  {file}: offset {o}: {reason}")),
                    None => msg.push_str(&format!("\n  {file}: {reason}")),
                }
            }
        }
        Err(raise(
            py,
            "CorruptionError",
            msg,
            &[
                ("path", Attr::Str(self.path.display().to_string())),
                ("problems", Attr::Int(n as u64)),
                ("report", Attr::Obj(report.unbind())),
            ],
        ))
    }

    /// Near-duplicates in TREC runs and qrels (`ndd-index runs --json`, the Nikkhoo thesis's
    /// measures): `topics`, `run_topics`, `table`, `qrels`, `sources`, `unresolved`, as a
    /// dict. `runs` are TREC run files, `qrels` a judgments file; `threshold` is T (default
    /// 0.5), `top` the list depths n (default 10, 20, 50, 100, 200, 500). `dedup_run` (a
    /// folder) also writes each run without its redundant documents. The documents must be
    /// in the index (their docnos as keys). `mem` (bytes or a size like "512MiB"; default a
    /// quarter of RAM) bounds the topics' inverted indexes, as `runs --mem`.
    #[pyo3(signature = (runs, *, qrels=None, threshold=None, top=None, strict=false, dedup_run=None, mem=None))]
    #[allow(clippy::too_many_arguments)]
    fn runs<'py>(
        &self,
        py: Python<'py>,
        runs: Vec<PathBuf>,
        qrels: Option<PathBuf>,
        threshold: Option<&Bound<'py, PyAny>>,
        top: Option<Vec<usize>>,
        strict: bool,
        dedup_run: Option<PathBuf>,
        mem: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut req = ndd_index::runs::RunsRequest::new(runs);
        req.mem = match mem {
            Some(m) if !m.is_none() => Some(size(m, "mem")?),
            _ => None,
        };
        req.qrels = qrels;
        if let Some(t) = opt_threshold(threshold, "threshold")? {
            req.threshold = t;
        }
        if let Some(top) = top {
            req.top = top;
        }
        req.strict = strict;
        let v = self.read(py, move |ix| {
            let a = ndd_index::runs::analyze(ix, &req)?;
            if let Some(dir) = &dedup_run {
                ndd_index::runs::write_dedup_runs(&a, dir)?;
            }
            json(&a.report)
        })?;
        value_to_py(py, &v)
    }

    /// Documents, batches, clusters, segments and bytes (`ndd-index stats --json`), as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self.read(py, |ix| json(&ix.stats()?))?;
        value_to_py(py, &v)
    }

    /// The fingerprint of a document under this index's options (see `ndd_index.fingerprint`).
    #[pyo3(signature = (html, *, format=None, encoding="utf-8"))]
    fn fingerprint<'py>(
        &self,
        py: Python<'py>,
        html: &Bound<'py, PyAny>,
        format: Option<&str>,
        encoding: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = self.read(py, |ix| Ok(ix.options().fingerprint()?))?;
        crate::functions::fingerprint_with(py, html, opts, format, encoding)
    }
}

impl PyIndex {
    fn delete_sel<'py>(&self, py: Python<'py>, sel: DeleteSelector) -> PyResult<Bound<'py, PyAny>> {
        let v = self.write(py, move |ix| json(&ix.delete(&sel)?))?;
        value_to_py(py, &v)
    }
}

/// The request of `query` and `query_many` from their keyword arguments.
fn query_request(
    py: Python<'_>,
    threshold: Option<&Bound<'_, PyAny>>,
    top: usize,
    method: &str,
    max_df: Option<u32>,
    format: Option<&str>,
) -> PyResult<QueryRequest> {
    Ok(QueryRequest {
        method: method_of(py, method)?,
        threshold: opt_threshold(threshold, "threshold")?,
        top,
        max_df,
        format: format_of(py, format)?,
    })
}
