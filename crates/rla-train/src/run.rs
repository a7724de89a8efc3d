//! The run folder: the config used, `metrics.jsonl`, `tasks.jsonl` (the pool's lineage),
//! sample trajectories, and an atomic checkpoint (models, optimiser states, pool, pending
//! rewrites, metrics) that `--resume` continues from. Every file is written to a temporary name
//! and renamed.

use crate::config::RunConfig;
use crate::pool::{Pool, PoolTask};
use anyhow::{Context, Result};
use rla_lm::Learner;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What one iteration measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IterMetrics {
    /// Iteration number (0: before training).
    pub iteration: usize,
    /// With `draw = "stream"`: the pool's tasks drawn at least once so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_distinct: Option<usize>,
    /// With `draw = "stream"`: draws so far of a task drawn before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_repeated: Option<usize>,
    /// Success of the training rollouts.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub train_success: f64,
    /// Mean integrated step reward.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub mean_step_reward: f64,
    /// μ by the label, p₊ + p₋ from verdicts against the steps' labels (the household's: the
    /// label an agent could know; coding: the tests' ground truth); not the paper's μ, which is
    /// [`IterMetrics::mu_outcome`].
    pub mu: Option<f64>,
    /// μ as the paper defines it, conditioned on the outcome: p₊ the judge's +1 on steps of won
    /// episodes, p₋ its −1 on steps of lost ones (settings that judge steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu_outcome: Option<f64>,
    /// The p₊ of [`IterMetrics::mu_outcome`]: the judge's share of +1 verdicts on steps of won
    /// episodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_plus_outcome: Option<f64>,
    /// The p₋ of [`IterMetrics::mu_outcome`]: its share of −1 verdicts on steps of lost ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_minus_outcome: Option<f64>,
    /// Theorem 1's bound at the run's m.
    pub bound: Option<f64>,
    /// Empirical precision A.
    pub precision: Option<f64>,
    /// The judge's process accuracy against the steps' labels (the household's: the label an
    /// agent could know, the searching expert's).
    pub process_acc: Option<f64>,
    /// The judge's process accuracy against the steps' second labels, where the setting has them
    /// (the household's fully informed planner's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_acc_planner: Option<f64>,
    /// The judge's outcome accuracy.
    pub outcome_acc: Option<f64>,
    /// Tasks flagged by the Theorem 2 imbalance indicator.
    pub imbalanced_tasks: usize,
    /// Accuracy of each rolled-out task.
    #[serde(deserialize_with = "rla_core::nan::vec_f64_or_nan")]
    pub task_acc: Vec<f64>,
    /// Policy training samples.
    pub policy_samples: usize,
    /// Reward-model training samples.
    pub reward_samples: usize,
    /// The policy's PPO loss in the last epoch (the sample-weighted mean over its mini-batches).
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub policy_loss: f64,
    /// The reward model's PPO loss in the last epoch (as the policy's).
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub reward_loss: f64,
    /// Pending rewrites evaluated this iteration.
    pub pending_evaluated: usize,
    /// Of those, accepted.
    pub accepted: usize,
    /// Rewrites pending for the next iteration.
    pub pending_next: usize,
    /// Pool size.
    pub pool_size: usize,
    /// Success on the in-domain split (when evaluated): the mean over its tasks of each task's
    /// share of won episodes, `eval.samples` sampled a task (greedy success where
    /// `eval_in_domain_se` is absent: runs recorded before evaluations were sampled, or a setting
    /// that cannot sample).
    pub eval_in_domain: Option<f64>,
    /// Success on the OOD split (when evaluated), as `eval_in_domain`.
    pub eval_ood: Option<f64>,
    /// Success on the validation split (when evaluated and `eval.validation > 0`), as
    /// `eval_in_domain`.
    #[serde(default)]
    pub eval_validation: Option<f64>,
    /// The standard error over the tasks of the sampled `eval_in_domain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_in_domain_se: Option<f64>,
    /// The standard error of the sampled `eval_ood`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_ood_se: Option<f64>,
    /// The standard error of the sampled `eval_validation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_validation_se: Option<f64>,
    /// Greedy success on the in-domain split, with `eval.greedy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_in_domain_greedy: Option<f64>,
    /// Greedy success on the OOD split, with `eval.greedy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_ood_greedy: Option<f64>,
    /// Greedy success on the validation split, with `eval.greedy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_validation_greedy: Option<f64>,
    /// Seconds: rollout.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub time_rollout: f64,
    /// Seconds: judge.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub time_judge: f64,
    /// Seconds: updates.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub time_update: f64,
    /// Seconds: critique and adaptation.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub time_adapt: f64,
    /// Seconds: evaluation.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub time_eval: f64,
    /// Mean k3 estimate of KL(π_old ‖ π_ref) over the policy's training tokens, when the KL
    /// reference is the frozen warm start.
    #[serde(default)]
    pub policy_kl: Option<f64>,
    /// The update's vital signs ([`crate::vitals`]).
    #[serde(default)]
    pub vitals: crate::vitals::Vitals,
    /// The setting's own metrics (coding: code accuracy, unit-test accuracy, detection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<serde_json::Value>,
}

/// The version of the run-state format; runs written in another format are refused by name.
pub const STATE_FORMAT: u32 = 2;

/// Everything besides the models that a resumed run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "T: PoolTask")]
pub struct RunState<T> {
    /// [`STATE_FORMAT`].
    pub format: u32,
    /// The setting the run plays (`household`, `coding`, …).
    pub setting: String,
    /// Iterations completed.
    pub completed: usize,
    /// The pool, its pending rewrites and lineage.
    pub pool: Pool<T>,
    /// Metrics of every completed iteration (and iteration 0).
    pub metrics: Vec<IterMetrics>,
}

impl<T: PoolTask> RunState<T> {
    /// A fresh state.
    pub fn new(setting: &str, tasks: Vec<T>) -> Self {
        RunState {
            format: STATE_FORMAT,
            setting: setting.to_string(),
            completed: 0,
            pool: Pool::new(tasks),
            metrics: vec![],
        }
    }
}

/// The parts of a run state every setting shares (to read metrics without knowing the task
/// type).
#[derive(Debug, Deserialize)]
struct StateHead {
    #[serde(default)]
    format: Option<u32>,
    #[serde(default)]
    setting: Option<String>,
    metrics: Vec<IterMetrics>,
}

/// The most read of a run folder's state, metrics or config (a pool of many tasks makes a
/// large state; a symlink to `/dev/zero` stops here).
const MAX_RUN_FILE: u64 = 1 << 30;

/// Writes through a temporary file and a rename.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    Ok(rla_lm::write_atomic(path, text.as_bytes())?)
}

/// Whether two metric records are the same, NaN equal to NaN (a diverged run's losses).
fn same_metrics(a: &[IterMetrics], b: &[IterMetrics]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| serde_json::to_string(x).ok() == serde_json::to_string(y).ok())
}

/// The lock a trainer holds on its run folder (`run.lock`) while it works; released when
/// dropped or when the process ends, however it ends.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

/// Takes the run folder's lock, refusing when another trainer holds it.
pub fn lock_run(dir: &Path) -> Result<RunLock> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let p = dir.join("run.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .with_context(|| format!("cannot open {}", p.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(RunLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another trainer is working in {} (it holds {}); wait for it to finish or stop it",
            dir.display(),
            p.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", p.display()))
        }
    }
}

/// The config a run folder recorded (`RUN/config.toml`) with `overrides` applied, read and
/// checked as a config file. A run names its data by canonical paths (and records them in
/// [`crate::sources::FILE`]); a run recorded before that may name them by relative paths, which
/// were written relative to the working folder it was started from, and are read from the
/// working folder.
pub fn recorded_config(dir: &Path, overrides: &[crate::config::Override]) -> Result<RunConfig> {
    let p = dir.join("config.toml");
    let text = rla_core::file::read_to_string_limited(&p, MAX_RUN_FILE)
        .with_context(|| format!("cannot read {}", p.display()))?;
    RunConfig::parse_in_with(&text, Path::new(""), overrides)
        .map_err(|e| anyhow::anyhow!("{}: {e:#}", p.display()))
}

/// A run folder.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Its path.
    pub path: PathBuf,
}

impl RunDir {
    /// Opens a run folder, writing `config.toml` for a new run. A resumed run must use the config
    /// it was started with.
    pub fn create(path: &Path, cfg: &RunConfig, resume: bool) -> Result<RunDir> {
        std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
        let cpath = path.join("config.toml");
        if !resume
            && (path.join("checkpoint/state.json").exists()
                || path.join("checkpoint.old/state.json").exists())
        {
            anyhow::bail!(
                "{} already holds a run; pass --resume to continue it",
                path.display()
            );
        }
        let text = toml::to_string_pretty(cfg)?;
        if cpath.exists() && resume {
            // the data it started on, unchanged (a run recorded before its sources passes)
            crate::sources::check(path)?;
            let old = recorded_config(path, &[])?;
            // what only extends the run (more iterations) or changes its tracking may differ
            let mut same = old.clone();
            same.iterations = cfg.iterations.max(old.iterations);
            same.logging = cfg.logging.clone();
            if &same != cfg {
                anyhow::bail!("{} was started with a different configuration; resume with `rlanything train --resume {}` alone", path.display(), path.display());
            }
            if &old != cfg {
                write_atomic(&cpath, &text)?;
            }
        } else {
            write_atomic(&cpath, &text)?;
            crate::sources::record(path, cfg)?;
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// Where the last completed checkpoint lives.
    pub fn checkpoint_dir(&self) -> PathBuf {
        self.path.join("checkpoint")
    }

    /// The state file of the last completed iteration, if any (recovering from a crash between
    /// the two renames of a checkpoint swap).
    fn state_file(&self) -> Result<Option<(PathBuf, String)>> {
        let ck = self.checkpoint_dir();
        let old = self.path.join("checkpoint.old");
        if !ck.join("state.json").exists() && old.join("state.json").exists() {
            std::fs::rename(&old, &ck)?;
        }
        let p = ck.join("state.json");
        if !p.exists() {
            return Ok(None);
        }
        let text = rla_core::file::read_to_string_limited(&p, MAX_RUN_FILE)
            .with_context(|| format!("cannot read {}", p.display()))?;
        let head: StateHead = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a run state", p.display()))?;
        if head.format != Some(STATE_FORMAT) {
            anyhow::bail!(
                "{} holds a run in state format {} and this is rlanything {} (format {STATE_FORMAT}): \
                 finish or report it with the release that started it, or start a new run",
                self.path.display(),
                head.format.map_or("1 (unrecorded)".to_string(), |f| f.to_string()),
                env!("CARGO_PKG_VERSION")
            );
        }
        // the state's metrics are the record: a `metrics.jsonl` that lost iterations to a kill
        // (after the swap, before the file was rewritten) is rewritten from them
        let on_file = self.read_metrics_file().unwrap_or_default();
        if !same_metrics(&on_file, &head.metrics) {
            self.write_metrics_file(&head.metrics)?;
        }
        Ok(Some((p, text)))
    }

    /// The state of the last completed iteration, if any.
    pub fn load_state<T: PoolTask>(&self, setting: &str) -> Result<Option<RunState<T>>> {
        let Some((p, text)) = self.state_file()? else {
            return Ok(None);
        };
        let head: StateHead = serde_json::from_str(&text)?;
        if let Some(other) = head.setting.filter(|s| s != setting) {
            anyhow::bail!(
                "{} holds a {other} run, not a {setting} run",
                self.path.display()
            );
        }
        let s: RunState<T> = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a {setting} run state", p.display()))?;
        // every checkpoint records the metrics of the iteration it completes: a count the
        // metrics do not bear out (an edited or damaged state) would skip iterations never run
        let last = s.metrics.iter().map(|m| m.iteration).max().unwrap_or(0);
        if s.completed != last {
            anyhow::bail!(
                "{} says {} iteration(s) completed, but its metrics end at iteration {last}: \
                 the state is damaged or edited; restore the checkpoint or start the run anew",
                p.display(),
                s.completed
            );
        }
        Ok(Some(s))
    }

    /// Metrics written so far.
    pub fn metrics(&self) -> Result<Vec<IterMetrics>> {
        Ok(match self.state_file()? {
            None => vec![],
            Some((p, text)) => {
                serde_json::from_str::<StateHead>(&text)
                    .with_context(|| format!("{}", p.display()))?
                    .metrics
            }
        })
    }

    /// Records iteration 0 (before training) in a fresh run: in the state and in `metrics.jsonl`.
    pub fn push_metrics<T: PoolTask>(
        &self,
        state: &mut RunState<T>,
        m: &IterMetrics,
    ) -> Result<()> {
        state.metrics.retain(|x| x.iteration < m.iteration);
        state.metrics.push(m.clone());
        self.write_metrics_file(&state.metrics)
    }

    /// Refuses to start a run afresh over completed iterations: their metrics are on file but
    /// the state that would continue them is gone, and starting again would overwrite them.
    pub fn check_no_lost_state(&self) -> Result<()> {
        let p = self.path.join("metrics.jsonl");
        let done = match self.read_metrics_file() {
            Ok(ms) => ms.iter().map(|m| m.iteration).max().unwrap_or(0),
            // unreadable metrics: count the lines that are not the initial evaluation
            Err(_) => rla_core::file::read_to_string_limited(&p, MAX_RUN_FILE)
                .map(|t| {
                    t.lines()
                        .filter(|l| !l.trim().is_empty())
                        .count()
                        .saturating_sub(1)
                })
                .unwrap_or(0),
        };
        if done > 0 {
            anyhow::bail!(
                "{} holds metrics of {done} completed iteration(s) in {} but no \
                 checkpoint/state.json to continue them from; starting again would overwrite \
                 them. Move the folder away (or delete metrics.jsonl) to start anew, or restore \
                 its checkpoint",
                self.path.display(),
                p.display()
            );
        }
        Ok(())
    }

    fn read_metrics_file(&self) -> Result<Vec<IterMetrics>> {
        let p = self.path.join("metrics.jsonl");
        if !p.exists() {
            return Ok(vec![]);
        }
        rla_core::file::read_to_string_limited(&p, MAX_RUN_FILE)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).with_context(|| format!("{}", p.display())))
            .collect()
    }

    fn write_metrics_file(&self, all: &[IterMetrics]) -> Result<()> {
        let text: String = all
            .iter()
            .map(|m| serde_json::to_string(m).expect("json") + "\n")
            .collect();
        write_atomic(&self.path.join("metrics.jsonl"), &text)
    }

    /// Saves models, optimisers, pool and metrics as the new last checkpoint; `m` joins the
    /// state's metrics. `policy_files` (name, content) are written beside the policy.
    pub fn checkpoint<T: PoolTask>(
        &self,
        state: &mut RunState<T>,
        policy: &dyn Learner,
        reward: &dyn Learner,
        policy_files: &[(String, String)],
        m: &IterMetrics,
    ) -> Result<()> {
        state.metrics.retain(|x| x.iteration < m.iteration);
        state.metrics.push(m.clone());
        let tmp = self.path.join("checkpoint.tmp");
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)?;
        }
        std::fs::create_dir_all(&tmp)?;
        policy.save(&tmp.join("policy"))?;
        for (name, text) in policy_files {
            write_atomic(&tmp.join("policy").join(name), text)?;
        }
        reward.save(&tmp.join("reward"))?;
        write_atomic(&tmp.join("state.json"), &serde_json::to_string(&*state)?)?;
        let ck = self.checkpoint_dir();
        let old = self.path.join("checkpoint.old");
        if ck.exists() {
            if old.exists() {
                std::fs::remove_dir_all(&old)?;
            }
            std::fs::rename(&ck, &old)?;
        }
        std::fs::rename(&tmp, &ck)?;
        if old.exists() {
            std::fs::remove_dir_all(&old)?;
        }
        self.write_metrics_file(&state.metrics)?;
        fn lines<X: Serialize>(xs: &[X]) -> String {
            xs.iter()
                .map(|x| serde_json::to_string(x).expect("json") + "\n")
                .collect()
        }
        write_atomic(&self.path.join("tasks.jsonl"), &lines(&state.pool.lineage))?;
        write_atomic(&self.path.join("pool.jsonl"), &lines(&state.pool.slots))?;
        Ok(())
    }

    /// Writes a JSON value to a file of the run folder (atomically).
    pub fn save_json<T: Serialize>(&self, rel: &str, v: &T) -> Result<()> {
        let p = self.path.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        write_atomic(&p, &serde_json::to_string_pretty(v)?)
    }
}

/// What diverged in an iteration (a loss that is NaN or infinite), if anything.
pub fn diverged(m: &IterMetrics) -> Option<String> {
    let bad: Vec<String> = [
        ("the policy's PPO loss", m.policy_loss),
        ("the reward model's PPO loss", m.reward_loss),
    ]
    .into_iter()
    .filter(|(_, x)| !x.is_finite())
    .map(|(n, x)| format!("{n} is {x}"))
    .collect();
    (!bad.is_empty()).then(|| bad.join(" and "))
}
