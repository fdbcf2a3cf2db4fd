//! Helpers of the lifecycle tests: a small deterministic corpus with planted near-duplicates,
//! an index directory copier, and parsers of `pairs` / `clusters --json` output.
#![allow(dead_code)]

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

/// xorshift64*: deterministic, no dependency.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Writes `n` HTML documents into `dir` (`doc-NNNN.html`): every 4th one is an original with
/// 2 near-duplicate variants after it (a few words replaced), the rest are unrelated.
pub fn write_corpus(dir: &Path, n: usize, seed: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let mut rng = Rng::new(seed);
    let word = |r: &mut Rng| format!("w{}", r.below(5000));
    let mut i = 0;
    while i < n {
        let base: Vec<String> = (0..300).map(|_| word(&mut rng)).collect();
        let variants = if i % 4 == 0 { 3 } else { 1 };
        for v in 0..variants {
            if i >= n {
                break;
            }
            let mut words = base.clone();
            if v > 0 {
                for _ in 0..3 {
                    let at = rng.below(words.len() as u64) as usize;
                    words[at] = word(&mut rng);
                }
            }
            let html = format!("<html><body><p>{}</p></body></html>", words.join(" "));
            std::fs::write(dir.join(format!("doc-{i:04}.html")), html).unwrap();
            i += 1;
        }
    }
}

/// Copies an index directory (no hard links: segments must stay independent).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// `pairs` output as a sorted set of lines.
pub fn pair_lines(text: &str) -> BTreeSet<String> {
    text.lines().map(str::to_owned).collect()
}

/// `clusters --json` output: cluster id -> sorted member keys.
pub fn parse_clusters(text: &str) -> HashMap<u64, Vec<String>> {
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let mut m: Vec<String> = v["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap().to_owned())
                .collect();
            m.sort();
            (v["cluster"].as_u64().unwrap(), m)
        })
        .collect()
}

/// Connected components (2+ members, sorted) of the pairs in `pairs` output.
pub fn components(pairs_text: &str) -> BTreeSet<Vec<String>> {
    let mut parent: HashMap<String, String> = HashMap::new();
    fn find(p: &mut HashMap<String, String>, x: &str) -> String {
        let mut x = x.to_owned();
        loop {
            let px = p.entry(x.clone()).or_insert_with(|| x.clone()).clone();
            if px == x {
                return x;
            }
            x = px;
        }
    }
    for l in pairs_text.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        let (a, b) = (find(&mut parent, f[0]), find(&mut parent, f[1]));
        if a != b {
            parent.insert(a, b);
        }
    }
    let keys: Vec<String> = parent.keys().cloned().collect();
    let mut groups: HashMap<String, Vec<String>> = HashMap::new();
    for k in keys {
        let r = find(&mut parent, &k);
        groups.entry(r).or_default().push(k);
    }
    groups
        .into_values()
        .map(|mut g| {
            g.sort();
            g
        })
        .collect()
}

/// Keys appearing in `pairs` output.
pub fn keys_in_pairs(text: &str) -> HashSet<String> {
    text.lines()
        .flat_map(|l| l.split('\t').take(2).map(str::to_owned))
        .collect()
}
