//! Entry points for the fuzz targets in tools/fuzz (not part of the supported API).
//!
//! Block parsing sits behind a crc in a real file, so random bytes would almost never reach
//! it through [`Segment::open`]; these functions feed it directly, then walk whatever parsed
//! the way a reader would. Each must return an error or a value for any input, never panic.

use std::path::Path;

use super::block::BlockView;
use super::{decode_postings, decode_u64s_version, Segment};

/// Parses `bytes` as one data block of format version 1 and reads every key and value.
pub fn block(bytes: &[u8]) -> usize {
    block_version(bytes, 1)
}

/// Parses `bytes` as one data block of format version 2 (the Elias-Fano block codec) and
/// reads every key and value; when it validates, checks that `find`, `lower_bound` and `key`
/// agree with each other.
pub fn block_v2(bytes: &[u8]) -> usize {
    block_version(bytes, 2)
}

fn block_version(bytes: &[u8], version: u32) -> usize {
    let Ok(view) = BlockView::parse_version(bytes, version) else {
        return 0;
    };
    // Unvalidated accessors must not panic either.
    for i in [0, 1, view.len().saturating_sub(1), view.len()] {
        let _ = (view.key(i), view.value(i), view.lower_bound(i as u64));
    }
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
    let mut prev: Option<u64> = None;
    for i in 0..n {
        total += view.value(i).map_or(0, <[u8]>::len);
        let k = view.key(i);
        assert!(prev.is_none_or(|p| p < k), "validated keys increase");
        prev = Some(k);
        assert_eq!(view.lower_bound(k), i);
        assert_eq!(view.find(k), Some(i));
        if k > 0 && (i == 0 || view.key(i - 1) != k - 1) {
            assert_eq!(view.find(k - 1), None);
            assert_eq!(view.lower_bound(k - 1), i);
        }
        assert!(view.value(i).is_some(), "validated values are in range");
    }
    total
}

/// Decodes `bytes` as a posting-list value and as a u64-list value of both format versions.
pub fn values(bytes: &[u8]) -> usize {
    let mut n = 0;
    if let Ok(p) = decode_postings(bytes) {
        n += p.iter().count() + p.to_vec().len();
        let _ = p.contains(7);
        let _ = p.to_bitmap().len();
    }
    for version in [1, 2, 3] {
        if let Ok(v) = decode_u64s_version(bytes, version) {
            n += v.iter().count();
            let _ = v.is_strictly_increasing();
            let _ = v.intersect_count(&[1, 2, 3, u64::MAX]);
        }
    }
    n
}

/// Round trip of the version-2 value codecs on values derived from `bytes`: the posting ids
/// and FORWARD hashes it spells (as u32 / u64 LE words, sorted and deduplicated) must come back
/// exactly. Panics on a mismatch (a codec bug).
pub fn round_trip(bytes: &[u8]) {
    let mut ids: Vec<u32> = bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::new();
    super::encode_postings(&ids, &mut out);
    let back = decode_postings(&out).map(|l| l.to_vec());
    assert_eq!(back.ok().as_ref(), Some(&ids), "posting list round trip");
    let hashes = u64_words(bytes);
    out.clear();
    super::encode_u64s(&hashes, &mut out);
    let back = decode_u64s_version(&out, 2).map(|l| l.to_vec());
    assert_eq!(back.ok().as_ref(), Some(&hashes), "forward list round trip");
}

/// Round trip of format 3's ranked FORWARD lists (table `POSTINGS_RANKS` and the rank -> key
/// mapping of `Segment::forward_into`) on keys derived from `bytes`: the u64 LE words it spells
/// are a POSTINGS table (in blocks of a few keys), and up to 8 documents hold the keys whose
/// bit says so in the input's bytes; each document's FORWARD list, stored as ranks into
/// `dir`/`ranked.ndds`, must map back to exactly its keys, and `verify` must find no problem.
/// Panics on a mismatch (a codec bug).
pub fn ranked_forward(dir: &Path, bytes: &[u8]) -> usize {
    let keys = u64_words(bytes);
    if keys.is_empty() {
        return 0;
    }
    let docs: Vec<Vec<usize>> = (0..8)
        .map(|d| {
            (0..keys.len())
                .filter(|&i| (bytes[i % bytes.len()] >> d) & 1 == 1)
                .collect()
        })
        .collect();
    let path = dir.join("ranked.ndds");
    let _ = std::fs::remove_file(&path);
    let target = 24 + (bytes[0] as usize % 8) * 8;
    let mut w = super::SegmentWriter::create_version(dir, "ranked.ndds", target, 3)
        .expect("ranked segment writer");
    w.begin_table(super::POSTINGS).expect("begin POSTINGS");
    let mut buf = Vec::new();
    for (i, &k) in keys.iter().enumerate() {
        let ids: Vec<u32> = (0..8u32)
            .filter(|&d| docs[d as usize].contains(&i))
            .collect();
        buf.clear();
        super::encode_postings(&ids, &mut buf);
        w.add(k, &buf).expect("add posting");
    }
    w.end_table().expect("end POSTINGS");
    w.begin_table(super::FORWARD).expect("begin FORWARD");
    for (d, ranks) in docs.iter().enumerate() {
        buf.clear();
        let ranks: Vec<u64> = ranks.iter().map(|&r| r as u64).collect();
        super::encode_u64s(&ranks, &mut buf);
        w.add(d as u64, &buf).expect("add forward");
    }
    w.end_table().expect("end FORWARD");
    w.finish().expect("finish");
    let seg = Segment::open(&path).expect("open ranked segment");
    let report = seg.verify();
    assert!(report.is_ok(), "verify: {:?}", report.problems);
    let mut out = Vec::new();
    for (d, ranks) in docs.iter().enumerate() {
        assert!(seg.forward_into(d as u64, &mut out).expect("forward_into"));
        let want: Vec<u64> = ranks.iter().map(|&r| keys[r]).collect();
        assert_eq!(out, want, "doc {d}: ranks mapped back to keys");
    }
    // Many lists at once, in no order (the last document's first): mapped by blocks and
    // through whatever the key cache holds, the keys of the lists one by one.
    let mut all: Vec<u64> = docs.iter().rev().flatten().map(|&r| r as u64).collect();
    let want: Vec<u64> = all.iter().map(|&r| keys[r as usize]).collect();
    let mut by_blocks = all.clone();
    seg.ranks_to_keys_by_blocks(&mut by_blocks)
        .expect("ranks_to_keys_by_blocks");
    assert_eq!(by_blocks, want, "ranks mapped by blocks");
    seg.ranks_to_keys_bulk(&mut all)
        .expect("ranks_to_keys_bulk");
    assert_eq!(all, want, "ranks mapped in bulk");
    // Keys to ranks: every key and its neighbours (absent unless they are keys too), sorted
    // and unique; each found key's rank is its position, in order, and none is missed.
    let mut asked: Vec<u64> = keys
        .iter()
        .flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)])
        .collect();
    asked.sort_unstable();
    asked.dedup();
    let mut found = Vec::new();
    seg.ranks_of_each(&asked, |i, r| found.push((asked[i], r)))
        .expect("ranks_of_each");
    let want: Vec<(u64, u64)> = (keys.iter().enumerate())
        .map(|(r, &k)| (k, r as u64))
        .collect();
    assert_eq!(found, want, "keys mapped to their ranks");
    // Through the blocks, list by list, with the rank read-ahead and without: each list as
    // it is stored, and all of them at once in no order (groups of ranks crossing blocks
    // and lists).
    let flat: Vec<u64> = docs.iter().rev().flatten().map(|&r| r as u64).collect();
    let flat_keys: Vec<u64> = flat.iter().map(|&r| keys[r as usize]).collect();
    for read_ahead in [false, true] {
        for (d, ranks) in docs.iter().enumerate() {
            let ranks: Vec<u64> = ranks.iter().map(|&r| r as u64).collect();
            out.clear();
            seg.ranks_to_keys_in_blocks(&ranks, read_ahead, &mut out)
                .expect("ranks_to_keys_in_blocks");
            let want: Vec<u64> = ranks.iter().map(|&r| keys[r as usize]).collect();
            assert_eq!(
                out, want,
                "doc {d} through the blocks (read-ahead {read_ahead})"
            );
        }
        out.clear();
        seg.ranks_to_keys_in_blocks(&flat, read_ahead, &mut out)
            .expect("ranks_to_keys_in_blocks");
        assert_eq!(
            out, flat_keys,
            "all lists through the blocks (read-ahead {read_ahead})"
        );
    }
    let mut past = vec![0, keys.len() as u64];
    let e = seg.ranks_to_keys_by_blocks(&mut past).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    // A rank past the keys is reported as such wherever it falls in a group of ranks.
    for at in [0, 1, 15, 16, 17, 40] {
        let mut ranks: Vec<u64> = (0..at).map(|i| (i % keys.len()) as u64).collect();
        ranks.push(keys.len() as u64 + at as u64);
        ranks.push(0);
        for read_ahead in [false, true] {
            out.clear();
            let e = seg
                .ranks_to_keys_in_blocks(&ranks, read_ahead, &mut out)
                .unwrap_err();
            let r = keys.len() + at;
            assert!(
                e.is_corruption() && e.to_string().contains(&format!("rank {r} ")),
                "{e}"
            );
            let want: Vec<u64> = ranks[..at].iter().map(|&r| keys[r as usize]).collect();
            assert_eq!(out, want, "keys before the bad rank at {at}");
        }
    }
    // Ranks to coarse keys (the verification's bound): those of the keys, and a rank past
    // the keys is corruption.
    let ranks: Vec<u64> = (0..keys.len() as u64).collect();
    let mut coarse = Vec::new();
    assert!(seg.coarse_into(&ranks, &mut coarse).expect("coarse_into"));
    let want: Vec<u16> = keys.iter().map(|&k| super::coarse_key(k)).collect();
    assert_eq!(coarse, want, "ranks mapped to coarse keys");
    let e = seg.coarse_into(&past, &mut coarse).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    drop(seg);
    let _ = std::fs::remove_file(&path);
    keys.len()
}

/// Opens the segment file at `path` and reads it all: every table, entry and value codec, the
/// full verification, and point lookups, one at a time and batched (which must agree).
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
            if id == super::FORWARD {
                let mut keys = Vec::new();
                n += seg.forward_into(key, &mut keys).map_or(0, |_| keys.len());
            }
        }
        let _ = seg.range(id, 10, 1 << 40).count();
        n += batched_lookups(&seg, id);
    }
    n
}

/// Looks up some keys of table `id` (and their neighbours) together and one at a time:
/// `get_postings_many` must give the lists `get_postings` gives, and fail when one of those
/// fails. Panics otherwise.
fn batched_lookups(seg: &Segment, id: u32) -> usize {
    let mut keys: Vec<u64> = Vec::new();
    for e in seg.iter(id).take(40) {
        let Ok((key, _)) = e else { break };
        keys.extend([key, key.wrapping_add(1)]);
    }
    keys.extend([0, u64::MAX]);
    type One = crate::error::Result<Option<Vec<u32>>>;
    let singles: Vec<One> = (keys.iter())
        .map(|&k| {
            seg.get_postings(id, k)
                .map(|o| o.map(|l| l.iter().collect()))
        })
        .collect();
    if id == super::POSTINGS {
        // The sorted filter walk answers as the batched one (a damaged filter: "may").
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        seg.postings_may_hold_many(&sorted, &mut a);
        seg.postings_may_hold_sorted(&sorted, &mut b);
        assert_eq!(a, b, "sorted filter walk differs from batched answers");
    }
    let mut got: Vec<(usize, Vec<u32>)> = Vec::new();
    let many = seg.get_postings_many(id, &keys, |i, l| got.push((i, l.iter().collect())));
    if singles.iter().all(|r| r.is_ok()) {
        assert!(
            many.is_ok(),
            "batched lookups failed where single ones did not"
        );
        let want: Vec<(usize, Vec<u32>)> = (singles.into_iter().enumerate())
            .filter_map(|(i, r)| r.ok().flatten().map(|l| (i, l)))
            .collect();
        assert_eq!(got, want, "batched lookups differ from single ones");
    } else {
        assert!(
            many.is_err(),
            "batched lookups passed where a single one failed"
        );
    }
    got.len()
}

/// Decodes `bytes` as a POSTINGS key filter value and queries it; then builds the filter of the
/// keys `bytes` spells (u64 LE words, deduplicated) and checks it admits every one of them.
/// Panics on a false negative (a filter bug).
pub fn key_filter(bytes: &[u8]) -> usize {
    let mut n = 0;
    if let Ok(Some(f)) = super::filter::KeyFilter::decode(bytes) {
        for k in [0u64, 1, 7, u64::MAX, bytes.len() as u64] {
            n += f.may_contain(k) as usize;
        }
    }
    let keys = u64_words(bytes);
    let mut v = Vec::new();
    super::filter::build(&keys, &mut v);
    for &k in &keys {
        assert!(super::filter::may_contain(&v, k), "key filter misses {k}");
    }
    n + v.len()
}

/// The u64 LE words `bytes` spells (the last one zero-padded), sorted and deduplicated: a
/// valid FORWARD list or key set derived from fuzz input.
fn u64_words(bytes: &[u8]) -> Vec<u64> {
    let mut v: Vec<u64> = bytes
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}
