//! Fault injection for tests: `NDD_FAILPOINT=SITE:N[,SITE:N...]` makes the N-th and every later
//! pass through `SITE` fail with an I/O error (EIO), as a failing disk would.
//!
//! Sites: `segment.write` (a block, the directory or the footer of a segment), `segment.sync`
//! (the fsync before a segment is renamed into place), `run.write` (a block of a sort run
//! file). tests/integration/lifecycle_faults.rs drives them. When the variable is unset a check costs one
//! initialized `OnceLock` read.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Environment variable naming the armed sites.
pub const ENV: &str = "NDD_FAILPOINT";

struct Site {
    name: String,
    from: u64,
    hits: AtomicU64,
}

fn sites() -> &'static [Site] {
    static SITES: OnceLock<Vec<Site>> = OnceLock::new();
    SITES.get_or_init(|| std::env::var(ENV).map(|v| parse(&v)).unwrap_or_default())
}

fn parse(spec: &str) -> Vec<Site> {
    spec.split(',')
        .filter_map(|s| {
            let (name, n) = s.trim().rsplit_once(':')?;
            Some(Site {
                name: name.to_string(),
                from: n.parse().ok().filter(|&n| n > 0)?,
                hits: AtomicU64::new(0),
            })
        })
        .collect()
}

/// Passes through `site`: an injected error if it is armed and its count has been reached.
#[inline]
pub fn check(site: &str) -> io::Result<()> {
    let sites = sites();
    if sites.is_empty() {
        return Ok(());
    }
    check_in(sites, site)
}

fn check_in(sites: &[Site], site: &str) -> io::Result<()> {
    for s in sites.iter().filter(|s| s.name == site) {
        let n = s.hits.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= s.from {
            return Err(io::Error::other(format!(
                "injected I/O error at {site} (pass {n}, {ENV})"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fails_from_the_nth_pass_on() {
        let sites = parse("a.b:3, c:1,bad,d:0,e:x");
        assert_eq!(sites.len(), 2);
        assert!(check_in(&sites, "a.b").is_ok());
        assert!(check_in(&sites, "a.b").is_ok());
        assert!(check_in(&sites, "a.b").is_err());
        assert!(check_in(&sites, "a.b").is_err());
        assert!(check_in(&sites, "c").is_err());
        assert!(check_in(&sites, "zzz").is_ok());
    }
}
