//! Outlier flags by modified z-score (Iglewicz & Hoaglin 1993): a robust z-score built from
//! the median and the median absolute deviation (MAD), so that the outliers themselves do not
//! inflate the yardstick as they inflate the standard deviation.
//!
//! Outliers are only flagged, never removed: a slow repetition is a measurement too, and
//! whether to discard it is the reader's decision.

/// Values whose modified z-score exceeds this in magnitude are flagged: 3.5, the threshold
/// Iglewicz and Hoaglin recommend.
///
/// hyperfine uses the same kind of score but warns only far out: it flags
/// |x − median| > 14.826 · MAD, which is a modified z-score above [`HYPERFINE_THRESHOLD`]
/// (10 robust standard deviations). Pass that to [`outliers_above`] to flag only what
/// hyperfine would.
pub const OUTLIER_THRESHOLD: f64 = 3.5;

/// hyperfine's outlier threshold expressed as a modified z-score (see [`OUTLIER_THRESHOLD`]).
pub const HYPERFINE_THRESHOLD: f64 = 10.0;

/// Fewest values among which one is judged an outlier. With 3 or 4 the median and MAD rest on
/// one or two values, so "run 3 of 3 is an outlier" says more about N than about run 3; 5 is
/// also where a single odd value among equal ones first scores above the threshold (see
/// [`modified_z_scores`]).
pub const MIN_OUTLIER_N: usize = 5;

/// 0.6745 = Φ⁻¹(0.75): MAD / 0.6745 estimates the standard deviation of normal data.
const MAD_FACTOR: f64 = 0.6745;

/// √(π/2) = 1.2533: 1.2533 · (mean absolute deviation) estimates the standard deviation of
/// normal data; the fallback scale when the MAD is 0.
const MEAN_AD_FACTOR: f64 = 1.253_314;

/// The modified z-score of each value, in input order:
///
/// Mᵢ = 0.6745 · (xᵢ − median) / MAD, with MAD = median(|xᵢ − median|),
///
/// i.e. the distance from the median in robust standard deviations, signed.
///
/// **MAD = 0.** When more than half of the values are equal to the median, the MAD is 0 and
/// the formula would make every other value infinitely far out (hyperfine, which divides by
/// machine epsilon instead, flags every value that differs from the median at all). Here the
/// scale falls back to the mean absolute deviation from the median (the convention of IBM
/// SPSS): Mᵢ = (xᵢ − median) / (1.2533 · mean|xᵢ − median|). The score stays scale-free:
/// with `k` of `n` values at distance `d` from a common median and the rest equal to it, each
/// of the `k` scores n / (1.2533 · k), so it is flagged exactly when n > 4.39 · k — a single
/// odd value among 3 or 4 is not an outlier, one among 5 or more is. When every value is
/// equal, all scores are 0.
///
/// Expects finite values (a NaN makes its own score NaN, which is never flagged). Empty input
/// gives an empty vector.
pub fn modified_z_scores(values: &[f64]) -> Vec<f64> {
    if values.is_empty() {
        return Vec::new();
    }
    let med = crate::median(values);
    let deviations: Vec<f64> = values.iter().map(|x| (x - med).abs()).collect();
    let mad = crate::median(&deviations);
    let scale = if mad > 0.0 {
        mad / MAD_FACTOR
    } else {
        let mean_ad = deviations.iter().sum::<f64>() / values.len() as f64;
        MEAN_AD_FACTOR * mean_ad
    };
    if scale > 0.0 {
        values.iter().map(|x| (x - med) / scale).collect()
    } else {
        vec![0.0; values.len()]
    }
}

/// Indices (input order) of the values whose modified z-score exceeds
/// [`OUTLIER_THRESHOLD`] (3.5) in magnitude, among at least [`MIN_OUTLIER_N`] values. See
/// [`modified_z_scores`] for the score and how a zero MAD is handled.
///
/// ```
/// let times = [10.1, 10.0, 10.2, 9.9, 10.0, 12.5];
/// assert_eq!(schedlab_stats::outliers(&times), vec![5]);
/// ```
pub fn outliers(values: &[f64]) -> Vec<usize> {
    outliers_above(values, OUTLIER_THRESHOLD)
}

/// Indices of the values whose modified z-score is greater than `threshold` in magnitude; none
/// among fewer than [`MIN_OUTLIER_N`] values.
pub fn outliers_above(values: &[f64], threshold: f64) -> Vec<usize> {
    if values.len() < MIN_OUTLIER_N {
        return Vec::new();
    }
    modified_z_scores(values)
        .iter()
        .enumerate()
        .filter(|(_, z)| z.abs() > threshold)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_known_answer() {
        // median 3, deviations 2 1 0 1 7 → MAD 1.
        let z = modified_z_scores(&[1.0, 2.0, 3.0, 4.0, 10.0]);
        let expect = [-1.349, -0.6745, 0.0, 0.6745, 4.7215];
        for (a, b) in z.iter().zip(expect) {
            assert!((a - b).abs() < 1e-9, "{z:?}");
        }
        assert_eq!(outliers(&[1.0, 2.0, 3.0, 4.0, 10.0]), vec![4]);
    }

    #[test]
    fn flags_far_values_only() {
        assert!(outliers(&[]).is_empty());
        assert!(outliers(&[50.0]).is_empty());
        assert!(outliers(&[1000.0, 0.0]).is_empty());
        assert!(outliers(&[-0.3, 0.0, 0.3]).is_empty());
        // median 0.15, MAD 0.3 → 5.0 scores 0.6745·4.85/0.3 = 10.9, but among 4 values
        // nothing is judged; a fifth value makes the same one an outlier.
        let four = [-0.3, 0.0, 0.3, 5.0];
        assert!(modified_z_scores(&four)[3] > 10.0);
        assert!(outliers(&four).is_empty());
        assert_eq!(outliers(&[-0.3, 0.0, 0.3, 5.0, 0.1]), vec![3]);
        // Both directions.
        let v = [20.0, 20.4, 19.8, 20.1, 19.9, 20.2, 31.0, 20.0, 9.0, 20.3];
        assert_eq!(outliers(&v), vec![6, 8]);
        // Roughly normal data (mean 0, sd 1): nothing flagged.
        let normal = [
            0.12, -1.31, 0.84, 1.67, -0.45, -0.02, 0.59, -2.05, 1.1, -0.77,
        ];
        assert!(outliers(&normal).is_empty());
    }

    #[test]
    fn threshold_is_strict_and_adjustable() {
        // median 3, MAD 1: 8.189 scores 0.6745·5.189 = 3.4999..., 8.19 scores 3.50066.
        assert!(outliers(&[1.0, 2.0, 3.0, 4.0, 8.189]).is_empty());
        assert_eq!(outliers(&[1.0, 2.0, 3.0, 4.0, 8.19]), vec![4]);
        // hyperfine's threshold flags only the far one.
        // median 5, MAD 2: 20 scores 5.06, 60 scores 18.5.
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 20.0, 60.0];
        assert_eq!(outliers(&v), vec![7, 8]);
        assert_eq!(outliers_above(&v, HYPERFINE_THRESHOLD), vec![8]);
    }

    #[test]
    fn scale_free() {
        let v = [10.0, 10.4, 9.8, 10.1, 9.9, 10.2, 16.0, 10.0];
        let w: Vec<f64> = v.iter().map(|x| x * 1000.0 + 7.0).collect();
        assert_eq!(outliers(&v), vec![6]);
        assert_eq!(outliers(&w), outliers(&v));
    }

    #[test]
    fn zero_mad_falls_back_to_mean_absolute_deviation() {
        // All equal: nothing is an outlier, scores are 0.
        assert_eq!(modified_z_scores(&[5.0; 4]), vec![0.0; 4]);
        assert!(outliers(&[5.0; 4]).is_empty());
        // One odd value among 7 equal ones: MAD 0, mean AD 90/8, score 90/(1.2533·11.25) = 6.4.
        let mut v = vec![10.0; 7];
        v.push(100.0);
        let z = modified_z_scores(&v);
        assert!((z[7] - 8.0 / 1.253_314).abs() < 1e-9, "{z:?}");
        assert_eq!(outliers(&v), vec![7]);
        // Two among 9: score 9/(2·1.2533) = 3.59, both flagged.
        v.push(100.0);
        assert_eq!(outliers(&v), vec![7, 8]);
        // The n > 4.39·k rule: one odd value among 5 is flagged — however far it is (among 3
        // or 4 nothing is judged at all).
        assert!(outliers(&[1.0, 1.0, 100.0]).is_empty());
        assert!(outliers(&[1.0, 1.0, 1.0, 1e9]).is_empty());
        assert!(outliers_above(&[1.0, 1.0, 1.0, 1e9], 0.1).is_empty());
        assert_eq!(outliers(&[7.0, 7.0, 7.0, 7.0, 7.001]), vec![4]);
    }
}
