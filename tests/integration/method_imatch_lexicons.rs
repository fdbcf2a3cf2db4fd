//! I-Match with several randomized lexicons (`--imatch-lexicons K:P`, Kolcz et al. 2004):
//! every document stores K signatures and two documents are duplicates when any signature
//! agrees. Variants whose edits touch terms of the one published lexicon lose their single
//! signature; with K lexicons each missing P % of the terms, some lexicon misses every edited
//! term and keeps their signature. Also: the option is stored (later batches and queries use
//! it), and unrelated documents stay apart.

use std::collections::HashSet;

use crate::common::*;

/// Deterministic pseudo-random numbers (splitmix64).
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A variant of `words` with about `rate` of its words edited: deleted, swapped with the next
/// or preceded by a new word (Chowdhury et al.'s three edits).
fn variant(words: &[String], rate: f64, next: &mut impl FnMut() -> u64, tag: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if (next() % 1000) as f64 / 1000.0 < rate {
            match next() % 3 {
                0 => {} // delete
                1 if i + 1 < words.len() => {
                    out.push(words[i + 1].clone());
                    out.push(words[i].clone());
                    i += 1;
                }
                _ => {
                    out.push(format!("ins{tag}x{}", next() % 100_000));
                    out.push(words[i].clone());
                }
            }
        } else {
            out.push(words[i].clone());
        }
        i += 1;
    }
    out.join(" ")
}

#[test]
fn randomized_lexicons_find_edited_variants_without_merging_others() {
    let dir = temp_dir("imatch-lex");
    let input = dir.path().join("in");
    let later = dir.path().join("later");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::create_dir_all(&later).unwrap();
    let mut next = rng(7);
    let doc = |next: &mut dyn FnMut() -> u64, n: usize| -> Vec<String> {
        (0..n).map(|_| format!("w{}", next() % 20_000)).collect()
    };
    // 60 unrelated documents, then 3 originals with 6 variants each at 5% edits.
    for i in 0..60 {
        std::fs::write(
            input.join(format!("bg{i:02}.txt")),
            doc(&mut next, 200).join(" "),
        )
        .unwrap();
    }
    let mut truth: Vec<HashSet<String>> = Vec::new();
    for o in 0..3 {
        let words = doc(&mut next, 250);
        let mut group = HashSet::from([format!("o{o}.txt")]);
        std::fs::write(input.join(format!("o{o}.txt")), words.join(" ")).unwrap();
        for v in 0..6 {
            let name = format!("o{o}v{v}.txt");
            let text = variant(&words, 0.05, &mut next, &format!("{o}{v}"));
            std::fs::write(input.join(&name), text).unwrap();
            group.insert(name);
        }
        // One more variant, ingested in a second batch.
        let name = format!("o{o}late.txt");
        std::fs::write(
            later.join(&name),
            variant(&words, 0.05, &mut next, &format!("{o}l")),
        )
        .unwrap();
        group.insert(name);
        truth.push(group);
    }
    let label = |key: &str| -> Option<usize> {
        let name = key.rsplit('/').next().unwrap_or(key);
        truth.iter().position(|g| g.contains(name))
    };
    // Every cluster must hold documents of one original only (no background, no mixing);
    // returns the documents clustered with others of their original.
    let check = |ix: &TestIndex| -> usize {
        let mut found = 0;
        for c in ix.clusters_with(&["--method", "imatch"]) {
            let labels: HashSet<Option<usize>> = c.members.iter().map(|k| label(k)).collect();
            assert_eq!(labels.len(), 1, "mixed cluster {:?}", c.members);
            assert!(
                !labels.contains(&None),
                "background clustered: {:?}",
                c.members
            );
            found += c.members.len();
        }
        found
    };

    let one = TestIndex::at(dir.path().join("one"));
    one.ingest(&[&input], &["--methods", "imatch"]);
    one.ingest(&[&later], &[]);
    let found_one = check(&one);

    let many = TestIndex::at(dir.path().join("many"));
    many.ingest(
        &[&input],
        &["--methods", "imatch", "--imatch-lexicons", "40:90"],
    );
    // The second batch uses the stored option (and the frozen lexicon) without repeating it.
    many.ingest(&[&later], &[]);
    let found_many = check(&many);
    let stats = many.stats();
    let stored = &stats["options"]["methods"]["imatch"];
    assert_eq!(
        (stored["lexicons"].as_u64(), stored["drop"].as_u64()),
        (Some(40), Some(90))
    );

    // 3 x 8 documents to find: the single lexicon loses most variants (each has ~12 edited
    // words, most of them kept by idf-l-10), the 40 randomized ones find all of them.
    assert_eq!(found_many, 24, "40 lexicons found {found_many} of 24");
    assert!(
        found_one < found_many,
        "one lexicon {found_one}, 40: {found_many}"
    );

    // A query by a fresh variant finds its original's documents only.
    let probe = dir.path().join("probe.txt");
    let words: Vec<String> = std::fs::read_to_string(input.join("o1.txt"))
        .unwrap()
        .split(' ')
        .map(String::from)
        .collect();
    std::fs::write(&probe, variant(&words, 0.05, &mut next, "probe")).unwrap();
    let answers = many.query(&[&probe], &["--method", "imatch"]);
    let hits: Vec<String> = answers[0]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits array: {}", answers[0]))
        .iter()
        .map(|h| h["key"].as_str().unwrap().to_string())
        .collect();
    assert!(!hits.is_empty(), "the probe found nothing");
    assert!(hits.iter().all(|k| label(k) == Some(1)), "hits {hits:?}");
    many.verify();
}
