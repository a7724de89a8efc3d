//! The coding setting runs end to end at tiny scale: warm starts, the loop (programs, tests,
//! sandbox, rewards, updates, adaptation), evaluation and report.

use std::path::Path;
use std::process::Command;
mod common;
use common::{bin, TINY_CODING as CONFIG};

fn run(dir: &Path, name: &str) -> Vec<serde_json::Value> {
    let cfg = dir.join("coding.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let run = dir.join(name);
    common::train(&cfg, &run);
    assert!(run.join("report.md").exists());
    assert!(run.join("samples/iter-0002.json").exists());
    common::metrics(&run)
}

#[test]
fn the_coding_loop_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let a = run(dir.path(), "a");
    common::golden("coding", &a);
    // `eval --config RUN` evaluates the run's last policy through the setting's own evaluation:
    // the run's final greedy figure again
    let last = a.last().unwrap()["eval_in_domain_greedy"].as_f64().unwrap();
    let out = bin()
        .args(["eval", "--split", "in-domain", "--n", "8", "--config"])
        .arg(dir.path().join("a"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("tasks: {last:.3} (coding setting")),
        "{text} (the run ended at {last})"
    );
    assert_eq!(a.len(), 3, "iteration 0 and two iterations");
    for m in &a[1..] {
        let code = &m["setting"];
        // 4 problems (plus pending rewrites) × 4 programs, 3 tests each, all run in the sandbox
        assert!(code["programs"].as_u64().unwrap() >= 16, "{m}");
        assert!(code["tests"].as_u64().unwrap() >= 12, "{m}");
        for k in ["code_accuracy", "test_accuracy", "detection"] {
            let x = code[k].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&x), "{k} = {x}");
        }
    }
    // The warm-started coder solves some short problems, so some problems fall in the coder's
    // band and train it.
    let trained: u64 = a[1..]
        .iter()
        .map(|m| m["policy_samples"].as_u64().unwrap())
        .sum();
    assert!(trained > 0, "no policy samples: {a:?}");
    // The test config's band holds none of the accuracies four programs can give, so every
    // problem is outside it (by the core's own rule), each gets at most one rewrite, some get
    // one, and those are rolled out next iteration.
    let band = rla_train::config::RunConfig::load(&dir.path().join("coding.toml"))
        .unwrap()
        .adapt;
    let accs = a[1]["task_acc"].as_array().unwrap();
    assert!(!accs.is_empty(), "{}", a[1]);
    for x in accs {
        let d = rla_core::adapt::adaptation_direction(x.as_f64().unwrap(), &band);
        assert_ne!(
            d,
            rla_core::adapt::Direction::Keep,
            "accuracy {x} inside the band"
        );
    }
    let proposed = a[1]["pending_next"].as_u64().unwrap();
    assert!(
        proposed > 0 && proposed <= accs.len() as u64,
        "{proposed} rewrites proposed for {} problems outside the band: {}",
        accs.len(),
        a[1]
    );
    assert_eq!(a[2]["pending_evaluated"].as_u64().unwrap(), proposed);
    assert!(a[0]["eval_in_domain"].as_f64().is_some());

    // The trained coder is evaluated on problems from JSON lines.
    let problems = dir.path().join("problems.jsonl");
    let lines: Vec<String> = rla_env::code::family::generate(5, 2, 77)
        .iter()
        .enumerate()
        .map(|(i, s)| serde_json::to_string(&s.problem(&format!("p{i}"), 4)).unwrap())
        .collect();
    std::fs::write(&problems, lines.join("\n")).unwrap();
    let out = bin()
        .args(["code", "eval", "--max-tokens", "40", "--model"])
        .arg(dir.path().join("a/checkpoint/policy"))
        .arg("--problems")
        .arg(&problems)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("5 problems in the project's format"),
        "{text}"
    );
    assert!(text.contains("of 5 problems"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with('p') && (l.ends_with(": pass") || l.ends_with(": fail")))
            .count(),
        5,
        "{text}"
    );
}

#[test]
fn code_exec_prints_a_verdict_per_test() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("p.py");
    std::fs::write(&prog, "a, b = map(int, input().split())\nprint(a + b)\n").unwrap();
    let tests = dir.path().join("t.md");
    std::fs::write(
        &tests,
        "**Test Input:**\n```input\n1 2\n```\n**Test Output:**\n```output\n3\n```\n\
         **Test Input:**\n```input\n2 2\n```\n**Test Output:**\n```output\n5\n```\n",
    )
    .unwrap();
    let out = bin()
        .args(["code", "exec", "--program"])
        .arg(&prog)
        .arg("--tests")
        .arg(&tests)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "a failing test is a non-zero exit");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("test 1: pass"), "{text}");
    assert!(lines[1].starts_with("test 2: fail"), "{text}");
    assert_eq!(lines[2], "1 passed, 1 failed");
    // bad input is named, not a panic
    std::fs::write(&tests, "no tests here").unwrap();
    let out = bin()
        .args(["code", "exec", "--program"])
        .arg(&prog)
        .arg("--tests")
        .arg(&tests)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("no tests") && !err.contains("panicked"),
        "{err}"
    );
}

/// A private temporary folder that the sandbox's unprivileged uid can pass through.
fn tmp_for_sandbox() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .unwrap();
    d
}

fn sandbox_folders(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rla-sandbox-"))
        .collect()
}

#[test]
fn code_exec_leaves_no_folder_behind_and_caps_huge_test_files() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tmp_for_sandbox();
    let prog = dir.path().join("p.py");
    std::fs::write(&prog, "a, b = map(int, input().split())\nprint(a + b)\n").unwrap();
    let tests = dir.path().join("t.jsonl");
    let lines: String = (0..5)
        .map(|i| {
            format!(
                "{{\"input\": \"{i} 1\\n\", \"output\": \"{}\\n\"}}\n",
                i + i % 2
            )
        })
        .collect();
    std::fs::write(&tests, lines).unwrap();
    // a failing test (non-zero exit) removes the sandbox's folder too
    let out = bin()
        .env("TMPDIR", tmp.path())
        .args(["code", "exec", "--program"])
        .arg(&prog)
        .arg("--tests")
        .arg(&tests)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("2 passed, 3 failed"), "{text}");
    assert_eq!(sandbox_folders(tmp.path()), Vec::<String>::new());
    // more tests than the cap: refused before anything runs, with the way out named
    let out = bin()
        .env("TMPDIR", tmp.path())
        .args(["code", "exec", "--max-tests", "3", "--program"])
        .arg(&prog)
        .arg("--tests")
        .arg(&tests)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("5 tests") && err.contains("--max-tests 5"),
        "{err}"
    );
}

#[test]
fn code_exec_interrupted_removes_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tmp_for_sandbox();
    let prog = dir.path().join("p.py");
    std::fs::write(&prog, "import time\ntime.sleep(30)\n").unwrap();
    let tests = dir.path().join("t.jsonl");
    std::fs::write(&tests, "{\"input\": \"\", \"output\": \"1\\n\"}\n").unwrap();
    let mut child = bin()
        .env("TMPDIR", tmp.path())
        .args([
            "code",
            "exec",
            "--wall-secs",
            "30",
            "--cpu-secs",
            "30",
            "--program",
        ])
        .arg(&prog)
        .arg("--tests")
        .arg(&tests)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while sandbox_folders(tmp.path()).is_empty() && start.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !sandbox_folders(tmp.path()).is_empty(),
        "the run never started"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(
        start.elapsed().as_secs() < 25,
        "Ctrl-C did not stop the run"
    );
    assert_eq!(sandbox_folders(tmp.path()), Vec::<String>::new());
}
