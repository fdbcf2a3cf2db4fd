//! The site of a document: the host of its URL, or for files without one a rule on the key.
//!
//! One definition for the whole crate (the index's same-site flags, `eval`'s same-site and
//! different-site scores, `runs`' source counts). A document's site is, in this order:
//! 1. the host of its URL (WARC-Target-URI, TREC DOCHDR, ARC URL, a JSONL `url` field),
//! 2. the host of its key, when the key is itself a URL (`scheme://host/...`),
//! 3. the first N directory components of its key ([`SiteRule::Path`], `--site path:N` at
//!    index creation; the file name never counts, so `a/b/c.html` is site `a` under
//!    `path:1` and `a/b` under `path:2` or more, and a file at the root is site `""`).
//!
//! The host is lowercased, without port, user info, trailing dot or a leading `www.`.
//! Henzinger (2006) drops the first label of any host with three or more labels
//! (`www.cs.berkeley.edu` -> `cs.berkeley.edu`); we drop only `www.`, so `news.x.org` and
//! `mail.x.org` stay two sites.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The site of a URL: its host, lowercased, without a leading `www.` (None if it has none).
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let auth = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let host = host
        .strip_prefix("www.")
        .map(str::to_string)
        .unwrap_or(host);
    (!host.is_empty()).then_some(host)
}

/// Whether `key` is a URL (`scheme://...` with an ASCII-letter scheme).
fn is_url(key: &str) -> bool {
    match key.split_once("://") {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// The site rule for documents whose key is a path, chosen at index creation (`--site`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteRule {
    /// The first N directory components of the key (N >= 1).
    Path(u32),
}

/// Default rule: `path:1`. A crawl saved as files (`wget --recursive`, `httrack`, ndd-gen's
/// `--format files`) puts each host's pages under a directory named after the host, so the
/// first directory of a key is its host; one-level keys (`a.html`) share the site `""`.
pub const DEFAULT_SITE_RULE: SiteRule = SiteRule::Path(1);

impl Default for SiteRule {
    fn default() -> Self {
        DEFAULT_SITE_RULE
    }
}

impl fmt::Display for SiteRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SiteRule::Path(n) => write!(f, "path:{n}"),
        }
    }
}

impl FromStr for SiteRule {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "bad site rule {s:?} (expected path:N with N >= 1, e.g. path:1)"
            ))
        };
        let n = s.strip_prefix("path:").ok_or_else(bad)?;
        match n.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(SiteRule::Path(n)),
            _ => Err(bad()),
        }
    }
}

impl SiteRule {
    /// The site of a document with `key` and, if its container named one, `url`.
    pub fn site(self, key: &str, url: Option<&str>) -> String {
        if let Some(h) = url.and_then(url_host) {
            return h;
        }
        if is_url(key) {
            return url_host(key).unwrap_or_default();
        }
        match self {
            SiteRule::Path(n) => {
                let dir = key.rsplit_once('/').map_or("", |(d, _)| d);
                let mut end = 0;
                for (i, part) in dir.split('/').enumerate() {
                    if i as u32 >= n {
                        break;
                    }
                    end += part.len() + usize::from(i > 0);
                }
                dir[..end].to_owned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_hosts() {
        assert_eq!(
            url_host("http://www.Example.com:80/a?b").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            url_host("https://u:p@news.bbc.co.uk/x").as_deref(),
            Some("news.bbc.co.uk")
        );
        assert_eq!(url_host("www.x.org").as_deref(), Some("x.org"));
        assert_eq!(url_host("http://[::1]:8080/").as_deref(), Some("[::1]"));
        assert_eq!(url_host("http://x.org./").as_deref(), Some("x.org"));
        assert_eq!(url_host("http:///nohost"), None);
    }

    #[test]
    fn the_url_wins_then_a_url_key_then_the_path_rule() {
        let r = SiteRule::Path(1);
        assert_eq!(r.site("a/b.html", Some("http://WWW.x.org/p")), "x.org");
        assert_eq!(r.site("https://y.org/q/r.html", None), "y.org");
        assert_eq!(r.site("HTTP://www.y.org", None), "y.org");
        // A URL without a host falls through to the key.
        assert_eq!(r.site("s/b.html", Some("http:///x")), "s");
        // Not URLs: a colon alone, a scheme starting with a digit.
        assert_eq!(r.site("c:/x/y.html", None), "c:");
        assert_eq!(r.site("1a://h/x", None), "1a:");
    }

    #[test]
    fn path_rule_takes_the_first_n_directories() {
        let key = "docs/llvm-14-doc/AMDGPU/x.html";
        assert_eq!(SiteRule::Path(1).site(key, None), "docs");
        assert_eq!(SiteRule::Path(2).site(key, None), "docs/llvm-14-doc");
        assert_eq!(SiteRule::Path(3).site(key, None), "docs/llvm-14-doc/AMDGPU");
        // The file name never counts.
        assert_eq!(SiteRule::Path(9).site(key, None), "docs/llvm-14-doc/AMDGPU");
        assert_eq!(SiteRule::Path(1).site("x.html", None), "");
        assert_eq!(SiteRule::Path(2).site("a/x.html", None), "a");
        // Keys that are not paths (JSONL ids) are one site.
        assert_eq!(SiteRule::Path(1).site("doc-17", None), "");
    }

    #[test]
    fn site_rules_parse_and_print() {
        assert_eq!("path:3".parse::<SiteRule>().unwrap(), SiteRule::Path(3));
        assert_eq!(SiteRule::Path(3).to_string(), "path:3");
        assert_eq!(SiteRule::default(), SiteRule::Path(1));
        for bad in ["path:0", "path:", "path:-1", "host", "path:x", ""] {
            let e = bad.parse::<SiteRule>().unwrap_err().to_string();
            assert!(e.contains("site rule"), "{bad}: {e}");
        }
    }
}
