//! A run from its config to its end: the warm start of its tiny models in the setting the registry
//! builds, then its training and its report. Above both [`crate::open`] (which opens a run's folder
//! and models) and [`crate::registry`] (which builds the setting), so neither imports the other.

use crate::config::RunConfig;
use crate::run::RunDir;
use anyhow::Result;
use rla_lm::Backend;
use std::path::Path;

/// Warm-starts the run's tiny models into `out/policy` and `out/reward` in its setting; returns
/// the warm start's lines (what it made and measured).
pub fn warm_start(
    backend: &'static dyn Backend,
    cfg: &RunConfig,
    out: &Path,
    progress: bool,
) -> Result<Vec<String>> {
    // a pretrain killed before its end goes on where it stopped (`crate::resume`)
    if crate::resume::begin(cfg, out)? {
        tracing::info!(out = %out.display(), "taking up an unfinished pretrain");
    }
    let lines = crate::registry::setting(cfg)?.warm_start(crate::setting::WarmStart {
        backend,
        cfg,
        out,
        progress,
    })?;
    crate::resume::end(out)?;
    Ok(lines)
}

/// How one invocation of `rlanything pretrain` goes: the state folder its saves are copied to and
/// that it goes on from ([`crate::pretrain_state`]), and what it may spend.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// The state folder (`--state`).
    pub state: Option<std::path::PathBuf>,
    /// What it may spend (`--steps`, `--minutes`).
    pub budget: crate::resume::Budget,
}

/// How an invocation of a pretrain ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Pretrained {
    /// Finished: the warm start's lines, and the seconds the invocations before this one spent
    /// on it (as its state folder counted them; 0 without one).
    Finished {
        /// The warm start's lines.
        lines: Vec<String>,
        /// The seconds before this invocation.
        earlier: f64,
    },
    /// Stopped on its budget, saved where it stands.
    Stopped(crate::resume::Stopped),
}

/// [`warm_start`] as one invocation of a pretrain that may span several: with a state folder it
/// goes on from the state there (copied into `out` first, whatever `out` holds) and copies each
/// save back; with a budget it stops where the budget is spent, saved there. A state of another
/// config is refused, naming the keys that differ; a finished state of this config gives its
/// lines again when `out` holds its models.
pub fn pretrain(
    backend: &'static dyn Backend,
    cfg: &RunConfig,
    out: &Path,
    progress: bool,
    session: &Session,
) -> Result<Pretrained> {
    session.budget.check().map_err(anyhow::Error::msg)?;
    let config = crate::resume::config_text(cfg)?;
    let mut earlier = 0.0;
    if let Some(state) = &session.state {
        crate::pretrain_state::check_apart(state, out)?;
        match crate::pretrain_state::restore(state, out, &config)? {
            crate::pretrain_state::Restored::Nothing => {}
            crate::pretrain_state::Restored::At(at, seconds) => {
                tracing::info!(state = %state.display(), at, "going on from the state");
                earlier = seconds;
            }
            crate::pretrain_state::Restored::Finished(lines, seconds) => {
                let there = ["policy", "reward"]
                    .iter()
                    .all(|m| rla_lm::is_checkpoint(&out.join(m)));
                if !there {
                    anyhow::bail!(
                        "{}: the pretrain of this config finished, its models written to the \
                         output folder it was given then, not found in {}; give another --state \
                         to make them again",
                        state.display(),
                        out.display()
                    );
                }
                return Ok(Pretrained::Finished {
                    lines,
                    earlier: seconds,
                });
            }
        }
    }
    let began = std::time::Instant::now();
    let _session = crate::resume::enter(
        out,
        session.state.as_deref(),
        &config,
        session.budget,
        earlier,
    );
    match warm_start(backend, cfg, out, progress) {
        Ok(lines) => {
            if let Some(state) = &session.state {
                let seconds = earlier + began.elapsed().as_secs_f64();
                crate::pretrain_state::finish(state, &config, &lines, seconds)?;
            }
            Ok(Pretrained::Finished { lines, earlier })
        }
        Err(e) => crate::resume::stopped().map(Pretrained::Stopped).ok_or(e),
    }
}

/// Pretrains tiny models into `dir/pretrained` unless the config names checkpoints or they are
/// there already; `say` is given each line of the warm start.
pub fn ensure_pretrained(
    backend: &'static dyn Backend,
    cfg: &RunConfig,
    dir: &Path,
    progress: bool,
    say: &mut dyn FnMut(&str),
) -> Result<()> {
    if cfg.policy.path.is_some() && cfg.reward.path.is_some() {
        return Ok(());
    }
    let pre = dir.join("pretrained");
    if rla_lm::is_checkpoint(&pre.join("policy")) && rla_lm::is_checkpoint(&pre.join("reward")) {
        return Ok(());
    }
    for line in warm_start(backend, cfg, &pre, progress)? {
        say(&format!("pretrain {line}"));
    }
    Ok(())
}

/// Trains a run in `dir` to its end (its warm start first, unless resuming a run past it) and
/// writes its report; returns the run's metrics. `say` is given the warm start's lines.
pub fn train_to_end(
    backend: &'static dyn Backend,
    cfg: RunConfig,
    dir: &Path,
    (resume, progress): (bool, bool),
    say: &mut dyn FnMut(&str),
) -> Result<Vec<crate::run::IterMetrics>> {
    cfg.check_paths().map_err(anyhow::Error::msg)?;
    crate::track::check(&cfg)?;
    let _lock = crate::run::lock_run(dir)?;
    // the config first: a run killed during its warm start resumes with `--resume` alone
    RunDir::create(dir, &cfg, resume)?;
    if !resume || !dir.join("checkpoint/state.json").exists() {
        ensure_pretrained(backend, &cfg, dir, progress, say)?;
    }
    let setting = crate::registry::setting(&cfg)?;
    let check = setting.rewrite_check();
    setting.train(backend, cfg, dir, resume, progress)?;
    let rd = RunDir {
        path: dir.to_path_buf(),
    };
    crate::report::write_report(&rd, check)?;
    rd.metrics()
}
