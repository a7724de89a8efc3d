//! The GUI setting end to end at tiny scale (warm starts on the expert's demonstrations, the loop
//! on the native desktop with OSWorld-format tasks, evaluation, adaptation by evaluator switches
//! and hints, report), and the `desktop` commands.

use std::path::Path;
mod common;
use common::bin;

const CONFIG: &str = r#"
seed = 3
setting = "desktop"
mode = "full"
iterations = 2
pool_size = 8
tasks_per_iteration = 4
rollouts_per_task = 4
judge_samples = 2
update_epochs = 1

[adapt]
acc_low = 0.25
acc_high = 0.5

[desktop]
train_step_limit = 8
eval_step_limit = 8

[policy]
lr = 1e-3
micro_batch = 8
max_new_tokens = 16
[policy.tiny]
hidden_size = 48
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward]
lr = 1e-3
micro_batch = 8
max_new_tokens = 16
[reward.tiny]
hidden_size = 48
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 20
policy_steps = 60
reward_steps = 20
batch = 16
lr = 5e-3

[eval]
in_domain = 6
ood = 6
every = 2
greedy = true
"#;

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `train --quiet --config CFG --run RUN`, which must succeed.
/// `rlanything eval ARGS --config CFG`'s output, the command checked to succeed.
fn eval_ok(cfg: &Path, args: &[&str]) -> String {
    ok(&bin()
        .arg("eval")
        .args(args)
        .arg("--config")
        .arg(cfg)
        .output()
        .unwrap())
}

fn train(cfg: &Path, run: &Path) {
    ok(&bin()
        .args(["train", "--quiet", "--config"])
        .arg(cfg)
        .arg("--run")
        .arg(run)
        .output()
        .unwrap());
}

#[test]
fn the_desktop_loop_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("desktop.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let run = dir.path().join("run");
    train(&cfg, &run);
    assert!(run.join("report.md").exists());
    let samples: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("samples/iter-0002.json")).unwrap())
            .unwrap();
    let steps = samples[0]["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    // every step ran OSWorld pyautogui code (or DONE) on the desktop
    for s in steps {
        let code = s["code"].as_str().unwrap();
        assert!(
            code.starts_with("pyautogui.") || code == "DONE" || !s["error"].is_null(),
            "{s}"
        );
    }
    let metrics = common::metrics(&run);
    common::golden("desktop", &metrics);
    // `eval --config RUN` plays the run's last policy through the setting's own evaluation: its
    // greedy figure again
    let last = metrics.last().unwrap()["eval_in_domain_greedy"]
        .as_f64()
        .unwrap();
    let text = ok(&bin()
        .args(["eval", "--split", "in-domain", "--n", "6", "--config"])
        .arg(&run)
        .output()
        .unwrap());
    assert!(
        text.contains(&format!("tasks: {last:.3} (desktop setting")),
        "{text} (the run ended at {last})"
    );
    // a folder that holds no run is named
    let out = bin()
        .args(["eval", "--config"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("neither a run folder"),
        "{err}"
    );
    assert_eq!(metrics.len(), 3);
    for m in &metrics[1..] {
        let s = &m["setting"];
        assert!(s["steps"].as_u64().unwrap() >= 16, "{m}");
        // the oracle labels measure the judge
        assert!(m["process_acc"].as_f64().is_some(), "{m}");
    }
    assert!(metrics[0]["eval_in_domain"].as_f64().is_some());
    // adaptation proposes evaluator switches or hints for tasks outside the band
    let pending: u64 = metrics[1..]
        .iter()
        .map(|m| m["pending_next"].as_u64().unwrap())
        .sum();
    assert!(pending > 0, "{metrics:?}");
    let tasks = std::fs::read_to_string(run.join("tasks.jsonl")).unwrap_or_default();
    assert!(tasks.contains("calc-"), "{tasks}");
}

#[test]
fn desktop_commands_export_evaluate_screenshot_and_bench() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tasks");
    let text = ok(&bin()
        .args(["desktop", "export", "--split", "ood", "--n", "3", "--out"])
        .arg(&out)
        .output()
        .unwrap());
    assert!(text.contains("wrote 3 tasks"), "{text}");
    let task = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let id = task.file_stem().unwrap().to_string_lossy().into_owned();
    let folder = out.join(&id);
    let key = if id.contains("-e2-") {
        "evaluator2"
    } else {
        "evaluator1"
    };
    let score = |result: &Path| -> String {
        let t = ok(&bin()
            .args(["desktop", "evaluate", "--task"])
            .arg(&task)
            .arg("--result")
            .arg(result)
            .output()
            .unwrap());
        t.lines().last().unwrap().to_string()
    };
    assert_eq!(score(&folder.join(format!("{key}.xlsx"))), "1");
    assert_eq!(score(&folder.join("start.xlsx")), "0");
    // a corrupt result scores 0, as OSWorld's compare_table does
    let bad = dir.path().join("bad.xlsx");
    std::fs::write(&bad, b"garbage").unwrap();
    assert_eq!(score(&bad), "0");
    // a task file with a field missing is a clear error
    let broken = dir.path().join("broken.json");
    std::fs::write(
        &broken,
        r#"{"id": "x", "snapshot": "s", "instruction": "i"}"#,
    )
    .unwrap();
    let o = bin()
        .args(["desktop", "evaluate", "--task"])
        .arg(&broken)
        .arg("--result")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("evaluator"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // screenshots at a chosen size
    let png = dir.path().join("shot.png");
    ok(&bin()
        .args(["desktop", "screenshot"])
        .arg(&task)
        .arg("--out")
        .arg(&png)
        .args(["--size", "960x540", "--marks"])
        .output()
        .unwrap());
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 960);
    // play: type actions, see the outcome; the score is the last line
    let mut child = bin()
        .args(["desktop", "play"])
        .arg(&task)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"tree\nmarks\nos.system('ls')\npyautogui.click(99999, 1)\nDONE\n")
        .unwrap();
    let text = ok(&child.wait_with_output().unwrap());
    assert!(text.contains("tag\tname\ttext"), "{text}");
    assert!(
        text.contains("not an action") && text.contains("off the"),
        "{text}"
    );
    assert_eq!(text.lines().last().unwrap(), "0");
    let text = ok(&bin()
        .args(["desktop", "bench", "--steps", "2000"])
        .output()
        .unwrap());
    assert!(text.contains("steps/s"), "{text}");
}

#[test]
fn perturbed_sheets_are_played_by_the_expert_and_the_base() {
    // the expert solves every kind of perturbed sheet on the native desktop
    for kind in ["shift-down", "gaps", "unlocated"] {
        let o = bin()
            .args([
                "desktop",
                "eval",
                "--expert",
                "--n",
                "4",
                "--step-limit",
                "30",
            ])
            .args(["--perturb", kind])
            .output()
            .unwrap();
        let t = ok(&o);
        assert!(
            t.contains(&format!("success on 4 InDomain ({kind}) tasks: 1.000")),
            "{t}"
        );
    }
    // the shipped base, plain and perturbed, a line each and a table
    let cfg = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/desktop-tiny.toml");
    let t = eval_ok(&cfg, &["--n", "3", "--perturb", "all"]);
    for kind in [
        "none",
        "shift-right",
        "shift-down",
        "gaps",
        "wide",
        "long",
        "unlocated",
        "swapped-names",
    ] {
        assert!(
            t.contains(&format!("3 in-domain tasks, perturbation {kind}: ")),
            "{kind}: {t}"
        );
        assert!(t.contains(&format!("| {kind} | 3 | ")), "{kind}: {t}");
    }
    // the sheets world from the command line: its OOD tasks come from the held-out pools
    let out = tempfile::tempdir().unwrap();
    ok(&bin()
        .args([
            "desktop", "export", "--world", "sheets", "--split", "ood", "--n", "2",
        ])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap());
    let mut held_out = 0;
    for e in std::fs::read_dir(out.path()).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "json") {
            let t = std::fs::read_to_string(e.path()).unwrap();
            assert!(
                t.contains("\"world\": \"held-out\"") || t.contains("\"world\":\"held-out\""),
                "{t}"
            );
            held_out += 1;
        }
    }
    assert_eq!(held_out, 2);
    let o = bin()
        .args([
            "desktop",
            "eval",
            "--expert",
            "--world",
            "sheets",
            "--n",
            "3",
            "--step-limit",
            "20",
        ])
        .output()
        .unwrap();
    assert!(ok(&o).contains("success on 3 InDomain tasks: 1.000"));
    // what cannot be perturbed, or is no perturbation, is named
    let bad = |args: &[&str], want: &str| {
        let o = bin().args(args).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success() && e.contains(want), "{args:?}: {e}");
    };
    let c = cfg.to_str().unwrap();
    bad(
        &["eval", "--perturb", "tilted", "--config", c],
        "--perturb tilted: perturbation \"tilted\": not one of shift-right, shift-down, gaps, wide, long, unlocated, swapped-names, or all",
    );
    bad(
        &["eval", "--perturb", "gaps"],
        "--perturb plays a desktop run's split: name the run or its config with --config",
    );
    let household = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/quickstart.toml");
    bad(
        &[
            "eval",
            "--perturb",
            "gaps",
            "--config",
            household.to_str().unwrap(),
        ],
        "--perturb: perturbations are the desktop's sheets; this run's setting is household",
    );
    bad(
        &["desktop", "eval", "--expert", "--perturb", "tilted"],
        "not one of shift-right",
    );
}

/// `eval --by-kind`'s rows (kind, won, tasks), checked to add up to its success line's `n` tasks.
fn by_kind(cfg: &Path, n: usize) -> Vec<(String, usize, usize)> {
    let t = eval_ok(cfg, &["--n", &n.to_string(), "--by-kind"]);
    assert!(t.contains("| kind | won | tasks | success |"), "{t}");
    let rows: Vec<(String, usize, usize)> = t
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| kind "))
        .map(|l| {
            let c: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                c[1].to_string(),
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
            )
        })
        .collect();
    // the rows add up to the split's tasks and to the success line above them
    assert_eq!(rows.iter().map(|r| r.2).sum::<usize>(), n, "{t}");
    let won: usize = rows.iter().map(|r| r.1).sum();
    assert!(
        t.contains(&format!(
            "success on {n} in-domain tasks: {:.3}",
            won as f64 / n as f64
        )),
        "{t}"
    );
    assert!(rows.iter().all(|r| r.1 <= r.2), "{t}");
    rows
}

#[test]
fn an_evaluation_counts_its_tasks_by_kind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let cfg = root.join("desktop-tiny.toml");
    // the desktop: family and column count
    let rows = by_kind(&cfg, 8);
    assert!(
        rows.len() > 1 && rows.iter().all(|r| r.0.contains(" × ")),
        "{rows:?}"
    );
    // the household: ALFWorld's goal types
    let rows = by_kind(&root.join("quickstart.toml"), 12);
    assert!(rows.len() > 1, "{rows:?}");
    for r in &rows {
        assert!(
            rla_env::household::kinds::GoalKind::parse(&r.0).is_some(),
            "{rows:?}"
        );
    }
    let bad = |args: &[&str], want: &str| {
        let o = bin().args(args).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success() && e.contains(want), "{args:?}: {e}");
    };
    let coding = root.join("coding-tiny.toml");
    bad(
        &[
            "eval",
            "--n",
            "2",
            "--by-kind",
            "--config",
            coding.to_str().unwrap(),
        ],
        "the coding setting does not group its evaluation tasks by kind nor keep their episodes (--by-kind, --show)",
    );
    bad(
        &["eval", "--by-kind"],
        "--by-kind counts a run's split by kind: name the run or its config with --config",
    );
    // the household's views are refused by another setting, not ignored
    bad(
        &["eval", "--judge", "2", "--config", cfg.to_str().unwrap()],
        "--games, --judge and --take-rates are the household's views; this run's setting is desktop",
    );
    bad(
        &[
            "eval",
            "--show",
            "1",
            "--perturb",
            "gaps",
            "--config",
            cfg.to_str().unwrap(),
        ],
        "--show prints the plain split's episodes; leave out --perturb",
    );
    // the desktop's episodes step by step: the task's instruction, each step's screen and action
    let t = eval_ok(&cfg, &["--n", "3", "--show", "2"]);
    let heads: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("=== episode "))
        .collect();
    assert_eq!(heads.len(), 2, "{t}");
    assert!(heads.iter().all(|h| h.contains(" × ")), "{t}");
    assert_eq!(t.matches("\ntask: ").count(), 2, "{t}");
    assert!(t.contains("  step 1: sheet "), "{t}");
    assert!(t.lines().any(|l| l.starts_with("    > ")), "{t}");
    assert!(t.contains("success on 3 in-domain tasks: "), "{t}");
}

#[test]
fn a_run_trains_in_the_sheets_world() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sheets.toml");
    std::fs::write(
        &cfg,
        CONFIG
            .replace("iterations = 2", "iterations = 1")
            .replace("[desktop]\n", "[desktop]\nworld = \"sheets\"\n"),
    )
    .unwrap();
    let run = dir.path().join("run");
    train(&cfg, &run);
    // the pool is drawn in the sheets world, and the run played and evaluated its tasks
    let pool = std::fs::read_to_string(run.join("pool.jsonl")).unwrap();
    assert!(pool.contains("\"world\":\"sheets\""), "{pool}");
    let metrics = common::metrics(&run);
    assert!(metrics.last().unwrap()["eval_ood"].as_f64().is_some());
    // the warm start's tokenizer cuts a held-out name into pieces instead of one unknown token
    let tok = std::fs::read_to_string(run.join("pretrained/policy/tokenizer.json")).unwrap();
    assert!(
        tok.contains("WordPiece"),
        "a tokenizer that splits unseen words"
    );
    assert!(
        !tok.contains("\"Commission\""),
        "a held-out name is not a token"
    );
}
