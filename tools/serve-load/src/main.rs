//! `serve-load`: a closed-loop load generator for `ndd-index serve`.
//!
//! N client threads, each with one keep-alive HTTP/1.1 connection, send requests back to back
//! (query, check-and-insert, or batches of inserts) with pages read from a directory, until
//! the request budget or the time budget is spent. It prints client-side latency percentiles,
//! the server-side `took_us` percentiles (queries and single inserts) and the throughput.
//!
//! Safety bounds: it only talks to loopback addresses, at most 10,000,000 requests and 3,600
//! seconds per run, at most 256 clients.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USAGE: &str = "\
serve-load --addr 127.0.0.1:PORT --docs DIR|FILE.warc [--mode query|insert|batch] [--clients N=8]
           [--requests N=10000] [--seconds S=30] [--batch-size B=100] [--key-prefix P=load-]
           [--token-file F] [--query-args 'threshold=0.5&top=10'] [--max-docs N=20000]
           [--acked FILE] [--stop-file FILE] [--json]
  query:  POST /v1/query with page i (cycling through DIR)
  insert: POST /v1/documents?key=PREFIX<client>-<i>, one page per request
  batch:  POST /v1/documents:batch with B pages per request (JSON lines)
  --docs FILE.warc: the pages of the WARC's response records (a truncated last record is left out)
  --stop-file FILE: also stop once FILE exists (e.g. written when another process's ingest ends)
  --acked FILE: append the key of every insert answered 2xx (the durability check)
  Loopback only; at most 10,000,000 requests and 3,600 seconds.
";

#[derive(Clone)]
struct Opts {
    addr: SocketAddr,
    docs: PathBuf,
    mode: String,
    clients: usize,
    requests: u64,
    seconds: f64,
    batch: usize,
    prefix: String,
    token: Option<String>,
    query_args: String,
    max_docs: usize,
    acked: Option<PathBuf>,
    stop_file: Option<PathBuf>,
    json: bool,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        addr: "127.0.0.1:7878".parse().unwrap(),
        docs: PathBuf::new(),
        mode: "query".into(),
        clients: 8,
        requests: 10_000,
        seconds: 30.0,
        batch: 100,
        prefix: "load-".into(),
        token: None,
        query_args: String::new(),
        max_docs: 20_000,
        acked: None,
        stop_file: None,
        json: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--addr" => o.addr = val()?.parse().map_err(|e| format!("--addr: {e}"))?,
            "--docs" => o.docs = PathBuf::from(val()?),
            "--mode" => o.mode = val()?,
            "--clients" => o.clients = val()?.parse().map_err(|e| format!("--clients: {e}"))?,
            "--requests" => o.requests = val()?.parse().map_err(|e| format!("--requests: {e}"))?,
            "--seconds" => o.seconds = val()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--batch-size" => o.batch = val()?.parse().map_err(|e| format!("--batch-size: {e}"))?,
            "--key-prefix" => o.prefix = val()?,
            "--token-file" => {
                let p = val()?;
                let t = std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
                o.token = Some(t.trim().to_owned());
            }
            "--query-args" => o.query_args = val()?,
            "--max-docs" => o.max_docs = val()?.parse().map_err(|e| format!("--max-docs: {e}"))?,
            "--acked" => o.acked = Some(PathBuf::from(val()?)),
            "--stop-file" => o.stop_file = Some(PathBuf::from(val()?)),
            "--json" => o.json = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if !o.addr.ip().is_loopback() {
        return Err(format!(
            "{} is not a loopback address: serve-load only loads loopback",
            o.addr
        ));
    }
    if !["query", "insert", "batch"].contains(&o.mode.as_str()) {
        return Err(format!("unknown --mode {:?}", o.mode));
    }
    if o.docs.as_os_str().is_empty() {
        return Err("--docs DIR is required".into());
    }
    if o.clients == 0 || o.clients > 256 {
        return Err("--clients must be 1..=256".into());
    }
    if o.requests == 0 || o.requests > 10_000_000 {
        return Err("--requests must be 1..=10000000".into());
    }
    if !(o.seconds > 0.0 && o.seconds <= 3600.0) {
        return Err("--seconds must be in (0, 3600]".into());
    }
    if o.batch == 0 || o.batch > 10_000 {
        return Err("--batch-size must be 1..=10000".into());
    }
    Ok(o)
}

/// The end of a header block (`\r\n\r\n`, or `\n\n`) from `from`: (block end, body start).
fn head_end(b: &[u8], from: usize) -> Option<(usize, usize)> {
    let rest = b.get(from..)?;
    if let Some(i) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
        return Some((from + i, from + i + 4));
    }
    rest.windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (from + i, from + i + 2))
}

/// The HTML bodies of a WARC file's `response` records, at most `max`. A record cut short at
/// the end of the file (a WARC truncated with `head -c`) is left out.
fn load_warc(path: &Path, max: usize) -> Result<Vec<Vec<u8>>, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    let mut pos = 0usize;
    while out.len() < max {
        let Some(start) = b[pos..]
            .windows(8)
            .position(|w| w == b"WARC/1.0")
            .map(|i| pos + i)
        else {
            break;
        };
        let Some((hend, body)) = head_end(&b, start) else {
            break;
        };
        let head = String::from_utf8_lossy(&b[start..hend]);
        let field = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_owned())
            })
        };
        let len: usize = field("Content-Length")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                format!(
                    "{}: WARC record at byte {start} without Content-Length",
                    path.display()
                )
            })?;
        if body + len > b.len() {
            break; // cut short
        }
        let content = &b[body..body + len];
        if field("WARC-Type").as_deref() == Some("response") {
            // Skip the HTTP status line and headers.
            if let Some((_, page)) = head_end(content, 0) {
                if page < content.len() {
                    out.push(content[page..].to_vec());
                }
            }
        }
        pos = body + len;
    }
    if out.is_empty() {
        return Err(format!("no response records in {}", path.display()));
    }
    Ok(out)
}

/// Pages under `dir` (recursively, sorted), at most `max`; or the pages of a WARC file.
fn load_docs(dir: &Path, max: usize) -> Result<Vec<Vec<u8>>, String> {
    if dir.is_file() {
        return load_warc(dir, max);
    }
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.is_file() {
                files.push(p);
            }
        }
    }
    files.sort();
    files.truncate(max);
    let docs: Vec<Vec<u8>> = files
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| !b.is_empty())
        .collect();
    if docs.is_empty() {
        return Err(format!("no pages under {}", dir.display()));
    }
    Ok(docs)
}

struct Conn {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    /// One request; returns (status, body). Reconnects once when the server closed the
    /// keep-alive connection.
    fn request(&mut self, head: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        for attempt in 0..2 {
            if self.stream.is_none() {
                let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5))?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(Duration::from_secs(120)))?;
                self.stream = Some(BufReader::new(s));
            }
            let r = self.try_request(head, body);
            match r {
                Ok(x) => return Ok(x),
                Err(e) if attempt == 0 => {
                    let _ = e;
                    self.stream = None;
                }
                Err(e) => {
                    self.stream = None;
                    return Err(e);
                }
            }
        }
        unreachable!()
    }

    fn try_request(&mut self, head: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let s = self.stream.as_mut().expect("connected");
        let mut msg = Vec::with_capacity(head.len() + body.len() + 64);
        msg.extend_from_slice(head.as_bytes());
        msg.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        msg.extend_from_slice(body);
        s.get_mut().write_all(&msg)?;
        let mut line = String::new();
        if s.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed",
            ));
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut len = None;
        let mut close = false;
        loop {
            line.clear();
            s.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse::<usize>().ok();
                } else if k.eq_ignore_ascii_case("connection")
                    && v.trim().eq_ignore_ascii_case("close")
                {
                    close = true;
                }
            }
        }
        let len = len.ok_or_else(|| std::io::Error::other("answer without Content-Length"))?;
        let mut buf = vec![0u8; len];
        s.read_exact(&mut buf)?;
        if close {
            self.stream = None;
        }
        Ok((status, buf))
    }
}

/// The `"took_us":N` of a JSON answer.
fn took_us(body: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(body).ok()?;
    let i = s.rfind("\"took_us\":")? + 10;
    s[i..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()
}

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number for the JSON line (`null` when there was nothing to measure).
fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "null".into()
    }
}

fn pct(v: &mut [u64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i] as f64 / 1000.0
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("serve-load: {e}");
            }
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let docs = match load_docs(&o.docs, o.max_docs) {
        Ok(d) => Arc::new(d),
        Err(e) => {
            eprintln!("serve-load: {e}");
            return ExitCode::from(2);
        }
    };
    let acked = o.acked.as_ref().map(|p| {
        Arc::new(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .expect("--acked file"),
        ))
    });
    let issued = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(o.seconds);
    let mut handles = Vec::new();
    for c in 0..o.clients {
        let o = o.clone();
        let docs = Arc::clone(&docs);
        let issued = Arc::clone(&issued);
        let acked = acked.clone();
        handles.push(std::thread::spawn(move || {
            let mut conn = Conn { addr: o.addr, stream: None };
            let auth = o.token.as_ref().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
            let (mut lat, mut took, mut ok, mut bad, mut failed, mut docs_sent) = (Vec::new(), Vec::new(), 0u64, 0u64, 0u64, 0u64);
            let mut statuses: std::collections::BTreeMap<u16, u64> = Default::default();
            let mut j = 0u64;
            while Instant::now() < deadline {
                if j.is_multiple_of(16) && o.stop_file.as_ref().is_some_and(|f| f.exists()) {
                    break;
                }
                let i = issued.fetch_add(1, Ordering::Relaxed);
                if i >= o.requests {
                    break;
                }
                let (head, body, n, key) = match o.mode.as_str() {
                    "query" => {
                        let d = &docs[(i as usize) % docs.len()];
                        let q = if o.query_args.is_empty() { String::new() } else { format!("?{}", o.query_args) };
                        (format!("POST /v1/query{q} HTTP/1.1\r\nHost: load\r\nContent-Type: text/html\r\n"), d.clone(), 1, None)
                    }
                    "insert" => {
                        let d = &docs[(i as usize) % docs.len()];
                        let key = format!("{}{c}-{j}", o.prefix);
                        let q = if o.query_args.is_empty() { String::new() } else { format!("&{}", o.query_args) };
                        (format!("POST /v1/documents?key={key}{q} HTTP/1.1\r\nHost: load\r\nContent-Type: text/html\r\n{auth}"), d.clone(), 1, Some(vec![key]))
                    }
                    _ => {
                        let mut body = String::new();
                        let mut keys = Vec::new();
                        for b in 0..o.batch {
                            let d = &docs[((i as usize) * o.batch + b) % docs.len()];
                            let key = format!("{}{c}-{j}-{b}", o.prefix);
                            body.push_str("{\"key\":");
                            json_string(&key, &mut body);
                            body.push_str(",\"html\":");
                            json_string(&String::from_utf8_lossy(d), &mut body);
                            body.push_str("}\n");
                            keys.push(key);
                        }
                        (format!("POST /v1/documents:batch HTTP/1.1\r\nHost: load\r\nContent-Type: application/x-ndjson\r\n{auth}"), body.into_bytes(), o.batch as u64, Some(keys))
                    }
                };
                j += 1;
                let t = Instant::now();
                match conn.request(&head, &body) {
                    Ok((status, resp)) => {
                        lat.push(t.elapsed().as_micros() as u64);
                        *statuses.entry(status).or_default() += 1;
                        if (200..300).contains(&status) {
                            ok += 1;
                            docs_sent += n;
                            if let Some(us) = took_us(&resp) {
                                took.push(us);
                            }
                            if let (Some(f), Some(keys)) = (&acked, key) {
                                let mut f = f.lock().unwrap();
                                for k in keys {
                                    let _ = writeln!(f, "{k}");
                                }
                            }
                        } else {
                            bad += 1;
                        }
                    }
                    Err(_) => failed += 1,
                }
            }
            (lat, took, ok, bad, failed, docs_sent, statuses)
        }));
    }
    let (mut lat, mut took) = (Vec::new(), Vec::new());
    let (mut ok, mut bad, mut failed, mut docs_ok) = (0, 0, 0, 0);
    let mut statuses: std::collections::BTreeMap<u16, u64> = Default::default();
    for h in handles {
        let (l, t, a, b, f, d, s) = h.join().expect("client thread");
        lat.extend(l);
        took.extend(t);
        ok += a;
        bad += b;
        failed += f;
        docs_ok += d;
        for (k, v) in s {
            *statuses.entry(k).or_default() += v;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let statuses: Vec<String> = statuses
        .iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    let line = format!(
        "{{\"mode\":\"{}\",\"clients\":{},\"seconds\":{:.3},\"ok\":{ok},\"http_errors\":{bad},\"failed\":{failed},\
\"requests_per_s\":{:.1},\"docs_per_s\":{:.1},\"client_ms\":{{\"p50\":{:.3},\"p90\":{:.3},\"p99\":{:.3},\"max\":{:.3}}},\
\"server_ms\":{{\"p50\":{},\"p99\":{}}},\"statuses\":{{{}}}}}",
        o.mode,
        o.clients,
        secs,
        (ok + bad) as f64 / secs,
        docs_ok as f64 / secs,
        pct(&mut lat, 0.5),
        pct(&mut lat, 0.9),
        pct(&mut lat, 0.99),
        pct(&mut lat, 1.0),
        json_num(pct(&mut took, 0.5)),
        json_num(pct(&mut took, 0.99)),
        statuses.join(",")
    );
    if o.json {
        println!("{line}");
    } else {
        println!(
            "{} x{}: {} ok, {} HTTP errors, {} failed in {:.1} s: {:.0} requests/s, {:.0} docs/s\n\
             client latency ms: p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}\n\
             server took ms:    p50 {:.3}  p99 {:.3}",
            o.mode,
            o.clients,
            ok,
            bad,
            failed,
            secs,
            (ok + bad) as f64 / secs,
            docs_ok as f64 / secs,
            pct(&mut lat, 0.5),
            pct(&mut lat, 0.9),
            pct(&mut lat, 0.99),
            pct(&mut lat, 1.0),
            pct(&mut took, 0.5),
            pct(&mut took, 0.99)
        );
        println!("{line}");
    }
    if failed > 0 && ok == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
