//! Bulk operations over the index: batch ingest (documents -> sorted postings -> a new
//! segment -> new-vs-old matching -> clusters -> one atomic publish) and all-pairs.

pub mod ingest;
pub mod join;
pub mod pairs;
pub mod plan;
pub mod prefix;
pub mod spool;

pub use ingest::{
    DocReport, DocStatus, EarlyInput, IngestOptions, IngestSummary, NearDup, Progress,
};
pub use join::join_pairs;
pub use pairs::{
    all_pairs, collect_pairs, for_each_pair, for_each_pair_block, for_each_pair_planned, Matching,
    Pair, PairsConfig, PairsStats,
};

/// Test fixture: an index (in `dir/idx`) of `n` pages whose i-th word is `word(doc, i)`, for
/// `words` words each, ingested as one batch.
#[cfg(test)]
pub(crate) fn word_pages_index(
    dir: &std::path::Path,
    n: u32,
    words: u32,
    word: impl Fn(u32, u32) -> String,
) -> crate::index::Index {
    word_pages_index_as(dir, n, words, None, word)
}

/// [`word_pages_index`] created with segment format `format` (None: the default).
#[cfg(test)]
pub(crate) fn word_pages_index_as(
    dir: &std::path::Path,
    n: u32,
    words: u32,
    format: Option<u32>,
    word: impl Fn(u32, u32) -> String,
) -> crate::index::Index {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for d in 0..n {
        let text: Vec<String> = (0..words).map(|i| word(d, i)).collect();
        let html = format!("<html><body><p>{}</p></body></html>", text.join(" "));
        std::fs::write(docs.join(format!("d{d:02}.html")), html).unwrap();
    }
    let create = crate::options::CreateOptions {
        segment_format: format,
        ..Default::default()
    };
    let mut ix = crate::index::Index::open_writer(dir.join("idx"), &create).unwrap();
    let opts = IngestOptions {
        mem_bytes: 16 << 20,
        ..IngestOptions::default()
    };
    ix.ingest(vec![docs], &opts, &mut |_| Ok(()), &|_| {})
        .unwrap();
    ix
}

/// Test fixture: an index (in `dir/idx`, shingles `shingle`, segment format `format`,
/// sampling `sample`) of two batches (two segments) of `n` pages `b{batch}d{d:02}.html`
/// whose words are `page(batch, doc)`.
#[cfg(test)]
pub(crate) fn two_batch_index(
    dir: &std::path::Path,
    (shingle, format, sample): (&str, u32, &str),
    n: u32,
    page: impl Fn(u32, u32) -> Vec<String>,
) -> crate::index::Index {
    let create = crate::options::CreateOptions {
        shingle: Some(shingle.parse().unwrap()),
        sample: Some(sample.parse().unwrap()),
        segment_format: Some(format),
        ..Default::default()
    };
    let mut ix = crate::index::Index::open_writer(dir.join("idx"), &create).unwrap();
    for batch in 0..2u32 {
        let docs = dir.join(format!("docs{batch}"));
        std::fs::create_dir_all(&docs).unwrap();
        for d in 0..n {
            let html = format!(
                "<html><body><p>{}</p></body></html>",
                page(batch, d).join(" ")
            );
            std::fs::write(docs.join(format!("b{batch}d{d:02}.html")), html).unwrap();
        }
        let opts = IngestOptions {
            mem_bytes: 16 << 20,
            batch: Some(format!("b{batch}")),
            ..Default::default()
        };
        ix.ingest(vec![docs], &opts, &mut |_| Ok(()), &|_| {})
            .unwrap();
    }
    ix
}

#[cfg(test)]
mod absent_first_tests;
#[cfg(test)]
mod per_segment_tests;
#[cfg(test)]
mod prefix_tests;
#[cfg(test)]
mod probe_ranks_tests;
