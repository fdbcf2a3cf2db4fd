//! Immutable segment files: several tables of `u64 key -> value bytes`, written once from sorted
//! streams and memory-mapped for reading.
//!
//! Layout (format-spec/segment.md): a 16-byte header, then per table its data blocks and its
//! block index, then the table directory, then a 48-byte footer. Every byte is covered by a
//! crc32 or checked against a constant, so damage is reported (with file and offset), never
//! served. Blocks are verified lazily, the first time a reader touches them.
//!
//! Writing:
//! ```ignore
//! let mut w = SegmentWriter::create(dir, "seg-000001.ndds")?;
//! w.begin_table(POSTINGS)?;
//! for (hash, ids) in sorted_postings { buf.clear(); encode_postings(&ids, &mut buf); w.add(hash, &buf)?; }
//! w.end_table()?;
//! let meta = w.finish()?; // durable and visible under its final name
//! ```
//! Reading: `Segment::open(path)?.get(POSTINGS, hash)?`, `.iter(FORWARD)`, `.range(..)`.

mod block;
mod ef;
pub mod filter;
mod format;
#[doc(hidden)]
pub mod fuzz;
mod layout;
mod postings;
mod reader;
mod seek;
mod u64s;
mod verify;
mod writer;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use format::{FORMAT_VERSION, MIN_FORMAT_VERSION};
pub use postings::{
    decode_postings, decode_postings_into, encode_bitmap, encode_one_posting, encode_postings,
    encode_postings_v1, PostingIter, PostingList, RAW_MAX, TAG_RAW, TAG_ROARING,
};
pub use reader::{
    advise_random_on_open, coarse_key, coarse_overlap, key_cache_share, key_cache_usage,
    set_key_cache_budget, Entries, Segment, COARSE_BITS, DEFAULT_KEY_CACHE_BYTES, KEY_CACHE_ENV,
    LOOKUP_GROUP, RANDOM_ACCESS_ENV,
};
pub use seek::Seeker;
pub use u64s::{
    decode_u64s, decode_u64s_version, encode_u64s, encode_u64s_v1, U64List, U64ListIter, U64Slice,
};
pub use verify::{Problem, VerifyReport};
pub use writer::{format_override, PendingSync, SegmentWriter, DEFAULT_WRITE_VERSION, FORMAT_ENV};

/// First format version whose FORWARD values are ranks of POSTINGS keys (table
/// [`POSTINGS_RANKS`]).
pub const RANKED_FORWARD_VERSION: u32 = 3;

/// Environment variable: `NDD_KEY_FILTER=0` makes readers ignore the POSTINGS key filters
/// (every key may be present), as builds before table 4 did. For before/after benchmarks only.
pub const KEY_FILTER_ENV: &str = "NDD_KEY_FILTER";

/// Bytes of one `WILLNEED` request (`madvise`/`posix_fadvise`) of a read-ahead. Linux reads
/// at most `max(read_ahead_kb, max_sectors_kb)` of one such request and silently drops the
/// rest (on this project's machine, 8 MiB: a whole-table request read its first 8 MiB
/// only), so a range is asked for in requests no larger than the smallest usual setting.
pub const WILLNEED_REQUEST: u64 = 128 << 10;

/// Calls `ask(at, n)` for `[from, to)` in consecutive pieces of at most [`WILLNEED_REQUEST`]
/// bytes: how every read-ahead (a segment's `madvise`, a file's `posix_fadvise`: [`file_will_need`])
/// words its requests.
pub fn in_willneed_requests(from: u64, to: u64, mut ask: impl FnMut(u64, u64)) {
    let mut at = from;
    while at < to {
        let n = WILLNEED_REQUEST.min(to - at);
        ask(at, n);
        at += n;
    }
}

/// Asks the kernel for `[from, to)` of `file` (`POSIX_FADV_WILLNEED` in
/// [`in_willneed_requests`]: the reads are issued and the calls return without waiting for
/// them). A hint: errors are ignored, and nothing happens off Linux.
pub fn file_will_need(file: &std::fs::File, from: u64, to: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        in_willneed_requests(from, to, |at, n| {
            // SAFETY: a plain system call on an open descriptor; it changes no memory.
            let _ = unsafe {
                libc::posix_fadvise(
                    file.as_raw_fd(),
                    at as libc::off_t,
                    n as libc::off_t,
                    libc::POSIX_FADV_WILLNEED,
                )
            };
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, from, to);
}

/// Table of shingle/feature hash -> posting list (see `encode_postings`).
pub const POSTINGS: u32 = 1;
/// Table of doc id (as u64) -> the doc's sorted feature hashes (see `encode_u64s`); from format
/// 3 on, the ranks of those hashes among the segment's POSTINGS keys, in the same codec (read
/// the hashes with `Segment::forward_into`).
pub const FORWARD: u32 = 2;
/// Table of feature hash -> its document frequency in the segment (u32 LE), for keys in more
/// than [`FREQUENT_DF`] documents. Used only to order probe keys (rare first) and bound `--max-df`.
pub const FREQUENT: u32 = 3;
/// Table of POSTINGS block number -> that block's key filter (src/segment/filter.rs), written
/// by `SegmentWriter` itself alongside every non-empty POSTINGS table (format 2). Optional:
/// a segment without it reads as "every key may be present".
pub const POSTINGS_FILTER: u32 = 4;
/// Table of POSTINGS block number -> the rank (0-based position in the POSTINGS table) of that
/// block's first key, u64 LE; written by `SegmentWriter` itself alongside every non-empty
/// POSTINGS table of format 3, whose FORWARD values are ranks of POSTINGS keys (readers map a
/// rank to its key through it: `Segment::forward_into`).
pub const POSTINGS_RANKS: u32 = 5;
/// A key in more documents than this (within one segment) goes into [`FREQUENT`].
pub const FREQUENT_DF: u32 = 16;
/// Table of DSC-SS supershingle -> posting list (src/method/dsc.rs).
pub const SUPERSHINGLES: u32 = 8;
/// Table of doc id (as u64) -> the doc's 384-bit simhash, 6 u64 LE (src/method/dsc.rs).
pub const SIM384: u32 = 9;
/// Table of I-Match signature -> posting list (src/method/imatch.rs).
pub const IMATCH: u32 = 10;
/// Table of DSC-SS megashingle -> posting list (src/method/dsc.rs; optional).
pub const MEGASHINGLES: u32 = 11;
/// First simhash table: table `SIMHASH_BASE + t` maps the t-th permuted simhash -> posting list.
pub const SIMHASH_BASE: u32 = 16;
/// Number of table ids reserved for simhash tables (`SIMHASH_BASE..SIMHASH_BASE + this`).
pub const SIMHASH_MAX_TABLES: u32 = 64;

/// Table id of the `t`-th simhash permutation table.
pub const fn simhash_table(t: u32) -> u32 {
    SIMHASH_BASE + t
}

/// How `verify` checks the values of a table, by table id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// Posting lists (`decode_postings`).
    Postings,
    /// Strictly increasing u64 arrays (`decode_u64s`).
    U64s,
    /// Not interpreted by this module.
    Opaque,
}

/// The value codec of table `id`.
pub const fn value_kind(id: u32) -> ValueKind {
    match id {
        POSTINGS => ValueKind::Postings,
        FORWARD => ValueKind::U64s,
        SUPERSHINGLES | IMATCH | MEGASHINGLES => ValueKind::Postings,
        _ if id >= SIMHASH_BASE && id < SIMHASH_BASE + SIMHASH_MAX_TABLES => ValueKind::Postings,
        _ => ValueKind::Opaque,
    }
}

/// Blocks are closed once adding an entry would take them past this many bytes.
pub const DEFAULT_BLOCK_TARGET: usize = 32 * 1024;
/// No block may exceed this (its length is a u32 in the block index).
pub const MAX_BLOCK_LEN: usize = u32::MAX as usize;
/// Largest value a table can hold (a block of one entry of this size fits `MAX_BLOCK_LEN` in
/// either format: version 2's one-entry block has at most 64 bytes besides its value).
pub const MAX_VALUE_LEN: usize = MAX_BLOCK_LEN - 64;

/// What a finished segment holds (returned by `SegmentWriter::finish`, or `Segment::meta`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentMeta {
    /// File name inside the index directory (no directory part).
    pub file_name: String,
    /// File size in bytes.
    pub bytes: u64,
    /// Tables sorted by id.
    pub tables: Vec<TableMeta>,
}

/// One table of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableMeta {
    pub id: u32,
    /// Number of entries.
    pub entries: u64,
    /// Smallest and largest key (both 0 for an empty table).
    pub min_key: u64,
    pub max_key: u64,
    /// Bytes the table occupies in the file (blocks + block index).
    pub bytes: u64,
    /// Sum of the value lengths.
    pub value_bytes: u64,
    /// Number of data blocks.
    pub blocks: u32,
}

/// A hint to fetch the cache line holding `x` (no effect on results; a no-op off x86-64).
/// Batched lookups ([`Segment::get_postings_many`]) issue these a step ahead, so the cache
/// misses of many keys overlap instead of following each other.
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing architecturally; `x` is a valid
    // reference anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            x as *const T as *const i8,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
