//! `eval --plot`: the charts one evaluation holds, as one SVG figure ([`crate::plot`]).
//!
//! In this order, each only when the evaluation has its data:
//! 1. precision, recall and F1 of every row (method, threshold) as bars;
//! 2. precision and recall against the truth threshold T, a solid (P) and a dashed (R) line per
//!    method evaluated at two thresholds or more;
//! 3. same-site against different-site precision and recall per row (Henzinger's split);
//! 4. label truth: Chowdhury et al.'s found ratio (Table III's definition and our stricter
//!    largest-cluster ratio) and the clusters a true cluster falls into;
//! 5. per Henzinger split-half run: precision and recall of combined (same-site pairs) and of
//!    C (different-site pairs) against the C threshold on the training half, with the chosen
//!    thresholds marked.
//!
//! Curves across several indexes (sampling ratio, simhash k) need several evaluations: the
//! scripts in tools/ collect their JSON and draw them with `ndd-index plot`.

use std::collections::BTreeMap;

use crate::plot::{Axis, BarChart, BarSeries, Chart, Figure, LineChart, Mark, Series};

use super::{EvalRow, HenzingerSplit};

const SAME_P: &str = "#1f4e99";
const SAME_R: &str = "#8fb3e8";
const DIFF_P: &str = "#b22222";
const DIFF_R: &str = "#f0a0a0";

fn unit(label: &str) -> Axis {
    Axis::new(label).range(0.0, 1.0)
}

/// The figure of one evaluation; `title` heads it (e.g. the truth file).
pub fn figure(rows: &[EvalRow], split: &[HenzingerSplit], title: &str) -> Figure {
    let mut f = Figure::new(Some(title.to_string()));
    if rows.is_empty() {
        return f;
    }
    let thresholds: Vec<f64> = {
        let mut t: Vec<f64> = rows.iter().map(|r| r.threshold).collect();
        t.sort_by(f64::total_cmp);
        t.dedup();
        t
    };
    // A method's row at another threshold is drawn only when it differs (with label truth, or
    // for a method whose pairs do not depend on T, the rows repeat).
    let same = |a: &EvalRow, b: &EvalRow| {
        a.method == b.method
            && (a.found, a.true_positives, a.positives) == (b.found, b.true_positives, b.positives)
    };
    let mut kept: Vec<&EvalRow> = Vec::new();
    for r in rows {
        if !kept.iter().any(|k| same(k, r)) {
            kept.push(r);
        }
    }
    let several = |m: &crate::method::Method| kept.iter().filter(|k| k.method == *m).count() > 1;
    let names: Vec<String> = kept
        .iter()
        .map(|r| {
            if several(&r.method) {
                format!("{} T={}", r.method, r.threshold)
            } else {
                r.method.to_string()
            }
        })
        .collect();
    let name = |r: &EvalRow| {
        kept.iter()
            .position(|k| std::ptr::eq(*k, r))
            .map_or_else(|| r.method.to_string(), |i| names[i].clone())
    };
    let rows: Vec<&EvalRow> = kept.clone();
    let categories = names.clone();
    let col = |g: fn(&EvalRow) -> f64| rows.iter().map(|r| g(r)).collect::<Vec<f64>>();
    f.push(Chart::Bar(BarChart {
        title: format!(
            "Precision, recall and F1 by method (T = {})",
            join(&thresholds)
        ),
        x_label: "method".into(),
        categories: categories.clone(),
        y: unit("pair-level score"),
        series: vec![
            BarSeries::new("precision", col(|r| r.precision)).color(0),
            BarSeries::new("recall", col(|r| r.recall)).color(2),
            BarSeries::new("F1", col(|r| r.f1)).color(4),
        ],
        nested: false,
    }));

    // 2. P and R against T, per method with several thresholds.
    let mut by_method: BTreeMap<String, Vec<&EvalRow>> = BTreeMap::new();
    for r in &rows {
        by_method.entry(r.method.to_string()).or_default().push(r);
    }
    let mut series = Vec::new();
    for (i, (m, rs)) in by_method.iter().filter(|(_, rs)| rs.len() > 1).enumerate() {
        let mut rs = rs.clone();
        rs.sort_by(|a, b| a.threshold.total_cmp(&b.threshold));
        let p = rs.iter().map(|r| (r.threshold, r.precision)).collect();
        let rc = rs.iter().map(|r| (r.threshold, r.recall)).collect();
        series.push(Series::new(format!("{m} P"), p).color(i));
        series.push(Series::new(format!("{m} R"), rc).color(i).dashed());
    }
    if !series.is_empty() {
        f.push(Chart::Line(LineChart {
            title: "Precision (solid) and recall (dashed) against the truth threshold".into(),
            x: Axis::new("T: truth resemblance threshold"),
            y: unit("pair-level score"),
            series,
            marks: Vec::new(),
        }));
    }

    // 3. Same site vs different sites.
    let (sp, dp) = (
        rows[0].same_site.positives,
        rows[0].different_site.positives,
    );
    f.push(Chart::Bar(BarChart {
        title: format!(
            "Same-site vs different-site pairs (positives at T = {}: {sp} same, {dp} different)",
            rows[0].threshold
        ),
        x_label: "method".into(),
        categories: categories.clone(),
        y: unit("pair-level score"),
        series: vec![
            BarSeries::new("same-site P", col(|r| r.same_site.precision)).color(SAME_P),
            BarSeries::new("different-site P", col(|r| r.different_site.precision)).color(DIFF_P),
            BarSeries::new("same-site R", col(|r| r.same_site.recall)).color(SAME_R),
            BarSeries::new("different-site R", col(|r| r.different_site.recall)).color(DIFF_R),
        ],
        nested: false,
    }));

    // 4. Label truth: Chowdhury et al.'s measures.
    let labelled: Vec<&EvalRow> = rows
        .iter()
        .copied()
        .filter(|r| r.found_ratio.is_some())
        .collect();
    if !labelled.is_empty() {
        let cats: Vec<String> = labelled.iter().map(|r| name(r)).collect();
        let opt = |g: fn(&EvalRow) -> Option<f64>| {
            labelled
                .iter()
                .map(|r| g(r).unwrap_or(f64::NAN))
                .collect::<Vec<f64>>()
        };
        f.push(Chart::Bar(BarChart {
            title: "Found ratio of the true clusters (Chowdhury et al.)".into(),
            x_label: "method".into(),
            categories: cats.clone(),
            y: unit("found ratio"),
            series: vec![
                BarSeries::new("found (Table III)", opt(|r| r.found_ratio_docs)).color(0),
                BarSeries::new("largest-cluster ratio", opt(|r| r.found_ratio)).color(5),
            ],
            nested: false,
        }));
        f.push(Chart::Bar(BarChart {
            title: "Clusters a true cluster falls into (Table IV; 1 is best)".into(),
            x_label: "method".into(),
            categories: cats,
            y: Axis {
                min: Some(0.0),
                ..Axis::new("clusters per true cluster")
            },
            series: vec![BarSeries::new("clusters", opt(|r| r.clusters_per_true_cluster)).color(3)],
            nested: false,
        }));
    }

    // 5. Henzinger's C threshold, training half (a split repeating the one before, as with
    // label truth at several thresholds, is drawn once).
    let mut drawn: Vec<serde_json::Value> = Vec::new();
    for h in split {
        let key = serde_json::json!([h.c_agree_bits, h.combined_agree_bits, h.curve]);
        if drawn.contains(&key) {
            continue;
        }
        drawn.push(key);
        let pts = |g: fn(&super::sites::CurvePoint) -> f64| {
            h.curve
                .iter()
                .map(|c| (c.agree_bits as f64, g(c)))
                .collect::<Vec<_>>()
        };
        f.push(Chart::Line(LineChart {
            title: format!(
                "Henzinger split-half, T = {}: C threshold on the training half",
                h.threshold
            ),
            x: Axis::new("C threshold: agreeing bits of 384"),
            y: unit("pair-level score"),
            series: vec![
                Series::new("combined, same site: P", pts(|c| c.same_site.precision)).color(SAME_P),
                Series::new("combined, same site: R", pts(|c| c.same_site.recall))
                    .color(SAME_P)
                    .dashed(),
                Series::new("C, different sites: P", pts(|c| c.different_site.precision))
                    .color(DIFF_P),
                Series::new("C, different sites: R", pts(|c| c.different_site.recall))
                    .color(DIFF_P)
                    .dashed(),
            ],
            marks: vec![
                Mark {
                    x: h.combined_agree_bits as f64,
                    label: format!("combined {}", h.combined_agree_bits),
                },
                Mark {
                    x: h.c_agree_bits as f64,
                    label: format!("C {}", h.c_agree_bits),
                },
            ],
        }));
    }
    f
}

fn join(v: &[f64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::SiteScore;
    use crate::method::Method;

    fn row(m: Method, t: f64, p: f64, r: f64) -> EvalRow {
        EvalRow {
            method: m,
            threshold: t,
            found: 10,
            positives: 10,
            true_positives: 5,
            precision: p,
            recall: r,
            f1: 2.0 * p * r / (p + r),
            seconds: 0.1,
            mean_abs_error: None,
            correlation: None,
            found_ratio: None,
            clusters_per_true_cluster: None,
            found_ratio_docs: None,
            by_size_group: Vec::new(),
            same_site: SiteScore::default(),
            different_site: SiteScore::default(),
        }
    }

    #[test]
    fn charts_follow_the_data_the_evaluation_has() {
        // One threshold, pair truth: scores and sites only.
        let rows = vec![
            row(Method::Shingle, 0.8, 1.0, 1.0),
            row(Method::Simhash, 0.8, 0.5, 0.9),
        ];
        let f = figure(&rows, &[], "t");
        assert_eq!(f.charts.len(), 2);
        // Two thresholds for shingle: a P/R line per method that has both.
        let mut rows2 = rows.clone();
        let mut r5 = row(Method::Shingle, 0.5, 1.0, 0.7);
        r5.positives = 14;
        rows2.push(r5);
        // A method whose row repeats at the other threshold is drawn once, without a T.
        rows2.push(row(Method::Simhash, 0.5, 0.5, 0.9));
        let f = figure(&rows2, &[], "t");
        assert_eq!(f.charts.len(), 3);
        let Chart::Bar(b) = &f.charts[0] else {
            panic!("expected the scores")
        };
        assert_eq!(
            b.categories,
            vec!["shingle T=0.8", "simhash", "shingle T=0.5"]
        );
        let Chart::Line(l) = &f.charts[1] else {
            panic!("expected the P/R line chart")
        };
        assert_eq!(l.series.len(), 2);
        assert_eq!(l.series[0].points, vec![(0.5, 1.0), (0.8, 1.0)]);
        assert_eq!(l.series[1].points, vec![(0.5, 0.7), (0.8, 1.0)]);
        // Label truth adds the found-ratio and clusters charts.
        let mut lab = rows.clone();
        lab[1].found_ratio = Some(0.5);
        lab[1].found_ratio_docs = Some(0.75);
        lab[1].clusters_per_true_cluster = Some(2.0);
        let f = figure(&lab, &[], "t");
        assert_eq!(f.charts.len(), 4);
        let Chart::Bar(b) = &f.charts[2] else {
            panic!("expected bars")
        };
        assert_eq!(b.categories, vec!["simhash"]);
        assert_eq!(b.series[0].values, vec![0.75]);
        // Nothing evaluated: an empty figure that still renders.
        let f = figure(&[], &[], "t");
        assert!(f.charts.is_empty());
        assert!(f.render().contains("nothing to plot"));
    }
}
