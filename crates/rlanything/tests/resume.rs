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

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Copies a folder's files (one level of sub-folders deep, as a game folder is).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// `rlanything ARGS` in the working folder `cwd`.
fn in_folder(cwd: &Path, args: &[&str]) -> std::process::Output {
    bin().current_dir(cwd).args(args).output().unwrap()
}

/// Trains the config `start/run.toml` from the working folder `start`, the run folders named
/// relative to it: once to the end (`runs/full`), and once stopped after its first iteration
/// (`runs/cut`) and resumed from `elsewhere`, a working folder at another depth. Both must give
/// the same figures and models. Returns the stopped run's folder.
fn stop_and_resume_elsewhere(d: &Path, iterations: usize) -> PathBuf {
    let start = d.join("start");
    let elsewhere = d.join("x/y");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let all = format!("iterations={iterations}");
    common::succeeds(bin().current_dir(&start).args([
        "train",
        "--quiet",
        "--config",
        "run.toml",
        "--run",
        "../runs/full",
        "--set",
        &all,
    ]));
    common::succeeds(bin().current_dir(&start).args([
        "train",
        "--quiet",
        "--config",
        "run.toml",
        "--run",
        "../runs/cut",
        "--set",
        "iterations=1",
    ]));
    let cut = d.join("runs/cut");
    assert_eq!(metrics(&cut).len(), 2, "stopped after its first iteration");
    common::succeeds(bin().current_dir(&elsewhere).args([
        "train",
        "--quiet",
        "--resume",
        "../../runs/cut",
        "--set",
        &all,
    ]));
    let full = d.join("runs/full");
    assert_eq!(metrics(&cut), metrics(&full));
    assert!(
        weights(&cut) == weights(&full),
        "models and optimiser state differ"
    );
    cut
}

/// A resume of `run` from `cwd` that must be refused; its message.
fn refused(cwd: &Path, run: &Path, iterations: usize) -> String {
    let out = bin()
        .current_dir(cwd)
        .args(["train", "--quiet", "--resume"])
        .arg(run)
        .args(["--set", &format!("iterations={iterations}")])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a resume on changed data went on");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A household run on game folders named relative to its config, started in one working
/// folder, stopped after an iteration and resumed from another, ends as the run never stopped
/// (its rewrites waiting in its own folder read again); once the games change or go, a resume
/// or an evaluation of the run is refused with the key and the path. A run recorded before its
/// sources were (relative paths, no record) still resumes from where it was started.
#[test]
fn a_run_on_game_folders_resumes_from_another_working_folder_on_the_same_games() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let start = d.join("start");
    let games = start.join("games");
    let mut names: Vec<String> = std::fs::read_dir(root().join("tests/fixtures/alfworld-traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.as_bytes()[0].is_ascii_digit())
        .collect();
    names.sort();
    for n in &names[..6] {
        copy_dir(
            &root().join("tests/fixtures/alfworld-traces").join(n),
            &games.join(n),
        );
    }
    // every accuracy two episodes give (0, 1/2, 1) lies outside the band: every task is due a
    // rewrite, written into the run's own games/ folder
    let text = CONFIG
        .replace(
            "[household]\n",
            "[household]\ntrain_games = \"games\"\neval_games = { in_domain = \"games\" }\n",
        )
        // a stopped run evaluates where it stops, so the run never stopped does at every one
        .replace("every = 3", "every = 1")
        + "\n[adapt]\nacc_low = 0.6\nacc_high = 0.7\n";
    let cfg = start.join("run.toml");
    let with_paths = common::pretrained(&text, &cfg, d);
    std::fs::write(&cfg, &with_paths).unwrap();

    let cut = stop_and_resume_elsewhere(d, 2);
    // the run named its games by their canonical path, and played rewrites from its own folder
    let games = std::fs::canonicalize(&games).unwrap();
    let recorded = std::fs::read_to_string(cut.join("config.toml")).unwrap();
    assert!(
        recorded.contains(&format!("train_games = {:?}", games.display().to_string())),
        "{recorded}"
    );
    let m = metrics(&cut);
    assert!(m[2]["pending_evaluated"].as_u64().unwrap() > 0, "{m:?}");

    // a file added to a game folder: refused, naming the key and the path, for both keys
    let game = games.join(&names[0]);
    std::fs::write(game.join("notes.txt"), "a note").unwrap();
    let elsewhere = d.join("x/y");
    let err = refused(&elsewhere, &cut, 3);
    for key in ["household.train_games", "household.eval_games.in_domain"] {
        assert!(
            err.contains(&format!(
                "{key} {}: changed since the run started",
                games.display()
            )),
            "{err}"
        );
    }
    // an evaluation of the run reads its data too
    let out = bin()
        .current_dir(&elsewhere)
        .args(["eval", "--config"])
        .arg(&cut)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && e.contains("household.train_games"),
        "{e}"
    );
    // the folder gone
    std::fs::rename(&games, start.join("moved")).unwrap();
    let err = refused(&elsewhere, &cut, 3);
    assert!(
        err.contains(&format!(
            "household.train_games {}: no longer exists",
            games.display()
        )),
        "{err}"
    );
    std::fs::rename(start.join("moved"), &games).unwrap();
    assert_eq!(metrics(&cut).len(), 3, "nothing ran");

    // as a run recorded before its sources were: the paths as the config gave them, from the
    // folder it started in, and no record to check
    std::fs::remove_file(cut.join("data-sources.json")).unwrap();
    std::fs::write(
        cut.join("config.toml"),
        recorded.replace(&format!("{:?}", games.display().to_string()), "\"games\""),
    )
    .unwrap();
    let out = in_folder(
        &start,
        &[
            "train",
            "--quiet",
            "--resume",
            cut.to_str().unwrap(),
            "--set",
            "iterations=3",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(metrics(&cut).len(), 4);
}

/// A coding run on problem files named relative to its config, started in one working folder,
/// stopped after an iteration and resumed from another, ends as the run never stopped; once the
/// training file changes or goes, a resume is refused with the key and the path.
#[test]
fn a_run_on_problem_files_resumes_from_another_working_folder_on_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let start = d.join("start");
    std::fs::create_dir_all(&start).unwrap();
    let problems = start.join("problems.json");
    std::fs::copy(root().join("data/coding/chains-train.json"), &problems).unwrap();
    std::fs::copy(
        root().join("data/coding/chains-in-domain.json"),
        start.join("in-domain.json"),
    )
    .unwrap();
    let models = std::fs::canonicalize(root().join("models/coding")).unwrap();
    let text = std::fs::read_to_string(root().join("configs/coding-file.toml"))
        .unwrap()
        .replace("\"../models/coding", &format!("\"{}", models.display()))
        .replace("../data/coding/chains-train.json", "problems.json")
        .replace("../data/coding/chains-in-domain.json", "in-domain.json")
        .replace("pool_size = 32", "pool_size = 4")
        .replace("tasks_per_iteration = 12", "tasks_per_iteration = 2")
        .replace("rollouts_per_task = 6", "rollouts_per_task = 2")
        .replace("judge_samples = 4", "judge_samples = 2")
        .replace("update_epochs = 2", "update_epochs = 1")
        .replace("in_domain = 200", "in_domain = 3")
        .replace("ood = 100", "ood = 3")
        .replace("every = 4", "every = 1");
    std::fs::write(start.join("run.toml"), text).unwrap();

    let cut = stop_and_resume_elsewhere(d, 2);
    let problems = std::fs::canonicalize(&problems).unwrap();
    let elsewhere = d.join("x/y");
    // the same size, other bytes
    let bytes = std::fs::read(&problems).unwrap();
    let mut other = bytes.clone();
    let at = other.iter().rposition(|&b| b == b'"').unwrap();
    other[at - 1] = if other[at - 1] == b'x' { b'y' } else { b'x' };
    std::fs::write(&problems, &other).unwrap();
    let err = refused(&elsewhere, &cut, 3);
    assert!(
        err.contains(&format!(
            "coding.train_problems {}: changed since the run started",
            problems.display()
        )) && !err.contains("coding.eval_problems"),
        "{err}"
    );
    std::fs::remove_file(&problems).unwrap();
    let err = refused(&elsewhere, &cut, 3);
    assert!(
        err.contains(&format!(
            "coding.train_problems {}: no longer exists",
            problems.display()
        )),
        "{err}"
    );
    // put back as it was, the run goes on
    std::fs::write(&problems, &bytes).unwrap();
    common::succeeds(
        bin()
            .current_dir(&elsewhere)
            .args(["train", "--quiet", "--resume"])
            .arg(&cut)
            .args(["--set", "iterations=3"]),
    );
    assert_eq!(metrics(&cut).len(), 4);
}

/// A desktop run on a folder of OSWorld task files named relative to its config, stopped after
/// an iteration and resumed from another working folder, ends as the run never stopped; once a
/// task file changes, the resume is refused naming the key and the folder.
#[test]
fn a_run_on_task_folders_resumes_from_another_working_folder_on_the_same_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let start = d.join("start");
    std::fs::create_dir_all(&start).unwrap();
    common::succeeds(bin().current_dir(&start).args([
        "desktop",
        "export",
        "--split",
        "in-domain",
        "--n",
        "6",
        "--out",
        "tasks",
    ]));
    let models = std::fs::canonicalize(root().join("models/desktop")).unwrap();
    let text = std::fs::read_to_string(root().join("configs/desktop-tiny.toml"))
        .unwrap()
        .replace("\"../models/desktop", &format!("\"{}", models.display()))
        .replace("[desktop]\n", "[desktop]\ntrain_tasks = \"tasks\"\n")
        .replace("pool_size = 24", "pool_size = 4")
        .replace("tasks_per_iteration = 8", "tasks_per_iteration = 2")
        .replace("rollouts_per_task = 6", "rollouts_per_task = 2")
        .replace("judge_samples = 3", "judge_samples = 2")
        .replace("update_epochs = 2", "update_epochs = 1")
        .replace("in_domain = 60", "in_domain = 3")
        .replace("ood = 60", "ood = 3")
        .replace("validation = 60", "validation = 0")
        .replace("every = 4", "every = 1");
    std::fs::write(start.join("run.toml"), text).unwrap();

    let cut = stop_and_resume_elsewhere(d, 2);
    let tasks = std::fs::canonicalize(start.join("tasks")).unwrap();
    let one = std::fs::read_dir(&tasks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let mut text = std::fs::read_to_string(&one).unwrap();
    text.push('\n');
    std::fs::write(&one, text).unwrap();
    let err = refused(&d.join("x/y"), &cut, 3);
    assert!(
        err.contains(&format!(
            "desktop.train_tasks {}: changed since the run started",
            tasks.display()
        )),
        "{err}"
    );
}
