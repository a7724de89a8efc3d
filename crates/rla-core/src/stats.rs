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

/// A paired comparison of two policies on the same tasks: the mean over tasks of each task's
/// difference (`a − b`), its standard error, and how many tasks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Mean difference.
    pub mean: f64,
    /// Its standard error: the sample standard deviation of the differences over `√n`.
    pub std_error: f64,
    /// Tasks compared.
    pub n: usize,
}

impl Paired {
    /// Whether the difference lies beyond `k` standard errors of zero (a zero standard error
    /// with a non-zero mean counts as beyond).
    pub fn beyond(&self, k: f64) -> bool {
        self.mean.abs() > k * self.std_error
    }
}

/// The paired difference of two policies' per-task scores `a[t]` and `b[t]` (each a task's
/// mean over its episodes): `None` for no task or lists of different lengths.
pub fn paired_difference(a: &[f64], b: &[f64]) -> Option<Paired> {
    if a.len() != b.len() {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let (mean, std_error) = mean_std_error(&d)?;
    Some(Paired {
        mean,
        std_error,
        n: d.len(),
    })
}

#[cfg(test)]
mod difference_tests {
    use super::*;

    #[test]
    fn paired_differences_and_their_standard_error() {
        // per-task differences [1, 0, 0.5, -0.5]: mean 0.25, sample variance 0.41667, so a
        // standard error of sqrt(0.41667 / 4)
        let a = [1.0, 0.5, 1.0, 0.0];
        let b = [0.0, 0.5, 0.5, 0.5];
        let p = paired_difference(&a, &b).unwrap();
        assert!((p.mean - 0.25).abs() < 1e-12);
        assert!(
            (p.std_error - (0.625f64 / 1.5 / 4.0).sqrt()).abs() < 1e-12,
            "{p:?}"
        );
        assert_eq!(p.n, 4);
        assert!(!p.beyond(2.0));
        // identical policies: 0.0 ± 0.0, never beyond
        let same = paired_difference(&a, &a).unwrap();
        assert_eq!((same.mean, same.std_error), (0.0, 0.0));
        assert!(!same.beyond(2.0));
        // a constant gain is beyond any multiple of a zero standard error
        assert!(paired_difference(&[1.0, 1.0], &[0.0, 0.0])
            .unwrap()
            .beyond(2.0));
        assert_eq!(paired_difference(&[1.0], &[]), None);
        assert_eq!(paired_difference(&[], &[]), None);
    }

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
