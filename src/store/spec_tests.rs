//! The catalog against its specification (format-spec/rocksdb.md, format-spec/manifest.md):
//! every column family's key and value bytes as the spec's table states them, written through
//! the catalog's own writer and read back raw; the JSON examples of the specs decoded by our
//! types and re-encoded with the same fields; the delta document's layout byte for byte.

use std::path::{Path, PathBuf};

use roaring::RoaringBitmap;

use super::delta::{DeltaDoc, CF_DELTA};
use super::records::BatchRecord;
use super::{
    Access, Catalog, Manifest, SegmentEntry, CF_BATCHES, CF_CLUSTERS, CF_DIGESTS, CF_KEYS,
    CF_MEMBERS, CF_META, CF_TOMBSTONES, META_MANIFEST, META_NEXT_DOC,
};
use crate::options::IndexOptions;

fn spec(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "format-spec", name]
        .iter()
        .collect();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ```json blocks of a spec file, in order.
fn json_blocks(text: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "```json" {
            let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            // A block may be a member of an object (`"methods": {...}`): read it as `{...}`.
            let text = body.join("\n");
            let v = serde_json::from_str(&text)
                .or_else(|_| serde_json::from_str(&format!("{{{text}}}")))
                .unwrap_or_else(|e| panic!("spec JSON block does not parse: {e}\n{text}"));
            out.push(v);
        }
    }
    out
}

/// `value` re-encoded through `T` equals the spec's value, member for member.
fn round_trips<T: serde::de::DeserializeOwned + serde::Serialize>(value: &serde_json::Value) {
    let t: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("the spec's example does not decode: {e}\n{value}"));
    assert_eq!(&serde_json::to_value(&t).unwrap(), value);
}

fn raw(cat: &Catalog, cf: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    cat.iter_raw(cf)
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn open(dir: &Path) -> Catalog {
    Catalog::open(dir, Access::ReadWrite).unwrap()
}

#[test]
fn manifest_spec_example_is_our_encoding() {
    let blocks = json_blocks(&spec("manifest.md"));
    assert_eq!(blocks.len(), 1, "manifest.md has one JSON example");
    round_trips::<Manifest>(&blocks[0]);
    // Field order as the spec writes it (serde keeps declaration order).
    let m = Manifest {
        version: 1,
        generation: 7,
        segments: vec![SegmentEntry {
            id: 1,
            file: Manifest::file_name(1),
            doc_lo: 0,
            doc_hi: 3228,
            bytes: 41235467,
            keys: 1001234,
            postings: 2987330,
        }],
    };
    assert_eq!(
        serde_json::to_string(&m).unwrap(),
        r#"{"version":1,"generation":7,"segments":[{"id":1,"file":"seg-00000001.ndds","doc_lo":0,"doc_hi":3228,"bytes":41235467,"keys":1001234,"postings":2987330}]}"#
    );
    assert_eq!(serde_json::to_value(&m).unwrap(), blocks[0]);
    // The table's rule for file names: `seg-<id, 8 digits>.ndds`.
    assert_eq!(Manifest::file_name(123), "seg-00000123.ndds");
}

#[test]
fn rocksdb_spec_examples_decode_as_our_records() {
    let blocks = json_blocks(&spec("rocksdb.md"));
    // 1: meta/options, 2: the methods member, 3: a batch record (in the spec's order).
    assert!(blocks.len() >= 3, "rocksdb.md lost a JSON example");
    // The first example is what a new index with default options stores.
    round_trips::<IndexOptions>(&blocks[0]);
    let dir = tempfile::tempdir().unwrap();
    let ix = crate::index::Index::open_writer(
        dir.path().join("ix"),
        &crate::options::CreateOptions::default(),
    )
    .unwrap();
    let written: serde_json::Value = ix.catalog.meta_json(super::META_OPTIONS).unwrap().unwrap();
    assert_eq!(written, blocks[0], "a new index's options record");
    let methods = &blocks[1]["methods"];
    let with_methods = serde_json::json!({ "version": 1, "shingle": "words:5", "sample": "all",
        "cluster_threshold": "0.8", "methods": methods.clone() });
    let opts: IndexOptions = serde_json::from_value(with_methods).unwrap();
    let stored = serde_json::to_value(&opts.methods).unwrap();
    for (name, value) in methods.as_object().unwrap() {
        assert_eq!(stored.get(name), Some(value), "methods.{name}");
    }
    round_trips::<BatchRecord>(&blocks[2]);
}

#[test]
fn column_family_bytes_are_as_the_spec_table_says() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    let digest = [0xABu8; 16];
    let mut wb = cat.batch_writer();
    wb.put_next_doc(0x0102_0304);
    wb.put_key("a/b.html", 258);
    wb.put_digest(&digest, 258);
    let batch = BatchRecord {
        name: "night-1".into(),
        created_unix: 1763700000,
        doc_lo: 0,
        doc_hi: 3228,
        added: 3228,
        replaced: 0,
        unchanged: 0,
        errors: 0,
        segment: Some("seg-00000001.ndds".into()),
    };
    wb.put_batch(5, "night-1", &batch);
    wb.put_cluster(258, 7);
    let members: RoaringBitmap = [7u32, 258].into_iter().collect();
    wb.put_members(7, &members);
    wb.put_tombstone(0x0A0B_0C0D);
    wb.put_meta_json(META_MANIFEST, &Manifest::new());
    cat.commit(wb).unwrap();

    // meta/next_doc: 4 bytes u32 LE.
    let meta = raw(&cat, CF_META);
    let get = |k: &[u8]| {
        meta.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get(META_NEXT_DOC).unwrap(), vec![4, 3, 2, 1]);
    assert_eq!(
        get(META_MANIFEST).unwrap(),
        br#"{"version":1,"generation":0,"segments":[]}"#.to_vec()
    );
    // keys: UTF-8 key -> u32 LE doc id.
    assert_eq!(
        raw(&cat, CF_KEYS),
        vec![(b"a/b.html".to_vec(), vec![2, 1, 0, 0])]
    );
    // digests: 16 bytes -> u32 LE.
    assert_eq!(
        raw(&cat, CF_DIGESTS),
        vec![(digest.to_vec(), vec![2, 1, 0, 0])]
    );
    // batches: `id/` + u32 BE -> JSON; `name/` + name -> u32 LE.
    let batches = raw(&cat, CF_BATCHES);
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0].0, b"id/\0\0\0\x05".to_vec());
    assert_eq!(
        String::from_utf8(batches[0].1.clone()).unwrap(),
        r#"{"name":"night-1","created_unix":1763700000,"doc_lo":0,"doc_hi":3228,"added":3228,"replaced":0,"unchanged":0,"errors":0,"segment":"seg-00000001.ndds"}"#
    );
    assert_eq!(batches[1], (b"name/night-1".to_vec(), vec![5, 0, 0, 0]));
    // clusters: doc u32 BE -> cluster u32 LE.
    assert_eq!(
        raw(&cat, CF_CLUSTERS),
        vec![(vec![0, 0, 1, 2], vec![7, 0, 0, 0])]
    );
    // members: cluster u32 BE -> roaring portable serialization (cookie 12346: no run
    // containers; one array container of key 0 holding 7 and 258).
    let m = raw(&cat, CF_MEMBERS);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, vec![0, 0, 0, 7]);
    assert_eq!(
        m[0].1,
        vec![
            0x3A, 0x30, 0, 0, // cookie 12346, u32 LE
            1, 0, 0, 0, // one container
            0, 0, 1, 0, // key 0, cardinality - 1 = 1
            16, 0, 0, 0, // offset of the container's data
            7, 0, 2, 1, // 7, 258 as u16 LE
        ]
    );
    // tombstones: doc u32 BE -> empty.
    assert_eq!(
        raw(&cat, CF_TOMBSTONES),
        vec![(vec![0x0A, 0x0B, 0x0C, 0x0D], vec![])]
    );
}

#[test]
fn delta_document_golden_bytes() {
    let d = DeltaDoc {
        has_words: true,
        simhash: 0x1122_3344_5566_7788,
        features: vec![1, 0x0100],
        supers: vec![],
        sim384: Some([1, 2, 3, 4, 5, 6]),
        imatch: vec![9],
    };
    let mut want = vec![1u8, 0b11]; // version 1; flags: words, SIM384
    want.extend_from_slice(&[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
    want.extend_from_slice(&[2, 0, 0, 0]); // F = 2
    want.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    want.extend_from_slice(&[0, 0, 0, 0]); // S = 0
    want.extend_from_slice(&[1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0]); // I = 1, signature 9
    for w in 1u64..=6 {
        want.extend_from_slice(&w.to_le_bytes());
    }
    let bytes = d.encode();
    assert_eq!(bytes, want);
    // "Total 22 + 8(F + S + I) (+ 48) bytes".
    assert_eq!(bytes.len(), 22 + 8 * 3 + 48);
    assert_eq!(DeltaDoc::decode(3, &bytes).unwrap(), d);
    // Through the catalog: key doc u32 BE.
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    let mut wb = cat.batch_writer();
    wb.put_delta(0x0102_0304, &d);
    cat.commit(wb).unwrap();
    assert_eq!(raw(&cat, CF_DELTA), vec![(vec![1, 2, 3, 4], want)]);
    // Anything else is corrupt: a trailing byte, an unknown flag bit.
    let mut trailing = d.encode();
    trailing.push(0);
    assert!(DeltaDoc::decode(3, &trailing).is_err());
    let mut flags = d.encode();
    flags[1] |= 4;
    assert!(DeltaDoc::decode(3, &flags).is_err());
}

#[test]
fn every_column_family_of_the_spec_exists_and_no_other() {
    let text = spec("rocksdb.md");
    let section = text
        .split("## Column families")
        .nth(1)
        .unwrap()
        .split("\n### ")
        .next()
        .unwrap();
    let mut named: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect();
    named.sort();
    named.dedup();
    let mut ours: Vec<String> = super::ALL_CFS.iter().map(|s| s.to_string()).collect();
    ours.sort();
    assert_eq!(named, ours);
}

#[test]
fn stored_pairs_golden_bytes_and_marker() {
    use super::pairs::{PairsMarker, CF_PAIRS, META_PAIRS};
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    let mut wb = cat.batch_writer();
    wb.put_pair(1, 258, 300, 301);
    wb.put_pair(0, 0x0102_0304, 4, 5);
    cat.commit(wb).unwrap();
    // Key: older u32 BE ++ younger u32 BE (so key order is the output order); value: LEB128
    // inter, LEB128 denom (the spec's example: 1, 258, 300/301).
    assert_eq!(
        raw(&cat, CF_PAIRS),
        vec![
            (vec![0, 0, 0, 0, 1, 2, 3, 4], vec![4, 5]),
            (vec![0, 0, 0, 1, 0, 0, 1, 2], vec![0xac, 0x02, 0xad, 0x02]),
        ]
    );
    // The marker: the spec's example is what a new default index stores.
    let example = json_blocks(&spec("rocksdb.md"))
        .into_iter()
        .find(|b| b.get("method").is_some() && b.get("threshold").is_some())
        .expect("rocksdb.md lost the stored-pairs marker example");
    round_trips::<PairsMarker>(&example);
    let ix = crate::index::Index::open_writer(
        dir.path().join("ix"),
        &crate::options::CreateOptions::default(),
    )
    .unwrap();
    let written: serde_json::Value = ix.catalog.meta_json(META_PAIRS).unwrap().unwrap();
    assert_eq!(written, example);
}
