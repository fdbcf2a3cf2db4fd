//! gen.json: the generation parameters, counts and bytes, written by hand (no serde).
//!
//! Only deterministic facts go here (no timings, thread counts or output path), so that
//! gen.json is byte-identical across runs with the same arguments like everything else.

use crate::args::{Format, Params};
use crate::output::{Report, TRUTH_FILE};
use crate::plan::Plan;
use std::fmt::Write;

pub fn gen_json(p: &Params, plan: &Plan, r: &Report) -> String {
    let mut s = String::new();
    let html: u64 = r.batches.iter().map(|b| b.html_bytes).sum();
    let edits = r.edits.total() as u64;
    let realized = if r.variant_source_words == 0 {
        0.0
    } else {
        edits as f64 / r.variant_source_words as f64
    };
    let (format, key) = match p.format {
        Format::Files => ("files", "path relative to the batch directory"),
        Format::Warc => ("warc", "WARC-Target-URI"),
    };
    // Writing to a String cannot fail.
    let _ = writeln!(s, "{{");
    let _ = writeln!(
        s,
        "  \"generator\": \"ndd-gen {}\",",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(s, "  \"seed\": {},", p.seed);
    let _ = writeln!(s, "  \"parameters\": {{");
    let _ = writeln!(s, "    \"docs\": {},", p.docs);
    let _ = writeln!(s, "    \"seed\": {},", p.seed);
    let _ = writeln!(s, "    \"batches\": {},", p.batches);
    let _ = writeln!(s, "    \"format\": \"{format}\",");
    let _ = writeln!(s, "    \"words\": {},", p.words);
    let _ = writeln!(s, "    \"vocab\": {},", p.vocab);
    let _ = writeln!(s, "    \"zipf\": {},", num(p.zipf));
    let _ = writeln!(s, "    \"sites\": {},", p.sites);
    if let Some(w) = p.nav_words {
        let _ = writeln!(s, "    \"nav_words\": {w},");
    }
    if p.cross_site > 0.0 {
        let _ = writeln!(s, "    \"cross_site\": {},", num(p.cross_site));
    }
    let _ = writeln!(s, "    \"dup_fraction\": {},", num(p.dup_fraction));
    let _ = writeln!(s, "    \"cluster_size\": {},", p.cluster_size);
    let _ = writeln!(s, "    \"edit_rate\": {},", num(p.edit_rate));
    match p.imatch {
        Some((o, v)) => {
            let _ = writeln!(
                s,
                "    \"imatch_protocol\": {{\"originals\": {o}, \"variants\": {v}}}"
            );
        }
        None => {
            let _ = writeln!(s, "    \"imatch_protocol\": null");
        }
    }
    let _ = writeln!(s, "  }},");
    let st = &plan.stats;
    let _ = writeln!(s, "  \"counts\": {{");
    let _ = writeln!(s, "    \"documents\": {},", plan.n);
    let _ = writeln!(s, "    \"clusters\": {},", st.clusters);
    let _ = writeln!(s, "    \"variants\": {},", st.variants);
    let _ = writeln!(s, "    \"singletons\": {},", st.singletons);
    let _ = writeln!(s, "    \"largest_cluster\": {}", st.largest_cluster);
    let _ = writeln!(s, "  }},");
    if p.imatch.is_some() {
        let keys: Vec<String> = plan
            .long_originals()
            .iter()
            .map(|&o| format!("\"{}\"", plan.key(o)))
            .collect();
        let _ = writeln!(s, "  \"imatch_originals\": [{}],", keys.join(", "));
    }
    let _ = writeln!(s, "  \"edits\": {{");
    let _ = writeln!(
        s,
        "    \"variant_source_words\": {},",
        r.variant_source_words
    );
    let _ = writeln!(s, "    \"deleted\": {},", r.edits.deleted);
    let _ = writeln!(s, "    \"swapped\": {},", r.edits.swapped);
    let _ = writeln!(s, "    \"inserted\": {},", r.edits.inserted);
    let _ = writeln!(
        s,
        "    \"realized_rate\": {}",
        num((realized * 1e6).round() / 1e6)
    );
    let _ = writeln!(s, "  }},");
    let _ = writeln!(s, "  \"key\": \"{key}\",");
    let _ = writeln!(s, "  \"truth\": \"{TRUTH_FILE}\",");
    let _ = writeln!(s, "  \"batches\": [");
    for (i, b) in r.batches.iter().enumerate() {
        let comma = if i + 1 < r.batches.len() { "," } else { "" };
        let _ = writeln!(
            s,
            "    {{\"name\": \"{}\", \"path\": \"{}\", \"first_doc\": {}, \"documents\": {}, \"html_bytes\": {}, \"bytes_written\": {}}}{comma}",
            b.name, b.path, b.first_doc, b.docs, b.html_bytes, b.bytes_written
        );
    }
    let _ = writeln!(s, "  ],");
    let _ = writeln!(s, "  \"html_bytes\": {html},");
    let _ = writeln!(s, "  \"bytes_written\": {}", r.bytes_written());
    let _ = writeln!(s, "}}");
    s
}

/// JSON number for a finite f64 (Rust's shortest round-trip form is valid JSON).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}
