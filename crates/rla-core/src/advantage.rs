//! Policy advantages: the integrated rewards standardised per task and step index (paper §3.2).

use crate::stats::standardize;

/// The step rewards `R_i` of one rollout of a task, step by step.
pub type RolloutRewards = Vec<f64>;

/// Advantages of every step of every rollout of **one task**.
///
/// ```text
/// A_ji = (R_ji − mean_k R_ki) / std_k R_ki
/// ```
///
/// where k runs over the rollouts of the task that reached step i (the population standard
/// deviation). When that deviation is ≤ 1e-8 the group carries no signal: every advantage of
/// step i is `None` and those samples are dropped from training. A step reached by only one
/// rollout therefore never trains.
///
/// `rollouts[j][i]` is `R_i` of rollout j; the result has the same shape. Each
/// `(history, response)` pair of a step with `Some(advantage)` is one training sample.
pub fn policy_advantages(rollouts: &[RolloutRewards]) -> Vec<Vec<Option<f64>>> {
    per_step_index(rollouts, |_, values| standardize(values))
}

/// Advantages group by group: for each step index i, `group(members, values)` is given the
/// rollouts that reached step i and their rewards there, and returns their advantages in that
/// order (`None`: the group gives none).
fn per_step_index(
    rollouts: &[RolloutRewards],
    mut group: impl FnMut(&[usize], &[f64]) -> Option<Vec<f64>>,
) -> Vec<Vec<Option<f64>>> {
    let mut out: Vec<Vec<Option<f64>>> = rollouts.iter().map(|r| vec![None; r.len()]).collect();
    let longest = rollouts.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        let members: Vec<usize> = (0..rollouts.len())
            .filter(|&j| rollouts[j].len() > i)
            .collect();
        let values: Vec<f64> = members.iter().map(|&j| rollouts[j][i]).collect();
        if let Some(z) = group(&members, &values) {
            for (&j, a) in members.iter().zip(z) {
                out[j][i] = Some(a);
            }
        }
    }
    out
}

/// [`policy_advantages`] with the finished rollouts kept in every later step's group: a rollout
/// that ended before step i stays in i's group with its last step's reward (a winner's return, or
/// a loser's that stopped early), so the steps that only losers reach — the looping tails of
/// lost episodes — are compared with the winners' return instead of only with each other, and get
/// negative advantages. Advantages are given to the rollouts that reached the step; a group whose
/// values are all equal (σ ≤ 1e-8) still gives none. Where every rollout reaches every step, this
/// is [`policy_advantages`].
#[allow(clippy::needless_range_loop)] // i indexes every rollout's steps, not one list
pub fn policy_advantages_keeping_finished(rollouts: &[RolloutRewards]) -> Vec<Vec<Option<f64>>> {
    let mut out: Vec<Vec<Option<f64>>> = rollouts.iter().map(|r| vec![None; r.len()]).collect();
    let longest = rollouts.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        // every rollout with a step: its reward at i, or its last one if it ended before
        let values: Vec<(usize, f64)> = rollouts
            .iter()
            .enumerate()
            .filter_map(|(j, r)| r.get(i).or(r.last()).map(|&v| (j, v)))
            .collect();
        let z = standardize(&values.iter().map(|&(_, v)| v).collect::<Vec<f64>>());
        if let Some(z) = z {
            for (&(j, _), a) in values.iter().zip(z) {
                if rollouts[j].len() > i {
                    out[j][i] = Some(a);
                }
            }
        }
    }
    out
}

/// [`policy_advantages`] plus a trajectory-level term: each rollout's mean step reward,
/// standardised over the task's rollouts, times `weight`, is added to every one of its steps.
///
/// ```text
/// A_ji = z_i(R_j·) + weight · z(mean_i R_ji)
/// ```
///
/// A step whose step-index group carries no signal (σ = 0, for instance the steps only losers
/// reach in `outcome`) keeps the trajectory term alone, so a lost episode's looping tail is
/// pushed down when the task had winners; a step is dropped only when both terms are missing.
pub fn policy_advantages_with_trajectory(
    rollouts: &[RolloutRewards],
    weight: f64,
) -> Vec<Vec<Option<f64>>> {
    let step = policy_advantages(rollouts);
    // the rollouts with at least one step, and their mean reward
    let played: Vec<usize> = (0..rollouts.len())
        .filter(|&j| !rollouts[j].is_empty())
        .collect();
    let means: Vec<f64> = played
        .iter()
        .map(|&j| rollouts[j].iter().sum::<f64>() / rollouts[j].len() as f64)
        .collect();
    let mut traj = vec![None; rollouts.len()];
    if let Some(z) = standardize(&means) {
        for (&j, t) in played.iter().zip(z) {
            traj[j] = Some(weight * t);
        }
    }
    step.into_iter()
        .zip(traj)
        .map(|(steps, t)| {
            steps
                .into_iter()
                .map(|a| match (a, t) {
                    (None, None) => None,
                    (a, t) => Some(a.unwrap_or(0.0) + t.unwrap_or(0.0)),
                })
                .collect()
        })
        .collect()
}

/// [`policy_advantages`] with the groups whose rollouts all share one outcome mean-centred
/// instead of standardised: there the rewards differ by the judge's verdicts alone, and a
/// single flipped verdict among five losers, divided by its tiny σ, would become advantages of
/// +2.0 and −0.5; centred, it is +0.53 and −0.13 (λ = 1, m = 3). Groups with mixed outcomes are
/// standardised as in the paper; a group whose rewards are all equal gives none.
///
/// `outcomes[j]` is rollout j's outcome O.
pub fn policy_advantages_centring_judge_only(
    rollouts: &[RolloutRewards],
    outcomes: &[f64],
) -> Vec<Vec<Option<f64>>> {
    assert_eq!(
        rollouts.len(),
        outcomes.len(),
        "one outcome a rollout ({} rollouts, {} outcomes)",
        rollouts.len(),
        outcomes.len()
    );
    per_step_index(rollouts, |members, values| {
        let one_outcome = members
            .windows(2)
            .all(|w| (outcomes[w[0]] - outcomes[w[1]]).abs() <= crate::stats::STD_EPS);
        if !one_outcome {
            return standardize(values);
        }
        crate::stats::mean(values).and_then(|m| {
            let c: Vec<f64> = values.iter().map(|v| v - m).collect();
            (members.len() > 1 && c.iter().any(|x| x.abs() > crate::stats::STD_EPS)).then_some(c)
        })
    })
}

/// The null run's advantages: within each step index's group (the rollouts that have an
/// advantage at that step), the values are randomly permuted among the members, so that the
/// update has the paper's sizes, counts and signs in every group but carries no information
/// about which step earned what. `seed` names the permutation (a stream per task and
/// iteration); the permutation of one group is independent of the others'.
pub fn permute_within_steps(adv: &mut [Vec<Option<f64>>], seed: u64) {
    let longest = adv.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        let members: Vec<usize> = (0..adv.len())
            .filter(|&e| adv[e].get(i).is_some_and(Option::is_some))
            .collect();
        let mut values: Vec<f64> = members.iter().filter_map(|&e| adv[e][i]).collect();
        // Fisher–Yates with a stream of its own for each step index
        for j in (1..values.len()).rev() {
            let r = crate::seed::stream(seed, &[i as u64, j as u64]);
            let k = (r % (j as u64 + 1)) as usize;
            values.swap(j, k);
        }
        for (&e, v) in members.iter().zip(values) {
            adv[e][i] = Some(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_winners_stay_in_the_groups_of_the_steps_only_losers_reach() {
        // a winner that finished after one step (return 2), two losers that went on for three
        let rollouts = vec![vec![2.0], vec![-1.0, -1.0, -1.0], vec![-1.0, -1.0, -1.0]];
        let paper = policy_advantages(&rollouts);
        // the paper's groups: steps 1 and 2 hold only the losers (σ = 0): no credit at all
        assert!(paper[1][1..].iter().all(Option::is_none));
        let kept = policy_advantages_keeping_finished(&rollouts);
        // the winner's return stays in steps 1 and 2: [2, -1, -1] -> the losers' tails negative
        let s = 2f64.sqrt(); // population σ of [2, -1, -1]
        for i in 0..3 {
            assert!((kept[1][i].unwrap() + 1.0 / s).abs() < 1e-12, "{kept:?}");
        }
        assert!((kept[0][0].unwrap() - 2.0 / s).abs() < 1e-12);
        // only steps a rollout reached get advantages
        assert_eq!(kept[0].len(), 1);
        // with every rollout as long as the others, the paper's groups
        let even = vec![vec![1.0, 2.0], vec![0.0, -1.0], vec![0.5, 0.5]];
        assert_eq!(
            policy_advantages_keeping_finished(&even),
            policy_advantages(&even)
        );
        // all equal: nothing to learn
        let same = vec![vec![-1.0], vec![-1.0, -1.0]];
        assert!(policy_advantages_keeping_finished(&same)
            .iter()
            .flatten()
            .all(Option::is_none));
    }

    #[test]
    fn hand_computed_groups() {
        // step 0: [2, 0] -> mean 1, std 1 -> [1, -1]
        // step 1: [2, 0, -2] wait: only rollouts reaching step 1
        let rollouts = vec![vec![2.0, 2.0, 1.0], vec![0.0, 0.0], vec![1.0]];
        let a = policy_advantages(&rollouts);
        // step 0: [2, 0, 1] -> mean 1, var 2/3
        let s = (2.0f64 / 3.0).sqrt();
        assert!((a[0][0].unwrap() - 1.0 / s).abs() < 1e-12);
        assert!((a[1][0].unwrap() + 1.0 / s).abs() < 1e-12);
        assert_eq!(a[2][0], Some(0.0));
        // step 1: [2, 0] -> [1, -1]
        assert_eq!(a[0][1], Some(1.0));
        assert_eq!(a[1][1], Some(-1.0));
        // step 2: only one rollout -> dropped
        assert_eq!(a[0][2], None);
    }

    #[test]
    fn zero_variance_group_is_dropped() {
        let rollouts = vec![vec![2.0, 1.0], vec![2.0, -1.0]];
        let a = policy_advantages(&rollouts);
        assert_eq!(a[0][0], None);
        assert_eq!(a[1][0], None);
        assert_eq!(a[0][1], Some(1.0));
        assert_eq!(a[1][1], Some(-1.0));
    }

    #[test]
    fn paper_step_seven_ranks_high_reward_first() {
        // Step 7 across 8 rollouts, values as in the paper's worked example.
        let vals = [
            2.0,
            4.0 / 3.0,
            2.0 / 3.0,
            2.0,
            0.0,
            -2.0 / 3.0,
            2.0 / 3.0,
            -1.0 / 3.0,
        ];
        let rollouts: Vec<Vec<f64>> = vals
            .iter()
            .map(|&v| vec![0.0; 7].into_iter().chain([v]).collect())
            .collect();
        let a = policy_advantages(&rollouts);
        let a7: Vec<f64> = a.iter().map(|r| r[7].unwrap()).collect();
        assert!(a7[0] > 0.0 && a7[0] == a7[3]);
        assert!(a7[5] < a7[7] && a7[7] < a7[4] + 1.0);
        // steps 0..7 all equal -> dropped
        assert!(a.iter().all(|r| r[..7].iter().all(Option::is_none)));
    }

    #[test]
    fn empty_input() {
        assert!(policy_advantages(&[]).is_empty());
        assert_eq!(
            policy_advantages(&[vec![], vec![]]),
            vec![Vec::<Option<f64>>::new(); 2]
        );
    }

    #[test]
    fn the_trajectory_term_reaches_the_steps_only_losers_reach() {
        // outcome rewards: a winner that finished after one step, two losers of three steps
        let rollouts = vec![vec![1.0], vec![-1.0, -1.0, -1.0], vec![-1.0, -1.0, -1.0]];
        let a = policy_advantages_with_trajectory(&rollouts, 0.5);
        // step 0: [1, -1, -1] standardised; the trajectory term is the same z, halved
        let s = (8.0f64 / 9.0).sqrt(); // population σ of [1, -1, -1]
        let (zw, zl) = (4.0 / 3.0 / s, -2.0 / 3.0 / s);
        assert!((a[0][0].unwrap() - 1.5 * zw).abs() < 1e-12, "{a:?}");
        assert!((a[1][0].unwrap() - 1.5 * zl).abs() < 1e-12);
        // steps 1 and 2 hold only losers (the paper drops them): the trajectory term alone
        for x in a[1][1..].iter().chain(&a[2][1..]) {
            assert!((x.unwrap() - 0.5 * zl).abs() < 1e-12);
        }
        assert!(policy_advantages(&rollouts)[1][1].is_none());
        // the weight scales the added term only
        let b = policy_advantages_with_trajectory(&rollouts, 1.0);
        assert!((b[1][2].unwrap() - zl).abs() < 1e-12);
        // every rollout with the same mean reward: the paper's advantages
        let even = vec![vec![1.0, -1.0], vec![-1.0, 1.0]];
        assert_eq!(
            policy_advantages_with_trajectory(&even, 0.5),
            policy_advantages(&even)
        );
        // all equal: nothing
        let same = vec![vec![-1.0, -1.0], vec![-1.0]];
        assert!(policy_advantages_with_trajectory(&same, 0.5)
            .iter()
            .flatten()
            .all(Option::is_none));
    }

    #[test]
    fn groups_of_one_outcome_are_centred_not_scaled_by_a_tiny_sigma() {
        // five losers at a step; one verdict of three flipped on the first: R = -1 + mean S
        let r_flip = -1.0 + (1.0 - 1.0 - 1.0) / 3.0; // -4/3
        let r_rest = -1.0 + (-1.0 - 1.0 - 1.0) / 3.0; // -2
        let rollouts = vec![
            vec![r_flip],
            vec![r_rest],
            vec![r_rest],
            vec![r_rest],
            vec![r_rest],
        ];
        let outcomes = vec![-1.0; 5];
        let paper = policy_advantages(&rollouts);
        assert!((paper[0][0].unwrap() - 2.0).abs() < 1e-12);
        assert!((paper[1][0].unwrap() + 0.5).abs() < 1e-12);
        let c = policy_advantages_centring_judge_only(&rollouts, &outcomes);
        // mean -28/15: the flipped one +8/15, the others -2/15
        assert!((c[0][0].unwrap() - 8.0 / 15.0).abs() < 1e-12, "{c:?}");
        assert!((c[1][0].unwrap() + 2.0 / 15.0).abs() < 1e-12);
        // mixed outcomes: the paper's standardisation
        let mixed = vec![vec![2.0, 1.0], vec![0.0, -1.0]];
        assert_eq!(
            policy_advantages_centring_judge_only(&mixed, &[1.0, -1.0]),
            policy_advantages(&mixed)
        );
        // one outcome and equal rewards, or a group of one: none
        let flat = vec![vec![-1.0, -1.0], vec![-1.0]];
        let f = policy_advantages_centring_judge_only(&flat, &[-1.0, -1.0]);
        assert!(f.iter().flatten().all(Option::is_none));
    }

    #[test]
    fn the_null_runs_permutation_keeps_each_groups_values() {
        let mut adv = vec![
            vec![Some(1.0), Some(-1.0), None],
            vec![Some(-1.0), Some(0.5), Some(2.0)],
            vec![Some(0.0)],
            vec![Some(3.0), None, Some(-2.0)],
        ];
        let before = adv.clone();
        let mut moved = false;
        for seed in 0..20 {
            let mut a = before.clone();
            super::permute_within_steps(&mut a, seed);
            for i in 0..3 {
                // the same members, the same multiset of values
                let col = |x: &Vec<Vec<Option<f64>>>| -> (Vec<bool>, Vec<i64>) {
                    let mut v: Vec<i64> = x
                        .iter()
                        .filter_map(|r| r.get(i).copied().flatten())
                        .map(|f| (f * 1000.0) as i64)
                        .collect();
                    v.sort();
                    (
                        x.iter()
                            .map(|r| r.get(i).is_some_and(Option::is_some))
                            .collect(),
                        v,
                    )
                };
                assert_eq!(col(&a), col(&before));
            }
            moved |= a != before;
            if seed == 3 {
                adv = a;
            }
        }
        assert!(moved, "some seed permutes something");
        let mut again = before.clone();
        super::permute_within_steps(&mut again, 3);
        assert_eq!(again, adv, "a seed names one permutation");
    }
}
