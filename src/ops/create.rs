//! `CreateSpec`: an index's creation options as loose values (strings and numbers, as the CLI,
//! Python keywords or a JSON request give them), checked and resolved in one place.

use crate::canonicalize::Extract;
use crate::error::{Error, Result};
use crate::fingerprint::adaptive::{with_groups, SizeGroups};
use crate::fingerprint::{FingerprintOptions, Sample, ShingleKind};
use crate::method::{ImatchFilter, MethodArgs, SimhashFeatures, SimhashWeight};

/// `none` | `off` (no verification) or a threshold in whole percent (`0.8`, `0.85`).
fn parse_verify(s: &str) -> Result<Option<u32>> {
    let l = s.trim().to_ascii_lowercase();
    if l == "none" || l == "off" {
        return Ok(None);
    }
    let t: Threshold = l
        .parse()
        .map_err(|e| Error::InvalidArgument(format!("simhash verification: {e}")))?;
    let p = t.as_f64() * 100.0;
    if (p - p.round()).abs() > 1e-9 {
        return Err(Error::InvalidArgument(format!(
            "simhash verification threshold {s:?} must be a whole percentage (e.g. 0.8)"
        )));
    }
    Ok(Some(p.round() as u32))
}
use crate::options::CreateOptions;
use crate::threshold::Threshold;

/// Creation options as given; `None` = the stored value, or the default for a new index.
#[derive(Clone, Debug, Default)]
pub struct CreateSpec {
    /// Shingles of W contiguous words (default 5); excludes `shingle_chars`.
    pub shingle_words: Option<u32>,
    /// The N-character shingles started at every word.
    pub shingle_chars: Option<u32>,
    /// `all | mod:M | minhash:K | bottomk:K | adaptive[:GROUPS]`.
    pub sample: Option<String>,
    /// With `adaptive`: size groups and their moduli, e.g. `0-300:1,300-1000:4,1000-:16`.
    pub size_groups: Option<String>,
    /// Resemblance threshold of the clusters kept at ingest (default 0.8).
    pub cluster_threshold: Option<Threshold>,
    /// Methods whose data is stored: a comma list or `all`.
    pub methods: Option<String>,
    pub simhash_k: Option<u32>,
    pub simhash_blocks: Option<u32>,
    pub minhash: Option<u32>,
    pub supershingle: Option<u32>,
    pub b_agree: Option<u32>,
    /// `idf-l-P | doc-l-P`.
    pub imatch_filter: Option<String>,
    /// `tf | idf`.
    pub simhash_weight: Option<String>,
    /// `words | shingles`.
    pub simhash_features: Option<String>,
    /// Boilerplate filter: features in more than P % of the first batch's documents are left
    /// out of the simhash (0: none).
    pub simhash_boilerplate: Option<u32>,
    /// Candidate verification threshold (`0.8`) or `none`.
    pub simhash_verify: Option<String>,
    /// I-Match lexicons `K` or `K:P` (Kolcz et al.).
    pub imatch_lexicons: Option<String>,
    /// Commonality limit (at least 1).
    pub max_df: Option<u32>,
    /// Site rule for keys that are paths: `path:N` (default `path:1`).
    pub site: Option<String>,
    /// Which text of an HTML document is canonical: `body` (default) or `main`.
    pub extract: Option<String>,
    /// Segment format version every writer of the index writes: 2 or 3 (default
    /// [`crate::options::DEFAULT_SEGMENT_FORMAT`]).
    pub segment_format: Option<u32>,
}

impl CreateSpec {
    /// Checks every value and builds the library's [`CreateOptions`]; errors name the option.
    pub fn resolve(&self) -> Result<CreateOptions> {
        let shingle = match (self.shingle_words, self.shingle_chars) {
            (Some(_), Some(_)) => {
                return Err(Error::InvalidArgument(
                    "shingle_words and shingle_chars exclude each other".into(),
                ))
            }
            (Some(w), None) => Some(ShingleKind::Words(w)),
            (None, Some(n)) => Some(ShingleKind::Chars(n)),
            (None, None) => None,
        };
        if let Some(s) = &shingle {
            s.validate()?;
        }
        let sample: Option<Sample> = self.sample.as_deref().map(str::parse).transpose()?;
        if let Some(s) = &sample {
            s.validate()?;
        }
        let groups: Option<SizeGroups> = self.size_groups.as_deref().map(str::parse).transpose()?;
        let sample = with_groups(sample, groups)?;
        if self.max_df == Some(0) {
            return Err(Error::InvalidArgument(
                "max_df must be at least 1 (leave it out for no limit)".into(),
            ));
        }
        if let Some(f) = self.segment_format {
            if !crate::options::SEGMENT_FORMATS.contains(&f) {
                return Err(Error::InvalidArgument(format!(
                    "segment_format {f}: an index is created with segment format 2 or 3"
                )));
            }
        }
        let imatch_filter: Option<ImatchFilter> =
            self.imatch_filter.as_deref().map(str::parse).transpose()?;
        let simhash_weight: Option<SimhashWeight> =
            self.simhash_weight.as_deref().map(str::parse).transpose()?;
        let simhash_features: Option<SimhashFeatures> = self
            .simhash_features
            .as_deref()
            .map(str::parse)
            .transpose()?;
        let simhash_verify = self
            .simhash_verify
            .as_deref()
            .map(parse_verify)
            .transpose()?;
        let imatch_lexicons = self
            .imatch_lexicons
            .as_deref()
            .map(crate::options::methods::parse_imatch_lexicons)
            .transpose()?;
        Ok(CreateOptions {
            shingle,
            sample,
            cluster_threshold: self.cluster_threshold,
            methods: MethodArgs {
                methods: self.methods.clone(),
                simhash_k: self.simhash_k,
                simhash_blocks: self.simhash_blocks,
                minhash: self.minhash,
                supershingle: self.supershingle,
                b_agree: self.b_agree,
                imatch_filter,
                simhash_weight,
                simhash_features,
                simhash_boilerplate: self.simhash_boilerplate,
                simhash_verify,
                imatch_lexicons,
            }
            .resolve()?,
            max_df: self.max_df,
            site: self.site.as_deref().map(str::parse).transpose()?,
            extract: self.extract()?,
            segment_format: self.segment_format,
        })
    }

    fn extract(&self) -> Result<Option<Extract>> {
        self.extract
            .as_deref()
            .map(|s| {
                s.parse()
                    .map_err(|e: String| Error::InvalidArgument(format!("extract: {e}")))
            })
            .transpose()
    }

    /// The fingerprint options these values give, the library's defaults for the rest: for
    /// fingerprints computed outside an index (Python's `fingerprint`, the Spark job).
    pub fn fingerprint_options(&self) -> Result<FingerprintOptions> {
        let c = self.resolve()?;
        let d = FingerprintOptions::default();
        Ok(FingerprintOptions {
            shingle: c.shingle.unwrap_or(d.shingle),
            sample: c.sample.unwrap_or(d.sample),
            extract: c.extract.unwrap_or(d.extract),
        })
    }
}
