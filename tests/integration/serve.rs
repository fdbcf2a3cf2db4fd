//! `ndd-index serve` end to end: the binary on a free loopback port, driven over raw HTTP/1.1.
//!
//! - queries of indexed pages find their partners with the CLI's resemblance;
//! - inserts are visible to the next query and to the CLI, repeat as `unchanged`, and delete;
//! - bad requests each get a 4xx JSON error (or, for a client that never finishes its
//!   headers, a closed connection) while the server keeps answering;
//! - SIGKILL in the middle of concurrent inserts loses no insert that was answered 2xx, and
//!   `verify` stays clean (rounds: `NDD_SERVE_KILL_ROUNDS`, default 4);
//! - another process's ingest becomes visible without a restart; while another process holds
//!   the writer lock, inserts get 503 with Retry-After.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ndd-index")
}

fn temp_dir(name: &str) -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(base)
        .unwrap()
}

fn cli(args: &[&str]) -> Output {
    let out = Command::new(bin())
        .args(args)
        .output()
        .expect("run ndd-index");
    assert!(
        out.status.success(),
        "ndd-index {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Synthetic pages: random words of a small vocabulary plus shared navigation; every third
/// page is a light edit of the one before (a near-duplicate partner).
fn write_pages(dir: &Path, prefix: &str, n: usize, seed: u64) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let vocab: Vec<String> = (0..3000).map(|i| format!("w{i}q")).collect();
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut prev = String::new();
    let mut out = Vec::new();
    for i in 0..n {
        let body = if i % 3 == 2 {
            prev.replacen("w1", "edited", 3)
        } else {
            (0..200)
                .map(|_| vocab[(next() % 3000) as usize].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let html = format!(
            "<html><head><title>t{i}</title></head><body><nav>home docs blog</nav><p>{body}</p></body></html>"
        );
        let p = dir.join(format!("{prefix}{i:04}.html"));
        std::fs::write(&p, html).unwrap();
        prev = body;
        out.push(p);
    }
    out
}

/// A running server; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(index: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(bin())
            .args([
                "serve",
                "--index",
                index.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start ndd-index serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .parse()
            .unwrap();
        Server { child, addr }
    }

    /// SIGTERM, then the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "server did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Answer {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One request on a fresh connection (`Connection: close`).
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut msg = req.into_bytes();
    msg.extend_from_slice(body);
    // The server may answer (413) and close before reading a large body: ignore write errors.
    let _ = s.write_all(&msg);
    read_answer(&mut s).unwrap_or_else(|| panic!("no answer to {method} {path}"))
}

/// A request that announces a body of `len` bytes and waits for the answer before sending
/// any of it (the server refuses from the header alone).
fn announce(addr: SocketAddr, path: &str, len: usize) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: text/html\r\nContent-Length: {len}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).unwrap();
    read_answer(&mut s).expect("an answer before the body")
}

fn read_answer(s: &mut TcpStream) -> Option<Answer> {
    // Up to the end of the head, then Content-Length bytes (or to the end of the stream).
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(e) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break e;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    match headers
        .get("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(len) => {
            while body.len() < len {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => body.extend_from_slice(&buf[..n]),
                }
            }
            body.truncate(len);
        }
        None => {
            let _ = s.read_to_end(&mut body);
        }
    }
    Some(Answer {
        status,
        headers,
        body,
    })
}

fn query(addr: SocketAddr, page: &[u8], args: &str) -> Value {
    let a = http(
        addr,
        "POST",
        &format!("/v1/query?{args}"),
        &[("Content-Type", "text/html")],
        page,
    );
    assert_eq!(a.status, 200, "{}", a.text());
    a.json()
}

/// A query answer's matches as key -> resemblance (six decimals, as the CLI prints it).
fn resemblances(v: &Value) -> BTreeMap<String, String> {
    v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["key"].as_str().unwrap().to_owned(),
                format!("{:.6}", m["resemblance"].as_f64().unwrap()),
            )
        })
        .collect()
}

/// A query of an indexed page finds the page itself at resemblance 1 and, besides it, exactly
/// the partners the CLI's `pairs` gives it (`partners`: key -> partner -> resemblance).
fn assert_self_and_partners(
    key: &str,
    got: &BTreeMap<String, String>,
    partners: &HashMap<String, BTreeMap<String, String>>,
    context: &dyn std::fmt::Display,
) {
    assert_eq!(
        got.get(key).map(String::as_str),
        Some("1.000000"),
        "{key}: {context}"
    );
    let mut others = got.clone();
    others.remove(key);
    assert_eq!(
        others,
        partners.get(key).cloned().unwrap_or_default(),
        "partners of {key}"
    );
}

fn insert(addr: SocketAddr, key: &str, page: &[u8]) -> Answer {
    http(
        addr,
        "POST",
        &format!("/v1/documents?key={key}"),
        &[("Content-Type", "text/html")],
        page,
    )
}

/// CLI pairs at T: key -> {partner -> resemblance printed with 6 decimals}.
fn cli_partners(index: &Path, t: &str) -> HashMap<String, BTreeMap<String, String>> {
    let out = cli(&[
        "pairs",
        "--index",
        index.to_str().unwrap(),
        "--threshold",
        t,
    ]);
    let mut m: HashMap<String, BTreeMap<String, String>> = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = line.split('\t').collect();
        m.entry(f[0].into())
            .or_default()
            .insert(f[1].into(), f[2].into());
        m.entry(f[1].into())
            .or_default()
            .insert(f[0].into(), f[2].into());
    }
    m
}

fn verify_clean(index: &Path) {
    let out = Command::new(bin())
        .args(["verify", "--index", index.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "verify found problems:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fresh index (`idx` in a new temporary directory) holding `n` generated pages as batch
/// `b1`; returns the directory, the index path and the pages.
fn indexed_pages(name: &str, n: usize, seed: u64) -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
    let tmp = temp_dir(name);
    let index = tmp.path().join("idx");
    let base = tmp.path().join("base");
    let pages = write_pages(&base, "p", n, seed);
    ingest(&index, &base, "b1");
    (tmp, index, pages)
}

fn ingest(index: &Path, dir: &Path, batch: &str) {
    cli(&[
        "ingest",
        "--index",
        index.to_str().unwrap(),
        "--batch",
        batch,
        "--quiet",
        dir.to_str().unwrap(),
    ]);
}

#[test]
fn queries_inserts_and_deletes_agree_with_the_cli() {
    let (tmp, index, pages) = indexed_pages("serve-basic", 120, 7);
    let partners = cli_partners(&index, "0.5");
    assert!(
        partners.len() >= 40,
        "the corpus plants pairs: {}",
        partners.len()
    );

    let srv = Server::start(&index, &[]);
    // Queries of the index's own pages: the page itself at 1.0, then its CLI partners with the
    // CLI's resemblance.
    for p in pages.iter().take(30) {
        let key = p.file_name().unwrap().to_str().unwrap();
        let v = query(srv.addr, &std::fs::read(p).unwrap(), "threshold=0.5&top=0");
        let got = resemblances(&v);
        assert_self_and_partners(key, &got, &partners, &v);
        assert_eq!(v["exact_duplicate_of"].as_str(), Some(key));
        assert!(v["took_us"].as_u64().is_some());
        for m in v["matches"].as_array().unwrap() {
            assert!(
                m["containment"].as_f64().is_some() && m["cluster"].as_u64().is_some(),
                "{m}"
            );
        }
    }

    // Inserts: a new page, a near-duplicate of an indexed one, and a repeat.
    let new_dir = tmp.path().join("new");
    let fresh = write_pages(&new_dir, "n", 3, 99);
    let page0 = std::fs::read(&fresh[0]).unwrap();
    let a = insert(srv.addr, "new/one.html", &page0);
    assert_eq!(a.status, 200, "{}", a.text());
    let v = a.json();
    assert_eq!(v["status"], "new");
    let doc = v["doc"].as_u64().unwrap();
    assert!(v["matches"].as_array().unwrap().is_empty(), "{v}");
    // Visible to the next query at once.
    let q = query(srv.addr, &page0, "threshold=0.9");
    assert_eq!(q["matches"][0]["key"], "new/one.html", "{q}");
    assert_eq!(q["exact_duplicate_of"], "new/one.html");
    // Repeating the request changes nothing.
    let again = insert(srv.addr, "new/one.html", &page0).json();
    assert_eq!(again["status"], "unchanged");
    assert_eq!(again["doc"].as_u64(), Some(doc));
    // A near-duplicate of an indexed page: the check names its partner.
    let orig = std::fs::read_to_string(&pages[0]).unwrap();
    let near = orig.replacen("w", "v", 4);
    let v = insert(srv.addr, "new/near.html", near.as_bytes()).json();
    assert_eq!(v["status"], "new", "{v}");
    let m0 = &v["matches"][0];
    assert_eq!(m0["key"], "p0000.html", "{v}");
    assert!(m0["resemblance"].as_f64().unwrap() > 0.8);
    assert_eq!(v["near_duplicate"]["key"], "p0000.html", "{v}");
    let cluster = v["cluster"].as_u64().unwrap();
    // The document and its cluster.
    let d = http(srv.addr, "GET", "/v1/documents?key=new/near.html", &[], b"");
    assert_eq!(d.status, 200, "{}", d.text());
    let d = d.json();
    assert_eq!(d["cluster"].as_u64(), Some(cluster));
    assert!(
        d["partners"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "p0000.html"),
        "{d}"
    );
    let c = http(
        srv.addr,
        "GET",
        &format!("/v1/clusters/{cluster}"),
        &[],
        b"",
    )
    .json();
    let members: HashSet<&str> = c["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(
        members.contains("new/near.html") && members.contains("p0000.html"),
        "{c}"
    );

    // Visible to the CLI while the server runs.
    let f = tmp.path().join("probe.html");
    std::fs::write(&f, &page0).unwrap();
    let out = cli(&[
        "query",
        "--index",
        index.to_str().unwrap(),
        "--json",
        f.to_str().unwrap(),
    ]);
    let cq: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cq["hits"][0]["key"], "new/one.html", "{cq}");

    // Batch of JSON lines: one answer line each.
    let mut batch = String::new();
    for i in 0..5 {
        let line = serde_json::json!({"key": format!("batch/{i}"), "text": format!("batch document number {i} with some words of its own {}", "x ".repeat(i))});
        batch.push_str(&line.to_string());
        batch.push('\n');
    }
    let b = http(
        srv.addr,
        "POST",
        "/v1/documents:batch",
        &[("Content-Type", "application/x-ndjson")],
        batch.as_bytes(),
    );
    assert_eq!(b.status, 200, "{}", b.text());
    let lines: Vec<Value> = b
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["key"], format!("batch/{i}"));
        assert_eq!(l["status"], "new", "{l}");
    }

    // Delete: gone from answers at once; a second delete is a 404.
    let del = http(
        srv.addr,
        "DELETE",
        "/v1/documents?key=new/one.html",
        &[],
        b"",
    );
    assert_eq!(del.status, 200, "{}", del.text());
    assert_eq!(
        http(srv.addr, "GET", "/v1/documents?key=new/one.html", &[], b"").status,
        404
    );
    let q = query(srv.addr, &page0, "threshold=0.9");
    assert!(q["matches"].as_array().unwrap().is_empty(), "{q}");
    assert_eq!(
        http(
            srv.addr,
            "DELETE",
            "/v1/documents?key=new/one.html",
            &[],
            b""
        )
        .status,
        404
    );

    // Stats, health and metrics.
    let s = http(srv.addr, "GET", "/v1/stats", &[], b"").json();
    assert_eq!(s["documents"].as_u64(), Some(120 + 1 + 5), "{s}");
    let h = http(srv.addr, "GET", "/healthz", &[], b"").json();
    assert_eq!(h["status"], "ok");
    let m = http(srv.addr, "GET", "/metrics", &[], b"").text();
    assert!(
        m.contains("ndd_requests_total{route=\"query\",status=\"2xx\"}"),
        "{m}"
    );
    assert!(
        m.contains("ndd_request_duration_seconds_bucket{route=\"insert\""),
        "{m}"
    );
    assert!(m.contains("ndd_index_documents 126"), "{m}");

    // SIGTERM: a clean exit; the CLI sees the inserts; verify is clean.
    assert!(srv.stop().success());
    let after = cli_partners(&index, "0.5");
    assert!(after["new/near.html"].contains_key("p0000.html"));
    verify_clean(&index);
}

#[test]
fn bad_requests_get_json_4xx_and_the_server_keeps_serving() {
    let (_tmp, index, pages) = indexed_pages("serve-bad", 30, 11);
    let srv = Server::start(&index, &["--max-body", "1MiB", "--header-timeout", "1"]);
    let page = std::fs::read(&pages[0]).unwrap();
    let html = [("Content-Type", "text/html")];

    // A client that never finishes its headers, held open during everything else.
    let mut slow = TcpStream::connect(srv.addr).unwrap();
    slow.write_all(b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Le")
        .unwrap();
    let slow_started = Instant::now();

    let cases: Vec<(&str, Answer, u16, &str)> = vec![
        (
            "empty body",
            http(srv.addr, "POST", "/v1/query", &html, b""),
            400,
            "empty",
        ),
        (
            "50 MB body",
            announce(srv.addr, "/v1/query", 50 << 20),
            413,
            "larger",
        ),
        (
            "invalid UTF-8",
            http(
                srv.addr,
                "POST",
                "/v1/query",
                &[("Content-Type", "text/plain")],
                b"caf\xe9 au lait",
            ),
            400,
            "UTF-8",
        ),
        (
            "binary",
            http(
                srv.addr,
                "POST",
                "/v1/query",
                &html,
                b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0",
            ),
            422,
            "binary",
        ),
        (
            "binary content type",
            http(
                srv.addr,
                "POST",
                "/v1/query",
                &[("Content-Type", "application/octet-stream")],
                b"\0\x01",
            ),
            415,
            "octet-stream",
        ),
        (
            "unknown parameter",
            http(srv.addr, "POST", "/v1/query?treshold=0.5", &html, &page),
            400,
            "treshold",
        ),
        (
            "negative top",
            http(srv.addr, "POST", "/v1/query?top=-1", &html, &page),
            400,
            "top",
        ),
        (
            "threshold 7",
            http(srv.addr, "POST", "/v1/query?threshold=7", &html, &page),
            400,
            "threshold",
        ),
        (
            "unknown method",
            http(srv.addr, "POST", "/v1/query?method=magic", &html, &page),
            400,
            "magic",
        ),
        (
            "insert without key",
            http(srv.addr, "POST", "/v1/documents", &html, &page),
            400,
            "key",
        ),
        (
            "bad batch line",
            http(
                srv.addr,
                "POST",
                "/v1/documents:batch",
                &[],
                b"{\"key\":\"a\",\"html\":\"<p>x\"}\n{\"key\":\"b\",\"htm\":1}\n",
            ),
            400,
            "line 2",
        ),
        (
            "bad cluster id",
            http(srv.addr, "GET", "/v1/clusters/abc", &[], b""),
            400,
            "abc",
        ),
        (
            "no such path",
            http(srv.addr, "GET", "/v2/nothing", &[], b""),
            404,
            "/v2/nothing",
        ),
        (
            "wrong verb",
            http(srv.addr, "PUT", "/v1/query", &html, &page),
            405,
            "method",
        ),
    ];
    for (what, a, status, needle) in cases {
        assert_eq!(a.status, status, "{what}: {}", a.text());
        let v = a.json();
        let msg = v["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: no message in {v}"));
        assert!(v["error"].is_string(), "{what}: {v}");
        assert!(
            msg.contains(needle),
            "{what}: {msg:?} should name {needle:?}"
        );
        // The server keeps answering.
        assert_eq!(
            query(srv.addr, &page, "threshold=0.9")["matches"][0]["key"],
            "p0000.html"
        );
    }
    // Nothing bad was inserted.
    let s = http(srv.addr, "GET", "/v1/stats", &[], b"").json();
    assert_eq!(s["documents"].as_u64(), Some(30));

    // The slow client was cut off by the header timeout (closed, possibly with a 408).
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = Vec::new();
    let r = slow.read_to_end(&mut buf);
    assert!(
        r.is_ok(),
        "the slow connection was closed, not left hanging: {r:?}"
    );
    assert!(slow_started.elapsed() < Duration::from_secs(10));
    let text = String::from_utf8_lossy(&buf);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    assert!(srv.stop().success());
}

#[test]
fn tokens_guard_writes() {
    let (tmp, index, pages) = indexed_pages("serve-token", 10, 5);
    let page = std::fs::read(&pages[0]).unwrap();

    // No token on a non-loopback address: reads yes, writes no.
    let mut child = Command::new(bin())
        .args([
            "serve",
            "--index",
            index.to_str().unwrap(),
            "--listen",
            "0.0.0.0:0",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let open = Server {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
    };
    assert!(line.contains("writes refused"), "{line}");
    assert_eq!(
        query(open.addr, &page, "threshold=0.9")["matches"][0]["key"],
        "p0000.html"
    );
    let a = insert(open.addr, "x", b"<p>some words here</p>");
    assert_eq!(a.status, 403, "{}", a.text());
    assert!(a.json()["message"]
        .as_str()
        .unwrap()
        .contains("--token-file"));
    drop(open);

    // With a token: writes need it, compared exactly.
    let tf = tmp.path().join("token");
    std::fs::write(&tf, "s3cret-token-0123456789\n").unwrap();
    let srv = Server::start(&index, &["--token-file", tf.to_str().unwrap()]);
    let body = b"<p>some words of a new page for the token test</p>";
    let path = "/v1/documents?key=tok.html";
    assert_eq!(http(srv.addr, "POST", path, &[], body).status, 401);
    assert_eq!(
        http(
            srv.addr,
            "POST",
            path,
            &[("Authorization", "Bearer s3cret-token-012345678")],
            body
        )
        .status,
        403
    );
    let ok = http(
        srv.addr,
        "POST",
        path,
        &[("Authorization", "Bearer s3cret-token-0123456789")],
        body,
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(
        http(srv.addr, "DELETE", "/v1/documents?key=tok.html", &[], b"").status,
        401
    );
}

#[test]
fn another_process_ingest_is_seen_and_its_lock_gives_503() {
    let (tmp, index, _) = indexed_pages("serve-ext", 20, 3);
    let srv = Server::start(&index, &["--writer-idle", "0.3", "--write-wait", "0.5"]);
    // An insert takes the lock; after the idle time it is given back.
    let a = insert(
        srv.addr,
        "first.html",
        b"<p>the first online page with a few words</p>",
    );
    assert_eq!(a.status, 200, "{}", a.text());
    std::thread::sleep(Duration::from_millis(900));
    // A nightly ingest in another process, while the server runs.
    let b2 = tmp.path().join("b2");
    let new_pages = write_pages(&b2, "q", 20, 4);
    ingest(&index, &b2, "b2");
    let page = std::fs::read(&new_pages[5]).unwrap();
    let t = Instant::now();
    loop {
        let v = query(srv.addr, &page, "threshold=0.9");
        if v["matches"][0]["key"] == "q0005.html" {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the ingested batch never became visible: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The insert of before is still there, and new inserts work after the ingest.
    assert_eq!(
        http(srv.addr, "GET", "/v1/documents?key=first.html", &[], b"").status,
        200
    );
    assert_eq!(
        insert(
            srv.addr,
            "second.html",
            b"<p>another online page, other words</p>"
        )
        .status,
        200
    );
    std::thread::sleep(Duration::from_millis(900));

    // Another process holds the writer lock: inserts wait, then 503 with Retry-After.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(index.join("LOCK"))
        .unwrap();
    lock.lock().unwrap();
    let t = Instant::now();
    let a = insert(
        srv.addr,
        "third.html",
        b"<p>a page that must wait for the lock</p>",
    );
    assert_eq!(a.status, 503, "{}", a.text());
    assert!(a.headers.contains_key("retry-after"), "{:?}", a.headers);
    assert!(t.elapsed() >= Duration::from_millis(400));
    // Reads go on meanwhile.
    assert_eq!(
        query(srv.addr, &page, "threshold=0.9")["matches"][0]["key"],
        "q0005.html"
    );
    lock.unlock().unwrap();
    assert_eq!(
        insert(
            srv.addr,
            "third.html",
            b"<p>a page that must wait for the lock</p>"
        )
        .status,
        200
    );
    assert!(srv.stop().success());
    verify_clean(&index);
}

#[test]
fn sigkill_during_concurrent_inserts_keeps_every_acknowledged_insert() {
    let rounds: usize = std::env::var("NDD_SERVE_KILL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let (_tmp, index, _) = indexed_pages("serve-kill", 50, 21);
    let vocab: Vec<String> = (0..5000).map(|i| format!("k{i}z")).collect();
    let mut all_acked: Vec<String> = Vec::new();
    for round in 0..rounds {
        let srv = Server::start(&index, &["--fold-docs", "64"]);
        let addr = srv.addr;
        let acked = Arc::new(Mutex::new(Vec::<String>::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut clients = Vec::new();
        for c in 0..8 {
            let acked = Arc::clone(&acked);
            let stop = Arc::clone(&stop);
            let vocab = vocab.clone();
            clients.push(std::thread::spawn(move || {
                let mut i = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let key = format!("r{round}/c{c}/{i}");
                    let words: Vec<&str> = (0..80).map(|j| vocab[(i * 31 + j * 7 + c * 977 + round * 13) % 5000].as_str()).collect();
                    let page = format!("<html><body><p>{key} {}</p></body></html>", words.join(" "));
                    i += 1;
                    let Ok(mut s) = TcpStream::connect(addr) else { break };
                    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                    let req = format!(
                        "POST /v1/documents?key={key} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{page}",
                        page.len()
                    );
                    if s.write_all(req.as_bytes()).is_err() {
                        break;
                    }
                    match read_answer(&mut s) {
                        Some(a) if a.status == 200 => acked.lock().unwrap().push(key),
                        Some(a) => panic!("insert {key}: {} {}", a.status, a.text()),
                        None => break, // killed mid-request: not acknowledged
                    }
                }
            }));
        }
        // Kill once inserts are being acknowledged (a loaded machine may take seconds to
        // answer the first), then a little later each round.
        let t = Instant::now();
        while acked.lock().unwrap().is_empty() && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(50 + 250 * (round as u64 % 4)));
        srv.kill();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for c in clients {
            c.join().unwrap();
        }
        let acked = std::mem::take(&mut *acked.lock().unwrap());
        assert!(
            !acked.is_empty(),
            "round {round}: no insert was acknowledged before the kill"
        );
        all_acked.extend(acked);
        verify_clean(&index);
        // Every acknowledged insert (of this round and all before) is there after a restart.
        let srv = Server::start(&index, &[]);
        for key in &all_acked {
            let a = http(
                srv.addr,
                "GET",
                &format!("/v1/documents?key={key}"),
                &[],
                b"",
            );
            assert_eq!(
                a.status,
                200,
                "round {round}: acknowledged insert {key} lost: {}",
                a.text()
            );
        }
        assert!(srv.stop().success());
    }
    verify_clean(&index);
}

/// The snapshot after an online add (built from the delta alone, `View::after_add`: the add's
/// own segment as a piece of the delta, pieces rebuilt as one every few adds) answers as the
/// snapshot a full reload gives: same sizes, tombstones, forward lists and postings of every
/// document, through new documents, replacements (tombstones) and a fold.
#[test]
fn the_view_after_an_add_answers_as_a_full_reload() {
    use ndd_index::lifecycle::add::AddOptions;
    use ndd_index::view::View;
    use ndd_index::{CreateOptions, Index};

    let tmp = temp_dir("serve-view");
    let dir = tmp.path().join("idx");
    let mut ix = Index::open_writer(&dir, &CreateOptions::default()).unwrap();
    let boiler = "shared site boilerplate words on every page of the site menu footer";
    let opts = AddOptions {
        fold_docs: 70,
        ..AddOptions::default()
    };
    let mut max_pieces = 0;
    for round in 0..12u32 {
        // Keys repeat across rounds with new text every other round: replacements.
        let docs = tmp.path().join(format!("round{round}"));
        std::fs::create_dir_all(&docs).unwrap();
        let files: Vec<PathBuf> = (0..9u32)
            .map(|i| {
                let f = docs.join(format!("k{}.txt", (round * 7 + i) % 40));
                let text = format!(
                    "{boiler} round {} item {i} {}",
                    round / 2,
                    "filler ".repeat(i as usize)
                );
                std::fs::write(&f, text).unwrap();
                f
            })
            .collect();
        ix.add(files, &opts, &mut |_| Ok(())).unwrap();
        let full = View::load(&dir, ix.catalog(), ix.options()).unwrap();
        let got = ix.view();
        let delta_pieces = got
            .segments
            .iter()
            .filter(|s| s.entry.id == u64::MAX)
            .count();
        max_pieces = max_pieces.max(delta_pieces);
        let published = |v: &View| -> Vec<String> {
            v.segments
                .iter()
                .filter(|s| s.entry.id != u64::MAX)
                .map(|s| s.entry.file.clone())
                .collect()
        };
        assert_eq!(
            published(got),
            published(&full),
            "round {round}: published segments"
        );
        assert_eq!(got.sizes, full.sizes, "round {round}: sizes");
        assert_eq!(got.tombstones, full.tombstones, "round {round}: tombstones");
        // The delta's pieces have their own FREQUENT tables (probe-order hints), so the
        // sums differ from the reload's one delta segment; they must be those of the pieces.
        assert_eq!(
            got.frequent.to_map(),
            got.frequent_recounted().unwrap(),
            "round {round}: frequent keys"
        );
        let in_catalog = ix.catalog().delta_docs().unwrap();
        let features: u64 = in_catalog
            .iter()
            .map(|(_, d)| d.features.len() as u64)
            .sum();
        assert_eq!(
            got.delta_size(),
            (in_catalog.len() as u64, features),
            "round {round}: delta size"
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for doc in 0..full.doc_ids() {
            assert_eq!(
                got.features_into(doc, &mut a).unwrap(),
                full.features_into(doc, &mut b).unwrap(),
                "round {round}: doc {doc} found"
            );
            assert_eq!(a, b, "round {round}: forward list of doc {doc}");
            for &key in a.iter().take(20) {
                let (mut pa, mut pb) = (Vec::new(), Vec::new());
                got.for_each_posting(key, |d| pa.push(d)).unwrap();
                full.for_each_posting(key, |d| pb.push(d)).unwrap();
                pa.sort_unstable();
                pb.sort_unstable();
                assert_eq!(pa, pb, "round {round}: postings of a key of doc {doc}");
            }
        }
        // A merge of segments (as the server runs after a fold) builds its view from this
        // one too (`View::after_relayout`): the same as a full reload.
        if round % 4 == 3 {
            ix.compact_segments(true, &ndd_index::lifecycle::MergePolicy::default())
                .unwrap();
            let full = View::load(&dir, ix.catalog(), ix.options()).unwrap();
            let got = ix.view();
            // The full reload holds the delta as one segment, the incremental view in pieces.
            let files = |v: &View| -> Vec<String> {
                let s = v.segments.iter().filter(|s| s.entry.id != u64::MAX);
                s.map(|s| s.entry.file.clone()).collect()
            };
            assert_eq!(files(got), files(&full), "round {round}: merged segments");
            assert_eq!(got.sizes, full.sizes, "round {round}: sizes after merge");
            assert_eq!(
                got.frequent.to_map(),
                got.frequent_recounted().unwrap(),
                "round {round}: frequent keys after merge"
            );
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for doc in 0..full.doc_ids() {
                assert_eq!(
                    got.features_into(doc, &mut a).unwrap(),
                    full.features_into(doc, &mut b).unwrap()
                );
                assert_eq!(a, b, "round {round}: forward list of doc {doc} after merge");
            }
        }
    }
    assert!(max_pieces > 1, "the delta was kept in pieces");

    // The writer's open takes a reader's view when it shows the catalog's state (the
    // server's lock hand-over), and loads its own when anything was published since.
    let before = Index::open(&dir).unwrap();
    let late = tmp.path().join("late");
    std::fs::create_dir_all(&late).unwrap();
    std::fs::write(
        late.join("new.txt"),
        "a page published after the reader opened",
    )
    .unwrap();
    ix.add(vec![late], &opts, &mut |_| Ok(())).unwrap();
    drop(ix);
    let now = Index::open(&dir).unwrap();
    let create = CreateOptions::default();
    let w = Index::open_writer_reusing(&dir, &create, Some(now.view())).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(w.view(), now.view()),
        "current view reused"
    );
    drop(w);
    let w = Index::open_writer_reusing(&dir, &create, Some(before.view())).unwrap();
    assert!(
        !std::sync::Arc::ptr_eq(w.view(), before.view()),
        "stale view reloaded"
    );
    let full = View::load(&dir, w.catalog(), w.options()).unwrap();
    assert_eq!(w.view().sizes, full.sizes);
    assert_eq!(w.view().tombstones, full.tombstones);
}

/// Folds every 8 inserts, so the server's background merges (`writer.rs`, merged off the
/// writer thread and published between groups) run many times: the answers while they run
/// are the CLI's pairs of the final index, the segments stay few, and `verify` is clean.
#[test]
fn background_merges_keep_answers_and_few_segments() {
    let (tmp, index, _) = indexed_pages("serve-merge", 30, 5);
    let news = tmp.path().join("news");
    let pages = write_pages(&news, "n", 150, 13);
    // The writer keeps the lock (and goes on merging) for up to a minute without requests.
    let srv = Server::start(&index, &["--fold-docs", "8", "--writer-idle", "60"]);
    for p in &pages {
        let key = p.file_name().unwrap().to_str().unwrap();
        let a = insert(srv.addr, key, &std::fs::read(p).unwrap());
        assert_eq!(a.status, 200, "{key}: {}", a.text());
    }
    // A quiet writer publishes its background merges and starts the next ones the policy
    // asks for, however slow the machine: wait for the segment count to come down.
    let gauge = |name: &str| -> u64 {
        let m = http(srv.addr, "GET", "/metrics", &[], b"").text();
        m.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {m}"))
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(50);
    while gauge("ndd_index_segments ") > 5 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut answers = Vec::new();
    for p in pages.iter().skip(1).step_by(3) {
        let key = p.file_name().unwrap().to_str().unwrap().to_owned();
        let v = query(srv.addr, &std::fs::read(p).unwrap(), "threshold=0.5&top=0");
        let got = resemblances(&v);
        answers.push((key, got));
    }
    let metrics = http(srv.addr, "GET", "/metrics", &[], b"").text();
    let counter = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    assert!(counter("ndd_merges_total ") >= 4, "{metrics}");
    assert_eq!(counter("ndd_merge_failures_total "), 0);
    assert!(srv.stop().success());
    verify_clean(&index);

    let partners = cli_partners(&index, "0.5");
    for (key, got) in &answers {
        assert_self_and_partners(key, got, &partners, key);
    }
    assert!(
        answers.iter().filter(|(_, g)| g.len() > 1).count() >= 10,
        "the pages plant partners"
    );
    // 150 inserts folded 18 times: the base segment plus popcount(18) small ones once the
    // merges are done (at most one more if one was still running), and the delta's last
    // documents.
    let stats = cli(&["stats", "--index", index.to_str().unwrap(), "--json"]);
    let v: Value = serde_json::from_slice(&stats.stdout).unwrap();
    let segs = v["segments"].as_array().unwrap().len();
    assert!(segs <= 5, "{segs} segments: {v}");
}
