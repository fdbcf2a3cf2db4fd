//! Format version 2's block codec (Elias-Fano keys and value ends, format-spec/segment.md) on
//! arbitrary bytes, and round trips of the version-2 value codecs (delta-form posting lists,
//! Elias-Fano FORWARD lists) on lists spelled by the input.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ndd_index::segment::fuzz::block_v2(data);
    let _ = ndd_index::segment::fuzz::values(data);
    ndd_index::segment::fuzz::round_trip(data);
});
