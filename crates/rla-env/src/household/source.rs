//! Where a household task comes from: the project's generator ([`TaskSpec`]) or a game folder in
//! ALFWorld's layout ([`GameTask`]: `game.tw-pddl` with its `traj_data.json`, as
//! `alfworld-download` writes them under `$ALFWORLD_DATA/json_2.1.1/{train,valid_seen,valid_unseen}`).
//! Both open as the same thing: a [`HouseholdGame`] to play and the [`GoalSpec`] the expert, the oracle's
//! step labels and the take rates read.

use super::expert::GoalSpec;
use super::game::{game_folders, GameFile, HouseholdGame};
use super::task::TaskSpec;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A household task, whatever its source.
pub trait HouseholdTask {
    /// Its id (unique within a pool or a split).
    fn id(&self) -> &str;
    /// The task's sentence (`put a clean knife in countertop`).
    fn sentence(&self) -> String;
    /// Its step limit.
    fn step_limit(&self) -> usize;
    /// The game to play (with the step limit applied) and its goal.
    fn open(&self) -> Result<(HouseholdGame, GoalSpec), String>;
}

impl HouseholdTask for TaskSpec {
    fn id(&self) -> &str {
        &self.id
    }
    fn sentence(&self) -> String {
        TaskSpec::sentence(self)
    }
    fn step_limit(&self) -> usize {
        self.step_limit
    }
    fn open(&self) -> Result<(HouseholdGame, GoalSpec), String> {
        let env = HouseholdGame::from_task(self)
            .map_err(|e| format!("task {}: {e}", self.id))?
            .with_step_limit(self.step_limit);
        let goal =
            GoalSpec::from_task(env.world(), self).map_err(|e| format!("task {}: {e}", self.id))?;
        Ok((env, goal))
    }
}

/// A game folder as a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameTask {
    /// The id: the folder's path below the root it was found under (a rewrite's: its own).
    pub id: String,
    /// The folder holding `game.tw-pddl` and `traj_data.json`.
    pub game_dir: PathBuf,
    /// The task's sentence, read from the game's grammar.
    pub sentence: String,
    /// Step limit.
    pub step_limit: usize,
    /// The id of the task it was rewritten from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

impl GameTask {
    /// Reads the game folder `dir` as a task named `id`: the game must load, carry a
    /// `traj_data.json`, and the two must agree (the goal's classes are in the scene and the
    /// grammar's sentence names them). Errors name the folder.
    pub fn read(dir: &Path, id: String, step_limit: usize) -> Result<GameTask, String> {
        let (g, _) = load_checked(dir)?;
        Ok(GameTask {
            id,
            game_dir: dir.to_path_buf(),
            sentence: g.world.task.clone(),
            step_limit,
            parent: None,
        })
    }
}

/// Loads a game folder and its goal, checking that `traj_data.json` agrees with the game (the
/// one check of a game folder, whether it is trained on or evaluated).
pub fn load_checked(dir: &Path) -> Result<(GameFile, GoalSpec), String> {
    let g = GameFile::load(dir).map_err(|e| e.to_string())?;
    let traj = g.traj.as_ref().ok_or_else(|| {
        format!(
            "{}: no traj_data.json beside the game (it names the goal)",
            dir.display()
        )
    })?;
    let goal = GoalSpec::from_traj(&g.world, traj).map_err(|e| {
        format!(
            "{}: traj_data.json disagrees with the game: {e}",
            dir.display()
        )
    })?;
    let sentence = g.world.task.to_ascii_lowercase();
    let p = &traj.pddl_params;
    for (what, class) in [
        ("object_target", &p.object_target),
        ("parent_target", &p.parent_target),
    ] {
        let c = class.to_ascii_lowercase();
        if !c.is_empty()
            && !sentence
                .split(|ch: char| !ch.is_ascii_alphanumeric())
                .any(|w| w == c)
        {
            return Err(format!(
                "{}: traj_data.json disagrees with the game: its {what} {class:?} is not in the game's task {:?}",
                dir.display(),
                g.world.task
            ));
        }
    }
    Ok((g, goal))
}

impl HouseholdTask for GameTask {
    fn id(&self) -> &str {
        &self.id
    }
    fn sentence(&self) -> String {
        self.sentence.clone()
    }
    fn step_limit(&self) -> usize {
        self.step_limit
    }
    fn open(&self) -> Result<(HouseholdGame, GoalSpec), String> {
        let (g, goal) = load_checked(&self.game_dir)?;
        Ok((
            HouseholdGame::new(g.world).with_step_limit(self.step_limit),
            goal,
        ))
    }
}

/// A household task from either source. Serialised as the source's own fields (a generated
/// task's JSON is the same as before game folders were a source).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HouseTask {
    /// A game folder (tried first: it alone has `game_dir`).
    Game(GameTask),
    /// A generated task.
    Generated(TaskSpec),
}

impl HouseTask {
    /// The id of the task it was rewritten from, if any.
    pub fn parent(&self) -> Option<&str> {
        match self {
            HouseTask::Game(g) => g.parent.as_deref(),
            HouseTask::Generated(t) => t.parent.as_deref(),
        }
    }

    /// Sets the step limit.
    pub fn set_step_limit(&mut self, limit: usize) {
        match self {
            HouseTask::Game(g) => g.step_limit = limit,
            HouseTask::Generated(t) => t.step_limit = limit,
        }
    }
}

impl HouseholdTask for HouseTask {
    fn id(&self) -> &str {
        match self {
            HouseTask::Game(g) => &g.id,
            HouseTask::Generated(t) => &t.id,
        }
    }
    fn sentence(&self) -> String {
        match self {
            HouseTask::Game(g) => g.sentence(),
            HouseTask::Generated(t) => t.sentence(),
        }
    }
    fn step_limit(&self) -> usize {
        match self {
            HouseTask::Game(g) => g.step_limit,
            HouseTask::Generated(t) => t.step_limit,
        }
    }
    fn open(&self) -> Result<(HouseholdGame, GoalSpec), String> {
        match self {
            HouseTask::Game(g) => g.open(),
            HouseTask::Generated(t) => t.open(),
        }
    }
}

/// A path as a config writes it: a leading `~` is the home folder and `$NAME` / `${NAME}` an
/// environment variable (an unset one is an error that names it). A variable that begins the
/// path and holds a relative path (`ALFWORLD_DATA=data/alfworld`) is read from the current
/// folder, where the shell that set it stands, not from the config's.
pub fn expand_path(s: &str) -> Result<PathBuf, String> {
    let mut out = String::new();
    let mut rest = s;
    if let Some(r) = rest.strip_prefix('~') {
        if r.is_empty() || r.starts_with('/') {
            let home = std::env::var("HOME")
                .map_err(|_| format!("{s:?}: `~` names the home folder, but HOME is not set"))?;
            out.push_str(&home);
            rest = r;
        }
    }
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            let j = b
                .find('}')
                .ok_or_else(|| format!("{s:?}: `${{` without its `}}`"))?;
            (&b[..j], &b[j + 1..])
        } else {
            let j = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..j], &after[j..])
        };
        if name.is_empty() {
            return Err(format!("{s:?}: `$` without a variable's name"));
        }
        let v = std::env::var(name)
            .map_err(|_| format!("{s:?}: the environment variable {name} is not set"))?;
        if i == 0 && out.is_empty() && !v.is_empty() && Path::new(&v).is_relative() {
            let here = std::env::current_dir().map_err(|e| {
                format!(
                    "{s:?}: {name} = {v:?} is relative and the current folder cannot be read: {e}"
                )
            })?;
            out.push_str(&here.join(&v).to_string_lossy());
        } else {
            out.push_str(&v);
        }
        rest = tail;
    }
    out.push_str(rest);
    Ok(PathBuf::from(out))
}

/// The game folders under `root` (ALFWorld's layout, found recursively, links not followed) as
/// (id, folder) pairs, in path order; the id is the folder's path below `root`. No game folder
/// at all is an error naming `root`.
pub fn game_ids(root: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let folders = game_folders(root).map_err(|e| e.to_string())?;
    if folders.is_empty() {
        return Err(format!(
            "{} holds no game folder (a folder with game.tw-pddl and traj_data.json, as in ALFWorld's json_2.1.1/train)",
            root.display()
        ));
    }
    Ok(folders
        .into_iter()
        .map(|f| {
            let id = f
                .strip_prefix(root)
                .ok()
                .map(|p| p.to_string_lossy().into_owned())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| {
                    f.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                });
            (id, f)
        })
        .collect())
}

/// Game folders read as tasks: each must load and agree with its `traj_data.json`. With `skip`,
/// a game that does not is left out and counted (the second value, with the first reason);
/// without, it is an error naming it.
pub fn read_games(
    folders: &[(String, PathBuf)],
    step_limit: usize,
    skip: bool,
) -> Result<(Vec<GameTask>, usize, Option<String>), String> {
    let mut out = Vec::with_capacity(folders.len());
    let (mut skipped, mut first) = (0, None);
    for (id, dir) in folders {
        match GameTask::read(dir, id.clone(), step_limit) {
            Ok(g) => out.push(g),
            Err(e) if skip => {
                skipped += 1;
                first.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    Ok((out, skipped, first))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/alfworld-traces/00-pick_and_place_simple-kitchen")
    }

    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for f in ["game.tw-pddl", "traj_data.json"] {
            std::fs::copy(from.join(f), to.join(f)).unwrap();
        }
    }

    #[test]
    fn paths_expand_home_and_variables_and_name_what_is_unset() {
        std::env::set_var("RLA_TEST_DATA_ROOT", "/data/alf");
        assert_eq!(
            expand_path("$RLA_TEST_DATA_ROOT/json_2.1.1/train").unwrap(),
            PathBuf::from("/data/alf/json_2.1.1/train")
        );
        assert_eq!(
            expand_path("${RLA_TEST_DATA_ROOT}x").unwrap(),
            PathBuf::from("/data/alfx")
        );
        let home = std::env::var("HOME").unwrap();
        assert_eq!(
            expand_path("~/games").unwrap(),
            PathBuf::from(format!("{home}/games"))
        );
        assert_eq!(expand_path("a~b").unwrap(), PathBuf::from("a~b"));
        let e = expand_path("$RLA_TEST_SURELY_UNSET/train").unwrap_err();
        assert!(e.contains("RLA_TEST_SURELY_UNSET is not set"), "{e}");
        assert!(expand_path("${X").unwrap_err().contains("without its"));
        // a relative value that begins the path is the current folder's
        std::env::set_var("RLA_TEST_REL_ROOT", "data/alf");
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            expand_path("$RLA_TEST_REL_ROOT/json_2.1.1/train").unwrap(),
            here.join("data/alf/json_2.1.1/train")
        );
        assert_eq!(
            expand_path("games/$RLA_TEST_REL_ROOT").unwrap(),
            PathBuf::from("games/data/alf")
        );
    }

    #[test]
    fn game_folders_become_tasks_and_bad_ones_are_named_or_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("train");
        // ALFWorld's two levels: TASK/trial_ID
        copy(&fixture(), &root.join("pick_and_place_simple-X/trial_1"));
        let empty = tmp.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let e = game_ids(&empty).unwrap_err();
        assert!(
            e.contains("holds no game folder") && e.contains("empty"),
            "{e}"
        );

        let ids = game_ids(&root).unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(ids[0].0, "pick_and_place_simple-X/trial_1");
        let (games, skipped, _) = read_games(&ids, 30, false).unwrap();
        assert_eq!(skipped, 0);
        let g = &games[0];
        assert_eq!(g.step_limit, 30);
        let (env, goal) = g.open().unwrap();
        assert!(env.world().task.contains(&g.sentence));
        assert!(
            !super::super::expert::plan(env.world(), &env.world().initial, &goal)
                .unwrap()
                .is_empty()
        );
        // the task serialises as a game, and a generated task's JSON still reads as one
        let t = HouseTask::Game(g.clone());
        let back: HouseTask = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        let spec = super::super::splits::train_tasks(1, 0).remove(0);
        let back: HouseTask = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, HouseTask::Generated(spec));

        // a game that does not load, and one whose traj_data.json names another goal
        let broken = root.join("broken/trial_1");
        copy(&fixture(), &broken);
        std::fs::write(broken.join("game.tw-pddl"), "{not json").unwrap();
        let other = root.join("other/trial_1");
        copy(&fixture(), &other);
        let mut traj: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(other.join("traj_data.json")).unwrap())
                .unwrap();
        let target = traj["pddl_params"]["object_target"]
            .as_str()
            .unwrap()
            .to_string();
        // a class the scene holds but the task does not name
        let g0 = GameFile::load(&other).unwrap();
        let class = g0
            .world
            .types
            .iter()
            .map(|t| t.trim_end_matches("Type").to_string())
            .find(|c| {
                *c != target
                    && !g0
                        .world
                        .task
                        .to_ascii_lowercase()
                        .contains(&c.to_ascii_lowercase())
                    && GoalSpec::from_names(
                        &g0.world,
                        super::super::task::GoalKind::PickAndPlaceSimple,
                        c,
                        traj["pddl_params"]["parent_target"].as_str(),
                        None,
                    )
                    .is_ok()
            })
            .expect("another object class");
        traj["pddl_params"]["object_target"] = class.clone().into();
        std::fs::write(other.join("traj_data.json"), traj.to_string()).unwrap();

        let ids = game_ids(&root).unwrap();
        assert_eq!(ids.len(), 3);
        let e = read_games(&ids, 30, false).unwrap_err();
        assert!(e.contains("broken/trial_1"), "{e}");
        let only_other: Vec<_> = ids
            .iter()
            .filter(|(i, _)| i.starts_with("other"))
            .cloned()
            .collect();
        let e = read_games(&only_other, 30, false).unwrap_err();
        assert!(
            e.contains("other/trial_1") && e.contains("disagrees") && e.contains(&class),
            "{e}"
        );
        let (games, skipped, first) = read_games(&ids, 30, true).unwrap();
        assert_eq!((games.len(), skipped), (1, 2));
        assert!(first.unwrap().contains("broken"));
    }
}
