//! The coding setting in the loop: the policy writes programs, the reward model writes unit
//! tests, and the sandbox runs every program on the ground-truth and the generated tests. The
//! iteration ([`Trainer::coding_iteration`]) follows the same Algorithm 1 as the household's:
//! rollout (programs), judge (tests), rewards and updates, critique, adapt.

use crate::config::RunConfig;
use crate::pretrain::{example_corpus, fit_tiny, Example, CHAT_MARKERS};
use crate::rollout::encode_chat;
use crate::run::IterMetrics;
use crate::trainer::Trainer;
use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_core::adapt::{accept_rewrite, adaptation_direction, Direction};
use rla_core::coding::{all_pass, program_advantages, test_advantages, CodingTally};
use rla_core::filter::{task_accuracy, Band};
use rla_core::reward::StepScore;
use rla_core::theory::{theorem1_lower_bound, Calibration};
use rla_env::code::family::{generate, generate_between, ArithSpec};
use rla_env::code::sandbox::Sandbox;
use rla_env::code::{
    coder_prompt, extract_program, format_tests, parse_tests, run_matrix, tester_prompt, Problem,
    TestCase,
};
use rla_env::household::splits::Split;
use rla_model::sample::{Sample, SampleParams};
use rla_model::tok::build_word_level;
use rla_model::train::PpoSample;
use rla_model::LanguageModel;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// The coder's filter: problems whose share of all-passing programs lies in [0.2, 0.8] train it.
pub const CODER_BAND: Band = Band {
    low: 0.2,
    high: 0.8,
};

/// One slot of the problem pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeSlot {
    /// The problem's id.
    pub id: String,
    /// The active problem.
    pub spec: ArithSpec,
    /// Ids of the problems it held before.
    pub history: Vec<String>,
}

/// A rewritten problem waiting for its accuracy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodePending {
    /// The slot it would replace.
    pub slot: usize,
    /// Its id.
    pub id: String,
    /// Its parent's id.
    pub parent: String,
    /// The rewrite.
    pub spec: ArithSpec,
    /// Harder or easier.
    pub direction: Direction,
    /// The parent's accuracy.
    pub parent_acc: f64,
    /// What the curator was shown: the parent's per-test pass rates and its generated tests'
    /// correctness.
    pub critique: String,
    /// The iteration that proposed it.
    pub proposed_at: usize,
}

/// A decided rewrite (one line of `tasks.jsonl` in the coding setting).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeLineage {
    /// The rewrite's id.
    pub id: String,
    /// Its parent's id.
    pub parent: String,
    /// Harder or easier.
    pub direction: Direction,
    /// What the curator was shown.
    pub critique: String,
    /// Parent accuracy.
    pub acc_before: f64,
    /// The rewrite's measured accuracy.
    pub acc_after: f64,
    /// Whether it joined the pool.
    pub accepted: bool,
    /// Iteration of the decision.
    pub iteration: usize,
    /// The statement.
    pub statement: String,
    /// The problem.
    pub spec: ArithSpec,
}

/// The coding setting's pool, pending rewrites and lineage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CodeState {
    /// The pool.
    pub pool: Vec<CodeSlot>,
    /// Rewrites to roll out next.
    pub pending: Vec<CodePending>,
    /// Every rewrite decided so far.
    pub lineage: Vec<CodeLineage>,
}

impl CodeState {
    /// The starting pool: `pool_size` problems of 1 to `max_ops` operations.
    pub fn initial(cfg: &RunConfig) -> CodeState {
        CodeState {
            pool: generate(cfg.pool_size, cfg.coding.max_ops, cfg.seed)
                .into_iter()
                .enumerate()
                .map(|(i, spec)| CodeSlot {
                    id: format!("code-{i}"),
                    spec,
                    history: vec![],
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// The fixed evaluation problems: in-domain (1 to `max_ops` operations, a held-out seed) and OOD
/// (`max_ops + 1` operations).
pub fn eval_problems(cfg: &RunConfig, split: Split, n: usize) -> Vec<ArithSpec> {
    match split {
        Split::Train => generate(n, cfg.coding.max_ops, cfg.seed),
        Split::InDomain => generate(n, cfg.coding.max_ops, 0xC0DE_0001),
        Split::Ood => generate_between(
            n,
            cfg.coding.max_ops + 1,
            cfg.coding.max_ops + 1,
            0xC0DE_0002,
        ),
    }
}

fn prompts(lm: &dyn LanguageModel, texts: &[String]) -> Result<Vec<Vec<u32>>> {
    texts.iter().map(|t| encode_chat(lm, t)).collect()
}

/// The programs of a coder's samples (an answer without a program runs as an empty file).
fn programs_of(samples: &[Sample]) -> Vec<String> {
    samples
        .iter()
        .map(|s| extract_program(&s.text).unwrap_or_default())
        .collect()
}

/// The one test of each test-writer sample (`None`: unparseable).
fn tests_of(samples: &[Sample]) -> Vec<Option<TestCase>> {
    samples
        .iter()
        .map(|s| parse_tests(&s.text).into_iter().next().flatten())
        .collect()
}

/// Pass vectors of generated tests: `None` for an unparseable one, else whether each program
/// passes it.
fn generated_passes(
    sb: &Sandbox,
    programs: &[String],
    tests: &[Option<TestCase>],
) -> Result<Vec<Option<Vec<bool>>>> {
    let parsed: Vec<TestCase> = tests.iter().flatten().cloned().collect();
    let m = run_matrix(sb, programs, &parsed)?;
    let mut k = 0;
    Ok(tests
        .iter()
        .map(|t| {
            t.as_ref().map(|_| {
                let col = m.iter().map(|row| row[k].passed()).collect();
                k += 1;
                col
            })
        })
        .collect())
}

/// What the structured curator records about a problem: each ground-truth test's pass rate and
/// the generated tests' correctness.
fn critique(gt: &[Vec<bool>], correct: &[bool], gen: &[Option<Vec<bool>>]) -> String {
    let n = gt.len().max(1) as f64;
    let tests = gt.first().map_or(0, Vec::len);
    let rates: Vec<String> = (0..tests)
        .map(|t| format!("{:.2}", gt.iter().filter(|r| r[t]).count() as f64 / n))
        .collect();
    let good = gen
        .iter()
        .filter(|g| rla_core::coding::test_correct(correct, g))
        .count();
    format!(
        "test pass rates {}; generated tests correct {good} of {}",
        rates.join(" "),
        gen.len()
    )
}

/// Whether the coder's greedy program for each problem passes all its tests.
pub fn greedy_passes(
    lm: &dyn LanguageModel,
    sb: &Sandbox,
    problems: &[Problem],
    max_new_tokens: usize,
) -> Result<Vec<bool>> {
    let texts: Vec<String> = problems
        .iter()
        .map(|p| coder_prompt(&p.statement))
        .collect();
    let out = lm.generate(
        &prompts(lm, &texts)?,
        1,
        &SampleParams::greedy(max_new_tokens),
    )?;
    problems
        .iter()
        .zip(&out)
        .map(|(p, s)| Ok(all_pass(&to_bool(&run_matrix(sb, &programs_of(s), &p.tests)?))[0]))
        .collect()
}

impl Trainer {
    fn sandbox(&mut self) -> Result<Sandbox> {
        if self.sandbox.is_none() {
            self.sandbox = Some(Sandbox::with_limits(self.cfg.coding.limits.clone())?);
        }
        Ok(self.sandbox.clone().expect("set above"))
    }

    /// Greedy code accuracy (one program per problem, all ground-truth tests passed) on the first
    /// `n` evaluation problems of a split.
    pub fn coding_eval(&mut self, split: Split, n: usize) -> Result<f64> {
        let specs = eval_problems(&self.cfg, split, n);
        if specs.is_empty() {
            return Ok(0.0);
        }
        let sb = self.sandbox()?;
        let problems: Vec<Problem> = specs
            .iter()
            .map(|s| s.problem("", self.cfg.coding.tests))
            .collect();
        let ok = greedy_passes(&self.policy, &sb, &problems, self.cfg.policy.max_new_tokens)?;
        Ok(ok.iter().filter(|&&o| o).count() as f64 / specs.len() as f64)
    }

    /// One iteration of Algorithm 1 in the coding setting.
    pub fn coding_iteration(&mut self, k: usize) -> Result<IterMetrics> {
        let cfg = self.cfg.clone();
        let sb = self.sandbox()?;
        let mut m = IterMetrics {
            iteration: k,
            ..Default::default()
        };
        let seed = |tag: u64| crate::trainer::seed_of(&cfg, k, tag);

        // 1. Rollout: n programs for each sampled problem and each pending rewrite.
        let t0 = Instant::now();
        let sampled =
            crate::pool::sample_slots(self.state.code.pool.len(), cfg.tasks_per_iteration, seed(1));
        let pending = std::mem::take(&mut self.state.code.pending);
        let mut specs: Vec<ArithSpec> = sampled
            .iter()
            .map(|&s| self.state.code.pool[s].spec.clone())
            .collect();
        specs.extend(pending.iter().map(|p| p.spec.clone()));
        let problems: Vec<_> = specs
            .iter()
            .map(|s| s.problem("", cfg.coding.tests))
            .collect();
        let sp = SampleParams {
            temperature: cfg.policy.temperature,
            max_new_tokens: cfg.policy.max_new_tokens,
            seed: seed(2),
            ..Default::default()
        };
        let coder_texts: Vec<String> = problems
            .iter()
            .map(|p| coder_prompt(&p.statement))
            .collect();
        let coder_prompts = prompts(&self.policy, &coder_texts)?;
        let programs = self
            .policy
            .generate(&coder_prompts, cfg.rollouts_per_task, &sp)?;
        m.time_rollout = t0.elapsed().as_secs_f64();

        // 2. Judge: the reward model writes m unit tests per problem; every program runs on the
        // ground-truth and the generated tests.
        let t0 = Instant::now();
        let jp = SampleParams {
            temperature: cfg.reward.temperature,
            max_new_tokens: cfg.reward.max_new_tokens,
            seed: seed(3),
            ..Default::default()
        };
        let tester_texts: Vec<String> = problems
            .iter()
            .map(|p| tester_prompt(&p.statement))
            .collect();
        let tester_prompts = prompts(&self.reward, &tester_texts)?;
        let tests = self
            .reward
            .generate(&tester_prompts, cfg.judge_samples, &jp)?;
        let mut gts = Vec::with_capacity(problems.len());
        let mut gens = Vec::with_capacity(problems.len());
        for (i, p) in problems.iter().enumerate() {
            let progs = programs_of(&programs[i]);
            gts.push(to_bool(&run_matrix(&sb, &progs, &p.tests)?));
            gens.push(generated_passes(&sb, &progs, &tests_of(&tests[i]))?);
        }
        // which programs pass every ground-truth test, per problem
        let correct: Vec<Vec<bool>> = gts.iter().map(|gt| all_pass(gt)).collect();
        m.time_judge = t0.elapsed().as_secs_f64();

        // Accuracy per problem; pending rewrites are accepted or dropped by the core rule.
        let acc: Vec<f64> = correct
            .iter()
            .map(|ok| task_accuracy(ok.iter().filter(|&&c| c).count(), ok.len()))
            .collect();
        let mut train_task = vec![true; specs.len()];
        for (j, p) in pending.iter().enumerate() {
            let i = sampled.len() + j;
            let ok = accept_rewrite(p.direction, p.parent_acc, acc[i], &cfg.adapt);
            train_task[i] = ok;
            self.state.code.lineage.push(CodeLineage {
                id: p.id.clone(),
                parent: p.parent.clone(),
                direction: p.direction,
                critique: p.critique.clone(),
                acc_before: p.parent_acc,
                acc_after: acc[i],
                accepted: ok,
                iteration: k,
                statement: p.spec.statement(),
                spec: p.spec.clone(),
            });
            if ok {
                if cfg.grow_pool {
                    self.state.code.pool.push(CodeSlot {
                        id: p.id.clone(),
                        spec: p.spec.clone(),
                        history: vec![],
                    });
                } else if let Some(s) = self.state.code.pool.get_mut(p.slot) {
                    let old = std::mem::replace(&mut s.id, p.id.clone());
                    s.spec = p.spec.clone();
                    s.history.push(old);
                }
            }
            m.accepted += ok as usize;
        }
        m.pending_evaluated = pending.len();

        // Metrics and theory: μ = p₊ + p₋ of the generated tests (passing correct programs,
        // rejecting incorrect ones), the Theorem 1 bound at m.
        let mut tally = CodingTally::default();
        let mut cal = Calibration::default();
        for (correct, gen) in correct.iter().zip(&gens) {
            tally.add(correct, gen);
            for g in gen.iter().flatten() {
                for (&c, &pass) in correct.iter().zip(g) {
                    let s = if pass {
                        StepScore::Positive
                    } else {
                        StepScore::Negative
                    };
                    cal.observe(c, s);
                }
            }
        }
        let cm = tally.metrics();
        m.train_success = cm.code_accuracy;
        m.process_acc = Some(cm.test_accuracy);
        m.outcome_acc = Some(cm.detection);
        m.code = Some(cm);
        m.mu = cal.mu();
        m.bound =
            m.mu.and_then(|mu| theorem1_lower_bound(mu, cfg.judge_samples));
        m.task_acc = acc.clone();

        // 3. Rewards and updates: programs by their ground-truth pass fraction (z-scored per
        // problem, banded), tests by how they separate correct from incorrect programs.
        let t0 = Instant::now();
        let mut policy_samples = Vec::new();
        let mut reward_samples = Vec::new();
        for i in 0..specs.len() {
            if !train_task[i] {
                continue;
            }
            if let Some(adv) = program_advantages(&gts[i], CODER_BAND) {
                for (s, a) in programs[i].iter().zip(adv) {
                    policy_samples.push(PpoSample {
                        prompt: coder_prompts[i].clone(),
                        response: s.tokens.clone(),
                        advantage: a as f32,
                        old_logprobs: s.logprobs.clone(),
                        ref_logprobs: None,
                    });
                }
            }
            if cfg.mode.trains_judge() {
                if let Some(adv) = test_advantages(&correct[i], &gens[i]) {
                    for (s, a) in tests[i].iter().zip(adv) {
                        reward_samples.push(PpoSample {
                            prompt: tester_prompts[i].clone(),
                            response: s.tokens.clone(),
                            advantage: a as f32,
                            old_logprobs: s.logprobs.clone(),
                            ref_logprobs: None,
                        });
                    }
                }
            }
        }
        self.update(&policy_samples, &reward_samples, &mut m)?;
        m.time_update = t0.elapsed().as_secs_f64();

        // 4–5. Critique and adapt: problems outside the band get a harder or easier rewrite,
        // valid only if its reference solution passes its tests in the sandbox.
        let t0 = Instant::now();
        if cfg.mode.adapts() {
            let mut rng = ChaCha8Rng::seed_from_u64(seed(4));
            for (si, &slot) in sampled.iter().enumerate() {
                let dir = adaptation_direction(acc[si], &cfg.adapt);
                let parent = &self.state.code.pool[slot];
                let spec = match dir {
                    Direction::Keep => continue,
                    Direction::Harder => parent.spec.harder(&mut rng),
                    Direction::Easier => parent.spec.easier(&mut rng),
                };
                let Some(spec) = spec else { continue };
                let p = spec.problem("", cfg.coding.tests);
                let sol = vec![p.solution.clone().unwrap_or_default()];
                let valid = all_pass(&to_bool(&run_matrix(&sb, &sol, &p.tests)?))[0];
                if !valid {
                    continue;
                }
                let id = format!("{}-r{k}", parent.id);
                self.state.code.pending.push(CodePending {
                    slot,
                    id,
                    parent: parent.id.clone(),
                    spec,
                    direction: dir,
                    parent_acc: acc[si],
                    critique: critique(&gts[si], &correct[si], &gens[si]),
                    proposed_at: k,
                });
            }
        }
        m.pending_next = self.state.code.pending.len();
        m.pool_size = self.state.code.pool.len();
        m.time_adapt = t0.elapsed().as_secs_f64();

        // A few problems with their programs and tests, for the report.
        let picked: Vec<serde_json::Value> = (0..specs.len().min(4))
            .map(|i| {
                serde_json::json!({
                    "statement": problems[i].statement,
                    "programs": programs_of(&programs[i]),
                    "ground_truth_passes": gts[i],
                    "generated_tests": tests[i].iter().map(|s| s.text.clone()).collect::<Vec<_>>(),
                    "generated_passes": gens[i],
                })
            })
            .collect();
        self.dir
            .save_json(&format!("samples/iter-{k:04}.json"), &picked)?;
        Ok(m)
    }
}

fn to_bool(v: &[Vec<rla_env::code::Verdict>]) -> Vec<Vec<bool>> {
    v.iter()
        .map(|r| r.iter().map(|x| x.passed()).collect())
        .collect()
}

/// The test writer's target for one test: its input, and (with probability `noise`) a wrong
/// output, so the warm-started writer is imperfect.
fn noisy_test(t: &TestCase, noise: f64, rng: &mut ChaCha8Rng) -> TestCase {
    if rng.gen::<f64>() < noise {
        let v: i64 = t.output.trim().parse().unwrap_or(0);
        TestCase {
            input: t.input.clone(),
            output: format!("{}\n", v + rng.gen_range(1..=3)),
        }
    } else {
        t.clone()
    }
}

/// Warm starts for the coding setting: a word-level tokenizer over the family's text (every
/// integer the tests can print included), the coder fitted on reference solutions (a `noise`
/// share of them with one operation dropped) and the test writer on one test per answer (a
/// `noise` share with a wrong output).
pub fn pretrain(cfg: &RunConfig, out: &Path, progress: bool) -> Result<Vec<String>> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(31));
    let specs = generate(
        cfg.pretrain.tasks,
        cfg.coding.max_ops,
        cfg.seed.wrapping_add(17),
    );
    let noise = cfg.pretrain.noise;
    let mut coder: Vec<Example> = Vec::new();
    let mut tester: Vec<Example> = Vec::new();
    for s in &specs {
        let shown = if rng.gen::<f64>() < noise && s.ops.len() > 1 {
            ArithSpec {
                ops: s.ops[..s.ops.len() - 1].to_vec(),
                seed: s.seed,
            }
        } else {
            s.clone()
        };
        coder.push((
            coder_prompt(&s.statement()),
            format!("```python\n{}```", shown.solution()),
        ));
        for t in s.tests(2) {
            tester.push((
                tester_prompt(&s.statement()),
                format_tests(&[noisy_test(&t, noise, &mut rng)]),
            ));
        }
    }
    let mut corpus = example_corpus(coder.iter().chain(tester.iter()));
    // Every statement the evaluation and rewrites can produce is built from the same words; the
    // numbers are listed so that any test output has a token.
    for split in [Split::InDomain, Split::Ood] {
        for s in eval_problems(cfg, split, 64) {
            corpus.push_str(&coder_prompt(&s.statement()));
            corpus.push('\n');
            corpus.push_str(&s.solution());
        }
    }
    for v in -1100..=1100 {
        corpus.push_str(&format!("{v}\n {v}\n"));
    }
    corpus.push_str(CHAT_MARKERS);
    let tok = build_word_level(&corpus, 1)?;
    Ok(vec![
        fit_tiny(
            cfg,
            "policy",
            &cfg.policy,
            &tok,
            &coder,
            cfg.pretrain.policy_steps,
            out,
            progress,
        )?,
        fit_tiny(
            cfg,
            "reward",
            &cfg.reward,
            &tok,
            &tester,
            cfg.pretrain.reward_steps,
            out,
            progress,
        )?,
    ])
}
