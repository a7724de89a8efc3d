//! The checker of assert-checked programs (the reference's `test_method = "function"`, MBPP's
//! asserts, HumanEval's `check`, a test writer's asserts): the harness, not the program, decides
//! a pass.
//!
//! A check is two runs of the sandbox side by side ([`Sandbox::run_pair`]), each with its own
//! folder, uid, namespaces and limits:
//!
//! * the **harness** (`checker/harness.py`) holds the tests, which reach it on its standard
//!   input and never lie in a file. It runs them in its own interpreter; every name they use and
//!   do not define is the program's, a `Remote` that asks the runner. Values come back as plain
//!   data (`checker/wire.py`: `None`, `bool`, `int`, `float`, `complex`, `str`, `bytes` and
//!   lists, tuples, sets, frozensets and dicts of them, by exact type) and are compared in the
//!   harness, so no object of the program answers a comparison: an object that is not plain data
//!   can be called, its attributes read and its items listed, but comparing it, hashing it or
//!   taking it as true fails the test. A standard module the program imported and the tests use
//!   is the harness's own copy. The harness writes its report only after every check ran;
//! * the **runner** (`checker/runner.py`) loads the program and answers the harness's requests
//!   (a name, a call, an attribute, the items of an iterable). It sees the names the tests use
//!   and the arguments they pass, never an expected value.
//!
//! The verdict is read from the harness's report alone. Whatever the program does — ending its
//! process early (`sys.exit`, `os._exit`, `exec`, an exit hook, a thread that exits), answering
//! out of protocol, monkeypatching built-ins, returning an object whose `__eq__` always says yes
//! — it cannot produce that report: an absent or cut-short report is a failure.

use super::sandbox::{RunResult, Sandbox, SandboxError, Status};
use super::Verdict;

const WIRE: &str = include_str!("checker/wire.py");
const HARNESS: &str = include_str!("checker/harness.py");
const RUNNER: &str = include_str!("checker/runner.py");

/// The tests of one check.
#[derive(Debug, Clone, Copy)]
pub enum Checked<'a> {
    /// Statements (asserts) run after `setup`.
    Statements {
        /// Code run first, on the tests' side (MBPP's `test_setup_code`).
        setup: &'a str,
        /// The statements.
        test: &'a str,
    },
    /// HumanEval's: `test` defines `check`, called on the program's `entry_point`.
    Check {
        /// The check function's code.
        test: &'a str,
        /// The function under test.
        entry_point: &'a str,
    },
}

/// The harness's source.
pub fn harness_source() -> String {
    format!("{WIRE}\n{HARNESS}")
}

/// The runner's source with `program` in it (as a string the runner compiles).
pub fn runner_source(program: &str) -> String {
    let literal = serde_json::to_string(program).expect("a string serialises");
    format!("{WIRE}\nPROGRAM = {literal}\n{RUNNER}")
}

/// What the harness reads on its standard input.
pub fn payload(tests: Checked<'_>) -> Vec<u8> {
    let v = match tests {
        Checked::Statements { setup, test } => serde_json::json!({
            "kind": "statements", "setup": setup, "test": test, "entry_point": "",
        }),
        Checked::Check { test, entry_point } => serde_json::json!({
            "kind": "check", "setup": "", "test": test, "entry_point": entry_point,
        }),
    };
    serde_json::to_vec(&v).expect("JSON serialises")
}

/// Checks `program` against `tests`.
pub fn check(sb: &Sandbox, program: &str, tests: Checked<'_>) -> Result<Verdict, SandboxError> {
    let (harness, runner) =
        sb.run_pair(&harness_source(), &payload(tests), &runner_source(program))?;
    Ok(match verdict(&harness) {
        // the program's process ended before it answered: by a limit, when one ended it
        Verdict::Crash => match runner.status {
            Status::Timeout => Verdict::Timeout,
            Status::Memory => Verdict::Memory,
            Status::OutputLimit => Verdict::OutputLimit,
            _ => Verdict::Crash,
        },
        v => v,
    })
}

/// The verdict of a harness's run: a pass only from a whole report that says so.
pub fn verdict(harness: &RunResult) -> Verdict {
    match harness.status {
        Status::Exited => {}
        Status::Timeout => return Verdict::Timeout,
        Status::Memory => return Verdict::Memory,
        Status::OutputLimit => return Verdict::OutputLimit,
        Status::Crash => return Verdict::Crash,
    }
    let Some(line) = harness.stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Verdict::Crash;
    };
    let Ok(serde_json::Value::Object(report)) = serde_json::from_str(line) else {
        return Verdict::Crash;
    };
    if report.get("rla_check") != Some(&serde_json::Value::from(1)) {
        return Verdict::Crash;
    }
    match (
        report.get("pass").and_then(serde_json::Value::as_bool),
        report.get("why").and_then(serde_json::Value::as_str),
    ) {
        (Some(true), _) => Verdict::Pass,
        (_, Some("ended")) => Verdict::Crash,
        (_, Some("memory")) => Verdict::Memory,
        _ => Verdict::Fail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: Status, stdout: &str) -> RunResult {
        RunResult {
            status,
            code: Some(0),
            signal: None,
            stdout: stdout.into(),
            stderr: String::new(),
            secs: 0.0,
        }
    }

    #[test]
    fn only_a_whole_report_of_a_pass_passes() {
        let pass = "{\"pass\": true, \"why\": \"\", \"rla_check\": 1}\n";
        assert_eq!(verdict(&result(Status::Exited, pass)), Verdict::Pass);
        // an empty, cut-short or foreign report
        for out in [
            "",
            "{\"pass\": true, \"why\": \"\", \"rla_ch",
            "{\"pass\": true}",
            "{\"pass\": true, \"rla_check\": 2}",
            "true",
        ] {
            assert_eq!(
                verdict(&result(Status::Exited, out)),
                Verdict::Crash,
                "{out}"
            );
        }
        // a report of a pass from a run that did not end normally
        assert_eq!(verdict(&result(Status::Timeout, pass)), Verdict::Timeout);
        assert_eq!(verdict(&result(Status::Crash, pass)), Verdict::Crash);
        let failed = "{\"pass\": false, \"why\": \"failed\", \"rla_check\": 1}";
        assert_eq!(verdict(&result(Status::Exited, failed)), Verdict::Fail);
        let ended = "{\"pass\": false, \"why\": \"ended\", \"rla_check\": 1}";
        assert_eq!(verdict(&result(Status::Exited, ended)), Verdict::Crash);
    }

    #[test]
    fn the_program_lies_in_the_runner_as_a_string() {
        let src = runner_source("print(\"a\\nb\")\n# \u{2028} ü \\ \"\"\" '''");
        let line = src.lines().find(|l| l.starts_with("PROGRAM = ")).unwrap();
        let literal = line.trim_start_matches("PROGRAM = ");
        let back: String = serde_json::from_str(literal).unwrap();
        assert_eq!(back, "print(\"a\\nb\")\n# \u{2028} ü \\ \"\"\" '''");
    }
}
