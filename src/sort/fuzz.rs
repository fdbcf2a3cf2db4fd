//! Entry points for the run-file fuzz targets in tools/fuzz (not part of the supported API).

use std::path::Path;

use byteorder::{ByteOrder, LittleEndian as LE};

use super::cursor::RunCursor;
use super::run::{RunWriter, BLOCK_HEADER_LEN, HEADER_LEN, INDEX_ENTRY_LEN, TRAILER_LEN};
use super::{DocHash, DocPair, KeyDoc, ProbeRecord, Record};

/// Reads the run file at `path` to its end (or first error) as each record kind.
pub fn read_run(path: &Path) -> usize {
    read::<KeyDoc>(path) + read::<DocPair>(path) + read::<ProbeRecord>(path) + read::<DocHash>(path)
}

fn read<R: Record>(path: &Path) -> usize {
    let Ok(mut cursor) = RunCursor::<R>::open(path) else {
        return 0;
    };
    let mut n = 0;
    while let Ok(Some(_)) = cursor.next_record() {
        n += 1;
    }
    // After the end or an error the cursor must keep answering None.
    assert!(matches!(cursor.next_record(), Ok(None)));
    n
}

/// Structure-aware variant: writes a valid run of the records encoded in `data` (12-byte
/// chunks, in the given order, blocks of 1-8 records), applies the edits at the end of `data`
/// (each: 4-byte position, 1-byte xor), recomputes every crc so the damage reaches the
/// structural checks behind them, and reads the result. Returns the records read.
pub fn damaged_run(dir: &Path, data: &[u8]) -> usize {
    let Some((&ctl, rest)) = data.split_first() else {
        return 0;
    };
    let n_edits = usize::from(ctl >> 4).min(rest.len() / 5);
    let (recs, edits) = rest.split_at(rest.len() - 5 * n_edits);
    let Ok(mut w) = RunWriter::<KeyDoc>::with_block_records(dir, 1 + usize::from(ctl % 8)) else {
        return 0;
    };
    for c in recs.chunks_exact(KeyDoc::SIZE) {
        if w.push(&KeyDoc::decode(c)).is_err() {
            return 0;
        }
    }
    let Ok(run) = w.finish(0) else { return 0 };
    let Ok(mut bytes) = std::fs::read(run.file.path()) else {
        return 0;
    };
    drop(run);
    if !bytes.is_empty() {
        for e in edits.chunks_exact(5) {
            let at = LE::read_u32(&e[0..4]) as usize % bytes.len();
            bytes[at] ^= e[4];
        }
    }
    if ctl & 8 == 0 {
        reseal(&mut bytes);
    }
    let path = dir.join("damaged-run");
    if std::fs::write(&path, &bytes).is_err() {
        return 0;
    }
    read_run(&path)
}

/// Recomputes the crcs of a (possibly damaged) run wherever its offsets are in range: each
/// block's (in its header and index entry), then the index's, the trailer's and the header's.
fn reseal(m: &mut [u8]) {
    let len = m.len();
    if len < HEADER_LEN + TRAILER_LEN {
        return;
    }
    let t_off = len - TRAILER_LEN;
    let index_offset = LE::read_u64(&m[t_off..t_off + 8]) as usize;
    if (HEADER_LEN..=t_off).contains(&index_offset) {
        for e in (index_offset..t_off).step_by(INDEX_ENTRY_LEN) {
            if e + INDEX_ENTRY_LEN > t_off {
                break;
            }
            let off = LE::read_u64(&m[e..e + 8]) as usize;
            let Some(head_end) = off.checked_add(BLOCK_HEADER_LEN).filter(|&h| h <= len) else {
                continue;
            };
            let blen = LE::read_u32(&m[off..off + 4]) as usize;
            let Some(end) = head_end.checked_add(blen).filter(|&x| x <= len) else {
                continue;
            };
            let crc = crc32fast::hash(&m[head_end..end]);
            LE::write_u32(&mut m[off + 8..off + 12], crc);
            LE::write_u32(&mut m[e + 12..e + 16], crc);
        }
        let crc = crc32fast::hash(&m[index_offset..t_off]);
        LE::write_u32(&mut m[t_off + 24..t_off + 28], crc);
    }
    let crc = crc32fast::hash(&m[t_off..t_off + 28]);
    LE::write_u32(&mut m[t_off + 28..t_off + 32], crc);
    let crc = crc32fast::hash(&m[0..20]);
    LE::write_u32(&mut m[20..24], crc);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resealed_undamaged_run_reads_back_and_damage_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = vec![2u8]; // blocks of 3 records, no edits, reseal on
        for k in 0..7u64 {
            let mut r = [0u8; 12];
            KeyDoc { key: k, doc: 1 }.encode(&mut r);
            data.extend_from_slice(&r);
        }
        assert_eq!(damaged_run(dir.path(), &data), 7);
        // One edit (a record count byte of the first block header), crcs recomputed: the
        // structural checks must refuse the file rather than read wrong records.
        data[0] = 0x10 | 2;
        data.extend_from_slice(&[28, 0, 0, 0, 0x01]);
        assert_eq!(damaged_run(dir.path(), &data), 0);
    }

    #[test]
    fn cursor_stays_ended_after_records_out_of_order() {
        // The run_damaged fuzz input that found it: two records, the second smaller, no
        // damage; reading must give the first record, one error, then only Ok(None) (the
        // assertion inside `read`).
        let dir = tempfile::tempdir().unwrap();
        let data = [
            0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0x35, 0xff, 0xff, 0xa5, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0x35, 0xff, 0xff, 0xa5, 0xff, 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(damaged_run(dir.path(), &data), 1);
    }
}
