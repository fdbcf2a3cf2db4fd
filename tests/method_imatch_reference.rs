//! I-Match with a lexicon frozen from a reference collection (`--imatch-lexicon PATH`): terms
//! outside the reference lexicon do not enter signatures, so an edit that only touches such
//! words keeps a document's signature; the lexicon is chosen once, before the first batch.

mod common;

use common::*;

#[test]
fn reference_lexicon_drops_unknown_terms_and_is_frozen_once() {
    let dir = temp_dir("imatch-ref");
    let (refs, input) = (dir.path().join("ref"), dir.path().join("in"));
    std::fs::create_dir_all(&refs).unwrap();
    std::fs::create_dir_all(&input).unwrap();
    // The reference collection knows the "common" words only.
    for i in 0..20 {
        let text: Vec<String> = (0..40)
            .map(|j| format!("common{}", (i * 7 + j) % 60))
            .collect();
        std::fs::write(refs.join(format!("r{i}.txt")), text.join(" ")).unwrap();
    }
    let base: Vec<String> = (0..40).map(|j| format!("common{}", j % 60)).collect();
    let a = format!("{} zebra", base.join(" "));
    let b = format!("{} yak", base.join(" ")); // differs only in a word the reference lacks
    std::fs::write(input.join("a.txt"), &a).unwrap();
    std::fs::write(input.join("b.txt"), &b).unwrap();
    let clusters = |ix: &std::path::Path, extra: &[&str]| -> usize {
        let mut args = vec![
            "ingest",
            "-q",
            "--index",
            ix.to_str().unwrap(),
            "--methods",
            "imatch",
            "--imatch-filter",
            "idf-l-0",
        ];
        args.extend_from_slice(extra);
        args.push(input.to_str().unwrap());
        ndd(&args);
        let out = stdout(&ndd(&[
            "clusters",
            "--index",
            ix.to_str().unwrap(),
            "--method",
            "imatch",
        ]));
        out.lines().filter(|l| !l.trim().is_empty()).count()
    };
    // With the reference lexicon, zebra and yak are unknown: a and b share a signature.
    let with = dir.path().join("with");
    assert_eq!(
        clusters(&with, &["--imatch-lexicon", refs.to_str().unwrap()]),
        2
    );
    // With the first batch's lexicon every word is known and the signatures differ.
    let without = dir.path().join("without");
    assert_eq!(clusters(&without, &[]), 0);

    // Frozen once: a second reference lexicon is refused (usage error), the first survives
    // reopening.
    let again = ndd_raw(&[
        "ingest",
        "-q",
        "--index",
        with.to_str().unwrap(),
        "--imatch-lexicon",
        refs.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    let out = stdout(&ndd(&[
        "clusters",
        "--index",
        with.to_str().unwrap(),
        "--method",
        "imatch",
    ]));
    assert_eq!(out.lines().filter(|l| !l.trim().is_empty()).count(), 2);
    // Without I-Match data the option is refused.
    let plain = dir.path().join("plain");
    let r = ndd_raw(&[
        "ingest",
        "-q",
        "--index",
        plain.to_str().unwrap(),
        "--imatch-lexicon",
        refs.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
}
