//! The segment builder: the one place that writes an index segment's tables (FORWARD,
//! POSTINGS, FREQUENT and the method tables) over `segment::SegmentWriter`, and the one guard
//! that removes a segment nobody published.
//!
//! Every producer of segments goes through it: batch ingest (`pipeline::ingest`), the staged
//! parts of `lifecycle::stage`, compaction (`lifecycle::compact`), and the delta
//! ([`delta`]: the fold, an add's matching segment, a snapshot's delta). So their segments
//! agree byte for byte where they hold the same documents.
//!
//! Call sequence: [`SegmentBuilder::create`] (FORWARD is open) -> [`SegmentBuilder::forward`]
//! per document in id order -> the postings, from a sorted `(feature, doc)` stream
//! ([`SegmentBuilder::postings_from_sorted`]) or list by list
//! ([`SegmentBuilder::begin_postings`], [`SegmentBuilder::posting_list`],
//! [`SegmentBuilder::end_postings`], which writes FREQUENT) -> method tables ->
//! [`SegmentBuilder::finish`], which returns a [`BuiltSegment`]: its files are removed when
//! it is dropped unless [`BuiltSegment::keep`] says the catalog (or a rename) owns them now.
//!
//! Layer: above the codecs and storage (segment, sort, store), below the read view; it
//! imports nothing from `view` or above (tests/integration/layers.rs).

pub mod delta;

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fingerprint::manku::PermutedTables;
use crate::fingerprint::simhash::encode_sim384;
use crate::segment::{self, SegmentMeta, SegmentWriter, FREQUENT, FREQUENT_DF};
use crate::sort::KeyDoc;
use crate::store::SegmentEntry;

/// Files of a segment that is not (yet) published: removed when dropped, unless
/// [`Unpublished::keep`] was called.
#[derive(Debug, Default)]
pub struct Unpublished(Vec<PathBuf>);

impl Unpublished {
    /// Guards these files.
    pub fn new(files: Vec<PathBuf>) -> Unpublished {
        Unpublished(files)
    }

    /// Guards one more file.
    pub fn push(&mut self, file: PathBuf) {
        self.0.push(file);
    }

    /// The files belong to someone else now (a published manifest, a rename, a private
    /// temporary folder): they are no longer removed.
    pub fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for Unpublished {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes one segment's tables. See the module docs for the call sequence.
pub struct SegmentBuilder {
    w: SegmentWriter,
    files: Unpublished,
    /// Posting keys written to POSTINGS.
    keys: u64,
    /// Posting entries (doc ids) written to POSTINGS.
    postings: u64,
    /// `(key, df)` of the POSTINGS keys in more than `FREQUENT_DF` documents.
    frequent: Vec<(u64, u32)>,
    buf: Vec<u8>,
}

impl SegmentBuilder {
    /// Starts the segment `<dir>/<name>` (published durably by `finish`: tmp, fsync, rename,
    /// fsync the folder) with its FORWARD table open. Until [`BuiltSegment::keep`], an error or
    /// a drop removes its files.
    pub fn create(dir: impl AsRef<Path>, name: &str) -> Result<SegmentBuilder> {
        Self::over(
            SegmentWriter::create(dir.as_ref(), name)?,
            dir.as_ref(),
            name,
        )
    }

    /// [`SegmentBuilder::create`] for a private temporary segment (a snapshot's delta, an
    /// add's matching segment): the same bytes, without the fsyncs of a published segment.
    pub fn temporary(dir: impl AsRef<Path>, name: &str) -> Result<SegmentBuilder> {
        let w = SegmentWriter::create(dir.as_ref(), name)?.temporary();
        Self::over(w, dir.as_ref(), name)
    }

    fn over(mut w: SegmentWriter, dir: &Path, name: &str) -> Result<SegmentBuilder> {
        let files = Unpublished(vec![w.tmp_path().to_path_buf(), dir.join(name)]);
        w.begin_table(segment::FORWARD)?;
        Ok(SegmentBuilder {
            w,
            files,
            keys: 0,
            postings: 0,
            frequent: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// Format version being written.
    pub fn format_version(&self) -> u32 {
        self.w.format_version()
    }

    /// Adds the FORWARD entry of `doc` (ids ascend): its sorted unique features.
    pub fn forward(&mut self, doc: u32, features: &[u64]) -> Result<()> {
        self.buf.clear();
        segment::encode_u64s(features, &mut self.buf);
        self.w.add(doc as u64, &self.buf)
    }

    /// Adds a FORWARD value already encoded (`encode_u64s`; compaction copies them).
    pub fn forward_encoded(&mut self, doc: u64, value: &[u8]) -> Result<()> {
        self.w.add(doc, value)
    }

    /// Closes FORWARD and opens POSTINGS.
    pub fn begin_postings(&mut self) -> Result<()> {
        self.w.end_table()?;
        self.w.begin_table(segment::POSTINGS)
    }

    /// Adds the posting list of `key` (keys ascend; `ids` sorted, unique, not empty).
    pub fn posting_list(&mut self, key: u64, ids: &[u32]) -> Result<()> {
        self.buf.clear();
        segment::encode_postings(ids, &mut self.buf);
        self.w.add(key, &self.buf)?;
        if ids.len() as u32 > FREQUENT_DF {
            self.frequent.push((key, ids.len() as u32));
        }
        self.keys += 1;
        self.postings += ids.len() as u64;
        Ok(())
    }

    /// Closes POSTINGS and writes FREQUENT: the keys in more than `FREQUENT_DF` documents,
    /// with their df.
    pub fn end_postings(&mut self) -> Result<()> {
        self.w.end_table()?;
        self.w.begin_table(FREQUENT)?;
        for (k, df) in std::mem::take(&mut self.frequent) {
            self.w.add(k, &df.to_le_bytes())?;
        }
        self.w.end_table()
    }

    /// POSTINGS and FREQUENT from the `(feature, doc)` records sorted by feature, then doc.
    pub fn postings_from_sorted(
        &mut self,
        sorted: impl IntoIterator<Item = Result<KeyDoc>>,
    ) -> Result<()> {
        self.begin_postings()?;
        let mut ids: Vec<u32> = Vec::new();
        let mut cur: Option<u64> = None;
        for rec in sorted {
            let rec = rec?;
            if cur != Some(rec.key) {
                if let Some(k) = cur {
                    self.posting_list(k, &ids)?;
                    ids.clear();
                }
                cur = Some(rec.key);
            }
            ids.push(rec.doc);
        }
        if let Some(k) = cur {
            self.posting_list(k, &ids)?;
        }
        self.end_postings()
    }

    /// A table of posting lists (a method's table) from `(key, doc)` entries sorted by key,
    /// then doc; a doc repeated under a key counts once.
    pub fn postings_table(&mut self, table: u32, entries: &[(u64, u32)]) -> Result<()> {
        self.w.begin_table(table)?;
        let mut ids: Vec<u32> = Vec::new();
        let mut i = 0;
        while i < entries.len() {
            let k = entries[i].0;
            ids.clear();
            while i < entries.len() && entries[i].0 == k {
                if ids.last() != Some(&entries[i].1) {
                    ids.push(entries[i].1);
                }
                i += 1;
            }
            self.buf.clear();
            segment::encode_postings(&ids, &mut self.buf);
            self.w.add(k, &self.buf)?;
        }
        self.w.end_table()
    }

    /// The simhash tables (`segment::simhash_table(t)` for each permutation `t`) of the
    /// documents' `(doc, simhash)`.
    pub fn simhash_tables(&mut self, tables: &PermutedTables, docs: &[(u32, u64)]) -> Result<()> {
        for t in 0..tables.tables() {
            let entries = table_entries(tables, t, docs);
            self.postings_table(segment::simhash_table(t as u32), &entries)?;
        }
        Ok(())
    }

    /// The SIM384 table: doc id -> 384-bit simhash (ids ascend).
    pub fn sim384_table(&mut self, docs: &[(u32, [u64; 6])]) -> Result<()> {
        self.w.begin_table(segment::SIM384)?;
        for (d, s) in docs {
            self.w.add(*d as u64, &encode_sim384(s))?;
        }
        self.w.end_table()
    }

    /// The segment writer, for a table none of the above writes (compaction copies tables
    /// by key); `begin_table`/`end_table` are the caller's.
    pub fn writer(&mut self) -> &mut SegmentWriter {
        &mut self.w
    }

    /// Writes directory and footer and renames the file into place. The files stay guarded.
    pub fn finish(self) -> Result<BuiltSegment> {
        let meta = self.w.finish()?;
        Ok(BuiltSegment {
            meta,
            keys: self.keys,
            postings: self.postings,
            files: self.files,
        })
    }
}

/// A finished segment nobody has published yet: removed when dropped, unless
/// [`BuiltSegment::keep`].
#[derive(Debug)]
pub struct BuiltSegment {
    pub meta: SegmentMeta,
    /// POSTINGS keys.
    pub keys: u64,
    /// POSTINGS entries.
    pub postings: u64,
    files: Unpublished,
}

impl BuiltSegment {
    /// The manifest entry of the segment as document range `[doc_lo, doc_hi)` under id `id`.
    pub fn entry(&self, id: u64, doc_lo: u32, doc_hi: u32) -> SegmentEntry {
        SegmentEntry {
            id,
            file: self.meta.file_name.clone(),
            doc_lo,
            doc_hi,
            bytes: self.meta.bytes,
            keys: self.keys,
            postings: self.postings,
        }
    }

    /// The file belongs to someone else now (a published manifest, a rename, a private
    /// temporary folder): it is no longer removed.
    pub fn keep(self) -> SegmentMeta {
        self.files.keep();
        self.meta
    }
}

/// `(permuted simhash, doc)` of table `t`, sorted.
pub fn table_entries(tables: &PermutedTables, t: usize, docs: &[(u32, u64)]) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = docs
        .iter()
        .map(|&(d, fp)| (tables.permute(t, fp), d))
        .collect();
    v.sort_unstable();
    v
}
