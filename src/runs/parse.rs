//! TREC run and qrels files, read whole, with every malformed line an error naming file and line.
//!
//! Run lines are `qid Q0 docno rank score tag` (six fields separated by white space). As in
//! trec_eval, a topic's list is ordered by score descending, ties by docno descending (byte
//! order), and the rank column is ignored. A docno listed twice for one topic is an error (the
//! two lines are named). Qrels lines are `qid iter docno rel` with an integer `rel`; relevant
//! means `rel > 0`; a pair listed twice keeps its highest judgment. Blank lines are skipped.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};

/// A fast hasher for docnos (xxh3 of the bytes; SipHash's DoS resistance buys nothing here).
#[derive(Default)]
pub struct StrHasher(u64);

impl Hasher for StrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    fn write_u8(&mut self, b: u8) {
        self.0 = crate::fingerprint::hash::mix64(self.0 ^ b as u64);
    }
}

type StrMap<K, V> = HashMap<K, V, BuildHasherDefault<StrHasher>>;

/// Docnos, each stored once however many runs list it (3.5M run lines name far fewer
/// documents).
#[derive(Debug, Default)]
pub struct Docnos {
    ids: StrMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl Docnos {
    /// The id of `docno`, added if new.
    pub fn intern(&mut self, docno: &str) -> u32 {
        if let Some(&id) = self.ids.get(docno) {
            return id;
        }
        let id = self.names.len() as u32;
        let name: Arc<str> = Arc::from(docno);
        self.names.push(name.clone());
        self.ids.insert(name, id);
        id
    }

    /// The id of `docno`, if interned.
    pub fn get(&self, docno: &str) -> Option<u32> {
        self.ids.get(docno).copied()
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// One line of a run: 16 bytes, so 3.5M lines take 56 MB. The line's other columns (second
/// column, tag, the score as written) are read again from the file by `--dedup-run`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunEntry {
    pub score: f64,
    /// The docno's id in the [`Docnos`] the run was read with.
    pub docno: u32,
    /// 1-based line number in its file.
    pub line: u32,
}

/// A parsed run file.
#[derive(Clone, Debug)]
pub struct Run {
    /// The run's name: the tag of its first line.
    pub name: String,
    pub path: PathBuf,
    /// Topic -> entries in trec_eval order (score descending, then docno descending).
    pub topics: BTreeMap<TopicId, Vec<RunEntry>>,
    /// The distinct (second column, tag) pairs of its lines (normally one: `Q0`, the tag).
    pub labels: Vec<(String, String)>,
}

/// A topic id, ordered numerically when it is a number ("2" < "10"), else bytewise.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicId {
    num: Option<u64>,
    pub text: String,
}

impl TopicId {
    pub fn new(text: &str) -> Self {
        TopicId {
            num: text.parse().ok(),
            text: text.to_string(),
        }
    }
}

impl std::fmt::Display for TopicId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn bad(path: &Path, line: u64, reason: impl Into<String>) -> Error {
    Error::BadLine {
        path: path.to_path_buf(),
        line,
        reason: reason.into(),
    }
}

pub(crate) fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() as u64;
        bad(path, line, "not UTF-8 text")
    })
}

/// The white-space separated fields of a line: the first six, and how many there are (no
/// allocation per line).
pub(crate) fn fields(raw: &str) -> ([&str; 6], usize) {
    let mut f = [""; 6];
    let mut n = 0;
    for x in raw.split_whitespace() {
        if n < 6 {
            f[n] = x;
        }
        n += 1;
    }
    (f, n)
}

/// Reads a TREC run file, interning its docnos into `docnos`.
pub fn read_run(path: &Path, docnos: &mut Docnos) -> Result<Run> {
    let text = read_text(path)?;
    parse_run(path, &text, docnos)
}

/// Reads run files, as many at once as there are threads (parsing, the duplicate check and
/// trec_eval's sort run in parallel; the docnos are interned in file order, so ids are the same
/// as reading them one by one). An error names the first bad file in the order given.
pub fn read_runs(paths: &[PathBuf], docnos: &mut Docnos) -> Result<Vec<Run>> {
    let mut runs = Vec::with_capacity(paths.len());
    for chunk in paths.chunks(rayon::current_num_threads().max(1)) {
        let texts: Vec<Result<String>> = chunk.par_iter().map(|p| read_text(p)).collect();
        let texts: Vec<String> = texts.into_iter().collect::<Result<_>>()?;
        let locals: Vec<Result<LocalRun<'_>>> = chunk
            .par_iter()
            .zip(&texts)
            .map(|(p, t)| parse_local(p, t))
            .collect();
        for local in locals {
            runs.push(local?.finish(docnos));
        }
    }
    Ok(runs)
}

/// Parses the text of a run file (`path` only names it in errors).
pub fn parse_run(path: &Path, text: &str, docnos: &mut Docnos) -> Result<Run> {
    Ok(parse_local(path, text)?.finish(docnos))
}

/// A run parsed, its docnos numbered within the file (ids into `names`, slices of its text).
struct LocalRun<'t> {
    path: PathBuf,
    topics: Vec<(TopicId, Vec<RunEntry>)>,
    labels: Vec<(String, String)>,
    names: Vec<&'t str>,
}

impl LocalRun<'_> {
    /// The run with its docnos interned into `docnos`, in the order they appear in the file.
    fn finish(self, docnos: &mut Docnos) -> Run {
        let global: Vec<u32> = self.names.iter().map(|d| docnos.intern(d)).collect();
        let topics = self
            .topics
            .into_iter()
            .map(|(t, mut list)| {
                for e in &mut list {
                    e.docno = global[e.docno as usize];
                }
                (t, list)
            })
            .collect();
        Run {
            name: self.labels[0].1.clone(),
            path: self.path,
            topics,
            labels: self.labels,
        }
    }
}

fn parse_local<'t>(path: &Path, text: &'t str) -> Result<LocalRun<'t>> {
    let mut topics: Vec<(TopicId, Vec<RunEntry>)> = Vec::new();
    let mut labels: Vec<(String, String)> = Vec::new();
    let mut topic_of: HashMap<&str, usize, BuildHasherDefault<StrHasher>> = HashMap::default();
    let mut local: StrMap<&'t str, u32> = HashMap::default();
    let mut names: Vec<&'t str> = Vec::new();
    // The topic of the previous line: runs list a topic's lines together.
    let mut last: Option<(&str, usize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = u32::try_from(i + 1)
            .map_err(|_| bad(path, i as u64 + 1, "more than 4 billion lines"))?;
        let (f, nf) = fields(raw);
        if nf == 0 {
            continue;
        }
        if nf != 6 {
            return Err(bad(
                path,
                line.into(),
                format!(
                    "malformed run line: {nf} fields, expected 6 (qid Q0 docno rank score tag)"
                ),
            ));
        }
        let score: f64 = f[4]
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite())
            .ok_or_else(|| {
                bad(
                    path,
                    line.into(),
                    format!("malformed run line: score {:?} is not a number", f[4]),
                )
            })?;
        if !labels.iter().any(|(q, t)| q == f[1] && t == f[5]) {
            labels.push((f[1].to_string(), f[5].to_string()));
        }
        let ti = match last {
            Some((q, ti)) if q == f[0] => ti,
            _ => {
                let next = topics.len();
                let ti = *topic_of.entry(f[0]).or_insert(next);
                if ti == next {
                    topics.push((TopicId::new(f[0]), Vec::new()));
                }
                last = Some((f[0], ti));
                ti
            }
        };
        let next = names.len() as u32;
        let docno = *local.entry(f[2]).or_insert(next);
        if docno == next {
            names.push(f[2]);
        }
        topics[ti].1.push(RunEntry { score, docno, line });
    }
    if labels.is_empty() {
        return Err(bad(
            path,
            1,
            "empty run file (no `qid Q0 docno rank score tag` line)",
        ));
    }
    // Errors name the first topic in topic order, as a map of topics would.
    topics.sort_by(|a, b| a.0.cmp(&b.0));
    for (topic, list) in topics.iter_mut() {
        // A docno twice in one topic: name the later line and the first.
        list.sort_unstable_by_key(|e| (e.docno, e.line));
        if let Some(w) = list.windows(2).find(|w| w[0].docno == w[1].docno) {
            return Err(bad(
                path,
                w[1].line.into(),
                format!(
                    "document {} is listed twice for topic {topic} (also on line {})",
                    names[w[0].docno as usize], w[0].line
                ),
            ));
        }
        list.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| {
                names[b.docno as usize]
                    .as_bytes()
                    .cmp(names[a.docno as usize].as_bytes())
            })
        });
    }
    Ok(LocalRun {
        path: path.to_path_buf(),
        topics,
        labels,
        names,
    })
}

/// Relevance judgments: topic -> docno -> highest judgment.
#[derive(Clone, Debug, Default)]
pub struct Qrels {
    pub topics: BTreeMap<TopicId, BTreeMap<String, i64>>,
}

impl Qrels {
    /// The relevant docnos (judgment > 0) of a topic, sorted.
    pub fn relevant(&self, topic: &TopicId) -> Vec<&str> {
        self.topics.get(topic).map_or_else(Vec::new, |m| {
            m.iter()
                .filter(|(_, &r)| r > 0)
                .map(|(d, _)| d.as_str())
                .collect()
        })
    }
}

/// Reads a qrels file.
pub fn read_qrels(path: &Path) -> Result<Qrels> {
    let text = read_text(path)?;
    parse_qrels(path, &text)
}

/// Parses the text of a qrels file (`path` only names it in errors).
pub fn parse_qrels(path: &Path, text: &str) -> Result<Qrels> {
    let mut q = Qrels::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i as u64 + 1;
        let f: Vec<&str> = raw.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() != 4 {
            return Err(bad(
                path,
                line,
                format!(
                    "malformed qrels line: {} fields, expected 4 (qid iter docno rel)",
                    f.len()
                ),
            ));
        }
        let rel: i64 = f[3].parse().map_err(|_| {
            bad(
                path,
                line,
                format!(
                    "malformed qrels line: judgment {:?} is not an integer",
                    f[3]
                ),
            )
        })?;
        let slot = q
            .topics
            .entry(TopicId::new(f[0]))
            .or_default()
            .entry(f[2].to_string())
            .or_insert(rel);
        *slot = (*slot).max(rel);
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_order_is_trec_evals() {
        let mut d = Docnos::default();
        let r = parse_run(
            Path::new("r"),
            "10 Q0 b 1 2.0 tagA\n2 Q0 x 9 1 tagA\n10 Q0 a 2 2.0 tagA\n\n10 Q0 c 3 5e0 tagA\n",
            &mut d,
        )
        .unwrap();
        assert_eq!(r.name, "tagA");
        let topics: Vec<&str> = r.topics.keys().map(|t| t.text.as_str()).collect();
        assert_eq!(topics, ["2", "10"]);
        let t10: Vec<&str> = r.topics[&TopicId::new("10")]
            .iter()
            .map(|e| d.name(e.docno))
            .collect();
        // Score descending, ties by docno descending; the rank column is ignored.
        assert_eq!(t10, ["c", "b", "a"]);
        // The lines behind the order (the dedup writer reads them again) and the docno ids in
        // order of first appearance.
        let lines: Vec<u32> = r.topics[&TopicId::new("10")]
            .iter()
            .map(|e| e.line)
            .collect();
        assert_eq!(lines, [5, 1, 3]);
        assert_eq!(
            (d.get("b"), d.get("x"), d.get("a"), d.get("c")),
            (Some(0), Some(1), Some(2), Some(3))
        );
        assert_eq!(r.labels, [("Q0".to_string(), "tagA".to_string())]);
    }

    #[test]
    fn malformed_run_lines_name_file_and_line() {
        let err = |text: &str| {
            parse_run(Path::new("runs/r1"), text, &mut Docnos::default())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("1 Q0 a 1 1.0 t\n1 Q0 b 2 0.5\n"),
            "runs/r1:2: malformed run line: 5 fields, expected 6 (qid Q0 docno rank score tag)"
        );
        assert_eq!(
            err("1 Q0 a 1 high t\n"),
            "runs/r1:1: malformed run line: score \"high\" is not a number"
        );
        assert_eq!(
            err("1 Q0 a 1 1 t\n2 Q0 a 1 1 t\n1 Q0 a 3 0 t\n"),
            "runs/r1:3: document a is listed twice for topic 1 (also on line 1)"
        );
        assert!(err("\n\n").contains("empty run file"));
    }

    #[test]
    fn qrels_relevant_and_errors() {
        let q = parse_qrels(
            Path::new("q"),
            "1 0 a 1\n1 0 b 0\n1 0 c -2\n1 0 b 2\n2 0 z 1\n",
        )
        .unwrap();
        assert_eq!(q.relevant(&TopicId::new("1")), ["a", "b"]);
        assert_eq!(q.relevant(&TopicId::new("3")), Vec::<&str>::new());
        let e = parse_qrels(Path::new("q"), "1 0 a 1\n1 0 b yes\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "q:2: malformed qrels line: judgment \"yes\" is not an integer"
        );
        let e = parse_qrels(Path::new("q"), "1 a 1\n").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("q:1: malformed qrels line: 3 fields"));
    }
}
