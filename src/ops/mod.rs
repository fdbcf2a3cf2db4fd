//! Operations: the whole-operation API of [`Index`] that every front end calls (the CLI, the
//! Python package, the server). Each operation takes a plain request value, does all the
//! choosing (matching, memory budget, commonality limit, key lookups), and hands back typed,
//! keyed results, streamed where they can be large. Front ends only parse, call and print.
//!
//! | operation                 | returns                                   |
//! |---------------------------|-------------------------------------------|
//! | [`Index::ingest`], [`Index::add`] (from [`Source`]), [`Index::add_docs`] (from [`AddDoc`]s) | summary + one report per document |
//! | [`Index::pairs`]          | [`KeyedPair`]s, CLI order                 |
//! | [`Index::clusters`]       | [`ClusterOut`]s                           |
//! | [`Index::query`]          | [`QueryResult`]                           |
//! | [`Index::query_to_insert`] | [`QueryResult`] + the page as a [`PreparedDoc`] for `add_docs` |
//! | [`Index::document`], [`Index::cluster_members`] | catalog facts by key / cluster |
//! | [`Index::compact_after_ingest`] | the policy merge after a batch      |

pub mod background;
mod clusters;
mod create;
mod docs;
mod pairs;
mod query;
#[cfg(test)]
mod stored_pairs_tests;
#[cfg(test)]
mod tests;

pub use crate::input::Source;
pub use crate::lifecycle::add::AddDoc;
pub use crate::query::PreparedDoc;
pub use clusters::{ClusterOut, ClustersRequest};
pub use create::CreateSpec;
pub use docs::DocInfo;
pub use pairs::{KeyedPair, PairsRequest};
pub use query::{QueryRequest, QueryResult};

use crate::error::Result;
use crate::index::Index;
use crate::lifecycle::{CompactSummary, MergePolicy};

impl Index {
    /// The cheap merge-policy check after a batch, and a merge when it says so (what
    /// `ndd-index ingest` does after publishing). `Ok(None)`: nothing merged.
    pub fn compact_after_ingest(&mut self) -> Result<Option<CompactSummary>> {
        self.compact_after_ingest_with(&MergePolicy::default())
    }

    /// [`Index::compact_after_ingest`] under `policy` (e.g. a smaller
    /// [`MergePolicy::max_merged_bytes`]: `ingest --max-segment`).
    pub fn compact_after_ingest_with(
        &mut self,
        policy: &MergePolicy,
    ) -> Result<Option<CompactSummary>> {
        let s = self.compact(false, policy)?;
        Ok(if s.merged.is_empty() { None } else { Some(s) })
    }
}

/// The default memory budget of sorts and joins ([`crate::sort::default_mem`]).
pub use crate::sort::default_mem;

/// Parses sizes like `512MiB`, `2G`, `100m`, `65536` (at least 1 MiB).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid size {s:?} (e.g. 512MiB, 2GiB)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("invalid size unit in {s:?} (use KiB, MiB, GiB)")),
    };
    let v = (n * mult as f64) as u64;
    if v < (1 << 20) {
        return Err(format!("size {s:?} is below the 1 MiB minimum"));
    }
    Ok(v)
}

/// The commonality limit of a run: the index's unless overridden (`Some(0)` = none).
pub(crate) fn run_max_df(index: &Index, over: Option<u32>) -> Option<u32> {
    match over {
        None => index.options().max_df,
        Some(0) => None,
        Some(n) => Some(n),
    }
}
