//! `--max-df` on a generated corpus with heavy boilerplate (4 sites, short pages, so site
//! boilerplate is a large share of every page): the limit cuts the postings visited by `pairs`
//! and keeps every planted near-duplicate pair that the exact (unlimited) run finds.

use std::collections::HashSet;

use crate::common::*;

fn stats_of(o: &std::process::Output) -> serde_json::Value {
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err.lines().last().expect("stats line on stderr");
    serde_json::from_str(line).expect("stats JSON")
}

#[test]
fn max_df_cuts_postings_and_keeps_planted_recall() {
    let tmp = temp_dir("maxdf");
    let corpus = tmp.path().join("corpus");
    ndd_gen(&[
        "--out",
        corpus.to_str().unwrap(),
        "--docs",
        "2000",
        "--sites",
        "4",
        "--words",
        "60",
        "--seed",
        "7",
        "--quiet",
    ]);
    let truth = gen_truth(&corpus);
    let docs = corpus.join("batch-01");
    let free = TestIndex::at(tmp.path().join("free"));
    let lim = TestIndex::at(tmp.path().join("lim"));
    // Clusters kept at 0.5, so the ingest's own matching probes half of every page. Format 2:
    // the planner's choice checked below is format 2's (on format 3 it picks the join here).
    free.ingest(
        &[&docs],
        &["--cluster-threshold", "0.5", "--segment-format", "2"],
    );
    let sum = lim.ingest(
        &[&docs],
        &[
            "--max-df",
            "100",
            "--cluster-threshold",
            "0.5",
            "--segment-format",
            "2",
        ],
    );
    assert!(sum["max_df_probes_cut"].as_u64().unwrap() > 0, "{sum}");
    // The creation option is stored: giving another value later is a conflict.
    let clash = lim.run_raw(&["ingest", "--max-df", "50", docs.to_str().unwrap()]);
    assert!(!clash.status.success());

    // `pairs --stats` keeps printing pairs on stdout; the stats line goes to stderr.
    let pairs = |idx: &TestIndex, extra: &[&str]| {
        let mut args = vec!["pairs", "--stats", "--threshold", "0.5"];
        args.extend_from_slice(extra);
        let o = idx.run(&args);
        (pair_map(&parse_pair_lines(&stdout(&o))), stats_of(&o))
    };
    let (exact, s_exact) = pairs(&free, &["--matching", "join"]);
    let (cut, s_cut) = pairs(&lim, &["--matching", "join"]);
    // What the limit saves: candidate pair records in the join pipeline, posting entries read
    // in the probe pipeline; both find the same pairs.
    let count = |s: &serde_json::Value, k: &str| s[k].as_u64().unwrap();
    eprintln!("exact {s_exact}\nlimited {s_cut}");
    assert!(
        count(&s_cut, "candidate_records") * 2 < count(&s_exact, "candidate_records"),
        "the limit must cut candidate records"
    );
    // At the cluster threshold auto answers from the stored pairs (the same pairs); below
    // it the prefix self-join where it applies and fits (no limit), else the planner's
    // choice.
    let (stored, s_stored) = pairs(&free, &[]);
    assert_eq!(s_stored["source"], "stored");
    assert_eq!(stored, exact, "stored pairs and join");
    let below = |extra: &[&str]| {
        let mut args = vec!["pairs", "--stats", "--threshold", "0.45"];
        args.extend_from_slice(extra);
        stats_of(&free.run(&args))
    };
    let s_auto = below(&[]);
    assert_eq!(
        s_auto["matching"], "prefix",
        "auto: no limit, fits: {s_auto}"
    );
    let (auto_pairs, s_auto_lim) = pairs(&lim, &[]);
    assert_eq!(
        auto_pairs, cut,
        "auto under the limit: the planner's choice, same pairs"
    );
    assert_eq!(
        s_auto_lim["matching"], s_auto_lim["plan"]["choice"],
        "auto under the limit: the planner's choice: {s_auto_lim}"
    );
    // The planner's estimates and choice are in the stats (with a forced matching too: what
    // auto would have chosen without the prefix self-join).
    assert_eq!(
        s_auto["plan"]["choice"], "probe",
        "the planner: a small index fits in memory"
    );
    assert!(
        s_auto["plan"]["probe_keys"].as_f64().unwrap() > 0.0,
        "{s_auto}"
    );
    assert_eq!(s_exact["matching"], "join", "{s_exact}");
    assert!(
        ["probe", "join"].contains(&s_exact["plan"]["choice"].as_str().unwrap()),
        "{s_exact}"
    );
    let s_big = below(&["--mem", "1MiB"]);
    assert_eq!(s_big["plan"]["choice"], "join", "{s_big}");
    assert_eq!(
        s_big["matching"], "join",
        "auto: segments larger than --mem"
    );
    let (exact_p, s_exact_p) = pairs(&free, &["--matching", "probe"]);
    let (cut_p, s_cut_p) = pairs(&lim, &["--matching", "probe"]);
    assert_eq!(exact_p, exact, "probe and join find the same pairs");
    assert_eq!(
        cut_p, cut,
        "probe and join find the same pairs under the limit"
    );
    assert!(
        count(&s_cut_p, "postings_visited") * 2 < count(&s_exact_p, "postings_visited"),
        "the limit must cut postings visited"
    );
    assert!(s_cut["max_df_keys_cut"].as_u64().unwrap() > 0);
    assert_eq!(s_exact["max_df_keys_cut"].as_u64().unwrap(), 0);

    // Every planted pair the exact run finds is found with the limit, with the same value.
    let planted: HashSet<_> = exact
        .keys()
        .filter(|(a, b)| truth[a] == truth[b])
        .cloned()
        .collect();
    assert!(planted.len() > 100, "{} planted pairs", planted.len());
    for k in &planted {
        assert_eq!(
            cut.get(k),
            exact.get(k),
            "planted pair {k:?} lost or changed"
        );
    }
    // Nothing new appears: the limit only removes candidates.
    assert!(cut.keys().all(|k| exact.contains_key(k)));

    // Overrides: `--max-df 0` lifts the stored limit; `--max-df 100` imposes one.
    let (lifted, _) = pairs(&lim, &["--max-df", "0"]);
    assert_eq!(lifted, exact);
    let (imposed, s_imp) = pairs(&free, &["--max-df", "100", "--matching", "join"]);
    assert_eq!(imposed, cut);
    assert_eq!(
        count(&s_imp, "candidate_records"),
        count(&s_cut, "candidate_records")
    );
}
