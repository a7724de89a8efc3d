//! `rlanything eval --url URL --model NAME`: a model on an OpenAI-compatible server evaluated in
//! each setting with a run config's prompts and setting, against `eval` of the same checkpoint
//! in process (greedy, so the figures and the episodes are the same), and ALFWorld's game
//! folders played through the server.

use std::path::{Path, PathBuf};
mod common;
use common::{bin, serve};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `eval` with `args`; its stdout, or the test fails with its stderr.
fn eval(args: &[&str]) -> String {
    let out = bin().arg("eval").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "eval {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `eval` printed, less the policy's name and the seconds: every line, the success line
/// from "success on" up to its time.
fn figures(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| match l.find("success on ") {
            Some(i) => {
                let l = &l[i..];
                // the seconds are the last figure in parentheses
                match l.rfind(" in ").or_else(|| l.rfind("; ")) {
                    Some(j) if l.ends_with(" s)") => l[..j].to_string(),
                    _ => l.to_string(),
                }
            }
            None => l.to_string(),
        })
        .collect()
}

/// The success figure of `eval`'s success line.
fn success(text: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains("success on "))
        .unwrap_or_else(|| panic!("no success line: {text}"));
    let after = line
        .split("tasks: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"));
    after.split(' ').next().unwrap().parse().unwrap()
}

/// A served checkpoint, stopped on drop.
struct Served {
    child: std::process::Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn served(model: &Path, log: &Path) -> Served {
    let (child, url) = serve(model, "policy", log);
    Served { child, url }
}

#[test]
fn a_served_model_evaluates_as_its_checkpoint_in_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    for (setting, config, n) in [
        ("household", "quickstart.toml", "20"),
        ("coding", "coding-tiny.toml", "10"),
        ("desktop", "desktop-tiny.toml", "8"),
    ] {
        let config = root().join("configs").join(config);
        let config = config.to_str().unwrap();
        let model = root().join("models").join(setting).join("policy");
        let s = served(&model, &dir.path().join(format!("{setting}.log")));
        let args = ["--config", config, "--split", "validation", "--n", n];
        let local = eval(&args);
        let remote = eval(&[&args[..], &["--url", &s.url, "--model", "policy"]].concat());
        assert_eq!(figures(&local), figures(&remote), "{setting}");
        assert!(
            remote.contains(&format!(
                "policy at {} success on {n} validation tasks",
                s.url
            )) && remote.contains(&format!("({setting} setting")),
            "{setting}: {remote}"
        );
        // the figure is the setting's own, not a constant: the shipped bases win some and lose
        // some of the validation split
        let x = success(&remote);
        assert!(x > 0.0 && x < 1.0, "{setting}: {remote}");
        if setting == "household" {
            // the step-by-step view: the same episodes, step for step
            let shown = [&args[..], &["--show", "3"]].concat();
            let local = eval(&shown);
            let remote = eval(&[&shown[..], &["--url", &s.url, "--model", "policy"]].concat());
            assert!(local.contains("   1. "), "{local}");
            assert_eq!(figures(&local), figures(&remote));
        }
    }
}

#[test]
fn a_served_model_plays_alfworlds_game_folders() {
    let dir = tempfile::tempdir().unwrap();
    let games = root().join("tests/fixtures/alfworld-traces");
    let model = root().join("models/household/policy");
    let s = served(&model, &dir.path().join("serve.log"));
    let args = [
        "--games",
        games.to_str().unwrap(),
        "--n",
        "3",
        "--show",
        "3",
        "--step-limit",
        "12",
    ];
    let local = eval(&[&args[..], &["--model", model.to_str().unwrap()]].concat());
    // the prompt settings the checkpoint records are read from the tokenizer's folder
    let remote = eval(
        &[
            &args[..],
            &[
                "--url",
                &s.url,
                "--model",
                "policy",
                "--tokenizer",
                model.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert!(
        local.matches("game: ").count() == 3 && local.contains("   1. "),
        "{local}"
    );
    assert_eq!(figures(&local), figures(&remote));
    assert!(
        remote
            .lines()
            .last()
            .unwrap()
            .contains("success on 3 games of"),
        "{remote}"
    );
}

#[test]
fn the_served_models_flags_are_checked() {
    let model = root().join("models/household/policy");
    let out = bin()
        .args(["eval", "--url", "http://127.0.0.1:9", "--n", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--model NAME"),
        "{err}"
    );
    let out = bin()
        .args(["eval", "--n", "1", "--tokenizer"])
        .arg(&model)
        .arg("--model")
        .arg(&model)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("go with --url"),
        "{err}"
    );
    // a server that is not there is named, and no figure is printed
    let out = bin()
        .args([
            "eval",
            "--n",
            "1",
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "policy",
        ])
        .arg("--tokenizer")
        .arg(&model)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("127.0.0.1:9") && out.stdout.is_empty(),
        "{err}"
    );
}

/// `cmd`'s output, or the test fails when it runs past a generous hang guard.
fn within_guard(mut cmd: std::process::Command) -> std::process::Output {
    use std::time::{Duration, Instant};
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("{cmd:?} ran past its time-out");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_server_that_never_answers_fails_eval_at_its_timeout_and_is_named() {
    let model = root().join("models/household/policy");
    // takes connections, never answers
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            held.push(c);
        }
    });
    // the base URL as OpenAI's clients take it
    let mut cmd = bin();
    cmd.args(["eval", "--n", "1", "--model", "policy", "--timeout", "1"])
        .args(["--tries", "1", "--url", &format!("http://{addr}/v1/")])
        .arg("--tokenizer")
        .arg(&model);
    let out = within_guard(cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains(&format!(
                "http://{addr}/v1/completions: timed out: no response head within 1 s"
            )),
        "{err}"
    );
    // the flags are checked, and go with --url
    for (flags, want) in [
        (vec!["--timeout", "0"], "--timeout 0"),
        (vec!["--tries", "0"], "--tries 0"),
    ] {
        let mut cmd = bin();
        cmd.args(["eval", "--n", "1", "--model", "policy"])
            .args(["--url", &format!("http://{addr}")])
            .args(&flags)
            .arg("--tokenizer")
            .arg(&model);
        let out = within_guard(cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{err}");
    }
    let out = within_guard({
        let mut cmd = bin();
        cmd.args(["eval", "--n", "1", "--timeout", "5", "--model"])
            .arg(&model);
        cmd
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("go with --url"),
        "{err}"
    );
}
