//! Evaluation of a policy outside a run, in any setting: its greedy success on a split
//! ([`setting_success`]), its sampled success with a standard error, task by task
//! ([`setting_sampled`], as a run evaluates), two policies compared on the same tasks and draws
//! ([`compare`]), and its episodes by the kind of their tasks ([`setting_episodes`]). A setting's
//! own views of its episodes live in its folder.
//!
//! The policy is any [`Sampler`]: a checkpoint opened in process, or a model on OpenAI-compatible
//! servers ([`rla_remote::client::RemoteSampler`]); the functions return what they measured and
//! print nothing (the command line prints it).

use crate::config::RunConfig;
use crate::setting::{Ctx, Split};
use anyhow::{bail, Result};
use rla_lm::Sampler;
use std::path::{Path, PathBuf};

/// The config of an evaluation named by a run folder (its `config.toml`) or a config file, and
/// the policy checkpoint it names by default: the run's last checkpoint, else the config's
/// `policy.path` (`None` when it names neither).
pub fn run_config(c: &Path) -> Result<(RunConfig, Option<PathBuf>)> {
    let (file, run) = if c.is_dir() {
        (c.join("config.toml"), Some(c))
    } else {
        (c.to_path_buf(), None)
    };
    if !file.exists() {
        bail!(
            "{}: neither a run folder (with config.toml) nor a config file",
            c.display()
        );
    }
    let cfg = match run {
        // a run folder's evaluation reads the data the run started on
        Some(r) => {
            crate::sources::check(r)?;
            crate::run::recorded_config(r, &[])?
        }
        None => RunConfig::load(&file)?,
    };
    let policy = match run {
        Some(r) if r.join("checkpoint/policy").exists() => Some(r.join("checkpoint/policy")),
        _ => cfg.policy.path.clone(),
    };
    Ok((cfg, policy))
}

/// What a setting's own evaluation measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingSuccess {
    /// The setting's name.
    pub setting: &'static str,
    /// Tasks played.
    pub n: usize,
    /// Greedy success.
    pub success: f64,
}

/// The greedy success of `policy` on the first `n` tasks of `split` (all of a finite split when
/// `n` is `None`) in the config's setting, through the setting's own evaluation.
pub fn setting_success(
    cfg: &RunConfig,
    policy: &dyn Sampler,
    split: Split,
    n: Option<usize>,
    progress: bool,
) -> Result<SettingSuccess> {
    let (mut s, n, ctx) = prepare(cfg, split, n, progress)?;
    let success = s.evaluate(ctx, policy, split, n)?;
    Ok(SettingSuccess {
        setting: s.name(),
        n,
        success,
    })
}

/// What a setting's sampled evaluation measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledSuccess {
    /// The setting's name.
    pub setting: &'static str,
    /// Each task's mean score over its episodes, in task order.
    pub per_task: Vec<f64>,
    /// The mean over the tasks.
    pub mean: f64,
    /// Its standard error over the tasks.
    pub std_error: f64,
}

/// `policy` on the first `n` tasks of `split` (all of a finite split when `n` is `None`),
/// `sampling.samples` episodes a task at `sampling.temperature`, through the setting's own
/// sampled evaluation ([`crate::setting::Setting::evaluate_sampled`]).
pub fn setting_sampled(
    cfg: &RunConfig,
    policy: &dyn Sampler,
    split: Split,
    n: Option<usize>,
    sampling: crate::setting::Sampling,
    progress: bool,
) -> Result<SampledSuccess> {
    check_sampling(sampling.temperature, sampling.samples)?;
    let (mut s, n, ctx) = prepare(cfg, split, n, progress)?;
    let Some(scores) = s.evaluate_sampled(ctx, policy, split, n, sampling)? else {
        bail!("the {} setting cannot sample its evaluation", s.name());
    };
    if scores.is_empty() {
        bail!(
            "the {split:?} split of the {} setting holds no task",
            s.name()
        );
    }
    let e = crate::evals::SplitEval::of(split, 0, sampling, &scores)?;
    Ok(SampledSuccess {
        setting: s.name(),
        per_task: e.scores,
        mean: e.mean,
        std_error: e.std_error,
    })
}

/// Two policies on the same tasks with the same draws, and their paired difference.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The first policy's evaluation.
    pub a: SampledSuccess,
    /// The second's.
    pub b: SampledSuccess,
    /// The per-task difference `a − b`: its mean and standard error.
    pub paired: rla_core::stats::Paired,
}

impl Comparison {
    /// The verdict in the paired difference's terms: ahead, behind, or no difference shown,
    /// by more than two paired standard errors.
    pub fn verdict(&self) -> String {
        verdict(&self.paired)
    }
}

/// The verdict on a paired difference `a − b`: the first ahead, behind, or no difference shown,
/// by more than two paired standard errors.
pub fn verdict(p: &rla_core::stats::Paired) -> String {
    let d = format!(
        "{:+.1} ± {:.1} points over {} tasks",
        100.0 * p.mean,
        100.0 * p.std_error,
        p.n
    );
    if !p.beyond(2.0) {
        format!("no difference shown: {d}, within two paired standard errors")
    } else if p.mean > 0.0 {
        format!("the first is ahead: {d}, more than two paired standard errors")
    } else {
        format!("the first is behind: {d}, more than two paired standard errors")
    }
}

/// Evaluates `a` and `b` on the same tasks of `split` with the same sampling (seed included),
/// and compares them task by task.
pub fn compare(
    cfg: &RunConfig,
    (a, b): (&dyn Sampler, &dyn Sampler),
    split: Split,
    n: Option<usize>,
    sampling: crate::setting::Sampling,
    progress: bool,
) -> Result<Comparison> {
    let ra = setting_sampled(cfg, a, split, n, sampling, progress)?;
    let rb = setting_sampled(cfg, b, split, n, sampling, progress)?;
    let paired = rla_core::stats::paired_difference(&ra.per_task, &rb.per_task)
        .ok_or_else(|| anyhow::anyhow!("the two evaluations played different tasks"))?;
    Ok(Comparison {
        a: ra,
        b: rb,
        paired,
    })
}

/// What a setting's own evaluation starts from: the config checked, its setting, how many tasks
/// to play and the context to play them in.
fn prepare(
    cfg: &RunConfig,
    split: Split,
    n: Option<usize>,
    progress: bool,
) -> Result<(Box<dyn crate::registry::AnySetting>, usize, Ctx<'_>)> {
    cfg.validate().map_err(anyhow::Error::msg)?;
    let s = crate::registry::setting(cfg)?;
    let n = tasks_to_play(s.as_ref(), split, n)?;
    let ctx = Ctx {
        cfg,
        k: 0,
        progress,
        run: None,
    };
    Ok((s, n, ctx))
}

/// How many tasks of `split` an evaluation asked for `n` plays: all of a finite split by
/// default; more than it holds, none, or no count for an endless one is an error.
fn tasks_to_play(
    s: &dyn crate::registry::AnySetting,
    split: Split,
    n: Option<usize>,
) -> Result<usize> {
    Ok(match (n, s.split_size(split)) {
        (Some(0), _) => bail!("--n 0: evaluate at least one task"),
        (Some(n), Some(size)) if n > size => bail!(
            "--n {n}: the {split:?} split of the {} setting holds {size} tasks",
            s.name()
        ),
        (Some(n), _) => n,
        (None, Some(size)) => size,
        (None, None) => bail!("--n: the {split:?} split has no end; say how many"),
    })
}

/// A kind of evaluation task and how the policy did on it (`eval --by-kind`).
#[derive(Debug, Clone, PartialEq)]
pub struct KindSuccess {
    /// The setting's name for the kind.
    pub kind: String,
    /// Tasks of the kind played.
    pub tasks: usize,
    /// Of those, won.
    pub won: usize,
}

/// [`setting_success`] episode by episode, each with its task's kind and what it asked
/// (`eval --by-kind`, `eval --show`); an error names a setting that does not keep them.
pub fn setting_episodes(
    cfg: &RunConfig,
    policy: &dyn Sampler,
    split: Split,
    n: Option<usize>,
    progress: bool,
) -> Result<(SettingSuccess, Vec<crate::setting::EvalEpisode>)> {
    let (mut s, n, ctx) = prepare(cfg, split, n, progress)?;
    let Some(played) = s.evaluate_episodes(ctx, policy, split, n)? else {
        bail!(
            "the {} setting does not group its evaluation tasks by kind nor keep their episodes (--by-kind, --show)",
            s.name()
        );
    };
    let won = played.iter().filter(|e| e.traj.won()).count();
    Ok((
        SettingSuccess {
            setting: s.name(),
            n: played.len(),
            success: if played.is_empty() {
                0.0
            } else {
                won as f64 / played.len() as f64
            },
        },
        played,
    ))
}

/// An episode step by step as `eval --show` prints it: the task, its kind and score, then
/// each step's observation, the action and what went wrong.
pub fn show_episode(i: usize, e: &crate::setting::EvalEpisode) -> String {
    let t = &e.traj;
    let mut s = format!(
        "=== episode {i} [{}] {} (score {:.2}, {} steps)\ntask: {}\n",
        e.kind,
        if t.won() { "won" } else { "lost" },
        t.score,
        t.steps.len(),
        e.task
    );
    for (k, st) in t.steps.iter().enumerate() {
        s.push_str(&format!("  step {}: {}\n", k + 1, st.observation));
        s.push_str(&format!("    > {}", st.action));
        if let Some(err) = &st.error {
            s.push_str(&format!("  (failed: {err})"));
        }
        s.push('\n');
    }
    s
}

/// Tasks won and played per kind, in the order the kinds first appear: each task's kind and
/// whether it was won (of [`setting_episodes`], `e.kind` and `e.traj.won()`).
pub fn count_kinds<'a>(played: impl IntoIterator<Item = (&'a str, bool)>) -> Vec<KindSuccess> {
    let mut out: Vec<KindSuccess> = vec![];
    for (kind, won) in played {
        let i = match out.iter().position(|k| k.kind == kind) {
            Some(i) => i,
            None => {
                out.push(KindSuccess {
                    kind: kind.to_string(),
                    tasks: 0,
                    won: 0,
                });
                out.len() - 1
            }
        };
        out[i].tasks += 1;
        out[i].won += usize::from(won);
    }
    out
}

/// A temperature and a count of episodes a task that sample something.
pub fn check_sampling(temperature: f64, samples: usize) -> Result<()> {
    if !(temperature.is_finite() && temperature > 0.0) {
        bail!("--temperature {temperature}: use a positive temperature (greedy is the default)");
    }
    if samples == 0 {
        bail!("--samples 0: sample at least one episode a task");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{count_kinds, KindSuccess};

    #[test]
    fn kinds_are_counted_in_the_order_they_first_appear() {
        let played: Vec<(String, bool)> = [("b", true), ("a", false), ("b", false), ("a", true)]
            .iter()
            .chain(&[("b", true)])
            .map(|(k, w)| (k.to_string(), *w))
            .collect();
        let k = |kind: &str, tasks, won| KindSuccess {
            kind: kind.into(),
            tasks,
            won,
        };
        assert_eq!(
            count_kinds(played.iter().map(|(k, w)| (k.as_str(), *w))),
            vec![k("b", 3, 2), k("a", 2, 1)]
        );
        assert!(count_kinds(std::iter::empty()).is_empty());
    }
}
