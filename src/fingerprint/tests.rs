//! Tests of the module-level API: option strings, and `fingerprint` end to end.

use super::*;

fn opts(s: &str, m: &str) -> FingerprintOptions {
    FingerprintOptions {
        shingle: s.parse().unwrap(),
        sample: m.parse().unwrap(),
        ..Default::default()
    }
}

#[test]
fn option_strings_round_trip() {
    for s in ["words:5", "words:1", "chars:64"] {
        assert_eq!(s.parse::<ShingleKind>().unwrap().to_string(), s);
    }
    for s in ["all", "mod:8", "minhash:84", "bottomk:200"] {
        assert_eq!(s.parse::<Sample>().unwrap().to_string(), s);
    }
    assert_eq!(
        "Words:5".parse::<ShingleKind>().unwrap(),
        ShingleKind::Words(5)
    );
    for bad in [
        "words",
        "words:",
        "words:0",
        "words:x",
        "words:-1",
        "chars:99999999999",
        "w:5",
        "",
    ] {
        assert!(bad.parse::<ShingleKind>().is_err(), "{bad:?} accepted");
    }
    for bad in [
        "all:3",
        "mod",
        "mod:0",
        "minhash:0",
        "minhash:5000",
        "bottomk:",
        "top:5",
        "",
    ] {
        assert!(bad.parse::<Sample>().is_err(), "{bad:?} accepted");
    }
}

#[test]
fn options_serialize_as_strings() {
    let o = opts("chars:64", "minhash:84");
    let json = serde_json::to_string(&o).unwrap();
    assert_eq!(
        json,
        r#"{"shingle":"chars:64","sample":"minhash:84","extract":"body"}"#
    );
    assert_eq!(
        serde_json::from_str::<FingerprintOptions>(&json).unwrap(),
        o
    );
    // Written before `extract` existed: the body.
    let old = r#"{"shingle":"chars:64","sample":"minhash:84"}"#;
    assert_eq!(serde_json::from_str::<FingerprintOptions>(old).unwrap(), o);
    let main = r#"{"shingle":"chars:64","sample":"minhash:84","extract":"main"}"#;
    let m = serde_json::from_str::<FingerprintOptions>(main).unwrap();
    assert_eq!(m.extract, crate::canonicalize::Extract::Main);
    assert!(serde_json::from_str::<FingerprintOptions>(
        r#"{"shingle":"chars:64","sample":"all","extract":"article"}"#
    )
    .is_err());
    // Invalid stored values are rejected when loaded, not used.
    assert!(
        serde_json::from_str::<FingerprintOptions>(r#"{"shingle":"words:0","sample":"all"}"#)
            .is_err()
    );
    assert_eq!(FingerprintOptions::default(), opts("words:5", "all"));
}

#[test]
fn fingerprint_counts_and_parts() {
    let text = "a b c d e f g a b c d e";
    let fp = fingerprint(text, &FingerprintOptions::default());
    assert_eq!(fp.words, 12);
    // 8 windows, but "a b c d e" occurs twice: 7 distinct shingles.
    assert_eq!(fp.shingles, 7);
    assert_eq!(
        fp.features,
        shingle::shingle_set(text, ShingleKind::Words(5))
    );
    assert!(fp.features.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(fp.simhash, simhash::simhash(text));
    assert_eq!(fp.digest, hash::digest(text));

    let seven = fingerprint("a b c d e f g", &FingerprintOptions::default());
    assert_eq!(
        (seven.words, seven.shingles, seven.features.len()),
        (7, 3, 3)
    );
    let short = fingerprint("a b c d", &FingerprintOptions::default());
    assert_eq!((short.words, short.shingles), (4, 0));
    assert!(short.features.is_empty());
    assert_ne!(short.simhash, 0); // the simhash still sees the words
}

#[test]
fn empty_text() {
    for o in [
        opts("words:5", "all"),
        opts("chars:64", "minhash:84"),
        opts("words:1", "bottomk:5"),
    ] {
        let fp = fingerprint("", &o);
        assert_eq!((fp.words, fp.shingles, fp.simhash), (0, 0, 0));
        assert!(fp.features.is_empty());
        assert_eq!(fp.digest, hash::digest(""));
    }
}

#[test]
fn samplings_agree_with_apply() {
    let text: Vec<String> = (0..3000)
        .map(|i| format!("w{}", hash::splitmix64_nth(3, i) % 700))
        .collect();
    let text = text.join(" ");
    let set = shingle::shingle_set(&text, ShingleKind::Words(4));
    for m in ["all", "mod:8", "minhash:84", "bottomk:200"] {
        let o = opts("words:4", m);
        let fp = fingerprint(&text, &o);
        assert_eq!(fp.shingles as usize, set.len());
        assert_eq!(fp.features, o.sample.apply(set.clone()), "{m}");
    }
    let modded = fingerprint(&text, &opts("words:4", "mod:8")).features;
    assert!(modded.iter().all(|h| h % 8 == 0));
    assert!(modded.len() > set.len() / 16 && modded.len() < set.len() / 4);
    assert_eq!(
        fingerprint(&text, &opts("words:4", "bottomk:200")).features[..],
        set[..200]
    );
    assert_eq!(
        fingerprint(&text, &opts("words:4", "minhash:84"))
            .features
            .len(),
        84
    );
    let chars = fingerprint(&text, &opts("chars:64", "all"));
    assert_eq!(
        chars.features,
        shingle::shingle_set(&text, ShingleKind::Chars(64))
    );
    assert_eq!(chars.words, 3000);
}

#[test]
fn out_of_range_parameters_do_not_panic() {
    for (s, m) in [
        (ShingleKind::Words(0), Sample::All),
        (ShingleKind::Chars(0), Sample::All),
        (ShingleKind::Words(2), Sample::Mod(0)),
        (ShingleKind::Words(2), Sample::MinHash(0)),
        (ShingleKind::Words(2), Sample::BottomK(0)),
    ] {
        let o = FingerprintOptions {
            shingle: s,
            sample: m,
            ..Default::default()
        };
        assert!(o.validate().is_err());
        assert!(fingerprint("a b c", &o).features.is_empty());
    }
}

/// A whole fingerprint pinned: any change to hashing, shingling or sampling breaks this.
/// The values come from an independent implementation of the spec (Python over the C xxHash
/// library), so they check the spec as well as the code.
#[test]
fn golden_fingerprint() {
    let text = "the quick brown fox jumps over the lazy dog";
    let summary = |fp: &Fingerprint| {
        fp.features
            .iter()
            .fold(fp.features.len() as u64, |a, &f| a.rotate_left(5) ^ f)
    };
    let w = fingerprint(text, &FingerprintOptions::default());
    assert_eq!((w.words, w.shingles), (9, 5));
    assert_eq!(w.features[0], GOLDEN_FIRST_W5);
    assert_eq!(summary(&w), GOLDEN_SUMMARY_W5);
    let c = fingerprint(text, &opts("chars:16", "all"));
    assert_eq!(c.shingles, 7);
    assert_eq!(summary(&c), GOLDEN_SUMMARY_C16);
    let m = fingerprint(text, &opts("words:2", "minhash:4"));
    assert_eq!(m.features, GOLDEN_MINHASH4.to_vec());
}

const GOLDEN_FIRST_W5: u64 = 0x1509_E1C8_96CD_29A2;
const GOLDEN_SUMMARY_W5: u64 = 0x254D_032D_53BA_A936;
const GOLDEN_SUMMARY_C16: u64 = 0xB7EB_55E7_AE0A_BC28;
const GOLDEN_MINHASH4: [u64; 4] = [
    0x0CF9_A619_0B80_07CB,
    0x39BC_BF2E_62FE_A13C,
    0xDD19_D41A_0ECA_A229,
    0xE370_F6FF_733B_0A76,
];

/// The test vectors of format-spec/fingerprints.md §12, recomputed from the code. Every
/// vector in the spec must be known here and match, so the spec and the code cannot drift.
#[test]
fn spec_test_vectors() {
    const SPEC: &str = include_str!("../../format-spec/fingerprints.md");
    let start = SPEC
        .find("```text\ntest-vectors v1\n")
        .expect("test-vector block in the spec");
    let block = &SPEC[start..];
    let block = &block[block.find('\n').unwrap() + 1..];
    let block = &block[..block.find("```").expect("end of the test-vector block")];
    let vectors: Vec<(&str, &str)> = block
        .lines()
        .skip(1)
        .map(|l| l.rsplit_once(" = ").expect("`name = value` line"))
        .collect();

    let hex = |v: &[u64]| {
        v.iter()
            .map(|x| format!("0x{x:016X}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let t = "the quick brown fox jumps over the lazy dog";
    let features = |shingle: &str, sample: &str| fingerprint(t, &opts(shingle, sample)).features;
    let mv84 = minhash::minhash_values(&shingle::shingle_set(t, ShingleKind::Words(2)), 84);
    let supers = minhash::supershingles(&mv84, 14);
    let manku = manku::PermutedTables::default_tables();
    let five: Vec<u8> = ["a", "b", "c", "d", "e"]
        .iter()
        .flat_map(|w| hash::word_hash(w.as_bytes()).to_le_bytes())
        .collect();

    let mut seen = 0;
    for (name, want) in vectors {
        let got = match name {
            "seed.word" => hex(&[hash::SEED_WORD]),
            "seed.word_shingle" => hex(&[hash::SEED_WORD_SHINGLE]),
            "seed.char_shingle" => hex(&[hash::SEED_CHAR_SHINGLE]),
            "seed.minhash_perm" => hex(&[hash::SEED_MINHASH_PERM]),
            "seed.minhash_feature" => hex(&[hash::SEED_MINHASH_FEATURE]),
            "seed.supershingle" => hex(&[hash::SEED_SUPERSHINGLE]),
            "seed.megashingle" => hex(&[hash::SEED_MEGASHINGLE]),
            "seed.simhash384" => hex(&[hash::SEED_SIMHASH384]),
            "xxh3_64(\"\", 0)" => hex(&[hash::xxh3(b"", 0)]),
            "splitmix64_nth(0, 0..3)" => hex(&(0..3)
                .map(|i| hash::splitmix64_nth(0, i))
                .collect::<Vec<_>>()),
            "word_hash(\"the\")" => hex(&[hash::word_hash(b"the")]),
            "word_hash(\"llvm\")" => hex(&[hash::word_hash(b"llvm")]),
            "word_shingle_hash(\"a b c d e\")" => hex(&[hash::word_shingle_hash(&five)]),
            "char_shingle_hash(\"the llvm compiler\")" => {
                hex(&[hash::char_shingle_hash(b"the llvm compiler")])
            }
            "digest(\"the llvm compiler\")" => hash::digest("the llvm compiler")
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
            "minhash_seed(0..2)" => hex(&minhash::permutation_seeds(2)),
            "minhash_values([1, 2, 3], 2)" => hex(&minhash::minhash_values(&[1, 2, 3], 2)),
            "T" => format!("{t:?}"),
            "simhash(T)" => hex(&[simhash::simhash(t)]),
            "simhash384(T)" => hex(&simhash::simhash384(t)),
            "features(T, words:5, all)" => hex(&features("words:5", "all")),
            "features(T, chars:16, all)" => hex(&features("chars:16", "all")),
            "features(T, words:2, mod:4)" => hex(&features("words:2", "mod:4")),
            "features(T, words:2, bottomk:3)" => hex(&features("words:2", "bottomk:3")),
            "features(T, words:2, minhash:4)" => hex(&features("words:2", "minhash:4")),
            "supershingles(T, words:2, 84, 14)" => hex(&supers),
            "megashingles(T, words:2, 84, 14)[0..3]" => hex(&minhash::megashingles(&supers)[..3]),
            "manku(3, 6).permute(t, 0x0123456789ABCDEF), t = 0..4" => hex(&(0..4)
                .map(|tb| manku.permute(tb, 0x0123_4567_89AB_CDEF))
                .collect::<Vec<_>>()),
            other => panic!("spec test vector {other:?} is not checked by this test"),
        };
        assert_eq!(got, want, "spec test vector {name}");
        seen += 1;
    }
    assert_eq!(seen, 28);
}

/// `for_each_word` finds the pieces `words` finds, on every short string over an alphabet
/// of spaces, ASCII and multi-byte letters (runs of spaces, leading and trailing spaces,
/// pieces across the 8-byte loads), and on long random ones.
#[test]
fn for_each_word_equals_words() {
    let alphabet = ["a", "b", " ", "é", "xyzuvw", "  "];
    let mut texts = vec![String::new()];
    for len in 1..=6 {
        let mut next = Vec::new();
        for t in texts.iter().filter(|t| t.split("").count() >= len) {
            for a in alphabet {
                next.push(format!("{t}{a}"));
            }
        }
        texts.extend(next);
    }
    for i in 0..2000u64 {
        let n = (hash::splitmix64_nth(1, i) % 300) as usize;
        texts.push(
            (0..n)
                .map(|k| alphabet[(hash::splitmix64_nth(i, k as u64) % 6) as usize])
                .collect(),
        );
    }
    for t in &texts {
        let mut got: Vec<&[u8]> = Vec::new();
        for_each_word(t, |w| got.push(w));
        assert_eq!(got, words(t).collect::<Vec<_>>(), "{t:?}");
    }
}

/// `word_hashes_into` hashes the pieces `for_each_word` finds (same texts as
/// `for_each_word_equals_words`), appending to what the vector already holds.
#[test]
fn word_hashes_equal_for_each_word() {
    let alphabet = ["a", "b", " ", "é", "xyzuvw", "  ", "abcdefghijklmnopq"];
    for i in 0..20_000u64 {
        let n = (hash::splitmix64_nth(5, i) % 60) as usize;
        let t: String = (0..n)
            .map(|k| alphabet[(hash::splitmix64_nth(i, k as u64) % 7) as usize])
            .collect();
        let mut want = vec![7u64];
        for_each_word(&t, |w| want.push(hash::word_hash(w)));
        let mut got = vec![7u64];
        word_hashes_into(&t, &mut got);
        assert_eq!(got, want, "{t:?}");
    }
}

/// The fingerprint with its per-thread scratch is the one computed from the reference pieces
/// (`words`, the byte-level shingle hashes, `sort_unstable` + `dedup`), document after
/// document on one thread (the scratch is reused), for several shingle widths.
#[test]
fn fingerprint_equals_reference_pieces() {
    for i in 0..300u64 {
        let n = (hash::splitmix64_nth(2, i) % 3000) as usize;
        let vocab = 1 + hash::splitmix64_nth(3, i) % 900;
        let text: Vec<String> = (0..n)
            .map(|k| format!("w{}", hash::splitmix64_nth(i, k as u64) % vocab))
            .collect();
        let text = text.join(" ");
        for w in [1u32, 2, 4, 5, 8, 17] {
            let o = opts(&format!("words:{w}"), "all");
            let fp = fingerprint(&text, &o);
            let set = shingle::shingle_set(&text, ShingleKind::Words(w));
            assert_eq!(fp.features, set, "i={i} w={w}");
            assert_eq!(fp.shingles as usize, set.len());
            assert_eq!(fp.words as usize, words(&text).count());
            assert_eq!(fp.simhash, simhash::simhash(&text));
            assert_eq!(fp.digest, hash::digest(&text));
        }
    }
}
