//! Writes what the methods store, at ingest: per-document data computed on the parallel
//! fingerprinting stage ([`DocExtras`]), collected per batch by [`MethodWriter`], written as
//! extra tables of the batch's segment after the postings, and (I-Match) staged into the
//! batch's publishing catalog write.
//!
//! Memory: per batch document, 12 bytes per simhash table entry computed one table at a time,
//! 12 bytes per supershingle, 52 bytes of 384-bit simhash, and for I-Match the document's
//! unique word hashes (8 bytes each) until the end of the batch.

use crate::error::{Error, Result};
use crate::fingerprint::{
    self, hash, shingle, simhash, Fingerprint, FingerprintOptions, Sample, ShingleKind,
};
use crate::segment::{self, simhash_table, SegmentWriter};
use crate::store::{Catalog, CatalogBatch};

use super::{dsc, imatch, simhash as msim, MethodOptions, SimhashWeight};

/// What the methods need from one document, computed next to its fingerprint.
#[derive(Clone, Debug, Default)]
pub struct DocExtras {
    pub supers: Vec<u64>,
    pub sim384: Option<[u64; 6]>,
    /// Sorted unique word hashes (I-Match terms).
    pub terms: Vec<u64>,
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
    if let Some(d) = &mo.dsc {
        if fo.sample == Sample::All {
            x.supers = dsc::supershingles(&fp.features, d);
        } else {
            // The features are a sample: min-hash needs the full shingle set.
            let set = match fo.shingle {
                ShingleKind::Words(w) => {
                    let bytes: Vec<u8> = fingerprint::words(text)
                        .flat_map(|w| hash::word_hash(w).to_le_bytes())
                        .collect();
                    shingle::word_shingles(&bytes, w as usize)
                }
                ShingleKind::Chars(n) => shingle::char_shingles(text, n as usize),
            };
            x.supers = dsc::supershingles(&set, d);
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
    /// I-Match signatures computed already (delta documents), written instead of `terms`'.
    stored_sigs: Option<Vec<(u64, u32)>>,
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
            stored_sigs: None,
        }
    }

    /// Adds document `doc` (ids ascend within a batch). Documents without words are left out
    /// of every method table.
    pub fn add(&mut self, doc: u32, fp: &Fingerprint, x: DocExtras) {
        if fp.words == 0 {
            return;
        }
        if self.opts.simhash.is_some() {
            self.simhashes.push((doc, fp.simhash));
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
    }

    /// Adds a delta document (`store::delta`): its method data was computed when it was added.
    pub fn add_stored(&mut self, doc: u32, d: &crate::store::delta::DeltaDoc) {
        if !d.has_words {
            return;
        }
        if self.opts.simhash.is_some() {
            self.simhashes.push((doc, d.simhash));
        }
        self.supers.extend(d.supers.iter().map(|&s| (s, doc)));
        if let Some(s) = d.sim384 {
            self.sim384.push((doc, s));
        }
        if self.opts.imatch.is_some() {
            let sigs = self.stored_sigs.get_or_insert_with(Vec::new);
            sigs.extend(d.imatch.iter().map(|&s| (s, doc)));
        }
    }

    /// The I-Match signatures of the documents added with `add`, as the segment would store
    /// them, by document (online adds keep them in the delta). Empty without I-Match.
    pub fn imatch_signatures(&mut self, catalog: &Catalog) -> Result<Vec<(u64, u32)>> {
        match self.opts.imatch {
            Some(im) => self.terms.signatures(catalog, im.filter),
            None => Ok(Vec::new()),
        }
    }

    /// Writes the enabled methods' tables into the batch's segment.
    pub fn write_tables(&mut self, w: &mut SegmentWriter, catalog: &Catalog) -> Result<()> {
        self.write_tables_over(w, Some(catalog))
    }

    /// [`MethodWriter::write_tables`] for a segment written outside any index (a staged
    /// segment, `lifecycle::stage`): the same tables, for methods that need nothing from the
    /// catalog. I-Match and idf-weighted simhashes need the index's frozen lexicon: an error.
    pub fn write_tables_standalone(&mut self, w: &mut SegmentWriter) -> Result<()> {
        self.write_tables_over(w, None)
    }

    fn write_tables_over(
        &mut self,
        w: &mut SegmentWriter,
        catalog: Option<&Catalog>,
    ) -> Result<()> {
        let catalog = || {
            catalog.ok_or_else(|| {
                Error::InvalidArgument(
                    "I-Match and idf-weighted simhash tables need the index's frozen lexicon: \
                     they cannot be written outside an index"
                        .into(),
                )
            })
        };
        if self
            .opts
            .simhash
            .is_some_and(|s| s.weight == SimhashWeight::Idf)
        {
            // Replace the tf simhashes by idf-weighted ones over the (frozen) lexicon; the
            // terms were collected for every document with words, in the same order.
            if let Some(lex) = self.terms.lexicon(catalog()?)? {
                self.simhashes = self
                    .terms
                    .docs()
                    .iter()
                    .map(|(d, t)| (*d, super::idf_simhash::simhash(&lex, t)))
                    .collect();
            }
        }
        if self.opts.simhash.is_some() {
            let tables = self.opts.simhash_tables()?;
            for t in 0..tables.tables() {
                let entries = msim::table_entries(&tables, t, &self.simhashes);
                write_postings(w, simhash_table(t as u32), &entries)?;
            }
        }
        if self.opts.dsc.is_some() {
            self.supers.sort_unstable();
            write_postings(w, dsc::SUPERSHINGLES, &self.supers)?;
        }
        if self.opts.dsc.is_some_and(|d| d.megashingles) {
            self.megas.sort_unstable();
            write_postings(w, dsc::MEGASHINGLES, &self.megas)?;
        }
        if self.opts.sim384 {
            w.begin_table(dsc::SIM384)?;
            for (d, s) in &self.sim384 {
                w.add(*d as u64, &dsc::encode_sim384(s))?;
            }
            w.end_table()?;
        }
        if let Some(im) = self.opts.imatch {
            let sigs = match self.stored_sigs.take() {
                Some(mut s) => {
                    s.sort_unstable();
                    s
                }
                None => self.terms.signatures(catalog()?, im.filter)?,
            };
            write_postings(w, imatch::IMATCH, &sigs)?;
        }
        Ok(())
    }

    /// Stages the catalog part (I-Match statistics) into the publishing write.
    pub fn stage(&self, catalog: &Catalog, wb: &mut CatalogBatch<'_>) -> Result<()> {
        if self.opts.needs_terms() {
            self.terms.stage(catalog, wb)?;
        }
        Ok(())
    }
}

/// One table of posting lists from sorted (key, doc) entries.
fn write_postings(w: &mut SegmentWriter, table: u32, entries: &[(u64, u32)]) -> Result<()> {
    w.begin_table(table)?;
    let mut buf = Vec::new();
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
        buf.clear();
        segment::encode_postings(&ids, &mut buf);
        w.add(k, &buf)?;
    }
    w.end_table()
}
