//! The coding setting: the policy writes programs, the reward model writes unit tests, and the
//! sandbox runs every program on the ground-truth and the generated tests. Programs are rewarded
//! by their share of passed ground-truth tests and tests by CURE's rule (how they separate correct
//! from incorrect programs); problems are rewritten harder or easier, valid only if their
//! reference solution passes their tests.

pub mod config;
pub mod warm;

use crate::coding::config::CodingConfig;
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::play::encode_prompt;
use crate::pool::PoolTask;
use crate::run::RunDir;
use crate::setting::{
    Ctx, Episode, Generation, Group, JudgeQuality, JudgeReward, Judgement, Scored, Setting, Split,
    Step,
};
use anyhow::Result;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_core::adapt::Direction;
use rla_core::coding::{all_pass, pass_fractions, test_rewards_raw, CodingTally};
use rla_core::filter::Band;
use rla_core::reward::StepScore;
use rla_core::theory::Calibration;
use rla_env::code::family::{generate, generate_between, ArithSpec};
use rla_env::code::sandbox::Sandbox;
use rla_env::code::{
    coder_prompt, extract_program, parse_tests, run_matrix, tester_prompt, Problem, TestCase,
};
use rla_lm::{Sample, SampleParams, Sampler};
use serde::{Deserialize, Serialize};

/// The coder's filter: problems whose share of all-passing programs lies in [0.2, 0.8] train it.
pub const CODER_BAND: Band = Band {
    low: 0.2,
    high: 0.8,
};

/// A problem of the pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeTask {
    /// Its id.
    pub id: String,
    /// The id of the problem it was rewritten from.
    #[serde(default)]
    pub parent: Option<String>,
    /// The problem.
    pub spec: ArithSpec,
}

impl PoolTask for CodeTask {
    fn id(&self) -> &str {
        &self.id
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
}

/// The fixed evaluation problems: in-domain (1 to `max_ops` operations, a held-out seed) and OOD
/// (`max_ops + 1` operations).
pub fn eval_problems(cfg: &RunConfig, split: Split, n: usize) -> Vec<ArithSpec> {
    match split {
        Split::Train => generate(n, CodingConfig::of(cfg).max_ops, cfg.seed),
        Split::InDomain => generate(n, CodingConfig::of(cfg).max_ops, 0xC0DE_0001),
        Split::Validation => generate(n, CodingConfig::of(cfg).max_ops, 0xC0DE_0003),
        Split::Ood => generate_between(
            n,
            CodingConfig::of(cfg).max_ops + 1,
            CodingConfig::of(cfg).max_ops + 1,
            0xC0DE_0002,
        ),
    }
}

fn prompts(lm: &dyn Sampler, texts: &[String]) -> Result<Vec<Vec<u32>>> {
    texts.iter().map(|t| encode_prompt(lm, t)).collect()
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
    lm: &dyn Sampler,
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
    check_counts("coder", &out, problems.len(), 1)?;
    problems
        .iter()
        .zip(&out)
        .map(|(p, s)| Ok(all_pass(&to_bool(&run_matrix(sb, &programs_of(s), &p.tests)?))[0]))
        .collect()
}

/// The coding setting.
#[derive(Debug, Default)]
pub struct Coding {
    /// Its table of the run config.
    pub cfg: CodingConfig,
    sandbox: Option<Sandbox>,
    /// The rewriter's random source, seeded once per iteration.
    rng: Option<(usize, ChaCha8Rng)>,
}

/// One iteration's programs, tests and pass matrices, problem by problem.
#[derive(Debug, Default)]
pub struct Played {
    problems: Vec<Problem>,
    programs: Vec<Vec<Sample>>,
    tests: Vec<Vec<Sample>>,
    /// Ground-truth pass matrix (program × test) per problem.
    gts: Vec<Vec<Vec<bool>>>,
    /// Which programs pass every ground-truth test.
    correct: Vec<Vec<bool>>,
    /// Generated tests' pass vectors over the programs (`None`: unparseable).
    gens: Vec<Vec<Option<Vec<bool>>>>,
}

impl crate::setting::Registered for Coding {
    const NAME: &'static str = "coding";
    type Config = CodingConfig;
    fn new(cfg: CodingConfig) -> Coding {
        Coding {
            cfg,
            ..Default::default()
        }
    }
}

impl Coding {
    fn sandbox(&mut self) -> Result<Sandbox> {
        if self.sandbox.is_none() {
            self.sandbox = Some(Sandbox::with_limits(self.cfg.limits.clone())?);
        }
        Ok(self.sandbox.clone().expect("set above"))
    }
}

impl Setting for Coding {
    type Task = CodeTask;
    type Record = Played;

    fn name(&self) -> &'static str {
        "coding"
    }

    /// Training problems that share no chain of operations with the evaluated ones.
    fn initial_pool(&self, cfg: &RunConfig) -> Result<Vec<CodeTask>> {
        Ok(warm::training_problems(cfg, cfg.pool_size, cfg.seed)?
            .into_iter()
            .enumerate()
            .map(|(i, spec)| CodeTask {
                id: format!("code-{i}"),
                parent: None,
                spec,
            })
            .collect())
    }

    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[CodeTask],
    ) -> Result<(Vec<Group>, Played)> {
        // n programs per problem, each run on the ground-truth tests: its outcome is its share
        // of passed tests, and it wins if it passes them all
        let cfg = ctx.cfg;
        let sb = self.sandbox()?;
        let problems: Vec<Problem> = tasks
            .iter()
            .map(|t| t.spec.problem("", self.cfg.tests))
            .collect();
        let sp = cfg.policy.sampling(ctx.seed(2));
        let texts: Vec<String> = problems
            .iter()
            .map(|p| coder_prompt(&p.statement))
            .collect();
        let coder_prompts = prompts(policy, &texts)?;
        let programs = policy.generate(&coder_prompts, cfg.rollouts_per_task, &sp)?;
        check_counts("policy", &programs, problems.len(), cfg.rollouts_per_task)?;
        let mut played = Played {
            problems,
            programs,
            ..Default::default()
        };
        let mut groups = Vec::with_capacity(tasks.len());
        for (i, p) in played.problems.iter().enumerate() {
            let gt = to_bool(&run_matrix(
                &sb,
                &programs_of(&played.programs[i]),
                &p.tests,
            )?);
            let correct = all_pass(&gt);
            let fractions = pass_fractions(&gt);
            groups.push(Group {
                episodes: played.programs[i]
                    .iter()
                    .zip(correct.iter().zip(fractions))
                    .map(|(s, (&won, outcome))| Episode {
                        outcome,
                        won,
                        steps: vec![Step {
                            action: Generation {
                                prompt: coder_prompts[i].clone(),
                                response: s.tokens.clone(),
                                logprobs: s.logprobs.clone(),
                                choices: None,
                            },
                        }],
                    })
                    .collect(),
                judgements: vec![],
            });
            played.gts.push(gt);
            played.correct.push(correct);
        }
        Ok((groups, played))
    }

    fn judge(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        _tasks: &[CodeTask],
        groups: &mut [Group],
        played: &mut Played,
    ) -> Result<()> {
        // m unit tests per problem; every program runs on each; a test is rewarded by how it
        // separates the correct programs from the incorrect ones
        let cfg = ctx.cfg;
        let sb = self.sandbox()?;
        let jp = cfg.reward.sampling(ctx.seed(3));
        let texts: Vec<String> = played
            .problems
            .iter()
            .map(|p| tester_prompt(&p.statement))
            .collect();
        let tester_prompts = prompts(reward, &texts)?;
        played.tests = reward.generate(&tester_prompts, cfg.judge_samples, &jp)?;
        check_counts(
            "reward model",
            &played.tests,
            played.problems.len(),
            cfg.judge_samples,
        )?;
        for (i, g) in groups.iter_mut().enumerate() {
            let progs = programs_of(&played.programs[i]);
            let parsed = tests_of(&played.tests[i]);
            let gen = generated_passes(&sb, &progs, &parsed)?;
            g.judgements.push(Judgement {
                step: None,
                samples: played.tests[i]
                    .iter()
                    .zip(&parsed)
                    .map(|(s, t)| Scored {
                        sample: Generation {
                            prompt: tester_prompts[i].clone(),
                            response: s.tokens.clone(),
                            logprobs: s.logprobs.clone(),
                            choices: None,
                        },
                        score: if t.is_some() {
                            StepScore::Positive
                        } else {
                            StepScore::Unparsed
                        },
                    })
                    .collect(),
                reward: JudgeReward::Given(test_rewards_raw(&played.correct[i], &gen)),
            });
            if cfg.mode.reward_only() {
                // the reward-only run: a program's reward is the generated tests' verdicts on
                // it alone (+1 passed, −1 failed), never the ground truth; these judgements only
                // carry the verdicts (the tests learn from the judgement above)
                for e in 0..g.episodes.len() {
                    let samples = played.tests[i]
                        .iter()
                        .zip(&gen)
                        .filter_map(|(s, row)| {
                            let pass = *row.as_ref()?.get(e)?;
                            Some(Scored {
                                sample: Generation {
                                    prompt: tester_prompts[i].clone(),
                                    response: s.tokens.clone(),
                                    logprobs: s.logprobs.clone(),
                                    choices: None,
                                },
                                score: if pass {
                                    StepScore::Positive
                                } else {
                                    StepScore::Negative
                                },
                            })
                        })
                        .collect();
                    g.judgements.push(Judgement {
                        step: Some((e, 0)),
                        samples,
                        reward: JudgeReward::Given(None),
                    });
                }
            }
            played.gens.push(gen);
        }
        Ok(())
    }

    fn judge_quality(&self, _groups: &[Group], played: &Played) -> JudgeQuality {
        // μ = p₊ + p₋ of the generated tests: passing correct programs, rejecting incorrect ones
        let mut tally = CodingTally::default();
        let mut cal = Calibration::default();
        for (correct, gen) in played.correct.iter().zip(&played.gens) {
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
        JudgeQuality {
            calibration: cal,
            precision: None,
            process_acc: Some(cm.test_accuracy),
            outcome_acc: Some(cm.detection),
            extra: serde_json::to_value(cm).ok(),
        }
    }

    fn policy_band(&self, _cfg: &RunConfig) -> Band {
        CODER_BAND
    }

    fn reward_band(&self, _cfg: &RunConfig) -> Band {
        // CURE trains the test writer on every problem that some program solves
        Band {
            low: 0.0,
            high: 1.0,
        }
    }

    fn critique(
        &self,
        _ctx: Ctx,
        _reward: &dyn Sampler,
        i: usize,
        _groups: &[Group],
        played: &Played,
    ) -> Option<String> {
        Some(critique(
            &played.gts[i],
            &played.correct[i],
            &played.gens[i],
        ))
    }

    fn rewrite_check(&self) -> Option<&'static str> {
        Some("its reference solution passes its tests in the sandbox")
    }

    fn rewrite(
        &mut self,
        ctx: Ctx,
        _reward: &dyn Sampler,
        task: &CodeTask,
        direction: Direction,
        _critique: Option<&str>,
        _i: usize,
    ) -> Result<Option<(String, CodeTask)>> {
        let k = ctx.k;
        if self.rng.as_ref().is_none_or(|(at, _)| *at != k) {
            self.rng = Some((k, ChaCha8Rng::seed_from_u64(ctx.seed(4))));
        }
        let rng = &mut self.rng.as_mut().expect("set above").1;
        let spec = match direction {
            Direction::Keep => return Ok(None),
            Direction::Harder => task.spec.harder(rng),
            Direction::Easier => task.spec.easier(rng),
        };
        let Some(spec) = spec else { return Ok(None) };
        // a rewrite never lands on a problem the runs evaluate
        if warm::evaluation_chains(ctx.cfg).contains(&spec.ops) {
            return Ok(None);
        }
        // valid only if its reference solution passes its tests in the sandbox
        let p = spec.problem("", self.cfg.tests);
        let sol = vec![p.solution.clone().unwrap_or_default()];
        let sb = self.sandbox()?;
        if !all_pass(&to_bool(&run_matrix(&sb, &sol, &p.tests)?))[0] {
            return Ok(None);
        }
        let statement = spec.statement();
        Ok(Some((
            statement,
            CodeTask {
                id: format!("{}-r{k}", task.id),
                parent: Some(task.id.clone()),
                spec,
            },
        )))
    }

    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        // greedy code accuracy: one program per problem, all ground-truth tests passed
        let cfg = ctx.cfg;
        let specs = eval_problems(cfg, split, n);
        if specs.is_empty() {
            return Ok(0.0);
        }
        let sb = self.sandbox()?;
        let problems: Vec<Problem> = specs
            .iter()
            .map(|s| s.problem("", self.cfg.tests))
            .collect();
        let ok = greedy_passes(policy, &sb, &problems, cfg.policy.max_new_tokens)?;
        Ok(ok.iter().filter(|&&o| o).count() as f64 / specs.len() as f64)
    }

    fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        _tasks: &[CodeTask],
        played: &Played,
    ) -> Result<()> {
        let picked: Vec<serde_json::Value> = (0..played.problems.len().min(4))
            .map(|i| {
                serde_json::json!({
                    "statement": played.problems[i].statement,
                    "programs": programs_of(&played.programs[i]),
                    "ground_truth_passes": played.gts[i],
                    "generated_tests": played.tests[i].iter().map(|s| s.text.clone()).collect::<Vec<_>>(),
                    "generated_passes": played.gens[i],
                })
            })
            .collect();
        dir.save_json(&format!("samples/iter-{k:04}.json"), &picked)
    }

    fn warm_start(&self, w: crate::setting::WarmStart) -> Result<Vec<String>> {
        warm::pretrain(w)
    }

    /// The SFT control's demonstrations: reference solutions of 256 fresh training problems a
    /// chunk (other seeds than the warm start's, no chain the runs evaluate).
    fn demonstrations(&self, cfg: &RunConfig, chunk: u64) -> Result<Vec<crate::pretrain::Example>> {
        let seed = rla_core::seed::mix(cfg.seed, &format!("coding/control/{chunk}"));
        Ok(warm::training_problems(cfg, 256, seed)?
            .iter()
            .map(|s| {
                (
                    coder_prompt(&s.statement()),
                    format!("```python\n{}```", s.solution()),
                )
            })
            .collect())
    }

    fn judge_columns(&self) -> (&'static str, &'static str) {
        ("unit-test acc", "detection")
    }
}

/// Checks that a model gave `n` samples for each of `prompts` prompts.
fn check_counts(who: &str, out: &[Vec<Sample>], prompts: usize, n: usize) -> Result<()> {
    if out.len() != prompts || out.iter().any(|s| s.len() != n) {
        anyhow::bail!(
            "the {who} returned the wrong number of samples ({prompts} prompts × {n} asked)"
        );
    }
    Ok(())
}

fn to_bool(v: &[Vec<rla_env::code::Verdict>]) -> Vec<Vec<bool>> {
    v.iter()
        .map(|r| r.iter().map(|x| x.passed()).collect())
        .collect()
}
