//! What several of the program's tests share.

/// The program under test.
#[allow(dead_code)]
pub fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"))
}

/// A coding run small enough for a test: tiny models, a few problems, two iterations.
#[allow(dead_code)]
pub const TINY_CODING: &str = r#"
seed = 5
setting = "coding"
mode = "full"
iterations = 2
pool_size = 8
tasks_per_iteration = 4
rollouts_per_task = 4
judge_samples = 3
update_epochs = 1

# every accuracy four programs can give (0, 1/4, 1/2, 3/4, 1) lies outside this band, so every
# problem of an iteration is due a rewrite, whatever the CPU's rounding
[adapt]
acc_low = 0.3
acc_high = 0.4

[policy]
lr = 1e-3
micro_batch = 8
max_new_tokens = 40
[policy.tiny]
hidden_size = 48
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward]
lr = 1e-3
micro_batch = 8
max_new_tokens = 40
[reward.tiny]
hidden_size = 48
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 200
policy_steps = 200
reward_steps = 100
batch = 32
lr = 5e-3

[eval]
in_domain = 8
ood = 8
every = 2
samples = 2
greedy = true

[coding]
max_ops = 2
tests = 4
"#;

/// A household run small enough for a test: tiny models, a few tasks, three iterations.
#[allow(dead_code)]
pub const TINY_HOUSEHOLD: &str = r#"
seed = 3
mode = "full"
iterations = 3
pool_size = 6
tasks_per_iteration = 3
rollouts_per_task = 2
judge_samples = 2
update_epochs = 1

[household]
train_step_limit = 6
eval_step_limit = 6
history_window = 1

[policy]
lr = 1e-3
micro_batch = 4
max_new_tokens = 8
[policy.tiny]
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward]
lr = 1e-3
micro_batch = 4
max_new_tokens = 8
[reward.tiny]
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 4
policy_steps = 3
reward_steps = 3
batch = 8

[eval]
in_domain = 3
ood = 3
every = 3
"#;

/// A run's `metrics.jsonl`, one object per line, without the wall-clock timings (`time_*`).
#[allow(dead_code)]
pub fn metrics(run: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut()
                .unwrap()
                .retain(|k, _| !k.starts_with("time_"));
            v
        })
        .collect()
}

/// The processor features that choose the numeric kernels (and so the last bits of every
/// float): a golden file holds exact numbers only for machines that share them.
#[allow(dead_code)]
fn kernel_features() -> String {
    format!("{} | {}", simd_features(), cpu_model())
}

/// The processor's model name: machines with the same features but another model (other cache
/// sizes, so other kernel blockings; other speeds, so other sandbox time-outs) give other runs.
fn cpu_model() -> String {
    rla_train::manifest::cpu_model().unwrap_or_else(|| "unknown processor".into())
}

fn simd_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let mut f = vec!["x86_64"];
        if std::arch::is_x86_feature_detected!("avx512f") {
            f.push("avx512f");
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            f.push("avx2");
        }
        if std::arch::is_x86_feature_detected!("fma") {
            f.push("fma");
        }
        f.join(" ")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH.to_string()
    }
}

/// Checks a seeded run's metrics (timings left out) against `tests/golden/NAME.jsonl`, the
/// numbers the code gave when the file was written: a change that should not change what a run
/// does (a refactor) must reproduce them exactly. `RLA_BLESS=1` rewrites the file. The file's
/// first line names the processor it was written on (its vector features and model); on another
/// (other numeric kernels or cache blockings, so other last bits; other speeds, so other sandbox
/// time-outs) only the shape is compared, and the test says so.
#[allow(dead_code)]
pub fn golden(name: &str, metrics: &[serde_json::Value]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.jsonl"));
    let features = kernel_features();
    if std::env::var_os("RLA_BLESS").is_some() {
        let mut text = serde_json::json!({ "kernel_features": features }).to_string();
        for m in metrics {
            text.push('\n');
            text.push_str(&m.to_string());
        }
        text.push('\n');
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; write it with RLA_BLESS=1 cargo test",
            path.display()
        )
    });
    let mut lines = text.lines();
    let head: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let want: Vec<serde_json::Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(want.len(), metrics.len(), "{name}: iterations differ");
    if head["kernel_features"].as_str() != Some(features.as_str()) {
        eprintln!(
            "{name}: golden metrics written on a machine with {} kernels, this one has {features}: comparing their shape only",
            head["kernel_features"]
        );
        for (w, m) in want.iter().zip(metrics) {
            let keys = |v: &serde_json::Value| {
                v.as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect::<Vec<String>>()
            };
            assert_eq!(keys(w), keys(m), "{name}: metric names differ");
        }
        return;
    }
    for (i, (w, m)) in want.iter().zip(metrics).enumerate() {
        assert_eq!(
            w,
            m,
            "{name}: iteration {i} differs from {}",
            path.display()
        );
    }
}

/// Waits until the run in `run` has checkpointed its first iteration (the `train` process
/// `child` still going), as a test that kills it mid-run needs.
#[allow(dead_code)]
pub fn wait_for_first_checkpoint(child: &mut std::process::Child, run: &std::path::Path) {
    let t = std::time::Instant::now();
    loop {
        let state = std::fs::read_to_string(run.join("checkpoint/state.json")).unwrap_or_default();
        if state.contains("\"completed\":1") {
            return;
        }
        assert!(t.elapsed().as_secs() < 300, "no checkpoint");
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts `train --config CFG --run RUN`, waits for its first checkpoint and kills it as the
/// second iteration starts.
#[allow(dead_code)]
pub fn kill_after_first_checkpoint(cfg: &std::path::Path, run: &std::path::Path) {
    let mut child = bin()
        .args(["train", "--quiet", "--config"])
        .arg(cfg)
        .arg("--run")
        .arg(run)
        .spawn()
        .unwrap();
    wait_for_first_checkpoint(&mut child, run);
    std::thread::sleep(std::time::Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `rlanything serve` on a free port; returns the child and its URL.
#[allow(dead_code)]
pub fn serve(
    model: &std::path::Path,
    name: &str,
    log: &std::path::Path,
) -> (std::process::Child, String) {
    serve_with(model, name, log, &[])
}

/// [`serve`] with more arguments.
#[allow(dead_code)]
pub fn serve_with(
    model: &std::path::Path,
    name: &str,
    log: &std::path::Path,
    more: &[&str],
) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args([
            "serve",
            "--model",
            model.to_str().unwrap(),
            "--port",
            "0",
            "--name",
            name,
        ])
        .args(more)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    // the address is on the line that says it is serving (adapters are listed before it)
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("serving") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0,
            "serve ended early"
        );
    }
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    (child, url)
}

/// The interpreter with torch, transformers and peft: `$RLA_PEFT_PYTHON`, else the one
/// `scripts/peft.sh` installs.
#[allow(dead_code)]
pub fn peft_python() -> String {
    std::env::var("RLA_PEFT_PYTHON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/peft-venv/bin/python"
        )
        .to_string()
    })
}

/// Warm-starts the models of the run config `text` into `dir/pre` (`rlanything pretrain`, the
/// config written to `cfg`) and returns the config with `policy.path` and `reward.path` at them.
#[allow(dead_code)]
pub fn pretrained(text: &str, cfg: &std::path::Path, dir: &std::path::Path) -> String {
    let pre = dir.join("pre");
    std::fs::write(cfg, text).unwrap();
    succeeds(
        bin()
            .args(["pretrain", "--config"])
            .arg(cfg)
            .arg("--out")
            .arg(&pre),
    );
    text.replace(
        "[policy]\n",
        &format!("[policy]\npath = {:?}\n", pre.join("policy")),
    )
    .replace(
        "[reward]\n",
        &format!("[reward]\npath = {:?}\n", pre.join("reward")),
    )
}

/// `rlanything train --quiet --config CFG --run RUN`, which must succeed.
#[allow(dead_code)]
pub fn train(cfg: &std::path::Path, run: &std::path::Path) {
    succeeds(
        bin()
            .args(["train", "--quiet", "--config"])
            .arg(cfg)
            .arg("--run")
            .arg(run),
    );
}

/// Runs a command that must succeed (its standard error is the failure's message); its output.
#[allow(dead_code)]
pub fn succeeds(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
