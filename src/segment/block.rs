//! Data blocks: `[n: u32][keys: n x u64][value ends: n x u32][values]`.
//!
//! Keys and value ends come first and have fixed widths, so a reader binary-searches the keys of
//! a block in place and slices out one value without decoding the others. `BlockBuilder`
//! accumulates one block on the write path (the writer's only per-entry buffer); `BlockView` is
//! the zero-copy read side.

use std::io::{self, Write};

use byteorder::{ByteOrder, LittleEndian as LE};

use super::ef::{self, EfView, Layout};

/// Bytes of the block's entry count.
pub const BLOCK_HEADER_LEN: usize = 4;
/// Fixed bytes per entry in a block: an 8-byte key and a 4-byte value end.
pub const ENTRY_OVERHEAD: usize = 8 + 4;

/// Encoded size of a block with `n` entries and `values_len` value bytes.
pub const fn block_len(n: usize, values_len: usize) -> usize {
    BLOCK_HEADER_LEN + n * ENTRY_OVERHEAD + values_len
}

/// One block being filled by the writer. Version 1 keeps keys and ends already encoded so the
/// block is written with three `write_all`s and no copy; version 2 keeps the keys and ends as
/// numbers and Elias-Fano codes them when the block is written.
#[derive(Default)]
pub struct BlockBuilder {
    /// Format version 2 (else 1).
    v2: bool,
    key_list: Vec<u64>,
    end_list: Vec<u64>,
    scratch: Vec<u8>,
    n: usize,
    first_key: u64,
    last_key: u64,
    keys: Vec<u8>,
    ends: Vec<u8>,
    values: Vec<u8>,
    /// What [`BlockBuilder::fits`] may assume without sizing the block exactly.
    bound: FitBound,
}

/// A version-2 block's size bound, from the last exact check of [`BlockBuilder::fits`]: while
/// the keys stay at or below `key_lim` and the values at or below `values_lim` bytes, a block of
/// `n` entries and `v` value bytes is at most `V2_BOUND_FIXED + v + ceil(n * per_entry_16 / 16)`
/// bytes (a bound that only grows with `n` and `v`); `room` is `limit - V2_BOUND_FIXED`.
/// `room == 0` (a new block) always asks for the exact size.
#[derive(Default, Clone, Copy)]
struct FitBound {
    key_lim: u64,
    values_lim: usize,
    per_entry_16: usize,
    room: usize,
    limit: usize,
}

/// Bytes of a version-2 block that [`FitBound`]'s per-entry term leaves out: the header (24)
/// and the sums of the regions' rounding and sample constants (244/16, rounded up).
const V2_BOUND_FIXED: usize = V2_HEADER_LEN + 16;

/// What the writer records in the block index for a written block.
pub struct WrittenBlock {
    pub first_key: u64,
    pub last_key: u64,
    pub len: u32,
    pub crc: u32,
}

impl BlockBuilder {
    /// A builder for blocks of format `version` (1 or 2).
    pub fn new(version: u32) -> Self {
        BlockBuilder {
            v2: version >= 2,
            ..Default::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Entries in the block so far.
    pub fn entries(&self) -> usize {
        self.n
    }

    /// Encoded size of the block so far.
    pub fn encoded_len(&self) -> usize {
        if self.v2 {
            v2_block_len(self.n, self.last_key - self.first_key, self.values.len())
        } else {
            block_len(self.n, self.values.len())
        }
    }

    /// Encoded size of the block once `key` with a value of `value_len` bytes is added (the
    /// exact check [`BlockBuilder::fits`] stands for).
    #[cfg(test)]
    pub fn len_after(&self, key: u64, value_len: usize) -> usize {
        if self.v2 {
            let first = if self.n == 0 { key } else { self.first_key };
            v2_block_len(
                self.n + 1,
                key.wrapping_sub(first),
                self.values.len() + value_len,
            )
        } else {
            block_len(self.n + 1, self.values.len() + value_len)
        }
    }

    /// Whether the block stays within `limit` bytes once `key` with a value of `value_len`
    /// bytes is added: exactly `len_after(key, value_len) <= limit`, without sizing the block
    /// at most entries. A version-2 block's exact size (two Elias-Fano layouts) is computed
    /// only when a cheap bound that holds until the keys or the values pass a power of two
    /// (see [`FitBound`]) says the block may be full; the bound is then renewed.
    #[inline]
    pub fn fits(&mut self, key: u64, value_len: usize, limit: usize) -> bool {
        if !self.v2 {
            return block_len(self.n + 1, self.values.len() + value_len) <= limit;
        }
        let first = if self.n == 0 { key } else { self.first_key };
        self.fits_with(self.n + 1, self.values.len() + value_len, first, key, limit)
    }

    /// [`BlockBuilder::fits`] of a version-2 block that would have `n` entries from `first` to
    /// `key` and `v` value bytes.
    #[inline]
    fn fits_with(&mut self, n: usize, v: usize, first: u64, key: u64, limit: usize) -> bool {
        let b = &self.bound;
        if key <= b.key_lim
            && v <= b.values_lim
            && limit == b.limit
            && v + (n * b.per_entry_16).div_ceil(16) <= b.room
        {
            return true;
        }
        self.fits_exactly(n, v, first, key, limit)
    }

    /// [`BlockBuilder::fits_with`] by the exact size; renews the bound when the entry fits.
    #[inline(never)]
    fn fits_exactly(&mut self, n: usize, v: usize, first: u64, key: u64, limit: usize) -> bool {
        if v2_block_len(n, key.wrapping_sub(first), v) > limit {
            return false;
        }
        let bits = |x: u64| 64 - x.leading_zeros();
        // Keys: the span stays below 2^kb while the keys stay at or below key_lim, values
        // below 2^vb. For n' >= n entries and a maximum below 2^b, the low bits per value are
        // at most max(b - bits(n), 0) (l = floor(log2(max / n')) and n' >= 2^(bits(n) - 1)),
        // the high bit vector has at most 3n' bits (n' ones, max >> l < 2n' zeros) and the
        // samples one u32 per 64 ones and per 64 zeros. In sixteenths of a byte, with
        // ceil(x / 8) <= (2x + 14) / 16 and 4 ceil(y / 64) <= (y + 63) / 16:
        // keys <= n'(2 dk + 6 + 1 + 2) + 14 + 14 + 63 + 62, ends <= n'(2 dv + 6 + 1) + 14 + 14 + 63.
        let kb = bits(key - first);
        let vb = bits(v as u64);
        let nb = bits(n as u64);
        let dk = kb.saturating_sub(nb) as usize;
        let dv = vb.saturating_sub(nb) as usize;
        let key_lim = if kb >= 64 {
            u64::MAX
        } else {
            first.saturating_add((1u64 << kb) - 1)
        };
        self.bound = FitBound {
            key_lim,
            values_lim: if vb >= 64 {
                usize::MAX
            } else {
                ((1u64 << vb) - 1) as usize
            },
            per_entry_16: 2 * (dk + dv) + 16,
            room: limit.saturating_sub(V2_BOUND_FIXED),
            limit,
        };
        true
    }

    /// Appends an entry. The caller has checked key order and that the block stays within
    /// `MAX_BLOCK_LEN` (so the value end fits a u32).
    pub fn push(&mut self, key: u64, value: &[u8]) {
        if self.n == 0 {
            self.first_key = key;
        }
        self.last_key = key;
        self.n += 1;
        self.values.extend_from_slice(value);
        if self.v2 {
            self.key_list.push(key - self.first_key);
            self.end_list.push(self.values.len() as u64);
            return;
        }
        self.keys.extend_from_slice(&key.to_le_bytes());
        // The caller keeps block_len <= u32::MAX, hence values.len() fits.
        self.ends
            .extend_from_slice(&(self.values.len() as u32).to_le_bytes());
    }

    /// Appends entries `keys[k]` with values `bytes[ends[k - 1]..ends[k]]` (from `start` for
    /// the first) while the block stays within `limit` bytes (the first one whatever its size
    /// if the block is empty), as [`BlockBuilder::fits`] then [`BlockBuilder::push`] entry by
    /// entry would, with the values copied at once; returns how many. The caller has checked
    /// key order, `ends` (non-decreasing, from `start`, within `bytes`) and `limit <=
    /// MAX_BLOCK_LEN`.
    pub fn push_run(
        &mut self,
        keys: &[u64],
        ends: &[usize],
        start: usize,
        bytes: &[u8],
        limit: usize,
    ) -> usize {
        let (Some(&k0), true) = (keys.first(), keys.len() == ends.len()) else {
            return 0;
        };
        if !self.v2 {
            let mut lo = start;
            for (c, (&key, &hi)) in keys.iter().zip(ends).enumerate() {
                if !self.is_empty() && !self.fits(key, hi - lo, limit) {
                    return c;
                }
                self.push(key, &bytes[lo..hi]);
                lo = hi;
            }
            return keys.len();
        }
        let first = if self.n == 0 { k0 } else { self.first_key };
        // The values' length once entry k is in: v0 + ends[k] (v0 may wrap; the sum cannot).
        let v0 = self.values.len().wrapping_sub(start);
        let mut c = usize::from(self.n == 0);
        while c < keys.len()
            && self.fits_with(
                self.n + c + 1,
                v0.wrapping_add(ends[c]),
                first,
                keys[c],
                limit,
            )
        {
            c += 1;
        }
        if c == 0 {
            return 0;
        }
        let end = ends[c - 1];
        self.first_key = first;
        self.last_key = keys[c - 1];
        self.n += c;
        self.values.extend_from_slice(&bytes[start..end]);
        self.key_list.extend(keys[..c].iter().map(|&k| k - first));
        self.end_list
            .extend(ends[..c].iter().map(|&e| v0.wrapping_add(e) as u64));
        c
    }

    /// Writes the block to `out`, resets the builder and returns its index data.
    pub fn write_to(&mut self, out: &mut impl Write) -> io::Result<WrittenBlock> {
        if self.v2 {
            return self.write_v2(out);
        }
        let len = self.encoded_len();
        let mut crc = crc32fast::Hasher::new();
        let n = (self.n as u32).to_le_bytes();
        for part in [&n[..], &self.keys, &self.ends, &self.values] {
            crc.update(part);
            out.write_all(part)?;
        }
        debug_assert_eq!(
            BLOCK_HEADER_LEN + self.keys.len() + self.ends.len() + self.values.len(),
            block_len(self.n, self.values.len())
        );
        let block = WrittenBlock {
            first_key: self.first_key,
            last_key: self.last_key,
            len: len as u32,
            crc: crc.finalize(),
        };
        self.n = 0;
        self.keys.clear();
        self.ends.clear();
        self.values.clear();
        Ok(block)
    }
}

/// A parsed block of either format version borrowed from the mapped file. `parse` checks only
/// sizes (O(1)); `validate` checks every invariant (O(n)) and is run once per block, after its
/// crc.
#[derive(Clone, Copy)]
pub enum BlockView<'a> {
    V1(V1View<'a>),
    V2(V2View<'a>),
}

impl<'a> BlockView<'a> {
    /// Splits a block of format `version` into its regions; `Err((offset in block, reason))`
    /// if the sizes don't add up.
    #[inline]
    pub fn parse_version(bytes: &'a [u8], version: u32) -> Result<Self, (usize, String)> {
        if version >= 2 {
            V2View::parse(bytes).map(BlockView::V2)
        } else {
            V1View::parse(bytes).map(BlockView::V1)
        }
    }

    /// A version-1 block.
    #[cfg(test)]
    pub fn parse(bytes: &'a [u8]) -> Result<Self, (usize, String)> {
        Self::parse_version(bytes, 1)
    }

    pub fn validate(&self, first_key: u64, last_key: u64) -> Result<(), (usize, String)> {
        match self {
            BlockView::V1(v) => v.validate(first_key, last_key),
            BlockView::V2(v) => v.validate(first_key, last_key),
        }
    }

    /// [`BlockView::validate`] of what a key lookup by position reads: the first/last keys
    /// and the key sequence of a version-2 block (its value ends are left to a full check);
    /// a version-1 block in full.
    pub fn validate_keys(&self, first_key: u64, last_key: u64) -> Result<(), (usize, String)> {
        match self {
            BlockView::V1(v) => v.validate(first_key, last_key),
            BlockView::V2(v) => v.validate_keys(first_key, last_key),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self {
            BlockView::V1(v) => v.len(),
            BlockView::V2(v) => v.len(),
        }
    }

    /// Key of entry `i`; 0 if out of range (callers index below `len()`).
    #[inline]
    pub fn key(&self, i: usize) -> u64 {
        match self {
            BlockView::V1(v) => v.key(i),
            BlockView::V2(v) => v.key(i),
        }
    }

    /// A version-2 block's first key and the layout of its key sequence (which starts
    /// `V2_HEADER_LEN` bytes into the block); None for a version-1 block.
    pub fn key_layout(&self) -> Option<(u64, super::ef::Layout)> {
        match self {
            BlockView::V1(_) => None,
            BlockView::V2(v) => Some((v.first_key, *v.keys.layout())),
        }
    }

    /// Writes every key of a version-2 block into `out`, which must hold exactly as many (one
    /// sequential decode, in place); false for a version-1 block or another length (nothing
    /// written).
    pub fn keys_into(&self, out: &mut [u64]) -> bool {
        match self {
            BlockView::V1(_) => false,
            BlockView::V2(v) => v.keys.decode_to_slice(v.first_key, out),
        }
    }

    /// Index of the first entry whose key is >= `key` (`len()` if none).
    #[inline]
    pub fn lower_bound(&self, key: u64) -> usize {
        match self {
            BlockView::V1(v) => v.lower_bound(key),
            BlockView::V2(v) => v.lower_bound(key).0,
        }
    }

    /// Asks the CPU for the first cache lines [`BlockView::find`] of `key` reads (a hint
    /// only, for version-2 blocks; no effect on results).
    #[inline]
    pub fn prefetch_find(&self, key: u64) {
        if let BlockView::V2(v) = self {
            if key >= v.first_key {
                v.keys.prefetch_lower_bound(key - v.first_key);
            }
        }
    }

    /// Asks the CPU for the first cache lines [`BlockView::value`] of entry `i` reads (a hint
    /// only, for version-2 blocks; no effect on results).
    #[inline]
    pub fn prefetch_value(&self, i: usize) {
        if let BlockView::V2(v) = self {
            v.ends.prefetch_get(i);
        }
    }

    /// Index of the entry with this key.
    #[inline]
    pub fn find(&self, key: u64) -> Option<usize> {
        match self {
            BlockView::V1(v) => {
                let i = v.lower_bound(key);
                (i < v.len() && v.key(i) == key).then_some(i)
            }
            BlockView::V2(v) => match v.lower_bound(key) {
                (i, true) => Some(i),
                _ => None,
            },
        }
    }

    /// Value of entry `i`, or `None` if its ends are out of range (only in unvalidated blocks).
    #[inline]
    pub fn value(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            BlockView::V1(v) => v.value(i),
            BlockView::V2(v) => v.value(i),
        }
    }
}

/// A version-1 block: `[n][keys][value ends][values]`, fixed widths.
#[derive(Clone, Copy)]
pub struct V1View<'a> {
    keys: &'a [[u8; 8]],
    ends: &'a [[u8; 4]],
    values: &'a [u8],
}

impl<'a> V1View<'a> {
    /// Splits a block into its regions; `Err((offset in block, reason))` if the sizes don't add up.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, (usize, String)> {
        let Some(n_bytes) = bytes.get(..BLOCK_HEADER_LEN) else {
            return Err((
                0,
                format!("block of {} bytes is shorter than its header", bytes.len()),
            ));
        };
        let n = LE::read_u32(n_bytes) as usize;
        let fixed = n
            .checked_mul(ENTRY_OVERHEAD)
            .and_then(|x| x.checked_add(BLOCK_HEADER_LEN))
            .filter(|&f| n > 0 && f <= bytes.len())
            .ok_or_else(|| {
                (
                    0,
                    format!(
                        "entry count {n} does not fit a block of {} bytes",
                        bytes.len()
                    ),
                )
            })?;
        let keys_end = BLOCK_HEADER_LEN + 8 * n;
        let (keys, _) = bytes[BLOCK_HEADER_LEN..keys_end].as_chunks::<8>();
        let (ends, _) = bytes[keys_end..fixed].as_chunks::<4>();
        Ok(V1View {
            keys,
            ends,
            values: &bytes[fixed..],
        })
    }

    /// Checks keys strictly increasing, value ends non-decreasing and ending exactly at the end of
    /// the block, and the first/last keys recorded in the block index.
    pub fn validate(&self, first_key: u64, last_key: u64) -> Result<(), (usize, String)> {
        let n = self.len();
        let mut prev: Option<u64> = None;
        for (i, k) in self.keys.iter().enumerate() {
            let k = u64::from_le_bytes(*k);
            if prev.is_some_and(|p| p >= k) {
                return Err((
                    BLOCK_HEADER_LEN + 8 * i,
                    format!("key {k} does not increase"),
                ));
            }
            prev = Some(k);
        }
        if self.key(0) != first_key || self.key(n - 1) != last_key {
            return Err((
                BLOCK_HEADER_LEN,
                "keys disagree with the block index".to_string(),
            ));
        }
        let ends_at = BLOCK_HEADER_LEN + 8 * n;
        let mut prev_end = 0u32;
        for (i, e) in self.ends.iter().enumerate() {
            let e = u32::from_le_bytes(*e);
            if e < prev_end {
                return Err((
                    ends_at + 4 * i,
                    format!("value end {e} is before {prev_end}"),
                ));
            }
            prev_end = e;
        }
        if prev_end as usize != self.values.len() {
            let reason = format!(
                "values end at {prev_end}, block has {} value bytes",
                self.values.len()
            );
            return Err((ends_at + 4 * (n - 1), reason));
        }
        Ok(())
    }

    /// Number of entries (>= 1 once parsed).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Key of entry `i`; 0 if out of range (callers index below `len()`).
    #[inline]
    pub fn key(&self, i: usize) -> u64 {
        self.keys.get(i).map_or(0, |k| u64::from_le_bytes(*k))
    }

    /// Index of the first entry whose key is >= `key` (`len()` if none).
    ///
    /// Keys are hashes or dense doc ids, i.e. close to uniform over the block's key range, so
    /// the search starts at the interpolated position and gallops outwards from there: about
    /// 2-4 cache lines per lookup instead of ~11 for a plain binary search of a 32 KiB block.
    /// Galloping keeps the worst case (skewed keys) at O(log n).
    #[inline]
    pub fn lower_bound(&self, key: u64) -> usize {
        let keys = self.keys;
        let n = keys.len();
        if n <= 16 {
            return keys.partition_point(|k| u64::from_le_bytes(*k) < key);
        }
        // All indexes below are < n, so the indexing cannot panic.
        let at = |i: usize| u64::from_le_bytes(keys[i]);
        let (first, last) = (at(0), at(n - 1));
        if key <= first {
            return 0;
        }
        if key > last {
            return n;
        }
        // Now first < key <= last (so last > first): the answer is in [1, n - 1].
        let est = ((key - first) as u128 * (n - 1) as u128 / (last - first) as u128) as usize;
        let est = est.clamp(1, n - 1);
        let (lo, hi) = if at(est) < key {
            // Answer in (est, n - 1]: gallop right until a key >= `key`.
            let (mut lo, mut step) = (est + 1, 1);
            loop {
                let probe = est + step;
                if probe >= n - 1 {
                    break (lo, n - 1);
                }
                if at(probe) >= key {
                    break (lo, probe);
                }
                lo = probe + 1;
                step *= 2;
            }
        } else {
            // Answer in [1, est]: gallop left until a key < `key`.
            let (mut hi, mut step) = (est, 1);
            loop {
                if step >= est {
                    break (1, hi);
                }
                let probe = est - step;
                if at(probe) < key {
                    break (probe + 1, hi);
                }
                hi = probe;
                step *= 2;
            }
        };
        // keys[lo - 1] < key <= keys[hi]: finish with a binary search of the bracket.
        lo + keys[lo..hi].partition_point(|k| u64::from_le_bytes(*k) < key)
    }

    /// Value of entry `i`, or `None` if its ends are out of range (only in unvalidated blocks).
    #[inline]
    pub fn value(&self, i: usize) -> Option<&'a [u8]> {
        let start = match i {
            0 => 0,
            _ => u32::from_le_bytes(*self.ends.get(i - 1)?) as usize,
        };
        let end = u32::from_le_bytes(*self.ends.get(i)?) as usize;
        self.values.get(start..end)
    }
}

// ---- format version 2 ----

/// Bytes of a version-2 block header: n u32, values length u32, first key u64, key span u64.
pub const V2_HEADER_LEN: usize = 24;

/// Encoded size of a version-2 block with `n >= 1` entries, keys spanning `span` (last - first)
/// and `values_len` value bytes (`usize::MAX` if it could not exist).
pub fn v2_block_len(n: usize, span: u64, values_len: usize) -> usize {
    let keys = Layout::new(n, span, true, true).and_then(|l| l.bytes());
    let ends = Layout::new(n, values_len as u64, true, false).and_then(|l| l.bytes());
    match (keys, ends) {
        (Some(k), Some(e)) => V2_HEADER_LEN
            .saturating_add(k)
            .saturating_add(e)
            .saturating_add(values_len),
        _ => usize::MAX,
    }
}

impl BlockBuilder {
    fn write_v2(&mut self, out: &mut impl Write) -> io::Result<WrittenBlock> {
        let n = self.n;
        let span = self.last_key - self.first_key;
        let b = &mut self.scratch;
        b.clear();
        b.extend_from_slice(&(n as u32).to_le_bytes());
        b.extend_from_slice(&(self.values.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.first_key.to_le_bytes());
        b.extend_from_slice(&span.to_le_bytes());
        ef::encode(self.key_list.iter().copied(), n, span, true, true, b);
        let vlen = self.values.len() as u64;
        ef::encode(self.end_list.iter().copied(), n, vlen, true, false, b);
        let mut crc = crc32fast::Hasher::new();
        crc.update(b);
        crc.update(&self.values);
        out.write_all(b)?;
        out.write_all(&self.values)?;
        let len = b.len() + self.values.len();
        debug_assert_eq!(len, v2_block_len(n, span, self.values.len()));
        let block = WrittenBlock {
            first_key: self.first_key,
            last_key: self.last_key,
            len: len as u32,
            crc: crc.finalize(),
        };
        self.n = 0;
        self.key_list.clear();
        self.end_list.clear();
        self.values.clear();
        self.bound = FitBound::default();
        Ok(block)
    }
}

/// A version-2 block: a 24-byte header, the keys minus the first key and the value ends as
/// Elias-Fano sequences with samples, then the values.
#[derive(Clone, Copy)]
pub struct V2View<'a> {
    first_key: u64,
    span: u64,
    keys: EfView<'a>,
    ends: EfView<'a>,
    values: &'a [u8],
}

impl<'a> V2View<'a> {
    /// Splits a block into its regions; `Err((offset in block, reason))` if the sizes don't add up.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, (usize, String)> {
        let Some(head) = bytes.first_chunk::<V2_HEADER_LEN>() else {
            return Err((
                0,
                format!("block of {} bytes is shorter than its header", bytes.len()),
            ));
        };
        let n = LE::read_u32(&head[0..4]) as usize;
        let values_len = LE::read_u32(&head[4..8]) as usize;
        let first_key = LE::read_u64(&head[8..16]);
        let span = LE::read_u64(&head[16..24]);
        let total = v2_block_len(n, span, values_len);
        if n == 0 || total != bytes.len() {
            return Err((
                0,
                format!(
                    "{n} entries, key span {span} and {values_len} value bytes do not make a block of {} bytes",
                    bytes.len()
                ),
            ));
        }
        let body = &bytes[V2_HEADER_LEN..];
        let bad = || (V2_HEADER_LEN, "block regions out of range".to_string());
        let (keys, rest) = EfView::parse(body, n, span, true, true).ok_or_else(bad)?;
        let (ends, values) =
            EfView::parse(rest, n, values_len as u64, true, false).ok_or_else(bad)?;
        if values.len() != values_len {
            return Err(bad());
        }
        Ok(V2View {
            first_key,
            span,
            keys,
            ends,
            values,
        })
    }

    /// The first half of [`V2View::validate`]: the first/last keys recorded in the block index
    /// and the key sequence (strictly increasing, samples).
    pub fn validate_keys(&self, first_key: u64, last_key: u64) -> Result<(), (usize, String)> {
        if self.first_key != first_key || self.first_key.checked_add(self.span) != Some(last_key) {
            return Err((8, "keys disagree with the block index".to_string()));
        }
        self.keys
            .validate(self.span, true)
            .map_err(|(o, r)| (V2_HEADER_LEN + o, format!("keys: {r}")))
    }

    /// Checks both sequences (keys strictly increasing, ends non-decreasing and ending at the
    /// values length, samples) and the first/last keys recorded in the block index.
    pub fn validate(&self, first_key: u64, last_key: u64) -> Result<(), (usize, String)> {
        self.validate_keys(first_key, last_key)?;
        let keys_at = V2_HEADER_LEN;
        let ends_at = keys_at + self.keys.layout().bytes().unwrap_or(0);
        self.ends
            .validate(self.values.len() as u64, false)
            .map_err(|(o, r)| (ends_at + o, format!("value ends: {r}")))?;
        Ok(())
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    #[inline]
    pub fn key(&self, i: usize) -> u64 {
        self.keys
            .get(i)
            .map_or(0, |k| self.first_key.wrapping_add(k))
    }

    /// (index of the first key >= `key`, whether it is equal).
    #[inline]
    pub fn lower_bound(&self, key: u64) -> (usize, bool) {
        if key < self.first_key {
            return (0, false);
        }
        self.keys.lower_bound(key - self.first_key)
    }

    /// Decodes all keys and value ends into `keys` and `ends` (cleared first): the sequential
    /// decode a scan uses instead of a select per entry.
    pub fn decode_all(&self, keys: &mut Vec<u64>, ends: &mut Vec<u64>) {
        keys.clear();
        ends.clear();
        self.keys.decode_into(self.first_key, keys);
        self.ends.decode_into(0, ends);
    }

    /// Value bytes `[start, end)` (from `decode_all`'s ends).
    #[inline]
    pub fn values_range(&self, start: u64, end: u64) -> Option<&'a [u8]> {
        self.values.get(start as usize..end as usize)
    }

    #[inline]
    pub fn value(&self, i: usize) -> Option<&'a [u8]> {
        let (start, end) = match i {
            0 => (0, self.ends.get(0)?),
            _ => self.ends.get_pair(i)?,
        };
        self.values.get(start as usize..end as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(entries: &[(u64, &[u8])]) -> (Vec<u8>, WrittenBlock) {
        let mut b = BlockBuilder::default();
        for (k, v) in entries {
            b.push(*k, v);
        }
        let mut out = Vec::new();
        let w = b.write_to(&mut out).unwrap();
        assert!(b.is_empty());
        (out, w)
    }

    #[test]
    fn layout_and_round_trip() {
        let (bytes, w) = build(&[(5, b"ab"), (9, b""), (10, b"xyz")]);
        let mut expect = vec![3, 0, 0, 0];
        for k in [5u64, 9, 10] {
            expect.extend_from_slice(&k.to_le_bytes());
        }
        for e in [2u32, 2, 5] {
            expect.extend_from_slice(&e.to_le_bytes());
        }
        expect.extend_from_slice(b"abxyz");
        assert_eq!(bytes, expect);
        assert_eq!(
            (w.first_key, w.last_key, w.len as usize),
            (5, 10, bytes.len())
        );
        assert_eq!(w.crc, crc32fast::hash(&bytes));
        let v = BlockView::parse(&bytes).unwrap();
        v.validate(5, 10).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v.value(0), Some(&b"ab"[..]));
        assert_eq!(v.value(1), Some(&b""[..]));
        assert_eq!(v.value(2), Some(&b"xyz"[..]));
        assert_eq!(v.value(3), None);
        assert_eq!(
            (v.lower_bound(9), v.lower_bound(6), v.lower_bound(11)),
            (1, 1, 3)
        );
    }

    #[test]
    fn lower_bound_matches_binary_search_on_any_key_distribution() {
        let mut state = 7u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let sets: Vec<Vec<u64>> = vec![
            (0..1000).collect(),
            (0..1000).map(|i| i * i * i).collect(),
            (0..1000)
                .map(|i| if i < 999 { i } else { u64::MAX })
                .collect(),
            (0..1000).map(|i| u64::MAX - 1000 + i).collect(),
            {
                let mut v: Vec<u64> = (0..1000).map(|_| next()).collect();
                v.sort_unstable();
                v.dedup();
                v
            },
            (0..17).map(|i| i * 10).collect(),
        ];
        for keys in sets {
            let entries: Vec<(u64, &[u8])> = keys.iter().map(|&k| (k, &b""[..])).collect();
            let (bytes, _) = build(&entries);
            let v = BlockView::parse(&bytes).unwrap();
            let mut probes: Vec<u64> = vec![0, 1, u64::MAX, u64::MAX - 1];
            for &k in &keys {
                probes.extend([k, k.wrapping_sub(1), k.wrapping_add(1)]);
            }
            probes.extend((0..200).map(|_| next()));
            for p in probes {
                assert_eq!(
                    v.lower_bound(p),
                    keys.partition_point(|&k| k < p),
                    "probe {p}"
                );
            }
        }
    }

    /// `fits` against the exact size at every entry of random blocks (keys dense, sparse,
    /// jumping; values empty to large; limits from tiny to the default target), splitting where
    /// the writer does: the same decision at every step, hence the same blocks.
    #[test]
    fn fits_equals_the_exact_size_check_at_every_entry() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut fast, mut exact, mut splits) = (0u64, 0u64, 0u64);
        for round in 0..400 {
            let limit = match round % 5 {
                0 => 1 + (next() % 200) as usize,
                1 => 1000 + (next() % 3000) as usize,
                2 => 32 * 1024,
                3 => 4096,
                _ => 32 * 1024 + (next() % 100_000) as usize,
            };
            let key_step_bits = (next() % 60) as u32;
            let mut b = BlockBuilder::new(2);
            let mut key = next() >> (next() % 64);
            let mut out = Vec::new();
            for i in 0..10_000 {
                // Mostly even steps, sometimes a jump of up to 2^44 (and the key space's end).
                let step = match next() % 100 {
                    0 => next() >> (20 + next() % 40),
                    1..=3 => next() >> (64 - key_step_bits.max(1)) << 8,
                    _ => 1 + (next() >> (64 - key_step_bits.max(1))),
                };
                let Some(k) = key.checked_add(step) else {
                    break;
                };
                key = k;
                let vlen = match next() % 50 {
                    0 => (next() % 5000) as usize,
                    1..=9 => 0,
                    _ => (next() % 12) as usize,
                };
                let value = vec![i as u8; vlen];
                let want = b.len_after(key, vlen) <= limit;
                let bound_before = b.bound;
                let got = b.fits(key, vlen, limit);
                assert_eq!(
                    got, want,
                    "round {round} entry {i} key {key} value {vlen} limit {limit}"
                );
                if b.bound.room == bound_before.room
                    && b.bound.key_lim == bound_before.key_lim
                    && bound_before.room > 0
                {
                    fast += 1;
                } else {
                    exact += 1;
                }
                if !b.is_empty() && !got {
                    out.clear();
                    let w = b.write_to(&mut out).unwrap();
                    assert_eq!(w.len as usize, out.len());
                    splits += 1;
                }
                b.push(key, &value);
                assert_eq!(
                    b.encoded_len(),
                    v2_block_len(b.n, b.last_key - b.first_key, b.values.len())
                );
            }
        }
        // The bound must have spared most exact sizings, and blocks must have split often.
        assert!(fast > 4 * exact, "fast {fast} exact {exact}");
        assert!(splits > 1000, "splits {splits}");
    }

    #[test]
    fn corrupt_blocks_are_rejected_without_panic() {
        let (bytes, _) = build(&[(1, b"a"), (2, b"bc")]);
        assert!(BlockView::parse(&bytes[..3]).is_err());
        assert!(
            BlockView::parse(&[0, 0, 0, 0]).is_err(),
            "empty blocks are invalid"
        );
        assert!(BlockView::parse(&[0xff, 0xff, 0xff, 0xff, 0]).is_err());
        // Keys out of order.
        let mut bad = bytes.clone();
        bad[4..12].copy_from_slice(&7u64.to_le_bytes());
        assert!(BlockView::parse(&bad).unwrap().validate(7, 2).is_err());
        // Value end past the end.
        let mut bad = bytes.clone();
        bad[20..24].copy_from_slice(&9u32.to_le_bytes());
        let v = BlockView::parse(&bad).unwrap();
        assert!(v.validate(1, 2).is_err());
        assert_eq!(v.value(0), None);
        // Wrong index keys.
        assert!(BlockView::parse(&bytes).unwrap().validate(1, 3).is_err());
        // Every prefix parses or errs, never panics.
        for cut in 0..bytes.len() {
            if let Ok(v) = BlockView::parse(&bytes[..cut]) {
                let _ = v.validate(1, 2);
                let _ = (v.value(0), v.value(1), v.key(5));
            }
        }
    }
}
