//! The batched play loop of the step-judged settings (the household, the desktop): every episode
//! of every task steps together, one generation call per step, and each step is recorded in one
//! shape ([`StepRec`], [`Trajectory`]) whatever the setting. A setting says what differs through
//! [`Game`]: what the policy sees, which answers it may give, and what an answer does.
//!
//! Also here: what both settings do with the episodes once played — the groups the loop trains
//! on, the judge's m verdicts on every step, their quality against the steps' labels,
//! the critiques of failed episodes and the sample files.

use crate::judge::{judge_prompts, push_step_judgements, reasoning, step_judge_quality, Verdicts};
use crate::run::RunDir;
use crate::setting::{Ctx, Episode, Generation, Group, JudgeQuality, Step};
pub use crate::trajectory::{StepRec, Trajectory};
use anyhow::Result;
use indicatif::ProgressBar;
use rla_core::reward::{Outcome, StepScore};
use rla_lm::{Codec, Message, Sample, SampleParams, Sampler, VisualMessage};

/// A policy prompt: a text the loop encodes with the policy's chat template, or a message with
/// a screenshot for a vision-language model on a server.
pub enum Prompt {
    /// Text.
    Text(String),
    /// Text and an image.
    Visual(VisualMessage),
}

/// What a game shows the policy at one step.
pub struct Turn {
    /// The prompt.
    pub prompt: Prompt,
    /// The answers the policy may give (their texts), when answers are constrained.
    pub answers: Vec<String>,
    /// What the record keeps of the observation.
    pub observation: String,
    /// The earlier steps as the prompt told them ([`StepRec::previous`]).
    pub previous: String,
    /// The environment state the turn starts from, as a key ([`StepRec::state`]); `None` where
    /// the setting has none.
    pub state: Option<u64>,
}

/// What an answer did.
pub struct Applied {
    /// The action it was taken as.
    pub action: String,
    /// The code it ran ([`StepRec::code`]).
    pub code: String,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// What the environment showed after it.
    pub next_observation: String,
    /// The step's label ([`StepRec::progress`]).
    pub progress: bool,
    /// Its second label, where the setting has one ([`StepRec::planner_progress`]).
    pub planner_progress: Option<bool>,
    /// The episode ended.
    pub done: bool,
}

/// One live episode of a setting, as the play loop drives it.
pub trait Game {
    /// What the policy sees now, and which answers it may give (when `constrained`).
    fn turn(&mut self, policy: &dyn Sampler, constrained: bool) -> Result<Turn>;
    /// Plays the policy's answer to the last turn (`policy` measures what it sees after).
    fn apply(&mut self, policy: &dyn Sampler, answer: &Sample) -> Result<Applied>;
    /// The episode's score once it has ended or run out of steps.
    fn score(self) -> Result<f64>;
    /// Whether its turns and answers may run on a thread of their own, beside the other
    /// games' (a game on a real desktop waits on it; one in memory gains nothing).
    fn concurrent(&self) -> bool {
        false
    }
}

/// `f` on each live game still playing, in order: on a thread each when every one of them is
/// [`Game::concurrent`] (their desktops answer side by side), else one after another.
fn each_live<G: Game + Send, T: Send>(
    live: &mut [Live<G>],
    f: impl Fn(usize, &mut G) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    let mut playing: Vec<&mut Live<G>> = live.iter_mut().filter(|l| !l.done).collect();
    let concurrent = playing.len() > 1 && playing.iter().all(|l| l.game.concurrent());
    if !concurrent {
        return playing
            .iter_mut()
            .enumerate()
            .map(|(k, l)| f(k, &mut l.game))
            .collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = playing
            .iter_mut()
            .enumerate()
            .map(|(k, l)| scope.spawn(move || f(k, &mut l.game)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a game's thread panicked")))
            })
            .collect()
    })
}

/// Applies the model's chat template (when it has one) to a user message and tokenises it.
pub fn encode_prompt<C: Codec + ?Sized>(codec: &C, text: &str) -> Result<Vec<u32>> {
    let s = codec
        .chat_template(&[Message::new("user", text)], true)?
        .unwrap_or_else(|| text.to_string());
    Ok(codec.encode(&s)?)
}

/// Prompts as token ids, or `None` when the model's tokenizer is on its server (its prompts go
/// as chat messages).
fn prompts(lm: &dyn Sampler, texts: &[String]) -> Result<Option<Vec<Vec<u32>>>> {
    match texts.first().map(|t| encode_prompt(lm, t)) {
        Some(Err(e))
            if e.downcast_ref::<rla_lm::LmError>()
                .is_some_and(|e| matches!(e, rla_lm::LmError::Unsupported(_))) =>
        {
            Ok(None)
        }
        _ => texts
            .iter()
            .map(|t| encode_prompt(lm, t))
            .collect::<Result<_>>()
            .map(Some),
    }
}

/// The prompts' token ids (empty for chat) and `n` answers to each.
pub type Asked = (Vec<Vec<u32>>, Vec<Vec<Sample>>);

/// `n` answers to each prompt: through the model's tokenizer, or as chat messages to a served
/// model that keeps its tokenizer. Also returns the prompts' token ids (empty for chat). Every
/// setting asks a model for text through it (coders and test writers, rewriters, summaries).
pub fn ask(lm: &dyn Sampler, texts: &[String], n: usize, p: &SampleParams) -> Result<Asked> {
    ask_seeded(lm, texts, n, p, false)
}

/// [`ask`] with each prompt's own draws ([`rla_lm::Request::seeds`]): prompt `i`'s answers draw
/// from a stream of (`p.seed`, `i`) alone, whatever the other prompts' answers were, so two
/// models asked the same prompts with one seed meet the same draws (chat messages to a server
/// that keeps its tokenizer: its own per-prompt seeds).
pub fn ask_paired(lm: &dyn Sampler, texts: &[String], n: usize, p: &SampleParams) -> Result<Asked> {
    ask_seeded(lm, texts, n, p, true)
}

fn ask_seeded(
    lm: &dyn Sampler,
    texts: &[String],
    n: usize,
    p: &SampleParams,
    paired: bool,
) -> Result<Asked> {
    let out = match prompts(lm, texts)? {
        Some(ids) => {
            let seeds: Vec<u64> = (0..ids.len()).map(|i| episode_seed(p.seed, i, 0)).collect();
            let out = lm.sample(&rla_lm::Request {
                prompts: &ids,
                n,
                params: p,
                allowed: None,
                seeds: paired.then_some(seeds.as_slice()),
            })?;
            (ids, out)
        }
        None => {
            let chats: Vec<Vec<rla_lm::VisualMessage>> = texts
                .iter()
                .map(|t| {
                    vec![rla_lm::VisualMessage {
                        role: "user".into(),
                        text: t.clone(),
                        png: None,
                    }]
                })
                .collect();
            (vec![vec![]; texts.len()], lm.generate_visual(&chats, n, p)?)
        }
    };
    Ok(out)
}

/// One answer to one prompt, as [`ask`] asks: a rewriter's or a summariser's question.
pub fn ask_one(lm: &dyn Sampler, prompt: &str, p: &SampleParams) -> Result<String> {
    let (_, out) = ask(lm, &[prompt.to_string()], 1, p)?;
    out.into_iter()
        .next()
        .and_then(|s| s.into_iter().next())
        .map(|s| s.text)
        .ok_or_else(|| anyhow::anyhow!("the model gave no answer"))
}

/// An answer's tokens as the model emits them: the text, then the end-of-sequence token. Warm
/// starts train on exactly these and constrained decoding allows exactly these.
pub fn encode_response<C: Codec + ?Sized>(codec: &C, text: &str) -> Result<Vec<u32>> {
    let mut ids = codec.encode(text)?;
    ids.extend(codec.eos_ids().first().copied());
    Ok(ids)
}

struct Live<G> {
    game: G,
    traj: Trajectory,
    done: bool,
}

/// The seed of step `step` of a play whose sampling seed is `seed`.
pub fn step_seed(seed: u64, step: usize) -> u64 {
    rla_core::seed::stream(seed, &[step as u64])
}

/// The seed of the `sample`-th episode of task `task` in a play whose sampling seed is `seed`:
/// its steps draw from [`step_seed`]`(episode_seed, step)` alone, so an episode's draws depend
/// on the seed, its task and its index among the task's episodes, never on what the other
/// episodes (or the policy) did — two policies played from one seed meet the same draws, episode
/// for episode.
pub fn episode_seed(seed: u64, task: usize, sample: usize) -> u64 {
    rla_core::seed::stream(seed, &[task as u64, sample as u64])
}

/// Plays every game to its end or `step_limit` steps; all games step together, one generation
/// call per step (each episode's step draws from a stream of its own, [`episode_seed`]; a step
/// of screenshots, from [`step_seed`] of `sp.seed`). `games` pairs each game with its task's
/// index in the batch; a task's episodes are numbered in the order they come. With `constrained`, answers are drawn only among each
/// turn's answers, with room for the longest whatever `sp.max_new_tokens` says. With `end_loops`
/// ≥ 2, a game whose last `end_loops` actions loop ([`Trajectory::ends_in_loop`]) ends there,
/// lost.
pub fn play<G: Game + Send>(
    policy: &dyn Sampler,
    games: Vec<(usize, G)>,
    (step_limit, end_loops): (usize, usize),
    sp: &SampleParams,
    constrained: bool,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let mut live: Vec<Live<G>> = games
        .into_iter()
        .map(|(task, game)| Live {
            game,
            traj: Trajectory {
                task,
                steps: vec![],
                score: 0.0,
            },
            done: false,
        })
        .collect();
    let mut count: std::collections::HashMap<usize, usize> = Default::default();
    let episode_seeds: Vec<u64> = live
        .iter()
        .map(|l| {
            let j = count.entry(l.traj.task).or_default();
            *j += 1;
            episode_seed(sp.seed, l.traj.task, *j - 1)
        })
        .collect();
    for step in 0..step_limit {
        let active: Vec<usize> = (0..live.len()).filter(|&i| !live[i].done).collect();
        if active.is_empty() {
            break;
        }
        let mut turns = Vec::with_capacity(active.len());
        let mut prompts = Vec::with_capacity(active.len());
        let mut chats = Vec::new();
        let mut allowed = Vec::new();
        let all_turns = each_live(&mut live, |_, g| g.turn(policy, constrained));
        for t in all_turns {
            let mut t = t?;
            match std::mem::replace(&mut t.prompt, Prompt::Text(String::new())) {
                Prompt::Text(text) => prompts.push(encode_prompt(policy, &text)?),
                Prompt::Visual(m) => {
                    chats.push(vec![m]);
                    prompts.push(vec![]); // the server's, image tokens included
                }
            }
            if constrained {
                allowed.push(
                    t.answers
                        .iter()
                        .map(|a| encode_response(policy, a))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
            turns.push(t);
        }
        if !chats.is_empty() && chats.len() != active.len() {
            anyhow::bail!("a step mixed prompts with and without a screenshot");
        }
        let p = SampleParams {
            seed: step_seed(sp.seed, step),
            ..sp.clone()
        };
        let seeds: Vec<u64> = active
            .iter()
            .map(|&i| step_seed(episode_seeds[i], step))
            .collect();
        let out = if !chats.is_empty() {
            policy.generate_visual(&chats, 1, &p)?
        } else {
            let longest = allowed.iter().flatten().map(Vec::len).max().unwrap_or(0);
            let p = SampleParams {
                max_new_tokens: p.max_new_tokens.max(longest),
                ..p
            };
            policy.sample(&rla_lm::Request {
                prompts: &prompts,
                n: 1,
                params: &p,
                allowed: constrained.then_some(allowed.as_slice()),
                seeds: Some(&seeds),
            })?
        };
        let mut picked = Vec::with_capacity(active.len());
        for (k, ((s, turn), prompt_ids)) in out.into_iter().zip(turns).zip(prompts).enumerate() {
            let s = s
                .into_iter()
                .next()
                .ok_or_else(|| anyhow::anyhow!("the policy returned no answer to a prompt"))?;
            let choices = allowed.get(k).map(|a| rla_lm::choices_along(a, &s.tokens));
            if let Some(c) = &choices {
                rla_lm::check_choices(&s.tokens, Some(c)).map_err(|e| {
                    anyhow::anyhow!("the policy answered outside the allowed answers: {e}")
                })?;
            }
            picked.push((s, turn, prompt_ids, choices));
        }
        let applied = each_live(&mut live, |k, g| g.apply(policy, &picked[k].0));
        for ((&i, a), (s, turn, prompt_ids, choices)) in active.iter().zip(applied).zip(picked) {
            let a = a?;
            let l = &mut live[i];
            l.traj.steps.push(StepRec {
                observation: turn.observation,
                previous: turn.previous,
                state: turn.state,
                prompt_ids,
                response_ids: s.tokens,
                logprobs: s.logprobs,
                choices,
                answer: s.text,
                action: a.action,
                code: a.code,
                error: a.error,
                next_observation: a.next_observation,
                progress: a.progress,
                planner_progress: a.planner_progress,
            });
            l.done = a.done || (end_loops >= 2 && l.traj.ends_in_loop(end_loops));
        }
        if let Some(b) = bar {
            b.inc(active.len() as u64);
        }
    }
    live.into_iter()
        .map(|l| {
            let mut t = l.traj;
            t.score = l.game.score()?;
            Ok(t)
        })
        .collect()
}

/// Each episode beside its task's kind and what the task asked
/// (`Setting::evaluate_episodes`).
pub fn with_kinds(
    kinds: impl IntoIterator<Item = (String, String)>,
    trajs: Vec<Trajectory>,
) -> Vec<crate::setting::EvalEpisode> {
    kinds
        .into_iter()
        .zip(trajs)
        .map(|((kind, task), traj)| crate::setting::EvalEpisode { kind, task, traj })
        .collect()
}

/// The share of episodes won.
pub fn success(trajs: &[Trajectory]) -> f64 {
    if trajs.is_empty() {
        return 0.0;
    }
    trajs.iter().filter(|t| t.won()).count() as f64 / trajs.len() as f64
}

/// The judge's m verdicts on every step of every episode (`prompt` writes the judge's prompt
/// for a step of an episode).
pub fn judge_steps(
    reward: &dyn Sampler,
    trajs: &[Trajectory],
    m: usize,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
    prompt: impl Fn(&Trajectory, &StepRec) -> String,
) -> Result<Vec<Vec<Verdicts>>> {
    let prompts = trajs
        .iter()
        .map(|t| {
            t.steps
                .iter()
                .map(|s| encode_prompt(reward, &prompt(t, s)))
                .collect()
        })
        .collect::<Result<Vec<Vec<Vec<u32>>>>>()?;
    judge_prompts(reward, &prompts, m, sp, bar)
}

/// One iteration's episodes and the judge's verdicts on their steps.
#[derive(Debug, Default)]
pub struct Played {
    /// Every episode, tasks in batch order.
    pub trajs: Vec<Trajectory>,
    /// The m verdicts on each step of each episode.
    pub verdicts: Vec<Vec<Verdicts>>,
}

impl Played {
    /// One iteration's play of `tasks` tasks, not yet judged: the groups the loop trains on, and
    /// the record.
    pub fn of(trajs: Vec<Trajectory>, tasks: usize) -> (Vec<Group>, Played) {
        let played = Played {
            trajs,
            verdicts: vec![],
        };
        (played.groups(tasks), played)
    }

    /// The episodes, grouped by task for the loop (outcome ±1).
    pub fn groups(&self, tasks: usize) -> Vec<Group> {
        let mut groups: Vec<Group> = vec![Group::default(); tasks];
        for t in &self.trajs {
            groups[t.task].episodes.push(Episode {
                outcome: Outcome::from_won(t.won()).value(),
                won: t.won(),
                steps: t
                    .steps
                    .iter()
                    .map(|s| Step {
                        state: s.state,
                        action: Generation {
                            prompt: s.prompt_ids.clone(),
                            response: s.response_ids.clone(),
                            logprobs: s.logprobs.clone(),
                            choices: s.choices.clone(),
                        },
                    })
                    .collect(),
            });
        }
        groups
    }

    /// Asks the reward model for its m verdicts on every step (`prompt` writes the judge's
    /// prompt for a step of an episode), and adds them to the groups.
    pub fn judge(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        groups: &mut [Group],
        prompt: impl Fn(&Trajectory, &StepRec) -> String,
    ) -> Result<()> {
        let cfg = ctx.cfg;
        let steps: usize = self.trajs.iter().map(|t| t.steps.len()).sum();
        self.verdicts = ctx.with_bar(steps as u64, &format!("iter {} judge", ctx.k), |bar| {
            judge_steps(
                reward,
                &self.trajs,
                cfg.judge_samples,
                &cfg.reward.sampling(ctx.seed(3)),
                bar,
                prompt,
            )
        })?;
        push_step_judgements(
            groups,
            self.trajs
                .iter()
                .zip(&self.verdicts)
                .map(|(t, v)| (t.task, v.as_slice())),
        );
        Ok(())
    }

    /// Puts the steps' labels ([`StepRec::progress`]) where the loop reads the judge's verdicts:
    /// every sample of a step scores +1 where the step's label is good and −1 where it is not, as
    /// a judge that is always right would. The record keeps the judge's own verdicts, so [`Played::quality`]
    /// still measures the judge; its m samples of a step now agree, so the consistency reward
    /// gives it nothing to learn.
    pub fn oracle_scores(&self, groups: &mut [Group]) {
        let mut by_task: Vec<Vec<&Trajectory>> = vec![vec![]; groups.len()];
        for t in &self.trajs {
            by_task[t.task].push(t);
        }
        for (g, trajs) in groups.iter_mut().zip(&by_task) {
            for j in &mut g.judgements {
                let Some((e, i)) = j.step else { continue };
                let score = if trajs[e].steps[i].progress {
                    StepScore::Positive
                } else {
                    StepScore::Negative
                };
                for s in &mut j.samples {
                    s.score = score;
                }
            }
        }
    }

    /// The judge's quality: process accuracy and μ from verdicts against the steps' labels (and
    /// process accuracy against their second label, where they have one), μ as the paper defines
    /// it from verdicts against the episodes' outcomes, precision A from the mean verdicts of
    /// steps of won and lost episodes.
    pub fn quality(&self) -> JudgeQuality {
        step_judge_quality(self.trajs.iter().zip(&self.verdicts).flat_map(|(t, vs)| {
            t.steps
                .iter()
                .zip(vs)
                .map(move |(s, v)| (t.won(), s.progress, s.planner_progress, v))
        }))
    }

    /// The judge's reasoning on the high-risk steps (all m say −1) of task `i`'s failed
    /// episodes: what its critique summarises.
    pub fn high_risk_reasons(&self, i: usize) -> Vec<String> {
        let mut reasons = Vec::new();
        for (t, vs) in self.trajs.iter().zip(&self.verdicts) {
            if t.task != i || t.won() {
                continue;
            }
            for v in vs {
                if v.scores.iter().all(|s| *s == StepScore::Negative) {
                    reasons.extend(v.texts.iter().map(|x| reasoning(x).to_string()));
                }
            }
        }
        reasons
    }

    /// Writes every eighth episode (six at most) to `samples/iter-K.json`: `episode` gives an
    /// episode's header fields and `step` a step's, to which the judge's answers are added.
    pub fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        episode: impl Fn(&Trajectory) -> serde_json::Value,
        step: impl Fn(&StepRec) -> serde_json::Value,
    ) -> Result<()> {
        let picked: Vec<serde_json::Value> = self
            .trajs
            .iter()
            .enumerate()
            .filter(|(j, _)| j % 8 == 0)
            .take(6)
            .map(|(j, t)| {
                let mut e = episode(t);
                e["steps"] = t
                    .steps
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let mut v = step(s);
                        v["verdicts"] = serde_json::json!(self
                            .verdicts
                            .get(j)
                            .and_then(|v| v.get(i))
                            .map(|v| v.texts.clone()));
                        v
                    })
                    .collect();
                e
            })
            .collect();
        dir.save_json(&format!("samples/iter-{k:04}.json"), &picked)
    }
}

/// What the tests of the step-judged settings share.
#[cfg(test)]
pub(crate) mod testing {
    use rla_lm::Sampler;

    /// A sampler that answers from a script, one answer per call, and keeps the prompts.
    pub(crate) struct Scripted {
        /// The answers, one per call (the last repeats).
        pub answers: Vec<&'static str>,
        /// The first prompt of each call, decoded.
        pub prompts: std::sync::Mutex<Vec<String>>,
    }
    impl rla_lm::Codec for Scripted {
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
    }

    impl Sampler for Scripted {
        fn sample(&self, r: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<rla_lm::Sample>>> {
            assert!(r.allowed.is_none(), "free-form answers are not constrained");
            let (prompts, n) = (r.prompts, r.n);
            let mut seen = self.prompts.lock().unwrap();
            let text = self.answers[seen.len().min(self.answers.len() - 1)];
            seen.push(rla_lm::Codec::decode(self, &prompts[0])?);
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
        fn score(&self, _: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
            unreachable!()
        }
    }
}

#[cfg(test)]
mod loop_tests {
    use super::*;

    #[test]
    fn no_two_steps_of_a_run_share_a_stream() {
        // the policy's rollouts (tag 2) and the judge's verdicts (tag 3) of the first 100
        // iterations × 50 steps, and the pool's draws (tag 1): every seed its own
        let mut seen = std::collections::HashSet::new();
        for k in 0..100 {
            assert!(seen.insert(crate::setting::iteration_seed(0, k, 1)));
            for tag in [2, 3] {
                let base = crate::setting::iteration_seed(0, k, tag);
                for step in 0..50 {
                    assert!(seen.insert(step_seed(base, step)), "{k} {tag} {step}");
                }
            }
        }
        assert_eq!(seen.len(), 100 + 100 * 2 * 50);
    }

    fn traj(actions: &[&str]) -> Trajectory {
        Trajectory {
            task: 0,
            steps: actions
                .iter()
                .map(|a| StepRec {
                    observation: String::new(),
                    previous: String::new(),
                    state: None,
                    prompt_ids: vec![],
                    response_ids: vec![],
                    logprobs: vec![],
                    choices: None,
                    answer: String::new(),
                    action: a.to_string(),
                    code: String::new(),
                    error: None,
                    next_observation: String::new(),
                    progress: false,
                    planner_progress: None,
                })
                .collect(),
            score: 0.0,
        }
    }

    #[test]
    fn oracle_scores_replace_the_loops_verdicts_and_keep_the_judges() {
        // two tasks; task 1's second episode has a progress step then a wasted one
        let mut a = traj(&["look"]);
        a.task = 1;
        let mut b = traj(&["go to fridge 1", "look"]);
        b.task = 1;
        b.steps[0].progress = true;
        let c = traj(&["look"]);
        // the judge's first n answers: −1, +1, unparsed
        let judged = |n: usize| Verdicts {
            prompt_ids: vec![1],
            responses: vec![vec![2]; n],
            logprobs: vec![vec![-1.0]; n],
            texts: vec![String::new(); n],
            scores: vec![
                StepScore::Negative,
                StepScore::Positive,
                StepScore::Unparsed,
            ][..n]
                .to_vec(),
        };
        let (mut groups, mut played) = Played::of(vec![a, b, c], 2);
        played.verdicts = vec![vec![judged(3)], vec![judged(3), judged(3)], vec![judged(2)]];
        push_step_judgements(
            &mut groups,
            played
                .trajs
                .iter()
                .zip(&played.verdicts)
                .map(|(t, v)| (t.task, v.as_slice())),
        );
        played.oracle_scores(&mut groups);
        let scores = |g: &Group, step| -> Vec<StepScore> {
            let j = g.judgements.iter().find(|j| j.step == Some(step)).unwrap();
            j.samples.iter().map(|x| x.score).collect()
        };
        assert_eq!(scores(&groups[1], (1, 0)), vec![StepScore::Positive; 3]);
        assert_eq!(scores(&groups[1], (1, 1)), vec![StepScore::Negative; 3]);
        assert_eq!(scores(&groups[1], (0, 0)), vec![StepScore::Negative; 3]);
        assert_eq!(scores(&groups[0], (0, 0)), vec![StepScore::Negative; 2]);
        // the record keeps what the judge said
        assert_eq!(played.verdicts[1][0].scores[1], StepScore::Positive);
    }

    #[test]
    fn loops_of_one_or_two_actions_are_found_at_the_end_only() {
        let (t, m) = (
            "take apple 1 from countertop 2",
            "move apple 1 to countertop 2",
        );
        let two = traj(&["go to countertop 2", t, m, t, m, t]);
        assert!(two.ends_in_loop(5));
        assert!(!two.ends_in_loop(6), "the first step is outside the loop");
        assert!(
            traj(&["look", "use desklamp 1", "use desklamp 1", "use desklamp 1"]).ends_in_loop(3)
        );
        assert!(!traj(&[t, m, "go to fridge 1", t, m]).ends_in_loop(5));
        assert!(
            !traj(&["a", "b", "c", "a", "b", "c"]).ends_in_loop(6),
            "a cycle of three"
        );
        assert!(!traj(&[t, m]).ends_in_loop(3), "shorter than the window");
        assert!(!traj(&[t, t]).ends_in_loop(1));
    }
}
