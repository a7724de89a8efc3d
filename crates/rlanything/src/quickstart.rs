//! `rlanything quickstart`: the main job, end to end, with default settings.

use anyhow::Result;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_core::advantage::policy_advantages;
use rla_core::consistency::consistency_advantages;
use rla_core::reward::{step_reward, Outcome, StepScore};
use rla_core::Split;
use rla_env::household::expert::{plan, GoalSpec};
use rla_env::household::splits::eval_tasks;
use rla_env::household::HouseholdGame;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Seed of every random choice (default: the config's, 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Sets a key of the closed loop's config (configs/quickstart.toml), as a line of it would:
    /// `--set iterations=4` (repeatable; the value read as TOML, else as a string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<rla_train::config::Override>,
    /// Run folder of the closed-loop run (resumed if it holds one).
    #[arg(long, default_value = "runs/quickstart")]
    pub run: std::path::PathBuf,
    /// Skip the closed loop (configs/quickstart.toml, about 8 minutes on 2 cores): only the
    /// environment, the reward rules and the theory table.
    #[arg(long)]
    pub no_train: bool,
    /// The household base to start from (a folder holding `policy/` and `reward/`, as
    /// `rlanything pretrain --out DIR` writes it). Default: `models/household` in the current
    /// folder (a checkout), else beside the program, else the copy built into the program.
    #[arg(long, value_name = "DIR")]
    pub base: Option<std::path::PathBuf>,
}

/// The shipped household base's files, built into the program so that it runs anywhere.
const EMBEDDED_BASE: &[(&str, &[u8])] = &[
    (
        "policy/config.json",
        include_bytes!("../../../models/household/policy/config.json"),
    ),
    (
        "policy/generation_config.json",
        include_bytes!("../../../models/household/policy/generation_config.json"),
    ),
    (
        "policy/model.safetensors",
        include_bytes!("../../../models/household/policy/model.safetensors"),
    ),
    (
        "policy/rlanything-episodes.json",
        include_bytes!("../../../models/household/policy/rlanything-episodes.json"),
    ),
    (
        "policy/tokenizer.json",
        include_bytes!("../../../models/household/policy/tokenizer.json"),
    ),
    (
        "policy/tokenizer_config.json",
        include_bytes!("../../../models/household/policy/tokenizer_config.json"),
    ),
    (
        "reward/config.json",
        include_bytes!("../../../models/household/reward/config.json"),
    ),
    (
        "reward/generation_config.json",
        include_bytes!("../../../models/household/reward/generation_config.json"),
    ),
    (
        "reward/model.safetensors",
        include_bytes!("../../../models/household/reward/model.safetensors"),
    ),
    (
        "reward/tokenizer.json",
        include_bytes!("../../../models/household/reward/tokenizer.json"),
    ),
    (
        "reward/tokenizer_config.json",
        include_bytes!("../../../models/household/reward/tokenizer_config.json"),
    ),
];

/// Whether `dir` holds a household base: `policy/` and `reward/` checkpoints.
fn is_base(dir: &std::path::Path) -> bool {
    rla_lm::is_checkpoint(&dir.join("policy")) && rla_lm::is_checkpoint(&dir.join("reward"))
}

/// The household base the closed loop starts from, and where it was found: `--base`, the
/// current folder's `models/household`, one beside the program, or the built-in copy written
/// into the run folder (`RUN/base/`).
pub fn find_base(
    given: Option<&std::path::Path>,
    run: &std::path::Path,
) -> Result<(std::path::PathBuf, &'static str)> {
    if let Some(b) = given {
        if !is_base(b) {
            anyhow::bail!(
                "--base {}: not a household base (it needs policy/ and reward/ checkpoints: \
                 config.json, tokenizer.json and model.safetensors in each, as `rlanything \
                 pretrain --config configs/household-base.toml --out DIR` writes them)",
                b.display()
            );
        }
        return Ok((b.to_path_buf(), "--base"));
    }
    let here = std::path::PathBuf::from("models/household");
    if is_base(&here) {
        return Ok((here, "the current folder"));
    }
    if let Some(beside) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|p| p.join("models/household")))
        .filter(|d| is_base(d))
    {
        return Ok((beside, "beside the program"));
    }
    let out = run.join("base");
    for (name, bytes) in EMBEDDED_BASE {
        let path = out.join(name);
        if std::fs::read(&path).ok().as_deref() != Some(*bytes) {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", parent.display()))?;
            }
            rla_core::file::write_atomic(&path, bytes).map_err(|e| {
                anyhow::anyhow!("writing the built-in base to {}: {e}", path.display())
            })?;
        }
    }
    Ok((out, "built into the program"))
}

/// The quickstart's configuration, shipped in `configs/quickstart.toml`.
pub const QUICKSTART_TOML: &str = include_str!("../../../configs/quickstart.toml");

/// The folder `configs/quickstart.toml` sits in: the base it names is read from there.
pub const CONFIGS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs");

/// The quickstart's configuration, its base read relative to the source tree's `configs/`, with
/// the command line's overrides applied.
pub fn quickstart_config(
    overrides: &[rla_train::config::Override],
) -> Result<rla_train::RunConfig> {
    rla_train::RunConfig::parse_in_with(
        QUICKSTART_TOML,
        std::path::Path::new(CONFIGS_DIR),
        overrides,
    )
    .map_err(|e| anyhow::anyhow!("configs/quickstart.toml: {e}"))
}

/// Success of the expert and of a random agent on one evaluation split.
fn evaluate(split: Split, seed: u64) -> Result<(usize, usize, usize, f64)> {
    let tasks = eval_tasks(split);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut expert, mut random, mut steps) = (0, 0, 0usize);
    for t in &tasks {
        let mut env = HouseholdGame::from_task(t)?;
        let goal = GoalSpec::from_task(env.world(), t).map_err(anyhow::Error::msg)?;
        // The expert: re-plan from the current state at every step.
        env.reset();
        loop {
            let p = plan(env.world(), env.state(), &goal).unwrap_or_default();
            let Some(&a) = p.first() else { break };
            let s = env.apply(a);
            steps += 1;
            if s.done {
                expert += s.won as usize;
                break;
            }
        }
        // A random agent choosing among the admissible commands.
        env.reset();
        loop {
            let cmd = env
                .admissible()
                .choose(&mut rng)
                .expect("never empty")
                .clone();
            let s = env.step(&cmd);
            steps += 1;
            if s.done {
                random += s.won as usize;
                break;
            }
        }
    }
    Ok((tasks.len(), expert, random, steps as f64))
}

pub fn run(a: Args) -> Result<()> {
    // the config first: a bad override is named before any work
    let cfg = quickstart_config(&crate::train_cmd::overrides(&a.set, a.seed)?)?;
    let seed = cfg.seed;
    println!("== Household evaluation splits (ALFWorld-compatible, generated natively) ==");
    let t = Instant::now();
    let mut total_steps = 0.0;
    for split in [Split::InDomain, Split::Ood] {
        let (n, e, r, s) = evaluate(split, seed)?;
        total_steps += s;
        println!(
            "{:<10} {n:>4} tasks   expert {:>5.1}%   random agent {:>5.1}%",
            format!("{split:?}"),
            100.0 * e as f64 / n as f64,
            100.0 * r as f64 / n as f64
        );
    }
    println!(
        "({total_steps:.0} environment steps with expert re-planning every step, in {:.2} s)\n",
        t.elapsed().as_secs_f64()
    );

    use StepScore::{Negative as N, Positive as P};
    println!("== RLAnything rewards on the paper's worked example (m = 3, λ = 1) ==");
    let rollouts = [
        (Outcome::Success, [P, P, P]),
        (Outcome::Success, [P, N, P]),
        (Outcome::Success, [N, N, P]),
        (Outcome::Failure, [P, P, P]),
        (Outcome::Failure, [P, N, N]),
        (Outcome::Failure, [N, N, N]),
    ];
    let rewards: Vec<Vec<f64>> = rollouts
        .iter()
        .map(|(o, s)| vec![step_reward(*o, s, 1.0)])
        .collect();
    let adv = policy_advantages(&rewards);
    println!(
        "{:<9} {:<12} {:>7} {:>10}   consistency advantages",
        "outcome", "verdicts", "R_i", "A_i"
    );
    for (((o, s), r), a) in rollouts.iter().zip(&rewards).zip(&adv) {
        let c = consistency_advantages(r[0], s);
        let verdicts: Vec<&str> = s
            .iter()
            .map(|v| if *v == P { "+1" } else { "-1" })
            .collect();
        let cs: Vec<String> = c
            .iter()
            .map(|x| {
                x.map(|v| format!("{v:+.2}"))
                    .unwrap_or_else(|| "skip".into())
            })
            .collect();
        println!(
            "{:<9} {:<12} {:>7.2} {:>10}   {}",
            format!("{o:?}"),
            verdicts.join(","),
            r[0],
            a[0].map(|v| format!("{v:+.2}"))
                .unwrap_or_else(|| "drop".into()),
            cs.join(" ")
        );
    }
    println!();
    print!(
        "{}",
        crate::theory_cmd::table(&[0.8, 1.0, 1.2, 1.4, 1.6], &[1, 3, 9, 27])
    );
    if a.no_train {
        return Ok(());
    }
    let mut cfg = cfg;
    let set = |key: &str| a.set.iter().any(|o| o.key == key);
    if !set("policy.path") || !set("reward.path") {
        let (base, from) = find_base(a.base.as_deref(), &a.run)?;
        if !set("policy.path") {
            cfg.policy.path = Some(base.join("policy"));
        }
        if !set("reward.path") {
            cfg.reward.path = Some(base.join("reward"));
        }
        println!(
            "\n== The closed loop from the household base ({}, {from}), mode `full` ==",
            base.display()
        );
    }
    cfg.check_paths().map_err(anyhow::Error::msg)?;
    let t = Instant::now();
    let resume = a.run.join("checkpoint/state.json").exists();
    let eval = cfg.eval.clone();
    let ms = crate::train_cmd::train_run_metrics(cfg, &a.run, resume, true)?;
    print!("{}", rla_train::report::summary(&a.run, &ms, &eval, None)?);
    println!(
        "({:.0} s; curves: {}, report: {})",
        t.elapsed().as_secs_f64(),
        a.run.join("success.png").display(),
        a.run.join("report.md").display()
    );
    Ok(())
}
