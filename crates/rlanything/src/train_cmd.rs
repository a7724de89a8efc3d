//! `rlanything pretrain | train | eval | report | ablate` and the quickstart's run.

use crate::backend::backend;
use anyhow::{bail, Context, Result};
use rla_train::config::{Mode, RunConfig};
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
    /// `policy-reward`, `full`); default all four. A later run with more modes reuses the
    /// finished folders. `sft` adds the control: the minutes of each seed's `full` run spent on
    /// more SFT of the warm start on fresh expert demonstrations instead of RL (with `full`).
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

/// The modes `--modes` names, in the table's order (all four when it names none), and whether
/// it names the SFT control.
fn parse_modes(names: &[String]) -> Result<(Vec<Mode>, bool)> {
    let control = names.iter().any(|n| n.trim() == "sft");
    let names: Vec<&String> = names.iter().filter(|n| n.trim() != "sft").collect();
    if names.is_empty() && !control {
        return Ok((Mode::ALL.to_vec(), false));
    }
    let mut named = Vec::new();
    for n in names.iter().map(|n| n.trim()) {
        match Mode::ALL
            .into_iter()
            .find(|m| m.name() == n || m.name().replace('+', "-") == n)
        {
            Some(m) => named.push(m),
            None => {
                bail!("--modes {n}: use outcome, policy, policy+reward (or policy-reward), full and sft")
            }
        }
    }
    if control && !named.contains(&Mode::Full) {
        bail!("--modes sft: the control is given the minutes of `full`; name full too");
    }
    Ok((
        Mode::ALL
            .into_iter()
            .filter(|m| named.contains(m))
            .collect(),
        control,
    ))
}

/// A run's training seconds: its iterations' rollouts, judging, updates and adaptation (its
/// evaluations not counted).
fn training_seconds(ms: &[rla_train::run::IterMetrics]) -> f64 {
    ms.iter()
        .map(|m| m.time_rollout + m.time_judge + m.time_update + m.time_adapt)
        .sum()
}

/// Pretrains tiny models into `dir/pretrained` unless the config names checkpoints.
pub fn ensure_pretrained(cfg: &RunConfig, dir: &Path, progress: bool) -> Result<()> {
    if cfg.policy.path.is_some() && cfg.reward.path.is_some() {
        return Ok(());
    }
    let pre = dir.join("pretrained");
    if rla_lm::is_checkpoint(&pre.join("policy")) && rla_lm::is_checkpoint(&pre.join("reward")) {
        return Ok(());
    }
    for line in warm_start(cfg, &pre, progress)? {
        println!("pretrain {line}");
    }
    Ok(())
}

pub fn run_pretrain(a: PretrainArgs) -> Result<()> {
    let cfg = RunConfig::load(&a.config)?;
    let start = std::time::Instant::now();
    let lines = warm_start(&cfg, &a.out, true)?;
    for line in &lines {
        println!("{line}");
    }
    let config_text = std::fs::read_to_string(&a.config)?;
    let command = format!(
        "rlanything pretrain --config {} --out {}",
        a.config.display(),
        a.out.display()
    );
    rla_train::manifest::write_manifest(
        backend(),
        &cfg,
        &a.out,
        &rla_train::manifest::Made {
            command: &command,
            config_text: &config_text,
            lines: &lines,
            seconds: start.elapsed().as_secs_f64(),
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
    before_after(&train_run_metrics(cfg, dir, resume, progress)?)
}

/// A run's first and last evaluation success (in-domain, OOD).
fn before_after(ms: &[rla_train::run::IterMetrics]) -> Result<((f64, f64), (f64, f64))> {
    let first = ms.first().context("no metrics")?;
    let last = ms
        .iter()
        .rev()
        .find(|m| m.eval_in_domain.is_some())
        .context("no evaluation")?;
    Ok((
        (
            first.eval_in_domain.unwrap_or(0.0),
            first.eval_ood.unwrap_or(0.0),
        ),
        (
            last.eval_in_domain.unwrap_or(0.0),
            last.eval_ood.unwrap_or(0.0),
        ),
    ))
}

/// Trains a run to its end (warm start first, unless resuming) and writes its report; returns
/// the run's metrics.
pub fn train_run_metrics(
    cfg: RunConfig,
    dir: &Path,
    resume: bool,
    progress: bool,
) -> Result<Vec<rla_train::run::IterMetrics>> {
    cfg.check_paths().map_err(anyhow::Error::msg)?;
    let _lock = rla_train::run::lock_run(dir)?;
    // the config first: a run killed during its warm start resumes with `--resume` alone
    RunDir::create(dir, &cfg, resume)?;
    if !resume || !dir.join("checkpoint/state.json").exists() {
        ensure_pretrained(&cfg, dir, progress)?;
    }
    rla_train::registry::setting(&cfg)?.train(backend(), cfg, dir, resume, progress)?;
    let rd = RunDir {
        path: dir.to_path_buf(),
    };
    write_report(&rd)?;
    rd.metrics()
}

pub fn run_train(a: TrainArgs) -> Result<()> {
    let (dir, resume) = match &a.resume {
        Some(p) if !p.as_os_str().is_empty() => (p.clone(), true),
        Some(_) => (a.run.clone(), true),
        None => (a.run.clone(), false),
    };
    let cfg = match (&a.config, resume) {
        (Some(c), _) => RunConfig::load(c)?,
        (None, true) if !dir.join("config.toml").exists() => bail!(
            "{} holds no config.toml, so there is no run to resume; start it with \
             `rlanything train --config CONFIG --run {}`",
            dir.display(),
            dir.display()
        ),
        (None, true) => RunConfig::load(&dir.join("config.toml"))?,
        (None, false) => bail!("--config is required for a new run"),
    };
    let ((i0, o0), (i1, o1)) = train_run(cfg, &dir, resume, !a.quiet)?;
    println!("evaluation success: in-domain {i0:.3} → {i1:.3}, OOD {o0:.3} → {o1:.3}");
    println!("report: {}", dir.join("report.md").display());
    Ok(())
}

pub fn run_report(dir: PathBuf) -> Result<()> {
    let rd = RunDir { path: dir };
    print!("{}", write_report(&rd)?);
    // the before/after table and the verdict, as the quickstart prints them
    let cfg = RunConfig::load(&rd.path.join("config.toml"))?;
    let ms = rd.metrics()?;
    if ms.iter().any(|m| m.eval_in_domain.is_some()) {
        println!();
        print!("{}", rla_train::report::summary(&ms, &cfg.eval, None)?);
    }
    Ok(())
}

/// A seed's SFT control and the (in-domain, OOD) success of the base it started from.
type Control = (rla_train::control::ControlResult, (f64, f64));

/// One finished run of the ablation.
struct AblationRun {
    before: (f64, f64),
    after: (f64, f64),
    judge: (Option<f64>, Option<f64>),
    mu: Option<f64>,
    metrics: Vec<rla_train::run::IterMetrics>,
}

/// Mean, min and max.
fn spread(xs: &[f64]) -> (f64, f64, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// `mean (min–max)` in percent, or the single value for one seed.
fn pct(xs: &[f64]) -> String {
    let (m, lo, hi) = spread(xs);
    if xs.len() == 1 {
        format!("{:.1}", 100.0 * m)
    } else {
        format!("{:.1} ({:.1}–{:.1})", 100.0 * m, 100.0 * lo, 100.0 * hi)
    }
}

pub fn run_ablate(a: AblateArgs) -> Result<()> {
    let base = RunConfig::load(&a.config)?;
    base.check_paths().map_err(anyhow::Error::msg)?;
    if a.seeds == 0 {
        bail!("--seeds 0: run at least one seed");
    }
    let (modes, control) = parse_modes(&a.modes)?;
    std::fs::create_dir_all(&a.out)?;
    let mut runs: Vec<Vec<AblationRun>> = modes.iter().map(|_| vec![]).collect();
    let mut controls: Vec<Control> = vec![];
    for s in 0..a.seeds {
        let mut seeded = base.clone();
        seeded.seed = base.seed + s;
        let out = if a.seeds == 1 {
            a.out.clone()
        } else {
            a.out.join(format!("seed-{}", seeded.seed))
        };
        ensure_pretrained(&seeded, &out, !a.quiet)?;
        for (mi, &mode) in modes.iter().enumerate() {
            let mut cfg = seeded.clone();
            cfg.mode = mode;
            if cfg.policy.path.is_none() {
                cfg.policy.path = Some(out.join("pretrained/policy"));
            }
            if cfg.reward.path.is_none() {
                cfg.reward.path = Some(out.join("pretrained/reward"));
            }
            let dir = out.join(mode.name().replace('+', "-"));
            let resume = dir.join("checkpoint/state.json").exists();
            let ms = train_run_metrics(cfg, &dir, resume, !a.quiet)?;
            let (before, after) = before_after(&ms)?;
            let last = ms.last().context("no metrics")?;
            runs[mi].push(AblationRun {
                before,
                after,
                judge: (last.process_acc, last.outcome_acc),
                mu: last.mu,
                metrics: ms,
            });
        }
        if control {
            let full = modes
                .iter()
                .position(|&m| m == Mode::Full)
                .context("full")?;
            let run = runs[full].last().context("full's run")?;
            let mut cfg = seeded.clone();
            if cfg.policy.path.is_none() {
                cfg.policy.path = Some(out.join("pretrained/policy"));
            }
            let budget = training_seconds(&run.metrics);
            let sft = out.join("sft");
            let r = rla_train::control::sft_control(backend(), &cfg, &sft, budget, !a.quiet)?;
            controls.push((r, run.before));
        }
    }
    let (judge_a, judge_b) = rla_train::registry::setting(&base)?.judge_columns();
    let mut table = format!(
        "| mode | in-domain before | in-domain after | OOD before | OOD after | {judge_a} | {judge_b} | μ (last) |\n|---|---|---|---|---|---|---|---|\n"
    );
    for (mode, rs) in modes.iter().zip(&runs) {
        let col = |f: &dyn Fn(&AblationRun) -> Option<f64>| {
            let xs: Vec<f64> = rs.iter().filter_map(f).collect();
            if xs.is_empty() {
                "—".to_string()
            } else {
                pct(&xs)
            }
        };
        let mu: Vec<f64> = rs.iter().filter_map(|r| r.mu).collect();
        let mu = if mu.is_empty() {
            "—".to_string()
        } else {
            let (m, lo, hi) = spread(&mu);
            format!("{m:.2} ({lo:.2}–{hi:.2})")
        };
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            mode.name(),
            col(&|r| Some(r.before.0)),
            col(&|r| Some(r.after.0)),
            col(&|r| Some(r.before.1)),
            col(&|r| Some(r.after.1)),
            col(&|r| r.judge.0),
            col(&|r| r.judge.1),
            mu
        ));
    }
    if control {
        let col = |f: &dyn Fn(&Control) -> f64| pct(&controls.iter().map(f).collect::<Vec<_>>());
        table.push_str(&format!(
            "| sft (control) | {} | {} | {} | {} | — | — | — |\n",
            col(&|c| c.1 .0),
            col(&|c| c.0.in_domain),
            col(&|c| c.1 .1),
            col(&|c| c.0.ood),
        ));
    }
    println!(
        "{} seed(s) from {}; greedy success in %, mean (min–max) over seeds",
        a.seeds, base.seed
    );
    print!("{table}");
    rla_train::run::write_atomic(&a.out.join("ablation.md"), &table)?;
    // the modes' evaluation curves with their seed ranges
    let mut curves: Vec<PathBuf> = vec![];
    for (split, file, pick) in [
        (
            "in-domain",
            "ablation-in-domain.png",
            (|m: &rla_train::run::IterMetrics| m.eval_in_domain) as fn(&_) -> Option<f64>,
        ),
        ("OOD", "ablation-ood.png", |m| m.eval_ood),
        ("validation", "ablation-validation.png", |m| {
            m.eval_validation
        }),
    ] {
        if !runs
            .iter()
            .flatten()
            .flat_map(|r| &r.metrics)
            .any(|m| pick(m).is_some())
        {
            continue; // a split the runs did not evaluate
        }
        curves.push(a.out.join(file));
        let series: Vec<rla_train::plots::BandSeries> = modes
            .iter()
            .zip(&runs)
            .map(|(mode, rs)| {
                let mut by_iter: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
                for r in rs {
                    for m in &r.metrics {
                        if let Some(v) = pick(m) {
                            by_iter.entry(m.iteration).or_default().push(100.0 * v);
                        }
                    }
                }
                let pts = by_iter
                    .into_iter()
                    .map(|(k, xs)| {
                        let (m, lo, hi) = spread(&xs);
                        (k as f64, m, lo, hi)
                    })
                    .collect();
                (mode.name().to_string(), pts)
            })
            .collect();
        let top = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.3))
            .fold(0.0, f64::max);
        rla_train::plots::band_chart(
            &a.out.join(file),
            &format!("greedy {split} success by mode ({} seeds)", a.seeds),
            "success %",
            &series,
            (0.0, (top + 5.0).clamp(10.0, 100.0)),
        )?;
    }
    println!(
        "table: {}; curves: {}",
        a.out.join("ablation.md").display(),
        curves
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// Warm-starts the run's tiny models into `out/policy` and `out/reward` in its setting.
fn warm_start(cfg: &RunConfig, out: &std::path::Path, progress: bool) -> Result<Vec<String>> {
    rla_train::registry::setting(cfg)?.warm_start(rla_train::setting::WarmStart {
        backend: backend(),
        cfg,
        out,
        progress,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_modes;
    use rla_train::Mode;

    #[test]
    fn modes_are_named_as_in_configs_or_folders_and_kept_in_table_order() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_modes(&[]).unwrap(), (Mode::ALL.to_vec(), false));
        assert_eq!(
            parse_modes(&names(&["full"])).unwrap(),
            (vec![Mode::Full], false)
        );
        assert_eq!(
            parse_modes(&names(&[" policy-reward", "outcome "])).unwrap(),
            (vec![Mode::Outcome, Mode::PolicyReward], false)
        );
        assert_eq!(
            parse_modes(&names(&["policy+reward"])).unwrap(),
            (vec![Mode::PolicyReward], false)
        );
        assert_eq!(
            parse_modes(&names(&["sft", "full"])).unwrap(),
            (vec![Mode::Full], true)
        );
        let e = parse_modes(&names(&["sft"])).unwrap_err().to_string();
        assert!(e.contains("name full too"), "{e}");
        let e = parse_modes(&names(&["full", "grpo"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--modes grpo"), "{e}");
    }
}
