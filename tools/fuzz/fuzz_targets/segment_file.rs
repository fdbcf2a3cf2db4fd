//! Whole segment files (header, footer, directory, block indexes, blocks, verify) on arbitrary
//! bytes, through the real mmap-based reader.
#![no_main]
use std::io::Write;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
}

fuzz_target!(|data: &[u8]| {
    let path = dir().path().join("seg-00000001.ndds");
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(data).expect("write");
    drop(f);
    let _ = ndd_index::segment::fuzz::file(&path);
});
