//! A task file played by the policy on a [`Screen`] of `rla_desktop::play::runner` — a real desktop
//! behind OSWorld's protocol, or the native one — through the shared play loop
//! ([`crate::play::play`]): each turn the screen's screenshot with the desktop setting's
//! screenshot prompt, each answer (a `computer_use` call or pyautogui code) read as the setting
//! reads free-form answers and run on the screen as code, marks placed on the screen's tree; the
//! task's `postconfig` and evaluator score the result file, as the runner scores any agent.

use super::config::{DesktopConfig, DesktopObservation};
use super::prompts::{free_form_actions, previous_actions, step_summary};
use crate::config::{RunConfig, SettingConfig};
use crate::play::{play, Applied, Game, Prompt, Turn};
use anyhow::Result;
use rla_desktop::osworld::task::DesktopTask;
use rla_desktop::play::runner::{score_on, Observation, Record, Screen};
use rla_desktop::ui::action::Action;
use rla_lm::{Sample, SampleParams, Sampler, VisualMessage};
use std::path::Path;

/// How the policy plays a task on a screen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnScreen<'a> {
    /// The screen's size, in the prompt and for the answers' coordinates.
    pub size: (u32, u32),
    /// Steps at most.
    pub step_limit: usize,
    /// Tokens of each answer at most.
    pub max_tokens: usize,
    /// Record the screen before each step as `record.0/step-NN.png`, `record.1` pixels wide.
    pub record: Option<(&'a Path, u32)>,
}

/// One task on a screen, as the play loop drives it.
struct ScreenGame<'a> {
    screen: &'a mut dyn Screen,
    cfg: RunConfig,
    instruction: String,
    record: Option<(&'a Path, u32)>,
    /// The step summaries of the answers so far (the prompt's previous actions).
    actions: Vec<String>,
    /// What the last turn saw.
    obs: Observation,
    /// Where the score is computed: the task, its file, the folder the result is fetched to.
    task: DesktopTask,
    task_path: &'a Path,
    dir: &'a Path,
}

impl ScreenGame<'_> {
    fn snap(&self, png: &[u8]) -> Result<()> {
        let Some((to, width)) = self.record else {
            return Ok(());
        };
        let img = rla_desktop::ui::render::Image::from_png(png).map_err(anyhow::Error::msg)?;
        let h = (img.height as u64 * width as u64 / img.width.max(1) as u64).max(1) as u32;
        let png = img.scaled(width, h).map_err(anyhow::Error::msg)?.png();
        std::fs::create_dir_all(to)?;
        rla_desktop::sheet::xlsx::write_atomic(
            &to.join(format!("step-{:02}.png", self.actions.len())),
            &png,
        )?;
        Ok(())
    }
}

impl Game for ScreenGame<'_> {
    fn turn(&mut self, _: &dyn Sampler, _: bool) -> Result<Turn> {
        let mut obs = self.screen.observe().map_err(anyhow::Error::msg)?;
        let png = self.screen.screenshot().map_err(anyhow::Error::msg)?;
        self.snap(&png)?;
        obs.screenshot = Some(png.clone());
        let d = DesktopConfig::of(&self.cfg);
        let prev = previous_actions(&self.actions, d.history);
        let text = super::play::prompt_for(&self.cfg, &self.instruction, &prev, "");
        self.obs = obs;
        Ok(Turn {
            prompt: Prompt::Visual(VisualMessage {
                role: "user".into(),
                text,
                png: Some(png),
            }),
            answers: vec![],
            observation: String::new(),
            previous: prev,
            // a screenshot's pixels are not kept: no state to group by
            state: None,
        })
    }

    fn apply(&mut self, _: &dyn Sampler, s: &Sample) -> Result<Applied> {
        let d = DesktopConfig::of(&self.cfg);
        self.actions.push(step_summary(&s.text));
        let applied = |code: String, error: Option<String>, done: bool| Applied {
            action: step_summary(&s.text),
            code,
            error,
            next_observation: String::new(),
            progress: false,
            planner_progress: None,
            done,
        };
        let code = match free_form_actions(&s.text, d.screen_width, d.screen_height) {
            // an answer that is no action is the step's error on the desktop
            Err(_) => s.text.clone(),
            Ok(acts) if acts.iter().any(|a| matches!(a, Action::Done)) => {
                return Ok(applied("DONE".into(), None, true))
            }
            Ok(acts) if acts.iter().any(|a| matches!(a, Action::Fail)) => {
                return Ok(applied("FAIL".into(), None, true))
            }
            Ok(acts) => {
                let marks = rla_desktop::ui::a11y::mark_centres(&self.obs.nodes);
                rla_desktop::remote::code::actions(&acts, &marks)
                    .map_err(anyhow::Error::msg)?
                    .unwrap_or_else(|| "WAIT".into())
            }
        };
        let error = self
            .screen
            .act(&code, &self.obs)
            .map_err(anyhow::Error::msg)?;
        Ok(applied(code, error, false))
    }

    fn score(self) -> Result<f64> {
        let (score, _) = score_on(self.screen, &self.task, self.task_path, self.dir)
            .map_err(anyhow::Error::msg)?;
        Ok(score)
    }
}

/// Plays the task file `task_path` greedily with `policy` on `screen`: set-up, at most
/// `o.step_limit` steps (until the policy says it is done or has failed), `postconfig`, the
/// result file fetched into `dir`, the evaluator's score; the steps' code, each with the error
/// it met (the loop keeps the score, not the result file's path: `result` is `None`).
pub fn play_on_screen(
    policy: &dyn Sampler,
    screen: &mut dyn Screen,
    task_path: &Path,
    dir: &Path,
    o: OnScreen,
) -> Result<Record> {
    let task = DesktopTask::load(task_path)?;
    task.check().map_err(anyhow::Error::msg)?;
    screen
        .set_up(&task, task_path)
        .map_err(anyhow::Error::msg)?;
    let cfg = RunConfig::with_table(
        "desktop",
        DesktopConfig {
            observation: DesktopObservation::Screenshot,
            constrain_actions: false,
            screen_width: o.size.0,
            screen_height: o.size.1,
            ..Default::default()
        },
    );
    let game = ScreenGame {
        screen,
        cfg,
        instruction: task.instruction.clone(),
        record: o.record,
        actions: vec![],
        obs: Observation::default(),
        task,
        task_path,
        dir,
    };
    let sp = SampleParams::greedy(o.max_tokens);
    let t = play(policy, vec![(0, game)], (o.step_limit, 0), &sp, false, None)?
        .pop()
        .ok_or_else(|| anyhow::anyhow!("the play loop returned no episode"))?;
    Ok(Record {
        score: t.score,
        steps: t.steps.into_iter().map(|s| (s.code, s.error)).collect(),
        result: None,
    })
}
