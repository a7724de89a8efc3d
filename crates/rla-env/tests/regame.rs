//! Rewrites of ALFWorld game files: the goal's object or receptacle class changed to another in the
//! scene, harder or easier, each a game this engine loads and its planner wins — and that ALFWorld's
//! own engine loads into the same first observation and commands, played there by ALFWorld's
//! handcoded expert (`target/py-venv`, which the tests' set-up installs; RLA_ALFWORLD_PYTHON names
//! another interpreter).

use rla_core::adapt::Direction;
use rla_env::household::expert::{plan, GoalSpec};
use rla_env::household::regame::{game_proposals, retarget_game, GameFiles};
use rla_env::household::GameFile;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces");
    rla_env::household::game::game_folders(&dir).unwrap()
}

fn count(g: &GameFile, class: &str) -> usize {
    let w = &g.world;
    let Some(t) = w.type_index(&format!("{class}Type")) else {
        return 0;
    };
    w.objects_of_type(t)
        .iter()
        .filter(|&&o| !w.objects[o as usize].name.is_empty())
        .count()
        + w.receptacles.iter().filter(|r| r.rtype == t).count()
}

#[test]
fn rewritten_games_load_are_won_by_the_planner_and_move_as_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let mut written = Vec::new();
    for (i, f) in fixtures().iter().enumerate() {
        let files = GameFiles::read(f).unwrap();
        let parent = GameFile::load(f).unwrap();
        let pt = parent.traj.clone().unwrap().pddl_params;
        for dir in [Direction::Harder, Direction::Easier] {
            for (k, (what, g)) in game_proposals(&files, dir).into_iter().enumerate() {
                let out = tmp.path().join(format!("{i:02}-{dir:?}-{k}"));
                g.write(&out).unwrap();
                let child = GameFile::load(&out).unwrap();
                let ct = child.traj.clone().unwrap().pddl_params;
                let spec = GoalSpec::from_game(&child).unwrap();
                assert!(!plan(&child.world, &child.world.initial, &spec)
                    .unwrap()
                    .is_empty());
                // exactly one of the goal's classes changed, in the direction asked
                let (old, new) = if ct.object_target != pt.object_target {
                    (
                        count(&parent, &pt.object_target),
                        count(&child, &ct.object_target),
                    )
                } else {
                    let t = |p: &rla_env::household::game::PddlParams| {
                        if p.parent_target.is_empty() {
                            p.toggle_target.clone()
                        } else {
                            p.parent_target.clone()
                        }
                    };
                    assert_ne!(t(&ct), t(&pt), "{what}");
                    (count(&parent, &t(&pt)), count(&child, &t(&ct)))
                };
                match dir {
                    Direction::Harder => assert!(new < old, "{what}: {old} -> {new}"),
                    _ => assert!(new > old, "{what}: {old} -> {new}"),
                }
                // the task sentence the agent reads names the new goal
                let mut env = rla_env::household::HouseholdGame::new(child.world.clone());
                let intro = env.reset();
                assert!(
                    intro.contains(&ct.object_target.to_ascii_lowercase()),
                    "{intro}"
                );
                if k == 0 && i < 8 {
                    written.push((out, intro, env_admissible(&mut env)));
                }
            }
        }
    }
    assert!(written.len() >= 12, "{} rewrites", written.len());

    // ALFWorld's own engine and its handcoded expert on the first rewrite of each direction of the
    // first eight games (ALFWorld's engine plays ~15 steps a second: all of them would take minutes)
    let python = std::env::var("RLA_ALFWORLD_PYTHON").unwrap_or_else(|_| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/py-venv/bin/python")
            .display()
            .to_string()
    });
    assert!(
        Path::new(&python).exists() || std::env::var("RLA_ALFWORLD_PYTHON").is_ok(),
        "{python} is missing: run scripts/python-env.sh (ALFWorld 0.4.2)"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/alfworld_expert.py");
    let out = std::process::Command::new(&python)
        .arg(script)
        .args(written.iter().map(|w| &w.0))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), written.len());
    for (l, (dir, intro, adm)) in lines.iter().zip(&written) {
        assert_eq!(l["error"], serde_json::Value::Null, "{}", dir.display());
        assert_eq!(l["initial"].as_str().unwrap(), intro, "{}", dir.display());
        let theirs: Vec<String> = serde_json::from_value(l["admissible"].clone()).unwrap();
        assert_eq!(&theirs, adm, "{}", dir.display());
    }
    // ALFWorld's handcoded expert searches slowly (its pick-two handling above all): it wins most
    // rewrites within 200 steps, not every one
    let won = lines.iter().filter(|l| l["won"] == true).count();
    eprintln!(
        "ALFWorld's expert won {won} of {} rewrites within 200 steps",
        lines.len()
    );
    assert!(
        4 * won >= 3 * lines.len(),
        "{won} of {}: {lines:?}",
        lines.len()
    );
}

fn env_admissible(env: &mut rla_env::household::HouseholdGame) -> Vec<String> {
    let mut a = env.admissible().to_vec();
    a.sort();
    a
}

#[test]
fn a_bad_rewrite_is_named() {
    let f = &fixtures()[0];
    let files = GameFiles::read(f).unwrap();
    let e = retarget_game(&files, "Spaceship", "Shelf").unwrap_err();
    assert!(e.contains("Spaceship"), "{e}");
    let t = files.traj_data().unwrap().pddl_params;
    let e = retarget_game(&files, &t.object_target, "Moon").unwrap_err();
    assert!(e.contains("Moon"), "{e}");
    let e = GameFiles::read(&f.join("nowhere")).unwrap_err().to_string();
    assert!(e.contains("nowhere"), "{e}");
}
