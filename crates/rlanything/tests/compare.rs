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

#[test]
fn compare_recorded_pairs_the_evaluations_runs_kept_and_report_gives_the_paired_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    let text = common::pretrained(common::TINY_HOUSEHOLD, &cfg, dir.path());
    std::fs::write(&cfg, text).unwrap();
    let run = dir.path().join("run");
    common::train(&cfg, &run);
    // `RUN` at its last evaluation, `RUN@K` at iteration K
    let recorded = |a: &str, b: &str, more: &[&str]| {
        bin()
            .args(["compare", "--recorded"])
            .arg(format!("{}{a}", run.display()))
            .arg(format!("{}{b}", run.display()))
            .args(more)
            .output()
            .unwrap()
    };
    // the end against the warm start: the difference the kept scores give, task by task
    let out = ok(&recorded("", "@0", &[]));
    let kept = |k: usize| {
        rla_train::evals::SplitEval::read(&run, rla_train::setting::Split::InDomain, k)
            .unwrap()
            .unwrap()
    };
    let p = kept(3).paired(&kept(0)).unwrap();
    assert!(
        out.contains(&format!(
            "paired difference (first − second): {:+.1} ± {:.1} points (recorded",
            100.0 * p.mean,
            100.0 * p.std_error
        )) && out.contains("3 in-domain tasks, 8 episodes each at temperature 0.8"),
        "{out}"
    );
    // an evaluation against itself: nothing
    let same = ok(&recorded("@0", "@0", &[]));
    assert!(same.contains("+0.0 ± 0.0 points"), "{same}");
    // what it cannot pair is named
    let e = recorded("", "@1", &[]);
    assert!(!e.status.success());
    assert!(
        String::from_utf8_lossy(&e.stderr)
            .contains("keeps no evaluation of the in_domain split at iteration 1"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
    let e = recorded("", "@0", &["--samples", "3"]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("--samples: --recorded"));
    // the run's verdict: the same paired difference, with how it was measured
    let report = ok(&bin().arg("report").arg(&run).output().unwrap());
    assert!(
        report.contains(&format!(
            "verdict: in-domain {:+.1} ± {:.1} points from the base (paired, 3 tasks × 8 samples, T=0.8): ",
            100.0 * p.mean,
            100.0 * p.std_error
        )),
        "{report}"
    );
}
