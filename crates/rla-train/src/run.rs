//! The run folder: the config used, `metrics.jsonl`, `tasks.jsonl` (the pool's lineage),
//! sample trajectories, and an atomic checkpoint (models, optimiser states, pool, pending
//! rewrites, metrics) that `--resume` continues from. Every file is written to a temporary name
//! and renamed.

use crate::config::RunConfig;
use crate::pool::{Lineage, Pending, TaskPool};
use crate::rollout::{Trajectory, Verdicts};
use anyhow::{Context, Result};
use rla_core::adapt::Direction;
use rla_env::household::TaskSpec;
use rla_model::{LanguageModel, Lm};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What one iteration measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IterMetrics {
    /// Iteration number (0: before training).
    pub iteration: usize,
    /// Success of the training rollouts.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub train_success: f64,
    /// Mean integrated step reward.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub mean_step_reward: f64,
    /// μ = p₊ + p₋ from oracle-labelled verdicts.
    pub mu: Option<f64>,
    /// Theorem 1's bound at the run's m.
    pub bound: Option<f64>,
    /// Empirical precision A.
    pub precision: Option<f64>,
    /// The judge's process accuracy (against the expert's oracle labels).
    pub process_acc: Option<f64>,
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
    /// Last policy PPO loss.
    #[serde(deserialize_with = "rla_core::nan::f64_or_nan")]
    pub policy_loss: f64,
    /// Last reward-model PPO loss.
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
    /// Greedy success on the in-domain split (when evaluated).
    pub eval_in_domain: Option<f64>,
    /// Greedy success on the OOD split (when evaluated).
    pub eval_ood: Option<f64>,
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
    /// The coding setting's metrics (code accuracy, unit-test accuracy, detection).
    #[serde(default)]
    pub code: Option<rla_core::coding::CodingMetrics>,
}

/// Everything besides the models that a resumed run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// Iterations completed.
    pub completed: usize,
    /// The pool.
    pub pool: TaskPool,
    /// Rewrites to roll out next.
    pub pending: Vec<Pending>,
    /// Every rewrite decided so far.
    pub lineage: Vec<Lineage>,
    /// Metrics of every completed iteration (and iteration 0).
    pub metrics: Vec<IterMetrics>,
    /// The coding setting's problems.
    #[serde(default)]
    pub code: crate::coding::CodeState,
}

impl RunState {
    /// A fresh state.
    pub fn new(pool: TaskPool) -> Self {
        RunState {
            completed: 0,
            pool,
            pending: vec![],
            lineage: vec![],
            metrics: vec![],
            code: Default::default(),
        }
    }

    /// Proposes a rewrite of a slot's task.
    pub fn propose(
        &mut self,
        rewriter: &dyn crate::rewriter::Rewriter,
        slot: usize,
        dir: Direction,
        acc: f64,
        critique: Option<String>,
        k: usize,
    ) -> Option<Pending> {
        let parent = &self.pool.slots[slot].task;
        let (desc, task) = rewriter.rewrite(parent, dir, critique.as_deref(), k)?;
        Some(Pending {
            slot,
            task,
            direction: dir,
            parent_acc: acc,
            critique,
            perturbation: desc,
            proposed_at: k,
        })
    }

    /// Records the decision on a pending rewrite; an accepted one replaces its slot's task
    /// (history kept) or, with `grow`, gets a slot of its own.
    pub fn record_outcome(&mut self, p: &Pending, acc: f64, accepted: bool, k: usize, grow: bool) {
        self.lineage.push(Lineage {
            id: p.task.id.clone(),
            parent: p.task.parent.clone().unwrap_or_default(),
            direction: p.direction,
            perturbation: p.perturbation.clone(),
            critique: p.critique.clone(),
            acc_before: p.parent_acc,
            acc_after: acc,
            accepted,
            iteration: k,
            task: p.task.clone(),
        });
        if accepted {
            if grow {
                self.pool.slots.push(crate::pool::Slot {
                    task: p.task.clone(),
                    history: vec![],
                });
            } else if let Some(s) = self.pool.slots.get_mut(p.slot) {
                let old = std::mem::replace(&mut s.task, p.task.clone());
                s.history.push(old.id);
            }
        }
    }
}

/// Writes through a temporary file and a rename.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    Ok(rla_model::weights::write_atomic(path, text.as_bytes())?)
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
            let old: RunConfig = toml::from_str(&std::fs::read_to_string(&cpath)?)
                .with_context(|| format!("{}", cpath.display()))?;
            if &old != cfg {
                anyhow::bail!("{} was started with a different configuration; resume with `rlanything train --resume {}` alone", path.display(), path.display());
            }
        } else {
            write_atomic(&cpath, &text)?;
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// Where the last completed checkpoint lives.
    pub fn checkpoint_dir(&self) -> PathBuf {
        self.path.join("checkpoint")
    }

    /// The state of the last completed iteration, if any (recovering from a crash between the
    /// two renames of a checkpoint swap). The state's metrics are the record: a `metrics.jsonl`
    /// that lost iterations to a kill (after the swap, before the file was rewritten) is
    /// rewritten from them.
    pub fn load_state(&self) -> Result<Option<RunState>> {
        let ck = self.checkpoint_dir();
        let old = self.path.join("checkpoint.old");
        if !ck.join("state.json").exists() && old.join("state.json").exists() {
            std::fs::rename(&old, &ck)?;
        }
        let p = ck.join("state.json");
        if !p.exists() {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?;
        let s: RunState = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a run state of this version ({})",
                p.display(),
                env!("CARGO_PKG_VERSION")
            )
        })?;
        let on_file = self.read_metrics_file().unwrap_or_default();
        if !same_metrics(&on_file, &s.metrics) {
            self.write_metrics_file(&s.metrics)?;
        }
        Ok(Some(s))
    }

    /// Metrics written so far.
    pub fn metrics(&self) -> Result<Vec<IterMetrics>> {
        Ok(self.load_state()?.map(|s| s.metrics).unwrap_or_default())
    }

    /// Records iteration 0 (before training) in a fresh run: in the state and in `metrics.jsonl`.
    pub fn push_metrics(&self, state: &mut RunState, m: &IterMetrics) -> Result<()> {
        state.metrics.retain(|x| x.iteration < m.iteration);
        state.metrics.push(m.clone());
        self.write_metrics_file(&state.metrics)
    }

    fn read_metrics_file(&self) -> Result<Vec<IterMetrics>> {
        let p = self.path.join("metrics.jsonl");
        if !p.exists() {
            return Ok(vec![]);
        }
        std::fs::read_to_string(&p)?
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
    /// state's metrics. `episodes`, the way the policy plays, is recorded in its folder.
    pub fn checkpoint(
        &self,
        state: &mut RunState,
        policy: &Lm,
        reward: &Lm,
        episodes: Option<&crate::rollout::Episodes>,
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
        if let Some(ep) = episodes {
            ep.save_in(&tmp.join("policy"))?;
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
        fn lines<T: Serialize>(xs: &[T]) -> String {
            xs.iter()
                .map(|x| serde_json::to_string(x).expect("json") + "\n")
                .collect()
        }
        let coding = !state.code.pool.is_empty();
        let lineage = if coding {
            lines(&state.code.lineage)
        } else {
            lines(&state.lineage)
        };
        write_atomic(&self.path.join("tasks.jsonl"), &lineage)?;
        let pool = if coding {
            lines(&state.code.pool)
        } else {
            lines(&state.pool.slots)
        };
        write_atomic(&self.path.join("pool.jsonl"), &pool)?;
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

    /// A few trajectories of an iteration with the judge's verdicts (`samples/iter-K.json`).
    pub fn save_samples(
        &self,
        k: usize,
        tasks: &[TaskSpec],
        trajs: &[Trajectory],
        verdicts: &[Vec<Verdicts>],
    ) -> Result<()> {
        let picked: Vec<serde_json::Value> = trajs
            .iter()
            .enumerate()
            .filter(|(j, _)| j % 8 == 0)
            .take(6)
            .map(|(j, t)| {
                serde_json::json!({
                    "task": tasks[t.task].sentence(),
                    "task_id": tasks[t.task].id,
                    "won": t.won,
                    "steps": t.steps.iter().enumerate().map(|(i, s)| serde_json::json!({
                        "answer": s.answer, "action": s.action, "feedback": s.next_observation, "oracle_progress": s.progress,
                        "verdicts": verdicts.get(j).and_then(|v| v.get(i)).map(|v| v.texts.clone()),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        self.save_json(&format!("samples/iter-{k:04}.json"), &picked)
    }
}
