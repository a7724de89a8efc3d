//! The paper's reward-only run (`mode = "reward-only"`, §3.2.6) in every setting: from each shipped
//! base, an iteration whose policy learns from the judge's verdicts alone (the coding setting's:
//! the generated tests' verdicts on each program), with the update's vital signs recorded and the
//! report saying how the setting checks its rewrites.

use std::path::Path;
mod common;
use common::{bin, metrics, succeeds};

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn reward_only_runs_in_every_setting_from_its_base() {
    let tmp = tempfile::tempdir().unwrap();
    for (config, extra) in [
        ("quickstart.toml", vec![]),
        ("coding-tiny.toml", vec![]),
        ("desktop-tiny.toml", vec!["eval.validation=0"]),
    ] {
        let run = tmp.path().join(config);
        let mut c = bin();
        c.args(["train", "--quiet", "--config"])
            .arg(root().join("configs").join(config))
            .arg("--run")
            .arg(&run);
        for s in [
            "mode=\"reward-only\"",
            "iterations=1",
            "tasks_per_iteration=3",
            "rollouts_per_task=4",
            "update_epochs=1",
            "eval.in_domain=2",
            "eval.ood=2",
            "eval.every=1",
        ]
        .into_iter()
        .chain(extra)
        {
            c.arg("--set").arg(s);
        }
        succeeds(&mut c);
        let m = metrics(&run);
        assert_eq!(m.len(), 2, "{config}");
        let v = &m[1]["vitals"];
        assert!(v["tokens_rollout"].as_u64().unwrap() > 0, "{config}: {v}");
        assert!(v["tokens_judge"].as_u64().unwrap() > 0, "{config}: {v}");
        // no task adapts in the reward-only run
        assert_eq!(m[1]["pending_next"], 0, "{config}");
        let saved = std::fs::read_to_string(run.join("config.toml")).unwrap();
        assert!(saved.contains("mode = \"reward-only\""), "{config}");
        let report = std::fs::read_to_string(run.join("report.md")).unwrap();
        assert!(report.contains("## The update's vital signs"), "{config}");
        // the report says how the setting checks its rewrites
        assert!(
            report.contains("Accepted tasks checked: a rewrite is proposed only if"),
            "{config}"
        );
    }
}
