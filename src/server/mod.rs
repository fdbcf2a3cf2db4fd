//! `ndd-index serve`: crawl-time checks over HTTP from an index kept open.
//!
//! - **Reads** (`POST /v1/query`, `GET /v1/documents`, `/v1/clusters/{id}`, `/v1/stats`) answer
//!   from the current read snapshot ([`snapshot`]) and never wait for a write.
//! - **Writes** (`POST /v1/documents`, `POST /v1/documents:batch`, `DELETE /v1/documents`) go
//!   to the single writer thread ([`writer`]), which applies concurrent inserts as one group
//!   commit and answers each request once its documents are durable.
//! - **Other processes**: the writer lock is taken only while writes come in; while it is not
//!   held, a watcher reopens the read snapshot when another process (a nightly ingest)
//!   changed the catalog.
//! - **Limits**: body size (`--max-body`), header size (hyper's read buffer), header read time
//!   (slow clients), whole-request time; every error is JSON ([`error`]). SIGTERM or Ctrl-C:
//!   stop accepting, finish the requests in flight, apply queued writes, give the lock back.
//!
//! Every index operation is a library call on [`Index`] (`ops`): this module only parses
//! HTTP, checks, calls and serializes.

mod api;
pub mod error;
pub mod metrics;
pub mod snapshot;
pub mod writer;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method as HttpMethod, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;

use crate::canonicalize::{sniff_format, DocFormat};
use crate::method::Method;
use crate::pipeline::ingest::{DocReport, DocStatus};
use crate::{Error, Index, Result, Threshold};
use api::{PreparedDoc, QueryRequest, QueryResult};

use error::ApiError;
use metrics::{IndexGauges, Metrics};
use snapshot::{CatalogWatch, Snapshots};
use writer::{InsertDoc, Op, WriterConfig, WriterHandle};

/// Settings of a server.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub index: PathBuf,
    pub listen: SocketAddr,
    /// Bearer token required for writes (and allowing writes on a non-loopback address).
    pub token: Option<String>,
    /// Worker threads of the async runtime.
    pub threads: usize,
    /// Largest request body accepted.
    pub max_body: usize,
    /// Largest request head (request line and headers).
    pub max_header_bytes: usize,
    /// A client must send a request's headers within this long (slow clients are dropped).
    pub header_timeout: Duration,
    /// Whole-request time limit (408 after it).
    pub request_timeout: Duration,
    /// How long a write waits for another process's writer lock before a 503.
    pub write_wait: Duration,
    /// The writer lock is given back after this long without writes.
    pub writer_idle: Duration,
    /// How often the catalog is checked for another process's publish.
    pub watch_interval: Duration,
    /// Most documents in one group commit.
    pub max_group_docs: usize,
    /// Most documents in one batch request.
    pub max_batch_docs: usize,
    /// Fold the delta into a segment at this many documents.
    pub fold_docs: u64,
    /// How long shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
    /// Sync group commits on a second thread while the writer prepares the next group
    /// (`NDD_SERVE_INLINE_SYNC=1` turns it off, for comparison).
    pub pipeline_sync: bool,
    /// How long a small group waits for more inserts while the previous group's WAL sync
    /// is in flight (`WriterConfig::linger`).
    pub group_linger: Duration,
}

impl ServeConfig {
    /// The defaults for an index directory.
    pub fn new(index: PathBuf) -> Self {
        ServeConfig {
            index,
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            token: None,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            max_body: 8 << 20,
            max_header_bytes: 64 << 10,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            write_wait: Duration::from_secs(5),
            writer_idle: Duration::from_secs(2),
            watch_interval: Duration::from_millis(500),
            max_group_docs: 512,
            max_batch_docs: 10_000,
            fold_docs: crate::lifecycle::add::DEFAULT_FOLD_DOCS,
            shutdown_grace: Duration::from_secs(30),
            pipeline_sync: std::env::var_os("NDD_SERVE_INLINE_SYNC").is_none_or(|v| v != "1"),
            group_linger: Duration::from_millis(2),
        }
    }
}

struct AppState {
    cfg: ServeConfig,
    snapshots: Arc<Snapshots>,
    writer: WriterHandle,
    metrics: Arc<Metrics>,
    token: Option<Vec<u8>>,
    loopback: bool,
}

type St = State<Arc<AppState>>;

/// Runs the server until SIGTERM or Ctrl-C. `on_listening` gets the bound address (port 0
/// picks a free one) before the first request is accepted.
pub fn run(cfg: ServeConfig, on_listening: impl FnOnce(SocketAddr)) -> Result<()> {
    // A server's reads are lookups: of an index larger than memory, a few blocks here and
    // there from the disk, not the kernel's read-around of MBs around each (its scans advise
    // their own ranges).
    let (random, bytes, mem) = crate::view::lookups_want_random_access(&cfg.index);
    if crate::segment::advise_random_on_open(random) {
        eprintln!(
            "ndd-index serve: segments mapped for random access (index {:.2} GB, {:.2} GB of \
             memory available)",
            bytes as f64 / 1e9,
            mem as f64 / 1e9
        );
    }
    let index = Index::open(&cfg.index)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))?;
    rt.block_on(serve(cfg, index, on_listening))
}

async fn serve(
    cfg: ServeConfig,
    index: Index,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|e| Error::io(cfg.listen.to_string(), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io(cfg.listen.to_string(), e))?;
    let metrics = Arc::new(Metrics::default());
    let snapshots = Arc::new(Snapshots::new(index));
    let (writer, writer_join) = writer::spawn(
        WriterConfig {
            dir: cfg.index.clone(),
            write_wait: cfg.write_wait,
            idle: cfg.writer_idle,
            max_group_docs: cfg.max_group_docs.max(1),
            fold_docs: cfg.fold_docs,
            queue: 4096,
            pipeline_sync: cfg.pipeline_sync,
            linger: cfg.group_linger,
        },
        Arc::clone(&snapshots),
        Arc::clone(&metrics),
    )
    .map_err(|e| Error::io("<writer thread>", e))?;
    let state = Arc::new(AppState {
        token: cfg.token.as_ref().map(|t| t.trim().as_bytes().to_vec()),
        loopback: addr.ip().is_loopback(),
        cfg: cfg.clone(),
        snapshots,
        writer,
        metrics,
    });
    let app = router(Arc::clone(&state));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let watcher = tokio::spawn(watch_catalog(Arc::clone(&state), stop_rx.clone()));
    // Warm-up, on a background thread: the key filters every query reads, then whole
    // segments' blocks checked (and faulted in) in file order, within the read-ahead budget
    // (`view::warm_up`), instead of at random on their first queries.
    {
        let st = Arc::clone(&state);
        let stop = stop_rx.clone();
        std::thread::Builder::new()
            .name("ndd-warm-up".into())
            .spawn(move || {
                let snap = st.snapshots.get();
                let t = Instant::now();
                let segs: Vec<&crate::segment::Segment> =
                    snap.view().segments.iter().map(|s| &*s.seg).collect();
                let w = crate::view::warm_up(
                    &segs,
                    crate::view::mem_available(),
                    crate::view::read_ahead_share(),
                    &|| *stop.borrow(),
                );
                for e in &w.errors {
                    eprintln!("ndd-index serve: warm-up: {e}");
                }
                st.metrics.warm.store(true, Relaxed);
                eprintln!(
                    "ndd-index serve: warm-up in {:.1} s: {w}",
                    t.elapsed().as_secs_f64()
                );
                drop(segs);
                st.snapshots.put_back(snap);
            })
            .map_err(|e| Error::io("<warm-up thread>", e))?;
    }

    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(cfg.header_timeout)
        .max_buf_size(cfg.max_header_bytes.max(8192));
    let graceful = GracefulShutdown::new();
    on_listening(addr);
    let mut signal = std::pin::pin!(shutdown_signal());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of descriptors and the like: keep serving the open connections.
                        eprintln!("ndd-index serve: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let svc = TowerToHyperService::new(app.clone());
                let conn = http.serve_connection(TokioIo::new(stream), svc);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            _ = &mut signal => break,
        }
    }
    // Stop accepting, let the requests in flight finish, then the writer.
    drop(listener);
    let _ = stop_tx.send(true);
    if tokio::time::timeout(cfg.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!("ndd-index serve: requests still running after the grace period; stopping");
    }
    let _ = watcher.await;
    state.writer.shutdown();
    drop(app);
    tokio::task::spawn_blocking(move || {
        let _ = writer_join.join();
    })
    .await
    .map_err(|e| Error::InvalidArgument(format!("writer thread: {e}")))?;
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let ctrl_c = tokio::signal::ctrl_c();
    match term {
        Ok(mut t) => {
            tokio::select! {
                _ = t.recv() => {}
                _ = ctrl_c => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
}

/// While this server does not hold the writer lock, another process may publish: reopen the
/// read snapshot when RocksDB's files change ([`Index::open_since`]: derived from the current
/// one). The old snapshot is released on the release thread once its last query gave it back
/// (its catalog handle and the mappings no newer snapshot shares go with it).
async fn watch_catalog(st: Arc<AppState>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let dir = st.cfg.index.clone();
    let mut seen = CatalogWatch::read(&dir);
    let mut tick = tokio::time::interval(st.cfg.watch_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let st2 = Arc::clone(&st);
        let dir2 = dir.clone();
        let prev = seen.clone();
        let r = tokio::task::spawn_blocking(move || -> Option<CatalogWatch> {
            let now = CatalogWatch::read(&dir2);
            if now == prev || st2.writer.held.load(Relaxed) {
                // Unchanged, or our own writes: the writer installs its snapshots itself.
                return Some(now);
            }
            // Derived from the current snapshot: its segments stay mapped (and checked), and
            // only what was published since is read; staged writes of a batch not yet
            // published leave the view as it is. Built without the swap lock, so a writer
            // taking the lock meanwhile does not wait for it.
            let current = st2.snapshots.get();
            let (ix, new_segments) = match Index::open_since(&current) {
                Ok(x) => x,
                Err(e) => {
                    st2.snapshots.put_back(current);
                    eprintln!("ndd-index serve: reopening after a change of the catalog: {e}");
                    return None; // try again at the next tick
                }
            };
            // Warm the new segments (their key filters, then their blocks checked and faulted
            // in, within the read-ahead budget) before any query uses them, here rather than
            // on the queries' first use.
            let segs: Vec<&crate::segment::Segment> = new_segments.iter().map(|s| &**s).collect();
            let w = crate::view::warm_up(
                &segs,
                crate::view::mem_available(),
                crate::view::read_ahead_share(),
                &|| false,
            );
            for e in &w.errors {
                eprintln!("ndd-index serve: checking a new segment: {e}");
            }
            let _g = st2.writer.swap.lock().unwrap_or_else(|p| p.into_inner());
            let installed = st2.snapshots.get();
            let unchanged = Arc::ptr_eq(&installed, &current);
            st2.snapshots.put_back(installed);
            let seen = if st2.writer.held.load(Relaxed) {
                Some(now)
            } else if !unchanged {
                // The writer took the lock and gave it back meanwhile, installing a snapshot
                // newer than ours: look again at the next tick.
                None
            } else {
                st2.snapshots.set(Arc::new(ix));
                st2.metrics.snapshots.fetch_add(1, Relaxed);
                st2.metrics.external_reloads.fetch_add(1, Relaxed);
                Some(now)
            };
            st2.snapshots.put_back(current);
            seen
        })
        .await;
        if let Ok(Some(now)) = r {
            seen = now;
        }
    }
}

fn router(st: Arc<AppState>) -> Router {
    use tower_http::limit::RequestBodyLimitLayer;
    use tower_http::timeout::TimeoutLayer;
    Router::new()
        .route("/v1/query", post(query))
        .route(
            "/v1/documents",
            post(insert).get(get_document).delete(delete_document),
        )
        .route("/v1/documents:batch", post(insert_batch))
        .route("/v1/clusters/{id}", get(cluster))
        .route("/v1/stats", get(stats))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .fallback(not_found)
        .layer(RequestBodyLimitLayer::new(st.cfg.max_body))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            st.cfg.request_timeout,
        ))
        .layer(middleware::from_fn_with_state(Arc::clone(&st), track))
        .layer(middleware::map_response(error::jsonify_errors))
        .with_state(st)
}

/// Counts every answer by route and status, with its server-side latency.
async fn track(State(st): St, req: Request, next: Next) -> Response {
    let route = route_name(req.method(), req.uri().path());
    let t = Instant::now();
    let resp = next.run(req).await;
    st.metrics.observe(
        Metrics::route_index(route),
        resp.status().as_u16(),
        t.elapsed(),
    );
    resp
}

fn route_name(m: &HttpMethod, path: &str) -> &'static str {
    match (m.as_str(), path) {
        ("POST", "/v1/query") => "query",
        ("POST", "/v1/documents") => "insert",
        ("POST", "/v1/documents:batch") => "insert_batch",
        ("DELETE", "/v1/documents") => "delete",
        ("GET", "/v1/documents") => "document",
        ("GET", p) if p.starts_with("/v1/clusters/") => "cluster",
        ("GET", "/v1/stats") => "stats",
        ("GET", "/healthz") => "healthz",
        ("GET", "/metrics") => "metrics",
        _ => "other",
    }
}

async fn not_found(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "no endpoint {} {} (see README.md, \"Serving\")",
            req.method(),
            req.uri().path()
        ),
    )
}

// ---- request parsing -------------------------------------------------------------------------

/// Query-string parameters; unknown and repeated names are errors.
fn params(
    raw: Option<&str>,
    allowed: &[&str],
) -> std::result::Result<HashMap<String, String>, ApiError> {
    let mut out = HashMap::new();
    for part in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let k = pct_decode(k)?;
        let v = pct_decode(v)?;
        if !allowed.contains(&k.as_str()) {
            return Err(ApiError::bad_request(
                "unknown_parameter",
                format!(
                    "unknown parameter {k:?} (this endpoint takes: {})",
                    if allowed.is_empty() {
                        "none".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ),
            ));
        }
        if out.insert(k.clone(), v).is_some() {
            return Err(ApiError::bad_request(
                "repeated_parameter",
                format!("parameter {k:?} is given more than once"),
            ));
        }
    }
    Ok(out)
}

/// Percent-decoding of one query-string component (`+` is a space); the result must be UTF-8.
fn pct_decode(s: &str) -> std::result::Result<String, ApiError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        ApiError::bad_request(
                            "bad_query_string",
                            format!("bad percent-escape in the query string at {:?}", &s[i..]),
                        )
                    })?;
                out.push(hex);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| {
        ApiError::bad_request("bad_query_string", "a query-string parameter is not UTF-8")
    })
}

/// The key parameter: present, non-empty, at most 4 KiB.
fn key_param(p: &HashMap<String, String>) -> std::result::Result<String, ApiError> {
    match p.get("key") {
        None => Err(ApiError::bad_request(
            "missing_parameter",
            "parameter \"key\" is required",
        )),
        Some(k) if k.is_empty() => Err(ApiError::bad_request(
            "bad_parameter",
            "parameter \"key\" is empty",
        )),
        Some(k) if k.len() > 4096 => Err(ApiError::bad_request(
            "bad_parameter",
            "parameter \"key\" is longer than 4096 bytes",
        )),
        Some(k) => Ok(k.clone()),
    }
}

const QUERY_PARAMS: [&str; 4] = ["threshold", "top", "method", "max_df"];
const INSERT_PARAMS: [&str; 5] = ["key", "threshold", "top", "method", "max_df"];

/// Query options from the parameters (`format` filled in later).
fn query_request(p: &HashMap<String, String>) -> std::result::Result<QueryRequest, ApiError> {
    let method = match p.get("method") {
        None => Method::Shingle,
        Some(m) => Method::from_str(m)
            .map_err(|e| ApiError::bad_request("bad_parameter", e.to_string()))?,
    };
    let threshold = match p.get("threshold") {
        None => None,
        Some(t) => {
            let v = Threshold::from_str(t).map_err(|e| {
                ApiError::bad_request("bad_parameter", format!("parameter \"threshold\": {e}"))
            })?;
            if v.as_f64() <= 0.0 && method == Method::Shingle {
                return Err(ApiError::bad_request(
                    "bad_parameter",
                    "parameter \"threshold\" must be above 0 for method shingle",
                ));
            }
            Some(v)
        }
    };
    let top = match p.get("top") {
        None => 10,
        Some(t) => t.parse::<usize>().map_err(|_| {
            ApiError::bad_request(
                "bad_parameter",
                format!("parameter \"top\" must be a whole number >= 0 (0 = all), got {t:?}"),
            )
        })?,
    };
    let max_df = match p.get("max_df") {
        None => None,
        Some(t) => Some(t.parse::<u32>().map_err(|_| {
            ApiError::bad_request(
                "bad_parameter",
                format!(
                    "parameter \"max_df\" must be a whole number >= 0 (0 = no limit), got {t:?}"
                ),
            )
        })?),
    };
    Ok(QueryRequest {
        method,
        threshold,
        top,
        max_df,
        format: None,
    })
}

/// Reads the whole body (the limit layer bounds it) and refuses an empty one.
async fn read_body(body: Body, limit: usize) -> std::result::Result<Bytes, ApiError> {
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .map(|s| s.to_string().contains("length limit"))
            .unwrap_or(false)
            || e.to_string().contains("length limit");
        if too_large {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body is larger than the server's limit of {limit} bytes"),
            )
        } else {
            ApiError::bad_request("bad_body", format!("could not read the request body: {e}"))
        }
    })?;
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            "empty_body",
            "the body is empty: send the page (HTML, or text with Content-Type: text/plain)",
        ));
    }
    Ok(bytes)
}

/// The page's format from `Content-Type` (None: sniffed from the bytes, as for files). A
/// declared UTF-8 charset, and text/plain, must be valid UTF-8; other charsets are refused
/// (HTML without a charset parameter has its `<meta>` charset read by the canonicalizer).
fn page_format(
    headers: &HeaderMap,
    body: &[u8],
) -> std::result::Result<Option<DocFormat>, ApiError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else {
        return Ok(None);
    };
    let ct = ct.to_str().map_err(|_| {
        ApiError::bad_request("bad_content_type", "the Content-Type header is not ASCII")
    })?;
    let mut parts = ct.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let mut charset = None;
    for p in parts {
        if let Some((k, v)) = p.split_once('=') {
            if k.trim().eq_ignore_ascii_case("charset") {
                charset = Some(v.trim().trim_matches('"').to_ascii_lowercase());
            }
        }
    }
    let format = match mime.as_str() {
        "text/plain" => Some(DocFormat::Text),
        "text/html" | "application/xhtml+xml" => Some(DocFormat::Html),
        "" | "application/x-www-form-urlencoded" => None, // curl's default for --data-binary
        other => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!("Content-Type {other:?} is not a page: send text/html or text/plain"),
            ))
        }
    };
    let utf8 = match charset.as_deref() {
        None => format == Some(DocFormat::Text),
        Some("utf-8" | "utf8" | "us-ascii") => true,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_charset",
                format!(
                    "charset {other:?} is not accepted: send UTF-8 (HTML without a charset \
                     parameter has its <meta> charset read)"
                ),
            ))
        }
    };
    if utf8 {
        if let Err(e) = std::str::from_utf8(body) {
            return Err(ApiError::bad_request(
                "invalid_utf8",
                format!(
                    "the body is not valid UTF-8 (first bad byte at offset {})",
                    e.valid_up_to()
                ),
            ));
        }
    }
    Ok(format)
}

/// Writes on a non-loopback address need a token; with a token, every write needs it.
fn authorize_write(st: &AppState, headers: &HeaderMap) -> std::result::Result<(), ApiError> {
    let Some(token) = &st.token else {
        if st.loopback {
            return Ok(());
        }
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "writes_disabled",
            "this server listens on a non-loopback address without --token-file: writes are refused",
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match given {
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "writes need an Authorization: Bearer <token> header",
        )),
        Some(g) if bool::from(g.as_bytes().ct_eq(token)) => Ok(()),
        Some(_) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the bearer token is not the server's",
        )),
    }
}

// ---- answers -----------------------------------------------------------------------------------

/// `matches` and `exact_duplicate_of` of a query answer, without the document `own` (an
/// insert's own key: a document is not its own duplicate).
pub fn matches_json(res: &QueryResult, own: Option<&str>) -> (Vec<Value>, Option<String>) {
    let keep = |k: &str| own != Some(k);
    match res {
        QueryResult::Shingle(a) => (
            a.hits
                .iter()
                .filter(|h| keep(&h.key))
                .map(|h| {
                    json!({"key": h.key, "resemblance": h.resemblance, "containment": h.containment,
                           "cluster": h.cluster, "doc": h.doc})
                })
                .collect(),
            a.exact_duplicate.clone().filter(|k| keep(k)),
        ),
        QueryResult::Method(a) => (
            a.hits
                .iter()
                .filter(|h| keep(&h.key))
                .map(|h| {
                    let mut v = json!({"key": h.key, "resemblance": h.similarity, "doc": h.doc});
                    if let Some(x) = h.hamming {
                        v["hamming"] = json!(x);
                    }
                    if let Some(x) = h.agree {
                        v["agree"] = json!(x);
                    }
                    v
                })
                .collect(),
            None,
        ),
    }
}

fn took_us(t: Instant) -> u64 {
    t.elapsed().as_micros() as u64
}

/// The query of a page against the current snapshot (inline: a query is a fraction of a
/// millisecond; pages above 256 KiB go to the blocking pool so they do not hold up others).
async fn run_query(
    st: &AppState,
    name: String,
    body: Bytes,
    req: QueryRequest,
) -> std::result::Result<QueryResult, ApiError> {
    on_snapshot(st, body.len(), move |snap| snap.query(&name, &body, &req)).await
}

/// [`run_query`] for a check-and-insert: the answer and the page prepared for the writer.
async fn run_check(
    st: &AppState,
    key: String,
    body: Bytes,
    req: QueryRequest,
) -> std::result::Result<(QueryResult, Option<PreparedDoc>), ApiError> {
    on_snapshot(st, body.len(), move |snap| {
        snap.query_to_insert(&key, &body, &req)
    })
    .await
}

/// Runs `work` on the current snapshot: inline for pages up to 256 KiB, on the blocking pool
/// above. The snapshot goes back to [`Snapshots::put_back`], so one replaced meanwhile is
/// released on the release thread, never by a request.
async fn on_snapshot<R: Send + 'static>(
    st: &AppState,
    body_len: usize,
    work: impl FnOnce(&Index) -> Result<R> + Send + 'static,
) -> std::result::Result<R, ApiError> {
    let snap = st.snapshots.get();
    if body_len <= 256 << 10 {
        let r = work(&snap);
        st.snapshots.put_back(snap);
        return Ok(r?);
    }
    let snaps = Arc::clone(&st.snapshots);
    tokio::task::spawn_blocking(move || {
        let r = work(&snap);
        snaps.put_back(snap);
        r
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
    .map_err(ApiError::from)
}

async fn query(State(st): St, RawQuery(raw): RawQuery, headers: HeaderMap, body: Body) -> Response {
    let t = Instant::now();
    let r = async {
        let p = params(raw.as_deref(), &QUERY_PARAMS)?;
        let mut req = query_request(&p)?;
        let body = read_body(body, st.cfg.max_body).await?;
        req.format = page_format(&headers, &body)?;
        let res = run_query(&st, "<request body>".into(), body, req).await?;
        let (matches, exact) = matches_json(&res, None);
        Ok::<_, ApiError>(
            json!({"matches": matches, "exact_duplicate_of": exact, "took_us": took_us(t)}),
        )
    }
    .await;
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

fn report_json(r: &DocReport) -> Value {
    let mut v = json!({"key": r.key, "status": r.status, "doc": r.doc, "cluster": r.cluster,
                       "exact_duplicate_of": r.exact_duplicate_of, "near_duplicate": r.near_duplicate});
    if let Some(e) = &r.error {
        v["error"] = json!(e);
    }
    v
}

/// Sends an insert to the writer and waits for its durable answer.
async fn submit_insert(
    st: &AppState,
    docs: Vec<InsertDoc>,
) -> std::result::Result<Vec<DocReport>, ApiError> {
    let (tx, rx) = oneshot::channel();
    st.writer.submit(Op::Insert {
        docs,
        reply: tx,
        deadline: Instant::now() + st.cfg.write_wait,
    })?;
    rx.await.map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the writer stopped before answering",
        )
    })?
}

async fn insert(
    State(st): St,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let t = Instant::now();
    let r = async {
        authorize_write(&st, &headers)?;
        let p = params(raw.as_deref(), &INSERT_PARAMS)?;
        let key = key_param(&p)?;
        let mut req = query_request(&p)?;
        let body = read_body(body, st.cfg.max_body).await?;
        req.format = page_format(&headers, &body)?;
        let format = req
            .format
            .unwrap_or_else(|| sniff_format(Some(&key), &body));
        // The check: what the index held before this insert (also rejects an unusable page
        // before it reaches the writer). The page goes to the writer as the check prepared
        // it (canonicalized and fingerprinted once, with what the check found).
        let (res, prepared) = run_check(&st, key.clone(), body.clone(), req).await?;
        let (matches, exact) = matches_json(&res, Some(&key));
        let bytes = if prepared.is_some() {
            Vec::new()
        } else {
            body.to_vec()
        };
        let reports = submit_insert(
            &st,
            vec![InsertDoc {
                key: key.clone(),
                bytes,
                format,
                prepared,
            }],
        )
        .await?;
        let rep = reports.into_iter().next().ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "no report for the document",
            )
        })?;
        if rep.status == DocStatus::Error {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad_document",
                format!("document {key:?}: {}", rep.error.unwrap_or_default()),
            ));
        }
        let cluster = match rep.cluster {
            Some(c) => Some(c),
            None => st.snapshots.get().document(&key)?.map(|d| d.cluster),
        };
        Ok::<_, ApiError>(json!({
            "key": key, "doc": rep.doc, "status": rep.status, "cluster": cluster,
            "matches": matches,
            "exact_duplicate_of": rep.exact_duplicate_of.or(exact),
            "near_duplicate": rep.near_duplicate,
            "took_us": took_us(t),
        }))
    }
    .await;
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

/// One line of a batch body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchLine {
    key: String,
    #[serde(default)]
    html: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

fn parse_batch(body: &[u8], max_docs: usize) -> std::result::Result<Vec<InsertDoc>, ApiError> {
    let text = std::str::from_utf8(body).map_err(|e| {
        ApiError::bad_request(
            "invalid_utf8",
            format!(
                "the batch is not valid UTF-8 (first bad byte at offset {})",
                e.valid_up_to()
            ),
        )
    })?;
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let n = i + 1;
        let l: BatchLine = serde_json::from_str(line).map_err(|e| {
            ApiError::bad_request(
                "bad_batch_line",
                format!("line {n}: not a {{\"key\", \"html\"|\"text\"}} object: {e}"),
            )
        })?;
        if l.key.is_empty() {
            return Err(ApiError::bad_request(
                "bad_batch_line",
                format!("line {n}: empty key"),
            ));
        }
        let (bytes, format) = match (l.html, l.text) {
            (Some(h), None) => (h.into_bytes(), DocFormat::Html),
            (None, Some(t)) => (t.into_bytes(), DocFormat::Text),
            _ => {
                return Err(ApiError::bad_request(
                    "bad_batch_line",
                    format!(
                        "line {n} (key {:?}): give exactly one of \"html\" and \"text\"",
                        l.key
                    ),
                ))
            }
        };
        docs.push(InsertDoc {
            key: l.key,
            bytes,
            format,
            prepared: None,
        });
        if docs.len() > max_docs {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "batch_too_large",
                format!("more than {max_docs} documents in one batch"),
            ));
        }
    }
    if docs.is_empty() {
        return Err(ApiError::bad_request(
            "empty_body",
            "the batch holds no JSON lines",
        ));
    }
    Ok(docs)
}

async fn insert_batch(
    State(st): St,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let r = async {
        authorize_write(&st, &headers)?;
        params(raw.as_deref(), &[])?;
        let body = read_body(body, st.cfg.max_body).await?;
        let docs = parse_batch(&body, st.cfg.max_batch_docs)?;
        let reports = submit_insert(&st, docs).await?;
        let mut out = String::with_capacity(reports.len() * 128);
        for r in &reports {
            out.push_str(&report_json(r).to_string());
            out.push('\n');
        }
        Ok::<_, ApiError>(out)
    }
    .await;
    match r {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            )],
            text,
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn delete_document(State(st): St, RawQuery(raw): RawQuery, headers: HeaderMap) -> Response {
    let r = async {
        authorize_write(&st, &headers)?;
        let p = params(raw.as_deref(), &["key"])?;
        let key = key_param(&p)?;
        let (tx, rx) = oneshot::channel();
        st.writer.submit(Op::Delete {
            key: key.clone(),
            reply: tx,
            deadline: Instant::now() + st.cfg.write_wait,
        })?;
        let s = rx.await.map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the writer stopped before answering",
            )
        })??;
        if s.deleted == 0 {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "no_such_document",
                format!("no live document with key {key:?}"),
            ));
        }
        Ok::<_, ApiError>(
            json!({"key": key, "deleted": true, "clusters_touched": s.clusters_touched}),
        )
    }
    .await;
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn get_document(State(st): St, RawQuery(raw): RawQuery) -> Response {
    let r = (|| {
        let p = params(raw.as_deref(), &["key"])?;
        let key = key_param(&p)?;
        match st.snapshots.get().document(&key)? {
            Some(d) => Ok(Json(json!(d))),
            None => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "no_such_document",
                format!("no live document with key {key:?}"),
            )),
        }
    })();
    match r {
        Ok(v) => v.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn cluster(State(st): St, UrlPath(id): UrlPath<String>, RawQuery(raw): RawQuery) -> Response {
    let r = (|| {
        params(raw.as_deref(), &[])?;
        let id: u32 = id.parse().map_err(|_| {
            ApiError::bad_request(
                "bad_parameter",
                format!("cluster id must be a whole number, got {id:?}"),
            )
        })?;
        match st.snapshots.get().cluster_members(id)? {
            Some(members) => Ok(Json(
                json!({"cluster": id, "size": members.len(), "members": members}),
            )),
            None => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "no_such_cluster",
                format!("no cluster {id}"),
            )),
        }
    })();
    match r {
        Ok(v) => v.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn stats(State(st): St, RawQuery(raw): RawQuery) -> Response {
    let r = async {
        params(raw.as_deref(), &[])?;
        let snap = st.snapshots.get();
        let s = tokio::task::spawn_blocking(move || snap.stats())
            .await
            .map_err(|e| {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
            })??;
        Ok::<_, ApiError>(Json(json!(s)))
    }
    .await;
    match r {
        Ok(v) => v.into_response(),
        Err(e) => e.into_response(),
    }
}

/// Live documents of a snapshot, cheaply: allocated doc ids less the tombstoned ones (the
/// exact count of `/v1/stats` reads every document record).
fn live_docs(ix: &Index) -> u64 {
    let v = ix.view();
    (v.doc_ids() as u64).saturating_sub(v.tombstones.len())
}

async fn healthz(State(st): St) -> Response {
    let snap = st.snapshots.get();
    Json(json!({"status": "ok", "documents": live_docs(&snap),
                "writer_held": st.writer.held.load(Relaxed),
                "warm": st.metrics.warm.load(Relaxed)}))
    .into_response()
}

async fn metrics_text(State(st): St) -> Response {
    let snap = st.snapshots.get();
    let view = snap.view();
    let delta = view.delta_size().0;
    let g = IndexGauges {
        live_documents: live_docs(&snap),
        doc_ids: view.doc_ids() as u64,
        segments: view.segments.len() as u64,
        delta_documents: delta,
        writer_held: st.writer.held.load(Relaxed),
    };
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        )],
        st.metrics.render(&g),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_decoded_and_unknown_ones_refused() {
        let p = params(Some("key=a%2Fb+c&top=3"), &["key", "top"]).unwrap();
        assert_eq!(p["key"], "a/b c");
        assert_eq!(p["top"], "3");
        let e = params(Some("key=a&tpo=3"), &["key", "top"]).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("\"tpo\""), "{}", e.message);
        let e = params(Some("key=a&key=b"), &["key"]).unwrap_err();
        assert!(e.message.contains("more than once"));
        assert!(params(Some("key=%zz"), &["key"]).is_err());
    }

    #[test]
    fn query_options_are_checked() {
        let p = |s: &str| params(Some(s), &QUERY_PARAMS).unwrap();
        assert!(query_request(&p("top=-1"))
            .unwrap_err()
            .message
            .contains("top"));
        assert!(query_request(&p("threshold=7"))
            .unwrap_err()
            .message
            .contains("threshold"));
        assert!(query_request(&p("threshold=0")).is_err());
        assert!(query_request(&p("method=nope"))
            .unwrap_err()
            .message
            .contains("nope"));
        let r = query_request(&p("threshold=0.8&top=0&method=simhash")).unwrap();
        assert_eq!(r.top, 0);
        assert_eq!(r.method, Method::Simhash);
    }

    #[test]
    fn content_types_and_utf8() {
        let mut h = HeaderMap::new();
        assert_eq!(page_format(&h, b"<p>x").unwrap(), None);
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(page_format(&h, b"words").unwrap(), Some(DocFormat::Text));
        let e = page_format(&h, b"ok \xff\xfe").unwrap_err();
        assert_eq!(e.code, "invalid_utf8");
        assert!(e.message.contains("offset 3"));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=latin1"),
        );
        assert_eq!(
            page_format(&h, b"x").unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
        assert_eq!(
            page_format(&h, b"x").unwrap_err().code,
            "unsupported_media_type"
        );
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
        assert_eq!(page_format(&h, b"\xff<p>").unwrap(), Some(DocFormat::Html));
    }

    #[test]
    fn batch_lines_are_checked_by_line() {
        let ok = parse_batch(
            b"{\"key\":\"a\",\"html\":\"<p>x\"}\n\n{\"key\":\"b\",\"text\":\"y\"}\n",
            10,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].format, DocFormat::Text);
        let e = parse_batch(b"{\"key\":\"a\",\"html\":\"x\"}\n{\"key\":\"b\"}\n", 10).unwrap_err();
        assert!(e.message.starts_with("line 2"), "{}", e.message);
        let e = parse_batch(b"{\"key\":\"a\",\"html\":\"x\",\"extra\":1}\n", 10).unwrap_err();
        assert!(e.message.contains("extra"), "{}", e.message);
        assert!(parse_batch(b"not json\n", 10).is_err());
        assert!(parse_batch(b"\n\n", 10).is_err());
    }
}
