//! W&B clients that stop answering do not hold the run: a client whose `wandb.init` never
//! returns, one that stops reading its standard input, and one whose `wandb.finish` never
//! returns each cost the run at most its bound, and no process of theirs is left. The clients
//! are shell scripts given as the writer's Python (it runs `PYTHON -c SIDECAR ARGS`); each
//! writes its process ids where the test reads them.

use rla_track::wandb::{Bounds, Wandb, WandbOptions};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A hang guard, far above the bounds the clients are given.
const GUARD: Duration = Duration::from_secs(60);

fn opts() -> WandbOptions {
    WandbOptions {
        project: "p".into(),
        mode: "offline".into(),
        id: "run0".into(),
        name: None,
    }
}

fn bounds() -> Bounds {
    Bounds {
        start: Duration::from_secs(1),
        finish: Duration::from_secs(1),
        queue: 4,
    }
}

/// A fake client: `body` after it has written its process id (and `$!`, when it started one)
/// to `pids`.
fn client(dir: &Path, body: &str) -> (String, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let pids = dir.join("pids");
    let script = dir.join("fake-python");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{}\n",
            body.replace("PIDS", &pids.display().to_string())
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script.display().to_string(), pids)
}

/// Whether a process lives (a zombie counts as gone: it runs nothing).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// The ids the client wrote, once it has.
fn read_pids(pids: &Path) -> Vec<i32> {
    let t = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(pids) {
            let ids: Vec<i32> = text
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            if !ids.is_empty() && text.ends_with('\n') {
                return ids;
            }
        }
        assert!(t.elapsed() < GUARD, "the fake client never wrote its ids");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn none_left(ids: &[i32]) {
    let t = Instant::now();
    while ids.iter().any(|&p| alive(p)) {
        assert!(t.elapsed() < GUARD, "{ids:?} still run");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_client_whose_init_never_returns_is_stopped_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // "init": a child that sleeps, waited for without end
    let (python, pids) = client(dir.path(), "sleep 1000 &\necho \"$$ $!\" > PIDS\nwait");
    let t = Instant::now();
    let mut w = Wandb::start_within(
        &python,
        &dir.path().join("w"),
        &opts(),
        &json!({}),
        bounds(),
    )
    .expect("a client that does not answer is dropped, not an error");
    assert!(!w.is_live());
    for k in 0..3 {
        assert!(!w.log(k, &json!({"x": k})));
    }
    assert!(!w.finish());
    assert!(t.elapsed() < GUARD, "{:?}", t.elapsed());
    let ids = read_pids(&pids);
    assert_eq!(ids.len(), 2);
    none_left(&ids);
}

#[test]
fn a_client_that_stops_reading_is_dropped_when_its_queue_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let (python, pids) = client(
        dir.path(),
        "echo \"$$\" > PIDS\necho ready\nexec sleep 1000",
    );
    let t = Instant::now();
    let mut w = Wandb::start_within(
        &python,
        &dir.path().join("w"),
        &opts(),
        &json!({}),
        bounds(),
    )
    .unwrap();
    assert!(w.is_live());
    // big steps fill the pipe, then the queue of 4
    let step: serde_json::Map<String, serde_json::Value> = (0..500)
        .map(|i| (format!("metric/{i}"), json!(i)))
        .collect();
    let step = serde_json::Value::Object(step);
    let mut k = 0;
    while w.log(k, &step) {
        k += 1;
        assert!(k < 100_000 && t.elapsed() < GUARD, "never dropped");
    }
    assert!(!w.is_live() && !w.log(k + 1, &step));
    assert!(!w.finish());
    assert!(t.elapsed() < GUARD, "{:?}", t.elapsed());
    none_left(&read_pids(&pids));
}

#[test]
fn a_client_whose_finish_never_returns_is_stopped_at_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let body = "echo \"$$\" > PIDS\necho ready\nwhile read line; do\n  case \"$line\" in\n    *finish*) sleep 1000;;\n  esac\ndone";
    let (python, pids) = client(dir.path(), body);
    let mut w = Wandb::start_within(
        &python,
        &dir.path().join("w"),
        &opts(),
        &json!({}),
        bounds(),
    )
    .unwrap();
    for k in 0..3 {
        assert!(w.log(k, &json!({"x": k})));
    }
    let t = Instant::now();
    assert!(!w.finish());
    assert!(t.elapsed() < GUARD, "{:?}", t.elapsed());
    none_left(&read_pids(&pids));
}

#[test]
fn a_client_dropped_unfinished_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let body = "echo \"$$\" > PIDS\necho ready\nwhile read line; do :; done\nsleep 1000";
    let (python, pids) = client(dir.path(), body);
    let w = Wandb::start_within(
        &python,
        &dir.path().join("w"),
        &opts(),
        &json!({}),
        bounds(),
    )
    .unwrap();
    let t = Instant::now();
    drop(w);
    assert!(t.elapsed() < GUARD, "{:?}", t.elapsed());
    none_left(&read_pids(&pids));
}

#[test]
fn a_client_that_fails_to_start_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (python, _) = client(dir.path(), "echo 'error: no wandb here'\nexit 3");
    let e = Wandb::start_within(
        &python,
        &dir.path().join("w"),
        &opts(),
        &json!({}),
        bounds(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("no wandb here"), "{e}");
    let (python, _) = client(dir.path(), "exit 3");
    let e = Wandb::start_within(
        &python,
        &dir.path().join("w"),
        &opts(),
        &json!({}),
        bounds(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("ended before it started") && e.contains('3'),
        "{e}"
    );
}
