//! TREC run and qrels files, read whole, with every malformed line an error naming file and line.
//!
//! Run lines are `qid Q0 docno rank score tag` (six fields separated by white space). As in
//! trec_eval, a topic's list is ordered by score descending, ties by docno descending (byte
//! order), and the rank column is ignored. A docno listed twice for one topic is an error (the
//! two lines are named). Qrels lines are `qid iter docno rel` with an integer `rel`; relevant
//! means `rel > 0`; a pair listed twice keeps its highest judgment. Blank lines are skipped.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Docnos, each stored once however many runs list it (3.5M run lines name far fewer
/// documents).
#[derive(Debug, Default)]
pub struct Docnos {
    ids: HashMap<Arc<str>, u32>,
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

/// One line of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunEntry {
    /// The docno's id in the [`Docnos`] the run was read with.
    pub docno: u32,
    pub score: f64,
    /// The score as written when Rust's shortest form of `score` differs from it (`9.50`,
    /// `1e3`), so `--dedup-run` writes it back byte for byte.
    pub score_text: Option<Box<str>>,
    /// Index into [`Run::labels`]: the line's second column and tag.
    pub label: u32,
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

impl Run {
    /// The score of `e` as written.
    pub fn score_text(e: &RunEntry) -> String {
        e.score_text
            .as_deref()
            .map_or_else(|| e.score.to_string(), str::to_string)
    }
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

fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() as u64;
        bad(path, line, "not UTF-8 text")
    })
}

/// Reads a TREC run file, interning its docnos into `docnos`.
pub fn read_run(path: &Path, docnos: &mut Docnos) -> Result<Run> {
    let text = read_text(path)?;
    parse_run(path, &text, docnos)
}

/// Parses the text of a run file (`path` only names it in errors).
pub fn parse_run(path: &Path, text: &str, docnos: &mut Docnos) -> Result<Run> {
    let mut topics: BTreeMap<TopicId, Vec<RunEntry>> = BTreeMap::new();
    let mut labels: Vec<(String, String)> = Vec::new();
    let mut topic_of: HashMap<&str, TopicId> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = u32::try_from(i + 1)
            .map_err(|_| bad(path, i as u64 + 1, "more than 4 billion lines"))?;
        let f: Vec<&str> = raw.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() != 6 {
            return Err(bad(
                path,
                line.into(),
                format!(
                    "malformed run line: {} fields, expected 6 (qid Q0 docno rank score tag)",
                    f.len()
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
        let label = match labels.iter().position(|(q, t)| q == f[1] && t == f[5]) {
            Some(l) => l,
            None => {
                labels.push((f[1].to_string(), f[5].to_string()));
                labels.len() - 1
            }
        } as u32;
        let topic = topic_of
            .entry(f[0])
            .or_insert_with(|| TopicId::new(f[0]))
            .clone();
        topics.entry(topic).or_default().push(RunEntry {
            docno: docnos.intern(f[2]),
            score,
            score_text: (score.to_string() != f[4]).then(|| f[4].into()),
            label,
            line,
        });
    }
    if labels.is_empty() {
        return Err(bad(
            path,
            1,
            "empty run file (no `qid Q0 docno rank score tag` line)",
        ));
    }
    for (topic, list) in topics.iter_mut() {
        // A docno twice in one topic: name the later line and the first.
        list.sort_unstable_by_key(|e| (e.docno, e.line));
        if let Some(w) = list.windows(2).find(|w| w[0].docno == w[1].docno) {
            return Err(bad(
                path,
                w[1].line.into(),
                format!(
                    "document {} is listed twice for topic {topic} (also on line {})",
                    docnos.name(w[0].docno),
                    w[0].line
                ),
            ));
        }
        list.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| {
                docnos
                    .name(b.docno)
                    .as_bytes()
                    .cmp(docnos.name(a.docno).as_bytes())
            })
        });
    }
    Ok(Run {
        name: labels[0].1.clone(),
        path: path.to_path_buf(),
        topics,
        labels,
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
        // Scores are written back as they were: "2.0" and "5e0" are not Rust's shortest forms.
        let texts: Vec<String> = r.topics[&TopicId::new("10")]
            .iter()
            .map(Run::score_text)
            .collect();
        assert_eq!(texts, ["5e0", "2.0", "2.0"]);
        let x = &r.topics[&TopicId::new("2")][0];
        assert_eq!(
            (x.score_text.as_deref(), Run::score_text(x)),
            (None, "1".to_string())
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
