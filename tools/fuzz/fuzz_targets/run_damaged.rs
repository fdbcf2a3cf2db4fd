//! Valid run files built from the input, then damaged at input-chosen bytes with their crcs
//! recomputed, so the structural checks behind the crcs are reached.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
}

fuzz_target!(|data: &[u8]| {
    let _ = ndd_index::sort::fuzz::damaged_run(dir().path(), data);
});
