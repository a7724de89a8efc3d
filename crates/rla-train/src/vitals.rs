//! An iteration's vital signs: how far its update moved the policy, how much of the batch the
//! clip bounded, how sure the policy was where it had a choice, what the update trained on and
//! where the tokens went. Recorded in every iteration's metrics (`vitals`), the report and its
//! plot; the arithmetic is `rla_core::vitals`'.

use rla_core::vitals::{is_decision, update_kl};
use rla_lm::{PpoSample, StepStats};
use serde::{Deserialize, Serialize};

/// The vital signs of one role's update (the policy's or the judge's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleVitals {
    /// Optimiser steps taken (epochs × mini-batches).
    pub steps: usize,
    /// Samples trained on.
    pub samples: usize,
    /// Groups whose rewards were all equal (σ = 0), so they gave no sample: the policy's (task,
    /// step index) groups, the judge's judgements of one step.
    pub groups_dropped: usize,
    /// Mean share of response tokens whose ratio the clip bounded, over the steps.
    pub clip_fraction: Option<f64>,
    /// Mean gradient norm before clipping, over the steps.
    pub grad_norm: Option<f64>,
    /// Mean entropy (nats) at the decision tokens, over the steps (tokens drawn freely, or among
    /// more than one allowed token: over those).
    pub entropy: Option<f64>,
    /// KL(π_before ‖ π_after) of the whole update, k3 over the samples' response tokens.
    pub update_kl: Option<f64>,
    /// The same over the decision tokens alone.
    pub update_kl_decision: Option<f64>,
}

/// An iteration's vital signs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Vitals {
    /// The policy's update.
    pub policy: RoleVitals,
    /// The judge's update.
    pub reward: RoleVitals,
    /// Tokens (prompt and response) the policy read and wrote in the rollouts.
    pub tokens_rollout: usize,
    /// Tokens the judge read and wrote.
    pub tokens_judge: usize,
    /// Tokens the updates processed (every epoch counted).
    pub tokens_update: usize,
}

impl RoleVitals {
    /// Folds one optimiser step's stats into the means.
    pub fn add_step(&mut self, s: &StepStats) {
        let n = self.steps as f64;
        let mean = |old: Option<f64>, x: Option<f64>| match (old, x) {
            (Some(o), Some(x)) => Some((o * n + x) / (n + 1.0)),
            (None, x) if self.steps == 0 => x,
            (o, _) => o,
        };
        self.clip_fraction = mean(self.clip_fraction, s.clip_fraction);
        self.grad_norm = mean(
            self.grad_norm,
            s.grad_norm.is_finite().then_some(s.grad_norm),
        );
        self.entropy = mean(self.entropy, s.decision_entropy);
        self.steps += 1;
    }

    /// The update's KL from the samples (their `old_logprobs`, drawn before it) and the same
    /// tokens' log-probabilities after it: over all response tokens and over the decision tokens.
    pub fn set_update_kl<'a>(
        &mut self,
        samples: impl IntoIterator<Item = &'a PpoSample>,
        after: &[Vec<f32>],
    ) {
        let (mut old, mut new, mut decision) = (Vec::new(), Vec::new(), Vec::new());
        for (s, a) in samples.into_iter().zip(after) {
            for (i, (&o, &w)) in s.old_logprobs.iter().zip(a).enumerate() {
                old.push(o as f64);
                new.push(w as f64);
                decision.push(is_decision(s.choices.as_ref().map(|c| c[i].as_slice())));
            }
        }
        self.update_kl = update_kl(&old, &new, |_| true);
        self.update_kl_decision = update_kl(&old, &new, |i| decision[i]);
    }
}

/// Tokens (prompt and response) of a list of (prompt, response) pairs.
pub fn tokens<'a>(pairs: impl Iterator<Item = (&'a [u32], &'a [u32])>) -> usize {
    pairs.map(|(p, r)| p.len() + r.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(clip: f64, grad: f64, ent: Option<f64>) -> StepStats {
        StepStats {
            grad_norm: grad,
            clip_fraction: Some(clip),
            decision_entropy: ent,
            ..Default::default()
        }
    }

    #[test]
    fn step_stats_fold_into_means() {
        let mut v = RoleVitals::default();
        v.add_step(&stats(0.0, 1.0, Some(0.6)));
        v.add_step(&stats(0.5, 3.0, Some(0.2)));
        v.add_step(&stats(0.1, f64::NAN, None));
        assert_eq!(v.steps, 3);
        assert!((v.clip_fraction.unwrap() - 0.2).abs() < 1e-12);
        // a step that reports nothing leaves the mean of the others
        assert!((v.grad_norm.unwrap() - 2.0).abs() < 1e-12);
        assert!((v.entropy.unwrap() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn the_update_kl_counts_decision_tokens_apart() {
        let s = PpoSample {
            prompt: vec![1],
            response: vec![5, 6, 7],
            advantage: 1.0,
            old_logprobs: vec![-0.7, 0.0, -1.0],
            ref_logprobs: None,
            // the middle token had one choice: log-probability 0 before and after
            choices: Some(vec![vec![5, 9], vec![6], vec![7, 8, 9]]),
        };
        let after = vec![vec![-0.5f32, 0.0, -1.3]];
        let mut v = RoleVitals::default();
        v.set_update_kl(std::slice::from_ref(&s), &after);
        let k = |q: f64| q.exp() - q - 1.0;
        let (a, b) = ((-0.5f32 - -0.7f32) as f64, (-1.3f32 - -1.0f32) as f64);
        assert!((v.update_kl.unwrap() - (k(a) + k(b)) / 3.0).abs() < 1e-9);
        assert!((v.update_kl_decision.unwrap() - (k(a) + k(b)) / 2.0).abs() < 1e-9);
        // no move, no KL
        let mut z = RoleVitals::default();
        z.set_update_kl(
            std::slice::from_ref(&s),
            std::slice::from_ref(&s.old_logprobs),
        );
        assert_eq!((z.update_kl, z.update_kl_decision), (Some(0.0), Some(0.0)));
    }
}
