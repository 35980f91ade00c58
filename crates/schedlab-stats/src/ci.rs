//! Student's t quantiles and confidence intervals of the mean.
//!
//! Quantiles are computed, for any degrees of freedom, integer or not (Welch's df is
//! fractional), at any confidence level — not looked up in a table limited to df ≤ 100 and six
//! levels as ministat's is. Below [`LARGE_DF`] degrees of freedom they come from statrs'
//! inverse CDF of Student's t; from there on from the Cornish–Fisher expansion of t in powers
//! of 1/df around the normal quantile, because statrs' inverse (via the inverse regularized
//! incomplete beta function) loses accuracy for large df (t(95 %, 10⁷) = 1.83 instead of 1.96)
//! and does not terminate at df = 10⁹. The two agree to 10⁻¹² at df = 1000.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The confidence levels ministat accepts (`-c`), in percent. Any level in (50, 100) works
/// here; these are the conventional ones.
pub const MINISTAT_LEVELS: [f64; 6] = [80.0, 90.0, 95.0, 98.0, 99.0, 99.5];

/// Two-sided Student's t critical value: the `t` such that a t-distributed variable with `df`
/// degrees of freedom lies within ±t with probability `level_percent` / 100, i.e. the
/// (1 + level/100)/2 quantile. `t_quantile(95.0, 10.0)` ≈ 2.228.
///
/// `df` may be fractional (Welch–Satterthwaite) and `f64::INFINITY` (the normal quantile,
/// 1.960 at 95 %). Returns NaN when `level_percent` is not strictly between 0 and 100 or `df`
/// is not > 0.
///
/// ```
/// let t = schedlab_stats::t_quantile(95.0, 10.0);
/// assert!((t - 2.228).abs() < 0.0005);
/// ```
pub fn t_quantile(level_percent: f64, df: f64) -> f64 {
    let valid = level_percent > 0.0 && level_percent < 100.0 && df > 0.0;
    if !valid {
        return f64::NAN;
    }
    let p = 0.5 + level_percent / 200.0;
    if df < LARGE_DF {
        return StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p));
    }
    let z = Normal::new(0.0, 1.0).map_or(f64::NAN, |n| n.inverse_cdf(p));
    if df.is_infinite() {
        return z;
    }
    // Cornish–Fisher expansion (Abramowitz & Stegun 26.7.5), terms to 1/df⁴; the first
    // neglected term is O(z¹¹/df⁵).
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
    z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df
}

/// Degrees of freedom from which [`t_quantile`] uses the Cornish–Fisher expansion instead of
/// statrs' inverse CDF (see the module documentation).
pub const LARGE_DF: f64 = 1000.0;

/// Half-width of the confidence interval of the mean of `values` at `level` percent:
/// t(level, n − 1) · s / √n, with s the sample standard deviation (n − 1). The interval is
/// `mean ± ci_half_width`. NaN for fewer than 2 values (no spread can be estimated) or an
/// invalid level; 0 when all values are equal.
///
/// ```
/// // Constant data: no uncertainty at all.
/// assert_eq!(schedlab_stats::ci_half_width(&[3.0, 3.0, 3.0], 95.0), 0.0);
/// assert!(schedlab_stats::ci_half_width(&[3.0], 95.0).is_nan());
/// ```
pub fn ci_half_width(values: &[f64], level: f64) -> f64 {
    let n = values.len();
    if n < 2 {
        return f64::NAN;
    }
    let s = crate::summarize(values).sd;
    t_quantile(level, (n - 1) as f64) * s / (n as f64).sqrt()
}

/// [`ci_half_width`] divided by the magnitude of the mean: 0.02 means the mean is known to
/// ±2 % at `level`. Infinite (or NaN) when the mean is 0.
pub fn relative_ci_half_width(values: &[f64], level: f64) -> f64 {
    ci_half_width(values, level) / crate::summarize(values).mean.abs()
}

/// A confidence level that [`parse_level`] does not accept: not a number, or not strictly
/// between 50 and 100.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "confidence level `{text}` is not accepted: expected a percentage strictly between 50 and \
     100, such as 80, 90, 95, 98, 99 or 99.5"
)]
pub struct LevelError {
    /// The text as given.
    pub text: String,
}

/// Parse a confidence level given in percent, such as `95`, `99.5` or `95%` (the `%` is
/// optional). Accepts any level strictly between 50 and 100; the error names the value and
/// what is accepted.
///
/// ```
/// assert_eq!(schedlab_stats::parse_level("99.5"), Ok(99.5));
/// assert_eq!(schedlab_stats::parse_level("95%"), Ok(95.0));
/// assert!(schedlab_stats::parse_level("0.95").unwrap_err().to_string().contains("0.95"));
/// ```
pub fn parse_level(text: &str) -> Result<f64, LevelError> {
    let t = text.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    match number.parse::<f64>() {
        Ok(v) if v > 50.0 && v < 100.0 => Ok(v),
        _ => Err(LevelError {
            text: text.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Assert that the computed quantile rounds to the 3-decimal published value.
    fn check(level: f64, df: f64, published: f64) {
        let t = t_quantile(level, df);
        assert!(
            (t - published).abs() <= 0.0005 + 1e-9,
            "t({level}%, df {df}) = {t}, published {published}"
        );
    }

    #[test]
    fn t_quantiles_match_published_tables() {
        // Two-sided 95 % (one-sided 0.975) and 99 % (0.995) columns of the standard tables
        // (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
        for (df, t95, t99) in [
            (1.0, 12.706, 63.657),
            (2.0, 4.303, 9.925),
            (5.0, 2.571, 4.032),
            (10.0, 2.228, 3.169),
            (30.0, 2.042, 2.750),
            (100.0, 1.984, 2.626),
            (1000.0, 1.962, 2.581),
        ] {
            check(95.0, df, t95);
            check(99.0, df, t99);
        }
        // Other levels: 80 % (0.90), 90 % (0.95), 98 % (0.99), 99.5 % (0.9975).
        check(80.0, 1.0, 3.078);
        check(80.0, 10.0, 1.372);
        check(80.0, 30.0, 1.310);
        check(90.0, 1.0, 6.314);
        check(90.0, 10.0, 1.812);
        check(90.0, 100.0, 1.660);
        check(98.0, 1.0, 31.821);
        check(98.0, 10.0, 2.764);
        check(98.0, 30.0, 2.457);
        check(99.5, 1.0, 127.321);
        check(99.5, 2.0, 14.089);
        check(99.5, 5.0, 4.773);
        check(99.5, 10.0, 3.581);
        check(99.5, 30.0, 3.030);
        // The normal limit.
        check(95.0, f64::INFINITY, 1.960);
        check(99.5, f64::INFINITY, 2.807);
        check(80.0, f64::INFINITY, 1.282);
        assert!((t_quantile(95.0, 1e9) - 1.959_964).abs() < 1e-5);
    }

    #[test]
    fn large_df_is_accurate_and_continuous() {
        // t(0.975, ν) − z ≈ (z³ + z)/(4ν): at ν = 10⁶ that is 2.3733e-6 above 1.959964.
        let z = 1.959_963_984_540_054;
        for nu in [1e4, 1e5, 1e6, 1e7, 1e9, 1e12] {
            let t = t_quantile(95.0, nu);
            let first_order = z + (z * z * z + z) / (4.0 * nu);
            // The next term is about 2.8/ν².
            assert!(
                (t - first_order).abs() < 3.0 / (nu * nu) + 1e-15,
                "ν = {nu}: {t}"
            );
        }
        // No jump where the method changes.
        for level in [80.0, 95.0, 99.5, 99.99] {
            let below = t_quantile(level, LARGE_DF - 1e-9);
            let at = t_quantile(level, LARGE_DF);
            assert!((below - at).abs() < 1e-11, "{level}: {below} {at}");
        }
        // Monotone decreasing in df across the switch.
        let ts: Vec<f64> = [500.0, 999.0, 1000.0, 1001.0, 5000.0, 1e6]
            .iter()
            .map(|&d| t_quantile(95.0, d))
            .collect();
        assert!(ts.windows(2).all(|w| w[0] > w[1]), "{ts:?}");
    }

    #[test]
    fn fractional_df_lies_between_its_neighbours() {
        let (t7, t75, t8) = (
            t_quantile(95.0, 7.0),
            t_quantile(95.0, 7.5),
            t_quantile(95.0, 8.0),
        );
        assert!(t7 > t75 && t75 > t8, "{t7} {t75} {t8}");
    }

    #[test]
    fn invalid_arguments_give_nan() {
        for (level, df) in [
            (0.0, 5.0),
            (100.0, 5.0),
            (-5.0, 5.0),
            (95.0, 0.0),
            (95.0, -1.0),
        ] {
            assert!(t_quantile(level, df).is_nan(), "{level} {df}");
        }
        assert!(t_quantile(f64::NAN, 5.0).is_nan());
        assert!(t_quantile(95.0, f64::NAN).is_nan());
    }

    #[test]
    fn half_width_formula() {
        let v = [50.0, 200.0, 150.0, 400.0, 750.0, 400.0, 150.0];
        let s = crate::summarize(&v).sd;
        // t(0.975, 6) = 2.447.
        let hw = ci_half_width(&v, 95.0);
        assert!((hw - 2.446_912 * s / 7f64.sqrt()).abs() < 1e-3, "{hw}");
        assert!((relative_ci_half_width(&v, 95.0) - hw / 300.0).abs() < 1e-12);
        assert!(ci_half_width(&[], 95.0).is_nan());
        assert!(ci_half_width(&[1.0, 2.0], 100.0).is_nan());
    }

    #[test]
    fn level_parser() {
        for (text, v) in [("80", 80.0), ("95", 95.0), ("99.5", 99.5), (" 98% ", 98.0)] {
            assert_eq!(parse_level(text), Ok(v));
        }
        for bad in ["", "x", "100", "50", "0.95", "-95", "nan", "95%%"] {
            let e = parse_level(bad).unwrap_err();
            assert_eq!(e.text, bad);
            let e = e.to_string();
            assert!(e.contains(&format!("`{bad}`")) && e.contains("99.5"), "{e}");
        }
        assert_eq!(
            parse_level("0.95").unwrap_err().to_string(),
            "confidence level `0.95` is not accepted: expected a percentage strictly between 50 \
             and 100, such as 80, 90, 95, 98, 99 or 99.5"
        );
    }
}
