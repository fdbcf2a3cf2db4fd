//! The POSTINGS key filter (table 4, format-spec/segment.md "Key filter"): its decoder and
//! lookup on arbitrary bytes, and a build/lookup round trip on the keys the input spells (no
//! false negatives).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ndd_index::segment::fuzz::key_filter(data);
});
