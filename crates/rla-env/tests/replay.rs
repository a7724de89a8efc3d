//! Replaying traces: what is reported when traces are missing, broken or differ, and games
//! whose `traj_data.json` names an unknown goal type.

use rla_env::household::trace::{diff_list, replay_dir, replay_trace};
use rla_env::household::GameFile;
use std::path::{Path, PathBuf};

const GAME: &str = "00-pick_and_place_simple-kitchen";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces")
}

fn copy_game(name: &str, to: &Path) -> PathBuf {
    let dir = to.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(fixtures().join(name)).unwrap().flatten() {
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir
}

fn strings(l: &[&str]) -> Vec<String> {
    l.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_reordered_list_reports_where_the_order_first_differs() {
    let d = diff_list(&strings(&["a", "b", "c"]), &strings(&["a", "c", "b"]));
    assert_eq!(
        d,
        "same commands in a different order: first difference at position 2: expected \"b\", got \"c\""
    );
}

#[test]
fn duplicated_entries_are_reported() {
    let d = diff_list(&strings(&["a", "b"]), &strings(&["a", "a", "b"]));
    assert_eq!(d, "\"a\" listed 2 times, expected 1");
    let d = diff_list(&strings(&["a", "a", "b"]), &strings(&["b"]));
    assert_eq!(d, "missing [\"a\" (2 times)]");
    let d = diff_list(&strings(&["a"]), &strings(&["a", "c", "c", "d"]));
    assert_eq!(d, "extra [\"c\" (2 times), \"d\"]");
    let d = diff_list(&strings(&["a", "b"]), &strings(&["c", "b"]));
    assert_eq!(d, "missing [\"a\"]; extra [\"c\"]");
}

#[test]
fn a_trace_with_a_reordered_admissible_list_is_a_mismatch_that_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_game(GAME, tmp.path());
    let trace = dir.join("trace-expert.jsonl");
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let adm = lines[1]["admissible"].as_array_mut().unwrap();
    adm.swap(0, 1);
    let (first, second) = (adm[0].clone(), adm[1].clone());
    let out: Vec<String> = lines.iter().map(|v| v.to_string()).collect();
    std::fs::write(&trace, out.join("\n")).unwrap();

    let game = GameFile::load(&dir).unwrap();
    let r = replay_trace(&game, &trace).unwrap();
    assert_eq!(r.mismatches.len(), 1, "{:?}", r.mismatches);
    let m = &r.mismatches[0];
    assert_eq!((m.step, m.field.as_str()), (1, "admissible"));
    let want = format!(
        "same commands in a different order: first difference at position 1: expected {first}, got {second}"
    );
    assert!(m.actual.contains(&want), "{m}");
    assert!(!m.actual.contains("missing") && !m.actual.contains("extra"));
}

#[test]
fn a_folder_without_traces_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let e = replay_dir(tmp.path()).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("no traces found in {}", tmp.path().display())),
        "{e}"
    );
    // a game folder whose traces were removed
    let dir = copy_game(GAME, tmp.path());
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("trace-") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    for d in [tmp.path(), dir.as_path()] {
        let e = replay_dir(d).unwrap_err().to_string();
        assert!(
            e.contains(&format!("no traces found in {}", d.display())),
            "{e}"
        );
    }
    let e = replay_dir(&tmp.path().join("absent"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("absent"), "{e}");
}

#[test]
fn a_broken_game_or_trace_fails_alone_and_the_rest_are_replayed() {
    let tmp = tempfile::tempdir().unwrap();
    let broken = copy_game(GAME, tmp.path());
    std::fs::write(broken.join("game.tw-pddl"), "{not json").unwrap();
    let good = copy_game("01-look_at_obj_in_light-bedroom", tmp.path());
    let bad_trace = good.join("trace-random.jsonl");
    let text = std::fs::read_to_string(&bad_trace).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{\"command\": ";
    std::fs::write(&bad_trace, lines.join("\n")).unwrap();

    let reports = replay_dir(tmp.path()).unwrap();
    assert_eq!(reports.len(), 5, "one for the broken game, four traces");
    let failed: Vec<_> = reports.iter().filter(|r| !r.passed()).collect();
    assert_eq!(failed.len(), 2, "{reports:?}");
    let game_err = failed[0].error.as_deref().unwrap();
    assert!(
        game_err.contains(&broken.join("game.tw-pddl").display().to_string())
            && game_err.contains("json"),
        "{game_err}"
    );
    let trace_err = failed[1].error.as_deref().unwrap();
    assert!(
        trace_err.contains(&bad_trace.display().to_string()) && trace_err.contains("line 4"),
        "{trace_err}"
    );
    assert_eq!(reports.iter().filter(|r| r.passed()).count(), 3);
}

#[test]
fn an_unknown_task_type_is_an_error_naming_the_file_field_and_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_game(GAME, tmp.path());
    let traj = dir.join("traj_data.json");
    let text = std::fs::read_to_string(&traj).unwrap();
    std::fs::write(
        &traj,
        text.replace("pick_and_place_simple", "pick_and_juggle"),
    )
    .unwrap();
    let e = GameFile::load(&dir).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: task_type: unknown goal type \"pick_and_juggle\" (known: pick_and_place_simple, \
             look_at_obj_in_light, pick_clean_then_place_in_recep, pick_heat_then_place_in_recep, \
             pick_cool_then_place_in_recep, pick_two_obj_and_place)",
            traj.display()
        )
    );
    // replay reports the game as failed with that reason
    let reports = replay_dir(tmp.path()).unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].error.as_deref(), Some(e.as_str()));
}
