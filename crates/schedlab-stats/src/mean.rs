//! Which mean summarises a metric: mmtests' rule is the harmonic mean for higher-is-better
//! rates (operations per second) and the arithmetic mean for lower-is-better times.
//!
//! The harmonic mean of rates is the rate of the total work over the total time when every
//! repetition does the same work, so it agrees with the arithmetic mean of the corresponding
//! times; the arithmetic mean of rates overstates the typical rate.

use schedlab_workload::record::Better;
use std::fmt;

/// The kind of mean used to summarise a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeanKind {
    /// Σx / n: for times and latencies (lower is better).
    Arithmetic,
    /// n / Σ(1/x): for rates (higher is better).
    Harmonic,
}

impl MeanKind {
    /// This mean of `values` (NaN for no values; see [`harmonic_mean`] for its domain).
    pub fn of(self, values: &[f64]) -> f64 {
        match self {
            MeanKind::Arithmetic => crate::summarize(values).mean,
            MeanKind::Harmonic => harmonic_mean(values),
        }
    }

    /// `"arithmetic"` or `"harmonic"`, to say which mean a table shows.
    pub fn name(self) -> &'static str {
        match self {
            MeanKind::Arithmetic => "arithmetic",
            MeanKind::Harmonic => "harmonic",
        }
    }
}

impl fmt::Display for MeanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// mmtests' rule: [`MeanKind::Harmonic`] for higher-is-better metrics (rates),
/// [`MeanKind::Arithmetic`] for lower-is-better ones (times, latencies).
///
/// ```
/// use schedlab_stats::{mean_kind_for, MeanKind};
/// use schedlab_workload::record::Better;
/// assert_eq!(mean_kind_for(Better::Higher), MeanKind::Harmonic);
/// assert_eq!(mean_kind_for(Better::Lower), MeanKind::Arithmetic);
/// ```
pub fn mean_kind_for(better: Better) -> MeanKind {
    match better {
        Better::Higher => MeanKind::Harmonic,
        Better::Lower => MeanKind::Arithmetic,
    }
}

/// Harmonic mean n / Σ(1/xᵢ), defined for non-negative values: a zero value gives 0 (the
/// limit as that value goes to 0). NaN for no values, or when any value is negative, NaN or
/// infinite (rates are positive; a mixed-sign harmonic mean means nothing).
///
/// ```
/// // 60 km/h out, 40 km/h back: the average speed is 48 km/h.
/// assert!((schedlab_stats::harmonic_mean(&[60.0, 40.0]) - 48.0).abs() < 1e-12);
/// ```
pub fn harmonic_mean(values: &[f64]) -> f64 {
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
        return f64::NAN;
    }
    if values.contains(&0.0) {
        return 0.0;
    }
    values.len() as f64 / values.iter().map(|v| 1.0 / v).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harmonic_mean_known_answers() {
        assert!((harmonic_mean(&[60.0, 40.0]) - 48.0).abs() < 1e-12);
        assert!((harmonic_mean(&[1.0, 2.0, 4.0]) - 12.0 / 7.0).abs() < 1e-15);
        assert!((harmonic_mean(&[5.0, 5.0, 5.0]) - 5.0).abs() < 1e-14);
        assert_eq!(harmonic_mean(&[7.5]), 7.5);
        assert_eq!(harmonic_mean(&[3.0, 0.0]), 0.0);
        for bad in [
            &[][..],
            &[1.0, -1.0],
            &[1.0, f64::NAN],
            &[1.0, f64::INFINITY],
        ] {
            assert!(harmonic_mean(bad).is_nan(), "{bad:?}");
        }
    }

    #[test]
    fn harmonic_mean_of_rates_is_total_work_over_total_time() {
        // Each repetition does 1000 operations; times in seconds.
        let times = [2.0, 2.5, 4.0, 1.25];
        let rates: Vec<f64> = times.iter().map(|t| 1000.0 / t).collect();
        let total_rate = 1000.0 * times.len() as f64 / times.iter().sum::<f64>();
        assert!((harmonic_mean(&rates) - total_rate).abs() < 1e-9);
        // ... and never more than the arithmetic mean.
        assert!(harmonic_mean(&rates) < MeanKind::Arithmetic.of(&rates));
    }

    #[test]
    fn kinds() {
        assert_eq!(mean_kind_for(Better::Higher), MeanKind::Harmonic);
        assert_eq!(mean_kind_for(Better::Lower), MeanKind::Arithmetic);
        assert!((MeanKind::Harmonic.of(&[60.0, 40.0]) - 48.0).abs() < 1e-12);
        assert_eq!(MeanKind::Arithmetic.of(&[60.0, 40.0]), 50.0);
        assert_eq!(MeanKind::Harmonic.to_string(), "harmonic");
        assert_eq!(MeanKind::Arithmetic.name(), "arithmetic");
    }
}
