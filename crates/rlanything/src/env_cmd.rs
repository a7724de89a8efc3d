//! `rlanything env …`: the household environment from the command line.

pub use crate::args::SplitArg;
use anyhow::{bail, Context, Result};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_core::Split;
use rla_env::household::expert::{plan_commands, GoalSpec};
use rla_env::household::splits::{eval_tasks, train_tasks};
use rla_env::household::trace::replay_dir;
use rla_env::household::{GameFile, HouseholdGame};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Subcommand)]
pub enum EnvCmd {
    /// Replay traces recorded from ALFWorld's engine and report every difference.
    Replay {
        /// A folder of game folders (each with game.tw-pddl, traj_data.json, trace-*.jsonl).
        dir: PathBuf,
    },
    /// Step one environment with random admissible commands and print steps per second.
    Bench {
        /// A game folder or game.tw-pddl file.
        game: PathBuf,
        /// Number of steps.
        #[arg(long, default_value_t = 1_000_000)]
        steps: usize,
        /// Seed of the random commands.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Write generated tasks as ALFWorld game folders (game.tw-pddl, traj_data.json, task.json).
    Generate {
        /// Which tasks: in-domain or ood (the fixed evaluation splits), validation (for tuning) or train.
        #[arg(long, value_enum, default_value = "in-domain")]
        split: SplitArg,
        /// Number of training tasks (train only).
        #[arg(long, default_value_t = 16)]
        n: usize,
        /// Seed of the training tasks (train only).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output folder.
        #[arg(
            long,
            required_unless_present = "alfworld_data",
            conflicts_with = "alfworld_data"
        )]
        out: Option<PathBuf>,
        /// Write a stand-in for ALFWorld's data in its layout instead: DIR/json_2.1.1/train (--n
        /// generated training tasks), valid_seen (the in-domain split) and valid_unseen (the OOD
        /// split), each game in TASK/trial_ID/; then ALFWORLD_DATA=DIR runs configs/alfworld.toml.
        #[arg(long, value_name = "DIR", conflicts_with = "split")]
        alfworld_data: Option<PathBuf>,
    },
    /// Print the expert's shortest plan for a game.
    Solve {
        /// A game folder or game.tw-pddl file (with traj_data.json beside it).
        game: PathBuf,
    },
    /// A split's statistics (rooms, receptacles, objects and classes a scene, single-target share,
    /// the chance an object is a target given the number it is shown with), to hold beside
    /// ALFWorld's game files.
    Stats {
        /// Which generated tasks: in-domain, ood, validation or train.
        #[arg(
            long,
            value_enum,
            default_value = "in-domain",
            conflicts_with = "games"
        )]
        split: SplitArg,
        /// Number of training tasks (train only).
        #[arg(long, default_value_t = 1000)]
        n: usize,
        /// Seed of the training tasks (train only).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// A folder of game folders (game.tw-pddl and traj_data.json, ALFWorld's layout) instead
        /// of a generated split.
        #[arg(long)]
        games: Option<PathBuf>,
    },
    /// Play a game by typing commands (reads standard input).
    Play {
        /// A game folder or game.tw-pddl file.
        game: PathBuf,
    },
}

pub fn run(cmd: EnvCmd) -> Result<()> {
    match cmd {
        EnvCmd::Replay { dir } => replay(dir),
        EnvCmd::Bench { game, steps, seed } => bench(game, steps, seed),
        EnvCmd::Generate {
            split,
            n,
            seed,
            out,
            alfworld_data,
        } => match (out, alfworld_data) {
            (_, Some(root)) => generate_alfworld_data(n, seed, &root),
            (Some(out), None) => generate(split, n, seed, out),
            (None, None) => unreachable!("clap requires --out or --alfworld-data"),
        },
        EnvCmd::Solve { game } => solve(game),
        EnvCmd::Stats {
            split,
            n,
            seed,
            games,
        } => stats(split, n, seed, games),
        EnvCmd::Play { game } => play(game),
    }
}

fn replay(dir: PathBuf) -> Result<()> {
    let reports = replay_dir(&dir)?;
    let (mut passed, mut failed) = (0, 0);
    for r in &reports {
        if r.passed() {
            passed += 1;
        } else {
            failed += 1;
            if let Some(e) = &r.error {
                println!("FAILED {}", e.replace('\n', " | "));
            }
            for m in &r.mismatches {
                println!("MISMATCH {}", m.to_string().replace('\n', " | "));
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// Loads a game. The error's message already includes its cause, so it is not kept as a
/// source: `{:#}` would print the cause twice.
fn load_game(game: &std::path::Path) -> Result<GameFile> {
    GameFile::load(game).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Steps per second of random play with the admissible list computed every step.
pub fn measure(game: &GameFile, steps: usize, seed: u64) -> (f64, usize) {
    let mut env = HouseholdGame::new(game.world.clone());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    env.reset();
    let mut episodes = 1;
    let t = Instant::now();
    for _ in 0..steps {
        let cmd = env
            .admissible()
            .choose(&mut rng)
            .expect("never empty")
            .clone();
        if env.step(&cmd).done {
            env.reset();
            episodes += 1;
        }
    }
    (steps as f64 / t.elapsed().as_secs_f64(), episodes)
}

fn bench(game: PathBuf, steps: usize, seed: u64) -> Result<()> {
    if steps == 0 {
        bail!("--steps must be at least 1");
    }
    let g = load_game(&game)?;
    let (sps, episodes) = measure(&g, steps, seed);
    println!(
        "{}: {} receptacles, {} objects; {steps} random admissible steps ({episodes} episodes) on one core",
        g.path.display(),
        g.world.receptacles.len(),
        g.world.objects.iter().filter(|o| o.otype.is_some()).count()
    );
    println!("{sps:.0} steps/s (admissible commands computed every step)");
    Ok(())
}

fn write_atomic(path: &std::path::Path, text: &str) -> Result<()> {
    Ok(rla_core::file::write_atomic(path, text.as_bytes())?)
}

fn split_tasks(split: SplitArg, n: usize, seed: u64) -> Vec<rla_env::household::TaskSpec> {
    match split {
        SplitArg::InDomain => eval_tasks(Split::InDomain),
        SplitArg::Ood => eval_tasks(Split::Ood),
        SplitArg::Validation => eval_tasks(Split::Validation),
        SplitArg::Train => train_tasks(n, seed),
    }
}

fn stats(split: SplitArg, n: usize, seed: u64, games: Option<PathBuf>) -> Result<()> {
    use rla_env::household::stats::{scene_stats, SplitStats};
    let mut all = SplitStats::default();
    match games {
        Some(dir) => {
            let folders = rla_env::household::game::game_folders(&dir)?;
            if folders.is_empty() {
                bail!(
                    "{} holds no game folder (a folder with game.tw-pddl)",
                    dir.display()
                );
            }
            for f in &folders {
                let g = load_game(f)?;
                let traj = g.traj.as_ref().with_context(|| {
                    format!(
                        "{}: no traj_data.json beside the game (it names the goal)",
                        f.display()
                    )
                })?;
                all.add(
                    &scene_stats(&g.world, &traj.pddl_params.object_target),
                    None,
                );
            }
            println!("{} games under {}", folders.len(), dir.display());
        }
        None => {
            for t in split_tasks(split, n, seed) {
                let w = t.build()?;
                all.add(&scene_stats(&w, &t.object), Some(t.room().as_str()));
            }
        }
    }
    print!("{all}");
    Ok(())
}

fn generate(split: SplitArg, n: usize, seed: u64, out: PathBuf) -> Result<()> {
    let tasks = split_tasks(split, n, seed);
    for t in &tasks {
        let dir = out.join(format!(
            "{}-{}-{}",
            t.id,
            t.goal.as_str(),
            t.room().as_str()
        ));
        write_game(t, &dir)?;
    }
    println!("wrote {} games to {}", tasks.len(), out.display());
    Ok(())
}

fn write_game(t: &rla_env::household::TaskSpec, dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_atomic(&dir.join("game.tw-pddl"), &t.game_json()?)?;
    write_atomic(&dir.join("traj_data.json"), &t.traj_json())?;
    write_atomic(&dir.join("task.json"), &serde_json::to_string_pretty(t)?)?;
    Ok(())
}

/// A stand-in for `$ALFWORLD_DATA`: generated games in ALFWorld's layout
/// (`json_2.1.1/{train,valid_seen,valid_unseen}/TASK/trial_ID/`), TASK named as ALFWorld names
/// its folders (`pick_and_place_simple-Apple-None-Fridge-12`).
fn generate_alfworld_data(n: usize, seed: u64, root: &std::path::Path) -> Result<()> {
    for (name, split) in [
        ("train", SplitArg::Train),
        ("valid_seen", SplitArg::InDomain),
        ("valid_unseen", SplitArg::Ood),
    ] {
        let tasks = split_tasks(split, n, seed);
        let out = root.join("json_2.1.1").join(name);
        for t in &tasks {
            let task = format!(
                "{}-{}-None-{}-{}",
                t.goal.as_str(),
                t.object,
                t.receptacle.as_deref().or(t.lamp.as_deref()).unwrap_or(""),
                t.floor_plan
            );
            write_game(t, &out.join(task).join(format!("trial_{}", t.id)))?;
        }
        println!("wrote {} games to {}", tasks.len(), out.display());
    }
    println!(
        "ALFWORLD_DATA={} now stands in for ALFWorld's data",
        root.display()
    );
    Ok(())
}

fn solve(game: PathBuf) -> Result<()> {
    let g = load_game(&game)?;
    let spec = GoalSpec::from_game(&g).map_err(anyhow::Error::msg)?;
    let commands =
        plan_commands(&g.world, &g.world.initial, &spec).context("the expert found no plan")?;
    for c in commands {
        println!("{c}");
    }
    Ok(())
}

fn play(game: PathBuf) -> Result<()> {
    let g = load_game(&game)?;
    let mut env = HouseholdGame::new(g.world.clone());
    println!("{}", env.reset());
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout();
    let mut buf = Vec::new();
    loop {
        print!("> ");
        out.flush()?;
        buf.clear();
        if input
            .read_until(b'\n', &mut buf)
            .context("reading standard input")?
            == 0
        {
            return Ok(());
        }
        let Ok(line) = std::str::from_utf8(&buf) else {
            println!("input is not UTF-8; type a command");
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim() == "admissible" {
            println!("{}", env.admissible().join("\n"));
        } else {
            let s = env.step(line);
            println!("{}", s.feedback);
            if s.done {
                println!("(won)");
                return Ok(());
            }
        }
    }
}
