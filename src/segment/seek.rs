//! A forward-only cursor over one table: the segment side of a merge join.
//!
//! Callers look keys up in non-decreasing order (a sorted probe stream), so the cursor only
//! ever moves forward through the table's blocks: each block is read (and crc-checked) at most
//! once per pass and the file is touched at increasing offsets, which the kernel's read-ahead
//! turns into a sequential scan of the parts of the table the probes need. Within the current
//! block a key is found by binary search; a key past it skips ahead over the in-memory block
//! index, never back.

use super::block::BlockView;
use super::layout::Table;
use super::postings::{decode_postings, PostingList};
use super::reader::Segment;
use crate::error::{Error, Result};

/// Forward-only lookups in one table of a segment (see the module docs).
pub struct Seeker<'a> {
    seg: &'a Segment,
    table: Option<&'a Table>,
    block: usize,
    view: Option<BlockView<'a>>,
    last: Option<u64>,
    /// Everything before this file offset has been handed back (see [`Segment::release`]).
    released: u64,
    /// Blocks loaded so far (each at most once).
    pub blocks_read: u64,
    /// Keys the POSTINGS key filter ruled out before their block was read.
    pub keys_filtered: u64,
    /// Whether to consult the key filter (POSTINGS only).
    filtered: bool,
}

/// The cursor hands the blocks it has passed back to the kernel in steps of this size.
const RELEASE_STEP: u64 = 1 << 20;

impl Segment {
    /// A forward-only cursor over `table` (an absent table finds nothing).
    pub fn seeker(&self, table: u32) -> Seeker<'_> {
        Seeker {
            seg: self,
            table: self.table(table),
            block: 0,
            view: None,
            last: None,
            released: 0,
            blocks_read: 0,
            keys_filtered: 0,
            filtered: table == super::POSTINGS,
        }
    }
}

impl<'a> Seeker<'a> {
    /// The value stored under `key`. Keys must come in non-decreasing order; a smaller key
    /// than the previous one is a caller bug, reported as an error rather than a wrong answer.
    pub fn seek(&mut self, key: u64) -> Result<Option<&'a [u8]>> {
        if self.last.is_some_and(|l| key < l) {
            return Err(Error::InvalidArgument(format!(
                "seeker keys must not decrease ({key:#x} after {:#x})",
                self.last.unwrap_or(0)
            )));
        }
        self.last = Some(key);
        let Some(t) = self.table else {
            return Ok(None);
        };
        // Skip ahead to the first block whose last key is >= key.
        let rest = t.last_keys.get(self.block..).unwrap_or(&[]);
        let skip = rest.partition_point(|&last| last < key);
        if skip > 0 || self.view.is_none() {
            self.block += skip;
            self.view = None;
            let here = self.seg.block_offset(t, self.block);
            if here >= self.released + RELEASE_STEP {
                if self.released == 0 {
                    self.released = self.seg.block_offset(t, 0);
                }
                self.seg.release(self.released, here);
                self.released = here;
            }
            match t.blocks.get(self.block) {
                Some(b) if b.first_key <= key => {}
                Some(_) => return Ok(None), // key falls between two blocks
                None => {
                    self.table = None; // past the end: nothing more to find
                    return Ok(None);
                }
            }
            // The block's key filter, before the block is touched: a key it rules out costs
            // three bytes of the filter table, not a block read.
            if self.filtered && !self.seg.postings_may_contain(self.block, key)? {
                self.keys_filtered += 1;
                return Ok(None);
            }
            self.view = Some(self.seg.block(t, self.block)?);
            self.blocks_read += 1;
        }
        let Some(view) = &self.view else {
            return Ok(None);
        };
        let Some(i) = view.find(key) else {
            return Ok(None);
        };
        self.seg.value(t, self.block, view, i).map(Some)
    }

    /// `seek` + `decode_postings`; errors name the file and the value's offset.
    pub fn seek_postings(&mut self, key: u64) -> Result<Option<PostingList<'a>>> {
        match self.seek(key)? {
            None => Ok(None),
            Some(v) => decode_postings(v)
                .map(Some)
                .map_err(|e| self.seg.rebase(e, v)),
        }
    }
}
