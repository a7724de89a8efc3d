//! Episodes on real desktops (`[desktop] desktops`): LibreOffice under `rlanything desktop
//! serve-real`, or OSWorld's VMs, over OSWorld's protocol. One episode a desktop at a time, the
//! desktops side by side: the episodes go out in waves of as many as there are desktops up, each
//! wave's episodes stepping together (one generation call a step).
//!
//! The tiny policy reads the same summary as on the native desktop, read off the real
//! accessibility tree ([`rla_desktop::play::tiny::observation_of_tree`]); its action is planned on a
//! native mirror of the task (which names the state's candidates and turns the action into
//! code) and placed on the real screen element by element ([`RealExpert::give`]), as the expert
//! is placed there. The episode is scored by the task's evaluator on the file the real desktop
//! saved.
//!
//! A desktop that stops answering (its setup, a read of its screen, an action or the result
//! file fails) is marked down and its episode is played again on another; a desktop down is
//! tried again after [`RETRY`]. With none left the iteration stops with an error naming each,
//! and the run resumes from its last finished iteration.

use super::config::DesktopConfig;
use super::play::{progressed, vocabulary_action};
use super::prompts::{policy_answer, policy_prompt, previous_actions};
use super::Source;
use crate::config::{RunConfig, SettingConfig};
use crate::play::{play, Applied, Game, Prompt, Trajectory, Turn};
use anyhow::{bail, Result};
use rla_desktop::play::runner::{Observation, Real, Screen};
use rla_desktop::play::tiny;
use rla_desktop::remote::expert::RealExpert;
use rla_desktop::remote::tree::Element;
use rla_desktop::remote::RemoteDesktop;
use rla_lm::{Sample, SampleParams, Sampler};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a desktop marked down rests before it is tried again.
pub const RETRY: Duration = Duration::from_secs(60);

/// The run's real desktops and which are down.
#[derive(Debug, Default)]
pub struct Desktops {
    /// Each desktop's URL, and since when and why it is down.
    pub desktops: Vec<(String, Option<(Instant, String)>)>,
    /// Episodes each desktop has finished, by URL (in the run's metrics).
    pub played: std::collections::BTreeMap<String, usize>,
}

impl Desktops {
    /// The desktops of the config.
    pub fn of(cfg: &DesktopConfig) -> Desktops {
        Desktops {
            desktops: cfg.desktops.iter().map(|u| (u.clone(), None)).collect(),
            played: Default::default(),
        }
    }

    /// The desktops up now (a desktop down for longer than [`RETRY`] is tried again).
    fn up(&mut self) -> Vec<usize> {
        for d in &mut self.desktops {
            if d.1.as_ref().is_some_and(|(t, _)| t.elapsed() >= RETRY) {
                d.1 = None;
            }
        }
        (0..self.desktops.len())
            .filter(|&i| self.desktops[i].1.is_none())
            .collect()
    }

    fn down(&mut self, i: usize, why: String) {
        tracing::warn!(desktop = %self.desktops[i].0, "{why}: marked down, its episode goes to another desktop");
        self.desktops[i].1 = Some((Instant::now(), why));
    }
}

/// One episode on a real desktop, its action planned on a native mirror.
struct RealGame<'a> {
    cfg: &'a RunConfig,
    screen: Real,
    mirror: RealExpert,
    task: rla_desktop::osworld::task::DesktopTask,
    task_path: PathBuf,
    oracle: bool,
    actions: Vec<String>,
    candidates: Vec<String>,
    /// Why the desktop failed, shared with the wave (the episode is played again).
    failed: Arc<Mutex<Option<String>>>,
    /// The summary read at the end of the last step: what the next turn shows (nothing acts
    /// between them, so the screen is not read twice).
    shown: Option<String>,
}

impl RealGame<'_> {
    fn fail(&self, why: String) {
        let mut f = self.failed.lock().expect("not poisoned");
        f.get_or_insert(why);
    }

    fn has_failed(&self) -> bool {
        self.failed.lock().expect("not poisoned").is_some()
    }

    /// The real screen's elements and the summary read off them (read again while the
    /// application is still drawing its window).
    fn look(&mut self) -> Result<(Observation, String), String> {
        let mut last = String::new();
        for _ in 0..10 {
            let obs = self.screen.observe()?;
            match tiny::observation_of_tree(&obs.elements, DesktopConfig::of(self.cfg).summary()) {
                Ok(text) => return Ok((obs, text)),
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        Err(format!("the screen does not read: {last}"))
    }

    /// Places the mirror's queued real steps on the screen; `Ok(Some(error))` when a step
    /// cannot be placed (the action's failure), `Err` when the desktop failed.
    fn drain(&mut self) -> Result<Option<String>, String> {
        loop {
            let obs = self.screen.observe()?;
            let els: &[Element] = &obs.elements;
            match self.mirror.next_queued(els) {
                Ok(None) => return Ok(None),
                Ok(Some(code)) => {
                    if let Some(e) = self.screen.act(&code, &obs)? {
                        return Ok(Some(e));
                    }
                }
                Err(e) => return Ok(Some(e)),
            }
        }
    }
}

impl Game for RealGame<'_> {
    fn concurrent(&self) -> bool {
        true
    }

    fn turn(&mut self, _policy: &dyn Sampler, constrained: bool) -> Result<Turn> {
        let instruction = self.task.instruction.clone();
        let prev = previous_actions(&self.actions, DesktopConfig::of(self.cfg).history);
        let text = if self.has_failed() {
            String::new()
        } else if let Some(t) = self.shown.take() {
            t
        } else {
            match self.look() {
                Ok((_, text)) => text,
                Err(e) => {
                    self.fail(e);
                    String::new()
                }
            }
        };
        let m = &self.mirror.mirror;
        let c = if self.has_failed() {
            vec!["done".to_string()]
        } else {
            tiny::candidates(&m.desktop, &m.tree(tiny::TREE), &instruction)
        };
        let answers = if constrained {
            c.iter().map(|a| policy_answer(a)).collect()
        } else {
            vec![]
        };
        self.candidates = c;
        Ok(Turn {
            prompt: Prompt::Text(policy_prompt(&instruction, &prev, &text)),
            answers,
            // the screen as the policy reads it is the desktop's state
            state: Some(rla_core::seed::mix(0, &text)),
            observation: text,
            previous: prev,
        })
    }

    fn apply(&mut self, _policy: &dyn Sampler, s: &Sample) -> Result<Applied> {
        if self.has_failed() {
            return Ok(Applied {
                action: "done".into(),
                code: String::new(),
                error: None,
                next_observation: String::new(),
                progress: false,
                planner_progress: None,
                done: true,
            });
        }
        let before = if self.oracle {
            rla_desktop::tasks::expert::distance(&self.mirror.mirror)
        } else {
            None
        };
        let m = &self.mirror.mirror;
        let nodes = m.tree(tiny::TREE);
        let (action, code, mut error) =
            match vocabulary_action(&s.text, &self.candidates, &m.desktop, &nodes) {
                Some((a, Ok(code))) => (a, code, None),
                Some((a, Err(e))) => (a, String::new(), Some(e)),
                None => (
                    s.text.clone(),
                    String::new(),
                    Some("not an action of the vocabulary".into()),
                ),
            };
        if error.is_none() {
            error = match self.mirror.give(&code) {
                Ok(Some(e)) => Some(e),
                Ok(None) => match self.drain() {
                    Ok(e) => e,
                    Err(e) => {
                        self.fail(e);
                        None
                    }
                },
                Err(e) => Some(e),
            };
        } else {
            self.mirror.mirror.steps += 1;
        }
        let after = if self.has_failed() {
            String::new()
        } else {
            match self.look() {
                Ok((_, t)) => t,
                Err(e) => {
                    self.fail(e);
                    String::new()
                }
            }
        };
        self.shown = Some(after.clone());
        let next = match &error {
            Some(e) => format!("{after} | the action failed: {e}"),
            None => after,
        };
        let progress = self.oracle
            && progressed(
                before,
                rla_desktop::tasks::expert::distance(&self.mirror.mirror),
            );
        self.actions.push(action.clone());
        Ok(Applied {
            action,
            code,
            error,
            next_observation: next,
            progress,
            planner_progress: None,
            done: self.mirror.mirror.finished.is_some() || self.has_failed(),
        })
    }

    fn score(mut self) -> Result<f64> {
        if self.has_failed() {
            return Ok(0.0);
        }
        let dir = tempfile::tempdir()?;
        match rla_desktop::play::runner::score_on(
            &mut self.screen,
            &self.task,
            &self.task_path,
            dir.path(),
        ) {
            Ok((s, _)) => Ok(s),
            Err(e) => {
                self.fail(e);
                Ok(0.0)
            }
        }
    }
}

/// A task as a file a desktop sets up: a task file as it is, a generated task exported into
/// `dir`.
fn task_file(source: &Source, dir: &Path) -> Result<PathBuf> {
    Ok(match source {
        Source::File { file } => file.clone(),
        Source::Generated { spec } => {
            rla_desktop::tasks::local::export(&rla_desktop::tasks::family::generate(spec), dir)?
        }
    })
}

/// Runs the config's command that reverts a desktop (an OSWorld VM to its snapshot), with the
/// desktop's URL in `RLA_DESKTOP_URL`.
fn revert(cmd: &[String], url: &str) -> Result<(), String> {
    let (prog, args) = cmd.split_first().ok_or("desktop.revert is empty")?;
    let out = std::process::Command::new(prog)
        .args(args)
        .env("RLA_DESKTOP_URL", url)
        .output()
        .map_err(|e| format!("desktop.revert {prog}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "desktop.revert {prog} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Plays `rollouts` episodes of each task on the real desktops, in waves of as many as are up;
/// an episode whose desktop failed is played again on another. The trajectories come back in
/// task order, each task's rollouts together.
#[allow(clippy::too_many_arguments)]
pub fn rollout(
    policy: &dyn Sampler,
    cfg: &RunConfig,
    desktops: &mut Desktops,
    tasks: &[Source],
    rollouts: usize,
    step_limit: usize,
    sp: &SampleParams,
    oracle: bool,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let d = DesktopConfig::of(cfg);
    let dir = tempfile::tempdir()?;
    let files: Vec<PathBuf> = tasks
        .iter()
        .map(|t| task_file(t, dir.path()))
        .collect::<Result<_>>()?;
    let episodes: Vec<usize> = (0..tasks.len())
        .flat_map(|t| std::iter::repeat_n(t, rollouts))
        .collect();
    let mut done: Vec<Option<Trajectory>> = vec![None; episodes.len()];
    let mut pending: std::collections::VecDeque<usize> = (0..episodes.len()).collect();
    let mut wave = 0u64;
    while !pending.is_empty() {
        let up = desktops.up();
        if up.is_empty() {
            let why: Vec<String> = desktops
                .desktops
                .iter()
                .map(|(u, w)| format!("{u}: {}", w.as_ref().map_or("up", |(_, w)| w.as_str())))
                .collect();
            bail!(
                "every desktop of desktop.desktops is down ({}); the run stops here and resumes from its last finished iteration once they answer",
                why.join("; ")
            );
        }
        let mut games = Vec::new();
        let mut slots = Vec::new();
        for &di in &up {
            let Some(e) = pending.pop_front() else {
                break;
            };
            let t = episodes[e];
            let url = desktops.desktops[di].0.clone();
            let set_up = || -> Result<RealGame<'_>, String> {
                if let Some(cmd) = &d.revert {
                    revert(cmd, &url)?;
                }
                let remote = RemoteDesktop::new(&url, Duration::from_secs_f64(d.desktop_timeout))
                    .map_err(|e| e.to_string())?;
                let mut screen = Real {
                    remote,
                    reset: d.revert.is_none(),
                    cache: d.files.clone(),
                };
                let task = rla_desktop::osworld::task::DesktopTask::load(&files[t])
                    .map_err(|e| e.to_string())?;
                screen.set_up(&task, &files[t])?;
                let opened =
                    super::play::Opens::opened(&tasks[t], cfg).map_err(|e| e.to_string())?;
                let mirror = RealExpert::new(opened, d.screen_width, d.screen_height)?;
                Ok(RealGame {
                    cfg,
                    screen,
                    mirror,
                    task,
                    task_path: files[t].clone(),
                    oracle,
                    actions: vec![],
                    candidates: vec![],
                    failed: Arc::new(Mutex::new(None)),
                    shown: None,
                })
            };
            match set_up() {
                Ok(g) => {
                    slots.push((di, e, g.failed.clone()));
                    games.push((t, g));
                }
                Err(why) => {
                    desktops.down(di, why);
                    pending.push_front(e);
                }
            }
        }
        if games.is_empty() {
            continue;
        }
        let p = SampleParams {
            seed: sp.seed.wrapping_add(wave.wrapping_mul(104_729)),
            ..sp.clone()
        };
        wave += 1;
        let trajs = play(policy, games, (step_limit, 0), &p, d.constrain_actions, bar)?;
        for (traj, (di, e, failed)) in trajs.into_iter().zip(slots) {
            let why = failed.lock().expect("not poisoned").take();
            match why {
                Some(why) => {
                    desktops.down(di, why);
                    pending.push_back(e);
                }
                None => {
                    *desktops
                        .played
                        .entry(desktops.desktops[di].0.clone())
                        .or_default() += 1;
                    done[e] = Some(traj);
                }
            }
        }
    }
    Ok(done
        .into_iter()
        .map(|t| t.expect("every episode played"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_every_desktop_down_the_iteration_stops_with_an_error_naming_each() {
        // two ports nothing listens on
        let urls: Vec<String> = (0..2)
            .map(|_| {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                format!("http://{}", l.local_addr().unwrap())
            })
            .collect();
        let cfg = RunConfig::with_table(
            "desktop",
            DesktopConfig {
                desktops: urls.clone(),
                desktop_timeout: 5.0,
                ..Default::default()
            },
        );
        let mut d = Desktops::of(DesktopConfig::of(&cfg));
        let spec = rla_desktop::tasks::family::split(rla_core::Split::Train, 1).remove(0);
        let policy = crate::play::testing::Scripted {
            answers: vec!["done"],
            prompts: Default::default(),
        };
        let e = rollout(
            &policy,
            &cfg,
            &mut d,
            &[Source::Generated { spec }],
            2,
            4,
            &SampleParams::default(),
            false,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("every desktop of desktop.desktops is down"),
            "{e}"
        );
        for u in &urls {
            assert!(e.contains(u.as_str()), "{e}");
        }
        assert!(d.desktops.iter().all(|(_, down)| down.is_some()));
        assert!(d.played.is_empty());
    }

    #[test]
    fn an_osworld_vm_is_reverted_by_the_configs_command_with_its_url() {
        let url = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("reverted");
        let spec = rla_desktop::tasks::family::split(rla_core::Split::Train, 1).remove(0);
        let policy = crate::play::testing::Scripted {
            answers: vec!["done"],
            prompts: Default::default(),
        };
        let run = |revert: Vec<String>| {
            let cfg = RunConfig::with_table(
                "desktop",
                DesktopConfig {
                    desktops: vec![url.clone()],
                    revert: Some(revert),
                    desktop_timeout: 5.0,
                    ..Default::default()
                },
            );
            let mut d = Desktops::of(DesktopConfig::of(&cfg));
            rollout(
                &policy,
                &cfg,
                &mut d,
                &[Source::Generated { spec: spec.clone() }],
                1,
                4,
                &SampleParams::default(),
                false,
                None,
            )
            .unwrap_err()
            .to_string()
        };
        // the command runs first, with the desktop's URL; the desktop then does not answer
        let e = run(vec![
            "sh".into(),
            "-c".into(),
            format!("echo \"$RLA_DESKTOP_URL\" >> {}", log.display()),
        ]);
        assert_eq!(std::fs::read_to_string(&log).unwrap().trim(), url);
        assert!(e.contains(&url) && !e.contains("desktop.revert"), "{e}");
        // a command that fails marks the desktop down, saying why
        let e = run(vec!["false".into()]);
        assert!(e.contains("desktop.revert false exited"), "{e}");
    }
}
