//! Shared helpers of the integration tests: the typed `TestIndex` harness (harness.rs), small
//! synthetic corpora (synth.rs), temp dirs, and the shared llvm-docs corpus with its exact
//! truth (extracted once per target dir, never committed).
//!
//! Used by the one integration-test crate (tests/integration/main.rs, as `crate::common`) and
//! by any top-level `tests/*.rs` file (as `mod common;`); see tests/README.md.
#![allow(dead_code)]

mod harness;
mod synth;

pub use harness::*;
pub use synth::*;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use ndd_index::Threshold;

/// Runs the built `ndd-index` with `args` (for commands without `--index`; the others go
/// through `TestIndex`); panics with its stderr when it fails.
pub fn ndd(args: &[&str]) -> Output {
    let out = ndd_raw(args);
    assert!(
        out.status.success(),
        "ndd-index {:?} failed ({}):\n{}",
        args,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the built `ndd-index` with `args`, whatever its exit status.
pub fn ndd_raw(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run ndd-index")
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

/// The cargo target tmp dir (created), where the tests' temp files go.
pub fn temp_root() -> PathBuf {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).unwrap();
    base
}

/// A fresh directory under the cargo target tmp dir.
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(temp_root())
        .unwrap()
}

/// The shared corpus folder, or None (with a printed notice) when absent. Under CI it must be
/// there: a missing corpus fails the test instead of skipping it.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llvm-docs");
    if dir.join("docs.tar.zst").exists() && dir.join("truth.tsv").exists() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "CI is set but the shared corpus is missing at {}",
            dir.display()
        );
    }
    eprintln!(
        "NOTICE: shared corpus not found at {}; skipping this test",
        dir.display()
    );
    None
}

/// The corpus, extracted once into the target dir: the folder that holds `docs/`.
pub fn extracted(corpus: &Path) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llvm-docs");
        // The marker sits next to the folder, not in it: everything inside is ingested.
        let done = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llvm-docs.complete");
        if !done.exists() {
            // Another test binary may be extracting at the same time: extract into a private
            // directory, then rename it into place (the loser of the race discards its copy).
            let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("llvm-docs.{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            std::fs::create_dir_all(&tmp).unwrap();
            let st = Command::new("tar")
                .arg("--zstd")
                .arg("-xf")
                .arg(corpus.join("docs.tar.zst"))
                .arg("-C")
                .arg(&tmp)
                .status()
                .expect("run tar (is zstd installed? run tools/setup.sh)");
            assert!(st.success(), "extracting the corpus failed");
            if std::fs::rename(&tmp, &base).is_err() {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            std::fs::write(&done, b"").unwrap();
        }
        assert!(
            done.exists(),
            "corpus extraction incomplete at {}",
            base.display()
        );
        base
    })
    .clone()
}

/// The exact truth of the corpus: doc keys and every pair with J >= 0.3.
pub struct Truth {
    pub keys: Vec<String>,
    /// (doc_a, doc_b, intersection, shingles_a, shingles_b)
    pub rows: Vec<(u32, u32, u64, u64, u64)>,
}

impl Truth {
    pub fn load(corpus: &Path) -> &'static Truth {
        static T: OnceLock<Truth> = OnceLock::new();
        T.get_or_init(|| {
            let man = std::fs::read_to_string(corpus.join("manifest.tsv")).unwrap();
            let keys: Vec<String> = man
                .lines()
                .skip(1)
                .map(|l| l.split('\t').nth(1).unwrap().to_owned())
                .collect();
            let tsv = std::fs::read_to_string(corpus.join("truth.tsv")).unwrap();
            let rows = tsv
                .lines()
                .skip(1)
                .map(|l| {
                    let f: Vec<&str> = l.split('\t').collect();
                    (
                        f[0].parse().unwrap(),
                        f[1].parse().unwrap(),
                        f[6].parse().unwrap(),
                        f[4].parse().unwrap(),
                        f[5].parse().unwrap(),
                    )
                })
                .collect();
            Truth { keys, rows }
        })
    }

    /// Key pairs (ordered a < b) with exact Jaccard >= t.
    pub fn pairs_at(&self, t: Threshold) -> HashSet<(String, String)> {
        self.rows
            .iter()
            .filter(|&&(_, _, i, sa, sb)| t.admits(i, sa + sb - i))
            .map(|&(a, b, ..)| ordered(&self.keys[a as usize], &self.keys[b as usize]))
            .collect()
    }

    /// Exact Jaccard of truth pairs, by ordered key pair.
    pub fn jaccard(&self) -> HashMap<(String, String), f64> {
        self.rows
            .iter()
            .map(|&(a, b, i, sa, sb)| {
                (
                    ordered(&self.keys[a as usize], &self.keys[b as usize]),
                    i as f64 / (sa + sb - i) as f64,
                )
            })
            .collect()
    }
}

pub fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

/// Pairs by ordered key pair (each pair once).
pub fn pair_map(pairs: &[Pair]) -> HashMap<(String, String), f64> {
    let m: HashMap<_, _> = pairs
        .iter()
        .map(|(a, b, v)| ((a.clone(), b.clone()), *v))
        .collect();
    assert_eq!(m.len(), pairs.len(), "a pair printed twice");
    m
}

/// The key pairs (key_a, key_b) of `pairs`.
pub fn pair_keys(pairs: &[Pair]) -> BTreeSet<(String, String)> {
    pairs
        .iter()
        .map(|(a, b, _)| (a.clone(), b.clone()))
        .collect()
}

/// (precision, recall) of `found` against `truth`.
pub fn precision_recall<K: std::hash::Hash + Eq>(
    found: &HashSet<K>,
    truth: &HashSet<K>,
) -> (f64, f64) {
    let tp = found.iter().filter(|p| truth.contains(p)).count() as f64;
    let p = if found.is_empty() {
        1.0
    } else {
        tp / found.len() as f64
    };
    let r = if truth.is_empty() {
        1.0
    } else {
        tp / truth.len() as f64
    };
    (p, r)
}

/// Runs the workspace's `ndd-gen` corpus generator (tools/gen-corpus) with `args`. It sits next
/// to the built `ndd-index`; when only this package was built, it is built first.
pub fn ndd_gen(args: &[&str]) -> Output {
    let exe = Path::new(env!("CARGO_BIN_EXE_ndd-index")).with_file_name("ndd-gen");
    if !exe.exists() {
        let st = Command::new(env!("CARGO"))
            .args(["build", "--release", "-p", "ndd-gen"])
            .status()
            .expect("run cargo build -p ndd-gen");
        assert!(st.success(), "cargo build -p ndd-gen failed");
    }
    let out = Command::new(&exe).args(args).output().expect("run ndd-gen");
    assert!(
        out.status.success(),
        "ndd-gen {:?} failed:\n{}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The planted truth of an ndd-gen corpus: key -> cluster label.
pub fn gen_truth(dir: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(dir.join("truth-clusters.tsv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// `ndd-index stats --json` of an index.
pub fn stats_json(idx: &Path) -> serde_json::Value {
    TestIndex::at(idx).stats()
}

/// The lines of a `--report` file, parsed.
pub fn report_lines(path: &Path) -> Vec<serde_json::Value> {
    json_lines(&std::fs::read_to_string(path).unwrap())
}

/// A count from the environment variable `var` (rounds, cases), `default` when unset.
pub fn env_count(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
