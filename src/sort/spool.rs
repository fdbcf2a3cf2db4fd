//! A spool: records that arrive already in order (a batch's per-document values, by doc id)
//! written straight to one run file as they come and read back once, so a batch of any size
//! holds one block of them in memory instead of all of them. The file is an ordinary run
//! (format-spec/sort-run.md: checksummed, deleted when the stream is dropped, a crashed
//! process's leftovers removed by `remove_stale_runs`); nothing is sorted, and the file may be
//! read back several times.

use std::path::PathBuf;

use std::marker::PhantomData;

use super::cursor::RunCursor;
use super::run::{RunWriter, SpilledRun};
use super::Record;
use crate::error::{Error, IoResultExt, Result};

/// Records pushed in non-decreasing order into a run file under `tmp_dir`, read back in the
/// same order by [`Spool::finish`]. Memory: one 64 KiB block, the write buffer and 16 bytes of
/// block index per 64 KiB of records. Dropping it deletes the file.
pub struct Spool<R: Record> {
    dir: PathBuf,
    w: Option<RunWriter<R>>,
    last: Option<R>,
    records: u64,
}

impl<R: Record> Spool<R> {
    /// An empty spool; its file is created in `dir` (made if missing) at the first push.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Spool {
            dir: dir.into(),
            w: None,
            last: None,
            records: 0,
        }
    }

    /// Appends `r`, which must not be less than the record pushed before it (an error
    /// otherwise: a spool does not sort).
    pub fn push(&mut self, r: R) -> Result<()> {
        if self.last.is_some_and(|l| r < l) {
            return Err(Error::InvalidArgument(
                "spool: records must be pushed in non-decreasing order".into(),
            ));
        }
        let w = match self.w.as_mut() {
            Some(w) => w,
            None => {
                std::fs::create_dir_all(&self.dir).at(&self.dir)?;
                self.w.insert(RunWriter::create(&self.dir)?)
            }
        };
        w.push(&r)?;
        self.last = Some(r);
        self.records += 1;
        Ok(())
    }

    /// Records pushed so far.
    pub fn len(&self) -> u64 {
        self.records
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Ends input: the records, to be read back in the order they were pushed as often as
    /// needed ([`SpoolFile::read`]); the file is deleted when the [`SpoolFile`] drops.
    pub fn finish(self) -> Result<SpoolFile<R>> {
        Ok(SpoolFile {
            run: self.w.map(|w| w.finish(0)).transpose()?,
            records: self.records,
            _record: PhantomData,
        })
    }
}

/// A finished [`Spool`]: its run file, read back sequentially by [`SpoolFile::read`].
pub struct SpoolFile<R: Record> {
    run: Option<SpilledRun>,
    records: u64,
    _record: PhantomData<R>,
}

impl<R: Record> SpoolFile<R> {
    /// Records in the file.
    pub fn len(&self) -> u64 {
        self.records
    }

    /// True when it holds no record.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The records from the first, in order; each block's checksum and the order are checked
    /// as they are read, and the pages read are handed back to the kernel as it goes.
    pub fn read(&self) -> Result<SpoolReader<R>> {
        Ok(SpoolReader {
            cursor: match &self.run {
                Some(r) => Some(RunCursor::open(r.file.path())?),
                None => None,
            },
        })
    }
}

/// One sequential read of a [`SpoolFile`]: an iterator of `Result<R>` that ends after the
/// first error.
pub struct SpoolReader<R: Record> {
    cursor: Option<RunCursor<R>>,
}

impl<R: Record> Iterator for SpoolReader<R> {
    type Item = Result<R>;

    fn next(&mut self) -> Option<Result<R>> {
        let c = self.cursor.as_mut()?;
        match c.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.cursor = None;
                None
            }
            Err(e) => {
                self.cursor = None;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::{DocHash, DocPair};

    #[test]
    fn records_come_back_in_order_and_the_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        let mut s = Spool::<DocHash>::new(&tmp);
        assert!(s.is_empty());
        // Several blocks (5461 records of 12 bytes per 64 KiB block).
        let recs: Vec<DocHash> = (0..20_000u32)
            .map(|d| DocHash {
                doc: d * 3,
                hash: (d as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            })
            .collect();
        for &r in &recs {
            s.push(r).unwrap();
        }
        assert_eq!(s.len(), 20_000);
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 1);
        let file = s.finish().unwrap();
        assert_eq!(file.len(), 20_000);
        for _ in 0..2 {
            let back: Vec<DocHash> = file.read().unwrap().map(|r| r.unwrap()).collect();
            assert_eq!(back, recs, "read as often as needed");
        }
        drop(file);
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "file removed");
    }

    #[test]
    fn out_of_order_is_refused_and_empty_makes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        let empty = Spool::<DocPair>::new(&tmp);
        let f = empty.finish().unwrap();
        assert!(f.is_empty());
        assert_eq!(f.read().unwrap().count(), 0);
        assert!(!tmp.exists(), "no file for an empty spool");
        let mut s = Spool::<DocPair>::new(&tmp);
        s.push(DocPair { a: 2, b: 0 }).unwrap();
        s.push(DocPair { a: 2, b: 0 }).unwrap(); // equal is in order
        assert!(s.push(DocPair { a: 1, b: 9 }).is_err());
        drop(s);
        assert_eq!(
            std::fs::read_dir(&tmp).unwrap().count(),
            0,
            "dropped: removed"
        );
    }
}
