//! The seam between the loop and a setting. A setting (the household, coding, …) implements
//! [`Setting`] once, in its own module; the loop (`Trainer::iteration`) names
//! no setting. What a setting hands back from playing and judging is one shape for every
//! setting — [`Group`]s of [`Episode`]s per task, each step a [`Generation`] of the policy, and
//! the reward model's [`Judgement`]s — from which one piece of code builds the rewards,
//! advantages and PPO samples with `rla-core`'s rules.

use crate::config::RunConfig;
use crate::pool::PoolTask;
use crate::run::RunDir;
use anyhow::Result;
use rla_core::adapt::Direction;
use rla_core::filter::Band;
use rla_core::reward::StepScore;
use rla_core::theory::Calibration;
use rla_lm::Sampler;
use std::path::Path;

/// Which fixed evaluation split.
pub use rla_core::Split;

/// A (prompt text, answer text) example.
pub type Example = (String, String);

/// One generation of a model: its prompt, its response and `log π_old` of each response token.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Response token ids.
    pub response: Vec<u32>,
    /// `log π_old` per response token.
    pub logprobs: Vec<f32>,
    /// When the response was drawn among allowed answers, the tokens each of its tokens was
    /// drawn among ([`rla_lm::PpoSample::choices`]); `logprobs` are then over those only.
    pub choices: Option<Vec<Vec<u32>>>,
}

/// One policy step of an episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// What the policy generated.
    pub action: Generation,
    /// The environment state the step started from, as a key ([`crate::play::StepRec::state`]):
    /// the groups of credit by state. `None` where the setting gives none.
    pub state: Option<u64>,
}

/// One episode (a rollout) of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// The outcome O: +1 won, −1 lost; or graded (a program's share of passed tests).
    pub outcome: f64,
    /// Whether the task was solved (what the task's accuracy counts).
    pub won: bool,
    /// Its steps.
    pub steps: Vec<Step>,
}

/// One sample of the reward model with its parsed verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The reward model's generation.
    pub sample: Generation,
    /// Its verdict S_ij (+1, −1, or unparsed).
    pub score: StepScore,
}

/// How the reward model's samples of one judgement are rewarded.
#[derive(Debug, Clone, PartialEq)]
pub enum JudgeReward {
    /// The paper's consistency reward `R_i·S_ij` of the judged step, z-scored over the m
    /// samples (samples whose advantage is exactly 0 are skipped).
    Consistency,
    /// Raw rewards computed by a rule of the setting (one per sample), z-scored over the
    /// samples; `None` skips the judgement (e.g. CURE's tests on a problem no program solves).
    Given(Option<Vec<f64>>),
}

/// The reward model's m samples on one judged unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The judged step as (episode, step) within the group; `None` when the judgement is of
    /// the whole task (a generated unit test). A step's verdicts enter its reward R_i.
    pub step: Option<(usize, usize)>,
    /// The m samples.
    pub samples: Vec<Scored>,
    /// How they are rewarded.
    pub reward: JudgeReward,
}

/// Every episode of one task, and the reward model's judgements on them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Group {
    /// The task's episodes.
    pub episodes: Vec<Episode>,
    /// The judgements (in the order their samples train the reward model).
    pub judgements: Vec<Judgement>,
}

impl Group {
    /// Episodes won.
    pub fn wins(&self) -> usize {
        self.episodes.iter().filter(|e| e.won).count()
    }
}

/// The reward model's quality in one iteration, as the setting measures it.
#[derive(Debug, Clone, Default)]
pub struct JudgeQuality {
    /// Verdicts against ground truth (p₊, p₋, hence μ).
    pub calibration: Calibration,
    /// Verdicts against the episode's outcome, μ as the paper defines it: p₊ the judge's +1 on
    /// steps of won episodes, p₋ its −1 on steps of lost ones (where the setting judges steps).
    pub outcome_calibration: Option<Calibration>,
    /// Empirical precision A, where the setting has it.
    pub precision: Option<f64>,
    /// Process accuracy (household: against the step labels an agent could know, the searching
    /// expert's; desktop: against its expert's labels; coding: unit-test accuracy).
    pub process_acc: Option<f64>,
    /// Process accuracy against the steps' second labels, where they have them (household: the
    /// fully informed planner's).
    pub process_acc_planner: Option<f64>,
    /// Outcome accuracy (household: against the episode's outcome; coding: detection).
    pub outcome_acc: Option<f64>,
    /// The setting's own metrics, stored under `setting` in `metrics.jsonl`.
    pub extra: Option<serde_json::Value>,
}

/// What a warm start is given: the back end its models come from, the run's configuration, the
/// folder the models go to (`out/policy`, `out/reward`), and whether to show progress bars.
#[derive(Clone, Copy)]
pub struct WarmStart<'a> {
    /// Where models come from.
    pub backend: &'a dyn rla_lm::Backend,
    /// The run's configuration.
    pub cfg: &'a RunConfig,
    /// The folder the models are saved in.
    pub out: &'a Path,
    /// Progress bars on stderr.
    pub progress: bool,
}

/// How a sampled evaluation plays each task: `samples` episodes at `temperature`, from the
/// stream `seed`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sampling {
    /// The policy's temperature (above 0).
    pub temperature: f64,
    /// Episodes a task.
    pub samples: usize,
    /// The seed of the draws.
    pub seed: u64,
}

impl Sampling {
    /// The policy's sampling parameters, answers up to `max_new_tokens` tokens.
    pub fn params(&self, max_new_tokens: usize) -> rla_lm::SampleParams {
        rla_lm::SampleParams {
            temperature: self.temperature,
            max_new_tokens,
            seed: self.seed,
            ..Default::default()
        }
    }
}

/// Each of `n` tasks' episode scores, from episodes that name their task.
pub fn scores_by_task(n: usize, trajs: &[crate::trajectory::Trajectory]) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new(); n];
    for t in trajs {
        if let Some(s) = out.get_mut(t.task) {
            s.push(t.score);
        }
    }
    out
}

/// What a setting is told of the iteration it plays in.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The run's configuration.
    pub cfg: &'a RunConfig,
    /// The iteration (0 for evaluations before training).
    pub k: usize,
    /// Progress bars on stderr.
    pub progress: bool,
    /// The run's folder, when inside a run (a setting writes what it makes there, such as
    /// rewritten games).
    pub run: Option<&'a std::path::Path>,
}

impl Ctx<'_> {
    /// The seed of one random choice of this iteration.
    pub fn seed(&self, tag: u64) -> u64 {
        seed_of(self.cfg, self.k, tag)
    }

    /// The seed of the `i`-th of a random choice's items in this iteration (a task's rewrite, a
    /// problem's): its own stream, never another tag's.
    pub fn item_seed(&self, tag: u64, i: usize) -> u64 {
        rla_core::seed::stream(self.cfg.seed, &[self.k as u64, tag, i as u64])
    }

    /// A progress bar of `len` steps, when progress is shown.
    pub fn bar(&self, len: u64, what: &str) -> Option<indicatif::ProgressBar> {
        self.progress.then(|| crate::bar(len, what))
    }

    /// Does `f` with a progress bar of `len` steps (when progress is shown), cleared after.
    pub fn with_bar<R>(
        &self,
        len: u64,
        what: &str,
        f: impl FnOnce(Option<&indicatif::ProgressBar>) -> R,
    ) -> R {
        let bar = self.bar(len, what);
        let r = f(bar.as_ref());
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        r
    }
}

/// The seed of one random choice of iteration `k` (a role: the pool's draw, the policy's
/// rollouts, the judge's verdicts, …, named by `tag`): a stream of its own for every (iteration,
/// role) pair (`rla_core::seed::stream`).
pub fn seed_of(cfg: &RunConfig, k: usize, tag: u64) -> u64 {
    iteration_seed(cfg.seed, k, tag)
}

/// [`seed_of`] for a run of seed `seed`.
pub fn iteration_seed(seed: u64, k: usize, tag: u64) -> u64 {
    rla_core::seed::stream(seed, &[k as u64, tag])
}

/// A setting the registry ([`crate::registry`]) names and builds: its name in configs, its
/// table of the run config, and how it is made from that table.
pub trait Registered: Setting + Sized + 'static {
    /// Its name in configs (`setting = "…"`), which is also its table's (`[household]`).
    const NAME: &'static str;
    /// Its table of the run config.
    type Config: crate::config::SettingConfig;
    /// The setting with its table.
    fn new(cfg: Self::Config) -> Self;
}

/// A setting of the loop: its tasks, how they are played and judged, measured, evaluated,
/// critiqued and rewritten.
pub trait Setting {
    /// A task of the pool (serialisable, with an id).
    type Task: PoolTask;
    /// What the setting keeps of one iteration's play and judging (for its metrics, critiques
    /// and sample files).
    type Record;

    /// The name stored in the run folder (`household`, `coding`, …).
    fn name(&self) -> &'static str;

    /// The initial pool.
    fn initial_pool(&self, cfg: &RunConfig) -> Result<Vec<Self::Task>>;

    /// Plays every task `cfg.rollouts_per_task` times with the policy: one group per task.
    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[Self::Task],
    ) -> Result<(Vec<Group>, Self::Record)>;

    /// Asks the reward model for its verdicts (m samples per judged unit), adding them to the
    /// groups.
    fn judge(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        tasks: &[Self::Task],
        groups: &mut [Group],
        record: &mut Self::Record,
    ) -> Result<()>;

    /// How good the reward model's verdicts were.
    fn judge_quality(&self, groups: &[Group], record: &Self::Record) -> JudgeQuality;

    /// The band of task accuracy whose groups train the policy (the config's by default).
    fn policy_band(&self, cfg: &RunConfig) -> Band {
        cfg.policy_band
    }

    /// The band of task accuracy whose groups train the reward model (the config's by default).
    fn reward_band(&self, cfg: &RunConfig) -> Band {
        cfg.reward_band
    }

    /// The critique of task `i`'s episodes that guides its rewrite.
    fn critique(
        &self,
        ctx: Ctx,
        reward: &dyn Sampler,
        i: usize,
        groups: &[Group],
        record: &Self::Record,
    ) -> Option<String>;

    /// A harder or easier rewrite of a task, with a description of what changed; `None` when
    /// there is none. `i` is the task's index in this iteration's batch.
    fn rewrite(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        task: &Self::Task,
        direction: Direction,
        critique: Option<&str>,
        i: usize,
    ) -> Result<Option<(String, Self::Task)>>;

    /// How the setting checks a rewrite before proposing it, if it does (a rewrite is then kept
    /// only if the setting's solver solves it, so every accepted task is solvable: the paper's
    /// pass@≥1 of accepted tasks is 1 by construction). The report says so.
    fn rewrite_check(&self) -> Option<&'static str> {
        None
    }

    /// Called with a rewrite the loop has accepted, before it joins the pool: a setting that
    /// wrote the rewrite somewhere may keep it where accepted tasks go (and point the task there).
    fn accepted(&mut self, ctx: Ctx, task: &mut Self::Task) -> Result<()> {
        let _ = (ctx, task);
        Ok(())
    }

    /// How many tasks a fixed evaluation split holds; `None` for a generator without end. A
    /// config asking for more is refused before the run starts.
    fn split_size(&self, split: Split) -> Option<usize> {
        let _ = split;
        None
    }

    /// Greedy success of the policy on the first `n` tasks of a fixed evaluation split.
    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64>;

    /// The same evaluation task by task: each greedy episode with its task's kind (the
    /// setting's own grouping, such as the desktop's family and column count) and what the task
    /// asked (`eval --by-kind`, `eval --show`); `None` where the setting does not group its
    /// tasks.
    fn evaluate_episodes(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
    ) -> Result<Option<Vec<EvalEpisode>>> {
        let _ = (ctx, policy, split, n);
        Ok(None)
    }

    /// The first `n` tasks of `split`, each played `sampling.samples` times at
    /// `sampling.temperature` (streams from `sampling.seed`, so that two policies evaluated with
    /// one seed meet the same draws): each task's episode scores, in task order (1 solved, 0 not,
    /// or the evaluator's share). `None` where the setting cannot sample its evaluation.
    fn evaluate_sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>> {
        let _ = (ctx, policy, split, n, sampling);
        Ok(None)
    }

    /// Writes a few of the iteration's episodes to the run folder.
    fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        tasks: &[Self::Task],
        record: &Self::Record,
    ) -> Result<()>;

    /// Warm-starts tiny policy and reward models into `out/policy` and `out/reward`; a line per
    /// model says what was done.
    fn warm_start(&self, w: WarmStart) -> Result<Vec<String>>;

    /// Files recorded beside the policy in every checkpoint (name, content), such as how it
    /// plays, so that evaluation later uses the same prompts.
    fn policy_files(&self, _cfg: &RunConfig) -> Result<Vec<(String, String)>> {
        Ok(vec![])
    }

    /// Expert demonstrations (prompt, answer) of fresh training tasks for the SFT control
    /// ([`crate::control`]), prompted as the policy plays; `chunk` numbers successive calls,
    /// each drawing other tasks.
    fn demonstrations(&self, cfg: &RunConfig, chunk: u64) -> Result<Vec<Example>> {
        let _ = (cfg, chunk);
        anyhow::bail!(
            "the {} setting has no demonstrations for the SFT control",
            self.name()
        )
    }

    /// DAgger's labels for the SFT control that continues a base's own recipe
    /// ([`crate::control`]): `policy` plays `tasks` fresh training tasks of chunk `chunk` greedily,
    /// as DAgger's rounds play them, and the setting's expert names its action at the states the
    /// policy reached (prompt, answer), as the rounds label them.
    fn own_state_labels(
        &self,
        cfg: &RunConfig,
        policy: &dyn Sampler,
        chunk: u64,
        tasks: usize,
    ) -> Result<Vec<Example>> {
        let _ = (cfg, policy, chunk, tasks);
        anyhow::bail!(
            "the {} setting has no expert to label the policy's own states (the sft control \
             continues a base made with DAgger's labels; sft-demos trains on demonstrations alone)",
            self.name()
        )
    }

    /// The names of the two judge-quality columns of the ablation table.
    fn judge_columns(&self) -> (&'static str, &'static str) {
        ("process acc", "outcome acc")
    }

    /// The setting's own evaluations of a policy beyond the fixed splits, which `ablate --games
    /// DATA` adds to its table: `data` is what they read, checked here before anything runs.
    /// None by default, and `ablate` then refuses the flag.
    fn extra_evaluations(
        &self,
        cfg: &RunConfig,
        data: &Path,
    ) -> Result<Vec<Box<dyn ExtraEvaluation>>> {
        let _ = (cfg, data);
        Ok(vec![])
    }
}

/// A setting's own evaluation of a policy beyond the fixed splits
/// ([`Setting::extra_evaluations`]): how many of its tasks the policy won, which the ablation's
/// table shows before and after training.
pub trait ExtraEvaluation {
    /// Its name in the table's columns ("games won").
    fn name(&self) -> String;
    /// The stem of the file its result is kept in, beside what it evaluates (`games`:
    /// `games.json`, and `games-start.json` for the starting policy).
    fn key(&self) -> String;
    /// The policy in the folder `policy` evaluated: `(won, played)`. The result is kept in
    /// `record` (a JSON file) and read back while it names the same policy and data, so a
    /// finished evaluation is not played again.
    fn evaluate(
        &self,
        backend: &dyn rla_lm::Backend,
        policy: &Path,
        record: &Path,
    ) -> Result<(usize, usize)>;
}

/// One greedy evaluation episode with its task ([`Setting::evaluate_episodes`]).
#[derive(Debug, Clone)]
pub struct EvalEpisode {
    /// The task's kind, the setting's own grouping (`eval --by-kind`).
    pub kind: String,
    /// What the task asked (the desktop's instruction) or its id.
    pub task: String,
    /// The episode.
    pub traj: crate::trajectory::Trajectory,
}
