//! The command-line program, run as a user would.

use std::path::{Path, PathBuf};
mod common;
use common::bin;

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
fn env_replay_passes_on_the_traces_at_shared_spots() {
    let dir = fixtures().join("../alfworld-shared-spots");
    let out = bin().args(["env", "replay"]).arg(dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("8 passed, 0 failed"));
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

/// `env stats` on a generated split and on a folder of game files (ALFWorld's layout, games
/// written by `env generate` two levels down): the same figures, read the same way.
#[test]
fn env_stats_reads_a_split_and_a_folder_of_games_alike() {
    let dir = tempfile::tempdir().unwrap();
    let games = dir.path().join("json_2.1.1/valid_seen");
    let out = bin()
        .args([
            "env", "generate", "--split", "train", "--n", "6", "--seed", "3", "--out",
        ])
        .arg(&games)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stats = |args: &[&str]| {
        let out = bin().args(["env", "stats"]).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let split = stats(&["--split", "train", "--n", "6", "--seed", "3"]);
    let folder = stats(&["--games", dir.path().to_str().unwrap()]);
    assert!(folder.starts_with("6 games under"), "{folder}");
    // everything but the rooms (a game file does not name its room) agrees
    let body = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with("rooms") && !l.contains("games under"))
            .map(String::from)
            .collect()
    };
    assert_eq!(body(&split), body(&folder));
    assert!(
        split.contains("objects a scene") && split.contains("X 1"),
        "{split}"
    );
    let out = bin()
        .args(["env", "stats", "--games"])
        .arg(dir.path().join("nowhere"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("nowhere") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn lm_init_logprobs_and_generate_work_on_a_tiny_model() {
    let dir = tempfile::tempdir().unwrap();
    let (model, out) = tiny_model(dir.path(), "go to fridge 1\nopen fridge 1\ntake apple 1 from fridge 1\nYou arrive at fridge 1. The fridge 1 is closed.\n");
    let corpus = dir.path().join("corpus.txt");
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
    std::fs::write(&bad, "arch = \"mamba\"\nhidden_size = 32\nintermediate_size = 64\nnum_hidden_layers = 1\nnum_attention_heads = 2\nnum_key_value_heads = 1\n").unwrap();
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
    assert!(String::from_utf8_lossy(&out.stderr).contains("mamba"));
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

#[test]
fn env_replay_of_a_folder_without_traces_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["env", "replay"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    assert!(!stdout.contains("passed"), "{stdout}");
    assert!(
        err.contains(&format!("no traces found in {}", dir.path().display())),
        "{err}"
    );
}

#[test]
fn env_replay_reports_a_broken_game_and_replays_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("00-pick_and_place_simple-kitchen");
    copy_dir(
        &fixtures().join("00-pick_and_place_simple-kitchen"),
        &broken,
    );
    std::fs::write(broken.join("game.tw-pddl"), "{not json").unwrap();
    let good = "01-look_at_obj_in_light-bedroom";
    copy_dir(&fixtures().join(good), &dir.path().join(good));
    let out = bin()
        .args(["env", "replay"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    let game = broken.join("game.tw-pddl").display().to_string();
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("FAILED") && l.contains(&game) && l.contains("json")),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last(), Some("4 passed, 1 failed"));
}

#[test]
fn env_replay_reports_a_reordered_admissible_list_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let game = "00-pick_and_place_simple-kitchen";
    copy_dir(&fixtures().join(game), &dir.path().join(game));
    let trace = dir.path().join(game).join("trace-probe.jsonl");
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["admissible"].as_array_mut().unwrap().reverse();
    let rest: Vec<&str> = text.lines().skip(1).collect();
    std::fs::write(&trace, format!("{first}\n{}\n", rest.join("\n"))).unwrap();
    let out = bin()
        .args(["env", "replay"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains("admissible differs")
            && stdout
                .contains("same commands in a different order: first difference at position 1:")
            && !stdout.contains("missing []"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last(), Some("3 passed, 1 failed"));
}

#[test]
fn an_unknown_task_type_is_an_error_in_play_bench_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("00-pick_and_place_simple-kitchen");
    copy_dir(&fixtures().join("00-pick_and_place_simple-kitchen"), &game);
    let traj = game.join("traj_data.json");
    let text = std::fs::read_to_string(&traj).unwrap();
    std::fs::write(
        &traj,
        text.replace("pick_and_place_simple", "pick_and_juggle"),
    )
    .unwrap();
    let want = format!(
        "{}: task_type: unknown goal type \"pick_and_juggle\" (known: pick_and_place_simple, ",
        traj.display()
    );
    for args in [&["env", "play"][..], &["env", "bench", "--steps", "10"]] {
        let out = bin()
            .args(args)
            .arg(&game)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(&want), "{args:?}: {err}");
        assert!(err.contains("pick_two_obj_and_place)"), "{err}");
    }
    let out = bin()
        .args(["env", "replay"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(stdout.contains(&format!("FAILED {want}")), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("0 passed, 1 failed"));
}

#[test]
fn env_play_answers_non_utf8_input_and_goes_on() {
    let g = fixtures().join("05-pick_two_obj_and_place-bathroom");
    let out = bin().args(["env", "solve"]).arg(&g).output().unwrap();
    assert!(out.status.success());
    let mut input = b"go to \xff\xfe\n".to_vec();
    input.extend_from_slice(&out.stdout);
    let mut child = bin()
        .args(["env", "play"])
        .arg(&g)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("> input is not UTF-8; type a command\n"),
        "{stdout}"
    );
    assert!(stdout.contains("(won)"), "{stdout}");
}

#[test]
fn a_missing_game_is_reported_without_repeating_the_cause() {
    for cmd in ["play", "bench", "solve"] {
        let out = bin()
            .args(["env", cmd, "/nonexistent/game"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.starts_with("error:")).unwrap();
        let parts: Vec<&str> = line.split(": ").collect();
        assert!(
            line.contains("/nonexistent/game") && parts.windows(2).all(|w| w[0] != w[1]),
            "{cmd}: {line}"
        );
    }
}

/// `lm init` of configs/tiny.toml over `corpus` into `dir/tiny`.
fn tiny_model(dir: &Path, corpus: &str) -> (PathBuf, std::process::Output) {
    let corpus_file = dir.join("corpus.txt");
    std::fs::write(&corpus_file, corpus).unwrap();
    let model = dir.join("tiny");
    let cfg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/tiny.toml");
    let out = bin()
        .args(["lm", "init", "--config"])
        .arg(&cfg)
        .arg("--tokenizer-corpus")
        .arg(&corpus_file)
        .arg("--out")
        .arg(&model)
        .output()
        .unwrap();
    (model, out)
}

#[test]
fn eval_plays_alfworld_game_folders() {
    let dir = tempfile::tempdir().unwrap();
    let (model, out) = tiny_model(dir.path(), "go to fridge 1\nopen fridge 1\n\\boxed{1}\n");
    assert!(out.status.success());
    // three of the fixtures' game folders, under a folder of their own
    let games = dir.path().join("games");
    std::fs::create_dir(&games).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("game.tw-pddl").exists())
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for n in &names[..3] {
        std::fs::create_dir(games.join(n)).unwrap();
        for f in ["game.tw-pddl", "traj_data.json"] {
            std::fs::copy(fixtures().join(n).join(f), games.join(n).join(f)).unwrap();
        }
    }
    let eval = |extra: &[&str]| {
        bin()
            .args(["eval", "--model"])
            .arg(&model)
            .arg("--games")
            .arg(&games)
            .args([
                "--step-limit",
                "3",
                "--constrained",
                "--prompt-style",
                "unlisted",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = eval(&["--show", "1"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text.lines().last().unwrap();
    assert!(last.contains("success on 3 games of"), "{text}");
    assert!(text.contains("game: ") && text.contains("   1. "), "{text}");
    // too many, or a folder without games, or a game without its traj_data.json: named
    let out = eval(&["--n", "4"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds 3 games"));
    std::fs::remove_file(games.join(&names[0]).join("traj_data.json")).unwrap();
    let out = eval(&[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no traj_data.json"));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = bin()
        .args(["eval", "--model"])
        .arg(&model)
        .arg("--games")
        .arg(&empty)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no game folder"));
}

#[test]
fn eval_samples_episodes_at_a_temperature_and_refuses_what_it_cannot_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (model, out) = tiny_model(dir.path(), "go to fridge 1\nopen fridge 1\n\\boxed{1}\n");
    assert!(out.status.success());
    let eval = |extra: &[&str]| {
        bin()
            .args(["eval", "--model"])
            .arg(&model)
            .args([
                "--split",
                "validation",
                "--n",
                "3",
                "--step-limit",
                "3",
                "--constrained",
                "--prompt-style",
                "unlisted",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    // greedy: the success, then how many lost episodes end in a loop
    let out = eval(&[]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("success on 3 validation tasks: ") && text.contains("of them end in a loop"),
        "{text}"
    );
    let out = eval(&["--temperature", "1", "--samples", "2"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("success on 3 validation tasks, 2 episodes each at temperature 1")
            && text.contains("standard error"),
        "{text}"
    );
    for (extra, says) in [
        (&["--temperature", "0"][..], "positive temperature"),
        (&["--temperature", "1", "--samples", "0"][..], "--samples 0"),
        (
            &["--temperature", "1", "--judge", "1"][..],
            "judges greedy ones",
        ),
    ] {
        let out = eval(extra);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            !out.status.success() && err.contains(says),
            "{extra:?}: {err}"
        );
    }
    // ALFWorld's games sampled alike, each game's episodes counted together
    let games = |samples: &str| {
        bin()
            .args(["eval", "--model"])
            .arg(&model)
            .arg("--games")
            .arg(fixtures())
            .args(["--n", "2", "--step-limit", "3", "--temperature", "1"])
            .args(["--samples", samples])
            .output()
            .unwrap()
    };
    let out = games("3");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("success on 2 games of ")
            && text.contains("3 episodes each at temperature 1")
            && text.contains("standard error"),
        "{text}"
    );
    let out = games("0");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--samples 0"));
}
