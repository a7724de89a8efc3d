//! Problem files in the formats coding data comes in, read into one shape ([`FileProblem`]):
//!
//! * **the reference's**: a JSON list of `{"question", "test_input", "test_output",
//!   "test_method", "test_list", "test_time_limit"}` (its `CodeContests_train`,
//!   `LiveBench-ReasonFlux`): `test_method` `"stdio"` pairs the inputs with the outputs,
//!   `"function"` checks a function with the assert statements of `test_list`;
//! * **HumanEval's**: `{"task_id", "prompt", "canonical_solution", "test", "entry_point"}`, a
//!   function completed after its prompt and checked by `check(entry_point)`;
//! * **MBPP's**: `{"task_id", "text", "code", "test_list"}` (and `test_setup_code`), a function
//!   checked by its asserts;
//! * **the project's own** JSON lines, `{"id", "statement", "tests": [{"input", "output"}]}`.
//!
//! Any of them as a JSON list or as JSON lines, plain or gzipped. A malformed record is an error
//! naming the file, the record and the field; a record with fewer tests than asked is skipped
//! and counted. A file is bounded as it is parsed — records, the JSON values of a record, tests
//! a problem and tests in all ([`load_bounded`]) — so a small gzip that unpacks to millions of
//! records is an error, not memory without bound.

use super::checker::{self, Checked};
use super::sandbox::{Sandbox, SandboxError};
use super::{coder_prompt, extract_program, tester_prompt, verdict, Problem, TestCase, Verdict};
use crate::EnvError;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// The largest problem file read (and the most a gzipped one may unpack to): 2 GiB, above the
/// reference's `CodeContests_train` with its many large tests.
pub const MAX_FILE_BYTES: u64 = 2 << 30;

/// Which format a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// The reference's (`question`, `test_input`, `test_output`, `test_method`, …).
    Reference,
    /// HumanEval's (`prompt`, `test`, `entry_point`, `canonical_solution`).
    HumanEval,
    /// MBPP's (`text`, `test_list`, `code`).
    Mbpp,
    /// The project's own (`id`, `statement`, `tests`).
    Project,
}

impl Format {
    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Reference => "the reference's",
            Format::HumanEval => "HumanEval's",
            Format::Mbpp => "MBPP's",
            Format::Project => "the project's",
        }
    }

    fn of(record: &serde_json::Map<String, Value>) -> Option<Format> {
        let has = |k: &str| record.contains_key(k);
        if has("question") {
            Some(Format::Reference)
        } else if has("prompt") && has("entry_point") {
            Some(Format::HumanEval)
        } else if has("text") && has("test_list") {
            Some(Format::Mbpp)
        } else if has("statement") {
            Some(Format::Project)
        } else {
            None
        }
    }
}

/// How a problem checks a program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Checks {
    /// The program reads standard input and prints; each test an input and its output.
    Stdio {
        /// The tests.
        tests: Vec<TestCase>,
    },
    /// The program defines functions; each test an assert statement run after it.
    Asserts {
        /// The assert statements.
        asserts: Vec<String>,
        /// Code run between the program and each assert (MBPP's `test_setup_code`).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        setup: String,
    },
    /// HumanEval's: the program completes `prompt` and passes when `test` and
    /// `check(entry_point)` run after it without an error.
    Completion {
        /// The signature and docstring the completion follows.
        prompt: String,
        /// The check function.
        test: String,
        /// The function under test.
        entry_point: String,
    },
}

/// One unit test of a problem, ground truth or generated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnitTest {
    /// Standard input and the expected output.
    Io(TestCase),
    /// An assert statement (after the setup code) run after the program.
    Assert {
        /// Code run first.
        setup: String,
        /// The statement.
        assert: String,
    },
    /// HumanEval's check function called on the entry point.
    Check {
        /// The check function.
        test: String,
        /// The function under test.
        entry_point: String,
    },
}

impl UnitTest {
    /// Runs `program` on this test: a stdio test compares the output it prints; an assert or a
    /// check runs in the [`checker`](super::checker), whose harness alone decides a pass.
    pub fn verdict_of(&self, sb: &Sandbox, program: &str) -> Result<Verdict, SandboxError> {
        match self {
            UnitTest::Io(t) => Ok(verdict(
                &sb.run_python(program, t.input.as_bytes())?,
                &t.output,
            )),
            UnitTest::Assert { setup, assert } => checker::check(
                sb,
                program,
                Checked::Statements {
                    setup,
                    test: assert,
                },
            ),
            UnitTest::Check { test, entry_point } => {
                checker::check(sb, program, Checked::Check { test, entry_point })
            }
        }
    }
}

/// A problem read from a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileProblem {
    /// Its id (the record's own, else the file's name and the record's number).
    pub id: String,
    /// The statement shown to the coder.
    pub statement: String,
    /// How programs are checked.
    pub checks: Checks,
    /// Seconds each test may run (the reference's `test_time_limit`); the sandbox's own limit
    /// applies when it is lower or this is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<f64>,
    /// A reference solution, when the file carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
}

impl From<Problem> for FileProblem {
    fn from(p: Problem) -> FileProblem {
        FileProblem {
            id: p.id,
            statement: p.statement,
            checks: Checks::Stdio { tests: p.tests },
            time_limit: None,
            solution: p.solution,
        }
    }
}

/// What [`load`] read.
#[derive(Debug, Clone)]
pub struct ProblemSet {
    /// The problems with enough tests.
    pub problems: Vec<FileProblem>,
    /// The file's format.
    pub format: Format,
    /// Records skipped for having fewer tests than asked.
    pub skipped: usize,
}

type Map = serde_json::Map<String, Value>;
/// A field's error: its name and what was wrong.
type FieldError = (String, String);

fn bad(field: &str, msg: impl Into<String>) -> FieldError {
    (field.to_string(), msg.into())
}

/// A string field; `None` when absent (or null).
fn opt_str(m: &Map, k: &str) -> Result<Option<String>, FieldError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(bad(k, format!("expected a string, found {}", kind(v)))),
    }
}

fn req_str(m: &Map, k: &str) -> Result<String, FieldError> {
    opt_str(m, k)?.ok_or_else(|| bad(k, "missing"))
}

/// A list of strings; empty when absent.
fn str_list(m: &Map, k: &str) -> Result<Vec<String>, FieldError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                v => Err(bad(
                    &format!("{k}[{i}]"),
                    format!("expected a string, found {}", kind(v)),
                )),
            })
            .collect(),
        Some(v) => Err(bad(
            k,
            format!("expected a list of strings, found {}", kind(v)),
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub use super::MAX_RECORDS;

/// The most ground-truth tests one problem of a file may have, unless told otherwise
/// ([`load_bounded`]): each test runs every program once.
pub const MAX_TESTS: usize = 1_000;

/// The most ground-truth tests a file's problems may have in all.
pub const MAX_FILE_TESTS: usize = 1 << 22;

/// The most JSON values (strings, numbers, lists, objects and keys) one record may hold, checked
/// as it is parsed, before anything is kept of it.
pub const MAX_RECORD_VALUES: usize = 1 << 20;

/// Reads a problem file in any of the formats (one per file); records with fewer than
/// `min_tests` tests are skipped and counted. A problem with more than [`MAX_TESTS`] tests is an
/// error naming it.
pub fn load(path: &Path, min_tests: usize) -> Result<ProblemSet, EnvError> {
    load_bounded(path, min_tests, MAX_TESTS)
}

/// [`load`] with another bound on the tests of one problem. The file is bounded as it is parsed:
/// at most [`MAX_RECORDS`] records of at most [`MAX_RECORD_VALUES`] JSON values each, and
/// [`MAX_FILE_TESTS`] tests in all; each is an error naming the file.
pub fn load_bounded(
    path: &Path,
    min_tests: usize,
    max_tests: usize,
) -> Result<ProblemSet, EnvError> {
    let text = super::humaneval::read_text_limited(path, MAX_FILE_BYTES)?;
    let stem = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = stem
        .trim_end_matches(".gz")
        .trim_end_matches(".jsonl")
        .trim_end_matches(".json")
        .to_string();
    let mut format = None;
    let mut set = ProblemSet {
        problems: Vec::new(),
        format: Format::Project,
        skipped: 0,
    };
    let mut seen = std::collections::HashSet::new();
    let mut tests = 0usize;
    let mut i = 0usize;
    let mut each = |at: String, v: Value| -> Result<(), EnvError> {
        let index = i;
        i += 1;
        let Value::Object(map) = &v else {
            return Err(EnvError::invalid(path, at, "not a JSON object"));
        };
        let f = Format::of(map).ok_or_else(|| {
            EnvError::invalid(
                path,
                at.clone(),
                "neither the reference's format (question, test_input, test_output), \
                 HumanEval's (prompt, test, entry_point), MBPP's (text, test_list, code) nor the \
                 project's (id, statement, tests)",
            )
        })?;
        match format {
            None => format = Some(f),
            Some(g) if g != f => {
                return Err(EnvError::invalid(
                    path,
                    at,
                    format!(
                        "in {} format, where the file's first record is in {} format",
                        f.name(),
                        g.name()
                    ),
                ))
            }
            _ => {}
        }
        let id = match map.get("id").or_else(|| map.get("task_id")) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => format!("{stem}-{n}"),
            _ => format!("{stem}-{index}"),
        };
        let p = record(f, map, id)
            .map_err(|(field, msg)| EnvError::invalid(path, format!("{at}, {field}"), msg))?;
        if !seen.insert(p.id.clone()) {
            return Err(EnvError::invalid(
                path,
                format!("{at}, id"),
                format!("{:?} is the id of an earlier record", p.id),
            ));
        }
        let n = p.num_tests();
        if n > max_tests {
            return Err(EnvError::invalid(
                path,
                format!("{at} ({:?})", p.id),
                format!(
                    "{n} tests, more than the {max_tests} a problem may have (each test runs \
                     every program once)"
                ),
            ));
        }
        if n < min_tests.max(1) {
            set.skipped += 1;
            return Ok(());
        }
        tests += n;
        if tests > MAX_FILE_TESTS {
            return Err(EnvError::invalid(
                path,
                at,
                format!("the problems so far hold more than {MAX_FILE_TESTS} tests in all"),
            ));
        }
        set.problems.push(p);
        Ok(())
    };
    let records = if text.trim_start().starts_with('[') {
        bounded::list(&text, &mut each).map_err(|e| match e {
            bounded::Stop::Record(e) => e,
            bounded::Stop::Json(e) => EnvError::invalid(path, "JSON list", e.to_string()),
        })?
    } else {
        let mut n = 0usize;
        for (k, l) in text.lines().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            n += 1;
            if n > MAX_RECORDS {
                return Err(EnvError::invalid(
                    path,
                    format!("line {}", k + 1),
                    format!("more than {MAX_RECORDS} records, the most a problem file may hold"),
                ));
            }
            let v = bounded::value(l)
                .map_err(|e| EnvError::invalid(path, format!("line {}", k + 1), e.to_string()))?;
            each(format!("line {}", k + 1), v)?;
        }
        n
    };
    if records == 0 {
        return Err(EnvError::invalid(
            path,
            "problems",
            "the file holds no problem",
        ));
    }
    set.format = format.expect("at least one record");
    Ok(set)
}

mod bounded;

/// One record as a problem; the error names the field.
fn record(f: Format, m: &Map, id: String) -> Result<FileProblem, FieldError> {
    Ok(match f {
        Format::Reference => {
            let time_limit = match m.get("test_time_limit") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_f64() {
                    Some(t) if t.is_finite() && t > 0.0 => Some(t),
                    _ => {
                        return Err(bad(
                            "test_time_limit",
                            format!("{v}: must be a positive number of seconds"),
                        ))
                    }
                },
            };
            let method = opt_str(m, "test_method")?;
            let checks = match method.as_deref().unwrap_or("stdio") {
                "stdio" => {
                    let inputs = str_list(m, "test_input")?;
                    let outputs = str_list(m, "test_output")?;
                    if inputs.len() != outputs.len() {
                        return Err(bad(
                            "test_output",
                            format!(
                                "{} outputs for {} inputs (test_input)",
                                outputs.len(),
                                inputs.len()
                            ),
                        ));
                    }
                    Checks::Stdio {
                        tests: inputs
                            .into_iter()
                            .zip(outputs)
                            .map(|(input, output)| TestCase { input, output })
                            .collect(),
                    }
                }
                "function" => Checks::Asserts {
                    asserts: str_list(m, "test_list")?,
                    setup: String::new(),
                },
                other => {
                    return Err(bad(
                        "test_method",
                        format!(
                            "{other:?}: the reference's methods are \"stdio\" and \"function\""
                        ),
                    ))
                }
            };
            FileProblem {
                id,
                statement: req_str(m, "question")?,
                checks,
                time_limit,
                solution: None,
            }
        }
        Format::HumanEval => {
            let prompt = req_str(m, "prompt")?;
            FileProblem {
                id: req_str(m, "task_id")?,
                statement: prompt.clone(),
                checks: Checks::Completion {
                    prompt,
                    test: req_str(m, "test")?,
                    entry_point: req_str(m, "entry_point")?,
                },
                time_limit: None,
                solution: Some(req_str(m, "canonical_solution")?),
            }
        }
        Format::Mbpp => {
            let asserts = str_list(m, "test_list")?;
            // MBPP's own prompt: the task, then the tests the code should pass (they name the
            // function)
            let statement = format!(
                "{}\nYour code should pass these tests:\n\n{}",
                req_str(m, "text")?.trim(),
                asserts.join("\n")
            );
            FileProblem {
                id,
                statement,
                checks: Checks::Asserts {
                    asserts,
                    setup: opt_str(m, "test_setup_code")?.unwrap_or_default(),
                },
                time_limit: None,
                solution: opt_str(m, "code")?,
            }
        }
        Format::Project => {
            let tests = match m.get("tests") {
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let field = format!("tests[{i}]");
                        let Value::Object(t) = t else {
                            return Err(bad(&field, "expected an object {input, output}"));
                        };
                        let get = |k: &str| {
                            req_str(t, k).map_err(|(f, msg)| bad(&format!("{field}.{f}"), msg))
                        };
                        Ok(TestCase {
                            input: get("input")?,
                            output: get("output")?,
                        })
                    })
                    .collect::<Result<_, _>>()?,
                None => return Err(bad("tests", "missing")),
                Some(v) => return Err(bad("tests", format!("expected a list, found {}", kind(v)))),
            };
            FileProblem {
                id: req_str(m, "id")?,
                statement: req_str(m, "statement")?,
                checks: Checks::Stdio { tests },
                time_limit: None,
                solution: opt_str(m, "solution")?,
            }
        }
    })
}

/// The asserts of a test writer's answer, or of a file: every line that starts with `assert`
/// inside fenced blocks (or anywhere when the answer has no fences).
pub fn parse_asserts(answer: &str) -> Vec<String> {
    let blocks = super::fenced_blocks(answer);
    let bodies: Vec<&str> = if blocks.is_empty() {
        vec![answer]
    } else {
        blocks.iter().map(|(_, b)| b.as_str()).collect()
    };
    bodies
        .iter()
        .flat_map(|b| b.lines())
        .map(str::trim)
        .filter(|l| l.starts_with("assert ") || l.starts_with("assert("))
        .map(str::to_string)
        .collect()
}

impl FileProblem {
    /// How many ground-truth tests it has (HumanEval's check counts its asserts).
    pub fn num_tests(&self) -> usize {
        match &self.checks {
            Checks::Stdio { tests } => tests.len(),
            Checks::Asserts { asserts, .. } => asserts.len(),
            Checks::Completion { test, .. } => test
                .lines()
                .filter(|l| l.trim_start().starts_with("assert"))
                .count()
                .max(1),
        }
    }

    /// Whether programs read standard input (else they define functions).
    pub fn is_stdio(&self) -> bool {
        matches!(self.checks, Checks::Stdio { .. })
    }

    /// The coder's prompt.
    pub fn prompt(&self) -> String {
        match &self.checks {
            Checks::Stdio { .. } => coder_prompt(&self.statement),
            Checks::Asserts { .. } => format!(
                "{}\n\nFirst think about the problem, then write the Python function it asks for in a ```python block.",
                self.statement
            ),
            Checks::Completion { prompt, .. } => format!(
                "Complete this Python function. Answer with the whole function in a ```python block.\n\n```python\n{prompt}```"
            ),
        }
    }

    /// The program of a coder's answer. A completion problem puts the answer after its
    /// prompt: a fenced block when there is one, else the answer as it stands (an indented body,
    /// as HumanEval's completions are).
    pub fn program(&self, answer: &str) -> String {
        match &self.checks {
            Checks::Completion { prompt, .. } => {
                let code = match super::fenced_blocks(answer)
                    .into_iter()
                    .rev()
                    .find(|(i, _)| i.is_empty() || i.eq_ignore_ascii_case("python") || i == "py")
                {
                    Some((_, b)) => format!("\n{b}"),
                    None => answer.to_string(),
                };
                format!("{prompt}{code}")
            }
            _ => extract_program(answer).unwrap_or_default(),
        }
    }

    /// The ground-truth tests as unit tests.
    pub fn unit_tests(&self) -> Vec<UnitTest> {
        match &self.checks {
            Checks::Stdio { tests } => tests.iter().cloned().map(UnitTest::Io).collect(),
            Checks::Asserts { asserts, setup } => asserts
                .iter()
                .map(|a| UnitTest::Assert {
                    setup: setup.clone(),
                    assert: a.clone(),
                })
                .collect(),
            Checks::Completion {
                test, entry_point, ..
            } => vec![UnitTest::Check {
                test: test.clone(),
                entry_point: entry_point.clone(),
            }],
        }
    }

    /// The test writer's prompt: stdio tests in the reference's format, or assert statements.
    pub fn tester_prompt(&self) -> String {
        if self.is_stdio() {
            tester_prompt(&self.statement)
        } else {
            format!(
                "{}\n\nWrite unit tests for this problem as Python assert statements that call the function, one per line, in a ```python block.",
                self.statement
            )
        }
    }

    /// The tests of a test writer's answer, in order (`None`: an unparseable block).
    pub fn parse_generated(&self, answer: &str) -> Vec<Option<UnitTest>> {
        match &self.checks {
            Checks::Stdio { .. } => super::parse_tests(answer)
                .into_iter()
                .map(|t| t.map(UnitTest::Io))
                .collect(),
            Checks::Asserts { setup, .. } => parse_asserts(answer)
                .into_iter()
                .map(|a| {
                    Some(UnitTest::Assert {
                        setup: setup.clone(),
                        assert: a,
                    })
                })
                .collect(),
            Checks::Completion { .. } => parse_asserts(answer)
                .into_iter()
                .map(|a| {
                    Some(UnitTest::Assert {
                        setup: String::new(),
                        assert: a,
                    })
                })
                .collect(),
        }
    }

    /// The sandbox this problem's tests run in: `sb`'s, its wall-clock limit lowered to the
    /// problem's time limit.
    pub fn sandbox(&self, sb: &Sandbox) -> Sandbox {
        match self.time_limit {
            Some(t) if t < sb.limits().wall_secs => sb.with_wall_secs(t),
            _ => sb.clone(),
        }
    }

    /// Every program on every unit test, in parallel: `verdicts[program][test]`.
    pub fn run(
        &self,
        sb: &Sandbox,
        programs: &[String],
        tests: &[UnitTest],
    ) -> Result<Vec<Vec<Verdict>>, SandboxError> {
        run_units(&self.sandbox(sb), programs, tests)
    }
}

/// Every program on every unit test, in parallel: `verdicts[program][test]`.
pub fn run_units(
    sb: &Sandbox,
    programs: &[String],
    tests: &[UnitTest],
) -> Result<Vec<Vec<Verdict>>, SandboxError> {
    if tests.is_empty() {
        return Ok(vec![Vec::new(); programs.len()]);
    }
    let jobs: Vec<(usize, usize)> = (0..programs.len())
        .flat_map(|p| (0..tests.len()).map(move |t| (p, t)))
        .collect();
    let results: Vec<Verdict> = jobs
        .par_iter()
        .map(|&(p, t)| tests[t].verdict_of(sb, &programs[p]))
        .collect::<Result<_, SandboxError>>()?;
    Ok(results
        .chunks(tests.len())
        .map(<[Verdict]>::to_vec)
        .collect())
}

/// Writes problems as the reference's JSON list (stdio problems only).
pub fn to_reference(problems: &[FileProblem]) -> Result<String, String> {
    let rows = problems
        .iter()
        .map(|p| match &p.checks {
            Checks::Stdio { tests } => Ok(serde_json::json!({
                "id": p.id,
                "question": p.statement,
                "test_input": tests.iter().map(|t| &t.input).collect::<Vec<_>>(),
                "test_output": tests.iter().map(|t| &t.output).collect::<Vec<_>>(),
                "test_method": "stdio",
                "test_time_limit": p.time_limit.unwrap_or(2.0),
            })),
            _ => Err(format!("{}: not a stdio problem", p.id)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "problems_tests.rs"]
mod tests;
