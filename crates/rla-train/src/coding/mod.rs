//! The coding setting: the policy writes programs, the reward model writes unit tests, and the
//! sandbox runs every program on the ground-truth and the generated tests. Programs are rewarded
//! by their share of passed ground-truth tests and tests by CURE's rule (how they separate correct
//! from incorrect programs: a problem's own tests decide which programs are correct, so no
//! reference solution is needed). Problems are generated chains of operations, or read from a
//! problem file (`[coding] train_problems`, `eval_problems`: the reference's, HumanEval's,
//! MBPP's or the project's format). Chains are rewritten harder or easier, valid only if their
//! reference solution passes their tests; a file's problems by the reward model.

pub mod config;
pub mod eval;
pub mod warm;

use crate::coding::config::CodingConfig;
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::play::ask;
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
use rla_env::code::problems::{self, FileProblem, UnitTest};
use rla_env::code::sandbox::Sandbox;
use rla_env::code::{coder_prompt, run_matrix};
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
    #[serde(flatten)]
    pub source: CodeSource,
}

/// Where a pool problem comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CodeSource {
    /// A generated chain of operations.
    Chain {
        /// The chain.
        spec: ArithSpec,
    },
    /// A problem of a file (or the reward model's rewrite of one).
    File {
        /// The problem.
        problem: FileProblem,
    },
}

impl CodeTask {
    /// The problem as the loop runs it (a chain with `tests` ground-truth tests).
    pub fn problem(&self, tests: usize) -> FileProblem {
        match &self.source {
            CodeSource::Chain { spec } => spec.problem("", tests).into(),
            CodeSource::File { problem } => problem.clone(),
        }
    }
}

impl PoolTask for CodeTask {
    fn id(&self) -> &str {
        &self.id
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
}

/// The fixed evaluation chains: in-domain (1 to `max_ops` operations, a held-out seed) and OOD
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

/// The evaluation problems of a split: the first `n` of its problem file when the config names
/// one (all of them when `n` is larger), else `n` generated chains.
pub fn eval_set(cfg: &RunConfig, split: Split, n: usize) -> Result<Vec<FileProblem>> {
    let c = CodingConfig::of(cfg);
    Ok(match c.eval_problems.of(split) {
        Some(path) => {
            let mut set = problems::load(path, 1)?.problems;
            set.truncate(n);
            set
        }
        None => eval_problems(cfg, split, n)
            .iter()
            .map(|s| s.problem("", c.tests).into())
            .collect(),
    })
}

/// The training pool of a problem file: `n` of its problems with at least `min_tests` tests,
/// drawn by `seed`; says how many were skipped.
pub fn file_pool(
    path: &std::path::Path,
    min_tests: usize,
    n: usize,
    seed: u64,
) -> Result<Vec<CodeTask>> {
    use rand::seq::SliceRandom;
    let set = problems::load(path, min_tests)?;
    if set.skipped > 0 {
        tracing::info!(
            "{}: {} problems with fewer than coding.min_tests = {min_tests} tests skipped",
            path.display(),
            set.skipped
        );
    }
    if set.problems.is_empty() {
        anyhow::bail!(
            "coding.train_problems {}: no problem has coding.min_tests = {min_tests} tests ({} skipped)",
            path.display(),
            set.skipped
        );
    }
    let mut all = set.problems;
    all.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    all.truncate(n);
    Ok(all
        .into_iter()
        .map(|p| CodeTask {
            id: p.id.clone(),
            parent: None,
            source: CodeSource::File { problem: p },
        })
        .collect())
}

/// The programs of a coder's samples (an answer without a program runs as an empty file).
fn programs_of(p: &FileProblem, samples: &[Sample]) -> Vec<String> {
    samples.iter().map(|s| p.program(&s.text)).collect()
}

/// The first test of each test-writer sample (`None`: unparseable, or none written).
pub fn tests_of(p: &FileProblem, samples: &[Sample]) -> Vec<Option<UnitTest>> {
    samples
        .iter()
        .map(|s| p.parse_generated(&s.text).into_iter().next().flatten())
        .collect()
}

/// Pass vectors of generated tests: `None` for an unparseable one, else whether each program
/// passes it.
pub fn generated_passes(
    sb: &Sandbox,
    p: &FileProblem,
    programs: &[String],
    tests: &[Option<UnitTest>],
) -> Result<Vec<Option<Vec<bool>>>> {
    let parsed: Vec<UnitTest> = tests.iter().flatten().cloned().collect();
    let m = p.run(sb, programs, &parsed)?;
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
    problems: &[FileProblem],
    max_new_tokens: usize,
) -> Result<Vec<bool>> {
    let texts: Vec<String> = problems.iter().map(FileProblem::prompt).collect();
    let (_, out) = ask(lm, &texts, 1, &SampleParams::greedy(max_new_tokens))?;
    check_counts("coder", &out, problems.len(), 1)?;
    problems
        .iter()
        .zip(&out)
        .map(|(p, s)| ground_truth(sb, p, &programs_of(p, s)).map(|gt| all_pass(&gt)[0]))
        .collect()
}

/// Every program on a problem's ground-truth tests: `passes[program][test]`.
pub fn ground_truth(sb: &Sandbox, p: &FileProblem, programs: &[String]) -> Result<Vec<Vec<bool>>> {
    Ok(to_bool(&p.run(sb, programs, &p.unit_tests())?))
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
pub struct PlayedPrograms {
    problems: Vec<FileProblem>,
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
    /// The reward model's harder or easier version of a file's stdio problem: a statement after
    /// `**Problem:**` and at least `min_tests` unit tests in the reference's format, all of
    /// which must parse.
    #[allow(clippy::too_many_arguments)]
    fn rewrite_file(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        task: &CodeTask,
        problem: &FileProblem,
        direction: Direction,
        critique: Option<&str>,
        i: usize,
    ) -> Result<Option<(String, CodeTask)>> {
        if !problem.is_stdio() {
            return Ok(None);
        }
        let prompt = rewrite_prompt(problem, direction, critique, self.cfg.min_tests);
        let params = ctx.cfg.reward.sampling(ctx.item_seed(5, i));
        let (_, out) = ask(reward, &[prompt], 1, &params)?;
        let Some(answer) = out.into_iter().next().and_then(|s| s.into_iter().next()) else {
            return Ok(None);
        };
        let Some(new) = parse_rewrite(&answer.text, self.cfg.min_tests) else {
            return Ok(None);
        };
        let id = format!("{}-r{}", task.id, ctx.k);
        let rewritten = FileProblem {
            id: id.clone(),
            statement: new.statement.clone(),
            checks: rla_env::code::problems::Checks::Stdio { tests: new.tests },
            time_limit: problem.time_limit,
            solution: None,
        };
        Ok(Some((
            new.statement,
            CodeTask {
                id,
                parent: Some(task.id.clone()),
                source: CodeSource::File { problem: rewritten },
            },
        )))
    }

    fn sandbox(&mut self) -> Result<Sandbox> {
        if self.sandbox.is_none() {
            self.sandbox = Some(Sandbox::with_limits(self.cfg.limits.clone())?);
        }
        Ok(self.sandbox.clone().expect("set above"))
    }
}

impl Setting for Coding {
    type Task = CodeTask;
    type Record = PlayedPrograms;

    fn name(&self) -> &'static str {
        "coding"
    }

    /// `pool_size` problems of the training file, drawn by the seed; else generated chains
    /// that share no chain of operations with the evaluated ones.
    fn initial_pool(&self, cfg: &RunConfig) -> Result<Vec<CodeTask>> {
        if let Some(path) = &self.cfg.train_problems {
            return file_pool(path, self.cfg.min_tests, cfg.pool_size, cfg.seed);
        }
        Ok(warm::training_problems(cfg, cfg.pool_size, cfg.seed)?
            .into_iter()
            .enumerate()
            .map(|(i, spec)| CodeTask {
                id: format!("code-{i}"),
                parent: None,
                source: CodeSource::Chain { spec },
            })
            .collect())
    }

    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[CodeTask],
    ) -> Result<(Vec<Group>, PlayedPrograms)> {
        // n programs per problem, each run on the ground-truth tests: its outcome is its share
        // of passed tests, and it wins if it passes them all
        let cfg = ctx.cfg;
        let sb = self.sandbox()?;
        let problems: Vec<FileProblem> = tasks.iter().map(|t| t.problem(self.cfg.tests)).collect();
        let sp = cfg.policy.sampling(ctx.seed(2));
        let texts: Vec<String> = problems.iter().map(FileProblem::prompt).collect();
        let (coder_prompts, programs) = ask(policy, &texts, cfg.rollouts_per_task, &sp)?;
        if coder_prompts.iter().any(Vec::is_empty) {
            anyhow::bail!("training needs the policy's tokenizer here: its prompts went as chat messages to a server that keeps it");
        }
        check_counts("policy", &programs, problems.len(), cfg.rollouts_per_task)?;
        let mut played = PlayedPrograms {
            problems,
            programs,
            ..Default::default()
        };
        let mut groups = Vec::with_capacity(tasks.len());
        for (i, p) in played.problems.iter().enumerate() {
            let gt = ground_truth(&sb, p, &programs_of(p, &played.programs[i]))?;
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
                            // every program of a problem starts from the problem itself
                            state: Some(0),
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
        played: &mut PlayedPrograms,
    ) -> Result<()> {
        // m unit tests per problem; every program runs on each; a test is rewarded by how it
        // separates the correct programs from the incorrect ones
        let cfg = ctx.cfg;
        let sb = self.sandbox()?;
        let jp = cfg.reward.sampling(ctx.seed(3));
        let texts: Vec<String> = played
            .problems
            .iter()
            .map(FileProblem::tester_prompt)
            .collect();
        let (tester_prompts, tests) = ask(reward, &texts, cfg.judge_samples, &jp)?;
        if tester_prompts.iter().any(Vec::is_empty) {
            anyhow::bail!("training needs the reward model's tokenizer here: its prompts went as chat messages to a server that keeps it");
        }
        played.tests = tests;
        check_counts(
            "reward model",
            &played.tests,
            played.problems.len(),
            cfg.judge_samples,
        )?;
        for (i, g) in groups.iter_mut().enumerate() {
            let p = &played.problems[i];
            let progs = programs_of(p, &played.programs[i]);
            let parsed = tests_of(p, &played.tests[i]);
            let gen = generated_passes(&sb, p, &progs, &parsed)?;
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

    fn judge_quality(&self, _groups: &[Group], played: &PlayedPrograms) -> JudgeQuality {
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
            outcome_calibration: None,
            precision: None,
            process_acc: Some(cm.test_accuracy),
            process_acc_planner: None,
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
        played: &PlayedPrograms,
    ) -> Option<String> {
        Some(critique(
            &played.gts[i],
            &played.correct[i],
            &played.gens[i],
        ))
    }

    fn rewrite_check(&self) -> Option<&'static str> {
        Some(if self.cfg.train_problems.is_some() {
            "the reward model's rewrite has a statement and at least coding.min_tests unit tests that parse"
        } else {
            "its reference solution passes its tests in the sandbox"
        })
    }

    fn rewrite(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        task: &CodeTask,
        direction: Direction,
        critique: Option<&str>,
        i: usize,
    ) -> Result<Option<(String, CodeTask)>> {
        if !self.cfg.rewrites || direction == Direction::Keep {
            return Ok(None);
        }
        let k = ctx.k;
        let spec = match &task.source {
            CodeSource::Chain { spec } => spec,
            CodeSource::File { problem } => {
                return self.rewrite_file(ctx, reward, task, problem, direction, critique, i)
            }
        };
        if self.rng.as_ref().is_none_or(|(at, _)| *at != k) {
            self.rng = Some((k, ChaCha8Rng::seed_from_u64(ctx.seed(4))));
        }
        let rng = &mut self.rng.as_mut().expect("set above").1;
        let spec = match direction {
            Direction::Harder => spec.harder(rng),
            _ => spec.easier(rng),
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
                source: CodeSource::Chain { spec },
            },
        )))
    }

    /// A problem file's split holds its problems (a file that cannot be read is named when the
    /// split is evaluated); the generated chains have no end.
    fn split_size(&self, split: Split) -> Option<usize> {
        let path = self.cfg.eval_problems.of(split)?;
        problems::load(path, 1).ok().map(|s| s.problems.len())
    }

    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        // greedy code accuracy: one program per problem, all ground-truth tests passed
        let cfg = ctx.cfg;
        let problems = eval_set(cfg, split, n)?;
        if problems.is_empty() {
            return Ok(0.0);
        }
        let sb = self.sandbox()?;
        let ok = greedy_passes(policy, &sb, &problems, cfg.policy.max_new_tokens)?;
        Ok(ok.iter().filter(|&&o| o).count() as f64 / problems.len() as f64)
    }

    fn evaluate_sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: crate::setting::Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>> {
        // `samples` programs a problem at the temperature: 1 for each that passes every
        // ground-truth test
        let problems = eval_set(ctx.cfg, split, n)?;
        if problems.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let sb = self.sandbox()?;
        let texts: Vec<String> = problems.iter().map(FileProblem::prompt).collect();
        let sp = sampling.params(ctx.cfg.policy.max_new_tokens);
        let (_, out) = crate::play::ask_paired(policy, &texts, sampling.samples, &sp)?;
        check_counts("coder", &out, problems.len(), sampling.samples)?;
        problems
            .iter()
            .zip(&out)
            .map(|(p, s)| {
                let gt = ground_truth(&sb, p, &programs_of(p, s))?;
                Ok(all_pass(&gt)
                    .into_iter()
                    .map(|ok| if ok { 1.0 } else { 0.0 })
                    .collect())
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        _tasks: &[CodeTask],
        played: &PlayedPrograms,
    ) -> Result<()> {
        let picked: Vec<serde_json::Value> = (0..played.problems.len().min(4))
            .map(|i| {
                serde_json::json!({
                    "statement": played.problems[i].statement,
                    "programs": programs_of(&played.problems[i], &played.programs[i]),
                    "ground_truth_passes": played.gts[i],
                    "generated_tests": played.tests[i].iter().map(|s| s.text.clone()).collect::<Vec<_>>(),
                    "generated_passes": played.gens[i],
                })
            })
            .collect();
        dir.save_json(&format!("samples/iter-{k:04}.json"), &picked)
    }

    fn warm_start(&self, w: crate::setting::WarmStart) -> Result<Vec<String>> {
        warm::warm_start(w)
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

/// The reward model's prompt for rewriting a stdio problem.
fn rewrite_prompt(
    p: &FileProblem,
    direction: Direction,
    critique: Option<&str>,
    min_tests: usize,
) -> String {
    let (was, want) = if direction == Direction::Harder {
        ("easy", "harder")
    } else {
        ("hard", "easier")
    };
    format!(
        "This programming problem is too {was} for the coder:\n\n{}\n\nWhat the tests showed: {}\n\nWrite a {want} problem of the same kind. Give its statement after **Problem:**, then at least {min_tests} unit tests, each as **Test Input:** followed by a fenced block with the input, then **Test Output:** followed by a fenced block with the expected output.",
        p.statement,
        critique.unwrap_or("nothing recorded.")
    )
}

/// A rewritten problem as parsed.
#[derive(Debug, PartialEq)]
struct Rewritten {
    statement: String,
    tests: Vec<rla_env::code::TestCase>,
}

/// The statement and tests of a rewrite: `None` unless the statement is there and at least
/// `min_tests` tests parse, every one of them.
fn parse_rewrite(answer: &str, min_tests: usize) -> Option<Rewritten> {
    let lower = answer.to_ascii_lowercase();
    let start = lower
        .find("**problem:**")
        .map(|i| i + "**problem:**".len())?;
    let end = lower[start..]
        .find("test input")
        .map_or(answer.len(), |e| start + e);
    let statement = answer[start..end]
        .trim()
        .trim_end_matches("**")
        .trim()
        .to_string();
    let parsed = rla_env::code::parse_tests(&answer[end..]);
    let tests: Option<Vec<_>> = parsed.into_iter().collect();
    let tests = tests?;
    (!statement.is_empty() && tests.len() >= min_tests.max(1))
        .then_some(Rewritten { statement, tests })
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

#[cfg(test)]
mod tests;
