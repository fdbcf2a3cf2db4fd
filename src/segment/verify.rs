//! Validation of a segment: the full scan `Segment::verify` runs on demand (every block's crc
//! and structure, per-table totals, value codecs; invariants 14-18). The cheap layout checks
//! `Segment::open` runs (invariants 1-13) are `layout.rs`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use super::reader::Segment;
use super::{decode_postings, decode_u64s_version, value_kind, ValueKind};

/// One problem found by `verify`: the file, the byte offset, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub offset: u64,
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: offset {}: {}",
            self.path.display(),
            self.offset,
            self.reason
        )
    }
}

impl Problem {
    fn from_error(path: &Path, e: &Error) -> Problem {
        // The path is a field of its own, so the reason leaves it out.
        let (offset, reason) = match e {
            Error::Corrupt { offset, reason, .. } => (*offset, reason.clone()),
            Error::ChecksumMismatch {
                offset,
                stored,
                computed,
                ..
            } => (
                *offset,
                format!("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"),
            ),
            Error::BadMagic { offset, what, .. } => (*offset, format!("bad magic: not a {what}")),
            Error::UnsupportedFormatVersion {
                found, supported, ..
            } => (
                0,
                format!("unsupported format version {found} (this build reads {supported})"),
            ),
            other => (0, other.to_string()),
        };
        Problem {
            path: path.to_path_buf(),
            offset,
            reason,
        }
    }
}

/// Outcome of a full check of one segment file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub path: PathBuf,
    pub tables: usize,
    pub blocks: u64,
    pub entries: u64,
    pub bytes: u64,
    pub problems: Vec<Problem>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Segment {
    /// Opens and fully checks the file at `path`. Damage (including a failed open) is reported
    /// in `problems`; `Err` only for I/O errors such as a missing file.
    pub fn verify_file(path: impl AsRef<Path>) -> Result<VerifyReport> {
        let path = path.as_ref();
        match Segment::open(path) {
            Ok(seg) => Ok(seg.verify()),
            Err(e) if e.is_corruption() => Ok(VerifyReport {
                path: path.to_path_buf(),
                problems: vec![Problem::from_error(path, &e)],
                ..VerifyReport::default()
            }),
            Err(e) => Err(e),
        }
    }

    /// Checks every block (crc, then keys increasing and value ends in range), the per-table
    /// totals in the directory, and the values of tables with a known codec.
    pub fn verify(&self) -> VerifyReport {
        let mut report = VerifyReport {
            path: self.path.clone(),
            tables: self.tables.len(),
            bytes: self.len_bytes(),
            ..Default::default()
        };
        for t in &self.tables {
            let (mut entries, mut value_bytes) = (0u64, 0u64);
            let mut all_read = true;
            for bi in 0..t.blocks.len() {
                report.blocks += 1;
                let view = match self.block(t, bi) {
                    Ok(v) => v,
                    Err(e) => {
                        report.problems.push(Problem::from_error(&self.path, &e));
                        all_read = false;
                        continue;
                    }
                };
                entries += view.len() as u64;
                for i in 0..view.len() {
                    // A validated block always has its values in range.
                    let Some(v) = view.value(i) else { continue };
                    value_bytes += v.len() as u64;
                    if let Some(e) = check_value(t.meta.id, v, self.version) {
                        let mut p = Problem::from_error(&self.path, &self.rebase(e, v));
                        p.reason = format!("table {} key {}: {}", t.meta.id, view.key(i), p.reason);
                        report.problems.push(p);
                    }
                }
            }
            report.entries += entries;
            // Totals are only comparable when every block could be read.
            if all_read && (entries != t.meta.entries || value_bytes != t.meta.value_bytes) {
                report.problems.push(Problem {
                    path: self.path.clone(),
                    offset: t.blocks.first().map_or(0, |b| b.offset),
                    reason: format!(
                        "table {}: blocks hold {entries} entries / {value_bytes} value bytes, directory says {} / {}",
                        t.meta.id, t.meta.entries, t.meta.value_bytes
                    ),
                });
            }
        }
        self.verify_key_filters(&mut report);
        self.verify_ranks(&mut report);
        report
    }

    /// Format 3: table `POSTINGS_RANKS` matches the POSTINGS blocks and every FORWARD list's
    /// ranks name POSTINGS keys (each list is mapped to its keys, as readers do).
    fn verify_ranks(&self, report: &mut VerifyReport) {
        if !self.ranked_forward() {
            return;
        }
        let mut keys = Vec::new();
        for e in self.iter(super::FORWARD) {
            let Ok((doc, v)) = e else {
                continue; // the block was reported above
            };
            keys.clear();
            if let Err(e) = self.decode_forward_into(v, &mut keys) {
                let mut p = Problem::from_error(&self.path, &e);
                p.reason = format!("table {} key {doc}: {}", super::FORWARD, p.reason);
                report.problems.push(p);
                if keys.is_empty() && self.table(super::POSTINGS_RANKS).is_none() {
                    break; // one report for a missing rank table is enough
                }
            }
        }
    }

    /// The POSTINGS key filters (table `POSTINGS_FILTER`, if present): one per POSTINGS block,
    /// each a well-formed filter (or empty) that admits every key of its block.
    fn verify_key_filters(&self, report: &mut VerifyReport) {
        if !self.contains_table(super::POSTINGS_FILTER) {
            return;
        }
        let problem = |offset: u64, reason: String| Problem {
            path: self.path.clone(),
            offset,
            reason,
        };
        if let Err(e) = self.postings_may_contain(0, 0) {
            report.problems.push(Problem::from_error(&self.path, &e));
            return;
        }
        let Some(t) = self.table(super::POSTINGS) else {
            return;
        };
        for bi in 0..t.blocks.len() {
            let Ok(view) = self.block(t, bi) else {
                continue; // reported above with the block
            };
            for i in 0..view.len() {
                let k = view.key(i);
                if !matches!(self.postings_may_contain(bi, k), Ok(true)) {
                    report.problems.push(problem(
                        t.blocks[bi].offset,
                        format!("table 4: the key filter of POSTINGS block {bi} misses key {k}"),
                    ));
                    break;
                }
            }
        }
    }
}

/// Codec check of one value, by table kind.
fn check_value(table: u32, v: &[u8], version: u32) -> Option<Error> {
    match value_kind(table) {
        ValueKind::Postings => decode_postings(v).err(),
        ValueKind::U64s => match decode_u64s_version(v, version) {
            Err(e) => Some(e),
            Ok(s) if !s.is_strictly_increasing() => Some(super::postings::bad_value(
                0,
                "feature hashes do not increase",
            )),
            Ok(_) => None,
        },
        ValueKind::Opaque => None,
    }
}
