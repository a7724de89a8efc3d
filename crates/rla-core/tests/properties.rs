//! Property tests of the core rules.

use proptest::prelude::*;
use rla_core::adapt::{accept_rewrite, adaptation_direction, AdaptConfig, Direction};
use rla_core::advantage::policy_advantages;
use rla_core::consistency::consistency_advantages;
use rla_core::reward::{step_reward, Outcome, StepScore};
use rla_core::stats::{mean, population_std};
use rla_core::theory::theorem1_lower_bound;

fn score() -> impl Strategy<Value = StepScore> {
    prop_oneof![
        Just(StepScore::Positive),
        Just(StepScore::Negative),
        Just(StepScore::Unparsed)
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![Just(Outcome::Success), Just(Outcome::Failure)]
}

/// Rollouts of one task: each a list of steps, each step m verdicts, with an outcome.
fn task_rollouts() -> impl Strategy<Value = Vec<(Outcome, Vec<Vec<StepScore>>)>> {
    (1usize..4).prop_flat_map(|m| {
        prop::collection::vec(
            (
                outcome(),
                prop::collection::vec(prop::collection::vec(score(), m), 0..6),
            ),
            0..9,
        )
    })
}

fn check_group(values: &[Option<f64>]) -> Result<(), TestCaseError> {
    let kept: Vec<f64> = values.iter().flatten().copied().collect();
    if kept.is_empty() {
        return Ok(());
    }
    prop_assert_eq!(
        kept.len(),
        values.len(),
        "a group is either all kept or all dropped"
    );
    prop_assert!(mean(&kept).unwrap().abs() < 1e-9);
    prop_assert!((population_std(&kept).unwrap() - 1.0).abs() < 1e-9);
    Ok(())
}

proptest! {
    #[test]
    fn policy_advantages_are_standardised_per_step(rollouts in task_rollouts(), lambda in 0.0f64..3.0) {
        let rewards: Vec<Vec<f64>> = rollouts
            .iter()
            .map(|(o, steps)| steps.iter().map(|s| step_reward(*o, s, lambda)).collect())
            .collect();
        let adv = policy_advantages(&rewards);
        let longest = rewards.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..longest {
            let group: Vec<Option<f64>> = adv.iter().filter(|a| a.len() > i).map(|a| a[i]).collect();
            check_group(&group)?;
        }
    }

    #[test]
    fn consistency_advantages_are_standardised(o in outcome(), scores in prop::collection::vec(score(), 1..8), lambda in 0.0f64..3.0) {
        let r = step_reward(o, &scores, lambda);
        let a = consistency_advantages(r, &scores);
        prop_assert_eq!(a.len(), scores.len());
        // Kept samples are those with a nonzero z-score; with the zeros restored the group has
        // mean 0 and variance 1 (zeros shift neither).
        if a.iter().any(Option::is_some) {
            let full: Vec<f64> = a.iter().map(|x| x.unwrap_or(0.0)).collect();
            prop_assert!(mean(&full).unwrap().abs() < 1e-9);
            prop_assert!((population_std(&full).unwrap() - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn outcome_anchor(m in 1usize..10) {
        let all_pos = vec![StepScore::Positive; m];
        let all_neg = vec![StepScore::Negative; m];
        prop_assert!(step_reward(Outcome::Failure, &all_pos, 1.0).abs() < 1e-12);
        prop_assert!(step_reward(Outcome::Success, &all_neg, 1.0).abs() < 1e-12);
    }

    #[test]
    fn step_reward_bounds(o in outcome(), scores in prop::collection::vec(score(), 1..8), lambda in 0.0f64..3.0) {
        let r = step_reward(o, &scores, lambda);
        prop_assert!(r >= o.value() - lambda - 1e-12 && r <= o.value() + lambda + 1e-12);
    }

    #[test]
    fn acceptance_never_overshoots(acc in 0.0f64..=1.0, acc_new in 0.0f64..=1.0, low in 0.0f64..0.5, width in 0.05f64..0.5) {
        let cfg = AdaptConfig { acc_low: low, acc_high: (low + width).min(1.0) };
        let dir = adaptation_direction(acc, &cfg);
        if accept_rewrite(dir, acc, acc_new, &cfg) {
            prop_assert!(acc_new > 0.0);
            match dir {
                Direction::Harder => prop_assert!(acc_new >= cfg.acc_low && acc_new < acc),
                Direction::Easier => prop_assert!(acc_new <= cfg.acc_high && acc_new > acc),
                Direction::Keep => prop_assert!(false, "keep never accepts"),
            }
        }
    }

    #[test]
    fn theorem1_bound_is_monotone_in_m(mu in 1.0001f64..2.0, m in 1usize..200) {
        let a = theorem1_lower_bound(mu, m).unwrap();
        let b = theorem1_lower_bound(mu, m + 1).unwrap();
        prop_assert!(b > a || (b - a).abs() < 1e-15 && a > 1.0 - 1e-12);
        prop_assert!((0.0..=1.0).contains(&a));
    }
}
