//! The lab's statistics: quantiles, means, and the 95% interval of a mean of paired
//! differences across seeds.

/// The `q` quantile of `v` (nearest rank; sorts `v`). NaN for an empty slice.
pub fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i.min(v.len() - 1)]
}

/// The mean (NaN if empty).
pub fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { f64::NAN } else { s / n as f64 }
}

/// Two-sided 97.5% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// Student's t 97.5% quantile for `df` degrees of freedom: the table up to 30, then
/// the Cornish-Fisher expansion around the normal 1.96 (within 0.001 beyond 30).
pub fn t975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T975[df - 1],
        _ => {
            let (z, n) = (1.959_964f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * n) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// A mean with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The t-interval of the mean of `d` (paired differences, one per seed). Non-finite
/// differences are left out (a pair without a defined figure at that seed); fewer
/// than two finite ones give an unbounded interval, which decides nothing.
pub fn t_interval(d: &[f64]) -> Interval {
    let v: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    let m = mean(v.iter().copied());
    if v.len() < 2 {
        return Interval { mean: m, lo: f64::NEG_INFINITY, hi: f64::INFINITY };
    }
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    let half = t975(v.len() - 1) * (var / v.len() as f64).sqrt();
    Interval { mean: m, lo: m - half, hi: m + half }
}

/// Median, 90th percentile and worst (largest) of a figure over seeds, with the index
/// of the worst.
pub fn spread(v: &[f64]) -> (f64, f64, f64, usize) {
    let mut s = v.to_vec();
    let med = quantile(&mut s, 0.5);
    let p90 = quantile(&mut s, 0.9);
    let (worst_i, worst) = v.iter().copied().enumerate().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((0, f64::NAN));
    (med, p90, worst, worst_i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_of_known_differences() {
        // Mean 1, sample sd 1 (differences 0, 1, 2), n 3: half width 4.303/sqrt(3).
        let i = t_interval(&[0.0, 1.0, 2.0]);
        assert!((i.mean - 1.0).abs() < 1e-12);
        assert!((i.hi - 1.0 - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        assert!((t975(40) - 2.021).abs() < 0.002, "{}", t975(40));
        assert!((t975(120) - 1.980).abs() < 0.002, "{}", t975(120));
        // A single difference decides nothing.
        assert!(t_interval(&[1.0]).lo.is_infinite());
    }

    #[test]
    fn spread_names_the_worst_seed() {
        let (med, p90, worst, i) = spread(&[3.0, 1.0, 2.0, 9.0, 4.0]);
        assert_eq!((med, worst, i), (3.0, 9.0, 3));
        assert_eq!(p90, 9.0);
    }
}
