//! Entry points for the fuzz targets in tools/fuzz (not part of the supported API).
//!
//! Block parsing sits behind a crc in a real file, so random bytes would almost never reach
//! it through [`Segment::open`]; these functions feed it directly, then walk whatever parsed
//! the way a reader would. Each must return an error or a value for any input, never panic.

use std::path::Path;

use super::block::BlockView;
use super::{decode_postings, decode_u64s, Segment};

/// Parses `bytes` as one data block and reads every key and value.
pub fn block(bytes: &[u8]) -> usize {
    let Ok(view) = BlockView::parse(bytes) else {
        return 0;
    };
    let n = view.len();
    let (first, last) = if n > 0 {
        (view.key(0), view.key(n - 1))
    } else {
        (0, 0)
    };
    if view.validate(first, last).is_err() {
        return 0;
    }
    let mut total = 0;
    for i in 0..n {
        total += view.value(i).map_or(0, <[u8]>::len);
        let _ = view.lower_bound(view.key(i));
    }
    total
}

/// Decodes `bytes` as a posting-list value and as a u64-list value.
pub fn values(bytes: &[u8]) -> usize {
    let mut n = 0;
    if let Ok(p) = decode_postings(bytes) {
        n += p.iter().count() + p.to_vec().len();
        let _ = p.contains(7);
        let _ = p.to_bitmap().len();
    }
    if let Ok(v) = decode_u64s(bytes) {
        n += v.iter().count();
        let _ = v.is_strictly_increasing();
        let _ = v.intersect_count(&[1, 2, 3, u64::MAX]);
    }
    n
}

/// Opens the segment file at `path` and reads it all: every table, entry and value codec, the
/// full verification, and point lookups.
pub fn file(path: &Path) -> usize {
    let Ok(seg) = Segment::open(path) else {
        return 0;
    };
    let mut n = seg.verify().problems.len();
    let ids: Vec<u32> = seg.tables().map(|t| t.id).collect();
    for id in ids {
        for e in seg.iter(id) {
            let Ok((key, value)) = e else { break };
            n += values(value);
            let _ = seg.get(id, key);
            let _ = seg.get_postings(id, key);
            let _ = seg.get_u64s(id, key);
        }
        let _ = seg.range(id, 10, 1 << 40).count();
    }
    n
}
