//! The `Setting` trait is pluggable: a trivial third setting, defined only here ("say the number
//! shown"), trains through the real `Trainer` — rollout, judging, rewards, updates, critique,
//! adaptation with acceptance, checkpoints — without touching the crate. Registered with one
//! call, a config names it and its table, and it warm-starts and trains as the built-in ones do. The same setting shows
//! that the KL term is applied: runs that differ only in `kl_beta` update differently, and the
//! logged KL estimate is ≥ 0 and grows as the policy drifts from its reference.

use anyhow::Result;
use rla_core::adapt::Direction;
use rla_core::filter::Band;
use rla_core::ppo::KlReference;
use rla_core::reward::StepScore;
use rla_core::theory::Calibration;
use rla_lm::{Backend, Model, SampleParams, Sampler, TinyShape, TrainOptions};
use rla_train::config::SettingConfig;
use rla_train::pool::PoolTask;
use rla_train::run::{RunDir, RunState};
use rla_train::setting::{
    Ctx, Episode, Generation, Group, JudgeQuality, JudgeReward, Judgement, Registered, Scored,
    Setting, Split, Step, WarmStart,
};
use rla_train::{RunConfig, Trainer};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Show {
    id: String,
    parent: Option<String>,
    number: u32,
}

impl PoolTask for Show {
    fn id(&self) -> &str {
        &self.id
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
}

/// The policy is shown a number and must say it; the judge says whether the answer is right.
#[derive(Default)]
struct Numbers {
    cfg: NumbersConfig,
    rewrites: usize,
    /// The judge's every verdict is +1, whatever it samples.
    always_yes: bool,
}

/// Its table of the run config (`[numbers]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct NumbersConfig {
    /// The numbers shown are 0 to `below - 1`.
    below: u32,
}

impl Default for NumbersConfig {
    fn default() -> Self {
        NumbersConfig { below: 10 }
    }
}

impl SettingConfig for NumbersConfig {
    fn validate(&self, _run: &RunConfig, _active: bool) -> Result<(), String> {
        if !(1..=10).contains(&self.below) {
            return Err(format!("numbers.below = {}: from 1 to 10", self.below));
        }
        Ok(())
    }
}

impl Registered for Numbers {
    const NAME: &'static str = "numbers";
    type Config = NumbersConfig;
    fn new(cfg: NumbersConfig) -> Numbers {
        Numbers {
            cfg,
            rewrites: 0,
            always_yes: false,
        }
    }
}

fn prompt(lm: &dyn Sampler, text: &str) -> Vec<u32> {
    lm.encode(text).unwrap()
}

impl Setting for Numbers {
    type Task = Show;
    type Record = Vec<Vec<String>>;

    fn name(&self) -> &'static str {
        "numbers"
    }

    fn initial_pool(&self, cfg: &RunConfig) -> anyhow::Result<Vec<Show>> {
        Ok((0..cfg.pool_size as u32)
            .map(|i| Show {
                id: format!("n{i}"),
                parent: None,
                number: i % self.cfg.below,
            })
            .collect())
    }

    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[Show],
    ) -> Result<(Vec<Group>, Self::Record)> {
        let prompts: Vec<Vec<u32>> = tasks
            .iter()
            .map(|t| prompt(policy, &format!("say {}", t.number)))
            .collect();
        let sp = SampleParams {
            // one token: the fresh tokenizer holds the corpus's characters as pieces too, so a
            // random two-token answer would seldom be a bare number
            max_new_tokens: 1,
            seed: ctx.seed(2),
            ..Default::default()
        };
        let out = policy.generate(&prompts, ctx.cfg.rollouts_per_task, &sp)?;
        let mut texts = vec![];
        let groups = tasks
            .iter()
            .zip(out)
            .zip(&prompts)
            .map(|((t, samples), p)| {
                texts.push(samples.iter().map(|s| s.text.clone()).collect());
                Group {
                    episodes: samples
                        .iter()
                        .map(|s| {
                            let won = s.text.trim() == t.number.to_string();
                            Episode {
                                outcome: if won { 1.0 } else { -1.0 },
                                won,
                                steps: vec![Step {
                                    state: None,
                                    action: Generation {
                                        prompt: p.clone(),
                                        response: s.tokens.clone(),
                                        logprobs: s.logprobs.clone(),
                                        choices: None,
                                    },
                                }],
                            }
                        })
                        .collect(),
                    judgements: vec![],
                }
            })
            .collect();
        Ok((groups, texts))
    }

    fn judge(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        tasks: &[Show],
        groups: &mut [Group],
        texts: &mut Self::Record,
    ) -> Result<()> {
        for ((t, g), said) in tasks.iter().zip(groups.iter_mut()).zip(texts.iter()) {
            for (e, s) in said.iter().enumerate() {
                let p = prompt(reward, &format!("say {} {}", t.number, s.trim()));
                let sp = SampleParams {
                    max_new_tokens: 2,
                    seed: ctx.seed(3 + e as u64),
                    ..Default::default()
                };
                let out = reward.generate(std::slice::from_ref(&p), ctx.cfg.judge_samples, &sp)?;
                g.judgements.push(Judgement {
                    step: Some((e, 0)),
                    samples: out[0]
                        .iter()
                        .map(|x| Scored {
                            sample: Generation {
                                prompt: p.clone(),
                                response: x.tokens.clone(),
                                logprobs: x.logprobs.clone(),
                                choices: None,
                            },
                            // the tiny judge's answer: "1" or "0", else read off its first
                            // token (so that its m answers disagree as often as they differ,
                            // whatever the seed), nothing when it said nothing
                            score: match x.text.trim() {
                                _ if self.always_yes => StepScore::Positive,
                                "1" => StepScore::Positive,
                                "0" => StepScore::Negative,
                                _ => match x.tokens.first() {
                                    Some(t) if t % 2 == 0 => StepScore::Positive,
                                    Some(_) => StepScore::Negative,
                                    None => StepScore::Unparsed,
                                },
                            },
                        })
                        .collect(),
                    reward: JudgeReward::Consistency,
                });
            }
        }
        Ok(())
    }

    fn judge_quality(&self, groups: &[Group], _: &Self::Record) -> JudgeQuality {
        let mut calibration = Calibration::default();
        for g in groups {
            for j in &g.judgements {
                let won = g.episodes[j.step.unwrap().0].won;
                for s in &j.samples {
                    calibration.observe(won, s.score);
                }
            }
        }
        JudgeQuality {
            calibration,
            extra: Some(serde_json::json!({"rewrites": self.rewrites})),
            ..Default::default()
        }
    }

    fn policy_band(&self, _: &RunConfig) -> Band {
        Band {
            low: 0.0,
            high: 1.0,
        }
    }

    fn reward_band(&self, _: &RunConfig) -> Band {
        Band {
            low: 0.0,
            high: 1.0,
        }
    }

    fn critique(
        &self,
        _: Ctx,
        _: &dyn Sampler,
        i: usize,
        groups: &[Group],
        _: &Self::Record,
    ) -> Option<String> {
        Some(format!(
            "{} of {} said it",
            groups[i].wins(),
            groups[i].episodes.len()
        ))
    }

    fn rewrite(
        &mut self,
        ctx: Ctx,
        _: &dyn Sampler,
        task: &Show,
        direction: Direction,
        _: Option<&str>,
        _: usize,
    ) -> Result<Option<(String, Show)>> {
        self.rewrites += 1;
        let number = match direction {
            Direction::Harder => (task.number + 1) % 10,
            _ => task.number.saturating_sub(1),
        };
        Ok(Some((
            format!("{direction:?}"),
            Show {
                id: format!("{}-r{}", task.id, ctx.k),
                parent: Some(task.id.clone()),
                number,
            },
        )))
    }

    fn evaluate(&mut self, _: Ctx, policy: &dyn Sampler, _: Split, n: usize) -> Result<f64> {
        let prompts: Vec<Vec<u32>> = (0..n as u32)
            .map(|i| prompt(policy, &format!("say {}", i % 10)))
            .collect();
        let out = policy.generate(&prompts, 1, &SampleParams::greedy(2))?;
        let ok = out
            .iter()
            .enumerate()
            .filter(|(i, s)| s[0].text.trim() == (i % 10).to_string())
            .count();
        Ok(ok as f64 / n.max(1) as f64)
    }

    fn save_samples(&self, dir: &RunDir, k: usize, _: &[Show], texts: &Self::Record) -> Result<()> {
        dir.save_json(&format!("samples/iter-{k:04}.json"), texts)
    }

    fn warm_start(&self, w: WarmStart) -> Result<Vec<String>> {
        for (i, name) in ["policy", "reward"].into_iter().enumerate() {
            let lm = tiny_lm_on(w.backend, i as u64 + 1, w.cfg);
            lm.save(&w.out.join(name))?;
        }
        Ok(vec!["two fresh tiny models".into()])
    }
}

fn tiny_lm(seed: u64, cfg: &RunConfig) -> Box<dyn Model> {
    tiny_lm_on(&rla_model::Candle, seed, cfg)
}

fn tiny_lm_on(backend: &dyn Backend, seed: u64, cfg: &RunConfig) -> Box<dyn Model> {
    let shape = TinyShape {
        hidden_size: 16,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        num_key_value_heads: 1,
        ..Default::default()
    };
    let train = TrainOptions {
        lr: 3e-2,
        micro_batch: 8,
        ppo: cfg.ppo,
        lora: None,
        seed,
        temperature: 1.0,
    };
    backend
        .fresh(&shape, "say 0 1 2 3 4 5 6 7 8 9\n", &train)
        .unwrap()
}

fn config(kl_beta: f64) -> RunConfig {
    let mut cfg = RunConfig {
        iterations: 4,
        pool_size: 6,
        tasks_per_iteration: 3,
        rollouts_per_task: 4,
        judge_samples: 2,
        ..Default::default()
    };
    cfg.eval.in_domain = 5;
    cfg.eval.ood = 5;
    cfg.eval.every = 2;
    cfg.adapt.acc_low = 0.5;
    cfg.adapt.acc_high = 0.5;
    cfg.ppo.kl_beta = kl_beta;
    cfg.ppo.kl_reference = KlReference::Frozen;
    cfg
}

#[test]
fn a_registered_setting_is_named_by_configs_and_warm_starts_and_trains() {
    rla_train::registry::register::<Numbers>();
    assert!(rla_train::registry::names().contains(&"numbers"));
    let dir = tempfile::tempdir().unwrap();
    let text = "setting = \"numbers\"\niterations = 1\npool_size = 4\ntasks_per_iteration = 2\n\
                rollouts_per_task = 2\njudge_samples = 2\n[eval]\nin_domain = 3\nood = 3\n\
                [numbers]\nbelow = 4\n";
    let cfg = RunConfig::parse_in(text, dir.path()).unwrap();
    assert_eq!(cfg.table::<NumbersConfig>().below, 4);
    // its table is its own: unknown keys and bad values are named
    let bad = RunConfig::parse_in("setting = \"numbers\"\n[numbers]\nabove = 1\n", dir.path());
    assert!(bad.unwrap_err().to_string().contains("above"));
    let bad = RunConfig::parse_in("setting = \"numbers\"\n[numbers]\nbelow = 11\n", dir.path());
    assert!(bad.unwrap_err().to_string().contains("numbers.below"));
    // a household config may still carry the table, checked on its own
    let other = RunConfig::parse_in("[numbers]\nbelow = 0\n", dir.path());
    assert!(other.unwrap_err().to_string().contains("numbers.below"));

    static CANDLE: rla_model::Candle = rla_model::Candle;
    let run = dir.path().join("run");
    let setting = rla_train::registry::setting(&cfg).unwrap();
    assert_eq!(setting.name(), "numbers");
    let lines = setting
        .warm_start(WarmStart {
            backend: &CANDLE,
            cfg: &cfg,
            out: &run.join("pretrained"),
            progress: false,
        })
        .unwrap();
    assert_eq!(lines.len(), 1);
    setting
        .train(&CANDLE, cfg.clone(), &run, false, false)
        .unwrap();
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.lines().count(), 2, "iteration 0 and one iteration");
    let state = std::fs::read_to_string(run.join("checkpoint/state.json")).unwrap();
    assert!(state.contains("\"setting\":\"numbers\""));
    // the run folder's config holds its table and reads back as the config it was started with
    let saved = RunConfig::load(&run.join("config.toml")).unwrap();
    assert_eq!(saved, cfg);
    assert!(std::fs::read_to_string(run.join("config.toml"))
        .unwrap()
        .contains("[numbers]"));
}

fn trainer(dir: &Path, cfg: RunConfig) -> Trainer<Numbers> {
    let setting = Numbers::default();
    let state = RunState::new(setting.name(), setting.initial_pool(&cfg).unwrap());
    Trainer {
        policy: tiny_lm(1, &cfg),
        reward: tiny_lm(2, &cfg),
        dir: RunDir::create(dir, &cfg, false).unwrap(),
        cfg,
        setting,
        state,
        progress: false,
    }
}

fn policy_weights(t: &Trainer<Numbers>, dir: &Path) -> Vec<u8> {
    t.policy.save(dir).unwrap();
    std::fs::read(dir.join("model.safetensors")).unwrap()
}

#[test]
fn a_setting_defined_outside_the_crate_trains_through_the_real_trainer() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = trainer(&dir.path().join("run"), config(0.01));
    t.run().unwrap();
    let ms = &t.state.metrics;
    assert_eq!(ms.len(), 5, "iteration 0 and four iterations");
    assert!(ms
        .iter()
        .skip(1)
        .all(|m| (0.0..=1.0).contains(&m.train_success)));
    assert!(
        ms.iter().any(|m| m.policy_samples > 0),
        "the policy trained"
    );
    assert!(ms.iter().any(|m| m.reward_samples > 0), "the judge trained");
    // adaptation: rewrites were proposed, rolled out and decided by the core rule
    assert!(t.setting.rewrites > 0);
    assert!(ms.iter().any(|m| m.pending_evaluated > 0));
    assert_eq!(
        t.state.pool.lineage.len(),
        ms.iter().map(|m| m.pending_evaluated).sum::<usize>()
    );
    // the setting's own metrics sit under one key, and the checkpoint names the setting
    assert!(ms[1].setting.as_ref().unwrap().get("rewrites").is_some());
    let state = std::fs::read_to_string(dir.path().join("run/checkpoint/state.json")).unwrap();
    assert!(state.contains("\"setting\":\"numbers\""), "{state}");
    assert!(ms[4].eval_in_domain.is_some());
}

#[test]
fn the_kl_term_is_applied_and_its_estimate_grows_as_the_policy_drifts() {
    let dir = tempfile::tempdir().unwrap();
    let mut weights = vec![];
    let mut kls = vec![];
    for (i, beta) in [0.0, 0.5].into_iter().enumerate() {
        let mut cfg = config(beta);
        cfg.mode = rla_train::Mode::Policy;
        cfg.iterations = 6;
        let mut t = trainer(&dir.path().join(format!("run{i}")), cfg);
        t.run().unwrap();
        weights.push(policy_weights(&t, &dir.path().join(format!("w{i}"))));
        kls.push(
            t.state
                .metrics
                .iter()
                .filter_map(|m| m.policy_kl)
                .collect::<Vec<f64>>(),
        );
    }
    assert_ne!(weights[0], weights[1], "kl_beta changes the update");
    assert!(kls[0].is_empty(), "no KL term, no estimate");
    let kl = &kls[1];
    assert!(kl.len() >= 3, "{kl:?}");
    assert!(kl.iter().all(|&x| x >= 0.0), "{kl:?}");
    // iteration 1 samples from the reference itself (KL 0); later ones have drifted
    assert!(kl[0].abs() < 1e-5, "{kl:?}");
    assert!(kl[kl.len() - 1] > kl[0], "{kl:?}");
}

fn optimiser_steps(t: &Trainer<Numbers>, dir: &Path) -> f64 {
    t.policy.save(dir).unwrap();
    let o = candle_core::safetensors::load(
        dir.join("optimizer.safetensors"),
        &candle_core::Device::Cpu,
    )
    .unwrap();
    o["step"].to_vec1::<f64>().unwrap()[0]
}

#[test]
fn mini_batches_take_one_optimiser_step_each() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![];
    let mut vital_steps = vec![];
    for (i, mb) in [0usize, 3].into_iter().enumerate() {
        let mut cfg = config(0.0);
        cfg.mode = rla_train::Mode::Policy;
        cfg.iterations = 2;
        cfg.update_epochs = 2;
        cfg.policy.mini_batch = mb;
        let mut t = trainer(&dir.path().join(format!("run{i}")), cfg);
        t.run().unwrap();
        let samples: Vec<usize> = t.state.metrics[1..]
            .iter()
            .map(|m| m.policy_samples)
            .collect();
        let steps = optimiser_steps(&t, &dir.path().join(format!("w{i}")));
        vital_steps.push(
            t.state.metrics[1..]
                .iter()
                .map(|m| m.vitals.policy.steps)
                .sum::<usize>(),
        );
        for m in &t.state.metrics[1..] {
            let v = &m.vitals.policy;
            assert_eq!(v.samples, m.policy_samples);
            if v.steps > 0 {
                // the update moved the policy by a measured, non-negative amount
                assert!(
                    v.update_kl.unwrap() >= 0.0 && v.grad_norm.unwrap() > 0.0,
                    "{v:?}"
                );
                assert!(
                    v.clip_fraction.is_some() && v.entropy.unwrap() > 0.0,
                    "{v:?}"
                );
            }
            assert!(m.vitals.tokens_rollout > 0 && m.vitals.tokens_judge > 0);
        }
        out.push((
            samples,
            steps,
            policy_weights(&t, &dir.path().join(format!("x{i}"))),
        ));
    }
    let (s0, steps0, w0) = &out[0];
    let (s1, steps1, w1) = &out[1];
    // one step per epoch over all samples ...
    let expect0: usize = s0.iter().map(|&n| 2 * usize::from(n > 0)).sum();
    assert_eq!(*steps0 as usize, expect0, "{s0:?}");
    // and the vital signs count the steps the optimiser took
    assert_eq!(vital_steps[0], expect0);
    // ... or one per mini-batch of 3
    let expect1: usize = s1.iter().map(|&n| 2 * n.div_ceil(3)).sum();
    assert_eq!(*steps1 as usize, expect1, "{s1:?}");
    assert!(steps1 > steps0);
    assert_ne!(w0, w1, "mini-batches change the update");
}

#[test]
fn reward_only_trains_the_policy_on_the_verdicts_alone() {
    // a judge that says +1 to everything: its verdicts alone give every step the same reward,
    // so the reward-only run has nothing to train the policy on, while the integrated reward
    // still carries the outcome
    let dir = tempfile::tempdir().unwrap();
    let mut trained = vec![];
    for (i, mode) in [rla_train::Mode::RewardOnly, rla_train::Mode::PolicyReward]
        .into_iter()
        .enumerate()
    {
        let mut cfg = config(0.0);
        cfg.mode = mode;
        cfg.iterations = 4;
        let mut t = trainer(&dir.path().join(format!("run{i}")), cfg);
        t.setting.always_yes = true;
        t.run().unwrap();
        let ms = &t.state.metrics[1..];
        trained.push((
            ms.iter().map(|m| m.policy_samples).sum::<usize>(),
            ms.iter()
                .map(|m| m.vitals.policy.groups_dropped)
                .sum::<usize>(),
            ms.iter().map(|m| m.reward_samples).sum::<usize>(),
        ));
    }
    let (only, integrated) = (trained[0], trained[1]);
    assert_eq!(only.0, 0, "{trained:?}");
    assert!(
        only.1 > 0,
        "tasks in the band, dropped for σ = 0: {trained:?}"
    );
    assert!(integrated.0 > 0, "{trained:?}");
    // (a judge that always agrees with itself has no consistency signal to learn from in
    // either; that reward-only trains its judge is the mode's rule)
    assert_eq!(only.2, integrated.2);
    assert!(rla_train::Mode::RewardOnly.trains_judge() && !rla_train::Mode::RewardOnly.adapts());
}

#[test]
fn the_null_run_is_fulls_run_with_its_advantages_permuted() {
    // the same seed, the same first rollouts and verdicts: the same samples in the update, the
    // same counts; only which step gets which advantage differs, so the weights do
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![];
    for (i, mode) in [rla_train::Mode::Full, rla_train::Mode::Null]
        .into_iter()
        .enumerate()
    {
        let mut cfg = config(0.01);
        cfg.mode = mode;
        cfg.iterations = 1;
        let mut t = trainer(&dir.path().join(format!("run{i}")), cfg);
        t.run().unwrap();
        let m = &t.state.metrics[1];
        out.push((
            m.policy_samples,
            m.reward_samples,
            m.vitals.policy.groups_dropped,
            policy_weights(&t, &dir.path().join(format!("w{i}"))),
        ));
    }
    let (full, null) = (&out[0], &out[1]);
    assert!(full.0 > 0, "the policy trains in this setting");
    assert_eq!((full.0, full.1, full.2), (null.0, null.1, null.2));
    assert_ne!(
        full.3, null.3,
        "permuted advantages move the weights elsewhere"
    );
    assert!(rla_train::Mode::Null.trains_judge() && rla_train::Mode::Null.adapts());
    assert_eq!(
        serde_json::from_str::<rla_train::Mode>("\"null\"").unwrap(),
        rla_train::Mode::Null
    );
}
