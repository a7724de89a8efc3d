//! Small statistics shared by the rules: mean, population standard deviation, z-scores.

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
