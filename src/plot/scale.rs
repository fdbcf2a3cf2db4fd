//! Mapping data values to pixels along one axis, linear or log, with round tick values.

use super::Axis;

/// A fitted axis: the value range `lo..=hi` drawn from pixel `px0` to `px1` (for a y axis
/// `px0` is the bottom, the larger pixel coordinate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    px0: f64,
    px1: f64,
}

impl Scale {
    /// Fits `axis` to `values`: the fixed `min`/`max` where given, else the data's range,
    /// widened to round ticks. Values that cannot be drawn (non-finite, or <= 0 on a log axis)
    /// are ignored; no value at all gives 0..1 (1..10 on a log axis).
    pub fn fit(axis: &Axis, values: impl IntoIterator<Item = f64>, px0: f64, px1: f64) -> Scale {
        let ok = |v: f64| v.is_finite() && (!axis.log || v > 0.0);
        let (mut dlo, mut dhi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|&v| ok(v)) {
            dlo = dlo.min(v);
            dhi = dhi.max(v);
        }
        let fixed = |v: Option<f64>| v.filter(|&v| ok(v));
        let (fmin, fmax) = (fixed(axis.min), fixed(axis.max));
        let empty = dlo > dhi;
        let mut lo = fmin.unwrap_or(if empty {
            if axis.log {
                1.0
            } else {
                0.0
            }
        } else {
            dlo
        });
        let mut hi = fmax.unwrap_or(if empty {
            if axis.log {
                10.0
            } else {
                1.0
            }
        } else {
            dhi
        });
        if lo > hi {
            std::mem::swap(&mut lo, &mut hi);
        }
        if axis.log {
            if fmin.is_none() {
                lo = log_round(lo, false);
            }
            if fmax.is_none() {
                hi = log_round(hi, true);
            }
            if hi <= lo {
                hi = lo * 10.0;
            }
        } else {
            if hi == lo {
                let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
                if fmin.is_none() || fmax.is_some() {
                    lo -= pad;
                }
                hi += pad;
            }
            let step = nice_step((hi - lo) / 5.0);
            if fmin.is_none() {
                lo = (lo / step).floor() * step;
            }
            if fmax.is_none() {
                hi = (hi / step).ceil() * step;
            }
        }
        Scale {
            lo,
            hi,
            log: axis.log,
            px0,
            px1,
        }
    }

    /// The value range drawn.
    pub fn domain(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    /// The pixel of `v`; `None` when it cannot be drawn (non-finite, or <= 0 on a log axis).
    /// Values outside the range map outside the plot area (callers clip).
    pub fn map(&self, v: f64) -> Option<f64> {
        if !v.is_finite() || (self.log && v <= 0.0) {
            return None;
        }
        let t = if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        Some(self.px0 + t * (self.px1 - self.px0))
    }

    /// `map`, clamped to the plot area (for bars, which must not leave it).
    pub fn map_clamped(&self, v: f64) -> Option<f64> {
        let (a, b) = (self.px0.min(self.px1), self.px0.max(self.px1));
        self.map(v).map(|p| p.clamp(a, b))
    }

    /// Round values to mark: steps of 1, 2, 2.5 or 5 x 10^n on a linear axis; powers of ten on
    /// a log axis (with 2 and 5 between them when the range spans three decades or less).
    pub fn ticks(&self) -> Vec<f64> {
        let eps = (self.hi - self.lo).abs() * 1e-9;
        let mut out = Vec::new();
        if self.log {
            let (a, b) = (
                self.lo.log10().floor() as i32,
                self.hi.log10().ceil() as i32,
            );
            let mults: &[f64] = if b - a <= 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
            for e in a..=b {
                for m in mults {
                    let v = m * 10f64.powi(e);
                    if v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9) {
                        out.push(v);
                    }
                }
            }
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi + eps && out.len() < 50 {
                // Snap float noise (0.30000000000000004) to the step's grid.
                out.push(if v.abs() < eps { 0.0 } else { v });
                v += step;
            }
        }
        out
    }
}

/// The nearest of 1, 2, 5 x 10^n below `v` (or above, with `up`): log ranges end on values
/// that have tick labels.
fn log_round(v: f64, up: bool) -> f64 {
    let e = v.log10().floor();
    let base = 10f64.powf(e);
    let steps = [1.0, 2.0, 5.0, 10.0];
    let eps = 1e-9;
    if up {
        let m = steps
            .iter()
            .find(|&&m| m * base >= v * (1.0 - eps))
            .unwrap_or(&10.0);
        m * base
    } else {
        let m = steps
            .iter()
            .rev()
            .find(|&&m| m * base <= v * (1.0 + eps))
            .unwrap_or(&1.0);
        m * base
    }
}

/// The round step (1, 2, 2.5 or 5 x 10^n) at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let e = 10f64.powf(raw.log10().floor());
    let f = raw / e;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * e
}

/// A short label for a value: 250k, 1.5M, 0.25, 0.0019, 355.
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let (div, suffix) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / div;
    let decimals = if x.abs() >= 1.0 {
        2
    } else {
        ((-x.abs().log10().floor()) as usize + 2).min(8)
    };
    let mut s = format!("{x:.decimals$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s + suffix
}
