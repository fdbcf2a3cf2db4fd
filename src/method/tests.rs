//! Unit tests of the method plumbing: names, options and their stored form.

use super::*;
use crate::options::IndexOptions;

#[test]
fn method_names_round_trip() {
    for m in Method::ALL {
        assert_eq!(m.name().parse::<Method>().unwrap(), m);
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            format!("\"{}\"", m.name())
        );
    }
    assert_eq!("DSC-SS".parse::<Method>().unwrap(), Method::DscSs);
    assert!("minhash".parse::<Method>().is_err());
}

#[test]
fn imatch_filters_parse() {
    assert_eq!(
        "idf-l-10".parse::<ImatchFilter>().unwrap(),
        ImatchFilter::IdfL(10)
    );
    assert_eq!(
        "Doc-L-90".parse::<ImatchFilter>().unwrap(),
        ImatchFilter::DocL(90)
    );
    for bad in ["idf-10", "doc-l-101", "doc-l-", "idf-l-x"] {
        assert!(bad.parse::<ImatchFilter>().is_err(), "{bad}");
    }
}

#[test]
fn options_without_methods_read_as_none() {
    // An options record written before methods existed.
    let old = r#"{"version":1,"shingle":"words:5","sample":"all","cluster_threshold":"0.8"}"#;
    let o: IndexOptions = serde_json::from_str(old).unwrap();
    assert_eq!(o.methods, MethodOptions::default());
    assert!(o.methods.simhash_tables().is_err());
    let all = IndexOptions {
        methods: MethodOptions::all(),
        ..IndexOptions::default()
    };
    let back: IndexOptions = serde_json::from_str(&serde_json::to_string(&all).unwrap()).unwrap();
    assert_eq!(back, all);
}

#[test]
fn method_args_resolve() {
    let none = MethodArgs::default();
    assert_eq!(none.resolve().unwrap(), None);
    let a = MethodArgs {
        methods: Some("simhash,combined".into()),
        simhash_k: Some(4),
        simhash_blocks: Some(7),
        ..Default::default()
    };
    let o = a.resolve().unwrap().unwrap();
    assert_eq!(
        o.simhash,
        Some(SimhashOptions {
            k: 4,
            blocks: 7,
            ..SimhashOptions::default()
        })
    );
    assert_eq!(o.dsc, Some(DscOptions::default())); // combined needs the supershingles
    assert!(o.sim384 && o.imatch.is_none());
    let bad = MethodArgs {
        methods: Some("dsc-ss".into()),
        b_agree: Some(7), // more than the 6 supershingles
        ..Default::default()
    };
    assert!(bad.resolve().is_err());
    let orphan = MethodArgs {
        minhash: Some(42),
        ..Default::default()
    };
    assert!(orphan.resolve().is_err());
}

#[test]
fn imatch_filters_keep_what_they_say() {
    let lex = imatch::Lexicon {
        epoch: 1,
        docs: 100,
        // nidf: term 1 -> 0 (in every doc), 2 -> 0.5, 3 -> 1.0, 4 -> ln(100/50)/ln(100) = 0.15
        df: [(1u64, 100u32), (2, 10), (3, 1), (4, 50)]
            .into_iter()
            .collect(),
    };
    let terms = [1, 2, 3, 4, 99]; // 99 is not in the lexicon
    assert_eq!(lex.keep(&terms, ImatchFilter::IdfL(10)), vec![2, 3, 4]);
    assert_eq!(lex.keep(&terms, ImatchFilter::IdfL(20)), vec![2, 3]);
    assert_eq!(lex.keep(&terms, ImatchFilter::DocL(50)), vec![2, 3]);
    // Unknown and filtered terms do not change the signature.
    assert_eq!(
        lex.signature(&[2, 3, 4], ImatchFilter::IdfL(10)),
        lex.signature(&[1, 2, 3, 4, 99], ImatchFilter::IdfL(10))
    );
    assert_ne!(
        lex.signature(&[2, 3], ImatchFilter::IdfL(10)),
        lex.signature(&[2, 3, 4], ImatchFilter::IdfL(10))
    );
}

#[test]
fn simhash_options_old_records_and_new_defaults() {
    // A record written before features/boilerplate/verify existed: Manku's word simhash.
    let old: SimhashOptions = serde_json::from_str(r#"{"k":3,"blocks":6}"#).unwrap();
    assert_eq!(old, SimhashOptions::words_tf());
    assert!(old.is_catalog_simhash() && old.verify_threshold().is_none());
    assert_eq!(
        serde_json::to_string(&old).unwrap(),
        r#"{"k":3,"blocks":6}"#
    );
    // The new default: shingles, k = 10 over 11 blocks, verified at 0.8; stored explicitly.
    let d = SimhashOptions::default();
    let json = serde_json::to_string(&d).unwrap();
    assert_eq!(
        json,
        r#"{"k":10,"blocks":11,"features":"shingles","verify":80}"#
    );
    assert_eq!(serde_json::from_str::<SimhashOptions>(&json).unwrap(), d);
    assert_eq!(d.verify_threshold().unwrap().as_f64(), 0.8);
    assert_eq!(MethodOptions::new_index_default().simhash, Some(d));
    // From the command line: words keep Manku's k = 3 and no verification; idf means words.
    let args = |f: &str| MethodArgs {
        methods: Some("simhash".into()),
        simhash_features: Some(f.parse().unwrap()),
        ..Default::default()
    };
    assert_eq!(
        args("words").resolve().unwrap().unwrap().simhash,
        Some(SimhashOptions::words_tf())
    );
    assert_eq!(
        args("shingles").resolve().unwrap().unwrap().simhash,
        Some(SimhashOptions::default())
    );
    let idf = MethodArgs {
        methods: Some("simhash".into()),
        simhash_weight: Some(SimhashWeight::Idf),
        ..Default::default()
    };
    let s = idf.resolve().unwrap().unwrap().simhash.unwrap();
    assert_eq!(
        (s.features, s.weight, s.k),
        (SimhashFeatures::Words, SimhashWeight::Idf, 3)
    );
    // Bad values are refused with a reason.
    let bad = |b: Option<u32>, v: Option<Option<u32>>| MethodArgs {
        methods: Some("simhash".into()),
        simhash_boilerplate: b,
        simhash_verify: v,
        ..Default::default()
    };
    assert!(bad(Some(101), None).resolve().is_err());
    assert!(bad(None, Some(Some(120))).resolve().is_err());
    assert_eq!(
        bad(Some(30), Some(None))
            .resolve()
            .unwrap()
            .unwrap()
            .simhash
            .map(|s| (s.boilerplate, s.verify)),
        Some((Some(30), None))
    );
    assert!("sentences".parse::<SimhashFeatures>().is_err());
}

#[test]
fn imatch_lexicons_parse_and_store() {
    use super::options::parse_imatch_lexicons;
    assert_eq!(parse_imatch_lexicons("1").unwrap(), (1, 0));
    assert_eq!(parse_imatch_lexicons("10").unwrap(), (10, 90));
    assert_eq!(parse_imatch_lexicons("5:50").unwrap(), (5, 50));
    for bad in ["0", "65", "3:100", "x", "3:"] {
        assert!(parse_imatch_lexicons(bad).is_err(), "{bad}");
    }
    // Records written before the option: one lexicon.
    let old: ImatchOptions = serde_json::from_str(r#"{"filter":"idf-l-10"}"#).unwrap();
    assert_eq!(old, ImatchOptions::default());
    assert_eq!(
        serde_json::to_string(&old).unwrap(),
        r#"{"filter":"idf-l-10"}"#
    );
}

#[test]
fn randomized_lexicons_give_salted_signatures() {
    let lex = imatch::Lexicon {
        epoch: 1,
        docs: 1000,
        df: (1..=200u64).map(|t| (t * 0x9E37_79B9, 5u32)).collect(),
    };
    let terms: Vec<u64> = {
        let mut t: Vec<u64> = (1..=100u64).map(|t| t * 0x9E37_79B9).collect();
        t.sort_unstable();
        t
    };
    let one = ImatchOptions::default();
    assert_eq!(
        lex.signatures(&terms, &one),
        vec![lex.signature(&terms, one.filter)]
    );
    let k = ImatchOptions {
        lexicons: 8,
        drop: 30,
        ..one
    };
    let sigs = lex.signatures(&terms, &k);
    assert_eq!(sigs.len(), 8);
    assert_eq!(sigs[0], lex.signature(&terms, k.filter)); // lexicon 0 is the lexicon itself
    let mut u = sigs.clone();
    u.sort_unstable();
    u.dedup();
    assert_eq!(u.len(), 8, "salted signatures differ");
    // Each randomized lexicon drops about 30% of the terms (mix64 is uniform).
    for j in 1..8u64 {
        let seed = crate::fingerprint::hash::splitmix64_nth(
            crate::fingerprint::hash::SEED_IMATCH_LEXICON,
            j,
        );
        let kept = terms
            .iter()
            .filter(|&&t| imatch::in_random_lexicon(t, seed, 30))
            .count();
        assert!((50..=90).contains(&kept), "lexicon {j} kept {kept}");
    }
    // A change to a term one randomized lexicon drops leaves that lexicon's signature alone:
    // find a term outside lexicon 1 and replace it by another one outside it.
    let seed1 =
        crate::fingerprint::hash::splitmix64_nth(crate::fingerprint::hash::SEED_IMATCH_LEXICON, 1);
    let out = |t: &u64| !imatch::in_random_lexicon(*t, seed1, 30);
    let gone = *terms.iter().find(|t| out(t)).unwrap();
    let extra = (101..=200u64)
        .map(|t| t * 0x9E37_79B9)
        .find(|t| out(t))
        .unwrap();
    let mut edited: Vec<u64> = terms.iter().copied().filter(|&t| t != gone).collect();
    edited.push(extra);
    edited.sort_unstable();
    let e = lex.signatures(&edited, &k);
    assert_ne!(e[0], sigs[0]);
    assert_eq!(e[1], sigs[1]);
}
