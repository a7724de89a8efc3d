//! `--set KEY=VALUE` and `--seed N` on `train`, `ablate`, `pretrain` and `quickstart`: keys typed
//! by the config's schema, recorded in what the command writes, bad ones named as the config
//! loader names them.

use std::path::Path;
mod common;
use common::{bin, succeeds, TINY_HOUSEHOLD as CONFIG};

/// Runs `args` (with `--config cfg` where the command takes one) expecting a failure whose
/// message holds `needle`; returns nothing, checks that no work was started in `dir`.
fn refused(dir: &Path, cmd: &str, set: &[&str], needle: &str) {
    let cfg = dir.join("tiny.toml");
    let mut c = bin();
    c.arg(cmd);
    match cmd {
        "train" => c
            .args(["--quiet", "--config"])
            .arg(&cfg)
            .arg("--run")
            .arg(dir.join("r")),
        "ablate" => c
            .args(["--quiet", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(dir.join("r")),
        "pretrain" => c.arg("--config").arg(&cfg).arg("--out").arg(dir.join("r")),
        _ => c.args(["--run"]).arg(dir.join("r")),
    };
    let out = c.args(set).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{cmd} {set:?}");
    assert!(
        err.contains(needle) && !err.contains("panicked"),
        "{cmd} {set:?}: {err}"
    );
    assert!(!dir.join("r").exists(), "{cmd} {set:?}: work started");
}

#[test]
fn bad_overrides_are_named_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), CONFIG).unwrap();
    for cmd in ["train", "ablate", "pretrain", "quickstart"] {
        for (set, needle) in [
            (&["--set", "lamda=1.0"][..], "lamda"),
            (&["--set", "judge_samples=three"], "judge_samples"),
            (&["--set", "policy.lr=-1"], "policy.lr"),
            (&["--set", "pretrain.tasks=0"], "pretrain.tasks"),
            (&["--set", "mode=everything"], "everything"),
            (&["--set", "household.nosuchkey=1"], "nosuchkey"),
            (&["--set", "seed.x=1"], "seed"),
            (&["--set", "iterations"], "KEY=VALUE"),
            (&["--seed", "ten"], "--seed"),
            (
                &["--seed", "18446744073709551615"],
                "--seed 18446744073709551615",
            ),
            (&["--set", "policy.lr=1e-4\nlambda=0.5"], "line break"),
            (
                &["--set", "policy.max_new_tokens=1e9"],
                "policy.max_new_tokens = 1000000000: at most",
            ),
            (
                &["--set", "update_epochs=1e9"],
                "update_epochs = 1000000000",
            ),
            (
                &["--set", "household.train_step_limit=1e12"],
                "household.train_step_limit = 1000000000000",
            ),
        ] {
            refused(dir.path(), cmd, set, needle);
        }
    }
}

#[test]
fn good_overrides_are_read_as_typed_values_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tiny.toml");
    std::fs::write(&cfg, CONFIG).unwrap();

    // pretrain: the manifest records the config as read and the command
    let pre = dir.path().join("pre");
    succeeds(
        bin()
            .args(["pretrain", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&pre)
            .args(["--set", "pretrain.policy_steps=2", "--seed", "11"]),
    );
    let manifest = std::fs::read_to_string(pre.join("MANIFEST.md")).unwrap();
    assert!(
        manifest.contains("policy_steps = 2")
            && manifest.contains("seed = 11")
            && manifest.contains("--set pretrain.policy_steps=2 --set seed=11"),
        "{manifest}"
    );

    // a config read from a pipe is read once: the manifest records it as given
    let piped = dir.path().join("piped");
    let mut child = bin()
        .args(["pretrain", "--config", "/dev/stdin", "--out"])
        .arg(&piped)
        .args(["--set", "pretrain.policy_steps=1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(CONFIG.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let manifest = std::fs::read_to_string(piped.join("MANIFEST.md")).unwrap();
    assert!(manifest.contains("policy_steps = 1"), "{manifest}");
    let mut child = bin()
        .args(["pretrain", "--config", "/dev/stdin", "--out"])
        .arg(dir.path().join("piped-plain"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(CONFIG.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let manifest = std::fs::read_to_string(dir.path().join("piped-plain/MANIFEST.md")).unwrap();
    let first = CONFIG.lines().find(|l| !l.trim().is_empty()).unwrap();
    assert!(manifest.contains(first), "the config as given: {manifest}");

    // ablate (and so a run's config): a float, a string and the seed, recorded in the run
    let out = dir.path().join("ablate");
    let with_paths = CONFIG
        .replace(
            "[policy]\n",
            &format!("[policy]\npath = {:?}\n", pre.join("policy")),
        )
        .replace(
            "[reward]\n",
            &format!("[reward]\npath = {:?}\n", pre.join("reward")),
        );
    std::fs::write(&cfg, with_paths).unwrap();
    succeeds(
        bin()
            .args(["ablate", "--quiet", "--modes", "outcome", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .args(["--set", "iterations=1", "--set", "lambda=0.5"])
            .args(["--set", "household.prompt_style=inline", "--seed", "4"]),
    );
    let recorded: toml::Table =
        toml::from_str(&std::fs::read_to_string(out.join("outcome/config.toml")).unwrap()).unwrap();
    assert_eq!(recorded["iterations"].as_integer(), Some(1));
    assert_eq!(recorded["lambda"].as_float(), Some(0.5));
    assert_eq!(recorded["seed"].as_integer(), Some(4));
    assert_eq!(
        recorded["household"]["prompt_style"].as_str(),
        Some("inline")
    );

    // train: a run's config.toml records what it was given
    let run = dir.path().join("run");
    succeeds(
        bin()
            .args(["train", "--quiet", "--config"])
            .arg(&cfg)
            .arg("--run")
            .arg(&run)
            .args([
                "--set",
                "iterations=1",
                "--set",
                "eval.every=1",
                "--seed",
                "2",
            ]),
    );
    let recorded: toml::Table =
        toml::from_str(&std::fs::read_to_string(run.join("config.toml")).unwrap()).unwrap();
    assert_eq!(recorded["iterations"].as_integer(), Some(1));
    assert_eq!(recorded["eval"]["every"].as_integer(), Some(1));
    assert_eq!(recorded["seed"].as_integer(), Some(2));

    // quickstart: the closed loop's config takes them (read before any work)
    succeeds(bin().args([
        "quickstart",
        "--no-train",
        "--seed",
        "1",
        "--set",
        "iterations=2",
    ]));
}
