//! # rla-core — the mathematics of RLAnything as pure functions
//!
//! Every rule the RLAnything loop applies lives here, with no I/O and no tensors, so it can be
//! read against the paper and tested exhaustively (and, apart from them, [`file`]: the one bounded
//! reader every crate uses for the files a user or a server hands it; [`split`], the splits every
//! setting draws; [`remote`], the one error of a call to a server):
//!
//! | module | rule |
//! |---|---|
//! | [`reward`] | integrated step reward `R_i = O + λ·(1/m)·Σ_j S_ij` |
//! | [`advantage`] | policy advantages: z-score of `R_i` per task and step index |
//! | [`consistency`] | reward-model consistency reward `R_i·S_ij`, z-scored over the m samples |
//! | [`filter`] | the accuracy bands that select tasks for the policy and reward-model updates |
//! | [`adapt`] | environment adaptation: direction of a rewrite and its acceptance |
//! | [`ppo`] | the PPO-clip objective and the k3 KL estimate, per token and aggregated |
//! | [`vitals`] | an update's vital signs: clip fraction, KL between the policy before and after it, entropy |
//! | [`theory`] | μ = p₊ + p₋, the Theorem 1 bound, empirical precision A, the Theorem 2 imbalance |
//! | [`metrics`] | process and outcome accuracy of a judge, success rate, task-accuracy histogram |
//! | [`seed`] | seeds derived from a seed and a tag, stable across platforms |
//! | [`split`] | the training tasks and the three evaluation splits every setting draws |
//!
//! Names follow the project glossary: `outcome` (O), `step_score` (S_ij), `judge_samples` (m),
//! `lambda` (λ), `step_reward` (R_i), `acc_low`/`acc_high` (α_low, α_high), `mu` (μ).

pub mod adapt;
pub mod advantage;
pub mod anchor;
pub mod coding;
pub mod consistency;
pub mod file;
pub mod filter;
pub mod metrics;
pub mod nan;
pub mod ppo;
pub mod remote;
pub mod reward;
pub mod seed;
pub mod selection;
pub mod split;
pub mod stats;
pub mod theory;
pub mod vitals;

pub use adapt::{accept_rewrite, adaptation_direction, AdaptConfig, Direction};
pub use advantage::{
    permute_within_steps, policy_advantages, policy_advantages_centring_judge_only,
    policy_advantages_keeping_finished, policy_advantages_with_trajectory, RolloutRewards,
};
pub use consistency::{consistency_advantages, consistency_raw, UNPARSED_CONSISTENCY_REWARD};
pub use filter::Band;
pub use reward::{step_reward, step_rewards, Outcome, StepScore};
pub use split::Split;
pub use stats::{standardize, STD_EPS};
