//! ALFWorld game files and the [`HouseholdGame`] environment.

use super::pddl::{parse_problem, parse_sexps};
use super::task::GoalKind;
use super::world::{Action, State, World, NOTHING_HAPPENS};
use crate::EnvError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `traj_data.json`: the task type and its parameters, as ALFWorld writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrajData {
    /// One of the six ALFWorld task types.
    pub task_type: String,
    /// The goal's parameters.
    pub pddl_params: PddlParams,
}

/// The goal parameters in `traj_data.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PddlParams {
    /// Object class (`Apple`).
    #[serde(default)]
    pub object_target: String,
    /// Receptacle class (`CounterTop`); empty for `look_at_obj_in_light`.
    #[serde(default)]
    pub parent_target: String,
    /// Lamp class for `look_at_obj_in_light`.
    #[serde(default)]
    pub toggle_target: String,
    /// Movable receptacle class (unused by the six task types here).
    #[serde(default)]
    pub mrecep_target: String,
    /// Whether the object must be sliced.
    #[serde(default)]
    pub object_sliced: bool,
}

/// The JSON of a `game.tw-pddl` file.
#[derive(Debug, Clone, Deserialize)]
struct RawGame {
    #[serde(default)]
    pddl_domain: Option<String>,
    pddl_problem: String,
    grammar: String,
    #[serde(default)]
    walkthrough: Vec<String>,
}

/// A loaded game: its world and, when present, its `traj_data.json`.
#[derive(Debug, Clone)]
pub struct GameFile {
    /// The file it came from.
    pub path: PathBuf,
    /// The world.
    pub world: Arc<World>,
    /// `traj_data.json` beside the game, if there is one.
    pub traj: Option<TrajData>,
    /// The walkthrough stored in the game file, if any.
    pub walkthrough: Vec<String>,
}

/// The actions of ALFWorld's domain that this engine carries out itself.
const DOMAIN_ACTIONS: [&str; 14] = [
    "look",
    "inventory",
    "examinereceptacle",
    "examineobject",
    "gotolocation",
    "openobject",
    "closeobject",
    "pickupobject",
    "putobject",
    "cleanobject",
    "heatobject",
    "coolobject",
    "toggleobject",
    "sliceobject",
];

/// Checks a game's `pddl_domain`: the engine plays ALFWorld's `alfred` domain with its own rules,
/// so a game must declare that domain and its actions; any other domain (or none) is refused
/// rather than played by rules it does not state.
pub fn check_domain(text: &str) -> Result<(), String> {
    let sexps = parse_sexps(text)?;
    let def = sexps
        .iter()
        .find(|s| s.head().as_deref() == Some("define"))
        .ok_or("no (define (domain …) …) in it")?;
    let items = def.list().unwrap_or_default();
    let name = items
        .get(1)
        .filter(|d| d.head().as_deref() == Some("domain"))
        .and_then(|d| d.list()?.get(1)?.atom())
        .ok_or("no (domain NAME) after define")?;
    if !name.eq_ignore_ascii_case("alfred") {
        return Err(format!(
            "domain {name:?}: this engine plays ALFWorld's domain \"alfred\" only"
        ));
    }
    let actions: Vec<String> = items
        .iter()
        .filter(|s| s.head().as_deref() == Some(":action"))
        .filter_map(|s| s.list()?.get(1)?.atom().map(str::to_ascii_lowercase))
        .collect();
    let missing: Vec<&str> = DOMAIN_ACTIONS
        .iter()
        .copied()
        .filter(|a| !actions.iter().any(|x| x == a))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "domain alfred lacks the actions {}",
            missing.join(", ")
        ));
    }
    Ok(())
}

/// The task sentence from a TextWorld grammar: the `rhs` of its `task` rule.
pub fn task_from_grammar(grammar: &str) -> Result<String, String> {
    let start = grammar
        .find("\"\"\"")
        .ok_or("no grammar block (\"\"\" … \"\"\")")?
        + 3;
    let end = grammar[start..]
        .find("\"\"\"")
        .ok_or("unterminated grammar block")?
        + start;
    let v: serde_json::Value = serde_json::from_str(&grammar[start..end])
        .map_err(|e| format!("grammar block is not JSON: {e}"))?;
    v.get("task")
        .and_then(|t| t.get(0))
        .and_then(|t| t.get("rhs"))
        .and_then(|t| t.as_str())
        .map(str::to_string)
        .ok_or_else(|| "no task rule (task[0].rhs)".to_string())
}

impl GameFile {
    /// Loads `game.tw-pddl` (a file, or a folder holding one) and the `traj_data.json` beside it.
    ///
    /// A `traj_data.json` whose `task_type` is not one of the six goal types is an error.
    pub fn load(path: impl AsRef<Path>) -> Result<GameFile, EnvError> {
        let mut path = path.as_ref().to_path_buf();
        if path.is_dir() {
            path = path.join("game.tw-pddl");
        }
        let text = EnvError::read(&path)?;
        let raw: RawGame = serde_json::from_str(&text)
            .map_err(|e| EnvError::invalid(&path, "json", e.to_string()))?;
        match raw.pddl_domain.as_deref() {
            None => {
                return Err(EnvError::invalid(
                    &path,
                    "pddl_domain",
                    "missing: a game file states its PDDL domain",
                ))
            }
            Some(d) => check_domain(d).map_err(|e| EnvError::invalid(&path, "pddl_domain", e))?,
        }
        let task =
            task_from_grammar(&raw.grammar).map_err(|e| EnvError::invalid(&path, "grammar", e))?;
        let problem = parse_problem(&raw.pddl_problem)
            .map_err(|e| EnvError::invalid(&path, "pddl_problem", e))?;
        let world = World::from_problem(&problem, &task)
            .map_err(|e| EnvError::invalid(&path, "pddl_problem", e))?;
        let traj_path = path.with_file_name("traj_data.json");
        let traj = if traj_path.exists() {
            let t = EnvError::read(&traj_path)?;
            let traj: TrajData = serde_json::from_str(&t)
                .map_err(|e| EnvError::invalid(&traj_path, "json", e.to_string()))?;
            if GoalKind::parse(&traj.task_type).is_none() {
                let known: Vec<&str> = GoalKind::ALL.iter().map(|g| g.as_str()).collect();
                return Err(EnvError::invalid(
                    &traj_path,
                    "task_type",
                    format!(
                        "unknown goal type {:?} (known: {})",
                        traj.task_type,
                        known.join(", ")
                    ),
                ));
            }
            Some(traj)
        } else {
            None
        };
        Ok(GameFile {
            path,
            world: Arc::new(world),
            traj,
            walkthrough: raw.walkthrough,
        })
    }
}

/// What a step returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepResult {
    /// The environment's feedback text.
    pub feedback: String,
    /// Whether the goal holds now.
    pub won: bool,
    /// Whether the episode is over (won, or the step limit was reached).
    pub done: bool,
}

/// The household environment: one episode of one world.
#[derive(Debug, Clone)]
pub struct HouseholdGame {
    world: Arc<World>,
    state: State,
    won: bool,
    steps: usize,
    max_steps: Option<usize>,
    cache: Vec<(String, Action)>,
    commands: Vec<String>,
    fresh: bool,
}

impl HouseholdGame {
    /// A new environment on a world, with no step limit (ALFWorld's engine has none).
    pub fn new(world: Arc<World>) -> Self {
        let state = world.initial.clone();
        HouseholdGame {
            world,
            state,
            won: false,
            steps: 0,
            max_steps: None,
            cache: Vec::new(),
            commands: Vec::new(),
            fresh: false,
        }
    }

    /// A new environment for a generated task, with the task's step limit.
    pub fn from_task(task: &super::task::TaskSpec) -> Result<Self, super::task::SpecError> {
        Ok(HouseholdGame::new(Arc::new(task.build()?)).with_step_limit(task.step_limit))
    }

    /// Sets a step limit: the episode is `done` after that many steps.
    pub fn with_step_limit(mut self, limit: usize) -> Self {
        self.max_steps = Some(limit);
        self
    }

    /// The world.
    pub fn world(&self) -> &Arc<World> {
        &self.world
    }

    /// The current state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Steps taken in this episode.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Whether the goal holds.
    pub fn won(&self) -> bool {
        self.won
    }

    /// Whether the episode is over: won, or the step limit reached.
    pub fn done(&self) -> bool {
        self.won || self.max_steps.is_some_and(|m| self.steps >= m)
    }

    fn refresh(&mut self) {
        if !self.fresh {
            self.world.actions(&self.state, &mut self.cache);
            self.commands.clear();
            self.commands
                .extend(self.cache.iter().map(|(c, _)| c.clone()));
            self.fresh = true;
        }
    }

    /// The action a command names, if it is admissible now.
    pub fn parse(&mut self, command: &str) -> Option<Action> {
        self.refresh();
        let c = command.trim();
        self.cache
            .binary_search_by(|(s, _)| s.as_str().cmp(c))
            .ok()
            .map(|i| self.cache[i].1)
    }

    /// Applies an admissible action directly.
    pub fn apply(&mut self, a: Action) -> StepResult {
        let feedback = self.world.apply(&mut self.state, a);
        self.fresh = false;
        self.finish_step(feedback)
    }

    fn finish_step(&mut self, feedback: String) -> StepResult {
        self.steps += 1;
        self.won = self.world.goal_reached(&self.state);
        StepResult {
            feedback,
            won: self.won,
            done: self.done(),
        }
    }
}

/// The game as a text environment: ALFWorld's `reset`, `step`, admissible commands and task.
impl HouseholdGame {
    /// Starts an episode and returns the first observation.
    pub fn reset(&mut self) -> String {
        self.state = self.world.initial.clone();
        self.steps = 0;
        self.fresh = false;
        self.won = self.world.goal_reached(&self.state);
        self.world.intro(&self.state)
    }

    /// Sends one command.
    pub fn step(&mut self, command: &str) -> StepResult {
        match self.parse(command) {
            Some(a) => self.apply(a),
            None => self.finish_step(NOTHING_HAPPENS.to_string()),
        }
    }

    /// The commands admissible now, sorted.
    pub fn admissible(&mut self) -> &[String] {
        self.refresh();
        &self.commands
    }

    /// The task sentence.
    pub fn task(&self) -> &str {
        &self.world.task
    }
}

/// How deep [`game_folders`] looks under its folder (ALFWorld's layout needs four levels:
/// `json_2.1.1/<split>/<task>/<trial>/`).
pub const MAX_GAME_DEPTH: usize = 16;

/// The game folders under `dir` (those holding a `game.tw-pddl`), in path order, found as
/// ALFWorld's data lays them out (`json_2.1.1/<split>/<task>/<trial>/game.tw-pddl`) or one level
/// deep. Symbolic links to folders are not followed (a link to `.` or to `/` would walk for ever or
/// count a game twice), and the walk stops [`MAX_GAME_DEPTH`] levels down.
pub fn game_folders(dir: &Path) -> Result<Vec<PathBuf>, EnvError> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| EnvError::Io {
            path: d.clone(),
            source,
        })?;
        for e in entries {
            let e = e.map_err(|source| EnvError::Io {
                path: d.clone(),
                source,
            })?;
            let kind = e.file_type().map_err(|source| EnvError::Io {
                path: e.path(),
                source,
            })?;
            if kind.is_dir() && depth < MAX_GAME_DEPTH {
                stack.push((e.path(), depth + 1));
            } else if e.file_name() == "game.tw-pddl" && !kind.is_dir() {
                out.push(d.clone());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}
