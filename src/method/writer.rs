//! Writes what the methods store, at ingest: per-document data computed on the parallel
//! fingerprinting stage ([`DocExtras`]), collected per batch by [`MethodWriter`], written as
//! extra tables of the batch's segment after the postings, and (I-Match) staged into the
//! batch's publishing catalog write.
//!
//! Memory: per batch document, 12 bytes per supershingle, 52 bytes of 384-bit simhash, and for
//! I-Match the document's unique word hashes (8 bytes each) until the end of the batch; the
//! simhashes 16 bytes each, or nothing when they are spooled ([`MethodWriter::spooled`], as
//! ingest does: written to a run file as they come, each table then sorted within the memory
//! budget).

use crate::build::SegmentBuilder;
use crate::error::{Error, Result};
use crate::fingerprint::{
    self, hash, shingle, simhash, Fingerprint, FingerprintOptions, Sample, ShingleKind,
};
use crate::sort::{DocHash, SortOptions, Spool};
use crate::store::{Catalog, CatalogBatch};

use super::boilerplate::Frequent;
use super::{dsc, imatch, MethodOptions, SimhashFeatures, SimhashOptions, SimhashWeight};

/// What the methods need from one document, computed next to its fingerprint.
#[derive(Clone, Debug, Default)]
pub struct DocExtras {
    pub supers: Vec<u64>,
    pub sim384: Option<[u64; 6]>,
    /// Sorted unique word hashes (I-Match terms).
    pub terms: Vec<u64>,
    /// The simhash the SIMHASH tables store, when it can be computed from the document alone
    /// (None: it needs the batch's frozen statistics, see `sim_features`, or idf weights).
    pub simhash: Option<u64>,
    /// With the boilerplate filter: the simhash's features (word hashes in text order, or
    /// the sorted distinct shingles), filtered and hashed at the end of the batch.
    pub sim_features: Vec<u64>,
}

/// The full (unsampled) shingle set of a text, sorted and unique.
fn full_shingle_set(text: &str, fp: &Fingerprint, fo: &FingerprintOptions) -> Vec<u64> {
    if fo.sample == Sample::All {
        return fp.features.clone();
    }
    let mut set = match fo.shingle {
        ShingleKind::Words(w) => {
            let bytes: Vec<u8> = fingerprint::words(text)
                .flat_map(|w| hash::word_hash(w).to_le_bytes())
                .collect();
            shingle::word_shingles(&bytes, w as usize)
        }
        ShingleKind::Chars(n) => shingle::char_shingles(text, n as usize),
    };
    set.sort_unstable();
    set.dedup();
    set
}

/// The features a simhash of options `s` is computed over (format-spec/fingerprints.md §8.2):
/// word hashes in text order (tf: repeats count) or the distinct shingles.
pub fn simhash_features(
    text: &str,
    fp: &Fingerprint,
    fo: &FingerprintOptions,
    s: &SimhashOptions,
) -> Vec<u64> {
    match s.features {
        SimhashFeatures::Words => fingerprint::words(text).map(hash::word_hash).collect(),
        SimhashFeatures::Shingles => full_shingle_set(text, fp, fo),
    }
}

/// The simhash of features from [`simhash_features`], without the frozen frequent ones.
pub fn simhash_value(features: &[u64], frequent: Option<&Frequent>) -> u64 {
    simhash::simhash_of_set(features, |f| frequent.is_none_or(|fr| !fr.contains(f)))
}

/// The distinct features of each document, for learning the frequent set.
fn distinct(features: &[u64]) -> Vec<u64> {
    let mut v = features.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// The extras of one canonical text for the enabled methods.
pub fn extras(
    text: &str,
    fp: &Fingerprint,
    fo: &FingerprintOptions,
    mo: &MethodOptions,
) -> DocExtras {
    let mut x = DocExtras::default();
    if fp.words == 0 {
        return x;
    }
    if let Some(s) = &mo.simhash {
        if s.weight == SimhashWeight::Idf {
            // computed at the end of the batch from the terms and the frozen lexicon
        } else if s.boilerplate.is_some() {
            x.sim_features = simhash_features(text, fp, fo, s);
        } else if s.features.is_words() {
            x.simhash = Some(fp.simhash);
        } else {
            x.simhash = Some(simhash_value(&simhash_features(text, fp, fo, s), None));
        }
    }
    if let Some(d) = &mo.dsc {
        if fo.sample == Sample::All {
            x.supers = dsc::supershingles(&fp.features, d);
        } else {
            // The features are a sample: min-hash needs the full shingle set.
            x.supers = dsc::supershingles(&full_shingle_set(text, fp, fo), d);
        }
    }
    if mo.sim384 {
        x.sim384 = Some(simhash::simhash384(text));
    }
    if mo.needs_terms() {
        let mut t: Vec<u64> = fingerprint::words(text).map(hash::word_hash).collect();
        t.sort_unstable();
        t.dedup();
        x.terms = t;
    }
    x
}

/// Collects one batch's method data and writes it.
pub struct MethodWriter {
    opts: MethodOptions,
    simhashes: Vec<(u32, u64)>,
    supers: Vec<(u64, u32)>,
    megas: Vec<(u64, u32)>,
    sim384: Vec<(u32, [u64; 6])>,
    terms: imatch::BatchTerms,
    /// Boilerplate filter: (doc, simhash features) waiting for the frozen frequent set.
    sim_features: Vec<(u32, Vec<u64>)>,
    /// The frequent set frozen by this batch (the first), to publish.
    frozen_frequent: Option<Frequent>,
    /// The deferred simhashes have been computed into `simhashes`.
    deferred_done: bool,
    /// `spooled`: the simhashes computed per document go to this run file instead of
    /// `simhashes`, and each table is sorted within these options' budget.
    spool: Option<(Spool<DocHash>, SortOptions)>,
}

impl MethodWriter {
    pub fn new(opts: &MethodOptions) -> Self {
        MethodWriter {
            opts: opts.clone(),
            simhashes: Vec::new(),
            supers: Vec::new(),
            megas: Vec::new(),
            sim384: Vec::new(),
            terms: imatch::BatchTerms::default(),
            sim_features: Vec::new(),
            frozen_frequent: None,
            deferred_done: false,
            spool: None,
        }
    }

    /// Spools the simhashes computed per document (the SIMHASH tables' input) to a run file
    /// under `sort.tmp_dir` as they are added, and sorts each table within `sort.mem_bytes`
    /// when the tables are written: no memory per batch document (ingest). The tables' bytes
    /// are the same.
    pub fn spooled(mut self, sort: SortOptions) -> Self {
        self.spool = Some((Spool::new(sort.tmp_dir.clone()), sort));
        self
    }

    /// Adds document `doc` (ids ascend within a batch). Documents without words are left out
    /// of every method table.
    pub fn add(&mut self, doc: u32, fp: &Fingerprint, x: DocExtras) -> Result<()> {
        if fp.words == 0 {
            return Ok(());
        }
        if let Some(so) = &self.opts.simhash {
            match x.simhash {
                Some(hash) => match self.spool.as_mut() {
                    Some((s, _)) => s.push(DocHash { doc, hash })?,
                    None => self.simhashes.push((doc, hash)),
                },
                None if so.boilerplate.is_some() => self.sim_features.push((doc, x.sim_features)),
                None => {} // idf: computed from the terms at the end of the batch
            }
        }
        if self.opts.dsc.is_some_and(|d| d.megashingles) {
            let m = fingerprint::minhash::megashingles(&x.supers);
            self.megas.extend(m.into_iter().map(|s| (s, doc)));
        }
        self.supers.extend(x.supers.iter().map(|&s| (s, doc)));
        if let Some(s) = x.sim384 {
            self.sim384.push((doc, s));
        }
        if self.opts.needs_terms() {
            self.terms.add(doc, x.terms);
        }
        Ok(())
    }

    /// The I-Match signatures of the documents added with `add`, as the segment would store
    /// them, by document (online adds keep them in the delta). Empty without I-Match.
    pub fn imatch_signatures(&mut self, catalog: &Catalog) -> Result<Vec<(u64, u32)>> {
        match self.opts.imatch {
            Some(im) => self.terms.signatures(catalog, &im),
            None => Ok(Vec::new()),
        }
    }

    /// The simhashes that need the batch's frozen statistics (idf weights, the boilerplate
    /// filter), computed once: freezes the lexicon or the frequent set from this batch when
    /// the index has none. Returns (doc, simhash) of those documents.
    pub fn deferred_simhashes(&mut self, catalog: &Catalog) -> Result<Vec<(u32, u64)>> {
        let mut out = Vec::new();
        if self.deferred_done {
            return Ok(out);
        }
        self.deferred_done = true;
        let Some(so) = self.opts.simhash else {
            return Ok(out);
        };
        if so.weight == SimhashWeight::Idf {
            // idf-weighted simhashes over the (frozen) lexicon; the terms were collected for
            // every document with words, in the same order.
            if let Some(lex) = self.terms.lexicon(catalog)? {
                out = self
                    .terms
                    .docs()
                    .iter()
                    .map(|(d, t)| (*d, super::idf_simhash::simhash(&lex, t)))
                    .collect();
            }
        } else if let Some(p) = so.boilerplate {
            let fr = match Frequent::load(catalog)? {
                Some(f) => f,
                None if self.sim_features.is_empty() => return Ok(out),
                None => {
                    let sets: Vec<Vec<u64>> =
                        self.sim_features.iter().map(|(_, f)| distinct(f)).collect();
                    let f = Frequent::learn(sets.iter().map(|s| s.as_slice()), p);
                    self.frozen_frequent = Some(f.clone());
                    f
                }
            };
            out = self
                .sim_features
                .iter()
                .map(|(d, f)| (*d, simhash_value(f, Some(&fr))))
                .collect();
        }
        self.simhashes.extend(out.iter().copied());
        Ok(out)
    }

    /// Writes the enabled methods' tables into the batch's segment.
    pub fn write_tables(&mut self, w: &mut SegmentBuilder, catalog: &Catalog) -> Result<()> {
        self.write_tables_over(w, Some(catalog))
    }

    /// [`MethodWriter::write_tables`] for a segment written outside any index (a staged
    /// segment, `lifecycle::stage`): the same tables, for methods that need nothing from the
    /// catalog. I-Match, idf-weighted simhashes and the simhash boilerplate filter need the
    /// index's frozen lexicon or frequent set: an error.
    pub fn write_tables_standalone(&mut self, w: &mut SegmentBuilder) -> Result<()> {
        self.write_tables_over(w, None)
    }

    fn write_tables_over(
        &mut self,
        w: &mut SegmentBuilder,
        catalog: Option<&Catalog>,
    ) -> Result<()> {
        let catalog = || {
            catalog.ok_or_else(|| {
                Error::InvalidArgument(
                    "I-Match, idf-weighted simhash and the simhash boilerplate filter need the \
                     index's frozen lexicon or frequent set: they cannot be written outside an \
                     index"
                        .into(),
                )
            })
        };
        if self
            .opts
            .simhash
            .is_some_and(|s| s.weight == SimhashWeight::Idf || s.boilerplate.is_some())
        {
            self.deferred_simhashes(catalog()?)?;
        }
        if self.opts.simhash.is_some() {
            let tables = self.opts.simhash_tables()?;
            match self.spool.take() {
                // The deferred simhashes (idf, boilerplate) are never spooled: a batch has
                // either kind only.
                Some((spool, sort)) if !spool.is_empty() => {
                    debug_assert!(self.simhashes.is_empty());
                    w.simhash_tables_spooled(&tables, &spool.finish()?, &sort)?;
                }
                _ => w.simhash_tables(&tables, &self.simhashes)?,
            }
        }
        if self.opts.dsc.is_some() {
            self.supers.sort_unstable();
            w.postings_table(dsc::SUPERSHINGLES, &self.supers)?;
        }
        if self.opts.dsc.is_some_and(|d| d.megashingles) {
            self.megas.sort_unstable();
            w.postings_table(dsc::MEGASHINGLES, &self.megas)?;
        }
        if self.opts.sim384 {
            w.sim384_table(&self.sim384)?;
        }
        if let Some(im) = self.opts.imatch {
            let sigs = self.terms.signatures(catalog()?, &im)?;
            w.postings_table(imatch::IMATCH, &sigs)?;
        }
        // Written: only what `stage` needs stays (the I-Match terms, the frozen frequent set)
        // while the batch is matched and published.
        self.simhashes = Vec::new();
        self.supers = Vec::new();
        self.megas = Vec::new();
        self.sim384 = Vec::new();
        self.sim_features = Vec::new();
        Ok(())
    }

    /// Stages the catalog part (I-Match statistics) into the publishing write.
    pub fn stage(&self, catalog: &Catalog, wb: &mut CatalogBatch<'_>) -> Result<()> {
        if self.opts.needs_terms() {
            self.terms.stage(catalog, wb)?;
        }
        if let Some(f) = &self.frozen_frequent {
            f.stage(wb);
        }
        Ok(())
    }
}
