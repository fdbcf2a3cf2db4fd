//! I-Match with a lexicon frozen from a reference collection (`--imatch-lexicon PATH`): terms
//! outside the reference lexicon do not enter signatures, so an edit that only touches such
//! words keeps a document's signature; the lexicon is chosen once, before the first batch.

use crate::common::*;

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
    // Clustered documents (members of I-Match clusters).
    let members = |ix: &TestIndex| -> usize {
        ix.clusters_with(&["--method", "imatch"])
            .iter()
            .map(|c| c.members.len())
            .sum()
    };
    let clusters = |ix: &TestIndex, extra: &[&str]| -> usize {
        let mut args = vec!["--methods", "imatch", "--imatch-filter", "idf-l-0"];
        args.extend_from_slice(extra);
        ix.ingest(&[&input], &args);
        members(ix)
    };
    // With the reference lexicon, zebra and yak are unknown: a and b share a signature.
    let with = TestIndex::at(dir.path().join("with"));
    assert_eq!(
        clusters(&with, &["--imatch-lexicon", refs.to_str().unwrap()]),
        2
    );
    // With the first batch's lexicon every word is known and the signatures differ.
    let without = TestIndex::at(dir.path().join("without"));
    assert_eq!(clusters(&without, &[]), 0);

    // Frozen once: a second reference lexicon is refused (usage error), the first survives
    // reopening.
    let again = with.run_raw(&[
        "ingest",
        "-q",
        "--imatch-lexicon",
        refs.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(members(&with), 2);
    // Without I-Match data the option is refused.
    let plain = TestIndex::at(dir.path().join("plain"));
    let r = plain.run_raw(&[
        "ingest",
        "-q",
        "--imatch-lexicon",
        refs.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
}
