//! The GUI setting: a spreadsheet task on the native desktop, in OSWorld's formats.

use crate::{parse_json, value_error};
use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rla_core::Split;
use rla_desktop::tasks::episode::DesktopEpisode;
use rla_desktop::tasks::expert;
use rla_desktop::tasks::family::{self, Spec};
use rla_desktop::tasks::local;
use rla_desktop::ui::a11y::{self, TreeOptions};
use rla_desktop::ui::render;
use std::path::PathBuf;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDesktop>()?;
    m.add_function(wrap_pyfunction!(desktop_task_specs, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    Ok(())
}

/// One spreadsheet task on the desktop: the agent sees OSWorld's linearised accessibility tree
/// (or a screenshot), acts with pyautogui code or WAIT/DONE/FAIL, and is scored by the task's
/// evaluator (OSWorld's `compare_table`) on the workbook it saved.
#[pyclass(module = "rlanything._native", name = "Desktop", subclass)]
#[derive(Clone)]
pub struct PyDesktop {
    /// The generated task (what `export` writes).
    generated: family::Generated,
    start: DesktopEpisode,
    episode: DesktopEpisode,
    step_limit: usize,
    tree_tokens: usize,
}

impl PyDesktop {
    fn observe(&self) -> String {
        let nodes = self.episode.tree(TreeOptions::default());
        a11y::linearize(&nodes, self.tree_tokens, &|s: &str| {
            s.split_whitespace().count()
        })
    }

    fn over(&self) -> bool {
        self.episode.finished.is_some() || self.episode.steps >= self.step_limit
    }

    fn info<'py>(&self, py: Python<'py>, error: Option<String>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("instruction", &self.episode.task.task.instruction)?;
        d.set_item("steps", self.episode.steps)?;
        d.set_item("error", error)?;
        d.set_item("finished", self.episode.finished)?;
        Ok(d)
    }
}

#[pymethods]
impl PyDesktop {
    /// The task a spec (a dictionary as `task_specs` returns, or its JSON text) generates, on a `width × height` screen; the episode ends
    /// after `step_limit` steps, at DONE or FAIL. The tree is cut after `tree_tokens`
    /// whitespace-separated words.
    #[staticmethod]
    #[pyo3(signature = (spec, width = 1920, height = 1080, step_limit = 30, tree_tokens = 10_000))]
    fn from_spec(
        spec: &Bound<'_, PyAny>,
        width: u32,
        height: u32,
        step_limit: usize,
        tree_tokens: usize,
    ) -> PyResult<Self> {
        let spec: Spec = parse_json(spec, "desktop spec")?;
        if step_limit == 0 {
            return Err(value_error("step_limit = 0: must be at least 1"));
        }
        let generated = family::generate(&spec);
        let episode = DesktopEpisode::new(generated.clone(), width, height).map_err(value_error)?;
        Ok(PyDesktop {
            generated,
            start: episode.clone(),
            episode,
            step_limit,
            tree_tokens,
        })
    }

    /// Opens the task again: `(tree, info)`, `info` holding `instruction`, `steps`, `error`
    /// and `finished`.
    fn reset<'py>(&mut self, py: Python<'py>) -> PyResult<(String, Bound<'py, PyDict>)> {
        self.episode = self.start.clone();
        let tree = py.detach(|| self.observe());
        Ok((tree, self.info(py, None)?))
    }

    /// One step of pyautogui code (or WAIT, DONE, FAIL): `(tree, reward, done, info)`. The
    /// reward is the evaluator's score once the episode is done and 0.0 before; an action that
    /// cannot run is the step's `info["error"]`.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        code: &str,
    ) -> PyResult<(String, f64, bool, Bound<'py, PyDict>)> {
        if self.over() {
            return Err(value_error(
                "the episode is over: call reset() before stepping again",
            ));
        }
        // the step, the score and the tree run with the GIL released
        let (error, reward, done, tree) = py
            .detach(|| {
                let nodes = self.episode.tree(TreeOptions::default());
                let out = self.episode.step_code(code, &nodes);
                let done = self.over();
                let reward = if done { self.episode.score()? } else { 0.0 };
                Ok::<_, String>((out.error, reward, done, self.observe()))
            })
            .map_err(value_error)?;
        Ok((tree, reward, done, self.info(py, error)?))
    }

    /// The evaluator's score now: the task's postconfig (the save) run on a copy of the
    /// desktop, then `compare_table` against the expected workbook.
    fn score(&self, py: Python<'_>) -> PyResult<f64> {
        py.detach(|| self.episode.score()).map_err(value_error)
    }

    /// The expert's next step, as pyautogui code (or DONE).
    fn expert_action(&self, py: Python<'_>) -> String {
        py.detach(|| expert::next(&self.episode))
    }

    /// The screen as PNG bytes; `marks` draws the numbered boxes that `tag_N` names.
    #[pyo3(signature = (marks = false))]
    fn screenshot<'py>(&self, py: Python<'py>, marks: bool) -> Bound<'py, PyBytes> {
        let nodes = self.episode.tree(TreeOptions::default());
        let png = render::draw(&self.episode.desktop, &nodes, marks).png();
        PyBytes::new(py, &png)
    }

    /// The set-of-marks list: `[N] role name: text` for each mark `tag_N`.
    fn marks(&self) -> String {
        a11y::marks_text(&self.episode.tree(TreeOptions::default()))
    }

    /// Writes the task as OSWorld's task file `folder/<id>.json`, with its start workbook and
    /// the expected workbook of each evaluator key in `folder/<id>/`; returns the task file.
    fn export(&self, folder: PathBuf) -> PyResult<String> {
        local::export(&self.generated, &folder)
            .map(|p| p.display().to_string())
            .map_err(value_error)
    }

    /// The task's instruction.
    #[getter]
    fn instruction(&self) -> String {
        self.episode.task.task.instruction.clone()
    }

    /// The task in OSWorld's task JSON.
    #[getter]
    fn task_json(&self) -> String {
        self.episode.task.task.to_json()
    }

    /// Steps taken in this episode.
    #[getter]
    fn steps(&self) -> usize {
        self.episode.steps
    }

    /// Whether the episode is over.
    #[getter]
    fn done(&self) -> bool {
        self.over()
    }
}

/// Scores a result workbook for an OSWorld task file with the task's evaluator (the semantics
/// of OSWorld's `compare_table` and `compare_csv`): its `vm_file` getters read `result`, its
/// expected files come from `expected` when given, else from the paths the task names (online
/// ones from the folder `files`, under the URL's file name or the getter's `dest`).
#[pyfunction]
#[pyo3(signature = (task, result, expected = Vec::new(), files = None))]
fn evaluate(
    py: Python<'_>,
    task: PathBuf,
    result: PathBuf,
    expected: Vec<PathBuf>,
    files: Option<PathBuf>,
) -> PyResult<f64> {
    if !task.exists() {
        return Err(PyFileNotFoundError::new_err(format!(
            "{}: no such task file",
            task.display()
        )));
    }
    py.detach(|| local::score(&task, files.as_deref(), &result, &expected))
        .map_err(value_error)
}

/// The first `n` specs of the desktop split `in_domain`, `ood`, `validation` or `train`, as a
/// JSON array.
#[pyfunction]
fn desktop_task_specs(split: &str, n: usize) -> PyResult<String> {
    let split = Split::from_name(split).ok_or_else(|| {
        value_error(format!(
            "unknown split {split:?}: in_domain, ood, validation or train"
        ))
    })?;
    Ok(serde_json::to_string(&family::split(split, n)).expect("specs serialise"))
}
