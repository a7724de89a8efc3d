//! The integrated step reward for the policy (paper §3.2).

use serde::{Deserialize, Serialize};

/// Trajectory outcome `O ∈ {−1, +1}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The task was solved: `O = +1`.
    Success,
    /// The task was not solved: `O = −1`.
    Failure,
}

impl Outcome {
    /// `+1.0` for success, `−1.0` for failure.
    pub fn value(self) -> f64 {
        match self {
            Outcome::Success => 1.0,
            Outcome::Failure => -1.0,
        }
    }

    /// `Success` when `won`.
    pub fn from_won(won: bool) -> Self {
        if won {
            Outcome::Success
        } else {
            Outcome::Failure
        }
    }

    /// Whether this is a success.
    pub fn is_success(self) -> bool {
        self == Outcome::Success
    }
}

/// One judge verdict `S_ij ∈ {−1, 0, +1}`: `\boxed{1}`, `\boxed{-1}`, or unparseable (0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepScore {
    /// `\boxed{1}`: the step is good.
    Positive,
    /// `\boxed{-1}`: the step is bad.
    Negative,
    /// The verdict could not be parsed; it scores 0.
    Unparsed,
}

impl StepScore {
    /// `+1.0`, `−1.0` or `0.0`.
    pub fn value(self) -> f64 {
        match self {
            StepScore::Positive => 1.0,
            StepScore::Negative => -1.0,
            StepScore::Unparsed => 0.0,
        }
    }

    /// Whether the verdict was parsed.
    pub fn is_parsed(self) -> bool {
        self != StepScore::Unparsed
    }
}

/// The integrated step reward
///
/// ```text
/// R_i = O + λ · (1/m) · Σ_j S_ij
/// ```
///
/// with `O ∈ {−1, +1}` the trajectory outcome, `S_ij ∈ {−1, 0, +1}` the m judge verdicts on
/// step i and `λ ≥ 0` (default 1). With λ = 0 this is outcome-only GRPO. With no verdicts
/// (m = 0) the step term is 0.
///
/// Worked example (paper, ALFWorld, m = 3): O = +1 and three `+1` verdicts give `R = 2`;
/// O = −1 and three `+1` verdicts give `R = 0`.
pub fn step_reward(outcome: Outcome, step_scores: &[StepScore], lambda: f64) -> f64 {
    step_reward_value(outcome.value(), step_scores, lambda)
}

/// [`step_reward`] with the outcome as a number: ±1 for a trajectory's success, or a graded
/// outcome such as a program's share of passed ground-truth tests.
pub fn step_reward_value(outcome: f64, step_scores: &[StepScore], lambda: f64) -> f64 {
    let m = step_scores.len();
    let step_term = if m == 0 {
        0.0
    } else {
        step_scores.iter().map(|s| s.value()).sum::<f64>() / m as f64
    };
    outcome + lambda * step_term
}

/// The step signal alone, `mean_j S_ij` (0 for no verdicts): the policy's reward in the paper's
/// reward-only run (§3.2.6), which leaves the outcome out.
pub fn step_signal(step_scores: &[StepScore]) -> f64 {
    step_reward_value(0.0, step_scores, 1.0)
}

/// [`step_reward`] for every step of one trajectory: `step_scores[i]` holds the m verdicts of
/// step i.
pub fn step_rewards(outcome: Outcome, step_scores: &[Vec<StepScore>], lambda: f64) -> Vec<f64> {
    step_scores
        .iter()
        .map(|s| step_reward(outcome, s, lambda))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepScore::{Negative as N, Positive as P, Unparsed as U};

    #[test]
    fn the_step_signal_is_the_mean_verdict_without_the_outcome() {
        assert!(close(step_signal(&[P, P, N]), 1.0 / 3.0));
        assert!(close(step_signal(&[N, N]), -1.0));
        assert!(close(step_signal(&[]), 0.0));
        assert!(close(
            step_signal(&[U, P]),
            step_reward_value(0.0, &[U, P], 1.0)
        ));
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn paper_worked_example() {
        // AlfWorld example, T = 8, m = 3.
        assert!(close(step_reward(Outcome::Success, &[P, P, P], 1.0), 2.0));
        assert!(close(step_reward(Outcome::Failure, &[P, P, P], 1.0), 0.0));
        assert!(close(
            step_reward(Outcome::Success, &[P, N, P], 1.0),
            4.0 / 3.0
        ));
        assert!(close(
            step_reward(Outcome::Success, &[N, P, N], 1.0),
            2.0 / 3.0
        ));
        assert!(close(
            step_reward(Outcome::Failure, &[P, P, N], 1.0),
            -2.0 / 3.0
        ));
        assert!(close(
            step_reward(Outcome::Failure, &[P, N, P], 1.0),
            -2.0 / 3.0
        ));
        // −0.33 needs an unparsed verdict: −1 + (1 + 1 + 0)/3
        assert!(close(
            step_reward(Outcome::Failure, &[P, P, U], 1.0),
            -1.0 / 3.0
        ));
        assert!(close(step_reward(Outcome::Failure, &[N, N, N], 1.0), -2.0));
    }

    #[test]
    fn unparsed_counts_as_zero_but_in_the_mean() {
        // (1 + 0 + 1) / 3 = 2/3
        assert!(close(
            step_reward(Outcome::Success, &[P, U, P], 1.0),
            1.0 + 2.0 / 3.0
        ));
        assert!(close(step_reward(Outcome::Failure, &[U, U, U], 1.0), -1.0));
    }

    #[test]
    fn lambda_scales_step_term_and_zero_is_grpo() {
        assert!(close(step_reward(Outcome::Success, &[N, N, N], 0.0), 1.0));
        assert!(close(step_reward(Outcome::Failure, &[P, P, P], 0.0), -1.0));
        assert!(close(
            step_reward(Outcome::Success, &[P, N, N], 0.5),
            1.0 - 0.5 / 3.0
        ));
        assert!(close(step_reward(Outcome::Success, &[], 1.0), 1.0));
    }

    #[test]
    fn per_trajectory() {
        let r = step_rewards(Outcome::Success, &[vec![P, P, P], vec![N, N, N]], 1.0);
        assert_eq!(r.len(), 2);
        assert!(close(r[0], 2.0) && close(r[1], 0.0));
    }
}
