//! `--plot`: the report's two figures as one SVG file, drawn by the shared chart module
//! ([`crate::plot`]).
//!
//! - Top: thesis Figure 4.6, the share of run-topics (y) whose share of redundant documents is
//!   at least x, one line per list depth n (the `table`).
//! - Bottom: thesis Figures 4.1-4.5 in one chart, per topic the share of its collection that is
//!   duplicated at 0.1, 0.3, 0.5, 0.7 and 0.9, as nested bars (the count only falls as the
//!   level rises, so each darker bar stands inside the lighter one).

use super::RunsReport;
use crate::plot::{Axis, BarChart, BarSeries, Chart, Figure, LineChart, Series};

const LEVELS: [&str; 5] = ["0.1", "0.3", "0.5", "0.7", "0.9"];
const SHADES: [&str; 5] = ["#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c"];

/// The figures of the report as a chart figure (for callers that add to it).
pub fn figure(r: &RunsReport) -> Figure {
    let series = r
        .table
        .iter()
        .map(|t| {
            let pts = t
                .rows
                .iter()
                .map(|row| (row.at_least_percent as f64, row.run_topics_percent))
                .collect();
            Series::new(format!("n = {}", t.n), pts)
        })
        .collect();
    let fig46 = LineChart {
        title: format!(
            "Run-topics by share of redundant documents (T = {})",
            r.threshold
        ),
        x: Axis::new("redundant / docs at least (%)").range(0.0, 100.0),
        y: Axis::new("run-topics (%)").range(0.0, 100.0).suffix("%"),
        series,
        marks: Vec::new(),
    };
    let bars = LEVELS
        .iter()
        .zip(SHADES)
        .map(|(l, shade)| {
            let values = r
                .topics
                .iter()
                .map(|t| {
                    let d = t.duplicated.get(*l).copied().unwrap_or(0);
                    if t.docs == 0 {
                        0.0
                    } else {
                        100.0 * d as f64 / t.docs as f64
                    }
                })
                .collect();
            BarSeries::new(format!("t = {l}"), values).color(shade)
        })
        .collect();
    let prevalence = BarChart {
        title: "Topic collections: share of documents duplicated at t".into(),
        x_label: "topic".into(),
        categories: r.topics.iter().map(|t| t.topic.clone()).collect(),
        y: Axis::new("documents (%)").range(0.0, 100.0).suffix("%"),
        series: bars,
        nested: true,
    };
    Figure {
        title: None,
        width: None,
        charts: vec![Chart::Line(fig46), Chart::Bar(prevalence)],
    }
}

/// The SVG document of the report's figures.
pub fn plot(r: &RunsReport) -> String {
    figure(r).render()
}
