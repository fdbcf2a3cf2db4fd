//! The layout of a segment file as `Segment::open` finds it: the cheap checks of header,
//! footer, directory and block indexes (invariants 1-13 of format-spec/segment.md), and the
//! per-table block index they yield. Below both the reader and the full `verify` scan, so
//! neither depends on the other for it.

use std::path::Path;
use std::sync::atomic::AtomicU64;

use byteorder::{ByteOrder, LittleEndian as LE};

use crate::error::{Error, Result};

use super::block::block_len;
use super::format::*;
use super::writer::table_meta;
use super::TableMeta;

pub(super) struct Table {
    pub(super) meta: TableMeta,
    pub(super) blocks: Box<[BlockRef]>,
    /// `blocks[i].last_key`, packed: the block search of `get` touches 8 instead of 32 bytes a probe.
    pub(super) last_keys: Box<[u64]>,
    /// Bit i set = block i passed its crc and structure checks.
    pub(super) verified: Box<[AtomicU64]>,
}

impl Table {
    pub(super) fn new(meta: TableMeta, blocks: Box<[BlockRef]>) -> Self {
        let verified = (0..blocks.len().div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        let last_keys = blocks.iter().map(|b| b.last_key).collect();
        Table {
            meta,
            blocks,
            last_keys,
            verified,
        }
    }
}

fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
    Error::corrupt(path, offset, reason)
}

/// The byte ranges `[from, to)` of the tables' block indexes as the footer and directory
/// place them, unchecked (a damaged file gives ranges clipped to the file, or none): what
/// [`check_layout`] reads next, for a read-ahead of exactly those bytes. From a cold page
/// cache, faulting them in reads the device's whole read-around (8 MiB on this project's
/// machine) around each index: ~125 MB a 1M-document segment instead of ~3.5 MB.
pub(super) fn block_index_ranges(map: &[u8]) -> Vec<(u64, u64)> {
    let Some(foot) = map.last_chunk::<FOOTER_LEN>() else {
        return Vec::new();
    };
    let footer = Footer::decode(foot);
    let len = map.len() as u64;
    let Some(to) = footer.dir_offset.checked_add(footer.dir_len) else {
        return Vec::new();
    };
    if to > len || footer.dir_offset > to {
        return Vec::new();
    }
    map[footer.dir_offset as usize..to as usize]
        .as_chunks::<DIR_ENTRY_LEN>()
        .0
        .iter()
        .filter_map(|raw| {
            let d = DirEntry::decode(raw);
            let b = d.index_offset.checked_add(d.index_len())?.min(len);
            (d.index_offset < b).then_some((d.index_offset, b))
        })
        .collect()
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
