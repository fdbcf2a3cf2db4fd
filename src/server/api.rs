//! The whole-operation API the server calls (`crate::ops`), in one place.

pub use crate::ops::{AddDoc, PreparedDoc, QueryRequest, QueryResult};
