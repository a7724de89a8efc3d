//! Faults found by trying the project as a new user and as an attacker: nothing lost, nothing
//! hangs, nothing accepted that cannot work.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
mod common;
use common::bin;

fn run(args: &[&str], paths: &[&Path]) -> Output {
    let mut c = bin();
    c.args(args);
    for p in paths {
        c.arg(p);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const CONFIG: &str = r#"
seed = 4
mode = "full"
iterations = 2
pool_size = 4
tasks_per_iteration = 2
rollouts_per_task = 2
judge_samples = 2
update_epochs = 1

[household]
train_step_limit = 4
eval_step_limit = 4
history_window = 1
prompt_style = "unlisted"
constrain_actions = true

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
policy_steps = 2
reward_steps = 2
batch = 8

[eval]
in_domain = 4
ood = 2
every = 2
"#;

/// A finished two-iteration run in `dir/run`.
fn finished_run(dir: &Path) -> PathBuf {
    let cfg = dir.join("run.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let run_dir = dir.join("run");
    let o = bin()
        .args(["train", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    run_dir
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn runs_survive_nan_metrics_lost_metric_lines_half_saved_warm_starts_and_a_second_trainer() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = finished_run(dir.path());
    let metrics = run_dir.join("metrics.jsonl");
    let all = lines(&metrics);
    assert_eq!(all.len(), 3, "iterations 0, 1, 2");

    // a kill after the checkpoint swap, before metrics.jsonl is rewritten: the state is the
    // record, and the file is rebuilt from it
    std::fs::write(&metrics, all[..2].join("\n") + "\n").unwrap();
    let o = run(&["report"], &[&run_dir]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(lines(&metrics), all);

    // a diverged run (NaN losses are written as null) stays reportable and resumable
    let state = run_dir.join("checkpoint/state.json");
    let s = std::fs::read_to_string(&state).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&s).unwrap();
    v["metrics"][2]["policy_loss"] = serde_json::Value::Null;
    v["metrics"][2]["task_acc"][0] = serde_json::Value::Null;
    std::fs::write(&state, v.to_string()).unwrap();
    let o = run(&["report"], &[&run_dir]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("diverged at iteration 2"), "{}", text(&o));
    let o = run(&["train", "--quiet", "--resume"], &[&run_dir]);
    assert!(o.status.success(), "{}", text(&o));

    // a run folder of the release before the run-state format is refused by name
    let mut old = v.clone();
    old.as_object_mut().unwrap().remove("format");
    let saved = std::fs::read_to_string(&state).unwrap();
    std::fs::write(&state, old.to_string()).unwrap();
    let o = run(&["train", "--quiet", "--resume"], &[&run_dir]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("state format 1") && text(&o).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        text(&o)
    );
    std::fs::write(&state, saved).unwrap();

    // a second trainer on the same folder is refused while the first holds it
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(run_dir.join("run.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let o = run(&["train", "--quiet", "--resume"], &[&run_dir]);
    assert!(!o.status.success());
    assert!(text(&o).contains("another trainer"), "{}", text(&o));
    drop(lock);

    // a warm start killed mid-save (config.json written, tokenizer.json not) is redone
    let cfg = dir.path().join("run.toml");
    let fresh = dir.path().join("fresh");
    let half = fresh.join("pretrained/reward");
    std::fs::create_dir_all(&half).unwrap();
    std::fs::copy(
        run_dir.join("pretrained/reward/config.json"),
        half.join("config.json"),
    )
    .unwrap();
    let o = bin()
        .args(["train", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(&fresh)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(half.join("tokenizer.json").exists());
    // the run's policy checkpoint records how it plays; `eval` uses it without --config
    let model = run_dir.join("checkpoint/policy");
    assert!(model.join("rlanything-episodes.json").exists());
    let with = bin()
        .args(["eval", "--n", "4", "--model"])
        .arg(&model)
        .arg("--config")
        .arg(run_dir.join("config.toml"))
        .output()
        .unwrap();
    let without = bin()
        .args(["eval", "--n", "4", "--model"])
        .arg(&model)
        .output()
        .unwrap();
    assert!(with.status.success() && without.status.success());
    // the same figure, through the setting's evaluation and through the recorded settings
    let figure = |o: &std::process::Output| {
        let t = String::from_utf8_lossy(&o.stdout).into_owned();
        t.split(" (").next().unwrap_or_default().to_string()
    };
    assert!(
        figure(&with).contains("success on 4 in-domain tasks: "),
        "{}",
        figure(&with)
    );
    assert_eq!(figure(&with), figure(&without));
}

#[test]
fn report_of_an_empty_folder_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["report"], &[dir.path()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no completed iteration"), "{}", text(&o));
    assert!(!dir.path().join("report.md").exists());
}

#[test]
fn lm_init_keeps_a_model_unless_forced_and_models_with_nan_weights_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tiny.toml");
    std::fs::write(
        &cfg,
        "arch = \"qwen3\"\nhidden_size = 16\nintermediate_size = 32\nnum_hidden_layers = 1\n\
         num_attention_heads = 2\nnum_key_value_heads = 1\nrope_theta = 10000.0\n\
         max_position_embeddings = 256\ntie_word_embeddings = true\nmin_count = 1\n",
    )
    .unwrap();
    let corpus = dir.path().join("corpus.txt");
    std::fs::write(&corpus, "go to the fridge 1\nopen the fridge 1\n").unwrap();
    let out = dir.path().join("m");
    let init = |force: bool| {
        let mut c = bin();
        c.args(["lm", "init", "--config"])
            .arg(&cfg)
            .arg("--tokenizer-corpus")
            .arg(&corpus)
            .arg("--out")
            .arg(&out);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    let o = init(false);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(out.join("optimizer.safetensors"), b"old optimiser state").unwrap();
    let o = init(false);
    assert!(!o.status.success());
    assert!(text(&o).contains("--force"), "{}", text(&o));
    assert!(
        out.join("optimizer.safetensors").exists(),
        "nothing was touched"
    );
    let o = init(true);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !out.join("optimizer.safetensors").exists(),
        "the old optimiser state is gone with the old weights"
    );

    // sampling settings that cannot work are refused
    for bad in [
        &["--n", "0"][..],
        &["--temperature=-1"],
        &["--temperature", "nan"],
    ] {
        let o = bin()
            .args(["lm", "generate", "--prompt", "go to", "--model"])
            .arg(&out)
            .args(bad)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{bad:?}");
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }

    // NaN weights: every data byte of the safetensors file set to 0xff (a NaN in f32)
    let st = out.join("model.safetensors");
    let mut b = std::fs::read(&st).unwrap();
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    for x in &mut b[8 + n..] {
        *x = 0xff;
    }
    std::fs::write(&st, b).unwrap();
    let o = bin()
        .args(["lm", "logprobs", "--text", "go to the fridge 1", "--model"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("NaN"), "{}", text(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("null"));
}

#[test]
fn lm_out_never_deletes_a_folder_it_did_not_make() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tiny.toml");
    std::fs::write(
        &cfg,
        "arch = \"qwen3\"\nhidden_size = 16\nintermediate_size = 32\nnum_hidden_layers = 1\n\
         num_attention_heads = 2\nnum_key_value_heads = 1\nmax_position_embeddings = 64\n\
         min_count = 1\n",
    )
    .unwrap();
    let corpus = dir.path().join("corpus.txt");
    std::fs::write(&corpus, "go to the fridge 1\n").unwrap();
    // a folder of models (as `models/` is) and a folder of anything else
    let models = dir.path().join("models");
    let kept = [
        models.join("household/MANIFEST.md"),
        dir.path().join("notes/todo.txt"),
    ];
    for f in &kept {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, b"keep me").unwrap();
    }
    let init = |out: &Path, force: bool| {
        let mut c = bin();
        c.args(["lm", "init", "--config"])
            .arg(&cfg)
            .arg("--tokenizer-corpus")
            .arg(&corpus)
            .arg("--out")
            .arg(out);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    // a GGUF that is not one: the folder is refused before the file is read
    let gguf = dir.path().join("x.gguf");
    std::fs::write(&gguf, b"not a gguf").unwrap();
    for out in [models.clone(), dir.path().join("notes")] {
        for force in [false, true] {
            let o = init(&out, force);
            assert!(!o.status.success(), "lm init --out {out:?} (force {force})");
            assert!(text(&o).contains("is not a checkpoint"), "{}", text(&o));
            let mut c = bin();
            c.args(["lm", "convert", "--gguf"])
                .arg(&gguf)
                .arg("--out")
                .arg(&out);
            if force {
                c.arg("--force");
            }
            let o = c.output().unwrap();
            assert!(!o.status.success());
            assert!(text(&o).contains("is not a checkpoint"), "{}", text(&o));
        }
    }
    for f in &kept {
        assert_eq!(std::fs::read(f).unwrap(), b"keep me", "{f:?} was deleted");
    }
    // a file named as the folder is kept too
    let o = init(&kept[1], true);
    assert!(text(&o).contains("is a file"), "{}", text(&o));
    assert_eq!(std::fs::read(&kept[1]).unwrap(), b"keep me");
    // an empty folder is filled, and the checkpoint then replaced only with --force
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(init(&empty, false).status.success());
    assert!(empty.join("config.json").exists());
    assert!(!init(&empty, false).status.success());
    assert!(init(&empty, true).status.success());
}

#[test]
fn theory_is_linear_in_m() {
    let o = run(&["theory", "--mu", "1.1", "--m", "20000000"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["theory", "--m", "1000000000"], &[]);
    assert!(!o.status.success());
    assert!(text(&o).contains("at most"), "{}", text(&o));
}

/// The first `n` of ALFWorld's fixture games (in name order) copied into `to`, which is returned.
fn fixture_games(to: &Path, n: usize) -> std::path::PathBuf {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces");
    let mut names: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names.iter().take(n) {
        let game = to.join(name);
        std::fs::create_dir_all(&game).unwrap();
        for f in ["game.tw-pddl", "traj_data.json"] {
            std::fs::copy(fixtures.join(name).join(f), game.join(f)).unwrap();
        }
    }
    to.to_path_buf()
}

#[test]
fn ablate_over_seeds_gives_ranges_and_curves() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let out = dir.path().join("abl");
    // three of ALFWorld's fixture games, played by every policy of the ablation
    let games = fixture_games(&dir.path().join("games"), 3);
    let o = bin()
        .args(["ablate", "--quiet", "--seeds", "2", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .arg("--games")
        .arg(&games)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(t.contains("| games won (of 3) |"), "{t}");
    for mode in ["outcome", "policy", "policy+reward", "full"] {
        let row = t
            .lines()
            .find(|l| l.starts_with(&format!("| {mode} |")))
            .unwrap_or_else(|| panic!("{mode}: {t}"));
        assert!(row.contains('–'), "a range over the seeds: {row}");
        assert!(row.contains(" to "), "the differences' range: {row}");
        assert_eq!(row.matches('|').count(), 10, "the games' column: {row}");
    }
    // what each policy won is kept beside it, and agrees with the table
    let won = |p: &Path| -> u64 {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        assert_eq!(v["played"], 3, "{v}");
        v["won"].as_u64().unwrap()
    };
    let start: Vec<u64> = [4, 5]
        .map(|s| won(&out.join(format!("seed-{s}/games-start.json"))))
        .to_vec();
    let after: Vec<u64> = [4, 5]
        .map(|s| won(&out.join(format!("seed-{s}/full/games.json"))))
        .to_vec();
    // the base's row holds what the starting policies won, each mode's what it won after
    let cells = |name: &str| -> Vec<String> {
        let row = t.lines().find(|l| l.starts_with(name)).unwrap();
        row.split('|').map(|c| c.trim().to_string()).collect()
    };
    let mean = |xs: &[u64]| xs.iter().sum::<u64>() as f64 / xs.len() as f64;
    let base = cells("| base (warm start) |");
    assert!(base[9].starts_with(&format!("{:.1}", mean(&start))), "{t}");
    let full = cells("| full |");
    assert!(full[9].starts_with(&format!("{:.1}", mean(&after))), "{t}");
    // one warm start per seed, shared by the four modes, and evaluated once before training
    for seed in [4, 5] {
        let s = out.join(format!("seed-{seed}"));
        assert!(s.join("pretrained/policy/config.json").exists());
        assert!(s.join("policy-reward/metrics.jsonl").exists());
        let first = |mode: &str| -> serde_json::Value {
            let text = std::fs::read_to_string(s.join(mode).join("metrics.jsonl")).unwrap();
            serde_json::from_str(text.lines().next().unwrap()).unwrap()
        };
        let made = first("outcome");
        assert!(made["time_eval"].as_f64().unwrap() > 0.0);
        for mode in ["policy", "policy-reward", "full"] {
            let m = first(mode);
            assert_eq!(m["eval_in_domain"], made["eval_in_domain"]);
            assert_eq!(m["eval_ood"], made["eval_ood"]);
            assert_eq!(m["time_eval"].as_f64(), Some(0.0), "{mode}: evaluated once");
        }
    }
    for f in ["ablation.md", "ablation-in-domain.png", "ablation-ood.png"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let o = bin()
        .args(["ablate", "--seeds", "0", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(text(&o).contains("--seeds 0"), "{}", text(&o));
}

/// Processes whose working folder lies under `dir` (a sandboxed program works in its sandbox's
/// folder, which lies under the `TMPDIR` the harness was given).
#[cfg(target_os = "linux")]
fn processes_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cwd) = std::fs::read_link(e.path().join("cwd")) {
            if cwd.starts_with(dir) {
                found.push(format!("{name} in {}", cwd.display()));
            }
        }
    }
    found
}

/// A sandboxed program dies with the `code exec` that started it, whatever ends it (Ctrl-C or
/// SIGKILL), and a killed process's sandbox folder is swept by the next sandbox.
#[cfg(target_os = "linux")]
#[test]
fn sandboxed_programs_die_with_code_exec_and_leave_no_folder() {
    let dir = tempfile::tempdir().unwrap();
    // as root, programs run as a user of their own, who must be able to enter the folders
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let program = dir.path().join("p.py");
    std::fs::write(&program, "import time\nwhile True:\n    time.sleep(0.05)\n").unwrap();
    let tests = dir.path().join("t.jsonl");
    std::fs::write(&tests, "{\"input\": \"\", \"output\": \"x\"}\n").unwrap();
    for signal in ["INT", "KILL"] {
        let mut child = bin()
            .args(["code", "exec", "--wall-secs", "60", "--cpu-secs", "60"])
            .arg("--program")
            .arg(&program)
            .arg("--tests")
            .arg(&tests)
            .env("TMPDIR", &tmp)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // wait until the program runs
        let start = std::time::Instant::now();
        while processes_under(&tmp).len() < 2 {
            assert!(
                start.elapsed().as_secs() < 30,
                "the program never started ({signal})"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let k = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(k.success());
        child.wait().unwrap();
        let start = std::time::Instant::now();
        loop {
            let left = processes_under(&tmp);
            if left.is_empty() {
                break;
            }
            assert!(
                start.elapsed().as_secs() < 5,
                "after SIG{signal} the sandbox's processes live on: {left:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        if signal == "INT" {
            let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
            assert!(left.is_empty(), "Ctrl-C left {left:?}");
        }
    }
    // the SIGKILLed process's folder is there until the next sandbox starts, which removes it
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 1);
    let o = bin()
        .args(["code", "exec", "--program"])
        .arg(&program)
        .arg("--tests")
        .arg(&tests)
        .args(["--wall-secs", "0.3"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `eval --n 0` is a clear error, never a success rate of NaN with exit status 0.
#[test]
fn eval_of_no_tasks_is_an_error_not_nan() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tiny.toml");
    std::fs::write(
        &cfg,
        "arch = \"qwen3\"\nhidden_size = 16\nintermediate_size = 32\nnum_hidden_layers = 1\n\
         num_attention_heads = 2\nnum_key_value_heads = 1\nmax_position_embeddings = 256\n",
    )
    .unwrap();
    let corpus = dir.path().join("corpus.txt");
    std::fs::write(&corpus, "go to the fridge 1\nopen the fridge 1\n").unwrap();
    let model = dir.path().join("m");
    let o = run(
        &["lm", "init", "--config"],
        &[
            &cfg,
            Path::new("--tokenizer-corpus"),
            &corpus,
            Path::new("--out"),
            &model,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["eval", "--n", "0", "--model"], &[&model]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("--n 0"), "{}", text(&o));
    assert!(!text(&o).contains("NaN"), "{}", text(&o));
}

/// `ablate --out FILE` names the file (it said only "File exists").
#[test]
fn ablate_out_a_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "keep").unwrap();
    let o = run(&["ablate", "--config"], &[&cfg, Path::new("--out"), &file]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("--out {}: is a file", file.display())),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
}

/// A `state.json` that claims more completed iterations than its metrics record (edited or
/// damaged) is refused on resume, not taken as a finished run.
#[test]
fn a_state_claiming_iterations_its_metrics_do_not_show_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = finished_run(dir.path());
    let state = run_dir.join("checkpoint/state.json");
    let json = std::fs::read_to_string(&state).unwrap();
    assert!(json.contains(r#""completed":2"#), "{json}");
    std::fs::write(
        &state,
        json.replace(r#""completed":2"#, r#""completed":99"#),
    )
    .unwrap();
    let o = run(&["train", "--quiet", "--resume"], &[&run_dir]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("says 99 iteration(s) completed, but its metrics end at iteration 2"),
        "{}",
        text(&o)
    );
}

/// Counts that size lists (`pretrain.tasks`, `judge_tasks`, `dagger_tasks`, …) of 2^62 are
/// named errors, not a capacity overflow inside a run.
#[test]
fn counts_of_2_62_are_refused_before_a_run() {
    let dir = tempfile::tempdir().unwrap();
    for (key, line) in [
        ("pretrain.tasks", "tasks = 4611686018427387904"),
        ("pretrain.judge_tasks", "judge_tasks = 4611686018427387904"),
        (
            "pretrain.dagger_tasks",
            "dagger_tasks = 4611686018427387904",
        ),
    ] {
        let cfg = dir.path().join("run.toml");
        let toml = CONFIG.replace(
            "[pretrain]\ntasks = 4",
            &format!("[pretrain]\ntasks = 4\n{line}"),
        );
        let toml = if key == "pretrain.tasks" {
            toml.replace("[pretrain]\ntasks = 4\n", "[pretrain]\n")
        } else {
            toml
        };
        std::fs::write(&cfg, toml).unwrap();
        let o = run(
            &["train", "--quiet", "--config"],
            &[&cfg, Path::new("--run"), &dir.path().join("r")],
        );
        assert!(!o.status.success(), "{key}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("{key} = 4611686018427387904: at most 1048576")),
            "{key}: {}",
            text(&o)
        );
    }
}

/// A run's `state.json` that is a symlink to `/dev/zero` is an error naming it, not memory
/// without bound.
#[test]
fn a_run_state_that_is_a_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = finished_run(dir.path());
    let state = run_dir.join("checkpoint/state.json");
    std::fs::remove_file(&state).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &state).unwrap();
    let o = run(&["train", "--quiet", "--resume"], &[&run_dir]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("state.json") && text(&o).contains("not a regular file"),
        "{}",
        text(&o)
    );
}

#[test]
fn ablate_games_are_a_households() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("code.toml");
    std::fs::write(&cfg, common::TINY_CODING).unwrap();
    let o = bin()
        .args(["ablate", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(dir.path().join("abl"))
        .args(["--games", "tests/fixtures/alfworld-traces"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        text(&o).contains("the coding setting has no evaluation of its own to make"),
        "{}",
        text(&o)
    );
    assert!(
        !dir.path().join("abl/pretrained").exists(),
        "nothing trained"
    );
}

#[test]
fn ablate_from_a_given_base_keeps_each_seeds_games() {
    // a config naming its base (as configs/alfworld.toml names models/household): nothing is
    // pretrained into the seed folders, which still hold what each seed's policies won
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    std::fs::write(&cfg, CONFIG.replace("iterations = 2", "iterations = 1")).unwrap();
    let base = dir.path().join("base");
    let o = bin()
        .args(["pretrain", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&base)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let given = CONFIG
        .replace("iterations = 2", "iterations = 1")
        .replace(
            "[policy]\n",
            &format!("[policy]\npath = {:?}\n", base.join("policy")),
        )
        .replace(
            "[reward]\n",
            &format!("[reward]\npath = {:?}\n", base.join("reward")),
        );
    let cfg = dir.path().join("given.toml");
    std::fs::write(&cfg, given).unwrap();
    let games = fixture_games(&dir.path().join("games"), 1);
    let out = dir.path().join("abl");
    let o = bin()
        .args([
            "ablate", "--quiet", "--seeds", "2", "--modes", "outcome", "--config",
        ])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .arg("--games")
        .arg(&games)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for s in [4, 5] {
        let seed = out.join(format!("seed-{s}"));
        assert!(!seed.join("pretrained").exists(), "the given base is used");
        for record in ["games-start.json", "outcome/games.json"] {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(seed.join(record)).unwrap()).unwrap();
            assert_eq!(v["played"], 1, "{record}: {v}");
        }
    }
}
