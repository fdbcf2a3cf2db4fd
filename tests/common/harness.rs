//! `TestIndex`: one index directory and the built `ndd-index` binary. Every subcommand that
//! takes `--index` goes through it, so no test builds that argument vector by hand: the typed
//! calls (`ingest`, `add`, `pairs`, `clusters`, `query`, `delete`, `compact`, `verify`,
//! `stats`) parse the `--json` (or tab-separated) output, and `run` / `run_raw` / `cmd` take
//! any other arguments.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The `ndd-index` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_ndd-index");

/// A line of `pairs`: key_a, key_b (key_a < key_b), resemblance (or the method's similarity).
pub type Pair = (String, String, f64);

/// A line of `clusters --json`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cluster {
    pub id: u64,
    pub representative: String,
    /// Members as printed (the `size` field is checked against their number when parsed).
    pub members: Vec<String>,
}

impl Cluster {
    /// The members, sorted.
    pub fn sorted(&self) -> Vec<String> {
        let mut m = self.members.clone();
        m.sort();
        m
    }
}

/// An index directory and the binary that works on it.
pub struct TestIndex {
    path: PathBuf,
    bin: PathBuf,
    /// Working directory of the runs (input keys are relative to it); the caller's if None.
    cwd: Option<PathBuf>,
    /// Owned when made by `new`: removed on drop.
    tmp: Option<tempfile::TempDir>,
}

impl TestIndex {
    /// An index at `<fresh temp dir>/idx` (not created yet); `work()` is that temp dir, for
    /// the test's inputs. Everything is removed on drop.
    pub fn new(name: &str) -> TestIndex {
        let tmp = super::temp_dir(name);
        let mut ix = TestIndex::at(tmp.path().join("idx"));
        ix.tmp = Some(tmp);
        ix
    }

    /// The index at `path` (which may not exist yet), not owned.
    pub fn at(path: impl AsRef<Path>) -> TestIndex {
        TestIndex {
            path: std::path::absolute(path.as_ref()).expect("absolute index path"),
            bin: PathBuf::from(BIN),
            cwd: None,
            tmp: None,
        }
    }

    /// The same index, run from `cwd` (so relative inputs give relative keys).
    pub fn in_dir(&self, cwd: impl AsRef<Path>) -> TestIndex {
        TestIndex {
            path: self.path.clone(),
            bin: self.bin.clone(),
            cwd: Some(cwd.as_ref().to_path_buf()),
            tmp: None,
        }
    }

    /// The index directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The index directory as text.
    pub fn p(&self) -> &str {
        self.path.to_str().expect("utf-8 index path")
    }

    /// The temp dir of `new` (the index's parent for `at`): room for the test's inputs.
    pub fn work(&self) -> &Path {
        match &self.tmp {
            Some(t) => t.path(),
            None => self.path.parent().expect("index path has a parent"),
        }
    }

    /// `ndd-index SUB --index PATH REST...` for `args = [SUB, REST...]`, not started.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let (sub, rest) = args.split_first().expect("a subcommand");
        let mut c = Command::new(&self.bin);
        c.arg(sub).arg("--index").arg(&self.path).args(rest);
        if let Some(d) = &self.cwd {
            c.current_dir(d);
        }
        c
    }

    /// Runs `args` (see `cmd`), whatever its exit status.
    pub fn run_raw(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run ndd-index")
    }

    /// Runs `args` (see `cmd`); panics with its stderr when it fails.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.run_raw(args);
        assert!(
            out.status.success(),
            "ndd-index {:?} on {} failed ({}):\n{}{}",
            args,
            self.path.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Standard output of a successful run of `args`.
    pub fn stdout(&self, args: &[&str]) -> String {
        super::stdout(&self.run(args))
    }

    /// `args` plus `--json`, run successfully; its standard output as one JSON value.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--json");
        parse_json(&self.stdout(&a))
    }

    /// `ingest --json --quiet EXTRA... INPUTS...`: the batch summary.
    pub fn ingest<P: AsRef<Path>>(&self, inputs: &[P], extra: &[&str]) -> Value {
        let mut a = vec!["ingest", "--quiet"];
        a.extend_from_slice(extra);
        let inputs = texts(inputs);
        a.extend(inputs.iter().map(String::as_str));
        self.json(&a)
    }

    /// `ingest --json --quiet --report FILE EXTRA... INPUTS...` (the report in a temp file):
    /// the report's lines, one a document.
    pub fn ingest_report<P: AsRef<Path>>(&self, inputs: &[P], extra: &[&str]) -> Vec<Value> {
        let report = tempfile::NamedTempFile::new_in(super::temp_root()).expect("report file");
        let rp = report.path().to_str().expect("utf-8 path");
        let mut a = vec!["--report", rp];
        a.extend_from_slice(extra);
        self.ingest(inputs, &a);
        super::report_lines(report.path())
    }

    /// `add --json EXTRA... FILES...` (from `in_dir`'s directory, if set): the report lines and
    /// the summary.
    pub fn add(&self, files: &[&str], extra: &[&str]) -> (Vec<Value>, Value) {
        let mut a = vec!["add", "--json"];
        a.extend_from_slice(extra);
        a.extend_from_slice(files);
        let mut lines = json_lines(&self.stdout(&a));
        let summary = lines.pop().expect("add prints a summary line");
        (lines, summary)
    }

    /// `pairs --threshold T`.
    pub fn pairs(&self, threshold: &str) -> Vec<Pair> {
        self.pairs_with(&["--threshold", threshold])
    }

    /// `pairs EXTRA...` (a method, a threshold, `--matching`, ...), in the printed order.
    pub fn pairs_with(&self, extra: &[&str]) -> Vec<Pair> {
        let mut a = vec!["pairs"];
        a.extend_from_slice(extra);
        parse_pair_lines(&self.stdout(&a))
    }

    /// `clusters --json`: the clusters kept at ingest.
    pub fn clusters(&self) -> Vec<Cluster> {
        self.clusters_with(&[])
    }

    /// `clusters --json EXTRA...` (`--threshold`, `--method`), in the printed order.
    pub fn clusters_with(&self, extra: &[&str]) -> Vec<Cluster> {
        let mut a = vec!["clusters", "--json"];
        a.extend_from_slice(extra);
        self.stdout(&a).lines().map(parse_cluster).collect()
    }

    /// `query --json EXTRA... PROBES...`: one answer a probe, without its timing ("micros").
    pub fn query<P: AsRef<Path>>(&self, probes: &[P], extra: &[&str]) -> Vec<Value> {
        let mut a = vec!["query", "--json"];
        a.extend_from_slice(extra);
        let probes = texts(probes);
        a.extend(probes.iter().map(String::as_str));
        json_lines(&self.stdout(&a))
            .into_iter()
            .map(|mut v| {
                v.as_object_mut()
                    .expect("an answer object")
                    .remove("micros");
                v
            })
            .collect()
    }

    /// `delete --json ARGS...` (keys, `--batch NAME`, `--older-than WHEN`): the summary.
    pub fn delete(&self, args: &[&str]) -> Value {
        let mut a = vec!["delete"];
        a.extend_from_slice(args);
        self.json(&a)
    }

    /// `compact --json EXTRA...` (`--full`): the summary.
    pub fn compact(&self, extra: &[&str]) -> Value {
        let mut a = vec!["compact"];
        a.extend_from_slice(extra);
        self.json(&a)
    }

    /// `verify --json`, which must pass: its report.
    pub fn verify(&self) -> Value {
        let (code, v) = self.verify_status();
        assert_eq!(
            code,
            Some(0),
            "verify of {} failed: {v}",
            self.path.display()
        );
        v
    }

    /// `verify --json`, whatever its exit status: the status code and the report.
    pub fn verify_status(&self) -> (Option<i32>, Value) {
        let out = self.run_raw(&["verify", "--json"]);
        let text = super::stdout(&out);
        let v = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "verify --json printed no JSON ({e}): {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), v)
    }

    /// `stats --json`.
    pub fn stats(&self) -> Value {
        self.json(&["stats"])
    }
}

fn texts<P: AsRef<Path>>(paths: &[P]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.as_ref().to_str().expect("utf-8 path").to_owned())
        .collect()
}

/// One JSON value (surrounding white space allowed).
pub fn parse_json(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// One JSON value a line.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(parse_json).collect()
}

/// `pairs` text output: `key_a \t key_b \t value`, key_a < key_b.
pub fn parse_pair_lines(text: &str) -> Vec<Pair> {
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "bad pairs line {l:?}");
            assert!(f[0] < f[1], "key_a must sort before key_b: {l:?}");
            let v = f[2]
                .parse()
                .unwrap_or_else(|e| panic!("bad value in {l:?}: {e}"));
            (f[0].to_owned(), f[1].to_owned(), v)
        })
        .collect()
}

/// A `clusters --json` line.
pub fn parse_cluster(line: &str) -> Cluster {
    let v = parse_json(line);
    let members: Vec<String> = v["members"]
        .as_array()
        .unwrap_or_else(|| panic!("no members: {line}"))
        .iter()
        .map(|k| k.as_str().expect("a key").to_owned())
        .collect();
    assert_eq!(
        v["size"].as_u64(),
        Some(members.len() as u64),
        "size and members disagree: {line}"
    );
    Cluster {
        id: v["cluster"].as_u64().expect("a cluster id"),
        representative: v["representative"]
            .as_str()
            .expect("a representative")
            .to_owned(),
        members,
    }
}
