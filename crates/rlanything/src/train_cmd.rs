//! `rlanything pretrain | train | eval | report | ablate` and the quickstart's run.

use anyhow::{bail, Context, Result};
use rla_env::household::splits::{eval_tasks, Split};
use rla_train::config::{Mode, RunConfig};
use rla_train::report::write_report;
use rla_train::run::RunDir;
use rla_train::settings::warm_start;
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
pub struct EvalArgs {
    /// A policy checkpoint (HF layout); with `--config`, by default the run's last checkpoint
    /// (`RUN/checkpoint/policy`) or the config's `policy.path`.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Which split: in-domain or ood (the fixed splits), or validation (the tuning split).
    #[arg(long, default_value = "in-domain")]
    pub split: String,
    /// Number of tasks (default: all).
    #[arg(long)]
    pub n: Option<usize>,
    /// Play ALFWorld's own game folders instead of a split: every folder under DIR holding a
    /// `game.tw-pddl` and its `traj_data.json` (as in ALFWorld's `valid_seen`), greedily.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["split", "judge"])]
    pub games: Option<PathBuf>,
    /// History window of the prompts (default: the checkpoint's own, else 2).
    #[arg(long)]
    pub window: Option<usize>,
    /// Listing style of the admissible commands (numbered, inline, command or unlisted)
    /// (default: the checkpoint's own, else numbered).
    #[arg(long)]
    pub prompt_style: Option<String>,
    /// Draw answers only among the admissible ones, as in training with `constrain_actions`
    /// (default: the checkpoint's own, else off).
    #[arg(long)]
    pub constrained: bool,
    /// Give the policy the agent's notes, as in training with `household.notes` (default: the
    /// checkpoint's own, else off).
    #[arg(long)]
    pub notes: bool,
    /// Step limit of each episode (default: the checkpoint's own, else 60).
    #[arg(long)]
    pub step_limit: Option<usize>,
    /// Print the first N episodes step by step.
    #[arg(long, default_value_t = 0)]
    pub show: usize,
    /// Most tokens of each answer (a pretrained model reasons before its `\boxed{}`).
    #[arg(long, default_value_t = 16)]
    pub max_tokens: usize,
    /// Then judge every step played this many times with the judge's prompt (sampled at
    /// temperature 1), and print the judge's quality against the expert's step labels.
    #[arg(long, default_value_t = 0)]
    pub judge: usize,
    /// The judge (default: the policy checkpoint itself).
    #[arg(long)]
    pub judge_model: Option<PathBuf>,
    /// Most tokens of each verdict.
    #[arg(long, default_value_t = 128)]
    pub judge_tokens: usize,
    /// A run folder or a run config (any setting): evaluates its policy as the run does
    /// (the setting's own evaluation, its prompts and step limit); the household's flags above
    /// override the config's.
    #[arg(long, value_name = "RUN_OR_CONFIG")]
    pub config: Option<PathBuf>,
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
    if rla_model::weights::is_checkpoint(&pre.join("policy"))
        && rla_model::weights::is_checkpoint(&pre.join("reward"))
    {
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
    rla_train::settings::train(cfg, dir, resume, progress)?;
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

pub fn run_eval(mut a: EvalArgs) -> Result<()> {
    if let Some(c) = a.config.clone() {
        let (cfg, model) = eval_config(&c, a.model.as_deref())?;
        a.model = Some(model);
        // the household's step-by-step views play its episodes here; anything else is the
        // setting's own evaluation
        let household_views = a.games.is_some() || a.show > 0 || a.judge > 0;
        if cfg.setting != rla_train::config::SettingName::Household || !household_views {
            return eval_setting(&a, cfg);
        }
    }
    let split = match a.split.as_str() {
        "in-domain" | "in_domain" => Split::InDomain,
        "ood" => Split::Ood,
        "validation" => Split::Validation,
        s => bail!("--split {s}: use in-domain, ood or validation"),
    };
    let tasks = eval_tasks(split);
    let n = a.n.unwrap_or(tasks.len());
    if n > tasks.len() {
        bail!(
            "--n {n}: the {} split holds {} tasks; ask for at most {}",
            a.split,
            tasks.len(),
            tasks.len()
        );
    }
    let model = a.model.clone().ok_or_else(|| {
        anyhow::anyhow!("name the policy: --model DIR, or --config RUN_OR_CONFIG")
    })?;
    let lm = rla_model::Lm::load(&model, candle_core::DType::F32, &candle_core::Device::Cpu)?;
    // the run's config, else the settings the checkpoint records, else the reference's
    // numbered prompt; explicit flags override either
    let recorded = match &a.config {
        Some(c) => Some(rla_train::household::Episodes::evaluation(
            &eval_config(c, Some(&model))?.0,
        )),
        None => rla_train::household::Episodes::load_from(&model)?,
    };
    if recorded.is_none() {
        eprintln!(
            "{} records no prompt settings ({}); using the flags' (default: numbered prompt, \
             window 2, 60 steps)",
            model.display(),
            rla_train::household::EPISODES_FILE
        );
    }
    let mut ep = recorded.unwrap_or(rla_train::household::Episodes {
        rollouts: 1,
        step_limit: 60,
        window: 2,
        style: rla_train::household::PromptStyle::Numbered,
        constrained: false,
        notes: false,
    });
    ep.rollouts = 1;
    if let Some(s) = &a.prompt_style {
        ep.style = match s.as_str() {
            "numbered" => rla_train::household::PromptStyle::Numbered,
            "inline" => rla_train::household::PromptStyle::Inline,
            "command" => rla_train::household::PromptStyle::Command,
            "unlisted" => rla_train::household::PromptStyle::Unlisted,
            s => bail!("--prompt-style {s}: use numbered, inline, command or unlisted"),
        };
    }
    if let Some(w) = a.window {
        ep.window = w;
    }
    if let Some(l) = a.step_limit {
        if l == 0 {
            bail!("--step-limit 0: an episode needs at least one step");
        }
        ep.step_limit = l;
    }
    ep.notes |= a.notes;
    ep.constrained |= a.constrained || ep.style == rla_train::household::PromptStyle::Unlisted;
    if a.max_tokens == 0 {
        bail!("--max-tokens 0: an answer needs at least one token");
    }
    if let Some(dir) = &a.games {
        return eval_games(&a, &lm, dir, ep);
    }
    let bar = rla_train::bar((n * ep.step_limit) as u64, "eval");
    let started = std::time::Instant::now();
    let trajs =
        rla_train::household::evaluate_episodes(&lm, &tasks[..n], ep, a.max_tokens, Some(&bar))?;
    bar.finish_and_clear();
    let played = started.elapsed().as_secs_f64();
    for (t, task) in trajs.iter().zip(&tasks[..n]).take(a.show) {
        print_episode(&format!("task: {}", task.sentence()), t);
    }
    let s = trajs.iter().filter(|t| t.won()).count() as f64 / n.max(1) as f64;
    let steps: usize = trajs.iter().map(|t| t.steps.len()).sum();
    println!(
        "{} success on {n} {} tasks: {s:.3} ({steps} steps in {played:.0} s)",
        model.display(),
        a.split
    );
    if a.judge > 0 {
        judge_steps(&a, &lm, &tasks[..n], &trajs)?;
    }
    Ok(())
}

/// The config of `eval --config` (a run folder's `config.toml`, or a config file) and the
/// policy it evaluates: `model` if given, else the run's last checkpoint, else the config's
/// `policy.path`.
fn eval_config(
    c: &std::path::Path,
    model: Option<&std::path::Path>,
) -> Result<(RunConfig, PathBuf)> {
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
    let cfg = RunConfig::load(&file)?;
    let model = match (model, run) {
        (Some(m), _) => m.to_path_buf(),
        (None, Some(r)) if r.join("checkpoint/policy").exists() => r.join("checkpoint/policy"),
        (None, _) => cfg.policy.path.clone().ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no trained policy to evaluate (no checkpoint/policy, no policy.path); name \
                 one with --model",
                c.display()
            )
        })?,
    };
    Ok((cfg, model))
}

/// `eval --config` through the setting's own evaluation (greedy success on a split), with the
/// household's flags applied to its table.
fn eval_setting(a: &EvalArgs, mut cfg: RunConfig) -> Result<()> {
    use rla_train::setting::{Ctx, Split as S};
    use rla_train::settings::{with_setting, WithSetting};
    let split = match a.split.as_str() {
        "in-domain" | "in_domain" => S::InDomain,
        "ood" => S::Ood,
        "validation" => S::Validation,
        s => bail!("--split {s}: use in-domain, ood or validation"),
    };
    let h = &mut cfg.household;
    if let Some(w) = a.window {
        h.history_window = w;
    }
    if let Some(s) = &a.prompt_style {
        h.prompt_style = match s.as_str() {
            "numbered" => rla_train::household::PromptStyle::Numbered,
            "inline" => rla_train::household::PromptStyle::Inline,
            "command" => rla_train::household::PromptStyle::Command,
            "unlisted" => rla_train::household::PromptStyle::Unlisted,
            s => bail!("--prompt-style {s}: use numbered, inline, command or unlisted"),
        };
    }
    if let Some(l) = a.step_limit {
        if l == 0 {
            bail!("--step-limit 0: an episode needs at least one step");
        }
        h.eval_step_limit = l;
    }
    h.notes |= a.notes;
    h.constrain_actions |= a.constrained;
    cfg.validate().map_err(anyhow::Error::msg)?;
    let model = a
        .model
        .clone()
        .ok_or_else(|| anyhow::anyhow!("name the policy: --model DIR"))?;
    let lm = rla_model::Lm::load(&model, candle_core::DType::F32, &candle_core::Device::Cpu)?;
    struct E<'a> {
        cfg: &'a RunConfig,
        lm: &'a rla_model::Lm,
        split: S,
        n: Option<usize>,
    }
    impl WithSetting for E<'_> {
        type Output = (f64, usize, &'static str);
        fn with<T: rla_train::Setting>(self, mut s: T) -> Result<Self::Output> {
            let n = match (self.n, s.split_size(self.split)) {
                (Some(n), Some(size)) if n > size => bail!(
                    "--n {n}: the {:?} split of the {} setting holds {size} tasks",
                    self.split,
                    s.name()
                ),
                (Some(n), _) => n,
                (None, Some(size)) => size,
                (None, None) => bail!("--n: the {:?} split has no end; say how many", self.split),
            };
            let ctx = Ctx {
                cfg: self.cfg,
                k: 0,
                progress: true,
            };
            Ok((s.evaluate(ctx, self.lm, self.split, n)?, n, s.name()))
        }
    }
    let started = std::time::Instant::now();
    let (success, n, setting) = with_setting(
        &cfg,
        E {
            cfg: &cfg,
            lm: &lm,
            split,
            n: a.n,
        },
    )?;
    println!(
        "{} success on {n} {} tasks: {success:.3} ({setting} setting; {:.0} s)",
        model.display(),
        a.split,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// An episode step by step, under a heading.
fn print_episode(heading: &str, t: &rla_train::play::Trajectory) {
    println!("{heading} ({})", if t.won() { "won" } else { "lost" });
    for (i, s) in t.steps.iter().enumerate() {
        println!("  {:>2}. {} → {}", i + 1, s.answer, s.next_observation);
    }
}

/// The game folders under `dir` (those holding a `game.tw-pddl`), in path order.
fn game_folders(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))?;
        for e in entries {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "game.tw-pddl") {
                out.push(d.clone());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// `eval --games DIR`: every game folder under DIR, played greedily; the success rate last.
fn eval_games(
    a: &EvalArgs,
    lm: &rla_model::Lm,
    dir: &Path,
    ep: rla_train::household::Episodes,
) -> Result<()> {
    use rla_env::household::expert::GoalSpec;
    use rla_env::household::game::GameFile;
    use rla_env::household::Household;
    let mut folders = game_folders(dir)?;
    if folders.is_empty() {
        bail!(
            "{} holds no game folder (a folder with game.tw-pddl)",
            dir.display()
        );
    }
    if let Some(n) = a.n {
        if n > folders.len() {
            bail!("--n {n}: {} holds {} games", dir.display(), folders.len());
        }
        folders.truncate(n);
    }
    let mut games = Vec::with_capacity(folders.len());
    for f in &folders {
        let g = GameFile::load(f)?;
        let traj = g.traj.as_ref().with_context(|| {
            format!(
                "{}: no traj_data.json beside the game (it names the goal)",
                f.display()
            )
        })?;
        let goal = GoalSpec::from_traj(&g.world, traj)
            .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        games.push((
            Household::new(g.world.clone()).with_step_limit(ep.step_limit),
            goal,
        ));
    }
    let n = games.len();
    let bar = rla_train::bar((n * ep.step_limit) as u64, "eval");
    let started = std::time::Instant::now();
    let sp = rla_lm::SampleParams::greedy(a.max_tokens);
    let trajs = rla_train::household::rollout_games(lm, games, ep, &sp, Some(&bar))?;
    bar.finish_and_clear();
    let played = started.elapsed().as_secs_f64();
    for (t, f) in trajs.iter().zip(&folders).take(a.show) {
        print_episode(&format!("game: {}", f.display()), t);
    }
    let won = trajs.iter().filter(|t| t.won()).count();
    let steps: usize = trajs.iter().map(|t| t.steps.len()).sum();
    println!(
        "{} success on {n} games of {}: {:.3} ({won} won; {steps} steps in {played:.0} s)",
        a.model
            .as_deref()
            .unwrap_or(std::path::Path::new("the policy"))
            .display(),
        dir.display(),
        won as f64 / n as f64
    );
    Ok(())
}

/// The judge's verdicts on the steps of `trajs`, and its quality against the expert's labels.
fn judge_steps(
    a: &EvalArgs,
    policy: &rla_model::Lm,
    tasks: &[rla_env::household::task::TaskSpec],
    trajs: &[rla_train::play::Trajectory],
) -> Result<()> {
    let own;
    let judge = match &a.judge_model {
        Some(d) => {
            own = rla_model::Lm::load(d, candle_core::DType::F32, &candle_core::Device::Cpu)?;
            &own
        }
        None => policy,
    };
    let steps: usize = trajs.iter().map(|t| t.steps.len()).sum();
    let bar = rla_train::bar(steps as u64, "judge");
    let sp = rla_lm::SampleParams {
        temperature: 1.0,
        max_new_tokens: a.judge_tokens,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let verdicts =
        rla_train::household::play::judge(judge, tasks, trajs, a.judge, &sp, Some(&bar))?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let played = rla_train::play::Played {
        trajs: trajs.to_vec(),
        verdicts,
    };
    let q = played.quality();
    let verdicts = played.verdicts;
    let all: Vec<&rla_core::reward::StepScore> =
        verdicts.iter().flatten().flat_map(|v| &v.scores).collect();
    let parsed = all
        .iter()
        .filter(|s| **s != &rla_core::reward::StepScore::Unparsed)
        .count();
    let shown = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{x:.3}"));
    println!(
        "judge: {} verdicts on {steps} steps in {secs:.0} s; with a \\boxed{{±1}}: {parsed} ({:.1}%); \
         process accuracy {} (against the expert's labels), outcome accuracy {}, p+ {}, p- {}, μ {}",
        all.len(),
        100.0 * parsed as f64 / all.len().max(1) as f64,
        shown(q.process_acc),
        shown(q.outcome_acc),
        shown(q.calibration.p_plus()),
        shown(q.calibration.p_minus()),
        shown(q.calibration.mu()),
    );
    if let Some(v) = verdicts.iter().flatten().next() {
        println!("a verdict: {:?}", v.texts[0]);
    }
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
            let r = rla_train::control::sft_control(&cfg, &out.join("sft"), budget, !a.quiet)?;
            controls.push((r, run.before));
        }
    }
    let (judge_a, judge_b) = rla_train::settings::judge_columns(&base)?;
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
