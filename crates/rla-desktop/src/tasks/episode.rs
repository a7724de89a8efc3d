//! One episode of a task on the desktop — a generated one, or an OSWorld task file opened from
//! its folder ([`crate::tasks::local::load`]): the task's setup (its start workbook opened in memory
//! under the task's file name), the agent's steps, and the score — the task's `postconfig` run
//! on the desktop (OSWorld's saves with `pyautogui.hotkey("ctrl", "s")`), then its evaluator on
//! the workbook as saved.

use crate::osworld::compare::{compare_books, evaluate, Book, Resolved};
use crate::osworld::task::{DesktopTask, Evaluator, SetupStep};
use crate::sheet::workbook::Workbook;
use crate::tasks::family::Generated;
use crate::ui::a11y::{self, Node, TreeOptions};
use crate::ui::action::{self, Action};
use crate::ui::app::{Desktop, Outcome};
use std::path::PathBuf;

/// What an episode plays: the task file, the document it opens, and what its result is scored
/// against.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The task file.
    pub task: DesktopTask,
    /// The file name the task opens (`/home/user/<file>`).
    pub file: String,
    /// The workbook the task starts from.
    pub start: Workbook,
    /// The workbook the active evaluator expects, where there is one (a generated task's; a
    /// task file's `compare_table` reference): what the expert works towards.
    pub target: Option<Workbook>,
    /// A task file's reference files, one list per evaluator function; `None` for a generated
    /// task, scored in memory against `target`.
    pub reference: Option<Vec<Vec<PathBuf>>>,
}

impl From<Generated> for Opened {
    fn from(mut g: Generated) -> Opened {
        let target = g.expected.remove(&g.key());
        Opened {
            task: g.task,
            file: g.file,
            start: g.start,
            target,
            reference: None,
        }
    }
}

impl Opened {
    /// The workbook the active evaluator expects, where one is known.
    pub fn target(&self) -> Option<&Workbook> {
        self.target.as_ref()
    }
}

/// An episode.
#[derive(Debug, Clone)]
pub struct DesktopEpisode {
    /// The task.
    pub task: Opened,
    /// The desktop.
    pub desktop: Desktop,
    /// Steps taken.
    pub steps: usize,
    /// The agent said DONE (`Some(true)`) or FAIL (`Some(false)`).
    pub finished: Option<bool>,
}

impl DesktopEpisode {
    /// The task opened on a `width × height` screen.
    pub fn new(task: impl Into<Opened>, width: u32, height: u32) -> Result<DesktopEpisode, String> {
        let task: Opened = task.into();
        let mut desktop = Desktop::new(task.start.clone(), None, width, height)?;
        desktop.name = task.file.clone();
        Ok(DesktopEpisode {
            task,
            desktop,
            steps: 0,
            finished: None,
        })
    }

    /// The accessibility tree now.
    pub fn tree(&self, opts: TreeOptions) -> Vec<Node> {
        a11y::tree(&self.desktop, opts)
    }

    /// One step of parsed actions; `tag_N` refers to the marks of `nodes`.
    pub fn step(&mut self, actions: &[Action], nodes: &[Node]) -> Outcome {
        self.steps += 1;
        let out = self.desktop.step(actions, &a11y::mark_centres(nodes));
        if out.finished.is_some() {
            self.finished = out.finished;
        }
        out
    }

    /// One step of pyautogui code (or WAIT/DONE/FAIL); a parse error is the step's error.
    pub fn step_code(&mut self, code: &str, nodes: &[Node]) -> Outcome {
        match action::parse_code(code) {
            Ok(a) => self.step(&a, nodes),
            Err(e) => {
                self.steps += 1;
                Outcome {
                    error: Some(e.0),
                    ..Default::default()
                }
            }
        }
    }

    /// The task's score now: its postconfig run on a copy of the desktop, then its evaluator on
    /// what was saved (the start workbook if nothing was).
    pub fn score(&self) -> Result<f64, String> {
        let mut d = self.desktop.clone();
        let ev = &self.task.task.evaluator;
        run_postconfig(&mut d, ev.postconfig.as_deref().unwrap_or(&[]))?;
        let saved = d.saved.as_ref().unwrap_or(&self.task.start);
        match (&self.task.reference, &self.task.target) {
            (Some(reference), _) => score_files(ev, saved, reference),
            (None, Some(target)) => score_book(ev, saved, target),
            (None, None) => Err(format!(
                "task {}: nothing to score against",
                self.task.task.id
            )),
        }
    }
}

/// A task file's score: the saved workbook written under each result getter's file name (as
/// CSV where that name ends in `.csv`), then OSWorld's evaluator on those files and the task's
/// reference files.
fn score_files(
    ev: &Evaluator,
    saved: &Workbook,
    reference: &[Vec<PathBuf>],
) -> Result<f64, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a folder for the result: {e}"))?;
    let getters = ev
        .result
        .as_ref()
        .map(|r| r.as_slice().to_vec())
        .unwrap_or_default();
    let mut result = Vec::new();
    for (i, g) in getters.iter().enumerate() {
        let name = g
            .paths()
            .and_then(|p| p.first().copied())
            .and_then(|p| std::path::Path::new(p).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("result-{i}.xlsx"));
        let path = dir.path().join(format!("{i}-{name}"));
        if name.to_ascii_lowercase().ends_with(".csv") {
            crate::sheet::xlsx::write_atomic(&path, crate::sheet::xlsx::to_csv(saved, 0).as_bytes())
        } else {
            crate::sheet::xlsx::save(saved, &path)
        }
        .map_err(|e| e.to_string())?;
        result.push(Some(path));
    }
    evaluate(
        ev,
        &Resolved {
            result,
            expected: reference.to_vec(),
        },
    )
}

/// An evaluator's score of a saved workbook against the expected one.
pub fn score_book(
    ev: &Evaluator,
    saved: &crate::sheet::workbook::Workbook,
    expected: &crate::sheet::workbook::Workbook,
) -> Result<f64, String> {
    let funcs = ev.func.as_slice();
    if funcs != ["compare_table"] {
        return Err(format!(
            "the generated tasks are scored by compare_table, not {funcs:?}"
        ));
    }
    let options = match &ev.options {
        Some(o) => serde_json::to_value(&o.as_slice()[0]).map_err(|e| e.to_string())?,
        None => serde_json::json!({}),
    };
    compare_books(
        &Book::memory(saved),
        Some(&Book::memory(expected)),
        &options,
    )
}

/// Runs OSWorld setup steps that act on the desktop: `activate_window` (the window must have
/// that name when `strict`), `sleep`, and `execute` of `python -c "<pyautogui code>"`.
pub fn run_postconfig(d: &mut Desktop, steps: &[SetupStep]) -> Result<(), String> {
    for (i, s) in steps.iter().enumerate() {
        let p = &s.parameters;
        match s.kind.as_str() {
            "sleep" => {}
            "activate_window" => {
                let name = p.get("window_name").and_then(|n| n.as_str()).unwrap_or("");
                let strict = p.get("strict").and_then(|x| x.as_bool()).unwrap_or(false);
                let title = d.title();
                let ok = if strict { title == name } else { title.contains(name) };
                if !ok {
                    return Err(format!("postconfig[{i}]: no window named {name:?} (the window is {title:?})"));
                }
            }
            "execute" => {
                let cmd: Vec<String> = match p.get("command") {
                    Some(serde_json::Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(String::from)).collect(),
                    Some(serde_json::Value::String(s)) => vec![s.clone()],
                    _ => vec![],
                };
                let code = match cmd.as_slice() {
                    [py, flag, code] if py.starts_with("python") && flag == "-c" => code.clone(),
                    _ => return Err(format!("postconfig[{i}]: only `python -c \"<pyautogui code>\"` can run on this desktop, not {cmd:?}")),
                };
                let actions = action::parse_code(&code).map_err(|e| format!("postconfig[{i}]: {e}"))?;
                let out = d.step(&actions, &[]);
                if let Some(e) = out.error {
                    return Err(format!("postconfig[{i}]: {e}"));
                }
            }
            other => return Err(format!("postconfig[{i}]: setup step type {other:?} is not one this desktop runs (sleep, activate_window, execute)")),
        }
    }
    Ok(())
}
