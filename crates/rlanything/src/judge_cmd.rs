//! `rlanything judge-accuracy`: the household judge's accuracy measured as the warm start
//! measures it on its held-out episodes (models/household/MANIFEST.md's "process accuracy"), on
//! fresh episodes of the policy, against both step labels: the one an agent could know (the
//! searching expert's) and the fully informed planner's.

use anyhow::{bail, Result};
use rla_train::eval;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A household run config (its `policy.path` and `reward.path`, its prompts and sampling) or a
    /// run folder (its last checkpoint's models).
    #[arg(long, value_name = "RUN_OR_CONFIG")]
    pub config: PathBuf,
    /// Episodes the policy plays: `rollouts_per_task` a task, sampled as RL samples them, on
    /// generated training tasks of a seed of their own; the judge gives each step one greedy
    /// verdict.
    #[arg(long, default_value_t = 200)]
    pub episodes: usize,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(a: Args) -> Result<()> {
    let (cfg, policy) = eval::run_config(&a.config)?;
    if cfg.setting != "household" {
        bail!(
            "{}: judge-accuracy measures the household's judge; this config's setting is {}",
            a.config.display(),
            cfg.setting
        );
    }
    let run_judge = a.config.join("checkpoint/reward");
    let reward = if a.config.is_dir() && run_judge.exists() {
        Some(run_judge)
    } else {
        cfg.reward.path.clone()
    };
    let (Some(policy), Some(reward)) = (policy, reward) else {
        bail!(
            "{}: names no policy or no judge to measure (policy.path and reward.path, or a run \
             folder's checkpoint)",
            a.config.display()
        );
    };
    let (pm, rm) = (
        crate::backend::open_sampler(&policy)?,
        crate::backend::open_sampler(&reward)?,
    );
    let started = std::time::Instant::now();
    let acc = rla_train::household::warm::judge_accuracy(
        pm.as_ref(),
        rm.as_ref(),
        &cfg,
        a.episodes,
        !a.quiet,
    )?;
    println!(
        "policy {}, judge {}: {} ({:.0} s)",
        policy.display(),
        reward.display(),
        acc.line("fresh"),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
