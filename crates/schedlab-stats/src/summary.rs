//! Descriptive summaries: N, mean, SD, min, median, max of a metric over repetitions, and
//! [`describe`], which adds the confidence interval, the harmonic mean and the outlier flags.

use crate::{ci, mean, outlier};
use schedlab_workload::record::{ConfigResult, Summary};
use std::collections::BTreeMap;

/// Summarize `values`: n, mean, sample standard deviation (n − 1; 0 for one value), min,
/// median and max. Empty input gives `n = 0` and NaN statistics.
pub fn summarize(values: &[f64]) -> Summary {
    let n = values.len();
    if n == 0 {
        return Summary {
            n: 0,
            mean: f64::NAN,
            sd: f64::NAN,
            min: f64::NAN,
            median: f64::NAN,
            max: f64::NAN,
        };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    // Two-pass variance: numerically stable for the magnitudes benchmarks produce.
    let sd = if n > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Summary {
        n,
        mean,
        sd,
        min: sorted[0],
        median: median_of_sorted(&sorted),
        max: sorted[n - 1],
    }
}

/// The median of `values`: the middle value, or the mean of the two middle ones for an even
/// count (ministat prints the upper of the two instead). NaN for no values.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

/// The median of values already sorted in ascending order, as [`median`] computes it.
pub fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The values of `metric` over a configuration's repetitions, in run order.
pub fn metric_values(config: &ConfigResult, metric: &str) -> Vec<f64> {
    config
        .repetitions
        .iter()
        .filter_map(|r| r.metrics.get(metric).copied())
        .collect()
}

/// Summaries of every metric that appears in a configuration's repetitions.
pub fn summarize_config(config: &ConfigResult) -> BTreeMap<String, Summary> {
    let names: std::collections::BTreeSet<&String> = config
        .repetitions
        .iter()
        .flat_map(|r| r.metrics.keys())
        .collect();
    names
        .into_iter()
        .map(|m| (m.clone(), summarize(&metric_values(config, m))))
        .collect()
}

/// A [`Summary`] together with what `describe` adds to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Described {
    /// N, mean, SD, min, median, max (as [`summarize`]).
    pub summary: Summary,
    /// The confidence level of `ci_half_width`, in percent (95 for 95 %).
    pub level: f64,
    /// Half-width of the confidence interval of the arithmetic mean at `level`
    /// ([`ci::ci_half_width`]): the mean is `summary.mean ± ci_half_width`. NaN for n < 2.
    pub ci_half_width: f64,
    /// Harmonic mean ([`mean::harmonic_mean`]): the right mean for higher-is-better rates
    /// ([`mean::mean_kind_for`]). NaN when a value is negative or not finite.
    pub harmonic_mean: f64,
    /// Indices (into the values as given, i.e. run order) of the values whose modified
    /// z-score exceeds [`outlier::OUTLIER_THRESHOLD`]. Flagged only; every statistic above
    /// still includes them.
    pub outliers: Vec<usize>,
}

impl Described {
    /// The central value of the given kind: `summary.mean` or `harmonic_mean`.
    pub fn mean(&self, kind: mean::MeanKind) -> f64 {
        match kind {
            mean::MeanKind::Arithmetic => self.summary.mean,
            mean::MeanKind::Harmonic => self.harmonic_mean,
        }
    }

    /// The confidence interval's half-width relative to the mean's magnitude
    /// (0.02 = ±2 %): the quantity the stopping rule compares with its precision.
    pub fn relative_ci_half_width(&self) -> f64 {
        self.ci_half_width / self.summary.mean.abs()
    }
}

/// Summarize `values` with the confidence interval of the mean at `level` percent
/// (e.g. 95), the harmonic mean and the indices of outliers.
///
/// ```
/// let d = schedlab_stats::describe(&[10.0, 10.2, 9.9, 10.1, 10.0, 14.0], 95.0);
/// assert_eq!(d.summary.n, 6);
/// assert_eq!(d.outliers, vec![5]);
/// assert!(d.ci_half_width > 0.0);
/// ```
pub fn describe(values: &[f64], level: f64) -> Described {
    Described {
        summary: summarize(values),
        level,
        ci_half_width: ci::ci_half_width(values, level),
        harmonic_mean: mean::harmonic_mean(values),
        outliers: outlier::outliers(values),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_data() {
        // ministat's man page example set 1 (iguana): mean 300, sd 238.0476.
        let s = summarize(&[50.0, 200.0, 150.0, 400.0, 750.0, 400.0, 150.0]);
        assert_eq!(s.n, 7);
        assert!((s.mean - 300.0).abs() < 1e-9);
        assert!((s.sd - 238.047_614_3).abs() < 1e-6, "{}", s.sd);
        assert_eq!((s.min, s.median, s.max), (50.0, 200.0, 750.0));
    }

    #[test]
    fn edge_cases() {
        let one = summarize(&[4.2]);
        assert_eq!((one.n, one.mean, one.sd, one.median), (1, 4.2, 0.0, 4.2));
        assert_eq!(summarize(&[]).n, 0);
        assert_eq!(summarize(&[3.0, 1.0]).median, 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn describe_adds_ci_harmonic_and_outliers() {
        // chameleon (ministat's man page): mean 540, sd 299.08193, n = 5.
        let v = [150.0, 400.0, 720.0, 500.0, 930.0];
        let d = describe(&v, 95.0);
        assert_eq!(d.summary, summarize(&v));
        assert_eq!(d.level, 95.0);
        // t(0.975, 4) = 2.776 (published tables).
        let expect = 2.776_445 * 299.081_929_5 / 5f64.sqrt();
        assert!(
            (d.ci_half_width - expect).abs() < 1e-3,
            "{}",
            d.ci_half_width
        );
        let hm = 5.0 / v.iter().map(|x| 1.0 / x).sum::<f64>();
        assert!((d.harmonic_mean - hm).abs() < 1e-9);
        assert_eq!(d.mean(mean::MeanKind::Harmonic), d.harmonic_mean);
        assert_eq!(d.mean(mean::MeanKind::Arithmetic), 540.0);
        assert!(d.outliers.is_empty());
        assert!((d.relative_ci_half_width() - expect / 540.0).abs() < 1e-6);
    }
}
