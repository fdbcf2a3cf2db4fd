//! The layers of ARCHITECTURE.md stay one-way: every `crate::` and `super::` path in a source
//! file under src/ names a module of its own layer or one below it, and no files import each
//! other in a circle. Test-only files (`tests.rs`, `*_tests.rs`) may use anything.
//!
//! A new top-level module needs a row in `LAYERS`; the failure message says which.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path prefix -> layer, lowest first (ARCHITECTURE.md "Layers"). The longest prefix
/// of a module's path decides.
const LAYERS: &[(&str, u32)] = &[
    // codecs
    ("error", 0),
    ("failpoint", 0),
    ("threshold", 0),
    ("canonicalize", 0),
    ("plot", 0),
    ("fingerprint", 0),
    ("input", 0),
    ("segment", 0),
    ("sort", 0),
    ("store::records", 0),
    ("store::manifest", 0),
    // storage: the catalog, the creation options, union-find over the catalog
    ("store", 1),
    ("options", 1),
    ("cluster", 1),
    // the segment builder
    ("build", 2),
    // the read view
    ("view", 3),
    // the index handle (open/create/lock, catalog + view); operations are `impl Index` blocks
    // in the layers above
    ("index", 4),
    // matching: the matcher, all-pairs, the methods
    ("query", 5),
    ("pipeline", 5),
    ("method", 5),
    ("sites", 5),
    // operations
    ("pipeline::ingest", 6),
    ("lifecycle", 6),
    ("batch", 6),
    ("stats", 6),
    ("eval", 6),
    ("runs", 6),
    // the whole-operation API
    ("ops", 7),
    // front ends
    ("cli", 8),
    ("server", 8),
    ("main", 8),
    ("", 8), // lib.rs: the crate root declares and re-exports everything
];

fn layer(module: &str) -> Option<u32> {
    LAYERS
        .iter()
        .filter(|(p, _)| module == *p || p.is_empty() || module.starts_with(&format!("{p}::")))
        .max_by_key(|(p, _)| p.len())
        .map(|&(_, l)| l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file under src/ (`pipeline::ingest`, `pipeline` for its mod.rs).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts.join("::")
}

/// The `crate::`/`super::` paths of one file's code (comment lines and an inline
/// `#[cfg(test)] mod .. {`, by convention the file's end, left out), as absolute module paths.
fn paths_of(module: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cfg_test = false;
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("//") || line.is_empty() {
            continue;
        }
        if cfg_test && line.starts_with("mod ") && line.ends_with('{') {
            break;
        }
        cfg_test = line == "#[cfg(test)]";
        for base in ["crate::", "super::"] {
            for (i, _) in line.match_indices(base) {
                let before = line[..i].chars().last();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue; // `foo_crate::`, or the second `super::` of `super::super::`
                }
                let path: Vec<&str> = line[i + base.len()..]
                    .split("::")
                    .map(|s| {
                        let end = s
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(s.len());
                        &s[..end]
                    })
                    .take_while(|s| !s.is_empty())
                    .collect();
                let mut abs: Vec<&str> = if base == "crate::" {
                    Vec::new()
                } else {
                    let mut p: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
                    p.pop();
                    p
                };
                for seg in path {
                    if seg == "super" {
                        abs.pop();
                    } else {
                        abs.push(seg);
                    }
                }
                out.push(abs.join("::"));
            }
        }
    }
    out
}

/// The longest prefix of `path` that is a module with a file of its own.
fn resolve(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let mut segs: Vec<&str> = path.split("::").collect();
    while !segs.is_empty() {
        let m = segs.join("::");
        if modules.contains(&m) {
            return Some(m);
        }
        segs.pop();
    }
    None
}

fn is_test_file(file: &Path) -> bool {
    let name = file.file_stem().unwrap().to_string_lossy();
    name == "tests" || name.ends_with("_tests")
}

/// Every source file's module and the modules (with files) it names.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let files: Vec<(String, PathBuf)> = files
        .into_iter()
        .filter(|f| !is_test_file(f))
        .map(|f| (module_of(&src, &f), f))
        .collect();
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graph = BTreeMap::new();
    for (m, f) in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let uses: BTreeSet<String> = paths_of(m, &text)
            .iter()
            .filter_map(|p| resolve(p, &modules))
            .filter(|u| u != m && !u.is_empty())
            .collect();
        graph.insert(m.clone(), uses);
    }
    graph
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let graph = import_graph();
    assert!(graph.contains_key("view") && graph.contains_key("build"));
    let mut wrong = Vec::new();
    for (m, uses) in &graph {
        let Some(lm) = layer(m) else {
            wrong.push(format!("{m}: not in LAYERS (tests/integration/layers.rs)"));
            continue;
        };
        for u in uses {
            let lu = layer(u).unwrap_or(u32::MAX);
            if lu > lm {
                wrong.push(format!("{m} (layer {lm}) uses {u} (layer {lu})"));
            }
        }
    }
    assert!(wrong.is_empty(), "back edges:\n{}", wrong.join("\n"));
}

/// Circles between files that are known and not yet removed (none left; the last one,
/// `segment::reader` <-> `segment::verify`, went when the layout checks and the block index
/// moved to `segment::layout`).
const KNOWN_CIRCLES: &[&[&str]] = &[];

#[test]
fn no_files_import_each_other_in_a_circle() {
    let graph = import_graph();
    // Tarjan's strongly connected components.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        circles: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, (s.next, s.next));
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                if graph.contains_key(w) {
                    visit(s, w);
                    let lw = s.index[w].1;
                    let e = s.index.get_mut(v).unwrap();
                    e.1 = e.1.min(lw);
                }
            } else if s.on.contains(w) {
                let iw = s.index[w].0;
                let e = s.index.get_mut(v).unwrap();
                e.1 = e.1.min(iw);
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.circles.push(comp);
            }
        }
    }
    let mut s = State {
        graph: &graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        circles: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    let known: Vec<Vec<String>> = KNOWN_CIRCLES
        .iter()
        .map(|c| c.iter().map(|m| m.to_string()).collect())
        .collect();
    let new: Vec<&Vec<String>> = s.circles.iter().filter(|c| !known.contains(c)).collect();
    assert!(new.is_empty(), "files importing each other: {new:?}");
}

#[test]
fn the_checker_sees_paths() {
    let p = paths_of(
        "lifecycle::fold",
        "use crate::view::{View, X};\n// use crate::ops::x;\nlet a = super::add::f();\n\
         use super::super::segment::Segment;\n#[cfg(test)]\nmod tests {\n use super::*;\n",
    );
    assert_eq!(p, ["view", "lifecycle::add::f", "segment::Segment"]);
    assert_eq!(layer("pipeline::ingest"), Some(6));
    assert_eq!(layer("pipeline::join"), Some(5));
    assert_eq!(layer("store::delta"), Some(1));
}
