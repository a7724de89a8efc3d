//! Sampled evaluation in every setting and `compare`: two policies on the same tasks with the
//! same draws, their paired difference and its standard error.

mod common;
use common::bin;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ok(o: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    text
}

#[test]
fn every_setting_evaluates_sampled_with_a_standard_error() {
    for (config, n) in [
        ("configs/desktop-tiny.toml", "4"),
        ("configs/coding-tiny.toml", "3"),
        ("configs/quickstart.toml", "3"),
    ] {
        let out = ok(&bin()
            .args(["eval", "--split", "in-domain", "--n", n])
            .args(["--temperature", "1", "--samples", "2", "--config"])
            .arg(root().join(config))
            .output()
            .unwrap());
        assert!(
            out.contains(&format!(
                "success on {n} in-domain tasks, 2 episodes each at temperature 1: "
            )) && out.contains(" ± ")
                && out.contains("standard error over tasks"),
            "{config}: {out}"
        );
    }
}

#[test]
fn a_policy_compared_with_itself_differs_by_nothing() {
    for (config, policy) in [
        ("configs/desktop-tiny.toml", "models/desktop/policy"),
        ("configs/quickstart.toml", "models/household/policy"),
    ] {
        let out = ok(&bin()
            .arg("compare")
            .arg(root().join(policy))
            .arg(root().join(policy))
            .args([
                "--n",
                "4",
                "--samples",
                "2",
                "--temperature",
                "1",
                "--config",
            ])
            .arg(root().join(config))
            .output()
            .unwrap());
        assert!(
            out.contains("paired difference (first − second): +0.0 ± 0.0 points")
                && out.contains("verdict: no difference shown"),
            "{config}: {out}"
        );
    }
}

#[test]
fn compare_names_what_it_cannot_compare() {
    let d = tempfile::tempdir().unwrap();
    let o = bin()
        .arg("compare")
        .arg(root().join("models/desktop/policy"))
        .arg(root().join("models/desktop/policy"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--config"));
    let o = bin()
        .arg("compare")
        .arg(d.path())
        .arg(root().join("models/desktop/policy"))
        .arg("--config")
        .arg(root().join("configs/desktop-tiny.toml"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let o = bin()
        .arg("compare")
        .arg(root().join("models/desktop/policy"))
        .arg(root().join("models/desktop/policy"))
        .args(["--samples", "0", "--config"])
        .arg(root().join("configs/desktop-tiny.toml"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--samples 0"));
}
