//! The "repeat until converged" stopping rule: after at least `min_runs` repetitions, stop as
//! soon as the confidence interval of the mean is narrow enough relative to the mean,
//!
//! t(level, n − 1) · s / √n ≤ precision · |x̄|,
//!
//! or give up at `max_runs`. The rule looks only at the interval's width — never at a p-value
//! of a comparison, since stopping when a test first turns significant inflates false
//! positives.

use crate::ci::{self, LevelError};
use std::fmt;

/// When to stop repeating a measurement: a confidence level and precision
/// (`LEVEL:PRECISION`), and the most runs to make.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StoppingRule {
    /// Confidence level of the interval, in percent (95 for 95 %).
    pub level: f64,
    /// Largest acceptable half-width of the interval as a fraction of the mean's magnitude
    /// (0.02 = ±2 %).
    pub precision: f64,
    /// Runs before the rule may stop (at least [`StoppingRule::MIN_RUNS`]).
    pub min_runs: usize,
    /// Runs after which the rule gives up.
    pub max_runs: usize,
}

/// What the stopping rule says after the runs so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Run another repetition.
    Continue,
    /// The interval is within the precision: stop.
    Converged,
    /// `max_runs` reached without converging: stop, and say that the result did not converge.
    GaveUp,
}

impl StoppingRule {
    /// The fewest runs any rule waits for: with fewer, the standard deviation is too unsteady
    /// for its interval to mean much (ministat refuses sets of fewer than 3 too).
    pub const MIN_RUNS: usize = 3;

    /// A rule from its parts, checked: `level` strictly between 50 and 100, `precision` in
    /// (0, 1], `min_runs` ≥ [`StoppingRule::MIN_RUNS`] and `max_runs` ≥ `min_runs`.
    pub fn new(
        level: f64,
        precision: f64,
        min_runs: usize,
        max_runs: usize,
    ) -> Result<StoppingRule, RuleError> {
        if !(level > 50.0 && level < 100.0) {
            return Err(RuleError::Level(level));
        }
        if !(precision > 0.0 && precision <= 1.0) {
            return Err(RuleError::Precision(precision));
        }
        if min_runs < Self::MIN_RUNS {
            return Err(RuleError::MinRuns(min_runs));
        }
        if max_runs < min_runs {
            return Err(RuleError::MaxRuns { max_runs, min_runs });
        }
        Ok(StoppingRule {
            level,
            precision,
            min_runs,
            max_runs,
        })
    }

    /// Parse `LEVEL:PRECISION`, e.g. `95:2%` (95 % confidence, interval
    /// within ±2 % of the mean); the `%` of either part is optional and both are percentages
    /// (`95:0.5` is ±0.5 %, not ±50 %). The rule waits for [`StoppingRule::MIN_RUNS`] runs and
    /// gives up after `max_runs`. Errors name the offending value and what is accepted.
    ///
    /// ```
    /// use schedlab_stats::StoppingRule;
    /// let r = StoppingRule::parse("95:2%", 30).unwrap();
    /// assert_eq!((r.level, r.precision, r.min_runs, r.max_runs), (95.0, 0.02, 3, 30));
    /// assert_eq!(r.to_string(), "95:2%");
    /// let e = StoppingRule::parse("95", 30).unwrap_err();
    /// assert!(e.to_string().contains("LEVEL:PRECISION"));
    /// ```
    pub fn parse(text: &str, max_runs: usize) -> Result<StoppingRule, ParseRuleError> {
        let Some((level_text, precision_text)) = text.split_once(':') else {
            return Err(ParseRuleError::Form {
                text: text.to_string(),
            });
        };
        let level = ci::parse_level(level_text).map_err(|source| ParseRuleError::Level {
            text: text.to_string(),
            source,
        })?;
        let p = precision_text.trim();
        let precision = match p.strip_suffix('%').unwrap_or(p).trim().parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 100.0 => v / 100.0,
            _ => {
                return Err(ParseRuleError::Precision {
                    text: text.to_string(),
                    precision: precision_text.to_string(),
                })
            }
        };
        StoppingRule::new(level, precision, Self::MIN_RUNS, max_runs).map_err(|source| {
            ParseRuleError::Rule {
                text: text.to_string(),
                source,
            }
        })
    }

    /// Whether `values` (one per run so far) satisfy the rule: at least `min_runs` of them and
    /// t(level, n − 1) · s / √n ≤ precision · |mean|. Constant data converges as soon as
    /// `min_runs` is reached (even all zeros); a NaN value never converges.
    pub fn converged(&self, values: &[f64]) -> bool {
        if values.len() < self.min_runs {
            return false;
        }
        let hw = ci::ci_half_width(values, self.level);
        let mean = crate::summarize(values).mean;
        hw <= self.precision * mean.abs()
    }

    /// What to do after the runs whose values are `values`: [`Decision::Converged`] if
    /// [`StoppingRule::converged`], else [`Decision::GaveUp`] once `max_runs` values are
    /// there, else [`Decision::Continue`].
    ///
    /// ```
    /// use schedlab_stats::{Decision, StoppingRule};
    /// let r = StoppingRule::parse("95:2%", 10).unwrap();
    /// assert_eq!(r.decide(&[5.0, 5.0]), Decision::Continue);
    /// assert_eq!(r.decide(&[5.0, 5.0, 5.0]), Decision::Converged);
    /// ```
    pub fn decide(&self, values: &[f64]) -> Decision {
        if self.converged(values) {
            Decision::Converged
        } else if values.len() >= self.max_runs {
            Decision::GaveUp
        } else {
            Decision::Continue
        }
    }
}

/// Why [`StoppingRule::new`] refuses its parts.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RuleError {
    /// A confidence level not strictly between 50 and 100.
    #[error(
        "confidence level {0} is not accepted: expected a percentage strictly between 50 and \
         100, such as 80, 90, 95, 98, 99 or 99.5"
    )]
    Level(f64),
    /// A precision not in (0, 1].
    #[error(
        "precision {0} is not accepted: expected a share of the mean greater than 0 and at most \
         1 (100%), such as 0.02 (2%)"
    )]
    Precision(f64),
    /// Fewer than [`StoppingRule::MIN_RUNS`] runs before the rule may stop.
    #[error(
        "a minimum of {0} runs is not accepted: the stopping rule needs at least {min} runs",
        min = StoppingRule::MIN_RUNS
    )]
    MinRuns(usize),
    /// A maximum below the minimum.
    #[error(
        "a maximum of {max_runs} runs is not accepted: the stopping rule needs at least \
         {min_runs} runs, so the maximum must be {min_runs} or more"
    )]
    MaxRuns {
        /// The maximum asked for.
        max_runs: usize,
        /// The minimum it must reach.
        min_runs: usize,
    },
}

/// Why [`StoppingRule::parse`] refuses a `LEVEL:PRECISION` text; each names the text.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ParseRuleError {
    /// Not of the form `LEVEL:PRECISION`.
    #[error(
        "stopping rule `{text}` is not accepted: expected LEVEL:PRECISION such as 95:2% \
         (confidence level in percent, and the largest half-width of the confidence interval as \
         a percentage of the mean)"
    )]
    Form {
        /// The rule as given.
        text: String,
    },
    /// The level part is not an accepted confidence level.
    #[error("stopping rule `{text}`: {source}")]
    Level {
        /// The rule as given.
        text: String,
        /// Why the level is refused.
        source: LevelError,
    },
    /// The precision part is not a percentage in (0, 100].
    #[error(
        "stopping rule `{text}`: precision `{precision}` is not accepted: expected a percentage \
         of the mean greater than 0 and at most 100, such as 2% or 0.5%"
    )]
    Precision {
        /// The rule as given.
        text: String,
        /// The precision part as given.
        precision: String,
    },
    /// The parts parse but do not make a rule (too small a maximum of runs).
    #[error("stopping rule `{text}`: {source}")]
    Rule {
        /// The rule as given.
        text: String,
        /// Why the rule is refused.
        source: RuleError,
    },
}

impl fmt::Display for StoppingRule {
    /// `LEVEL:PRECISION%`, as [`StoppingRule::parse`] reads it (`95:2%`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Round away binary noise such as 0.07 · 100 = 7.000000000000001.
        let pct = (self.precision * 100.0 * 1e9).round() / 1e9;
        write!(f, "{}:{}%", self.level, pct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_and_rejects() {
        let r = StoppingRule::parse("95:2%", 50).unwrap();
        assert_eq!(
            r,
            StoppingRule {
                level: 95.0,
                precision: 0.02,
                min_runs: 3,
                max_runs: 50
            }
        );
        let r = StoppingRule::parse("99.5:0.5", 3).unwrap();
        assert_eq!((r.level, r.precision, r.max_runs), (99.5, 0.005, 3));
        assert_eq!(
            StoppingRule::parse("80%:7%", 9).unwrap().to_string(),
            "80:7%"
        );
        for (bad, names) in [
            ("95", "`95`"),
            ("", "``"),
            ("101:2%", "`101`"),
            ("0.95:2%", "`0.95`"),
            ("95:0%", "`0%`"),
            ("95:-1%", "`-1%`"),
            ("95:abc", "`abc`"),
            ("95:200%", "`200%`"),
        ] {
            let e = StoppingRule::parse(bad, 30).unwrap_err().to_string();
            assert!(e.contains(names), "{bad}: {e}");
        }
        let e = StoppingRule::parse("95:2%", 2).unwrap_err();
        assert_eq!(
            e,
            ParseRuleError::Rule {
                text: "95:2%".into(),
                source: RuleError::MaxRuns {
                    max_runs: 2,
                    min_runs: 3
                }
            }
        );
        assert_eq!(
            e.to_string(),
            "stopping rule `95:2%`: a maximum of 2 runs is not accepted: the stopping rule needs \
             at least 3 runs, so the maximum must be 3 or more"
        );
        assert_eq!(
            StoppingRule::new(95.0, 0.02, 2, 10).unwrap_err(),
            RuleError::MinRuns(2)
        );
        assert!(StoppingRule::new(95.0, 0.02, 2, 10)
            .unwrap_err()
            .to_string()
            .contains("at least 3"));
        assert!(matches!(
            StoppingRule::parse("95", 30),
            Err(ParseRuleError::Form { .. })
        ));
        assert!(matches!(
            StoppingRule::parse("0.95:2%", 30),
            Err(ParseRuleError::Level { .. })
        ));
        assert_eq!(
            StoppingRule::parse("95:abc", 30).unwrap_err().to_string(),
            "stopping rule `95:abc`: precision `abc` is not accepted: expected a percentage of \
             the mean greater than 0 and at most 100, such as 2% or 0.5%"
        );
        assert_eq!(
            StoppingRule::new(95.0, 2.0, 3, 10).unwrap_err().to_string(),
            "precision 2 is not accepted: expected a share of the mean greater than 0 and at \
             most 1 (100%), such as 0.02 (2%)"
        );
        assert_eq!(
            StoppingRule::new(101.0, 0.02, 3, 10)
                .unwrap_err()
                .to_string(),
            "confidence level 101 is not accepted: expected a percentage strictly between 50 \
             and 100, such as 80, 90, 95, 98, 99 or 99.5"
        );
    }

    #[test]
    fn constant_data_converges_at_min_runs() {
        let r = StoppingRule::parse("95:2%", 10).unwrap();
        assert_eq!(r.decide(&[]), Decision::Continue);
        assert_eq!(r.decide(&[7.0]), Decision::Continue);
        assert_eq!(r.decide(&[7.0, 7.0]), Decision::Continue);
        assert_eq!(r.decide(&[7.0, 7.0, 7.0]), Decision::Converged);
        assert_eq!(r.decide(&[0.0, 0.0, 0.0]), Decision::Converged);
        let r5 = StoppingRule::new(95.0, 0.02, 5, 10).unwrap();
        assert_eq!(r5.decide(&[7.0; 4]), Decision::Continue);
        assert_eq!(r5.decide(&[7.0; 5]), Decision::Converged);
    }

    /// c + k, c − k, c + k, …: the mean and SD have closed forms, so the run at which the
    /// rule stops is known in advance.
    #[test]
    fn alternating_data_converges_exactly_when_the_formula_says() {
        let (c, k) = (100.0, 5.0);
        let rule = StoppingRule::parse("95:2%", 1000).unwrap();
        let values: Vec<f64> = (0..60)
            .map(|i| if i % 2 == 0 { c + k } else { c - k })
            .collect();
        // Even n: mean c, s = k·√(n/(n−1)), so hw = t·k/√(n−1).
        // Odd n: mean c + k/n, s = k·√((n+1)/n), so hw = t·k·√(n+1)/n.
        let closed_form = |n: usize| {
            let nf = n as f64;
            let t = t_975(n - 1);
            match n % 2 {
                0 => (t * k / (nf - 1.0).sqrt(), c),
                _ => (t * k * (nf + 1.0).sqrt() / nf, c + k / nf),
            }
        };
        let mut first = None;
        for n in 3..=60 {
            let (hw, mean) = closed_form(n);
            let expect = hw <= 0.02 * mean;
            assert!(
                (ci::ci_half_width(&values[..n], 95.0) - hw).abs() < 1e-9,
                "n = {n}"
            );
            assert_eq!(rule.converged(&values[..n]), expect, "n = {n}");
            if expect && first.is_none() {
                first = Some(n);
            }
        }
        // From published 3-decimal t values: n = 26: 2.060·5/5 = 2.06 > 2;
        // n = 27: 2.056·5·√28/27 = 2.015 > 2.004; n = 28: 2.052·5/√27 = 1.975 ≤ 2.
        assert_eq!(first, Some(28));
        assert_eq!(rule.decide(&values[..27]), Decision::Continue);
        assert_eq!(rule.decide(&values[..28]), Decision::Converged);
        // With at most 20 runs the same data gives up.
        let capped = StoppingRule::parse("95:2%", 20).unwrap();
        assert_eq!(capped.decide(&values[..19]), Decision::Continue);
        assert_eq!(capped.decide(&values[..20]), Decision::GaveUp);
        // A looser precision stops earlier, a higher level later.
        let loose = StoppingRule::parse("95:5%", 1000).unwrap();
        assert!((3..28).any(|n| loose.converged(&values[..n])));
        let strict = StoppingRule::parse("99:2%", 1000).unwrap();
        assert!(!strict.converged(&values[..28]));
    }

    fn t_975(df: usize) -> f64 {
        crate::t_quantile(95.0, df as f64)
    }

    #[test]
    fn noisy_data_gives_up_at_max_runs() {
        let r = StoppingRule::parse("95:2%", 10).unwrap();
        let v: Vec<f64> = (0..12)
            .map(|i| if i % 2 == 0 { 1.0 } else { 100.0 })
            .collect();
        assert_eq!(r.decide(&v[..9]), Decision::Continue);
        assert_eq!(r.decide(&v[..10]), Decision::GaveUp);
        assert_eq!(r.decide(&v[..12]), Decision::GaveUp);
        let nan = [1.0, f64::NAN, 1.0, 1.0];
        assert_eq!(
            StoppingRule::parse("95:2%", 4).unwrap().decide(&nan),
            Decision::GaveUp
        );
    }
}
