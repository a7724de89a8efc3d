//! The desktop's episodes: the game the shared play loop drives (the screen as the policy sees
//! it, the vocabulary's candidates, the action run as OSWorld pyautogui code, the expert's
//! progress label), and the fixed splits.

use super::prompts::{
    free_form_actions, parse_answer, policy_answer, policy_prompt, previous_actions,
    screenshot_prompt, step_summary, tree_prompt,
};
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::desktop::config::DesktopConfig;
use crate::desktop::config::DesktopObservation;
use crate::play::{play, Applied, Game, Prompt, Trajectory, Turn};
use crate::setting::Split;
use anyhow::{Context, Result};
use rla_desktop::play::tiny;
use rla_desktop::tasks::episode::DesktopEpisode as Live;
use rla_desktop::tasks::expert;
use rla_desktop::tasks::family::{self, Spec};
use rla_desktop::ui::a11y::{self, Node, TreeOptions};
use rla_desktop::ui::render;
use rla_lm::{Sample, SampleParams, Sampler, VisualMessage};

/// What the policy sees of an episode's screen, given its compact tree `nodes`; with the
/// accessibility-tree observation also the full tree its answers refer to (else `nodes`).
fn observe(
    ep: &Live,
    nodes: &[Node],
    cfg: &RunConfig,
    policy: &dyn Sampler,
) -> (String, Option<Vec<Node>>) {
    match DesktopConfig::of(cfg).observation {
        DesktopObservation::Compact => (
            tiny::observation(&ep.desktop, nodes, DesktopConfig::of(cfg).summary()),
            None,
        ),
        // the image goes beside the prompt; the record keeps the compact summary
        DesktopObservation::Screenshot => (
            tiny::observation(&ep.desktop, nodes, DesktopConfig::of(cfg).summary()),
            Some(ep.tree(TreeOptions::default())),
        ),
        DesktopObservation::A11yTree => {
            let full = ep.tree(TreeOptions::default());
            let count = |l: &str| policy.encode(l).map(|v| v.len()).unwrap_or(l.len());
            (
                a11y::linearize(&full, DesktopConfig::of(cfg).tree_tokens, &count),
                Some(full),
            )
        }
    }
}

/// The policy's prompt for the configured observation.
pub(crate) fn prompt_for(
    cfg: &RunConfig,
    instruction: &str,
    previous: &str,
    observation: &str,
) -> String {
    match DesktopConfig::of(cfg).observation {
        DesktopObservation::Compact => policy_prompt(instruction, previous, observation),
        DesktopObservation::A11yTree => tree_prompt(
            instruction,
            previous,
            observation,
            DesktopConfig::of(cfg).screen_width,
            DesktopConfig::of(cfg).screen_height,
        ),
        DesktopObservation::Screenshot => screenshot_prompt(
            instruction,
            previous,
            DesktopConfig::of(cfg).screen_width,
            DesktopConfig::of(cfg).screen_height,
        ),
    }
}

/// A task an episode opens: a generated task's spec, or a pool task's source (a spec or a
/// task file).
pub trait Opens {
    /// The task as an episode opens it.
    fn opened(&self, cfg: &RunConfig) -> Result<rla_desktop::tasks::episode::Opened>;
}

impl Opens for Spec {
    fn opened(&self, _cfg: &RunConfig) -> Result<rla_desktop::tasks::episode::Opened> {
        Ok(family::generate(self).into())
    }
}

/// Opens a task's episode on a desktop of the configured screen size.
pub(crate) fn open(task: &impl Opens, cfg: &RunConfig) -> Result<Live> {
    Live::new(
        task.opened(cfg)?,
        DesktopConfig::of(cfg).screen_width,
        DesktopConfig::of(cfg).screen_height,
    )
    .map_err(anyhow::Error::msg)
}

/// The vocabulary's action an answer names among `candidates`, with its code on the desktop
/// `d` whose tree is `nodes` (`Err`: why it has none); `None` when the answer names no action.
pub(crate) fn vocabulary_action(
    text: &str,
    candidates: &[String],
    d: &rla_desktop::ui::app::Desktop,
    nodes: &[Node],
) -> Option<(String, Result<String, String>)> {
    let a = parse_answer(text, candidates)?;
    let code =
        tiny::to_code(a, d, nodes).ok_or_else(|| format!("`{a}` names nothing on the screen"));
    Some((a.clone(), code))
}

/// The oracle's progress label of a step: the expert's distance to the goal shrank (or the goal
/// came within its reach).
pub(crate) fn progressed(before: Option<usize>, after: Option<usize>) -> bool {
    match (before, after) {
        (Some(b), Some(a)) => a < b,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// One desktop episode as the play loop drives it.
struct DeskGame<'a> {
    ep: Live,
    cfg: &'a RunConfig,
    oracle: bool,
    actions: Vec<String>,
    /// What the last turn showed: the compact tree, the tree the policy's answers refer to,
    /// and the vocabulary's candidates.
    nodes: Vec<Node>,
    seen: Option<Vec<Node>>,
    candidates: Vec<String>,
}

impl Game for DeskGame<'_> {
    fn turn(&mut self, policy: &dyn Sampler, constrained: bool) -> Result<Turn> {
        let cfg = self.cfg;
        let nodes = self.ep.tree(tiny::TREE);
        let (o, seen) = observe(&self.ep, &nodes, cfg, policy);
        let instruction = &self.ep.task.task.instruction;
        let c = tiny::candidates(&self.ep.desktop, &nodes, instruction);
        let prev = previous_actions(&self.actions, DesktopConfig::of(cfg).history);
        let text = prompt_for(cfg, instruction, &prev, &o);
        let prompt = if DesktopConfig::of(cfg).observation == DesktopObservation::Screenshot {
            let full = seen.as_deref().unwrap_or(&nodes);
            Prompt::Visual(VisualMessage {
                role: "user".into(),
                text,
                png: Some(render::draw(&self.ep.desktop, full, false).png()),
            })
        } else {
            Prompt::Text(text)
        };
        let answers = if constrained {
            c.iter().map(|a| policy_answer(a)).collect()
        } else {
            vec![]
        };
        self.nodes = nodes;
        self.seen = seen;
        self.candidates = c;
        Ok(Turn {
            prompt,
            answers,
            // the screen as the policy reads it is the desktop's state
            state: Some(rla_core::seed::mix(0, &o)),
            observation: o,
            previous: prev,
        })
    }

    fn apply(&mut self, policy: &dyn Sampler, s: &Sample) -> Result<Applied> {
        let cfg = self.cfg;
        let (nodes, seen) = (&self.nodes, &self.seen);
        let before = if self.oracle {
            expert::distance(&self.ep)
        } else {
            None
        };
        let (action, code, error) =
            match vocabulary_action(&s.text, &self.candidates, &self.ep.desktop, nodes) {
                Some((a, Ok(code))) => {
                    let outcome = self.ep.step_code(&code, nodes);
                    (a, code, outcome.error)
                }
                Some((a, Err(e))) => (a, String::new(), Some(e)),
                // a real model's answer: a tool call or code, run on the tree it saw
                None if !DesktopConfig::of(cfg).constrain_actions => {
                    let (w, h) = (
                        DesktopConfig::of(cfg).screen_width,
                        DesktopConfig::of(cfg).screen_height,
                    );
                    let code: String = s.text.trim().chars().take(400).collect();
                    match free_form_actions(&s.text, w, h) {
                        Ok(acts) => {
                            let outcome = self.ep.step(&acts, seen.as_deref().unwrap_or(nodes));
                            (step_summary(&s.text), code, outcome.error)
                        }
                        Err(e) => {
                            self.ep.steps += 1;
                            (step_summary(&s.text), code, Some(e))
                        }
                    }
                }
                None => {
                    self.ep.steps += 1;
                    (
                        s.text.clone(),
                        String::new(),
                        Some("not an action of the vocabulary".into()),
                    )
                }
            };
        let (after, _) = observe(&self.ep, &self.ep.tree(tiny::TREE), cfg, policy);
        let next = match &error {
            Some(e) => format!("{after} | the action failed: {e}"),
            None => after,
        };
        let progress = self.oracle && progressed(before, expert::distance(&self.ep));
        self.actions.push(action.clone());
        Ok(Applied {
            action,
            code,
            error,
            next_observation: next,
            progress,
            planner_progress: None,
            done: self.ep.finished.is_some(),
        })
    }

    fn score(self) -> Result<f64> {
        self.ep
            .score()
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("scoring {}", self.ep.task.task.id))
    }
}

/// Plays `rollouts` episodes of each task; all episodes step together (one generation call per
/// step). `oracle` computes the expert's progress label of every step.
#[allow(clippy::too_many_arguments)]
pub fn rollout<T: Opens>(
    policy: &dyn Sampler,
    cfg: &RunConfig,
    tasks: &[T],
    rollouts: usize,
    step_limit: usize,
    sp: &SampleParams,
    oracle: bool,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let mut games = Vec::new();
    for (ti, t) in tasks.iter().enumerate() {
        for _ in 0..rollouts {
            games.push((
                ti,
                DeskGame {
                    ep: open(t, cfg)?,
                    cfg,
                    oracle,
                    actions: vec![],
                    nodes: vec![],
                    seen: None,
                    candidates: vec![],
                },
            ));
        }
    }
    play(
        policy,
        games,
        (step_limit, 0),
        sp,
        DesktopConfig::of(cfg).constrain_actions,
        bar,
    )
}

/// The first `n` tasks of a fixed split.
pub fn split_tasks(world: family::World, split: Split, n: usize) -> Vec<Spec> {
    family::split_in(world, split, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::play::testing::Scripted;

    #[test]
    fn the_screen_size_is_the_desktops() {
        let mut c = RunConfig::with_table("desktop", DesktopConfig::default());
        DesktopConfig::of_mut(&mut c).screen_width = 1280;
        DesktopConfig::of_mut(&mut c).screen_height = 720;
        let spec = family::split(rla_core::Split::Train, 1).remove(0);
        let ep = open(&spec, &c).unwrap();
        assert_eq!(
            (ep.desktop.layout.width, ep.desktop.layout.height),
            (1280, 720)
        );
    }

    #[test]
    fn free_form_answers_run_as_tool_calls_or_code_on_the_tree_the_model_saw() {
        let mut cfg = RunConfig::with_table("desktop", DesktopConfig::default());
        DesktopConfig::of_mut(&mut cfg).constrain_actions = false;
        DesktopConfig::of_mut(&mut cfg).observation = DesktopObservation::A11yTree;
        let spec = family::split(rla_core::Split::Train, 1).remove(0);
        // where the Edit menu is on this screen
        let ep = open(&spec, &cfg).unwrap();
        let edit = ep
            .tree(TreeOptions::default())
            .into_iter()
            .find(|n| n.tag == "menu" && n.name == "Edit")
            .unwrap();
        let (x, y) = edit.rect.center();
        let click = format!(
            "Action: open the Edit menu\n<tool_call>\n{{\"name\": \"computer_use\", \"arguments\": {{\"action\": \"left_click\", \"coordinate\": [{x}, {y}]}}}}\n</tool_call>"
        );
        let sampler = Scripted {
            answers: vec![
                Box::leak(click.into_boxed_str()),
                "Action: close it\n```python\npyautogui.press('esc')\n```",
                "Action: look around\nimport os; os.system('true')",
                "DONE",
            ],
            prompts: Default::default(),
        };
        let sp = SampleParams::default();
        let trajs = rollout(&sampler, &cfg, &[spec], 1, 10, &sp, false, None).unwrap();
        let steps = &trajs[0].steps;
        assert_eq!(steps.len(), 4, "DONE ends the episode");
        assert_eq!(steps[0].action, "open the Edit menu");
        assert_eq!(steps[0].error, None);
        assert!(
            steps[0].next_observation.contains("menu-item"),
            "the menu opened"
        );
        assert_eq!(steps[1].action, "close it");
        assert_eq!(steps[1].error, None);
        assert!(!steps[1].next_observation.contains("menu-item"));
        let e = steps[2].error.as_deref().unwrap();
        assert!(e.contains("import") || e.contains("pyautogui"), "{e}");
        // the prompts carry the tree, the action space and the earlier steps' sentences
        let prompts = sampler.prompts.lock().unwrap();
        assert!(prompts[0].contains(a11y::HEADER) && prompts[0].contains("computer_use"));
        assert!(prompts[2].contains("Step 1: open the Edit menu; Step 2: close it"));
        // the compact observation with the constraint off keeps the vocabulary's answers working
        let mut cfg = cfg.clone();
        DesktopConfig::of_mut(&mut cfg).observation = DesktopObservation::Compact;
        let s2 = Scripted {
            answers: vec!["Action: copy", "done"],
            prompts: Default::default(),
        };
        let t = rollout(
            &s2,
            &cfg,
            &family::split(rla_core::Split::Train, 1),
            1,
            5,
            &sp,
            false,
            None,
        )
        .unwrap();
        assert_eq!(t[0].steps[0].code, "pyautogui.hotkey('ctrl', 'c')");
        assert!(!s2.prompts.lock().unwrap()[0].contains(a11y::HEADER));
    }

    #[test]
    fn the_tree_is_cut_at_its_token_budget() {
        let mut cfg = RunConfig::with_table("desktop", DesktopConfig::default());
        DesktopConfig::of_mut(&mut cfg).observation = DesktopObservation::A11yTree;
        let spec = family::split(rla_core::Split::Train, 1).remove(0);
        let ep = open(&spec, &cfg).unwrap();
        let s = Scripted {
            answers: vec!["DONE"],
            prompts: Default::default(),
        };
        let nodes = ep.tree(tiny::TREE);
        let (full, _) = observe(&ep, &nodes, &cfg, &s);
        DesktopConfig::of_mut(&mut cfg).tree_tokens = 400;
        let (cut, _) = observe(&ep, &nodes, &cfg, &s);
        assert!(
            cut.len() <= 400 + "\n[...]".len() && cut.ends_with("[...]"),
            "{}",
            cut.len()
        );
        assert!(full.len() > cut.len() && !full.ends_with("[...]"));
    }
}
