//! The household: ALFWorld's game files played natively, one game at a time or many at once.

use crate::{env_error, json_value, parse_json, value_error};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use rayon::prelude::*;
use rla_core::Split;
use rla_env::household::expert::{plan_commands, progress_label, GoalSpec, SearchExpert};
use rla_env::household::splits::{eval_tasks, train_tasks};
use rla_env::household::StepResult;
use rla_env::household::{GameFile, HouseholdGame, TaskSpec};
use std::path::PathBuf;
use std::sync::OnceLock;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyHousehold>()?;
    m.add_class::<PyBatch>()?;
    m.add_function(wrap_pyfunction!(train_task_specs, m)?)?;
    m.add_function(wrap_pyfunction!(eval_task_specs, m)?)?;
    m.add_function(wrap_pyfunction!(game_files_of_spec, m)?)?;
    m.add_function(wrap_pyfunction!(restore_household, m)?)?;
    Ok(())
}

/// Sets the keys every household's `info` holds: one value each for a household, one list each
/// for a batch.
fn fill_info<'py>(
    d: &Bound<'py, PyDict>,
    admissible: impl IntoPyObject<'py>,
    won: impl IntoPyObject<'py>,
    steps: impl IntoPyObject<'py>,
    gamefile: impl IntoPyObject<'py>,
) -> PyResult<()> {
    d.set_item("admissible_commands", admissible)?;
    d.set_item("won", won)?;
    d.set_item("steps", steps)?;
    d.set_item("gamefile", gamefile)
}

/// Where a household came from, to rebuild it (pickling).
#[derive(Clone)]
enum Source {
    Game(PathBuf),
    Spec(Box<TaskSpec>),
}

/// One household episode: a world, its state, and what the experts know of its goal.
#[pyclass(module = "rlanything._native", name = "Household", subclass)]
#[derive(Clone)]
pub struct PyHousehold {
    env: HouseholdGame,
    source: Source,
    step_limit: Option<usize>,
    goal: Option<GoalSpec>,
    searcher: SearchExpert,
    gamefile: Option<String>,
    walkthrough: Vec<String>,
    /// The commands sent since the last reset.
    history: Vec<String>,
}

impl PyHousehold {
    fn new(
        env: HouseholdGame,
        source: Source,
        step_limit: Option<usize>,
        goal: Option<GoalSpec>,
        walkthrough: Vec<String>,
    ) -> Self {
        let gamefile = match &source {
            Source::Game(p) => Some(p.display().to_string()),
            Source::Spec(_) => None,
        };
        let mut h = PyHousehold {
            searcher: SearchExpert::new(env.world()),
            env,
            source,
            step_limit,
            goal,
            gamefile,
            walkthrough,
            history: Vec::new(),
        };
        h.restart();
        h
    }

    fn load(source: Source, step_limit: Option<usize>) -> PyResult<Self> {
        match source {
            Source::Game(path) => {
                let game = GameFile::load(&path).map_err(env_error)?;
                let goal = GoalSpec::from_game(&game).ok();
                let mut env = HouseholdGame::new(game.world.clone());
                if let Some(limit) = step_limit {
                    if limit == 0 {
                        return Err(value_error("step_limit = 0: must be at least 1"));
                    }
                    env = env.with_step_limit(limit);
                }
                Ok(Self::new(
                    env,
                    Source::Game(game.path),
                    step_limit,
                    goal,
                    game.walkthrough,
                ))
            }
            Source::Spec(spec) => {
                let env = HouseholdGame::from_task(&spec).map_err(value_error)?;
                let goal = GoalSpec::from_task(env.world(), &spec).map_err(value_error)?;
                Ok(Self::new(
                    env,
                    Source::Spec(spec),
                    None,
                    Some(goal),
                    Vec::new(),
                ))
            }
        }
    }

    fn restart(&mut self) -> String {
        self.searcher = SearchExpert::new(self.env.world());
        self.history.clear();
        self.env.reset()
    }

    /// One step, with the searching expert shown what it revealed.
    fn play(&mut self, command: &str) -> StepResult {
        let action = self.env.parse(command);
        let step = self.env.step(command);
        if let Some(a) = action {
            self.searcher.observe(self.env.world(), self.env.state(), a);
        }
        self.history.push(command.to_string());
        step
    }

    fn info<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let (won, steps) = (self.env.won(), self.env.steps());
        fill_info(
            &d,
            self.env.admissible(),
            won,
            steps,
            self.gamefile.as_deref(),
        )?;
        Ok(d)
    }

    fn goal(&self) -> PyResult<&GoalSpec> {
        self.goal.as_ref().ok_or_else(|| {
            value_error(format!(
                "{}: the expert needs the goal, and this game has no traj_data.json beside it",
                self.gamefile.as_deref().unwrap_or("the game")
            ))
        })
    }

    fn plan(&self) -> PyResult<Vec<String>> {
        plan_commands(self.env.world(), self.env.state(), self.goal()?)
            .ok_or_else(|| value_error("the expert finds no plan from this state"))
    }

    fn search_next(&self) -> PyResult<Option<String>> {
        let goal = self.goal()?;
        if self.env.won() {
            return Ok(None);
        }
        let (w, st) = (self.env.world(), self.env.state());
        Ok(self
            .searcher
            .next(w, st, goal)
            .and_then(|a| w.command(st, a)))
    }
}

#[pymethods]
impl PyHousehold {
    /// Loads an ALFWorld game: a folder holding `game.tw-pddl` (and `traj_data.json`, which the
    /// experts need), or the `game.tw-pddl` file itself. ALFWorld's engine has no step limit;
    /// `step_limit` sets one.
    #[staticmethod]
    #[pyo3(signature = (path, step_limit=None))]
    fn from_game(path: PathBuf, step_limit: Option<usize>) -> PyResult<Self> {
        Self::load(Source::Game(path), step_limit)
    }

    /// A generated task from its spec: a dictionary as `train_specs` returns, or its JSON text.
    /// The spec's `step_limit` applies.
    #[staticmethod]
    fn from_spec(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::load(Source::Spec(Box::new(parse_json(spec, "task spec")?)), None)
    }

    /// Starts the episode again: `(observation, info)`, the observation ALFWorld's text and
    /// `info` holding `admissible_commands` (sorted), `won`, `steps` and `gamefile`.
    fn reset<'py>(&mut self, py: Python<'py>) -> PyResult<(String, Bound<'py, PyDict>)> {
        let obs = self.restart();
        Ok((obs, self.info(py)?))
    }

    /// Sends one command: `(observation, score, done, info)`. The score is 1.0 once the goal
    /// holds and 0.0 before, as ALFWorld's; a command that is not admissible changes nothing
    /// and reads "Nothing happens.", as in ALFWorld.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        command: &str,
    ) -> PyResult<(String, f64, bool, Bound<'py, PyDict>)> {
        let StepResult {
            feedback,
            won,
            done,
        } = self.play(command);
        Ok((feedback, f64::from(u8::from(won)), done, self.info(py)?))
    }

    /// The commands admissible now, sorted.
    #[getter]
    fn admissible_commands(&mut self) -> Vec<String> {
        self.env.admissible().to_vec()
    }

    /// The task sentence.
    #[getter]
    fn task(&self) -> String {
        self.env.task().to_string()
    }

    /// Whether the goal holds now.
    #[getter]
    fn won(&self) -> bool {
        self.env.won()
    }

    /// Whether the episode is over: won, or the step limit reached.
    #[getter]
    fn done(&self) -> bool {
        self.env.done()
    }

    /// Steps taken in this episode.
    #[getter]
    fn steps(&self) -> usize {
        self.env.steps()
    }

    /// The game file this came from (`None` for a generated task).
    #[getter]
    fn gamefile(&self) -> Option<String> {
        self.gamefile.clone()
    }

    /// The walkthrough stored in the game file (empty when it has none).
    #[getter]
    fn walkthrough(&self) -> Vec<String> {
        self.walkthrough.clone()
    }

    /// The generated task's spec as a dictionary (`None` for a game file).
    #[getter]
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.source {
            Source::Spec(s) => {
                json_value(py, &serde_json::to_string(s).expect("specs serialise")).map(Some)
            }
            Source::Game(_) => Ok(None),
        }
    }

    /// The expert's shortest plan from the current state, as commands; empty once the goal
    /// holds. It knows where every object is. `ValueError` when the goal cannot be reached or
    /// is unknown.
    fn expert_plan(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        py.detach(|| self.plan())
    }

    /// The next command of the searching expert, which knows only what this episode has shown
    /// (receptacles looked into, the task's hint) and searches the rest in order; `None` once
    /// the goal holds.
    fn expert_next(&self) -> PyResult<Option<String>> {
        self.search_next()
    }

    /// The oracle label of a command from the current state, without playing it: whether it
    /// shortens the expert's remaining plan. A command that is not admissible is `False`.
    fn oracle_label(&mut self, py: Python<'_>, command: &str) -> PyResult<bool> {
        let goal = *self.goal()?;
        let Some(action) = self.env.parse(command) else {
            return Ok(false);
        };
        let world = self.env.world().clone();
        let before = self.env.state().clone();
        Ok(py.detach(|| {
            let mut after = before.clone();
            world.apply(&mut after, action);
            progress_label(&world, &before, &after, &goal)
        }))
    }

    /// An independent copy, in the same state.
    fn copy(&self) -> Self {
        self.clone()
    }

    fn __copy__(&self) -> Self {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
        self.clone()
    }

    /// Pickles as its source (the game's path, or the spec), its step limit and the commands
    /// of the episode so far, which the engine replays exactly.
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let restore = py
            .import("rlanything._native")?
            .getattr("restore_household")?;
        let (kind, source) = match &self.source {
            Source::Game(p) => ("game", p.display().to_string()),
            Source::Spec(s) => ("spec", serde_json::to_string(s).expect("specs serialise")),
        };
        let args = (kind, source, self.step_limit, self.history.clone()).into_pyobject(py)?;
        Ok((restore, args))
    }

    fn __repr__(&self) -> String {
        format!(
            "Household({:?}, steps={}, won={})",
            self.env.task(),
            self.env.steps(),
            self.env.won()
        )
    }
}

/// Rebuilds a pickled household: loads its source and replays its commands.
#[pyfunction]
fn restore_household(
    kind: &str,
    source: &str,
    step_limit: Option<usize>,
    history: Vec<String>,
) -> PyResult<PyHousehold> {
    let source = match kind {
        "game" => Source::Game(PathBuf::from(source)),
        "spec" => Source::Spec(Box::new(
            serde_json::from_str(source).map_err(|e| value_error(format!("task spec: {e}")))?,
        )),
        other => return Err(value_error(format!("unknown household source {other:?}"))),
    };
    let mut h = PyHousehold::load(source, step_limit)?;
    for c in &history {
        h.play(c);
    }
    Ok(h)
}

/// What a batch step returns: observations (`None` for a household left as it was), scores,
/// dones and the infos as a dictionary of lists.
type BatchStep<'py> = (Vec<Option<String>>, Vec<f64>, Vec<bool>, Bound<'py, PyDict>);

/// Batches smaller than this step on the calling thread: waking threads costs more than a
/// few households' steps.
const PARALLEL_FROM: usize = 128;

/// The batches' own threads, so that they never wait behind sandbox runs on rayon's global
/// pool.
fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("rla-household-{i}"))
            .build()
            .expect("the household threads start")
    })
}

/// Many households stepped together on Rust threads.
#[pyclass(module = "rlanything._native", name = "HouseholdBatch", subclass)]
pub struct PyBatch {
    envs: Vec<PyHousehold>,
}

impl PyBatch {
    /// Runs `f` on every household with its command (or `None`), on the batches' threads when
    /// the batch is large enough to pay for waking them, with the GIL released; the admissible
    /// commands are computed there too, and [`PyBatch::infos`] reads them without copying.
    fn each<T: Send>(
        &mut self,
        py: Python<'_>,
        commands: Option<&[Option<String>]>,
        f: impl Fn(&mut PyHousehold, Option<&str>) -> T + Sync,
    ) -> Vec<T> {
        let f = |e: &mut PyHousehold, c: Option<&String>| {
            let out = f(e, c.map(String::as_str));
            e.env.admissible();
            out
        };
        let none = vec![None; self.envs.len()];
        let commands = commands.unwrap_or(&none);
        py.detach(|| {
            if self.envs.len() < PARALLEL_FROM {
                self.envs
                    .iter_mut()
                    .zip(commands)
                    .map(|(e, c)| f(e, c.as_ref()))
                    .collect()
            } else {
                pool().install(|| {
                    self.envs
                        .par_iter_mut()
                        .zip(commands.par_iter())
                        .map(|(e, c)| f(e, c.as_ref()))
                        .collect()
                })
            }
        })
    }

    fn infos<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let admissible = PyList::empty(py);
        for e in &mut self.envs {
            admissible.append(e.env.admissible())?;
        }
        let d = PyDict::new(py);
        fill_info(
            &d,
            admissible,
            self.envs.iter().map(|e| e.env.won()).collect::<Vec<_>>(),
            self.envs.iter().map(|e| e.env.steps()).collect::<Vec<_>>(),
            self.envs
                .iter()
                .map(|e| e.gamefile.as_deref())
                .collect::<Vec<_>>(),
        )?;
        Ok(d)
    }
}

#[pymethods]
impl PyBatch {
    /// A batch of copies of the given households.
    #[new]
    fn new(envs: Vec<PyRef<'_, PyHousehold>>) -> PyResult<Self> {
        if envs.is_empty() {
            return Err(value_error("a batch needs at least one household"));
        }
        Ok(PyBatch {
            envs: envs.iter().map(|e| (**e).clone()).collect(),
        })
    }

    fn __len__(&self) -> usize {
        self.envs.len()
    }

    /// Resets every household: `(observations, infos)`, `infos` a dictionary of lists
    /// (`admissible_commands`, `won`, `steps`, `gamefile`), as ALFWorld's batch environment.
    fn reset<'py>(&mut self, py: Python<'py>) -> PyResult<(Vec<String>, Bound<'py, PyDict>)> {
        let obs = self.each(py, None, |e, _| e.restart());
        Ok((obs, self.infos(py)?))
    }

    /// Steps household `i` with `commands[i]` in parallel: `(observations, scores, dones,
    /// infos)`. `None` leaves a household as it is: its observation is then `None`, its score
    /// and done as they stand.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        commands: Vec<Option<String>>,
    ) -> PyResult<BatchStep<'py>> {
        if commands.len() != self.envs.len() {
            return Err(value_error(format!(
                "{} commands for {} households: give one per household (None to skip one)",
                commands.len(),
                self.envs.len()
            )));
        }
        let steps = self.each(py, Some(&commands), |e, c| match c {
            Some(c) => {
                let s = e.play(c);
                (Some(s.feedback), s.won, s.done)
            }
            None => (None, e.env.won(), e.env.done()),
        });
        let mut obs = Vec::with_capacity(steps.len());
        let mut scores = Vec::with_capacity(steps.len());
        let mut dones = Vec::with_capacity(steps.len());
        for (o, won, done) in steps {
            obs.push(o);
            scores.push(f64::from(u8::from(won)));
            dones.push(done);
        }
        Ok((obs, scores, dones, self.infos(py)?))
    }

    /// Every household's shortest plan (`expert_plan`), computed in parallel; `None` where the
    /// goal is unknown or cannot be reached.
    fn expert_plans(&mut self, py: Python<'_>) -> Vec<Option<Vec<String>>> {
        self.each(py, None, |e, _| e.plan().ok())
    }

    /// Every household's searching expert's next command (`expert_next`); `None` where the
    /// goal holds, is unknown, or the search has nothing left.
    fn expert_next(&mut self, py: Python<'_>) -> Vec<Option<String>> {
        self.each(py, None, |e, _| e.search_next().ok().flatten())
    }

    /// Copies of the households, in their current states.
    #[getter]
    fn envs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.envs.iter().cloned())
    }
}

/// Most training specs one call draws (each becomes a dictionary in Python, about a kilobyte).
const MAX_SPECS: usize = 1_000_000;

/// `n` training task specs drawn with `seed`, as a JSON array.
#[pyfunction]
fn train_task_specs(n: usize, seed: u64) -> PyResult<String> {
    if n > MAX_SPECS {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "n = {n}: at most {MAX_SPECS} specs a call; draw more in several calls with other seeds"
        )));
    }
    Ok(serde_json::to_string(&train_tasks(n, seed)).expect("specs serialise"))
}

/// The fixed evaluation split `in_domain`, `ood` or `validation`, as a JSON array of specs.
#[pyfunction]
fn eval_task_specs(split: &str) -> PyResult<String> {
    let split = match Split::from_name(split) {
        Some(s) if s != Split::Train => s,
        _ => {
            return Err(value_error(format!(
                "unknown split {split:?}: in_domain, ood or validation"
            )))
        }
    };
    Ok(serde_json::to_string(&eval_tasks(split)).expect("specs serialise"))
}

/// The two files of an ALFWorld game folder for a spec (a dictionary or JSON text):
/// `(game.tw-pddl, traj_data.json)`.
#[pyfunction]
fn game_files_of_spec(spec: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    let spec: TaskSpec = parse_json(spec, "task spec")?;
    let game = spec.game_json().map_err(value_error)?;
    Ok((game, spec.traj_json()))
}
