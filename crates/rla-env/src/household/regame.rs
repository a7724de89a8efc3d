//! Rewrites of a game file's goal, as the reference's household rewrite changes a game: the goal
//! type stays, the object class or the receptacle (or lamp) class becomes another one present in
//! the scene — one with fewer instances for a harder task, more for an easier one. The problem's
//! `(:goal …)`, the grammar's task sentence and `traj_data.json`'s `pddl_params` are rewritten
//! together (the stored walkthrough, no longer the goal's, is dropped), and a rewrite is kept only
//! if the planner solves it from the start and the goal does not already hold.

use super::expert::{plan, GoalSpec};
use super::game::{task_from_grammar, TrajData};
use super::pddl::parse_problem;
use super::task::{goal_pddl, goal_sentence, GoalKind};
use super::world::{prop, World};
use crate::EnvError;
use rla_core::adapt::Direction;
use std::path::Path;

/// A game folder's two files, as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct GameFiles {
    /// `game.tw-pddl`.
    pub game: serde_json::Value,
    /// `traj_data.json`.
    pub traj: serde_json::Value,
}

/// The most bytes of a game folder's file read (ALFWorld's largest problems are under 1 MB).
pub const MAX_GAME_BYTES: u64 = 16 << 20;

impl GameFiles {
    /// Reads a game folder's `game.tw-pddl` and `traj_data.json` (regular files, bounded).
    pub fn read(dir: &Path) -> Result<GameFiles, EnvError> {
        let json = |name: &str| -> Result<serde_json::Value, EnvError> {
            let p = dir.join(name);
            let text =
                rla_core::file::read_to_string_limited(&p, MAX_GAME_BYTES).map_err(|source| {
                    EnvError::Io {
                        path: p.clone(),
                        source,
                    }
                })?;
            serde_json::from_str(&text).map_err(|e| EnvError::invalid(&p, "json", e.to_string()))
        };
        Ok(GameFiles {
            game: json("game.tw-pddl")?,
            traj: json("traj_data.json")?,
        })
    }

    /// Writes the two files into `dir` (made if missing), each through a temporary name.
    pub fn write(&self, dir: &Path) -> Result<(), EnvError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EnvError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        for (name, v) in [("game.tw-pddl", &self.game), ("traj_data.json", &self.traj)] {
            let p = dir.join(name);
            let text = serde_json::to_string_pretty(v).expect("JSON values serialise");
            rla_core::file::write_atomic(&p, text.as_bytes()).map_err(io(&p))?;
        }
        Ok(())
    }

    fn field(&self, key: &str) -> Result<&str, String> {
        self.game
            .get(key)
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("game.tw-pddl has no {key}"))
    }

    /// The goal's parameters as `traj_data.json` states them.
    pub fn traj_data(&self) -> Result<TrajData, String> {
        serde_json::from_value(self.traj.clone()).map_err(|e| format!("traj_data.json: {e}"))
    }

    /// The world the files describe.
    pub fn world(&self) -> Result<World, String> {
        let sentence = task_from_grammar(self.field("grammar")?)?;
        let problem = parse_problem(self.field("pddl_problem")?)?;
        World::from_problem(&problem, &sentence)
    }
}

fn class_count(w: &World, class: &str) -> usize {
    w.type_index(&format!("{class}Type"))
        .map(|t| {
            w.objects_of_type(t)
                .iter()
                .filter(|&&o| !w.objects[o as usize].name.is_empty())
                .count()
                + w.receptacles.iter().filter(|r| r.rtype == t).count()
        })
        .unwrap_or(0)
}

/// The game with its goal's object class `object` and receptacle (or, for
/// `look_at_obj_in_light`, lamp) class `target`, checked: both present in the scene, the object
/// pickupable (and cleanable, heatable or coolable where the goal asks it), the receptacle able to
/// contain it, two instances for pick-two, and a plan from the start that is not empty.
pub fn retarget_game(files: &GameFiles, object: &str, target: &str) -> Result<GameFiles, String> {
    let traj = files.traj_data()?;
    let kind = GoalKind::parse(&traj.task_type)
        .ok_or_else(|| format!("traj_data.json: unknown task_type {}", traj.task_type))?;
    let w = files.world()?;
    let ot = w
        .type_index(&format!("{object}Type"))
        .ok_or_else(|| format!("the scene has no {object}"))?;
    let objs: Vec<u16> = w
        .objects_of_type(ot)
        .iter()
        .copied()
        .filter(|&o| !w.objects[o as usize].name.is_empty())
        .collect();
    let need = match kind.transform() {
        Some(("cleanable", _)) => prop::CLEANABLE,
        Some(("heatable", _)) => prop::HEATABLE,
        Some(("coolable", _)) => prop::COOLABLE,
        _ => 0,
    } | prop::PICKUPABLE;
    let usable = objs
        .iter()
        .filter(|&&o| w.objects[o as usize].props & need == need)
        .count();
    let min = if kind == GoalKind::PickTwoObjAndPlace {
        2
    } else {
        1
    };
    if usable < min {
        return Err(format!(
            "{object}: {usable} instance(s) in the scene that {} can use, {min} needed",
            kind.as_str()
        ));
    }
    let (receptacle, lamp) = if kind.needs_receptacle() {
        let rt = w
            .type_index(&format!("{target}Type"))
            .filter(|&t| w.receptacles.iter().any(|r| r.rtype == t))
            .ok_or_else(|| format!("the scene has no receptacle {target}"))?;
        if !w.can_contain(rt, ot) {
            return Err(format!("a {target} cannot contain a {object}"));
        }
        (Some(target), None)
    } else {
        let lt = w
            .type_index(&format!("{target}Type"))
            .ok_or_else(|| format!("the scene has no {target}"))?;
        if !w
            .objects_of_type(lt)
            .iter()
            .any(|&o| w.objects[o as usize].props & prop::TOGGLEABLE != 0)
        {
            return Err(format!("the scene has no lamp {target}"));
        }
        (None, Some(target))
    };
    // the task rule's text ("Your task is to: put a plate in shelf." in ALFWorld's games), with
    // its goal phrase replaced; found as the quoted JSON string it is in the grammar's block
    let old_rhs = task_from_grammar(files.field("grammar")?)?;
    let phrase = old_rhs
        .strip_prefix("Your task is to: ")
        .unwrap_or(&old_rhs)
        .trim_end_matches('.');
    let sentence = goal_sentence(kind, 0, object, receptacle, lamp);
    let new_rhs = old_rhs.replacen(phrase, &sentence, 1);
    let quoted = |s: &str| serde_json::to_string(s).expect("strings serialise");
    let grammar = files
        .field("grammar")?
        .replacen(&quoted(&old_rhs), &quoted(&new_rhs), 1);
    let problem = replace_goal(
        files.field("pddl_problem")?,
        &goal_pddl(kind, object, receptacle, lamp),
    )?;
    let mut game = files.game.clone();
    game["grammar"] = serde_json::Value::String(grammar);
    game["pddl_problem"] = serde_json::Value::String(problem);
    if let Some(m) = game.as_object_mut() {
        m.remove("walkthrough");
    }
    let mut traj_json = files.traj.clone();
    let params = &mut traj_json["pddl_params"];
    params["object_target"] = object.into();
    params["parent_target"] = receptacle.unwrap_or("").into();
    params["toggle_target"] = lamp.unwrap_or("").into();
    let out = GameFiles {
        game,
        traj: traj_json,
    };
    // the rewrite is a game the planner wins, and not won before it starts
    let w2 = out.world()?;
    if task_from_grammar(out.field("grammar")?)? != new_rhs {
        return Err("the grammar's task sentence could not be rewritten".into());
    }
    let g = GoalSpec::from_traj(&w2, &out.traj_data()?)?;
    match plan(&w2, &w2.initial, &g) {
        Some(p) if !p.is_empty() => Ok(out),
        Some(_) => Err("the goal already holds at the start".into()),
        None => Err("the planner cannot solve it".into()),
    }
}

/// The problem text with its `(:goal …)` section's formula replaced.
fn replace_goal(problem: &str, goal: &str) -> Result<String, String> {
    let lower = problem.to_ascii_lowercase();
    let start = lower.find("(:goal").ok_or("the problem has no (:goal …)")?;
    let mut depth = 0usize;
    let mut end = None;
    for (i, c) in problem[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(start + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let end = end.ok_or("the problem's (:goal …) is not closed")?;
    Ok(format!(
        "{}(:goal\n            {goal}\n        ){}",
        &problem[..start],
        &problem[end..]
    ))
}

/// The classes a world's scene names (`Apple`, `CounterTop`), sorted, each once: what a game's
/// goal may be rewritten to.
pub fn scene_classes(w: &World) -> Vec<String> {
    let mut classes: Vec<String> = w
        .types
        .iter()
        .map(|t| t.trim_end_matches("Type").to_string())
        .collect();
    classes.sort();
    classes.dedup();
    classes
}

/// Every rewrite of a game in one direction: another object class with fewer (harder) or more
/// (easier) instances, or another receptacle or lamp class with fewer or more; each checked by
/// [`retarget_game`], described for the pool's lineage, in a fixed order.
pub fn game_proposals(files: &GameFiles, dir: Direction) -> Vec<(String, GameFiles)> {
    let (Ok(traj), Ok(w)) = (files.traj_data(), files.world()) else {
        return Vec::new();
    };
    let p = &traj.pddl_params;
    let target = if p.parent_target.is_empty() {
        &p.toggle_target
    } else {
        &p.parent_target
    };
    let moves = |old: usize, new: usize| match dir {
        Direction::Harder => new < old,
        Direction::Easier => new > old,
        Direction::Keep => false,
    };
    let classes = scene_classes(&w);
    let mut out = Vec::new();
    let (n_obj, n_target) = (class_count(&w, &p.object_target), class_count(&w, target));
    for c in &classes {
        if *c != p.object_target && moves(n_obj, class_count(&w, c)) {
            if let Ok(g) = retarget_game(files, c, target) {
                out.push((format!("object becomes {c}"), g));
            }
        }
        if c != target && moves(n_target, class_count(&w, c)) {
            if let Ok(g) = retarget_game(files, &p.object_target, c) {
                out.push((
                    format!(
                        "{} becomes {c}",
                        if p.parent_target.is_empty() {
                            "lamp"
                        } else {
                            "receptacle"
                        }
                    ),
                    g,
                ));
            }
        }
    }
    out
}
