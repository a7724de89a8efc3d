//! `[logging]`: a run's metrics in TensorBoard and in an offline Weights & Biases run, read back
//! by their own readers (TensorBoard's `EventAccumulator`, the W&B client's record reader; both
//! in target/track-venv, made by scripts/track-env.sh, or `$RLA_TRACK_PYTHON`), agreeing with
//! `metrics.jsonl` on every scalar, one point an iteration after a stop and a resume.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
mod common;
use common::{bin, succeeds, TINY_HOUSEHOLD as CONFIG};

fn python() -> String {
    if let Ok(p) = std::env::var("RLA_TRACK_PYTHON") {
        return p;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/track-venv/bin/python");
    assert!(
        venv.exists(),
        "{} is missing: run scripts/track-env.sh (or set RLA_TRACK_PYTHON)",
        venv.display()
    );
    venv.display().to_string()
}

fn read(script: &str, dir: &Path) -> Value {
    let script: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rla-track/tests/py")
        .join(script);
    let out = Command::new(python())
        .arg(script)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every number of a record by its path, nested keys and array indices joined by `/`, booleans
/// as 0 or 1 (as a tracker reads a record).
fn scalars(prefix: &str, v: &Value, out: &mut Vec<(String, f64)>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}/{k}")
        }
    };
    match v {
        Value::Number(n) => out.push((prefix.to_string(), n.as_f64().unwrap())),
        Value::Bool(b) => out.push((prefix.to_string(), f64::from(u8::from(*b)))),
        Value::Object(m) => m.iter().for_each(|(k, v)| scalars(&key(k), v, out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| scalars(&key(&i.to_string()), v, out)),
        _ => {}
    }
}

/// `metrics.jsonl` as written, timings included.
fn records(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn tensorboard_and_offline_wandb_hold_every_scalar_once_an_iteration_across_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    let logging = format!(
        "\n[logging]\ntensorboard = true\nwandb = {{ project = \"rla-test\", mode = \"offline\", python = {:?} }}\n",
        python()
    );
    let text = common::pretrained(CONFIG, &cfg, dir.path()) + &logging;
    std::fs::write(&cfg, &text).unwrap();
    let run = dir.path().join("run");

    // stopped after one iteration, then resumed to three
    succeeds(
        bin()
            .args(["train", "--quiet", "--set", "iterations=1", "--config"])
            .arg(&cfg)
            .arg("--run")
            .arg(&run),
    );
    assert_eq!(records(&run).len(), 2);
    succeeds(
        bin()
            .args(["train", "--quiet", "--set", "iterations=3", "--resume"])
            .arg(&run),
    );
    let ms = records(&run);
    assert_eq!(ms.len(), 4, "iterations 0 to 3");

    // TensorBoard: every scalar of every record, at its iteration, once
    let tb = read("read_tensorboard.py", &run.join("tensorboard"));
    let mut want: std::collections::BTreeMap<String, Vec<(i64, f64)>> = Default::default();
    for m in &ms {
        let k = m["iteration"].as_i64().unwrap();
        let mut s = vec![];
        scalars("", m, &mut s);
        for (tag, x) in s {
            want.entry(tag).or_default().push((k, x));
        }
    }
    assert!(want.contains_key("train_success") && want.contains_key("task_acc/0"));
    let got = tb["scalars"].as_object().unwrap();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "the scalar tags"
    );
    for (tag, points) in &want {
        let read: Vec<(i64, f64)> = got[tag]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_i64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        assert_eq!(read.len(), points.len(), "{tag}: {read:?}");
        for ((s0, x0), (s1, x1)) in points.iter().zip(&read) {
            assert_eq!(s0, s1, "{tag}");
            assert_eq!(*x0 as f32, *x1 as f32, "{tag} at {s0}");
        }
    }
    // the report's table as text, a row for each iteration by the last
    let report = &tb["texts"]["report"];
    let last = report.as_array().unwrap().last().unwrap();
    assert_eq!(last[0], 3);
    let table = last[1][0].as_str().unwrap();
    assert_eq!(table.lines().filter(|l| l.starts_with("| 3 |")).count(), 1);
    assert_eq!(table.lines().count(), 2 + 4, "{table}");

    // W&B: one history row an iteration, with the record's scalars
    let wb = read("read_wandb.py", &run);
    assert_eq!(wb["files"], 2, "the first run and its resumption");
    let rows = wb["rows"].as_array().unwrap();
    assert_eq!(rows.len(), ms.len(), "{wb}");
    for (row, m) in rows.iter().zip(&ms) {
        assert_eq!(row["_step"], m["iteration"]);
        let mut s = vec![];
        scalars("", m, &mut s);
        for (tag, x) in s {
            assert_eq!(row[&tag].as_f64(), Some(x), "{tag} at {}", m["iteration"]);
        }
    }
    let id: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("wandb.json")).unwrap()).unwrap();
    assert_eq!(id["logged"], 3);

    // a resumed run keeps what it was started with, naming the key it is asked to change
    let out = bin()
        .args(["train", "--quiet", "--set", "lambda=0.5", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--set lambda") && err.contains("lambda = 1.0"),
        "{err}"
    );
    let out = bin()
        .args(["train", "--quiet", "--seed", "9", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("seed = 3"));
    // and records the iterations it was extended to
    let recorded = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(recorded.contains("iterations = 3"), "{recorded}");
}

#[test]
fn a_python_without_the_wandb_client_is_named_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    for (python, needle) in [
        ("/nonexistent/python3", "cannot run it"),
        // a program that is not a Python with wandb: the import fails
        ("false", "has no wandb client"),
    ] {
        let text =
            format!("{CONFIG}\n[logging]\nwandb = {{ project = \"p\", python = \"{python}\" }}\n");
        std::fs::write(&cfg, text).unwrap();
        let out = bin()
            .args(["train", "--quiet", "--config"])
            .arg(&cfg)
            .arg("--run")
            .arg(dir.path().join("r"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("logging.wandb") && err.contains(needle),
            "{python}: {err}"
        );
        assert!(!dir.path().join("r/pretrained").exists(), "work started");
    }
    std::fs::write(
        &cfg,
        format!("{CONFIG}\n[logging]\nwandb = {{ project = \"p\", mode = \"sideways\" }}\n"),
    )
    .unwrap();
    let out = bin()
        .args(["train", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(dir.path().join("r"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("logging.wandb.mode"));
}

#[test]
fn a_wandb_client_that_never_starts_or_finishes_does_not_hold_the_run() {
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // a Python whose wandb imports, and whose `wandb.init` never returns (a child sleeping,
    // waited for without end)
    let fake = dir.path().join("fake-python");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nif [ \"$2\" = \"import wandb\" ]; then exit 0; fi\nsleep 1000 &\necho \"$$ $!\" >> {pids:?}\nwait\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = dir.path().join("run.toml");
    let logging = format!(
        "\n[logging]\ntensorboard = true\nwandb = {{ project = \"p\", python = {:?}, start_timeout_s = 1, finish_timeout_s = 1 }}\n",
        fake.display().to_string()
    );
    std::fs::write(&cfg, format!("{CONFIG}{logging}")).unwrap();
    let run = dir.path().join("run");
    let mut child = bin()
        .args(["train", "--quiet", "--set", "iterations=1", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(&run)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // a hang guard, far above the run's own minutes
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(1800) {
            child.kill().unwrap();
            panic!("the run did not end");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("did not start within 1 s"),
        "the warning: {err}"
    );
    // the run's curves are whole without W&B, nothing was logged to it
    assert_eq!(records(&run).len(), 2);
    assert!(run.join("tensorboard").read_dir().unwrap().next().is_some());
    let id: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("wandb.json")).unwrap()).unwrap();
    assert_eq!(id["logged"], -1);
    // and no process of the client is left
    let ids: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
    };
    let t = Instant::now();
    while ids.iter().any(|&p| alive(p)) {
        assert!(t.elapsed() < Duration::from_secs(60), "{ids:?} still run");
        std::thread::sleep(Duration::from_millis(50));
    }
}
