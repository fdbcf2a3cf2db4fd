//! The ingest report spool: per-document report lines wait for the publish (cluster ids are
//! known only then) in a temporary file under `DIR/tmp`, not in memory, so a batch of any size
//! costs no report memory. The file holds one JSON line per [`DocReport`]; it is private to one
//! ingest run (deleted when dropped, and by the orphan cleanup of the next writer after a
//! crash), so its format is not part of the index format.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::pipeline::DocReport;

/// Report lines written during the read stage, read back after the publish.
pub struct ReportSpool {
    file: BufWriter<tempfile::NamedTempFile>,
    lines: u64,
}

impl ReportSpool {
    /// A new, empty spool in `tmp_dir`.
    pub fn new(tmp_dir: &Path) -> Result<Self> {
        let f = tempfile::Builder::new()
            .prefix("report-")
            .suffix(".jsonl")
            .tempfile_in(tmp_dir)
            .map_err(|e| Error::io(tmp_dir, e))?;
        Ok(ReportSpool {
            file: BufWriter::with_capacity(1 << 16, f),
            lines: 0,
        })
    }

    /// Appends one report line.
    pub fn push(&mut self, r: &DocReport) -> Result<()> {
        let path = self.file.get_ref().path().to_owned();
        serde_json::to_writer(&mut self.file, r).map_err(|e| Error::io(&path, e.into()))?;
        self.file
            .write_all(b"\n")
            .map_err(|e| Error::io(&path, e))?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written so far.
    pub fn len(&self) -> u64 {
        self.lines
    }

    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// Calls `f` with every report, in the order they were pushed; the file is removed after.
    pub fn drain(self, mut f: impl FnMut(DocReport) -> Result<()>) -> Result<()> {
        let tmp = self
            .file
            .into_inner()
            .map_err(|e| Error::io("<report spool>", e.into_error()))?;
        let path = tmp.path().to_owned();
        let mut file: &File = tmp.as_file();
        file.rewind().map_err(|e| Error::io(&path, e))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| Error::io(&path, e))?;
            if n == 0 {
                break;
            }
            let r: DocReport = serde_json::from_str(line.trim_end()).map_err(|e| {
                Error::corrupt(&path, 0, format!("report spool line unreadable: {e}"))
            })?;
            f(r)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::DocStatus;

    #[test]
    fn round_trips_reports_in_order_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = ReportSpool::new(dir.path()).unwrap();
        for i in 0..1000u32 {
            s.push(&DocReport {
                key: format!("k\"{i}\n"),
                status: if i % 3 == 0 {
                    DocStatus::Error
                } else {
                    DocStatus::New
                },
                doc: Some(i),
                error: (i % 3 == 0).then(|| "bad".to_string()),
                origin: None,
                exact_duplicate_of: None,
                near_duplicate: None,
                cluster: None,
            })
            .unwrap();
        }
        assert_eq!(s.len(), 1000);
        let mut got = Vec::new();
        s.drain(|r| {
            got.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(got.len(), 1000);
        for (i, r) in got.iter().enumerate() {
            assert_eq!(r.key, format!("k\"{i}\n"));
            assert_eq!(r.doc, Some(i as u32));
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
