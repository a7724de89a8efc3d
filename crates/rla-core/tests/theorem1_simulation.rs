//! Theorem 1's "if and only if", checked on simulated judges.
//!
//! A simulated judge says `+1` on a step of a successful trajectory with probability p₊ and `−1`
//! on a step of a failed one with probability p₋, independently for each of its m samples.
//! The empirical precision A (share of (positive step, negative step) pairs whose mean scores
//! are ordered correctly) must rise with m when μ = p₊ + p₋ > 1 and must not when μ < 1.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_core::theory::{empirical_precision, ideal_judge_precision, theorem1_lower_bound};

fn simulate(p_plus: f64, p_minus: f64, m: usize, steps: usize, seed: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut mean_score = |p_correct: f64, sign: f64| -> f64 {
        (0..m)
            .map(|_| {
                if rng.gen::<f64>() < p_correct {
                    sign
                } else {
                    -sign
                }
            })
            .sum::<f64>()
            / m as f64
    };
    let pos: Vec<f64> = (0..steps).map(|_| mean_score(p_plus, 1.0)).collect();
    let neg: Vec<f64> = (0..steps).map(|_| mean_score(p_minus, -1.0)).collect();
    empirical_precision(&pos, &neg).unwrap().precision
}

const MS: [usize; 5] = [1, 3, 9, 27, 81];

#[test]
fn precision_rises_with_m_when_mu_above_one() {
    for &(pp, pm) in &[(0.7, 0.6), (0.8, 0.45), (0.9, 0.9)] {
        let a: Vec<f64> = MS.iter().map(|&m| simulate(pp, pm, m, 2000, 7)).collect();
        for w in a.windows(2) {
            assert!(w[1] > w[0] - 0.01, "p+={pp} p-={pm}: {a:?}");
        }
        assert!(a[4] > a[0], "p+={pp} p-={pm}: {a:?}");
        assert!(a[4] > 0.9, "A should approach 1: {a:?}");
        for (&m, &emp) in MS.iter().zip(&a) {
            let exact = ideal_judge_precision(pp, pm, m);
            assert!(
                (emp - exact).abs() < 0.03,
                "m={m}: simulated {emp} vs exact {exact}"
            );
            assert!(emp >= theorem1_lower_bound(pp + pm, m).unwrap() - 0.03);
        }
    }
}

#[test]
fn precision_does_not_rise_when_mu_below_one() {
    for &(pp, pm) in &[(0.4, 0.4), (0.6, 0.3), (0.2, 0.7)] {
        let a: Vec<f64> = MS.iter().map(|&m| simulate(pp, pm, m, 2000, 11)).collect();
        // With m = 1 most pairs tie (the inequality is strict), so A can grow from m = 1 to 3;
        // from there on it falls, and it ends below where it started.
        for w in a[1..].windows(2) {
            assert!(w[1] <= w[0] + 0.01, "p+={pp} p-={pm}: {a:?}");
        }
        assert!(a[4] < a[0] && a[4] < 0.1, "A should fall toward 0: {a:?}");
        for (&m, &emp) in MS.iter().zip(&a) {
            assert!((emp - ideal_judge_precision(pp, pm, m)).abs() < 0.03);
        }
    }
}

#[test]
fn exact_precision_limits() {
    // μ > 1 → 1, μ < 1 → 0 as m grows.
    assert!(ideal_judge_precision(0.65, 0.55, 2001) > 0.99);
    assert!(ideal_judge_precision(0.45, 0.5, 2001) < 0.01);
}
