//! Statistics over schedlab result records: descriptive summaries of each metric over the
//! repetitions of a configuration, Student's t confidence intervals, the "repeat until
//! converged" stopping rule, the mean that suits a metric (arithmetic or harmonic), outlier
//! flags (modified z-scores) and ministat's two-sample comparison (pooled Student's t, or Welch).
//! The sources these follow: FreeBSD's ministat (usr.bin/ministat/ministat.c: its t table, its
//! pooled-variance test and its report), Student's and Welch's t tests as textbooks state them,
//! Iglewicz and Hoaglin's modified z-score for outliers, and hyperfine's habit of repeating until
//! the numbers are stable.
//!
//! Everything here is a pure function of the values it is given.
//!
//! ```
//! let s = schedlab_stats::summarize(&[1.0, 2.0, 3.0, 4.0]);
//! assert_eq!((s.n, s.mean, s.median), (4, 2.5, 2.5));
//!
//! // 95 % confidence interval of the mean: t(0.975, 3) · s / √n.
//! let hw = schedlab_stats::ci_half_width(&[1.0, 2.0, 3.0, 4.0], 95.0);
//! assert!((hw - 3.182446 * s.sd / 2.0).abs() < 1e-5);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod ci;
pub mod compare;
pub mod mean;
pub mod outlier;
pub mod stopping;
pub mod summary;
pub mod threshold;

pub use ci::{
    ci_half_width, parse_level, relative_ci_half_width, t_quantile, LevelError, MINISTAT_LEVELS,
};
pub use compare::{compare, compare_ministat, CompareError, Comparison, Sample};
pub use mean::{harmonic_mean, mean_kind_for, MeanKind};
pub use outlier::{modified_z_scores, outliers, outliers_above, MIN_OUTLIER_N, OUTLIER_THRESHOLD};
pub use stopping::{Decision, ParseRuleError, RuleError, StoppingRule};
pub use summary::{describe, median, metric_values, summarize, summarize_config, Described};
pub use threshold::{ThresholdRule, Verdict};
