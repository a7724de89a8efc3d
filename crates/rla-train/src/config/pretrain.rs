//! `[pretrain]`: supervised warm starts of tiny models.

use super::*;

/// Supervised warm starts of tiny models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PretrainConfig {
    /// Training tasks the demonstrations come from.
    pub tasks: usize,
    /// Probability that a demonstration step is a random command (the target stays the expert's).
    pub noise: f64,
    /// SFT steps of the policy.
    pub policy_steps: usize,
    /// SFT steps of the reward model.
    pub reward_steps: usize,
    /// Sequences per SFT step.
    pub batch: usize,
    /// SFT learning rate.
    pub lr: f64,
    /// Share of demonstration tasks given a hint ("The apple is in the fridge 1."), so the policy
    /// learns to use hints that easier rewrites add.
    pub hint_fraction: f64,
    /// The learning rate over the SFT steps: `constant`, or `cosine` (down to a tenth of `lr`).
    pub schedule: LrSchedule,
    /// Steps over which the learning rate rises linearly to `lr` first (0: none).
    pub warmup: usize,
    /// Generated training tasks whose demonstrations are held out of SFT to measure it: held-out
    /// loss, and in the household the share of steps whose greedy action is the expert's.
    pub held_out: usize,
    /// Validation tasks (the setting's validation split) played greedily at each point of the
    /// training curve (0: none).
    pub validation: usize,
    /// SFT steps between points of the training curve (0: one point, at the end). The curve is
    /// written beside the models as `curve-policy.jsonl`.
    pub eval_every: usize,
    /// The household's judge learns from the warm-started policy's own episodes: this many
    /// fresh training tasks, each played `rollouts_per_task` times as RL samples, every step
    /// labelled with its episode's outcome and the steps of won and lost episodes balanced
    /// (0: from the expert's noisy demonstrations, labelled the same way).
    pub judge_tasks: usize,
    /// The policy (the household's or the desktop's), once fitted, learns from its own mistakes
    /// (DAgger) this many rounds: each round it plays `dagger_tasks` fresh training tasks
    /// greedily, as it is evaluated; the setting's expert, following its moves, names the right
    /// action at every state it reached; and `dagger_steps` SFT steps (at the schedule's
    /// last rate) train on the demonstrations and every round's labels together (0: none).
    pub dagger_rounds: usize,
    /// Fresh training tasks played each DAgger round.
    pub dagger_tasks: usize,
    /// SFT steps each DAgger round.
    pub dagger_steps: usize,
    /// The share of each DAgger SFT batch drawn from the labels (the rest from the
    /// demonstrations), in (0, 1): the labels are repeated until they make up this share.
    pub dagger_label_share: f64,
}

/// How the SFT learning rate changes over the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LrSchedule {
    /// The same rate throughout.
    #[default]
    Constant,
    /// Half a cosine from the rate down to a tenth of it.
    Cosine,
}

impl PretrainConfig {
    /// The learning rate of SFT step `step` (0-based) of `steps`.
    pub fn lr_at(&self, step: usize, steps: usize) -> f64 {
        let warm = if self.warmup > 0 && step < self.warmup {
            (step + 1) as f64 / self.warmup as f64
        } else {
            1.0
        };
        let decay = match self.schedule {
            LrSchedule::Constant => 1.0,
            LrSchedule::Cosine => {
                let span = steps.saturating_sub(self.warmup).max(1) as f64;
                let t = (step.saturating_sub(self.warmup) as f64 / span).min(1.0);
                0.1 + 0.9 * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
            }
        };
        self.lr * warm * decay
    }
}

impl Default for PretrainConfig {
    fn default() -> Self {
        PretrainConfig {
            tasks: 96,
            noise: 0.3,
            policy_steps: 150,
            reward_steps: 120,
            batch: 32,
            lr: 3e-3,
            hint_fraction: 0.0,
            schedule: LrSchedule::Constant,
            warmup: 0,
            held_out: 0,
            validation: 0,
            eval_every: 0,
            judge_tasks: 0,
            dagger_rounds: 0,
            dagger_tasks: 200,
            dagger_steps: 500,
            dagger_label_share: 0.5,
        }
    }
}
