//! The WARC reader on arbitrary bytes: every record is a document or a per-record error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ndd_index::input::fuzz::warc(data);
});
