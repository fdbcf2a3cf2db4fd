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
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::input::site::url_host as site;
use crate::threshold::Threshold;
use crate::Index;
pub use pairs::TopicPair;
pub use parse::{read_qrels, read_run, read_runs, Docnos, Qrels, Run, RunEntry, TopicId};
use stats::{duplicated_from_best, duplicated_in, level_of, levels, redundant_flags, Neighbors};

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
    /// Memory budget of the topics' inverted indexes (all topics in work at once); `None`:
    /// [`crate::sort::default_mem`]. The rest of the heap is about 16 bytes per run line and
    /// 100 per distinct docno.
    pub mem: Option<u64>,
}

impl RunsRequest {
    pub fn new(runs: Vec<PathBuf>) -> Self {
        RunsRequest {
            runs,
            qrels: None,
            threshold: Threshold::from_ratio(1, 2),
            top: vec![10, 20, 50, 100, 200, 500],
            strict: false,
            mem: None,
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

/// What one topic contributes to the report.
struct TopicOut {
    row: Option<TopicRow>,
    qrels: Option<QrelsTopic>,
    run_topics: Vec<RunTopicRow>,
    /// (run index, redundancy flags of its list).
    flags: Vec<(usize, Vec<bool>)>,
    /// The pairs at >= T among the topic's run documents.
    sources: Vec<(u32, u32)>,
}

/// Reads the runs and qrels of `req` and computes every count against `index`.
///
/// Topics are worked on by as many workers as there are threads (each with `mem / workers`
/// for its inverted index, [`pairs::counted_pairs`]); the report is assembled in topic order,
/// so it does not depend on the number of threads.
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
    let mem = req.mem.unwrap_or_else(crate::sort::default_mem);
    if mem < MIN_MEM {
        return Err(Error::InvalidArgument(format!(
            "--mem {mem} is below the least `runs` works with ({} MiB)",
            MIN_MEM >> 20
        )));
    }
    let mut docnos = Docnos::default();
    let runs = parse::read_runs(&req.runs, &mut docnos)?;
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
    if let Some(q) = &qrels {
        for topic in q.topics.keys() {
            for d in q.relevant(topic) {
                docnos.intern(d);
            }
        }
    }
    let resolved = resolve(index, &docnos)?;
    // Every interned docno is a run's or a relevant one: the unresolved are those not found.
    let mut missing: Vec<&str> = (0..docnos.len() as u32)
        .filter(|&i| resolved[i as usize].is_none())
        .map(|i| docnos.name(i))
        .collect();
    missing.sort_unstable();
    let unresolved = Unresolved {
        count: missing.len() as u64,
        examples: missing
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
    let mut relevant: BTreeMap<TopicId, Vec<Option<u32>>> = BTreeMap::new();
    if let Some(q) = &qrels {
        for topic in q.topics.keys() {
            let l = q
                .relevant(topic)
                .into_iter()
                .map(|d| docnos.get(d).and_then(|i| resolved[i as usize]))
                .collect();
            relevant.insert(topic.clone(), l);
        }
    }

    // Topic by topic: the pairs of its documents down to the lowest level needed.
    let sample = index.options().sample()?;
    let lowest = levels()
        .into_iter()
        .map(|(_, l)| l)
        .chain([t])
        .min_by(|a, b| a.as_f64().total_cmp(&b.as_f64()))
        .expect("nine levels");
    let mut all_topics: BTreeSet<&TopicId> = runs.iter().flat_map(|r| r.topics.keys()).collect();
    all_topics.extend(relevant.keys());
    let all_topics: Vec<&TopicId> = all_topics.into_iter().collect();
    let ctx = TopicCtx {
        view,
        sample,
        lowest,
        t,
        top: &req.top,
        runs: &runs,
        resolved: &resolved,
        relevant: &relevant,
    };
    let workers = rayon::current_num_threads().min(all_topics.len()).max(1);
    let per_topic = mem / workers as u64;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let outs: Vec<Mutex<Option<Result<TopicOut>>>> =
        all_topics.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= all_topics.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                let out = ctx.topic(all_topics[i], per_topic);
                if out.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                *outs[i].lock().expect("no worker panics holding it") = Some(out);
            });
        }
    });
    let mut topics = Vec::new();
    let mut run_topics = Vec::new();
    let mut flags: Vec<BTreeMap<TopicId, Vec<bool>>> = vec![BTreeMap::new(); runs.len()];
    let mut qrels_topics = Vec::new();
    let mut source_pairs: BTreeSet<(u32, u32)> = BTreeSet::new();
    for (topic, out) in all_topics.iter().zip(outs) {
        // Topics after a failed one may not have run: the first error in topic order wins.
        let Some(out) = out.into_inner().expect("no worker panics holding it") else {
            continue;
        };
        let out = out?;
        topics.extend(out.row);
        qrels_topics.extend(out.qrels);
        run_topics.extend(out.run_topics);
        for (r, f) in out.flags {
            flags[r].insert((*topic).clone(), f);
        }
        source_pairs.extend(out.sources);
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

/// The least `--mem`: below it the partitions of a topic's features get too many to be useful.
pub const MIN_MEM: u64 = 1 << 20;

/// Keys per batched lookup when docnos are resolved.
const RESOLVE_CHUNK: usize = 4096;

/// Each docno's live document (`None`: not in the index, or deleted): the docnos sorted by
/// bytes and looked up in batches, in parallel, with RocksDB's sorted multi-get.
fn resolve(index: &Index, docnos: &Docnos) -> Result<Vec<Option<u32>>> {
    let view = index.view();
    let catalog = index.catalog();
    let mut order: Vec<u32> = (0..docnos.len() as u32).collect();
    order.par_sort_unstable_by(|&a, &b| docnos.name(a).cmp(docnos.name(b)));
    let found: Vec<Result<Vec<Option<u32>>>> = order
        .par_chunks(RESOLVE_CHUNK)
        .map(|chunk| {
            let keys: Vec<&str> = chunk.iter().map(|&i| docnos.name(i)).collect();
            catalog.docs_by_keys(&keys, true)
        })
        .collect();
    let mut resolved = vec![None; docnos.len()];
    for (chunk, got) in order.chunks(RESOLVE_CHUNK).zip(found) {
        for (&i, d) in chunk.iter().zip(got?) {
            resolved[i as usize] = d.filter(|&d| view.is_live(d));
        }
    }
    Ok(resolved)
}

/// The indexes in `docs` of each pair's documents.
fn pairs_index(docs: &[u32], pairs: &[TopicPair]) -> Vec<(usize, usize)> {
    let at = |d: u32| {
        docs.binary_search(&d)
            .expect("a pair of the topic's documents")
    };
    pairs.iter().map(|p| (at(p.a), at(p.b))).collect()
}

/// What every topic's work reads.
struct TopicCtx<'a> {
    view: &'a crate::view::View,
    sample: crate::fingerprint::Sample,
    lowest: Threshold,
    t: Threshold,
    top: &'a [usize],
    runs: &'a [Run],
    resolved: &'a [Option<u32>],
    relevant: &'a BTreeMap<TopicId, Vec<Option<u32>>>,
}

impl TopicCtx<'_> {
    /// One topic's rows, flags and pairs (`mem`: the budget of its inverted index).
    fn topic(&self, topic: &TopicId, mem: u64) -> Result<TopicOut> {
        let t = self.t;
        let lists: Vec<(usize, &Run, Vec<Option<u32>>)> = self
            .runs
            .iter()
            .enumerate()
            .filter_map(|(ri, r)| {
                let entries = r.topics.get(topic)?;
                Some((
                    ri,
                    r,
                    entries
                        .iter()
                        .map(|e| self.resolved[e.docno as usize])
                        .collect(),
                ))
            })
            .collect();
        let mut run_docnos: Vec<u32> = lists
            .iter()
            .flat_map(|(_, r, _)| r.topics[topic].iter().map(|e| e.docno))
            .collect();
        run_docnos.sort_unstable();
        run_docnos.dedup();
        let mut run_docs: Vec<u32> = lists
            .iter()
            .flat_map(|(_, _, l)| l.iter().flatten().copied())
            .collect();
        run_docs.sort_unstable();
        run_docs.dedup();
        let mut rel: Vec<u32> = self
            .relevant
            .get(topic)
            .map(|l| l.iter().flatten().copied().collect())
            .unwrap_or_default();
        rel.sort_unstable();
        rel.dedup();
        let mut docs: Vec<u32> = run_docs.iter().chain(&rel).copied().collect();
        docs.sort_unstable();
        docs.dedup();
        // Membership of each of `docs` in the two sets whose prevalence is counted, and each
        // document's best level inside each set, taken as the pairs are found; only the pairs
        // at >= T are kept.
        let in_runs: Vec<bool> = docs
            .iter()
            .map(|d| run_docs.binary_search(d).is_ok())
            .collect();
        let in_rel: Vec<bool> = docs.iter().map(|d| rel.binary_search(d).is_ok()).collect();
        let best_runs: Vec<AtomicU8> = docs.iter().map(|_| AtomicU8::new(0)).collect();
        let best_rel: Vec<AtomicU8> = docs.iter().map(|_| AtomicU8::new(0)).collect();
        let keep = |i: usize, j: usize, p: &TopicPair| {
            let level = level_of(p);
            for (set, best) in [(&in_runs, &best_runs), (&in_rel, &best_rel)] {
                if set[i] && set[j] {
                    best[i].fetch_max(level, Ordering::Relaxed);
                    best[j].fetch_max(level, Ordering::Relaxed);
                }
            }
            t.admits(p.inter, p.denom)
        };
        let pairs = pairs::topic_pairs(self.view, self.sample, self.lowest, &docs, mem, &keep)?;
        let levels_in = |best: &[AtomicU8]| {
            duplicated_from_best(best.iter().map(|b| b.load(Ordering::Relaxed)))
        };
        let mut out = TopicOut {
            row: None,
            qrels: None,
            run_topics: Vec::new(),
            flags: Vec::new(),
            sources: Vec::new(),
        };
        if !run_docnos.is_empty() {
            out.row = Some(TopicRow {
                topic: topic.text.clone(),
                docs: run_docnos.len() as u64,
                duplicated: levels_in(&best_runs),
            });
            out.sources = pairs
                .iter()
                .zip(&pairs_index(&docs, &pairs))
                .filter(|(_, &(i, j))| in_runs[i] && in_runs[j])
                .map(|(p, _)| (p.a, p.b))
                .collect();
        }
        if let Some(l) = self.relevant.get(topic) {
            out.qrels = Some(QrelsTopic {
                topic: topic.text.clone(),
                relevant: l.len() as u64,
                duplicated: levels_in(&best_rel),
            });
        }
        let nb = Neighbors::new(&pairs, t);
        drop(pairs);
        for (ri, r, list) in lists {
            let red = redundant_flags(&list, &nb);
            for &n in self.top {
                let k = n.min(list.len());
                out.run_topics.push(RunTopicRow {
                    run: r.name.clone(),
                    topic: topic.text.clone(),
                    n,
                    docs: k as u64,
                    duplicated: duplicated_in(&list[..k], &nb),
                    redundant: red[..k].iter().filter(|&&x| x).count() as u64,
                });
            }
            out.flags.push((ri, red));
        }
        Ok(out)
    }
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
    // Batches of records read in parallel: (doc, site) in id order.
    let found: Vec<Result<Vec<(u32, Option<String>)>>> = ids
        .par_chunks(4096)
        .map(|chunk| {
            Ok(chunk
                .iter()
                .zip(index.catalog().docs(chunk)?)
                .map(|(&d, r)| (d, r.and_then(|r| r.url).as_deref().and_then(site)))
                .collect())
        })
        .collect();
    let mut sites: HashMap<u32, Option<String>> = HashMap::with_capacity(ids.len());
    for f in found {
        sites.extend(f?);
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
    // The lines are read again for their columns as written (second column, score, tag).
    let text = parse::read_text(&r.path)?;
    let lines: Vec<&str> = text.lines().collect();
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
            let (f, nf) = lines
                .get(e.line as usize - 1)
                .map_or(([""; 6], 0), |l| parse::fields(l));
            if nf != 6 || f[0] != topic.text || f[2] != docnos.name(e.docno) {
                return Err(Error::BadLine {
                    path: r.path.clone(),
                    line: e.line.into(),
                    reason: "the run file changed while it was read (this line no longer lists \
                             the document it did)"
                        .into(),
                });
            }
            writeln!(w, "{} {} {} {rank} {} {}", f[0], f[1], f[2], f[4], f[5])
                .map_err(|e| Error::io(tmp, e))?;
        }
    }
    let f = w.into_inner().map_err(|e| Error::io(tmp, e.into_error()))?;
    f.sync_all().map_err(|e| Error::io(tmp, e))
}
