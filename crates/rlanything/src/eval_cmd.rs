//! `rlanything eval`: a policy's greedy success in its run's setting (`--config`), or the
//! household's step-by-step views of its episodes, ALFWorld's own game folders and the judge's
//! verdicts on them.

use anyhow::{bail, Context, Result};
use rla_env::household::splits::{eval_tasks, Split};
use rla_train::config::{RunConfig, SettingConfig};
use rla_train::household::config::HouseholdConfig;
use std::path::{Path, PathBuf};

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
    /// Household: also print the policy's take rate of an object in view with empty hands, by
    /// the number the object is shown with, target or not (a policy that reads the number as a
    /// cue takes `X 3` more readily than `X 1`).
    #[arg(long)]
    pub take_rates: bool,
    /// Household: sample the answers at this temperature instead of greedily, `--samples`
    /// episodes per task, and print the mean success with its standard error (a lower-variance
    /// view of a policy than one greedy episode a task).
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Episodes per task with `--temperature`.
    #[arg(long, default_value_t = 4)]
    pub samples: usize,
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
    /// Show the judge the agent's notes above each step, as in training with
    /// `household.judge_notes` (default: the run's config, else off).
    #[arg(long)]
    pub judge_notes: bool,
    /// A run folder or a run config (any setting): evaluates its policy as the run does
    /// (the setting's own evaluation, its prompts and step limit); the household's flags above
    /// override the config's.
    #[arg(long, value_name = "RUN_OR_CONFIG")]
    pub config: Option<PathBuf>,
}

/// `--split`.
fn parse_split(s: &str) -> Result<Split> {
    Ok(match s {
        "in-domain" | "in_domain" => Split::InDomain,
        "ood" => Split::Ood,
        "validation" => Split::Validation,
        s => bail!("--split {s}: use in-domain, ood or validation"),
    })
}

/// `--prompt-style`.
fn parse_prompt_style(s: &str) -> Result<rla_train::household::PromptStyle> {
    use rla_train::household::PromptStyle;
    Ok(match s {
        "numbered" => PromptStyle::Numbered,
        "inline" => PromptStyle::Inline,
        "command" => PromptStyle::Command,
        "unlisted" => PromptStyle::Unlisted,
        s => bail!("--prompt-style {s}: use numbered, inline, command or unlisted"),
    })
}

/// `--step-limit`, refused at 0.
fn step_limit(a: &EvalArgs) -> Result<Option<usize>> {
    if a.step_limit == Some(0) {
        bail!("--step-limit 0: an episode needs at least one step");
    }
    Ok(a.step_limit)
}

pub fn run_eval(mut a: EvalArgs) -> Result<()> {
    if a.temperature.is_some() && (a.games.is_some() || a.judge > 0) {
        bail!("--temperature samples the household's split tasks; ALFWorld's games (--games) and the judge's view (--judge) play greedily");
    }
    let mut run_cfg = None;
    if let Some(c) = a.config.clone() {
        let (cfg, model) = eval_config(&c, a.model.as_deref())?;
        a.model = Some(model);
        // the household's step-by-step and sampled views play its episodes here; anything else
        // is the setting's own evaluation
        let household_views = a.games.is_some()
            || a.show > 0
            || a.judge > 0
            || a.temperature.is_some()
            || a.take_rates;
        if a.temperature.is_some() && cfg.setting != "household" {
            bail!("--temperature: sampled evaluation is the household's; this run's setting evaluates greedily");
        }
        if cfg.setting != "household" || !household_views {
            return eval_setting(&a, cfg);
        }
        run_cfg = Some(cfg);
    }
    let split = parse_split(&a.split)?;
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
    let lm = crate::backend::open_sampler(&model)?;
    // the run's config, else the settings the checkpoint records, else the reference's
    // numbered prompt; explicit flags override either
    let recorded = match &run_cfg {
        Some(cfg) => Some(rla_train::household::Episodes::evaluation(cfg)),
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
        ep.style = parse_prompt_style(s)?;
    }
    if let Some(w) = a.window {
        ep.window = w;
    }
    if let Some(l) = step_limit(&a)? {
        ep.step_limit = l;
    }
    ep.notes |= a.notes;
    ep.constrained |= a.constrained || ep.style == rla_train::household::PromptStyle::Unlisted;
    if a.max_tokens == 0 {
        bail!("--max-tokens 0: an answer needs at least one token");
    }
    if let Some(dir) = &a.games {
        return eval_games(&a, &*lm, dir, ep);
    }
    if let Some(t) = a.temperature {
        return eval_sampled(&a, &*lm, &tasks[..n], ep, t, &model);
    }
    let bar = rla_train::bar((n * ep.step_limit) as u64, "eval");
    let started = std::time::Instant::now();
    let trajs =
        rla_train::household::evaluate_episodes(&*lm, &tasks[..n], ep, a.max_tokens, Some(&bar))?;
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
    let lost = trajs.iter().filter(|t| !t.won()).count();
    let looped = trajs
        .iter()
        .filter(|t| !t.won() && t.ends_in_loop(LOOP_STEPS))
        .count();
    println!(
        "lost {lost}; {looped} of them end in a loop (their last {LOOP_STEPS} actions repeat one action or alternate between two)"
    );
    if a.take_rates {
        let mut rates = rla_env::household::stats::TakeRates::default();
        for (t, task) in trajs.iter().zip(&tasks[..n]) {
            let w = std::sync::Arc::new(task.build()?);
            rates.add_episode(&w, &task.object, &commands(t));
        }
        print!("{rates}");
    }
    if a.judge > 0 {
        let notes = a.judge_notes
            || run_cfg
                .as_ref()
                .is_some_and(|c| HouseholdConfig::of(c).judge_notes);
        judge_steps(&a, &*lm, (&tasks[..n], notes), &trajs)?;
    }
    Ok(())
}

/// The commands an episode played.
fn commands(t: &rla_train::play::Trajectory) -> Vec<String> {
    t.steps.iter().map(|s| s.action.clone()).collect()
}

/// The steps at the end of a lost greedy episode that
/// [`rla_train::play::Trajectory::ends_in_loop`] reads.
const LOOP_STEPS: usize = 10;

/// `--temperature T --samples K`: K sampled episodes of every task; the mean success and its
/// standard error over the tasks (each task's share of won episodes).
fn eval_sampled(
    a: &EvalArgs,
    lm: &dyn rla_lm::Sampler,
    tasks: &[rla_env::household::TaskSpec],
    mut ep: rla_train::household::Episodes,
    temperature: f64,
    model: &std::path::Path,
) -> Result<()> {
    if !(temperature.is_finite() && temperature > 0.0) {
        bail!("--temperature {temperature}: use a positive temperature (greedy is the default)");
    }
    if a.samples == 0 {
        bail!("--samples 0: sample at least one episode a task");
    }
    ep.rollouts = a.samples;
    let sp = rla_lm::SampleParams {
        temperature,
        max_new_tokens: a.max_tokens,
        seed: 0,
        ..Default::default()
    };
    let n = tasks.len();
    let bar = rla_train::bar((n * a.samples * ep.step_limit) as u64, "eval");
    let trajs = rla_train::household::rollout(lm, tasks, ep, &sp, Some(&bar))?;
    bar.finish_and_clear();
    for t in trajs.iter().take(a.show) {
        print_episode(&format!("task: {}", tasks[t.task].sentence()), t);
    }
    let mut won = vec![0usize; n];
    for t in &trajs {
        won[t.task] += t.won() as usize;
    }
    let per: Vec<f64> = won.iter().map(|&w| w as f64 / a.samples as f64).collect();
    let (mean, se) = rla_core::stats::mean_std_error(&per).unwrap_or((0.0, 0.0));
    println!(
        "{} success on {n} {} tasks, {} episodes each at temperature {temperature}: {mean:.3} \
         (standard error {se:.3})",
        model.display(),
        a.split,
        a.samples,
    );
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
    use rla_train::setting::Ctx;
    let split = parse_split(&a.split)?;
    if cfg.setting == "household" {
        let h = HouseholdConfig::of_mut(&mut cfg);
        if let Some(w) = a.window {
            h.history_window = w;
        }
        if let Some(s) = &a.prompt_style {
            h.prompt_style = parse_prompt_style(s)?;
        }
        if let Some(l) = step_limit(a)? {
            h.eval_step_limit = l;
        }
        h.notes |= a.notes;
        h.constrain_actions |= a.constrained;
    }
    cfg.validate().map_err(anyhow::Error::msg)?;
    let model = a
        .model
        .clone()
        .ok_or_else(|| anyhow::anyhow!("name the policy: --model DIR"))?;
    let lm = crate::backend::open_sampler(&model)?;
    let mut s = rla_train::registry::setting(&cfg)?;
    let n = match (a.n, s.split_size(split)) {
        (Some(n), Some(size)) if n > size => bail!(
            "--n {n}: the {split:?} split of the {} setting holds {size} tasks",
            s.name()
        ),
        (Some(n), _) => n,
        (None, Some(size)) => size,
        (None, None) => bail!("--n: the {split:?} split has no end; say how many"),
    };
    let ctx = Ctx {
        cfg: &cfg,
        k: 0,
        progress: true,
    };
    let started = std::time::Instant::now();
    let success = s.evaluate(ctx, &*lm, split, n)?;
    let setting = s.name();
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

/// `eval --games DIR`: every game folder under DIR, played greedily; the success rate last.
fn eval_games(
    a: &EvalArgs,
    lm: &dyn rla_lm::Sampler,
    dir: &Path,
    ep: rla_train::household::Episodes,
) -> Result<()> {
    use rla_env::household::expert::GoalSpec;
    use rla_env::household::game::GameFile;
    use rla_env::household::Household;
    let mut folders = rla_env::household::game::game_folders(dir)?;
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
    let mut targets = Vec::with_capacity(folders.len());
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
        targets.push((g.world.clone(), traj.pddl_params.object_target.clone()));
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
    if a.take_rates {
        let mut rates = rla_env::household::stats::TakeRates::default();
        for (t, (w, target)) in trajs.iter().zip(&targets) {
            rates.add_episode(w, target, &commands(t));
        }
        print!("{rates}");
    }
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
    policy: &dyn rla_lm::Sampler,
    tasks: (&[rla_env::household::task::TaskSpec], bool),
    trajs: &[rla_train::play::Trajectory],
) -> Result<()> {
    let own;
    let judge = match &a.judge_model {
        Some(d) => {
            own = crate::backend::open_sampler(d)?;
            &*own
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
