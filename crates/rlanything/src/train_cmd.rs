//! `rlanything pretrain | train | eval | report | ablate` and the quickstart's run.

use crate::backend::backend;
use anyhow::{bail, Result};
use rla_train::config::{Mode, Override, RunConfig};
use rla_train::control::ControlKind;
use rla_train::report::write_report;
use rla_train::run::RunDir;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct PretrainArgs {
    /// Run configuration (TOML).
    #[arg(long)]
    pub config: PathBuf,
    /// Output folder (policy/ and reward/ are written inside).
    #[arg(long)]
    pub out: PathBuf,
    /// Sets a key of the config, as a line of it would: `--set policy.lr=1e-4` (repeatable;
    /// the value read as TOML, else as a string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<Override>,
    /// The run's seed (`--set seed=N`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// A state folder, to commit, for a pretrain that spans sessions and machines: every save
    /// replaces it with what the pretrain goes on from (the models with their optimisers'
    /// moments, where each SFT stands, DAgger's rounds, the curves). Given again with the same
    /// config — on another clone, --out absent — the pretrain goes on from it as if it had never
    /// stopped. It lies apart from --out.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Stops after this many SFT steps (every model's and DAgger round's together), saved where
    /// it stands (in --state, and --out), before the next step or DAgger round; exits 0 with a
    /// line saying how to go on.
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,
    /// Stops once this many minutes have passed, as --steps does: before the next SFT step or
    /// DAgger round (a round's play and a probe begun in time run to their end).
    #[arg(long, value_name = "N")]
    pub minutes: Option<f64>,
}

#[derive(clap::Args)]
pub struct TrainArgs {
    /// Run configuration (TOML); with --resume, the run folder's own config is used.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Run folder.
    #[arg(long, default_value = "runs/train")]
    pub run: PathBuf,
    /// Continue the run in --run (or the folder given here) from its last completed iteration.
    #[arg(long, num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<PathBuf>,
    /// Sets a key of the config, as a line of it would: `--set policy.lr=1e-4` (repeatable;
    /// the value read as TOML, else as a string). With --resume, a key that differs from the
    /// run's recorded config is refused, except `iterations` (more) and `logging`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<Override>,
    /// The run's seed (`--set seed=N`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(clap::Args)]
pub struct AblateArgs {
    /// Run configuration (TOML); its mode is ignored, the modes of `--modes` are run.
    #[arg(long)]
    pub config: PathBuf,
    /// Output folder (one run folder per mode).
    #[arg(long, default_value = "runs/ablate")]
    pub out: PathBuf,
    /// Seeds per mode (the config's seed, then the next ones); each seed's warm starts are
    /// shared by the modes. With more than one, runs go to `OUT/seed-S/MODE`.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Only these modes, comma-separated (`outcome`, `policy`, `policy+reward` or
    /// `policy-reward`, `full`, `reward-only`, `null`); default the paper table's four. A later
    /// run with more modes reuses the finished folders. `sft` and `sft-demos` add the SFT
    /// controls (with `full`), the minutes of each seed's `full` run spent on more SFT of the warm
    /// start instead of RL: `sft` goes on with the base's own recipe (its `recipe.json`:
    /// demonstrations and DAgger's labels of the policy's own states at the base's share, its
    /// last rate), `sft-demos` on fresh expert demonstrations alone.
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Sets a key of the config, as a line of it would: `--set policy.lr=1e-4` (repeatable;
    /// the value read as TOML, else as a string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<Override>,
    /// The run's seed (`--set seed=N`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// What the setting's own extra evaluations read: for the household, game folders in
    /// ALFWorld's layout, which each run's final policy, the SFT controls' and the starting policy
    /// play greedily, the table gaining the games won (`tests/fixtures/alfworld-traces`:
    /// ALFWorld's 20 fixture games); a setting with none refuses it.
    #[arg(long, value_name = "DIR")]
    pub games: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

/// The modes `--modes` names, in the table's order (all four when it names none), and the SFT
/// controls it names (`sft`, `sft-demos`), in the table's order.
fn parse_modes(names: &[String]) -> Result<(Vec<Mode>, Vec<ControlKind>)> {
    let names: Vec<&str> = names.iter().map(|n| n.trim()).collect();
    let controls: Vec<ControlKind> = ControlKind::ALL
        .into_iter()
        .filter(|k| names.contains(&k.name()))
        .collect();
    let names: Vec<&str> = names
        .into_iter()
        .filter(|n| ControlKind::from_name(n).is_none())
        .collect();
    if names.is_empty() && controls.is_empty() {
        return Ok((Mode::ALL.to_vec(), controls));
    }
    let mut named = Vec::new();
    for n in names {
        match Mode::EVERY
            .into_iter()
            .find(|m| m.name() == n || m.name().replace('+', "-") == n)
        {
            Some(m) => named.push(m),
            None => {
                bail!("--modes {n}: use outcome, policy, policy+reward (or policy-reward), full, reward-only, null, sft and sft-demos")
            }
        }
    }
    if let Some(k) = controls.first().filter(|_| !named.contains(&Mode::Full)) {
        bail!(
            "--modes {}: the control is given the minutes of `full`; name full too",
            k.name()
        );
    }
    Ok((
        Mode::EVERY
            .into_iter()
            .filter(|m| named.contains(m))
            .collect(),
        controls,
    ))
}

/// The command line's overrides: `--set`s, then `--seed`.
pub fn overrides(set: &[Override], seed: Option<u64>) -> Result<Vec<Override>> {
    let mut v = set.to_vec();
    if let Some(s) = seed {
        v.push(Override::seed(s).map_err(anyhow::Error::msg)?);
    }
    Ok(v)
}

/// How the overrides read on a command line.
fn shown(ov: &[Override]) -> String {
    ov.iter()
        .map(|o| format!(" --set {}={}", o.key, o.value))
        .collect()
}

/// What a pretrain stopped on its budget says: how far it got, where it is saved, and the
/// command that goes on.
fn stopped_line(a: &PretrainArgs, ov: &[Override], s: &rla_train::resume::Stopped) -> String {
    let state = a
        .state
        .as_ref()
        .map(|s| format!(" --state {}", s.display()))
        .unwrap_or_default();
    let budget: String = [
        a.steps.map(|n| format!(" --steps {n}")),
        a.minutes.map(|m| format!(" --minutes {m}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!(
        "stopped on the budget after {} SFT steps in {:.1} minutes, saved at {} in {}; to go on: \
         rlanything pretrain --config {} --out {}{state}{}{budget}",
        s.steps,
        s.minutes,
        s.at,
        a.state.as_ref().unwrap_or(&a.out).display(),
        a.config.display(),
        a.out.display(),
        shown(ov)
    )
}

pub fn run_pretrain(a: PretrainArgs) -> Result<()> {
    let ov = overrides(&a.set, a.seed)?;
    // read once: a config given as a pipe (`--config <(…)`) cannot be read a second time for the
    // manifest
    let text = rla_core::file::read_arg_to_string(&a.config, rla_core::file::MAX_BYTES)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", a.config.display()))?;
    let folder = a.config.parent().unwrap_or(std::path::Path::new("."));
    let cfg = RunConfig::parse_in_with(&text, folder, &ov)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.config.display()))?;
    let start = std::time::Instant::now();
    let session = rla_train::launch::Session {
        state: a.state.clone(),
        budget: rla_train::resume::Budget {
            steps: a.steps,
            minutes: a.minutes,
        },
    };
    let (lines, earlier) =
        match rla_train::launch::pretrain(backend(), &cfg, &a.out, true, &session)? {
            rla_train::launch::Pretrained::Finished { lines, earlier } => (lines, earlier),
            rla_train::launch::Pretrained::Stopped(s) => {
                println!("{}", stopped_line(&a, &ov, &s));
                return Ok(());
            }
        };
    for line in &lines {
        println!("{line}");
    }
    // with overrides, the config as it was read
    let config_text = if ov.is_empty() {
        text
    } else {
        toml::to_string_pretty(&cfg)?
    };
    let command = format!(
        "rlanything pretrain --config {} --out {}{}",
        a.config.display(),
        a.out.display(),
        shown(&ov)
    );
    rla_train::manifest::write_manifest(
        backend(),
        &cfg,
        &a.out,
        &rla_train::manifest::Made {
            command: &command,
            config_text: &config_text,
            lines: &lines,
            // with the invocations before, where a state folder counted them
            seconds: earlier + start.elapsed().as_secs_f64(),
        },
    )?;
    println!("manifest: {}", a.out.join("MANIFEST.md").display());
    Ok(())
}

/// Trains a run to its end; returns (initial, final) evaluation success (in-domain, OOD).
pub fn train_run(
    cfg: RunConfig,
    dir: &Path,
    resume: bool,
    progress: bool,
) -> Result<((f64, f64), (f64, f64))> {
    rla_train::report::before_after(&train_run_metrics(cfg, dir, resume, progress)?)
}

/// Trains a run to its end (warm start first, unless resuming) and writes its report; returns
/// the run's metrics.
pub fn train_run_metrics(
    cfg: RunConfig,
    dir: &Path,
    resume: bool,
    progress: bool,
) -> Result<Vec<rla_train::run::IterMetrics>> {
    rla_train::launch::train_to_end(backend(), cfg, dir, (resume, progress), &mut |l| {
        println!("{l}")
    })
}

pub fn run_train(a: TrainArgs) -> Result<()> {
    let (dir, resume) = match &a.resume {
        Some(p) if !p.as_os_str().is_empty() => (p.clone(), true),
        Some(_) => (a.run.clone(), true),
        None => (a.run.clone(), false),
    };
    let ov = overrides(&a.set, a.seed)?;
    let recorded = dir.join("config.toml");
    let cfg = match (&a.config, resume) {
        (Some(c), _) => RunConfig::load_with(c, &ov)?,
        (None, true) if !dir.join("config.toml").exists() => bail!(
            "{} holds no config.toml, so there is no run to resume; start it with \
             `rlanything train --config CONFIG --run {}`",
            dir.display(),
            dir.display()
        ),
        (None, true) => {
            // the data it started on first: a source gone is named by its key and path
            rla_train::sources::check(&dir)?;
            rla_train::run::recorded_config(&dir, &ov)?
        }
        (None, false) => bail!("--config is required for a new run"),
    };
    if resume && recorded.exists() {
        let was = rla_train::run::recorded_config(&dir, &[])?;
        rla_train::config::check_resume_overrides(&was, &cfg, &ov).map_err(anyhow::Error::msg)?;
    }
    let ((i0, o0), (i1, o1)) = train_run(cfg, &dir, resume, !a.quiet)?;
    println!("evaluation success: in-domain {i0:.3} → {i1:.3}, OOD {o0:.3} → {o1:.3}");
    println!("report: {}", dir.join("report.md").display());
    Ok(())
}

pub fn run_report(dir: PathBuf) -> Result<()> {
    let rd = RunDir { path: dir };
    // what a folder without its config lacks is said by the report (no completed iteration)
    let check = rla_train::run::recorded_config(&rd.path, &[])
        .ok()
        .and_then(|c| rla_train::registry::setting(&c).ok())
        .and_then(|s| s.rewrite_check());
    print!("{}", write_report(&rd, check)?);
    let cfg = rla_train::run::recorded_config(&rd.path, &[])?;
    // the before/after table and the verdict, as the quickstart prints them
    let ms = rd.metrics()?;
    if ms.iter().any(|m| m.eval_in_domain.is_some()) {
        println!();
        print!(
            "{}",
            rla_train::report::summary(&rd.path, &ms, &cfg.eval, None)?
        );
    }
    Ok(())
}

pub fn run_ablate(a: AblateArgs) -> Result<()> {
    let base = RunConfig::load_with(&a.config, &overrides(&a.set, a.seed)?)?;
    base.check_paths().map_err(anyhow::Error::msg)?;
    if a.seeds == 0 {
        bail!("--seeds 0: run at least one seed");
    }
    let (modes, controls) = parse_modes(&a.modes)?;
    let r = rla_train::ablate::ablate(
        backend(),
        &base,
        &a.out,
        &rla_train::ablate::Ablation {
            seeds: a.seeds,
            modes,
            controls,
            progress: !a.quiet,
            extra: a.games.clone(),
        },
        &mut |l| println!("{l}"),
    )?;
    println!(
        "{} seed(s) from {}; sampled success and its paired difference from the base, in %",
        a.seeds, base.seed
    );
    print!("{}", r.table);
    println!(
        "table: {}; curves: {}",
        r.table_file.display(),
        r.curves
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_modes;
    use rla_train::control::ControlKind;
    use rla_train::Mode;

    #[test]
    fn modes_are_named_as_in_configs_or_folders_and_kept_in_table_order() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_modes(&[]).unwrap(), (Mode::ALL.to_vec(), vec![]));
        assert_eq!(
            parse_modes(&names(&["full"])).unwrap(),
            (vec![Mode::Full], vec![])
        );
        assert_eq!(
            parse_modes(&names(&[" policy-reward", "outcome "])).unwrap(),
            (vec![Mode::Outcome, Mode::PolicyReward], vec![])
        );
        assert_eq!(
            parse_modes(&names(&["policy+reward"])).unwrap(),
            (vec![Mode::PolicyReward], vec![])
        );
        assert_eq!(
            parse_modes(&names(&["reward-only", "outcome"])).unwrap(),
            (vec![Mode::Outcome, Mode::RewardOnly], vec![])
        );
        assert_eq!(
            parse_modes(&names(&["sft", "full"])).unwrap(),
            (vec![Mode::Full], vec![ControlKind::Recipe])
        );
        assert_eq!(
            parse_modes(&names(&["sft-demos", "full", " sft"])).unwrap(),
            (vec![Mode::Full], ControlKind::ALL.to_vec())
        );
        assert_eq!(
            parse_modes(&names(&["full", "sft-demos"])).unwrap(),
            (vec![Mode::Full], vec![ControlKind::Demos])
        );
        assert_eq!(
            parse_modes(&names(&["null", "full"])).unwrap(),
            (vec![Mode::Full, Mode::Null], vec![])
        );
        let e = parse_modes(&names(&["sft"])).unwrap_err().to_string();
        assert!(e.contains("name full too"), "{e}");
        let e = parse_modes(&names(&["sft-demos", "outcome"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--modes sft-demos") && e.contains("name full too"),
            "{e}"
        );
        let e = parse_modes(&names(&["full", "grpo"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--modes grpo"), "{e}");
    }
}
