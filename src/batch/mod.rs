//! What a batch of new documents shares between the two ways in (`pipeline::ingest`, a new
//! segment, and `lifecycle::add`, the RocksDB delta): the batch's name, the checks that decide
//! which documents are new (`intake`), the per-document report records and the staging of the
//! one synced catalog write that publishes it (clusters included). Both operations use this module;
//! it uses neither.

pub(crate) mod intake;
pub mod publish;
pub mod report;

use crate::error::Result;
use crate::store::Catalog;

/// A batch's name and id.
pub(crate) enum Named {
    /// A new batch.
    New { name: String, id: u32 },
    /// A batch of this name exists already (a retried call: nothing to do).
    Done { name: String, id: u32 },
}

/// Names a batch: `given`, or `<prefix>-NNNNNN` with NNNNNN the id after the last batch's
/// (found by one seek: the server adds a batch per group commit).
pub(crate) fn name(catalog: &Catalog, given: Option<&str>, prefix: &str) -> Result<Named> {
    let id = catalog.last_batch_id()?.map(|id| id + 1).unwrap_or(1);
    let name = given.map_or_else(|| format!("{prefix}-{id:06}"), str::to_string);
    Ok(match catalog.batch_by_name(&name)? {
        Some(id) => Named::Done { name, id },
        None => Named::New { name, id },
    })
}
