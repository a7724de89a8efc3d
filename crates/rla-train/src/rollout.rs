//! Rollouts: the policy plays many households at once (all tasks × rollouts batched into one
//! generation call per step), and the judge scores every step m times.

use crate::notes::Notes;
use crate::prompts::{
    judge_prompt, parse_choice, parse_verdict, policy_answer_styled, policy_prompt_styled,
    PromptStyle,
};
use anyhow::Result;
use indicatif::ProgressBar;
use rla_core::reward::StepScore;
use rla_env::household::expert::{progress_label, GoalSpec};
use rla_env::household::{Household, TaskSpec};
use rla_env::Environment;
use rla_lm::{Message, SampleParams, Sampler};
use rla_model::tok::Tok;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One step of a trajectory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRec {
    /// The observation the policy saw.
    pub observation: String,
    /// The policy's prompt (token ids, chat template applied).
    pub prompt_ids: Vec<u32>,
    /// The policy's answer (token ids).
    pub response_ids: Vec<u32>,
    /// `log π_old` of the answer's tokens.
    pub logprobs: Vec<f32>,
    /// The answer's text.
    pub answer: String,
    /// The command it chose.
    pub action: String,
    /// Whether the answer had a parseable `\boxed{k}`.
    pub parsed: bool,
    /// The environment's feedback.
    pub next_observation: String,
    /// The expert oracle's label: did the step shorten the remaining plan?
    pub progress: bool,
}

/// One episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trajectory {
    /// Index of its task in the batch.
    pub task: usize,
    /// Its steps.
    pub steps: Vec<StepRec>,
    /// Whether the goal was reached.
    pub won: bool,
}

/// Applies the model's chat template to a user message and tokenises it.
pub fn encode_chat(lm: &dyn Sampler, text: &str) -> Result<Vec<u32>> {
    let s = lm
        .chat_template(&[Message::new("user", text)], true)?
        .unwrap_or_else(|| text.to_string());
    Ok(lm.encode(&s)?)
}

/// An answer's tokens as a sampler emits them (see [`encode_response`]).
pub fn encode_answer(lm: &dyn Sampler, text: &str) -> Result<Vec<u32>> {
    let mut ids = lm.encode(text)?;
    ids.extend(lm.eos_ids().first().copied());
    Ok(ids)
}

/// [`encode_chat`] with a tokenizer.
pub fn encode_prompt(tok: &Tok, text: &str) -> Result<Vec<u32>> {
    let s = match tok.chat_template {
        Some(_) => tok.apply_chat_template(&[Message::new("user", text)], true)?,
        None => text.to_string(),
    };
    Ok(tok.encode(&s)?)
}

/// An answer's tokens as the model emits them: the text, then the end-of-sequence token. Warm
/// starts train on exactly these and constrained decoding allows exactly these.
pub fn encode_response(tok: &Tok, text: &str) -> Result<Vec<u32>> {
    let mut ids = tok.encode(text)?;
    ids.extend(tok.eos_ids.first().copied());
    Ok(ids)
}

/// The token sequences of every admissible answer, each ending in the end-of-sequence token.
pub fn answer_tokens(
    lm: &dyn Sampler,
    admissible: &[String],
    style: PromptStyle,
) -> Result<Vec<Vec<u32>>> {
    admissible
        .iter()
        .enumerate()
        .map(|(i, a)| encode_answer(lm, &policy_answer_styled(a, i, style)))
        .collect()
}

struct Live {
    env: Household,
    goal: GoalSpec,
    traj: Trajectory,
    obs: String,
    history: Vec<(String, String)>,
    notes: Option<Notes>,
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
    /// The prompt carries the agent's notes ([`crate::notes::Notes`]).
    #[serde(default)]
    pub notes: bool,
}

impl Episodes {
    /// How a run evaluates: one greedy episode per task with the run's step limit for evaluation,
    /// history window, prompt style and constraint.
    pub fn evaluation(cfg: &crate::config::RunConfig) -> Episodes {
        Episodes {
            rollouts: 1,
            step_limit: cfg.household.eval_step_limit,
            window: cfg.household.history_window,
            style: cfg.household.prompt_style,
            constrained: cfg.household.constrain_actions,
            notes: cfg.household.notes,
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
        let text = std::fs::read_to_string(&p)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
        let ep = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not episode settings: {e}", p.display()))?;
        Ok(Some(ep))
    }
}

/// Plays `ep.rollouts` episodes of each task with the policy; all episodes step together.
pub fn rollout(
    policy: &dyn Sampler,
    tasks: &[TaskSpec],
    ep: Episodes,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let mut games = Vec::new();
    for t in tasks {
        let env = Household::from_task(t)?.with_step_limit(ep.step_limit.min(t.step_limit));
        let goal = GoalSpec::from_task(env.world(), t).map_err(anyhow::Error::msg)?;
        games.push((env, goal));
    }
    rollout_games(policy, games, ep, sp, bar)
}

/// Plays `ep.rollouts` episodes of each (household, goal) with the policy: generated tasks or
/// ALFWorld's own game files; all episodes step together. Each trajectory's `task` is its game's
/// index.
pub fn rollout_games(
    policy: &dyn Sampler,
    games: Vec<(Household, GoalSpec)>,
    ep: Episodes,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Trajectory>> {
    let Episodes {
        rollouts: n,
        step_limit,
        window,
        style,
        constrained,
        notes,
    } = ep;
    let mut live: Vec<Live> = Vec::new();
    for (ti, (env, goal)) in games.into_iter().enumerate() {
        for _ in 0..n {
            let mut env = env.clone();
            let obs = env.reset();
            live.push(Live {
                env,
                goal,
                traj: Trajectory {
                    task: ti,
                    steps: vec![],
                    won: false,
                },
                notes: notes.then(|| Notes::from_intro(&obs)),
                obs,
                history: vec![],
            });
        }
    }
    let mut done: Vec<bool> = vec![false; live.len()];
    for step in 0..step_limit {
        let active: Vec<usize> = (0..live.len()).filter(|&i| !done[i]).collect();
        if active.is_empty() {
            break;
        }
        let mut prompts = Vec::with_capacity(active.len());
        let mut adms = Vec::with_capacity(active.len());
        let mut allowed = Vec::new();
        for &i in &active {
            let l = &mut live[i];
            let adm = l.env.admissible().to_vec();
            let text = policy_prompt_styled(
                &l.env.world().task,
                &l.history,
                window,
                &l.obs,
                &adm,
                style,
                &l.notes.as_ref().map(Notes::render).unwrap_or_default(),
            );
            prompts.push(encode_chat(policy, &text)?);
            if constrained {
                allowed.push(answer_tokens(policy, &adm, style)?);
            }
            adms.push(adm);
        }
        let p = SampleParams {
            seed: sp.seed.wrapping_add(step as u64 * 7919),
            ..sp.clone()
        };
        let out = if constrained {
            // room for the longest admissible answer, whatever max_new_tokens says
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
            let l = &mut live[i];
            let (idx, parsed) = parse_choice(&s.text, &adms[k]);
            let action = adms[k][idx].clone();
            let before = l.env.state().clone();
            let r = l.env.step(&action);
            let progress = progress_label(l.env.world(), &before, l.env.state(), &l.goal);
            l.traj.steps.push(StepRec {
                observation: l.obs.clone(),
                prompt_ids: prompts[k].clone(),
                response_ids: s.tokens.clone(),
                logprobs: s.logprobs.clone(),
                answer: s.text.clone(),
                action: action.clone(),
                parsed,
                next_observation: r.feedback.clone(),
                progress,
            });
            if let Some(n) = &mut l.notes {
                n.observe(&r.feedback);
            }
            l.history
                .push((std::mem::replace(&mut l.obs, r.feedback), action));
            if r.done {
                l.traj.won = r.won;
                done[i] = true;
            }
        }
        if let Some(b) = bar {
            b.inc(active.len() as u64);
        }
    }
    Ok(live.into_iter().map(|l| l.traj).collect())
}

/// The m verdicts of the judge on one step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdicts {
    /// The judge's prompt.
    pub prompt_ids: Vec<u32>,
    /// Its answers (token ids).
    pub responses: Vec<Vec<u32>>,
    /// `log π_old` of the answers' tokens.
    pub logprobs: Vec<Vec<f32>>,
    /// The answers' texts.
    pub texts: Vec<String>,
    /// The parsed verdicts S_ij.
    pub scores: Vec<StepScore>,
}

/// Scores every step of every trajectory m times; the m answers of a step share its prefill.
pub fn judge(
    reward: &dyn Sampler,
    tasks: &[TaskSpec],
    trajs: &[Trajectory],
    m: usize,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Vec<Verdicts>>> {
    let prompts = trajs
        .iter()
        .map(|t| {
            let task = tasks[t.task].sentence();
            t.steps
                .iter()
                .map(|s| {
                    let text = judge_prompt(
                        &task,
                        &s.observation,
                        &s.answer,
                        &s.action,
                        &s.next_observation,
                    );
                    encode_chat(reward, &text)
                })
                .collect()
        })
        .collect::<Result<Vec<Vec<Vec<u32>>>>>()?;
    judge_prompts(reward, &prompts, m, sp, bar)
}

/// The judge's m answers to each prompt (`prompts[episode][step]`, token ids), parsed into
/// verdicts; prompts are sampled 64 at a time, in episode then step order.
pub fn judge_prompts(
    reward: &dyn Sampler,
    prompts: &[Vec<Vec<u32>>],
    m: usize,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Vec<Verdicts>>> {
    let flat: Vec<(usize, &Vec<u32>)> = prompts
        .iter()
        .enumerate()
        .flat_map(|(e, steps)| steps.iter().map(move |p| (e, p)))
        .collect();
    let mut out: Vec<Vec<Verdicts>> = prompts
        .iter()
        .map(|s| Vec::with_capacity(s.len()))
        .collect();
    for (c, chunk) in flat.chunks(64).enumerate() {
        let p = SampleParams {
            seed: sp.seed.wrapping_add(c as u64 * 104_729),
            ..sp.clone()
        };
        let ids: Vec<Vec<u32>> = chunk.iter().map(|(_, p)| (*p).clone()).collect();
        let gens = reward.generate(&ids, m, &p)?;
        for ((e, prompt), g) in chunk.iter().zip(gens) {
            out[*e].push(Verdicts {
                prompt_ids: (*prompt).clone(),
                scores: g.iter().map(|s| parse_verdict(&s.text)).collect(),
                texts: g.iter().map(|s| s.text.clone()).collect(),
                responses: g.iter().map(|s| s.tokens.clone()).collect(),
                logprobs: g.into_iter().map(|s| s.logprobs).collect(),
            });
        }
        if let Some(b) = bar {
            b.inc(chunk.len() as u64);
        }
    }
    Ok(out)
}

/// Adds the judge's verdicts on each episode's steps to the groups, as consistency-rewarded
/// judgements: `episodes` gives each episode's task index and its steps' verdicts, in play order.
pub fn push_step_judgements<'a>(
    groups: &mut [crate::setting::Group],
    episodes: impl Iterator<Item = (usize, &'a [Verdicts])>,
) {
    use crate::setting::{Generation, JudgeReward, Judgement, Scored};
    let mut seen = vec![0usize; groups.len()];
    for (task, vs) in episodes {
        let e = seen[task];
        seen[task] += 1;
        for (i, v) in vs.iter().enumerate() {
            groups[task].judgements.push(Judgement {
                step: Some((e, i)),
                samples: v
                    .responses
                    .iter()
                    .zip(&v.logprobs)
                    .zip(&v.scores)
                    .map(|((r, l), &score)| Scored {
                        sample: Generation {
                            prompt: v.prompt_ids.clone(),
                            response: r.clone(),
                            logprobs: l.clone(),
                        },
                        score,
                    })
                    .collect(),
                reward: JudgeReward::Consistency,
            });
        }
    }
}

/// The judge's quality over judged steps, each given as (its episode won, the oracle's
/// progress label, its verdicts): μ and process accuracy against the oracle labels, outcome
/// accuracy against the episodes' outcomes, precision A from the mean verdicts of steps of won
/// and lost episodes.
pub fn step_judge_quality<'a>(
    steps: impl Iterator<Item = (bool, bool, &'a Verdicts)>,
) -> crate::setting::JudgeQuality {
    use rla_core::metrics::judge_accuracy;
    use rla_core::theory::{empirical_precision, Calibration};
    let mut cal = Calibration::default();
    let (mut pos_means, mut neg_means) = (vec![], vec![]);
    let (mut proc_pairs, mut out_pairs) = (vec![], vec![]);
    for (won, progress, v) in steps {
        for &sc in &v.scores {
            cal.observe(progress, sc);
            proc_pairs.push((sc, progress));
            out_pairs.push((sc, won));
        }
        let mean = v.scores.iter().map(|x| x.value()).sum::<f64>() / v.scores.len() as f64;
        if won {
            pos_means.push(mean)
        } else {
            neg_means.push(mean)
        }
    }
    crate::setting::JudgeQuality {
        calibration: cal,
        precision: empirical_precision(&pos_means, &neg_means).map(|p| p.precision),
        process_acc: judge_accuracy(&proc_pairs),
        outcome_acc: judge_accuracy(&out_pairs),
        extra: None,
    }
}

/// Greedy success rate of the policy on tasks (one episode each).
pub fn evaluate(
    policy: &dyn Sampler,
    tasks: &[TaskSpec],
    ep: Episodes,
    max_new_tokens: usize,
    bar: Option<&ProgressBar>,
) -> Result<f64> {
    if tasks.is_empty() {
        return Ok(0.0);
    }
    let trajs = evaluate_episodes(policy, tasks, ep, max_new_tokens, bar)?;
    Ok(trajs.iter().filter(|t| t.won).count() as f64 / trajs.len() as f64)
}

/// The greedy episodes behind [`evaluate`].
pub fn evaluate_episodes(
    policy: &dyn Sampler,
    tasks: &[TaskSpec],
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
