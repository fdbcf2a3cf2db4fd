//! Whole-file tests of the segment module: round trips, publishing, the spec's golden bytes,
//! corruption (every single-byte flip, truncation, unknown version) and a model-based proptest.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::error::Error;

type Tables = BTreeMap<u32, BTreeMap<u64, Vec<u8>>>;

/// Writes `tables` as a format-2 segment: these tests' FORWARD values are hash lists, which
/// format 3 stores as ranks (its own tests are below, `ranked_*`).
fn write(dir: &Path, name: &str, tables: &Tables, block_target: usize) -> SegmentMeta {
    write_version(dir, name, tables, block_target, 2)
}

fn write_version(
    dir: &Path,
    name: &str,
    tables: &Tables,
    block_target: usize,
    version: u32,
) -> SegmentMeta {
    fill(
        SegmentWriter::create_version(dir, name, block_target, version).unwrap(),
        tables,
    )
}

/// Writes `tables` with the writer `w` (any version and setup) and finishes the segment.
fn fill(mut w: SegmentWriter, tables: &Tables) -> SegmentMeta {
    for (&id, entries) in tables {
        w.begin_table(id).unwrap();
        for (&k, v) in entries {
            w.add(k, v).unwrap();
        }
        w.end_table().unwrap();
    }
    w.finish().unwrap()
}

/// Asserts the segment serves exactly `tables` through every read path.
fn check_contents(seg: &Segment, tables: &Tables) {
    for (&id, entries) in tables {
        assert!(seg.contains_table(id));
        let meta = seg.table_meta(id).unwrap();
        assert_eq!(meta.entries, entries.len() as u64);
        for (&k, v) in entries {
            assert_eq!(seg.get(id, k).unwrap(), Some(&v[..]), "table {id} key {k}");
            for probe in [k.wrapping_sub(1), k.wrapping_add(1)] {
                let want = entries.get(&probe).map(|v| &v[..]);
                assert_eq!(seg.get(id, probe).unwrap(), want);
            }
        }
        let all: Vec<(u64, Vec<u8>)> = seg
            .iter(id)
            .map(|r| r.map(|(k, v)| (k, v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        let want: Vec<(u64, Vec<u8>)> = entries.iter().map(|(k, v)| (*k, v.clone())).collect();
        assert_eq!(all, want);
    }
    assert!(seg.verify().is_ok(), "{:?}", seg.verify().problems);
}

fn sample_tables() -> Tables {
    let mut t = Tables::new();
    let mut postings = BTreeMap::new();
    for i in 0..3000u64 {
        let ids: Vec<u32> = (0..(i % 40) as u32).map(|j| j * 7 + i as u32).collect();
        let mut v = Vec::new();
        encode_postings(&ids, &mut v);
        postings.insert(i.wrapping_mul(0x9e37_79b9_7f4a_7c15), v);
    }
    t.insert(POSTINGS, postings);
    let mut forward = BTreeMap::new();
    for doc in 0..500u64 {
        let feats: Vec<u64> = (0..doc % 50).map(|j| j * 1000 + doc).collect();
        let mut v = Vec::new();
        encode_u64s(&feats, &mut v);
        forward.insert(doc, v);
    }
    t.insert(FORWARD, forward);
    t.insert(3, BTreeMap::new()); // empty table
    for s in 0..4 {
        let mut m = BTreeMap::new();
        m.insert(u64::MAX - s as u64, vec![TAG_RAW, 1, 0, 0, 0]);
        m.insert(0, vec![TAG_RAW]);
        t.insert(simhash_table(s), m);
    }
    t
}

#[test]
fn round_trip_many_tables_with_small_and_default_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let tables = sample_tables();
    for (name, target) in [("a", 200), ("b", DEFAULT_BLOCK_TARGET)] {
        let meta = write(dir.path(), name, &tables, target);
        let seg = Segment::open(dir.path().join(name)).unwrap();
        assert_eq!(seg.meta(), meta);
        assert_eq!(
            meta.bytes,
            std::fs::metadata(dir.path().join(name)).unwrap().len()
        );
        assert_eq!(
            meta.tables
                .iter()
                .map(|t| t.id)
                .filter(|&id| id != POSTINGS_FILTER)
                .collect::<Vec<_>>(),
            tables.keys().copied().collect::<Vec<_>>()
        );
        // The writer added one key filter per POSTINGS block.
        assert_eq!(
            seg.table_meta(POSTINGS_FILTER).map(|t| t.entries),
            seg.table_meta(POSTINGS).map(|t| t.blocks as u64)
        );
        check_contents(&seg, &tables);
        assert!(
            !seg.contains_table(99)
                && seg.get(99, 1).unwrap().is_none()
                && seg.iter(99).next().is_none()
        );
        let empty = seg.table_meta(3).unwrap();
        assert_eq!(
            (
                empty.entries,
                empty.blocks,
                empty.min_key,
                empty.max_key,
                empty.bytes
            ),
            (0, 0, 0, 0, 0)
        );
        // Typed accessors.
        let f = seg.get_u64s(FORWARD, 7).unwrap().unwrap();
        assert_eq!(f.to_vec(), vec![7, 1007, 2007, 3007, 4007, 5007, 6007]);
        let k = 5u64.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        assert_eq!(
            seg.get_postings(POSTINGS, k).unwrap().unwrap().to_vec(),
            vec![5, 12, 19, 26, 33]
        );
        if name == "a" {
            assert!(seg.table_meta(POSTINGS).unwrap().blocks > 100);
        }
    }
}

#[test]
fn range_is_inclusive_and_clipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut tables = Tables::new();
    tables.insert(
        7,
        (0..1000u64)
            .map(|k| (k * 3, k.to_le_bytes().to_vec()))
            .collect(),
    );
    write(dir.path(), "s", &tables, 100);
    let seg = Segment::open(dir.path().join("s")).unwrap();
    let keys = |lo, hi| {
        seg.range(7, lo, hi)
            .map(|r| r.unwrap().0)
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(3, 9), vec![3, 6, 9]);
    assert_eq!(keys(4, 8), vec![6]);
    assert_eq!(keys(2997, u64::MAX), vec![2997]);
    assert_eq!(keys(0, 0), vec![0]);
    assert!(keys(9, 3).is_empty());
    assert_eq!(keys(0, u64::MAX).len(), 1000);
    for lo in (0..3000).step_by(97) {
        let hi = lo + 250;
        let want: Vec<u64> = tables[&7].range(lo..=hi).map(|(k, _)| *k).collect();
        assert_eq!(keys(lo, hi), want);
    }
}

#[test]
fn empty_segment_and_huge_value() {
    let dir = tempfile::tempdir().unwrap();
    let meta = write(dir.path(), "empty", &Tables::new(), 64);
    assert_eq!(meta.bytes, 16 + 48);
    let seg = Segment::open(dir.path().join("empty")).unwrap();
    assert_eq!(seg.tables().count(), 0);
    assert!(seg.verify().is_ok());

    let mut tables = Tables::new();
    let huge: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
    tables.insert(
        9,
        [(1, vec![1]), (2, huge.clone()), (3, vec![3])]
            .into_iter()
            .collect(),
    );
    write(dir.path(), "huge", &tables, 4096);
    let seg = Segment::open(dir.path().join("huge")).unwrap();
    assert_eq!(
        seg.table_meta(9).unwrap().blocks,
        3,
        "the huge value gets a block of its own"
    );
    check_contents(&seg, &tables);
}

#[test]
fn writer_rejects_misuse_without_poisoning() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SegmentWriter::create_version(dir.path(), "s", DEFAULT_BLOCK_TARGET, 3).unwrap();
    assert!(w.add(1, b"x").is_err(), "add outside a table");
    assert!(w.end_table().is_err());
    w.begin_table(POSTINGS).unwrap();
    assert!(w.begin_table(FORWARD).is_err(), "nested table");
    w.add(5, b"a").unwrap();
    assert!(
        matches!(w.add(5, b"b"), Err(Error::InvalidArgument(_))),
        "equal key"
    );
    assert!(w.add(4, b"b").is_err(), "smaller key");
    w.add(6, b"c").unwrap();
    w.end_table().unwrap();
    assert!(w.begin_table(POSTINGS).is_err(), "duplicate table id");
    assert!(
        w.begin_table(POSTINGS_FILTER).is_err(),
        "the filter table is the writer's own"
    );
    assert!(
        w.begin_table(POSTINGS_RANKS).is_err(),
        "the rank table is the writer's own"
    );
    w.begin_table(0).unwrap();
    w.add(0, b"").unwrap();
    let mut w2 = SegmentWriter::create(dir.path(), "t").unwrap();
    w2.begin_table(1).unwrap();
    assert!(w2.finish().is_err(), "finish with an open table");
    w.end_table().unwrap();
    let meta = w.finish().unwrap();
    assert_eq!(
        meta.tables.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![0, POSTINGS, POSTINGS_FILTER, POSTINGS_RANKS],
        "directory sorted by id"
    );
    let seg = Segment::open(dir.path().join("s")).unwrap();
    assert_eq!(seg.get(POSTINGS, 5).unwrap(), Some(&b"a"[..]));
    assert_eq!(seg.get(POSTINGS, 6).unwrap(), Some(&b"c"[..]));
    assert_eq!(seg.get(0, 0).unwrap(), Some(&b""[..]));
    for bad in ["", "a/b", "x.tmp", ".."] {
        assert!(SegmentWriter::create(dir.path(), bad).is_err(), "{bad:?}");
    }
}

#[test]
fn publish_is_tmp_then_rename() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SegmentWriter::create(dir.path(), "seg").unwrap();
    w.begin_table(1).unwrap();
    w.add(1, b"v").unwrap();
    assert!(dir.path().join("seg.tmp").exists() && !dir.path().join("seg").exists());
    w.end_table().unwrap();
    let meta = w.finish().unwrap();
    assert_eq!(meta.file_name, "seg");
    assert!(!dir.path().join("seg.tmp").exists() && dir.path().join("seg").exists());
    // Segments are write-once: the name cannot be reused.
    assert!(matches!(
        SegmentWriter::create(dir.path(), "seg"),
        Err(Error::Io { .. })
    ));
    // An abandoned writer leaves only its .tmp.
    let mut w = SegmentWriter::create(dir.path(), "orphan").unwrap();
    w.begin_table(1).unwrap();
    w.add(1, b"v").unwrap();
    drop(w);
    assert!(dir.path().join("orphan.tmp").exists() && !dir.path().join("orphan").exists());
}

/// The tiny segment of format-spec/segment.md, "Golden example" (format version 2).
fn golden_tables() -> Tables {
    let mut t = Tables::new();
    let mut p = BTreeMap::new();
    let enc = |ids: &[u32]| {
        let mut v = Vec::new();
        encode_postings(ids, &mut v);
        v
    };
    p.insert(3, enc(&[7]));
    p.insert(9, enc(&[1, 2]));
    t.insert(POSTINGS, p);
    let mut fwd = Vec::new();
    encode_u64s(&[16, 32, 4096], &mut fwd);
    t.insert(FORWARD, [(0, fwd)].into_iter().collect());
    t
}

/// The version-1 golden example: the same postings as raw lists and an empty FORWARD table.
fn golden_tables_v1() -> Tables {
    let mut t = Tables::new();
    let mut p = BTreeMap::new();
    p.insert(3, vec![TAG_RAW, 7, 0, 0, 0]);
    p.insert(9, vec![TAG_RAW, 1, 0, 0, 0, 2, 0, 0, 0]);
    t.insert(POSTINGS, p);
    t.insert(FORWARD, BTreeMap::new());
    t
}

/// Parses the hex lines between the markers `<!-- NAME:begin -->` and `<!-- NAME:end -->` of
/// the spec: `OOOO: hex bytes | comment`.
fn spec_golden_bytes(name: &str) -> Vec<u8> {
    let spec = include_str!("../../format-spec/segment.md");
    let body = spec
        .split(&format!("<!-- {name}:begin -->"))
        .nth(1)
        .and_then(|s| s.split(&format!("<!-- {name}:end -->")).next())
        .expect("golden markers in the spec");
    let mut bytes = Vec::new();
    for line in body.lines().filter(|l| l.contains(':') && l.contains('|')) {
        let (offset, rest) = line.split_once(':').unwrap();
        assert_eq!(
            usize::from_str_radix(offset.trim(), 16).unwrap(),
            bytes.len(),
            "offset column of {line:?}"
        );
        let hex = rest.split('|').next().unwrap();
        bytes.extend(
            hex.split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap()),
        );
    }
    bytes
}

#[test]
fn golden_bytes_match_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "golden", &golden_tables(), DEFAULT_BLOCK_TARGET);
    let file = std::fs::read(dir.path().join("golden")).unwrap();
    assert_eq!(
        file,
        spec_golden_bytes("golden"),
        "format-spec/segment.md golden example is out of date"
    );
    // Independent spot checks of the field lists.
    assert_eq!(&file[0..8], b"\x89NDDSEG\n");
    assert_eq!(&file[8..12], &2u32.to_le_bytes());
    assert_eq!(&file[file.len() - 8..], b"NDDSEGFT");
    assert_eq!(
        u32::from_le_bytes(file[16..20].try_into().unwrap()),
        2,
        "block entry count"
    );
    assert_eq!(
        u64::from_le_bytes(file[24..32].try_into().unwrap()),
        3,
        "first key"
    );
    assert_eq!(
        u64::from_le_bytes(file[32..40].try_into().unwrap()),
        6,
        "key span"
    );
    let footer = file.len() - 48;
    assert_eq!(
        u32::from_le_bytes(file[footer + 32..footer + 36].try_into().unwrap()),
        2
    );
    let seg = Segment::open(dir.path().join("golden")).unwrap();
    assert_eq!(seg.format_version(), 2);
    check_contents(&seg, &golden_tables());
    let fwd = seg.get_u64s(FORWARD, 0).unwrap().unwrap();
    assert_eq!(fwd.to_vec(), vec![16, 32, 4096]);
    let ids = seg.get_postings(POSTINGS, 9).unwrap().unwrap();
    assert_eq!(ids.to_vec(), vec![1, 2]);
}

/// Format 2 before the key filter table: the spec's plain golden bytes are what the writer
/// writes with the filter off, and they read as before (no filter: every key may be present).
#[test]
fn format_2_without_filter_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let w = SegmentWriter::create_version(dir.path(), "plain", DEFAULT_BLOCK_TARGET, 2)
        .unwrap()
        .without_key_filter();
    fill(w, &golden_tables());
    let file = std::fs::read(dir.path().join("plain")).unwrap();
    assert_eq!(file, spec_golden_bytes("golden-v2-plain"));
    let seg = Segment::open(dir.path().join("plain")).unwrap();
    assert!(!seg.has_key_filter());
    assert!(seg.verify().is_ok());
    check_contents(&seg, &golden_tables());
    // Without a filter the block search alone decides: 5 lies in block 0's key range.
    assert_eq!(seg.postings_block_for(5).unwrap(), Some(0));
    assert_eq!(seg.postings_block_for(10).unwrap(), None);
    let mut sk = seg.seeker(POSTINGS);
    assert!(sk.seek(5).unwrap().is_none());
    assert_eq!((sk.blocks_read, sk.keys_filtered), (1, 0));
}

/// A POSTINGS table of `n` keys `key(i)`, each listing documents `i` and `i + gap`.
fn pair_postings(n: u64, gap: u32, key: impl Fn(u64) -> u64) -> BTreeMap<u64, Vec<u8>> {
    let mut postings = BTreeMap::new();
    for i in 0..n {
        let mut v = Vec::new();
        encode_postings(&[i as u32, i as u32 + gap], &mut v);
        postings.insert(key(i), v);
    }
    postings
}

/// The key filter rules out absent keys before their block is read, never a present one, and
/// lookups through it return exactly what the unfiltered segment returns.
#[test]
fn key_filter_skips_blocks_without_changing_answers() {
    let dir = tempfile::tempdir().unwrap();
    let postings = pair_postings(5000, 7, |i| i * 1000 + 17);
    let tables: Tables = [(POSTINGS, postings.clone())].into_iter().collect();
    write(dir.path(), "f", &tables, 1024);
    let mut w = SegmentWriter::create_version(dir.path(), "n", 1024, 2)
        .unwrap()
        .without_key_filter();
    w.begin_table(POSTINGS).unwrap();
    for (&k, v) in &postings {
        w.add(k, v).unwrap();
    }
    w.end_table().unwrap();
    w.finish().unwrap();
    let f = Segment::open(dir.path().join("f")).unwrap();
    let n = Segment::open(dir.path().join("n")).unwrap();
    assert!(f.has_key_filter() && !n.has_key_filter());
    let blocks = f.table_meta(POSTINGS).unwrap().blocks as u64;
    assert_eq!(f.table_meta(POSTINGS_FILTER).unwrap().entries, blocks);
    assert!(f.verify().is_ok(), "{:?}", f.verify().problems);
    // Absent keys inside the key range: nearly all ruled out by the filter.
    let absent: Vec<u64> = (0..5000u64).map(|i| i * 1000 + 500).collect();
    let (mut sf, mut sn) = (f.seeker(POSTINGS), n.seeker(POSTINGS));
    let mut passed = 0;
    for &k in &absent {
        assert_eq!(sf.seek(k).unwrap(), None);
        assert_eq!(sn.seek(k).unwrap(), None);
        assert_eq!(f.get(POSTINGS, k).unwrap(), None);
        passed += f.postings_block_for(k).unwrap().is_some() as u64;
    }
    assert_eq!(sn.blocks_read, blocks);
    // Keys between two blocks' ranges, or in a block a false positive already loaded, need no
    // filter; the rest are all filtered.
    assert!(sf.keys_filtered > 3000, "{}", sf.keys_filtered);
    // 1/256 expected false positives: 20 of 5000; these are the only blocks read.
    assert!(passed < 60, "{passed} false positives");
    assert!(passed > 0, "some false positive exercises the read path");
    assert!(sf.blocks_read <= passed);
    // Present keys: never filtered, same values.
    let (mut sf, mut sn) = (f.seeker(POSTINGS), n.seeker(POSTINGS));
    for (&k, v) in &postings {
        assert_eq!(sf.seek(k).unwrap(), Some(&v[..]));
        assert_eq!(sn.seek(k).unwrap(), Some(&v[..]));
        assert!(f.postings_block_for(k).unwrap().is_some());
    }
    assert_eq!(sf.keys_filtered, 0);
    assert_eq!(sf.blocks_read, blocks);
    // The batched answers are `postings_block_for`'s, key by key, in any order and group
    // size: present, absent, between blocks, before the first and after the last key.
    let mut keys: Vec<u64> = postings
        .keys()
        .copied()
        .chain(absent.iter().copied())
        .collect();
    keys.extend([0, 16, 17, 4_999_017, 4_999_018, u64::MAX]);
    let mut rng = 7u64;
    for i in (1..keys.len()).rev() {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        keys.swap(i, (rng >> 33) as usize % (i + 1));
    }
    let mut out = Vec::new();
    for seg in [&f, &n] {
        for len in [0, 1, 15, 16, 17, 1000, keys.len()] {
            seg.postings_may_hold_many(&keys[..len], &mut out);
            let want: Vec<bool> = keys[..len]
                .iter()
                .map(|&k| seg.postings_block_for(k).unwrap().is_some())
                .collect();
            assert_eq!(out, want, "{len} keys");
        }
    }
    // The sorted walk answers the same, keys ascending with repeats.
    let mut sorted = keys.clone();
    sorted.extend_from_slice(&keys[..500]);
    sorted.sort_unstable();
    for seg in [&f, &n] {
        seg_sorted_equals_many(seg, &sorted);
    }
    seg_may_hold_all(&f, &postings.keys().copied().collect::<Vec<_>>());
    f.postings_may_hold_many(&absent, &mut out);
    assert_eq!(out.iter().filter(|&&h| h).count() as u64, passed);
}

/// `postings_may_hold_sorted` of the ascending `keys` (and of some sub-ranges of them) equals
/// `postings_may_hold_many`'s answers. The sub-ranges include lengths around the sorted
/// walk's pipeline depth (fewer keys than it locates ahead, exactly as many, one more, and
/// two pipelines and one).
fn seg_sorted_equals_many(seg: &Segment, keys: &[u64]) {
    assert!(keys.windows(2).all(|w| w[0] <= w[1]));
    let (mut want, mut got) = (Vec::new(), Vec::new());
    let n = keys.len();
    let ahead = super::reader::SORTED_AHEAD;
    for (a, b) in [
        (0, 0),
        (0, n.min(1)),
        (0, n),
        (n / 3, n / 2),
        (n / 2, n),
        (n.saturating_sub(1), n),
        (0, n.min(ahead - 1)),
        (0, n.min(ahead)),
        (0, n.min(ahead + 1)),
        (n.min(1), n.min(2 * ahead + 2)),
        (n.saturating_sub(ahead + 1), n),
    ] {
        seg.postings_may_hold_many(&keys[a..b], &mut want);
        got.push(true); // stale contents must be cleared
        seg.postings_may_hold_sorted(&keys[a..b], &mut got);
        assert_eq!(got, want, "keys {a}..{b} of {n}");
    }
}

/// The sorted filter walk (`postings_may_hold_sorted`) answers as the batched one
/// (`postings_may_hold_many`) on formats 2 and 3, with and without key filters, on random
/// keys with repeats, keys all before or all after the table, between blocks, dense runs in
/// one block, and an empty POSTINGS table or none.
#[test]
fn sorted_filter_walk_equals_batched_answers() {
    let dir = tempfile::tempdir().unwrap();
    // Keys over the middle of the u64 range, so some keys fall before and after it.
    let postings = pair_postings(4000, 3, |i| (1 << 62) + (filter_test_mix(i) >> 1));
    let present: Vec<u64> = postings.keys().copied().collect();
    let (lo, hi) = (present[0], present[present.len() - 1]);
    let mut rng = 99u64;
    let mut next = || {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        rng
    };
    let mut random: Vec<u64> = (0..6000).map(|_| next()).collect();
    random.extend(present.iter().step_by(3).copied());
    random.extend(present.iter().step_by(7).copied()); // repeats
    random.extend(present.iter().step_by(5).map(|k| k + 1));
    random.extend([0, 1, lo - 1, lo, hi, hi + 1, u64::MAX, u64::MAX]);
    random.sort_unstable();
    let before: Vec<u64> = (0..100).map(|i| i * 1000).collect();
    let after: Vec<u64> = (0..100).map(|i| u64::MAX - 100 + i).collect();
    // A dense run inside one block's range, and the same key many times.
    let dense: Vec<u64> = (present[10]..present[10] + 300).collect();
    let same = vec![present[100]; 50];
    for version in [2u32, 3] {
        for filtered in [true, false] {
            let name = format!("v{version}-{filtered}");
            let mut w = SegmentWriter::create_version(dir.path(), &name, 512, version).unwrap();
            if !filtered {
                w = w.without_key_filter();
            }
            w.begin_table(POSTINGS).unwrap();
            for (&k, v) in &postings {
                w.add(k, v).unwrap();
            }
            w.end_table().unwrap();
            w.finish().unwrap();
            let seg = Segment::open(dir.path().join(&name)).unwrap();
            assert_eq!(seg.has_key_filter(), filtered, "{name}");
            assert!(seg.table_meta(POSTINGS).unwrap().blocks > 20, "{name}");
            for keys in [&random, &before, &after, &dense, &same, &present, &vec![]] {
                seg_sorted_equals_many(&seg, keys);
            }
            // The present keys are all "may".
            let mut out = Vec::new();
            seg.postings_may_hold_sorted(&present, &mut out);
            assert!(out.iter().all(|&h| h), "{name}");
        }
    }
    // No POSTINGS table at all, and an empty one: nothing may be held.
    let other: Tables = [(FORWARD, [(5u64, vec![1u8])].into_iter().collect())]
        .into_iter()
        .collect();
    write(dir.path(), "noposting", &other, 512);
    let empty: Tables = [(POSTINGS, BTreeMap::new())].into_iter().collect();
    write(dir.path(), "empty", &empty, 512);
    for name in ["noposting", "empty"] {
        let seg = Segment::open(dir.path().join(name)).unwrap();
        seg_sorted_equals_many(&seg, &random);
        let mut out = Vec::new();
        seg.postings_may_hold_sorted(&random, &mut out);
        assert_eq!(out.len(), random.len());
        assert!(out.iter().all(|&h| !h), "{name}");
    }
}

/// Every key of the segment may be held (no false negatives in the batched answers).
fn seg_may_hold_all(seg: &Segment, keys: &[u64]) {
    let mut out = Vec::new();
    seg.postings_may_hold_many(keys, &mut out);
    assert_eq!(out.len(), keys.len());
    assert!(out.iter().all(|&h| h));
}

/// The version-1 fixture: the spec's version-1 golden bytes (what format 1 writers wrote) are
/// still read, and the version-1 writer path still produces exactly them.
#[test]
fn version_1_golden_file_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = spec_golden_bytes("golden-v1");
    let path = dir.path().join("v1");
    std::fs::write(&path, &v1).unwrap();
    let seg = Segment::open(&path).unwrap();
    assert_eq!(seg.format_version(), 1);
    check_contents(&seg, &golden_tables_v1());
    assert_eq!(
        seg.get_postings(POSTINGS, 3).unwrap().unwrap().to_vec(),
        vec![7]
    );
    assert_eq!(
        seg.get_postings(POSTINGS, 9).unwrap().unwrap().to_vec(),
        vec![1, 2]
    );
    let mut sk = seg.seeker(POSTINGS);
    assert!(sk.seek(2).unwrap().is_none());
    assert!(sk.seek(3).unwrap().is_some());
    assert!(sk.seek(9).unwrap().is_some());
    // The version-1 writer (values given in the current codecs, transcoded) writes these bytes.
    let mut w =
        SegmentWriter::create_version(dir.path(), "again", DEFAULT_BLOCK_TARGET, 1).unwrap();
    for (&id, entries) in &golden_tables() {
        w.begin_table(id).unwrap();
        if id == FORWARD {
            // the v1 golden file has an empty FORWARD table
        } else {
            for (&k, v) in entries {
                w.add(k, v).unwrap();
            }
        }
        w.end_table().unwrap();
    }
    w.finish().unwrap();
    assert_eq!(std::fs::read(dir.path().join("again")).unwrap(), v1);
}

/// Both versions serve the same logical content through every read path; values written in
/// the current codecs come back decoded identically from a version-1 file.
#[test]
fn version_1_and_2_files_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let tables = sample_tables();
    for target in [64usize, 512, DEFAULT_BLOCK_TARGET] {
        let v2 = format!("v2-{target}");
        let v1 = format!("v1-{target}");
        write(dir.path(), &v2, &tables, target);
        fill(
            SegmentWriter::create_version(dir.path(), &v1, target, 1).unwrap(),
            &tables,
        );
        let s1 = Segment::open(dir.path().join(&v1)).unwrap();
        let s2 = Segment::open(dir.path().join(&v2)).unwrap();
        assert_eq!((s1.format_version(), s2.format_version()), (1, 2));
        assert!(s1.verify().is_ok() && s2.verify().is_ok());
        check_contents(&s2, &tables);
        for (k, v) in &tables[&POSTINGS] {
            let want = decode_postings(v).unwrap().to_vec();
            assert_eq!(
                s1.get_postings(POSTINGS, *k).unwrap().unwrap().to_vec(),
                want
            );
            assert_eq!(
                s2.get_postings(POSTINGS, *k).unwrap().unwrap().to_vec(),
                want
            );
        }
        for (k, v) in &tables[&FORWARD] {
            let want = decode_u64s(v).unwrap().to_vec();
            assert_eq!(s1.get_u64s(FORWARD, *k).unwrap().unwrap().to_vec(), want);
            assert_eq!(s2.get_u64s(FORWARD, *k).unwrap().unwrap().to_vec(), want);
        }
        // The forward-only cursor finds the same keys in both.
        let keys: Vec<u64> = tables[&POSTINGS].keys().copied().collect();
        let (mut k1, mut k2) = (s1.seeker(POSTINGS), s2.seeker(POSTINGS));
        for &k in &keys {
            for probe in [k.saturating_sub(1), k] {
                let a = k1.seek_postings(probe).unwrap().map(|l| l.to_vec());
                let b = k2.seek_postings(probe).unwrap().map(|l| l.to_vec());
                assert_eq!(a, b, "probe {probe}");
            }
        }
        if target == DEFAULT_BLOCK_TARGET {
            assert!(
                s2.len_bytes() * 10 < s1.len_bytes() * 7,
                "version 2 is smaller: {} vs {}",
                s2.len_bytes(),
                s1.len_bytes()
            );
        }
    }
}

fn flip_sample() -> Tables {
    let mut t = Tables::new();
    t.insert(
        POSTINGS,
        (0..12u64)
            .map(|k| (k * 5, vec![TAG_RAW, k as u8, 0, 0, 0]))
            .collect(),
    );
    t.insert(
        FORWARD,
        (0..4u64)
            .map(|k| {
                let mut v = Vec::new();
                encode_u64s(&[k * 9, k * 9 + 1000], &mut v);
                (k, v)
            })
            .collect(),
    );
    t.insert(40, BTreeMap::new());
    t
}

/// Every entry reads back correctly or as an error, never as wrong bytes.
fn assert_never_wrong(seg: &Segment, tables: &Tables) -> bool {
    let mut saw_error = false;
    for (&id, entries) in tables {
        for (&k, v) in entries {
            match seg.get(id, k) {
                Ok(got) => assert_eq!(
                    got,
                    Some(&v[..]),
                    "wrong value served for table {id} key {k}"
                ),
                Err(e) => {
                    assert!(e.is_corruption(), "{e}");
                    saw_error = true;
                }
            }
        }
        for item in seg.iter(id) {
            match item {
                Ok((k, v)) => assert_eq!(entries.get(&k).map(|x| &x[..]), Some(v)),
                Err(_) => saw_error = true,
            }
        }
    }
    saw_error
}

/// Writes [`flip_sample`] as `dir/orig` (64-byte blocks); returns the tables and the file's
/// bytes, which the byte-flip tests damage copies of.
fn write_flip_sample(dir: &Path) -> (Tables, Vec<u8>) {
    let tables = flip_sample();
    write(dir, "orig", &tables, 64);
    let good = std::fs::read(dir.join("orig")).unwrap();
    (tables, good)
}

#[test]
fn every_single_byte_flip_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let (tables, good) = write_flip_sample(dir.path());
    assert!(
        Segment::open(dir.path().join("orig"))
            .unwrap()
            .table_meta(POSTINGS)
            .unwrap()
            .blocks
            > 2
    );
    let path = dir.path().join("flipped");
    for i in 0..good.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= x;
            std::fs::write(&path, &bad).unwrap();
            match Segment::open(&path) {
                Err(e) => assert!(e.is_corruption(), "byte {i}: {e}"),
                Ok(seg) => {
                    let report = seg.verify();
                    assert!(!report.is_ok(), "flip of byte {i} by {x:#x} went unnoticed");
                    assert!(report.problems.iter().all(|p| p.path == path));
                    let seg = Segment::open(&path).unwrap(); // fresh: nothing verified yet
                    assert!(
                        assert_never_wrong(&seg, &tables),
                        "byte {i}: reads saw no error"
                    );
                }
            }
        }
    }
}

#[test]
fn truncated_and_extended_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "orig", &flip_sample(), 64);
    let good = std::fs::read(dir.path().join("orig")).unwrap();
    let path = dir.path().join("cut");
    for len in 0..good.len() {
        std::fs::write(&path, &good[..len]).unwrap();
        let e = Segment::open(&path).unwrap_err();
        assert!(e.is_corruption(), "len {len}: {e}");
    }
    let mut longer = good.clone();
    longer.push(0);
    std::fs::write(&path, &longer).unwrap();
    assert!(matches!(Segment::open(&path), Err(Error::BadMagic { .. })));
    // verify_file turns open failures into problems.
    let report = Segment::verify_file(&path).unwrap();
    assert_eq!(report.problems.len(), 1);
    assert!(Segment::verify_file(dir.path().join("missing")).is_err());
}

#[test]
fn unknown_version_is_named() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "orig", &flip_sample(), 64);
    let mut bytes = std::fs::read(dir.path().join("orig")).unwrap();
    let f = bytes.len() - 48;
    for v in [0u32, FORMAT_VERSION + 1] {
        bytes[f + 32..f + 36].copy_from_slice(&v.to_le_bytes());
        let crc = crc32fast::hash(&bytes[f..f + 36]);
        bytes[f + 36..f + 40].copy_from_slice(&crc.to_le_bytes());
        let path = dir.path().join("v3");
        std::fs::write(&path, &bytes).unwrap();
        match Segment::open(&path) {
            Err(Error::UnsupportedFormatVersion {
                found,
                supported: FORMAT_VERSION,
                ..
            }) if found == v => {}
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn corrupt_block_reports_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    write_flip_sample(dir.path());
    let path = dir.path().join("orig");
    let seg = Segment::open(&path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[16 + 4] ^= 0x40; // first key of the first block of the first table
    let bad = dir.path().join("bad");
    std::fs::write(&bad, &bytes).unwrap();
    drop(seg);
    let seg = Segment::open(&bad).unwrap();
    match seg.get(POSTINGS, 0) {
        Err(Error::ChecksumMismatch {
            path, offset: 16, ..
        }) => assert_eq!(path, bad),
        other => panic!("{other:?}"),
    }
    let report = seg.verify();
    assert_eq!(report.problems.len(), 1);
    assert_eq!(report.problems[0].offset, 16);
    assert!(report.problems[0].to_string().contains("bad"));
}

#[test]
fn bad_values_are_reported_with_their_file_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Tables::new();
    t.insert(
        POSTINGS,
        [(1, vec![TAG_RAW]), (2, vec![0x09, 1])]
            .into_iter()
            .collect(),
    );
    // A version-2 FORWARD value [1, 1]: n = 2, first = 1, span = 0, high bits 0b11.
    let mut dup = vec![2];
    dup.extend_from_slice(&1u64.to_le_bytes());
    dup.extend_from_slice(&[0, 0x03]);
    t.insert(FORWARD, [(1, dup)].into_iter().collect());
    write(dir.path(), "s", &t, 4096);
    let path = dir.path().join("s");
    let seg = Segment::open(&path).unwrap();
    // Block: file header 16, block header 24, keys (n 2, span 1: 1 high byte + 2 samples = 9),
    // value ends (n 2, max 3: 1 high byte + 1 sample = 5), then values [01] [09 01]: value 2
    // starts at 16 + 24 + 9 + 5 + 1 = 55.
    match seg.get_postings(POSTINGS, 2) {
        Err(Error::Corrupt {
            path: p,
            offset: 55,
            ..
        }) => assert_eq!(p, path),
        other => panic!("{other:?}"),
    }
    let report = seg.verify();
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    assert!(
        seg.get_u64s(FORWARD, 1).unwrap().is_some(),
        "order is verify's job, not get's"
    );
}

#[test]
fn shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Segment>();
    use rayon::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let tables = sample_tables();
    write(dir.path(), "s", &tables, 512);
    let seg = std::sync::Arc::new(Segment::open(dir.path().join("s")).unwrap());
    let keys: Vec<u64> = tables[&POSTINGS].keys().copied().collect();
    let found = keys
        .par_iter()
        .filter(|&&k| seg.get(POSTINGS, k).unwrap().is_some())
        .count();
    assert_eq!(found, keys.len());
}

fn arb_tables() -> impl Strategy<Value = Tables> {
    let entries = prop::collection::btree_map(
        prop_oneof![0u64..64, any::<u64>(), (u64::MAX - 3)..=u64::MAX],
        prop::collection::vec(any::<u8>(), 0..40),
        0..120,
    );
    // Opaque table ids only: random bytes are not valid postings / feature arrays.
    prop::collection::btree_map(
        prop::sample::select(vec![0u32, 3, 6, 7, 100]),
        entries,
        0..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_tables_match_a_btreemap(tables in arb_tables(), target in 1usize..300, probes in prop::collection::vec(any::<u64>(), 8), ranges in prop::collection::vec((0u64..80, 0u64..80), 4)) {
        let dir = tempfile::tempdir().unwrap();
        let meta = write(dir.path(), "p", &tables, target);
        let seg = Segment::open(dir.path().join("p")).unwrap();
        prop_assert_eq!(seg.meta(), meta);
        check_contents(&seg, &tables);
        for id in [0u32, 3, 4, 5, 6, 7, 100] {
            let model = tables.get(&id);
            for &k in &probes {
                prop_assert_eq!(seg.get(id, k).unwrap(), model.and_then(|m| m.get(&k)).map(|v| &v[..]));
            }
            for &(lo, hi) in &ranges {
                let got: Vec<u64> = seg.range(id, lo, hi).map(|r| r.unwrap().0).collect();
                let want: Vec<u64> = match model {
                    Some(m) if lo <= hi => m.range(lo..=hi).map(|(k, _)| *k).collect(),
                    _ => vec![],
                };
                prop_assert_eq!(got, want);
            }
        }
    }
}

/// The data blocks of every table of the segment file at `path`, as byte slices of `file`.
fn block_bytes<'f>(seg: &Segment, file: &'f [u8]) -> Vec<&'f [u8]> {
    seg.tables
        .iter()
        .flat_map(|t| t.blocks.iter())
        .map(|b| &file[b.offset as usize..(b.offset + b.len as u64) as usize])
        .collect()
}

/// A deterministic stand-in for a libFuzzer run of the `segment_block_v2` target (cargo-fuzz is
/// not needed): real version-2 blocks, each single-bit flip of the small ones, random byte
/// changes and truncations of the large ones, through `fuzz::block_v2` (which asserts that
/// `find`, `lower_bound` and `key` agree whenever a block validates) and the value codecs.
#[test]
fn v2_block_codec_survives_mutations() {
    let dir = tempfile::tempdir().unwrap();
    let mut tables = sample_tables();
    tables.insert(0, golden_tables()[&POSTINGS].clone());
    write(dir.path(), "s", &tables, 256);
    let file = std::fs::read(dir.path().join("s")).unwrap();
    let seg = Segment::open(dir.path().join("s")).unwrap();
    let blocks = block_bytes(&seg, &file);
    assert!(blocks.len() > 20);
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut validated = 0;
    for b in &blocks {
        assert!(
            fuzz::block_v2(b) > 0 || b.len() < 64,
            "intact blocks validate"
        );
        let flips: Vec<usize> = if b.len() <= 120 {
            (0..b.len() * 8).collect()
        } else {
            (0..400)
                .map(|_| (next() % (b.len() as u64 * 8)) as usize)
                .collect()
        };
        for bit in flips {
            let mut m = b.to_vec();
            m[bit / 8] ^= 1 << (bit % 8);
            validated += (fuzz::block_v2(&m) > 0) as usize;
            fuzz::values(&m);
        }
        for cut in [0, 1, 23, 24, 25, b.len() / 2, b.len() - 1] {
            fuzz::block_v2(&b[..cut.min(b.len())]);
        }
    }
    // Some flips land in value bytes, which the block codec does not interpret.
    assert!(validated > 0);
    for len in [0usize, 1, 3, 4, 7, 8, 9, 64, 200, 1000] {
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        fuzz::round_trip(&bytes);
        fuzz::block_v2(&bytes);
        fuzz::values(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Posting lists and FORWARD lists round-trip through the version-2 codecs, through a
    /// version-1 writer (transcoded) and through both files' readers alike.
    #[test]
    fn v2_value_codecs_round_trip(
        ids in prop::collection::btree_set(prop_oneof![0u32..64, 0u32..100_000, any::<u32>()], 0..300),
        feats in prop::collection::btree_set(prop_oneof![0u64..1000, any::<u64>(), (u64::MAX - 5)..=u64::MAX], 0..400),
    ) {
        let ids: Vec<u32> = ids.into_iter().collect();
        let feats: Vec<u64> = feats.into_iter().collect();
        let mut p = Vec::new();
        encode_postings(&ids, &mut p);
        prop_assert_eq!(decode_postings(&p).unwrap().to_vec(), ids.clone());
        let mut v1 = Vec::new();
        encode_postings_v1(&ids, &mut v1);
        prop_assert!(p.len() <= v1.len());
        let mut f = Vec::new();
        encode_u64s(&feats, &mut f);
        let d = decode_u64s(&f).unwrap();
        prop_assert_eq!(d.to_vec(), feats.clone());
        prop_assert_eq!(d.iter().collect::<Vec<_>>(), feats.clone());
        prop_assert_eq!(d.len(), feats.len());
        prop_assert!(d.is_strictly_increasing());
        prop_assert!(f.len() <= 8 * feats.len() + 20);
        let dir = tempfile::tempdir().unwrap();
        for version in [1u32, 2] {
            let name = format!("v{version}");
            let mut w = SegmentWriter::create_version(dir.path(), &name, 128, version).unwrap();
            w.begin_table(POSTINGS).unwrap();
            w.add(5, &p).unwrap();
            w.add(6, &p).unwrap();
            w.end_table().unwrap();
            w.begin_table(FORWARD).unwrap();
            w.add(1, &f).unwrap();
            w.end_table().unwrap();
            w.finish().unwrap();
            let seg = Segment::open(dir.path().join(&name)).unwrap();
            prop_assert!(seg.verify().is_ok(), "{:?}", seg.verify().problems);
            prop_assert_eq!(seg.get_postings(POSTINGS, 6).unwrap().unwrap().to_vec(), ids.clone());
            prop_assert_eq!(seg.get_u64s(FORWARD, 1).unwrap().unwrap().to_vec(), feats.clone());
        }
    }
}

/// Format 3's golden example (format-spec/segment.md): POSTINGS 3 -> [7], 9 -> [1, 2] and
/// FORWARD as ranks of those keys (doc 1 -> [1], doc 2 -> [1], doc 7 -> [0]), plus the writer's
/// tables 4 and 5.
fn golden_tables_v3() -> Tables {
    let mut t = golden_tables();
    let fwd = |ranks: &[u64]| {
        let mut v = Vec::new();
        encode_u64s(ranks, &mut v);
        v
    };
    t.insert(
        FORWARD,
        [(1, fwd(&[1])), (2, fwd(&[1])), (7, fwd(&[0]))]
            .into_iter()
            .collect(),
    );
    t
}

#[test]
fn ranked_golden_bytes_match_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let meta = write_version(
        dir.path(),
        "golden3",
        &golden_tables_v3(),
        DEFAULT_BLOCK_TARGET,
        3,
    );
    let file = std::fs::read(dir.path().join("golden3")).unwrap();
    if std::env::var("NDD_PRINT_GOLDEN").is_ok() {
        println!(
            "GOLDEN3 {}",
            file.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
    }
    assert_eq!(
        file,
        spec_golden_bytes("golden-v3"),
        "format-spec/segment.md format-3 golden example is out of date"
    );
    assert_eq!(&file[8..12], &3u32.to_le_bytes());
    assert_eq!(
        meta.tables.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![POSTINGS, FORWARD, POSTINGS_FILTER, POSTINGS_RANKS]
    );
    let seg = Segment::open(dir.path().join("golden3")).unwrap();
    assert_eq!(seg.format_version(), FORMAT_VERSION);
    assert!(seg.ranked_forward());
    assert!(seg.verify().is_ok(), "{:?}", seg.verify().problems);
    let mut out = Vec::new();
    for (doc, want) in [(1u64, vec![9u64]), (2, vec![9]), (7, vec![3])] {
        assert!(seg.forward_into(doc, &mut out).unwrap());
        assert_eq!(out, want, "doc {doc}");
    }
    assert!(!seg.forward_into(3, &mut out).unwrap());
    // The stored list is the ranks.
    assert_eq!(seg.get_u64s(FORWARD, 7).unwrap().unwrap().to_vec(), vec![0]);
}

/// Ranks map back to keys across many small blocks, for every document, as the fuzz target
/// checks on arbitrary input.
#[test]
fn ranked_forward_round_trips_across_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = 0x1234_5678_9abc_def0u64;
    for len in [1usize, 7, 8, 9, 64, 200, 1000, 4000] {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        let keys = fuzz::ranked_forward(dir.path(), &bytes);
        assert!(
            keys >= 1 && keys <= len.div_ceil(8),
            "{keys} keys of {len} bytes"
        );
    }
}

/// A rank past the POSTINGS keys, or a rank table that disagrees with the blocks, is reported
/// as corruption by reads and by verify, never mapped to some key.
#[test]
fn ranked_forward_damage_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = golden_tables_v3();
    let mut v = Vec::new();
    encode_u64s(&[0, 2], &mut v); // rank 2: only 2 keys
    t.get_mut(&FORWARD).unwrap().insert(9, v);
    write_version(dir.path(), "bad", &t, DEFAULT_BLOCK_TARGET, 3);
    let seg = Segment::open(dir.path().join("bad")).unwrap();
    let mut out = Vec::new();
    assert!(seg.forward_into(7, &mut out).is_ok());
    let e = seg.forward_into(9, &mut out).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("rank 2"), "{e}");
    let report = seg.verify();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(report.problems[0].reason.contains("key 9"));

    // A format-3 FORWARD list in a segment without table 5 (no POSTINGS): corrupt too.
    let mut t = Tables::new();
    let mut v = Vec::new();
    encode_u64s(&[0], &mut v);
    t.insert(FORWARD, [(0, v)].into_iter().collect());
    write_version(dir.path(), "norank", &t, DEFAULT_BLOCK_TARGET, 3);
    let seg = Segment::open(dir.path().join("norank")).unwrap();
    assert!(seg.forward_into(0, &mut out).unwrap_err().is_corruption());
    assert!(!seg.verify().is_ok());
}

/// `get_postings_many` finds exactly the lists `get_postings` finds one key at a time, in the
/// order of the keys: present keys, absent ones inside and outside the key range, keys the
/// filter lets through by mistake, duplicates, any order, every group size; with and without
/// key filters, in versions 1, 2 and 3, and in tables other than POSTINGS.
#[test]
fn batched_postings_lookups_equal_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut postings = BTreeMap::new();
    for i in 0..3000u64 {
        let mut v = Vec::new();
        // Spread like feature hashes (a bijection of i), lists of 1 to 5 ids.
        let key = filter_test_mix(i) | 1;
        let ids: Vec<u32> = (0..=(i % 5) as u32).map(|j| i as u32 * 8 + j).collect();
        encode_postings(&ids, &mut v);
        postings.insert(key, v);
    }
    let mut tables: Tables = [(POSTINGS, postings.clone())].into_iter().collect();
    tables.insert(SUPERSHINGLES, postings.clone());
    let present: Vec<u64> = postings.keys().copied().collect();
    let mut keys: Vec<u64> = Vec::new();
    for (i, &k) in present.iter().enumerate() {
        if i % 3 == 0 {
            keys.push(k);
        }
        if i % 7 == 0 {
            keys.push(k ^ 1); // absent (every stored key is odd)
        }
    }
    keys.extend([
        0,
        1,
        u64::MAX,
        present[0],
        present[0] - 1,
        present[2999] + 2,
    ]);
    keys.push(present[10]); // twice
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let mut reversed = sorted.clone();
    reversed.reverse();
    let plain = |w: SegmentWriter| w;
    let unfiltered = |w: SegmentWriter| w.without_key_filter();
    type Setup = fn(SegmentWriter) -> SegmentWriter;
    let setups: [(u32, Setup); 4] = [(1, plain), (2, plain), (2, unfiltered), (3, plain)];
    for (n, (version, setup)) in setups.into_iter().enumerate() {
        let name = format!("b{n}");
        let w = setup(SegmentWriter::create_version(dir.path(), &name, 512, version).unwrap());
        fill(w, &tables);
        let seg = Segment::open(dir.path().join(&name)).unwrap();
        assert!(seg.table_meta(POSTINGS).unwrap().blocks > 50);
        for table in [POSTINGS, SUPERSHINGLES, FORWARD] {
            for ks in [
                &keys,
                &sorted,
                &reversed,
                &sorted[..1],
                &sorted[..17],
                &sorted[..0],
            ] {
                let want: Vec<(usize, Vec<u32>)> = (ks.iter().enumerate())
                    .filter_map(|(i, &k)| {
                        let list = seg.get_postings(table, k).unwrap()?;
                        Some((i, list.iter().collect()))
                    })
                    .collect();
                let mut got = Vec::new();
                seg.get_postings_many(table, ks, |i, list| got.push((i, list.iter().collect())))
                    .unwrap();
                assert_eq!(got, want, "version {version}, setup {n}, table {table}");
                if table == POSTINGS && ks.len() > 100 {
                    assert!(want.len() > 100 && want.len() < ks.len());
                }
            }
        }
    }
}

/// A bijection of `i` spreading keys over the u64 range (MurmurHash3's finalizer).
fn filter_test_mix(i: u64) -> u64 {
    super::filter::mix(i, 0x9e37_79b9_7f4a_7c15)
}

/// The fuzz target `segment_file` on damaged copies of a small segment with key filters:
/// wherever a byte is flipped, batched lookups give the lists (or the failure) of single ones
/// (`fuzz::file` asserts it).
#[test]
fn batched_lookups_agree_with_single_ones_on_damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut postings = BTreeMap::new();
    for i in 0..300u64 {
        let mut v = Vec::new();
        encode_postings(&[i as u32, i as u32 * 3 + 1], &mut v);
        postings.insert(filter_test_mix(i), v);
    }
    let tables: Tables = [(POSTINGS, postings)].into_iter().collect();
    write(dir.path(), "s", &tables, 256);
    let good = std::fs::read(dir.path().join("s")).unwrap();
    assert!(fuzz::file(&dir.path().join("s")) > 0);
    let bad = dir.path().join("bad");
    for at in (0..good.len()).step_by(5) {
        let mut b = good.clone();
        b[at] ^= 0x41;
        std::fs::write(&bad, &b).unwrap();
        fuzz::file(&bad);
    }
}

/// The key filters built on the writer's filter thread (after the first blocks) give the
/// bytes the writing thread alone gives; a segment with fewer blocks starts no thread.
#[test]
fn filter_thread_writes_the_inline_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for (n, block_target) in [(20_000u64, 512usize), (300, 4096), (60_000, 1024)] {
        let mut postings = BTreeMap::new();
        for i in 0..n {
            let mut v = Vec::new();
            encode_postings(&[i as u32, i as u32 * 3 + 1], &mut v);
            postings.insert(filter_test_mix(i) | 1, v);
        }
        let tables: Tables = [(POSTINGS, postings)].into_iter().collect();
        for version in [2, 3] {
            let (a, b) = (format!("t{n}-{version}"), format!("i{n}-{version}"));
            let w = SegmentWriter::create_version(dir.path(), &a, block_target, version).unwrap();
            let meta = fill(w, &tables);
            let w = SegmentWriter::create_version(dir.path(), &b, block_target, version)
                .unwrap()
                .inline_filters();
            fill(w, &tables);
            let (ta, tb) = (
                std::fs::read(dir.path().join(&a)).unwrap(),
                std::fs::read(dir.path().join(&b)).unwrap(),
            );
            assert_eq!(ta, tb, "{n} keys, version {version}");
            let blocks = meta
                .tables
                .iter()
                .find(|t| t.id == POSTINGS)
                .unwrap()
                .blocks;
            assert!(n < 1000 || blocks as u64 > 2 * writer::FILTER_THREAD_AFTER);
            let seg = Segment::open(dir.path().join(&a)).unwrap();
            assert!(seg.has_key_filter());
            assert!(seg.verify().is_ok(), "{:?}", seg.verify().problems);
        }
    }
}

/// Format 3's rank -> coarse key table: every rank's coarse key is that of its key, for a
/// segment of more keys than coarse values (so the table's directory skips ranks) and for a
/// small one; format 2 takes the coarse keys of the stored hashes; a rank past the keys is
/// corruption. The merge count of two coarse lists bounds the lists' intersection from above.
#[test]
fn coarse_keys_of_ranks_are_their_keys_coarse_keys() {
    let dir = tempfile::tempdir().unwrap();
    for (n, version) in [(200_000u64, 3), (3000, 3), (3000, 2)] {
        let mut postings = BTreeMap::new();
        for i in 0..n {
            let mut v = Vec::new();
            encode_postings(&[i as u32], &mut v);
            postings.insert(filter_test_mix(i), v);
        }
        let keys: Vec<u64> = postings.keys().copied().collect();
        let mut tables: Tables = [(POSTINGS, postings)].into_iter().collect();
        let mut forward = BTreeMap::new();
        // Document d holds every (d + 2)-th key, from the first.
        for d in 0..4u64 {
            let list: Vec<u64> = if version == 3 {
                (0..n).step_by(d as usize + 2).collect()
            } else {
                keys.iter().step_by(d as usize + 2).copied().collect()
            };
            let mut v = Vec::new();
            encode_u64s(&list, &mut v);
            forward.insert(d, v);
        }
        tables.insert(FORWARD, forward);
        let name = format!("coarse{n}v{version}");
        write_version(dir.path(), &name, &tables, DEFAULT_BLOCK_TARGET, version);
        let seg = Segment::open(dir.path().join(&name)).unwrap();
        assert_eq!(seg.ranked_forward(), version == 3);
        let all: Vec<u64> = if version == 3 {
            (0..n).collect()
        } else {
            keys.clone()
        };
        let mut got = Vec::new();
        assert!(seg.coarse_into(&all, &mut got).unwrap());
        let want: Vec<u16> = keys.iter().map(|&k| coarse_key(k)).collect();
        assert_eq!(got, want, "{name}");
        let (mut raw, mut hashes) = (Vec::new(), Vec::new());
        let mut coarse: Vec<Vec<u16>> = Vec::new();
        for d in 0..4u64 {
            assert!(seg.forward_raw_into(d, &mut raw).unwrap());
            assert!(seg.forward_into(d, &mut hashes).unwrap());
            let mut c = Vec::new();
            assert!(seg.coarse_into(&raw, &mut c).unwrap());
            let want: Vec<u16> = hashes.iter().map(|&h| coarse_key(h)).collect();
            assert_eq!(c, want, "{name} doc {d}");
            coarse.push(c);
        }
        // Doc 0 holds every 2nd key, doc 2 every 4th: doc 2's keys are all doc 0's.
        assert!(coarse_overlap(&coarse[0], &coarse[2]) >= coarse[2].len() as u64);
        assert_eq!(
            coarse_overlap(&coarse[1], &coarse[1]),
            coarse[1].len() as u64
        );
        // Docs 0 and 1 (every 2nd, every 3rd key) share every 6th: the bound is at least that.
        let shared = n.div_ceil(6);
        assert!(coarse_overlap(&coarse[0], &coarse[1]) >= shared, "{name}");
        if version == 3 {
            let e = seg.coarse_into(&[0, n], &mut got).unwrap_err();
            assert!(
                e.is_corruption() && e.to_string().contains(&format!("rank {n}")),
                "{e}"
            );
        }
    }
    // The bound on lists of distinct hashes: never below the true intersection.
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..200 {
        let shared: Vec<u64> = (0..next() % 50).map(|_| next() >> (next() % 20)).collect();
        let mut a: Vec<u64> = (0..next() % 300).map(|_| next() >> (next() % 20)).collect();
        let mut b: Vec<u64> = (0..next() % 300).map(|_| next() >> (next() % 20)).collect();
        a.extend(&shared);
        b.extend(&shared);
        for v in [&mut a, &mut b] {
            v.sort_unstable();
            v.dedup();
        }
        let inter = a.iter().filter(|x| b.binary_search(x).is_ok()).count() as u64;
        let (ca, cb): (Vec<u16>, Vec<u16>) = (
            a.iter().map(|&h| coarse_key(h)).collect(),
            b.iter().map(|&h| coarse_key(h)).collect(),
        );
        let bound = coarse_overlap(&ca, &cb);
        assert!(bound >= inter, "{bound} < {inter}");
        assert!(bound <= ca.len().min(cb.len()) as u64);
    }
}

/// The data range of table `id` as the file's directory gives it (format-spec/segment.md,
/// "Directory entry" and "Footer"), read from the bytes rather than through `Segment`.
fn directory_data_range(path: &Path, id: u32) -> Option<(u64, u64)> {
    let bytes = std::fs::read(path).unwrap();
    let foot = &bytes[bytes.len() - 48..];
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (dir_off, dir_len) = (u64_at(foot, 0) as usize, u64_at(foot, 8) as usize);
    bytes[dir_off..dir_off + dir_len]
        .chunks(72)
        .find(|e| u32::from_le_bytes(e[0..4].try_into().unwrap()) == id)
        .map(|e| (u64_at(e, 32), u64_at(e, 32) + u64_at(e, 40)))
}

/// Writes a segment of version `version` holding only `postings` as its POSTINGS table (and
/// the key filters the writer adds); returns its path.
fn write_postings(
    dir: &Path,
    name: &str,
    postings: &BTreeMap<u64, Vec<u8>>,
    block_target: usize,
    version: u32,
) -> std::path::PathBuf {
    let mut w = SegmentWriter::create_version(dir, name, block_target, version).unwrap();
    w.begin_table(POSTINGS).unwrap();
    for (&k, val) in postings {
        w.add(k, val).unwrap();
    }
    w.end_table().unwrap();
    w.finish().unwrap();
    dir.join(name)
}

/// Before a segment's key filters are loaded, lookups read the filters they need one at a
/// time, through table POSTINGS_FILTER's own block index: they answer exactly as the loaded
/// filters do (single and batched lookups, the planner's block), and the filters are loaded
/// once the lookups made alone are worth the pass ([`reader::FILTER_POINT_BYTES`] of the
/// table each), but not by a lookup while another thread makes it.
#[test]
fn point_filter_lookups_answer_as_the_loaded_filters() {
    let dir = tempfile::tempdir().unwrap();
    let postings = pair_postings(200_000, 7, |i| filter_test_mix(i) | 1);
    let keys: Vec<u64> = postings.keys().copied().collect();
    for v in [2, 3] {
        let path = write_postings(
            dir.path(),
            &format!("p{v}"),
            &postings,
            DEFAULT_BLOCK_TARGET,
            v,
        );
        let point = Segment::open(&path).unwrap();
        let loaded = Segment::open(&path).unwrap();
        loaded.load_key_filters();
        assert!(loaded.key_filters_loaded());
        let (from, to) = point.key_filter_range().unwrap();
        let budget = ((to - from) / super::reader::FILTER_POINT_BYTES) as usize;
        assert!(budget > 200, "format {v}: {budget} lookups before the pass");
        // Present keys and absent ones (between two present keys: only the filter rules most
        // of them out), a quarter of the budget each way.
        let probe: Vec<u64> = (keys.iter().step_by(keys.len() / (budget / 8)))
            .flat_map(|&k| [k, k ^ 2])
            .take(budget / 4)
            .collect();
        let list = |s: &Segment, k: u64| {
            s.get_postings(POSTINGS, k)
                .unwrap()
                .map(|l| l.iter().collect::<Vec<u32>>())
        };
        let mut present = 0;
        for &k in &probe {
            let want = list(&loaded, k);
            present += usize::from(want.is_some());
            assert_eq!(list(&point, k), want, "format {v} key {k}");
            assert_eq!(
                point.postings_block_for(k).unwrap(),
                loaded.postings_block_for(k).unwrap(),
                "format {v} key {k}"
            );
        }
        assert!(present > 0 && present < probe.len(), "format {v}");
        let mut batch = probe[..budget / 8].to_vec();
        batch.sort_unstable();
        let many = |s: &Segment| {
            let mut got = Vec::new();
            s.get_postings_many(POSTINGS, &batch, |i, l| {
                got.push((i, l.iter().collect::<Vec<u32>>()))
            })
            .unwrap();
            got
        };
        assert_eq!(many(&point), many(&loaded), "format {v}");
        assert!(!point.key_filters_loaded(), "format {v}: loaded too early");
        for &k in &keys[..budget] {
            assert!(point.get(POSTINGS, k).unwrap().is_some());
        }
        assert!(point.key_filters_loaded(), "format {v}: never loaded");
        assert_eq!(many(&point), many(&loaded), "format {v}");

        // A pass begun on another thread (a server's warm-up): lookups meanwhile keep
        // looking the filters up alone, past the point where they would make the pass
        // themselves, and answer the same; lookups made while the pass runs answer the same.
        let begun = Segment::open(&path).unwrap();
        begun.begin_filter_pass();
        for &k in &keys[..2 * budget] {
            assert!(begun.get(POSTINGS, k).unwrap().is_some());
        }
        assert_eq!(many(&begun), many(&loaded), "format {v}");
        assert!(
            !begun.key_filters_loaded(),
            "format {v}: a lookup made the pass"
        );
        let racing = Segment::open(&path).unwrap();
        std::thread::scope(|sc| {
            sc.spawn(|| racing.load_key_filters());
            for &k in &probe {
                assert_eq!(list(&racing, k), list(&loaded, k), "format {v} key {k}");
            }
            assert_eq!(many(&racing), many(&loaded), "format {v}");
        });
        assert!(racing.key_filters_loaded(), "format {v}");
    }
}

/// A read-ahead of the key filters asks for exactly the bytes of table POSTINGS_FILTER's data
/// blocks (what the filter walk reads), and for nothing in a segment without filters (format
/// 2 without the table, format 1, an empty POSTINGS table); asking for it changes no answer.
#[test]
fn key_filter_range_is_the_filter_tables_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let postings = pair_postings(5000, 7, |i| i * 1000 + 17);
    let tables: Tables = [(POSTINGS, postings.clone())].into_iter().collect();
    for v in [2, 3] {
        let path = write_postings(dir.path(), &format!("f{v}"), &postings, 1024, v);
        let seg = Segment::open(&path).unwrap();
        assert!(seg.has_key_filter());
        let want = directory_data_range(&path, POSTINGS_FILTER).unwrap();
        assert_eq!(seg.key_filter_range(), Some(want), "format {v}");
        // The range lies between POSTINGS' data and the end of the file, and is not empty.
        let (p_from, p_to) = directory_data_range(&path, POSTINGS).unwrap();
        assert!(
            p_from < p_to && p_to <= want.0 && want.0 < want.1,
            "format {v}"
        );
        assert!(want.1 <= seg.len_bytes());
        seg.prefetch_key_filters();
        seg.read_ahead(want.0, want.1);
        seg.read_ahead(want.1, want.0); // empty: nothing
        seg.read_ahead(0, u64::MAX); // clipped to the file
        assert!(!seg.key_filters_loaded());
        seg_may_hold_all(&seg, &postings.keys().copied().collect::<Vec<_>>());
        assert!(seg.key_filters_loaded());
    }
    let mut w = SegmentWriter::create_version(dir.path(), "n", 1024, 2)
        .unwrap()
        .without_key_filter();
    w.begin_table(POSTINGS).unwrap();
    for (&k, val) in &postings {
        w.add(k, val).unwrap();
    }
    w.end_table().unwrap();
    w.finish().unwrap();
    let n = Segment::open(dir.path().join("n")).unwrap();
    assert_eq!(
        directory_data_range(&dir.path().join("n"), POSTINGS_FILTER),
        None
    );
    assert_eq!(n.key_filter_range(), None);
    write_version(dir.path(), "v1", &tables, 1024, 1);
    assert_eq!(
        Segment::open(dir.path().join("v1"))
            .unwrap()
            .key_filter_range(),
        None
    );
    let empty: Tables = [(POSTINGS, BTreeMap::new())].into_iter().collect();
    write(dir.path(), "e", &empty, 1024);
    assert_eq!(
        Segment::open(dir.path().join("e"))
            .unwrap()
            .key_filter_range(),
        None
    );
}

/// The read-ahead at `Segment::open` asks for exactly the block indexes the directory places
/// (format-spec/segment.md: block-index offset, block count x 32 bytes), one range per table
/// with blocks; a damaged or short file gives ranges within it, or none, and never panics.
#[test]
fn block_index_ranges_are_the_directorys() {
    let dir = tempfile::tempdir().unwrap();
    let meta = write(dir.path(), "s", &sample_tables(), 256);
    let path = dir.path().join("s");
    let bytes = std::fs::read(&path).unwrap();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let foot = &bytes[bytes.len() - 48..];
    let (dir_off, dir_len) = (u64_at(foot, 0) as usize, u64_at(foot, 8) as usize);
    let want: Vec<(u64, u64)> = bytes[dir_off..dir_off + dir_len]
        .chunks(72)
        .filter_map(|e| {
            let blocks = u32::from_le_bytes(e[4..8].try_into().unwrap()) as u64;
            (blocks > 0).then(|| (u64_at(e, 48), u64_at(e, 48) + blocks * 32))
        })
        .collect();
    let got = super::layout::block_index_ranges(&bytes);
    assert_eq!(got, want);
    assert_eq!(
        got.len(),
        meta.tables.iter().filter(|t| t.blocks > 0).count()
    );
    assert!(got.len() >= 2);
    assert_eq!(super::layout::block_index_ranges(&[]), vec![]);
    assert_eq!(super::layout::block_index_ranges(&bytes[..40]), vec![]);
    for cut in [bytes.len() / 2, bytes.len() - 1, bytes.len() - 48] {
        let r = super::layout::block_index_ranges(&bytes[..cut]);
        assert!(r.iter().all(|&(a, b)| a < b && b <= cut as u64), "{cut}");
    }
    let mut flipped = bytes.clone();
    for i in (flipped.len() - 48 - dir_len)..flipped.len() {
        flipped[i] ^= 0xff;
        let r = super::layout::block_index_ranges(&flipped);
        assert!(r.iter().all(|&(a, b)| a < b && b <= flipped.len() as u64));
        flipped[i] ^= 0xff;
    }
    // Opening reads the same file as before (the read-ahead is a hint).
    check_contents(&Segment::open(&path).unwrap(), &sample_tables());
}

/// `add_many` in runs of random lengths writes the same file as `add` entry by entry: every
/// format, small and default block targets, POSTINGS (key filters, format 3's ranks) and an
/// opaque table with values from empty to larger than a block; and a run with a bad key or a
/// bad end adds the entries before it and returns `add`'s error, the writer going on after.
#[test]
fn add_many_equals_add_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = 0x6a09_e667_f3bc_c909u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for round in 0..24 {
        let version = [1, 2, 3][round % 3];
        let block_target = [200, 4096, DEFAULT_BLOCK_TARGET][round / 3 % 3];
        let n = [0usize, 1, 700, 6000][round % 4];
        // (table, keys, value ends, value bytes) in table order.
        let mut tables: Vec<(u32, Vec<u64>, Vec<usize>, Vec<u8>)> = Vec::new();
        for id in [0u32, POSTINGS] {
            let (mut keys, mut ends, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
            let mut key = next() >> (next() % 64);
            for _ in 0..n {
                let Some(k) = key.checked_add(1 + (next() >> (10 + next() % 54))) else {
                    break;
                };
                key = k;
                keys.push(key);
                if id == POSTINGS {
                    let len = 1 + (next() % 4) as u32;
                    let ids: Vec<u32> = (0..len)
                        .map(|i| i * 7 + (next() % 5) as u32 * 100)
                        .collect();
                    let mut ids = ids;
                    ids.sort_unstable();
                    ids.dedup();
                    encode_postings(&ids, &mut bytes);
                } else {
                    let len = match next() % 40 {
                        0 => (next() % 9000) as usize,
                        1..=8 => 0,
                        _ => (next() % 20) as usize,
                    };
                    bytes.extend((0..len).map(|i| i as u8 ^ key as u8));
                }
                ends.push(bytes.len());
            }
            tables.push((id, keys, ends, bytes));
        }
        let one = format!("one-{round}");
        let many = format!("many-{round}");
        let mut a = SegmentWriter::create_version(dir.path(), &one, block_target, version).unwrap();
        let mut b =
            SegmentWriter::create_version(dir.path(), &many, block_target, version).unwrap();
        for (id, keys, ends, bytes) in &tables {
            a.begin_table(*id).unwrap();
            b.begin_table(*id).unwrap();
            let mut lo = 0;
            for (&k, &hi) in keys.iter().zip(ends) {
                a.add(k, &bytes[lo..hi]).unwrap();
                lo = hi;
            }
            // Runs of 0 to ~2000 entries; `add_many` takes value ends from 0, so each run's
            // ends are rebased on its first value's start.
            let mut i = 0;
            while i < keys.len() {
                let c = ((next() % 2000) as usize).min(keys.len() - i);
                let base = if i == 0 { 0 } else { ends[i - 1] };
                let run_ends: Vec<usize> = ends[i..i + c].iter().map(|e| e - base).collect();
                let hi = if c == 0 { base } else { ends[i + c - 1] };
                b.add_many(&keys[i..i + c], &run_ends, &bytes[base..hi])
                    .unwrap();
                i += c;
            }
            // A run whose second entry repeats the first key: the first is added, then `add`'s
            // error; a run with ends past its bytes: an error, nothing added. (Valid posting
            // lists: format 1 transcodes them.)
            let last = keys.last().copied().unwrap_or(0);
            if last < u64::MAX - 10 {
                let (mut x, mut y) = (Vec::new(), Vec::new());
                encode_postings(&[3], &mut x);
                encode_postings(&[4, 9], &mut y);
                let xy = [&x[..], &y[..]].concat();
                a.add(last + 1, &x).unwrap();
                let want = a.add(last + 1, &y).unwrap_err().to_string();
                let got = b
                    .add_many(&[last + 1, last + 1], &[x.len(), xy.len()], &xy)
                    .unwrap_err()
                    .to_string();
                assert_eq!(got, want);
                assert!(b.add_many(&[last + 5], &[x.len() + 1], &x).is_err());
                a.add(last + 6, &y).unwrap();
                b.add_many(&[last + 6], &[y.len()], &y).unwrap();
            }
            a.end_table().unwrap();
            b.end_table().unwrap();
        }
        let (ma, mb) = (a.finish().unwrap(), b.finish().unwrap());
        let (fa, fb) = (
            std::fs::read(dir.path().join(&one)).unwrap(),
            std::fs::read(dir.path().join(&many)).unwrap(),
        );
        assert!(
            fa == fb,
            "round {round}: version {version}, target {block_target}, {n} entries"
        );
        let blocks: u32 = ma.tables.iter().map(|t| t.blocks).sum();
        assert_eq!(blocks, mb.tables.iter().map(|t| t.blocks).sum::<u32>());
        assert!(
            n < 6000 || block_target > 4096 || blocks > 20,
            "round {round}: {blocks} blocks"
        );
        let seg = Segment::open(dir.path().join(&many)).unwrap();
        assert!(seg.verify().is_ok(), "{:?}", seg.verify().problems);
    }
}

/// Every table's entries through `iter`, up to and including the first error (as text).
fn scan(entries: Entries<'_>) -> Vec<std::result::Result<(u64, Vec<u8>), String>> {
    let mut out = Vec::new();
    for e in entries {
        let stop = e.is_err();
        out.push(e.map(|(k, v)| (k, v.to_vec())).map_err(|e| e.to_string()));
        if stop {
            break;
        }
    }
    out
}

#[test]
fn scans_ahead_equal_plain_scans_whole_and_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let (tables, good) = write_flip_sample(dir.path());
    let seg = Segment::open(dir.path().join("orig")).unwrap();
    assert!(seg.table_meta(POSTINGS).unwrap().blocks > 2);
    for &t in tables.keys() {
        let plain = scan(seg.iter(t));
        assert_eq!(plain.len(), tables[&t].len());
        // Fresh scans ahead, and one left early (its thread must stop).
        std::thread::scope(|s| {
            assert_eq!(scan(seg.iter_ahead(t, s)), plain);
            let mut early = seg.iter_ahead(t, s);
            let first = plain.first().map(|e| e.clone().unwrap().0);
            assert_eq!(early.next().map(|e| e.unwrap().0), first);
        });
    }
    // A damaged block: the scan ahead yields what the plain scan of a fresh open yields,
    // entries before the damage, then the same error.
    let path = dir.path().join("flipped");
    let mut checked = 0;
    for i in (16..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[i] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        let Ok(seg) = Segment::open(&path) else {
            continue;
        };
        for &t in tables.keys() {
            let plain = scan(Segment::open(&path).unwrap().iter(t));
            let ahead = std::thread::scope(|s| scan(seg.iter_ahead(t, s)));
            assert_eq!(ahead, plain, "byte {i}, table {t}");
            checked += plain.iter().any(|e| e.is_err()) as usize;
        }
    }
    assert!(checked > 10, "{checked} damaged scans");
}

/// The kernel's flags of the mapping that holds `addr` (`/proc/self/smaps`, its `VmFlags`
/// line: `rr` for random access, `sr` for sequential).
#[cfg(target_os = "linux")]
fn vm_flags(addr: usize) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split(' ').next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = a <= addr && addr < b;
                continue;
            }
        }
        if let (true, Some(flags)) = (inside, line.strip_prefix("VmFlags:")) {
            return flags.split_whitespace().map(String::from).collect();
        }
    }
    panic!("no mapping holds {addr:#x}");
}

/// A segment mapped for random access (`advise_random_on_open`: the server, `query`) answers
/// as one mapped with the default advice; its scans (a key-filter pass, `iter`,
/// `check_all_blocks`) give their ranges sequential read-ahead first and leave the rest
/// random. The kernel's flags of the mapping say which advice holds where.
#[test]
#[cfg(target_os = "linux")]
fn random_access_segments_answer_as_default_ones_and_scans_advise_their_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let postings = pair_postings(200_000, 7, |i| filter_test_mix(i) | 1);
    let path = write_postings(dir.path(), "r", &postings, DEFAULT_BLOCK_TARGET, 3);
    let plain = Segment::open(&path).unwrap();
    // The flag is process-wide: other tests opening segments meanwhile only get the advice.
    advise_random_on_open(true);
    let random = Segment::open(&path);
    advise_random_on_open(false);
    let random = random.unwrap();
    let flags = |s: &Segment, offset: u64| vm_flags(s.map.as_ptr() as usize + offset as usize);
    let has = |f: &[String], flag: &str| f.iter().any(|x| x == flag);
    assert!(!has(&flags(&plain, 0), "rr"), "{:?}", flags(&plain, 0));
    if std::env::var(RANDOM_ACCESS_ENV).is_ok() {
        return; // the environment chose the advice
    }
    assert!(has(&flags(&random, 0), "rr"), "{:?}", flags(&random, 0));
    assert!(random.reads_ahead() && !plain.reads_ahead());

    let list = |s: &Segment, k: u64| {
        s.get_postings(POSTINGS, k)
            .unwrap()
            .map(|l| l.iter().collect::<Vec<u32>>())
    };
    let keys: Vec<u64> = postings.keys().copied().step_by(97).collect();
    for &k in &keys {
        assert_eq!(list(&random, k), list(&plain, k), "key {k}");
        assert_eq!(list(&random, k ^ 2), list(&plain, k ^ 2), "key {}", k ^ 2);
    }
    assert!(has(&flags(&random, 0), "rr"), "lookups leave the advice");

    // The key-filter pass: its table sequential, the POSTINGS blocks before it still random.
    random.load_key_filters();
    let (from, to) = random.key_filter_range().unwrap();
    assert!(from > 8192, "the filters follow the POSTINGS blocks");
    for at in [from, (from + to) / 2, to - 1] {
        let f = flags(&random, at);
        assert!(has(&f, "sr") && !has(&f, "rr"), "filters at {at}: {f:?}");
    }
    assert!(has(&flags(&random, 0), "rr"));
    for &k in &keys {
        assert_eq!(
            random.postings_block_for(k).unwrap(),
            plain.postings_block_for(k).unwrap()
        );
    }

    // A whole-table scan gives the same entries and advises its table; a check of every
    // block advises the whole file.
    let entries = |s: &Segment| {
        s.iter(POSTINGS)
            .map(|e| e.map(|(k, v)| (k, v.to_vec())))
            .collect::<crate::error::Result<Vec<_>>>()
            .unwrap()
    };
    assert_eq!(entries(&random), entries(&plain));
    assert!(has(&flags(&random, 0), "sr"), "{:?}", flags(&random, 0));
    assert!(
        random.reads_ahead(),
        "a scan of one table is not the whole file read"
    );
    random.check_all_blocks(&|| false).unwrap();
    let end = random.len_bytes() - 1;
    assert!(has(&flags(&random, end), "sr"), "{:?}", flags(&random, end));
    assert!(
        !random.reads_ahead(),
        "read whole: its lookups find their blocks cached"
    );
    assert!(random.verify().is_ok());

    // A segment this process has just written is in the page cache: no reads ahead.
    advise_random_on_open(true);
    let written = Segment::open(&path);
    advise_random_on_open(false);
    let written = written.unwrap();
    assert!(written.reads_ahead());
    written.mark_cached();
    assert!(!written.reads_ahead() && written.random_access());
}
