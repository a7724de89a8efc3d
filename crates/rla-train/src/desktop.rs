//! The GUI setting: a computer-use agent on the native spreadsheet desktop (`rla-desktop`),
//! tasks in OSWorld's format. The policy sees the instruction, its previous actions ("Step i:
//! …", the last `desktop.history`) and the desktop's compact accessibility tree, and answers
//! `Action: <action>` in the tiny action vocabulary (`rla_desktop::tiny`), drawn among the
//! state's candidates; each action runs as OSWorld pyautogui code. An episode ends at `done`
//! or the step limit and is scored by the task's evaluator after its postconfig (which saves).
//! The judge sees the earlier actions, the objective, the observation, the step's response and
//! the observation after it, and answers `\boxed{1}` only if the step is relevant, executable
//! and makes visible progress. Adaptation switches the task's evaluator (harder) or adds hints
//! (easier), and varies the number of objects.

use crate::config::{DesktopObservation, RunConfig};
use crate::pool::PoolTask;
use crate::prompts::{reasoning, summarise_critiques};
use crate::rollout::{
    encode_answer, encode_chat, encode_prompt, encode_response, judge_prompts,
    push_step_judgements, step_judge_quality, Verdicts,
};
use crate::run::RunDir;
use crate::setting::{Ctx, Episode, Generation, Group, JudgeQuality, Setting, Split, Step};
use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rla_core::adapt::Direction;
use rla_core::filter::Band;
use rla_core::reward::{Outcome, StepScore};
use rla_desktop::a11y::{self, Node, TreeOptions};
use rla_desktop::action::{parse_code, parse_tool_calls, Action, Coordinates};
use rla_desktop::episode::Episode as Live;
use rla_desktop::family::{self, Spec};
use rla_desktop::{expert, render, tiny};
use rla_lm::{SampleParams, Sampler, VisualMessage};
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::pretrain::Example;

/// A task of the pool: a generated task's spec with its lineage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesktopTask {
    /// The task's id (its OSWorld task id).
    pub id: String,
    /// The task it was rewritten from.
    pub parent: Option<String>,
    /// What generates it.
    pub spec: Spec,
}

impl DesktopTask {
    /// The pool task of a spec.
    pub fn new(spec: Spec, parent: Option<String>) -> DesktopTask {
        DesktopTask {
            id: family::generate(&spec).task.id,
            parent,
            spec,
        }
    }
}

impl PoolTask for DesktopTask {
    fn id(&self) -> &str {
        &self.id
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
}

/// The GUI setting.
#[derive(Debug, Default)]
pub struct Gui;

/// One step of an episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRec {
    /// The observation the policy saw.
    pub observation: String,
    /// The previous actions it was told.
    pub previous: String,
    /// Its prompt.
    pub prompt_ids: Vec<u32>,
    /// Its answer.
    pub response_ids: Vec<u32>,
    /// `log π_old` of the answer.
    pub logprobs: Vec<f32>,
    /// The answer's text.
    pub answer: String,
    /// The action, and the pyautogui code it ran.
    pub action: String,
    /// The code.
    pub code: String,
    /// Why the step failed, if it did.
    pub error: Option<String>,
    /// The observation after it.
    pub next_observation: String,
    /// The expert oracle's label: did the step shorten the expert's remaining plan?
    pub progress: bool,
}

/// One episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trajectory {
    /// Its task's index in the batch.
    pub task: usize,
    /// Its steps.
    pub steps: Vec<StepRec>,
    /// The evaluator's score.
    pub score: f64,
}

/// One iteration's episodes and verdicts.
#[derive(Debug, Default)]
pub struct Played {
    /// Every episode.
    pub trajs: Vec<Trajectory>,
    /// The m verdicts on each step.
    pub verdicts: Vec<Vec<Verdicts>>,
}

/// The policy's prompt.
pub fn policy_prompt(instruction: &str, previous: &str, observation: &str) -> String {
    format!(
        "You operate a spreadsheet. Task: {instruction}\nPrevious actions: {previous}\nScreen: {observation}\nAnswer with one action."
    )
}

/// What a free-form answer may do, as the prompts with the tree or the screenshot explain it.
fn action_space(width: u32, height: u32) -> String {
    format!(
        "You operate a spreadsheet application (LibreOffice Calc) on a {width}x{height} screen. \
Each step, answer with one line `Action: <what you do, in one sentence>` and then one action: \
either a tool call\n<tool_call>\n{{\"name\": \"computer_use\", \"arguments\": {{\"action\": \"left_click\", \"coordinate\": [x, y]}}}}\n</tool_call>\n\
(actions: key with \"keys\", type with \"text\", mouse_move, left_click, right_click, middle_click, double_click, left_click_drag with \"coordinate\", scroll with \"pixels\", wait, terminate with \"status\" success or failure; coordinates are screen pixels), \
or pyautogui code in a ```python block (click, doubleClick, rightClick, moveTo, dragTo, write, press, hotkey, scroll), \
or WAIT, DONE or FAIL. Changes count once the file is saved."
    )
}

/// The policy's prompt with the accessibility tree, for models that answer freely: the screen,
/// the action space (a `computer_use` tool call or pyautogui code), the task and its history.
pub fn tree_prompt(
    instruction: &str,
    previous: &str,
    tree: &str,
    width: u32,
    height: u32,
) -> String {
    format!(
        "{}\nTask: {instruction}\nPrevious actions: {previous}\n\
The screen's accessibility tree (tag, name, text, class, description, position, size):\n{tree}",
        action_space(width, height)
    )
}

/// The text beside a screenshot, for vision-language models: the action space, the task and
/// its history (the image follows the text).
pub fn screenshot_prompt(instruction: &str, previous: &str, width: u32, height: u32) -> String {
    format!(
        "{}\nTask: {instruction}\nPrevious actions: {previous}\nThe screenshot of the screen follows.",
        action_space(width, height)
    )
}

/// The actions of a free-form answer: `computer_use` tool calls (screen pixels), or pyautogui
/// code (in a fence, or on the lines after `Action: …`), or WAIT, DONE or FAIL.
pub fn free_form_actions(text: &str, width: u32, height: u32) -> Result<Vec<Action>, String> {
    let t = text.trim();
    if t.contains("<tool_call>") || t.lines().any(|l| l.trim_start().starts_with('{')) {
        return parse_tool_calls(t, Coordinates::Absolute, width, height).map_err(|e| e.0);
    }
    match parse_code(t) {
        Ok(a) => Ok(a),
        Err(e) => match t.split_once('\n') {
            Some((first, rest)) if first.trim_start().starts_with("Action:") => {
                parse_code(rest.trim()).map_err(|e| e.0)
            }
            _ => Err(e.0),
        },
    }
}

/// What a free-form step is called in "Previous actions": its `Action:` sentence, else the
/// answer's start.
pub fn step_summary(text: &str) -> String {
    let t = text.trim();
    let line = t
        .lines()
        .find_map(|l| l.trim().strip_prefix("Action:"))
        .unwrap_or_else(|| t.lines().next().unwrap_or(""));
    line.trim().chars().take(160).collect()
}

/// What the policy sees of an episode's screen, given its compact tree `nodes`; with the
/// accessibility-tree observation also the full tree its answers refer to (else `nodes`).
fn observe(
    ep: &Live,
    nodes: &[Node],
    cfg: &RunConfig,
    policy: &dyn Sampler,
) -> (String, Option<Vec<Node>>) {
    match cfg.desktop.observation {
        DesktopObservation::Compact => (tiny::observation(&ep.desktop, nodes), None),
        // the image goes beside the prompt; the record keeps the compact summary
        DesktopObservation::Screenshot => (
            tiny::observation(&ep.desktop, nodes),
            Some(ep.tree(TreeOptions::default())),
        ),
        DesktopObservation::A11yTree => {
            let full = ep.tree(TreeOptions::default());
            let count = |l: &str| policy.encode(l).map(|v| v.len()).unwrap_or(l.len());
            (
                a11y::linearize(&full, cfg.desktop.tree_tokens, &count),
                Some(full),
            )
        }
    }
}

/// The policy's prompt for the configured observation.
fn prompt_for(cfg: &RunConfig, instruction: &str, previous: &str, observation: &str) -> String {
    match cfg.desktop.observation {
        DesktopObservation::Compact => policy_prompt(instruction, previous, observation),
        DesktopObservation::A11yTree => tree_prompt(
            instruction,
            previous,
            observation,
            cfg.desktop.screen_width,
            cfg.desktop.screen_height,
        ),
        DesktopObservation::Screenshot => screenshot_prompt(
            instruction,
            previous,
            cfg.desktop.screen_width,
            cfg.desktop.screen_height,
        ),
    }
}

/// The policy's answer for an action.
pub fn policy_answer(action: &str) -> String {
    format!("Action: {action}")
}

/// The action of an answer, if it names one of the candidates.
pub fn parse_answer<'a>(text: &str, candidates: &'a [String]) -> Option<&'a String> {
    let t = text.trim();
    let a = t.strip_prefix("Action:").unwrap_or(t).trim();
    candidates.iter().find(|c| c.as_str() == a)
}

/// "Step 1: click B2; Step 2: …" over the last `window` actions.
pub fn previous_actions(actions: &[String], window: usize) -> String {
    if actions.is_empty() {
        return "none".into();
    }
    let start = actions.len().saturating_sub(window);
    actions[start..]
        .iter()
        .enumerate()
        .map(|(i, a)| format!("Step {}: {a}", start + i + 1))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The judge's prompt for one step.
pub fn judge_prompt(
    instruction: &str,
    previous: &str,
    observation: &str,
    answer: &str,
    next: &str,
) -> String {
    format!(
        "Judge one step of a spreadsheet agent. Objective: {instruction}\nPrevious actions: {previous}\nScreen before: {observation}\nThe agent answered: {answer}\nScreen after: {next}\nScore 1 only if the step is relevant to the objective, executable, and makes visible progress. Reason briefly, then answer \\boxed{{1}} or \\boxed{{-1}}."
    )
}

/// A judge answer in the warm start's format.
pub fn judge_answer(action: &str, good: bool) -> String {
    if good {
        format!("{action} which helps \\boxed{{1}}")
    } else {
        format!("{action} which does not help \\boxed{{-1}}")
    }
}

struct Running {
    ep: Live,
    traj: Trajectory,
    actions: Vec<String>,
    done: bool,
}

fn open(spec: &Spec, cfg: &RunConfig) -> Result<Live> {
    Live::new(
        family::generate(spec),
        cfg.desktop.screen_width,
        cfg.desktop.screen_height,
    )
    .map_err(anyhow::Error::msg)
}

/// Plays `rollouts` episodes of each task; all episodes step together (one generation call per
/// step). `oracle` computes the expert's progress label of every step.
#[allow(clippy::too_many_arguments)]
pub fn rollout(
    policy: &dyn Sampler,
    cfg: &RunConfig,
    tasks: &[Spec],
    rollouts: usize,
    step_limit: usize,
    sp: &SampleParams,
    oracle: bool,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let mut live = Vec::new();
    for (ti, t) in tasks.iter().enumerate() {
        for _ in 0..rollouts {
            live.push(Running {
                ep: open(t, cfg)?,
                traj: Trajectory {
                    task: ti,
                    steps: vec![],
                    score: 0.0,
                },
                actions: vec![],
                done: false,
            });
        }
    }
    let window = cfg.desktop.history;
    for step in 0..step_limit {
        let active: Vec<usize> = (0..live.len()).filter(|&i| !live[i].done).collect();
        if active.is_empty() {
            break;
        }
        let mut prompts = Vec::with_capacity(active.len());
        let mut allowed = Vec::with_capacity(active.len());
        let mut cands = Vec::with_capacity(active.len());
        let mut obs = Vec::with_capacity(active.len());
        let visual = cfg.desktop.observation == DesktopObservation::Screenshot;
        let mut chats = Vec::new();
        for &i in &active {
            let r = &live[i];
            let nodes = r.ep.tree(tiny::TREE);
            let (o, seen) = observe(&r.ep, &nodes, cfg, policy);
            let c = tiny::candidates(&r.ep.desktop, &nodes, &r.ep.task.task.instruction);
            let prev = previous_actions(&r.actions, window);
            let text = prompt_for(cfg, &r.ep.task.task.instruction, &prev, &o);
            if visual {
                let full = seen.as_deref().unwrap_or(&nodes);
                chats.push(vec![VisualMessage {
                    role: "user".into(),
                    text,
                    png: Some(render::draw(&r.ep.desktop, full, false).png()),
                }]);
                prompts.push(vec![]); // the server's, image tokens included
            } else {
                prompts.push(encode_chat(policy, &text)?);
            }
            if cfg.desktop.constrain_actions {
                allowed.push(
                    c.iter()
                        .map(|a| encode_answer(policy, &policy_answer(a)))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
            obs.push((o, prev, nodes, seen));
            cands.push(c);
        }
        let p = SampleParams {
            seed: sp.seed.wrapping_add(step as u64 * 7919),
            ..sp.clone()
        };
        let out = if visual {
            policy.generate_visual(&chats, 1, &p)?
        } else if cfg.desktop.constrain_actions {
            let longest = allowed.iter().flatten().map(Vec::len).max().unwrap_or(0);
            let p = SampleParams {
                max_new_tokens: p.max_new_tokens.max(longest),
                ..p
            };
            policy.generate_within(&prompts, 1, &p, &allowed)?
        } else {
            policy.generate(&prompts, 1, &p)?
        };
        for ((k, &i), s) in active.iter().enumerate().zip(out) {
            let s = &s[0];
            let r = &mut live[i];
            let (o, prev, nodes, seen) = &obs[k];
            let before = if oracle {
                expert::distance(&r.ep)
            } else {
                None
            };
            let (action, code, error) = match parse_answer(&s.text, &cands[k]) {
                Some(a) => match tiny::to_code(a, &r.ep.desktop, nodes) {
                    Some(code) => {
                        let outcome = r.ep.step_code(&code, nodes);
                        (a.clone(), code, outcome.error)
                    }
                    None => (
                        a.clone(),
                        String::new(),
                        Some(format!("`{a}` names nothing on the screen")),
                    ),
                },
                // a real model's answer: a tool call or code, run on the tree it saw
                None if !cfg.desktop.constrain_actions => {
                    let (w, h) = (cfg.desktop.screen_width, cfg.desktop.screen_height);
                    let code: String = s.text.trim().chars().take(400).collect();
                    match free_form_actions(&s.text, w, h) {
                        Ok(acts) => {
                            let outcome = r.ep.step(&acts, seen.as_deref().unwrap_or(nodes));
                            (step_summary(&s.text), code, outcome.error)
                        }
                        Err(e) => {
                            r.ep.steps += 1;
                            (step_summary(&s.text), code, Some(e))
                        }
                    }
                }
                None => {
                    r.ep.steps += 1;
                    (
                        s.text.clone(),
                        String::new(),
                        Some("not an action of the vocabulary".into()),
                    )
                }
            };
            let (after, _) = observe(&r.ep, &r.ep.tree(tiny::TREE), cfg, policy);
            let next = match &error {
                Some(e) => format!("{after} | the action failed: {e}"),
                None => after,
            };
            let progress = if oracle {
                match (before, expert::distance(&r.ep)) {
                    (Some(b), Some(a)) => a < b,
                    (None, Some(_)) => true,
                    _ => false,
                }
            } else {
                false
            };
            r.traj.steps.push(StepRec {
                observation: o.clone(),
                previous: prev.clone(),
                prompt_ids: prompts[k].clone(),
                response_ids: s.tokens.clone(),
                logprobs: s.logprobs.clone(),
                answer: s.text.clone(),
                action: action.clone(),
                code,
                error,
                next_observation: next,
                progress,
            });
            r.actions.push(action);
            if r.ep.finished.is_some() {
                r.done = true;
            }
        }
        if let Some(b) = bar {
            b.inc(active.len() as u64);
        }
    }
    let mut out = Vec::with_capacity(live.len());
    for mut r in live {
        r.traj.score =
            r.ep.score()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("scoring {}", r.ep.task.task.id))?;
        out.push(r.traj);
    }
    Ok(out)
}

/// The m verdicts of the judge on every step.
pub fn judge(
    reward: &dyn Sampler,
    tasks: &[Spec],
    trajs: &[Trajectory],
    m: usize,
    sp: &SampleParams,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Vec<Vec<Verdicts>>> {
    let instructions: Vec<String> = tasks
        .iter()
        .map(|t| family::generate(t).task.instruction)
        .collect();
    let prompts = trajs
        .iter()
        .map(|t| {
            t.steps
                .iter()
                .map(|s| {
                    let text = judge_prompt(
                        &instructions[t.task],
                        &s.previous,
                        &s.observation,
                        &s.answer,
                        &s.next_observation,
                    );
                    encode_chat(reward, &text)
                })
                .collect()
        })
        .collect::<Result<Vec<Vec<Vec<u32>>>>>()?;
    judge_prompts(reward, &prompts, m, sp, bar)
}

/// The first `n` tasks of a fixed split.
pub fn split_tasks(split: Split, n: usize) -> Vec<Spec> {
    let s = match split {
        Split::InDomain => family::Split::InDomain,
        Split::Ood => family::Split::Ood,
        Split::Validation => family::Split::Validation,
        Split::Train => family::Split::Train,
    };
    family::split(s, n)
}

impl Setting for Gui {
    type Task = DesktopTask;
    type Record = Played;

    fn name(&self) -> &'static str {
        "desktop"
    }

    fn initial_pool(&self, cfg: &RunConfig) -> Vec<DesktopTask> {
        // the training pool's own seed stream, offset by the run's seed
        let mut specs = family::split(
            family::Split::Train,
            cfg.pool_size + cfg.seed as usize % 997,
        );
        specs.drain(..cfg.seed as usize % 997);
        specs
            .into_iter()
            .map(|s| DesktopTask::new(s, None))
            .collect()
    }

    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[DesktopTask],
    ) -> Result<(Vec<Group>, Played)> {
        let cfg = ctx.cfg;
        let sp = SampleParams {
            temperature: cfg.policy.temperature,
            max_new_tokens: cfg.policy.max_new_tokens,
            seed: ctx.seed(2),
            ..Default::default()
        };
        let specs: Vec<Spec> = tasks.iter().map(|t| t.spec.clone()).collect();
        let bar = ctx.bar(
            (tasks.len() * cfg.rollouts_per_task * cfg.desktop.train_step_limit) as u64,
            &format!("iter {} rollout", ctx.k),
        );
        let trajs = rollout(
            policy,
            cfg,
            &specs,
            cfg.rollouts_per_task,
            cfg.desktop.train_step_limit,
            &sp,
            true,
            bar.as_ref(),
        )?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let mut groups: Vec<Group> = vec![Group::default(); tasks.len()];
        for t in &trajs {
            let won = t.score >= 1.0;
            groups[t.task].episodes.push(Episode {
                outcome: Outcome::from_won(won).value(),
                won,
                steps: t
                    .steps
                    .iter()
                    .map(|s| Step {
                        action: Generation {
                            prompt: s.prompt_ids.clone(),
                            response: s.response_ids.clone(),
                            logprobs: s.logprobs.clone(),
                        },
                    })
                    .collect(),
            });
        }
        Ok((
            groups,
            Played {
                trajs,
                verdicts: vec![],
            },
        ))
    }

    fn judge(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        tasks: &[DesktopTask],
        groups: &mut [Group],
        played: &mut Played,
    ) -> Result<()> {
        let cfg = ctx.cfg;
        let steps: usize = played.trajs.iter().map(|t| t.steps.len()).sum();
        let bar = ctx.bar(steps as u64, &format!("iter {} judge", ctx.k));
        let jp = SampleParams {
            temperature: cfg.reward.temperature,
            max_new_tokens: cfg.reward.max_new_tokens,
            seed: ctx.seed(3),
            ..Default::default()
        };
        let specs: Vec<Spec> = tasks.iter().map(|t| t.spec.clone()).collect();
        played.verdicts = judge(
            reward,
            &specs,
            &played.trajs,
            cfg.judge_samples,
            &jp,
            bar.as_ref(),
        )?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        push_step_judgements(
            groups,
            played
                .trajs
                .iter()
                .zip(&played.verdicts)
                .map(|(t, v)| (t.task, v.as_slice())),
        );
        Ok(())
    }

    fn judge_quality(&self, _groups: &[Group], played: &Played) -> JudgeQuality {
        let q = step_judge_quality(played.trajs.iter().zip(&played.verdicts).flat_map(
            |(t, vs)| {
                t.steps
                    .iter()
                    .zip(vs)
                    .map(move |(s, v)| (t.score >= 1.0, s.progress, v))
            },
        ));
        let failed = played
            .trajs
            .iter()
            .flat_map(|t| &t.steps)
            .filter(|s| s.error.is_some())
            .count();
        let steps: usize = played.trajs.iter().map(|t| t.steps.len()).sum();
        JudgeQuality {
            extra: Some(serde_json::json!({
                "failed_actions": failed,
                "steps": steps,
                "mean_score": played.trajs.iter().map(|t| t.score).sum::<f64>() / played.trajs.len().max(1) as f64,
            })),
            ..q
        }
    }

    fn policy_band(&self, cfg: &RunConfig) -> Band {
        cfg.policy_band
    }

    fn reward_band(&self, cfg: &RunConfig) -> Band {
        cfg.reward_band
    }

    fn critique(
        &self,
        _ctx: Ctx,
        _reward: &dyn Sampler,
        i: usize,
        _groups: &[Group],
        played: &Played,
    ) -> Option<String> {
        // the judge's reasoning on high-risk steps (all m say −1) of the task's failed episodes
        let mut reasons = Vec::new();
        for (t, vs) in played.trajs.iter().zip(&played.verdicts) {
            if t.task != i || t.score >= 1.0 {
                continue;
            }
            for v in vs {
                if v.scores.iter().all(|s| *s == StepScore::Negative) {
                    reasons.extend(v.texts.iter().map(|x| reasoning(x).to_string()));
                }
            }
        }
        summarise_critiques(&reasons)
    }

    fn rewrite(
        &mut self,
        _ctx: Ctx,
        _reward: &dyn Sampler,
        task: &DesktopTask,
        direction: Direction,
        _critique: Option<&str>,
        _i: usize,
    ) -> Result<Option<(String, DesktopTask)>> {
        let r = match direction {
            Direction::Harder => family::harder(&task.spec),
            Direction::Easier => family::easier(&task.spec),
            Direction::Keep => None,
        };
        Ok(r.map(|(what, spec)| (what, DesktopTask::new(spec, Some(task.id.clone())))))
    }

    fn split_size(&self, split: Split) -> Option<usize> {
        Some(match split {
            Split::InDomain => family::Split::InDomain.size(),
            Split::Ood => family::Split::Ood.size(),
            Split::Validation => family::Split::Validation.size(),
            Split::Train => return None,
        })
    }

    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        let cfg = ctx.cfg;
        let tasks = split_tasks(split, n);
        if tasks.is_empty() {
            return Ok(0.0);
        }
        let bar = ctx.bar(
            (tasks.len() * cfg.desktop.eval_step_limit) as u64,
            &format!("eval {split:?}"),
        );
        let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
        let trajs = rollout(
            policy,
            cfg,
            &tasks,
            1,
            cfg.desktop.eval_step_limit,
            &sp,
            false,
            bar.as_ref(),
        )?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        Ok(trajs.iter().filter(|t| t.score >= 1.0).count() as f64 / trajs.len() as f64)
    }

    fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        tasks: &[DesktopTask],
        played: &Played,
    ) -> Result<()> {
        let picked: Vec<serde_json::Value> = played
            .trajs
            .iter()
            .enumerate()
            .filter(|(j, _)| j % 8 == 0)
            .take(6)
            .map(|(j, t)| {
                serde_json::json!({
                    "task_id": tasks[t.task].id,
                    "score": t.score,
                    "steps": t.steps.iter().enumerate().map(|(i, s)| serde_json::json!({
                        "action": s.action, "code": s.code, "error": s.error, "screen_after": s.next_observation,
                        "oracle_progress": s.progress,
                        "verdicts": played.verdicts.get(j).and_then(|v| v.get(i)).map(|v| v.texts.clone()),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        dir.save_json(&format!("samples/iter-{k:04}.json"), &picked)
    }

    fn warm_start(&self, cfg: &RunConfig, out: &Path, progress: bool) -> Result<Vec<String>> {
        warm_start(cfg, out, progress)
    }
}

/// Demonstrations: the expert's actions in states of noisy expert episodes (policy examples),
/// and every executed step labelled with its episode's outcome (judge examples: weak labels,
/// no oracle).
pub fn demonstrations(
    cfg: &RunConfig,
    tasks: &[Spec],
    seed: u64,
) -> Result<(Vec<Example>, Vec<Example>)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (mut pol, mut jud) = (Vec::new(), Vec::new());
    let noise = cfg.pretrain.noise;
    let window = cfg.desktop.history;
    for t in tasks {
        for eps in [noise, (noise * 2.0).min(0.9)] {
            let mut ep = open(t, cfg)?;
            let instruction = ep.task.task.instruction.clone();
            let mut actions: Vec<String> = Vec::new();
            let mut steps: Vec<(String, String, String, String)> = Vec::new(); // prev, obs, answer, next
            for _ in 0..cfg.desktop.train_step_limit {
                let nodes = ep.tree(tiny::TREE);
                let obs = tiny::observation(&ep.desktop, &nodes);
                let prev = previous_actions(&actions, window);
                let cands = tiny::candidates(&ep.desktop, &nodes, &instruction);
                let code = expert::next(&ep);
                let Some(best) = tiny::from_code(&code, &ep.desktop, &nodes, &instruction) else {
                    break; // the expert needs an action the vocabulary does not have
                };
                pol.push((
                    policy_prompt(&instruction, &prev, &obs),
                    policy_answer(&best),
                ));
                let act = if best != "done" && rng.gen::<f64>() < eps {
                    cands.choose(&mut rng).cloned().unwrap_or(best)
                } else {
                    best
                };
                if let Some(code) = tiny::to_code(&act, &ep.desktop, &nodes) {
                    ep.step_code(&code, &nodes);
                }
                let after = tiny::observation(&ep.desktop, &ep.tree(tiny::TREE));
                steps.push((prev, obs, policy_answer(&act), after));
                actions.push(act);
                if ep.finished.is_some() {
                    break;
                }
            }
            let won = ep.score() == Ok(1.0);
            for (prev, obs, ans, next) in steps {
                let act = ans.trim_start_matches("Action: ").to_string();
                jud.push((
                    judge_prompt(&instruction, &prev, &obs, &ans, &next),
                    judge_answer(&act, won),
                ));
            }
        }
    }
    pol.shuffle(&mut rng);
    jud.shuffle(&mut rng);
    Ok((pol, jud))
}

/// Builds the tokenizer and both tiny models, warm-starts them on demonstrations, and saves
/// them under `out`.
pub fn warm_start(cfg: &RunConfig, out: &Path, progress: bool) -> Result<Vec<String>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(29));
    // training-distribution tasks at every difficulty the adaptation reaches
    let tasks: Vec<Spec> = family::split(family::Split::Train, cfg.pretrain.tasks + 1000)
        .into_iter()
        .skip(1000)
        .map(|s| Spec {
            objects: rng.gen_range(1..=3),
            variant: rng.gen_range(1..=2),
            hints: if rng.gen::<f64>() < cfg.pretrain.hint_fraction {
                rng.gen_range(1..=family::MAX_HINTS)
            } else {
                0
            },
            ..s
        })
        .collect();
    let (pol, jud) = demonstrations(cfg, &tasks, cfg.seed)?;
    let mut corpus = crate::pretrain::example_corpus(pol.iter().chain(jud.iter()));
    // every word the evaluation tasks can show or ask for
    for split in [Split::InDomain, Split::Ood, Split::Validation] {
        for s in split_tasks(split, usize::MAX) {
            let ep = open(&s, cfg)?;
            let nodes = ep.tree(tiny::TREE);
            corpus.push_str(&ep.task.task.instruction);
            corpus.push('\n');
            corpus.push_str(&tiny::observation(&ep.desktop, &nodes));
            corpus.push('\n');
            for c in tiny::candidates(&ep.desktop, &nodes, &ep.task.task.instruction) {
                corpus.push_str(&policy_answer(&c));
                corpus.push('\n');
            }
        }
    }
    corpus.push_str(crate::pretrain::CHAT_MARKERS);
    let tok = rla_model::tok::build_word_level(&corpus, 1)?;
    // make sure every example encodes
    for (p, a) in pol.iter().take(1) {
        encode_prompt(&tok, p)?;
        encode_response(&tok, a)?;
    }
    let mut lines = Vec::new();
    for (name, spec, data, steps) in [
        ("policy", &cfg.policy, &pol, cfg.pretrain.policy_steps),
        ("reward", &cfg.reward, &jud, cfg.pretrain.reward_steps),
    ] {
        lines.push(crate::pretrain::fit_tiny(
            cfg,
            name,
            spec,
            &tok,
            data,
            steps,
            out,
            &[],
            progress,
        )?);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_window_and_answers_shape_the_prompts() {
        let acts: Vec<String> = ["click B1", "copy", "click tab Sheet2", "paste"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(previous_actions(&[], 3), "none");
        assert_eq!(
            previous_actions(&acts, 2),
            "Step 3: click tab Sheet2; Step 4: paste"
        );
        assert_eq!(previous_actions(&acts, 9).matches("Step").count(), 4);
        let cands = vec!["click B3".to_string(), "done".into()];
        assert_eq!(parse_answer("Action: click B3", &cands), Some(&cands[0]));
        assert_eq!(parse_answer(" done ", &cands), Some(&cands[1]));
        assert_eq!(parse_answer("Action: click Z9", &cands), None);
        assert!(crate::prompts::parse_verdict(&judge_answer("copy", true)) == StepScore::Positive);
    }

    #[test]
    fn desktop_settings_are_checked() {
        let mut c = RunConfig {
            setting: crate::config::SettingName::Desktop,
            ..Default::default()
        };
        c.validate().unwrap();
        c.desktop.train_step_limit = 31;
        assert!(c
            .validate()
            .unwrap_err()
            .contains("desktop.train_step_limit"));
        c.desktop.train_step_limit = 12;
        c.desktop.screen_width = 100;
        assert!(c.validate().unwrap_err().contains("screen_width"));
        c.desktop.screen_width = 1280;
        c.desktop.constrain_actions = false;
        assert!(c.validate().unwrap_err().contains("constrain_actions"));
        c.desktop.constrain_actions = true;
        c.desktop.observation = DesktopObservation::A11yTree;
        assert!(c.validate().unwrap_err().contains("a11y_tree"));
        c.policy.path = Some("ckpt".into());
        c.validate().unwrap();
        c.desktop.tree_tokens = 10;
        assert!(c.validate().unwrap_err().contains("tree_tokens"));
        c.desktop.tree_tokens = 10_000;
        // screenshots are for evaluating a served vision-language model, not for training
        c.desktop.observation = DesktopObservation::Screenshot;
        assert!(c.validate().unwrap_err().contains("desktop eval"));
    }

    #[test]
    fn the_screen_size_is_the_desktops() {
        let mut c = RunConfig::default();
        c.desktop.screen_width = 1280;
        c.desktop.screen_height = 720;
        let spec = family::split(family::Split::Train, 1).remove(0);
        let ep = open(&spec, &c).unwrap();
        assert_eq!(
            (ep.desktop.layout.width, ep.desktop.layout.height),
            (1280, 720)
        );
    }

    #[test]
    fn rewrites_switch_evaluators_and_add_hints_with_lineage() {
        let t = DesktopTask::new(family::split(family::Split::Train, 1).remove(0), None);
        let mut g = Gui;
        let cfg = RunConfig::default();
        let ctx = Ctx {
            cfg: &cfg,
            k: 1,
            progress: false,
        };
        struct NoModel;
        impl Sampler for NoModel {
            fn encode(&self, _: &str) -> rla_lm::Result<Vec<u32>> {
                unreachable!()
            }
            fn decode(&self, _: &[u32]) -> rla_lm::Result<String> {
                unreachable!()
            }
            fn eos_ids(&self) -> &[u32] {
                &[]
            }
            fn chat_template(
                &self,
                _: &[rla_lm::Message],
                _: bool,
            ) -> rla_lm::Result<Option<String>> {
                Ok(None)
            }
            fn generate(
                &self,
                _: &[Vec<u32>],
                _: usize,
                _: &SampleParams,
            ) -> rla_lm::Result<Vec<Vec<rla_lm::Sample>>> {
                unreachable!()
            }
            fn generate_within(
                &self,
                _: &[Vec<u32>],
                _: usize,
                _: &SampleParams,
                _: &[Vec<Vec<u32>>],
            ) -> rla_lm::Result<Vec<Vec<rla_lm::Sample>>> {
                unreachable!()
            }
            fn score(&self, _: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
                unreachable!()
            }
        }
        let (what, h) = g
            .rewrite(ctx, &NoModel, &t, Direction::Harder, None, 0)
            .unwrap()
            .unwrap();
        assert_eq!(what, "switched to evaluator2");
        assert_eq!(h.spec.variant, 2);
        assert_eq!(h.parent.as_deref(), Some(t.id.as_str()));
        assert_ne!(h.id, t.id);
        let (what, e) = g
            .rewrite(ctx, &NoModel, &t, Direction::Easier, None, 0)
            .unwrap()
            .unwrap();
        assert_eq!(what, "added a hint");
        assert!(family::generate(&e.spec).task.instruction.contains("Hint:"));
    }

    /// A sampler that answers from a script, one answer per call, and keeps the prompts.
    struct Scripted {
        answers: Vec<&'static str>,
        prompts: std::sync::Mutex<Vec<String>>,
    }
    impl Sampler for Scripted {
        fn encode(&self, t: &str) -> rla_lm::Result<Vec<u32>> {
            Ok(t.bytes().map(u32::from).collect())
        }
        fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
            Ok(ids.iter().map(|&b| b as u8 as char).collect())
        }
        fn eos_ids(&self) -> &[u32] {
            &[0]
        }
        fn chat_template(&self, _: &[rla_lm::Message], _: bool) -> rla_lm::Result<Option<String>> {
            Ok(None)
        }
        fn generate(
            &self,
            prompts: &[Vec<u32>],
            n: usize,
            _: &SampleParams,
        ) -> rla_lm::Result<Vec<Vec<rla_lm::Sample>>> {
            let mut seen = self.prompts.lock().unwrap();
            let text = self.answers[seen.len().min(self.answers.len() - 1)];
            seen.push(self.decode(&prompts[0])?);
            Ok(prompts
                .iter()
                .map(|_| {
                    (0..n)
                        .map(|_| rla_lm::Sample {
                            tokens: text.bytes().map(u32::from).collect(),
                            logprobs: vec![-1.0; text.len()],
                            text: text.to_string(),
                            finish: rla_lm::Finish::Eos,
                        })
                        .collect()
                })
                .collect())
        }
        fn generate_within(
            &self,
            _: &[Vec<u32>],
            _: usize,
            _: &SampleParams,
            _: &[Vec<Vec<u32>>],
        ) -> rla_lm::Result<Vec<Vec<rla_lm::Sample>>> {
            unreachable!("free-form answers are not constrained")
        }
        fn score(&self, _: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
            unreachable!()
        }
    }

    #[test]
    fn free_form_answers_run_as_tool_calls_or_code_on_the_tree_the_model_saw() {
        let mut cfg = RunConfig::default();
        cfg.desktop.constrain_actions = false;
        cfg.desktop.observation = DesktopObservation::A11yTree;
        let spec = family::split(family::Split::Train, 1).remove(0);
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
        cfg.desktop.observation = DesktopObservation::Compact;
        let s2 = Scripted {
            answers: vec!["Action: copy", "done"],
            prompts: Default::default(),
        };
        let t = rollout(
            &s2,
            &cfg,
            &family::split(family::Split::Train, 1),
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
        let mut cfg = RunConfig::default();
        cfg.desktop.observation = DesktopObservation::A11yTree;
        let spec = family::split(family::Split::Train, 1).remove(0);
        let ep = open(&spec, &cfg).unwrap();
        let s = Scripted {
            answers: vec!["DONE"],
            prompts: Default::default(),
        };
        let nodes = ep.tree(tiny::TREE);
        let (full, _) = observe(&ep, &nodes, &cfg, &s);
        cfg.desktop.tree_tokens = 400;
        let (cut, _) = observe(&ep, &nodes, &cfg, &s);
        assert!(
            cut.len() <= 400 + "\n[...]".len() && cut.ends_with("[...]"),
            "{}",
            cut.len()
        );
        assert!(full.len() > cut.len() && !full.ends_with("[...]"));
    }
}
