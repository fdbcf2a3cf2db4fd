//! Entry points for the reader fuzz targets in tools/fuzz (not part of the supported API).

use std::io::Cursor;

use super::arc::ArcReader;
use super::jsonl::JsonlReader;
use super::trecweb::TrecWebReader;
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

/// Reads `bytes` as an (uncompressed) ARC file; returns (documents, bad items).
pub fn arc(bytes: &[u8]) -> (usize, usize) {
    count(ArcReader::new(
        Cursor::new(bytes),
        "fuzz.arc".into(),
        1 << 20,
    ))
}

/// Reads `bytes` as (uncompressed) TREC web text; returns (documents, bad items).
pub fn trecweb(bytes: &[u8]) -> (usize, usize) {
    count(TrecWebReader::new(
        Cursor::new(bytes),
        "fuzz.trec".into(),
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

#[cfg(test)]
mod tests {
    /// The record readers never panic, whatever the bytes: seeds cut and flipped at random.
    #[test]
    fn arc_and_trecweb_readers_survive_damaged_input() {
        let arc = include_bytes!("../../tests/data/warcio/example.arc");
        let trec = b"<DOC>\n<DOCNO>GX0-1</DOCNO>\n<DOCHDR>\nhttp://a/\nContent-Type: text/html; charset=x\n\
                     </DOCHDR>\n<p>\xc3\xa9</p></DOC>\n<DOC><DOCNO>2</DOCNO>\nb\n</DOC>\n";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n.max(1) as u64) as usize
        };
        for round in 0..3000 {
            let seed: &[u8] = if round % 2 == 0 { arc } else { trec };
            let mut v = seed[..rnd(seed.len() + 1)].to_vec();
            for _ in 0..rnd(6) {
                if !v.is_empty() {
                    let i = rnd(v.len());
                    v[i] = rnd(256) as u8;
                }
            }
            let _ = super::arc(&v);
            let _ = super::trecweb(&v);
        }
        assert_eq!(super::arc(arc), (1, 0));
        assert_eq!(super::trecweb(trec), (2, 0));
    }
}
