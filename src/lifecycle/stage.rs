//! Staged segments: a corpus written as ndd-index segments outside any index (by the Spark
//! job's `--index STAGING`, one part per Spark partition), for `adopt` to publish into an
//! index in one step (format-spec/staging.md).
//!
//! A part is the documents of one doc-id range `[doc_lo, doc_hi)`, given in id order, written
//! as two files under `STAGING/parts/`:
//! - `part-NNNNN.ndds`: the segment `ingest` writes for exactly those documents and ids
//!   (FORWARD, POSTINGS, FREQUENT and the method tables of the options), through the same
//!   code (canonicalize, fingerprint, the segment builder `build::SegmentBuilder`, `MethodWriter`);
//! - `part-NNNNN.docs`: their catalog records (`store::records::DocRecord`, batch 0 until
//!   adopted) in a segment-format file of one table, so every byte has a crc32.
//!
//! `STAGING/staging.json` ([`StagingManifest`]) is written last, once every part is done: a
//! staging without it is incomplete and `adopt` refuses it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::build::SegmentBuilder;
use crate::canonicalize::canonicalize_with;
use crate::error::{Error, IoResultExt, Result};
use crate::fingerprint::{fingerprint, FingerprintOptions};
use crate::input::RawDoc;
use crate::method::writer::{extras as method_extras, MethodWriter};
use crate::method::MethodOptions;
use crate::options::{CreateOptions, IndexOptions};
use crate::segment::SegmentWriter;
use crate::sort::{ExternalSorter, KeyDoc, SortOptions};
use crate::store::DocRecord;

/// `format` of a staging manifest.
pub const STAGING_FORMAT: &str = "ndd-index staging";
/// The staging layout this build writes and reads (format-spec/staging.md).
pub const STAGING_VERSION: u32 = 1;
/// The staging manifest's file name.
pub const STAGING_MANIFEST: &str = "staging.json";
/// The folder of the parts' files.
pub const PARTS_DIR: &str = "parts";
/// The one table of a part's records file: doc id -> the catalog's `docs` value (an id no
/// index segment uses, opaque to the segment verifier).
pub const RECORDS_TABLE: u32 = 256;

/// One part of a staging: its files (under `parts/`) and what they hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedPart {
    /// The segment file.
    pub segment: String,
    /// The records file.
    pub records: String,
    /// The part holds the documents with ids in `[doc_lo, doc_hi)`, every one of them.
    pub doc_lo: u32,
    pub doc_hi: u32,
    /// Size of the segment file in bytes.
    pub bytes: u64,
    /// Size of the records file in bytes.
    pub records_bytes: u64,
    /// Posting keys of the segment (its POSTINGS entries).
    pub keys: u64,
    /// Posting entries (the sum of the documents' feature counts).
    pub postings: u64,
}

/// `STAGING/staging.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StagingManifest {
    /// [`STAGING_FORMAT`].
    pub format: String,
    /// [`STAGING_VERSION`].
    pub version: u32,
    /// A name unique to the run that wrote the staging; the adopting batch is `adopt-<run>`.
    pub run: String,
    pub created_unix: u64,
    /// The creation options the segments were written with (`meta/options` of rocksdb.md).
    pub options: IndexOptions,
    /// All parts together hold the ids `[doc_lo, doc_hi)`.
    pub doc_lo: u32,
    pub doc_hi: u32,
    /// Input documents the job rejected (reported by the job; counted in the batch record).
    pub errors: u64,
    /// Sorted by `doc_lo`; consecutive ranges.
    pub parts: Vec<StagedPart>,
}

impl StagingManifest {
    /// Checks what the manifest says of itself: format and version, parts in order with
    /// consecutive, non-empty ranges covering `[doc_lo, doc_hi)`. Errors name the staging.
    pub fn check(&self, staging: &Path) -> Result<()> {
        let bad =
            |why: String| Error::InvalidArgument(format!("staging {}: {why}", staging.display()));
        if self.format != STAGING_FORMAT {
            return Err(bad(format!(
                "{STAGING_MANIFEST} is not a staging manifest (format {:?})",
                self.format
            )));
        }
        if self.version != STAGING_VERSION {
            return Err(Error::UnsupportedFormatVersion {
                path: staging.join(STAGING_MANIFEST),
                found: self.version,
                supported: STAGING_VERSION,
            });
        }
        let mut at = self.doc_lo;
        for p in &self.parts {
            if p.doc_lo != at {
                return Err(bad(if p.doc_lo > at {
                    format!(
                        "gap in the doc ids: no part holds [{at}, {}) (part {} starts at {})",
                        p.doc_lo, p.segment, p.doc_lo
                    )
                } else {
                    format!(
                        "part {} starts at doc {}, inside the ids before it (expected {at})",
                        p.segment, p.doc_lo
                    )
                }));
            }
            if p.doc_hi <= p.doc_lo {
                return Err(bad(format!(
                    "part {} has the empty range [{}, {})",
                    p.segment, p.doc_lo, p.doc_hi
                )));
            }
            at = p.doc_hi;
        }
        if at != self.doc_hi {
            return Err(bad(format!(
                "the parts end at doc {at}, the manifest says {}",
                self.doc_hi
            )));
        }
        Ok(())
    }

    /// Reads and checks `STAGING/staging.json`.
    pub fn read(staging: &Path) -> Result<StagingManifest> {
        let path = staging.join(STAGING_MANIFEST);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a complete staging: no {STAGING_MANIFEST} (written last, once \
                     every part is written; did the job finish?)",
                    staging.display()
                )))
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let m: StagingManifest = serde_json::from_slice(&bytes).map_err(|e| {
            Error::InvalidArgument(format!("{}: not a staging manifest: {e}", path.display()))
        })?;
        m.check(staging)?;
        Ok(m)
    }

    /// Writes `STAGING/staging.json` (tmp, fsync, rename, fsync the folder) after checking it.
    pub fn write(&self, staging: &Path) -> Result<()> {
        self.check(staging)?;
        let path = staging.join(STAGING_MANIFEST);
        let tmp = staging.join(format!("{STAGING_MANIFEST}.tmp"));
        let mut bytes = serde_json::to_vec_pretty(self).expect("manifest serializes");
        bytes.push(b'\n');
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp).at(&tmp)?;
            f.write_all(&bytes).at(&tmp)?;
            f.sync_all().at(&tmp)?;
        }
        std::fs::rename(&tmp, &path).at(&path)?;
        sync_dir(staging)
    }
}

/// The options of a staging from creation options as given (`CreateSpec::resolve`), checked
/// as an index creation checks them; I-Match and idf-weighted simhash are refused (their
/// tables need the index-wide lexicon a part cannot see).
pub fn staging_options(create: &CreateOptions) -> Result<IndexOptions> {
    let o = IndexOptions::from_create(create);
    o.fingerprint()?.validate()?;
    o.methods.validate()?;
    if o.cluster_threshold()?.as_f64() <= 0.0 {
        return Err(Error::InvalidArgument(
            "--cluster-threshold must be above 0".into(),
        ));
    }
    check_standalone(&o.methods)?;
    Ok(o)
}

fn check_standalone(m: &MethodOptions) -> Result<()> {
    if m.needs_terms() || m.simhash.is_some_and(|s| s.boilerplate.is_some()) {
        return Err(Error::InvalidArgument(
            "a staged corpus cannot store I-Match signatures, idf-weighted simhashes or a \
             simhash boilerplate filter (they need the index's frozen lexicon or frequent \
             set): create the index without them, or ingest"
                .into(),
        ));
    }
    Ok(())
}

/// The creation options that create an index with exactly `o` (adopting into a new index).
pub fn create_options(o: &IndexOptions) -> Result<CreateOptions> {
    Ok(CreateOptions {
        shingle: Some(o.shingle()?),
        sample: Some(o.sample()?),
        cluster_threshold: Some(o.cluster_threshold()?),
        methods: Some(o.methods.clone()),
        max_df: o.max_df,
        site: Some(o.site_rule()?),
        extract: Some(o.extract()?),
        segment_format: Some(o.stored_segment_format()?),
    })
}

/// Writes one part: documents `add`ed in id order, consecutive ids, then `finish`.
///
/// Memory: the external sort's budget for the (feature, doc) records, the methods' per-part
/// data (`MethodWriter`), one block of each file.
pub struct PartWriter {
    fp: FingerprintOptions,
    methods_opts: MethodOptions,
    parts_dir: PathBuf,
    /// The attempt's own folder under `parts/`: a retried or speculative Spark task writes
    /// the same part in another one; whichever finishes renames identical files into place.
    work: tempfile::TempDir,
    name: String,
    seg: SegmentBuilder,
    recs: SegmentWriter,
    sorter: ExternalSorter<KeyDoc>,
    methods: MethodWriter,
    doc_lo: Option<u32>,
    next: u32,
    postings: u64,
}

impl PartWriter {
    /// Starts part number `part` of the staging at `staging` (created if absent), with the
    /// options `options` (see [`staging_options`]) and `mem_bytes` for the sort of the
    /// postings (its runs go to the system's temp folder).
    pub fn create(
        staging: &Path,
        part: u32,
        options: &IndexOptions,
        mem_bytes: u64,
    ) -> Result<PartWriter> {
        check_standalone(&options.methods)?;
        let fp = options.fingerprint()?;
        fp.validate()?;
        let parts_dir = staging.join(PARTS_DIR);
        std::fs::create_dir_all(&parts_dir).at(&parts_dir)?;
        let name = format!("part-{part:05}");
        let work = tempfile::Builder::new()
            .prefix(&format!(".{name}-"))
            .tempdir_in(&parts_dir)
            .at(&parts_dir)?;
        let seg = SegmentBuilder::create_version(
            work.path(),
            &format!("{name}.ndds"),
            options.segment_format()?,
        )?;
        let mut recs = SegmentWriter::create(work.path(), &format!("{name}.docs"))?;
        recs.begin_table(RECORDS_TABLE)?;
        // Format 3's second sort (postings by doc, into FORWARD ranks) takes half the budget.
        let sort = SortOptions {
            mem_bytes: if seg.ranked_forward() {
                (mem_bytes / 2).max(64)
            } else {
                mem_bytes
            },
            tmp_dir: std::env::temp_dir(),
            ..SortOptions::default()
        };
        let seg = seg.with_sort(sort.clone());
        let sorter = ExternalSorter::<KeyDoc>::new(sort)?;
        Ok(PartWriter {
            fp,
            methods_opts: options.methods.clone(),
            parts_dir,
            work,
            name,
            seg,
            recs,
            sorter,
            methods: MethodWriter::new(&options.methods),
            doc_lo: None,
            next: 0,
            postings: 0,
        })
    }

    /// Adds document `doc` (the next id: one more than the previous document's): canonical
    /// text, features, forward list, postings records, method data and catalog record, as
    /// `ingest` computes them. A document `ingest` would reject is an error naming it.
    pub fn add(&mut self, doc: u32, raw: RawDoc) -> Result<()> {
        if self.doc_lo.is_some() && doc != self.next {
            return Err(Error::Document {
                key: raw.key,
                reason: format!(
                    "staged with doc id {doc}, but the part's next id is {} (ids must be \
                     consecutive and ascending within a part)",
                    self.next
                ),
            });
        }
        let canon = canonicalize_with(
            &raw.bytes,
            raw.format,
            raw.charset.as_deref(),
            self.fp.extract,
        )
        .map_err(|why| Error::Document {
            key: raw.key.clone(),
            reason: format!("{why} ({})", raw.origin),
        })?;
        let fp = fingerprint(&canon.text, &self.fp);
        let extras = method_extras(&canon.text, &fp, &self.fp, &self.methods_opts);
        self.seg.forward(doc, &fp.features)?;
        for &f in &fp.features {
            self.sorter.push(KeyDoc { key: f, doc })?;
        }
        self.postings += fp.features.len() as u64;
        self.methods.add(doc, &fp, extras)?;
        let rec = DocRecord::new(raw.key, 0, &fp, raw.bytes.len() as u64, raw.url);
        self.recs.add(doc as u64, &rec.encode())?;
        self.doc_lo.get_or_insert(doc);
        self.next = doc.checked_add(1).ok_or_else(|| Error::Document {
            key: rec.key.clone(),
            reason: "doc ids exhausted".into(),
        })?;
        Ok(())
    }

    /// Finishes both files and moves them into `parts/` (replacing what another attempt at
    /// the same part put there: the same bytes). `None` for a part without documents.
    pub fn finish(mut self) -> Result<Option<StagedPart>> {
        let Some(doc_lo) = self.doc_lo else {
            return Ok(None); // the unfinished files go with the attempt's folder
        };
        self.seg.postings_from_sorted(self.sorter.finish()?)?;
        self.methods.write_tables_standalone(&mut self.seg)?;
        let built = self.seg.finish()?;
        let keys = built.keys;
        // The attempt's folder owns the file until it is renamed into `parts/`.
        let seg = built.keep();
        self.recs.end_table()?;
        let recs = self.recs.finish()?;
        for f in [&seg.file_name, &recs.file_name] {
            let to = self.parts_dir.join(f);
            std::fs::rename(self.work.path().join(f), &to).at(&to)?;
        }
        sync_dir(&self.parts_dir)?;
        Ok(Some(StagedPart {
            segment: seg.file_name,
            records: recs.file_name,
            doc_lo,
            doc_hi: self.next,
            bytes: seg.bytes,
            records_bytes: recs.bytes,
            keys,
            postings: self.postings,
        }))
    }

    /// The part's name (`part-NNNNN`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .at(dir)?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
