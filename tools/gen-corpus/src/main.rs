//! ndd-gen: a seeded, deterministic generator of web-like HTML corpora with planted
//! near-duplicate clusters and their truth, for testing and benchmarking ndd-index.
//!
//! See tools/README.md for what is generated and the truth format. Module map:
//! rng (PRNG streams), vocab (word forms, Zipf), plan (clusters, batches, keys),
//! doc (words and word-level edits), html (sites and markup), warc (WARC records),
//! output (parallel driver, truth), json (gen.json), args (CLI).

mod args;
mod doc;
mod html;
mod json;
mod output;
mod plan;
mod rng;
mod vocab;
mod warc;

#[cfg(test)]
mod e2e_tests;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let params = match args::parse(&argv) {
        Ok(Some(p)) => p,
        Ok(None) => {
            print!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ndd-gen: {e}");
            return ExitCode::from(2);
        }
    };
    match output::generate(&params) {
        Ok(report) => {
            if !params.quiet {
                let bytes = report.bytes_written();
                let docs: u64 = report.batches.iter().map(|b| b.docs as u64).sum();
                eprintln!(
                    "ndd-gen: wrote {docs} docs, {:.1} MB in {:.2}s ({:.1} MB/s) to {}",
                    bytes as f64 / 1e6,
                    report.seconds,
                    bytes as f64 / 1e6 / report.seconds.max(1e-9),
                    params.out.display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ndd-gen: {e}");
            ExitCode::FAILURE
        }
    }
}
