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

#[test]
fn lm_init_logprobs_and_generate_work_on_a_tiny_model() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.txt");
    std::fs::write(&corpus, "go to fridge 1\nopen fridge 1\ntake apple 1 from fridge 1\nYou arrive at fridge 1. The fridge 1 is closed.\n").unwrap();
    let model = dir.path().join("tiny");
    let cfg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml");
    let out = bin()
        .args(["lm", "init", "--config"])
        .arg(&cfg)
        .arg("--tokenizer-corpus")
        .arg(&corpus)
        .arg("--out")
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ] {
        assert!(model.join(f).exists(), "{f}");
    }
    let out = bin()
        .args(["lm", "logprobs", "--model"])
        .arg(&model)
        .args(["--text", "take apple 1 from fridge 1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids = v["token_ids"].as_array().unwrap();
    let lps = v["logprobs"].as_array().unwrap();
    assert_eq!(lps.len(), ids.len() - 1);
    assert!(lps.iter().all(|x| x.as_f64().unwrap() < 0.0));
    let gen = |seed: &str| {
        bin()
            .args(["lm", "generate", "--model"])
            .arg(&model)
            .args([
                "--prompt",
                "open fridge 1",
                "--chat",
                "--max-tokens",
                "6",
                "--seed",
                seed,
            ])
            .output()
            .unwrap()
    };
    let (a, b) = (gen("1"), gen("1"));
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout, "seeded");
    // a bad config is named
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "arch = \"llama\"\nhidden_size = 32\nintermediate_size = 64\nnum_hidden_layers = 1\nnum_attention_heads = 2\nnum_key_value_heads = 1\n").unwrap();
    let out = bin()
        .args(["lm", "init", "--config"])
        .arg(&bad)
        .arg("--tokenizer-corpus")
        .arg(&corpus)
        .arg("--out")
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("llama"));
    let typo = dir.path().join("typo.toml");
    std::fs::write(&typo, "arch = \"qwen3\"\nhiden_size = 32\n").unwrap();
    let out = bin()
        .args(["lm", "init", "--config"])
        .arg(&typo)
        .arg("--tokenizer-corpus")
        .arg(&corpus)
        .arg("--out")
        .arg(dir.path().join("y"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("hiden_size"));
}
