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
