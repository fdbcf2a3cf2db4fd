//! Pages for the benches: up to 600 pages of the shared llvm corpus when it has been extracted
//! by the tests (target tmp dir), else 300 generated pages with shared boilerplate.
#![allow(dead_code)]

pub mod cputime;

use std::path::Path;

pub fn sample_pages() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tmp/llvm-docs/docs");
    let alt =
        std::env::var_os("CARGO_TARGET_DIR").map(|t| Path::new(&t).join("tmp/llvm-docs/docs"));
    for d in [Some(dir), alt].into_iter().flatten() {
        let mut files = Vec::new();
        collect(&d, &mut files);
        if !files.is_empty() {
            files.sort();
            return files
                .iter()
                .step_by((files.len() / 600).max(1))
                .filter_map(|f| std::fs::read(f).ok())
                .collect();
        }
    }
    (0..300u64).map(generated).collect()
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "html") {
            out.push(p);
        }
    }
}

fn generated(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut body = String::from("<html><head><title>t</title><script>var a=1;</script></head><body><nav>home docs blog about contact search</nav>");
    for w in 0..600 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let word = [
            "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
        ][(x % 10) as usize];
        body.push_str(word);
        body.push_str(if w % 12 == 11 { ".</p><p>" } else { " " });
    }
    body.push_str("<footer>copyright &copy; example</footer></body></html>");
    body.into_bytes()
}
