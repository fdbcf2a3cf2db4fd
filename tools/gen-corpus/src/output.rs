//! The generation driver: renders documents in parallel chunks and writes them, in order,
//! as files or WARC, plus the truth file and gen.json.
//!
//! Chunk c is rendered by worker c % T and handed over on that worker's bounded channel;
//! the writer takes chunks in order 0, 1, 2, ... so WARC files and the truth file come out
//! in document order whatever T is, and at most ~2 chunks per worker are in memory.

use crate::args::{Format, Params};
use crate::doc::{EditCounts, WordSource};
use crate::html::{Renderer, Site};
use crate::plan::Plan;
use crate::vocab::{Vocab, Zipf};
use crate::{json, warc};
use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

/// Documents per work unit: big enough to amortise channel traffic, small enough to
/// keep memory low (a chunk of WARC records is ~1.5 MB with default sizes).
const CHUNK: u32 = 512;

pub const TRUTH_FILE: &str = "truth-clusters.tsv";
pub const GEN_FILE: &str = "gen.json";

struct Chunk {
    batch: u32,
    start: u32,
    end: u32,
}

#[derive(Default)]
struct ChunkOut {
    /// WARC records (warc format only; files are written by the worker).
    warc: Vec<u8>,
    html_bytes: u64,
    edits: EditCounts,
    /// Words of the originals the chunk's variants were edited from.
    variant_source_words: u64,
}

#[derive(Clone, Debug, Default)]
pub struct BatchReport {
    pub name: String,
    pub path: String,
    pub first_doc: u32,
    pub docs: u32,
    pub html_bytes: u64,
    pub bytes_written: u64,
}

#[derive(Debug, Default)]
pub struct Report {
    pub batches: Vec<BatchReport>,
    pub edits: EditCounts,
    pub variant_source_words: u64,
    pub seconds: f64,
}

impl Report {
    pub fn bytes_written(&self) -> u64 {
        self.batches.iter().map(|b| b.bytes_written).sum()
    }
}

pub fn generate(p: &Params) -> io::Result<Report> {
    let started = Instant::now();
    prepare_out_dir(&p.out)?;
    let vocab = Vocab::build(p.vocab);
    let zipf = Zipf::new(p.vocab, p.zipf);
    let plan = Plan::build(p);
    let sites: Vec<Site> = (0..p.sites)
        .map(|i| Site::build(p.seed, i, &vocab, &zipf, p.nav_words))
        .collect();
    let words = WordSource {
        seed: p.seed,
        mean_words: p.words,
        edit_rate: p.edit_rate,
        vocab: &vocab,
        zipf: &zipf,
    };
    let renderer = Renderer {
        seed: p.seed,
        vocab: &vocab,
        sites: &sites,
        plan: &plan,
    };

    let mut chunks = Vec::new();
    for b in 0..plan.batches() {
        let (lo, hi) = (
            plan.batch_starts[b as usize],
            plan.batch_starts[b as usize + 1],
        );
        let mut s = lo;
        while s < hi {
            chunks.push(Chunk {
                batch: b,
                start: s,
                end: (s + CHUNK).min(hi),
            });
            s += CHUNK;
        }
    }
    let threads = p.threads.min(chunks.len()).max(1);
    let mut report = Report::default();

    std::thread::scope(|scope| -> io::Result<()> {
        let mut receivers = Vec::with_capacity(threads);
        for w in 0..threads {
            let (tx, rx) = mpsc::sync_channel::<io::Result<ChunkOut>>(2);
            receivers.push(rx);
            let (chunks, words, renderer, plan) = (&chunks, &words, &renderer, &plan);
            scope.spawn(move || {
                let mut dirs = HashSet::new();
                for chunk in chunks.iter().skip(w).step_by(threads) {
                    let out = render_chunk(p, plan, words, renderer, chunk, &mut dirs);
                    let failed = out.is_err();
                    if tx.send(out).is_err() || failed {
                        return; // the writer gave up, or we did
                    }
                }
            });
        }

        let mut truth = BufWriter::with_capacity(1 << 20, File::create(p.out.join(TRUTH_FILE))?);
        truth.write_all(b"key\tlabel\n")?;
        let mut line = String::new();
        let mut warc_file: Option<BufWriter<File>> = None;
        for (c, chunk) in chunks.iter().enumerate() {
            if report.batches.len() <= chunk.batch as usize {
                finish_batch(&mut warc_file, &mut report, p.quiet)?;
                let name = plan.batch_name(chunk.batch);
                let path = match p.format {
                    Format::Files => name.clone(),
                    Format::Warc => format!("{name}.warc"),
                };
                if p.format == Format::Warc {
                    let mut f = BufWriter::with_capacity(1 << 20, File::create(p.out.join(&path))?);
                    let mut info = Vec::new();
                    warc::write_warcinfo(&mut info, p.seed, chunk.batch, &path);
                    f.write_all(&info)?;
                    warc_file = Some(f);
                }
                report.batches.push(BatchReport {
                    name,
                    path,
                    first_doc: chunk.start,
                    ..Default::default()
                });
            }
            let out = receivers[c % threads]
                .recv()
                .map_err(|_| io::Error::other("worker thread died"))??;
            let batch = report.batches.last_mut().expect("pushed above");
            batch.docs += chunk.end - chunk.start;
            batch.html_bytes += out.html_bytes;
            if let Some(f) = warc_file.as_mut() {
                f.write_all(&out.warc)?;
            }
            report.edits.deleted += out.edits.deleted;
            report.edits.swapped += out.edits.swapped;
            report.edits.inserted += out.edits.inserted;
            report.variant_source_words += out.variant_source_words;
            for doc in chunk.start..chunk.end {
                line.clear();
                plan.write_key(doc, &mut line);
                line.push('\t');
                plan.write_label(doc, &mut line);
                line.push('\n');
                truth.write_all(line.as_bytes())?;
            }
        }
        finish_batch(&mut warc_file, &mut report, p.quiet)?;
        truth.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(())
    })?;

    report.seconds = started.elapsed().as_secs_f64();
    fs::write(p.out.join(GEN_FILE), json::gen_json(p, &plan, &report))?;
    Ok(report)
}

/// Closes the current batch: flushes its WARC file and fills in its byte count.
fn finish_batch(
    warc_file: &mut Option<BufWriter<File>>,
    report: &mut Report,
    quiet: bool,
) -> io::Result<()> {
    let Some(batch) = report.batches.last_mut() else {
        return Ok(());
    };
    batch.bytes_written = batch.html_bytes;
    if let Some(f) = warc_file.take() {
        let f = f.into_inner().map_err(|e| e.into_error())?;
        batch.bytes_written = f.metadata()?.len();
    }
    if !quiet {
        eprintln!(
            "ndd-gen: {}: {} docs, {:.1} MB",
            batch.path,
            batch.docs,
            batch.bytes_written as f64 / 1e6
        );
    }
    Ok(())
}

fn render_chunk(
    p: &Params,
    plan: &Plan,
    source: &WordSource,
    renderer: &Renderer,
    chunk: &Chunk,
    dirs: &mut HashSet<PathBuf>,
) -> io::Result<ChunkOut> {
    let mut out = ChunkOut::default();
    let (mut words, mut variant, mut html, mut key) =
        (Vec::new(), Vec::new(), String::new(), String::new());
    let batch_dir = p.out.join(plan.batch_name(chunk.batch));
    let batch_start = plan.batch_starts[chunk.batch as usize];
    for doc in chunk.start..chunk.end {
        let o = plan.original(doc);
        source.original_words(o, plan.is_long(o), &mut words);
        let body = if o == doc {
            &words
        } else {
            let e = source.variant_words(doc, &words, &mut variant);
            out.edits.deleted += e.deleted;
            out.edits.swapped += e.swapped;
            out.edits.inserted += e.inserted;
            out.variant_source_words += words.len() as u64;
            &variant
        };
        html.clear();
        renderer.render(doc, body, &mut html);
        out.html_bytes += html.len() as u64;
        key.clear();
        plan.write_key(doc, &mut key);
        match p.format {
            Format::Warc => warc::write_response(
                &mut out.warc,
                p.seed,
                chunk.batch,
                doc - batch_start,
                doc,
                &key,
                html.as_bytes(),
            ),
            Format::Files => {
                let path = batch_dir.join(&key);
                if let Some(parent) = path.parent() {
                    if !dirs.contains(parent) {
                        // Several workers may race to create a directory; create_dir_all
                        // treats "already exists" as success.
                        fs::create_dir_all(parent)?;
                        dirs.insert(parent.to_path_buf());
                    }
                }
                fs::write(&path, html.as_bytes())?;
            }
        }
    }
    Ok(out)
}

/// Creates `dir`, refusing a non-empty one so stale files never mix with a new corpus.
fn prepare_out_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    if fs::read_dir(dir)?.next().is_some() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} is not empty; ndd-gen writes into a new or empty directory",
                dir.display()
            ),
        ));
    }
    Ok(())
}
