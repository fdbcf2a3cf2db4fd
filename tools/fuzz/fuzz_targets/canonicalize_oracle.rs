//! Differential: our canonicalizer against html5ever (`canonicalize::oracle`) on arbitrary
//! bytes. Outside the known difference (`<select>` parsing, see the oracle's module docs) both
//! must give the same words; a mismatch is a crash with both answers in the message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ndd_index::canonicalize::oracle;

fuzz_target!(|data: &[u8]| {
    if oracle::known_difference(data) {
        return;
    }
    let ours = oracle::ours(data, None);
    let theirs = oracle::canonical_text(data, None);
    assert_eq!(ours, theirs, "canonical text differs from html5ever's");
});
