//! I-Match lexicon from a reference collection (`ingest --imatch-lexicon PATH`): the epoch-1
//! lexicon is frozen from the documents at PATH (read and canonicalized like ingest input)
//! instead of from the index's first batch. Chowdhury et al. take their idf from a large
//! collection; a lexicon that does not contain the indexed documents' own rare words drops
//! those words (unknown terms are not signed), which is what makes signatures survive edits.
//!
//! Stored exactly like a batch-frozen lexicon (format-spec/rocksdb.md, `imatch/lex/` and
//! `imatch/lexicon`, with `"source": "reference"`), so signatures stay stable the same way:
//! they depend only on a document's text and this frozen lexicon, never on the running df.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use crate::canonicalize::canonicalize;
use crate::error::{Error, Result};
use crate::fingerprint::{hash, words};
use crate::index::Index;
use crate::input::{read_inputs, InputItem, InputOptions};

use super::imatch::{stage_lexicon, Lexicon};

/// Freezes the lexicon of `index` (which must store I-Match data and have no lexicon yet)
/// from the documents of `paths`. Returns the documents counted. Documents that cannot be read
/// or canonicalized are skipped (they have no terms to count).
pub fn freeze_from(index: &Index, paths: Vec<PathBuf>) -> Result<u64> {
    if !index.options().methods.needs_terms() {
        return Err(Error::InvalidArgument(
            "--imatch-lexicon needs an index storing I-Match (--methods imatch) or an \
             idf-weighted simhash"
                .into(),
        ));
    }
    if Lexicon::load(index.catalog())?.is_some() {
        return Err(Error::InvalidArgument(
            "--imatch-lexicon: this index already has a frozen lexicon (it is chosen once, \
             before the first batch)"
                .into(),
        ));
    }
    let mut df: BTreeMap<u64, u32> = BTreeMap::new();
    let mut docs = 0u64;
    for item in read_inputs(paths, InputOptions::default()) {
        let InputItem::Doc(d) = item else { continue };
        let Ok(c) = canonicalize(&d.bytes, d.format, d.charset.as_deref()) else {
            continue;
        };
        let terms: HashSet<u64> = words(&c.text).map(hash::word_hash).collect();
        if terms.is_empty() {
            continue;
        }
        docs += 1;
        for t in terms {
            *df.entry(t).or_insert(0) += 1;
        }
    }
    if docs == 0 {
        return Err(Error::InvalidArgument(
            "--imatch-lexicon: the reference collection has no document with words".into(),
        ));
    }
    let lex = Lexicon {
        epoch: 1,
        docs,
        df: df.into_iter().collect(),
    };
    let mut wb = index.catalog().batch_writer();
    stage_lexicon(&lex, "reference", &mut wb);
    index.catalog().commit(wb)?;
    Ok(docs)
}
