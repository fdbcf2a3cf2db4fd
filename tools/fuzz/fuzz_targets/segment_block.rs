//! Segment data blocks and the posting-list / u64-list value codecs on arbitrary bytes (these
//! sit behind a crc in real files, so they are fed directly).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ndd_index::segment::fuzz::block(data);
    let _ = ndd_index::segment::fuzz::values(data);
});
