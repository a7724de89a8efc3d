//! A run killed mid-iteration resumes to the same result as an uninterrupted run.

use std::path::{Path, PathBuf};
mod common;
use common::{bin, golden, metrics, TINY_HOUSEHOLD as CONFIG};

/// The bytes of both models' weights, adapters and optimiser states.
fn weights(run: &Path) -> Vec<u8> {
    let mut b = Vec::new();
    for m in ["policy", "reward"] {
        for f in [
            "model.safetensors",
            "optimizer.safetensors",
            "adapter_model.safetensors",
        ] {
            b.extend(std::fs::read(run.join("checkpoint").join(m).join(f)).unwrap_or_default());
        }
    }
    b
}

#[test]
fn a_run_killed_mid_iteration_resumes_to_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    kill_and_resume(dir.path(), "");
    golden("household", &metrics(&dir.path().join("full")));
}

#[test]
fn a_lora_run_checkpoints_its_adapters_and_resumes_to_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let lora = "[policy.lora]\nr = 4\n[reward.lora]\nr = 2\nalpha = 4.0\ntargets = [\"q_proj\", \"v_proj\"]\n";
    kill_and_resume(dir.path(), lora);
    golden("household-lora", &metrics(&dir.path().join("full")));
    let full = dir.path().join("full");
    for (m, r) in [("policy", 4), ("reward", 2)] {
        let ck = full.join("checkpoint").join(m);
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(ck.join("adapter_config.json")).unwrap())
                .unwrap();
        assert_eq!(
            (c["peft_type"].as_str(), c["r"].as_u64()),
            (Some("LORA"), Some(r))
        );
        // only the adapters trained: the base weights are the warm start's
        assert_eq!(
            std::fs::read(ck.join("model.safetensors")).unwrap(),
            std::fs::read(dir.path().join("pre").join(m).join("model.safetensors")).unwrap(),
            "{m}"
        );
    }
}

/// Trains a run to the end, and the same run killed once iteration 1 is checkpointed and
/// resumed; checks they agree. `extra` is appended to the config.
fn kill_and_resume(dir: &Path, extra: &str) {
    let cfg = dir.join("run.toml");
    // both runs start from the same warm-started models
    let with_paths = common::pretrained(&format!("{CONFIG}\n{extra}"), &cfg, dir);
    std::fs::write(&cfg, &with_paths).unwrap();

    let full: PathBuf = dir.join("full");
    common::train(&cfg, &full);

    // the same run, killed once iteration 1 is checkpointed and iteration 2 has started
    let cut = dir.join("cut");
    common::kill_after_first_checkpoint(&cfg, &cut);
    let partial = metrics(&cut);
    assert!(
        partial.len() < metrics(&full).len(),
        "killed before the end"
    );

    common::succeeds(bin().args(["train", "--quiet", "--resume"]).arg(&cut));
    assert_eq!(metrics(&cut), metrics(&full));
    assert!(
        weights(&cut) == weights(&full),
        "models and optimiser state differ"
    );
    assert_eq!(
        std::fs::read_to_string(cut.join("tasks.jsonl")).unwrap(),
        std::fs::read_to_string(full.join("tasks.jsonl")).unwrap()
    );

    // resuming a finished run changes nothing; a new run in a used folder is refused
    let out = bin()
        .args(["train", "--quiet", "--resume"])
        .arg(&cut)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(metrics(&cut), metrics(&full));
    let out = bin()
        .args(["train", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(&full)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
}

#[test]
fn config_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        ("judge_samples = 0\n", "judge_samples"),
        ("[adapt]\nacc_low = 0.9\nacc_high = 0.1\n", "acc_low"),
        ("lamda = 1.0\n", "lamda"),
        ("rollouts_per_task = 1\n", "rollouts_per_task"),
        ("mode = \"everything\"\n", "everything"),
        ("[policy]\nlr = -1.0\n", "policy.lr"),
        (
            "setting = \"coding\"\n[coding]\ntests = 2\n",
            "coding.tests",
        ),
        ("[coding.limits]\ncpu_secs = 0\n", "cpu_secs"),
        ("setting = \"gui\"\n", "gui"),
        (
            "[household]\nprompt_style = \"unlisted\"\n",
            "household.constrain_actions",
        ),
        ("history_window = 3\n", "[household] table"),
        ("[policy.tiny]\nnum_attention_heads = 0\n", "policy.tiny"),
        ("[policy]\nlr = inf\n", "policy.lr"),
        ("[pretrain]\nlr = -1.0\n", "pretrain.lr"),
        ("[pretrain]\ntasks = 0\n", "pretrain.tasks"),
        ("[pretrain]\nbatch = 0\n", "pretrain.batch"),
        ("[reward]\ntemperature = nan\n", "reward.temperature"),
        ("[policy]\npath = \"/nonexistent/model\"\n", "policy.path"),
        (
            "[policy.learner]\nbackend = \"torch\"\nnproc = 0\n",
            "policy.learner.nproc",
        ),
        (
            "[reward.learner]\nbackend = \"torch\"\nnnodes = 2\n",
            "reward.learner.rdzv_endpoint",
        ),
        (
            "[policy.learner]\nbackend = \"torch\"\nnnodes = 2\nrdzv_endpoint = \"host\"\n",
            "use HOST:PORT",
        ),
        ("[policy.learner]\nbackend = \"jax\"\n", "jax"),
        (
            "[policy.learner]\nbackend = \"torch\"\nnproc = 2\ndevices = \"0\"\n",
            "policy.learner.devices lists 1 GPUs for nproc = 2",
        ),
        ("[policy.learner]\nnproc = 4\n", "backend = \"candle\""),
    ] {
        let cfg = dir.path().join("bad.toml");
        std::fs::write(&cfg, text).unwrap();
        let out = bin()
            .args(["train", "--quiet", "--config"])
            .arg(&cfg)
            .arg("--run")
            .arg(dir.path().join("r"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(needle) && !err.contains("panicked"),
            "{text}: {err}"
        );
        // checked before any work starts: no warm start was made
        assert!(
            !dir.path().join("r/pretrained").exists(),
            "{text}: work started before the check"
        );
    }
}

/// `bench iteration` times a run config's iterations phase by phase, in a new run folder.
#[test]
fn bench_iteration_times_each_phase_of_each_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    let with_paths = common::pretrained(CONFIG, &cfg, dir.path());
    std::fs::write(&cfg, &with_paths).unwrap();
    let run = dir.path().join("bench");
    let out = common::succeeds(
        bin()
            .args([
                "bench",
                "iteration",
                "--iterations",
                "2",
                "--json",
                "--config",
            ])
            .arg(&cfg)
            .arg("--run")
            .arg(&run),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let its = v["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 2, "{v}");
    for it in its {
        let phases: f64 = ["rollout", "judge", "update", "adapt"]
            .iter()
            .map(|k| it[k].as_f64().unwrap())
            .sum();
        assert!((phases - it["total"].as_f64().unwrap()).abs() < 1e-9);
        assert!(it["rollout"].as_f64().unwrap() > 0.0 && it["update"].as_f64().unwrap() > 0.0);
    }
    // no evaluation was played, and the run is the config's
    let m = metrics(&run);
    assert_eq!(m.len(), 3);
    assert!(m
        .iter()
        .all(|x| x["eval_in_domain"].is_null() || x["eval_in_domain"].as_f64() == Some(0.0)));
    // a folder that exists is not overwritten
    let again = bin()
        .args(["bench", "iteration", "--iterations", "1", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(&run)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
}
