//! Input past what a command can hold, and input that would give a silent wrong answer: each a
//! clear error naming what was wrong, before any work starts, or the right result.

use std::io::Write;
use std::path::{Path, PathBuf};
mod common;
use common::bin;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the program with `args`; its status and everything it printed.
fn run(args: &[&str]) -> (bool, String) {
    let out = bin().args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("panicked"), "{args:?}: {text}");
    (out.status.success(), text)
}

/// Runs the program expecting a failure that says `needle`.
fn refused(args: &[&str], needle: &str) {
    let (ok, text) = run(args);
    assert!(!ok, "{args:?} succeeded: {text}");
    assert!(text.contains(needle), "{args:?}: {text}");
}

/// Each of `members` gzipped by `gzip`, one after the other (a file of several members, as
/// `cat a.gz b.gz` makes).
fn gzip(members: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in members {
        let mut c = std::process::Command::new("gzip")
            .args(["-c", "-9"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = c.stdin.take().unwrap();
        let data = m.to_vec();
        let feeder = std::thread::spawn(move || stdin.write_all(&data).unwrap());
        let o = c.wait_with_output().unwrap();
        feeder.join().unwrap();
        assert!(o.status.success());
        out.extend(o.stdout);
    }
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn code_eval_refuses_problem_files_past_its_bounds_and_evaluations_of_nothing() {
    let d = tempfile::tempdir().unwrap();
    let at = |name: &str| d.path().join(name);
    // a 40 KB gzip of a list of 1.5 million records: refused as it is read
    let mut list = b"[".to_vec();
    for _ in 0..1_500_000 {
        list.extend_from_slice(br#"{"question": ""},"#);
    }
    list.extend_from_slice(br#"{"question": ""}]"#);
    std::fs::write(at("bomb.json.gz"), gzip(&[&list])).unwrap();
    // one problem of 100,000 tests
    let tests: Vec<String> = (0..100_000)
        .map(|i| format!(r#"{{"input": "{i}", "output": "{i}"}}"#))
        .collect();
    std::fs::write(
        at("many.jsonl"),
        format!(
            r#"{{"id": "huge", "statement": "s", "tests": [{}]}}"#,
            tests.join(",")
        ),
    )
    .unwrap();
    std::fs::write(at("untested.json"), r#"[{"question": "q"}]"#).unwrap();
    std::fs::write(
        at("one.jsonl"),
        r#"{"id": "one", "statement": "Print 1.", "tests": [{"input": "", "output": "1"}]}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", at("zero.json")).unwrap();
    let eval = |problems: &Path, more: &[&str]| {
        let mut a = vec!["code", "eval", "--model", "/nonexistent", "--problems"];
        a.push(s(problems));
        a.extend(more);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    for (args, needle) in [
        (eval(&at("bomb.json.gz"), &[]), "more than 1000000 records"),
        (
            eval(&at("many.jsonl"), &[]),
            "(\"huge\"): 100000 tests, more than the 1000",
        ),
        (eval(&at("untested.json"), &[]), "no problem with a test"),
        (eval(&at("one.jsonl"), &["--limit", "0"]), "--limit 0"),
        (eval(&at("zero.json"), &[]), "a device, not a regular file"),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, needle);
    }
    // a larger --max-tests reads the file (and goes on to the model)
    let args = eval(&at("many.jsonl"), &["--max-tests", "100000"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, text) = run(&args);
    assert!(!ok && text.contains("/nonexistent"), "{text}");
}

#[test]
fn code_humaneval_refuses_empty_and_repeated_completions_and_reads_every_gzip_member() {
    let d = tempfile::tempdir().unwrap();
    let at = |name: &str| d.path().join(name);
    let problem = |i: usize| {
        serde_json::json!({
            "task_id": format!("T/{i}"),
            "prompt": format!("def f{i}():\n"),
            "canonical_solution": format!("    return {i}\n"),
            "test": format!("def check(c):\n    assert c() == {i}\n"),
            "entry_point": format!("f{i}"),
        })
        .to_string()
            + "\n"
    };
    std::fs::write(
        at("two.jsonl.gz"),
        gzip(&[problem(0).as_bytes(), problem(1).as_bytes()]),
    )
    .unwrap();
    let data = at("two.jsonl.gz");
    let (ok, text) = run(&["code", "humaneval", "--data", s(&data)]);
    assert!(ok && text.contains("(2 of 2 problems)"), "{text}");
    std::fs::write(at("empty.jsonl"), "\n").unwrap();
    refused(
        &[
            "code",
            "humaneval",
            "--data",
            s(&data),
            "--completions",
            s(&at("empty.jsonl")),
        ],
        "holds no completion",
    );
    let line = r#"{"task_id": "T/0", "completion": "    return 0\n"}"#;
    std::fs::write(at("nine.jsonl"), format!("{line}\n").repeat(9)).unwrap();
    refused(
        &[
            "code",
            "humaneval",
            "--data",
            s(&data),
            "--completions",
            s(&at("nine.jsonl")),
        ],
        "\"T/0\" is named more than once",
    );
}

#[test]
fn eval_n_past_a_split_of_files_is_refused_with_the_count_it_holds() {
    let d = tempfile::tempdir().unwrap();
    let at = |name: &str| d.path().join(name);
    // the coding setting: a one-problem file
    std::fs::write(
        at("one.jsonl"),
        r#"{"id": "one", "statement": "Print 1.", "tests": [{"input": "", "output": "1"}]}"#,
    )
    .unwrap();
    std::fs::write(
        at("coding.toml"),
        "setting = \"coding\"\n[coding]\neval_problems = { in_domain = \"one.jsonl\" }\n",
    )
    .unwrap();
    let coder = root().join("models/coding/policy");
    refused(
        &[
            "eval",
            "--config",
            s(&at("coding.toml")),
            "--model",
            s(&coder),
            "--n",
            "5",
        ],
        "holds 1 tasks",
    );
    // the desktop: a folder of one task file beside links to `/`, to itself and to its task
    let tasks = at("tasks");
    assert!(bin()
        .args([
            "desktop",
            "export",
            "--split",
            "in-domain",
            "--n",
            "1",
            "--out"
        ])
        .arg(&tasks)
        .output()
        .unwrap()
        .status
        .success());
    let task = std::fs::read_dir(&tasks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    std::os::unix::fs::symlink("/", tasks.join("everything")).unwrap();
    std::os::unix::fs::symlink(&tasks, tasks.join("again")).unwrap();
    std::os::unix::fs::symlink(&task, tasks.join("zz-again.json")).unwrap();
    std::fs::write(
        at("desktop.toml"),
        "setting = \"desktop\"\n[desktop]\neval_tasks = { in_domain = \"tasks\" }\n",
    )
    .unwrap();
    let policy = root().join("models/desktop/policy");
    refused(
        &[
            "eval",
            "--config",
            s(&at("desktop.toml")),
            "--model",
            s(&policy),
            "--n",
            "2",
        ],
        "holds 1 tasks",
    );
}

#[test]
fn a_problem_file_that_is_a_device_or_a_fifo_is_named_as_such() {
    let d = tempfile::tempdir().unwrap();
    let zero = d.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let fifo = d.path().join("fifo.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for (file, what) in [(&zero, "is a device"), (&fifo, "is a FIFO")] {
        let (ok, text) = run(&[
            "train",
            "--quiet",
            "--config",
            s(&root().join("configs/coding-file.toml")),
            "--run",
            s(&d.path().join("run")),
            "--set",
            &format!("coding.eval_problems.ood={:?}", s(file)),
        ]);
        assert!(!ok, "{text}");
        assert!(
            text.contains("coding.eval_problems.ood")
                && text.contains(&format!("{what}, not a regular file")),
            "{text}"
        );
        assert!(!d.path().join("run").exists());
    }
}
