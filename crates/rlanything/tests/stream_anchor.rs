//! A run that draws its tasks as a stream (`draw = "stream"`), credits steps by the state they
//! start from (`advantage = "anchor"`), warms its learning rate up and cuts each update into a
//! set number of optimiser steps: the pool's tasks are each drawn once before any twice, the
//! metrics count them, every step records its state, and the update takes the steps it was told.

use std::path::Path;
mod common;
use common::{bin, metrics, succeeds};

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn a_stream_of_tasks_credited_by_state() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let mut c = bin();
    c.args(["train", "--quiet", "--config"])
        .arg(root().join("configs/quickstart.toml"))
        .arg("--run")
        .arg(&run);
    for s in [
        "draw=\"stream\"",
        "advantage=\"anchor\"",
        "anchor_gamma=0.9",
        "pool_size=6",
        "iterations=2",
        "tasks_per_iteration=4",
        "rollouts_per_task=4",
        "update_epochs=1",
        "policy.mini_batch=0",
        "policy.updates=3",
        "policy.warmup_iterations=2",
        "eval.in_domain=2",
        "eval.ood=2",
        "eval.every=2",
    ] {
        c.arg("--set").arg(s);
    }
    succeeds(&mut c);
    let m = metrics(&run);
    assert_eq!(m.len(), 3);
    // four of six tasks, then the other two and two again (every task once before any twice;
    // rewrites accepted at iteration 2 would only add distinct tasks)
    assert_eq!(m[1]["tasks_distinct"], 4, "{}", m[1]);
    assert_eq!(m[1]["tasks_repeated"], 0, "{}", m[1]);
    assert!(m[2]["tasks_distinct"].as_u64().unwrap() >= 6, "{}", m[2]);
    assert_eq!(m[2]["tasks_repeated"], 2, "{}", m[2]);
    // the policy's update is cut into three steps whenever it has samples
    for it in &m[1..] {
        let v = &it["vitals"]["policy"];
        if v["samples"].as_u64().unwrap() >= 3 {
            assert_eq!(v["steps"], 3, "{v}");
        }
    }
    // every recorded step names the state it started from
    let samples: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("samples/iter-0001.json")).unwrap())
            .unwrap();
    let steps: Vec<&serde_json::Value> = samples
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["steps"].as_array().unwrap())
        .collect();
    assert!(!steps.is_empty());
    assert!(steps
        .iter()
        .all(|s| s["state"].as_str().is_some_and(|k| k.len() == 16)));
    let saved = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(saved.contains("draw = \"stream\"") && saved.contains("advantage = \"anchor\""));
    // a key of another advantage is refused, naming it
    let out = bin()
        .args(["train", "--quiet", "--config"])
        .arg(root().join("configs/quickstart.toml"))
        .arg("--run")
        .arg(tmp.path().join("refused"))
        .args(["--set", "anchor_weight=2"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("anchor_weight = 2 is read only with advantage = \"anchor\""),
        "{err}"
    );
}
