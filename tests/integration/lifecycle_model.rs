//! Model-based property test: random sequences of ingest / online add / delete / compact /
//! compact --full / reopen / query / pairs on a temporary index, checked after every step against a brute-force
//! oracle: exact Jaccard over the canonical 5-word shingle sets (as word strings, not hashes)
//! of the live documents, with `--sample all`. Query hits and pairs at a threshold must equal
//! the oracle's, with the same resemblance; deleted or replaced texts never appear.
//!
//! Cases: `NDD_MODEL_CASES` (default 32). Adding an operation is one `Op` variant, one arm in
//! `op_strategy` and one arm in `Harness::apply`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ndd_index::canonicalize::{canonicalize, DocFormat};
use ndd_index::lifecycle::add::AddOptions;
use ndd_index::lifecycle::{DeleteSelector, MergePolicy};
use ndd_index::pipeline::{self, IngestOptions, PairsConfig};
use ndd_index::query::QueryOptions;
use ndd_index::{CreateOptions, Error, Index, Threshold};
use proptest::prelude::*;

const W: usize = 5;
const FAMILIES: usize = 5;
const VOCAB: u16 = 40;

/// A document text: a family's base text with a few word edits (so documents of one family
/// are near-duplicates, and the small vocabulary makes unrelated ones share shingles too).
#[derive(Clone, Debug)]
struct DocSpec {
    family: usize,
    edits: Vec<(usize, u16)>,
}

#[derive(Clone, Debug)]
enum Op {
    /// A batch of documents; `Some(i)` reuses the key of the i-th (mod n) known key (a
    /// replacement, or a re-add after delete), `None` takes a fresh key.
    Ingest(Vec<(Option<usize>, DocSpec)>),
    /// The same through the online `add` (delta in RocksDB, folded every 3 documents).
    Add(Vec<(Option<usize>, DocSpec)>),
    /// Deletes the i-th (mod n) known keys.
    Delete(Vec<usize>),
    Compact,
    CompactFull,
    Reopen,
    Query(DocSpec, u8),
    Pairs(u8),
}

/// Thresholds used by queries and pairs, in percent.
const THRESHOLDS: [u8; 4] = [30, 50, 80, 100];

fn spec_strategy() -> impl Strategy<Value = DocSpec> {
    (
        0..FAMILIES,
        prop::collection::vec((0usize..40, 0..VOCAB), 0..4),
    )
        .prop_map(|(family, edits)| DocSpec { family, edits })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let t = prop::sample::select(THRESHOLDS.to_vec());
    prop_oneof![
        4 => prop::collection::vec(
            (prop::option::weighted(0.2, 0usize..64), spec_strategy()),
            1..6
        )
        .prop_map(Op::Ingest),
        2 => prop::collection::vec(
            (prop::option::weighted(0.2, 0usize..64), spec_strategy()),
            1..3
        )
        .prop_map(Op::Add),
        2 => prop::collection::vec(0usize..64, 1..3).prop_map(Op::Delete),
        1 => Just(Op::Compact),
        1 => Just(Op::CompactFull),
        1 => Just(Op::Reopen),
        2 => (spec_strategy(), t.clone()).prop_map(|(s, t)| Op::Query(s, t)),
        1 => t.prop_map(Op::Pairs),
    ]
}

fn case_strategy() -> impl Strategy<Value = (Vec<Vec<u16>>, Vec<Op>)> {
    (
        prop::collection::vec(prop::collection::vec(0..VOCAB, 12..40), FAMILIES),
        prop::collection::vec(op_strategy(), 1..14),
    )
}

fn text(bases: &[Vec<u16>], s: &DocSpec) -> String {
    let mut words = bases[s.family].clone();
    for &(at, w) in &s.edits {
        let at = at % words.len();
        words[at] = w;
    }
    let words: Vec<String> = words.iter().map(|w| format!("w{w}")).collect();
    words.join(" ")
}

/// The oracle's shingle set of a text: canonical words, every window of W, as strings.
fn shingles(text: &str) -> BTreeSet<String> {
    let c = canonicalize(text.as_bytes(), DocFormat::Text, None).expect("canonical text");
    let words: Vec<&str> = c.words().collect();
    if words.len() < W {
        return BTreeSet::from([words.join(" ")]);
    }
    words.windows(W).map(|w| w.join(" ")).collect()
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> (u64, u64) {
    let inter = a.intersection(b).count() as u64;
    (inter, (a.len() + b.len()) as u64 - inter)
}

fn threshold(pct: u8) -> Threshold {
    Threshold::from_ratio(u64::from(pct), 100)
}

struct Harness {
    dir: PathBuf,
    index: Option<Index>,
    bases: Vec<Vec<u16>>,
    /// Every key ever used, in order of first use.
    keys: Vec<String>,
    /// The live documents: key -> shingle set.
    live: BTreeMap<String, BTreeSet<String>>,
    batches: usize,
}

impl Harness {
    fn index(&mut self) -> &mut Index {
        self.index.as_mut().expect("open index")
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Ingest(docs) | Op::Add(docs) => {
                self.batches += 1;
                let dir = self.dir.join(format!("in-{}", self.batches));
                std::fs::create_dir_all(&dir).unwrap();
                let mut batch = BTreeMap::new();
                for (reuse, spec) in docs {
                    let key = match reuse {
                        Some(i) if !self.keys.is_empty() => self.keys[i % self.keys.len()].clone(),
                        _ => {
                            self.keys.push(format!("k{:03}.txt", self.keys.len()));
                            self.keys.last().unwrap().clone()
                        }
                    };
                    // One document per key within a batch: the first wins here.
                    batch.entry(key).or_insert_with(|| text(&self.bases, spec));
                }
                for (key, t) in &batch {
                    std::fs::write(dir.join(key), t).unwrap();
                }
                let opts = IngestOptions {
                    batch: Some(format!("b{}", self.batches)),
                    mem_bytes: 1 << 20,
                    ..Default::default()
                };
                if matches!(op, Op::Add(_)) {
                    let add = AddOptions {
                        batch: opts.batch.clone(),
                        fold_docs: 3,
                        ..Default::default()
                    };
                    self.index()
                        .add(vec![dir], &add, &mut |_| Ok(()))
                        .map_err(|e| TestCaseError::fail(format!("add: {e}")))?;
                } else {
                    self.index()
                        .ingest(vec![dir], &opts, &mut |_| Ok(()), &|_| {})
                        .map_err(|e| TestCaseError::fail(format!("ingest: {e}")))?;
                }
                for (key, t) in batch {
                    self.live.insert(key, shingles(&t));
                }
            }
            Op::Delete(which) => {
                if self.keys.is_empty() {
                    return Ok(());
                }
                let keys: Vec<String> = which
                    .iter()
                    .map(|i| self.keys[i % self.keys.len()].clone())
                    .collect();
                self.index()
                    .delete(&DeleteSelector::Keys(keys.clone()))
                    .map_err(|e| TestCaseError::fail(format!("delete: {e}")))?;
                for k in keys {
                    self.live.remove(&k);
                }
            }
            Op::Compact | Op::CompactFull => {
                let full = matches!(op, Op::CompactFull);
                self.index()
                    .compact(full, &MergePolicy::default())
                    .map_err(|e| TestCaseError::fail(format!("compact: {e}")))?;
            }
            Op::Reopen => {
                self.index = None;
                self.index = Some(reopen_writer(&self.dir.join("idx")));
            }
            Op::Query(spec, pct) => self.check_query(&text(&self.bases, spec), *pct)?,
            Op::Pairs(pct) => self.check_pairs(*pct)?,
        }
        Ok(())
    }

    fn check_query(&mut self, q: &str, pct: u8) -> Result<(), TestCaseError> {
        let t = threshold(pct);
        let opts = QueryOptions {
            threshold: t,
            top: 0,
            max_df: None,
        };
        let ans = self
            .index()
            .query_document("q", q.as_bytes(), DocFormat::Text, None, &opts)
            .map_err(|e| TestCaseError::fail(format!("query: {e}")))?;
        let got: BTreeMap<String, f64> = ans
            .hits
            .iter()
            .map(|h| (h.key.clone(), h.resemblance))
            .collect();
        let qs = shingles(q);
        let want: BTreeMap<String, f64> = self
            .live
            .iter()
            .filter_map(|(k, s)| {
                let (i, u) = jaccard(&qs, s);
                t.admits(i, u).then(|| (k.clone(), i as f64 / u as f64))
            })
            .collect();
        same(&got, &want, &format!("query at {pct}% for {q:?}"))
    }

    fn check_pairs(&mut self, pct: u8) -> Result<(), TestCaseError> {
        let t = threshold(pct);
        let index = self.index.as_ref().unwrap();
        let view = index.view();
        let cfg = PairsConfig::new(index.options().sample().unwrap(), t);
        let (pairs, _) = pipeline::collect_pairs(view, &cfg, 0..view.doc_ids(), 0)
            .map_err(|e| TestCaseError::fail(format!("pairs: {e}")))?;
        let key = |d: u32| {
            index
                .catalog()
                .doc(d)
                .unwrap()
                .expect("pair doc in catalog")
                .key
        };
        let got: BTreeMap<String, f64> = pairs
            .iter()
            .map(|p| {
                let (a, b) = (key(p.a), key(p.b));
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                (format!("{a} {b}"), p.m.resemblance)
            })
            .collect();
        prop_assert_eq!(got.len(), pairs.len(), "a pair reported twice");
        let live: Vec<(&String, &BTreeSet<String>)> = self.live.iter().collect();
        let mut want = BTreeMap::new();
        for (i, (ka, sa)) in live.iter().enumerate() {
            for (kb, sb) in &live[i + 1..] {
                let (n, u) = jaccard(sa, sb);
                if t.admits(n, u) {
                    want.insert(format!("{ka} {kb}"), n as f64 / u as f64);
                }
            }
        }
        same(&got, &want, &format!("pairs at {pct}%"))
    }
}

/// Opens the writer again right after this process dropped it. The other tests of this binary
/// spawn processes at any moment, and a child holds a copy of our (close-on-exec) lock
/// descriptor from its fork to its exec, so for that instant the lock just released still
/// reads as held by this very process (flock is per open file description). That case alone
/// is retried, for at most 10 s; any other holder, or a lock never released, fails the test.
fn reopen_writer(dir: &Path) -> Index {
    let me = format!("pid {} ", std::process::id());
    let t0 = Instant::now();
    loop {
        match Index::open_writer(dir, &CreateOptions::default()) {
            Err(Error::Locked { holder, .. })
                if holder.starts_with(&me) && t0.elapsed() < Duration::from_secs(10) =>
            {
                std::thread::sleep(Duration::from_millis(5))
            }
            r => return r.unwrap(),
        }
    }
}

fn same(
    got: &BTreeMap<String, f64>,
    want: &BTreeMap<String, f64>,
    what: &str,
) -> Result<(), TestCaseError> {
    let gk: Vec<&String> = got.keys().collect();
    let wk: Vec<&String> = want.keys().collect();
    prop_assert_eq!(gk, wk, "{}: keys differ", what);
    for (k, r) in got {
        prop_assert!(
            (r - want[k]).abs() < 1e-6,
            "{what}: {k}: {r} vs {}",
            want[k]
        );
    }
    Ok(())
}

fn run_case(root: &Path, bases: Vec<Vec<u16>>, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir_in(root).unwrap();
    let index = Index::open_writer(dir.path().join("idx"), &CreateOptions::default()).unwrap();
    let mut h = Harness {
        dir: dir.path().to_path_buf(),
        index: Some(index),
        bases,
        keys: Vec::new(),
        live: BTreeMap::new(),
        batches: 0,
    };
    for op in ops {
        h.apply(op)?;
        // After every step: the whole pair set at one threshold, and no deleted key anywhere.
        h.check_pairs(50)?;
    }
    Ok(())
}

#[test]
fn random_lifecycles_match_the_brute_force_oracle() {
    let cases = std::env::var("NDD_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lifecycle-model");
    std::fs::create_dir_all(&root).unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&case_strategy(), |(bases, ops)| {
            run_case(&root, bases, &ops)
        })
        .unwrap();
}
