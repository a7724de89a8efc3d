//! One task runner for both desktops. A task file (OSWorld's JSON, its files beside it) is set
//! up on a [`Screen`] — the native desktop in memory, or a real one over OSWorld's protocol —
//! played by an agent step by step (pyautogui code, `tag_N` marks, `DONE`/`FAIL`), finished
//! with the task's `postconfig`, and scored by the same evaluators on the result file the
//! desktop holds at the end.

use crate::osworld::task::{DesktopTask, SetupStep};
use crate::remote::tree::{self, Element};
use crate::remote::{code, RemoteDesktop};
use crate::ui::a11y::{self, Node, TreeOptions};
use crate::ui::action;
use crate::ui::app::Desktop;
use std::path::{Path, PathBuf};

/// What an agent sees of a screen.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The nodes an agent is shown (the native tree, or OSWorld's filter of the real one).
    pub nodes: Vec<Node>,
    /// Every element with a position (real desktops only): what the expert is placed on.
    pub elements: Vec<Element>,
    /// The screen as PNG, when the agent asks for it.
    pub screenshot: Option<Vec<u8>>,
}

/// A desktop a task file is played on.
pub trait Screen: Send {
    /// Sets the task up: its files in place, its document open.
    fn set_up(&mut self, task: &DesktopTask, task_path: &Path) -> Result<(), String>;
    /// What is on the screen now.
    fn observe(&mut self) -> Result<Observation, String>;
    /// Runs one step of agent code on the screen last observed (`obs` places its `tag_N`
    /// marks); `Ok(Some(message))` when the step itself failed (the episode goes on).
    fn act(&mut self, step: &str, obs: &Observation) -> Result<Option<String>, String>;
    /// Runs `postconfig` steps.
    fn post_config(&mut self, steps: &[SetupStep]) -> Result<(), String>;
    /// Writes the desktop's file at `path` to `to`; `false` when the desktop has no such file.
    fn fetch(&mut self, path: &str, to: &Path) -> Result<bool, String>;
    /// The screen as PNG.
    fn screenshot(&mut self) -> Result<Vec<u8>, String>;
}

/// The native desktop, as a [`Screen`].
pub struct Native {
    /// Screen size.
    pub size: (u32, u32),
    /// The open document (after [`Screen::set_up`]).
    pub desktop: Option<Desktop>,
    source: Option<PathBuf>,
    opened: String,
}

impl Native {
    /// A native screen of `width × height`.
    pub fn new(width: u32, height: u32) -> Native {
        Native {
            size: (width, height),
            desktop: None,
            source: None,
            opened: String::new(),
        }
    }

    fn desktop(&mut self) -> Result<&mut Desktop, String> {
        self.desktop
            .as_mut()
            .ok_or_else(|| "no task is set up on the desktop".to_string())
    }
}

impl Screen for Native {
    fn set_up(&mut self, task: &DesktopTask, task_path: &Path) -> Result<(), String> {
        let (_, d) = crate::tasks::local::open(task_path, None, self.size.0, self.size.1)
            .map_err(|e| e.to_string())?;
        self.opened = opened_path(task).unwrap_or_default();
        self.source = downloads(task.config.as_deref().unwrap_or(&[]), task_path, None)?
            .into_iter()
            .find(|(p, _)| *p == self.opened)
            .map(|(_, f)| f);
        self.desktop = Some(d);
        Ok(())
    }

    fn observe(&mut self) -> Result<Observation, String> {
        Ok(Observation {
            nodes: a11y::tree(self.desktop()?, TreeOptions::default()),
            ..Observation::default()
        })
    }

    fn act(&mut self, step: &str, obs: &Observation) -> Result<Option<String>, String> {
        let acts = match action::parse_code(step) {
            Ok(a) => a,
            Err(e) => return Ok(Some(e.0)),
        };
        let marks = a11y::mark_centres(&obs.nodes);
        Ok(self.desktop()?.step(&acts, &marks).error)
    }

    fn post_config(&mut self, steps: &[SetupStep]) -> Result<(), String> {
        crate::tasks::episode::run_postconfig(self.desktop()?, steps)
    }

    fn fetch(&mut self, path: &str, to: &Path) -> Result<bool, String> {
        if path != self.opened {
            return Ok(false);
        }
        let d = self.desktop()?;
        match &d.saved {
            Some(book) => crate::sheet::xlsx::save(book, to).map_err(|e| e.to_string())?,
            None => {
                // never saved: the file is still the one the task downloaded
                let src = self
                    .source
                    .clone()
                    .ok_or_else(|| format!("{path} was not downloaded"))?;
                std::fs::copy(&src, to).map_err(|e| format!("{}: {e}", src.display()))?;
            }
        }
        Ok(true)
    }

    fn screenshot(&mut self) -> Result<Vec<u8>, String> {
        let d = self.desktop()?;
        let nodes = a11y::tree(d, TreeOptions::default());
        Ok(crate::ui::render::draw(d, &nodes, false).png())
    }
}

/// A real desktop over OSWorld's protocol, as a [`Screen`].
pub struct Real {
    /// The controller.
    pub remote: RemoteDesktop,
    /// Reset the desktop (this project's `/setup/reset`) before each task.
    pub reset: bool,
    /// Where a task's online files are found ([`crate::tasks::local`]'s files folder).
    pub cache: Option<PathBuf>,
}

fn opened_path(task: &DesktopTask) -> Option<String> {
    task.config
        .iter()
        .flatten()
        .filter(|s| s.kind == "open")
        .filter_map(|s| s.parameters.get("path").and_then(|p| p.as_str()))
        .next_back()
        .map(String::from)
}

fn downloads(
    steps: &[SetupStep],
    task_path: &Path,
    cache: Option<&Path>,
) -> Result<Vec<(String, PathBuf)>, String> {
    crate::tasks::local::downloads(steps, task_path, cache).map_err(|e| e.to_string())
}

/// A setup step's `command` and `shell`.
fn command(s: &SetupStep) -> (serde_json::Value, bool) {
    let shell = s.parameters.get("shell").and_then(|v| v.as_bool());
    (
        s.parameters.get("command").cloned().unwrap_or_default(),
        shell.unwrap_or(false),
    )
}

fn str_param<'a>(s: &'a SetupStep, key: &str) -> Option<&'a str> {
    s.parameters.get(key).and_then(|v| v.as_str())
}

impl Real {
    fn run_steps(
        &self,
        steps: &[SetupStep],
        task_path: Option<&Path>,
        what: &str,
    ) -> Result<(), String> {
        let err = |i: usize, e: &dyn std::fmt::Display| format!("{what}[{i}]: {e}");
        for (i, s) in steps.iter().enumerate() {
            match s.kind.as_str() {
                "download" => {
                    let tp =
                        task_path.ok_or_else(|| err(i, &"a download needs the task's folder"))?;
                    for (path, local) in
                        downloads(std::slice::from_ref(s), tp, self.cache.as_deref())
                            .map_err(|e| err(i, &e))?
                    {
                        let data = rla_core::file::read_limited(
                            &local,
                            crate::sheet::bounds::MAX_TOTAL_BYTES,
                        )
                        .map_err(|e| err(i, &format!("{}: {e}", local.display())))?;
                        self.remote.upload(&path, &data).map_err(|e| err(i, &e))?;
                    }
                }
                "open" => {
                    let p = str_param(s, "path").ok_or_else(|| err(i, &"`open` needs `path`"))?;
                    self.remote.open_file(p).map_err(|e| err(i, &e))?;
                }
                "activate_window" => {
                    let name = str_param(s, "window_name")
                        .ok_or_else(|| err(i, &"`activate_window` needs `window_name`"))?;
                    let flag = |k: &str| {
                        s.parameters
                            .get(k)
                            .and_then(|v| v.as_bool())
                            .unwrap_or(false)
                    };
                    self.remote
                        .activate_window(name, flag("strict"), flag("by_class"))
                        .map_err(|e| err(i, &e))?;
                }
                "execute" | "command" => {
                    let (cmd, shell) = command(s);
                    let out = self
                        .remote
                        .setup_execute(&cmd, shell)
                        .map_err(|e| err(i, &e))?;
                    if out.status != "success" {
                        return Err(err(i, &format!("the command failed: {}", out.error.trim())));
                    }
                }
                "launch" => {
                    let (cmd, shell) = command(s);
                    self.remote.launch(&cmd, shell).map_err(|e| err(i, &e))?;
                }
                "sleep" => {
                    let secs = s
                        .parameters
                        .get("seconds")
                        .and_then(|v| v.as_f64())
                        .unwrap_or(0.0);
                    std::thread::sleep(std::time::Duration::from_secs_f64(secs.clamp(0.0, 60.0)));
                }
                other => {
                    return Err(err(
                        i,
                        &format!("setup step type {other:?} is not one this controller runs"),
                    ))
                }
            }
        }
        Ok(())
    }
}

impl Screen for Real {
    fn set_up(&mut self, task: &DesktopTask, task_path: &Path) -> Result<(), String> {
        if self.reset {
            match self.remote.reset() {
                Ok(()) => {}
                Err(crate::remote::RemoteError::Status { status: 404, .. }) => {
                    return Err(format!(
                        "{} has no /setup/reset (an OSWorld VM reverts to a snapshot instead): revert it between tasks and do not ask for a reset (--no-reset)",
                        self.remote.url()
                    ))
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        self.run_steps(
            task.config.as_deref().unwrap_or(&[]),
            Some(task_path),
            "config",
        )
    }

    fn observe(&mut self) -> Result<Observation, String> {
        let xml = self.remote.accessibility().map_err(|e| e.to_string())?;
        let elements = tree::all(&xml)?;
        let nodes = tree::agent_view(&xml)?;
        Ok(Observation {
            nodes,
            elements,
            screenshot: None,
        })
    }

    fn act(&mut self, step: &str, obs: &Observation) -> Result<Option<String>, String> {
        let acts = match action::parse_code(step) {
            Ok(a) => a,
            Err(e) => return Ok(Some(e.0)),
        };
        let marks = a11y::mark_centres(&obs.nodes);
        let c = match code::actions(&acts, &marks) {
            Ok(Some(c)) => c,
            Ok(None) => {
                // WAIT: the application gets a moment
                std::thread::sleep(std::time::Duration::from_millis(300));
                return Ok(None);
            }
            Err(e) => return Ok(Some(e)),
        };
        let out = self.remote.execute(&c).map_err(|e| e.to_string())?;
        Ok((out.status != "success").then_some(out.error))
    }

    fn post_config(&mut self, steps: &[SetupStep]) -> Result<(), String> {
        self.run_steps(steps, None, "postconfig")
    }

    fn fetch(&mut self, path: &str, to: &Path) -> Result<bool, String> {
        match self.remote.file(path).map_err(|e| e.to_string())? {
            Some(bytes) => {
                crate::sheet::xlsx::write_atomic(to, &bytes).map_err(|e| e.to_string())?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn screenshot(&mut self) -> Result<Vec<u8>, String> {
        self.remote.screenshot().map_err(|e| e.to_string())
    }
}

/// An agent: the next step's code (or `DONE`/`FAIL`) from what is on the screen.
pub trait Agent {
    /// The next step.
    fn next(&mut self, obs: &Observation) -> Result<String, String>;
    /// Whether it reads the screenshot (else the observation has none).
    fn wants_screenshot(&self) -> bool {
        false
    }
    /// Whether its next step reads the screen (else the step is given an empty observation,
    /// and the screen is not read).
    fn wants_screen(&mut self) -> bool {
        true
    }
}

/// How an episode went.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The evaluator's score.
    pub score: f64,
    /// The steps' code, each with the error it met.
    pub steps: Vec<(String, Option<String>)>,
    /// The result file fetched for the evaluator (in `dir`).
    pub result: Option<PathBuf>,
}

/// Plays a task file on a screen: set-up, at most `step_limit` agent steps (until `DONE` or
/// `FAIL`), `postconfig`, the result file fetched into `dir`, the evaluator's score.
pub fn play(
    screen: &mut dyn Screen,
    task_path: &Path,
    agent: &mut dyn Agent,
    step_limit: usize,
    dir: &Path,
) -> Result<Record, String> {
    play_recorded(screen, task_path, agent, step_limit, dir, None)
}

/// [`play`], with the screen recorded before each step and at the end as
/// `record.0/step-NN.png`, scaled to `record.1` pixels wide.
pub fn play_recorded(
    screen: &mut dyn Screen,
    task_path: &Path,
    agent: &mut dyn Agent,
    step_limit: usize,
    dir: &Path,
    record: Option<(&Path, u32)>,
) -> Result<Record, String> {
    let task = DesktopTask::load(task_path).map_err(|e| e.to_string())?;
    task.check()?;
    screen.set_up(&task, task_path)?;
    let snap = |screen: &mut dyn Screen, k: usize| -> Result<(), String> {
        let Some((to, width)) = record else {
            return Ok(());
        };
        let img = crate::ui::render::Image::from_png(&screen.screenshot()?)?;
        let h = (img.height as u64 * width as u64 / img.width.max(1) as u64).max(1) as u32;
        let png = img.scaled(width, h)?.png();
        std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
        crate::sheet::xlsx::write_atomic(&to.join(format!("step-{k:02}.png")), &png)
            .map_err(|e| e.to_string())
    };
    let mut steps = Vec::new();
    for k in 0..step_limit {
        snap(screen, k)?;
        let mut obs = if agent.wants_screen() {
            screen.observe()?
        } else {
            Observation::default()
        };
        if agent.wants_screenshot() {
            obs.screenshot = Some(screen.screenshot()?);
        }
        let step = agent.next(&obs)?;
        let t = step.trim();
        if t == "DONE" || t == "FAIL" {
            steps.push((step, None));
            break;
        }
        let err = screen.act(&step, &obs)?;
        steps.push((step, err));
    }
    score_on(screen, &task, task_path, dir).map(|(score, result)| Record {
        score,
        steps,
        result,
    })
}

/// The task's `postconfig` run on the screen, then its evaluator on the result file.
pub fn score_on(
    screen: &mut dyn Screen,
    task: &DesktopTask,
    task_path: &Path,
    dir: &Path,
) -> Result<(f64, Option<PathBuf>), String> {
    screen.post_config(task.evaluator.postconfig.as_deref().unwrap_or(&[]))?;
    let results = task
        .evaluator
        .result
        .as_ref()
        .map(|r| r.as_slice().to_vec())
        .unwrap_or_default();
    let path = results
        .iter()
        .find_map(|g| g.str_field("path").map(String::from))
        .ok_or("the evaluator's result getter names no file")?;
    let name = Path::new(&path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    let to = dir.join(&name);
    if !screen.fetch(&path, &to)? {
        // no result file: what OSWorld scores 0
        return Ok((0.0, None));
    }
    let s = crate::tasks::local::score(task_path, None, &to, &[])?;
    Ok((s, Some(to)))
}

/// The expert as an agent: on the native desktop its own steps, on a real one its steps placed
/// on the real window ([`crate::remote::expert`]).
pub struct ExpertAgent {
    expert: crate::remote::expert::RealExpert,
    real: bool,
}

impl ExpertAgent {
    /// The expert of a generated task; `real` when it plays a real desktop, else a native one
    /// of `size`.
    pub fn new(
        task: crate::tasks::family::Generated,
        real: bool,
        size: (u32, u32),
    ) -> Result<ExpertAgent, String> {
        Ok(ExpertAgent {
            expert: crate::remote::expert::RealExpert::new(task, size.0, size.1)?,
            real,
        })
    }
}

impl Agent for ExpertAgent {
    fn wants_screen(&mut self) -> bool {
        !self.real || self.expert.needs_screen()
    }

    fn next(&mut self, obs: &Observation) -> Result<String, String> {
        if self.real {
            return self.expert.next(&obs.elements);
        }
        let m = &mut self.expert.mirror;
        let step = crate::tasks::expert::next(m);
        if step != "DONE" {
            let nodes = m.tree(TreeOptions::default());
            m.step_code(&step, &nodes);
        }
        Ok(step)
    }
}
