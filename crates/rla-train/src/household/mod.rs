//! The household setting (ALFWorld-compatible): the policy plays multi-turn episodes choosing
//! among the admissible commands, the reward model judges every step m times, and tasks are
//! rewritten by perturbations (rarer or commoner receptacles, fewer or more targets, distractors,
//! hints; harder: goals escalated, targets hidden late, lookalikes where the target was) guided by
//! the judge's critiques.

pub mod config;
pub mod dagger;
pub mod eval;
pub mod games;
pub mod notes;
pub mod play;
pub mod probe;
pub mod prompts;
pub mod rewriter;
pub mod warm;

pub use play::{evaluate, evaluate_episodes, rollout, rollout_games, Episodes, EPISODES_FILE};
pub use prompts::PromptStyle;

use crate::config::RunConfig;
use crate::play::Played;
use crate::pool::PoolTask;
use crate::run::RunDir;
use crate::setting::{Ctx, Group, JudgeQuality, Setting, Split};
use anyhow::Result;
use config::{HouseholdConfig, RewriterKind};
use rewriter::{LmRewriter, Phrases, Rewriter, Structured, Summariser};
use rla_core::adapt::Direction;
use rla_env::household::splits::{eval_tasks_first, train_tasks_sparse};
use rla_env::household::{HouseTask, HouseholdTask, TaskSpec};
use rla_lm::{SampleParams, Sampler};

impl PoolTask for TaskSpec {
    fn id(&self) -> &str {
        &self.id
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
}

impl PoolTask for HouseTask {
    fn id(&self) -> &str {
        HouseholdTask::id(self)
    }
    fn parent(&self) -> Option<&str> {
        HouseTask::parent(self)
    }
}

/// The household setting.
#[derive(Debug, Default)]
pub struct Household {
    /// Its table of the run config.
    pub cfg: HouseholdConfig,
}

impl crate::setting::Registered for Household {
    const NAME: &'static str = "household";
    type Config = HouseholdConfig;
    fn new(cfg: HouseholdConfig) -> Household {
        Household { cfg }
    }
}

impl Household {
    /// The rewriter and summariser the config names (the reward model prompted, or the
    /// structured ones).
    fn with_rewriter<R>(
        &self,
        ctx: Ctx,
        reward: &dyn Sampler,
        i: usize,
        f: impl FnOnce(&dyn Rewriter, &dyn Summariser) -> R,
    ) -> R {
        let lm = LmRewriter {
            lm: reward,
            params: rewrite_params(ctx, i),
        };
        match self.cfg.rewriter {
            RewriterKind::Structured => f(
                &Structured {
                    seed: ctx.item_seed(6, i),
                },
                &Phrases,
            ),
            RewriterKind::RewardModel => f(&lm, &lm),
        }
    }
}

/// How the reward model samples a rewrite or a summary of the batch's task `i`.
fn rewrite_params(ctx: Ctx, i: usize) -> SampleParams {
    SampleParams {
        temperature: 0.7,
        max_new_tokens: 64,
        seed: ctx.item_seed(4, i),
        ..Default::default()
    }
}

impl Household {
    /// The first `n` tasks of an evaluation split (the generated split, or ALFWorld's game
    /// folders the config names), each played once greedily, with each task's goal type.
    fn play_split(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
    ) -> Result<(Vec<KindAndId>, Vec<crate::play::Trajectory>)> {
        let cfg = ctx.cfg;
        let ep = Episodes::evaluation(cfg);
        let tokens = cfg.policy.max_new_tokens;
        let limit = self.cfg.eval_step_limit;
        if let Some(root) = self.cfg.eval_games.of(split) {
            let games = games::eval_games(root, n, &self.cfg)?;
            let kinds = games
                .iter()
                .map(|g| (game_kind(&g.id), g.id.clone()))
                .collect();
            let bar_len = (games.len() * limit) as u64;
            let trajs = ctx.with_bar(bar_len, &format!("eval {split:?}"), |bar| {
                evaluate_episodes(policy, &games, ep, tokens, bar)
            })?;
            return Ok((kinds, trajs));
        }
        let tasks: Vec<TaskSpec> = eval_tasks_first(split, n);
        let kinds = tasks
            .iter()
            .map(|t| (t.goal.as_str().to_string(), t.id.clone()))
            .collect();
        let bar_len = (tasks.len() * limit) as u64;
        let trajs = ctx.with_bar(bar_len, &format!("eval {split:?}"), |bar| {
            evaluate_episodes(policy, &tasks, ep, tokens, bar)
        })?;
        Ok((kinds, trajs))
    }
}

/// An evaluation task's kind (its goal type) and its id (a generated task's, a game folder's).
type KindAndId = (String, String);

/// A game folder's goal type, read off its id: the ALFWorld `task_type` its top folder names
/// (ALFWorld's `<task_type>-<classes>/trial_…`, or any name holding one), else the top folder.
fn game_kind(id: &str) -> String {
    let top = id.split(['/', '\\']).next().unwrap_or_default();
    rla_env::household::kinds::GoalKind::ALL
        .iter()
        .map(|g| g.as_str())
        .find(|g| top.contains(g))
        .unwrap_or(top)
        .to_string()
}

impl Setting for Household {
    type Task = HouseTask;
    type Record = Played;

    fn name(&self) -> &'static str {
        "household"
    }

    fn initial_pool(&self, cfg: &RunConfig) -> Result<Vec<HouseTask>> {
        if let Some(root) = &self.cfg.train_games {
            let games = games::train_pool(root, cfg.pool_size, cfg.seed, &self.cfg)?;
            return Ok(games.into_iter().map(HouseTask::Game).collect());
        }
        Ok(
            train_tasks_sparse(cfg.pool_size, cfg.seed, self.cfg.train_object_share)
                .into_iter()
                .map(|mut t| {
                    t.step_limit = self.cfg.train_step_limit;
                    HouseTask::Generated(t)
                })
                .collect(),
        )
    }

    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[HouseTask],
    ) -> Result<(Vec<Group>, Played)> {
        let cfg = ctx.cfg;
        let trajs = ctx.with_bar(
            (tasks.len() * cfg.rollouts_per_task) as u64 * 8,
            &format!("iter {} rollout", ctx.k),
            |bar| {
                rollout(
                    policy,
                    tasks,
                    Episodes {
                        rollouts: cfg.rollouts_per_task,
                        step_limit: self.cfg.train_step_limit,
                        end_loops: self.cfg.train_end_loops,
                        ..Episodes::evaluation(cfg)
                    },
                    &cfg.policy.sampling(ctx.seed(2)),
                    bar,
                )
            },
        )?;
        Ok(Played::of(trajs, tasks.len()))
    }

    fn judge(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        tasks: &[HouseTask],
        groups: &mut [Group],
        played: &mut Played,
    ) -> Result<()> {
        played.judge(ctx, reward, groups, |t, s| {
            play::step_judge_prompt(&tasks[t.task], s, self.cfg.judge_notes)
        })?;
        if self.cfg.oracle_verdicts {
            played.oracle_scores(groups);
        }
        Ok(())
    }

    fn judge_quality(&self, _groups: &[Group], played: &Played) -> JudgeQuality {
        played.quality()
    }

    fn critique(
        &self,
        ctx: Ctx,
        reward: &dyn Sampler,
        i: usize,
        _groups: &[Group],
        played: &Played,
    ) -> Option<String> {
        let reasons = played.high_risk_reasons(i);
        self.with_rewriter(ctx, reward, i, |_, summariser| {
            summariser.summarise(&reasons)
        })
    }

    fn rewrite(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        task: &HouseTask,
        direction: Direction,
        critique: Option<&str>,
        i: usize,
    ) -> Result<Option<(String, HouseTask)>> {
        let t = match task {
            HouseTask::Generated(t) => t,
            HouseTask::Game(g) => {
                let params = rewrite_params(ctx, i);
                let id = format!("rewrite-{:04}-{i:03}", ctx.k);
                let seed = ctx.item_seed(5, i);
                let r = games::rewrite_game(
                    &self.cfg, reward, &params, g, direction, critique, ctx.run, id, seed,
                )?;
                return Ok(r.map(|(what, g)| (what, HouseTask::Game(g))));
            }
        };
        Ok(self
            .with_rewriter(ctx, reward, i, |rewriter, _| {
                rewriter.rewrite(t, direction, critique, ctx.k)
            })
            .map(|(what, t)| (what, HouseTask::Generated(t))))
    }

    fn rewrite_check(&self) -> Option<&'static str> {
        Some("the expert planner solves it from the start within its step limit (a game's rewrite: from the game's start; a harder rewrite that stays harder: the searching expert too, in more steps than on its parent)")
    }

    fn accepted(&mut self, ctx: Ctx, task: &mut HouseTask) -> Result<()> {
        match (task, ctx.run) {
            (HouseTask::Game(g), Some(run)) => games::accept(run, g),
            _ => Ok(()),
        }
    }

    fn split_size(&self, split: Split) -> Option<usize> {
        match self.cfg.eval_games.of(split) {
            // a folder that cannot be read is named when the split is first evaluated
            Some(root) => games::count(root).ok(),
            None => Some(rla_env::household::splits::split_size(split)),
        }
    }

    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        let (_, trajs) = self.play_split(ctx, policy, split, n)?;
        Ok(crate::play::success(&trajs))
    }

    fn evaluate_episodes(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
    ) -> Result<Option<Vec<crate::setting::EvalEpisode>>> {
        let (kinds, trajs) = self.play_split(ctx, policy, split, n)?;
        Ok(Some(crate::play::with_kinds(kinds, trajs)))
    }

    fn evaluate_sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: crate::setting::Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>> {
        let cfg = ctx.cfg;
        let ep = Episodes::evaluation(cfg);
        let how = (sampling, cfg.policy.max_new_tokens);
        let limit = self.cfg.eval_step_limit;
        let what = format!("eval {split:?}, {} a task", sampling.samples);
        let played = if let Some(root) = self.cfg.eval_games.of(split) {
            let games = games::eval_games(root, n, &self.cfg)?;
            let len = (games.len() * sampling.samples * limit) as u64;
            ctx.with_bar(len, &what, |bar| {
                eval::sampled(policy, &games, ep, how, bar)
            })?
        } else {
            let tasks: Vec<TaskSpec> = eval_tasks_first(split, n);
            let len = (tasks.len() * sampling.samples * limit) as u64;
            ctx.with_bar(len, &what, |bar| {
                eval::sampled(policy, &tasks, ep, how, bar)
            })?
        };
        Ok(Some(played.scores))
    }

    fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        tasks: &[HouseTask],
        played: &Played,
    ) -> Result<()> {
        played.save_samples(
            dir,
            k,
            |t| {
                serde_json::json!({
                    "task": tasks[t.task].sentence(),
                    "task_id": HouseholdTask::id(&tasks[t.task]),
                    "won": t.won(),
                })
            },
            |s| {
                serde_json::json!({
                    "answer": s.answer, "action": s.action, "feedback": s.next_observation,
                    "state": s.state.map(|k| format!("{k:016x}")),
                    "progress": s.progress, "planner_progress": s.planner_progress,
                })
            },
        )
    }

    fn warm_start(&self, w: crate::setting::WarmStart) -> Result<Vec<String>> {
        warm::warm_start(w)
    }

    fn policy_files(&self, cfg: &RunConfig) -> Result<Vec<(String, String)>> {
        Ok(vec![Episodes::evaluation(cfg).record()?])
    }

    fn extra_evaluations(
        &self,
        cfg: &RunConfig,
        data: &std::path::Path,
    ) -> Result<Vec<Box<dyn crate::setting::ExtraEvaluation>>> {
        Ok(vec![Box::new(eval::GamesWon::new(cfg, data)?)])
    }

    fn demonstrations(&self, cfg: &RunConfig, chunk: u64) -> Result<Vec<crate::pretrain::Example>> {
        warm::control_demonstrations(cfg, chunk)
    }

    fn own_state_labels(
        &self,
        cfg: &RunConfig,
        policy: &dyn Sampler,
        chunk: u64,
        tasks: usize,
    ) -> Result<Vec<crate::pretrain::Example>> {
        dagger::control_labels(cfg, policy, chunk, tasks)
    }
}

#[cfg(test)]
mod kind_tests {
    #[test]
    fn a_game_folders_kind_is_its_task_type() {
        use super::game_kind;
        assert_eq!(
            game_kind("pick_two_obj_and_place-Pen-None-Desk-307/trial_T20190908_022434_519012"),
            "pick_two_obj_and_place"
        );
        assert_eq!(
            game_kind("look_at_obj_in_light-Book-None-DeskLamp-301"),
            "look_at_obj_in_light"
        );
        assert_eq!(
            game_kind("02-pick_clean_then_place_in_recep-kitchen"),
            "pick_clean_then_place_in_recep"
        );
        assert_eq!(game_kind("game7/trial_1"), "game7");
    }
}
