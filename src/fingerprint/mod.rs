//! Document fingerprints: shingle features (optionally sampled), simhash and the exact digest.
//!
//! Input is the canonical text (lowercase words joined by single spaces). Everything computed
//! here is stored, so every hash, seed and rule is fixed by format-spec/fingerprints.md; the
//! submodules hold one concept each:
//! - [`hash`]: the hash functions and seeds;
//! - [`shingle`]: word and character shingles;
//! - [`sample`]: sampling a shingle set and comparing two samples exactly;
//! - [`minhash`]: min-hash values, DSC-SS supershingles and megashingles;
//! - [`simhash`]: Charikar's simhash (64 and 384 bits), Hamming distance;
//! - [`manku`]: Manku et al.'s permuted tables for Hamming-distance search;
//! - [`adaptive`]: Ye et al.'s size-dependent sampling ratios.

pub mod adaptive;
pub mod hash;
pub mod manku;
pub mod minhash;
pub mod sample;
pub mod shingle;
pub mod simhash;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::canonicalize::Extract;
use crate::error::{Error, Result};

pub use sample::{ratio, Counts, Overlap};

/// Version of the fingerprint definitions (format-spec/fingerprints.md, "Version history").
pub const FINGERPRINT_VERSION: u32 = 1;

/// What a shingle is. Stored as its string form ("words:5", "chars:64").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ShingleKind {
    /// Contiguous w-word sequences. A text with fewer than w words has no shingles.
    Words(u32),
    /// The n-character sequences (Unicode scalar values of the canonical text, spaces
    /// included) that start at each word; the tail is one shorter shingle (see `shingle`).
    Chars(u32),
}

/// How a document's shingle set is sampled into its features. Stored as its string form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Sample {
    /// Every distinct shingle.
    All,
    /// The shingles whose hash is 0 modulo m (Broder's MOD_m).
    Mod(u64),
    /// The K minima of K independent hash permutations, one feature per permutation.
    MinHash(u32),
    /// The K smallest shingle hashes (Broder's MIN_s / bottom-k sketch).
    BottomK(u32),
    /// MOD_m with m chosen by the document's size group (Ye et al.; [`adaptive`]).
    Adaptive(adaptive::SizeGroups),
}

/// Largest accepted parameters: beyond these a typo, not a design choice, is more likely,
/// and the costs (K mixes per shingle for min-hash) grow without bound.
const MAX_WORDS: u32 = 1024;
const MAX_CHARS: u32 = 65_536;
const MAX_MINHASH: u32 = minhash::MAX_PERMUTATIONS;
const MAX_BOTTOMK: u32 = 1 << 24;

impl ShingleKind {
    /// Checks the parameter range (w in 1..=1024, n in 1..=65536).
    pub fn validate(&self) -> Result<()> {
        let (name, v, max) = match *self {
            ShingleKind::Words(w) => ("words", w as u64, MAX_WORDS as u64),
            ShingleKind::Chars(n) => ("chars", n as u64, MAX_CHARS as u64),
        };
        check_range(name, v, max)
    }
}

impl Sample {
    /// Checks the parameter range (m >= 1, K in 1..=4096 for minhash, 1..=2^24 for bottomk).
    pub fn validate(&self) -> Result<()> {
        match *self {
            Sample::All | Sample::Adaptive(_) => Ok(()),
            Sample::Mod(m) => check_range("mod", m, u64::MAX),
            Sample::MinHash(k) => check_range("minhash", k as u64, MAX_MINHASH as u64),
            Sample::BottomK(k) => check_range("bottomk", k as u64, MAX_BOTTOMK as u64),
        }
    }
}

fn check_range(name: &str, v: u64, max: u64) -> Result<()> {
    if v == 0 || v > max {
        return Err(Error::InvalidArgument(format!(
            "{name}:{v}: parameter must be in 1..={max}"
        )));
    }
    Ok(())
}

/// Splits "name:number" for the FromStr impls.
fn parse_param(s: &str, what: &str) -> Result<(String, Option<u64>)> {
    let bad = || Error::InvalidArgument(format!("invalid {what} {s:?}"));
    match s.split_once(':') {
        None => Ok((s.to_ascii_lowercase(), None)),
        Some((name, num)) => {
            if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            Ok((
                name.to_ascii_lowercase(),
                Some(num.parse().map_err(|_| bad())?),
            ))
        }
    }
}

fn to_u32(name: &str, v: u64) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::InvalidArgument(format!("{name}:{v}: parameter too large")))
}

impl FromStr for ShingleKind {
    type Err = Error;

    /// Parses "words:W" or "chars:N".
    fn from_str(s: &str) -> Result<Self> {
        let kind = match parse_param(s, "shingle kind (expected words:W or chars:N)")? {
            (name, Some(v)) if name == "words" => ShingleKind::Words(to_u32("words", v)?),
            (name, Some(v)) if name == "chars" => ShingleKind::Chars(to_u32("chars", v)?),
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "invalid shingle kind {s:?} (expected words:W or chars:N)"
                )))
            }
        };
        kind.validate()?;
        Ok(kind)
    }
}

impl fmt::Display for ShingleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShingleKind::Words(w) => write!(f, "words:{w}"),
            ShingleKind::Chars(n) => write!(f, "chars:{n}"),
        }
    }
}

impl FromStr for Sample {
    type Err = Error;

    /// Parses "all", "mod:M", "minhash:K", "bottomk:K", "adaptive" (the default size groups)
    /// or "adaptive:GROUPS" (see [`adaptive::SizeGroups`]).
    fn from_str(s: &str) -> Result<Self> {
        let l = s.trim().to_ascii_lowercase();
        if l == "adaptive" {
            return Ok(Sample::Adaptive(adaptive::DEFAULT_SIZE_GROUPS.parse()?));
        }
        if let Some(groups) = l.strip_prefix("adaptive:") {
            return Ok(Sample::Adaptive(groups.parse()?));
        }
        let bad = || {
            Error::InvalidArgument(format!(
                "invalid sampling {s:?} (expected all, mod:M, minhash:K, bottomk:K or adaptive[:GROUPS])"
            ))
        };
        let sample = match parse_param(s, "sampling")? {
            (name, None) if name == "all" => Sample::All,
            (name, Some(v)) if name == "mod" => Sample::Mod(v),
            (name, Some(v)) if name == "minhash" => Sample::MinHash(to_u32("minhash", v)?),
            (name, Some(v)) if name == "bottomk" => Sample::BottomK(to_u32("bottomk", v)?),
            _ => return Err(bad()),
        };
        sample.validate()?;
        Ok(sample)
    }
}

impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sample::All => write!(f, "all"),
            Sample::Mod(m) => write!(f, "mod:{m}"),
            Sample::MinHash(k) => write!(f, "minhash:{k}"),
            Sample::BottomK(k) => write!(f, "bottomk:{k}"),
            Sample::Adaptive(g) => write!(f, "adaptive:{g}"),
        }
    }
}

// String forms for serde, so stored options are readable and validated when loaded.
macro_rules! serde_via_string {
    ($t:ty) => {
        impl TryFrom<String> for $t {
            type Error = Error;
            fn try_from(s: String) -> Result<Self> {
                s.parse()
            }
        }
        impl From<$t> for String {
            fn from(v: $t) -> String {
                v.to_string()
            }
        }
    };
}
serde_via_string!(ShingleKind);
serde_via_string!(Sample);

/// How documents are fingerprinted; fixed when an index is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FingerprintOptions {
    pub shingle: ShingleKind,
    pub sample: Sample,
    /// Which text of an HTML document the features come from (`--extract`); absent in
    /// records written before it existed: the body.
    #[serde(default)]
    pub extract: Extract,
}

impl Default for FingerprintOptions {
    /// words:5 / all: the definition of the shared corpus truth.
    fn default() -> Self {
        FingerprintOptions {
            shingle: ShingleKind::Words(5),
            sample: Sample::All,
            extract: Extract::Body,
        }
    }
}

impl FingerprintOptions {
    /// Checks both parameters (deserialization and FromStr already do; this is for values
    /// built in code).
    pub fn validate(&self) -> Result<()> {
        self.shingle.validate()?;
        self.sample.validate()
    }
}

/// Everything stored about one document's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Sorted ascending, unique: the sampled shingle set (for MinHash, K position-tagged
    /// min values, see [`minhash::features`]).
    pub features: Vec<u64>,
    /// Distinct shingles before sampling.
    pub shingles: u32,
    /// Words in the canonical text.
    pub words: u32,
    /// 64-bit Charikar simhash of the word tokens (see [`simhash`]).
    pub simhash: u64,
    /// Exact-duplicate digest of the canonical text ([`hash::digest`]).
    pub digest: [u8; 16],
}

/// The words of a canonical text (as UTF-8 bytes): the pieces between ASCII spaces. Empty
/// pieces are skipped, so a stray double space cannot create an empty word (canonical text
/// has none; the empty text has no words). Splitting bytes rather than `str::split(' ')`
/// avoids a memchr call per (short) word (about 10% of the fingerprinting time).
#[inline]
pub fn words(text: &str) -> impl Iterator<Item = &[u8]> {
    text.as_bytes()
        .split(|&b| b == b' ')
        .filter(|w| !w.is_empty())
}

/// The words of `text` in order: the same pieces as [`words`], found eight bytes at a time
/// (the first space of the eight bytes at the word's start, by SWAR), so a word shorter than
/// eight bytes costs one load and one well-predicted branch instead of a branch per byte.
/// An iterator rather than a callback so that each caller's per-word work is written in its
/// own loop (a closure called from the splitter's three places was not inlined: a call per
/// word).
pub struct SwarWords<'a> {
    b: &'a [u8],
    /// The start of the next word.
    start: usize,
    /// Where the search for its end goes on.
    i: usize,
}

impl<'a> SwarWords<'a> {
    #[inline(always)]
    pub fn new(text: &'a str) -> Self {
        SwarWords {
            b: text.as_bytes(),
            start: 0,
            i: 0,
        }
    }
}

impl<'a> Iterator for SwarWords<'a> {
    type Item = &'a [u8];

    #[inline(always)]
    fn next(&mut self) -> Option<&'a [u8]> {
        const LO: u64 = 0x0101_0101_0101_0101;
        const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
        let b = self.b;
        let n = b.len();
        while self.i + 8 <= n {
            let i = self.i;
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            let x = u64::from_le_bytes(a) ^ (LO * u64::from(b' '));
            // High bit of a byte set iff the byte of x is zero, i.e. the byte is a space
            // (exact: no borrows between bytes).
            let space = !(((x & LOW7) + LOW7) | x | LOW7);
            if space == 0 {
                self.i += 8;
                continue;
            }
            let end = i + (space.trailing_zeros() / 8) as usize;
            let start = self.start;
            self.start = end + 1;
            self.i = end + 1;
            if end > start {
                return Some(&b[start..end]);
            }
        }
        // Fewer than eight bytes left.
        while self.i < n {
            let i = self.i;
            self.i += 1;
            if b[i] == b' ' {
                let start = self.start;
                self.start = i + 1;
                if i > start {
                    return Some(&b[start..i]);
                }
            }
        }
        if n > self.start {
            let start = self.start;
            self.start = n;
            return Some(&b[start..n]);
        }
        None
    }
}

/// Calls `f` with each word of `text` in order ([`SwarWords`]).
#[inline]
pub fn for_each_word<'a>(text: &'a str, f: impl FnMut(&'a [u8])) {
    SwarWords::new(text).for_each(f);
}

/// The word hashes ([`hash::word_hash`]) of the words of `text`, in order, appended to `out`.
/// Pinned by `word_hashes_equal_for_each_word`.
pub fn word_hashes_into(text: &str, out: &mut Vec<u64>) {
    for w in SwarWords::new(text) {
        out.push(hash::word_hash(w));
    }
}

/// Per-thread buffers of `fingerprint`, reused from one document to the next: the word hashes
/// and the raw shingle hashes (text order, with duplicates) and the scratch of their sort.
#[derive(Default)]
struct Scratch {
    word_hashes: Vec<u64>,
    raw: Vec<u64>,
    sort: shingle::SortScratch,
}

/// A thread keeps its scratch only while it holds at most this much heap, so one huge
/// document does not pin its buffers for the life of the thread.
const MAX_SCRATCH_BYTES: usize = 16 << 20;

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

/// Fingerprints one canonical text. Never panics; parameters outside the validated ranges
/// give an empty feature set (zero values) rather than an error.
pub fn fingerprint(text: &str, opts: &FingerprintOptions) -> Fingerprint {
    SCRATCH.with(|cell| {
        // Taken, not borrowed: a panic leaves None behind, never a half-used scratch.
        let mut s = cell.take().unwrap_or_default();
        let fp = fingerprint_with(text, opts, &mut s);
        let held = 8 * s.word_hashes.capacity() + 8 * s.raw.capacity() + s.sort.heap_bytes();
        if held <= MAX_SCRATCH_BYTES {
            cell.set(Some(s));
        }
        fp
    })
}

fn fingerprint_with(text: &str, opts: &FingerprintOptions, s: &mut Scratch) -> Fingerprint {
    // Each word is hashed once: the hashes feed both the simhash and the word shingles.
    let word_hashes = &mut s.word_hashes;
    word_hashes.clear();
    word_hashes_into(text, word_hashes);
    let sim = simhash::of_hashes(word_hashes);
    let n_words = word_hashes.len();
    let raw = &mut s.raw;
    raw.clear();
    match opts.shingle {
        ShingleKind::Words(w) => shingle::word_shingles_of_words(word_hashes, w as usize, raw),
        ShingleKind::Chars(n) => *raw = shingle::char_shingles(text, n as usize),
    };
    // Sorted and unique, in a vector of its own sized to the set (the features are kept).
    let set = shingle::sort_unique(raw, &mut s.sort);
    let shingles = saturate(set.len());
    Fingerprint {
        features: opts.sample.apply(set),
        shingles,
        words: saturate(n_words),
        simhash: sim,
        digest: hash::digest(text),
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
