//! Similarity thresholds as exact decimal fractions.
//!
//! `--threshold 0.8` must keep a pair with |A∩B| = 4 and |A∪B| = 5 however floating point
//! rounds 0.8 * 5, so thresholds are parsed into `num / 10^k` and compared in integers, the way
//! the shared corpus's exact truth is computed.

use std::fmt;
use std::str::FromStr;

/// A threshold in [0, 1], held as the exact fraction `num / den`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    num: u64,
    den: u64,
}

impl Threshold {
    /// The threshold `num / den`. Panics if `den == 0` or the value exceeds 1 (a programming
    /// error: user input goes through `FromStr`).
    pub fn from_ratio(num: u64, den: u64) -> Self {
        assert!(
            den > 0 && num <= den,
            "threshold {num}/{den} outside [0, 1]"
        );
        Threshold::reduced(num, den)
    }

    /// Lowest terms, so that equal values compare equal ("0.80" == "0.8" == 4/5).
    fn reduced(num: u64, den: u64) -> Self {
        let (mut a, mut b) = (num, den);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let g = a.max(1);
        Threshold {
            num: num / g,
            den: den / g,
        }
    }

    /// True when `part / whole >= self`, exactly. `whole == 0` is never similar.
    pub fn admits(&self, part: u64, whole: u64) -> bool {
        whole > 0 && (part as u128) * (self.den as u128) >= (self.num as u128) * (whole as u128)
    }

    /// True when `self >= other`, exactly.
    pub fn at_least(&self, other: Threshold) -> bool {
        (self.num as u128) * (other.den as u128) >= (other.num as u128) * (self.den as u128)
    }

    /// The smallest integer `m` with `m / whole >= self`, i.e. `ceil(self * whole)`.
    pub fn ceil_of(&self, whole: u64) -> u64 {
        let p = (self.num as u128) * (whole as u128);
        p.div_ceil(self.den as u128) as u64
    }

    /// The largest integer `m` with `m <= whole / self`, i.e. `floor(whole / self)`
    /// (`u64::MAX` for a zero threshold). Used by length filters.
    pub fn floor_div(&self, whole: u64) -> u64 {
        if self.num == 0 {
            return u64::MAX;
        }
        ((whole as u128) * (self.den as u128) / (self.num as u128)).min(u64::MAX as u128) as u64
    }

    /// The value as a float, for display and for estimates.
    pub fn as_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl TryFrom<f64> for Threshold {
    type Error = String;

    /// The decimal a float prints as (`0.8_f64` is exactly 4/5), for front ends that take
    /// numbers (Python, JSON): the shortest representation that round-trips, then `FromStr`.
    fn try_from(x: f64) -> Result<Self, String> {
        if !x.is_finite() {
            return Err(format!(
                "invalid threshold {x}: expected a number between 0 and 1"
            ));
        }
        format!("{x}").parse()
    }
}

impl FromStr for Threshold {
    type Err = String;

    /// Parses a decimal in [0, 1] with up to 9 fractional digits: `0.8`, `1`, `.95`, `0.333`.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            || format!("invalid threshold {s:?}: expected a decimal between 0 and 1 (e.g. 0.8)");
        let (int, frac) = match s.split_once('.') {
            Some((i, f)) => (i, f),
            None => (s, ""),
        };
        if (int.is_empty() && frac.is_empty())
            || frac.len() > 9
            || !int.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let int: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let den = 10u64.pow(frac.len() as u32);
        let frac_v: u64 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| bad())?
        };
        let num = int
            .checked_mul(den)
            .and_then(|v| v.checked_add(frac_v))
            .ok_or_else(bad)?;
        if num > den {
            return Err(bad());
        }
        Ok(Threshold::reduced(num, den))
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_convert_as_they_print() {
        assert_eq!(Threshold::try_from(0.8), Ok(Threshold::from_ratio(4, 5)));
        assert_eq!(Threshold::try_from(1.0), Ok(Threshold::from_ratio(1, 1)));
        assert!(Threshold::try_from(7.0).is_err());
        assert!(Threshold::try_from(-0.1).is_err());
        assert!(Threshold::try_from(f64::NAN).is_err());
    }

    #[test]
    fn parses_decimals_exactly() {
        let t: Threshold = "0.8".parse().unwrap();
        assert!(t.admits(4, 5));
        assert!(!t.admits(3999, 5000));
        assert!(t.admits(8, 10));
        assert_eq!(t.ceil_of(5), 4);
        assert_eq!(t.ceil_of(6), 5);
        assert_eq!(t.floor_div(4), 5);
        let one: Threshold = "1".parse().unwrap();
        assert!(one.admits(7, 7) && !one.admits(6, 7));
        assert_eq!(
            ".5".parse::<Threshold>().unwrap(),
            Threshold::from_ratio(1, 2)
        );
        assert_eq!(
            "0.80".parse::<Threshold>().unwrap(),
            "0.8".parse::<Threshold>().unwrap()
        );
        assert_ne!(
            "0.81".parse::<Threshold>().unwrap(),
            "0.8".parse::<Threshold>().unwrap()
        );
    }

    #[test]
    fn rejects_out_of_range_and_garbage() {
        for s in ["", ".", "1.01", "2", "-0.1", "0.8x", "abc", "0.1234567891"] {
            assert!(s.parse::<Threshold>().is_err(), "{s:?} accepted");
        }
    }

    #[test]
    fn zero_admits_everything_nonempty() {
        let z: Threshold = "0".parse().unwrap();
        assert!(z.admits(0, 3));
        assert!(!z.admits(0, 0));
        assert_eq!(z.floor_div(10), u64::MAX);
    }
}
