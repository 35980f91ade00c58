//! Statistics over schedlab result records: descriptive summaries of each metric over the
//! repetitions of a configuration. Confidence intervals, stopping rules and comparisons build on
//! these (see `shared/reference/statistics.md`).
//!
//! ```
//! let s = schedlab_stats::summarize(&[1.0, 2.0, 3.0, 4.0]);
//! assert_eq!((s.n, s.mean, s.median), (4, 2.5, 2.5));
//! ```
#![deny(missing_docs)]

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
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    Summary {
        n,
        mean,
        sd,
        min: sorted[0],
        median,
        max: sorted[n - 1],
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
    }
}
