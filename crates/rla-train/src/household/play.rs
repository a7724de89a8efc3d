//! The household's episodes: how they are played (the [`Episodes`] settings a policy checkpoint
//! records), the game the shared play loop drives, greedy evaluation, and the judge's prompts on
//! its steps.

use super::notes::Notes;
use super::prompts::{
    judge_prompt, parse_choice, policy_answer_styled, policy_prompt_styled, PromptStyle,
};
use crate::config::SettingConfig;
use crate::household::config::HouseholdConfig;
use crate::judge::Verdicts;
use crate::play::{encode_response, play, Applied, Game, Prompt, Trajectory, Turn};
use anyhow::Result;
use indicatif::ProgressBar;
use rla_env::household::expert::{knowable_label, progress_label, GoalSpec, SearchExpert};
use rla_env::household::{HouseholdGame, HouseholdTask};
use rla_lm::{Sample, SampleParams, Sampler};
use std::path::Path;

/// The token sequences of every admissible answer, each ending in the end-of-sequence token.
pub fn answer_tokens(
    lm: &dyn Sampler,
    admissible: &[String],
    style: PromptStyle,
) -> Result<Vec<Vec<u32>>> {
    admissible
        .iter()
        .enumerate()
        .map(|(i, a)| encode_response(lm, &policy_answer_styled(a, i, style)))
        .collect()
}

/// The key of a household state (where the agent stands, what is open, where every object is,
/// what it holds): equal states, equal keys.
fn state_key(st: &rla_env::household::world::State) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    st.hash(&mut h);
    h.finish()
}

/// One household episode as the play loop drives it.
struct HouseGame {
    env: HouseholdGame,
    goal: GoalSpec,
    ep: Episodes,
    obs: String,
    history: Vec<(String, String)>,
    notes: Option<Notes>,
    /// What the agent has seen so far: the searching expert fed every step's observation, whose
    /// steps give the label an agent could know.
    known: SearchExpert,
    /// The admissible commands of the last turn.
    admissible: Vec<String>,
    won: bool,
}

impl Game for HouseGame {
    fn turn(&mut self, _policy: &dyn Sampler, constrained: bool) -> Result<Turn> {
        self.admissible = self.env.admissible().to_vec();
        let style = self.ep.style;
        let text = policy_prompt_styled(
            &self.env.world().task,
            &self.history,
            self.ep.window,
            &self.obs,
            &self.admissible,
            style,
            &self.notes.as_ref().map(Notes::render).unwrap_or_default(),
        );
        let answers = if constrained {
            self.admissible
                .iter()
                .enumerate()
                .map(|(i, a)| policy_answer_styled(a, i, style))
                .collect()
        } else {
            vec![]
        };
        Ok(Turn {
            prompt: Prompt::Text(text),
            answers,
            observation: self.obs.clone(),
            // the episode so far as the prompt told it: the notes
            previous: self.notes.as_ref().map(Notes::render).unwrap_or_default(),
            state: Some(state_key(self.env.state())),
        })
    }

    fn apply(&mut self, _policy: &dyn Sampler, answer: &Sample) -> Result<Applied> {
        let (idx, parsed) = parse_choice(&answer.text, &self.admissible);
        let action = self.admissible[idx].clone();
        let before = self.env.state().clone();
        let played = self.env.parse(&action);
        let r = self.env.step(&action);
        let (w, after) = (self.env.world(), self.env.state());
        let planner_progress = progress_label(w, &before, after, &self.goal);
        let known_before = self.known.clone();
        if let Some(a) = played {
            self.known.observe(w, after, a);
        }
        let progress = knowable_label(
            w,
            &self.goal,
            (&before, &known_before),
            played,
            (after, &self.known),
        );
        if let Some(n) = &mut self.notes {
            n.played(&action);
            n.observe(&r.feedback);
        }
        self.history.push((
            std::mem::replace(&mut self.obs, r.feedback.clone()),
            action.clone(),
        ));
        if r.done {
            self.won = r.won;
        }
        Ok(Applied {
            action,
            code: String::new(),
            error: (!parsed)
                .then(|| "the answer named no admissible command: the first was played".into()),
            next_observation: r.feedback,
            progress,
            planner_progress: Some(planner_progress),
            done: r.done,
        })
    }

    fn score(self) -> Result<f64> {
        Ok(if self.won { 1.0 } else { 0.0 })
    }
}

/// The file in a policy checkpoint that records how it plays (the run's [`Episodes`] for
/// evaluation), so that `eval` uses the prompt it was trained with.
pub const EPISODES_FILE: &str = "rlanything-episodes.json";

/// How episodes are played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Episodes {
    /// Rollouts per task.
    pub rollouts: usize,
    /// Step limit.
    pub step_limit: usize,
    /// Past (observation, action) pairs in the prompt.
    pub window: usize,
    /// Listing style of the admissible commands.
    pub style: PromptStyle,
    /// Answers are drawn only among the admissible ones (see `RunConfig::constrain_actions`).
    pub constrained: bool,
    /// The prompt carries the agent's notes ([`super::notes::Notes`]).
    #[serde(default)]
    pub notes: bool,
    /// How the notes are written (older checkpoints: full).
    #[serde(default)]
    pub notes_style: super::notes::NotesStyle,
    /// An episode whose last this many actions loop ends there, lost (0: plays on; see
    /// `[household] train_end_loops`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub end_loops: usize,
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}

impl Episodes {
    /// How a run evaluates: one greedy episode per task with the run's step limit for evaluation,
    /// history window, prompt style and constraint.
    pub fn evaluation(cfg: &crate::config::RunConfig) -> Episodes {
        Episodes {
            rollouts: 1,
            step_limit: HouseholdConfig::of(cfg).eval_step_limit,
            window: HouseholdConfig::of(cfg).history_window,
            style: HouseholdConfig::of(cfg).prompt_style,
            constrained: HouseholdConfig::of(cfg).constrain_actions,
            notes: HouseholdConfig::of(cfg).notes,
            notes_style: HouseholdConfig::of(cfg).notes_style,
            end_loops: 0,
        }
    }

    /// The file a policy checkpoint records these settings in: ([`EPISODES_FILE`], its JSON).
    pub fn record(&self) -> Result<(String, String)> {
        Ok((
            EPISODES_FILE.to_string(),
            serde_json::to_string_pretty(self)?,
        ))
    }

    /// The settings recorded in a policy checkpoint folder, if any.
    pub fn load_from(model_dir: &Path) -> Result<Option<Episodes>> {
        let p = model_dir.join(EPISODES_FILE);
        if !p.exists() {
            return Ok(None);
        }
        let text = rla_core::file::read_to_string(&p)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
        let ep = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not episode settings: {e}", p.display()))?;
        Ok(Some(ep))
    }
}

/// Plays `ep.rollouts` episodes of each task with the policy (generated tasks or game folders,
/// each with its own step limit, at most `ep.step_limit`); all episodes step together.
pub fn rollout<T: HouseholdTask>(
    policy: &dyn Sampler,
    tasks: &[T],
    ep: Episodes,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let mut games = Vec::new();
    for t in tasks {
        let (env, goal) = t.open().map_err(anyhow::Error::msg)?;
        let limit = ep.step_limit.min(t.step_limit());
        games.push((env.with_step_limit(limit), goal));
    }
    rollout_games(policy, games, ep, sp, bar)
}

/// Plays `ep.rollouts` episodes of each (household, goal) with the policy: generated tasks or
/// ALFWorld's own game files; all episodes step together. Each trajectory's `task` is its game's
/// index.
pub fn rollout_games(
    policy: &dyn Sampler,
    games: Vec<(HouseholdGame, GoalSpec)>,
    ep: Episodes,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let mut live = Vec::new();
    for (ti, (env, goal)) in games.into_iter().enumerate() {
        for _ in 0..ep.rollouts {
            let mut env = env.clone();
            let obs = env.reset();
            let known = SearchExpert::new(env.world());
            live.push((
                ti,
                HouseGame {
                    env,
                    goal,
                    ep,
                    notes: ep.notes.then(|| Notes::from_intro(&obs, ep.notes_style)),
                    known,
                    obs,
                    history: vec![],
                    admissible: vec![],
                    won: false,
                },
            ));
        }
    }
    play(
        policy,
        live,
        (ep.step_limit, ep.end_loops),
        sp,
        ep.constrained,
        bar,
    )
}

/// The judge's m verdicts on every step of the household's episodes (with the agent's notes
/// when `notes`).
pub fn judge<T: HouseholdTask>(
    reward: &dyn Sampler,
    (tasks, notes): (&[T], bool),
    trajs: &[Trajectory],
    m: usize,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Vec<Verdicts>>> {
    crate::play::judge_steps(reward, trajs, m, sp, bar, |t, s| {
        step_judge_prompt(&tasks[t.task], s, notes)
    })
}

/// The judge's prompt on one step of a task's episode; with `notes`, the agent's notes before
/// the step (its record's `previous`) go above it.
pub fn step_judge_prompt(
    task: &impl HouseholdTask,
    s: &crate::play::StepRec,
    notes: bool,
) -> String {
    judge_prompt(
        &task.sentence(),
        if notes { &s.previous } else { "" },
        &s.observation,
        &s.answer,
        &s.action,
        &s.next_observation,
    )
}

/// Greedy success rate of the policy on tasks (one episode each).
pub fn evaluate<T: HouseholdTask>(
    policy: &dyn Sampler,
    tasks: &[T],
    ep: Episodes,
    max_new_tokens: usize,
    bar: Option<&ProgressBar>,
) -> Result<f64> {
    if tasks.is_empty() {
        return Ok(0.0);
    }
    let trajs = evaluate_episodes(policy, tasks, ep, max_new_tokens, bar)?;
    Ok(crate::play::success(&trajs))
}

/// The greedy episodes behind [`evaluate`].
pub fn evaluate_episodes<T: HouseholdTask>(
    policy: &dyn Sampler,
    tasks: &[T],
    ep: Episodes,
    max_new_tokens: usize,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let sp = SampleParams {
        temperature: 0.0,
        max_new_tokens,
        ..Default::default()
    };
    rollout(policy, tasks, Episodes { rollouts: 1, ..ep }, &sp, bar)
}

#[cfg(test)]
mod end_loop_tests {
    use super::*;
    use crate::play::testing::Scripted;

    #[test]
    fn a_training_episode_that_loops_ends_there_lost() {
        // a policy that always answers the first listed command goes back and forth
        let policy = Scripted {
            answers: vec!["\\boxed{1}"],
            prompts: Default::default(),
        };
        let tasks = rla_env::household::splits::train_tasks(3, 5);
        let ep = |end_loops| Episodes {
            end_loops,
            ..DEFAULT_TEST_EPISODES
        };
        let sp = SampleParams::default();
        let full = rollout(&policy, &tasks, ep(0), &sp, None).unwrap();
        let cut = rollout(&policy, &tasks, ep(4), &sp, None).unwrap();
        let mut looped = 0;
        for (f, c) in full.iter().zip(&cut) {
            // where the full episode's last four actions first loop, the cut one ended
            let first = (4..=f.steps.len()).find(|&n| {
                Trajectory {
                    steps: f.steps[..n].to_vec(),
                    ..f.clone()
                }
                .ends_in_loop(4)
            });
            match first {
                Some(n) if n < f.steps.len() => {
                    looped += 1;
                    assert_eq!(c.steps.len(), n);
                    assert_eq!(c.score, 0.0, "lost");
                }
                _ => assert_eq!(c.steps.len(), f.steps.len()),
            }
            let same = |a: &Trajectory, b: &Trajectory| {
                a.steps
                    .iter()
                    .zip(&b.steps)
                    .all(|(x, y)| x.action == y.action)
            };
            assert!(same(f, c), "the same steps until the cut");
        }
        assert!(looped > 0, "the scripted policy loops in some task");
    }

    #[test]
    fn steps_record_the_state_they_start_from() {
        // the first listed command, always: rollouts of a task start alike and go back and forth
        let policy = Scripted {
            answers: vec!["\\boxed{1}"],
            prompts: Default::default(),
        };
        let tasks = rla_env::household::splits::train_tasks(3, 5);
        let ep = Episodes {
            rollouts: 2,
            ..DEFAULT_TEST_EPISODES
        };
        let trajs = rollout(&policy, &tasks, ep, &SampleParams::default(), None).unwrap();
        let mut recurred = 0;
        for pair in trajs.chunks(2) {
            assert_eq!(pair[0].task, pair[1].task);
            // the same task's episodes start from the same state, others from their own
            assert_eq!(pair[0].steps[0].state, pair[1].steps[0].state);
            let keys: Vec<u64> = pair[0].steps.iter().map(|s| s.state.unwrap()).collect();
            let distinct: std::collections::HashSet<_> = keys.iter().collect();
            recurred += (distinct.len() < keys.len()) as usize;
        }
        assert_ne!(trajs[0].steps[0].state, trajs[2].steps[0].state);
        assert!(recurred > 0, "a loop comes back to a state it left");
    }

    const DEFAULT_TEST_EPISODES: Episodes = Episodes {
        rollouts: 1,
        step_limit: 20,
        window: 1,
        style: PromptStyle::Numbered,
        constrained: false,
        notes: false,
        notes_style: crate::household::notes::NotesStyle::Full,
        end_loops: 0,
    };
}
