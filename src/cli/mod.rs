//! The subcommands of the CLI, one file each. A handler parses nothing itself (clap did),
//! calls one whole operation of `ndd_index::Index` (`ndd_index::ops`) and prints its result.

pub mod add;
pub mod adopt;
pub mod clusters;
pub mod eval;
pub mod ingest;
pub mod lifecycle;
pub mod pairs;
pub mod plot;
pub mod query;
pub mod runs;
pub mod serve;
pub mod stats;

use std::io::{self, BufWriter, StdoutLock, Write};
use std::path::PathBuf;

use clap::Args;
use ndd_index::Error;

/// `--index DIR` and `--json`, shared by every subcommand.
#[derive(Args)]
pub struct IndexArg {
    /// The index directory.
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    /// Machine-readable JSON output.
    #[arg(long)]
    pub json: bool,
}

/// Buffered stdout whose write errors become `Error::Io` on `<stdout>` (a closed pipe ends
/// the command quietly: see `main`).
pub struct Out(BufWriter<StdoutLock<'static>>);

impl Out {
    pub fn new() -> Self {
        Out(BufWriter::with_capacity(1 << 16, io::stdout().lock()))
    }

    /// One line of text.
    pub fn line(&mut self, s: impl std::fmt::Display) -> Result<(), Error> {
        writeln!(self.0, "{s}").map_err(stdout_err)
    }

    /// One JSON line.
    pub fn json(&mut self, v: &impl serde::Serialize) -> Result<(), Error> {
        let s = serde_json::to_string(v).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        self.line(s)
    }

    /// Pretty-printed JSON.
    pub fn json_pretty(&mut self, v: &impl serde::Serialize) -> Result<(), Error> {
        let s =
            serde_json::to_string_pretty(v).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        self.line(s)
    }

    pub fn flush(&mut self) -> Result<(), Error> {
        self.0.flush().map_err(stdout_err)
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.0.flush();
    }
}

pub fn stdout_err(e: io::Error) -> Error {
    Error::io("<stdout>", e)
}

/// clap's parser for `--mem`-like sizes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    ndd_index::ops::parse_size(s)
}

/// The tiered merge policy, its largest merged segment set by `--max-segment` when given.
pub fn merge_policy(max_segment: Option<u64>) -> ndd_index::lifecycle::MergePolicy {
    let mut p = ndd_index::lifecycle::MergePolicy::default();
    if let Some(m) = max_segment {
        p.max_merged_bytes = m;
    }
    p
}

/// The JSONL field options shared by `ingest` and `add`.
#[derive(Args)]
pub struct InputArgs {
    /// JSONL field holding the document id.
    #[arg(long, default_value = "id")]
    pub jsonl_id: String,
    /// JSONL field holding plain text.
    #[arg(long, default_value = "text")]
    pub jsonl_text: String,
    /// JSONL field holding HTML (preferred over the text field when present).
    #[arg(long, default_value = "html")]
    pub jsonl_html: String,
    /// JSONL field holding the document's URL (its host is the document's site).
    #[arg(long, default_value = "url")]
    pub jsonl_url: String,
    /// Documents larger than this are rejected (reported, not indexed).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256MiB")]
    pub max_doc_bytes: u64,
}

impl InputArgs {
    pub fn options(self) -> ndd_index::input::InputOptions {
        ndd_index::input::InputOptions {
            jsonl_id_field: self.jsonl_id,
            jsonl_text_field: self.jsonl_text,
            jsonl_html_field: self.jsonl_html,
            jsonl_url_field: self.jsonl_url,
            max_doc_bytes: self.max_doc_bytes,
        }
    }
}
