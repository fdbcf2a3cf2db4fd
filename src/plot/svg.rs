//! A minimal SVG writer: the elements the charts use, with every text and attribute value
//! escaped, coordinates with one decimal.

use std::fmt::Write as _;

/// Escapes `s` for XML text and double-quoted attribute values; control characters XML 1.0
/// does not allow are dropped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Text anchor of a label.
#[derive(Clone, Copy)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being written.
pub struct Doc {
    s: String,
}

impl Doc {
    /// Starts a `width` x `height` document with a white background.
    pub fn new(width: f64, height: f64) -> Doc {
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
        );
        s.push_str(r#"<rect width="100%" height="100%" fill="white"/>"#);
        s.push('\n');
        Doc { s }
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, extra: &str) {
        let _ = writeln!(
            self.s,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{}"{extra}/>"#,
            escape(stroke)
        );
    }

    /// A polyline through `pts` (at least two points; fewer draw nothing).
    pub fn polyline(&mut self, pts: &[(f64, f64)], stroke: &str, dashed: bool) {
        if pts.len() < 2 {
            return;
        }
        let p: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let dash = if dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            self.s,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
            p.join(" "),
            escape(stroke)
        );
    }

    pub fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str, title: &str) {
        let _ = writeln!(
            self.s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}" fill="{}"><title>{}</title></circle>"#,
            escape(fill),
            escape(title)
        );
    }

    /// A rectangle with an optional tooltip.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: Option<&str>) {
        let _ = write!(
            self.s,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}""#,
            w.max(0.0),
            h.max(0.0),
            escape(fill)
        );
        match title {
            Some(t) => {
                let _ = writeln!(self.s, "><title>{}</title></rect>", escape(t));
            }
            None => self.s.push_str("/>\n"),
        }
    }

    /// A label; `rotate` in degrees about its anchor point.
    pub fn text(&mut self, x: f64, y: f64, size: f64, anchor: Anchor, rotate: f64, t: &str) {
        let rot = if rotate != 0.0 {
            format!(r#" transform="rotate({rotate:.0} {x:.1} {y:.1})""#)
        } else {
            String::new()
        };
        let _ = writeln!(
            self.s,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size:.0}" text-anchor="{}"{rot}>{}</text>"#,
            anchor.as_str(),
            escape(t)
        );
    }

    /// A bold title.
    pub fn title(&mut self, x: f64, y: f64, t: &str) {
        let _ = writeln!(
            self.s,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="14" font-weight="bold">{}</text>"#,
            escape(t)
        );
    }

    /// Opens a group clipped to a rectangle (closed by [`Doc::end_clip`]).
    pub fn begin_clip(&mut self, id: &str, x: f64, y: f64, w: f64, h: f64) {
        let id = escape(id);
        let _ = writeln!(
            self.s,
            r#"<clipPath id="{id}"><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}"/></clipPath><g clip-path="url(#{id})">"#
        );
    }

    pub fn end_clip(&mut self) {
        self.s.push_str("</g>\n");
    }

    pub fn finish(mut self) -> String {
        self.s.push_str("</svg>\n");
        self.s
    }
}
