//! The RLAnything loop, written once for every setting. [`Trainer::iteration`] is the paper's
//! Algorithm 1, one named step per line; the setting ([`Setting`]) plays, judges, measures,
//! critiques and rewrites its own tasks, and the models are reached only through the
//! [`Sampler`] and [`Learner`] traits.

use crate::config::RunConfig;
use crate::pool::Pending;
use crate::run::{IterMetrics, RunDir, RunState};
use crate::setting::{Ctx, Group, JudgeReward, Setting, Split};
use anyhow::Result;
use rla_core::adapt::{accept_rewrite, adaptation_direction, Direction};
use rla_core::advantage::policy_advantages;
use rla_core::consistency::consistency_advantages;
use rla_core::filter::task_accuracy;
use rla_core::ppo::k3_kl;
use rla_core::reward::{step_reward_value, step_signal, StepScore};
use rla_core::stats::standardize;
use rla_core::theory::{imbalance, theorem1_lower_bound, IMBALANCE_MARGIN};
use rla_lm::{Learner, Model, PpoSample};
use std::time::Instant;

/// The trainer: the run's configuration, its setting, its two models, its state and its folder.
pub struct Trainer<S: Setting> {
    /// Configuration.
    pub cfg: RunConfig,
    /// The setting.
    pub setting: S,
    /// The policy.
    pub policy: Box<dyn Model>,
    /// The reward model.
    pub reward: Box<dyn Model>,
    /// Pool, pending rewrites, lineage, metrics, iteration counter.
    pub state: RunState<S::Task>,
    /// The run folder.
    pub dir: RunDir,
    /// Progress bars on stderr.
    pub progress: bool,
}

/// This iteration's batch: the sampled slots, the pending rewrites rolled out after them, and
/// the tasks of both in that order.
struct Batch<T> {
    sampled: Vec<usize>,
    pending: Vec<Pending<T>>,
    tasks: Vec<T>,
}

/// Training samples of both models.
struct Samples {
    policy: Vec<PpoSample>,
    reward: Vec<PpoSample>,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

impl<S: Setting> Trainer<S> {
    /// One iteration of Algorithm 1.
    pub fn iteration(&mut self, k: usize) -> Result<IterMetrics> {
        let cfg = self.cfg.clone();
        let run = self.dir.path.clone();
        let ctx = Ctx {
            cfg: &cfg,
            k,
            progress: self.progress,
            run: Some(&run),
        };
        let mut m = IterMetrics {
            iteration: k,
            ..Default::default()
        };
        let t = Instant::now();
        let batch = self.sample_tasks(ctx);
        let (mut groups, mut record) = self.setting.play(ctx, &*self.policy, &batch.tasks)?;
        m.time_rollout = secs(t);
        let t = Instant::now();
        self.setting
            .judge(ctx, &*self.reward, &batch.tasks, &mut groups, &mut record)?;
        check_shape(self.setting.name(), &groups, batch.tasks.len())?;
        m.time_judge = secs(t);
        fn gen(g: &crate::setting::Generation) -> (&[u32], &[u32]) {
            (g.prompt.as_slice(), g.response.as_slice())
        }
        m.vitals.tokens_rollout = crate::vitals::tokens(
            groups
                .iter()
                .flat_map(|g| &g.episodes)
                .flat_map(|e| &e.steps)
                .map(|s| gen(&s.action)),
        );
        m.vitals.tokens_judge = crate::vitals::tokens(
            groups
                .iter()
                .flat_map(|g| &g.judgements)
                .flat_map(|j| &j.samples)
                .map(|x| gen(&x.sample)),
        );
        let acc = accuracies(&groups);
        let trained = self.accept_or_drop(ctx, &batch, &acc, k, &mut m)?;
        self.measure_theory(&groups, &record, &acc, &mut m);
        let t = Instant::now();
        let samples = self.build_samples(&groups, &acc, &trained, ctx.seed(6), &mut m)?;
        self.update(&samples, &mut m)?;
        self.sync_weights()?;
        m.time_update = secs(t);
        let t = Instant::now();
        self.critique_and_adapt(ctx, &batch, &acc, &groups, &record)?;
        m.pending_next = self.state.pool.pending.len();
        m.pool_size = self.state.pool.slots.len();
        if let Some(st) = &self.state.pool.stream {
            m.tasks_distinct = Some(st.distinct());
            m.tasks_repeated = Some(st.repeats());
        }
        m.time_adapt = secs(t);
        self.setting
            .save_samples(&self.dir, k, &batch.tasks, &record)?;
        Ok(m)
    }

    /// Draws `tasks_per_iteration` slots of the pool (at random, or the next of the run's
    /// stream); every pending rewrite joins them.
    fn sample_tasks(&mut self, ctx: Ctx) -> Batch<S::Task> {
        let pool = &mut self.state.pool;
        let run_seed = ctx.cfg.seed;
        let sampled = pool.draw(
            ctx.cfg.tasks_per_iteration,
            ctx.cfg.draw,
            ctx.seed(1),
            |epoch| rla_core::seed::stream(rla_core::seed::mix(run_seed, "pool-stream"), &[epoch]),
        );
        let pending = std::mem::take(&mut pool.pending);
        let mut tasks: Vec<S::Task> = sampled
            .iter()
            .map(|&s| pool.slots[s].task.clone())
            .collect();
        tasks.extend(pending.iter().map(|p| p.task.clone()));
        Batch {
            sampled,
            pending,
            tasks,
        }
    }

    /// Accepts or drops each pending rewrite by the core rule (its accuracy moved toward the
    /// band); a dropped rewrite's episodes do not train. Returns which groups train.
    fn accept_or_drop(
        &mut self,
        ctx: Ctx,
        batch: &Batch<S::Task>,
        acc: &[f64],
        k: usize,
        m: &mut IterMetrics,
    ) -> Result<Vec<bool>> {
        let mut trained = vec![true; batch.tasks.len()];
        for (j, p) in batch.pending.iter().enumerate() {
            let i = batch.sampled.len() + j;
            let ok = accept_rewrite(p.direction, p.parent_acc, acc[i], &self.cfg.adapt);
            trained[i] = ok;
            let mut p = p.clone();
            if ok {
                self.setting.accepted(ctx, &mut p.task)?;
            }
            self.state
                .pool
                .record_outcome(&p, acc[i], ok, k, self.cfg.grow_pool);
            m.accepted += ok as usize;
        }
        m.pending_evaluated = batch.pending.len();
        Ok(trained)
    }

    /// The live theory: success, μ from the judge's verdicts against ground truth, the
    /// Theorem 1 bound at m, precision A, the judge's accuracies, the Theorem 2 imbalance.
    fn measure_theory(
        &self,
        groups: &[Group],
        record: &S::Record,
        acc: &[f64],
        m: &mut IterMetrics,
    ) {
        let episodes: usize = groups.iter().map(|g| g.episodes.len()).sum();
        let wins: usize = groups.iter().map(Group::wins).sum();
        m.train_success = wins as f64 / episodes.max(1) as f64;
        let q = self.setting.judge_quality(groups, record);
        m.mu = q.calibration.mu();
        m.mu_outcome = q.outcome_calibration.as_ref().and_then(|c| c.mu());
        m.p_plus_outcome = q.outcome_calibration.as_ref().and_then(|c| c.p_plus());
        m.p_minus_outcome = q.outcome_calibration.as_ref().and_then(|c| c.p_minus());
        m.bound =
            m.mu.and_then(|mu| theorem1_lower_bound(mu, self.cfg.judge_samples));
        m.precision = q.precision;
        m.process_acc = q.process_acc;
        m.process_acc_planner = q.process_acc_planner;
        m.outcome_acc = q.outcome_acc;
        m.setting = q.extra;
        m.imbalanced_tasks = groups
            .iter()
            .filter(|g| {
                imbalance(g.wins(), g.episodes.len(), IMBALANCE_MARGIN).is_some_and(|x| x.flagged)
            })
            .count();
        m.task_acc = acc.to_vec();
    }

    /// Rewards, advantages and PPO samples, by `rla-core`'s rules: the integrated step reward
    /// `R_i = O + λ·mean_j S_ij`, advantages z-scored per task and step index (groups in the
    /// policy band), and the reward model's advantages z-scored over each judgement's samples
    /// (groups in the reward band, modes that train it).
    fn build_samples(
        &self,
        groups: &[Group],
        acc: &[f64],
        trained: &[bool],
        null_seed: u64,
        m: &mut IterMetrics,
    ) -> Result<Samples> {
        let cfg = &self.cfg;
        let lambda = cfg.effective_lambda();
        let (policy_band, reward_band) =
            (self.setting.policy_band(cfg), self.setting.reward_band(cfg));
        let mut s = Samples {
            policy: vec![],
            reward: vec![],
        };
        let mut rsum = (0.0, 0usize);
        for (ti, g) in groups.iter().enumerate() {
            if !trained[ti] {
                continue;
            }
            // the verdicts on each step (none when λ = 0: the outcome alone)
            let mut scores: Vec<Vec<Vec<StepScore>>> = g
                .episodes
                .iter()
                .map(|e| vec![vec![]; e.steps.len()])
                .collect();
            if lambda > 0.0 || cfg.mode.reward_only() {
                for j in &g.judgements {
                    if let Some((e, i)) = j.step {
                        scores[e][i] = j.samples.iter().map(|x| x.score).collect();
                    }
                }
            }
            let rewards: Vec<Vec<f64>> = g
                .episodes
                .iter()
                .zip(&scores)
                .map(|(e, sc)| {
                    sc.iter()
                        .map(|x| step_reward_value(e.outcome, x, lambda))
                        .collect()
                })
                .collect();
            for r in rewards.iter().flatten() {
                rsum.0 += r;
                rsum.1 += 1;
            }
            if policy_band.contains(acc[ti]) {
                // the reward-only run: the policy learns from the judge's verdicts alone
                let signals: Vec<Vec<f64>>;
                let policy_rewards = if cfg.mode.reward_only() {
                    signals = scores
                        .iter()
                        .map(|e| e.iter().map(|x| step_signal(x)).collect())
                        .collect();
                    &signals
                } else {
                    &rewards
                };
                let mut adv = match cfg.advantage {
                    crate::config::AdvantageKind::Paper => policy_advantages(policy_rewards),
                    crate::config::AdvantageKind::KeepFinished => {
                        rla_core::policy_advantages_keeping_finished(policy_rewards)
                    }
                    crate::config::AdvantageKind::Trajectory => {
                        rla_core::policy_advantages_with_trajectory(
                            policy_rewards,
                            cfg.trajectory_weight
                                .unwrap_or(crate::config::TRAJECTORY_WEIGHT),
                        )
                    }
                    crate::config::AdvantageKind::JudgeCentred => {
                        let outcomes: Vec<f64> = g.episodes.iter().map(|e| e.outcome).collect();
                        rla_core::policy_advantages_centring_judge_only(policy_rewards, &outcomes)
                    }
                    crate::config::AdvantageKind::Anchor => {
                        let episode = policy_advantages(policy_rewards);
                        // the reward-only run's steps earn the judge's signal alone, no outcome
                        let immediate: Vec<Vec<f64>> = g
                            .episodes
                            .iter()
                            .zip(policy_rewards)
                            .map(|(e, r)| {
                                let o = if cfg.mode.reward_only() {
                                    0.0
                                } else {
                                    e.outcome
                                };
                                rla_core::anchor::immediate_rewards(r, o)
                            })
                            .collect();
                        let states: Vec<Vec<Option<u64>>> = g
                            .episodes
                            .iter()
                            .map(|e| e.steps.iter().map(|st| st.state).collect())
                            .collect();
                        rla_core::anchor::anchor_advantages(
                            &episode,
                            &immediate,
                            &states,
                            cfg.anchor_gamma.unwrap_or(rla_core::anchor::DEFAULT_GAMMA),
                            cfg.anchor_weight
                                .unwrap_or(rla_core::anchor::DEFAULT_WEIGHT),
                        )
                    }
                };
                if cfg.mode.permutes_advantages() {
                    let seed = rla_core::seed::stream(null_seed, &[ti as u64]);
                    rla_core::permute_within_steps(&mut adv, seed);
                }
                let longest = adv.iter().map(Vec::len).max().unwrap_or(0);
                m.vitals.policy.groups_dropped += (0..longest)
                    .filter(|&i| adv.iter().all(|a| a.get(i).is_none_or(Option::is_none)))
                    .count();
                for (e, ep) in g.episodes.iter().enumerate() {
                    for (i, st) in ep.steps.iter().enumerate() {
                        if let Some(a) = adv[e][i] {
                            s.policy.push(ppo_sample(&st.action, a));
                        }
                    }
                }
            }
            if cfg.mode.trains_judge() && reward_band.contains(acc[ti]) {
                for j in &g.judgements {
                    let adv: Vec<Option<f64>> = match &j.reward {
                        JudgeReward::Consistency => {
                            let (e, i) = j.step.ok_or_else(|| {
                                anyhow::anyhow!("a consistency-rewarded judgement needs its step")
                            })?;
                            let verdicts: Vec<StepScore> =
                                j.samples.iter().map(|x| x.score).collect();
                            consistency_advantages(rewards[e][i], &verdicts)
                        }
                        JudgeReward::Given(Some(raw)) => match standardize(raw) {
                            Some(z) => z.into_iter().map(Some).collect(),
                            None => vec![None; j.samples.len()],
                        },
                        JudgeReward::Given(None) => vec![None; j.samples.len()],
                    };
                    if adv.iter().all(Option::is_none) {
                        m.vitals.reward.groups_dropped += 1;
                    }
                    for (x, a) in j.samples.iter().zip(adv) {
                        if let Some(a) = a {
                            s.reward.push(ppo_sample(&x.sample, a));
                        }
                    }
                }
            }
        }
        m.mean_step_reward = if rsum.1 > 0 {
            rsum.0 / rsum.1 as f64
        } else {
            0.0
        };
        m.policy_kl = self.attach_reference(&mut s.policy, self.policy.as_ref())?;
        self.attach_reference(&mut s.reward, self.reward.as_ref())?;
        Ok(s)
    }

    /// With the frozen KL reference, scores the samples under it for the k3 term and returns the
    /// mean k3 estimate of KL(π_old ‖ π_ref) over their tokens.
    fn attach_reference(
        &self,
        samples: &mut [PpoSample],
        model: &dyn Model,
    ) -> Result<Option<f64>> {
        let ppo = &self.cfg.ppo;
        if samples.is_empty() || !ppo.frozen_reference() {
            return Ok(None);
        }
        let pairs: Vec<(Vec<u32>, Vec<u32>)> = samples
            .iter()
            .map(|s| (s.prompt.clone(), s.response.clone()))
            .collect();
        let choices: Vec<Option<&[Vec<u32>]>> =
            samples.iter().map(|s| s.choices.as_deref()).collect();
        let refs = model.reference_logprobs_within(&pairs, &choices)?;
        let counts_match = refs.len() == samples.len()
            && refs
                .iter()
                .zip(samples.iter())
                .all(|(r, s)| r.len() == s.response.len());
        if !counts_match {
            anyhow::bail!(
                "the KL reference scored a different number of samples or tokens than asked"
            );
        }
        let (mut sum, mut n) = (0.0, 0usize);
        for (s, r) in samples.iter_mut().zip(refs) {
            for (&old, &rf) in s.old_logprobs.iter().zip(&r) {
                sum += k3_kl(old as f64, rf as f64);
                n += 1;
            }
            s.ref_logprobs = Some(r);
        }
        Ok((n > 0).then(|| sum / n as f64))
    }

    /// PPO-clip updates of both models (`update_epochs` passes), recorded in the metrics.
    fn update(&mut self, s: &Samples, m: &mut IterMetrics) -> Result<()> {
        m.policy_samples = s.policy.len();
        m.reward_samples = s.reward.len();
        m.vitals.policy.samples = s.policy.len();
        m.vitals.reward.samples = s.reward.len();
        let cfg = &self.cfg;
        // each (model, epoch) its own shuffle, from the run's seed and the iteration
        let plan = |n: usize, spec: &crate::config::ModelSpec, model: &str| {
            (0..cfg.update_epochs)
                .map(|e| {
                    let tag = format!("mini-batches/{model}/{}/{e}", m.iteration);
                    let size = if spec.updates > 0 {
                        n.div_ceil(spec.updates)
                    } else {
                        spec.mini_batch
                    };
                    mini_batches(n, size, rla_core::seed::mix(cfg.seed, &tag))
                })
                .collect::<Vec<_>>()
        };
        let (pp, rp) = (
            plan(s.policy.len(), &cfg.policy, "policy"),
            plan(s.reward.len(), &cfg.reward, "reward"),
        );
        let steps: usize = pp.iter().chain(&rp).map(Vec::len).sum();
        // the learning rate's warm-up over the run's first iterations
        for (model, spec) in [
            (&mut self.policy, &cfg.policy),
            (&mut self.reward, &cfg.reward),
        ] {
            if spec.warmup_iterations > 0 {
                model.set_lr(spec.lr_at(m.iteration));
            }
        }
        let bar = self
            .progress
            .then(|| crate::bar(steps as u64, &format!("iter {} update", m.iteration)));
        for e in 0..cfg.update_epochs {
            for (model, samples, batches, loss, vitals) in [
                (
                    &mut self.policy,
                    &s.policy,
                    &pp[e],
                    &mut m.policy_loss,
                    &mut m.vitals.policy,
                ),
                (
                    &mut self.reward,
                    &s.reward,
                    &rp[e],
                    &mut m.reward_loss,
                    &mut m.vitals.reward,
                ),
            ] {
                let mut total = 0.0;
                for idx in batches {
                    let st = if idx.len() == samples.len() {
                        model.ppo_update(samples)? // one batch of all: no copy
                    } else {
                        let part: Vec<PpoSample> =
                            idx.iter().map(|&i| samples[i].clone()).collect();
                        model.ppo_update(&part)?
                    };
                    vitals.add_step(&st);
                    m.vitals.tokens_update +=
                        crate::vitals::tokens(idx.iter().map(|&i| {
                            (samples[i].prompt.as_slice(), samples[i].response.as_slice())
                        }));
                    total += st.loss * idx.len() as f64;
                    if let Some(b) = &bar {
                        b.inc(1);
                    }
                }
                if !samples.is_empty() {
                    *loss = total / samples.len() as f64;
                }
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        // how far the update moved the policy: its samples scored again (a learner that cannot
        // score leaves it unmeasured), at most `UPDATE_KL_SAMPLES` of them drawn from the run's
        // seed: an estimate, for a sixth of an update's time at most
        if !s.policy.is_empty() {
            let tag = format!("update-kl/{}", m.iteration);
            let pick = kl_subsample(s.policy.len(), rla_core::seed::mix(cfg.seed, &tag));
            let chosen: Vec<&PpoSample> = pick.iter().map(|&i| &s.policy[i]).collect();
            let pairs: Vec<(Vec<u32>, Vec<u32>)> = chosen
                .iter()
                .map(|x| (x.prompt.clone(), x.response.clone()))
                .collect();
            let choices: Vec<Option<&[Vec<u32>]>> =
                chosen.iter().map(|x| x.choices.as_deref()).collect();
            match self.policy.logprobs_within(&pairs, &choices) {
                Ok(after) => m.vitals.policy.set_update_kl(chosen, &after),
                Err(rla_lm::LmError::Unsupported(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Makes the updated weights the ones samples are drawn from (a no-op in process; where a
    /// server samples, it receives them here).
    fn sync_weights(&mut self) -> Result<()> {
        self.policy.sync_weights()?;
        self.reward.sync_weights()?;
        Ok(())
    }

    /// Critique and adapt: each sampled task outside the band gets the judge's critique and a
    /// harder or easier rewrite, rolled out next iteration.
    fn critique_and_adapt(
        &mut self,
        ctx: Ctx,
        batch: &Batch<S::Task>,
        acc: &[f64],
        groups: &[Group],
        record: &S::Record,
    ) -> Result<()> {
        if !self.cfg.mode.adapts() {
            return Ok(());
        }
        for (i, &slot) in batch.sampled.iter().enumerate() {
            let direction = adaptation_direction(acc[i], &self.cfg.adapt);
            if direction == Direction::Keep {
                continue;
            }
            let critique = self.setting.critique(ctx, &*self.reward, i, groups, record);
            let parent = self.state.pool.slots[slot].task.clone();
            let rewrite = self.setting.rewrite(
                ctx,
                &*self.reward,
                &parent,
                direction,
                critique.as_deref(),
                i,
            )?;
            if let Some((perturbation, task)) = rewrite {
                self.state.pool.pending.push(Pending {
                    slot,
                    task,
                    direction,
                    parent_acc: acc[i],
                    critique,
                    perturbation,
                    proposed_at: ctx.k,
                });
            }
        }
        Ok(())
    }

    /// Greedy success of the policy on the first `n` tasks of an evaluation split.
    pub fn evaluate(&mut self, split: Split, n: usize) -> Result<f64> {
        let ctx = Ctx {
            cfg: &self.cfg,
            k: self.state.completed,
            progress: self.progress,
            run: Some(&self.dir.path),
        };
        self.setting.evaluate(ctx, &*self.policy, split, n)
    }

    /// Runs the remaining iterations, evaluating and checkpointing as configured.
    pub fn run(&mut self) -> Result<()> {
        let start = self.state.completed;
        let mut tracker =
            crate::track::Tracker::open(&self.cfg, &self.dir.path, &self.state.metrics)?;
        if start == 0 && self.state.metrics.is_empty() {
            let mut m0 = IterMetrics {
                iteration: 0,
                ..Default::default()
            };
            self.initial_evaluation(&mut m0)?;
            self.dir.push_metrics(&mut self.state, &m0)?;
            tracker.push(&self.state.metrics)?;
            tracing::info!(
                in_domain = m0.eval_in_domain,
                ood = m0.eval_ood,
                validation = m0.eval_validation,
                "initial evaluation"
            );
        }
        let files = self.setting.policy_files(&self.cfg)?;
        for k in (start + 1)..=self.cfg.iterations {
            let mut m = self.iteration(k)?;
            if k % self.cfg.eval.every.max(1) == 0 || k == self.cfg.iterations {
                self.evaluate_splits(&mut m)?;
            }
            tracing::info!(
                iteration = k,
                success = format!("{:.3}", m.train_success),
                mu_outcome = m.mu_outcome.map(|x| format!("{x:.3}")),
                mu_label = m.mu.map(|x| format!("{x:.3}")),
                accepted = m.accepted,
                pending = m.pending_next,
                eval_in = m.eval_in_domain.map(|x| format!("{x:.3}")),
                eval_ood = m.eval_ood.map(|x| format!("{x:.3}")),
                validation = m.eval_validation.map(|x| format!("{x:.3}")),
                "iteration done"
            );
            self.state.completed = k;
            let (policy, reward): (&dyn Learner, &dyn Learner) = (&*self.policy, &*self.reward);
            self.dir
                .checkpoint(&mut self.state, policy, reward, &files, &m)?;
            tracker.push(&self.state.metrics)?;
            if let Some(what) = crate::run::diverged(&m) {
                anyhow::bail!(
                    "the run diverged at iteration {k}: {what}. Its metrics and checkpoint are \
                     saved (`rlanything report {0}` shows them); lower the learning rate in a new \
                     run, or resume {0} to go on from here",
                    self.dir.path.display()
                );
            }
        }
        tracker.finish()
    }
}

/// Checks what a setting handed back: one group per task, and every judged step inside its group.
fn check_shape(setting: &str, groups: &[Group], tasks: usize) -> Result<()> {
    if groups.len() != tasks {
        anyhow::bail!(
            "the {setting} setting returned {} groups for {tasks} tasks",
            groups.len()
        );
    }
    for (ti, g) in groups.iter().enumerate() {
        for j in &g.judgements {
            if let Some((e, i)) = j.step {
                if g.episodes.get(e).is_none_or(|ep| i >= ep.steps.len()) {
                    anyhow::bail!(
                        "the {setting} setting judged step {i} of episode {e} of task {ti}, which it did not play"
                    );
                }
            }
        }
    }
    Ok(())
}

/// The accuracy of each group: its share of won episodes.
fn accuracies(groups: &[Group]) -> Vec<f64> {
    groups
        .iter()
        .map(|g| task_accuracy(g.wins(), g.episodes.len()))
        .collect()
}

fn ppo_sample(g: &crate::setting::Generation, advantage: f64) -> PpoSample {
    PpoSample {
        prompt: g.prompt.clone(),
        response: g.response.clone(),
        advantage: advantage as f32,
        old_logprobs: g.logprobs.clone(),
        ref_logprobs: None,
        choices: g.choices.clone(),
    }
}

/// The mini-batches of one epoch over `n` samples: a seeded shuffle cut into pieces of `size`
/// (the last may be smaller); `size = 0` is one batch of all `n` in order. No samples, no batches.
/// The most policy samples the update's KL (a vital sign) is estimated on.
pub const UPDATE_KL_SAMPLES: usize = 256;

/// Which of `n` samples the update's KL is estimated on: all of them up to
/// [`UPDATE_KL_SAMPLES`], else that many drawn without replacement from `seed`, in order.
pub fn kl_subsample(n: usize, seed: u64) -> Vec<usize> {
    use rand::seq::index::sample;
    use rand::SeedableRng;
    if n <= UPDATE_KL_SAMPLES {
        return (0..n).collect();
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut idx = sample(&mut rng, n, UPDATE_KL_SAMPLES).into_vec();
    idx.sort_unstable();
    idx
}

pub fn mini_batches(n: usize, size: usize, seed: u64) -> Vec<Vec<usize>> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    if n == 0 {
        return vec![];
    }
    if size == 0 || size >= n {
        return vec![(0..n).collect()];
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    idx.chunks(size).map(<[usize]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::{kl_subsample, mini_batches, UPDATE_KL_SAMPLES};

    #[test]
    fn the_update_kl_reads_a_seeded_subsample_of_a_large_batch() {
        assert_eq!(kl_subsample(5, 1), vec![0, 1, 2, 3, 4]);
        let a = kl_subsample(1000, 3);
        assert_eq!(a.len(), UPDATE_KL_SAMPLES);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && *a.last().unwrap() < 1000);
        assert_eq!(a, kl_subsample(1000, 3));
        assert_ne!(a, kl_subsample(1000, 4));
        // drawn from the whole batch, not its head
        assert!(*a.last().unwrap() > 900);
    }

    #[test]
    fn mini_batches_cover_every_sample_once() {
        assert!(mini_batches(0, 4, 1).is_empty());
        assert_eq!(mini_batches(5, 0, 1), vec![vec![0, 1, 2, 3, 4]]);
        assert_eq!(mini_batches(3, 8, 1), vec![vec![0, 1, 2]]);
        let b = mini_batches(10, 4, 7);
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 4, 2]);
        let mut all: Vec<usize> = b.concat();
        assert_ne!(all, (0..10).collect::<Vec<_>>(), "shuffled");
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(mini_batches(10, 4, 7), b, "seeded");
        assert_ne!(mini_batches(10, 4, 8), b);
    }
}
