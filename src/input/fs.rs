//! Paths to documents: directory walking, file-type dispatch by name (then by content for
//! files whose name says nothing), gunzip, size limits.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::arc::ArcReader;
use super::jsonl::JsonlReader;
use super::trecweb::TrecWebReader;
use super::warc::WarcReader;
use super::{InputItem, InputOptions, RawDoc, Records};
use crate::canonicalize::{sniff_format, DocFormat};

/// Work queued by the input iterator.
pub(super) enum Pending {
    /// A path named by the user: a file (keyed by the path as given) or a directory.
    TopLevel(PathBuf),
    /// A file found in a directory, keyed by its relative path; `ahead`: the file and its
    /// length if [`ReadAhead`] opened it before its turn.
    File {
        path: PathBuf,
        key: String,
        ahead: Option<(File, u64)>,
    },
    /// An error found while listing a directory.
    Bad(InputItem),
}

/// What opening a pending path gave.
pub(super) enum Opened {
    Item(InputItem),
    Records(Records),
    Expand(Vec<Pending>),
}

/// How a file is read, from its name (case-insensitive, after removing a `.gz` suffix).
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Warc,
    Arc,
    TrecWeb,
    Jsonl,
    Doc(Option<DocFormat>),
}

fn kind_of(name: &str) -> (Kind, bool) {
    let lower = name.to_ascii_lowercase();
    let (inner, gz) = match lower.strip_suffix(".gz") {
        Some(inner) => (inner, true),
        None => (lower.as_str(), false),
    };
    let kind = if inner.ends_with(".warc") {
        Kind::Warc
    } else if inner.ends_with(".arc") {
        Kind::Arc
    } else if inner.ends_with(".jsonl") || inner.ends_with(".ndjson") {
        Kind::Jsonl
    } else if [".html", ".htm", ".xhtml"]
        .iter()
        .any(|e| inner.ends_with(e))
    {
        Kind::Doc(Some(DocFormat::Html))
    } else if inner.ends_with(".txt") {
        Kind::Doc(Some(DocFormat::Text))
    } else {
        Kind::Doc(None)
    };
    (kind, gz)
}

pub(super) fn open(p: Pending, opts: &InputOptions) -> Opened {
    match p {
        Pending::Bad(item) => Opened::Item(item),
        Pending::File { path, key, ahead } => match ahead {
            Some((file, len)) => open_opened(&path, key, opts, file, len),
            None => open_file(&path, key, opts),
        },
        Pending::TopLevel(path) => {
            let key = path.to_string_lossy().into_owned();
            match std::fs::metadata(&path) {
                Err(e) => Opened::Item(InputItem::bad(key.clone(), key, e.to_string())),
                Ok(m) if m.is_dir() => Opened::Expand(walk(&path)),
                Ok(_) => open_file(&path, key, opts),
            }
        }
    }
}

fn open_file(path: &Path, key: String, opts: &InputOptions) -> Opened {
    match File::open(path) {
        Ok(file) => {
            let len = file.metadata().map_or(0, |m| m.len());
            open_opened(path, key, opts, file, len)
        }
        Err(e) => {
            let origin = path.to_string_lossy().into_owned();
            Opened::Item(InputItem::bad(key, origin, e.to_string()))
        }
    }
}

/// [`open_file`] of the file `path` already open as `file`, `len` bytes long.
fn open_opened(path: &Path, key: String, opts: &InputOptions, file: File, len: u64) -> Opened {
    let origin = path.to_string_lossy().into_owned();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (kind, gz) = kind_of(&name);
    // A plain file's length sizes its buffer once (no growth copies); only a hint.
    let size_hint = if gz { 0 } else { len };
    // A plain document named by its extension is read straight into its buffer (sized by
    // the file's length): a read buffer in between would only copy it once more.
    if let (Kind::Doc(Some(format)), false) = (&kind, gz) {
        return Opened::Item(read_doc(
            file,
            key,
            origin,
            &name,
            Some(*format),
            gz,
            opts.max_doc_bytes,
            size_hint,
        ));
    }
    let mut reader: Box<dyn io::BufRead + Send> = if gz {
        Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(BufReader::new(file)),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, file))
    };
    // A name that says nothing (GOV2's `00.gz`, WT10g's `B01`): look at the first bytes.
    let kind = match kind {
        Kind::Doc(None) => kind_of_content(&mut reader).unwrap_or(kind),
        k => k,
    };
    match kind {
        Kind::Warc => Opened::Records(Box::new(WarcReader::new(
            reader,
            origin,
            opts.max_doc_bytes,
        ))),
        Kind::Arc => Opened::Records(Box::new(ArcReader::new(reader, origin, opts.max_doc_bytes))),
        Kind::TrecWeb => Opened::Records(Box::new(TrecWebReader::new(
            reader,
            origin,
            opts.max_doc_bytes,
        ))),
        Kind::Jsonl => Opened::Records(Box::new(JsonlReader::new(reader, origin, opts.clone()))),
        Kind::Doc(format) => Opened::Item(read_doc(
            reader,
            key,
            origin,
            &name,
            format,
            gz,
            opts.max_doc_bytes,
            size_hint,
        )),
    }
}

/// A record format recognized by the first non-blank bytes of a file: `<DOC>` (TREC web
/// text), `filedesc://` (ARC), `WARC/` (WARC). None for anything else (or a read error, which
/// reading the file as a document then reports).
fn kind_of_content(r: &mut dyn io::BufRead) -> Option<Kind> {
    let head = r.fill_buf().ok()?;
    let start = head.iter().position(|b| !b.is_ascii_whitespace())?;
    let head = &head[start..];
    let has = |p: &[u8]| head.len() >= p.len() && head[..p.len()].eq_ignore_ascii_case(p);
    if has(b"<DOC>") {
        Some(Kind::TrecWeb)
    } else if has(b"filedesc://") {
        Some(Kind::Arc)
    } else if head.starts_with(b"WARC/1.") || head.starts_with(b"WARC/0.") {
        Some(Kind::Warc)
    } else {
        None
    }
}

/// Reads a whole single-document file (at most `max` bytes).
fn read_doc(
    reader: impl Read,
    key: String,
    origin: String,
    name: &str,
    format: Option<DocFormat>,
    gz: bool,
    max: u64,
    size_hint: u64,
) -> InputItem {
    // One byte more than the file, so the read that finds its end needs no growth.
    let mut bytes = Vec::with_capacity(size_hint.min(max).saturating_add(1) as usize);
    if let Err(e) = reader.take(max.saturating_add(1)).read_to_end(&mut bytes) {
        let reason = if gz {
            format!("corrupt or truncated gzip: {e}")
        } else {
            e.to_string()
        };
        return InputItem::bad(key, origin, reason);
    }
    if bytes.len() as u64 > max {
        let what = if gz { " after decompression" } else { "" };
        return InputItem::bad(
            key,
            origin,
            format!("document too large (more than {max} bytes{what})"),
        );
    }
    let inner = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".GZ"))
        .unwrap_or(name);
    let format = format.unwrap_or_else(|| sniff_format(Some(inner), &bytes));
    InputItem::Doc(RawDoc::bare(key, bytes, format, origin))
}

/// Lists the regular files under `dir` (recursively), sorted bytewise by their path relative to
/// `dir` with '/' separators, which is also their key. Symbolic links to files are followed;
/// symbolic links to directories are not (no cycles). Listing errors come first, as `Bad`.
fn walk(dir: &Path) -> Vec<Pending> {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let mut bad = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, rel)) = todo.pop() {
        let shown = d.to_string_lossy().into_owned();
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => {
                bad.push(Pending::Bad(InputItem::bad(
                    if rel.is_empty() { shown.clone() } else { rel },
                    shown,
                    e.to_string(),
                )));
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    bad.push(Pending::Bad(InputItem::bad(
                        shown.clone(),
                        shown.clone(),
                        e.to_string(),
                    )));
                    continue;
                }
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel2 = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => todo.push((path, rel2)),
                Ok(t) if t.is_file() => files.push((rel2, path)),
                Ok(t) if t.is_symlink() => match std::fs::metadata(&path) {
                    Ok(m) if m.is_file() => files.push((rel2, path)),
                    Ok(_) => {}
                    Err(e) => {
                        let origin = path.to_string_lossy().into_owned();
                        bad.push(Pending::Bad(InputItem::bad(rel2, origin, e.to_string())));
                    }
                },
                Ok(_) => {}
                Err(e) => {
                    let origin = path.to_string_lossy().into_owned();
                    bad.push(Pending::Bad(InputItem::bad(rel2, origin, e.to_string())));
                }
            }
        }
    }
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    bad.extend(files.into_iter().map(|(key, path)| Pending::File {
        path,
        key,
        ahead: None,
    }));
    bad
}

/// Listed files open ahead of their turn, at most this many at a time.
pub(super) const AHEAD_FILES: usize = 64;
/// Bytes asked for ahead (the asked part of the files open ahead), at most.
const AHEAD_BYTES: u64 = 16 << 20;
/// The bytes of one file asked for ahead, at most (the kernel's own read-ahead follows the
/// reads of a longer one).
const AHEAD_FILE_BYTES: u64 = 1 << 20;

/// Opens the listed files of the queue ahead of their turn and asks the kernel for their
/// first bytes (`POSIX_FADV_WILLNEED`: the reads are issued and the call returns without
/// waiting for them). From a cold page cache a file read at its turn would wait for its
/// disk read, one file at a time, while the workers that canonicalize wait for documents;
/// asked ahead, the reads of the next files are in flight together (on this project's
/// machine a directory of 90 MB of pages reads in 0.25 s eight files at a time against
/// 0.65 s one at a time). Bounded: [`AHEAD_FILES`] open files and [`AHEAD_BYTES`] asked for
/// at a time. On a warm page cache it costs one system call a file (the open and the length
/// were needed anyway). A hint only: a file that cannot be opened ahead is opened at its
/// turn, which reports why.
#[derive(Default)]
pub(super) struct ReadAhead {
    /// Queue entries, from the front, looked at already (opened ahead, or not a listed file,
    /// or a file that could not be opened: opened at its turn, which reports why).
    seen: usize,
    /// Files open ahead and the bytes asked for them, not yet taken.
    files: usize,
    bytes: u64,
}

impl ReadAhead {
    /// Opens the next files of `queue` ahead while within the bounds.
    pub(super) fn fill(&mut self, queue: &mut std::collections::VecDeque<Pending>) {
        while self.seen < queue.len() && self.files < AHEAD_FILES && self.bytes < AHEAD_BYTES {
            if let Some(Pending::File { path, ahead, .. }) = queue.get_mut(self.seen) {
                if ahead.is_none() {
                    if let Ok(file) = File::open(path.as_path()) {
                        let len = file.metadata().map_or(0, |m| m.len());
                        let asked = len.min(AHEAD_FILE_BYTES);
                        crate::segment::file_will_need(&file, 0, asked);
                        self.files += 1;
                        self.bytes += asked;
                        *ahead = Some((file, len));
                    }
                }
            }
            self.seen += 1;
        }
    }

    /// `p` was taken from the queue's front.
    pub(super) fn taken(&mut self, p: &Pending) {
        self.seen = self.seen.saturating_sub(1);
        if let Pending::File {
            ahead: Some((_, len)),
            ..
        } = p
        {
            self.files -= 1;
            self.bytes -= (*len).min(AHEAD_FILE_BYTES);
        }
    }

    /// Entries were put at the queue's front: look at it again from there.
    pub(super) fn pushed_front(&mut self) {
        self.seen = 0;
    }

    /// Files open ahead now (tests).
    #[cfg(test)]
    pub(super) fn open_files(&self) -> usize {
        self.files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name() {
        assert_eq!(kind_of("crawl.warc.gz"), (Kind::Warc, true));
        assert_eq!(kind_of("CRAWL.WARC"), (Kind::Warc, false));
        assert_eq!(kind_of("d.ndjson.gz"), (Kind::Jsonl, true));
        assert_eq!(kind_of("d.jsonl"), (Kind::Jsonl, false));
        assert_eq!(
            kind_of("p.HTM.gz"),
            (Kind::Doc(Some(DocFormat::Html)), true)
        );
        assert_eq!(
            kind_of("notes.txt"),
            (Kind::Doc(Some(DocFormat::Text)), false)
        );
        assert_eq!(kind_of("README"), (Kind::Doc(None), false));
        assert_eq!(kind_of("IA-001102.arc.gz"), (Kind::Arc, true));
        assert_eq!(kind_of("00.gz"), (Kind::Doc(None), true));
    }

    #[test]
    fn kinds_by_content() {
        let k = |s: &[u8]| kind_of_content(&mut &s[..]);
        assert_eq!(k(b"\n<DOC>\n<DOCNO>GX0</DOCNO>"), Some(Kind::TrecWeb));
        assert_eq!(
            k(b"filedesc://x.arc 0.0.0.0 1 text/plain 0"),
            Some(Kind::Arc)
        );
        assert_eq!(k(b"WARC/0.18\r\n"), Some(Kind::Warc));
        assert_eq!(k(b"<html><DOC>"), None);
        assert_eq!(k(b""), None);
    }
}
