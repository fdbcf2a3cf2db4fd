//! Charts: well-formed XML, values mapped to the right pixels, empty and degenerate data.

use super::draw::{bar_scale, HEAD, LEFT, PLOT_H, RIGHT};
use super::scale::format_value;
use super::*;

/// A small XML well-formedness check: balanced, properly nested tags, quoted attributes,
/// only the five predefined entities or numeric references, one root element.
fn assert_well_formed(s: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let b = s.as_bytes();
    let mut i = 0;
    let check_text = |t: &str| {
        let mut rest = t;
        while let Some(p) = rest.find('&') {
            let end = rest[p..].find(';').expect("unterminated entity") + p;
            let ent = &rest[p + 1..end];
            assert!(
                matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                    || (ent.starts_with('#') && ent[1..].chars().all(|c| c.is_ascii_digit())),
                "bad entity &{ent};"
            );
            rest = &rest[end + 1..];
        }
        assert!(!t.contains('<') && !t.contains('>'), "raw < or > in {t:?}");
    };
    while i < b.len() {
        if b[i] == b'<' {
            let end = s[i..].find('>').expect("unterminated tag") + i;
            let tag = &s[i + 1..end];
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack.pop().expect("close without open");
                assert_eq!(open, name.trim(), "mismatched close tag");
            } else {
                let self_closing = tag.ends_with('/');
                let body = tag.trim_end_matches('/');
                let name: String = body
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .collect::<String>();
                assert!(!name.is_empty(), "empty tag name");
                // Attributes: name="value" pairs, values free of < and ", entities valid.
                let mut attrs = &body[name.len()..];
                loop {
                    attrs = attrs.trim_start();
                    if attrs.is_empty() {
                        break;
                    }
                    let eq = attrs.find('=').expect("attribute without =");
                    assert!(attrs[eq + 1..].starts_with('"'), "unquoted attribute");
                    let close = attrs[eq + 2..].find('"').expect("unterminated value") + eq + 2;
                    check_text(&attrs[eq + 2..close]);
                    attrs = &attrs[close + 1..];
                }
                if stack.is_empty() {
                    roots += 1;
                }
                if !self_closing {
                    stack.push(name);
                }
            }
            i = end + 1;
        } else {
            let end = s[i..].find('<').map_or(b.len(), |p| p + i);
            let text = &s[i..end];
            if stack.is_empty() {
                assert!(text.trim().is_empty(), "text outside the root: {text:?}");
            }
            check_text(text);
            i = end;
        }
    }
    assert!(stack.is_empty(), "unclosed tags {stack:?}");
    assert_eq!(roots, 1, "one root element");
    assert!(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
}

fn line(series: Vec<Series>, x: Axis, y: Axis) -> Chart {
    Chart::Line(LineChart {
        title: "t".into(),
        x,
        y,
        series,
        marks: vec![],
    })
}

/// The `points` attribute of every polyline.
fn polylines(svg: &str) -> Vec<Vec<(f64, f64)>> {
    svg.split("<polyline points=\"")
        .skip(1)
        .map(|rest| {
            rest[..rest.find('"').unwrap()]
                .split(' ')
                .map(|p| {
                    let (a, b) = p.split_once(',').unwrap();
                    (a.parse().unwrap(), b.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

#[test]
fn points_map_to_the_expected_pixels() {
    let s = Series::new("s", vec![(0.0, 0.0), (5.0, 50.0), (10.0, 100.0)]);
    let c = line(
        vec![s],
        Axis::new("x").range(0.0, 10.0),
        Axis::new("y").range(0.0, 100.0),
    );
    let f = Figure {
        charts: vec![c],
        ..Figure::default()
    };
    let svg = f.render();
    assert_well_formed(&svg);
    let lines = polylines(&svg);
    assert_eq!(lines.len(), 1);
    let (x0, x1) = (LEFT, DEFAULT_WIDTH - RIGHT);
    let (top, bottom) = (HEAD, HEAD + PLOT_H);
    let want = [
        (x0, bottom),
        ((x0 + x1) / 2.0, (top + bottom) / 2.0),
        (x1, top),
    ];
    for (got, want) in lines[0].iter().zip(want) {
        assert!((got.0 - want.0).abs() < 0.06, "{got:?} vs {want:?}");
        assert!((got.1 - want.1).abs() < 0.06, "{got:?} vs {want:?}");
    }
}

#[test]
fn log_axis_maps_decades_evenly_and_skips_non_positive_values() {
    let axis = Axis::new("n").log();
    let sc = Scale::fit(&axis, [1.0, 1000.0, 0.0, -5.0, f64::NAN], 0.0, 300.0);
    assert_eq!(sc.domain(), (1.0, 1000.0));
    assert_eq!(sc.map(10.0).map(|v| v.round()), Some(100.0));
    assert_eq!(sc.map(100.0).map(|v| v.round()), Some(200.0));
    assert_eq!(sc.map(0.0), None);
    assert_eq!(sc.ticks().len(), 10);
    let wide = Scale::fit(&axis, [1.0, 10_000.0], 0.0, 300.0);
    assert_eq!(wide.ticks(), vec![1.0, 10.0, 100.0, 1000.0, 10_000.0]);
    // Under three decades the range ends on 1-2-5 values and the ticks include them.
    let sc = Scale::fit(&axis, [250_000.0, 4_000_000.0], 0.0, 100.0);
    assert_eq!(sc.domain(), (200_000.0, 5_000_000.0));
    let t: Vec<String> = sc.ticks().into_iter().map(format_value).collect();
    assert_eq!(t, ["200k", "500k", "1M", "2M", "5M"]);
    // A line through a value that cannot be drawn is broken there, not joined across it.
    let s = Series::new(
        "s",
        vec![
            (1.0, 1.0),
            (10.0, 2.0),
            (0.0, 3.0),
            (100.0, 4.0),
            (1000.0, 5.0),
        ],
    );
    let f = Figure {
        charts: vec![line(vec![s], axis, Axis::new("y"))],
        ..Figure::default()
    };
    let svg = f.render();
    assert_well_formed(&svg);
    let lines = polylines(&svg);
    assert_eq!(lines.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 2]);
}

#[test]
fn linear_ranges_widen_to_round_ticks() {
    let sc = Scale::fit(&Axis::new("y"), [0.03, 0.97], 260.0, 0.0);
    assert_eq!(sc.domain(), (0.0, 1.0));
    let t = sc.ticks();
    assert_eq!(t.len(), 6);
    assert_eq!(
        t.iter().map(|&v| format_value(v)).collect::<Vec<_>>(),
        ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    );
    let sc = Scale::fit(&Axis::new("bits"), [327.0, 384.0], 0.0, 100.0);
    let (lo, hi) = sc.domain();
    assert!(lo <= 327.0 && hi >= 384.0 && hi - lo <= 80.0, "{lo}..{hi}");
}

#[test]
fn degenerate_data_still_draws() {
    // No charts, empty series, a single point, all values equal, only NaN.
    let empty = Figure::default().render();
    assert_well_formed(&empty);
    assert!(empty.contains("nothing to plot"));
    for pts in [
        vec![],
        vec![(1.0, 1.0)],
        vec![(2.0, 5.0), (2.0, 5.0)],
        vec![(f64::NAN, f64::INFINITY)],
    ] {
        let f = Figure {
            charts: vec![line(
                vec![Series::new("s", pts.clone())],
                Axis::new("x"),
                Axis::new("y").log(),
            )],
            ..Figure::default()
        };
        let svg = f.render();
        assert_well_formed(&svg);
        assert!(
            !svg.contains("NaN") && !svg.contains("inf"),
            "{pts:?}: {svg}"
        );
    }
    let sc = Scale::fit(&Axis::new("y"), [5.0, 5.0], 100.0, 0.0);
    let (lo, hi) = sc.domain();
    assert!(lo < 5.0 && hi > 5.0);
    let bars = Figure {
        charts: vec![Chart::Bar(BarChart {
            title: String::new(),
            x_label: String::new(),
            categories: vec![],
            y: Axis::new("y"),
            series: vec![BarSeries::new("a", vec![1.0, 2.0])],
            nested: false,
        })],
        ..Figure::default()
    };
    assert_well_formed(&bars.render());
}

#[test]
fn bars_stand_on_zero_and_reach_their_value() {
    let c = BarChart {
        title: "P".into(),
        x_label: "method".into(),
        categories: vec!["a".into(), "b".into()],
        y: Axis::new("precision").range(0.0, 1.0),
        series: vec![
            BarSeries::new("same", vec![0.5, 1.0]),
            BarSeries::new("diff", vec![0.25, f64::NAN]),
        ],
        nested: false,
    };
    let top = HEAD;
    let sc = bar_scale(&c, top);
    let svg = Figure {
        charts: vec![Chart::Bar(c)],
        ..Figure::default()
    }
    .render();
    assert_well_formed(&svg);
    // Three bars drawn (the NaN is skipped), each from the zero line up to its value.
    let bars: Vec<(f64, f64)> = svg
        .split("<rect x=\"")
        .skip(1)
        .filter(|r| r.contains("<title>"))
        .map(|r| {
            let attr = |name: &str| -> f64 {
                let p = r.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                r[p..p + r[p..].find('"').unwrap()].parse().unwrap()
            };
            (attr("y"), attr("height"))
        })
        .collect();
    assert_eq!(bars.len(), 3);
    let zero = sc.map(0.0).unwrap();
    for ((y, h), v) in bars.iter().zip([0.5, 1.0, 0.25]) {
        assert!((y + h - zero).abs() < 0.11, "bar ends at the zero line");
        assert!(
            (y - sc.map(v).unwrap()).abs() < 0.06,
            "bar top at its value"
        );
    }
}

#[test]
fn text_and_colours_are_escaped() {
    let s = Series::new("<b>\"R&D\"</b>\u{1}", vec![(0.0, 1.0), (1.0, 2.0)]).color("\"/><script>");
    let mut c = line(vec![s], Axis::new("a < b"), Axis::new("y & z").suffix("%"));
    if let Chart::Line(l) = &mut c {
        l.marks.push(Mark {
            x: 0.5,
            label: "C >= 355".into(),
        });
    }
    let f = Figure {
        title: Some("it's <here>".into()),
        charts: vec![c],
        width: None,
    };
    let svg = f.render();
    assert_well_formed(&svg);
    assert!(svg.contains("&lt;b&gt;&quot;R&amp;D&quot;&lt;/b&gt;"));
    assert!(!svg.contains("<script>"));
    assert!(svg.contains("C &gt;= 355"));
}

#[test]
fn a_figure_round_trips_through_json() {
    let f = Figure {
        title: Some("f".into()),
        width: Some(900.0),
        charts: vec![
            line(
                vec![Series::new("P", vec![(1.0, 0.5)]).dashed().color(2)],
                Axis::new("x").log(),
                Axis::new("y"),
            ),
            Chart::Bar(BarChart {
                title: "b".into(),
                x_label: String::new(),
                categories: vec!["a".into()],
                y: Axis::new("y"),
                series: vec![BarSeries::new("s", vec![1.0]).color("#08519c")],
                nested: true,
            }),
        ],
    };
    let j = serde_json::to_string(&f).unwrap();
    let back: Figure = serde_json::from_str(&j).unwrap();
    assert_eq!(back, f);
    // The spec format the scripts write: kind-tagged charts, points as [x, y].
    let spec = r##"{"charts": [{"kind": "line", "x": {"label": "N", "log": true},
        "y": {"label": "s"}, "series": [{"name": "a", "points": [[1, 2], [10, 3]]}]}]}"##;
    let g: Figure = serde_json::from_str(spec).unwrap();
    assert_well_formed(&g.render());
}

#[test]
fn tick_labels_are_short() {
    let cases = [
        (250_000.0, "250k"),
        (1_000_000.0, "1M"),
        (2_500_000.0, "2.5M"),
        (0.0019, "0.0019"),
        (355.0, "355"),
        (0.30000000000000004, "0.3"),
        (-0.5, "-0.5"),
    ];
    for (v, want) in cases {
        assert_eq!(format_value(v), want);
    }
}
