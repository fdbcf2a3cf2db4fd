//! What each method stores, chosen at index creation and kept in the index options
//! (`meta/options.methods`, format-spec/rocksdb.md). An index created before methods existed
//! has none of these fields: it reads as "no method data" (serde defaults), so only shingle
//! and exact work on it.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fingerprint::manku::{self, PermutedTables};

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
}

impl Default for SimhashOptions {
    fn default() -> Self {
        SimhashOptions {
            k: manku::DEFAULT_K,
            blocks: manku::DEFAULT_BLOCKS,
            weight: SimhashWeight::Tf,
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
}

impl Default for ImatchOptions {
    fn default() -> Self {
        ImatchOptions {
            filter: ImatchFilter::IdfL(10),
        }
    }
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
            v.push(format!("simhash (k={}, blocks={}{w})", s.k, s.blocks));
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
            v.push(format!("imatch ({})", i.filter));
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

    pub fn imatch(&self) -> Result<ImatchOptions> {
        self.imatch.ok_or_else(|| not_stored("I-Match", "imatch"))
    }

    /// Options from a `--methods` list (shingle and exact need nothing stored) and the
    /// parameters given with it (`None` = default).
    pub fn from_list(
        list: &[super::Method],
        simhash: SimhashOptions,
        dsc: DscOptions,
        imatch: ImatchOptions,
    ) -> Self {
        use super::Method::*;
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
}

impl MethodArgs {
    pub fn resolve(&self) -> Result<Option<MethodOptions>> {
        let params = self.simhash_k.is_some()
            || self.simhash_blocks.is_some()
            || self.minhash.is_some()
            || self.supershingle.is_some()
            || self.b_agree.is_some()
            || self.imatch_filter.is_some()
            || self.simhash_weight.is_some();
        let Some(list) = &self.methods else {
            if params {
                return Err(Error::InvalidArgument(
                    "method parameters need --methods (e.g. --methods simhash,dsc-ss)".into(),
                ));
            }
            return Ok(None);
        };
        let list: Vec<super::Method> = if list.trim().eq_ignore_ascii_case("all") {
            super::Method::ALL.to_vec()
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
            SimhashOptions {
                k: self.simhash_k.unwrap_or(sd.k),
                blocks: self.simhash_blocks.unwrap_or(sd.blocks),
                weight: self.simhash_weight.unwrap_or(sd.weight),
            },
            DscOptions {
                minhash: self.minhash.unwrap_or(dd.minhash),
                supershingle: self.supershingle.unwrap_or(dd.supershingle),
                min_agree: self.b_agree.unwrap_or(dd.min_agree),
                megashingles: list.contains(&super::Method::Megashingle),
            },
            ImatchOptions {
                filter: self
                    .imatch_filter
                    .unwrap_or(ImatchOptions::default().filter),
            },
        );
        o.validate()?;
        Ok(Some(o))
    }
}
