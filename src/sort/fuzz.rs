//! Entry point for the run-file fuzz target in tools/fuzz (not part of the supported API).

use std::path::Path;

use super::cursor::RunCursor;
use super::{DocPair, KeyDoc, Record};

/// Reads the run file at `path` to its end (or first error) as each record kind.
pub fn read_run(path: &Path) -> usize {
    read::<KeyDoc>(path) + read::<DocPair>(path)
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
