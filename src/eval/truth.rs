//! Truth files, by keys (tab-separated, one header line):
//! - **pairs**: `key_a  key_b  jaccard [...]` (3 or more columns). With a manifest
//!   (`doc_id  path ...`, the shared corpus's `manifest.tsv`) the first two columns are doc ids
//!   translated to paths, so the corpus's `truth.tsv` is read as it is. Positives at threshold
//!   T: the pairs with jaccard >= T.
//! - **labels**: `key  label` (2 columns); positives: the pairs of keys with the same label.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::{Error, IoResultExt, Result};

/// A truth file, by keys.
pub enum Truth {
    /// (key_a, key_b) ordered -> exact Jaccard.
    Pairs(HashMap<(String, String), f64>),
    /// key -> label.
    Labels(HashMap<String, String>),
}

pub(crate) fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

fn lines(path: &Path) -> Result<impl Iterator<Item = Result<(usize, String)>>> {
    let f = std::fs::File::open(path).at(path)?;
    let p = path.to_owned();
    Ok(BufReader::new(f)
        .lines()
        .enumerate()
        .map(move |(i, l)| l.at(&p).map(|l| (i + 1, l))))
}

impl Truth {
    /// Reads a truth file; `manifest` maps doc ids to keys for id-based pair truth.
    pub fn load(path: &Path, manifest: Option<&Path>) -> Result<Truth> {
        let ids: Option<HashMap<String, String>> = match manifest {
            None => None,
            Some(m) => {
                let mut map = HashMap::new();
                for item in lines(m)?.skip(1) {
                    let (_, l) = item?;
                    let mut f = l.split('\t');
                    if let (Some(id), Some(p)) = (f.next(), f.next()) {
                        map.insert(id.to_owned(), p.to_owned());
                    }
                }
                Some(map)
            }
        };
        let mut it = lines(path)?;
        let header = match it.next() {
            Some(h) => h?.1,
            None => return Err(bad(path, 1, "empty truth file")),
        };
        let cols = header.split('\t').count();
        if cols == 2 {
            let mut labels = HashMap::new();
            for item in it {
                let (n, l) = item?;
                if l.is_empty() {
                    continue;
                }
                let (k, lab) = l
                    .split_once('\t')
                    .ok_or_else(|| bad(path, n, "expected key<TAB>label"))?;
                labels.insert(k.to_owned(), lab.to_owned());
            }
            return Ok(Truth::Labels(labels));
        }
        if cols < 3 {
            return Err(bad(
                path,
                1,
                "header must have 2 (labels) or 3+ (pairs) columns",
            ));
        }
        let mut pairs = HashMap::new();
        for item in it {
            let (n, l) = item?;
            if l.is_empty() {
                continue;
            }
            let mut f = l.split('\t');
            let (Some(a), Some(b), Some(j)) = (f.next(), f.next(), f.next()) else {
                return Err(bad(path, n, "expected key_a<TAB>key_b<TAB>jaccard"));
            };
            let j: f64 = j
                .parse()
                .map_err(|_| bad(path, n, "jaccard is not a number"))?;
            let (a, b) = match &ids {
                Some(m) => (
                    m.get(a)
                        .ok_or_else(|| bad(path, n, "doc id not in the manifest"))?
                        .as_str(),
                    m.get(b)
                        .ok_or_else(|| bad(path, n, "doc id not in the manifest"))?
                        .as_str(),
                ),
                None => (a, b),
            };
            pairs.insert(ordered(a, b), j);
        }
        Ok(Truth::Pairs(pairs))
    }
}

fn bad(path: &Path, line: usize, why: &str) -> Error {
    Error::InvalidArgument(format!("{}:{line}: {why}", path.display()))
}
