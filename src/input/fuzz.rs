//! Entry points for the reader fuzz targets in tools/fuzz (not part of the supported API).

use std::io::Cursor;

use super::jsonl::JsonlReader;
use super::warc::WarcReader;
use super::{InputItem, InputOptions};

/// Reads `bytes` as an (uncompressed) WARC file; returns (documents, bad items).
pub fn warc(bytes: &[u8]) -> (usize, usize) {
    count(WarcReader::new(
        Cursor::new(bytes),
        "fuzz.warc".into(),
        1 << 20,
    ))
}

/// Reads `bytes` as a JSON Lines file; returns (documents, bad items).
pub fn jsonl(bytes: &[u8]) -> (usize, usize) {
    let opts = InputOptions {
        max_doc_bytes: 1 << 20,
        ..InputOptions::default()
    };
    count(JsonlReader::new(
        Cursor::new(bytes),
        "fuzz.jsonl".into(),
        opts,
    ))
}

fn count(items: impl Iterator<Item = InputItem>) -> (usize, usize) {
    items.fold((0, 0), |(d, b), item| match item {
        InputItem::Doc(_) => (d + 1, b),
        InputItem::Bad { .. } => (d, b + 1),
    })
}
