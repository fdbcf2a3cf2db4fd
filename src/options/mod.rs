//! Index creation options: chosen once, stored in the catalog, checked on every later use.
//!
//! The defaults come from measurements on the shared llvm corpus (README.md, "Defaults").

pub mod methods;

use serde::{Deserialize, Serialize};

use crate::canonicalize::Extract;
use crate::error::{Error, Result};
use crate::fingerprint::{FingerprintOptions, Sample, ShingleKind};
use crate::input::site::SiteRule;
use crate::threshold::Threshold;
use methods::MethodOptions;

/// Version of the options record (format-spec/rocksdb.md, `meta/options`).
pub const OPTIONS_VERSION: u32 = 1;

/// Default shingle: 5 contiguous words (the shared corpus's truth uses the same).
pub const DEFAULT_SHINGLE: &str = "words:5";
/// Default sampling: every shingle (exact resemblance; see README.md for the measurements).
pub const DEFAULT_SAMPLE: &str = "all";
/// Default threshold for clusters maintained at ingest and for near-duplicate reports.
pub const DEFAULT_CLUSTER_THRESHOLD: &str = "0.8";
/// Segment format version a new index writes (`--segment-format`, format-spec/segment.md):
/// the same as [`crate::segment::DEFAULT_WRITE_VERSION`].
pub const DEFAULT_SEGMENT_FORMAT: u32 = crate::segment::DEFAULT_WRITE_VERSION;
/// Segment format version of an index whose options record has no `segment_format` (created
/// before the option existed, when every writer wrote format 2 unless told otherwise).
pub const LEGACY_SEGMENT_FORMAT: u32 = 2;
/// Segment format versions an index may be created with (1 is read, never chosen).
pub const SEGMENT_FORMATS: [u32; 2] = [2, 3];

/// Options fixed at index creation. Stored as JSON with strings for the enum-like values so the
/// record stays readable (`"shingle": "words:5"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexOptions {
    pub version: u32,
    pub shingle: String,
    pub sample: String,
    pub cluster_threshold: String,
    /// What the non-shingle methods store (src/method/); absent in indexes created before
    /// methods existed, which then store none.
    #[serde(default)]
    pub methods: MethodOptions,
    /// Commonality limit (`--max-df N`): keys in more than N documents produce no candidates
    /// (they still count in resemblance). Absent: no limit. Records written before this field
    /// existed read as "no limit".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_df: Option<u32>,
    /// The site rule for documents with neither a URL nor a URL key (`--site path:N`,
    /// `input::site`). Written for every new index; records written before it existed read
    /// as `path:1`, the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// Which text of an HTML document is canonical (`--extract body|main`,
    /// format-spec/canonical-text.md). Written for every new index; records written before
    /// it existed read as `body`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<String>,
    /// The segment format version every writer of this index writes (`--segment-format 2|3`,
    /// format-spec/segment.md): ingest, add's fold, compaction, the server, Python. Written
    /// for every new index; records written before it existed read as 2
    /// ([`LEGACY_SEGMENT_FORMAT`]), whatever today's default for a new index
    /// ([`DEFAULT_SEGMENT_FORMAT`]). `NDD_SEGMENT_FORMAT` overrides it (tests, benchmarks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment_format: Option<u32>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            version: OPTIONS_VERSION,
            shingle: DEFAULT_SHINGLE.into(),
            sample: DEFAULT_SAMPLE.into(),
            cluster_threshold: DEFAULT_CLUSTER_THRESHOLD.into(),
            methods: MethodOptions::default(),
            max_df: None,
            site: None,
            extract: None,
            segment_format: None,
        }
    }
}

/// Creation options as given by a caller: `None` means "the stored value, or the default".
#[derive(Clone, Debug, Default)]
pub struct CreateOptions {
    pub shingle: Option<ShingleKind>,
    pub sample: Option<Sample>,
    pub cluster_threshold: Option<Threshold>,
    /// Method data to store; `None`: [`MethodOptions::new_index_default`].
    pub methods: Option<MethodOptions>,
    pub max_df: Option<u32>,
    /// Site rule; `None`: [`crate::input::site::DEFAULT_SITE_RULE`].
    pub site: Option<SiteRule>,
    /// Extraction; `None`: `body`.
    pub extract: Option<Extract>,
    /// Segment format version (2 or 3); `None`: [`DEFAULT_SEGMENT_FORMAT`].
    pub segment_format: Option<u32>,
}

impl IndexOptions {
    /// Options for a new index: the defaults overridden by what the caller gave.
    pub fn from_create(c: &CreateOptions) -> Self {
        let mut o = IndexOptions::default();
        if let Some(s) = c.shingle {
            o.shingle = s.to_string();
        }
        if let Some(s) = c.sample {
            o.sample = s.to_string();
        }
        if let Some(t) = c.cluster_threshold {
            o.cluster_threshold = t.to_string();
        }
        o.methods = c
            .methods
            .clone()
            .unwrap_or_else(MethodOptions::new_index_default);
        o.max_df = c.max_df;
        o.site = Some(c.site.unwrap_or_default().to_string());
        o.extract = Some(c.extract.unwrap_or_default().to_string());
        o.segment_format = Some(c.segment_format.unwrap_or(DEFAULT_SEGMENT_FORMAT));
        o
    }

    /// Checks that options given for an existing index agree with the stored ones.
    pub fn check_compatible(&self, c: &CreateOptions, index: &std::path::Path) -> Result<()> {
        let conflict =
            |option: &'static str, stored: String, given: String| Error::OptionConflict {
                path: index.to_owned(),
                option,
                stored,
                given,
            };
        if let Some(s) = c.shingle {
            if s != self.shingle()? {
                return Err(conflict("--shingle", self.shingle.clone(), s.to_string()));
            }
        }
        if let Some(s) = c.sample {
            if s != self.sample()? {
                return Err(conflict("--sample", self.sample.clone(), s.to_string()));
            }
        }
        if let Some(t) = c.cluster_threshold {
            if t != self.cluster_threshold()? {
                return Err(conflict(
                    "--cluster-threshold",
                    self.cluster_threshold.clone(),
                    t.to_string(),
                ));
            }
        }
        if let Some(m) = &c.methods {
            if *m != self.methods {
                return Err(conflict(
                    "--methods",
                    serde_json::to_string(&self.methods).unwrap_or_default(),
                    serde_json::to_string(m).unwrap_or_default(),
                ));
            }
        }
        if let Some(n) = c.max_df {
            if Some(n) != self.max_df {
                let stored = self.max_df.map_or("none".to_string(), |v| v.to_string());
                return Err(conflict("--max-df", stored, n.to_string()));
            }
        }
        if let Some(r) = c.site {
            if r != self.site_rule()? {
                return Err(conflict(
                    "--site",
                    self.site_rule()?.to_string(),
                    r.to_string(),
                ));
            }
        }
        if let Some(e) = c.extract {
            if e != self.extract()? {
                return Err(conflict(
                    "--extract",
                    self.extract()?.to_string(),
                    e.to_string(),
                ));
            }
        }
        if let Some(f) = c.segment_format {
            let stored = self.stored_segment_format()?;
            if f != stored {
                return Err(conflict(
                    "--segment-format",
                    stored.to_string(),
                    f.to_string(),
                ));
            }
        }
        Ok(())
    }

    /// The segment format version recorded at creation (2 for a record without one).
    pub fn stored_segment_format(&self) -> Result<u32> {
        let f = self.segment_format.unwrap_or(LEGACY_SEGMENT_FORMAT);
        if !(crate::segment::MIN_FORMAT_VERSION..=crate::segment::FORMAT_VERSION).contains(&f) {
            return Err(corrupt(
                "segment_format",
                format!("segment format {f} is not one this build writes"),
            ));
        }
        Ok(f)
    }

    /// The segment format version this index's writers write: `NDD_SEGMENT_FORMAT` when set
    /// to a version this build writes (an override for tests and benchmarks), else the one
    /// recorded at creation ([`IndexOptions::stored_segment_format`]).
    pub fn segment_format(&self) -> Result<u32> {
        if let Some(v) = crate::segment::format_override() {
            return Ok(v);
        }
        self.stored_segment_format()
    }

    /// The extraction (`body` when the record has none).
    pub fn extract(&self) -> Result<Extract> {
        match &self.extract {
            None => Ok(Extract::Body),
            Some(s) => s.parse().map_err(|e| corrupt("extract", e)),
        }
    }

    /// The site rule (`path:1` when the record has none).
    pub fn site_rule(&self) -> Result<SiteRule> {
        match &self.site {
            None => Ok(SiteRule::default()),
            Some(s) => s.parse().map_err(|e| corrupt("site", e)),
        }
    }

    pub fn shingle(&self) -> Result<ShingleKind> {
        self.shingle.parse().map_err(|e| corrupt("shingle", e))
    }

    pub fn sample(&self) -> Result<Sample> {
        self.sample.parse().map_err(|e| corrupt("sample", e))
    }

    pub fn cluster_threshold(&self) -> Result<Threshold> {
        self.cluster_threshold
            .parse()
            .map_err(|e| corrupt("cluster_threshold", e))
    }

    /// The fingerprinting options these index options imply.
    pub fn fingerprint(&self) -> Result<FingerprintOptions> {
        Ok(FingerprintOptions {
            shingle: self.shingle()?,
            sample: self.sample()?,
            extract: self.extract()?,
        })
    }
}

fn corrupt(field: &str, e: impl std::fmt::Display) -> Error {
    Error::CorruptEntry {
        what: format!("meta/options.{field}"),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new index records the default format (3); an options record without the field (an
    /// index created before it existed) keeps meaning 2, and `--segment-format` overrides the
    /// default at creation.
    #[test]
    fn segment_format_default_and_legacy() {
        assert_eq!(DEFAULT_SEGMENT_FORMAT, 3);
        assert_eq!(LEGACY_SEGMENT_FORMAT, 2);
        let new = IndexOptions::from_create(&CreateOptions::default());
        assert_eq!(new.segment_format, Some(DEFAULT_SEGMENT_FORMAT));
        assert_eq!(new.stored_segment_format().unwrap(), 3);
        let two = IndexOptions::from_create(&CreateOptions {
            segment_format: Some(2),
            ..Default::default()
        });
        assert_eq!(two.stored_segment_format().unwrap(), 2);
        // The record as an index created before the option wrote it: no `segment_format`.
        let mut json = serde_json::to_value(&new).unwrap();
        json.as_object_mut().unwrap().remove("segment_format");
        let old: IndexOptions = serde_json::from_value(json).unwrap();
        assert_eq!(old.segment_format, None);
        assert_eq!(old.stored_segment_format().unwrap(), LEGACY_SEGMENT_FORMAT);
    }
}
