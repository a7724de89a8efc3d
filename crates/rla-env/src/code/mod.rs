//! The coding setting: problems with ground-truth tests, programs that read standard input and
//! print to standard output, model-written unit tests in the reference's
//! `**Test Input:**` / `**Test Output:**` format, all run in a [`sandbox::Sandbox`].

pub mod checker;
pub mod family;
pub mod humaneval;
pub mod problems;
pub mod sandbox;

use crate::EnvError;
use sandbox::{RunResult, Sandbox, SandboxError, Status};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The most records a problem file (any format, HumanEval's included) may hold; the
/// reference's largest file holds some thousands.
pub const MAX_RECORDS: usize = 1_000_000;

/// One unit test: an input and the expected output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// Standard input.
    pub input: String,
    /// Expected standard output.
    pub output: String,
}

/// A problem: a statement and ground-truth tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Problem {
    /// Identifier.
    pub id: String,
    /// The statement shown to the coder.
    pub statement: String,
    /// Ground-truth tests.
    pub tests: Vec<TestCase>,
    /// A reference solution, when known (needed to validate rewritten problems).
    #[serde(default)]
    pub solution: Option<String>,
    /// The problem this one was rewritten from.
    #[serde(default)]
    pub parent: Option<String>,
}

/// Loads problems from JSON lines (one [`Problem`] per line); errors name the line.
pub fn load_jsonl(path: &Path) -> Result<Vec<Problem>, EnvError> {
    let text = EnvError::read(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let p: Problem = serde_json::from_str(line)
            .map_err(|e| EnvError::invalid(path, format!("line {}", i + 1), e.to_string()))?;
        if p.tests.is_empty() {
            return Err(EnvError::invalid(
                path,
                format!("line {} ({})", i + 1, p.id),
                "a problem needs at least one test",
            ));
        }
        out.push(p);
    }
    Ok(out)
}

/// The verdict of one program on one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Exited normally with the expected output.
    Pass,
    /// Exited normally with another output.
    Fail,
    /// Past the time limit.
    Timeout,
    /// Out of memory.
    Memory,
    /// Crashed (non-zero exit, signal).
    Crash,
    /// Printed more than the output limit.
    OutputLimit,
}

impl Verdict {
    /// Whether the test passed.
    pub fn passed(self) -> bool {
        self == Verdict::Pass
    }

    /// Lower-case name, as printed by `code exec`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Timeout => "timeout",
            Verdict::Memory => "memory",
            Verdict::Crash => "crash",
            Verdict::OutputLimit => "output-limit",
        }
    }
}

/// Outputs are compared token by token (whitespace-insensitive), as competitive-programming
/// judges and the reference do.
pub fn outputs_match(got: &str, expected: &str) -> bool {
    got.split_whitespace().eq(expected.split_whitespace())
}

/// The verdict of a run against an expected output.
pub fn verdict(r: &RunResult, expected: &str) -> Verdict {
    match r.status {
        Status::Exited if outputs_match(&r.stdout, expected) => Verdict::Pass,
        Status::Exited => Verdict::Fail,
        Status::Timeout => Verdict::Timeout,
        Status::Memory => Verdict::Memory,
        Status::Crash => Verdict::Crash,
        Status::OutputLimit => Verdict::OutputLimit,
    }
}

/// Runs every program on every stdio test, in parallel. Returns `verdicts[program][test]`.
pub fn run_matrix(
    sb: &Sandbox,
    programs: &[String],
    tests: &[TestCase],
) -> Result<Vec<Vec<Verdict>>, SandboxError> {
    let units: Vec<problems::UnitTest> =
        tests.iter().cloned().map(problems::UnitTest::Io).collect();
    problems::run_units(sb, programs, &units)
}

fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    // (info string, body) of every ``` fenced block
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(a) = rest.find("```") {
        let after = &rest[a + 3..];
        let (info, body_start) = match after.find('\n') {
            Some(nl) => (after[..nl].trim().to_string(), nl + 1),
            None => break,
        };
        let body = &after[body_start..];
        let Some(end) = body.find("```") else { break };
        out.push((info, body[..end].to_string()));
        rest = &body[end + 3..];
    }
    out
}

/// The program in a coder's answer: the last fenced block tagged `python` (or untagged), else the
/// whole answer when it has no fences. `None` when nothing looks like a program.
pub fn extract_program(answer: &str) -> Option<String> {
    let blocks = fenced_blocks(answer);
    if blocks.is_empty() {
        let t = answer.trim();
        return (!t.is_empty()).then(|| t.to_string());
    }
    blocks
        .iter()
        .rev()
        .find(|(info, _)| info.is_empty() || info.eq_ignore_ascii_case("python") || info == "py")
        .map(|(_, b)| b.clone())
}

/// One model-written test as parsed: `None` when the block was unparseable.
pub type ParsedTest = Option<TestCase>;

/// Parses the tests of a test writer's answer: each `**Test Input:**` marker followed by a fenced
/// block, then `**Test Output:**` and a fenced block. Markers are matched case-insensitively and
/// with or without the asterisks; a block missing its input, output or fences is `None`
/// (unparseable), so it still counts, and is scored as the reference scores broken tests.
pub fn parse_tests(answer: &str) -> Vec<ParsedTest> {
    let lower = answer.to_ascii_lowercase();
    let starts: Vec<usize> = lower.match_indices("test input").map(|(i, _)| i).collect();
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(answer.len());
        let seg = &answer[s..end];
        let seg_l = &lower[s..end];
        let parsed = (|| {
            let o = seg_l.find("test output")?;
            let input = fenced_blocks(&seg[..o]).into_iter().next()?.1;
            let output = fenced_blocks(&seg[o..]).into_iter().next()?.1;
            Some(TestCase { input, output })
        })();
        out.push(parsed);
    }
    out
}

/// Formats tests in the reference's format (what a test writer is taught to write).
pub fn format_tests(tests: &[TestCase]) -> String {
    tests
        .iter()
        .map(|t| {
            format!(
                "**Test Input:**\n```input\n{}\n```\n**Test Output:**\n```output\n{}\n```\n",
                t.input.trim_end(),
                t.output.trim_end()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The coder's prompt, in the reference's words: think first, then a Python script that reads
/// with `input()` and prints with `print()`.
pub fn coder_prompt(statement: &str) -> String {
    format!(
        "{statement}\n\nFirst think about the problem, then write a Python program that reads its input with input() and prints its answer with print(), in a ```python block."
    )
}

/// The test writer's prompt.
pub fn tester_prompt(statement: &str) -> String {
    format!(
        "{statement}\n\nWrite unit tests for this problem. Give each one as **Test Input:** followed by a fenced block with the input, then **Test Output:** followed by a fenced block with the expected output."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reference_format_tolerantly() {
        let a = "Some thoughts.\n**Test Input:**\n```input\n1 2\n```\n**Test Output:**\n```output\n3\n```\n\ntest input: ```\n5 5\n```\nTest Output:\n```\n10\n```\n**Test Input:**\n```input\n7\n```\nno output here\n**Test Input:** ```input\nbroken";
        let t = parse_tests(a);
        assert_eq!(t.len(), 4);
        assert_eq!(
            t[0],
            Some(TestCase {
                input: "1 2\n".into(),
                output: "3\n".into()
            })
        );
        assert_eq!(t[1].as_ref().unwrap().output, "10\n");
        assert_eq!(t[2], None);
        assert_eq!(t[3], None);
        assert!(parse_tests("no tests at all").is_empty());
        // round trip
        let tc = vec![TestCase {
            input: "4\n".into(),
            output: "16".into(),
        }];
        assert_eq!(
            parse_tests(&format_tests(&tc)),
            vec![Some(TestCase {
                input: "4\n".into(),
                output: "16\n".into()
            })]
        );
    }

    #[test]
    fn extracts_the_last_python_block() {
        let a = "think\n```python\nprint(1)\n```\nthen\n```python\nprint(2)\n```\n```text\nx\n```";
        assert_eq!(extract_program(a).unwrap(), "print(2)\n");
        assert_eq!(extract_program("print(3)").unwrap(), "print(3)");
        assert_eq!(extract_program("   "), None);
        assert_eq!(extract_program("```text\nhello\n```"), None);
    }

    #[test]
    fn outputs_compare_by_tokens() {
        assert!(outputs_match("3\n", "3"));
        assert!(outputs_match("1  2\n3", "1 2 3\n"));
        assert!(!outputs_match("12", "1 2"));
        assert!(!outputs_match("", "0"));
    }
}
