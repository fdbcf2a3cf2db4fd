//! The HTML canonicalizer (and the plain-text path) on arbitrary bytes, with and without a
//! declared charset: it must return words or a per-document error, never panic or hang.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ndd_index::canonicalize::{canonicalize, DocFormat};

fuzz_target!(|data: &[u8]| {
    let (hint, body) = match data.split_first() {
        Some((b, rest)) if b % 4 == 0 => (Some("windows-1252"), rest),
        Some((b, rest)) if b % 4 == 1 => (Some("shift_jis"), rest),
        Some((b, rest)) if b % 4 == 2 => (None, rest),
        _ => (None, data),
    };
    let _ = canonicalize(body, DocFormat::Html, hint);
    let _ = canonicalize(body, DocFormat::Text, None);
});
