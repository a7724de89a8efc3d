//! A run's evaluations on the fixed splits. Each split's first tasks are played `eval.samples`
//! times at `eval.temperature` from the run's evaluation seed ([`sampling`]); every episode draws
//! from a stream of (that seed, its task, its index among the task's episodes)
//! ([`crate::play::episode_seed`]), never of what the policy or the other episodes did, so every
//! policy evaluated with one config — the warm start, each checkpoint, another mode's — meets
//! the same draws, episode for episode. The metrics keep the mean success over the tasks and its
//! standard error (greedy success beside it with `eval.greedy`); `RUN/evals/<split>-<iteration>.json`
//! keeps each task's mean score ([`SplitEval`]), so that two evaluations on the same tasks pair
//! task by task without playing again (`ablate`'s table, the run's verdict, `rlanything compare
//! --recorded`). The initial evaluation is made once a process for the runs that start alike
//! (`ablate`'s modes of a seed: [`initial_eval_key`]).

use crate::config::RunConfig;
use crate::run::IterMetrics;
use crate::setting::{Ctx, Sampling, Setting, Split};
use crate::trainer::Trainer;
use anyhow::{bail, Context, Result};
use rla_core::stats::{mean_std_error, paired_difference, Paired};
use rla_lm::Sampler;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The folder of a run's per-task evaluation records.
pub const EVALS: &str = "evals";

/// How a run evaluates `split`: the config's samples and temperature, from a seed of the run's
/// seed and the split alone (not of the iteration, so the run's evaluations pair with each
/// other and with any run of the same seed).
pub fn sampling(cfg: &RunConfig, split: Split) -> Sampling {
    Sampling {
        temperature: cfg.eval.temperature,
        samples: cfg.eval.samples,
        seed: rla_core::seed::stream(rla_core::seed::mix(cfg.seed, "eval"), &[split_index(split)]),
    }
}

fn split_index(split: Split) -> u64 {
    match split {
        Split::Train => 0,
        Split::InDomain => 1,
        Split::Ood => 2,
        Split::Validation => 3,
    }
}

/// One sampled evaluation of a split, as `RUN/evals/<split>-<iteration>.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitEval {
    /// The split.
    pub split: Split,
    /// The run's iteration evaluated (0: the warm start).
    pub iteration: usize,
    /// How it was played: the draws' seed included.
    pub sampling: Sampling,
    /// Each task's mean score over its episodes, in task order.
    pub scores: Vec<f64>,
    /// The mean over the tasks.
    pub mean: f64,
    /// Its standard error over the tasks.
    pub std_error: f64,
}

/// Each task's mean score over its episodes.
pub fn task_means(per_task: &[Vec<f64>]) -> Result<Vec<f64>> {
    per_task
        .iter()
        .enumerate()
        .map(|(i, t)| {
            rla_core::stats::mean(t)
                .with_context(|| format!("task {i} of the evaluation played no episode"))
        })
        .collect()
}

impl SplitEval {
    /// The evaluation of the per-task episode scores `per_task` (each task's list, in task
    /// order); an error for no task or a task without an episode.
    pub fn of(
        split: Split,
        iteration: usize,
        sampling: Sampling,
        per_task: &[Vec<f64>],
    ) -> Result<SplitEval> {
        let scores = task_means(per_task)?;
        let Some((mean, std_error)) = mean_std_error(&scores) else {
            bail!("the {} split's evaluation played no task", split.name());
        };
        Ok(SplitEval {
            split,
            iteration,
            sampling,
            scores,
            mean,
            std_error,
        })
    }

    /// Where a run keeps its evaluation of `split` at iteration `k`.
    pub fn path(run: &Path, split: Split, k: usize) -> PathBuf {
        run.join(EVALS).join(format!("{}-{k}.json", split.name()))
    }

    /// Writes it into the run folder `run`, atomically.
    pub fn write(&self, run: &Path) -> Result<()> {
        let p = Self::path(run, self.split, self.iteration);
        std::fs::create_dir_all(p.parent().expect("a file in a folder"))
            .with_context(|| format!("creating {}", run.join(EVALS).display()))?;
        rla_core::file::write_atomic(&p, serde_json::to_string(self)?.as_bytes())?;
        Ok(())
    }

    /// The run's evaluation of `split` at iteration `k`, if it kept one.
    pub fn read(run: &Path, split: Split, k: usize) -> Result<Option<SplitEval>> {
        let p = Self::path(run, split, k);
        if !p.exists() {
            return Ok(None);
        }
        let text = rla_core::file::read_to_string(&p)?;
        let e: SplitEval = serde_json::from_str(&text)
            .with_context(|| format!("{}: not an evaluation this program wrote", p.display()))?;
        if (e.split, e.iteration) != (split, k) {
            bail!(
                "{}: holds the {} split at iteration {}",
                p.display(),
                e.split.name(),
                e.iteration
            );
        }
        Ok(Some(e))
    }

    /// The run's last kept evaluation of `split` (at its highest iteration), if any.
    pub fn last(run: &Path, split: Split) -> Result<Option<SplitEval>> {
        let dir = run.join(EVALS);
        if !dir.is_dir() {
            return Ok(None);
        }
        let prefix = format!("{}-", split.name());
        let mut last: Option<usize> = None;
        for e in std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))? {
            let name = e?.file_name();
            let k = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<usize>().ok());
            if let Some(k) = k {
                last = Some(last.map_or(k, |l| l.max(k)));
            }
        }
        match last {
            Some(k) => Self::read(run, split, k),
            None => Ok(None),
        }
    }

    /// The paired difference `self − base` task by task; an error names what differs when the
    /// two did not play the same split, tasks and draws.
    pub fn paired(&self, base: &SplitEval) -> Result<Paired> {
        if self.split != base.split {
            bail!(
                "the evaluations are of different splits ({} and {})",
                self.split.name(),
                base.split.name()
            );
        }
        if self.sampling != base.sampling {
            bail!(
                "the evaluations drew differently ({:?} and {:?}): pair only evaluations of one \
                 sampling and seed",
                self.sampling,
                base.sampling
            );
        }
        paired_difference(&self.scores, &base.scores).with_context(|| {
            format!(
                "the evaluations played {} and {} tasks",
                self.scores.len(),
                base.scores.len()
            )
        })
    }
}

/// What one split's evaluation in a run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    /// The sampled evaluation; `None` where the setting cannot sample its evaluation.
    pub sampled: Option<SplitEval>,
    /// Greedy success: with `eval.greedy`, or where the setting cannot sample.
    pub greedy: Option<f64>,
}

impl Evaluated {
    /// The split's success as the metrics keep it: the sampled mean, else greedy success.
    pub fn success(&self) -> f64 {
        match &self.sampled {
            Some(s) => s.mean,
            None => self.greedy.unwrap_or(0.0),
        }
    }

    /// Records it in `m` (greedy success under its own name when `keep_greedy`).
    pub fn record(&self, split: Split, m: &mut IterMetrics, keep_greedy: bool) {
        let (success, se, greedy) = fields(m, split);
        *success = Some(self.success());
        *se = self.sampled.as_ref().map(|s| s.std_error);
        *greedy = if keep_greedy { self.greedy } else { None };
    }
}

/// What `m` records of `split`: (success, its standard error where sampled, greedy success).
pub fn recorded(m: &IterMetrics, split: Split) -> (Option<f64>, Option<f64>, Option<f64>) {
    match split {
        Split::Ood => (m.eval_ood, m.eval_ood_se, m.eval_ood_greedy),
        Split::Validation => (
            m.eval_validation,
            m.eval_validation_se,
            m.eval_validation_greedy,
        ),
        Split::InDomain | Split::Train => (
            m.eval_in_domain,
            m.eval_in_domain_se,
            m.eval_in_domain_greedy,
        ),
    }
}

/// The metrics' fields of `split`: success, its standard error, greedy success.
fn fields(
    m: &mut IterMetrics,
    split: Split,
) -> (&mut Option<f64>, &mut Option<f64>, &mut Option<f64>) {
    match split {
        Split::Ood => (&mut m.eval_ood, &mut m.eval_ood_se, &mut m.eval_ood_greedy),
        Split::Validation => (
            &mut m.eval_validation,
            &mut m.eval_validation_se,
            &mut m.eval_validation_greedy,
        ),
        Split::InDomain | Split::Train => (
            &mut m.eval_in_domain,
            &mut m.eval_in_domain_se,
            &mut m.eval_in_domain_greedy,
        ),
    }
}

/// What a run's evaluation asks of a setting: a [`Setting`] or a registered one alike.
pub trait Evaluates {
    /// The setting's name.
    fn setting_name(&self) -> &'static str;
    /// Greedy success ([`Setting::evaluate`]).
    fn greedy(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64>;
    /// Each task's sampled episode scores ([`Setting::evaluate_sampled`]).
    fn sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>>;
}

impl<S: Setting> Evaluates for S {
    fn setting_name(&self) -> &'static str {
        Setting::name(self)
    }
    fn greedy(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        Setting::evaluate(self, ctx, policy, split, n)
    }
    fn sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>> {
        Setting::evaluate_sampled(self, ctx, policy, split, n, sampling)
    }
}

impl Evaluates for dyn crate::registry::AnySetting + '_ {
    fn setting_name(&self) -> &'static str {
        self.name()
    }
    fn greedy(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        self.evaluate(ctx, policy, split, n)
    }
    fn sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>> {
        self.evaluate_sampled(ctx, policy, split, n, sampling)
    }
}

/// `policy` on the first `n` tasks of `split` as a run evaluates it at iteration `iteration`:
/// sampled ([`sampling`]), and greedily with `eval.greedy` or where the setting cannot sample
/// (which a warning says once); nothing for `n = 0`.
pub fn evaluate<E: Evaluates + ?Sized>(
    setting: &mut E,
    ctx: Ctx,
    policy: &dyn Sampler,
    (split, n): (Split, usize),
    iteration: usize,
) -> Result<Evaluated> {
    if n == 0 {
        // no task, nothing to measure
        return Ok(Evaluated {
            sampled: None,
            greedy: None,
        });
    }
    let cfg = ctx.cfg;
    let s = sampling(cfg, split);
    let sampled = match setting.sampled(ctx, policy, split, n, s)? {
        Some(per_task) => Some(SplitEval::of(split, iteration, s, &per_task)?),
        None => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::warn!(
                    "the {} setting cannot sample its evaluation: its runs record greedy \
                     success, without a standard error",
                    setting.setting_name()
                )
            });
            None
        }
    };
    let greedy = (cfg.eval.greedy || sampled.is_none())
        .then(|| setting.greedy(ctx, policy, split, n))
        .transpose()?;
    Ok(Evaluated { sampled, greedy })
}

/// The splits a run evaluates and how many tasks of each: in-domain, OOD and validation, each
/// where its count is above 0 (a split of no task is not evaluated, and its metrics stay empty).
pub fn splits(cfg: &RunConfig) -> Vec<(Split, usize)> {
    let e = &cfg.eval;
    [
        (Split::InDomain, e.in_domain),
        (Split::Ood, e.ood),
        (Split::Validation, e.validation),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .collect()
}

/// Records a run's evaluations of iteration `m.iteration` in its metrics and their per-task
/// scores in `run/evals/`.
fn store(
    run: &Path,
    evals: &[(Split, Evaluated)],
    m: &mut IterMetrics,
    greedy: bool,
) -> Result<()> {
    for (split, e) in evals {
        e.record(*split, m, greedy);
        if let Some(s) = &e.sampled {
            let s = SplitEval {
                iteration: m.iteration,
                ..s.clone()
            };
            s.write(run)?;
        }
    }
    Ok(())
}

impl<S: Setting> Trainer<S> {
    /// Evaluates the policy on both fixed splits and, when configured, the validation split
    /// ([`evaluate`]), into `m` and the run's `evals/`.
    pub(crate) fn evaluate_splits(&mut self, m: &mut IterMetrics) -> Result<()> {
        let t = std::time::Instant::now();
        let evals = self.evaluations(m.iteration)?;
        store(&self.dir.path, &evals, m, self.cfg.eval.greedy)?;
        m.time_eval = t.elapsed().as_secs_f64();
        Ok(())
    }

    fn evaluations(&mut self, iteration: usize) -> Result<Vec<(Split, Evaluated)>> {
        let ctx = Ctx {
            cfg: &self.cfg,
            k: self.state.completed,
            progress: self.progress,
            run: Some(&self.dir.path),
        };
        splits(&self.cfg)
            .into_iter()
            .map(|(split, n)| {
                let e = evaluate(&mut self.setting, ctx, &*self.policy, (split, n), iteration)?;
                Ok((split, e))
            })
            .collect()
    }

    /// The evaluation before training (iteration 0) into `m0`: made here, or taken from the
    /// same evaluation of the same model made earlier in this process ([`initial_eval_key`]).
    pub(crate) fn initial_evaluation(&mut self, m0: &mut IterMetrics) -> Result<()> {
        let key = initial_eval_key(&self.cfg);
        let made = key.as_ref().and_then(|k| {
            INITIAL_EVALS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(k)
                .cloned()
        });
        match made {
            Some(evals) => {
                store(&self.dir.path, &evals, m0, self.cfg.eval.greedy)?;
                tracing::info!(
                    "initial evaluation: the same model on the same evaluation earlier in this \
                     process"
                );
            }
            None => {
                let t = std::time::Instant::now();
                let evals = self.evaluations(m0.iteration)?;
                store(&self.dir.path, &evals, m0, self.cfg.eval.greedy)?;
                m0.time_eval = t.elapsed().as_secs_f64();
                if let Some(k) = key {
                    INITIAL_EVALS
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(k, evals);
                }
            }
        }
        Ok(())
    }
}

/// The initial evaluations made in this process, by [`initial_eval_key`]: `ablate`'s modes of a
/// seed start from the same model and evaluate it alike, so one evaluation serves them all.
static INITIAL_EVALS: std::sync::Mutex<
    std::collections::BTreeMap<String, Vec<(Split, Evaluated)>>,
> = std::sync::Mutex::new(std::collections::BTreeMap::new());

/// What decides a run's initial evaluation: its config but for the keys that cannot change it
/// (the mode, the number of iterations, logging), and the bytes of the policy's files. `None`
/// (evaluate) when the policy is not a folder of files read in process.
pub(crate) fn initial_eval_key(cfg: &RunConfig) -> Option<String> {
    use std::hash::{Hash, Hasher};
    let path = cfg.policy.path.as_ref()?;
    if cfg.policy.server.is_some() {
        return None;
    }
    let mut t = toml::Value::try_from(cfg).ok()?;
    let table = t.as_table_mut()?;
    for k in ["mode", "iterations", "logging"] {
        table.remove(k);
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    toml::to_string(&t).ok()?.hash(&mut h);
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(path)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for f in files {
        f.file_name().hash(&mut h);
        std::fs::read(&f).ok()?.hash(&mut h);
    }
    Some(format!("{:016x}", h.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_initial_evaluation_is_shared_by_modes_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("model.safetensors"), b"weights").unwrap();
        let mut cfg = RunConfig::default();
        assert_eq!(initial_eval_key(&cfg), None, "no files to read");
        cfg.policy.path = Some(dir.path().to_path_buf());
        let key = initial_eval_key(&cfg).unwrap();
        let mut other = cfg.clone();
        other.mode = crate::config::Mode::Outcome;
        other.iterations += 5;
        assert_eq!(
            initial_eval_key(&other).unwrap(),
            key,
            "mode and iterations"
        );
        other.eval.in_domain += 1;
        assert_ne!(initial_eval_key(&other).unwrap(), key, "another evaluation");
        let mut sampled = cfg.clone();
        sampled.eval.samples += 1;
        assert_ne!(initial_eval_key(&sampled).unwrap(), key, "other samples");
        let mut seeded = cfg.clone();
        seeded.seed += 1;
        assert_ne!(initial_eval_key(&seeded).unwrap(), key, "another seed");
        let mut longer = cfg.clone();
        use crate::config::SettingConfig;
        crate::household::config::HouseholdConfig::of_mut(&mut longer).eval_step_limit += 1;
        assert_ne!(
            initial_eval_key(&longer).unwrap(),
            key,
            "the setting's table"
        );
        std::fs::write(dir.path().join("model.safetensors"), b"weight!").unwrap();
        assert_ne!(initial_eval_key(&cfg).unwrap(), key, "other weights");
    }

    #[test]
    fn a_runs_draws_depend_on_its_seed_and_the_split_alone() {
        let mut cfg = RunConfig::default();
        let a = sampling(&cfg, Split::InDomain);
        assert_eq!((a.samples, a.temperature), (8, 0.8));
        cfg.mode = crate::config::Mode::Outcome;
        cfg.iterations += 3;
        assert_eq!(sampling(&cfg, Split::InDomain), a, "mode and iterations");
        assert_ne!(sampling(&cfg, Split::Ood).seed, a.seed, "another split");
        cfg.seed += 1;
        assert_ne!(sampling(&cfg, Split::InDomain).seed, a.seed, "another seed");
    }

    #[test]
    fn evaluations_are_kept_task_by_task_and_pair_only_with_their_likes() {
        let dir = tempfile::tempdir().unwrap();
        let s = sampling(&RunConfig::default(), Split::InDomain);
        let base = SplitEval::of(
            Split::InDomain,
            0,
            s,
            &[vec![1.0, 0.0], vec![0.0, 0.0], vec![1.0, 1.0]],
        )
        .unwrap();
        assert_eq!(base.scores, vec![0.5, 0.0, 1.0]);
        assert_eq!(base.mean, 0.5);
        assert!((base.std_error - (0.25f64 / 3.0).sqrt()).abs() < 1e-12);
        let after = SplitEval::of(
            Split::InDomain,
            4,
            s,
            &[vec![1.0, 1.0], vec![0.0, 1.0], vec![1.0, 1.0]],
        )
        .unwrap();
        base.write(dir.path()).unwrap();
        after.write(dir.path()).unwrap();
        assert_eq!(
            SplitEval::read(dir.path(), Split::InDomain, 0).unwrap(),
            Some(base.clone())
        );
        assert_eq!(SplitEval::read(dir.path(), Split::Ood, 0).unwrap(), None);
        assert_eq!(
            SplitEval::last(dir.path(), Split::InDomain).unwrap(),
            Some(after.clone())
        );
        // per-task differences 0.5, 0.5, 0: mean 1/3, standard error sqrt(1/12 / 3)
        let p = after.paired(&base).unwrap();
        assert!((p.mean - 1.0 / 3.0).abs() < 1e-12, "{p:?}");
        assert!(
            (p.std_error - (1.0f64 / 36.0).sqrt()).abs() < 1e-12,
            "{p:?}"
        );
        assert_eq!(base.paired(&base).unwrap().std_error, 0.0);
        // other draws, other tasks: refused by name
        let other = SplitEval {
            sampling: Sampling { seed: 9, ..s },
            ..base.clone()
        };
        assert!(after
            .paired(&other)
            .unwrap_err()
            .to_string()
            .contains("drew"));
        let fewer = SplitEval {
            scores: vec![1.0],
            ..base.clone()
        };
        assert!(after
            .paired(&fewer)
            .unwrap_err()
            .to_string()
            .contains("3 and 1 tasks"));
        assert!(SplitEval::of(Split::Ood, 0, s, &[vec![1.0], vec![]])
            .unwrap_err()
            .to_string()
            .contains("task 1"));
        assert!(SplitEval::of(Split::Ood, 0, s, &[]).is_err());
    }
}
