//! `ndd-index pairs`: every pair of indexed documents at or above a threshold.

use clap::Args;
use ndd_index::method::Method;
use ndd_index::ops::PairsRequest;
use ndd_index::pipeline::Matching;
use ndd_index::{Error, Index, Threshold};

use super::{parse_size, IndexArg, Out};

#[derive(Args)]
pub struct PairsArgs {
    #[command(flatten)]
    ix: IndexArg,
    /// Minimum similarity: resemblance (shingle, required), 1 - hamming/64 (simhash, optional:
    /// the index's k bounds it), C-similarity (combined, default 355/384); dsc-ss, imatch
    /// and exact take none.
    #[arg(long)]
    threshold: Option<Threshold>,
    /// shingle | simhash | dsc-ss | combined | imatch | exact | megashingle | c-sim | henzinger.
    #[arg(long, default_value = "shingle")]
    method: Method,
    /// Commonality limit for this run (default: the index's; 0 = no limit).
    #[arg(long, value_name = "N")]
    max_df: Option<u32>,
    /// Memory budget: of the external sorts (join) or of one block's pair buffer (probe),
    /// e.g. 64MiB (default: a quarter of RAM for join, 64MiB for probe).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    mem: Option<u64>,
    /// join: the out-of-core pipeline (probe records -> merge join with the segments ->
    /// candidate pairs -> verification, all through the external sort); probe: random
    /// lookups per document; prefix: documents sharing a key of both probe sets, no posting
    /// read, in memory (join or probe by auto's choice when its records exceed a quarter of
    /// --mem); auto: prefix where it applies (no --max-df, not adaptive sampling) and fits,
    /// else the cheaper of join and probe by a cost model (probe keys of a sample checked
    /// against the segments' key filters; random reads vs sorts plus one pass over the blocks
    /// they touch, under --mem). All find the same pairs.
    #[arg(long, default_value = "auto")]
    matching: Matching,
    /// Print the work counters (postings visited, what --max-df cut, blocks) as JSON on stderr.
    #[arg(long)]
    stats: bool,
}

/// Text: `key_a<TAB>key_b<TAB>similarity` (6 decimals); JSON: one object per pair with
/// `same_site` (both documents on the one site, `input::site`), and the method's extra
/// scores for methods other than shingle.
pub fn run(a: PairsArgs) -> Result<(), Error> {
    let index = Index::open(&a.ix.index)?;
    let req = PairsRequest {
        method: a.method,
        threshold: a.threshold,
        max_df: a.max_df,
        mem: a.mem,
        matching: a.matching,
        sites: a.ix.json,
    };
    let mut out = Out::new();
    let stats = index.pairs(&req, |p| {
        if !a.ix.json {
            return out.line(format_args!(
                "{}\t{}\t{:.6}",
                p.key_a, p.key_b, p.resemblance
            ));
        }
        let mut v =
            serde_json::json!({"key_a": p.key_a, "key_b": p.key_b, "resemblance": p.resemblance});
        if let Some(s) = p.same_site {
            v["same_site"] = serde_json::json!(s);
        }
        if p.method == Method::Shingle {
            return out.json(&v);
        }
        v["method"] = serde_json::json!(p.method);
        v["similarity"] = serde_json::json!(p.resemblance);
        if let Some(h) = p.hamming {
            v["hamming"] = serde_json::json!(h);
        }
        if let Some(c) = p.agree {
            v["agree"] = serde_json::json!(c);
        }
        out.json(&v)
    })?;
    out.flush()?;
    if let (true, Some(s)) = (a.stats, stats) {
        eprintln!("{}", serde_json::to_string(&s).expect("stats serialize"));
    }
    Ok(())
}
