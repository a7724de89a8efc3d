//! Small statistics shared by the rules: mean, population standard deviation, z-scores, and
//! the standard errors the reports print.

/// Standard deviations at or below this are treated as zero: the group carries no signal.
pub const STD_EPS: f64 = 1e-8;

/// Arithmetic mean; `None` for an empty slice.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Population standard deviation `sqrt((1/n)·Σ (x − x̄)²)`; `None` for an empty slice.
pub fn population_std(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64;
    Some(var.sqrt())
}

/// Z-scores `(x − x̄) / σ` with the population σ.
///
/// Returns `None` when the slice is empty or `σ ≤ 1e-8` ([`STD_EPS`]): such a group has no
/// signal and its samples are dropped from training, as in the reference implementation.
pub fn standardize(xs: &[f64]) -> Option<Vec<f64>> {
    let m = mean(xs)?;
    let s = population_std(xs)?;
    if s <= STD_EPS {
        return None;
    }
    Some(xs.iter().map(|x| (x - m) / s).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        let z = standardize(&[1.0, 3.0]).unwrap();
        assert_eq!(z, vec![-1.0, 1.0]);
        let z = standardize(&[0.0, 0.0, 3.0]).unwrap();
        // mean 1, var = (1+1+4)/3 = 2
        let s = 2f64.sqrt();
        assert!((z[0] + 1.0 / s).abs() < 1e-12);
        assert!((z[2] - 2.0 / s).abs() < 1e-12);
        assert!(standardize(&[2.0, 2.0, 2.0]).is_none());
        assert!(standardize(&[]).is_none());
        assert!(standardize(&[5.0]).is_none());
    }
}

/// The standard error of the difference `p1 − p0` of two success rates, each measured on `n`
/// tasks: `sqrt(p0(1−p0)/n + p1(1−p1)/n)` (the two treated as independent samples, which
/// overstates the noise of a paired comparison on the same tasks, so a change beyond two of
/// these is not luck of the split). `None` when `n = 0`.
pub fn difference_std_error(p0: f64, p1: f64, n: usize) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let v = |p: f64| p.clamp(0.0, 1.0) * (1.0 - p.clamp(0.0, 1.0)) / n as f64;
    Some((v(p0) + v(p1)).sqrt())
}

/// The mean of `xs` and its standard error `s/√n`, `s` the sample standard deviation
/// (`n − 1` in the denominator; 0 for one value). `None` for an empty slice.
pub fn mean_std_error(xs: &[f64]) -> Option<(f64, f64)> {
    let m = mean(xs)?;
    let n = xs.len();
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n.max(2) - 1) as f64;
    Some((m, (var / n as f64).sqrt()))
}

#[cfg(test)]
mod difference_tests {
    use super::*;

    #[test]
    fn mean_and_its_standard_error() {
        // [0, 1, 1, 0]: mean 0.5, sample variance 1/3, standard error sqrt(1/12)
        let (m, se) = mean_std_error(&[0.0, 1.0, 1.0, 0.0]).unwrap();
        assert_eq!(m, 0.5);
        assert!((se - (1.0f64 / 12.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_std_error(&[0.25]), Some((0.25, 0.0)));
        assert_eq!(mean_std_error(&[]), None);
    }

    #[test]
    fn difference_std_error_of_two_rates() {
        // p = 0.5 on 100 tasks: each has variance 0.0025, the difference 0.005
        let se = difference_std_error(0.5, 0.5, 100).unwrap();
        assert!((se - 0.005f64.sqrt()).abs() < 1e-12);
        assert_eq!(difference_std_error(0.0, 1.0, 10), Some(0.0));
        assert_eq!(difference_std_error(0.3, 0.4, 0), None);
        // more tasks, less noise
        assert!(difference_std_error(0.1, 0.3, 400) < difference_std_error(0.1, 0.3, 100));
    }
}
