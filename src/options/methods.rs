//! What each method stores, chosen at index creation and kept in the index options
//! (`meta/options.methods`, format-spec/rocksdb.md). An index created before methods existed
//! has none of these fields: it reads as "no method data" (serde defaults), so only shingle
//! and exact work on it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fingerprint::manku::{self, PermutedTables};

/// A near-duplicate method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    Shingle,
    Simhash,
    DscSs,
    Combined,
    Imatch,
    Exact,
    /// Documents sharing a megashingle (= agreeing on >= 2 supershingles), from the stored
    /// MEGASHINGLES table (`method::dsc`).
    Megashingle,
    /// C-similarity of the 384-bit simhashes alone (Henzinger's C), threshold default
    /// 355/384 (`method::dsc`, `method::csim`).
    CSim,
    /// C-similarity (threshold default 355/384) for pairs on different sites, combined
    /// (B-similar and C-similarity >= 355/384) for pairs on the same site (`method::dsc`).
    Henzinger,
}

impl Method {
    pub const ALL: [Method; 9] = [
        Method::Shingle,
        Method::Simhash,
        Method::DscSs,
        Method::Combined,
        Method::Imatch,
        Method::Exact,
        Method::Megashingle,
        Method::CSim,
        Method::Henzinger,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Shingle => "shingle",
            Method::Simhash => "simhash",
            Method::DscSs => "dsc-ss",
            Method::Combined => "combined",
            Method::Imatch => "imatch",
            Method::Exact => "exact",
            Method::Megashingle => "megashingle",
            Method::CSim => "c-sim",
            Method::Henzinger => "henzinger",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Method::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown method {s:?} (expected shingle, simhash, dsc-ss, combined, imatch, exact, megashingle, c-sim or henzinger)"
                ))
            })
    }
}

/// The per-method creation options; `None` = that method's data is not stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash: Option<SimhashOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsc: Option<DscOptions>,
    /// Store the 384-bit simhash of every document (the combined method).
    #[serde(default)]
    pub sim384: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imatch: Option<ImatchOptions>,
}

/// Manku's tables: Hamming distance <= k over `blocks` blocks (C(blocks, k) tables), over
/// simhashes weighted by `weight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimhashOptions {
    pub k: u32,
    pub blocks: u32,
    /// Token weights of the stored simhashes; absent (records written before it existed): tf.
    #[serde(default, skip_serializing_if = "SimhashWeight::is_tf")]
    pub weight: SimhashWeight,
    /// What the simhash is computed over; absent (records written before it existed): words.
    #[serde(default, skip_serializing_if = "SimhashFeatures::is_words")]
    pub features: SimhashFeatures,
    /// Boilerplate filter: features in more than this percentage of the documents of the
    /// first batch are left out of the simhash (format-spec/fingerprints.md §8.2). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boilerplate: Option<u32>,
    /// Candidate verification: a pair within Hamming distance k is reported only when the
    /// resemblance of its stored shingle features reaches this percentage (§8.3). Absent:
    /// no verification (every pair within k is reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<u32>,
}

impl Default for SimhashOptions {
    /// The default of a new index (format-spec/fingerprints.md §8.3): 64-bit simhash over the
    /// distinct word shingles, k = DEFAULT_K over DEFAULT_BLOCKS, candidates verified at
    /// resemblance >= DEFAULT_VERIFY %. Indexes created before store their own options.
    fn default() -> Self {
        SimhashOptions {
            k: DEFAULT_K,
            blocks: DEFAULT_BLOCKS,
            weight: SimhashWeight::Tf,
            features: SimhashFeatures::Shingles,
            boilerplate: None,
            verify: Some(DEFAULT_VERIFY),
        }
    }
}

/// Default Hamming distance of new indexes' simhash tables (Manku's k = 3 is kept for word
/// simhashes; shingle simhashes of pairs at resemblance 0.8 differ in ~10 of 64 bits, so
/// k = 10 finds 0.91 of them on llvm-docs and 0.88 on the rust docs; EVALUATION.md §3).
pub const DEFAULT_K: u32 = 10;
/// Default blocks: C(11, 10) = 11 tables with 5- and 6-bit prefixes.
pub const DEFAULT_BLOCKS: u32 = 11;
/// Default verification threshold (percent resemblance of the stored features).
pub const DEFAULT_VERIFY: u32 = 80;

impl SimhashOptions {
    /// Manku's original setting as stored by indexes created before the shingle default:
    /// word tokens, tf weights, k = 3 over 6 blocks, no verification.
    pub fn words_tf() -> Self {
        SimhashOptions {
            k: manku::DEFAULT_K,
            blocks: manku::DEFAULT_BLOCKS,
            weight: SimhashWeight::Tf,
            features: SimhashFeatures::Words,
            boilerplate: None,
            verify: None,
        }
    }

    /// True when the stored simhash is the catalog's (tf over words, no filter).
    pub fn is_catalog_simhash(&self) -> bool {
        self.features == SimhashFeatures::Words
            && self.weight == SimhashWeight::Tf
            && self.boilerplate.is_none()
    }

    /// The verification threshold, if any.
    pub fn verify_threshold(&self) -> Option<crate::threshold::Threshold> {
        self.verify
            .map(|p| crate::threshold::Threshold::from_ratio(p as u64, 100))
    }

    pub fn validate(&self) -> Result<()> {
        if self.boilerplate.is_some_and(|p| p == 0 || p > 100) {
            return Err(Error::InvalidArgument(format!(
                "simhash boilerplate filter must be a percentage in 1..=100 (got {})",
                self.boilerplate.unwrap_or(0)
            )));
        }
        if self.verify.is_some_and(|p| p > 100) {
            return Err(Error::InvalidArgument(format!(
                "simhash verification threshold must be a percentage in 0..=100 (got {})",
                self.verify.unwrap_or(0)
            )));
        }
        if self.weight == SimhashWeight::Idf && self.features != SimhashFeatures::Words {
            return Err(Error::InvalidArgument(
                "simhash: idf weights apply to word features only (--simhash-features words)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// The features of the stored simhash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimhashFeatures {
    /// Every word occurrence (Charikar/Manku; the catalog's simhash, §8).
    #[default]
    Words,
    /// Every distinct shingle of the index's shingle kind, weight 1 (§8.2).
    Shingles,
}

impl SimhashFeatures {
    pub fn is_words(&self) -> bool {
        *self == SimhashFeatures::Words
    }
}

impl std::str::FromStr for SimhashFeatures {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "words" => Ok(SimhashFeatures::Words),
            "shingles" => Ok(SimhashFeatures::Shingles),
            _ => Err(Error::InvalidArgument(format!(
                "invalid simhash features {s:?} (expected words or shingles)"
            ))),
        }
    }
}

/// How a token counts in the simhash of the SIMHASH tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimhashWeight {
    /// Every occurrence counts 1 (Charikar's simhash over tokens; the catalog's simhash).
    #[default]
    Tf,
    /// Every distinct term counts its idf from the frozen lexicon (src/method/idf_simhash.rs).
    Idf,
}

impl SimhashWeight {
    pub fn is_tf(&self) -> bool {
        *self == SimhashWeight::Tf
    }
}

impl std::str::FromStr for SimhashWeight {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "tf" => Ok(SimhashWeight::Tf),
            "idf" => Ok(SimhashWeight::Idf),
            _ => Err(Error::InvalidArgument(format!(
                "invalid simhash weight {s:?} (expected tf or idf)"
            ))),
        }
    }
}

/// DSC-SS: `minhash` min values in groups of `supershingle`; B-similar when at least
/// `min_agree` supershingles agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DscOptions {
    pub minhash: u32,
    pub supershingle: u32,
    pub min_agree: u32,
    /// Also store the MEGASHINGLES table (Fetterly et al.; the megashingle method). Absent in
    /// records written before it existed: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub megashingles: bool,
}

impl Default for DscOptions {
    /// Henzinger's setting: 84 min values, 6 supershingles of 14, B-similar at 2 agreements.
    fn default() -> Self {
        DscOptions {
            minhash: 84,
            supershingle: 14,
            min_agree: 2,
            megashingles: false,
        }
    }
}

impl DscOptions {
    /// Number of supershingles per document.
    pub fn supershingles(&self) -> u32 {
        self.minhash / self.supershingle.max(1)
    }

    pub fn validate(&self) -> Result<()> {
        let n = self.supershingles();
        if self.supershingle == 0
            || self.minhash > crate::fingerprint::minhash::MAX_PERMUTATIONS
            || n == 0
            || self.min_agree == 0
            || self.min_agree > n
        {
            return Err(Error::InvalidArgument(format!(
                "dsc-ss: need 1 <= supershingle <= minhash <= 4096 and 1 <= min agreements <= \
                 minhash/supershingle (got minhash {}, supershingle {}, agree {})",
                self.minhash, self.supershingle, self.min_agree
            )));
        }
        Ok(())
    }
}

/// I-Match term filter (format-spec/fingerprints.md, §13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ImatchFilter {
    /// `idf-l-P`: keep the lexicon terms whose normalised idf is >= P/100 (drops the most
    /// common terms).
    IdfL(u32),
    /// `doc-l-P`: keep the P% of a document's lexicon terms with the highest idf.
    DocL(u32),
}

impl std::str::FromStr for ImatchFilter {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "invalid I-Match filter {s:?} (expected idf-l-P or doc-l-P, P in 0..=100)"
            ))
        };
        let l = s.to_ascii_lowercase();
        let (kind, p) = if let Some(p) = l.strip_prefix("idf-l-") {
            (0, p)
        } else if let Some(p) = l.strip_prefix("doc-l-") {
            (1, p)
        } else {
            return Err(bad());
        };
        let p: u32 = p.parse().map_err(|_| bad())?;
        if p > 100 {
            return Err(bad());
        }
        Ok(if kind == 0 {
            ImatchFilter::IdfL(p)
        } else {
            ImatchFilter::DocL(p)
        })
    }
}

impl std::fmt::Display for ImatchFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImatchFilter::IdfL(p) => write!(f, "idf-l-{p}"),
            ImatchFilter::DocL(p) => write!(f, "doc-l-{p}"),
        }
    }
}

impl TryFrom<String> for ImatchFilter {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<ImatchFilter> for String {
    fn from(v: ImatchFilter) -> String {
        v.to_string()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImatchOptions {
    pub filter: ImatchFilter,
    /// Signatures per document (Kolcz et al. 2004): the lexicon itself and `lexicons - 1`
    /// randomized copies of it, each missing about `drop` % of its terms
    /// (format-spec/fingerprints.md §13.1). Absent (records written before it existed): 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub lexicons: u32,
    /// Percentage of the lexicon's terms each randomized copy leaves out. Absent: 0 (only
    /// meaningful with lexicons > 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drop: u32,
}

fn one() -> u32 {
    1
}
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Largest number of I-Match lexicons (signatures per document).
pub const MAX_IMATCH_LEXICONS: u32 = 64;
/// Default share of the terms a randomized lexicon leaves out (percent).
pub const DEFAULT_IMATCH_DROP: u32 = 90;

impl Default for ImatchOptions {
    fn default() -> Self {
        ImatchOptions {
            filter: ImatchFilter::IdfL(10),
            lexicons: 1,
            drop: 0,
        }
    }
}

impl ImatchOptions {
    pub fn validate(&self) -> Result<()> {
        if self.lexicons == 0 || self.lexicons > MAX_IMATCH_LEXICONS || self.drop >= 100 {
            return Err(Error::InvalidArgument(format!(
                "I-Match lexicons must be in 1..={MAX_IMATCH_LEXICONS} and the share they drop \
                 in 0..=99 % (got {} lexicons, {} %)",
                self.lexicons, self.drop
            )));
        }
        Ok(())
    }
}

/// Parses `--imatch-lexicons K` or `K:P` (P = percent of the terms each randomized lexicon
/// drops, default [`DEFAULT_IMATCH_DROP`]).
pub fn parse_imatch_lexicons(s: &str) -> Result<(u32, u32)> {
    let bad = || {
        Error::InvalidArgument(format!(
            "invalid I-Match lexicons {s:?} (expected K or K:P, e.g. 10:30)"
        ))
    };
    let (k, p) = match s.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (s, None),
    };
    let k: u32 = k.trim().parse().map_err(|_| bad())?;
    let p: u32 = match p {
        Some(p) => p.trim().parse().map_err(|_| bad())?,
        None if k > 1 => DEFAULT_IMATCH_DROP,
        None => 0,
    };
    let o = ImatchOptions {
        filter: ImatchFilter::IdfL(10),
        lexicons: k,
        drop: p,
    };
    o.validate()?;
    Ok((k, p))
}

fn not_stored(method: &str, flag: &str) -> Error {
    Error::InvalidArgument(format!(
        "this index stores no {method} data (create it with --methods {flag})"
    ))
}

impl MethodOptions {
    /// Every method with its default parameters.
    pub fn all() -> Self {
        MethodOptions {
            simhash: Some(SimhashOptions::default()),
            dsc: Some(DscOptions::default()),
            sim384: true,
            imatch: Some(ImatchOptions::default()),
        }
    }

    /// Default of a new index: simhash tables only (cheap: 20 keys per document).
    pub fn new_index_default() -> Self {
        MethodOptions {
            simhash: Some(SimhashOptions::default()),
            ..Default::default()
        }
    }

    pub fn validate(&self) -> Result<()> {
        if let Some(s) = &self.simhash {
            s.validate()?;
            PermutedTables::new(s.k, s.blocks)?;
            if PermutedTables::new(s.k, s.blocks)?.tables()
                > crate::segment::SIMHASH_MAX_TABLES as usize
            {
                return Err(Error::InvalidArgument(format!(
                    "simhash: k={} blocks={} needs more than {} tables",
                    s.k,
                    s.blocks,
                    crate::segment::SIMHASH_MAX_TABLES
                )));
            }
        }
        if let Some(d) = &self.dsc {
            d.validate()?;
        }
        if let Some(i) = &self.imatch {
            i.validate()?;
        }
        Ok(())
    }

    /// The methods usable on the index with their stored parameters, for `stats`:
    /// shingle and exact always, then each method whose data is stored.
    pub fn describe(&self) -> String {
        let mut v = vec!["shingle".to_string(), "exact".to_string()];
        if let Some(s) = &self.simhash {
            let w = if s.weight.is_tf() {
                ""
            } else {
                ", idf-weighted"
            };
            let f = if s.features.is_words() {
                ""
            } else {
                ", shingles"
            };
            let b = s
                .boilerplate
                .map_or(String::new(), |p| format!(", boilerplate > {p}%"));
            let vf = s
                .verify
                .map_or(String::new(), |p| format!(", verified at {p}%"));
            v.push(format!(
                "simhash (k={}, blocks={}{w}{f}{b}{vf})",
                s.k, s.blocks
            ));
        }
        if let Some(d) = &self.dsc {
            v.push(format!(
                "dsc-ss (minhash {}, supershingle {}, agree {})",
                d.minhash, d.supershingle, d.min_agree
            ));
            if d.megashingles {
                v.push("megashingle".to_string());
            }
        }
        if self.sim384 && self.dsc.is_some() {
            v.push("combined".to_string());
        }
        if self.sim384 {
            v.push("c-sim".to_string());
        }
        if let Some(i) = &self.imatch {
            if i.lexicons > 1 {
                v.push(format!(
                    "imatch ({}, {} lexicons, {}% dropped)",
                    i.filter, i.lexicons, i.drop
                ));
            } else {
                v.push(format!("imatch ({})", i.filter));
            }
        }
        v.join(", ")
    }

    pub fn simhash_tables(&self) -> Result<PermutedTables> {
        let s = self
            .simhash
            .ok_or_else(|| not_stored("simhash", "simhash"))?;
        PermutedTables::new(s.k, s.blocks)
    }

    pub fn dsc(&self) -> Result<DscOptions> {
        self.dsc.ok_or_else(|| not_stored("dsc-ss", "dsc-ss"))
    }

    pub fn require_megashingles(&self) -> Result<DscOptions> {
        match self.dsc {
            Some(d) if d.megashingles => Ok(d),
            _ => Err(not_stored("megashingle", "megashingle")),
        }
    }

    pub fn require_sim384(&self) -> Result<()> {
        if self.sim384 {
            Ok(())
        } else {
            Err(not_stored("384-bit simhash", "combined"))
        }
    }

    /// True when ingest must collect each document's terms and the frozen lexicon
    /// (I-Match, idf-weighted simhash).
    pub fn needs_terms(&self) -> bool {
        self.imatch.is_some() || self.simhash.is_some_and(|s| s.weight == SimhashWeight::Idf)
    }

    /// True when the stored simhash needs the batch's frozen frequent-feature set (the
    /// boilerplate filter), so it is computed at the end of the batch.
    pub fn needs_frequent(&self) -> bool {
        self.simhash.is_some_and(|s| s.boilerplate.is_some())
    }

    pub fn imatch(&self) -> Result<ImatchOptions> {
        self.imatch.ok_or_else(|| not_stored("I-Match", "imatch"))
    }

    /// Options from a `--methods` list (shingle and exact need nothing stored) and the
    /// parameters given with it (`None` = default).
    pub fn from_list(
        list: &[Method],
        simhash: SimhashOptions,
        dsc: DscOptions,
        imatch: ImatchOptions,
    ) -> Self {
        use Method::*;
        let has = |m| list.contains(&m);
        MethodOptions {
            simhash: has(Simhash).then_some(simhash),
            dsc: (has(DscSs) || has(Combined) || has(Megashingle)).then_some(dsc),
            sim384: has(Combined) || has(CSim),
            imatch: has(Imatch).then_some(imatch),
        }
    }
}

/// Creation options as given on a command line: `--methods LIST` (comma-separated method
/// names, or `all`) with its parameters. Nothing given: `None` (the stored options, or the
/// default of a new index). Parameters without `--methods` are refused, so they never
/// silently do nothing.
#[derive(Clone, Debug, Default)]
pub struct MethodArgs {
    pub methods: Option<String>,
    pub simhash_k: Option<u32>,
    pub simhash_blocks: Option<u32>,
    pub minhash: Option<u32>,
    pub supershingle: Option<u32>,
    pub b_agree: Option<u32>,
    pub imatch_filter: Option<ImatchFilter>,
    pub simhash_weight: Option<SimhashWeight>,
    pub simhash_features: Option<SimhashFeatures>,
    /// Percentage (1..=100); 0 or None: no filter.
    pub simhash_boilerplate: Option<u32>,
    /// Percentage (0..=100); `Some(None)`: explicitly no verification.
    pub simhash_verify: Option<Option<u32>>,
    /// (K, drop %).
    pub imatch_lexicons: Option<(u32, u32)>,
}

impl MethodArgs {
    pub fn resolve(&self) -> Result<Option<MethodOptions>> {
        let params = self.simhash_k.is_some()
            || self.simhash_blocks.is_some()
            || self.minhash.is_some()
            || self.supershingle.is_some()
            || self.b_agree.is_some()
            || self.imatch_filter.is_some()
            || self.simhash_weight.is_some()
            || self.simhash_features.is_some()
            || self.simhash_boilerplate.is_some()
            || self.simhash_verify.is_some()
            || self.imatch_lexicons.is_some();
        let Some(list) = &self.methods else {
            if params {
                return Err(Error::InvalidArgument(
                    "method parameters need --methods (e.g. --methods simhash,dsc-ss)".into(),
                ));
            }
            return Ok(None);
        };
        let list: Vec<Method> = if list.trim().eq_ignore_ascii_case("all") {
            Method::ALL.to_vec()
        } else {
            list.split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().parse())
                .collect::<Result<_>>()?
        };
        let sd = SimhashOptions::default();
        let dd = DscOptions::default();
        let o = MethodOptions::from_list(
            &list,
            {
                let weight = self.simhash_weight.unwrap_or(sd.weight);
                // idf weights are defined over words: asking for them alone means words.
                let features = self
                    .simhash_features
                    .unwrap_or(if weight == SimhashWeight::Idf {
                        SimhashFeatures::Words
                    } else {
                        sd.features
                    });
                // Word simhashes keep Manku's k = 3 / 6 blocks unless told otherwise.
                let base = if features.is_words() {
                    SimhashOptions::words_tf()
                } else {
                    sd
                };
                SimhashOptions {
                    k: self.simhash_k.unwrap_or(base.k),
                    blocks: self.simhash_blocks.unwrap_or(base.blocks),
                    weight,
                    features,
                    boilerplate: self.simhash_boilerplate.filter(|&p| p > 0),
                    verify: self.simhash_verify.unwrap_or(base.verify),
                }
            },
            DscOptions {
                minhash: self.minhash.unwrap_or(dd.minhash),
                supershingle: self.supershingle.unwrap_or(dd.supershingle),
                min_agree: self.b_agree.unwrap_or(dd.min_agree),
                megashingles: list.contains(&Method::Megashingle),
            },
            ImatchOptions {
                filter: self
                    .imatch_filter
                    .unwrap_or(ImatchOptions::default().filter),
                lexicons: self.imatch_lexicons.map_or(1, |l| l.0),
                drop: self.imatch_lexicons.map_or(0, |l| l.1),
            },
        );
        o.validate()?;
        Ok(Some(o))
    }
}
