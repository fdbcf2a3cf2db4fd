//! The catalog's value codecs (format-spec/rocksdb.md): document records, u32 values, doc-id
//! keys, stored pairs (8-byte key, two-varint value) and the manifest JSON. A decoded record
//! or pair must re-encode to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ndd_index::store::records::{
    decode_pair, decode_u32, encode_pair_value, pair_key, parse_doc_key, DocRecord,
};
use ndd_index::store::Manifest;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = DocRecord::decode(1, data) {
        assert_eq!(r.encode(), data, "decode/encode round trip");
    }
    let _ = decode_u32("fuzz", data);
    let _ = parse_doc_key(data);
    if data.len() >= 8 {
        if let Ok(p) = decode_pair(&data[..8], &data[8..]) {
            assert_eq!(&pair_key(p.a, p.b)[..], &data[..8], "pair key round trip");
            assert_eq!(encode_pair_value(p.inter, p.denom), &data[8..], "pair value round trip");
            assert!(p.a < p.b && p.inter <= p.denom && p.denom > 0);
        }
    }
    if let Ok(m) = serde_json::from_slice::<Manifest>(data) {
        let back: Manifest = serde_json::from_slice(&serde_json::to_vec(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        let _ = m.next_segment_id();
    }
});
