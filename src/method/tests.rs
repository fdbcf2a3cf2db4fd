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
            weight: Default::default()
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
