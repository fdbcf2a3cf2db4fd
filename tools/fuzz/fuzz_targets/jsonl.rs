//! The JSON Lines reader on arbitrary bytes: every line is a document or a per-line error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (docs, bad) = ndd_index::input::fuzz::jsonl(data);
    // Every non-empty line yields exactly one item, so items never exceed lines.
    let lines = data.split(|&b| b == b'\n').count();
    assert!(
        docs + bad <= lines,
        "{docs} + {bad} items from {lines} lines"
    );
});
