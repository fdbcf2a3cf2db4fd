//! The one error type of the engine. Every variant names the file or document it is about.

use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the engine.
///
/// Corruption is reported with structured variants (`BadMagic`, `ChecksumMismatch`, ...) so a
/// caller (and `ndd-index verify`) can say which file and offset is damaged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error on a named file or directory.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file of ours does not start (or end) with the expected magic bytes.
    #[error("{}: bad magic at offset {offset}: not a {what}", path.display())]
    BadMagic {
        path: PathBuf,
        offset: u64,
        what: &'static str,
    },
    /// A file of ours was written by a format version this build cannot read.
    #[error("{}: unsupported format version {found} (this build reads {supported})", path.display())]
    UnsupportedFormatVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// A checksummed region does not match its stored crc32.
    #[error("{}: checksum mismatch at offset {offset} (stored {stored:#010x}, computed {computed:#010x})", path.display())]
    ChecksumMismatch {
        path: PathBuf,
        offset: u64,
        stored: u32,
        computed: u32,
    },
    /// Structurally invalid bytes (bad length, keys out of order, ...).
    #[error("{}: corrupt at offset {offset}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// A value stored in RocksDB could not be decoded.
    #[error("corrupt catalog entry {what}: {reason}")]
    CorruptEntry { what: String, reason: String },
    /// An error reported by RocksDB.
    #[error("RocksDB at {}: {message}", path.display())]
    Db { path: PathBuf, message: String },
    /// Another process holds the index's writer lock.
    #[error("index {} is locked by another writer ({holder})", path.display())]
    Locked { path: PathBuf, holder: String },
    /// The directory is not an index (and the operation does not create one).
    #[error("{} is not an ndd-index index (no catalog found)", path.display())]
    NotAnIndex { path: PathBuf },
    /// A creation option given on the command line disagrees with the stored one.
    #[error("index {} was created with {option}={stored}; cannot use {option}={given}", path.display())]
    OptionConflict {
        path: PathBuf,
        option: &'static str,
        stored: String,
        given: String,
    },
    /// One document could not be read or canonicalized.
    #[error("document {key}: {reason}")]
    Document { key: String, reason: String },
    /// `verify` found problems (each was reported on its own); CLI exit code 5.
    #[error("verify found {problems} problem(s) in index {}", path.display())]
    VerifyFailed { path: PathBuf, problems: usize },
    /// A bad argument or option value.
    #[error("{0}")]
    InvalidArgument(String),
    /// A malformed line of an input file read whole (a TREC run or qrels file): nothing was
    /// computed or written from it.
    #[error("{}:{line}: {reason}", path.display())]
    BadLine {
        path: PathBuf,
        line: u64,
        reason: String,
    },
}

impl Error {
    /// Wraps an `io::Error` with the path it is about.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A `Corrupt` error at `offset` of `path`.
    pub fn corrupt(path: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            path: path.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// True for the variants that mean stored bytes are damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::BadMagic { .. }
                | Error::UnsupportedFormatVersion { .. }
                | Error::ChecksumMismatch { .. }
                | Error::Corrupt { .. }
                | Error::CorruptEntry { .. }
        )
    }
}

/// Extension to attach a path to `io::Result`s: `file.read(..).at(&path)?`.
pub trait IoResultExt<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoResultExt<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}
