//! The household setting (ALFWorld-compatible): the policy plays multi-turn episodes choosing
//! among the admissible commands, the reward model judges every step m times, and tasks are
//! rewritten by perturbations (rarer or commoner receptacles, fewer or more targets, distractors,
//! hints) guided by the judge's critiques.

use crate::config::{RewriterKind, RunConfig};
use crate::pool::PoolTask;
use crate::prompts::reasoning;
use crate::rewriter::{LmRewriter, Phrases, Rewriter, Structured, Summariser};
use crate::rollout::{
    evaluate, judge, push_step_judgements, rollout, step_judge_quality, Episodes, Trajectory,
    Verdicts,
};
use crate::run::RunDir;
use crate::setting::{Ctx, Episode, Generation, Group, JudgeQuality, Setting, Split, Step};
use anyhow::Result;
use rla_core::adapt::Direction;
use rla_core::filter::Band;
use rla_core::reward::{Outcome, StepScore};
use rla_env::household::splits::{eval_tasks, train_tasks};
use rla_env::household::TaskSpec;
use rla_lm::{SampleParams, Sampler};
use std::path::Path;

impl PoolTask for TaskSpec {
    fn id(&self) -> &str {
        &self.id
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
}

/// The household setting.
#[derive(Debug, Default)]
pub struct Household;

/// One iteration's episodes and the judge's verdicts on their steps.
#[derive(Debug, Default)]
pub struct Played {
    /// Every episode, tasks in batch order.
    pub trajs: Vec<Trajectory>,
    /// The m verdicts on each step of each episode.
    pub verdicts: Vec<Vec<Verdicts>>,
}

impl Household {
    /// The rewriter and summariser the config names (the reward model prompted, or the
    /// structured ones).
    fn with_rewriter<R>(
        ctx: Ctx,
        reward: &dyn Sampler,
        i: usize,
        f: impl FnOnce(&dyn Rewriter, &dyn Summariser) -> R,
    ) -> R {
        let lm = LmRewriter {
            lm: reward,
            params: SampleParams {
                temperature: 0.7,
                max_new_tokens: 64,
                seed: ctx.seed(4 + i as u64),
                ..Default::default()
            },
        };
        match ctx.cfg.household.rewriter {
            RewriterKind::Structured => f(&Structured, &Phrases),
            RewriterKind::RewardModel => f(&lm, &lm),
        }
    }
}

impl Setting for Household {
    type Task = TaskSpec;
    type Record = Played;

    fn name(&self) -> &'static str {
        "household"
    }

    fn initial_pool(&self, cfg: &RunConfig) -> Vec<TaskSpec> {
        train_tasks(cfg.pool_size, cfg.seed)
            .into_iter()
            .map(|mut t| {
                t.step_limit = cfg.household.train_step_limit;
                t
            })
            .collect()
    }

    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[TaskSpec],
    ) -> Result<(Vec<Group>, Played)> {
        let cfg = ctx.cfg;
        let sp = SampleParams {
            temperature: cfg.policy.temperature,
            max_new_tokens: cfg.policy.max_new_tokens,
            seed: ctx.seed(2),
            ..Default::default()
        };
        let bar = ctx.bar(
            (tasks.len() * cfg.rollouts_per_task) as u64 * 8,
            &format!("iter {} rollout", ctx.k),
        );
        let trajs = rollout(
            policy,
            tasks,
            Episodes {
                rollouts: cfg.rollouts_per_task,
                step_limit: cfg.household.train_step_limit,
                window: cfg.household.history_window,
                style: cfg.household.prompt_style,
                constrained: cfg.household.constrain_actions,
                notes: cfg.household.notes,
            },
            &sp,
            bar.as_ref(),
        )?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let mut groups: Vec<Group> = vec![Group::default(); tasks.len()];
        for t in &trajs {
            groups[t.task].episodes.push(Episode {
                outcome: Outcome::from_won(t.won).value(),
                won: t.won,
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
        tasks: &[TaskSpec],
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
        played.verdicts = judge(
            reward,
            tasks,
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
        // μ from verdicts against the expert's oracle step labels; precision A from the mean
        // verdicts of steps of won and lost episodes
        step_judge_quality(
            played
                .trajs
                .iter()
                .zip(&played.verdicts)
                .flat_map(|(t, vs)| {
                    t.steps
                        .iter()
                        .zip(vs)
                        .map(move |(s, v)| (t.won, s.progress, v))
                }),
        )
    }

    fn policy_band(&self, cfg: &RunConfig) -> Band {
        cfg.policy_band
    }

    fn reward_band(&self, cfg: &RunConfig) -> Band {
        cfg.reward_band
    }

    fn critique(
        &self,
        ctx: Ctx,
        reward: &dyn Sampler,
        i: usize,
        _groups: &[Group],
        played: &Played,
    ) -> Option<String> {
        // the judge's reasoning on high-risk steps (all m say −1) of the task's failed episodes
        let mut reasons = Vec::new();
        for (t, vs) in played.trajs.iter().zip(&played.verdicts) {
            if t.task != i || t.won {
                continue;
            }
            for v in vs {
                if v.scores.iter().all(|s| *s == StepScore::Negative) {
                    reasons.extend(v.texts.iter().map(|x| reasoning(x).to_string()));
                }
            }
        }
        Household::with_rewriter(ctx, reward, i, |_, summariser| {
            summariser.summarise(&reasons)
        })
    }

    fn rewrite(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        task: &TaskSpec,
        direction: Direction,
        critique: Option<&str>,
        i: usize,
    ) -> Result<Option<(String, TaskSpec)>> {
        Ok(Household::with_rewriter(ctx, reward, i, |rewriter, _| {
            rewriter.rewrite(task, direction, critique, ctx.k)
        }))
    }

    fn split_size(&self, split: Split) -> Option<usize> {
        Some(eval_tasks(split).len())
    }

    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        let cfg = ctx.cfg;
        let tasks: Vec<TaskSpec> = eval_tasks(split).into_iter().take(n).collect();
        let bar = ctx.bar(
            (tasks.len() * cfg.household.eval_step_limit) as u64,
            &format!("eval {split:?}"),
        );
        let r = evaluate(
            policy,
            &tasks,
            Episodes::evaluation(cfg),
            cfg.policy.max_new_tokens,
            bar.as_ref(),
        );
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        r
    }

    fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        tasks: &[TaskSpec],
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
                    "task": tasks[t.task].sentence(),
                    "task_id": tasks[t.task].id,
                    "won": t.won,
                    "steps": t.steps.iter().enumerate().map(|(i, s)| serde_json::json!({
                        "answer": s.answer, "action": s.action, "feedback": s.next_observation, "oracle_progress": s.progress,
                        "verdicts": played.verdicts.get(j).and_then(|v| v.get(i)).map(|v| v.texts.clone()),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        dir.save_json(&format!("samples/iter-{k:04}.json"), &picked)
    }

    fn warm_start(&self, cfg: &RunConfig, out: &Path, progress: bool) -> Result<Vec<String>> {
        crate::pretrain::household_warm_start(cfg, out, progress)
    }

    fn policy_files(&self, cfg: &RunConfig) -> Result<Vec<(String, String)>> {
        Ok(vec![Episodes::evaluation(cfg).record()?])
    }

    fn demonstrations(&self, cfg: &RunConfig, chunk: u64) -> Result<Vec<crate::pretrain::Example>> {
        crate::pretrain::household_control_demonstrations(cfg, chunk)
    }
}
