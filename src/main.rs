//! `ndd-index`: the command-line front end. It parses arguments, calls one whole operation of
//! the library (`ndd_index::ops`, methods of `Index`) and prints; the subcommands live in
//! `src/cli/`, one file each.
//!
//! Exit codes: 0 success (an ingest may still have rejected single documents: see its
//! summary); 1 the operation failed and changed nothing; 2 bad usage; 4 another writer holds
//! the index; 5 `verify` found problems. A closed stdout (e.g. `| head`) ends the command quietly with 0.

use std::io;
use std::process::ExitCode;

mod cli;

use clap::{Parser, Subcommand};
use ndd_index::Error;

#[derive(Parser)]
#[command(name = "ndd-index", version, about = "Persistent near-duplicate document index", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

const EXIT_CODES: &str = "Exit codes: 0 success, 1 failure (nothing changed), 2 usage error, 4 index locked by another writer, 5 verify found problems.";

#[derive(Subcommand)]
enum Cmd {
    /// Ingest one batch of documents (creating the index if absent).
    Ingest(cli::ingest::IngestArgs),
    /// Add documents online (into the delta; no external sort): visible at once.
    Add(cli::add::AddArgs),
    /// Publish a staged corpus (the Spark job's --index STAGING) as one batch, atomically.
    Adopt(cli::adopt::AdoptArgs),
    /// Near-duplicates of the given documents (they are not added).
    Query(cli::query::QueryArgs),
    /// Every pair of indexed documents with resemblance >= T: key_a<TAB>key_b<TAB>resemblance.
    Pairs(cli::pairs::PairsArgs),
    /// Duplicate clusters: cluster_id<TAB>key lines.
    Clusters(cli::clusters::ClustersArgs),
    /// Documents, batches, segments and bytes of an index.
    Stats(cli::stats::StatsArgs),
    /// Delete documents (by key, batch or age): gone from every answer at once.
    Delete(cli::lifecycle::DeleteArgs),
    /// Merge segments (the tiered policy, or --full), dropping deleted documents.
    Compact(cli::lifecycle::CompactArgs),
    /// Check every checksum and the catalog against the segments; exit 5 on any problem.
    Verify(cli::lifecycle::VerifyArgs),
    /// Precision, recall and F1 of each method against a truth file (pairs or labels).
    Eval(cli::eval::EvalArgs),
    /// Smallest adaptive sampling ratio per size group reaching a precision target.
    Tune(cli::eval::TuneArgs),
    /// Serve queries and online inserts over HTTP from an index kept open.
    Serve(cli::serve::ServeArgs),
    /// Near-duplicates in TREC runs: per topic, per run and top n, against qrels.
    Runs(cli::runs::RunsArgs),
    /// Draw charts described in JSON (a figure: line and bar charts) as one SVG file.
    Plot(cli::plot::PlotArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Ingest(a) => cli::ingest::run(a),
        Cmd::Add(a) => cli::add::run(a),
        Cmd::Adopt(a) => cli::adopt::run(a),
        Cmd::Query(a) => cli::query::run(a),
        Cmd::Pairs(a) => cli::pairs::run(a),
        Cmd::Clusters(a) => cli::clusters::run(a),
        Cmd::Stats(a) => cli::stats::run(a),
        Cmd::Delete(a) => cli::lifecycle::delete(a),
        Cmd::Compact(a) => cli::lifecycle::compact(a),
        Cmd::Verify(a) => cli::lifecycle::verify(a),
        Cmd::Eval(a) => cli::eval::run(a),
        Cmd::Tune(a) => cli::eval::tune(a),
        Cmd::Serve(a) => cli::serve::serve(a),
        Cmd::Runs(a) => cli::runs::runs(a),
        Cmd::Plot(a) => cli::plot::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ndd-index: error: {e}");
            match e {
                Error::Locked { .. } => ExitCode::from(4),
                Error::VerifyFailed { .. } => ExitCode::from(5),
                Error::InvalidArgument(_) | Error::OptionConflict { .. } => ExitCode::from(2),
                _ => ExitCode::from(1),
            }
        }
    }
}
