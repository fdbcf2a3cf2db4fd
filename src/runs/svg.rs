//! `--plot`: the report's two figures as one hand-written SVG file (no plotting crate: two
//! simple charts do not need one, and no system libraries are involved).
//!
//! - Top: thesis Figure 4.6, the share of run-topics (y) whose share of redundant documents is
//!   at least x, one line per list depth n (the `table`).
//! - Bottom: thesis Figures 4.1-4.5 in one chart, per topic the share of its collection that is
//!   duplicated at 0.1, 0.3, 0.5, 0.7 and 0.9, as nested bars (the count only falls as the
//!   level rises, so each darker bar stands inside the lighter one).

use std::fmt::Write as _;

use super::RunsReport;

const W: f64 = 760.0;
const PLOT_H: f64 = 260.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 150.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Axes with gridlines at 0, 25, 50, 75, 100 % on the y axis, top-left corner at `top`.
fn axes(s: &mut String, top: f64, title: &str, xlabel: &str, ylabel: &str) {
    let (x0, x1, y0) = (LEFT, W - RIGHT, top + PLOT_H);
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" font-size="14" font-weight="bold">{}</text>"#,
        LEFT,
        top - 12.0,
        esc(title)
    );
    for k in 0..=4 {
        let y = y0 - PLOT_H * k as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" font-size="11" text-anchor="end">{}%</text>"##,
            x0 - 6.0,
            y + 4.0,
            k * 25
        );
    }
    let _ = write!(
        s,
        r#"<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="black"/><line x1="{x0}" y1="{top}" x2="{x0}" y2="{y0}" stroke="black"/>"#
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"#,
        (x0 + x1) / 2.0,
        y0 + 34.0,
        esc(xlabel)
    );
    let _ = write!(
        s,
        r#"<text x="16" y="{}" font-size="12" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"#,
        top + PLOT_H / 2.0,
        top + PLOT_H / 2.0,
        esc(ylabel)
    );
}

/// The SVG document of the report's figures.
pub fn plot(r: &RunsReport) -> String {
    let mut s = String::new();
    let top1 = 40.0;
    let top2 = top1 + PLOT_H + 90.0;
    let height = top2 + PLOT_H + 60.0;
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>"#
    );

    // Figure 4.6.
    axes(
        &mut s,
        top1,
        &format!(
            "Run-topics by share of redundant documents (T = {})",
            r.threshold
        ),
        "redundant / docs at least (%)",
        "run-topics (%)",
    );
    let span = W - RIGHT - LEFT;
    let x_of = |p: f64| LEFT + span * p / 100.0;
    let y_of = |top: f64, v: f64| top + PLOT_H - PLOT_H * v / 100.0;
    for k in 0..=4 {
        let p = k as f64 * 25.0;
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
            x_of(p),
            top1 + PLOT_H + 16.0,
            p
        );
    }
    for (i, t) in r.table.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let pts: Vec<String> = t
            .rows
            .iter()
            .map(|row| {
                format!(
                    "{:.1},{:.1}",
                    x_of(row.at_least_percent as f64),
                    y_of(top1, row.run_topics_percent)
                )
            })
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2"/>"#,
            pts.join(" ")
        );
        let ly = top1 + 10.0 + 18.0 * i as f64;
        let _ = write!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="2"/><text x="{}" y="{}" font-size="12">n = {}</text>"#,
            W - RIGHT + 12.0,
            W - RIGHT + 36.0,
            W - RIGHT + 42.0,
            ly + 4.0,
            t.n
        );
    }

    // Figures 4.1-4.5.
    axes(
        &mut s,
        top2,
        "Topic collections: share of documents duplicated at t",
        "topic",
        "documents (%)",
    );
    let levels = ["0.1", "0.3", "0.5", "0.7", "0.9"];
    let shades = ["#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c"];
    let n = r.topics.len().max(1) as f64;
    let slot = span / n;
    let every = (r.topics.len() / 25).max(1);
    for (i, t) in r.topics.iter().enumerate() {
        let x = LEFT + slot * i as f64 + slot * 0.1;
        for (j, (l, shade)) in levels.iter().zip(shades).enumerate() {
            let d = t.duplicated.get(*l).copied().unwrap_or(0);
            let v = if t.docs == 0 {
                0.0
            } else {
                100.0 * d as f64 / t.docs as f64
            };
            let inset = slot * 0.08 * j as f64;
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{shade}"><title>topic {}: {:.1}% at {l}</title></rect>"#,
                x + inset,
                y_of(top2, v),
                (slot * 0.8 - 2.0 * inset).max(0.5),
                PLOT_H * v / 100.0,
                esc(&t.topic),
                v
            );
        }
        if i % every == 0 {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{}" font-size="10" text-anchor="middle">{}</text>"#,
                x + slot * 0.4,
                top2 + PLOT_H + 14.0,
                esc(&t.topic)
            );
        }
    }
    for (j, (l, shade)) in levels.iter().zip(shades).enumerate() {
        let ly = top2 + 10.0 + 18.0 * j as f64;
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="14" height="10" fill="{shade}"/><text x="{}" y="{}" font-size="12">t = {l}</text>"#,
            W - RIGHT + 12.0,
            ly - 6.0,
            W - RIGHT + 32.0,
            ly + 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}
