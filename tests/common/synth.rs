//! Small synthetic inputs and what tests derive from answers: a deterministic corpus with
//! planted near-duplicates, an index directory copier, cluster maps and the connected
//! components of pairs.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::{Cluster, Pair};

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

/// Splits the files of `all` (by name) into batch folders `out/b0`, `out/b1`, ... of `per`
/// files each (copies), and returns them.
pub fn split_batches(all: &Path, out: &Path, per: usize) -> Vec<PathBuf> {
    let mut names: Vec<_> = std::fs::read_dir(all)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    names
        .chunks(per)
        .enumerate()
        .map(|(b, chunk)| {
            let dir = out.join(format!("b{b}"));
            std::fs::create_dir_all(&dir).unwrap();
            for n in chunk {
                std::fs::copy(all.join(n), dir.join(n)).unwrap();
            }
            dir
        })
        .collect()
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

/// Clusters by id, each with its sorted member keys.
pub fn cluster_map(clusters: &[Cluster]) -> HashMap<u64, Vec<String>> {
    clusters.iter().map(|c| (c.id, c.sorted())).collect()
}

/// Connected components (2+ members, sorted) of the pairs.
pub fn components(pairs: &[Pair]) -> BTreeSet<Vec<String>> {
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
    for (ka, kb, _) in pairs {
        let (a, b) = (find(&mut parent, ka), find(&mut parent, kb));
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

/// Keys appearing in the pairs.
pub fn keys_in_pairs(pairs: &[Pair]) -> HashSet<String> {
    pairs
        .iter()
        .flat_map(|(a, b, _)| [a.clone(), b.clone()])
        .collect()
}

/// The pairs sorted by key pair (to compare pair sets whatever their printed order).
pub fn by_keys(pairs: &[Pair]) -> Vec<Pair> {
    let mut v = pairs.to_vec();
    v.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    v
}
