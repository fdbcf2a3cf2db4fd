//! End-to-end tests of the external sorter: against std sort and GNU `sort`, tiny budgets with
//! many runs and multi-pass merges, dedup, corruption and cleanup of temporary files.

use std::path::Path;

use proptest::prelude::*;

use super::*;

/// splitmix64: deterministic test data without a rand dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn random_keydocs(n: usize, distinct_keys: u64, seed: u64) -> Vec<KeyDoc> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| KeyDoc {
            key: rng.next() % distinct_keys,
            doc: (rng.next() % 7) as u32,
        })
        .collect()
}

/// Options whose budget holds `mem_records` [`KeyDoc`]s.
fn opts(dir: &Path, mem_records: u64, fan_in: usize, dedup: bool) -> SortOptions {
    SortOptions {
        mem_bytes: mem_records * std::mem::size_of::<KeyDoc>() as u64,
        tmp_dir: dir.to_path_buf(),
        fan_in,
        dedup,
    }
}

fn sort_with<R: Record>(o: SortOptions, input: &[R]) -> (Vec<R>, SortStats) {
    let mut s = ExternalSorter::<R>::new(o).unwrap();
    s.extend(input.iter().copied()).unwrap();
    let stream = s.finish().unwrap();
    let stats = stream.stats();
    (stream.collect::<Result<Vec<_>>>().unwrap(), stats)
}

fn expected<R: Record>(input: &[R], dedup: bool) -> Vec<R> {
    let mut v = input.to_vec();
    v.sort();
    if dedup {
        v.dedup();
    }
    v
}

fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(true)
}

/// A `KeyDoc` takes its encoded 12 bytes in memory (the sort buffer and the bucket partition
/// hold one per posting), and a budget of `n` such bytes holds `n / 12` records.
#[test]
fn keydoc_is_12_bytes_in_memory() {
    assert_eq!(std::mem::size_of::<KeyDoc>(), KeyDoc::SIZE);
    assert_eq!(std::mem::size_of::<[KeyDoc; 3]>(), 36);
    let (a, b) = (KeyDoc { key: 7, doc: 9 }, KeyDoc { key: 7, doc: 10 });
    assert!(a < b && KeyDoc { key: 8, doc: 0 } > b);
}

#[test]
fn matches_std_sort_across_shapes_budgets_and_fan_ins() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tmp");
    let shapes: Vec<(&str, Vec<KeyDoc>)> = vec![
        ("empty", vec![]),
        ("one", vec![KeyDoc { key: 42, doc: 1 }]),
        ("all equal", vec![KeyDoc { key: 7, doc: 7 }; 300]),
        (
            "equal keys",
            (0..300)
                .map(|i| KeyDoc {
                    key: 7,
                    doc: 300 - i,
                })
                .collect(),
        ),
        ("many dups", random_keydocs(700, 20, 1)),
        ("random", random_keydocs(700, u64::MAX, 2)),
        (
            "descending",
            (0..400u64)
                .rev()
                .map(|i| KeyDoc {
                    key: i << 33,
                    doc: i as u32,
                })
                .collect(),
        ),
    ];
    for (name, input) in &shapes {
        for (mem, fan_in) in [(50u64, 2usize), (37, 3), (64, 4), (100, 128), (1 << 20, 2)] {
            for dedup in [false, true] {
                let (got, stats) = sort_with(opts(&dir, mem, fan_in, dedup), input);
                assert_eq!(
                    got,
                    expected(input, dedup),
                    "{name} mem={mem} fan_in={fan_in} dedup={dedup}"
                );
                assert_eq!(stats.records, input.len() as u64);
                assert!(dir_is_empty(&dir), "{name}: run files left behind");
            }
        }
    }
}

#[test]
fn one_record_per_run() {
    // The smallest budget: every record is its own run, 40 runs merged through 6 levels.
    let tmp = tempfile::tempdir().unwrap();
    let input = random_keydocs(40, 10, 11);
    for dedup in [false, true] {
        let (got, stats) = sort_with(opts(tmp.path(), 1, 2, dedup), &input);
        assert_eq!(got, expected(&input, dedup));
        assert_eq!(
            (stats.runs_spilled, stats.merge_passes),
            (40, 6),
            "{stats:?}"
        );
    }
}

#[test]
fn doc_pairs_sort_too() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(9);
    let input: Vec<DocPair> = (0..5000)
        .map(|_| DocPair {
            a: (rng.next() % 300) as u32,
            b: rng.next() as u32,
        })
        .collect();
    let o = SortOptions {
        mem_bytes: 8 * 100,
        tmp_dir: tmp.path().into(),
        fan_in: 3,
        dedup: false,
    };
    let (got, stats) = sort_with(o, &input);
    assert_eq!(got, expected(&input, false));
    assert!(
        stats.runs_spilled >= 49 && stats.merge_passes >= 3,
        "{stats:?}"
    );
}

#[test]
fn budget_boundaries_and_tail_handling() {
    let tmp = tempfile::tempdir().unwrap();
    let cap = 10u64;
    let input = random_keydocs(100, 1000, 3);
    // (records, fan_in) -> (runs spilled, merge passes)
    for (n, fan_in, runs, passes) in [
        (0, 4, 0, 0),
        (10, 4, 0, 0), // exactly the budget: sorted in memory, nothing written
        (11, 4, 1, 1), // one run + the tail merged from memory
        (20, 4, 1, 1),
        (21, 4, 2, 1),
        (40, 4, 3, 1), // 3 runs + tail = 4 = fan-in: still no extra pass
        (41, 4, 5, 2), // 4 runs + tail > fan-in: tail spilled, 5 runs -> one intermediate merge
        (80, 2, 8, 3), // 8 equal runs at fan-in 2: log2(8) = 3 levels
    ] {
        let part = &input[..n];
        let (got, stats) = sort_with(opts(tmp.path(), cap, fan_in, false), part);
        assert_eq!(got, expected(part, false), "n={n}");
        assert_eq!(
            (stats.runs_spilled, stats.merge_passes),
            (runs, passes),
            "n={n} fan_in={fan_in}: {stats:?}"
        );
    }
    let (_, s) = sort_with(opts(tmp.path(), cap, 2, false), &input[..80]);
    assert_eq!(
        s.intermediate_merges, 6,
        "8 runs -> 2 takes 6 binary merges"
    );
    assert_eq!(
        s.bytes_spilled,
        8 * (24 + 40 + 12 + 16 + 10 * 12),
        "one block per 10-record run"
    );
}

#[test]
fn many_runs_multi_pass_with_dedup_and_odd_fan_ins() {
    let tmp = tempfile::tempdir().unwrap();
    let input = random_keydocs(6_000, 600, 4);
    for fan_in in [2, 3, 4, 7] {
        for dedup in [false, true] {
            let (got, stats) = sort_with(opts(tmp.path(), 97, fan_in, dedup), &input);
            assert_eq!(
                got,
                expected(&input, dedup),
                "fan_in={fan_in} dedup={dedup}"
            );
            assert_eq!(stats.runs_spilled, 6_000 / 97 + 1);
            let min_passes = (stats.runs_spilled as f64).log(fan_in as f64).ceil() as u32;
            assert!(
                stats.merge_passes >= min_passes && stats.merge_passes <= min_passes + 1,
                "{stats:?}"
            );
            assert!(dir_is_empty(tmp.path()));
        }
    }
}

#[test]
fn dedup_drops_only_exact_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let input = vec![
        KeyDoc { key: 5, doc: 2 },
        KeyDoc { key: 5, doc: 1 },
        KeyDoc { key: 5, doc: 2 },
        KeyDoc { key: 1, doc: 2 },
        KeyDoc { key: 5, doc: 1 },
        KeyDoc { key: 5, doc: 2 },
    ];
    for mem in [1, 2, 100] {
        let (got, _) = sort_with(opts(tmp.path(), mem, 2, true), &input);
        assert_eq!(
            got,
            vec![
                KeyDoc { key: 1, doc: 2 },
                KeyDoc { key: 5, doc: 1 },
                KeyDoc { key: 5, doc: 2 }
            ],
            "mem={mem}"
        );
    }
}

/// The request: the external sort against GNU `sort` on random data including
/// duplicates and empty input. Records are rendered fixed-width so `LC_ALL=C sort` (bytewise)
/// orders lines exactly as `KeyDoc` orders records.
#[test]
fn agrees_with_gnu_sort_command() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let render = |v: &[KeyDoc]| {
        v.iter()
            .map(|r| format!("{:020} {:010}\n", { r.key }, { r.doc }))
            .collect::<String>()
    };
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        vec![],
        vec![KeyDoc { key: 3, doc: 3 }],
        random_keydocs(5000, 50, 5),
        random_keydocs(5000, u64::MAX, 6),
    ];
    for (i, input) in cases.iter().enumerate() {
        for dedup in [false, true] {
            let mut cmd = Command::new("sort");
            cmd.env("LC_ALL", "C")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            if dedup {
                cmd.arg("-u");
            }
            let mut child = cmd.spawn().expect("GNU sort (coreutils) must be installed");
            child
                .stdin
                .take()
                .unwrap()
                .write_all(render(input).as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            let (ours, _) = sort_with(opts(tmp.path(), 128, 3, dedup), input);
            assert_eq!(
                render(&ours),
                String::from_utf8(out.stdout).unwrap(),
                "case {i} dedup={dedup}"
            );
        }
    }
}

/// Flips one bit of one spilled run, `from_end` bytes before its block index.
fn damage_a_run(dir: &Path, from_end: usize) -> std::path::PathBuf {
    let victim = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&victim).unwrap();
    let blocks = (bytes.len() - 40 - 24) / (12 + 16 + 5461 * 12) + 1;
    let at = bytes.len() - 40 - 16 * blocks - from_end;
    bytes[at] ^= 1;
    std::fs::write(&victim, &bytes).unwrap();
    victim
}

#[test]
fn corrupt_run_mid_stream_is_reported_and_everything_is_cleaned_up() {
    let tmp = tempfile::tempdir().unwrap();
    let input = random_keydocs(30_000, 1 << 40, 7);
    // 6000-record runs: two blocks each (5461 + 539 records), so the damage in the last
    // record sits in the second block, which the merge reaches only after yielding output.
    let mut s = ExternalSorter::<KeyDoc>::new(opts(tmp.path(), 6000, 16, false)).unwrap();
    s.extend(input.iter().copied()).unwrap();
    assert_eq!(s.stats().runs_spilled, 4);
    let victim = damage_a_run(tmp.path(), 3);
    let results: Vec<_> = s.finish().unwrap().collect();
    let err = results.last().unwrap().as_ref().unwrap_err();
    assert!(
        matches!(err, Error::ChecksumMismatch { path, .. } if *path == victim),
        "{err}"
    );
    assert!(
        results.len() > 1000,
        "records before the damaged block were streamed"
    );
    assert!(
        results[..results.len() - 1].iter().all(|r| r.is_ok()),
        "error ends the stream"
    );
    let good: Vec<KeyDoc> = results.into_iter().filter_map(|r| r.ok()).collect();
    assert!(
        good.windows(2).all(|w| w[0] <= w[1]),
        "what came before the error is sorted"
    );
    assert!(dir_is_empty(tmp.path()), "stream dropped: runs deleted");
}

#[test]
fn corrupt_first_block_fails_finish_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = ExternalSorter::<KeyDoc>::new(opts(tmp.path(), 100, 16, false)).unwrap();
    s.extend(random_keydocs(1000, 1 << 40, 7)).unwrap();
    let victim = damage_a_run(tmp.path(), 3); // a 100-record run is a single block
    let err = s
        .finish()
        .err()
        .expect("finish reads each run's first block");
    assert!(
        matches!(&err, Error::ChecksumMismatch { path, offset: 36, .. } if *path == victim),
        "{err}"
    );
    assert!(dir_is_empty(tmp.path()));
}

#[test]
fn temporary_files_go_away_on_drop_and_on_success() {
    let tmp = tempfile::tempdir().unwrap();
    let input = random_keydocs(1000, 100, 8);
    // Dropped before finish.
    let mut s = ExternalSorter::<KeyDoc>::new(opts(tmp.path(), 50, 4, false)).unwrap();
    s.extend(input.iter().copied()).unwrap();
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 19);
    drop(s);
    assert!(dir_is_empty(tmp.path()));
    // Stream dropped halfway.
    let mut s = ExternalSorter::<KeyDoc>::new(opts(tmp.path(), 50, 4, false)).unwrap();
    s.extend(input.iter().copied()).unwrap();
    let mut stream = s.finish().unwrap();
    assert_eq!(stream.run_paths().len(), 4, "reduced to the fan-in");
    assert!(stream.run_paths().iter().all(|p| p.exists()));
    assert!(stream.nth(500).unwrap().is_ok());
    drop(stream);
    assert!(dir_is_empty(tmp.path()));
}

#[test]
fn spill_errors_are_reported_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let not_a_dir = tmp.path().join("file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    let mut s = ExternalSorter::<KeyDoc>::new(opts(&not_a_dir.join("tmp"), 4, 4, false)).unwrap();
    let err = s.extend(random_keydocs(10, 10, 9)).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    drop(s);
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "only the blocking file"
    );
}

/// `finish_sliced_lists` gives the records of the lists, then those pushed, in order: from
/// the lists themselves (enough records, nothing pushed), pushed first (too few records for
/// the bucket path, a budget they spill under, records pushed before); invalid lists are an
/// error.
#[test]
fn finish_sliced_lists_equals_pushing_the_records() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(5);
    let (mut keys, mut ends) = (Vec::new(), Vec::new());
    for _ in 0..400 {
        let mut l: Vec<u64> = (0..rng.next() % 300)
            .map(|_| rng.next() % 100_000)
            .collect();
        l.sort_unstable();
        l.dedup();
        keys.extend(l);
        ends.push(keys.len() as u64);
    }
    let lists = DocKeys {
        keys: &keys,
        ends: &ends,
        first_doc: 10,
    };
    let records = |lists: &DocKeys| {
        let mut v = Vec::new();
        let mut start = 0;
        for (d, &end) in lists.ends.iter().enumerate() {
            v.extend(lists.keys[start..end as usize].iter().map(|&key| KeyDoc {
                key,
                doc: lists.first_doc + d as u32,
            }));
            start = end as usize;
        }
        v
    };
    let all = |s: &mut dyn SortedSlices<KeyDoc>| {
        let mut v = Vec::new();
        while let Some(p) = s.next_slice()? {
            v.extend_from_slice(p);
        }
        Ok(v)
    };
    let few = DocKeys {
        keys: &keys[..ends[9] as usize],
        ends: &ends[..10],
        first_doc: 10,
    };
    assert!(lists.keys.len() >= 1 << 15 && few.keys.len() < 1 << 15);
    let extra = [
        KeyDoc { key: 3, doc: 900 },
        KeyDoc {
            key: u64::MAX,
            doc: 901,
        },
    ];
    for (lists, mem_records, pushed) in [
        (&lists, 1u64 << 20, &[][..]),
        (&few, 1 << 20, &[]),
        (&lists, 5_000, &[]),
        (&lists, 1 << 20, &extra[..]),
    ] {
        let mut s = ExternalSorter::<KeyDoc>::new(opts(tmp.path(), mem_records, 4, false)).unwrap();
        s.extend(pushed.iter().copied()).unwrap();
        let got = s.finish_sliced_lists(lists, all).unwrap();
        let mut want = records(lists);
        want.extend_from_slice(pushed);
        want.sort_unstable();
        assert_eq!(got, want, "{mem_records} {}", pushed.len());
    }
    assert!(dir_is_empty(tmp.path()));
    let bad = DocKeys {
        keys: &keys,
        ends: &ends[..5],
        first_doc: 0,
    };
    let s = ExternalSorter::<KeyDoc>::new(opts(tmp.path(), 1 << 20, 4, false)).unwrap();
    assert!(matches!(
        s.finish_sliced_lists(&bad, all),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn bad_options_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(ExternalSorter::<KeyDoc>::new(SortOptions {
        mem_bytes: KeyDoc::SIZE as u64 - 1,
        ..SortOptions::new(0, tmp.path())
    })
    .is_err());
    assert!(ExternalSorter::<KeyDoc>::new(SortOptions {
        fan_in: 1,
        ..SortOptions::new(1 << 20, tmp.path())
    })
    .is_err());
    let d = SortOptions::default();
    assert_eq!((d.mem_bytes, d.fan_in, d.dedup), (256 << 20, 128, false));
    // An absurd budget fails on first push instead of aborting the process.
    let mut s = ExternalSorter::<KeyDoc>::new(SortOptions::new(u64::MAX, tmp.path())).unwrap();
    assert!(matches!(
        s.push(KeyDoc::default()),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn buffer_is_allocated_once_at_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = ExternalSorter::<KeyDoc>::new(opts(tmp.path(), 1000, 4, false)).unwrap();
    assert_eq!(
        s.buf.capacity(),
        0,
        "nothing allocated before the first push"
    );
    s.extend(random_keydocs(2500, 100, 10)).unwrap();
    assert_eq!(s.buf.capacity(), 1000);
    assert_eq!((s.buf.len(), s.stats().runs_spilled), (500, 2));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn prop_equals_std_sort(
        raw in proptest::collection::vec((0u64..40, 0u32..4), 0..400),
        mem in 1u64..40,
        fan_in in 2usize..6,
        dedup: bool,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let input: Vec<KeyDoc> = raw.into_iter().map(|(key, doc)| KeyDoc { key, doc }).collect();
        let (got, _) = sort_with(opts(tmp.path(), mem, fan_in, dedup), &input);
        prop_assert_eq!(got, expected(&input, dedup));
        prop_assert!(dir_is_empty(tmp.path()));
    }
}

/// `finish_sliced` gives `finish`'s records in order, in buckets (in memory, no dedup) or
/// copied from the stream (spilled runs, dedup, few records), never an empty slice.
#[test]
fn sliced_finish_equals_the_sorted_records() {
    let dir = tempfile::tempdir().unwrap();
    let input = random_keydocs(3 * bucket::MIN_RECORDS, 50_000, 11);
    for (mem_records, dedup, n) in [
        (1u64 << 20, false, input.len()), // buckets
        (1 << 20, false, 1000),           // too few for buckets
        (1 << 20, true, input.len()),     // dedup
        (10_000, false, input.len()),     // spilled runs
    ] {
        let mut s = ExternalSorter::<KeyDoc>::new(opts(dir.path(), mem_records, 8, dedup)).unwrap();
        s.extend(input[..n].iter().copied()).unwrap();
        let (got, slices) = s
            .finish_sliced(|sl| {
                let (mut all, mut count) = (Vec::new(), 0);
                while let Some(p) = sl.next_slice()? {
                    assert!(!p.is_empty() && p.len() <= input.len());
                    all.extend_from_slice(p);
                    count += 1;
                }
                Ok((all, count))
            })
            .unwrap();
        assert_eq!(
            got,
            expected(&input[..n], dedup),
            "{mem_records} {dedup} {n}"
        );
        assert!(slices >= 1);
    }
}
