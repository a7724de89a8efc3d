//! The paper's theory made measurable: μ, the Theorem 1 bound, reward precision A, and the
//! Theorem 2 imbalance indicator.

use crate::reward::StepScore;
use serde::{Deserialize, Serialize};

/// Counts of labelled judge verdicts from which `p₊`, `p₋` and `μ = p₊ + p₋` are estimated.
///
/// A verdict is *labelled positive* when it judged a step that is good by the label in use
/// (a step of a successful trajectory, or a step the oracle says made progress) and *labelled
/// negative* otherwise. Unparsed verdicts count in the totals and never as a hit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibration {
    /// Verdicts on positively labelled steps.
    pub pos_total: u64,
    /// Of those, verdicts `+1`.
    pub pos_plus: u64,
    /// Verdicts on negatively labelled steps.
    pub neg_total: u64,
    /// Of those, verdicts `−1`.
    pub neg_minus: u64,
}

impl Calibration {
    /// Records one verdict on a step whose label is `positive`.
    pub fn observe(&mut self, positive: bool, score: StepScore) {
        if positive {
            self.pos_total += 1;
            self.pos_plus += (score == StepScore::Positive) as u64;
        } else {
            self.neg_total += 1;
            self.neg_minus += (score == StepScore::Negative) as u64;
        }
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, other: &Calibration) {
        self.pos_total += other.pos_total;
        self.pos_plus += other.pos_plus;
        self.neg_total += other.neg_total;
        self.neg_minus += other.neg_minus;
    }

    /// `p₊ = P(S = +1 | positive step)`; `None` without positive steps.
    pub fn p_plus(&self) -> Option<f64> {
        (self.pos_total > 0).then(|| self.pos_plus as f64 / self.pos_total as f64)
    }

    /// `p₋ = P(S = −1 | negative step)`; `None` without negative steps.
    pub fn p_minus(&self) -> Option<f64> {
        (self.neg_total > 0).then(|| self.neg_minus as f64 / self.neg_total as f64)
    }

    /// `μ = p₊ + p₋`; `None` unless both kinds of steps were seen.
    pub fn mu(&self) -> Option<f64> {
        Some(self.p_plus()? + self.p_minus()?)
    }
}

/// Theorem 1's lower bound on reward precision with m judge samples per step:
///
/// ```text
/// A ≥ 1 − exp(−m·(μ − 1)² / 4)
/// ```
///
/// Only meaningful for μ > 1; `None` otherwise.
pub fn theorem1_lower_bound(mu: f64, judge_samples: usize) -> Option<f64> {
    (mu > 1.0).then(|| 1.0 - (-(judge_samples as f64) * (mu - 1.0).powi(2) / 4.0).exp())
}

/// Reward precision measured from data:
///
/// ```text
/// A = P(S̄⁺ > S̄⁻)
/// ```
///
/// over all pairs of a step of a positive trajectory (mean score `S̄⁺`) and a step of a negative
/// one (`S̄⁻`). Ties count as failures (the inequality is strict); their share is reported too.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// Share of pairs with `S̄⁺ > S̄⁻`.
    pub precision: f64,
    /// Share of pairs with `S̄⁺ = S̄⁻`.
    pub ties: f64,
    /// Number of pairs.
    pub pairs: u64,
}

/// [`Precision`] from the mean scores of positive and negative steps, in O(n log n).
/// `None` if either side is empty.
pub fn empirical_precision(positive: &[f64], negative: &[f64]) -> Option<Precision> {
    if positive.is_empty() || negative.is_empty() {
        return None;
    }
    let mut neg = negative.to_vec();
    neg.sort_by(f64::total_cmp);
    let (mut greater, mut ties) = (0u64, 0u64);
    for &p in positive {
        let below = neg.partition_point(|&n| n < p);
        let not_above = neg.partition_point(|&n| n <= p);
        greater += below as u64;
        ties += (not_above - below) as u64;
    }
    let pairs = positive.len() as u64 * negative.len() as u64;
    Some(Precision {
        precision: greater as f64 / pairs as f64,
        ties: ties as f64 / pairs as f64,
        pairs,
    })
}

/// The probabilities `P(X = i)` of `X ~ Bin(m, p)`, walked one `i` at a time upwards
/// (`i = 0, 1, …, m`) or downwards (`i = m, m − 1, …, 0`) in log space: O(1) memory, no
/// underflow of `(1 − p)^m` for large m.
struct BinomialWalk {
    m: usize,
    i: usize,
    up: bool,
    log_pmf: f64,
    log_odds: f64,
    degenerate: Option<usize>,
}

impl BinomialWalk {
    fn new(m: usize, p: f64, up: bool) -> BinomialWalk {
        let degenerate = if p <= 0.0 {
            Some(0)
        } else if p >= 1.0 {
            Some(m)
        } else {
            None
        };
        let (start, log_pmf, log_odds) = if up {
            (0, m as f64 * (1.0 - p).ln(), (p / (1.0 - p)).ln())
        } else {
            (m, m as f64 * p.ln(), ((1.0 - p) / p).ln())
        };
        BinomialWalk {
            m,
            i: start,
            up,
            log_pmf,
            log_odds,
            degenerate,
        }
    }

    /// `P(X = i)` at the current `i`, then one step on.
    fn next_prob(&mut self) -> f64 {
        let (m, i) = (self.m, self.i);
        let prob = match self.degenerate {
            Some(d) => f64::from(u8::from(i == d)),
            None => self.log_pmf.exp(),
        };
        if self.up && i < m {
            self.log_pmf += ((m - i) as f64 / (i + 1) as f64).ln() + self.log_odds;
            self.i += 1;
        } else if !self.up && i > 0 {
            self.log_pmf += (i as f64 / (m - i + 1) as f64).ln() + self.log_odds;
            self.i -= 1;
        }
        prob
    }
}

/// The exact precision A of an idealised judge with independent verdicts and the given `p₊`,
/// `p₋`, for m samples per step (no unparsed verdicts).
///
/// With K ~ Bin(m, p₊) the `+1`s on a positive step and L ~ Bin(m, p₋) the `−1`s on a negative
/// step, `S̄⁺ > S̄⁻ ⇔ (2K − m) > (m − 2L) ⇔ K + L > m`, so `A = P(K + L > m)`.
/// It tends to 1 as m → ∞ iff μ = p₊ + p₋ > 1 (Theorem 1).
pub fn ideal_judge_precision(p_plus: f64, p_minus: f64, judge_samples: usize) -> f64 {
    // A = Σ_i P(K = i)·P(L ≥ m − i + 1), in O(m) time and O(1) memory
    let m = judge_samples;
    let mut k = BinomialWalk::new(m, p_plus, true);
    let mut l = BinomialWalk::new(m, p_minus, false);
    let mut tail = 0.0; // P(L ≥ m − i + 1)
    let mut a = 0.0;
    for _ in 0..=m {
        a += k.next_prob() * tail;
        tail += l.next_prob(); // now P(L ≥ m − i)
    }
    a.min(1.0)
}

/// Theorem 2's imbalance indicator for one task: the share of successful rollouts.
/// When it approaches 0 or 1 one side of the reward model's objective is barely sampled.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Imbalance {
    /// Share of successful rollouts.
    pub success_share: f64,
    /// `success_share < margin` or `success_share > 1 − margin`.
    pub flagged: bool,
}

/// Default margin of the imbalance flag: with 8 rollouts, 0/8 and 8/8 are flagged.
pub const IMBALANCE_MARGIN: f64 = 0.1;

/// [`Imbalance`] of a task with `successes` out of `rollouts`; `None` for no rollouts.
pub fn imbalance(successes: usize, rollouts: usize, margin: f64) -> Option<Imbalance> {
    if rollouts == 0 {
        return None;
    }
    let s = successes as f64 / rollouts as f64;
    Some(Imbalance {
        success_share: s,
        flagged: s < margin || s > 1.0 - margin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepScore::{Negative as N, Positive as P, Unparsed as U};

    #[test]
    fn calibration_counts() {
        let mut c = Calibration::default();
        for s in [P, P, N, U] {
            c.observe(true, s);
        }
        for s in [N, P] {
            c.observe(false, s);
        }
        assert_eq!(c.p_plus(), Some(0.5));
        assert_eq!(c.p_minus(), Some(0.5));
        assert_eq!(c.mu(), Some(1.0));
        assert_eq!(Calibration::default().mu(), None);
        let mut d = c;
        d.merge(&c);
        assert_eq!(d.pos_total, 8);
    }

    #[test]
    fn bound_values() {
        assert_eq!(theorem1_lower_bound(1.0, 3), None);
        assert_eq!(theorem1_lower_bound(0.7, 3), None);
        // μ = 1.4, m = 3: 1 - exp(-3·0.16/4) = 1 - exp(-0.12)
        let b = theorem1_lower_bound(1.4, 3).unwrap();
        assert!((b - (1.0 - (-0.12f64).exp())).abs() < 1e-12);
        assert!((theorem1_lower_bound(2.0, 4).unwrap() - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
    }

    #[test]
    fn precision_hand_computed() {
        let p = empirical_precision(&[1.0, 0.0], &[0.0, -1.0]).unwrap();
        // pairs: (1,0)>, (1,-1)>, (0,0)=, (0,-1)> -> 3/4, ties 1/4
        assert_eq!(p.precision, 0.75);
        assert_eq!(p.ties, 0.25);
        assert_eq!(p.pairs, 4);
        assert!(empirical_precision(&[], &[1.0]).is_none());
    }

    #[test]
    fn ideal_precision_hand_computed() {
        // m = 1: A = P(K + L > 1) = p₊·p₋
        assert!((ideal_judge_precision(0.7, 0.6, 1) - 0.42).abs() < 1e-12);
        // perfect judge
        assert!((ideal_judge_precision(1.0, 1.0, 3) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn ideal_precision_respects_theorem1_bound() {
        for &pp in &[0.55, 0.7, 0.85, 0.95] {
            for &pm in &[0.5, 0.6, 0.8, 0.95] {
                for m in 1..=25 {
                    if let Some(b) = theorem1_lower_bound(pp + pm, m) {
                        assert!(
                            ideal_judge_precision(pp, pm, m) >= b - 1e-12,
                            "{pp} {pm} {m}"
                        );
                    }
                }
            }
        }
    }

    /// The pair sum over two pmfs built by convolution: the O(m²) definition.
    fn precision_by_convolution(pp: f64, pm: f64, m: usize) -> f64 {
        let pmf = |p: f64| {
            let mut pmf = vec![1.0];
            for _ in 0..m {
                let mut next = vec![0.0; pmf.len() + 1];
                for (k, &q) in pmf.iter().enumerate() {
                    next[k] += q * (1.0 - p);
                    next[k + 1] += q * p;
                }
                pmf = next;
            }
            pmf
        };
        let (k, l) = (pmf(pp), pmf(pm));
        let mut a = 0.0;
        for (i, &x) in k.iter().enumerate() {
            for (j, &y) in l.iter().enumerate() {
                if i + j > m {
                    a += x * y;
                }
            }
        }
        a
    }

    #[test]
    fn linear_precision_equals_the_definition() {
        for &pp in &[0.0, 0.3, 0.55, 0.9, 1.0] {
            for &pm in &[0.0, 0.45, 0.7, 1.0] {
                for m in [1, 2, 3, 8, 33, 200] {
                    let (a, b) = (
                        ideal_judge_precision(pp, pm, m),
                        precision_by_convolution(pp, pm, m),
                    );
                    assert!((a - b).abs() < 1e-9, "{pp} {pm} {m}: {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn precision_for_huge_m_is_linear_and_tends_to_the_theorem() {
        // 10⁷ samples: a quadratic sum would take hours
        let a = ideal_judge_precision(0.55, 0.5, 10_000_000);
        assert!(a > 0.999_999, "{a}");
        let a = ideal_judge_precision(0.5, 0.45, 10_000_000);
        assert!(a < 1e-6, "{a}");
    }

    #[test]
    fn imbalance_flags_extremes() {
        assert!(imbalance(0, 8, IMBALANCE_MARGIN).unwrap().flagged);
        assert!(imbalance(8, 8, IMBALANCE_MARGIN).unwrap().flagged);
        assert!(!imbalance(1, 8, IMBALANCE_MARGIN).unwrap().flagged);
        assert!(!imbalance(4, 8, IMBALANCE_MARGIN).unwrap().flagged);
        assert_eq!(imbalance(3, 4, 0.1).unwrap().success_share, 0.75);
        assert!(imbalance(0, 0, 0.1).is_none());
    }
}
