//! Command-line parameters and their (dependency-free) parser.

use std::path::PathBuf;

pub const USAGE: &str = "\
ndd-gen: seeded, deterministic web-like corpus with planted near-duplicate clusters

USAGE:
  ndd-gen --out DIR [options]

OPTIONS:
  --out DIR                 output directory (must be new or empty)
  --docs N                  documents (background docs with --imatch-protocol) [1000]
  --seed S                  RNG seed; same arguments => byte-identical output [1]
  --batches B               nightly batches: batch-01 .. batch-BB [1]
  --format files|warc       DIR/batch-XX/site-YY/page-N.html or DIR/batch-XX.warc [files]
  --words MEAN              mean words of body text per document [300]
  --vocab V                 vocabulary size [50000]
  --zipf S                  Zipf exponent of word frequencies [1.1]
  --sites K                 sites, each with its own boilerplate [20]
  --nav-words W             boilerplate words of every site (header, nav, footer;
                            >= 12) [30-80, drawn per site]
  --cross-site F            fraction of variants published on another site than
                            their original (mirrors: the original's page and
                            boilerplate under another host) [0]
  --dup-fraction F          fraction of documents that are planted variants [0.3]
  --cluster-size MAX        max documents per cluster, original included (>= 2) [8]
  --edit-rate R             per-word edit probability of a variant (R/3 each: delete,
                            swap with next, insert random word) [0.05]
  --imatch-protocol O,V     O long originals with V variants each, plus --docs unrelated
                            background docs (Chowdhury et al. 2002); ignores
                            --dup-fraction and --cluster-size
  --key-prefix TEXT         (warc) URIs become http://site-YY.example/TEXTpage-N.html, so
                            corpora of different seeds can share an index [empty]
  --threads T               worker threads (output does not depend on it) [all cores]
  --quiet                   no progress on stderr
  --help                    this text

Writes DIR/truth-clusters.tsv (key<TAB>label for every document) and DIR/gen.json.
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Files,
    Warc,
}

#[derive(Clone, Debug)]
pub struct Params {
    pub out: PathBuf,
    pub docs: u32,
    pub seed: u64,
    pub batches: u32,
    pub format: Format,
    pub words: u32,
    pub vocab: u32,
    pub zipf: f64,
    pub sites: u32,
    /// Boilerplate words per site; None: 30-80, drawn per site.
    pub nav_words: Option<u32>,
    /// Fraction of variants on another site than their original.
    pub cross_site: f64,
    pub dup_fraction: f64,
    pub cluster_size: u32,
    pub edit_rate: f64,
    /// (originals, variants per original)
    pub imatch: Option<(u32, u32)>,
    pub threads: usize,
    pub quiet: bool,
    /// Prepended to the page name of WARC URIs.
    pub key_prefix: String,
}

impl Params {
    pub fn defaults(out: PathBuf) -> Params {
        Params {
            out,
            docs: 1000,
            seed: 1,
            batches: 1,
            format: Format::Files,
            words: 300,
            vocab: 50_000,
            zipf: 1.1,
            sites: 20,
            nav_words: None,
            cross_site: 0.0,
            dup_fraction: 0.3,
            cluster_size: 8,
            edit_rate: 0.05,
            imatch: None,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            quiet: false,
            key_prefix: String::new(),
        }
    }

    /// Total documents written (background plus the I-Match originals and variants).
    pub fn total_docs(&self) -> u64 {
        match self.imatch {
            Some((o, v)) => self.docs as u64 + o as u64 * (v as u64 + 1),
            None => self.docs as u64,
        }
    }

    fn validate(&self) -> Result<(), String> {
        let total = self.total_docs();
        if total == 0 || total > (1 << 31) {
            return Err(format!("total documents must be in 1..=2^31, got {total}"));
        }
        if self.batches == 0 || self.batches as u64 > total {
            return Err("--batches must be in 1..=number of documents".into());
        }
        if self.words == 0 || self.words > 1_000_000 {
            return Err("--words must be in 1..=1000000".into());
        }
        if self.vocab < 2 || self.vocab > 16_000_000 {
            return Err("--vocab must be in 2..=16000000".into());
        }
        if !(self.zipf > 0.0 && self.zipf <= 5.0) {
            return Err("--zipf must be in (0, 5]".into());
        }
        if self.sites == 0 || self.sites > 10_000 {
            return Err(
                "--sites must be in 1..=10000 (a batch directory holds one dir per site)".into(),
            );
        }
        if !(0.0..1.0).contains(&self.dup_fraction) {
            return Err("--dup-fraction must be in [0, 1)".into());
        }
        if let Some(w) = self.nav_words {
            if !(12..=100_000).contains(&w) {
                return Err("--nav-words must be in 12..=100000".into());
            }
        }
        if !(0.0..=1.0).contains(&self.cross_site) {
            return Err("--cross-site must be in [0, 1]".into());
        }
        if self.cluster_size < 2 {
            return Err("--cluster-size must be >= 2".into());
        }
        if !(0.0..=1.0).contains(&self.edit_rate) {
            return Err("--edit-rate must be in [0, 1]".into());
        }
        if let Some((o, _)) = self.imatch {
            if o == 0 {
                return Err("--imatch-protocol needs at least one original".into());
            }
        }
        if self.threads == 0 {
            return Err("--threads must be >= 1".into());
        }
        Ok(())
    }
}

/// Parses `args` (without the program name). `Ok(None)` means --help was asked for.
pub fn parse(args: &[String]) -> Result<Option<Params>, String> {
    let mut out = None;
    let mut p = Params::defaults(PathBuf::new());
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        match name {
            "--help" | "-h" => return Ok(None),
            "--quiet" | "-q" => {
                p.quiet = true;
                continue;
            }
            _ => {}
        }
        let value = match inline {
            Some(v) => v,
            None => {
                let v = args.get(i).ok_or_else(|| format!("{name} needs a value"))?;
                i += 1;
                v.clone()
            }
        };
        let v = value.as_str();
        match name {
            "--out" => out = Some(PathBuf::from(v)),
            "--docs" => p.docs = num(name, v)?,
            "--seed" => p.seed = num(name, v)?,
            "--batches" => p.batches = num(name, v)?,
            "--format" => {
                p.format = match v {
                    "files" => Format::Files,
                    "warc" => Format::Warc,
                    _ => return Err(format!("--format must be files or warc, got {v:?}")),
                }
            }
            "--words" => p.words = num(name, v)?,
            "--vocab" => p.vocab = num(name, v)?,
            "--zipf" => p.zipf = num(name, v)?,
            "--sites" => p.sites = num(name, v)?,
            "--nav-words" => p.nav_words = Some(num(name, v)?),
            "--cross-site" => p.cross_site = num(name, v)?,
            "--dup-fraction" => p.dup_fraction = num(name, v)?,
            "--cluster-size" => p.cluster_size = num(name, v)?,
            "--edit-rate" => p.edit_rate = num(name, v)?,
            "--imatch-protocol" => {
                let (o, n) = v.split_once(',').ok_or_else(|| {
                    format!("--imatch-protocol takes ORIGINALS,VARIANTS, got {v:?}")
                })?;
                p.imatch = Some((num(name, o.trim())?, num(name, n.trim())?));
            }
            "--threads" => p.threads = num(name, v)?,
            "--key-prefix" => {
                if !v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(format!("--key-prefix takes [A-Za-z0-9_-], got {v:?}"));
                }
                p.key_prefix = v.to_string();
            }
            _ => return Err(format!("unknown argument {arg:?} (see --help)")),
        }
    }
    p.out = out.ok_or("--out DIR is required (see --help)")?;
    if !p.key_prefix.is_empty() && p.format != Format::Warc {
        return Err("--key-prefix needs --format warc".into());
    }
    p.validate()?;
    Ok(Some(p))
}

fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("{name}: cannot parse {v:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_both_spellings_and_protocol() {
        let p = parse(&s(&[
            "--out",
            "x",
            "--docs=50",
            "--format",
            "warc",
            "--imatch-protocol",
            "10,10",
            "-q",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(p.out, PathBuf::from("x"));
        assert_eq!(p.docs, 50);
        assert_eq!(p.format, Format::Warc);
        assert_eq!(p.imatch, Some((10, 10)));
        assert_eq!(p.total_docs(), 160);
        assert!(p.quiet);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse(&s(&["--docs", "5"])).is_err()); // no --out
        assert!(parse(&s(&["--out", "x", "--docs", "abc"])).is_err());
        assert!(parse(&s(&["--out", "x", "--bogus", "1"])).is_err());
        assert!(parse(&s(&["--out", "x", "--edit-rate", "1.5"])).is_err());
        assert!(parse(&s(&["--out", "x", "--docs", "3", "--batches", "4"])).is_err());
        assert!(parse(&s(&["--out", "x", "--cluster-size", "1"])).is_err());
        assert!(parse(&s(&["--out", "x", "--nav-words", "5"])).is_err());
        assert!(parse(&s(&["--out", "x", "--cross-site", "2"])).is_err());
        assert!(parse(&s(&["--help"])).unwrap().is_none());
    }
}
