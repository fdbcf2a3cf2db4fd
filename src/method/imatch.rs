//! I-Match (Chowdhury, Frieder, Grossman, McCabe 2002): one signature per document, SHA1 over
//! its sorted unique terms that pass an idf filter; documents with equal signatures form one
//! cluster, so every document is in exactly one cluster.
//!
//! Statistics (format-spec/rocksdb.md, `imatch/...` keys of `meta`):
//! - `imatch/df/<term>`: document frequency of every term over all batches ever ingested,
//!   updated in each batch's publishing write, and `imatch/docs`: the documents counted;
//! - `imatch/lex/<term>` and `imatch/lexicon`: the **lexicon**, the df table frozen when the
//!   first batch was ingested (epoch 1), with its document count.
//!
//! Signatures are computed against the frozen lexicon only, so they do not drift as the
//! running statistics change: a document's signature depends on its own text and the epoch's
//! lexicon, and two near-identical documents ingested months apart still meet. Terms unknown
//! to the lexicon are dropped (as in the paper, whose lexicon comes from a reference
//! collection). Re-freezing (a new epoch from `imatch/df`) would recompute every signature,
//! which belongs with segment compaction (not implemented yet; the running df is kept for it).
//!
//! Terms are word hashes (`hash::word_hash`); the signature is the first 8 bytes (big-endian)
//! of SHA1 over the kept hashes, ascending, 8 bytes LE each. A document none of whose terms
//! is kept gets the signature of all its terms (it then only matches its exact term set).

use std::collections::{BTreeMap, HashMap};

use sha1::{Digest, Sha1};

use crate::error::{Error, Result};
use crate::store::{Catalog, CatalogBatch};
use crate::view::View;

use super::{table_postings, ImatchFilter, ImatchOptions, MethodPair};
use crate::fingerprint::hash::{mix64, splitmix64_nth, SEED_IMATCH_LEXICON};

pub use crate::segment::IMATCH;

const DF_PREFIX: &[u8] = b"imatch/df/";
const LEX_PREFIX: &[u8] = b"imatch/lex/";
const DOCS_KEY: &[u8] = b"imatch/docs";
const LEXICON_KEY: &[u8] = b"imatch/lexicon";

/// The frozen lexicon of an epoch.
#[derive(Clone, Debug, Default)]
pub struct Lexicon {
    pub epoch: u32,
    /// Documents the df values were counted over.
    pub docs: u64,
    pub df: HashMap<u64, u32>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct LexiconRecord {
    epoch: u32,
    docs: u64,
    terms: u64,
    /// "reference" when frozen from `--imatch-lexicon`; absent: from the first batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
}

/// Stages a frozen lexicon (its `imatch/lex/` entries and `imatch/lexicon` record).
pub(crate) fn stage_lexicon(l: &Lexicon, source: &str, wb: &mut CatalogBatch<'_>) {
    for (&t, &d) in &l.df {
        wb.put_meta_raw(&key(LEX_PREFIX, t), &d.to_le_bytes());
    }
    wb.put_meta_json(
        LEXICON_KEY,
        &LexiconRecord {
            epoch: l.epoch,
            docs: l.docs,
            terms: l.df.len() as u64,
            source: (source != "batch").then(|| source.to_string()),
        },
    );
}

fn key(prefix: &[u8], term: u64) -> Vec<u8> {
    [prefix, &term.to_be_bytes()].concat()
}

fn parse_entry(prefix: &[u8], k: &[u8], v: &[u8]) -> Result<(u64, u32)> {
    let bad = || Error::CorruptEntry {
        what: String::from_utf8_lossy(k).into_owned(),
        reason: "bad I-Match statistics entry".into(),
    };
    let t: [u8; 8] = k[prefix.len()..].try_into().map_err(|_| bad())?;
    let d: [u8; 4] = v.try_into().map_err(|_| bad())?;
    Ok((u64::from_be_bytes(t), u32::from_le_bytes(d)))
}

impl Lexicon {
    /// The frozen lexicon, if a batch has frozen one.
    pub fn load(catalog: &Catalog) -> Result<Option<Lexicon>> {
        let Some(rec) = catalog.meta_json::<LexiconRecord>(LEXICON_KEY)? else {
            return Ok(None);
        };
        let mut df = HashMap::with_capacity(rec.terms as usize);
        for item in catalog.meta_prefix(LEX_PREFIX) {
            let (k, v) = item?;
            let (t, d) = parse_entry(LEX_PREFIX, &k, &v)?;
            df.insert(t, d);
        }
        Ok(Some(Lexicon {
            epoch: rec.epoch,
            docs: rec.docs,
            df,
        }))
    }

    /// Normalised idf in [0, 1]: ln(N / df) / ln(N); None for a term outside the lexicon.
    pub fn nidf(&self, term: u64) -> Option<f64> {
        let df = *self.df.get(&term)? as f64;
        let n = self.docs as f64;
        if n <= 1.0 {
            return Some(0.0);
        }
        Some(((n / df).ln() / n.ln()).clamp(0.0, 1.0))
    }

    /// The terms of a document (sorted unique word hashes) that `filter` keeps.
    pub fn keep(&self, terms: &[u64], filter: ImatchFilter) -> Vec<u64> {
        let known: Vec<(u64, f64)> = terms
            .iter()
            .filter_map(|&t| self.nidf(t).map(|x| (t, x)))
            .collect();
        let mut kept: Vec<u64> = match filter {
            ImatchFilter::IdfL(p) => {
                let floor = p as f64 / 100.0;
                known.iter().filter(|e| e.1 >= floor).map(|e| e.0).collect()
            }
            ImatchFilter::DocL(p) => {
                let mut by = known.clone();
                // Highest idf first; ties by term so the choice is deterministic.
                by.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                let n = (by.len() * p as usize).div_ceil(100);
                by.into_iter().take(n).map(|e| e.0).collect()
            }
        };
        kept.sort_unstable();
        kept
    }

    /// The I-Match signature of a document.
    pub fn signature(&self, terms: &[u64], filter: ImatchFilter) -> u64 {
        let kept = self.keep(terms, filter);
        signature_of(if kept.is_empty() { terms } else { &kept })
    }

    /// The document's signatures under the lexicon and its `lexicons - 1` randomized copies
    /// (Kolcz et al. 2004; format-spec/fingerprints.md §13.1): signature 0 is
    /// [`Self::signature`]; signature j >= 1 is computed the same way over the terms of
    /// randomized lexicon j (the lexicon without the terms t with
    /// mix64(t ^ seed_j) mod 100 < drop), salted with j.
    pub fn signatures(&self, terms: &[u64], o: &ImatchOptions) -> Vec<u64> {
        let mut out = vec![self.signature(terms, o.filter)];
        for j in 1..o.lexicons.max(1) {
            let seed = splitmix64_nth(SEED_IMATCH_LEXICON, j as u64);
            let mine: Vec<u64> = terms
                .iter()
                .copied()
                .filter(|&t| in_random_lexicon(t, seed, o.drop))
                .collect();
            let kept = self.keep(&mine, o.filter);
            out.push(salted_signature_of(
                j,
                if kept.is_empty() { terms } else { &kept },
            ));
        }
        out
    }
}

/// True when term `t` is in the randomized lexicon of seed `seed` dropping `drop` %.
pub fn in_random_lexicon(t: u64, seed: u64, drop: u32) -> bool {
    mix64(t ^ seed) % 100 >= drop as u64
}

/// Signature j >= 1: the first 8 bytes (big-endian) of SHA1 over LE(j) then the terms.
pub fn salted_signature_of(j: u32, sorted_terms: &[u64]) -> u64 {
    let mut h = Sha1::new();
    h.update((j as u64).to_le_bytes());
    for t in sorted_terms {
        h.update(t.to_le_bytes());
    }
    let d = h.finalize();
    u64::from_be_bytes(d[..8].try_into().expect("20-byte digest"))
}

/// First 8 bytes (big-endian) of SHA1 over the terms, ascending, 8 bytes LE each.
pub fn signature_of(sorted_terms: &[u64]) -> u64 {
    let mut h = Sha1::new();
    for t in sorted_terms {
        h.update(t.to_le_bytes());
    }
    let d = h.finalize();
    // SHA1 digests are 20 bytes.
    u64::from_be_bytes(d[..8].try_into().expect("20-byte digest"))
}

/// One batch's documents and their term sets, turned into signatures at the end of the batch.
#[derive(Default)]
pub struct BatchTerms {
    docs: Vec<(u32, Vec<u64>)>,
    df: BTreeMap<u64, u32>,
    /// The lexicon frozen by this batch (the first one), to publish.
    frozen: Option<Lexicon>,
}

impl BatchTerms {
    pub fn add(&mut self, doc: u32, terms: Vec<u64>) {
        for &t in &terms {
            *self.df.entry(t).or_insert(0) += 1;
        }
        self.docs.push((doc, terms));
    }

    /// The lexicon this batch's signatures use: the stored one, or one frozen from this
    /// batch when the index has none (None for an empty batch, which must not freeze an empty
    /// lexicon).
    pub fn lexicon(&mut self, catalog: &Catalog) -> Result<Option<Lexicon>> {
        if let Some(l) = &self.frozen {
            return Ok(Some(l.clone()));
        }
        if let Some(l) = Lexicon::load(catalog)? {
            return Ok(Some(l));
        }
        if self.docs.is_empty() {
            return Ok(None);
        }
        let l = Lexicon {
            epoch: 1,
            docs: self.docs.len() as u64,
            df: self.df.iter().map(|(&t, &d)| (t, d)).collect(),
        };
        self.frozen = Some(l.clone());
        Ok(Some(l))
    }

    /// The batch's documents and their sorted unique terms.
    pub fn docs(&self) -> &[(u32, Vec<u64>)] {
        &self.docs
    }

    /// (signature, doc) of every document of the batch (one per lexicon), sorted; freezes
    /// the lexicon from this batch when the index has none yet.
    pub fn signatures(&mut self, catalog: &Catalog, o: &ImatchOptions) -> Result<Vec<(u64, u32)>> {
        let Some(lex) = self.lexicon(catalog)? else {
            return Ok(Vec::new());
        };
        let mut v: Vec<(u64, u32)> = self
            .docs
            .iter()
            .flat_map(|(d, terms)| lex.signatures(terms, o).into_iter().map(|s| (s, *d)))
            .collect();
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }

    /// Stages the running df update (and a newly frozen lexicon) in the publishing write.
    pub fn stage(&self, catalog: &Catalog, wb: &mut CatalogBatch<'_>) -> Result<()> {
        for (&t, &d) in &self.df {
            let k = key(DF_PREFIX, t);
            let old = match catalog.meta_raw(&k)? {
                Some(v) => parse_entry(DF_PREFIX, &k, &v)?.1,
                None => 0,
            };
            wb.put_meta_raw(&k, &old.saturating_add(d).to_le_bytes());
        }
        let docs = match catalog.meta_raw(DOCS_KEY)? {
            Some(v) => v.as_slice().try_into().map(u64::from_le_bytes).unwrap_or(0),
            None => 0,
        };
        wb.put_meta_raw(DOCS_KEY, &(docs + self.docs.len() as u64).to_le_bytes());
        if let Some(l) = &self.frozen {
            stage_lexicon(l, "batch", wb);
        }
        Ok(())
    }
}

/// Live documents by signature (the I-Match clusters, singletons included).
fn classes(view: &View) -> Result<Vec<Vec<u32>>> {
    let entries = table_postings(view, IMATCH)?;
    let mut out = Vec::new();
    let mut start = 0;
    while start < entries.len() {
        let k = entries[start].0;
        let end = start + entries[start..].iter().take_while(|e| e.0 == k).count();
        out.push(entries[start..end].iter().map(|e| e.1).collect());
        start = end;
    }
    Ok(out)
}

/// Clusters of two or more documents. With one lexicon every document is in exactly one
/// signature class; with several, the clusters are the connected components of "some
/// signature agrees" (a document may share different signatures with different documents).
pub fn clusters(view: &View) -> Result<Vec<Vec<u32>>> {
    let classes = classes(view)?;
    if classes.iter().all(|g| g.len() < 2) {
        return Ok(Vec::new());
    }
    let mut c: Vec<Vec<u32>> = crate::cluster::components(
        classes
            .iter()
            .flat_map(|g| g.windows(2).map(|w| (w[0], w[1]))),
    );
    for g in &mut c {
        g.sort_unstable();
    }
    c.sort_unstable();
    Ok(c)
}

/// Every pair of documents with a signature in common.
pub fn pairs(view: &View) -> Result<Vec<MethodPair>> {
    let mut out = Vec::new();
    for g in classes(view)? {
        for (i, &a) in g.iter().enumerate() {
            for &b in &g[i + 1..] {
                if a != b {
                    out.push(MethodPair::new(a, b, 1.0));
                }
            }
        }
    }
    out.sort_unstable_by_key(|p| (p.a, p.b));
    out.dedup_by_key(|p| (p.a, p.b));
    Ok(out)
}

/// Every live document's signature class, for tests: (signature, docs).
pub fn signature_classes(view: &View) -> Result<Vec<Vec<u32>>> {
    classes(view)
}
