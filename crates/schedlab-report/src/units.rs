//! Axis ticks that read: round values (1, 2, 2.5 or 5 × 10ᵏ), formatted once per axis with an SI
//! prefix and the unit (`800k`, `2.5 ms`, `40%`) instead of `800000.0`, and the ticks of a
//! base-2 axis for doubling keys (CPUs, threads).

/// About `n` round values covering `lo..=hi`, from the first multiple of the step at or below
/// `lo` to the first at or above `hi` (so the axis can be widened to them). A step is 1, 2, 2.5
/// or 5 × 10ᵏ. An empty range gets one tick either side of its value.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - pad, hi + pad)
    };
    let rough = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * mag);
    // The slack keeps 0.1 / 0.05 = 1.9999… from adding a tick below the range.
    let first = (lo / step + 1e-9).floor() as i64;
    let last = (hi / step - 1e-9).ceil() as i64;
    (first..=last)
        .map(|k| {
            let v = k as f64 * step;
            // 0.30000000000000004 → 0.3: ticks are printed, and compared in tests.
            if v == 0.0 {
                0.0
            } else {
                let digits = 12 - v.abs().log10().ceil() as i32;
                let p = 10f64.powi(digits.clamp(0, 300));
                (v * p).round() / p
            }
        })
        .collect()
}

/// Ticks of a base-2 axis over `lo..=hi` (both > 0): each power of two between them, every
/// second or fourth one when there would be more than `max`.
pub fn log2_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let first = lo.log2().floor() as i32;
    let last = hi.log2().ceil() as i32;
    let count = (last - first + 1).max(1) as usize;
    let every = count.div_ceil(max.max(1)).max(1) as i32;
    (first..=last)
        .filter(|k| (k - first) % every == 0)
        .map(|k| 2f64.powi(k))
        .collect()
}

/// Whether `values` double (or multiply by another power of two) from the smallest to the
/// largest: all positive, at least three distinct, and each a power-of-two multiple of the
/// smallest — CPUs 1, 2, 4, 8; threads 16, 32, 128. Such keys read best on a base-2 axis.
pub fn is_doubling(values: &[f64]) -> bool {
    let Some(min) = values.iter().copied().reduce(f64::min) else {
        return false;
    };
    if !(min > 0.0 && values.iter().all(|v| v.is_finite())) {
        return false;
    }
    let mut exps: Vec<i64> = Vec::new();
    for v in values {
        let e = (v / min).log2();
        if (e - e.round()).abs() > 1e-9 {
            return false;
        }
        exps.push(e.round() as i64);
    }
    exps.sort_unstable();
    exps.dedup();
    exps.len() >= 3
}

/// How an axis prints its values: one scale and suffix for all its ticks, and enough decimals
/// to tell neighbouring ticks apart.
#[derive(Clone, Debug, PartialEq)]
pub struct AxisFormat {
    /// Values are multiplied by this before printing.
    scale: f64,
    /// Written after the number (`k`, ` ms`, `%`).
    suffix: String,
    /// Decimals printed.
    decimals: usize,
}

/// Time units a metric may be recorded in, with their size in seconds.
const TIME_UNITS: [(&str, f64); 5] = [
    ("s", 1.0),
    ("ms", 1e-3),
    ("us", 1e-6),
    ("µs", 1e-6),
    ("ns", 1e-9),
];

impl AxisFormat {
    /// The format for an axis of `unit` whose ticks are `ticks`: a time (s, ms, us, ns) is
    /// printed in the unit that suits the largest tick (`2.5 ms`); a percentage with `%`; any
    /// other value with an SI prefix from k to T when the largest tick reaches 10,000
    /// (`800k`), the unit left to the axis title.
    pub fn new(unit: &str, ticks: &[f64]) -> AxisFormat {
        let largest = ticks.iter().map(|t| t.abs()).fold(0.0, f64::max);
        let (scale, suffix) = if let Some((_, size)) = TIME_UNITS.iter().find(|(u, _)| *u == unit) {
            let seconds = largest * size;
            let (name, per) = if seconds >= 1.0 {
                ("s", 1.0)
            } else if seconds >= 1e-3 {
                ("ms", 1e-3)
            } else if seconds >= 1e-6 {
                ("µs", 1e-6)
            } else {
                ("ns", 1e-9)
            };
            (size / per, format!(" {name}"))
        } else if unit == "%" {
            (1.0, "%".to_string())
        } else {
            // k from 10,000 on: 2000 reads as well as 2k, and is exact.
            let prefixes = [
                (1e12, 1e12, "T"),
                (1e9, 1e9, "G"),
                (1e6, 1e6, "M"),
                (1e4, 1e3, "k"),
            ];
            match prefixes.iter().find(|(from, _, _)| largest >= *from) {
                Some((_, p, name)) => (1.0 / p, name.to_string()),
                None => (1.0, String::new()),
            }
        };
        let decimals = (0..=6)
            .find(|d| {
                let p = 10f64.powi(*d);
                ticks.iter().all(|t| {
                    let x = t * scale * p;
                    (x - x.round()).abs() < 1e-6 * x.abs().max(1.0)
                })
            })
            .unwrap_or(6) as usize;
        AxisFormat {
            scale,
            suffix,
            decimals,
        }
    }

    /// `v` as a tick label.
    pub fn format(&self, v: f64) -> String {
        let x = v * self.scale;
        if x.abs() < 0.5 * 10f64.powi(-(self.decimals as i32)) {
            // Zero is zero in any unit: no "0.0 ms", no "-0".
            return "0".into();
        }
        format!("{x:.*}{}", self.decimals, self.suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 10.0, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(nice_ticks(653_925.4, 737_857.2, 5)[0], 640_000.0);
        let t = nice_ticks(0.1, 0.3, 4);
        assert_eq!(t, [0.1, 0.15, 0.2, 0.25, 0.3]);
        // An empty range still gets an axis.
        assert_eq!(nice_ticks(5.0, 5.0, 4), [4.5, 4.75, 5.0, 5.25, 5.5]);
    }

    #[test]
    fn labels_have_units_and_prefixes_not_long_decimals() {
        let t = nice_ticks(0.0, 800_000.0, 5);
        let f = AxisFormat::new("msg/s", &t);
        let labels: Vec<String> = t.iter().map(|v| f.format(*v)).collect();
        assert_eq!(labels, ["0", "200k", "400k", "600k", "800k"]);
        let f = AxisFormat::new("us", &[0.0, 500.0, 1000.0, 1500.0]);
        assert_eq!(f.format(1500.0), "1.5 ms");
        assert_eq!(f.format(500.0), "0.5 ms");
        let f = AxisFormat::new("s", &[0.0, 0.0005, 0.001]);
        assert_eq!(f.format(0.0005), "0.5 ms");
        let f = AxisFormat::new("s", &[0.0, 0.0002, 0.0004]);
        assert_eq!(f.format(0.0004), "400 µs");
        let f = AxisFormat::new("%", &[0.0, 25.0, 50.0]);
        assert_eq!(f.format(25.0), "25%");
        // Small plain numbers keep the decimals that tell them apart.
        let f = AxisFormat::new("tasks", &[1.0, 1.5, 2.0]);
        assert_eq!((f.format(1.0), f.format(1.5)), ("1.0".into(), "1.5".into()));
        let f = AxisFormat::new("", &[0.0, 2000.0, 4000.0]);
        assert_eq!(f.format(4000.0), "4000");
        assert_eq!(AxisFormat::new("", &[-1.0, 0.0]).format(-0.0), "0");
    }

    #[test]
    fn doubling_keys_get_powers_of_two() {
        assert!(is_doubling(&[1.0, 2.0, 4.0]));
        assert!(is_doubling(&[16.0, 32.0, 128.0, 32.0]));
        assert!(
            !is_doubling(&[1.0, 2.0]),
            "two values are a line, not a scale"
        );
        assert!(!is_doubling(&[1.0, 2.0, 3.0]));
        assert!(!is_doubling(&[0.0, 1.0, 2.0, 4.0]));
        assert_eq!(log2_ticks(1.0, 8.0, 10), [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(
            log2_ticks(1.0, 2048.0, 6),
            [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0]
        );
    }
}
