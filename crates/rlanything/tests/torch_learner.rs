//! A household run whose policy learns in the PyTorch FSDP2 worker (two processes over gloo)
//! gives the candle run's first-iteration policy loss (the shipped household base, the same
//! rollouts; the loss of the second epoch, after the learner's first step), finishes, and,
//! killed mid-iteration, resumes and finishes.

use std::path::Path;
use std::time::{Duration, Instant};
mod common;
use common::{bin, metrics};

fn python() -> String {
    std::env::var("RLA_PEFT_PYTHON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/peft-venv/bin/python"
        )
        .to_string()
    })
}

fn run(cfg: &Path, out: &Path) {
    let o = bin()
        .args(["train", "--quiet", "--config"])
        .arg(cfg)
        .arg("--run")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The quickstart's household on the shipped base, cut to two short iterations.
fn config() -> String {
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/household");
    format!(
        r#"
seed = 1
mode = "full"
iterations = 2
pool_size = 6
tasks_per_iteration = 3
rollouts_per_task = 4
judge_samples = 2
update_epochs = 2

[household]
train_step_limit = 8
eval_step_limit = 8
history_window = 1
notes = true
prompt_style = "unlisted"
constrain_actions = true

[policy]
path = "{models}/policy"
lr = 3e-4
micro_batch = 16
max_new_tokens = 12

[reward]
path = "{models}/reward"
lr = 2e-4
micro_batch = 16
max_new_tokens = 16

[eval]
in_domain = 2
ood = 2
validation = 0
"#
    )
}

#[test]
fn a_run_with_the_torch_learner_matches_candle_then_resumes_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    let with_paths = config();
    std::fs::write(&cfg, &with_paths).unwrap();
    let candle = dir.path().join("candle");
    run(&cfg, &candle);

    let torch_cfg = dir.path().join("torch.toml");
    let learner = format!(
        "\n[policy.learner]\nbackend = \"torch\"\npython = {:?}\nnproc = 2\ncpu = true\n",
        python()
    );
    std::fs::write(&torch_cfg, format!("{with_paths}{learner}")).unwrap();
    let torch = dir.path().join("torch");
    run(&torch_cfg, &torch);
    let (c, t) = (metrics(&candle), metrics(&torch));
    assert_eq!(c.len(), t.len());
    // line 0 is the evaluation before training; line 1 the first iteration
    let (a, b) = (
        c[1]["policy_loss"].as_f64().unwrap(),
        t[1]["policy_loss"].as_f64().unwrap(),
    );
    assert!(a.abs() > 1e-6, "a policy loss of {a} compares nothing");
    assert!(
        (a - b).abs() <= 1e-4 * a.abs().max(1e-3),
        "the first iteration's policy loss: candle {a}, torch {b}"
    );
    assert_eq!(
        c[1]["train_success"], t[1]["train_success"],
        "the same rollouts"
    );
    assert_eq!(
        c[1]["policy_samples"], t[1]["policy_samples"],
        "the same rollouts"
    );
    // the checkpoint holds the worker's state beside the weights
    let ck = torch.join("checkpoint/policy");
    assert!(ck.join("learner_state/.metadata").is_file());
    assert!(ck.join("model.safetensors").is_file());
    assert!(torch.join("learner/policy/worker.log").is_file());

    // killed once iteration 1 is checkpointed, then resumed
    let cut = dir.path().join("cut");
    let mut child = bin()
        .args(["train", "--quiet", "--config"])
        .arg(&torch_cfg)
        .arg("--run")
        .arg(&cut)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let state = std::fs::read_to_string(cut.join("checkpoint/state.json")).unwrap_or_default();
        if state.contains("\"completed\":1") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(300), "no checkpoint");
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(metrics(&cut).len() < t.len(), "killed before the end");
    let o = bin()
        .args(["train", "--quiet", "--resume"])
        .arg(&cut)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let resumed = metrics(&cut);
    assert_eq!(resumed.len(), t.len());
    assert_eq!(resumed[..2], t[..2], "the iterations before the kill");
}
