//! Credit by state (GiGPO, arXiv 2505.10978): the steps of a task's rollouts that start from the
//! same environment state — an *anchor state* — form a group, and within it each step's
//! discounted return from there is standardised. A step's advantage is the episode-level term
//! (the paper's advantage, z-scored per task and step index) plus this state-level term with a
//! weight.
//!
//! In a text world states recur exactly across a task's rollouts (the same start, the same
//! commands) and inside one (a loop), so the groups compare actions taken in one situation:
//! where step i of one rollout and step i of another are different situations, the step-index
//! groups compare unlike things, while an anchor group does not.

use crate::stats::standardize;
use std::collections::BTreeMap;

/// The discount γ of the returns an anchor group compares, unless a run sets its own.
pub const DEFAULT_GAMMA: f64 = 0.95;

/// The weight of the state-level term, unless a run sets its own (GiGPO's ω = 1).
pub const DEFAULT_WEIGHT: f64 = 1.0;

/// The discounted return from each step: `G_i = Σ_{t ≥ i} γ^{t−i} r_t`.
pub fn discounted_returns(rewards: &[f64], gamma: f64) -> Vec<f64> {
    let mut out = vec![0.0; rewards.len()];
    let mut acc = 0.0;
    for i in (0..rewards.len()).rev() {
        acc = rewards[i] + gamma * acc;
        out[i] = acc;
    }
    out
}

/// The state-level term of every step of every rollout of **one task**: the steps that start
/// from equal keys (`states[j][i]`, `None`: the step belongs to no group) form a group, and
/// within it the discounted returns of `rewards` (the immediate reward of each step) are
/// z-scored (population σ). A group of one step, or whose returns are all equal (σ ≤ 1e-8),
/// gives `None` to its members: it says nothing about which action was better there.
///
/// # Panics
/// Never: rollouts whose `states` row is shorter than their rewards leave the missing steps out
/// of every group.
pub fn state_advantages(
    rewards: &[Vec<f64>],
    states: &[Vec<Option<u64>>],
    gamma: f64,
) -> Vec<Vec<Option<f64>>> {
    let returns: Vec<Vec<f64>> = rewards
        .iter()
        .map(|r| discounted_returns(r, gamma))
        .collect();
    let mut groups: BTreeMap<u64, Vec<(usize, usize)>> = BTreeMap::new();
    for (j, row) in states.iter().enumerate() {
        for (i, s) in row
            .iter()
            .enumerate()
            .take(returns.get(j).map_or(0, Vec::len))
        {
            if let Some(key) = s {
                groups.entry(*key).or_default().push((j, i));
            }
        }
    }
    let mut out: Vec<Vec<Option<f64>>> = rewards.iter().map(|r| vec![None; r.len()]).collect();
    for members in groups.values() {
        if members.len() < 2 {
            continue;
        }
        let values: Vec<f64> = members.iter().map(|&(j, i)| returns[j][i]).collect();
        if let Some(z) = standardize(&values) {
            for (&(j, i), a) in members.iter().zip(z) {
                out[j][i] = Some(a);
            }
        }
    }
    out
}

/// A step's advantage under credit by state: the episode-level term `episode[j][i]` plus
/// `weight` times the state-level term ([`state_advantages`] of `rewards` over `states`). A step
/// with neither term has none (it does not train); a step with one of them takes that one.
pub fn anchor_advantages(
    episode: &[Vec<Option<f64>>],
    rewards: &[Vec<f64>],
    states: &[Vec<Option<u64>>],
    gamma: f64,
    weight: f64,
) -> Vec<Vec<Option<f64>>> {
    let state = state_advantages(rewards, states, gamma);
    episode
        .iter()
        .zip(&state)
        .map(|(e, s)| {
            e.iter()
                .enumerate()
                .map(|(i, &a)| match (a, s.get(i).copied().flatten()) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0.0) + weight * b.unwrap_or(0.0)),
                })
                .collect()
        })
        .collect()
}

/// The immediate rewards whose discounted returns an anchor group compares, from the paper's
/// integrated step rewards `R_i = O + λ·mean_j S_ij` of one rollout: the judge's part
/// `R_i − O` at every step and the outcome `O` once, at the last step. With λ = 0 the return
/// from step i is `γ^{T−1−i}·O`, GiGPO's own; with the judge, a step also earns its verdicts and
/// the ones after it, discounted.
pub fn immediate_rewards(step_rewards: &[f64], outcome: f64) -> Vec<f64> {
    let n = step_rewards.len();
    step_rewards
        .iter()
        .enumerate()
        .map(|(i, r)| r - outcome + if i + 1 == n { outcome } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn returns_are_discounted_from_each_step() {
        let g = discounted_returns(&[0.0, 0.0, 1.0], 0.5);
        assert_eq!(g, vec![0.25, 0.5, 1.0]);
        assert!(discounted_returns(&[], 0.9).is_empty());
    }

    #[test]
    fn immediate_rewards_put_the_outcome_at_the_end_once() {
        // R_i = O + λ·mean S with O = 1: judge parts 0.5, −0.5, 0
        assert_eq!(
            immediate_rewards(&[1.5, 0.5, 1.0], 1.0),
            vec![0.5, -0.5, 1.0]
        );
        // the outcome alone (λ = 0): only the last step earns it
        assert_eq!(immediate_rewards(&[-1.0, -1.0], -1.0), vec![0.0, -1.0]);
    }

    #[test]
    fn steps_from_one_state_are_compared_with_each_other_only() {
        // two rollouts from the start state s0: one goes to s1 and wins at once, the other goes
        // to s2, comes back to s0 (a loop), then to s1 and wins a step later
        let states = vec![
            vec![Some(0), Some(1)],
            vec![Some(0), Some(2), Some(0), Some(1)],
        ];
        let rewards = vec![vec![0.0, 1.0], vec![0.0, 0.0, 0.0, 1.0]];
        let gamma = 0.5;
        let a = state_advantages(&rewards, &states, gamma);
        // the group of s0 holds three steps with returns 0.5, 0.125, 0.5
        let v = [0.5, 0.125, 0.5];
        let z = standardize(&v).unwrap();
        assert!(close(a[0][0].unwrap(), z[0]));
        assert!(close(a[1][0].unwrap(), z[1]));
        assert!(close(a[1][2].unwrap(), z[2]));
        // leaving s0 for s2 (the loop) is worse than leaving it for s1
        assert!(a[1][0].unwrap() < 0.0 && a[0][0].unwrap() > 0.0);
        // s1's group: both steps win at once (returns 1, 1): σ = 0, no credit
        assert_eq!(a[0][1], None);
        assert_eq!(a[1][3], None);
        // s2 is visited once: no group
        assert_eq!(a[1][1], None);
    }

    #[test]
    fn the_advantage_is_the_episode_term_plus_the_weighted_state_term() {
        let states = vec![vec![Some(7), Some(8)], vec![Some(7), None]];
        let rewards = vec![vec![0.0, 1.0], vec![0.0, -1.0]];
        let episode = vec![vec![Some(1.0), Some(1.0)], vec![Some(-1.0), None]];
        let a = anchor_advantages(&episode, &rewards, &states, 1.0, 0.5);
        // state 7: returns 1 and −1 → z = ±1
        assert!(close(a[0][0].unwrap(), 1.0 + 0.5));
        assert!(close(a[1][0].unwrap(), -1.0 - 0.5));
        // state 8 alone: the episode term only
        assert!(close(a[0][1].unwrap(), 1.0));
        // neither term: no advantage
        assert_eq!(a[1][1], None);
        // no episode term, a state term: the weighted state term alone
        let a = anchor_advantages(
            &[vec![None], vec![None]],
            &[vec![1.0], vec![-1.0]],
            &[vec![Some(3)], vec![Some(3)]],
            0.9,
            2.0,
        );
        assert!(close(a[0][0].unwrap(), 2.0) && close(a[1][0].unwrap(), -2.0));
    }

    #[test]
    fn steps_without_a_key_or_a_state_row_belong_to_no_group() {
        let a = state_advantages(&[vec![1.0], vec![-1.0]], &[vec![None], vec![]], 0.9);
        assert_eq!(a, vec![vec![None], vec![None]]);
    }
}
