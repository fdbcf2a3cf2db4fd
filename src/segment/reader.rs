//! `Segment`: a memory-mapped, validated segment file.
//!
//! `open` checks everything that is O(tables + blocks): header, footer, directory crc, every
//! block index's crc and the layout invariants (format-spec/segment.md). Data blocks are checked
//! (crc, then structure) the first time any reader touches them; a per-table bitset of
//! `AtomicU64` remembers which blocks passed, so hot blocks are hashed once. `Segment` is
//! `Send + Sync`: share it across threads behind an `Arc`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use memmap2::Mmap;

use crate::error::{Error, IoResultExt, Result};

use super::block::BlockView;
use super::ef::EfView;
use super::format::BlockRef;
use super::layout::{block_index_ranges, check_layout, Table};
use super::postings::{decode_postings, PostingList, VALUE_PATH};
use super::u64s::{decode_u64s_version, U64List};
use super::{SegmentMeta, TableMeta};

/// Keys looked up together by [`Segment::get_postings_many`].
pub const LOOKUP_GROUP: usize = 16;
/// Ranks mapped to keys together ([`Segment::keys_at_ranks`]): their memory accesses step by
/// step for the whole group.
const RANK_GROUP: usize = 16;

/// Bytes of the key filter table one filter lookup made alone is worth
/// ([`Segment::filter_slots`]): a lookup through the table's block index costs a few hundred
/// nanoseconds, about what the pass that loads every filter spends on 1 KiB of the table. So
/// the pass is made once the lookups made one at a time would have paid for it (at most
/// twice the cheaper of the two ways, whatever the number of lookups to come).
pub const FILTER_POINT_BYTES: u64 = 1024;

/// Keys [`Segment::postings_may_hold_sorted`] locates ahead of the one it answers (their
/// fingerprint bytes prefetched meanwhile).
pub(super) const SORTED_AHEAD: usize = 16;

/// Step 1 of a group lookup ([`Segment::get_postings_many`],
/// [`Segment::postings_may_hold_many`]): the block of each key of `chunk`
/// (`partition_point(last < key)`) into `bis`, the group's binary searches in lockstep so each
/// round's loads are independent of each other; `live[j]`: `chunk[j]` is not beyond the last
/// block. Asks for each live key's block index entry and filter slot (`slots`). The table has
/// at least one block.
fn lockstep_blocks(
    t: &Table,
    slots: Option<&[FilterSlot]>,
    chunk: &[u64],
    bis: &mut [usize; LOOKUP_GROUP],
    live: &mut [bool; LOOKUP_GROUP],
) {
    use super::prefetch;
    let n = t.last_keys.len();
    let g = chunk.len();
    let mut base = [0usize; LOOKUP_GROUP];
    let mut size = n;
    while size > 1 {
        let half = size / 2;
        for j in 0..g {
            let mid = base[j] + half;
            if t.last_keys[mid] < chunk[j] {
                base[j] = mid;
            }
        }
        size -= half;
    }
    for j in 0..g {
        let bi = base[j] + usize::from(t.last_keys[base[j]] < chunk[j]);
        bis[j] = bi;
        live[j] = bi < n;
        if live[j] {
            prefetch(&t.blocks[bi]);
            if let Some(s) = slots.and_then(|s| s.get(bi)) {
                prefetch(s);
            }
        }
    }
}

/// An open segment.
pub struct Segment {
    pub(super) path: PathBuf,
    pub(super) map: Mmap,
    /// Sorted by table id.
    pub(super) tables: Vec<Table>,
    /// Format version of the file (1, 2 or 3): how blocks and FORWARD values are laid out.
    pub(super) version: u32,
    /// Where each POSTINGS block's key filter lies in the map, found on first use (one pass
    /// over table `POSTINGS_FILTER`, checking its blocks).
    filters: OnceLock<FilterSlots>,
    /// Filter lookups made one at a time before `filters` was loaded
    /// ([`Segment::filter_slots`]): once they are worth a pass over the table, the pass is made.
    filter_point_lookups: AtomicU64,
    /// Set once [`Segment::load_key_filters`] has begun the pass (on another thread, say):
    /// lookups made meanwhile keep looking their filters up alone rather than wait for it.
    filter_pass_begun: AtomicBool,
    /// Whether a FORWARD list's rank mapping first asks for the POSTINGS blocks it will read
    /// ([`Segment::read_ranks_ahead`]).
    rank_read_ahead: AtomicBool,
    /// Mapped for random access ([`advise_random_on_open`]): scans advise their range first.
    random: bool,
    /// Tables whose scan advised their range already (bit `id % 63`; bit 63: the whole file):
    /// an advice changes the mapping under the process's mmap lock, so it is given once.
    scan_advised: AtomicU64,
    /// Every block checked by [`Segment::check_all_blocks`] (a server's warm-up: the file is
    /// in the page cache), so its lookups no longer ask for their blocks ahead.
    warmed: AtomicBool,
    /// The rank of every POSTINGS block's first key, and the POSTINGS entry count last (format
    /// 3: table `POSTINGS_RANKS`), loaded on first use.
    ranks: OnceLock<RankStarts>,
    /// Format 3: per POSTINGS block, where its key sequence lies, once the block has been
    /// checked for a rank lookup (so a rank costs a select, not a block parse).
    rank_blocks: OnceLock<Box<[OnceLock<KeySeq>]>>,
    /// Format 3: ranks mapped through `rank_blocks` so far (one select each, or in bulk by
    /// [`Segment::ranks_to_keys_bulk_caching`]); past a sixteenth of the POSTINGS keys, the
    /// whole key sequence is decoded into `key_cache`.
    ranks_selected: AtomicU64,
    /// Format 3: every POSTINGS key in rank order, decoded once (sequentially) when this
    /// segment's FORWARD lists are read often enough to pay for it and the process-wide
    /// budget ([`KEY_CACHE_ENV`]) allows; `None` when it does not (or a block is damaged:
    /// the per-rank path then reports it).
    key_cache: OnceLock<Option<KeyCache>>,
    /// Format 3: the coarse key of every rank ([`Segment::coarse_into`]), built on first use
    /// by one sequential pass over the POSTINGS keys; `None` when the segment has no ranks
    /// or more than `u32::MAX` keys.
    coarse: OnceLock<Option<CoarseRanks>>,
    /// Format 3: ranks readers wanted mapped to keys for a cross-segment comparison so far
    /// ([`Segment::coarse_pays`]).
    coarse_wanted: AtomicU64,
}

/// Bits of a feature hash kept in its coarse key ([`coarse_key`]).
pub const COARSE_BITS: u32 = 16;

/// The coarse key of a feature hash: its top [`COARSE_BITS`] bits. Two equal hashes have
/// equal coarse keys, and coarse keys ascend with the hashes, so the merge count of two
/// sorted coarse lists ([`coarse_overlap`]) bounds the two hash lists' intersection from
/// above.
#[inline]
pub fn coarse_key(hash: u64) -> u16 {
    (hash >> (64 - COARSE_BITS)) as u16
}

/// An upper bound of `|A ∩ B|` for two sorted lists of distinct feature hashes from their
/// coarse keys `a`, `b` (ascending, with repeats): the sum over coarse values of the smaller
/// of the two counts, which a shared hash always adds to.
pub fn coarse_overlap(a: &[u16], b: &[u16]) -> u64 {
    let (mut i, mut j, mut n) = (0usize, 0usize, 0u64);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        n += u64::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    n
}

/// A format-3 segment's rank -> coarse key map: `first[v]` is the first rank whose key's
/// coarse key is at least `v` (`2^COARSE_BITS + 1` entries, the last the key count), `dir[j]`
/// the coarse key of rank `j << shift` (so a rank's coarse key is found from `dir` by a step
/// or two along `first`). About 0.4 MB whatever the segment's size.
struct CoarseRanks {
    first: Box<[u32]>,
    dir: Box<[u16]>,
    shift: u32,
    total: u64,
}

/// Environment variable overriding [`advise_random_on_open`]: `1` maps every segment this
/// process opens for random access, `0` for the kernel's default (read-around).
pub const RANDOM_ACCESS_ENV: &str = "NDD_RANDOM_ACCESS";

/// `Segment::scan_advised`'s bit for the whole file.
const WHOLE_FILE: u64 = 1 << 63;

/// Whether segments opened from now on are mapped for random access ([`advise_random_on_open`]).
static RANDOM_ON_OPEN: AtomicBool = AtomicBool::new(false);

/// Maps the segments this process opens from now on for random access (`madvise(MADV_RANDOM)`,
/// RocksDB's `advise_random_on_open`): a page fault reads its page, not the kernel's
/// read-around window (`read_ahead_kb` of the device, up to several MiB) around it. For a
/// process that answers lookups of an index larger than memory (the server, `query`:
/// `view::lookups_want_random_access`), whose reads are a few blocks here and there: with
/// read-around, each cold block read brings in MBs of neighbours that evict what the next
/// lookups need. Lookups ask for the blocks they will
/// read themselves ([`Segment::read_ahead`]). Whole-table scans in such a process (the
/// server's warm-up and merges, a key-filter pass, the key cache) switch the range they read
/// to sequential read-ahead first ([`Segment::begin_scan`]). [`RANDOM_ACCESS_ENV`] overrides
/// the choice; a hint only (errors ignored, nothing off Unix).
/// Returns the choice made (the environment's, if it overrides `on`).
pub fn advise_random_on_open(on: bool) -> bool {
    let on = match std::env::var(RANDOM_ACCESS_ENV)
        .ok()
        .as_deref()
        .map(str::trim)
    {
        Some("1") => true,
        Some("0") => false,
        _ => on,
    };
    RANDOM_ON_OPEN.store(on, Ordering::Relaxed);
    on
}

/// Environment variable: the process-wide budget in bytes for decoded POSTINGS key sequences
/// of format-3 segments (8 bytes a key; default [`DEFAULT_KEY_CACHE_BYTES`]; 0 turns the cache
/// off, so every rank is a select in its POSTINGS block).
pub const KEY_CACHE_ENV: &str = "NDD_KEY_CACHE";
/// Default of [`KEY_CACHE_ENV`]: 256 MiB, the keys of about 32 M POSTINGS entries.
pub const DEFAULT_KEY_CACHE_BYTES: u64 = 256 << 20;

/// POSTINGS blocks a core decodes at a time into the key cache ([`Segment::load_key_cache`]).
/// (Tests: 2, so that their segments of a few blocks make several groups.)
#[cfg(not(test))]
const KEY_CACHE_GROUP: usize = 32;
#[cfg(test)]
const KEY_CACHE_GROUP: usize = 2;

/// The key-cache budget set by [`KEY_CACHE_ENV`], if it is set to a number.
fn key_cache_env() -> Option<u64> {
    static ENV: OnceLock<Option<u64>> = OnceLock::new();
    *ENV.get_or_init(|| {
        std::env::var(KEY_CACHE_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    })
}

/// The process-wide key-cache budget in bytes ([`set_key_cache_budget`], else
/// [`KEY_CACHE_ENV`], else [`DEFAULT_KEY_CACHE_BYTES`]).
fn key_cache_limit() -> &'static AtomicU64 {
    static LIMIT: OnceLock<AtomicU64> = OnceLock::new();
    LIMIT.get_or_init(|| AtomicU64::new(key_cache_env().unwrap_or(DEFAULT_KEY_CACHE_BYTES)))
}

/// Bytes of decoded keys held by the key caches of this process.
fn key_cache_taken() -> &'static AtomicU64 {
    static TAKEN: AtomicU64 = AtomicU64::new(0);
    &TAKEN
}

/// Sets the process-wide budget for decoded POSTINGS keys of format-3 segments (8 bytes a
/// key) to `bytes`: the operations tie it to their memory budget (`--mem`). Caches already
/// loaded stay (a smaller budget only stops new ones). [`KEY_CACHE_ENV`], when set, wins.
pub fn set_key_cache_budget(bytes: u64) {
    if key_cache_env().is_none() {
        key_cache_limit().store(bytes, Ordering::Relaxed);
    }
}

/// The process-wide key-cache budget in bytes and how much of it is taken.
pub fn key_cache_usage() -> (u64, u64) {
    (
        key_cache_limit().load(Ordering::Relaxed),
        key_cache_taken().load(Ordering::Relaxed),
    )
}

/// Takes `bytes` from the key-cache budget; false (nothing taken) when it has less left.
fn take_key_cache_budget(bytes: u64) -> bool {
    let limit = key_cache_limit().load(Ordering::Relaxed);
    key_cache_taken()
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |taken| {
            taken.checked_add(bytes).filter(|&t| t <= limit)
        })
        .is_ok()
}

/// The key-cache budget of an operation with memory budget `mem` (`--mem`): half of it. The
/// other half is what its sorts take while the keys are read (a join's verification runs with
/// its output sort filling), and probe matching sorts nothing.
pub fn key_cache_share(mem: u64) -> u64 {
    mem / 2
}

/// Gives `bytes` back to the key-cache budget.
fn give_key_cache_budget(bytes: u64) {
    key_cache_taken().fetch_sub(bytes, Ordering::Relaxed);
}

/// A format-3 segment's POSTINGS keys in rank order; gives its bytes back to the budget when
/// the segment is dropped.
struct KeyCache {
    keys: Box<[u64]>,
}

impl Drop for KeyCache {
    fn drop(&mut self) {
        give_key_cache_budget(self.keys.len() as u64 * 8);
    }
}

/// A checked POSTINGS block's key sequence: first key, offset in the map, Elias-Fano layout.
#[derive(Clone, Copy)]
struct KeySeq {
    first_key: u64,
    at: usize,
    lay: super::ef::Layout,
}

/// `blocks + 1` non-decreasing ranks (see `Segment::ranks`); `None` when the segment has no
/// rank table; `Err((offset, reason))` when it does not match the POSTINGS blocks.
type RankStarts = std::result::Result<Option<Box<[u64]>>, (u64, String)>;

/// Every POSTINGS block's [`FilterSlot`]; `None` when the segment has no filter table;
/// `Err((offset, reason))` when the table does not match the POSTINGS blocks.
type FilterSlots = std::result::Result<Option<Box<[FilterSlot]>>, (u64, String)>;

/// Where POSTINGS block b's key filter value lies in the map, and its decoded header (read
/// once, by the pass that finds the slots), so a lookup goes from the block straight to the
/// fingerprint bytes: no dependent load of the header in the map first.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct FilterSlot {
    /// Offset of the value in the map.
    off: u64,
    /// The filter's seed (0 without a filter).
    seed: u64,
    /// Length of the value in bytes (0: the empty "no filter" value).
    len: u32,
    /// The filter's segment length L (0: no filter, every key "may"); its fingerprints are
    /// the map's bytes `off + 12 .. off + 12 + 3 L`.
    seg_len: u32,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("path", &self.path)
            .field("bytes", &self.map.len())
            .field(
                "tables",
                &self.tables.iter().map(|t| t.meta).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The POSTINGS block holding rank `r` (below the entry count) by the rank table `starts`
/// (`blocks + 1` ranks, [`Segment::rank_starts`]): the last block starting at or before `r`.
fn rank_block(starts: &[u64], r: u64) -> usize {
    starts[..starts.len() - 1].partition_point(|&s| s <= r) - 1
}

/// `madvise(MADV_WILLNEED)` for the bytes `[from, to)` of `map` (clipped to it), in requests
/// of [`super::WILLNEED_REQUEST`] bytes; a hint (errors ignored, nothing off Unix).
fn will_need(map: &Mmap, from: u64, to: u64) {
    let to = to.min(map.len() as u64);
    #[cfg(unix)]
    super::in_willneed_requests(from, to, |at, n| {
        let _ = map.advise_range(memmap2::Advice::WillNeed, at as usize, n as usize);
    });
    #[cfg(not(unix))]
    let _ = (map, from, to);
}

impl Segment {
    /// Maps and validates the segment at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Segment> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).at(&path)?;
        // SAFETY: segment files are write-once: they are published by rename only after being
        // fully written and fsynced, and are never modified in place afterwards; the engine only
        // ever deletes them whole, and on POSIX an unlinked file stays valid while mapped. So the
        // mapped bytes cannot change under the `&[u8]` borrows we hand out. (Another process
        // truncating the file would break this, as for every mmap-based store; that is outside
        // the engine's contract.)
        let map = unsafe { Mmap::map(&file) }.at(&path)?;
        let random = RANDOM_ON_OPEN.load(Ordering::Relaxed);
        #[cfg(unix)]
        if random {
            let _ = map.advise(memmap2::Advice::Random);
        }
        // From a cold page cache: the block indexes the checks read next, asked for at once.
        for (from, to) in block_index_ranges(&map) {
            will_need(&map, from, to);
        }
        let (tables, footer) = check_layout(&path, &map)?;
        Ok(Segment {
            path,
            map,
            tables,
            version: footer.version,
            filters: OnceLock::new(),
            filter_point_lookups: AtomicU64::new(0),
            filter_pass_begun: AtomicBool::new(false),
            // A reader of a few lists asks for their blocks together (a fault reads one page).
            rank_read_ahead: AtomicBool::new(random),
            random,
            warmed: AtomicBool::new(false),
            scan_advised: AtomicU64::new(0),
            ranks: OnceLock::new(),
            rank_blocks: OnceLock::new(),
            ranks_selected: AtomicU64::new(0),
            key_cache: OnceLock::new(),
            coarse: OnceLock::new(),
            coarse_wanted: AtomicU64::new(0),
        })
    }

    /// Format version of the file (format-spec/segment.md): 1, 2 or 3.
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// The file this segment was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Marks every block as checked, for a segment this process has just written itself (a
    /// snapshot's piece of the delta, rewritten at every few online adds): its blocks need no
    /// crc and structure check against bytes it produced a moment ago. A block that does not
    /// even parse is still checked (and reported) on use.
    pub fn assume_verified(&self) {
        for t in &self.tables {
            for f in t.verified.iter() {
                f.store(u64::MAX, Ordering::Relaxed);
            }
        }
    }

    /// Checks every block not checked yet (crc and structure, as on first use) and marks it,
    /// reading the file once in order: a long-running server does this in the background at
    /// start so queries do not pay each block's check, and the page faults of a cold file, at
    /// random on their first use. `stop` is polled between blocks.
    pub fn check_all_blocks(&self, stop: &dyn Fn() -> bool) -> Result<()> {
        if self.first_scan(WHOLE_FILE) {
            self.begin_scan(0, self.map.len() as u64);
        }
        for t in &self.tables {
            for bi in 0..t.blocks.len() {
                if stop() {
                    return Ok(());
                }
                self.block(t, bi)?;
            }
        }
        // Read whole: lookups find their blocks in the page cache, asking ahead is no use.
        self.warmed.store(true, Ordering::Relaxed);
        self.rank_read_ahead.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// File size in bytes.
    pub fn len_bytes(&self) -> u64 {
        self.map.len() as u64
    }

    /// Whether table `id` is present (possibly empty).
    pub fn contains_table(&self, id: u32) -> bool {
        self.table(id).is_some()
    }

    /// Description of table `id`, if present.
    pub fn table_meta(&self, id: u32) -> Option<&TableMeta> {
        self.table(id).map(|t| &t.meta)
    }

    /// Descriptions of all tables, sorted by id.
    pub fn tables(&self) -> impl Iterator<Item = &TableMeta> {
        self.tables.iter().map(|t| &t.meta)
    }

    /// The same description `SegmentWriter::finish` returned.
    pub fn meta(&self) -> SegmentMeta {
        SegmentMeta {
            file_name: self
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            bytes: self.len_bytes(),
            tables: self.tables().copied().collect(),
        }
    }

    /// Drops this process's mapping of the bytes `[from, to)` (rounded inward to pages) from
    /// its resident set. The file is mapped shared and read-only, so this only unmaps pages:
    /// a later read of them (by any thread) faults them back in from the page cache, with the
    /// same bytes. Sequential scans call it behind them so that `ingest`, `pairs` and `compact`
    /// do not count the whole index as resident; page-cache reuse is untouched.
    pub fn release(&self, from: u64, to: u64) {
        const PAGE: u64 = 4096;
        let (from, to) = (from.div_ceil(PAGE) * PAGE, (to / PAGE) * PAGE);
        let to = to.min(self.map.len() as u64);
        if to <= from {
            return;
        }
        #[cfg(unix)]
        // SAFETY: a shared read-only file mapping; MADV_DONTNEED cannot change its contents
        // (see above), so outstanding borrows keep reading the same bytes.
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                from as usize,
                (to - from) as usize,
            )
        };
    }

    /// Tells the kernel that the POSTINGS key filters (table `POSTINGS_FILTER`, contiguous)
    /// will be read soon: a batch's filter walk reads all of them, so a cold page cache reads
    /// them ahead in large requests while other segments are walked, instead of faulting them
    /// in as the walk reaches them. A hint only (errors ignored; nothing on other systems).
    pub fn prefetch_key_filters(&self) {
        #[cfg(unix)]
        if self.filters.get().is_none() {
            self.advise_key_filters(memmap2::Advice::WillNeed);
        }
    }

    /// `advice` for the bytes of table `POSTINGS_FILTER` (a hint; errors ignored).
    #[cfg(unix)]
    fn advise_key_filters(&self, advice: memmap2::Advice) {
        if let Some((from, to)) = self.key_filter_range() {
            if advice == memmap2::Advice::WillNeed {
                self.read_ahead(from, to);
            } else {
                let _ = self
                    .map
                    .advise_range(advice, from as usize, (to - from) as usize);
            }
        }
    }

    /// The byte range `[from, to)` of the key filters' data blocks (table `POSTINGS_FILTER`,
    /// contiguous): what a batch's filter walk reads whole. `None` for a segment without key
    /// filters (no table, or no block).
    pub fn key_filter_range(&self) -> Option<(u64, u64)> {
        self.table_range(self.table(super::POSTINGS_FILTER)?)
    }

    /// The byte range `[from, to)` of `t`'s data blocks (contiguous); None without blocks.
    fn table_range(&self, t: &Table) -> Option<(u64, u64)> {
        let (first, last) = (t.blocks.first()?, t.blocks.last()?);
        let to = (last.offset + last.len as u64).min(self.map.len() as u64);
        (first.offset < to).then_some((first.offset, to))
    }

    /// Whether this segment is mapped for random access ([`advise_random_on_open`]).
    pub fn random_access(&self) -> bool {
        self.random
    }

    /// Says that this process has just written the file, so its pages are in the page cache:
    /// lookups here no longer ask for their blocks ahead (as after
    /// [`Segment::check_all_blocks`]). For the segments a process publishes and then reads:
    /// an ingest's batch, a server's delta.
    pub fn mark_cached(&self) {
        self.warmed.store(true, Ordering::Relaxed);
        self.rank_read_ahead.store(false, Ordering::Relaxed);
    }

    /// Whether lookups here ask for the blocks they will read together first: mapped for
    /// random access (a fault reads one page) and not read whole by
    /// [`Segment::check_all_blocks`].
    pub fn reads_ahead(&self) -> bool {
        self.random && !self.warmed.load(Ordering::Relaxed)
    }

    /// Before a scan of the bytes `[from, to)` in a segment mapped for random access
    /// ([`advise_random_on_open`]): those bytes get the kernel's sequential read-ahead
    /// (`madvise(MADV_SEQUENTIAL)`), so the scan's page faults read large requests ahead of
    /// it, not one page each. Nothing for a segment mapped with the default advice (whose
    /// read-around serves scans already). A hint: errors are ignored.
    pub fn begin_scan(&self, from: u64, to: u64) {
        let to = to.min(self.map.len() as u64);
        #[cfg(unix)]
        if self.random && from < to {
            let _ = self.map.advise_range(
                memmap2::Advice::Sequential,
                from as usize,
                (to - from) as usize,
            );
        }
        #[cfg(not(unix))]
        let _ = (from, to);
    }

    /// [`Segment::begin_scan`] of table `t`'s blocks, the first time only.
    fn begin_table_scan(&self, t: &Table) {
        if !self.first_scan(1 << (t.meta.id % 63)) {
            return;
        }
        if let Some((from, to)) = self.table_range(t) {
            self.begin_scan(from, to);
        }
    }

    /// Whether a scan of what `bit` of `scan_advised` stands for is the first to advise it
    /// (false for a segment mapped with the default advice, or once the whole file was).
    fn first_scan(&self, bit: u64) -> bool {
        self.random && self.scan_advised.fetch_or(bit, Ordering::Relaxed) & (bit | WHOLE_FILE) == 0
    }

    /// Whether this segment's key filters are decoded already (its `filters` slots): then
    /// the walk reads them from memory and a read-ahead of their bytes is no use.
    pub fn key_filters_loaded(&self) -> bool {
        self.filters.get().is_some()
    }

    /// Decodes this segment's key filters now (their check and header pass, as on first use:
    /// every byte of the table read and its crc checked), unless done already. A read-ahead
    /// calls it while the batch is still read, so that this first touch of the filters'
    /// pages, cold after a dropped page cache, overlaps the front end instead of opening the
    /// matching stage. A damaged table is reported by the lookups that reach it, as before.
    /// Lookups made on other threads while the pass runs look their filters up alone
    /// ([`Segment::filter_slots`]) instead of waiting for it: a server's warm-up makes the
    /// pass off its requests' path.
    pub fn load_key_filters(&self) {
        self.begin_filter_pass();
        let _ = self.filters.get_or_init(|| self.load_filters());
    }

    /// From now on no lookup makes the key filters' pass: [`Segment::load_key_filters`] makes
    /// it (it calls this first).
    pub(super) fn begin_filter_pass(&self) {
        self.filter_pass_begun.store(true, Ordering::Release);
    }

    /// Asks the kernel to read the bytes `[from, to)` of the file into the page cache ahead
    /// of their use (`madvise(MADV_WILLNEED)` in requests of [`super::WILLNEED_REQUEST`]
    /// bytes: the reads are issued and the call returns without waiting for them, unless the
    /// device's queue is full). A hint: errors are ignored, and nothing happens on other
    /// systems than Unix.
    pub fn read_ahead(&self, from: u64, to: u64) {
        will_need(&self.map, from, to);
    }

    /// Where the bytes `v` (a value this segment handed out) start in the file; None for
    /// bytes outside its mapping.
    pub fn offset_in_file(&self, v: &[u8]) -> Option<u64> {
        let base = self.map.as_ptr() as usize;
        let at = (v.as_ptr() as usize).checked_sub(base)?;
        (at + v.len() <= self.map.len()).then_some(at as u64)
    }

    /// The number of blocks of table `table` (0 for an absent table).
    pub fn block_count(&self, table: u32) -> usize {
        self.table(table).map_or(0, |t| t.blocks.len())
    }

    /// The byte range `[from, to)` in the file of block `bi` of table `table` (None: no such
    /// block): what reading that block (its crc check) reads.
    pub fn block_range(&self, table: u32, bi: usize) -> Option<(u64, u64)> {
        let b = self.table(table)?.blocks.get(bi)?;
        let to = (b.offset + b.len as u64).min(self.map.len() as u64);
        Some((b.offset, to))
    }

    /// The block of `table` whose key range covers `key` (None: no block does), by the block
    /// index alone (no filter consulted): the block a `get` of `key` reads, a FORWARD list's.
    pub fn block_covering(&self, table: u32, key: u64) -> Option<usize> {
        let t = self.table(table)?;
        let bi = t.last_keys.partition_point(|&last| last < key);
        (t.blocks.get(bi)?.first_key <= key).then_some(bi)
    }

    /// Format 3: appends to `out` the POSTINGS blocks holding the ranks `ranks` (any order),
    /// ascending and distinct: the blocks [`Segment::ranks_to_keys_bulk`] reads to map them.
    /// Nothing when it reads none (formats 1 and 2, keys decoded in memory, no rank table).
    pub fn rank_blocks(&self, ranks: &[u64], out: &mut Vec<usize>) -> Result<()> {
        if !self.ranked_forward() || ranks.is_empty() || self.cached_key_count().is_some() {
            return Ok(());
        }
        let Some(starts) = self.rank_starts()? else {
            return Ok(());
        };
        let blocks = starts.len() - 1;
        let total = starts[blocks];
        if blocks == 0 {
            return Ok(());
        }
        // Rank directory (as `ranks_to_keys_by_blocks`): the block of rank `j << shift`,
        // about four entries a block; then a bit per block (no sort of the ranks).
        let per_block = (total / blocks as u64).max(1);
        let shift = (per_block / 4).max(1).ilog2();
        let mut dir = Vec::with_capacity((total >> shift) as usize + 1);
        let mut b = 0usize;
        for j in 0..=(total >> shift) {
            while b + 1 < blocks && starts[b + 1] <= j << shift {
                b += 1;
            }
            dir.push(b as u32);
        }
        let mut seen = vec![0u64; blocks.div_ceil(64)];
        for &r in ranks.iter().filter(|&&r| r < total) {
            let mut b = dir[(r >> shift) as usize] as usize;
            while starts[b + 1] <= r {
                b += 1;
            }
            seen[b / 64] |= 1 << (b % 64);
        }
        for (w, &bits) in seen.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        Ok(())
    }

    /// Whether the segment has POSTINGS key filters (table `POSTINGS_FILTER`).
    pub fn has_key_filter(&self) -> bool {
        self.table(super::POSTINGS_FILTER)
            .is_some_and(|t| t.meta.entries > 0)
    }

    /// The POSTINGS block that may hold `key`: `None` when no block's key range covers it or
    /// the block's key filter rules it out. Reads only the block index and the filter (never a
    /// posting block), so a planner can count the blocks a set of keys would touch.
    pub fn postings_block_for(&self, key: u64) -> Result<Option<usize>> {
        let Some(t) = self.table(super::POSTINGS) else {
            return Ok(None);
        };
        let bi = t.last_keys.partition_point(|&last| last < key);
        match t.blocks.get(bi) {
            Some(b) if b.first_key <= key => {}
            _ => return Ok(None),
        }
        Ok(self.postings_may_contain(bi, key)?.then_some(bi))
    }

    /// The key filter value of POSTINGS block `bi` in the filter table `slots` (as
    /// `postings_may_contain` reads it; out of the file: empty, "may"). None: no filter.
    fn block_filter(&self, slots: Option<&[FilterSlot]>, bi: usize) -> Option<&[u8]> {
        let &FilterSlot { off, len, .. } = slots?.get(bi)?;
        Some(
            self.map
                .get(off as usize..off as usize + len as usize)
                .unwrap_or(&[]),
        )
    }

    /// [`Segment::postings_block_for`] of many keys as "may the POSTINGS table hold it"
    /// answers: `out[i]` is false exactly when `postings_block_for(keys[i])` is `Ok(None)`
    /// (true for an error: a damaged filter counts as "may hold", and the join's read reports
    /// it). The memory accesses of the keys are overlapped as in
    /// [`Segment::get_postings_many`], in groups of [`LOOKUP_GROUP`] (block search in
    /// lockstep; block index entry and filter slot; filter header; fingerprint bytes; answer),
    /// so a group waits for memory about once a step instead of once a step and key: the
    /// probe choice's key-filter walk is a stream of cache misses into filters of hundreds of
    /// MB, not work.
    pub fn postings_may_hold_many(&self, keys: &[u64], out: &mut Vec<bool>) {
        use super::prefetch;
        out.clear();
        let Some(t) = self.table(super::POSTINGS) else {
            out.resize(keys.len(), false);
            return;
        };
        let n = t.last_keys.len();
        let slots: Option<&[FilterSlot]> = match self.filters.get_or_init(|| self.load_filters()) {
            Ok(s) => s.as_deref(),
            Err(_) => {
                // A damaged filter table: every key in a block's range "may" be there (as
                // `postings_block_for`'s error).
                out.extend(keys.iter().map(|&k| {
                    let bi = t.last_keys.partition_point(|&last| last < k);
                    t.blocks.get(bi).is_some_and(|b| b.first_key <= k)
                }));
                return;
            }
        };
        let filter_of = |bi: usize| self.block_filter(slots, bi);
        const G: usize = LOOKUP_GROUP;
        let mut bis = [0usize; G];
        let mut live = [false; G];
        for chunk in keys.chunks(G) {
            let g = chunk.len();
            if n == 0 {
                out.extend(std::iter::repeat_n(false, g));
                continue;
            }
            // 1. The block of each key, the group's searches in lockstep.
            lockstep_blocks(t, slots, chunk, &mut bis, &mut live);
            // 2. Keys before their block's first key are absent; the others' filter header.
            for j in 0..g {
                if !live[j] {
                    continue;
                }
                if t.blocks[bis[j]].first_key > chunk[j] {
                    live[j] = false;
                    continue;
                }
                if let Some(x) = filter_of(bis[j]).and_then(|v| v.first()) {
                    prefetch(x);
                }
            }
            // 3. The filters' fingerprint bytes.
            for j in 0..g {
                if live[j] {
                    if let Some(Ok(Some(kf))) =
                        filter_of(bis[j]).map(super::filter::KeyFilter::decode)
                    {
                        kf.prefetch(chunk[j]);
                    }
                }
            }
            // 4. The answers (no filter, or an empty one: "may").
            for j in 0..g {
                out.push(
                    live[j]
                        && filter_of(bis[j])
                            .is_none_or(|v| super::filter::may_contain(v, chunk[j])),
                );
            }
        }
    }

    /// [`Segment::postings_may_hold_many`] of keys in ascending order (repeats allowed): the
    /// same answers, found by one forward walk over the block index and the key filters in
    /// file order. The block cursor only moves forward (a gallop from the current block), so
    /// a batch's sorted keys read each segment's block index and filters once, sequentially
    /// (cache and readahead friendly), instead of one random search and filter per key.
    /// `keys` must ascend (debug builds assert it): a key below the cursor's block would be
    /// answered against that block.
    ///
    /// A software pipeline: key `i + SORTED_AHEAD` is located (cursor, block's first key, the
    /// filter's seed and length from the heap's [`FilterSlot`]) and its three fingerprint
    /// bytes are prefetched while key `i` is answered from bytes asked for earlier, so the
    /// misses of a run of keys overlap without a barrier between groups; a key reads nothing
    /// of the map but its three fingerprint bytes.
    pub fn postings_may_hold_sorted(&self, keys: &[u64], out: &mut Vec<bool>) {
        debug_assert!(keys.windows(2).all(|w| w[0] <= w[1]), "keys not ascending");
        out.clear();
        let Some(t) = self.table(super::POSTINGS) else {
            out.resize(keys.len(), false);
            return;
        };
        let n = t.last_keys.len();
        if n == 0 {
            out.resize(keys.len(), false);
            return;
        }
        // No filter table (or filters off) and a damaged one alike: every key in a block's
        // range "may" be there (as `postings_may_hold_many`).
        let slots: &[FilterSlot] = match self.filters.get_or_init(|| self.load_filters()) {
            Ok(Some(s)) => s,
            Ok(None) | Err(_) => &[],
        };
        let map: &[u8] = &self.map;
        let last = &t.last_keys[..];
        let blocks = &t.blocks[..];
        out.reserve(keys.len());
        // In flight: per key, the absolute map offsets of its fingerprint bytes and the byte
        // their xor must equal; `NO` marks a key decided without them (absent: `fp` 1,
        // "may": `fp` 0, with all three offsets 0 so the xor is 0).
        const A: usize = SORTED_AHEAD;
        const NO: usize = usize::MAX;
        let mut pos = [[0usize; 3]; A];
        let mut want = [0u8; A];
        let mut bi = 0usize;
        let locate = |k: u64, bi: &mut usize| -> ([usize; 3], u8) {
            if *bi < n && last[*bi] < k {
                // Gallop: last[lo] < k; the first block whose last key >= k (or n).
                let mut lo = *bi;
                let mut step = 1usize;
                let hi = loop {
                    let hi = lo + step;
                    if hi >= n {
                        break n;
                    }
                    if last[hi] >= k {
                        break hi;
                    }
                    lo = hi;
                    step *= 2;
                };
                *bi = lo + 1 + last[lo + 1..hi].partition_point(|&l| l < k);
            }
            let b = *bi;
            if b >= n || blocks[b].first_key > k {
                return ([NO, 0, 0], 1);
            }
            match slots.get(b) {
                Some(s) if s.seg_len > 0 => {
                    let (sl, fp) = super::filter::probe(s.seed, s.seg_len, k);
                    let base = s.off as usize + super::filter::FILTER_HEADER_LEN;
                    let p = sl.map(|x| base + x);
                    for &x in &p {
                        if let Some(byte) = map.get(x) {
                            super::prefetch(byte);
                        }
                    }
                    (p, fp)
                }
                _ => ([NO, 0, 0], 0),
            }
        };
        let answer = |p: &[usize; 3], fp: u8| -> bool {
            if p[0] == NO {
                return fp == 0;
            }
            // load_filters checked that every value lies in the map and holds 3 L
            // fingerprint bytes after its header, so these reads are in bounds.
            match (map.get(p[0]), map.get(p[1]), map.get(p[2])) {
                (Some(x), Some(y), Some(z)) => x ^ y ^ z == fp,
                _ => true,
            }
        };
        let head = keys.len().min(A);
        for (j, &k) in keys[..head].iter().enumerate() {
            (pos[j], want[j]) = locate(k, &mut bi);
        }
        for (i, &k) in keys[head..].iter().enumerate() {
            let j = i % A;
            out.push(answer(&pos[j], want[j]));
            (pos[j], want[j]) = locate(k, &mut bi);
        }
        let done = keys.len() - head;
        for i in done..keys.len() {
            let j = i % A;
            out.push(answer(&pos[j], want[j]));
        }
    }

    /// [`Segment::get_postings_many`] of POSTINGS while its key filters are looked up one at a
    /// time ([`Segment::filter_slots`]): the keys one after another as `get_postings` takes
    /// them (the same lists and errors), after two passes that only ask the kernel for what
    /// they will read: the filter blocks of the keys' POSTINGS blocks, then the POSTINGS
    /// blocks whose filter admits a key. From a cold page cache a query's few hundred reads
    /// then overlap.
    fn get_postings_points(
        &self,
        t: &Table,
        keys: &[u64],
        mut f: impl FnMut(usize, PostingList<'_>),
    ) -> Result<()> {
        let block_of = |k: u64| {
            let bi = t.last_keys.partition_point(|&last| last < k);
            t.blocks
                .get(bi)
                .is_some_and(|b| b.first_key <= k)
                .then_some(bi)
        };
        if keys.len() > 1 {
            for &k in keys {
                if let Some(bi) = block_of(k) {
                    self.read_filter_block_ahead(bi);
                }
            }
            for &k in keys {
                if let Some(bi) = block_of(k) {
                    // Errors are left to the lookups below, in key order.
                    if self.point_may_contain(bi, k).unwrap_or(false) {
                        self.read_block_ahead(t, bi);
                    }
                }
            }
        }
        for (i, &k) in keys.iter().enumerate() {
            if let Some(list) = self.get_postings(super::POSTINGS, k)? {
                f(i, list);
            }
        }
        Ok(())
    }

    /// [`Segment::get_postings`] of many keys, their memory accesses overlapped: the keys go
    /// through the steps of a lookup (block search; block index entry and key filter header;
    /// the filter's fingerprint bytes; the filter's answer and the block's key search; the
    /// key's value ends; the value; its list) in groups of [`LOOKUP_GROUP`], each step asking
    /// the CPU for the cache lines of the next one for the whole group, so a group waits for
    /// memory about once a step instead of once a step and key (a large segment's lookups are
    /// cache misses, not work). Calls `f(i, list)` for every `keys[i]` the table holds, in the
    /// order of `keys` (ascending keys touch the block index and blocks in file order); the
    /// lists, and the errors, are those of `get_postings` one key at a time.
    pub fn get_postings_many(
        &self,
        table: u32,
        keys: &[u64],
        mut f: impl FnMut(usize, PostingList<'_>),
    ) -> Result<()> {
        use super::prefetch;
        let Some(t) = self.table(table) else {
            return Ok(());
        };
        let n = t.last_keys.len();
        if n == 0 {
            return Ok(());
        }
        let slots: Option<&[FilterSlot]> = if table == super::POSTINGS {
            // Counted by the lookups themselves (`get_postings` one key at a time).
            match self.filter_slots(0) {
                None => return self.get_postings_points(t, keys, f),
                Some(Ok(s)) => s.as_deref(),
                Some(Err(_)) => {
                    // A damaged filter table: the keys one at a time, which report it for
                    // exactly the keys whose lookups reach a filter.
                    for (i, &k) in keys.iter().enumerate() {
                        if let Some(list) = self.get_postings(table, k)? {
                            f(i, list);
                        }
                    }
                    return Ok(());
                }
            }
        } else {
            None
        };
        let filter_of = |bi: usize| self.block_filter(slots, bi);
        const G: usize = LOOKUP_GROUP;
        let mut bis = [0usize; G];
        let mut live = [false; G];
        let mut found: [Option<(BlockView<'_>, usize)>; G] = [None; G];
        let mut values: [Option<&[u8]>; G] = [None; G];
        for (c, chunk) in keys.chunks(G).enumerate() {
            let g = chunk.len();
            // 1. The block of each key, the group's searches in lockstep.
            lockstep_blocks(t, slots, chunk, &mut bis, &mut live);
            // 2. Keys before their block's first key are absent; the others' filter and block
            //    headers.
            for j in 0..g {
                if !live[j] {
                    continue;
                }
                let b = &t.blocks[bis[j]];
                if b.first_key > chunk[j] {
                    live[j] = false;
                    continue;
                }
                if let Some(x) = self.map.get(b.offset as usize) {
                    prefetch(x);
                }
                if let Some(x) = filter_of(bis[j]).and_then(|v| v.first()) {
                    prefetch(x);
                }
            }
            // 3. The filters' fingerprint bytes.
            for j in 0..g {
                if live[j] {
                    if let Some(Ok(Some(kf))) =
                        filter_of(bis[j]).map(super::filter::KeyFilter::decode)
                    {
                        kf.prefetch(chunk[j]);
                    }
                }
            }
            // 4. The filters' answers; where a key may be present, the block asked for
            //    (unless read already), then the first cache lines of its search (its key
            //    sequence's sample and bucket). The blocks are all asked for before the first
            //    is parsed: from a cold page cache the group's reads overlap instead of the
            //    parse waiting for a page of each block in turn.
            for j in 0..g {
                if !live[j] {
                    continue;
                }
                if let Some(v) = filter_of(bis[j]) {
                    if !super::filter::may_contain(v, chunk[j]) {
                        live[j] = false;
                        continue;
                    }
                }
                self.read_block_ahead(t, bis[j]);
            }
            for j in 0..g {
                if !live[j] {
                    continue;
                }
                let b = &t.blocks[bis[j]];
                let bytes = (b.offset as usize)
                    .checked_add(b.len as usize)
                    .and_then(|end| self.map.get(b.offset as usize..end));
                if let Some(Ok(view)) = bytes.map(|x| BlockView::parse_version(x, self.version)) {
                    view.prefetch_find(chunk[j]);
                }
            }
            // 5. The block (checked on first use, as in `get`) and the key's entry; the
            //    cache lines of its value's ends.
            for j in 0..g {
                found[j] = None;
                if !live[j] {
                    continue;
                }
                let view = self.block(t, bis[j])?;
                if let Some(i) = view.find(chunk[j]) {
                    view.prefetch_value(i);
                    found[j] = Some((view, i));
                }
            }
            // 6. The values; their first cache line.
            for j in 0..g {
                values[j] = match &found[j] {
                    Some((view, i)) => {
                        let v = self.value(t, bis[j], view, *i)?;
                        if let Some(x) = v.first() {
                            prefetch(x);
                        }
                        Some(v)
                    }
                    None => None,
                };
            }
            // 7. The lists.
            for (j, v) in values.iter().enumerate().take(g) {
                if let Some(v) = *v {
                    let list = decode_postings(v).map_err(|e| self.rebase(e, v))?;
                    f(c * G + j, list);
                }
            }
        }
        Ok(())
    }

    /// Whether POSTINGS block `bi` may hold `key`, by its key filter (true without one).
    #[inline]
    pub(super) fn postings_may_contain(&self, bi: usize, key: u64) -> Result<bool> {
        let Some(slots) = self.filter_slots(1) else {
            return self.point_may_contain(bi, key);
        };
        match slots {
            Ok(None) => Ok(true),
            Ok(Some(s)) => {
                let Some(&FilterSlot { off, len, .. }) = s.get(bi) else {
                    return Ok(true);
                };
                let v = self
                    .map
                    .get(off as usize..off as usize + len as usize)
                    .unwrap_or(&[]);
                Ok(super::filter::may_contain(v, key))
            }
            Err((off, reason)) => Err(Error::corrupt(&self.path, *off, reason.clone())),
        }
    }

    /// The key filters' slots for `lookups` more filter lookups: loaded already, or loaded now
    /// when the lookups made one at a time so far (these included) are worth the pass over the
    /// table that loading is ([`FILTER_POINT_BYTES`] of the table each); `None` while they are
    /// not (or while [`Segment::load_key_filters`] makes the pass on another thread), and the
    /// caller looks the filters up one at a time ([`Segment::point_may_contain`]).
    /// So a few queries (a `query` command, a server's first requests) read the few filters
    /// they need instead of every filter of the segment (2.6 GB at 10M documents), and a
    /// reader that checks many keys pays for the pass once, as before.
    fn filter_slots(&self, lookups: u64) -> Option<&FilterSlots> {
        if let Some(s) = self.filters.get() {
            return Some(s);
        }
        if self.filter_pass_begun.load(Ordering::Acquire) {
            // The pass runs elsewhere ([`Segment::load_key_filters`]): do not wait for it.
            return None;
        }
        let bytes = self.key_filter_range().map_or(0, |(from, to)| to - from);
        let made = self
            .filter_point_lookups
            .fetch_add(lookups, Ordering::Relaxed)
            + lookups;
        (made.saturating_mul(FILTER_POINT_BYTES) >= bytes)
            .then(|| self.filters.get_or_init(|| self.load_filters()))
    }

    /// Whether POSTINGS block `bi` may hold `key`, its key filter looked up alone: entry `bi`
    /// of table `POSTINGS_FILTER` found through that table's block index and the block checked
    /// on first use, as any lookup is. The same answer as through the loaded slots, and the
    /// same error where the pass would find one in the block that holds the entry (the pass
    /// reports damage anywhere in the table; a point lookup, like every other lookup, only in
    /// what it reads).
    fn point_may_contain(&self, bi: usize, key: u64) -> Result<bool> {
        let ft = match self.filter_table() {
            Ok(Some(ft)) => ft,
            Ok(None) => return Ok(true),
            Err((at, reason)) => return Err(Error::corrupt(&self.path, at, reason)),
        };
        let at = ft.blocks.first().map_or(0, |b| b.offset);
        let Some(v) = self.get(super::POSTINGS_FILTER, bi as u64)? else {
            return Err(Error::corrupt(
                &self.path,
                at,
                format!("key filter table: no filter for POSTINGS block {bi}"),
            ));
        };
        let off = (v.as_ptr() as usize - self.map.as_ptr() as usize) as u64;
        match super::filter::KeyFilter::decode(v) {
            Err((o, reason)) => Err(Error::corrupt(&self.path, off + o as u64, reason)),
            Ok(None) => Ok(true),
            Ok(Some(f)) => Ok(f.may_contain(key)),
        }
    }

    /// [`Segment::read_block_ahead`] of the `POSTINGS_FILTER` block holding block `bi`'s
    /// filter, for point lookups about to be made.
    fn read_filter_block_ahead(&self, bi: usize) {
        if let Some(ft) = self.table(super::POSTINGS_FILTER) {
            let b = ft.last_keys.partition_point(|&last| last < bi as u64);
            self.read_block_ahead(ft, b);
        }
    }

    /// Table `POSTINGS_FILTER` when its filters are to be used: `None` without the table or
    /// with filters turned off ([`super::KEY_FILTER_ENV`] = 0); `Err((offset, reason))` when
    /// its entry count is not the POSTINGS block count (one filter per block).
    fn filter_table(&self) -> std::result::Result<Option<&Table>, (u64, String)> {
        let Some(ft) = self.table(super::POSTINGS_FILTER) else {
            return Ok(None);
        };
        if std::env::var(super::KEY_FILTER_ENV).is_ok_and(|v| v == "0") {
            return Ok(None);
        }
        let blocks = self.table(super::POSTINGS).map_or(0, |t| t.blocks.len()) as u64;
        if ft.meta.entries != blocks {
            return Err((
                ft.blocks.first().map_or(0, |b| b.offset),
                format!(
                    "key filter table has {} entries for {blocks} POSTINGS blocks",
                    ft.meta.entries
                ),
            ));
        }
        Ok(Some(ft))
    }

    /// One pass over table `POSTINGS_FILTER`: its keys must be 0, 1, ... one per POSTINGS
    /// block, its values filters (or empty).
    fn load_filters(&self) -> FilterSlots {
        let Some(ft) = self.filter_table()? else {
            return Ok(None);
        };
        let blocks = self.table(super::POSTINGS).map_or(0, |t| t.blocks.len()) as u64;
        let at = ft.blocks.first().map_or(0, |b| b.offset);
        // The pass reads the whole table: map it in one call (no fault per 4 KiB page), and
        // from a cold page cache as one read-ahead of the whole range.
        self.begin_table_scan(ft);
        #[cfg(target_os = "linux")]
        self.advise_key_filters(memmap2::Advice::PopulateRead);
        let base = self.map.as_ptr() as usize;
        let mut slots = Vec::with_capacity(blocks as usize);
        for (i, e) in self.iter(super::POSTINGS_FILTER).enumerate() {
            let (key, v) = e.map_err(|e| match e {
                Error::Corrupt { offset, reason, .. } => (offset, reason),
                other => (at, other.to_string()),
            })?;
            let off = (v.as_ptr() as usize - base) as u64;
            if key != i as u64 {
                return Err((off, format!("key filter table: key {key} at position {i}")));
            }
            let (seed, seg_len) = match super::filter::KeyFilter::decode(v) {
                Err((o, reason)) => return Err((off + o as u64, reason)),
                Ok(None) => (0, 0),
                Ok(Some(f)) => f.header(),
            };
            slots.push(FilterSlot {
                off,
                seed,
                len: v.len() as u32,
                seg_len,
            });
        }
        Ok(Some(slots.into_boxed_slice()))
    }

    /// Offset of block `bi` of `t` (the file length past the last block).
    pub(super) fn block_offset(&self, t: &Table, bi: usize) -> u64 {
        t.blocks.get(bi).map_or(self.map.len() as u64, |b| b.offset)
    }

    /// The value stored under `key` in `table`. An absent table reads as empty.
    #[inline]
    pub fn get(&self, table: u32, key: u64) -> Result<Option<&[u8]>> {
        let Some(t) = self.table(table) else {
            return Ok(None);
        };
        let bi = t.last_keys.partition_point(|&last| last < key);
        match t.blocks.get(bi) {
            Some(b) if b.first_key <= key => {}
            _ => return Ok(None),
        }
        if table == super::POSTINGS && !self.postings_may_contain(bi, key)? {
            return Ok(None);
        }
        let view = self.block(t, bi)?;
        let Some(i) = view.find(key) else {
            return Ok(None);
        };
        self.value(t, bi, &view, i).map(Some)
    }

    /// `get` + `decode_postings`; errors name this file and the value's offset.
    pub fn get_postings(&self, table: u32, key: u64) -> Result<Option<PostingList<'_>>> {
        match self.get(table, key)? {
            None => Ok(None),
            Some(v) => decode_postings(v).map(Some).map_err(|e| self.rebase(e, v)),
        }
    }

    /// `get` + `decode_u64s` (e.g. a FORWARD entry); errors name this file and offset.
    pub fn get_u64s(&self, table: u32, key: u64) -> Result<Option<U64List<'_>>> {
        match self.get(table, key)? {
            None => Ok(None),
            Some(v) => self.decode_u64s(v).map(Some),
        }
    }

    /// Decodes a FORWARD value of this segment (its form depends on the format version);
    /// errors name this file and the value's offset.
    pub fn decode_u64s<'v>(&self, v: &'v [u8]) -> Result<U64List<'v>> {
        decode_u64s_version(v, self.version).map_err(|e| self.rebase(e, v))
    }

    /// Whether this segment's FORWARD values are ranks of POSTINGS keys (format 3), which
    /// [`Segment::forward_into`] maps back to the feature hashes.
    pub fn ranked_forward(&self) -> bool {
        self.version >= super::RANKED_FORWARD_VERSION
    }

    /// Replaces `out` with the sorted feature hashes of `doc` (its FORWARD entry, ranks mapped
    /// to POSTINGS keys in format 3). False when the segment has no entry for `doc`.
    pub fn forward_into(&self, doc: u64, out: &mut Vec<u64>) -> Result<bool> {
        out.clear();
        match self.get(super::FORWARD, doc)? {
            None => Ok(false),
            Some(v) => self.decode_forward_into(v, out).map(|()| true),
        }
    }

    /// Replaces `out` with the FORWARD list of `doc` as stored: its feature hashes (formats 1
    /// and 2) or the ranks of its features among this segment's POSTINGS keys (format 3,
    /// [`Segment::ranked_forward`]), ascending either way, with no rank mapped to a key:
    /// two documents of one ranked segment share exactly as many ranks as features, which is
    /// all exact verification needs (|A ∩ B|). False when the segment has no entry for `doc`.
    pub fn forward_raw_into(&self, doc: u64, out: &mut Vec<u64>) -> Result<bool> {
        out.clear();
        match self.get(super::FORWARD, doc)? {
            None => Ok(false),
            Some(v) => {
                self.decode_u64s(v)?.extend_into(out);
                Ok(true)
            }
        }
    }

    /// The number of features in the FORWARD value `v` of this segment (no list decoded).
    pub fn forward_len(&self, v: &[u8]) -> Result<usize> {
        Ok(self.decode_u64s(v)?.len())
    }

    /// Format 3: replaces the ranks `list[from..]` (a FORWARD list of this segment, from
    /// [`Segment::forward_raw_into`]) by the feature hashes they stand for, as
    /// [`Segment::forward_into`] would have given them. Nothing to do for formats 1 and 2.
    pub fn ranks_to_keys(&self, list: &mut Vec<u64>, from: usize) -> Result<()> {
        if !self.ranked_forward() || from >= list.len() {
            return Ok(());
        }
        if let Some(keys) = self.key_cache.get().and_then(|c| c.as_ref()) {
            return gather(&keys.keys, &mut list[from..]).map_err(|r| {
                let total = keys.keys.len();
                Error::corrupt(
                    &self.path,
                    0,
                    format!("forward list: rank {r} is past the {total} POSTINGS keys"),
                )
            });
        }
        let ranks = list.split_off(from);
        self.keys_at_ranks(ranks.iter().copied(), list)
            .map_err(|e| match e {
                Error::Corrupt { offset, reason, .. } => Error::corrupt(&self.path, offset, reason),
                other => other,
            })
    }

    /// Format 3: replaces every rank in `ranks` (ranks of this segment's POSTINGS keys in any
    /// order, e.g. the FORWARD lists of many documents one after the other) by the key it
    /// stands for, as [`Segment::ranks_to_keys`] does list by list. With the decoded keys in
    /// memory that is a gather; without them the ranks are first ordered by POSTINGS block (a
    /// counting sort through a rank directory), then each block is located and its key sequence
    /// read once for all the ranks it holds (one select each, or one sequential decode of the
    /// block when they are many), instead of once per rank, at random, as list by list does.
    /// Nothing to do for formats 1 and 2.
    pub fn ranks_to_keys_bulk(&self, ranks: &mut [u64]) -> Result<()> {
        if !self.ranked_forward() || ranks.is_empty() {
            return Ok(());
        }
        let bad = |r: u64, what: &str| {
            Error::corrupt(&self.path, 0, format!("forward list: rank {r} {what}"))
        };
        let Some(starts) = self.rank_starts()? else {
            return Err(bad(ranks[0], "in a segment without POSTINGS ranks"));
        };
        let total = starts[starts.len() - 1];
        // The decoded keys when this segment has them; a bulk mapping does not count towards
        // decoding them (by blocks it costs about what they would save).
        if let Some(keys) = self
            .key_cache
            .get()
            .and_then(|c| c.as_ref())
            .map(|c| &c.keys[..])
        {
            return gather(keys, ranks)
                .map_err(|r| bad(r, &format!("is past the {total} POSTINGS keys")));
        }
        self.ranks_to_keys_by_blocks(ranks)
    }

    /// [`Segment::ranks_to_keys_bulk`] for a reader that maps most of this segment's lists
    /// (probe matching maps every probing document's list): the ranks count towards decoding
    /// the segment's keys, as list-by-list mapping does ([`Segment::ranks_to_keys`]), so once
    /// more than a sixteenth of its POSTINGS keys went through here and the budget allows,
    /// the keys are decoded once and the rest is a gather. The same keys either way.
    pub fn ranks_to_keys_bulk_caching(&self, ranks: &mut [u64]) -> Result<()> {
        if !self.ranked_forward() || ranks.is_empty() {
            return Ok(());
        }
        if let Some(starts) = self.rank_starts()? {
            let total = starts[starts.len() - 1];
            if self.key_cache.get().is_none() {
                self.ranks_selected
                    .fetch_add(ranks.len() as u64, Ordering::Relaxed);
            }
            if let Some(keys) = self.cached_keys(starts, total) {
                return gather(keys, ranks).map_err(|r| {
                    Error::corrupt(
                        &self.path,
                        0,
                        format!("forward list: rank {r} is past the {total} POSTINGS keys"),
                    )
                });
            }
        }
        self.ranks_to_keys_by_blocks(ranks)
    }

    /// [`Segment::ranks_to_keys_bulk`] by blocks, never through the decoded keys (tests and
    /// the fuzz target use it to check that path whatever the key cache holds).
    pub fn ranks_to_keys_by_blocks(&self, ranks: &mut [u64]) -> Result<()> {
        if !self.ranked_forward() || ranks.is_empty() {
            return Ok(());
        }
        let bad = |r: u64, what: &str| {
            Error::corrupt(&self.path, 0, format!("forward list: rank {r} {what}"))
        };
        let (Some(starts), Some(t)) = (self.rank_starts()?, self.table(super::POSTINGS)) else {
            return Err(bad(ranks[0], "in a segment without POSTINGS ranks"));
        };
        let total = starts[starts.len() - 1];
        let blocks = starts.len() - 1;
        // Rank directory: the block of rank `j << shift`, about four entries a block.
        let per_block = (total / blocks.max(1) as u64).max(1);
        let shift = (per_block / 4).max(1).ilog2();
        let mut dir = Vec::with_capacity((total >> shift) as usize + 1);
        let mut b = 0usize;
        for j in 0..=(total >> shift) {
            let r = j << shift;
            while b + 1 < blocks && starts[b + 1] <= r {
                b += 1;
            }
            dir.push(b as u32);
        }
        let block_of = |r: u64| {
            let mut b = dir[(r >> shift) as usize] as usize;
            while starts[b + 1] <= r {
                b += 1;
            }
            b
        };
        // Counting sort of the positions by block.
        let mut at = vec![0u32; blocks + 1];
        for &r in ranks.iter() {
            if r >= total {
                return Err(bad(r, &format!("is past the {total} POSTINGS keys")));
            }
            at[block_of(r) + 1] += 1;
        }
        for b in 0..blocks {
            at[b + 1] += at[b];
        }
        let mut order = vec![0u32; ranks.len()];
        let mut fill = at.clone();
        for (i, &r) in ranks.iter().enumerate() {
            let b = block_of(r);
            order[fill[b] as usize] = i as u32;
            fill[b] += 1;
        }
        drop(fill);
        let mut decoded: Vec<u64> = Vec::new();
        for bi in 0..blocks {
            let here = &order[at[bi] as usize..at[bi + 1] as usize];
            if here.is_empty() {
                continue;
            }
            let (lo, hi) = (starts[bi], starts[bi + 1]);
            let ks = self.key_seq_cached(t, bi, hi - lo)?;
            let ef = self.key_ef(&ks)?;
            if here.len() as u64 * DECODE_WHOLE_BLOCK >= hi - lo {
                // Many ranks in this block: one sequential decode of its keys (it reads the
                // block's bytes in order; selects at random positions miss the cache on
                // nearly every low-bits read).
                decoded.clear();
                ef.decode_into(ks.first_key, &mut decoded);
                for &i in here {
                    let r = ranks[i as usize];
                    ranks[i as usize] = *decoded
                        .get((r - lo) as usize)
                        .ok_or_else(|| bad(r, "has no key"))?;
                }
            } else {
                for &i in here {
                    let r = ranks[i as usize];
                    let k = ef
                        .get((r - lo) as usize)
                        .ok_or_else(|| bad(r, "has no key"))?;
                    ranks[i as usize] = ks.first_key.wrapping_add(k);
                }
            }
        }
        Ok(())
    }

    /// Appends to `out` the coarse key ([`coarse_key`]) of every value of `list`, a FORWARD
    /// list of this segment as stored ([`Segment::forward_raw_into`]): of the hash itself in
    /// formats 1 and 2, of the POSTINGS key at the rank in format 3, through a table of about
    /// 0.4 MB built on first use by one sequential pass over the keys (no rank mapped to its
    /// key). False (nothing appended) when this segment has no such table (more than
    /// `u32::MAX` keys). Exactly `coarse_key` of what [`Segment::ranks_to_keys`] gives.
    pub fn coarse_into(&self, list: &[u64], out: &mut Vec<u16>) -> Result<bool> {
        if !self.ranked_forward() {
            out.extend(list.iter().map(|&h| coarse_key(h)));
            return Ok(true);
        }
        let c = match self.coarse.get() {
            Some(c) => c,
            None => {
                let c = self.load_coarse()?;
                let _ = self.coarse.set(c);
                self.coarse.get().unwrap_or(&None)
            }
        };
        let Some(c) = c else {
            return Ok(false);
        };
        out.reserve(list.len());
        for &r in list {
            if r >= c.total {
                return Err(Error::corrupt(
                    &self.path,
                    0,
                    format!(
                        "forward list: rank {r} is past the {} POSTINGS keys",
                        c.total
                    ),
                ));
            }
            let mut v = c.dir[(r >> c.shift) as usize] as usize;
            while u64::from(c.first[v + 1]) <= r {
                v += 1;
            }
            out.push(v as u16);
        }
        Ok(true)
    }

    /// Whether comparing this segment's lists by coarse keys first ([`Segment::coarse_into`])
    /// pays, for a reader about to map `ranks` of its ranks to keys for cross-segment
    /// comparisons: always in formats 1 and 2 (the hashes are stored) and once the table is
    /// built; else the ranks count here, and the table (one sequential pass over the keys) is
    /// worth building once they pass a 32nd of the POSTINGS keys (before that, mapping
    /// them costs less than the pass: an ingest's few cross-segment candidates).
    pub fn coarse_pays(&self, ranks: u64) -> bool {
        if !self.ranked_forward() || self.coarse.get().is_some() {
            return true;
        }
        let total = self.table(super::POSTINGS).map_or(0, |t| t.meta.entries);
        let before = self.coarse_wanted.fetch_add(ranks, Ordering::Relaxed);
        before + ranks > total / 32
    }

    /// Builds the rank -> coarse key table ([`CoarseRanks`]) by decoding every POSTINGS
    /// block's keys in order (each block checked as a rank lookup checks it); None without
    /// a rank table or with more than `u32::MAX` keys.
    fn load_coarse(&self) -> Result<Option<CoarseRanks>> {
        let (Some(starts), Some(t)) = (self.rank_starts()?, self.table(super::POSTINGS)) else {
            return Ok(None);
        };
        let total = starts[starts.len() - 1];
        if total > u64::from(u32::MAX) {
            return Ok(None);
        }
        let values = 1usize << COARSE_BITS;
        // About one to two `dir` entries a coarse value.
        let shift = (total / values as u64).max(1).ilog2();
        let mut first = vec![0u32; values + 1];
        let mut dir = Vec::with_capacity((total >> shift) as usize + 1);
        let mut next = 0usize; // first[..next] are set
        let mut prev: Option<u64> = None;
        let mut decoded = Vec::new();
        for bi in 0..starts.len() - 1 {
            let (lo, hi) = (starts[bi], starts[bi + 1]);
            let ks = self.key_seq_cached(t, bi, hi - lo)?;
            let ef = self.key_ef(&ks)?;
            decoded.clear();
            ef.decode_into(ks.first_key, &mut decoded);
            if decoded.len() as u64 != hi - lo {
                return Err(Error::corrupt(
                    &self.path,
                    t.blocks[bi].offset,
                    format!(
                        "POSTINGS block {bi} decodes to {} keys, the rank table says {}",
                        decoded.len(),
                        hi - lo
                    ),
                ));
            }
            for (j, &k) in decoded.iter().enumerate() {
                if prev.is_some_and(|p| p >= k) {
                    return Err(Error::corrupt(
                        &self.path,
                        t.blocks[bi].offset,
                        format!("POSTINGS keys out of order in block {bi}"),
                    ));
                }
                prev = Some(k);
                let r = lo + j as u64;
                let v = coarse_key(k) as usize;
                while next <= v {
                    first[next] = r as u32;
                    next += 1;
                }
                if r & ((1u64 << shift) - 1) == 0 {
                    dir.push(v as u16);
                }
            }
        }
        while next <= values {
            first[next] = total as u32;
            next += 1;
        }
        Ok(Some(CoarseRanks {
            first: first.into_boxed_slice(),
            dir: dir.into_boxed_slice(),
            shift,
            total,
        }))
    }

    /// Appends to `out` the ranks among this segment's POSTINGS keys of those of the sorted,
    /// unique hashes `keys` that it holds (ascending; an absent hash gets none, and no
    /// document of this segment holds it). Format 3 only (empty otherwise). One POSTINGS
    /// lookup per hash, after the block range and the key filter.
    pub fn ranks_of(&self, keys: &[u64], out: &mut Vec<u64>) -> Result<()> {
        self.ranks_of_each(keys, |_, r| out.push(r))
    }

    /// [`Segment::ranks_of`] handing each rank found to `f` with the position in `keys` of
    /// the hash it belongs to: `f(i, rank of keys[i])`, in ascending order of `i` (and so of
    /// rank). Format 3 only (no call otherwise).
    pub fn ranks_of_each(&self, keys: &[u64], mut f: impl FnMut(usize, u64)) -> Result<()> {
        if !self.ranked_forward() {
            return Ok(());
        }
        let (Some(starts), Some(t)) = (self.rank_starts()?, self.table(super::POSTINGS)) else {
            return Ok(());
        };
        let mut bi = 0usize;
        let mut cur: Option<(usize, BlockView<'_>)> = None;
        for (ki, &k) in keys.iter().enumerate() {
            bi += t.last_keys[bi..].partition_point(|&last| last < k);
            match t.blocks.get(bi) {
                Some(b) if b.first_key <= k => {}
                Some(_) => continue,
                None => break,
            }
            if !self.postings_may_contain(bi, k)? {
                continue;
            }
            let view = match cur {
                Some((at, v)) if at == bi => v,
                _ => {
                    let v = self.block(t, bi)?;
                    let count = starts[bi + 1] - starts[bi];
                    if v.len() as u64 != count {
                        return Err(Error::corrupt(
                            &self.path,
                            t.blocks[bi].offset,
                            format!(
                                "POSTINGS block {bi} holds {} keys, the rank table says {count}",
                                v.len()
                            ),
                        ));
                    }
                    cur = Some((bi, v));
                    v
                }
            };
            if let Some(i) = view.find(k) {
                f(ki, starts[bi] + i as u64);
            }
        }
        Ok(())
    }

    /// Appends the feature hashes of the FORWARD value `v` of this segment to `out`: the
    /// stored hashes (formats 1 and 2), or the POSTINGS keys at the stored ranks (format 3).
    pub fn decode_forward_into(&self, v: &[u8], out: &mut Vec<u64>) -> Result<()> {
        let list = self.decode_u64s(v)?;
        if !self.ranked_forward() {
            list.extend_into(out);
            return Ok(());
        }
        if let Some(keys) = self.key_cache.get().and_then(|c| c.as_ref()) {
            // The decoded keys: ranks decoded sequentially in place, then gathered (loads
            // independent of each other, so many misses overlap; a prefetch runs ahead).
            let start = out.len();
            list.extend_into(out);
            return gather(&keys.keys, &mut out[start..]).map_err(|r| {
                let total = keys.keys.len();
                let e = Error::corrupt(
                    VALUE_PATH,
                    0,
                    format!("forward list: rank {r} is past the {total} POSTINGS keys"),
                );
                self.rebase(e, v)
            });
        }
        self.keys_at_ranks(list.iter(), out)
            .map_err(|e| self.rebase(e, v))
    }

    /// The rank of every POSTINGS block's first key, then the POSTINGS entry count (so block
    /// `b` holds ranks `starts[b]..starts[b + 1]`); None without table `POSTINGS_RANKS`.
    fn rank_starts(&self) -> Result<Option<&[u64]>> {
        match self.ranks.get_or_init(|| self.load_ranks()) {
            Ok(r) => Ok(r.as_deref()),
            Err((off, reason)) => Err(Error::corrupt(&self.path, *off, reason.clone())),
        }
    }

    /// One pass over table `POSTINGS_RANKS`: keys 0, 1, ... one per POSTINGS block, values u64
    /// LE starting at 0 and growing by each block's entry count (checked against the block
    /// when it is read), the last block ending below the POSTINGS entry count.
    fn load_ranks(&self) -> RankStarts {
        let Some(rt) = self.table(super::POSTINGS_RANKS) else {
            return Ok(None);
        };
        let (blocks, entries) = self
            .table(super::POSTINGS)
            .map_or((0, 0), |t| (t.blocks.len() as u64, t.meta.entries));
        let at = rt.blocks.first().map_or(0, |b| b.offset);
        if rt.meta.entries != blocks {
            return Err((
                at,
                format!(
                    "rank table has {} entries for {blocks} POSTINGS blocks",
                    rt.meta.entries
                ),
            ));
        }
        let base = self.map.as_ptr() as usize;
        let mut starts = Vec::with_capacity(blocks as usize + 1);
        for (i, e) in self.iter(super::POSTINGS_RANKS).enumerate() {
            let (key, v) = e.map_err(|e| match e {
                Error::Corrupt { offset, reason, .. } => (offset, reason),
                other => (at, other.to_string()),
            })?;
            let off = (v.as_ptr() as usize - base) as u64;
            let start = <[u8; 8]>::try_from(v)
                .map(u64::from_le_bytes)
                .map_err(|_| (off, format!("rank table: value of {} bytes", v.len())))?;
            let want_first = i == 0 && start != 0;
            let not_growing = starts.last().is_some_and(|&p| start <= p);
            if key != i as u64 || want_first || not_growing || start >= entries {
                return Err((
                    off,
                    format!("rank table: entry {i} (key {key}) has impossible rank {start}"),
                ));
            }
            starts.push(start);
        }
        starts.push(entries);
        Ok(Some(starts.into_boxed_slice()))
    }

    /// Appends the POSTINGS keys at `ranks` (ascending) to `out`: from the decoded keys when
    /// this segment has them, else from the POSTINGS blocks
    /// ([`Segment::keys_at_ranks_as`], with the rank read-ahead when
    /// [`Segment::read_ranks_ahead`] is on).
    fn keys_at_ranks(
        &self,
        ranks: impl Iterator<Item = u64> + Clone,
        out: &mut Vec<u64>,
    ) -> Result<()> {
        self.keys_at_ranks_as(ranks, None, out)
    }

    /// [`Segment::ranks_to_keys`] of `ranks` (any order) appended to `out`, always through the
    /// POSTINGS blocks whatever the key cache holds, with the rank read-ahead on or off as
    /// `read_ahead` says: for tests and the fuzz target, which check that path against the
    /// keys.
    pub fn ranks_to_keys_in_blocks(
        &self,
        ranks: &[u64],
        read_ahead: bool,
        out: &mut Vec<u64>,
    ) -> Result<()> {
        self.keys_at_ranks_as(ranks.iter().copied(), Some(read_ahead), out)
    }

    /// [`Segment::keys_at_ranks`]; `blocks_ahead`: Some to map through the blocks whatever
    /// the key cache holds, with (true) or without the read-ahead.
    fn keys_at_ranks_as(
        &self,
        ranks: impl Iterator<Item = u64> + Clone,
        blocks_ahead: Option<bool>,
        out: &mut Vec<u64>,
    ) -> Result<()> {
        let bad = |r: u64, what: &str| {
            Error::corrupt(
                super::postings::VALUE_PATH,
                0,
                format!("forward list: rank {r} {what}"),
            )
        };
        let starts = self.rank_starts()?;
        let (Some(starts), Some(t)) = (starts, self.table(super::POSTINGS)) else {
            let mut ranks = ranks;
            return match ranks.next() {
                None => Ok(()),
                Some(r) => Err(bad(r, "in a segment without POSTINGS ranks")),
            };
        };
        let total = starts[starts.len() - 1];
        if blocks_ahead.is_none() {
            if let Some(keys) = self.cached_keys(starts, total) {
                for r in ranks {
                    let k = keys
                        .get(r as usize)
                        .ok_or_else(|| bad(r, &format!("is past the {total} POSTINGS keys")))?;
                    out.push(*k);
                }
                return Ok(());
            }
        }
        // From the blocks. With the read-ahead, a first pass locates each rank's POSTINGS
        // block and asks for the blocks this process has not read for that before (no key
        // sequence remembered in `rank_blocks`) together ([`Segment::read_block_ahead`]): a
        // candidate's FORWARD list of a few hundred ranks reads about as many blocks, which a
        // query of an index larger than memory would otherwise wait for one at a time. The
        // mapping then takes the blocks that pass located, so a warm lookup pays for no
        // second search.
        let before = out.len();
        let located = blocks_ahead
            .unwrap_or_else(|| self.rank_read_ahead.load(Ordering::Relaxed))
            .then(|| self.locate_rank_blocks_ahead(t, starts, ranks.clone()));
        // The ranks go in groups of RANK_GROUP through the steps of a mapping, each step
        // asking the CPU for the cache lines of the next for the whole group (as
        // `get_postings_many` does for keys): 1. each rank's block (its key-sequence slot
        // asked for); 2. the block's key sequence (its select sample, high and low bits asked
        // for); 3. the key. Nearly every rank of a list lies in another block, so the group
        // waits for memory about once a step instead of once a step and rank. Errors are
        // reported for the first rank that has one, as one rank after another would.
        const G: usize = RANK_GROUP;
        let slots = self.rank_blocks.get();
        // A block in use: its first and end rank, first key and key sequence.
        type InUse<'s> = (u64, u64, u64, EfView<'s>);
        let mut cur: Option<InUse<'_>> = None;
        let mut group = [(0usize, 0u64); G];
        let mut blk = [usize::MAX; G];
        let mut seq: [Option<InUse<'_>>; G] = [None; G];
        let mut ranks = ranks.enumerate();
        loop {
            let mut g = 0;
            for x in ranks.by_ref().take(G) {
                group[g] = x;
                g += 1;
            }
            if g == 0 {
                break;
            }
            // 1. Blocks; a rank past the keys ends the group (reported after those before it).
            let mut past = None;
            let mut last = cur.map(|(lo, hi, ..)| (lo, hi));
            for j in 0..g {
                let (i, r) = group[j];
                if r >= total {
                    past = Some(r);
                    g = j;
                    break;
                }
                blk[j] = match last {
                    Some((lo, hi)) if lo <= r && r < hi => usize::MAX, // the previous rank's
                    _ => {
                        let bi = match &located {
                            Some(at) => at[i] as usize,
                            None => rank_block(starts, r),
                        };
                        last = Some((starts[bi], starts[bi + 1]));
                        if let Some(slot) = slots.and_then(|s| s.get(bi)) {
                            super::prefetch(slot);
                        }
                        bi
                    }
                };
            }
            // 2. Key sequences, up to the first that fails.
            let mut failed = None;
            for j in 0..g {
                let bi = blk[j];
                if bi == usize::MAX {
                    seq[j] = if j == 0 { cur } else { seq[j - 1] };
                } else {
                    let (lo, hi) = (starts[bi], starts[bi + 1]);
                    match self
                        .key_seq_cached(t, bi, hi - lo)
                        .and_then(|ks| Ok((ks.first_key, self.key_ef(&ks)?)))
                    {
                        Ok((first_key, ef)) => seq[j] = Some((lo, hi, first_key, ef)),
                        Err(e) => {
                            failed = Some((j, e));
                            break;
                        }
                    }
                }
                if let Some((lo, _, _, ef)) = seq[j] {
                    ef.prefetch_get((group[j].1 - lo) as usize);
                }
            }
            // 3. Keys.
            let end = failed.as_ref().map_or(g, |&(j, _)| j);
            for j in 0..end {
                let r = group[j].1;
                let Some((lo, _, first_key, ef)) = seq[j] else {
                    unreachable!("every rank before `end` has its block's key sequence");
                };
                let k = ef
                    .get((r - lo) as usize)
                    .ok_or_else(|| bad(r, "has no key"))?;
                out.push(first_key.wrapping_add(k));
            }
            if let Some((_, e)) = failed {
                return Err(e);
            }
            if let Some(r) = past {
                return Err(bad(r, &format!("is past the {total} POSTINGS keys")));
            }
            cur = seq[g - 1];
        }
        self.ranks_selected
            .fetch_add((out.len() - before) as u64, Ordering::Relaxed);
        Ok(())
    }

    /// The first pass of [`Segment::keys_at_ranks_as`] with read-ahead on: the POSTINGS block of
    /// every rank of `ranks` below the entry count (one search per change of block;
    /// `u32::MAX` for a rank past it, which the mapping reports), after asking for each block
    /// whose key sequence this process has not read yet. Whether it has is a load from the
    /// block's slot in `rank_blocks`, a cache miss for nearly every rank, so the slots are
    /// asked of the CPU a few blocks ahead: a warm mapping (every block seen) then costs
    /// little more than the searches.
    fn locate_rank_blocks_ahead(
        &self,
        t: &Table,
        starts: &[u64],
        ranks: impl Iterator<Item = u64>,
    ) -> Vec<u32> {
        const AHEAD: usize = 8;
        let blocks = starts.len() - 1;
        let mut at = Vec::with_capacity(ranks.size_hint().0);
        let (mut bi, mut lo, mut hi) = (0usize, 0u64, 0u64);
        for r in ranks {
            if r >= starts[blocks] {
                at.push(u32::MAX);
                continue;
            }
            if r < lo || r >= hi {
                bi = rank_block(starts, r);
                (lo, hi) = (starts[bi], starts[bi + 1]);
            }
            at.push(bi as u32);
        }
        let seen = self.rank_blocks.get();
        let mut prev = u32::MAX;
        for i in 0..at.len() {
            if let Some(slot) = at
                .get(i + AHEAD)
                .and_then(|&b| seen.and_then(|s| s.get(b as usize)))
            {
                super::prefetch(slot);
            }
            let b = at[i];
            if b == prev || b == u32::MAX {
                continue;
            }
            prev = b;
            let read = seen
                .and_then(|s| s.get(b as usize))
                .is_some_and(|k| k.get().is_some());
            if !read {
                self.read_block_ahead(t, b as usize);
            }
        }
        at
    }

    /// Format 3: decodes the POSTINGS keys into memory now, as the first mapping of more than
    /// a sixteenth of them would ([`Segment::ranks_to_keys_bulk_caching`]), if the key-cache
    /// budget has room; for a reader about to map that many ranks on several threads (the
    /// decode runs on every core; inside a mapping the other threads would wait for it).
    /// Whether the keys are in memory.
    pub fn decode_keys(&self) -> bool {
        if !self.ranked_forward() {
            return false;
        }
        let Ok(Some(starts)) = self.rank_starts() else {
            return false;
        };
        let total = starts[starts.len() - 1];
        self.key_cache
            .get_or_init(|| self.load_key_cache(starts, total))
            .is_some()
    }

    /// Format 3: takes `keys` as this segment's POSTINGS keys in rank order, as
    /// [`Segment::decode_keys`] would decode them, from the writer that has just written the
    /// segment from them (ingest's matching: `SegmentBuilder::keep_keys`), so no block is read
    /// back for them. They must agree with the file's index: as many as its rank table counts,
    /// strictly ascending, and every POSTINGS block's first and last key at its first and last
    /// rank; else, or when the keys are in memory already or the key-cache budget has no room
    /// for them, nothing is kept (false) and the keys are decoded from the file as before.
    /// Blocks read later (a posting list, a value) are still checked on first use.
    pub fn seed_keys(&self, keys: Vec<u64>) -> bool {
        if !self.ranked_forward() || self.key_cache.get().is_some() {
            return false;
        }
        if !self.keys_agree(&keys) || !take_key_cache_budget(keys.len() as u64 * 8) {
            return false;
        }
        let cache = KeyCache {
            keys: keys.into_boxed_slice(),
        };
        // Another thread may have decoded them meanwhile: then `cache` drops (budget back).
        self.key_cache.set(Some(cache)).is_ok()
    }

    /// Whether `keys` can be this format-3 segment's POSTINGS keys in rank order, as far as
    /// the file's index tells without reading a block ([`Segment::seed_keys`]).
    pub(crate) fn keys_agree(&self, keys: &[u64]) -> bool {
        let (Ok(Some(starts)), Some(t)) = (self.rank_starts(), self.table(super::POSTINGS)) else {
            return false;
        };
        keys.len() as u64 == starts[starts.len() - 1]
            && starts.len() == t.blocks.len() + 1
            && keys.windows(2).all(|w| w[0] < w[1])
            && t.blocks.iter().enumerate().all(|(bi, b)| {
                let (lo, hi) = (starts[bi] as usize, starts[bi + 1] as usize);
                hi > lo
                    && keys.get(lo) == Some(&b.first_key)
                    && keys.get(hi - 1) == Some(&b.last_key)
            })
    }

    /// Format 3: how many POSTINGS keys this segment holds decoded in memory (None: the ranks
    /// are still mapped one select at a time). For tests and benchmarks.
    pub fn cached_key_count(&self) -> Option<usize> {
        self.key_cache.get()?.as_ref().map(|c| c.keys.len())
    }

    /// The decoded POSTINGS keys (rank order) once this segment has mapped more than a
    /// sixteenth of its `total` keys one select at a time (so a few lookups never pay for a
    /// whole decode) and the budget allows; None before, or when a block does not read back.
    fn cached_keys(&self, starts: &[u64], total: u64) -> Option<&[u64]> {
        if let Some(c) = self.key_cache.get() {
            return c.as_ref().map(|c| &c.keys[..]);
        }
        if self.ranks_selected.load(Ordering::Relaxed) <= total / 16 {
            return None;
        }
        let c = self
            .key_cache
            .get_or_init(|| self.load_key_cache(starts, total));
        c.as_ref().map(|c| &c.keys[..])
    }

    /// One pass over the POSTINGS blocks (each checked as on any first use), decoding their
    /// keys: groups of [`KEY_CACHE_GROUP`] blocks on every core, each into its own part of the
    /// keys (the rank table gives every block's count, so every part's place). None without
    /// budget, or if a block is damaged or holds another number of keys than the rank table
    /// says (the per-rank path reports those).
    fn load_key_cache(&self, starts: &[u64], total: u64) -> Option<KeyCache> {
        use rayon::prelude::*;
        let t = self.table(super::POSTINGS)?;
        let blocks = t.blocks.len();
        if starts.len() != blocks + 1 || !take_key_cache_budget(total * 8) {
            return None;
        }
        self.begin_table_scan(t);
        let mut keys = vec![0u64; total as usize];
        let mut parts: Vec<(usize, &mut [u64])> = Vec::with_capacity(blocks / KEY_CACHE_GROUP + 1);
        let mut rest = &mut keys[..];
        for g in (0..blocks).step_by(KEY_CACHE_GROUP) {
            let hi = (g + KEY_CACHE_GROUP).min(blocks);
            let n = starts[hi].saturating_sub(starts[g]) as usize;
            if n > rest.len() {
                give_key_cache_budget(total * 8);
                return None;
            }
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(n);
            parts.push((g, part));
            rest = tail;
        }
        let ok = rest.is_empty()
            && parts.into_par_iter().all(|(g, part)| {
                // Each block's keys decoded straight into their place.
                let mut lo = 0usize;
                (g..(g + KEY_CACHE_GROUP).min(blocks)).all(|bi| {
                    let Some(hi) = starts[bi + 1]
                        .checked_sub(starts[bi])
                        .and_then(|n| lo.checked_add(usize::try_from(n).ok()?))
                    else {
                        return false;
                    };
                    let ok = hi <= part.len()
                        && self
                            .block(t, bi)
                            .is_ok_and(|view| view.keys_into(&mut part[lo..hi]));
                    lo = hi;
                    ok
                }) && lo == part.len()
            });
        if !ok {
            give_key_cache_budget(total * 8);
            return None;
        }
        // The blocks' counts add up to `total` (the rank table starts at 0 and ends there), so
        // the cache gives back exactly what it took when it drops.
        Some(KeyCache {
            keys: keys.into_boxed_slice(),
        })
    }

    /// `key_seq` of POSTINGS block `bi`, checked once and remembered in `rank_blocks`.
    fn key_seq_cached(&self, t: &Table, bi: usize, count: u64) -> Result<KeySeq> {
        let slots = self
            .rank_blocks
            .get_or_init(|| (0..t.blocks.len()).map(|_| OnceLock::new()).collect());
        if let Some(ks) = slots.get(bi).and_then(|k| k.get()) {
            return Ok(*ks);
        }
        let ks = self.key_seq(t, bi, count)?;
        if let Some(slot) = slots.get(bi) {
            let _ = slot.set(ks);
        }
        Ok(ks)
    }

    /// The key sequence `ks` locates, as an Elias-Fano view of the map.
    fn key_ef(&self, ks: &KeySeq) -> Result<EfView<'_>> {
        let bytes = self.map.get(ks.at..).unwrap_or(&[]);
        EfView::with_layout(bytes, ks.lay)
            .map(|(ef, _)| ef)
            .ok_or_else(|| Error::corrupt(&self.path, ks.at as u64, "POSTINGS keys out of range"))
    }

    /// POSTINGS block `bi`, checked (crc, structure) and holding `count` keys (its share of
    /// the ranks), as the location of its key sequence.
    fn key_seq(&self, t: &Table, bi: usize, count: u64) -> Result<KeySeq> {
        let view = self.block_keys(t, bi)?;
        let off = t.blocks[bi].offset;
        if view.len() as u64 != count {
            return Err(Error::corrupt(
                &self.path,
                off,
                format!(
                    "POSTINGS block {bi} holds {} keys, the rank table says {count}",
                    view.len()
                ),
            ));
        }
        let (first_key, lay) = view.key_layout().ok_or_else(|| {
            Error::corrupt(&self.path, off, "a ranked segment with version-1 blocks")
        })?;
        Ok(KeySeq {
            first_key,
            at: off as usize + super::block::V2_HEADER_LEN,
            lay,
        })
    }

    /// All entries of `table` in key order.
    pub fn iter(&self, table: u32) -> Entries<'_> {
        if let Some(t) = self.table(table) {
            self.begin_table_scan(t);
        }
        self.range(table, 0, u64::MAX)
    }

    /// Entries of `table` with `lo <= key <= hi`, in key order.
    pub fn range(&self, table: u32, lo: u64, hi: u64) -> Entries<'_> {
        let t = self.table(table).filter(|_| lo <= hi);
        let block = t.map_or(0, |t| t.last_keys.partition_point(|&last| last < lo));
        Entries {
            seg: self,
            table: t,
            block,
            view: None,
            pos: 0,
            lo,
            hi,
            released: 0,
            keys: Vec::new(),
            ends: Vec::new(),
            ahead: None,
        }
    }

    /// [`Segment::iter`] of a table read whole once (compaction's merges), its blocks checked
    /// and decoded by a thread of `scope` ahead of the scan: the blocks' crc checks (the first
    /// touch of their pages), structure checks and key decodes leave the scanning thread. The
    /// same entries and errors as `iter`: a block the thread could not check is checked by the
    /// scan, which reports its error; the thread stops when the scan is dropped.
    pub fn iter_ahead<'scope, 'env>(
        &'env self,
        table: u32,
        scope: &'scope std::thread::Scope<'scope, 'env>,
    ) -> Entries<'env> {
        let mut e = self.iter(table);
        let Some(t) = e.table.filter(|_| self.version >= 2) else {
            return e;
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<Decoded>(AHEAD_BLOCKS);
        let (back, spare) = std::sync::mpsc::channel::<(Vec<u64>, Vec<u64>)>();
        let from = e.block;
        let spawned = std::thread::Builder::new()
            .name("ndd-scan-ahead".into())
            .spawn_scoped(scope, move || {
                for bi in from..t.blocks.len() {
                    let Ok(BlockView::V2(v2)) = self.block(t, bi) else {
                        return; // the scan checks this block itself and reports it
                    };
                    let (mut keys, mut ends) = spare.try_recv().unwrap_or_default();
                    v2.decode_all(&mut keys, &mut ends);
                    if tx.send((bi, keys, ends)).is_err() {
                        return; // the scan is over
                    }
                }
            });
        if spawned.is_ok() {
            e.ahead = Some(Ahead { rx, back });
        }
        e
    }

    pub(super) fn table(&self, id: u32) -> Option<&Table> {
        self.tables
            .binary_search_by_key(&id, |t| t.meta.id)
            .ok()
            .map(|i| &self.tables[i])
    }

    /// Block `bi` of `t`, checked on first use.
    pub(super) fn block<'s>(&'s self, t: &Table, bi: usize) -> Result<BlockView<'s>> {
        self.block_checked(t, bi, false)
    }

    /// Asks the kernel to read block `bi` of `t` ahead (`madvise(MADV_WILLNEED)` of its
    /// bytes), unless this process checked the block whole already: its pages were read then,
    /// so it is most likely resident. A lookup that is about to read several blocks asks for
    /// the ones it has not read yet before it reads the first, so from a cold page cache (an
    /// index larger than memory) the disk reads them together instead of one page fault
    /// after another. On a resident block the request costs about a microsecond, against the
    /// few microseconds of the block's first-use check.
    pub(super) fn read_block_ahead(&self, t: &Table, bi: usize) {
        let (word, bit) = (bi / 64, 1u64 << (bi % 64));
        if t.verified
            .get(word)
            .is_some_and(|f| f.load(Ordering::Relaxed) & bit != 0)
        {
            return;
        }
        if let Some(b) = t.blocks.get(bi) {
            will_need(&self.map, b.offset, b.offset + u64::from(b.len));
        }
    }

    /// [`Segment::read_block_ahead`] of block `bi` of `table` (nothing for an absent table or
    /// block): for a reader that knows which blocks it will read next (a query's candidates'
    /// FORWARD blocks).
    pub fn read_table_block_ahead(&self, table: u32, bi: usize) {
        if let Some(t) = self.table(table) {
            self.read_block_ahead(t, bi);
        }
    }

    /// Makes every later FORWARD list's rank mapping ([`Segment::ranks_to_keys`],
    /// [`Segment::decode_forward_into`]) first ask for the POSTINGS blocks it will read and
    /// has not read yet, together: for a reader of a few lists of an index larger than memory
    /// (a query process: `View::load_for_lookups`). Off by default: a batch maps many lists
    /// whose blocks its own read-aheads ask for, and locating each list's blocks twice costs
    /// it about 5 % of its matching CPU.
    pub fn read_ranks_ahead(&self, on: bool) {
        self.rank_read_ahead.store(on, Ordering::Relaxed);
    }

    /// Block `bi` of `t` for a lookup of its keys by position alone (format 3's rank
    /// mapping), which reads no value: unless the whole block was checked already, its crc
    /// and the structure of its key sequence are checked (not its value ends), and the block
    /// is not marked checked, so a read of its values still checks it whole.
    fn block_keys<'s>(&'s self, t: &Table, bi: usize) -> Result<BlockView<'s>> {
        self.block_checked(t, bi, true)
    }

    fn block_checked<'s>(&'s self, t: &Table, bi: usize, keys_only: bool) -> Result<BlockView<'s>> {
        let b = t
            .blocks
            .get(bi)
            .ok_or_else(|| Error::corrupt(&self.path, 0, format!("no block {bi}")))?;
        // open() checked every block lies inside the file; `get` keeps this panic-free anyway.
        let bytes = (b.offset as usize)
            .checked_add(b.len as usize)
            .and_then(|end| self.map.get(b.offset as usize..end))
            .ok_or_else(|| Error::corrupt(&self.path, b.offset, "block outside the file"))?;
        let (word, bit) = (bi / 64, 1u64 << (bi % 64));
        let flags = t.verified.get(word);
        // Relaxed is enough: the bit only caches the outcome of a pure function of immutable
        // bytes; a thread that misses it just checks the block again.
        if flags.is_some_and(|f| f.load(Ordering::Relaxed) & bit != 0) {
            if let Ok(view) = BlockView::parse_version(bytes, self.version) {
                return Ok(view);
            }
        }
        if keys_only {
            return check_block_as(&self.path, b, bytes, self.version, true);
        }
        let view = check_block(&self.path, b, bytes, self.version)?;
        if let Some(f) = flags {
            f.fetch_or(bit, Ordering::Relaxed);
        }
        Ok(view)
    }

    pub(super) fn value<'s>(
        &'s self,
        t: &Table,
        bi: usize,
        view: &BlockView<'s>,
        i: usize,
    ) -> Result<&'s [u8]> {
        view.value(i).ok_or_else(|| {
            let off = t.blocks.get(bi).map_or(0, |b| b.offset);
            Error::corrupt(
                &self.path,
                off,
                format!("value {i} of the block is out of range"),
            )
        })
    }

    /// Turns a codec error about `value` into one naming this file and the absolute offset.
    pub(super) fn rebase(&self, e: Error, value: &[u8]) -> Error {
        let base = (value.as_ptr() as usize).wrapping_sub(self.map.as_ptr() as usize) as u64;
        match e {
            Error::Corrupt {
                path,
                offset,
                reason,
            } if path.as_os_str() == VALUE_PATH => {
                Error::corrupt(&self.path, base + offset, reason)
            }
            other => other,
        }
    }
}

/// A bulk rank mapping decodes a POSTINGS block's whole key sequence when at least one
/// rank in this many of its keys falls in it (one select each below that).
const DECODE_WHOLE_BLOCK: u64 = 32;

/// Replaces every rank in `ranks` by `keys[rank]`; Err(rank) for the first rank past the end
/// (`ranks` is then partly replaced).
fn gather(keys: &[u64], ranks: &mut [u64]) -> std::result::Result<(), u64> {
    const AHEAD: usize = 16;
    for i in 0..ranks.len() {
        #[cfg(target_arch = "x86_64")]
        if let Some(&next) = ranks.get(i + AHEAD) {
            if let Some(k) = keys.get(next as usize) {
                // SAFETY: a prefetch hint of a valid reference's address; it reads nothing.
                unsafe {
                    std::arch::x86_64::_mm_prefetch(
                        (k as *const u64).cast::<i8>(),
                        std::arch::x86_64::_MM_HINT_T0,
                    )
                };
            }
        }
        let r = ranks[i];
        ranks[i] = *keys.get(r as usize).ok_or(r)?;
    }
    Ok(())
}

/// Checks a block's crc, then its structure against its index entry.
pub(super) fn check_block<'a>(
    path: &Path,
    b: &BlockRef,
    bytes: &'a [u8],
    version: u32,
) -> Result<BlockView<'a>> {
    check_block_as(path, b, bytes, version, false)
}

/// [`check_block`], or with `keys_only` the crc and the structure of the key sequence alone
/// (`BlockView::validate_keys`: for a lookup of keys by position, which reads no value).
fn check_block_as<'a>(
    path: &Path,
    b: &BlockRef,
    bytes: &'a [u8],
    version: u32,
    keys_only: bool,
) -> Result<BlockView<'a>> {
    let computed = crc32fast::hash(bytes);
    if computed != b.crc {
        return Err(Error::ChecksumMismatch {
            path: path.to_path_buf(),
            offset: b.offset,
            stored: b.crc,
            computed,
        });
    }
    let at = |(off, reason): (usize, String)| {
        Error::corrupt(path, b.offset + off as u64, format!("block: {reason}"))
    };
    let view = BlockView::parse_version(bytes, version).map_err(at)?;
    if keys_only {
        view.validate_keys(b.first_key, b.last_key).map_err(at)?;
    } else {
        view.validate(b.first_key, b.last_key).map_err(at)?;
    }
    Ok(view)
}

/// Iterator over a key range of one table (from `Segment::iter` / `Segment::range`). After an
/// error it yields nothing more.
pub struct Entries<'a> {
    seg: &'a Segment,
    table: Option<&'a Table>,
    block: usize,
    view: Option<BlockView<'a>>,
    pos: usize,
    lo: u64,
    hi: u64,
    /// Bytes before this offset were handed back to the kernel.
    released: u64,
    /// A version-2 block's keys and value ends, decoded once when the scan enters it (one
    /// sequential pass instead of a select per entry); empty for version-1 blocks.
    keys: Vec<u64>,
    ends: Vec<u64>,
    /// [`Segment::iter_ahead`]: the blocks decoded by a thread ahead of the scan.
    ahead: Option<Ahead>,
}

/// A block checked and decoded ahead of a scan: its index, keys and value ends.
type Decoded = (usize, Vec<u64>, Vec<u64>);

/// Blocks a scan-ahead thread decodes before the scan takes them.
const AHEAD_BLOCKS: usize = 8;

/// The scan's end of a scan-ahead thread: decoded blocks in, emptied vectors back.
struct Ahead {
    rx: std::sync::mpsc::Receiver<Decoded>,
    back: std::sync::mpsc::Sender<(Vec<u64>, Vec<u64>)>,
}

impl Ahead {
    /// Block `bi`'s keys and ends into `keys` and `ends` (their old contents go back to the
    /// thread), if the thread decoded it; false if it stopped before.
    fn take(&mut self, bi: usize, keys: &mut Vec<u64>, ends: &mut Vec<u64>) -> bool {
        while let Ok((b, k, e)) = self.rx.recv() {
            if b == bi {
                let old = (std::mem::replace(keys, k), std::mem::replace(ends, e));
                let _ = self.back.send(old);
                return true;
            }
            if b > bi {
                break;
            }
        }
        false
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<(u64, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.table?;
        loop {
            if let Some(view) = &self.view {
                if self.pos < view.len() {
                    let i = self.pos;
                    let key = match (view, self.keys.get(i)) {
                        (BlockView::V2(_), Some(&k)) => k,
                        _ => view.key(i),
                    };
                    if key > self.hi {
                        self.table = None;
                        return None;
                    }
                    self.pos += 1;
                    let fast = match view {
                        BlockView::V2(v2) if self.ends.len() == view.len() => {
                            let start = if i == 0 { 0 } else { self.ends[i - 1] };
                            v2.values_range(start, self.ends[i])
                        }
                        _ => None,
                    };
                    let item = match fast {
                        Some(v) => Ok((key, v)),
                        None => self.seg.value(t, self.block, view, i).map(|v| (key, v)),
                    };
                    if item.is_err() {
                        self.table = None;
                    }
                    return Some(item);
                }
                self.view = None;
                self.block += 1;
                // A long scan (compaction reads whole tables) hands passed blocks back.
                let here = self.seg.block_offset(t, self.block);
                if here >= self.released + (1 << 20) {
                    self.seg
                        .release(self.released.max(self.seg.block_offset(t, 0)), here);
                    self.released = here;
                }
            }
            match t.blocks.get(self.block) {
                Some(b) if b.first_key <= self.hi => {}
                _ => {
                    self.table = None;
                    return None;
                }
            }
            // A block the scan-ahead thread decoded was checked by it (so `block` only parses
            // it); one it did not is checked and decoded here.
            let taken = self
                .ahead
                .as_mut()
                .is_some_and(|a| a.take(self.block, &mut self.keys, &mut self.ends));
            match self.seg.block(t, self.block) {
                Ok(view) => {
                    if let BlockView::V2(v2) = &view {
                        if !taken {
                            self.ahead = None;
                            v2.decode_all(&mut self.keys, &mut self.ends);
                        }
                        self.pos = self.keys.partition_point(|&k| k < self.lo);
                    } else {
                        self.keys.clear();
                        self.ends.clear();
                        self.pos = view.lower_bound(self.lo);
                    }
                    self.view = Some(view);
                }
                Err(e) => {
                    self.table = None;
                    return Some(Err(e));
                }
            }
        }
    }
}
