//! The `serve` subcommand: the HTTP server of `ndd_index::server` on an existing index.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use ndd_index::server::{self, ServeConfig};
use ndd_index::Error;

#[derive(Args)]
pub struct ServeArgs {
    /// The index directory (it must exist: create it with `ingest`).
    #[arg(long, value_name = "DIR")]
    index: PathBuf,
    /// Address to listen on (port 0: a free port, printed on stdout). A non-loopback address
    /// refuses writes unless --token-file is given.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// File holding the bearer token that writes must send (`Authorization: Bearer TOKEN`).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Worker threads (default: the number of cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    threads: Option<u32>,
    /// Largest request body, e.g. 8MiB.
    #[arg(long, value_name = "SIZE", value_parser = ndd_index::ops::parse_size, default_value = "8MiB")]
    max_body: u64,
    /// Seconds a client has to send a request's headers (slow clients are disconnected).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    header_timeout: f64,
    /// Seconds a whole request may take (then 408).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    request_timeout: f64,
    /// Seconds a write waits while another process holds the writer lock (then 503 with
    /// Retry-After).
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    write_wait: f64,
    /// Seconds without writes after which the writer lock is given back (so a nightly ingest
    /// can run).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    writer_idle: f64,
    /// Most documents applied in one group commit.
    #[arg(long, value_name = "N", default_value_t = 512)]
    max_group: usize,
    /// Milliseconds a small group commit waits for more inserts while the previous group's
    /// WAL sync is in flight (0: none).
    #[arg(long, value_name = "MS", default_value_t = 2.0)]
    group_linger_ms: f64,
    /// Fold the delta into a segment once it holds N documents.
    #[arg(long, value_name = "N", default_value_t = ndd_index::lifecycle::add::DEFAULT_FOLD_DOCS)]
    fold_docs: u64,
}

fn secs(name: &str, v: f64) -> Result<Duration, Error> {
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(Error::InvalidArgument(format!(
            "--{name} must be between 0 and 86400 seconds, got {v}"
        )))
    }
}

pub fn serve(a: ServeArgs) -> Result<(), Error> {
    let mut cfg = ServeConfig::new(a.index);
    cfg.listen = a.listen;
    if let Some(p) = &a.token_file {
        let t = std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?;
        let t = t.trim().to_owned();
        if t.len() < 16 {
            return Err(Error::InvalidArgument(format!(
                "the token in {} is shorter than 16 characters",
                p.display()
            )));
        }
        cfg.token = Some(t);
    }
    if let Some(n) = a.threads {
        cfg.threads = n as usize;
    }
    cfg.max_body = a.max_body as usize;
    cfg.header_timeout = secs("header-timeout", a.header_timeout)?;
    cfg.request_timeout = secs("request-timeout", a.request_timeout)?;
    cfg.write_wait = secs("write-wait", a.write_wait)?;
    cfg.writer_idle = secs("writer-idle", a.writer_idle)?;
    cfg.max_group_docs = a.max_group.max(1);
    if !(a.group_linger_ms.is_finite() && (0.0..=1000.0).contains(&a.group_linger_ms)) {
        return Err(Error::InvalidArgument(format!(
            "--group-linger-ms must be between 0 and 1000, got {}",
            a.group_linger_ms
        )));
    }
    cfg.group_linger = Duration::from_secs_f64(a.group_linger_ms / 1000.0);
    cfg.fold_docs = a.fold_docs.max(1);
    let writes = match (&cfg.token, cfg.listen.ip().is_loopback()) {
        (Some(_), _) => "writes need the bearer token",
        (None, true) => "writes open (loopback)",
        (None, false) => "writes refused (non-loopback address without --token-file)",
    };
    server::run(cfg, |addr| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "ndd-index serve: listening on http://{addr} ({writes})"
        );
        let _ = out.flush();
    })
}
