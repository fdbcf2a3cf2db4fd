//! Single-document queries by method: the indexed documents a method reports as
//! near-duplicates of a document that is not added.

use serde::Serialize;

use crate::canonicalize::{canonicalize_with, DocFormat};
use crate::error::{Error, Result};
use crate::fingerprint::fingerprint;
use crate::index::Index;
use crate::threshold::Threshold;

use super::{dsc, exact, imatch, simhash, writer, Method, DEFAULT_COMBINED_THRESHOLD};

/// One hit of a method query; `similarity` as in [`super::MethodPair`].
#[derive(Clone, Debug, Serialize)]
pub struct MethodHit {
    pub key: String,
    pub doc: u32,
    pub similarity: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hamming: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agree: Option<u32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MethodAnswer {
    pub input: String,
    pub method: Method,
    pub words: u32,
    pub hits: Vec<MethodHit>,
}

impl Index {
    /// Near-duplicates of one document by `method` (not shingle: see `query_document`), best
    /// first. `threshold` as for [`super::pairs`].
    pub fn query_method(
        &self,
        name: &str,
        bytes: &[u8],
        format: DocFormat,
        method: Method,
        threshold: Option<Threshold>,
        top: usize,
    ) -> Result<MethodAnswer> {
        let fo = self.options().fingerprint()?;
        let canon =
            canonicalize_with(bytes, format, None, fo.extract).map_err(|why| Error::Document {
                key: name.to_owned(),
                reason: why.to_string(),
            })?;
        let mo = &self.options().methods;
        let fp = fingerprint(&canon.text, &fo);
        let x = writer::extras(&canon.text, &fp, &fo, mo);
        let view = self.view();
        let hit = |doc: u32, similarity: f64| MethodHit {
            key: String::new(),
            doc,
            similarity,
            hamming: None,
            agree: None,
        };
        let mut hits: Vec<MethodHit> = Vec::new();
        if fp.words > 0 {
            match method {
                Method::Shingle => {
                    return Err(Error::InvalidArgument(
                        "query_method: use query_document for shingle".into(),
                    ))
                }
                Method::Simhash => {
                    let tables = mo.simhash_tables()?;
                    let so = mo.simhash.unwrap_or_default();
                    // The stored simhashes' definition: idf weights use the lexicon they were
                    // computed with, the boilerplate filter its frozen set (none yet: the
                    // index is empty and nothing can be found).
                    let q = if so.weight == super::SimhashWeight::Idf {
                        imatch::Lexicon::load(self.catalog())?
                            .map(|lex| super::idf_simhash::simhash(&lex, &x.terms))
                    } else if so.boilerplate.is_some() {
                        super::boilerplate::Frequent::load(self.catalog())?.map(|fr| {
                            let f = writer::simhash_features(&canon.text, &fp, &fo, &so);
                            writer::simhash_value(&f, Some(&fr))
                        })
                    } else {
                        x.simhash
                    };
                    let found = match q {
                        Some(q) => simhash::query(view, &tables, q)?,
                        None => Vec::new(),
                    };
                    let verify = so.verify_threshold().map(|threshold| simhash::Verify {
                        sample: fo.sample,
                        threshold,
                    });
                    let mut feats = Vec::new();
                    for (d, h) in found {
                        let mut s = simhash::similarity(h);
                        if let Some(v) = &verify {
                            if !view.features_into(d, &mut feats)? {
                                continue;
                            }
                            match v.check(&fp.features, &feats) {
                                Some(r) => s = r,
                                None => continue,
                            }
                        }
                        if threshold.is_none_or(|t| s >= t.as_f64()) {
                            hits.push(MethodHit {
                                hamming: Some(h),
                                ..hit(d, s)
                            });
                        }
                    }
                }
                Method::DscSs | Method::Combined => {
                    let o = mo.dsc()?;
                    let n = o.supershingles() as f64;
                    let t = threshold.map_or(DEFAULT_COMBINED_THRESHOLD, |t| t.as_f64());
                    for (d, c) in dsc::query(view, o, &x.supers)? {
                        let mut h = MethodHit {
                            agree: Some(c),
                            ..hit(d, c as f64 / n)
                        };
                        if method == Method::Combined {
                            mo.require_sim384()?;
                            let (Some(q), Some(s)) = (x.sim384, dsc::sim384(view, d)?) else {
                                continue;
                            };
                            let (cs, hw) = dsc::c_similarity(&q, &s);
                            if cs < t {
                                continue;
                            }
                            h.similarity = cs;
                            h.hamming = Some(hw);
                        }
                        hits.push(h);
                    }
                }
                Method::Imatch => {
                    let im = mo.imatch()?;
                    if let Some(lex) = imatch::Lexicon::load(self.catalog())? {
                        for sig in lex.signatures(&x.terms, &im) {
                            for s in &view.segments {
                                if s.entry.doc_hi <= s.entry.doc_lo {
                                    continue;
                                }
                                if let Some(list) = s.seg.get_postings(imatch::IMATCH, sig)? {
                                    list.for_each(|d| {
                                        if view.is_live(d) {
                                            hits.push(hit(d, 1.0))
                                        }
                                    });
                                }
                            }
                        }
                        hits.sort_by_key(|h| h.doc);
                        hits.dedup_by_key(|h| h.doc);
                    }
                }
                Method::Megashingle => {
                    mo.require_megashingles()?;
                    let mine = crate::fingerprint::minhash::megashingles(&x.supers);
                    let mut docs: Vec<u32> = Vec::new();
                    for s in &view.segments {
                        if s.entry.doc_hi <= s.entry.doc_lo {
                            continue;
                        }
                        for &m in &mine {
                            if let Some(list) = s.seg.get_postings(dsc::MEGASHINGLES, m)? {
                                list.for_each(|d| {
                                    if view.is_live(d) {
                                        docs.push(d)
                                    }
                                });
                            }
                        }
                    }
                    docs.sort_unstable();
                    docs.dedup();
                    hits.extend(docs.into_iter().map(|d| hit(d, 1.0)));
                }
                Method::CSim => {
                    mo.require_sim384()?;
                    let t = threshold.map_or(DEFAULT_COMBINED_THRESHOLD, |t| t.as_f64());
                    if let Some(q) = x.sim384 {
                        for (d, h) in dsc::c_sim_query(view, &q, t)? {
                            hits.push(MethodHit {
                                hamming: Some(h),
                                ..hit(d, 1.0 - h as f64 / 384.0)
                            });
                        }
                    }
                }
                Method::Henzinger => {
                    // The query's site comes from its name (a URL, or a path under the
                    // index's rule): C for other sites' documents, combined for its own.
                    mo.require_sim384()?;
                    let o = mo.dsc()?;
                    let t = threshold.map_or(DEFAULT_COMBINED_THRESHOLD, |t| t.as_f64());
                    let mine = self.options().site_rule()?.site(name, None);
                    if let Some(q) = x.sim384 {
                        let c = dsc::c_sim_query(view, &q, t)?;
                        let ids: Vec<u32> = c.iter().map(|e| e.0).collect();
                        let sites = self.sites_of(&ids)?;
                        for (d, h) in c {
                            if sites.get(&d) != Some(&mine) {
                                hits.push(MethodHit {
                                    hamming: Some(h),
                                    ..hit(d, 1.0 - h as f64 / 384.0)
                                });
                            }
                        }
                        let b = dsc::query(view, o, &x.supers)?;
                        let ids: Vec<u32> = b.iter().map(|e| e.0).collect();
                        let sites = self.sites_of(&ids)?;
                        for (d, agree) in b {
                            if sites.get(&d) != Some(&mine) {
                                continue;
                            }
                            let Some(s) = dsc::sim384(view, d)? else {
                                continue;
                            };
                            let (cs, hw) = dsc::c_similarity(&q, &s);
                            if cs >= DEFAULT_COMBINED_THRESHOLD {
                                hits.push(MethodHit {
                                    hamming: Some(hw),
                                    agree: Some(agree),
                                    ..hit(d, cs)
                                });
                            }
                        }
                    }
                }
                Method::Exact => {
                    for d in exact::query(self, &fp.digest)? {
                        hits.push(hit(d, 1.0));
                    }
                }
            }
        }
        hits.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then(a.doc.cmp(&b.doc))
        });
        if top > 0 {
            hits.truncate(top);
        }
        let ids: Vec<u32> = hits.iter().map(|h| h.doc).collect();
        for (h, rec) in hits.iter_mut().zip(self.catalog().docs(&ids)?) {
            h.key = rec.map(|r| r.key).unwrap_or_default();
        }
        Ok(MethodAnswer {
            input: name.to_owned(),
            method,
            words: fp.words,
            hits,
        })
    }
}
