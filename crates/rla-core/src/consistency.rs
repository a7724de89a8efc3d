//! The reward model's consistency reward (paper §3.3).

use crate::reward::StepScore;
use crate::stats::standardize;

/// Raw reward of a judge sample whose verdict could not be parsed, so that the judge learns to
/// answer in format.
pub const UNPARSED_CONSISTENCY_REWARD: f64 = -2.0;

/// Raw consistency reward of one judge sample:
///
/// ```text
/// raw_ijl = R_i · S_ijl          (−2 when S_ijl could not be parsed)
/// ```
///
/// `step_reward` is the integrated reward `R_i` of the step the sample judged.
pub fn consistency_raw(step_reward: f64, score: StepScore) -> f64 {
    match score {
        StepScore::Unparsed => UNPARSED_CONSISTENCY_REWARD,
        s => step_reward * s.value(),
    }
}

/// Advantages of the m judge samples of one (rollout, step):
///
/// ```text
/// A_l = (raw_l − mean raw) / std raw     over the m samples of the same (rollout, step)
/// ```
///
/// A group whose standard deviation is ≤ 1e-8 is skipped (all `None`), and so is any sample
/// whose standardised value is exactly 0: it carries no gradient.
pub fn consistency_advantages(step_reward: f64, scores: &[StepScore]) -> Vec<Option<f64>> {
    let raw: Vec<f64> = scores
        .iter()
        .map(|&s| consistency_raw(step_reward, s))
        .collect();
    match standardize(&raw) {
        None => vec![None; scores.len()],
        Some(z) => z
            .into_iter()
            .map(|a| if a == 0.0 { None } else { Some(a) })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reward::{step_reward, Outcome};
    use StepScore::{Negative as N, Positive as P, Unparsed as U};

    #[test]
    fn raw_values() {
        assert_eq!(consistency_raw(2.0, P), 2.0);
        assert_eq!(consistency_raw(2.0, N), -2.0);
        assert_eq!(consistency_raw(-1.0 / 3.0, N), 1.0 / 3.0);
        assert_eq!(consistency_raw(0.0, P), 0.0);
        assert_eq!(consistency_raw(1.5, U), -2.0);
    }

    #[test]
    fn unanimous_verdicts_are_skipped() {
        let r = step_reward(Outcome::Success, &[P, P, P], 1.0);
        assert_eq!(
            consistency_advantages(r, &[P, P, P]),
            vec![None, None, None]
        );
    }

    #[test]
    fn majority_agreeing_with_outcome_is_rewarded() {
        // O = +1, verdicts [+1, +1, -1]: R = 1 + 1/3 = 4/3; raw = [4/3, 4/3, -4/3]
        let scores = [P, P, N];
        let r = step_reward(Outcome::Success, &scores, 1.0);
        let a = consistency_advantages(r, &scores);
        // mean 4/9, deviations 8/9, 8/9, -16/9; var = (64+64+256)/81/3 = 128/81 -> std = 8√2/9
        let s = 8.0 * 2f64.sqrt() / 9.0;
        assert!((a[0].unwrap() - (8.0 / 9.0) / s).abs() < 1e-12);
        assert!((a[2].unwrap() + (16.0 / 9.0) / s).abs() < 1e-12);
    }

    #[test]
    fn zero_step_reward_with_unparsed_sample() {
        // R = 0: parsed samples get 0, the unparsed one -2; mean -2/3
        let a = consistency_advantages(0.0, &[P, N, U]);
        assert!(a[0].unwrap() > 0.0 && a[1].unwrap() > 0.0 && a[2].unwrap() < 0.0);
        assert_eq!(a[0], a[1]);
    }

    #[test]
    fn exact_zero_standardised_sample_is_skipped() {
        // R = 2/3, verdicts [+1, -1, unparsed]: raw = [2/3, -2/3, -2], mean -2/3, so the
        // second sample standardises to exactly 0 and is skipped; the others train.
        let a = consistency_advantages(2.0 / 3.0, &[P, N, U]);
        assert!(a[0].unwrap() > 0.0);
        assert_eq!(a[1], None);
        assert!(a[2].unwrap() < 0.0);
    }
}
