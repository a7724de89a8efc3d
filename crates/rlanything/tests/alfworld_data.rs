//! ALFWorld's own data in the loop: a run of `configs/alfworld.toml` trains on game folders in
//! ALFWorld's layout (a stand-in written by `env generate --alfworld-data`, as nothing downloads
//! here) and evaluates on game folders; the rewrites it proposes are written into the run as game
//! folders that ALFWorld 0.4.2's own engine loads (`target/py-venv`, which the tests' set-up
//! installs; RLA_ALFWORLD_PYTHON names another interpreter) and its handcoded expert wins; a
//! resumed run reads them again.

use serde_json::Value;
use std::path::{Path, PathBuf};
mod common;
use common::{bin, succeeds};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn state(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("checkpoint/state.json")).unwrap())
        .unwrap()
}

/// The game folders directly under `dir` (none when it is missing).
fn folders(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Plays each game folder in ALFWorld's engine with its handcoded expert: one JSON line a game.
fn alfworld_expert(games: &[PathBuf]) -> Vec<Value> {
    let python = std::env::var("RLA_ALFWORLD_PYTHON").unwrap_or_else(|_| {
        root()
            .join("target/py-venv/bin/python")
            .display()
            .to_string()
    });
    assert!(
        Path::new(&python).exists() || std::env::var("RLA_ALFWORLD_PYTHON").is_ok(),
        "{python} is missing: run scripts/python-env.sh (ALFWorld 0.4.2)"
    );
    let out = std::process::Command::new(&python)
        .arg(root().join("crates/rla-env/tests/py/alfworld_expert.py"))
        .args(games)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `rlanything train` of configs/alfworld.toml with ALFWORLD_DATA set and small counts.
fn train(data: &Path, run: &Path, iterations: usize, resume: bool) {
    let mut c = bin();
    c.env("ALFWORLD_DATA", data).arg("train").arg("--quiet");
    if resume {
        c.arg("--resume").arg(run);
    } else {
        c.arg("--config")
            .arg(root().join("configs/alfworld.toml"))
            .arg("--run")
            .arg(run);
    }
    for s in [
        format!("iterations={iterations}"),
        "pool_size=8".into(),
        "tasks_per_iteration=4".into(),
        "rollouts_per_task=4".into(),
        "update_epochs=1".into(),
        "household.train_step_limit=15".into(),
        "household.eval_step_limit=15".into(),
        "eval.in_domain=4".into(),
        "eval.ood=4".into(),
        "eval.every=2".into(),
        // no accuracy four episodes give (0, 1/4, …, 1) lies in this band: every task is due a
        // rewrite
        "adapt.acc_low=0.3".into(),
        "adapt.acc_high=0.4".into(),
    ] {
        if resume && !s.starts_with("iterations") {
            continue;
        }
        c.arg("--set").arg(s);
    }
    succeeds(&mut c);
}

#[test]
fn a_run_trains_on_game_folders_and_writes_its_rewrites_as_games_alfworld_plays() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("alfworld");
    succeeds(
        bin()
            .args(["env", "generate", "--n", "12", "--alfworld-data"])
            .arg(&data),
    );
    let train_dir = data.join("json_2.1.1/train");
    let run = tmp.path().join("run");
    train(&data, &run, 2, false);

    // the pool is the training folder's games; evaluation played the valid_seen and
    // valid_unseen folders
    let s = state(&run);
    let slots = s["pool"]["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 8);
    for slot in slots {
        let dir = PathBuf::from(slot["task"]["game_dir"].as_str().unwrap());
        assert!(
            dir.starts_with(&train_dir) || dir.starts_with(run.join("games/accepted")),
            "{}",
            dir.display()
        );
    }
    let m = common::metrics(&run);
    assert!(m[0]["eval_in_domain"].is_number() && m[2]["eval_ood"].is_number());
    let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(
        config.contains(&format!("{:?}", train_dir.display().to_string())),
        "the run records where its games were: {config}"
    );

    // every task was due a rewrite: those of iteration 1 were played in iteration 2 and accepted
    // or dropped, those of iteration 2 wait
    let proposed = folders(&run.join("games/proposed"));
    assert!(proposed.len() >= 4, "{proposed:?}");
    let accepted = folders(&run.join("games/accepted"));
    let in_pool: Vec<PathBuf> = slots
        .iter()
        .map(|s| PathBuf::from(s["task"]["game_dir"].as_str().unwrap()))
        .filter(|d| d.starts_with(run.join("games/accepted")))
        .collect();
    for a in &in_pool {
        assert!(accepted.contains(a), "{}", a.display());
    }
    assert_eq!(
        m.iter()
            .map(|x| x["accepted"].as_u64().unwrap())
            .sum::<u64>() as usize,
        accepted.len()
    );
    eprintln!(
        "{} rewrites proposed, {} accepted",
        proposed.len(),
        accepted.len()
    );

    // ALFWorld's engine loads every rewrite into the intro this engine shows, and its expert
    // wins every accepted one within 200 steps (and most proposed ones: its pick-two search is
    // slow)
    let lines = alfworld_expert(&proposed);
    assert_eq!(lines.len(), proposed.len());
    for (l, dir) in lines.iter().zip(&proposed) {
        assert_eq!(l["error"], Value::Null, "{}", dir.display());
        let g = rla_env::household::GameFile::load(dir).unwrap();
        let mut env = rla_env::household::HouseholdGame::new(g.world.clone());
        assert_eq!(
            l["initial"].as_str().unwrap(),
            env.reset(),
            "{}",
            dir.display()
        );
    }
    let won = lines.iter().filter(|l| l["won"] == true).count();
    assert!(
        4 * won >= 3 * lines.len(),
        "{won} of {}: {lines:?}",
        lines.len()
    );
    if !accepted.is_empty() {
        for l in alfworld_expert(&accepted) {
            assert_eq!(l["won"], true, "{l}");
        }
    }

    // resumed for one more iteration, the run plays the rewrites that waited from their folders
    let waiting: Vec<String> = s["pool"]["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["task"]["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!waiting.is_empty());
    train(&data, &run, 3, true);
    let m = common::metrics(&run);
    assert_eq!(m.len(), 4);
    assert_eq!(
        m[3]["pending_evaluated"].as_u64().unwrap() as usize,
        waiting.len()
    );
}

#[test]
fn bad_game_folders_are_named_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("alfworld");
    let run = tmp.path().join("run");
    // no games at all
    std::fs::create_dir_all(data.join("json_2.1.1/train")).unwrap();
    let out = bin()
        .env("ALFWORLD_DATA", &data)
        .args(["train", "--quiet", "--config"])
        .arg(root().join("configs/alfworld.toml"))
        .arg("--run")
        .arg(&run)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("holds no game folder") && err.contains("json_2.1.1/train"),
        "{err}"
    );
    // ALFWORLD_DATA unset: the message names the stand-in
    let out = bin()
        .env_remove("ALFWORLD_DATA")
        .args(["train", "--quiet", "--config"])
        .arg(root().join("configs/alfworld.toml"))
        .arg("--run")
        .arg(tmp.path().join("run2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ALFWORLD_DATA is not set") && err.contains("env generate --alfworld-data"),
        "{err}"
    );
}
