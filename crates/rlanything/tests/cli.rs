//! The command-line program, run as a user would.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rlanything"))
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces")
}

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

#[test]
fn env_replay_passes_on_the_shared_traces() {
    let out = bin()
        .args(["env", "replay"])
        .arg(fixtures())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("80 passed, 0 failed"));
}

#[test]
fn env_replay_reports_a_corrupted_trace_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let game = "00-pick_and_place_simple-kitchen";
    copy_dir(&fixtures().join(game), &dir.path().join(game));
    let trace = dir.path().join(game).join("trace-expert.jsonl");
    let text = std::fs::read_to_string(&trace).unwrap();
    std::fs::write(&trace, text.replacen("You arrive at", "You arrived at", 1)).unwrap();
    let out = bin()
        .args(["env", "replay"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains("MISMATCH") && stdout.contains("feedback"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last(), Some("3 passed, 1 failed"));
}

#[test]
fn env_solve_prints_a_winning_walkthrough() {
    let g = fixtures().join("05-pick_two_obj_and_place-bathroom");
    let out = bin().args(["env", "solve"]).arg(&g).output().unwrap();
    assert!(out.status.success());
    let cmds = String::from_utf8(out.stdout).unwrap();
    let n = cmds.lines().count();
    assert!((4..=20).contains(&n), "{cmds}");
    // play it through `env play`
    let mut child = bin()
        .args(["env", "play"])
        .arg(&g)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cmds.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("(won)"));
}

#[test]
fn bad_input_gets_a_clear_error() {
    let out = bin()
        .args(["env", "bench", "/nonexistent/game"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/game") && !err.contains("panicked"),
        "{err}"
    );
    let out = bin().args(["theory", "--m", "0"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("judge samples"));
    let out = bin()
        .args(["env", "replay", "/nonexistent"])
        .output()
        .unwrap();
    assert!(!out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn env_generate_writes_loadable_games() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["env", "generate", "--split", "train", "--n", "3", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let games: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(games.len(), 3);
    for g in games {
        let out = bin().args(["env", "solve"]).arg(g.path()).output().unwrap();
        assert!(out.status.success());
    }
}
