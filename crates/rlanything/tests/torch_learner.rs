//! A household run whose policy learns in the PyTorch FSDP2 worker (two processes over gloo)
//! gives the candle run's first-iteration policy loss (the shipped household base, the same
//! rollouts; the loss of the second epoch, after the learner's first step), finishes, and,
//! killed mid-iteration, resumes and finishes.

use std::path::Path;
mod common;
use common::{bin, metrics, peft_python as python, serve, train as run};

/// The quickstart's household on the shipped base, cut to two short iterations.
fn config() -> String {
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/household");
    format!(
        r#"
seed = 3
mode = "full"
iterations = 2
pool_size = 6
tasks_per_iteration = 3
rollouts_per_task = 4
judge_samples = 2
update_epochs = 2

[household]
# long enough that a task of the first iteration lies in the band (a loss to compare), with the
# notes as the base was trained with them
train_step_limit = 15
eval_step_limit = 8
history_window = 1
notes = true
notes_style = "compact"
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
    common::kill_after_first_checkpoint(&torch_cfg, &cut);
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

/// The pid of the worker's rank 0, from the line its `init` prints.
fn rank0_pid(log: &Path) -> i32 {
    let text = std::fs::read_to_string(log).unwrap();
    let at = text
        .rfind("rank 0 pid ")
        .expect("the worker printed its pid")
        + "rank 0 pid ".len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn torch_learners_sample_on_servers_push_every_update_and_resume_after_a_worker_dies() {
    let dir = tempfile::tempdir().unwrap();
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/household");
    let logs: Vec<_> = (0..2)
        .map(|i| dir.path().join(format!("server{i}.log")))
        .collect();
    let (mut a, ua) = serve(&Path::new(models).join("policy"), "policy", &logs[0]);
    let (mut b, ub) = serve(&Path::new(models).join("reward"), "reward", &logs[1]);
    let learner = |n: usize| {
        format!(
            "backend = \"torch\"\npython = {:?}\nnproc = {n}\ncpu = true\n",
            python()
        )
    };
    // the policy trains a LoRA adapter sent with vLLM's call; the judge every weight, sent as
    // a checkpoint with SGLang's
    let cfg_text = format!(
        "{}\n[policy.lora]\nr = 4\n[policy.learner]\n{}[policy.server]\nendpoints = [\"{ua}\"]\nmodel = \"policy\"\npush = \"lora\"\n\
         [reward.learner]\n{}[reward.server]\nendpoints = [\"{ub}\"]\nmodel = \"reward\"\npush = \"disk\"\n",
        config()
            .replace("iterations = 2", "iterations = 3")
            .replace("train_step_limit = 8", "train_step_limit = 15"),
        learner(2),
        learner(1)
    );
    let cfg = dir.path().join("served.toml");
    std::fs::write(&cfg, &cfg_text).unwrap();
    let run_dir = dir.path().join("run");
    let mut train = bin()
        .args(["train", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(&run_dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the policy's worker dies once the first iteration is checkpointed
    common::wait_for_first_checkpoint(&mut train, &run_dir);
    let pid = rank0_pid(&run_dir.join("learner/policy/worker.log"));
    // SAFETY: kill(2) on the worker's rank 0, a process this test's run started
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let out = train.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // the next update needs the dead worker: the run stops, naming it
    assert!(
        metrics(&run_dir).len() < 4,
        "the run finished without its worker"
    );
    assert!(!out.status.success());
    assert!(err.contains("torch learner worker"), "{err}");
    let o = bin()
        .args(["train", "--quiet", "--resume"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = metrics(&run_dir);
    assert_eq!(m.len(), 4, "the evaluation and three iterations");
    // both models learned: some iterations trained each
    for k in ["policy_samples", "reward_samples"] {
        let n: u64 = m.iter().map(|x| x[k].as_u64().unwrap()).sum();
        assert!(n > 0, "{k}: {m:?}");
    }
    a.kill().unwrap();
    b.kill().unwrap();
    let _ = (a.wait(), b.wait());
    let (pl, rl) = (
        std::fs::read_to_string(&logs[0]).unwrap(),
        std::fs::read_to_string(&logs[1]).unwrap(),
    );
    // an adapter per update reached the policy's server, whole checkpoints the judge's
    assert!(pl.matches("adapter loaded").count() >= 4, "{pl}");
    assert!(rl.matches("weights updated").count() >= 4, "{rl}");
    let ck = run_dir.join("checkpoint");
    assert!(ck.join("policy/adapter_model.safetensors").is_file());
    assert!(ck.join("policy/learner_state/.metadata").is_file());
    assert!(ck.join("reward/learner_state/.metadata").is_file());
}

#[test]
fn a_coding_run_learns_in_torch_workers_and_samples_on_servers() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::pretrained(
        common::TINY_CODING,
        &dir.path().join("plain.toml"),
        dir.path(),
    );
    let pre = dir.path().join("pre");
    let logs: Vec<_> = (0..2)
        .map(|i| dir.path().join(format!("server{i}.log")))
        .collect();
    let (mut a, ua) = serve(&pre.join("policy"), "coder", &logs[0]);
    let (mut b, ub) = serve(&pre.join("reward"), "tester", &logs[1]);
    let learner = format!("backend = \"torch\"\npython = {:?}\ncpu = true\n", python());
    let cfg = dir.path().join("served.toml");
    std::fs::write(
        &cfg,
        format!(
            "{text}\n[policy.learner]\n{learner}[policy.server]\nendpoints = [\"{ua}\"]\nmodel = \"coder\"\npush = \"disk\"\n\
             [reward.learner]\n{learner}[reward.server]\nendpoints = [\"{ub}\"]\nmodel = \"tester\"\npush = \"disk\"\n"
        ),
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    run(&cfg, &run_dir);
    a.kill().unwrap();
    b.kill().unwrap();
    let _ = (a.wait(), b.wait());
    let m = metrics(&run_dir);
    assert_eq!(m.len(), 3, "the evaluation and two iterations");
    let n: u64 = m
        .iter()
        .map(|x| x["policy_samples"].as_u64().unwrap())
        .sum();
    assert!(n > 0, "the coder never trained: {m:?}");
    for log in &logs {
        let l = std::fs::read_to_string(log).unwrap();
        // the starting weights and one update per iteration
        assert!(l.matches("weights updated").count() >= 3, "{l}");
    }
    assert!(run_dir
        .join("checkpoint/policy/learner_state/.metadata")
        .is_file());
}
