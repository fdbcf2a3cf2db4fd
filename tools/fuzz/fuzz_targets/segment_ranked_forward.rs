//! Format 3's ranked FORWARD lists (table 5 POSTINGS_RANKS, format-spec/segment.md "Forward
//! list, format 3"): a segment of keys and documents derived from the input, written with
//! ranks, must map every document's ranks back to exactly its keys and verify cleanly.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
}

fuzz_target!(|data: &[u8]| {
    let _ = ndd_index::segment::fuzz::ranked_forward(dir().path(), data);
});
