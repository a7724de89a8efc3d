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
}

impl Mode {
    /// The four of the paper's table, in its order (what `ablate` runs unless told).
    pub const ALL: [Mode; 4] = [Mode::Outcome, Mode::Policy, Mode::PolicyReward, Mode::Full];

    /// Every mode, in the order tables list them.
    pub const EVERY: [Mode; 5] = [
        Mode::Outcome,
        Mode::Policy,
        Mode::PolicyReward,
        Mode::Full,
        Mode::RewardOnly,
    ];

    /// The name used in configs and tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Outcome => "outcome",
            Mode::Policy => "policy",
            Mode::PolicyReward => "policy+reward",
            Mode::Full => "full",
            Mode::RewardOnly => "reward-only",
        }
    }

    /// Whether the judge is consulted for step rewards.
    pub fn uses_judge(self) -> bool {
        self != Mode::Outcome
    }

    /// Whether the judge is trained.
    pub fn trains_judge(self) -> bool {
        matches!(self, Mode::PolicyReward | Mode::Full | Mode::RewardOnly)
    }

    /// Whether the policy's reward leaves the outcome out (the judge's verdicts alone).
    pub fn reward_only(self) -> bool {
        self == Mode::RewardOnly
    }

    /// Whether tasks adapt.
    pub fn adapts(self) -> bool {
        self == Mode::Full
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
}

/// The trajectory term's weight of `advantage = "trajectory"` when `trajectory_weight` is unset.
pub const TRAJECTORY_WEIGHT: f64 = 0.5;

/// One model of the run (the policy or the reward model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSpec {
    /// A checkpoint folder in HF layout (relative to the config file's folder); without it, a
    /// tiny model is trained from scratch by `pretrain`.
    pub path: Option<PathBuf>,
    /// The tiny model's shape.
    pub tiny: TinyShape,
    /// Learning rate of RL updates.
    pub lr: f64,
    /// Sequences per micro-batch.
    pub micro_batch: usize,
    /// Samples per optimiser step of an RL update (PPO's mini-batch): every epoch shuffles the
    /// iteration's samples and takes one step per mini-batch of this many; 0 takes a single
    /// step over all of them.
    pub mini_batch: usize,
    /// LoRA instead of full fine-tuning.
    pub lora: Option<LoraConfig>,
    /// Compute dtype (`f32`, `bf16`, `f16`).
    pub dtype: String,
    /// Sampling temperature.
    pub temperature: f64,
    /// Most new tokens per answer.
    pub max_new_tokens: usize,
    /// Generate on inference servers instead of in process (`[policy.server]`); the model
    /// still learns here, and its new weights go to the servers after every update.
    pub server: Option<ServerSpec>,
    /// Which learner updates the model (`[policy.learner]`): the candle learner in this
    /// process (the default), or a PyTorch FSDP2 worker launched with torchrun
    /// (`backend = "torch"`; see [`rla_torch::LearnerSpec`]).
    pub learner: rla_torch::LearnerSpec,
}

/// Inference servers for a model (`[policy.server]`, `[reward.server]`): OpenAI-compatible
/// endpoints (vLLM, SGLang, `rlanything serve`) that receive the new weights after every update
/// as `push` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSpec {
    /// Base URLs (`http://host:port`).
    pub endpoints: Vec<String>,
    /// The model's name on the servers.
    pub model: String,
    /// An environment variable holding the servers' API key, if they want one.
    pub api_key_env: Option<String>,
    /// Seconds allowed for one request.
    pub timeout_s: f64,
    /// Tries of a request (each on the least-loaded live server) before the run fails.
    pub tries: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Where new weights are written for the servers to read (default: the run's
    /// `served/<model>/`); it must be a path the servers see.
    pub weights_dir: Option<PathBuf>,
    /// How new weights reach the servers: `disk` (a checkpoint folder, loaded with SGLang's
    /// `/update_weights_from_disk`), `lora` (the LoRA adapter alone, in PEFT's format, loaded
    /// under a new name with `lora_api`'s call; needs the model's `lora` table), or `command`
    /// (a checkpoint folder, then `reload_command`).
    pub push: Push,
    /// The servers' adapter calls when `push = "lora"`: `vllm` (`/v1/load_lora_adapter`) or
    /// `sglang` (`/load_lora_adapter`).
    pub lora_api: rla_remote::client::LoraApi,
    /// With `push = "command"`: a shell command run after each new checkpoint is written, with
    /// `{path}` replaced by its folder (say, a script that restarts the servers on it); the run
    /// goes on when it exits with status 0.
    pub reload_command: Option<String>,
}

/// How new weights reach inference servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Push {
    /// A checkpoint folder, loaded with `/update_weights_from_disk`.
    #[default]
    Disk,
    /// The LoRA adapter, loaded with `/v1/load_lora_adapter`.
    Lora,
    /// A checkpoint folder, then the configured reload command.
    Command,
}

impl Default for ServerSpec {
    fn default() -> Self {
        ServerSpec {
            endpoints: vec![],
            model: "model".into(),
            api_key_env: None,
            timeout_s: 600.0,
            tries: 4,
            concurrency: 16,
            weights_dir: None,
            push: Push::Disk,
            lora_api: rla_remote::client::LoraApi::Vllm,
            reload_command: None,
        }
    }
}

impl ServerSpec {
    /// Checks the settings; `name` is the table's (`policy.server`).
    pub fn validate(&self, name: &str) -> Result<(), String> {
        if self.endpoints.is_empty() {
            return Err(format!(
                "{name}.endpoints is empty: list the servers' base URLs"
            ));
        }
        if let Some(e) = self
            .endpoints
            .iter()
            .find(|e| !(e.starts_with("http://") || e.starts_with("https://")))
        {
            return Err(format!(
                "{name}.endpoints: `{e}` is not an http:// or https:// URL"
            ));
        }
        if !(self.timeout_s > 0.0 && self.timeout_s.is_finite())
            || self.tries == 0
            || self.concurrency == 0
        {
            return Err(format!(
                "{name}: timeout_s, tries and concurrency must be positive"
            ));
        }
        match (self.push, &self.reload_command) {
            (Push::Command, None) => {
                return Err(format!(
                    "{name}.push = \"command\" needs {name}.reload_command"
                ))
            }
            (Push::Command, Some(c)) if c.trim().is_empty() => {
                return Err(format!("{name}.reload_command is empty"))
            }
            (Push::Disk | Push::Lora, Some(_)) => {
                return Err(format!(
                    "{name}.reload_command is set but push is not \"command\""
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

impl ModelSpec {
    /// How this model samples (its temperature and answer length) with `seed`.
    pub fn sampling(&self, seed: u64) -> rla_lm::SampleParams {
        rla_lm::SampleParams {
            temperature: self.temperature,
            max_new_tokens: self.max_new_tokens,
            seed,
            ..Default::default()
        }
    }
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            path: None,
            tiny: TinyShape::default(),
            lr: 1e-4,
            micro_batch: 32,
            mini_batch: 0,
            lora: None,
            dtype: "f32".into(),
            temperature: 1.0,
            max_new_tokens: 16,
            server: None,
            learner: rla_torch::LearnerSpec::default(),
        }
    }
}

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
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            in_domain: 140,
            ood: 134,
            validation: 0,
            every: 5,
        }
    }
}

/// Experiment tracking of a run's metrics (`[logging]`): every scalar of each iteration's
/// metrics record, as `metrics.jsonl` holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingConfig {
    /// TensorBoard event files in the run's `tensorboard/` folder, with the report's table as
    /// text.
    pub tensorboard: bool,
    /// Weights & Biases through its Python client (`wandb = { project = "…", mode = "offline" }`).
    pub wandb: Option<WandbConfig>,
}

/// A run's Weights & Biases logging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WandbConfig {
    /// The W&B project.
    pub project: String,
    /// `offline` (files in the run's `wandb/` folder, synced later with `wandb sync`) or
    /// `online`.
    #[serde(default = "WandbConfig::default_mode")]
    pub mode: String,
    /// The Python that has the `wandb` package (a path or a name on `PATH`).
    #[serde(default = "WandbConfig::default_python")]
    pub python: String,
    /// The run's display name (default: W&B's own).
    #[serde(default)]
    pub name: Option<String>,
}

impl WandbConfig {
    fn default_mode() -> String {
        "offline".into()
    }
    fn default_python() -> String {
        "python3".into()
    }
}

impl LoggingConfig {
    /// Rejects impossible values, naming them.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(w) = &self.wandb {
            if w.project.trim().is_empty() {
                return Err("logging.wandb.project is empty: name the W&B project".into());
            }
            if !matches!(w.mode.as_str(), "offline" | "online") {
                return Err(format!(
                    "logging.wandb.mode = {:?}: use \"offline\" or \"online\"",
                    w.mode
                ));
            }
            if w.python.trim().is_empty() {
                return Err("logging.wandb.python is empty: name a Python with wandb".into());
            }
        }
        Ok(())
    }
}

/// A setting's table of the run config (`[household]`, `[coding]`, …): read from the table of
/// the setting's name, written back there, and checked by the setting itself.
pub trait SettingConfig:
    Serialize + DeserializeOwned + Default + Clone + PartialEq + Debug + Send + Sync + 'static
{
    /// Rejects impossible values of the table, naming them; `run` is the whole config and
    /// `active` whether the run trains in this setting (a table of another setting is checked
    /// on its own).
    fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        let _ = (run, active);
        Ok(())
    }

    /// Makes the table's data paths usable from anywhere: relative ones are read from the config
    /// file's `folder`, `~` and `$VARIABLE`s expanded. The run folder's copy of the config then
    /// records where the data was.
    fn resolve_paths(&mut self, folder: &Path) -> Result<(), String> {
        let _ = folder;
        Ok(())
    }

    /// The run's table, which is this setting's ([`RunConfig::table`]).
    fn of(run: &RunConfig) -> &Self {
        run.table()
    }

    /// The run's table to change ([`RunConfig::table_mut`]).
    fn of_mut(run: &mut RunConfig) -> &mut Self {
        run.table_mut()
    }
}

/// The active setting's table, whichever setting it is ([`RunConfig::table`] reads it as its
/// own type).
pub struct SettingTable(Box<dyn AnyTable>);

/// What [`SettingTable`] needs of a table it holds.
trait AnyTable: Any + Debug + Send + Sync {
    fn clone_box(&self) -> Box<dyn AnyTable>;
    fn same(&self, other: &dyn AnyTable) -> bool;
    fn to_toml(&self) -> Result<toml::Value, String>;
    fn check(&self, run: &RunConfig, active: bool) -> Result<(), String>;
    fn resolve(&mut self, folder: &Path) -> Result<(), String>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: SettingConfig> AnyTable for T {
    fn clone_box(&self) -> Box<dyn AnyTable> {
        Box::new(self.clone())
    }
    fn same(&self, other: &dyn AnyTable) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn to_toml(&self) -> Result<toml::Value, String> {
        toml::Value::try_from(self).map_err(|e| e.to_string())
    }
    fn resolve(&mut self, folder: &Path) -> Result<(), String> {
        self.resolve_paths(folder)
    }
    fn check(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        self.validate(run, active)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
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

/// The table of a setting that has no keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoTable {}

impl SettingConfig for NoTable {}

impl SettingTable {
    /// Holds `table`.
    pub fn new<T: SettingConfig>(table: T) -> SettingTable {
        SettingTable(Box::new(table))
    }

    /// The table as `T`, if it is one.
    pub fn get<T: SettingConfig>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    /// The table as TOML.
    pub fn to_toml(&self) -> Result<toml::Value, String> {
        self.0.to_toml()
    }

    /// Rejects impossible values of the table (see [`SettingConfig::validate`]).
    pub fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        self.0.check(run, active)
    }
}

impl Default for SettingTable {
    fn default() -> Self {
        SettingTable::new(NoTable {})
    }
}

impl Clone for SettingTable {
    fn clone(&self) -> Self {
        SettingTable(self.0.clone_box())
    }
}

impl PartialEq for SettingTable {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(&*other.0)
    }
}

impl Debug for SettingTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Who rewrites a setting's tasks and summarises critiques (a setting's `rewriter` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewriterKind {
    /// The setting's structured rewriter (and, in the household, the phrase-count summariser).
    #[default]
    Structured,
    /// The reward model prompted as the reference prompts its environment model.
    RewardModel,
}

/// Files or folders standing in for a setting's fixed evaluation splits (a setting's
/// `eval_games`, `eval_problems`, …, read relative to the config's folder); a split not named keeps
/// the generated one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSources {
    /// In place of the in-domain split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_domain: Option<PathBuf>,
    /// In place of the OOD split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ood: Option<PathBuf>,
    /// In place of the validation split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<PathBuf>,
}

impl EvalSources {
    /// The file or folder standing in for `split`, if any.
    pub fn of(&self, split: rla_core::Split) -> Option<&Path> {
        use rla_core::Split;
        match split {
            Split::InDomain => self.in_domain.as_deref(),
            Split::Ood => self.ood.as_deref(),
            Split::Validation => self.validation.as_deref(),
            Split::Train => None,
        }
    }

    /// Whether no split is named.
    pub fn is_empty(&self) -> bool {
        self == &EvalSources::default()
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
    /// Accepted rewrites grow the pool instead of replacing their parent's slot.
    pub grow_pool: bool,
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
    /// PPO epochs per iteration.
    pub update_epochs: usize,
    /// Tasks that give policy samples.
    pub policy_band: Band,
    /// Tasks that give reward-model samples.
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

/// The largest count of tasks, rollouts or samples a config may ask for (2^20).
pub const MAX_COUNT: usize = 1 << 20;

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
            tasks_per_iteration: 16,
            rollouts_per_task: 8,
            judge_samples: 3,
            lambda: 1.0,
            advantage: AdvantageKind::Paper,
            trajectory_weight: None,
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
        for (name, v) in [
            ("pool_size", self.pool_size),
            ("rollouts_per_task", self.rollouts_per_task),
            ("judge_samples (m)", self.judge_samples),
            ("pretrain.tasks", self.pretrain.tasks),
            ("pretrain.held_out", self.pretrain.held_out),
            ("pretrain.validation", self.pretrain.validation),
            ("pretrain.judge_tasks", self.pretrain.judge_tasks),
            ("pretrain.dagger_tasks", self.pretrain.dagger_tasks),
        ] {
            if v > MAX_COUNT {
                return Err(format!("{name} = {v}: at most {MAX_COUNT}"));
            }
        }
        pos("judge_samples (m)", self.judge_samples)?;
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

/// One `--set KEY=VALUE` of the command line: a dotted key of the run config (`policy.lr`,
/// `household.train_step_limit`) and its value, read as TOML (`3`, `1e-4`, `true`, `"text"`,
/// `[1, 2]`, `{ project = "p" }`) or else as a string (`mode=full`). The key and the value are
/// checked as the config file's own would be.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The dotted key.
    pub key: String,
    /// The value.
    pub value: toml::Value,
}

impl Override {
    /// `seed = n`, as `--seed` gives it.
    pub fn seed(n: u64) -> Override {
        Override {
            key: "seed".into(),
            value: toml::Value::Integer(n as i64),
        }
    }

    /// The key's parts.
    pub fn path(&self) -> Vec<&str> {
        self.key.split('.').collect()
    }

    /// Sets the key in a config's table, making the tables on its way.
    pub fn apply(&self, t: &mut toml::Table) -> Result<(), String> {
        let parts = self.path();
        let (last, tables) = parts.split_last().expect("a key has a part");
        let mut at = t;
        for (i, part) in tables.iter().enumerate() {
            let v = at
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            at = v.as_table_mut().ok_or_else(|| {
                format!(
                    "--set {}: `{}` is a value, not a table",
                    self.key,
                    parts[..=i].join(".")
                )
            })?;
        }
        at.insert(last.to_string(), self.value.clone());
        Ok(())
    }
}

impl std::str::FromStr for Override {
    type Err = String;

    fn from_str(s: &str) -> Result<Override, String> {
        let Some((key, raw)) = s.split_once('=') else {
            return Err(format!("--set {s}: write KEY=VALUE (say, policy.lr=1e-4)"));
        };
        let key = key.trim();
        if key.is_empty() || key.split('.').any(|p| p.trim().is_empty() || p != p.trim()) {
            return Err(format!(
                "--set {s}: `{key}` is not a key (dotted names: policy.lr)"
            ));
        }
        let raw = raw.trim();
        let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_string()));
        Ok(Override {
            key: key.to_string(),
            value,
        })
    }
}

/// What a resumed run may be given that differs from its recorded config: keys that only
/// extend it (more `iterations`) or change how it is tracked (`logging`).
pub fn extends_the_run(key: &str) -> bool {
    key == "iterations" || key == "logging" || key.starts_with("logging.")
}

/// Refuses overrides that would change a finished part of the run recorded in `recorded`: each
/// override's key must read the same in `recorded` and `next` (both as written to
/// `config.toml`), unless it only extends the run ([`extends_the_run`]); fewer `iterations` than
/// recorded are refused too.
pub fn check_resume_overrides(
    recorded: &RunConfig,
    next: &RunConfig,
    overrides: &[Override],
) -> Result<(), String> {
    let a = toml::Value::try_from(recorded).map_err(|e| e.to_string())?;
    let b = toml::Value::try_from(next).map_err(|e| e.to_string())?;
    let at = |v: &toml::Value, o: &Override| -> Option<toml::Value> {
        let mut v = v;
        for p in o.path() {
            v = v.get(p)?;
        }
        Some(v.clone())
    };
    for o in overrides {
        let (old, new) = (at(&a, o), at(&b, o));
        if o.key == "iterations" && next.iterations < recorded.iterations {
            return Err(format!(
                "--set iterations={}: the run was started with iterations = {}; a resumed run \
                 may only be given more",
                next.iterations, recorded.iterations
            ));
        }
        if old != new && !extends_the_run(&o.key) {
            let show = |v: Option<toml::Value>| v.map_or("(unset)".to_string(), |v| v.to_string());
            return Err(format!(
                "--set {}: the run was started with {} = {} and this would make it {}; a resumed \
                 run keeps its configuration (only iterations and logging may change): start a \
                 new run to change it",
                o.key,
                o.key,
                show(old),
                show(new)
            ));
        }
    }
    Ok(())
}
