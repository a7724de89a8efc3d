//! Game and task files that are not files: a symlink to `/dev/zero` (which never ends) or a FIFO
//! (which blocks whoever opens it) is a clear error naming the file, read no further.

use rla_env::household::game::GameFile;
use std::path::Path;

fn link_to_zero(dir: &Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    p
}

#[test]
fn a_game_file_that_is_a_device_or_a_fifo_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let game = dir.path().join("game");
    std::fs::create_dir(&game).unwrap();
    link_to_zero(&game, "game.tw-pddl");
    let e = GameFile::load(&game).err().unwrap().to_string();
    assert!(
        e.contains("game.tw-pddl") && e.contains("a device, not a regular file"),
        "{e}"
    );
    let fifo = dir.path().join("fifo.tw-pddl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let e = GameFile::load(&fifo).err().unwrap().to_string();
    assert!(e.contains("a FIFO"), "{e}");
}

#[test]
fn a_task_file_that_is_a_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = link_to_zero(dir.path(), "tasks.jsonl");
    let e = rla_env::code::load_jsonl(&tasks).err().unwrap().to_string();
    assert!(e.contains("tasks.jsonl") && e.contains("a device"), "{e}");
    let he = link_to_zero(dir.path(), "HumanEval.jsonl.gz");
    let e = rla_env::code::humaneval::load(&he)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("a device"), "{e}");
}
