//! Two-sample comparison as ministat does it: the difference of the means of a data set and a
//! reference set, with its confidence interval, by Student's t with a pooled standard deviation
//! — or, unlike ministat, by Welch's t for unequal variances.
//!
//! Student's t (ministat.c `Relative`): df = n₁ + n₂ − 2,
//! s_p = √(((n_o − 1)·s_o² + (n_r − 1)·s_r²) / df), e = t(level, df) · s_p · √(1/n_o + 1/n_r).
//!
//! Welch: se = √(s_r²/n_r + s_o²/n_o), df by Welch–Satterthwaite
//! (se⁴ / ((s_r²/n_r)²/(n_r − 1) + (s_o²/n_o)²/(n_o − 1))), e = t(level, df) · se.
//!
//! In both, d = x̄_o − x̄_r and the difference is significant when |d| > e, i.e. the interval
//! d ± e excludes 0.

use crate::ci::t_quantile;
use schedlab_workload::record::Better;

/// The comparison of a data set with a reference set (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Confidence level, in percent.
    pub level: f64,
    /// Whether Welch's t was used (else Student's t with pooled s).
    pub welch: bool,
    /// Mean of the reference set, x̄_r.
    pub reference_mean: f64,
    /// Mean of the other set, x̄_o.
    pub other_mean: f64,
    /// d = x̄_o − x̄_r.
    pub diff: f64,
    /// e: the difference is d ± e at `level`.
    pub half_width: f64,
    /// d as a percentage of the reference mean: 100 · d / |x̄_r|.
    pub pct: f64,
    /// e as a percentage of the reference mean: 100 · e / |x̄_r| (ministat's `% +/- %` line).
    pub pct_half_width: f64,
    /// |d| > e: the difference is proven at `level`.
    pub significant: bool,
    /// The pooled standard deviation s_p (Student's t); `None` for Welch.
    pub pooled_sd: Option<f64>,
    /// Standard error of the difference: s_p · √(1/n_o + 1/n_r), or Welch's se.
    pub std_error: f64,
    /// Degrees of freedom: n_o + n_r − 2, or Welch–Satterthwaite's (fractional).
    pub df: f64,
    /// The two-sided critical value t(level, df) used for `half_width`.
    pub t: f64,
    /// Half-width of the reference mean's own confidence interval at `level`.
    pub reference_half_width: f64,
}

impl Comparison {
    /// The t statistic d / se (0 when both sets are constant and equal, ±∞ when they are
    /// constant and differ).
    pub fn t_statistic(&self) -> f64 {
        if self.diff == 0.0 {
            0.0
        } else {
            self.diff / self.std_error
        }
    }

    /// Whether the reference mean is within its own noise of zero: 0, or no farther from 0
    /// than the half-width of its confidence interval. A change as a percentage of such a mean
    /// is mostly noise ("−54258.8 %"); the ratio [`Comparison::ratio`] reads better.
    pub fn reference_near_zero(&self) -> bool {
        self.reference_mean == 0.0 || self.reference_mean.abs() <= self.reference_half_width
    }

    /// The other mean as a multiple of the reference mean, x̄_o / x̄_r (±∞ or NaN when the
    /// reference mean is 0).
    pub fn ratio(&self) -> f64 {
        self.other_mean / self.reference_mean
    }

    /// The percentage change signed so that positive means better (mmtests' convention):
    /// `pct` for higher-is-better metrics, `−pct` for lower-is-better ones.
    pub fn improvement_pct(&self, better: Better) -> f64 {
        match better {
            Better::Higher => self.pct,
            Better::Lower => -self.pct,
        }
    }
}

/// Which of the two sets of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sample {
    /// The reference set (the first).
    Reference,
    /// The set compared with it.
    Compared,
}

impl std::fmt::Display for Sample {
    /// `reference set` or `compared set`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sample::Reference => "reference set",
            Sample::Compared => "compared set",
        })
    }
}

/// Why two sets cannot be compared.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// A confidence level not strictly between 0 and 100.
    #[error(
        "confidence level {0} is not accepted: expected a percentage strictly between 0 and \
         100, such as 95"
    )]
    Level(f64),
    /// A set with fewer than 2 values.
    #[error(
        "the {set} has {n} value{s}: a comparison needs at least 2 values in each set",
        s = if *n == 1 { "" } else { "s" }
    )]
    TooFew {
        /// Which set.
        set: Sample,
        /// How many values it has.
        n: usize,
    },
    /// A set with a NaN or infinite value.
    #[error("the {set} has a value that is not a finite number ({value} at position {position})")]
    NotFinite {
        /// Which set.
        set: Sample,
        /// The first such value.
        value: f64,
        /// Its position in the set, from 1.
        position: usize,
    },
}

/// Compare `other` with `reference` at `level` percent (e.g. 95): Student's t with pooled
/// standard deviation as ministat, or Welch's t when `welch`.
///
/// Each set needs at least 2 values (one more than a standard deviation needs; ministat
/// itself refuses sets of fewer than 3, which its renderer
/// `schedlab_report::ministat` enforces). Errors name the problem: too few values, a
/// non-finite value, or a level not strictly between 0 and 100.
///
/// When both sets are constant the standard error is 0: the difference is significant exactly
/// when the means differ (and Welch's df, 0/0, is taken as n_o + n_r − 2).
///
/// `pct` and `pct_half_width` divide by |x̄_r|; ministat divides by x̄_r itself, which
/// differs only for a negative reference mean. They are infinite or NaN when x̄_r = 0.
/// (Newer FreeBSD ministat.c prints a different relative half-width, which scales the reference
/// set's variance by (x̄_o/x̄_r)² before pooling; its manual's example, the statistics reference
/// and this function use e / x̄_r.)
///
/// ```
/// let iguana = [50.0, 200.0, 150.0, 400.0, 750.0, 400.0, 150.0];
/// let chameleon = [150.0, 400.0, 720.0, 500.0, 930.0];
/// let c = schedlab_stats::compare(&iguana, &chameleon, 95.0, false).unwrap();
/// assert_eq!((c.diff, c.df), (240.0, 10.0));
/// assert!(!c.significant); // "No difference proven at 95.0% confidence"
/// ```
pub fn compare(
    reference: &[f64],
    other: &[f64],
    level: f64,
    welch: bool,
) -> Result<Comparison, CompareError> {
    compare_impl(reference, other, level, welch, false)
}

/// [`compare`] with the critical value t rounded to 3 decimals, as printed in the table of
/// t values ministat looks up, so that for df ≤ 100 the result agrees with ministat's to the
/// last printed digit (e.g. the manual's `240 +/- 212.215` at 80 %, where the exact
/// t = 1.372184 would give 212.243). Beyond df = 100 ministat falls back to the normal
/// quantile (1.960 at 95 %); this keeps using t(df). ministat's "99.5 %" column holds the
/// 99.8 % values (318.313 at df 1, 3.090 at df ∞); this uses the true 99.5 % quantile.
pub fn compare_ministat(
    reference: &[f64],
    other: &[f64],
    level: f64,
    welch: bool,
) -> Result<Comparison, CompareError> {
    compare_impl(reference, other, level, welch, true)
}

fn compare_impl(
    reference: &[f64],
    other: &[f64],
    level: f64,
    welch: bool,
    round_t: bool,
) -> Result<Comparison, CompareError> {
    if !(level > 0.0 && level < 100.0) {
        return Err(CompareError::Level(level));
    }
    for (set, values) in [(Sample::Reference, reference), (Sample::Compared, other)] {
        if values.len() < 2 {
            return Err(CompareError::TooFew {
                set,
                n: values.len(),
            });
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(CompareError::NotFinite {
                set,
                value: values[i],
                position: i + 1,
            });
        }
    }
    let (r, o) = (crate::summarize(reference), crate::summarize(other));
    let (nr, no) = (r.n as f64, o.n as f64);
    let (vr, vo) = (r.sd * r.sd, o.sd * o.sd);
    let (std_error, df, pooled_sd) = if welch {
        let (ar, ao) = (vr / nr, vo / no);
        let se2 = ar + ao;
        let df = if se2 > 0.0 {
            se2 * se2 / (ar * ar / (nr - 1.0) + ao * ao / (no - 1.0))
        } else {
            nr + no - 2.0
        };
        (se2.sqrt(), df, None)
    } else {
        let df = nr + no - 2.0;
        let sp = (((no - 1.0) * vo + (nr - 1.0) * vr) / df).sqrt();
        (sp * (1.0 / no + 1.0 / nr).sqrt(), df, Some(sp))
    };
    let mut t = t_quantile(level, df);
    if round_t {
        t = (t * 1000.0).round() / 1000.0;
    }
    let diff = o.mean - r.mean;
    let half_width = t * std_error;
    Ok(Comparison {
        level,
        welch,
        reference_mean: r.mean,
        other_mean: o.mean,
        diff,
        half_width,
        pct: diff * 100.0 / r.mean.abs(),
        pct_half_width: half_width * 100.0 / r.mean.abs(),
        significant: diff.abs() > half_width,
        pooled_sd,
        std_error,
        df,
        t,
        reference_half_width: crate::ci::ci_half_width(reference, level),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IGUANA: [f64; 7] = [50.0, 200.0, 150.0, 400.0, 750.0, 400.0, 150.0];
    const CHAMELEON: [f64; 5] = [150.0, 400.0, 720.0, 500.0, 930.0];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn a_reference_within_its_noise_of_zero_is_told_apart() {
        // Mean 0.1 ± about 1.2: a percentage of it would be noise.
        let near = [-0.9, 1.1, 0.1, -0.4, 0.6];
        let c = compare(&near, &[5.0, 5.5, 6.0], 95.0, false).unwrap();
        assert!(c.reference_near_zero(), "{c:?}");
        assert!(close(c.ratio(), 55.0, 1e-9), "{}", c.ratio());
        // The manual's iguana (mean 300 ± 220) is clear of zero.
        let c = compare(&IGUANA, &CHAMELEON, 95.0, false).unwrap();
        assert!(!c.reference_near_zero());
        assert!(close(c.ratio(), 1.8, 1e-9));
    }

    #[test]
    fn ministat_manual_example() {
        // ministat(1): no difference at 95 %; at 80 %: "240 +/- 212.215", "80% +/- 70.7384%",
        // "(Student's t, pooled s = 264.159)".
        let c95 = compare_ministat(&IGUANA, &CHAMELEON, 95.0, false).unwrap();
        assert!(!c95.significant);
        assert_eq!((c95.t, c95.df), (2.228, 10.0));
        let c = compare_ministat(&IGUANA, &CHAMELEON, 80.0, false).unwrap();
        assert!(c.significant);
        assert_eq!((c.diff, c.t, c.df), (240.0, 1.372, 10.0));
        assert!(close(c.half_width, 212.215, 0.0005), "{}", c.half_width);
        assert!(close(c.pct, 80.0, 1e-9));
        assert!(
            close(c.pct_half_width, 70.7384, 0.00005),
            "{}",
            c.pct_half_width
        );
        assert!(close(c.pooled_sd.unwrap(), 264.159, 0.0005));
        assert_eq!((c.reference_mean, c.other_mean), (300.0, 540.0));
    }

    #[test]
    fn exact_t_differs_from_ministat_only_by_rounding() {
        let exact = compare(&IGUANA, &CHAMELEON, 80.0, false).unwrap();
        let table = compare_ministat(&IGUANA, &CHAMELEON, 80.0, false).unwrap();
        assert!(close(exact.t, 1.372184, 1e-6), "{}", exact.t);
        assert!(close(exact.half_width, exact.t * exact.std_error, 1e-12));
        assert!(close(
            exact.half_width / table.half_width,
            exact.t / 1.372,
            1e-12
        ));
        // s_p · √(1/5 + 1/7)
        assert!(close(
            exact.std_error,
            264.159_043 * (12.0f64 / 35.0).sqrt(),
            1e-5
        ));
    }

    #[test]
    fn welch_and_student_known_answers() {
        // Wikipedia, "Welch's t-test", second example: Welch t = −1.57, df = 9.9;
        // Student's t = −2.10, df = 28.
        let a1 = [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8];
        let a2 = [
            21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5,
            23.6, 21.5, 22.5, 23.5, 21.5, 21.8,
        ];
        let w = compare(&a2, &a1, 95.0, true).unwrap();
        assert!(close(w.t_statistic(), -1.57, 0.005), "{}", w.t_statistic());
        assert!(close(w.df, 9.9, 0.05), "{}", w.df);
        assert_eq!(w.pooled_sd, None);
        assert!(!w.significant);
        let s = compare(&a2, &a1, 95.0, false).unwrap();
        assert!(close(s.t_statistic(), -2.10, 0.005), "{}", s.t_statistic());
        assert_eq!(s.df, 28.0);
        // Student's t (df 28, t = 2.048) calls it significant at 95 %; Welch does not.
        assert!(s.significant);
        // Welch on the manual's example, by hand: se² = 56666.67/7 + 89450/5 = 25985.24,
        // df = se⁴ / ((8095.24²)/6 + 17890²/4) = 7.4254.
        let w = compare(&IGUANA, &CHAMELEON, 95.0, true).unwrap();
        assert!(close(w.std_error, 25_985.238f64.sqrt(), 1e-3));
        assert!(close(w.df, 7.4254, 5e-5), "{}", w.df);
        assert!(close(
            w.half_width,
            crate::t_quantile(95.0, w.df) * w.std_error,
            1e-9
        ));
    }

    #[test]
    fn constant_sets() {
        let same = compare(&[5.0, 5.0, 5.0], &[5.0, 5.0], 95.0, false).unwrap();
        assert!(!same.significant);
        assert_eq!((same.half_width, same.t_statistic()), (0.0, 0.0));
        let differ = compare(&[5.0, 5.0, 5.0], &[6.0, 6.0], 95.0, true).unwrap();
        assert!(differ.significant);
        assert_eq!((differ.df, differ.half_width, differ.pct), (3.0, 0.0, 20.0));
        assert_eq!(differ.t_statistic(), f64::INFINITY);
    }

    #[test]
    fn improvement_sign_follows_the_metric() {
        let c = compare(&[9.0, 10.0, 11.0], &[19.0, 20.0, 21.0], 95.0, false).unwrap();
        assert!(close(c.pct, 100.0, 1e-9));
        assert!(close(c.improvement_pct(Better::Higher), 100.0, 1e-9));
        assert!(close(c.improvement_pct(Better::Lower), -100.0, 1e-9));
    }

    #[test]
    fn errors_name_the_problem() {
        let e = compare(&[1.0], &[1.0, 2.0], 95.0, false).unwrap_err();
        assert_eq!(
            e,
            CompareError::TooFew {
                set: Sample::Reference,
                n: 1
            }
        );
        assert_eq!(
            e.to_string(),
            "the reference set has 1 value: a comparison needs at least 2 values in each set"
        );
        let e = compare(&[1.0, 2.0], &[], 95.0, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("compared set has 0 values"), "{e}");
        let e = compare(&[1.0, 2.0], &[1.0, f64::NAN], 95.0, false).unwrap_err();
        assert!(matches!(
            e,
            CompareError::NotFinite {
                set: Sample::Compared,
                position: 2,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "the compared set has a value that is not a finite number (NaN at position 2)"
        );
        let e = compare(&[1.0, 2.0], &[1.0, 2.0], 100.0, false).unwrap_err();
        assert_eq!(e, CompareError::Level(100.0));
        assert_eq!(
            e.to_string(),
            "confidence level 100 is not accepted: expected a percentage strictly between 0 and \
             100, such as 95"
        );
    }
}
