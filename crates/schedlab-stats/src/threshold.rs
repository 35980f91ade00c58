//! A pass/fail stopping rule: repeat a measurement until the confidence interval of its mean
//! is clear of a threshold — wholly at or above it (pass) or wholly below it (fail) — or give
//! up at a maximum of runs (undecided). It is the rule a search for the largest load that
//! still meets a criterion (SPECweb99's "at least 95 % of connections conform", docs/web.md)
//! applies at each candidate; like [`crate::StoppingRule`] it waits for
//! [`crate::StoppingRule::MIN_RUNS`] runs and looks only at the interval.

use crate::ci;

/// Which side of the threshold a measurement's interval lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// mean − half-width ≥ threshold.
    Pass,
    /// mean + half-width < threshold.
    Fail,
    /// The interval holds the threshold (or too few runs to say).
    Undecided,
}

impl Verdict {
    /// `pass`, `fail` or `undecided`, as records and tables write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Undecided => "undecided",
        }
    }
}

/// Repeat until the interval at `level` is clear of `threshold`, between `min_runs` and
/// `max_runs` runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThresholdRule {
    /// Confidence level of the interval, in percent.
    pub level: f64,
    /// The value a passing mean must reach (the interval's lower end at or above it).
    pub threshold: f64,
    /// Runs before the rule may decide (at least [`crate::StoppingRule::MIN_RUNS`]).
    pub min_runs: usize,
    /// Runs after which the rule gives up (the verdict stays undecided).
    pub max_runs: usize,
}

impl ThresholdRule {
    /// The verdict on `values` (one per run): undecided with fewer than `min_runs` values, or
    /// any NaN; else by where `mean ± t·s/√n` lies. Constant values decide at `min_runs`.
    ///
    /// ```
    /// use schedlab_stats::{ThresholdRule, Verdict};
    /// let r = ThresholdRule { level: 95.0, threshold: 95.0, min_runs: 3, max_runs: 10 };
    /// assert_eq!(r.verdict(&[100.0, 100.0]), Verdict::Undecided);
    /// assert_eq!(r.verdict(&[100.0, 100.0, 100.0]), Verdict::Pass);
    /// assert_eq!(r.verdict(&[60.0, 61.0, 59.0]), Verdict::Fail);
    /// assert_eq!(r.verdict(&[90.0, 99.0, 96.0]), Verdict::Undecided);
    /// ```
    pub fn verdict(&self, values: &[f64]) -> Verdict {
        if values.len() < self.min_runs.max(2) || values.iter().any(|v| v.is_nan()) {
            return Verdict::Undecided;
        }
        let hw = ci::ci_half_width(values, self.level);
        let mean = crate::summarize(values).mean;
        if !hw.is_finite() {
            Verdict::Undecided
        } else if mean - hw >= self.threshold {
            Verdict::Pass
        } else if mean + hw < self.threshold {
            Verdict::Fail
        } else {
            Verdict::Undecided
        }
    }

    /// Whether to stop after `values`: decided, or `max_runs` values reached.
    pub fn done(&self, values: &[f64]) -> bool {
        self.verdict(values) != Verdict::Undecided || values.len() >= self.max_runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(max_runs: usize) -> ThresholdRule {
        ThresholdRule {
            level: 95.0,
            threshold: 95.0,
            min_runs: 3,
            max_runs,
        }
    }

    #[test]
    fn exactly_the_threshold_passes_and_noise_around_it_runs_to_the_maximum() {
        assert_eq!(rule(5).verdict(&[95.0; 3]), Verdict::Pass);
        let noisy = [94.0, 96.0, 94.5, 95.5];
        assert_eq!(rule(5).verdict(&noisy), Verdict::Undecided);
        assert!(!rule(5).done(&noisy));
        assert!(rule(4).done(&noisy));
    }

    #[test]
    fn nan_never_decides() {
        assert_eq!(
            rule(5).verdict(&[f64::NAN, 100.0, 100.0]),
            Verdict::Undecided
        );
    }
}
