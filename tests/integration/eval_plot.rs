//! `eval --plot` and `ndd-index plot`: the charts hold the evaluation's own figures (each bar's
//! value is the JSON's score, Henzinger's chosen C thresholds are the marks), and a figure
//! description in JSON is drawn; a bad description is a usage error naming the file.

use crate::common::*;
use ndd_index::plot::scale::format_value;

/// A crawl of 3 sites with shared navigation, near-duplicates on the same site and mirrors on
/// other sites (JSONL with URLs), and its label truth.
fn crawl(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut rng = Rng::new(21);
    let mut s = String::new();
    let mut truth = String::from("key\tlabel\n");
    for p in 0..30 {
        let site = p % 3;
        let nav: Vec<String> = (0..60).map(|i| format!("nav{site}x{i}")).collect();
        let own: Vec<String> = (0..80).map(|_| format!("w{}", rng.below(3000))).collect();
        let mut put = |key: String, host: String, words: &[String]| {
            let text = format!("{} {}", nav.join(" "), words.join(" "));
            let line =
                serde_json::json!({"id": key, "url": format!("http://{host}/{key}"), "text": text});
            s.push_str(&format!("{line}\n"));
            truth.push_str(&format!("{key}\tc{p}\n"));
        };
        put(format!("p{p}"), format!("site{site}.example"), &own);
        if p % 2 == 0 {
            let mut v = own.clone();
            v[10] = format!("edit{p}");
            put(format!("p{p}v"), format!("site{site}.example"), &v);
        }
        if p % 3 == 1 {
            put(format!("p{p}m"), format!("mirror{}.example", p % 2), &own);
        }
    }
    let input = dir.join("crawl.jsonl");
    let t = dir.join("truth.tsv");
    std::fs::write(&input, s).unwrap();
    std::fs::write(&t, truth).unwrap();
    (input, t)
}

#[test]
fn eval_plot_draws_the_evaluations_figures() {
    let ix = TestIndex::new("eval-plot");
    let (input, truth) = crawl(ix.work());
    ix.ingest(&[&input], &["--methods", "all"]);
    let svg_path = ix.work().join("eval.svg");
    let ev = ix.json(&[
        "eval",
        "--truth",
        truth.to_str().unwrap(),
        "--plot",
        svg_path.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg xmlns=") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    let rows = ev["rows"].as_array().unwrap();
    assert!(rows.len() >= 5, "{ev}");
    for r in rows {
        let m = r["method"].as_str().unwrap();
        let v = |f: &str| format_value(r[f].as_f64().unwrap());
        // One bar per score, its tooltip the JSON's value.
        for (series, field) in [("precision", "precision"), ("recall", "recall")] {
            let tip = format!("<title>method {m}: {series} {}</title>", v(field));
            assert!(svg.contains(&tip), "missing {tip}");
        }
        let s = format_value(r["same_site"]["precision"].as_f64().unwrap());
        assert!(svg.contains(&format!("<title>method {m}: same-site P {s}</title>")));
        // Label truth: the found-ratio bars.
        if let Some(x) = r["found_ratio_docs"].as_f64() {
            let tip = format!(
                "<title>method {m}: found (Table III) {}</title>",
                format_value(x)
            );
            assert!(svg.contains(&tip), "missing {tip}");
        }
    }
    // Henzinger's C-threshold curve, with the thresholds the split chose marked.
    let split = &ev["henzinger_split"][0];
    assert!(svg.contains("Henzinger split-half"));
    let c = split["c_agree_bits"].as_u64().unwrap();
    let comb = split["combined_agree_bits"].as_u64().unwrap();
    assert!(svg.contains(&format!(">C {c}</text>")), "mark of C {c}");
    assert!(svg.contains(&format!(">combined {comb}</text>")));
    let curve = split["curve"].as_array().unwrap().len();
    assert_eq!(svg.matches("<title>C, different sites: P: ").count(), curve);
}

#[test]
fn plot_draws_a_json_figure_and_rejects_a_bad_one() {
    let dir = temp_dir("plot-spec");
    let spec = dir.path().join("fig.json");
    std::fs::write(
        &spec,
        r##"{"title": "N & time", "charts": [
            {"kind": "line", "title": "time per document", "x": {"label": "N", "log": true},
             "y": {"label": "us"}, "series": [{"name": "ingest", "points": [[250000, 158], [1000000, 295], [4000000, 357]]}]},
            {"kind": "bar", "categories": ["a", "b"], "y": {"label": "MiB"},
             "series": [{"name": "heap", "values": [206, 739]}]}]}"##,
    )
    .unwrap();
    let out = dir.path().join("fig.svg");
    ndd(&[
        "plot",
        "--spec",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.contains("N &amp; time"));
    assert_eq!(svg.matches("<polyline").count(), 1);
    assert!(svg.contains("<title>ingest: 1M, 295</title>"));
    assert!(svg.contains("<title>b: heap 739</title>"));

    std::fs::write(&spec, r#"{"charts": [{"kind": "pie"}]}"#).unwrap();
    let o = ndd_raw(&[
        "plot",
        "--spec",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("fig.json") && err.contains("not a figure"),
        "{err}"
    );
}
