//! The catalog's value codecs (format-spec/rocksdb.md): document records, u32 values, doc-id
//! keys, and the manifest JSON. A decoded record must re-encode to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ndd_index::store::records::{decode_u32, parse_doc_key, DocRecord};
use ndd_index::store::Manifest;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = DocRecord::decode(1, data) {
        assert_eq!(r.encode(), data, "decode/encode round trip");
    }
    let _ = decode_u32("fuzz", data);
    let _ = parse_doc_key(data);
    if let Ok(m) = serde_json::from_slice::<Manifest>(data) {
        let back: Manifest = serde_json::from_slice(&serde_json::to_vec(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        let _ = m.next_segment_id();
    }
});
