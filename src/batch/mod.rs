//! What a batch of new documents shares between the two ways in (`pipeline::ingest`, a new
//! segment, and `lifecycle::add`, the RocksDB delta): the per-document report records and the
//! staging of the one synced catalog write that publishes it. Both operations use this module;
//! it uses neither.

pub mod publish;
pub mod report;
