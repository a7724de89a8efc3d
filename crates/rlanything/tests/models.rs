//! The pretrained bases shipped in `models/`: complete Hugging Face folders within the size
//! the repository affords, whose manifests' check figures hold when played again.

use rla_train::config::{RunConfig, SettingConfig};
use rla_train::desktop::config::DesktopConfig;
use rla_train::household::config::HouseholdConfig;
use rla_train::manifest::{read_check, validation_wins};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                folder_bytes(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

/// A shipped base: both models' HF files present, the folder within 15 MB, and the manifest's
/// check figure played again from the config that made it.
fn check_base(folder: &str, config: &str) {
    let base = root().join(folder);
    for model in ["policy", "reward"] {
        for file in ["config.json", "model.safetensors", "tokenizer.json"] {
            let p = base.join(model).join(file);
            assert!(p.exists(), "{} is missing", p.display());
        }
    }
    let mb = folder_bytes(&base) as f64 / 1e6;
    assert!(mb <= 15.0, "{folder} holds {mb:.1} MB; a base may hold 15");
    let manifest = std::fs::read_to_string(base.join("MANIFEST.md")).unwrap();
    let (won, n) = read_check(&manifest).expect("MANIFEST.md states its check figure");
    let cfg = RunConfig::load(&root().join(config)).unwrap();
    let again = validation_wins(&rla_model::Candle, &cfg, &base.join("policy"), n).unwrap();
    // Greedy play is deterministic on one machine; another CPU's matrix kernels round
    // differently and may turn a near tie, so one task either way is allowed.
    assert!(
        again.abs_diff(won) <= 1,
        "the manifest says {won} of the first {n} validation tasks; played again: {again}"
    );
}

#[test]
fn models_household() {
    check_base("models/household", "configs/household-base.toml");
}

#[test]
fn models_household_sft() {
    check_base("models/household-sft", "configs/household-base.toml");
}

#[test]
fn models_coding() {
    check_base("models/coding", "configs/coding-base.toml");
}

#[test]
fn models_desktop() {
    check_base("models/desktop", "configs/desktop-base.toml");
}

#[test]
fn models_desktop_sheets() {
    check_base("models/desktop-sheets", "configs/desktop-sheets-base.toml");
}

/// A run config whose policy and judge are a shipped base's, both present.
fn starts_from(config: &str, folder: &str) -> RunConfig {
    let cfg = RunConfig::load(&root().join(config)).unwrap();
    let base = std::fs::canonicalize(root().join(folder)).unwrap();
    assert_eq!(
        cfg.policy.path.as_deref(),
        Some(base.join("policy").as_path())
    );
    assert_eq!(
        cfg.reward.path.as_deref(),
        Some(base.join("reward").as_path())
    );
    cfg.check_paths().unwrap();
    cfg
}

#[test]
fn the_desktop_run_starts_from_the_shipped_desktop_base() {
    let cfg = starts_from("configs/desktop-tiny.toml", "models/desktop");
    // the run plays as the base learnt: the same history of actions in its prompts
    let made = RunConfig::load(&root().join("configs/desktop-base.toml")).unwrap();
    assert_eq!(
        DesktopConfig::of(&cfg).history,
        DesktopConfig::of(&made).history
    );
}

#[test]
fn the_sheets_world_run_starts_from_the_sheets_worlds_base() {
    let cfg = starts_from("configs/desktop-sheets.toml", "models/desktop-sheets");
    let made = RunConfig::load(&root().join("configs/desktop-sheets-base.toml")).unwrap();
    for c in [&cfg, &made] {
        assert_eq!(
            DesktopConfig::of(c).world,
            rla_desktop::tasks::family::World::Sheets
        );
    }
    assert_eq!(
        DesktopConfig::of(&cfg).history,
        DesktopConfig::of(&made).history
    );
}

#[test]
fn the_coding_run_starts_from_the_shipped_coding_base() {
    starts_from("configs/coding-tiny.toml", "models/coding");
}

#[test]
fn the_quickstart_starts_from_the_shipped_base_and_a_missing_base_is_named() {
    let cfg = starts_from("configs/quickstart.toml", "models/household");
    // the run plays and judges as the base learnt: the same prompts for the policy and the judge
    let made = RunConfig::load(&root().join("configs/household-base.toml")).unwrap();
    let (h, m) = (HouseholdConfig::of(&cfg), HouseholdConfig::of(&made));
    assert_eq!(
        (h.notes, h.history_window, h.judge_notes),
        (m.notes, m.history_window, m.judge_notes)
    );
    // the same file elsewhere: its paths are read from its own folder, where no base is
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("configs");
    std::fs::create_dir(&sub).unwrap();
    std::fs::copy(
        root().join("configs/quickstart.toml"),
        sub.join("quickstart.toml"),
    )
    .unwrap();
    let moved = RunConfig::load(&sub.join("quickstart.toml")).unwrap();
    let e = moved.check_paths().unwrap_err();
    assert!(
        e.contains("policy.path") && e.contains("does not exist"),
        "{e}"
    );
    assert!(e.contains("models/household/policy"), "{e}");
    // the quickstart command refuses to start without it, naming the folder
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args(["train", "--config"])
        .arg(sub.join("quickstart.toml"))
        .arg("--run")
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("models/household/policy"), "{err}");
}

/// `quickstart` runs from any folder: with no `models/household` there or beside the program,
/// it starts from the base built into the program, written into the run folder; a `--base` that
/// is no base is named.
#[test]
fn the_quickstart_runs_from_anywhere_on_the_built_in_base() {
    let dir = tempfile::tempdir().unwrap();
    let small = [
        "iterations=1",
        "tasks_per_iteration=1",
        "rollouts_per_task=2",
        "eval.in_domain=2",
        "eval.ood=2",
    ];
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"));
    cmd.current_dir(dir.path()).arg("quickstart");
    for s in small {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("built into the program"), "{text}");
    for f in ["policy/model.safetensors", "reward/tokenizer.json"] {
        assert_eq!(
            std::fs::read(dir.path().join("runs/quickstart/base").join(f)).unwrap(),
            std::fs::read(root().join("models/household").join(f)).unwrap(),
            "{f}"
        );
    }
    assert!(dir.path().join("runs/quickstart/metrics.jsonl").exists());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .current_dir(dir.path())
        .args(["quickstart", "--base", "nowhere", "--run", "other"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--base nowhere") && err.contains("policy/"),
        "{err}"
    );
}
