//! Near-duplicates in ranked results (Nikkhoo, chapters 3.2 and 4): TREC runs and qrels
//! against an index that holds their documents.
//!
//! [`analyze`] reads the runs (and qrels), maps each docno to a document of the index (its key:
//! a WARC-TREC-ID, a TREC web DOCNO, ...), and for each topic computes the similar pairs inside
//! the topic's documents only ([`pairs::topic_pairs`]), down to the lowest resemblance any
//! count needs. Every count of [`RunsReport`] then follows from those pairs
//! ([`stats`]). [`write_dedup_runs`] writes each run again without its redundant documents.

pub mod pairs;
pub mod parse;
pub mod report;
pub mod stats;
pub mod svg;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::input::site::url_host as site;
use crate::threshold::Threshold;
use crate::Index;
pub use pairs::TopicPair;
pub use parse::{read_qrels, read_run, Docnos, Qrels, Run, RunEntry, TopicId};
use stats::{duplicated_at_levels, duplicated_in, levels, redundant_flags, Neighbors};

/// What `ndd-index runs` computes.
#[derive(Clone, Debug)]
pub struct RunsRequest {
    /// Run files (TREC format); each run is named by its tag.
    pub runs: Vec<PathBuf>,
    /// Relevance judgments, for the prevalence among relevant documents.
    pub qrels: Option<PathBuf>,
    /// T: the resemblance of redundancy, of `run_topics.duplicated` and of `sources`.
    pub threshold: Threshold,
    /// The list depths n of `run_topics` and `table`.
    pub top: Vec<usize>,
    /// Any docno not in the index is an error.
    pub strict: bool,
}

impl RunsRequest {
    pub fn new(runs: Vec<PathBuf>) -> Self {
        RunsRequest {
            runs,
            qrels: None,
            threshold: Threshold::from_ratio(1, 2),
            top: vec![10, 20, 50, 100, 200, 500],
            strict: false,
        }
    }
}

/// A run read.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub run: String,
    pub file: String,
    pub topics: usize,
    pub documents: usize,
}

/// A topic collection: all runs' documents for the topic (thesis Figures 4.1-4.5).
#[derive(Clone, Debug, Serialize)]
pub struct TopicRow {
    pub topic: String,
    pub docs: u64,
    pub duplicated: BTreeMap<String, u64>,
}

/// One run's top n for one topic, at T.
#[derive(Clone, Debug, Serialize)]
pub struct RunTopicRow {
    pub run: String,
    pub topic: String,
    pub n: usize,
    /// min(n, list length).
    pub docs: u64,
    pub duplicated: u64,
    pub redundant: u64,
}

/// A row of Table 4.1.
#[derive(Clone, Debug, Serialize)]
pub struct TableRow {
    pub at_least_percent: u32,
    /// Share (percent) of the run-topics whose redundant / docs is at least `at_least_percent`.
    pub run_topics_percent: f64,
}

/// Table 4.1 for one n.
#[derive(Clone, Debug, Serialize)]
pub struct TableN {
    pub n: usize,
    /// Run-topics counted (those with at least one document).
    pub run_topics: u64,
    pub rows: Vec<TableRow>,
}

/// Prevalence among one topic's relevant documents.
#[derive(Clone, Debug, Serialize)]
pub struct QrelsTopic {
    pub topic: String,
    pub relevant: u64,
    pub duplicated: BTreeMap<String, u64>,
}

/// Prevalence among the relevant documents (thesis Figure 3.4), summed over topics.
#[derive(Clone, Debug, Serialize)]
pub struct QrelsReport {
    pub relevant: u64,
    pub duplicated: BTreeMap<String, u64>,
    pub topics: Vec<QrelsTopic>,
}

/// The distinct pairs at >= T inside some topic collection, by source (thesis 4.2).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sources {
    pub pairs: u64,
    pub same_site: u64,
    pub different_site: u64,
    /// Pairs where a document has no URL in the index.
    pub unknown_site: u64,
}

/// Docnos of the runs (and relevant docnos of the qrels) that are not in the index.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Unresolved {
    pub count: u64,
    pub examples: Vec<String>,
}

/// Everything `ndd-index runs` reports (the `--json` output).
#[derive(Clone, Debug, Serialize)]
pub struct RunsReport {
    pub threshold: f64,
    pub top: Vec<usize>,
    pub runs: Vec<RunInfo>,
    pub topics: Vec<TopicRow>,
    pub run_topics: Vec<RunTopicRow>,
    pub table: Vec<TableN>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qrels: Option<QrelsReport>,
    pub sources: Sources,
    pub unresolved: Unresolved,
    pub seconds: f64,
}

/// The report, plus per run and topic the redundancy flags of the whole list (for
/// [`write_dedup_runs`]).
pub struct Analysis {
    pub report: RunsReport,
    pub runs: Vec<Run>,
    pub docnos: Docnos,
    /// `flags[r][topic]`: for run `r`, `true` at each redundant position of the topic's list.
    pub flags: Vec<BTreeMap<TopicId, Vec<bool>>>,
}

/// How many unresolved docnos are named in the report and in `--strict`'s error.
const EXAMPLES: usize = 10;

/// Reads the runs and qrels of `req` and computes every count against `index`.
pub fn analyze(index: &Index, req: &RunsRequest) -> Result<Analysis> {
    let started = Instant::now();
    let t = req.threshold;
    if t.as_f64() <= 0.0 {
        return Err(Error::InvalidArgument(
            "--threshold must be above 0 (every pair would be similar)".into(),
        ));
    }
    if req.top.is_empty() || req.top.contains(&0) {
        return Err(Error::InvalidArgument(
            "--top needs list depths of at least 1 (e.g. 10,20,50)".into(),
        ));
    }
    if req.runs.is_empty() {
        return Err(Error::InvalidArgument("no run files given".into()));
    }
    let mut docnos = Docnos::default();
    let runs: Vec<Run> = req
        .runs
        .iter()
        .map(|p| read_run(p, &mut docnos))
        .collect::<Result<_>>()?;
    let mut names: HashMap<&str, &Path> = HashMap::new();
    for r in &runs {
        if let Some(other) = names.insert(&r.name, &r.path) {
            return Err(Error::InvalidArgument(format!(
                "two runs are named {:?} (tag of {} and of {}): a run is named by its tag",
                r.name,
                other.display(),
                r.path.display()
            )));
        }
    }
    let qrels = req.qrels.as_deref().map(read_qrels).transpose()?;

    // docno -> live doc id, looked up once per distinct docno (runs first, then qrels).
    let view = index.view();
    let catalog = index.catalog();
    if let Some(q) = &qrels {
        for topic in q.topics.keys() {
            for d in q.relevant(topic) {
                docnos.intern(d);
            }
        }
    }
    let resolved: Vec<Option<u32>> = (0..docnos.len() as u32)
        .map(|i| {
            Ok(catalog
                .doc_by_key(docnos.name(i))?
                .filter(|&d| view.is_live(d)))
        })
        .collect::<Result<_>>()?;
    let mut unresolved: BTreeSet<&str> = BTreeSet::new();
    // Per run, topic: the list as doc ids (None = unresolved).
    let mut lists: Vec<BTreeMap<TopicId, Vec<Option<u32>>>> = Vec::with_capacity(runs.len());
    for r in &runs {
        let mut m = BTreeMap::new();
        for (topic, entries) in &r.topics {
            let mut l = Vec::with_capacity(entries.len());
            for e in entries {
                let id = resolved[e.docno as usize];
                if id.is_none() {
                    unresolved.insert(docnos.name(e.docno));
                }
                l.push(id);
            }
            m.insert(topic.clone(), l);
        }
        lists.push(m);
    }
    let resolve_qrel = |d: &str| docnos.get(d).and_then(|i| resolved[i as usize]);
    let mut relevant: BTreeMap<TopicId, Vec<Option<u32>>> = BTreeMap::new();
    if let Some(q) = &qrels {
        for topic in q.topics.keys() {
            let mut l = Vec::new();
            for docno in q.relevant(topic) {
                let id = resolve_qrel(docno);
                if id.is_none() {
                    unresolved.insert(docno);
                }
                l.push(id);
            }
            relevant.insert(topic.clone(), l);
        }
    }
    let unresolved = Unresolved {
        count: unresolved.len() as u64,
        examples: unresolved
            .into_iter()
            .take(EXAMPLES)
            .map(str::to_string)
            .collect(),
    };
    if req.strict && unresolved.count > 0 {
        return Err(Error::InvalidArgument(format!(
            "--strict: {} docno(s) of the runs or qrels are not in the index (e.g. {})",
            unresolved.count,
            unresolved.examples.join(", ")
        )));
    }

    // Topic by topic: the pairs of its documents down to the lowest level needed.
    let sample = index.options().sample()?;
    let lowest = levels()
        .into_iter()
        .map(|(_, l)| l)
        .chain([t])
        .min_by(|a, b| a.as_f64().total_cmp(&b.as_f64()))
        .expect("nine levels");
    let mut all_topics: BTreeSet<TopicId> = lists.iter().flat_map(|m| m.keys().cloned()).collect();
    all_topics.extend(relevant.keys().cloned());
    let mut topics = Vec::new();
    let mut run_topics = Vec::new();
    let mut flags: Vec<BTreeMap<TopicId, Vec<bool>>> = vec![BTreeMap::new(); runs.len()];
    let mut qrels_topics = Vec::new();
    let mut source_pairs: BTreeSet<(u32, u32)> = BTreeSet::new();
    for topic in &all_topics {
        let mut run_docs: BTreeSet<u32> = BTreeSet::new();
        let mut run_docnos: BTreeSet<u32> = BTreeSet::new();
        for (r, m) in runs.iter().zip(&lists) {
            if let (Some(entries), Some(l)) = (r.topics.get(topic), m.get(topic)) {
                run_docnos.extend(entries.iter().map(|e| e.docno));
                run_docs.extend(l.iter().flatten());
            }
        }
        let rel: BTreeSet<u32> = relevant
            .get(topic)
            .map(|l| l.iter().flatten().copied().collect())
            .unwrap_or_default();
        let docs: Vec<u32> = run_docs.union(&rel).copied().collect();
        let pairs = pairs::topic_pairs(view, sample, lowest, &docs)?;
        if !run_docnos.is_empty() {
            topics.push(TopicRow {
                topic: topic.text.clone(),
                docs: run_docnos.len() as u64,
                duplicated: duplicated_at_levels(&pairs, |d| run_docs.contains(&d)),
            });
            source_pairs.extend(
                pairs
                    .iter()
                    .filter(|p| t.admits(p.inter, p.denom))
                    .filter(|p| run_docs.contains(&p.a) && run_docs.contains(&p.b))
                    .map(|p| (p.a, p.b)),
            );
        }
        if let Some(l) = relevant.get(topic) {
            qrels_topics.push(QrelsTopic {
                topic: topic.text.clone(),
                relevant: l.len() as u64,
                duplicated: duplicated_at_levels(&pairs, |d| rel.contains(&d)),
            });
        }
        let nb = Neighbors::new(&pairs, t);
        for (ri, (r, m)) in runs.iter().zip(&lists).enumerate() {
            let Some(list) = m.get(topic) else { continue };
            let red = redundant_flags(list, &nb);
            for &n in &req.top {
                let k = n.min(list.len());
                run_topics.push(RunTopicRow {
                    run: r.name.clone(),
                    topic: topic.text.clone(),
                    n,
                    docs: k as u64,
                    duplicated: duplicated_in(&list[..k], &nb),
                    redundant: red[..k].iter().filter(|&&x| x).count() as u64,
                });
            }
            flags[ri].insert(topic.clone(), red);
        }
    }

    let table = req.top.iter().map(|&n| table_for(&run_topics, n)).collect();
    let qrels = qrels.map(|_| {
        let mut duplicated: BTreeMap<String, u64> =
            levels().into_iter().map(|(l, _)| (l, 0)).collect();
        for q in &qrels_topics {
            for (l, c) in &q.duplicated {
                *duplicated.entry(l.clone()).or_default() += c;
            }
        }
        QrelsReport {
            relevant: qrels_topics.iter().map(|q| q.relevant).sum(),
            duplicated,
            topics: qrels_topics,
        }
    });
    let sources = sources_of(index, &source_pairs)?;
    let report = RunsReport {
        threshold: t.as_f64(),
        top: req.top.clone(),
        runs: runs
            .iter()
            .map(|r| RunInfo {
                run: r.name.clone(),
                file: r.path.display().to_string(),
                topics: r.topics.len(),
                documents: r.topics.values().map(Vec::len).sum(),
            })
            .collect(),
        topics,
        run_topics,
        table,
        qrels,
        sources,
        unresolved,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok(Analysis {
        report,
        runs,
        docnos,
        flags,
    })
}

/// Table 4.1 at depth `n`: for 5%, 10%, ..., 95%, the share of run-topics whose
/// redundant / docs is at least that (decided in integers).
pub fn table_for(run_topics: &[RunTopicRow], n: usize) -> TableN {
    let rows: Vec<&RunTopicRow> = run_topics
        .iter()
        .filter(|r| r.n == n && r.docs > 0)
        .collect();
    let total = rows.len() as u64;
    TableN {
        n,
        run_topics: total,
        rows: (5..=95)
            .step_by(5)
            .map(|p: u32| {
                let c = rows
                    .iter()
                    .filter(|r| r.redundant * 100 >= p as u64 * r.docs)
                    .count() as f64;
                TableRow {
                    at_least_percent: p,
                    run_topics_percent: if total == 0 {
                        0.0
                    } else {
                        100.0 * c / total as f64
                    },
                }
            })
            .collect(),
    }
}

/// Same-site and different-site counts of the pairs, from the URLs in the catalog.
fn sources_of(index: &Index, pairs: &BTreeSet<(u32, u32)>) -> Result<Sources> {
    let ids: BTreeSet<u32> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
    let ids: Vec<u32> = ids.into_iter().collect();
    let mut sites: HashMap<u32, Option<String>> = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(4096) {
        for (d, r) in chunk.iter().zip(index.catalog().docs(chunk)?) {
            sites.insert(*d, r.and_then(|r| r.url).as_deref().and_then(site));
        }
    }
    let mut s = Sources {
        pairs: pairs.len() as u64,
        ..Sources::default()
    };
    for (a, b) in pairs {
        match (&sites[a], &sites[b]) {
            (Some(x), Some(y)) if x == y => s.same_site += 1,
            (Some(_), Some(_)) => s.different_site += 1,
            _ => s.unknown_site += 1,
        }
    }
    Ok(s)
}

/// Writes each run of `a` again into `out_dir`, under its own file name, without its redundant
/// documents: ranks renumbered 1..k in trec_eval order, everything else as written. All files
/// are written under temporary names first and renamed at the end, so a failure leaves none.
pub fn write_dedup_runs(a: &Analysis, out_dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let mut targets: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut names: HashMap<std::ffi::OsString, &Path> = HashMap::new();
    for r in &a.runs {
        let name = r.path.file_name().ok_or_else(|| {
            Error::InvalidArgument(format!("run path {} has no file name", r.path.display()))
        })?;
        if let Some(other) = names.insert(name.to_owned(), &r.path) {
            return Err(Error::InvalidArgument(format!(
                "--dedup-run: runs {} and {} have the same file name",
                other.display(),
                r.path.display()
            )));
        }
        let dest = out_dir.join(name);
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(".tmp");
        targets.push((out_dir.join(tmp_name), dest));
    }
    let cleanup = |targets: &[(PathBuf, PathBuf)]| {
        for (tmp, _) in targets {
            let _ = std::fs::remove_file(tmp);
        }
    };
    for ((r, flags), (tmp, _)) in a.runs.iter().zip(&a.flags).zip(&targets) {
        if let Err(e) = write_one(r, &a.docnos, flags, tmp) {
            cleanup(&targets);
            return Err(e);
        }
    }
    for (tmp, dest) in &targets {
        if let Err(e) = std::fs::rename(tmp, dest) {
            cleanup(&targets);
            return Err(Error::io(dest, e));
        }
    }
    Ok(targets.into_iter().map(|(_, d)| d).collect())
}

fn write_one(
    r: &Run,
    docnos: &Docnos,
    flags: &BTreeMap<TopicId, Vec<bool>>,
    tmp: &Path,
) -> Result<()> {
    let f = std::fs::File::create(tmp).map_err(|e| Error::io(tmp, e))?;
    let mut w = std::io::BufWriter::new(f);
    for (topic, entries) in &r.topics {
        let red = &flags[topic];
        let mut rank = 0u64;
        for (e, &skip) in entries.iter().zip(red) {
            if skip {
                continue;
            }
            rank += 1;
            let (q0, tag) = &r.labels[e.label as usize];
            writeln!(
                w,
                "{} {q0} {} {rank} {} {tag}",
                topic.text,
                docnos.name(e.docno),
                Run::score_text(e)
            )
            .map_err(|e| Error::io(tmp, e))?;
        }
    }
    let f = w.into_inner().map_err(|e| Error::io(tmp, e.into_error()))?;
    f.sync_all().map_err(|e| Error::io(tmp, e))
}
