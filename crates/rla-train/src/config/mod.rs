//! Run configuration (TOML). Unknown keys and impossible values are rejected with a message that
//! names them.

use rla_core::adapt::AdaptConfig;
use rla_core::filter::Band;
use rla_core::ppo::PpoConfig;
use rla_lm::{LoraConfig, TinyShape};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

mod logging;
mod model;
mod overrides;
mod pretrain;
mod table;

pub use logging::*;
pub use model::*;
pub use overrides::*;
pub use pretrain::*;
pub use table::*;

/// Which parts of the system learn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// λ = 0: outcome-only GRPO, frozen judge (unused), fixed tasks.
    #[serde(rename = "outcome")]
    Outcome,
    /// Integrated reward, frozen judge, fixed tasks.
    #[serde(rename = "policy")]
    Policy,
    /// Integrated reward, judge trained on consistency, fixed tasks.
    #[serde(rename = "policy+reward")]
    PolicyReward,
    /// Everything: judge trained and environment adapting.
    #[serde(rename = "full")]
    Full,
    /// The paper's reward-only run (§3.2.6): the policy's step reward is the judge's mean verdict
    /// alone, with no outcome; the judge is trained on consistency with the integrated reward
    /// `O + λ·mean S` (so it still learns from the outcome); fixed tasks.
    #[serde(rename = "reward-only")]
    RewardOnly,
    /// The null run: exactly `full`'s run (rollouts, judge, optimiser, counts, adaptation) with
    /// each step-index group's policy advantages randomly permuted among its members, so that
    /// the policy's update carries no information: what noise alone does to the policy.
    #[serde(rename = "null")]
    Null,
}

impl Mode {
    /// The four of the paper's table, in its order (what `ablate` runs unless told).
    pub const ALL: [Mode; 4] = [Mode::Outcome, Mode::Policy, Mode::PolicyReward, Mode::Full];

    /// Every mode, in the order tables list them.
    pub const EVERY: [Mode; 6] = [
        Mode::Outcome,
        Mode::Policy,
        Mode::PolicyReward,
        Mode::Full,
        Mode::RewardOnly,
        Mode::Null,
    ];

    /// The name used in configs and tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Outcome => "outcome",
            Mode::Policy => "policy",
            Mode::PolicyReward => "policy+reward",
            Mode::Full => "full",
            Mode::RewardOnly => "reward-only",
            Mode::Null => "null",
        }
    }

    /// Whether the judge is consulted for step rewards.
    pub fn uses_judge(self) -> bool {
        self != Mode::Outcome
    }

    /// Whether the judge is trained.
    pub fn trains_judge(self) -> bool {
        matches!(
            self,
            Mode::PolicyReward | Mode::Full | Mode::RewardOnly | Mode::Null
        )
    }

    /// Whether the policy's reward leaves the outcome out (the judge's verdicts alone).
    pub fn reward_only(self) -> bool {
        self == Mode::RewardOnly
    }

    /// Whether tasks adapt.
    pub fn adapts(self) -> bool {
        matches!(self, Mode::Full | Mode::Null)
    }

    /// Whether the policy's advantages are permuted within their groups (the null run).
    pub fn permutes_advantages(self) -> bool {
        self == Mode::Null
    }
}

/// How the policy's advantages group the step rewards of a task's rollouts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvantageKind {
    /// The paper's: standardised per task and step index over the rollouts that reached the
    /// step (`rla_core::policy_advantages`).
    #[default]
    Paper,
    /// Rollouts that ended before a step stay in its group with their last reward, so the steps
    /// only losers reach are compared with the winners' return
    /// (`rla_core::policy_advantages_keeping_finished`).
    KeepFinished,
    /// The paper's plus a trajectory-level term (each rollout's mean step reward standardised
    /// over the task's rollouts, times `trajectory_weight`) on every step, so the steps the
    /// paper drops for σ = 0 keep the episode's credit (`rla_core::policy_advantages_with_trajectory`).
    Trajectory,
    /// The paper's with the groups of one outcome mean-centred instead of standardised: there
    /// only the judge's verdicts differ, and a tiny σ would blow them up
    /// (`rla_core::policy_advantages_centring_judge_only`).
    JudgeCentred,
    /// Credit by state (GiGPO): the paper's advantage plus, with weight `anchor_weight`, a
    /// state-level term — the steps of a task's rollouts that start from the same environment
    /// state form a group, within which each step's discounted return (γ = `anchor_gamma`) is
    /// standardised (`rla_core::anchor::anchor_advantages`).
    Anchor,
}

/// The trajectory term's weight of `advantage = "trajectory"` when `trajectory_weight` is unset.
pub const TRAJECTORY_WEIGHT: f64 = 0.5;

/// Evaluation settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalConfig {
    /// In-domain tasks evaluated (the first n of the fixed split; 140 is all).
    pub in_domain: usize,
    /// OOD tasks evaluated (134 is all).
    pub ood: usize,
    /// Validation tasks evaluated (0: none; 140 is all): the in-domain distribution drawn with
    /// another seed, the split to tune settings on, so that the fixed splits stay untouched.
    pub validation: usize,
    /// Evaluate every this many iterations (and at the start and end).
    pub every: usize,
    /// Episodes sampled a task: each evaluation records the mean success over the tasks and its
    /// standard error, each task's mean kept in `RUN/evals/` so that two evaluations on the same
    /// tasks pair task by task (the reference samples 3 a task).
    pub samples: usize,
    /// The policy's temperature in those episodes (the reference's 0.8).
    pub temperature: f64,
    /// Also record greedy success (one episode a task at temperature 0) beside the sampled.
    pub greedy: bool,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            in_domain: 140,
            ood: 134,
            validation: 0,
            every: 5,
            samples: 8,
            temperature: 0.8,
            greedy: false,
        }
    }
}

impl EvalConfig {
    /// Refuses an evaluation that samples nothing, naming the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.samples == 0 {
            return Err("eval.samples = 0: sample at least one episode a task".into());
        }
        at_most("eval.samples", self.samples, MAX_COUNT)?;
        if !(self.temperature.is_finite() && self.temperature > 0.0) {
            return Err(format!(
                "eval.temperature = {}: a sampled evaluation needs a positive, finite \
                 temperature (greedy success is eval.greedy = true)",
                self.temperature
            ));
        }
        Ok(())
    }
}

/// A run: the keys every setting shares, and the table of the setting it trains in (`setting`
/// names it; [`crate::registry`] reads and writes it under that name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct RunConfig {
    /// Seed of everything.
    pub seed: u64,
    /// The setting's name (`household`, `coding`, `desktop`, or one registered by a program of
    /// its own).
    pub setting: String,
    /// What learns.
    pub mode: Mode,
    /// RL iterations.
    pub iterations: usize,
    /// Size of the task pool.
    pub pool_size: usize,
    /// Accepted rewrites grow the pool instead of replacing their parent's slot (with
    /// `draw = "stream"` they always do).
    pub grow_pool: bool,
    /// How each iteration's tasks are drawn from the pool: `"random"` (distinct slots at random
    /// each iteration) or `"stream"` (a per-run permutation of the whole pool, no task drawn
    /// twice before every task has been drawn once; make `pool_size` the training source's
    /// size so that the stream is fresh).
    #[serde(skip_serializing_if = "crate::pool::Draw::is_random")]
    pub draw: crate::pool::Draw,
    /// Tasks rolled out per iteration (plus every pending rewrite).
    pub tasks_per_iteration: usize,
    /// Rollouts per task.
    pub rollouts_per_task: usize,
    /// m: judge samples per step.
    pub judge_samples: usize,
    /// λ: weight of the step signal.
    pub lambda: f64,
    /// How the policy's advantages group the step rewards.
    pub advantage: AdvantageKind,
    /// The trajectory term's weight with `advantage = "trajectory"` (unset: 0.5); read by no
    /// other advantage.
    pub trajectory_weight: Option<f64>,
    /// The discount of the returns compared within a state's group with
    /// `advantage = "anchor"` (unset: 0.95); read by no other advantage.
    pub anchor_gamma: Option<f64>,
    /// The state-level term's weight with `advantage = "anchor"` (unset: 1.0); read by no other
    /// advantage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor_weight: Option<f64>,
    /// PPO epochs per iteration.
    pub update_epochs: usize,
    /// Tasks that give policy samples (a key left out keeps the paper's: `[1/8, 7/8]`).
    #[serde(deserialize_with = "policy_band")]
    pub policy_band: Band,
    /// Tasks that give reward-model samples (a key left out keeps the paper's: `[0.2, 0.8]`).
    #[serde(deserialize_with = "reward_band")]
    pub reward_band: Band,
    /// The difficulty band of adaptation.
    pub adapt: AdaptConfig,
    /// The PPO objective.
    pub ppo: PpoConfig,
    /// The policy.
    pub policy: ModelSpec,
    /// The reward model.
    pub reward: ModelSpec,
    /// Warm starts.
    pub pretrain: PretrainConfig,
    /// Evaluation.
    pub eval: EvalConfig,
    /// Experiment tracking.
    pub logging: LoggingConfig,
    /// The setting's own table.
    #[serde(skip)]
    pub table: SettingTable,
}

/// A band's table with either key left out: the paper's value of that band stands for it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartialBand {
    low: Option<f64>,
    high: Option<f64>,
}

fn band_or<'de, D: serde::Deserializer<'de>>(d: D, paper: Band) -> Result<Band, D::Error> {
    let b = PartialBand::deserialize(d)?;
    Ok(Band {
        low: b.low.unwrap_or(paper.low),
        high: b.high.unwrap_or(paper.high),
    })
}

fn policy_band<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Band, D::Error> {
    band_or(d, Band::POLICY)
}

fn reward_band<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Band, D::Error> {
    band_or(d, Band::REWARD)
}

/// The largest count of tasks, rollouts or samples a config may ask for (2^20).
pub const MAX_COUNT: usize = 1 << 20;

/// The most iterations a run may ask for.
pub const MAX_ITERATIONS: usize = 1 << 20;

/// The most PPO epochs an iteration may ask for.
pub const MAX_EPOCHS: usize = 1_000;

/// The most new tokens a model's answer may ask for (128 Ki: above any model's context here; a
/// model's own context bounds it further when it samples).
pub const MAX_NEW_TOKENS: usize = 1 << 17;

/// The most sequences a micro-batch or an SFT batch may ask for.
pub const MAX_BATCH: usize = 1 << 16;

/// The most optimiser steps of a warm start's phase (SFT steps, warm-up, DAgger steps).
pub const MAX_STEPS: usize = 1 << 24;

/// The most DAgger rounds a warm start may ask for.
pub const MAX_ROUNDS: usize = 1_000;

/// The highest LoRA rank a model may ask for.
pub const MAX_LORA_RANK: usize = 4_096;

/// A count no larger than `max`; the error names the key.
pub fn at_most(name: &str, v: usize, max: usize) -> Result<(), String> {
    if v > max {
        Err(format!("{name} = {v}: at most {max}"))
    } else {
        Ok(())
    }
}

impl RunConfig {
    /// The shared keys' defaults for the setting `name` whose table is `table`.
    pub fn with_table<T: SettingConfig>(name: &str, table: T) -> RunConfig {
        RunConfig {
            seed: 0,
            setting: name.into(),
            mode: Mode::Full,
            iterations: 20,
            pool_size: 64,
            grow_pool: false,
            draw: crate::pool::Draw::Random,
            tasks_per_iteration: 16,
            rollouts_per_task: 8,
            judge_samples: 3,
            lambda: 1.0,
            advantage: AdvantageKind::Paper,
            trajectory_weight: None,
            anchor_gamma: None,
            anchor_weight: None,
            update_epochs: 4,
            policy_band: Band::POLICY,
            reward_band: Band::REWARD,
            adapt: AdaptConfig::default(),
            ppo: PpoConfig::default(),
            policy: ModelSpec::default(),
            reward: ModelSpec {
                max_new_tokens: 12,
                ..ModelSpec::default()
            },
            pretrain: PretrainConfig::default(),
            eval: EvalConfig::default(),
            logging: LoggingConfig::default(),
            table: SettingTable::new(table),
        }
    }

    /// Switches the run to the setting `name` whose table is `table`.
    pub fn set_table<T: SettingConfig>(&mut self, name: &str, table: T) {
        self.setting = name.into();
        self.table = SettingTable::new(table);
    }

    /// The setting's table as its own type.
    ///
    /// # Panics
    ///
    /// If the run's setting has another table: a setting reads only its own.
    pub fn table<T: SettingConfig>(&self) -> &T {
        self.table.get().unwrap_or_else(|| {
            panic!(
                "the {} setting's table is not a {}",
                self.setting,
                std::any::type_name::<T>()
            )
        })
    }

    /// The setting's table as its own type, to change.
    ///
    /// # Panics
    ///
    /// If the run's setting has another table.
    pub fn table_mut<T: SettingConfig>(&mut self) -> &mut T {
        let setting = self.setting.clone();
        self.table.0.as_any_mut().downcast_mut().unwrap_or_else(|| {
            panic!(
                "the {setting} setting's table is not a {}",
                std::any::type_name::<T>()
            )
        })
    }

    /// Reads and validates a TOML file.
    pub fn load(path: &Path) -> anyhow::Result<RunConfig> {
        RunConfig::load_with(path, &[])
    }

    /// Reads a TOML file, applies `overrides` to its table, and validates the result.
    pub fn load_with(path: &Path, overrides: &[Override]) -> anyhow::Result<RunConfig> {
        let text = rla_core::file::read_arg_to_string(path, rla_core::file::MAX_BYTES)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let folder = path.parent().unwrap_or(Path::new("."));
        RunConfig::parse_in_with(&text, folder, overrides)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Parses and validates a config's text as if it were a file in `folder`: relative model
    /// paths are read from that folder, and a model path that is no folder there but reads as a
    /// Hugging Face id (`owner/name`, `owner/name@revision`) is the id's snapshot in the local
    /// hub cache ([`rla_lm::hub::resolve`]).
    pub fn parse_in(text: &str, folder: &Path) -> anyhow::Result<RunConfig> {
        RunConfig::parse_in_with(text, folder, &[])
    }

    /// [`RunConfig::parse_in`] with `overrides` applied to the text's table before it is read,
    /// so their keys and values are checked as the file's own.
    pub fn parse_in_with(
        text: &str,
        folder: &Path,
        overrides: &[Override],
    ) -> anyhow::Result<RunConfig> {
        let mut cfg: RunConfig = if overrides.is_empty() {
            toml::from_str(text)?
        } else {
            let mut t: toml::Table = toml::from_str(text)?;
            for o in overrides {
                o.apply(&mut t).map_err(anyhow::Error::msg)?;
            }
            // read back as text, so a bad value is named as the file's own would be
            toml::from_str(&toml::to_string(&t)?)?
        };
        cfg.validate().map_err(anyhow::Error::msg)?;
        cfg.table.0.resolve(folder).map_err(anyhow::Error::msg)?;
        for m in [&mut cfg.policy, &mut cfg.reward] {
            if let Some(p) = &m.path {
                m.path = Some(model_path(p, folder));
            }
        }
        Ok(cfg)
    }

    /// Rejects impossible values, naming them.
    pub fn validate(&self) -> Result<(), String> {
        let pos = |name: &str, v: usize| {
            if v == 0 {
                Err(format!("{name} must be at least 1"))
            } else {
                Ok(())
            }
        };
        // counts that size lists of tasks, rollouts or samples: 2^62 is no count to run, and
        // overflowed a list's capacity (a panic) before
        let p = &self.pretrain;
        for (name, v, max) in [
            ("iterations", self.iterations, MAX_ITERATIONS),
            ("pool_size", self.pool_size, MAX_COUNT),
            ("tasks_per_iteration", self.tasks_per_iteration, MAX_COUNT),
            ("rollouts_per_task", self.rollouts_per_task, MAX_COUNT),
            ("judge_samples (m)", self.judge_samples, MAX_COUNT),
            ("update_epochs", self.update_epochs, MAX_EPOCHS),
            ("pretrain.tasks", p.tasks, MAX_COUNT),
            ("pretrain.held_out", p.held_out, MAX_COUNT),
            ("pretrain.validation", p.validation, MAX_COUNT),
            ("pretrain.judge_tasks", p.judge_tasks, MAX_COUNT),
            ("pretrain.dagger_tasks", p.dagger_tasks, MAX_COUNT),
            ("pretrain.policy_steps", p.policy_steps, MAX_STEPS),
            ("pretrain.reward_steps", p.reward_steps, MAX_STEPS),
            ("pretrain.batch", p.batch, MAX_BATCH),
            ("pretrain.warmup", p.warmup, MAX_STEPS),
            ("pretrain.eval_every", p.eval_every, MAX_STEPS),
            ("pretrain.dagger_rounds", p.dagger_rounds, MAX_ROUNDS),
            ("pretrain.dagger_steps", p.dagger_steps, MAX_STEPS),
            ("eval.in_domain", self.eval.in_domain, MAX_COUNT),
            ("eval.ood", self.eval.ood, MAX_COUNT),
            ("eval.validation", self.eval.validation, MAX_COUNT),
            ("eval.every", self.eval.every, MAX_ITERATIONS),
        ] {
            at_most(name, v, max)?;
        }
        for (n, m) in [("policy", &self.policy), ("reward", &self.reward)] {
            for (key, v, max) in [
                ("max_new_tokens", m.max_new_tokens, MAX_NEW_TOKENS),
                ("micro_batch", m.micro_batch, MAX_BATCH),
                ("mini_batch", m.mini_batch, MAX_COUNT),
            ] {
                at_most(&format!("{n}.{key}"), v, max)?;
            }
            if let Some(l) = &m.lora {
                if !(1..=MAX_LORA_RANK).contains(&l.r) {
                    return Err(format!(
                        "{n}.lora.r = {}: a rank of at least 1 and at most {MAX_LORA_RANK}",
                        l.r
                    ));
                }
                if !(l.alpha.is_finite() && l.alpha > 0.0) {
                    return Err(format!(
                        "{n}.lora.alpha = {} must be positive and finite",
                        l.alpha
                    ));
                }
            }
        }
        pos("judge_samples (m)", self.judge_samples)?;
        self.eval.validate()?;
        self.table.validate(self, true)?;
        pos("iterations", self.iterations)?;
        pos("pool_size", self.pool_size)?;
        pos("tasks_per_iteration", self.tasks_per_iteration)?;
        pos("update_epochs", self.update_epochs)?;
        if self.rollouts_per_task < 2 {
            return Err(
                "rollouts_per_task must be at least 2 (advantages compare rollouts of a task)"
                    .into(),
            );
        }
        if self.tasks_per_iteration > self.pool_size {
            return Err(format!(
                "tasks_per_iteration = {} exceeds pool_size = {}",
                self.tasks_per_iteration, self.pool_size
            ));
        }
        if let Some(w) = self.trajectory_weight {
            if self.advantage != AdvantageKind::Trajectory {
                return Err(format!(
                    "trajectory_weight = {w} is read only with advantage = \"trajectory\" \
                     (this config has {:?})",
                    self.advantage
                ));
            }
            if !(w > 0.0 && w.is_finite()) {
                return Err(format!("trajectory_weight = {w} must be > 0"));
            }
        }
        let anchor_keys = [
            ("anchor_gamma", self.anchor_gamma, "must be in [0, 1]"),
            (
                "anchor_weight",
                self.anchor_weight,
                "must be > 0 and finite",
            ),
        ];
        for (key, v, why) in anchor_keys {
            let Some(v) = v else { continue };
            if self.advantage != AdvantageKind::Anchor {
                return Err(format!(
                    "{key} = {v} is read only with advantage = \"anchor\" (this config has {:?})",
                    self.advantage
                ));
            }
            let ok = if key == "anchor_gamma" {
                (0.0..=1.0).contains(&v)
            } else {
                v > 0.0 && v.is_finite()
            };
            if !ok {
                return Err(format!("{key} = {v} {why}"));
            }
        }
        if !(self.lambda >= 0.0 && self.lambda.is_finite()) {
            return Err(format!("lambda = {} must be ≥ 0", self.lambda));
        }
        self.adapt.validate()?;
        self.policy_band
            .validate()
            .map_err(|e| format!("policy_band: {e}"))?;
        self.reward_band
            .validate()
            .map_err(|e| format!("reward_band: {e}"))?;
        self.ppo.validate().map_err(|e| format!("ppo: {e}"))?;
        self.logging.validate()?;
        for (n, m) in [("policy", &self.policy), ("reward", &self.reward)] {
            if !(m.lr.is_finite() && m.lr > 0.0) {
                return Err(format!("{n}.lr = {} must be positive and finite", m.lr));
            }
            pos(&format!("{n}.max_new_tokens"), m.max_new_tokens)?;
            if m.updates > 0 && m.mini_batch > 0 {
                return Err(format!(
                    "{n}.updates = {} and {n}.mini_batch = {} both say how an update is cut: \
                     set one of them",
                    m.updates, m.mini_batch
                ));
            }
            pos(&format!("{n}.micro_batch"), m.micro_batch)?;
            if !(m.temperature.is_finite() && m.temperature >= 0.0) {
                return Err(format!(
                    "{n}.temperature = {} must be finite and ≥ 0",
                    m.temperature
                ));
            }
            match &m.path {
                Some(_) => {} // checked by `check_paths` before a run starts
                None => m.tiny.validate().map_err(|e| format!("{n}.tiny: {e}"))?,
            }
            rla_lm::Precision::parse(&m.dtype).map_err(|e| format!("{n}.dtype: {e}"))?;
            m.learner.validate(&format!("{n}.learner"))?;
            if let Some(sv) = &m.server {
                sv.validate(&format!("{n}.server"))?;
                if sv.push == Push::Lora && m.lora.is_none() {
                    return Err(format!(
                        "{n}.server.push = \"lora\" sends LoRA adapters: add a [{n}.lora] table"
                    ));
                }
            }
        }
        if !(self.pretrain.lr.is_finite() && self.pretrain.lr > 0.0) {
            return Err(format!(
                "pretrain.lr = {} must be positive and finite",
                self.pretrain.lr
            ));
        }
        pos("pretrain.tasks", self.pretrain.tasks)?;
        pos("pretrain.batch", self.pretrain.batch)?;
        if self.pretrain.held_out >= self.pretrain.tasks {
            return Err(format!(
                "pretrain.held_out = {} leaves none of the {} pretrain.tasks to train on",
                self.pretrain.held_out, self.pretrain.tasks
            ));
        }
        if self.pretrain.eval_every > 0
            && self.pretrain.held_out == 0
            && self.pretrain.validation == 0
        {
            return Err(
                "pretrain.eval_every spaces the points of a training curve: give pretrain.held_out \
                 or pretrain.validation something to measure"
                    .into(),
            );
        }
        if !(0.0..=1.0).contains(&self.pretrain.hint_fraction) {
            return Err("pretrain.hint_fraction must lie in [0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.pretrain.noise) {
            return Err("pretrain.noise must lie in [0, 1]".into());
        }
        if self.pretrain.dagger_rounds > 0 {
            pos("pretrain.dagger_tasks", self.pretrain.dagger_tasks)?;
            pos("pretrain.dagger_steps", self.pretrain.dagger_steps)?;
            let share = self.pretrain.dagger_label_share;
            if !(share > 0.0 && share < 1.0) {
                return Err(format!(
                    "pretrain.dagger_label_share = {share}: the labels' share of a batch lies \
                     strictly between 0 and 1"
                ));
            }
        }
        Ok(())
    }

    /// Checks that the checkpoint folders the config names exist (before any work starts:
    /// [`RunConfig::validate`] checks values only, so a config for another machine still loads).
    pub fn check_paths(&self) -> Result<(), String> {
        for (n, m) in [("policy", &self.policy), ("reward", &self.reward)] {
            if let Some(p) = &m.path {
                if !p.exists() && p.is_relative() {
                    if let Some(s) = p.to_str().filter(|s| rla_lm::hub::parse_id(s).is_some()) {
                        let e = rla_lm::hub::resolve(p, Path::new(""))
                            .err()
                            .unwrap_or_else(|| "not a checkpoint folder".into());
                        return Err(format!("{n}.path = {s}: {e}"));
                    }
                }
                if !rla_lm::is_checkpoint(p) {
                    return Err(format!(
                        "{n}.path = {}: not a checkpoint folder (config.json, tokenizer.json and \
                         model.safetensors){}",
                        p.display(),
                        if p.exists() {
                            ""
                        } else {
                            "; it does not exist. A base made by `rlanything pretrain --config \
                             CONFIG --out DIR` holds DIR/policy and DIR/reward"
                        }
                    ));
                }
            }
        }
        Ok(())
    }

    /// λ as the mode uses it (0 for `outcome`).
    pub fn effective_lambda(&self) -> f64 {
        if self.mode.uses_judge() {
            self.lambda
        } else {
            0.0
        }
    }
}

/// A model path of a config in `folder`: an absolute path as it is; a relative one read from
/// `folder`; one that is no folder there but reads as a Hugging Face id, the id's cached
/// snapshot; an id missing from the cache is kept as it reads, for
/// [`RunConfig::check_paths`] to name with the cache it searched.
fn model_path(p: &Path, folder: &Path) -> PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    let joined = folder.join(p);
    if joined.exists() {
        return std::fs::canonicalize(&joined).unwrap_or(joined);
    }
    match p.to_str().and_then(rla_lm::hub::parse_id) {
        Some(_) => match rla_lm::hub::resolve(p, folder) {
            Ok(dir) => std::fs::canonicalize(&dir).unwrap_or(dir),
            Err(_) => p.to_path_buf(),
        },
        None => joined,
    }
}

impl Serialize for RunConfig {
    /// The shared keys, and the setting's table under its name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        struct Shared<'a>(&'a RunConfig);
        impl Serialize for Shared<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                RunConfig::serialize(self.0, s)
            }
        }
        let mut v = toml::Value::try_from(Shared(self)).map_err(S::Error::custom)?;
        if let Some(t) = v.as_table_mut() {
            t.insert(
                self.setting.clone(),
                self.table.to_toml().map_err(S::Error::custom)?,
            );
        }
        v.serialize(s)
    }
}
