//! Layout and drawing of a figure's charts: axes, gridlines, ticks, series, legend.

use super::scale::{format_value, Scale};
use super::svg::{Anchor, Doc};
use super::{BarChart, Chart, Color, Figure, LineChart, DEFAULT_WIDTH};

/// Left margin (y tick labels and axis label), right margin (legend), plot height.
pub(super) const LEFT: f64 = 70.0;
pub(super) const RIGHT: f64 = 220.0;
pub(super) const PLOT_H: f64 = 260.0;
/// Space above a chart's plot area (its title).
pub(super) const HEAD: f64 = 40.0;
const FOOT: f64 = 60.0;
const FOOT_ROTATED: f64 = 110.0;
const LABEL_CHARS: usize = 28;
const CLIP_PAD: f64 = 5.0;

fn color_of(c: &Option<Color>, i: usize) -> String {
    c.clone().unwrap_or(Color::Index(i)).css().to_string()
}

/// Whether a bar chart's category labels are drawn rotated (they do not fit their slot).
fn rotated(c: &BarChart, width: f64) -> bool {
    let n = c.categories.len().max(1);
    let slot = (width - LEFT - RIGHT) / n as f64 * every(n) as f64;
    let longest = c
        .categories
        .iter()
        .map(|s| s.chars().count().min(LABEL_CHARS))
        .max()
        .unwrap_or(0);
    longest as f64 * 6.5 > slot
}

/// Label every `every(n)`-th category (at most ~25 labels).
fn every(n: usize) -> usize {
    n.div_ceil(25).max(1)
}

fn short(s: &str) -> String {
    if s.chars().count() <= LABEL_CHARS {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(LABEL_CHARS - 1).collect();
        t.push('…');
        t
    }
}

fn chart_height(c: &Chart, width: f64) -> f64 {
    let foot = match c {
        Chart::Bar(b) if rotated(b, width) => FOOT_ROTATED,
        _ => FOOT,
    };
    HEAD + PLOT_H + foot
}

pub(super) fn figure(f: &Figure) -> String {
    let w = f
        .width
        .filter(|w| w.is_finite() && *w >= LEFT + RIGHT + 100.0)
        .unwrap_or(DEFAULT_WIDTH);
    let head = if f.title.is_some() { 34.0 } else { 0.0 };
    let body: f64 = if f.charts.is_empty() {
        40.0
    } else {
        f.charts.iter().map(|c| chart_height(c, w)).sum()
    };
    let mut d = Doc::new(w, head + body + 10.0);
    if let Some(t) = &f.title {
        d.text(w / 2.0, 24.0, 16.0, Anchor::Middle, 0.0, t);
    }
    if f.charts.is_empty() {
        d.text(
            w / 2.0,
            head + 30.0,
            12.0,
            Anchor::Middle,
            0.0,
            "(nothing to plot)",
        );
    }
    let mut top = head;
    for (i, c) in f.charts.iter().enumerate() {
        let clip = format!("plot-area-{i}");
        match c {
            Chart::Line(l) => line_chart(&mut d, l, w, top + HEAD, &clip),
            Chart::Bar(b) => bar_chart(&mut d, b, w, top + HEAD, &clip),
        }
        top += chart_height(c, w);
    }
    d.finish()
}

/// Horizontal gridlines with labels at the y ticks, the two axis lines, the titles.
fn frame(d: &mut Doc, w: f64, top: f64, title: &str, y: &Scale, suffix: &str, ylabel: &str) {
    let (x0, x1, y0) = (LEFT, w - RIGHT, top + PLOT_H);
    d.title(LEFT, top - 14.0, title);
    for t in y.ticks() {
        if let Some(py) = y.map(t) {
            d.line(x0, py, x1, py, "#dddddd", "");
            let label = format!("{}{suffix}", format_value(t));
            d.text(x0 - 6.0, py + 4.0, 11.0, Anchor::End, 0.0, &label);
        }
    }
    d.line(x0, y0, x1, y0, "black", "");
    d.line(x0, top, x0, y0, "black", "");
    let cy = top + PLOT_H / 2.0;
    d.text(16.0, cy, 12.0, Anchor::Middle, -90.0, ylabel);
}

fn legend_line(d: &mut Doc, w: f64, top: f64, i: usize, color: &str, dashed: bool, name: &str) {
    let ly = top + 10.0 + 18.0 * i as f64;
    let x = w - RIGHT + 12.0;
    let dash = if dashed {
        r#" stroke-width="2" stroke-dasharray="6 4""#
    } else {
        r#" stroke-width="2""#
    };
    d.line(x, ly, x + 24.0, ly, color, dash);
    d.text(x + 30.0, ly + 4.0, 11.0, Anchor::Start, 0.0, &short(name));
}

fn legend_box(d: &mut Doc, w: f64, top: f64, i: usize, color: &str, name: &str) {
    let ly = top + 10.0 + 18.0 * i as f64;
    let x = w - RIGHT + 12.0;
    d.rect(x, ly - 6.0, 14.0, 10.0, color, None);
    d.text(x + 20.0, ly + 4.0, 11.0, Anchor::Start, 0.0, &short(name));
}

/// The scales of a line chart drawn at `top` in a figure `w` wide.
pub(super) fn line_scales(c: &LineChart, w: f64, top: f64) -> (Scale, Scale) {
    let xs = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(c.marks.iter().map(|m| m.x));
    let ys = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    (
        Scale::fit(&c.x, xs, LEFT, w - RIGHT),
        Scale::fit(&c.y, ys, top + PLOT_H, top),
    )
}

fn line_chart(d: &mut Doc, c: &LineChart, w: f64, top: f64, clip: &str) {
    let (x, y) = line_scales(c, w, top);
    frame(d, w, top, &c.title, &y, &c.y.suffix, &c.y.label);
    let y0 = top + PLOT_H;
    for t in x.ticks() {
        if let Some(px) = x.map(t) {
            d.line(px, y0, px, y0 + 4.0, "black", "");
            let label = format!("{}{}", format_value(t), c.x.suffix);
            d.text(px, y0 + 16.0, 11.0, Anchor::Middle, 0.0, &label);
        }
    }
    d.text(
        (LEFT + w - RIGHT) / 2.0,
        y0 + 36.0,
        12.0,
        Anchor::Middle,
        0.0,
        &c.x.label,
    );
    // The clip leaves a margin so that points on the border (a precision of 1) stay whole.
    d.begin_clip(
        clip,
        LEFT - CLIP_PAD,
        top - CLIP_PAD,
        w - RIGHT - LEFT + 2.0 * CLIP_PAD,
        PLOT_H + 2.0 * CLIP_PAD,
    );
    for (i, m) in c.marks.iter().enumerate() {
        if let Some(px) = x.map(m.x) {
            d.line(px, top, px, y0, "#777777", r#" stroke-dasharray="3 3""#);
            // Staggered, so that marks at the same place stay readable.
            let ly = top + 24.0 + 12.0 * i as f64;
            d.text(px + 3.0, ly, 10.0, Anchor::Start, 0.0, &m.label);
        }
    }
    for (i, s) in c.series.iter().enumerate() {
        let color = color_of(&s.color, i);
        // A point that cannot be drawn breaks the line.
        let mut run: Vec<(f64, f64)> = Vec::new();
        for &(vx, vy) in &s.points {
            match (x.map(vx), y.map(vy)) {
                (Some(px), Some(py)) => {
                    run.push((px, py));
                    let tip = format!("{}: {}, {}", s.name, format_value(vx), format_value(vy));
                    d.circle(px, py, 2.5, &color, &tip);
                }
                _ => {
                    d.polyline(&run, &color, s.dashed);
                    run.clear();
                }
            }
        }
        d.polyline(&run, &color, s.dashed);
    }
    d.end_clip();
    for (i, s) in c.series.iter().enumerate() {
        legend_line(d, w, top, i, &color_of(&s.color, i), s.dashed, &s.name);
    }
}

/// The value scale of a bar chart (bars start at 0 on a linear axis).
pub(super) fn bar_scale(c: &BarChart, top: f64) -> Scale {
    let vals = c.series.iter().flat_map(|s| s.values.iter().copied());
    let zero = (!c.y.log).then_some(0.0);
    Scale::fit(&c.y, vals.chain(zero), top + PLOT_H, top)
}

fn bar_chart(d: &mut Doc, c: &BarChart, w: f64, top: f64, clip: &str) {
    let y = bar_scale(c, top);
    frame(d, w, top, &c.title, &y, &c.y.suffix, &c.y.label);
    let y0 = top + PLOT_H;
    let base = y.map_clamped(y.domain().0.max(0.0)).unwrap_or(y0);
    let n = c.categories.len().max(1);
    let span = w - RIGHT - LEFT;
    let slot = span / n as f64;
    let k = c.series.len().max(1) as f64;
    d.begin_clip(clip, LEFT, top, span, PLOT_H);
    for (j, s) in c.series.iter().enumerate() {
        let color = color_of(&s.color, j);
        for (i, &v) in s.values.iter().enumerate().take(c.categories.len()) {
            let Some(py) = y.map_clamped(v) else {
                continue;
            };
            let (bx, bw) = if c.nested {
                let inset = slot * 0.08 * j as f64;
                (
                    LEFT + slot * i as f64 + slot * 0.1 + inset,
                    (slot * 0.8 - 2.0 * inset).max(0.5),
                )
            } else {
                let bw = slot * 0.8 / k;
                (LEFT + slot * i as f64 + slot * 0.1 + bw * j as f64, bw)
            };
            // "topic 7: t = 0.5 12.5%": the category named by the axis label when there is one.
            let cat = if c.x_label.is_empty() {
                c.categories[i].clone()
            } else {
                format!("{} {}", c.x_label, c.categories[i])
            };
            let tip = format!("{cat}: {} {}{}", s.name, format_value(v), c.y.suffix);
            d.rect(bx, py.min(base), bw, (base - py).abs(), &color, Some(&tip));
        }
    }
    d.end_clip();
    let rot = rotated(c, w);
    for (i, cat) in c.categories.iter().enumerate() {
        if i % every(c.categories.len()) != 0 {
            continue;
        }
        let cx = LEFT + slot * (i as f64 + 0.5);
        if rot {
            d.text(cx, y0 + 14.0, 10.0, Anchor::End, -35.0, &short(cat));
        } else {
            d.text(cx, y0 + 14.0, 10.0, Anchor::Middle, 0.0, &short(cat));
        }
    }
    let foot = if rot { FOOT_ROTATED } else { FOOT };
    d.text(
        (LEFT + w - RIGHT) / 2.0,
        y0 + foot - 12.0,
        12.0,
        Anchor::Middle,
        0.0,
        &c.x_label,
    );
    for (j, s) in c.series.iter().enumerate() {
        legend_box(d, w, top, j, &color_of(&s.color, j), &s.name);
    }
}
