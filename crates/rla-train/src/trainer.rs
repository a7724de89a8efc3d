//! The RLAnything loop. [`Trainer::iteration`] is the paper's Algorithm 1, one step per call.

use crate::config::{ModelSpec, RunConfig, Setting};
use crate::pool::{Pending, TaskPool};
use crate::prompts::reasoning;
use crate::rollout::{evaluate, judge, rollout, Episodes, Verdicts};
use crate::run::{IterMetrics, RunDir, RunState};
use anyhow::{Context, Result};
use rla_core::adapt::{accept_rewrite, adaptation_direction, Direction};
use rla_core::advantage::policy_advantages;
use rla_core::consistency::consistency_advantages;
use rla_core::filter::task_accuracy;
use rla_core::metrics::judge_accuracy;
use rla_core::reward::{step_rewards, Outcome, StepScore};
use rla_core::theory::{
    empirical_precision, imbalance, theorem1_lower_bound, Calibration, IMBALANCE_MARGIN,
};
use rla_env::household::splits::{eval_tasks, Split};
use rla_env::household::TaskSpec;
use rla_model::sample::SampleParams;
use rla_model::train::{PpoSample, TrainConfig};
use rla_model::{LanguageModel, Lm};
use std::path::Path;
use std::time::Instant;

/// Loads a model of the run for training.
pub fn load_model(
    spec: &ModelSpec,
    dir: &Path,
    lr: f64,
    ppo: &rla_core::ppo::PpoConfig,
    seed: u64,
    resume: Option<&Path>,
) -> Result<Lm> {
    let dtype = rla_model::weights::parse_dtype(&spec.dtype).map_err(anyhow::Error::msg)?;
    let device = rla_model::lm::device(spec.cuda)?;
    let mut lm =
        Lm::load(dir, dtype, &device).with_context(|| format!("loading {}", dir.display()))?;
    let tc = TrainConfig {
        lr,
        micro_batch: spec.micro_batch,
        ppo: *ppo,
        ..Default::default()
    };
    lm.enable_training(tc, spec.lora.clone(), seed, resume)?;
    Ok(lm)
}

/// The trainer: the run's configuration, its two models, its task pool and its folder.
pub struct Trainer {
    /// Configuration.
    pub cfg: RunConfig,
    /// The policy.
    pub policy: Lm,
    /// The reward model.
    pub reward: Lm,
    /// Pool, pending rewrites, lineage, iteration counter.
    pub state: RunState,
    /// The run folder.
    pub dir: RunDir,
    /// Progress bars on stderr.
    pub progress: bool,
    /// The coding setting's sandbox, made on first use.
    pub sandbox: Option<rla_env::code::sandbox::Sandbox>,
}

/// The seed of one random choice of iteration `k`.
pub(crate) fn seed_of(cfg: &RunConfig, k: usize, tag: u64) -> u64 {
    cfg.seed
        .wrapping_mul(1_000_003)
        .wrapping_add(k as u64 * 7_919)
        .wrapping_add(tag)
}

impl Trainer {
    /// Greedy success on the first `n` tasks of an evaluation split.
    pub fn eval_split(&self, split: Split, n: usize) -> Result<f64> {
        let tasks: Vec<TaskSpec> = eval_tasks(split).into_iter().take(n).collect();
        let bar = self.progress.then(|| {
            crate::bar(
                (tasks.len() * self.cfg.eval_step_limit) as u64,
                &format!("eval {split:?}"),
            )
        });
        let r = evaluate(
            &self.policy,
            &tasks,
            Episodes::evaluation(&self.cfg),
            self.cfg.policy.max_new_tokens,
            bar.as_ref(),
        );
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        r
    }

    /// PPO-clip updates of both models (`update_epochs` passes), recorded in the metrics.
    pub fn update(
        &mut self,
        policy_samples: &[PpoSample],
        reward_samples: &[PpoSample],
        m: &mut IterMetrics,
    ) -> Result<()> {
        m.policy_samples = policy_samples.len();
        m.reward_samples = reward_samples.len();
        let passes = self.cfg.update_epochs
            * (usize::from(!policy_samples.is_empty()) + usize::from(!reward_samples.is_empty()));
        let bar = self
            .progress
            .then(|| crate::bar(passes as u64, &format!("iter {} update", m.iteration)));
        for _ in 0..self.cfg.update_epochs {
            if !policy_samples.is_empty() {
                m.policy_loss = self.policy.ppo_update(policy_samples)?.loss;
                if let Some(b) = &bar {
                    b.inc(1);
                }
            }
            if !reward_samples.is_empty() {
                m.reward_loss = self.reward.ppo_update(reward_samples)?.loss;
                if let Some(b) = &bar {
                    b.inc(1);
                }
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        Ok(())
    }

    /// Evaluation success on the first `n` problems or tasks of a split, in the run's setting.
    pub fn evaluate(&mut self, split: Split, n: usize) -> Result<f64> {
        match self.cfg.setting {
            Setting::Household => self.eval_split(split, n),
            Setting::Coding => self.coding_eval(split, n),
        }
    }

    /// One iteration of Algorithm 1 in the run's setting.
    pub fn iteration(&mut self, k: usize) -> Result<IterMetrics> {
        match self.cfg.setting {
            Setting::Household => self.household_iteration(k),
            Setting::Coding => self.coding_iteration(k),
        }
    }

    /// One iteration of Algorithm 1 in the household.
    pub fn household_iteration(&mut self, k: usize) -> Result<IterMetrics> {
        let cfg = self.cfg.clone();
        let mut m = IterMetrics {
            iteration: k,
            ..Default::default()
        };

        // 1. Rollout: sampled tasks plus every pending rewrite, n rollouts each, batched together.
        let t0 = Instant::now();
        let sampled = self
            .state
            .pool
            .sample(cfg.tasks_per_iteration, seed_of(&cfg, k, 1));
        let pending: Vec<Pending> = std::mem::take(&mut self.state.pending);
        let mut tasks: Vec<TaskSpec> = sampled
            .iter()
            .map(|&s| self.state.pool.slots[s].task.clone())
            .collect();
        tasks.extend(pending.iter().map(|p| p.task.clone()));
        let sp = SampleParams {
            temperature: cfg.policy.temperature,
            max_new_tokens: cfg.policy.max_new_tokens,
            seed: seed_of(&cfg, k, 2),
            ..Default::default()
        };
        let bar = self.progress.then(|| {
            crate::bar(
                (tasks.len() * cfg.rollouts_per_task) as u64 * 8,
                &format!("iter {k} rollout"),
            )
        });
        let trajs = rollout(
            &self.policy,
            &tasks,
            Episodes {
                rollouts: cfg.rollouts_per_task,
                step_limit: cfg.train_step_limit,
                window: cfg.history_window,
                style: cfg.prompt_style,
                constrained: cfg.constrain_actions,
            },
            &sp,
            bar.as_ref(),
        )?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        m.time_rollout = t0.elapsed().as_secs_f64();

        // 2. Judge: m verdicts per step. The outcome baseline ignores them (λ = 0) but they are
        // still measured, so every mode reports the judge's accuracy.
        let t0 = Instant::now();
        let verdicts: Vec<Vec<Verdicts>> = {
            let steps: usize = trajs.iter().map(|t| t.steps.len()).sum();
            let bar = self
                .progress
                .then(|| crate::bar(steps as u64, &format!("iter {k} judge")));
            let jp = SampleParams {
                temperature: cfg.reward.temperature,
                max_new_tokens: cfg.reward.max_new_tokens,
                seed: seed_of(&cfg, k, 3),
                ..Default::default()
            };
            let v = judge(
                &self.reward,
                &tasks,
                &trajs,
                cfg.judge_samples,
                &jp,
                bar.as_ref(),
            )?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            v
        };
        m.time_judge = t0.elapsed().as_secs_f64();

        // Per-task accuracy; pending rewrites are accepted or dropped by the core rule.
        let n_tasks = tasks.len();
        let mut wins = vec![0usize; n_tasks];
        let mut count = vec![0usize; n_tasks];
        for t in &trajs {
            count[t.task] += 1;
            wins[t.task] += t.won as usize;
        }
        let acc: Vec<f64> = (0..n_tasks)
            .map(|i| task_accuracy(wins[i], count[i]))
            .collect();
        let mut train_task = vec![true; n_tasks];
        for (j, p) in pending.iter().enumerate() {
            let i = sampled.len() + j;
            let ok = accept_rewrite(p.direction, p.parent_acc, acc[i], &cfg.adapt);
            train_task[i] = ok;
            self.state.record_outcome(p, acc[i], ok, k, cfg.grow_pool);
            m.accepted += ok as usize;
        }
        m.pending_evaluated = pending.len();
        m.train_success = trajs.iter().filter(|t| t.won).count() as f64 / trajs.len().max(1) as f64;

        // Theory, measured: μ from oracle-labelled verdicts, the bound at m, precision A, imbalance.
        let mut cal = Calibration::default();
        let (mut pos_means, mut neg_means) = (vec![], vec![]);
        let (mut proc_pairs, mut out_pairs) = (vec![], vec![]);
        if !verdicts.is_empty() {
            for (t, vs) in trajs.iter().zip(&verdicts) {
                for (s, v) in t.steps.iter().zip(vs) {
                    for &sc in &v.scores {
                        cal.observe(s.progress, sc);
                        proc_pairs.push((sc, s.progress));
                        out_pairs.push((sc, t.won));
                    }
                    let mean =
                        v.scores.iter().map(|x| x.value()).sum::<f64>() / v.scores.len() as f64;
                    if t.won {
                        pos_means.push(mean)
                    } else {
                        neg_means.push(mean)
                    }
                }
            }
        }
        m.mu = cal.mu();
        m.bound =
            m.mu.and_then(|mu| theorem1_lower_bound(mu, cfg.judge_samples));
        m.precision = empirical_precision(&pos_means, &neg_means).map(|p| p.precision);
        m.process_acc = judge_accuracy(&proc_pairs);
        m.outcome_acc = judge_accuracy(&out_pairs);
        m.imbalanced_tasks = (0..n_tasks)
            .filter(|&i| imbalance(wins[i], count[i], IMBALANCE_MARGIN).is_some_and(|x| x.flagged))
            .count();
        m.task_acc = acc.clone();

        // 3. Rewards and updates.
        let t0 = Instant::now();
        let lambda = cfg.effective_lambda();
        let mut policy_samples = Vec::new();
        let mut reward_samples = Vec::new();
        let mut rsum = (0.0, 0usize);
        for ti in 0..n_tasks {
            if !train_task[ti] {
                continue;
            }
            let group: Vec<usize> = (0..trajs.len()).filter(|&j| trajs[j].task == ti).collect();
            let rewards: Vec<Vec<f64>> = group
                .iter()
                .map(|&j| {
                    let t = &trajs[j];
                    let scores: Vec<Vec<StepScore>> = if lambda > 0.0 {
                        verdicts[j].iter().map(|v| v.scores.clone()).collect()
                    } else {
                        vec![vec![]; t.steps.len()]
                    };
                    step_rewards(Outcome::from_won(t.won), &scores, lambda)
                })
                .collect();
            for r in rewards.iter().flatten() {
                rsum.0 += r;
                rsum.1 += 1;
            }
            if cfg.policy_band.contains(acc[ti]) {
                let adv = policy_advantages(&rewards);
                for (gi, &j) in group.iter().enumerate() {
                    for (si, s) in trajs[j].steps.iter().enumerate() {
                        if let Some(a) = adv[gi][si] {
                            policy_samples.push(PpoSample {
                                prompt: s.prompt_ids.clone(),
                                response: s.response_ids.clone(),
                                advantage: a as f32,
                                old_logprobs: s.logprobs.clone(),
                                ref_logprobs: None,
                            });
                        }
                    }
                }
            }
            if cfg.mode.trains_judge() && cfg.reward_band.contains(acc[ti]) {
                for (gi, &j) in group.iter().enumerate() {
                    for (si, v) in verdicts[j].iter().enumerate() {
                        let adv = consistency_advantages(rewards[gi][si], &v.scores);
                        for (l, a) in adv.iter().enumerate() {
                            if let Some(a) = a {
                                reward_samples.push(PpoSample {
                                    prompt: v.prompt_ids.clone(),
                                    response: v.responses[l].clone(),
                                    advantage: *a as f32,
                                    old_logprobs: v.logprobs[l].clone(),
                                    ref_logprobs: None,
                                });
                            }
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
        self.update(&policy_samples, &reward_samples, &mut m)?;
        m.time_update = t0.elapsed().as_secs_f64();

        // 4. Critique: the judge's reasoning on high-risk steps (all m say −1) of failed rollouts.
        // 5. Adapt: rewrite tasks outside the band; the rewrites are rolled out next iteration.
        let t0 = Instant::now();
        if cfg.mode.adapts() {
            for (si, &slot) in sampled.iter().enumerate() {
                let dir = adaptation_direction(acc[si], &cfg.adapt);
                if dir == Direction::Keep {
                    continue;
                }
                let mut reasons = Vec::new();
                for (j, _) in trajs
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.task == si && !t.won)
                {
                    for v in &verdicts[j] {
                        if v.scores.iter().all(|s| *s == StepScore::Negative) {
                            reasons.extend(v.texts.iter().map(|x| reasoning(x).to_string()));
                        }
                    }
                }
                let lm_rw = crate::rewriter::LmRewriter {
                    lm: &self.reward,
                    params: SampleParams {
                        temperature: 0.7,
                        max_new_tokens: 64,
                        seed: seed_of(&cfg, k, 4 + si as u64),
                        ..Default::default()
                    },
                };
                let (rewriter, summariser): (
                    &dyn crate::rewriter::Rewriter,
                    &dyn crate::rewriter::Summariser,
                ) = match cfg.rewriter {
                    crate::config::RewriterKind::Structured => {
                        (&crate::rewriter::Structured, &crate::rewriter::Phrases)
                    }
                    crate::config::RewriterKind::RewardModel => (&lm_rw, &lm_rw),
                };
                let critique = summariser.summarise(&reasons);
                if let Some(p) = self
                    .state
                    .propose(rewriter, slot, dir, acc[si], critique, k)
                {
                    self.state.pending.push(p);
                }
            }
        }
        m.pending_next = self.state.pending.len();
        m.pool_size = self.state.pool.slots.len();
        m.time_adapt = t0.elapsed().as_secs_f64();

        self.dir.save_samples(k, &tasks, &trajs, &verdicts)?;
        Ok(m)
    }

    /// Runs the remaining iterations, evaluating and checkpointing as configured.
    pub fn run(&mut self) -> Result<()> {
        let start = self.state.completed;
        if start == 0 && self.dir.metrics()?.is_empty() {
            let mut m0 = IterMetrics {
                iteration: 0,
                ..Default::default()
            };
            m0.eval_in_domain = Some(self.evaluate(Split::InDomain, self.cfg.eval.in_domain)?);
            m0.eval_ood = Some(self.evaluate(Split::Ood, self.cfg.eval.ood)?);
            self.dir.push_metrics(&mut self.state, &m0)?;
            tracing::info!(
                in_domain = m0.eval_in_domain,
                ood = m0.eval_ood,
                "initial evaluation"
            );
        }
        for k in (start + 1)..=self.cfg.iterations {
            let mut m = self.iteration(k)?;
            if k % self.cfg.eval.every.max(1) == 0 || k == self.cfg.iterations {
                let t0 = Instant::now();
                m.eval_in_domain = Some(self.evaluate(Split::InDomain, self.cfg.eval.in_domain)?);
                m.eval_ood = Some(self.evaluate(Split::Ood, self.cfg.eval.ood)?);
                m.time_eval = t0.elapsed().as_secs_f64();
            }
            tracing::info!(
                iteration = k,
                success = format!("{:.3}", m.train_success),
                mu = m.mu.map(|x| format!("{x:.3}")),
                accepted = m.accepted,
                pending = m.pending_next,
                eval_in = m.eval_in_domain.map(|x| format!("{x:.3}")),
                eval_ood = m.eval_ood.map(|x| format!("{x:.3}")),
                "iteration done"
            );
            self.state.completed = k;
            let episodes = (self.cfg.setting == Setting::Household)
                .then(|| crate::rollout::Episodes::evaluation(&self.cfg));
            self.dir.checkpoint(
                &mut self.state,
                &self.policy,
                &self.reward,
                episodes.as_ref(),
                &m,
            )?;
            if let Some(what) = diverged(&m) {
                anyhow::bail!(
                    "the run diverged at iteration {k}: {what}. Its metrics and checkpoint are \
                     saved (`rlanything report {0}` shows them); lower the learning rate in a new \
                     run, or resume {0} to go on from here",
                    self.dir.path.display()
                );
            }
        }
        Ok(())
    }
}

/// What diverged in an iteration (a loss that is NaN or infinite), if anything.
pub fn diverged(m: &IterMetrics) -> Option<String> {
    let bad: Vec<String> = [
        ("the policy's PPO loss", m.policy_loss),
        ("the reward model's PPO loss", m.reward_loss),
    ]
    .into_iter()
    .filter(|(_, x)| !x.is_finite())
    .map(|(n, x)| format!("{n} is {x}"))
    .collect();
    (!bad.is_empty()).then(|| bad.join(" and "))
}

/// Starts or resumes a run in `dir`.
pub fn open(cfg: RunConfig, dir: &Path, resume: bool, progress: bool) -> Result<Trainer> {
    let rd = RunDir::create(dir, &cfg, resume)?;
    let (state, from) = match rd.load_state()? {
        Some(s) if resume => {
            let ck = rd.checkpoint_dir();
            (s, Some(ck))
        }
        Some(_) => anyhow::bail!(
            "{} already holds a run; pass --resume to continue it",
            dir.display()
        ),
        None => match cfg.setting {
            Setting::Household => (RunState::new(TaskPool::initial(&cfg)), None),
            Setting::Coding => {
                let mut s = RunState::new(TaskPool { slots: vec![] });
                s.code = crate::coding::CodeState::initial(&cfg);
                (s, None)
            }
        },
    };
    let base = |name: &str, spec: &ModelSpec| -> Result<std::path::PathBuf> {
        match (&from, &spec.path) {
            (Some(ck), _) => Ok(ck.join(name)),
            (None, Some(p)) => Ok(p.clone()),
            (None, None) => {
                let pre = rd.path.join("pretrained");
                if !rla_model::weights::is_checkpoint(&pre.join(name)) {
                    anyhow::bail!("no {name} model: set {name}.path in the config or run `rlanything pretrain` into {}", pre.display());
                }
                Ok(pre.join(name))
            }
        }
    };
    let pdir = base("policy", &cfg.policy)?;
    let rdir = base("reward", &cfg.reward)?;
    let policy = load_model(
        &cfg.policy,
        &pdir,
        cfg.policy.lr,
        &cfg.ppo,
        cfg.seed,
        from.as_ref().map(|_| pdir.as_path()),
    )?;
    let reward = load_model(
        &cfg.reward,
        &rdir,
        cfg.reward.lr,
        &cfg.ppo,
        cfg.seed + 1,
        from.as_ref().map(|_| rdir.as_path()),
    )?;
    Ok(Trainer {
        cfg,
        policy,
        reward,
        state,
        dir: rd,
        progress,
        sandbox: None,
    })
}
