//! Charts as SVG, drawn by our own code: line charts with several series (linear or log axes)
//! and bar charts (grouped or nested), stacked into one figure. Used by `runs --plot`,
//! `eval --plot` and `ndd-index plot` (which reads a [`Figure`] as JSON, so the benchmark and
//! evaluation scripts draw their curves with the same code).
//!
//! No plotting crate: the plotters crate's default features pull in font rendering
//! (font-kit, freetype/fontconfig system libraries); a few hundred lines of SVG text need no
//! library at all. Text is left to the viewer's sans-serif font, every string is escaped
//! ([`svg::escape`]), and non-finite values (and non-positive ones on a log axis) are skipped,
//! breaking a line where they are.
//!
//! A figure is a column of charts, each a fixed-size panel: title on top, the plot area, the
//! x labels below, the legend on the right.

mod draw;
pub mod scale;
pub mod svg;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use scale::Scale;

/// Width of a figure when none is given, in SVG pixels.
pub const DEFAULT_WIDTH: f64 = 800.0;

/// A column of charts in one SVG document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Drawn above the first chart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Width in SVG pixels (default [`DEFAULT_WIDTH`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    pub charts: Vec<Chart>,
}

/// One chart of a figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Chart {
    Line(LineChart),
    Bar(BarChart),
}

/// An axis: its label, linear or log scale, an optional fixed range (default: the data's,
/// widened to round ticks) and a suffix for tick labels (e.g. "%").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    #[serde(default)]
    pub label: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub log: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub suffix: String,
}

impl Axis {
    pub fn new(label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            ..Axis::default()
        }
    }

    /// A fixed range.
    pub fn range(mut self, min: f64, max: f64) -> Self {
        self.min = Some(min);
        self.max = Some(max);
        self
    }

    pub fn log(mut self) -> Self {
        self.log = true;
        self
    }

    pub fn suffix(mut self, s: impl Into<String>) -> Self {
        self.suffix = s.into();
        self
    }
}

/// A line chart: series of (x, y) points, joined in the order given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineChart {
    #[serde(default)]
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// Vertical reference lines (e.g. a chosen threshold).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<Mark>,
}

/// One line of a line chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Palette index or `#rrggbb` (default: the series' position in the chart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<Color>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dashed: bool,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            color: None,
            dashed: false,
        }
    }

    pub fn color(mut self, c: impl Into<Color>) -> Self {
        self.color = Some(c.into());
        self
    }

    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }
}

/// A vertical line at `x` with a label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub x: f64,
    #[serde(default)]
    pub label: String,
}

/// A bar chart: one value per category and series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BarChart {
    #[serde(default)]
    pub title: String,
    /// Label of the category axis.
    #[serde(default)]
    pub x_label: String,
    pub categories: Vec<String>,
    pub y: Axis,
    pub series: Vec<BarSeries>,
    /// Nested bars: each series drawn inside the one before (for values that only fall from
    /// one series to the next); otherwise side by side.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nested: bool,
}

/// One series of a bar chart: a value per category (missing values are not drawn).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BarSeries {
    pub name: String,
    pub values: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<Color>,
}

impl BarSeries {
    pub fn new(name: impl Into<String>, values: Vec<f64>) -> Self {
        BarSeries {
            name: name.into(),
            values,
            color: None,
        }
    }

    pub fn color(mut self, c: impl Into<Color>) -> Self {
        self.color = Some(c.into());
        self
    }
}

/// A colour: an index into the palette or an `#rrggbb` string.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Color {
    Index(usize),
    Hex(String),
}

impl From<usize> for Color {
    fn from(i: usize) -> Self {
        Color::Index(i)
    }
}

impl From<&str> for Color {
    fn from(s: &str) -> Self {
        Color::Hex(s.to_string())
    }
}

/// The palette (matplotlib's "tab10" order, minus grey).
pub const PALETTE: [&str; 9] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
    "#bcbd22",
];

impl Color {
    /// The SVG colour: palette entries by index (wrapping), `#rrggbb`/`#rgb` as given, anything
    /// else black (a spec read from JSON cannot inject markup through a colour).
    pub fn css(&self) -> &str {
        match self {
            Color::Index(i) => PALETTE[i % PALETTE.len()],
            Color::Hex(s) => {
                let ok = s.starts_with('#')
                    && matches!(s.len(), 4 | 7)
                    && s[1..].bytes().all(|b| b.is_ascii_hexdigit());
                if ok {
                    s
                } else {
                    "#000000"
                }
            }
        }
    }
}

impl Figure {
    pub fn new(title: Option<String>) -> Self {
        Figure {
            title,
            width: None,
            charts: Vec::new(),
        }
    }

    pub fn push(&mut self, c: Chart) -> &mut Self {
        self.charts.push(c);
        self
    }

    /// The SVG document (UTF-8 text, ending in a newline).
    pub fn render(&self) -> String {
        draw::figure(self)
    }
}
