//! Validation of a segment: the cheap layout checks `Segment::open` runs (header, footer,
//! directory, block indexes; invariants 1-13 of format-spec/segment.md), and the full scan
//! `Segment::verify` runs on demand (every block's crc and structure, per-table totals, value
//! codecs; invariants 14-18).

use std::fmt;
use std::path::{Path, PathBuf};

use byteorder::{ByteOrder, LittleEndian as LE};

use crate::error::{Error, Result};

use super::block::block_len;
use super::format::*;
use super::reader::{Segment, Table};
use super::writer::table_meta;
use super::{decode_postings, decode_u64s_version, value_kind, ValueKind};

fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
    Error::corrupt(path, offset, reason)
}

/// Validates everything but the data blocks; returns the tables sorted by id (and the footer,
/// whose `version` says how to read the blocks and values).
pub(super) fn check_layout(path: &Path, map: &[u8]) -> Result<(Vec<Table>, Footer)> {
    let len = map.len() as u64;
    let (Some(head), Some(foot)) = (
        map.first_chunk::<HEADER_LEN>(),
        map.last_chunk::<FOOTER_LEN>(),
    ) else {
        return Err(corrupt(
            path,
            0,
            format!("file of {len} bytes is too short for a segment"),
        ));
    };
    if map.len() < HEADER_LEN + FOOTER_LEN {
        return Err(corrupt(
            path,
            0,
            format!("file of {len} bytes is too short for a segment"),
        ));
    }
    let foot_at = len - FOOTER_LEN as u64;
    // 1. Footer magic, then version (before the crc, so a newer format is named as such).
    if foot[F_MAGIC..] != FOOTER_MAGIC {
        return Err(Error::BadMagic {
            path: path.into(),
            offset: foot_at + F_MAGIC as u64,
            what: "ndd-index segment (footer)",
        });
    }
    let version = LE::read_u32(&foot[F_VERSION..F_FOOTER_CRC]);
    if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(Error::UnsupportedFormatVersion {
            path: path.into(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    // 2. Footer crc.
    let (stored, computed) = Footer::crcs(foot);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            path: path.into(),
            offset: foot_at,
            stored,
            computed,
        });
    }
    let footer = Footer::decode(foot);
    // 3. Length: catches truncation and appended bytes.
    if footer.file_len != len {
        return Err(corrupt(
            path,
            foot_at,
            format!("footer says {} bytes, file has {len}", footer.file_len),
        ));
    }
    // 4. Header.
    let (magic, head_version, reserved) = decode_header(head);
    if magic != HEADER_MAGIC {
        return Err(Error::BadMagic {
            path: path.into(),
            offset: 0,
            what: "ndd-index segment",
        });
    }
    if head_version != version || reserved != 0 {
        return Err(corrupt(
            path,
            8,
            format!("header version {head_version} / reserved {reserved} disagree with the footer"),
        ));
    }
    // 5. Directory placement, size and crc.
    let expected_dir_len = footer.table_count as u64 * DIR_ENTRY_LEN as u64;
    if footer.dir_offset < HEADER_LEN as u64
        || footer.dir_offset.checked_add(footer.dir_len) != Some(foot_at)
        || footer.dir_len != expected_dir_len
    {
        return Err(corrupt(
            path,
            foot_at,
            "directory offset/length out of place",
        ));
    }
    let dir = &map[footer.dir_offset as usize..foot_at as usize];
    let computed = crc32fast::hash(dir);
    if computed != footer.dir_crc {
        return Err(Error::ChecksumMismatch {
            path: path.into(),
            offset: footer.dir_offset,
            stored: footer.dir_crc,
            computed,
        });
    }
    // 6-13. Entries and block indexes.
    let mut tables: Vec<Table> = Vec::with_capacity(footer.table_count as usize);
    let mut regions = Vec::with_capacity(tables.capacity());
    for (i, raw) in dir.as_chunks::<DIR_ENTRY_LEN>().0.iter().enumerate() {
        let at = footer.dir_offset + (i * DIR_ENTRY_LEN) as u64;
        let d = DirEntry::decode(raw);
        if tables.last().is_some_and(|t| t.meta.id >= d.table_id) {
            return Err(corrupt(
                path,
                at,
                format!("table ids not increasing at {}", d.table_id),
            ));
        }
        let blocks = check_table(path, map, at, &d, footer.dir_offset)?;
        regions.push((d.data_offset, d.index_offset + d.index_len(), at));
        tables.push(Table::new(table_meta(&d), blocks));
    }
    // 13. Header, tables, directory and footer tile the file with no gap or overlap, so every
    // byte is under a check.
    regions.sort_unstable();
    let mut cursor = HEADER_LEN as u64;
    for (start, end, at) in regions {
        if start != cursor {
            return Err(corrupt(
                path,
                at,
                format!("table data starts at {start}, expected {cursor}"),
            ));
        }
        cursor = end;
    }
    if cursor != footer.dir_offset {
        return Err(corrupt(
            path,
            cursor,
            format!("gap before the directory at {}", footer.dir_offset),
        ));
    }
    Ok((tables, footer))
}

/// Checks one directory entry and its block index; returns the decoded index.
fn check_table(
    path: &Path,
    map: &[u8],
    at: u64,
    d: &DirEntry,
    dir_offset: u64,
) -> Result<Box<[BlockRef]>> {
    let bad = |reason: String| corrupt(path, at, format!("table {}: {reason}", d.table_id));
    if d.reserved != 0 {
        return Err(bad("reserved field is not zero".into()));
    }
    let index_end = d.index_offset.checked_add(d.index_len());
    if d.data_offset.checked_add(d.data_len) != Some(d.index_offset)
        || index_end.is_none_or(|e| e > dir_offset)
    {
        return Err(bad("data/index range out of place".into()));
    }
    let empty = d.block_count == 0;
    if empty != (d.entry_count == 0)
        || empty != (d.data_len == 0)
        || d.entry_count < d.block_count as u64
    {
        return Err(bad("block, entry and byte counts disagree".into()));
    }
    if empty && (d.min_key != 0 || d.max_key != 0 || d.value_bytes != 0)
        || d.min_key > d.max_key
        || d.value_bytes > d.data_len
    {
        return Err(bad("key range or value bytes inconsistent".into()));
    }
    let index = &map[d.index_offset as usize..(d.index_offset + d.index_len()) as usize];
    let computed = crc32fast::hash(index);
    if computed != d.index_crc {
        return Err(Error::ChecksumMismatch {
            path: path.into(),
            offset: d.index_offset,
            stored: d.index_crc,
            computed,
        });
    }
    let blocks: Box<[BlockRef]> = index
        .as_chunks::<INDEX_ENTRY_LEN>()
        .0
        .iter()
        .map(BlockRef::decode)
        .collect();
    let mut next_offset = d.data_offset;
    let mut prev_last: Option<u64> = None;
    for (i, b) in blocks.iter().enumerate() {
        let at_b = d.index_offset + (i * INDEX_ENTRY_LEN) as u64;
        let bad_b = |reason: &str| {
            corrupt(
                path,
                at_b,
                format!("table {} block {i}: {reason}", d.table_id),
            )
        };
        if b.offset != next_offset || (b.len as usize) < block_len(1, 0) {
            return Err(bad_b("offset or length out of place"));
        }
        if b.first_key > b.last_key || prev_last.is_some_and(|p| p >= b.first_key) {
            return Err(bad_b("key range does not increase"));
        }
        next_offset = next_offset.saturating_add(b.len as u64);
        prev_last = Some(b.last_key);
    }
    if next_offset != d.index_offset {
        return Err(bad("blocks do not fill the table's data range".into()));
    }
    if let (Some(first), Some(last)) = (blocks.first(), blocks.last()) {
        if first.first_key != d.min_key || last.last_key != d.max_key {
            return Err(bad("min/max key disagree with the block index".into()));
        }
    }
    Ok(blocks)
}

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
        report
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
