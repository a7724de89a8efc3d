//! The coding setting's sandbox: Python programs run under limits, judged on tests.

use crate::value_error;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rla_env::code::problems::{run_units, UnitTest};
use rla_env::code::sandbox::{find_python, Limits, RunResult, Sandbox, Status};
use rla_env::code::{extract_program, parse_tests, run_matrix, TestCase};
use std::path::PathBuf;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySandbox>()?;
    m.add_function(wrap_pyfunction!(program_of_answer, m)?)?;
    m.add_function(wrap_pyfunction!(tests_of_answer, m)?)?;
    Ok(())
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Exited => "exited",
        Status::Timeout => "timeout",
        Status::Memory => "memory",
        Status::Crash => "crash",
        Status::OutputLimit => "output-limit",
    }
}

fn result_dict<'py>(py: Python<'py>, r: RunResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("status", status_name(r.status))?;
    d.set_item("code", r.code)?;
    d.set_item("signal", r.signal)?;
    d.set_item("stdout", r.stdout)?;
    d.set_item("stderr", r.stderr)?;
    d.set_item("secs", r.secs)?;
    Ok(d)
}

/// Runs Python programs under limits: their own user where the process runs as root, fresh
/// network and PID namespaces where the kernel allows, Landlock where it exists, and limits on
/// time, memory, processes, output and file size. Runs release the GIL, so threads may run
/// programs at once.
#[pyclass(module = "rlanything._native", name = "Sandbox")]
pub struct PySandbox {
    sandbox: Sandbox,
}

#[pymethods]
impl PySandbox {
    #[new]
    #[pyo3(signature = (*, python = None, wall_secs = 5.0, cpu_secs = 4, memory_bytes = 512 << 20,
                        processes = 16, output_bytes = 1 << 20, file_bytes = 16 << 20))]
    fn new(
        python: Option<PathBuf>,
        wall_secs: f64,
        cpu_secs: u64,
        memory_bytes: u64,
        processes: u64,
        output_bytes: usize,
        file_bytes: u64,
    ) -> PyResult<Self> {
        let limits = Limits {
            wall_secs,
            cpu_secs,
            memory_bytes,
            processes,
            output_bytes,
            file_bytes,
        };
        let python = match python {
            Some(p) => p,
            None => find_python().map_err(value_error)?,
        };
        let sandbox = Sandbox::new(python, limits).map_err(value_error)?;
        Ok(PySandbox { sandbox })
    }

    /// Runs one program with `stdin` as its input: a dictionary with `status` ("exited",
    /// "timeout", "memory", "crash" or "output-limit"), `code`, `signal`, `stdout`, `stderr`
    /// and `secs`.
    #[pyo3(signature = (source, stdin = ""))]
    fn run<'py>(&self, py: Python<'py>, source: &str, stdin: &str) -> PyResult<Bound<'py, PyDict>> {
        let r = py
            .detach(|| self.sandbox.run_python(source, stdin.as_bytes()))
            .map_err(value_error)?;
        result_dict(py, r)
    }

    /// Runs every program on every `(input, expected output)` test in parallel:
    /// `verdicts[program][test]`, each "pass", "fail", "timeout", "memory", "crash" or
    /// "output-limit". Outputs are compared token by token.
    fn verdicts(
        &self,
        py: Python<'_>,
        programs: Vec<String>,
        tests: Vec<(String, String)>,
    ) -> PyResult<Vec<Vec<&'static str>>> {
        let tests: Vec<TestCase> = tests
            .into_iter()
            .map(|(input, output)| TestCase { input, output })
            .collect();
        let m = py
            .detach(|| run_matrix(&self.sandbox, &programs, &tests))
            .map_err(value_error)?;
        Ok(m.into_iter()
            .map(|row| row.into_iter().map(|v| v.name()).collect())
            .collect())
    }

    /// Runs every program on every assert statement (after `setup`) in parallel, each check
    /// decided by the harness that holds the tests, apart from the program:
    /// `verdicts[program][assert]`, as in `verdicts`. With `entry_point`, each "assert" is
    /// instead HumanEval's `check` code, called on the program's `entry_point`.
    #[pyo3(signature = (programs, asserts, setup = "", entry_point = None))]
    fn check_asserts(
        &self,
        py: Python<'_>,
        programs: Vec<String>,
        asserts: Vec<String>,
        setup: &str,
        entry_point: Option<String>,
    ) -> PyResult<Vec<Vec<&'static str>>> {
        let tests: Vec<UnitTest> = asserts
            .into_iter()
            .map(|a| match &entry_point {
                Some(e) => UnitTest::Check {
                    test: a,
                    entry_point: e.clone(),
                },
                None => UnitTest::Assert {
                    setup: setup.to_string(),
                    assert: a,
                },
            })
            .collect();
        let m = py
            .detach(|| run_units(&self.sandbox, &programs, &tests))
            .map_err(value_error)?;
        Ok(m.into_iter()
            .map(|row| row.into_iter().map(|v| v.name()).collect())
            .collect())
    }

    /// The limits in force, by name.
    #[getter]
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = self.sandbox.limits();
        let d = PyDict::new(py);
        d.set_item("wall_secs", l.wall_secs)?;
        d.set_item("cpu_secs", l.cpu_secs)?;
        d.set_item("memory_bytes", l.memory_bytes)?;
        d.set_item("processes", l.processes)?;
        d.set_item("output_bytes", l.output_bytes)?;
        d.set_item("file_bytes", l.file_bytes)?;
        Ok(d)
    }

    /// What isolation applies on this machine.
    #[getter]
    fn isolation<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let i = self.sandbox.isolation();
        let d = PyDict::new(py);
        d.set_item("own_uid", i.own_uid)?;
        d.set_item("network_namespace", i.network_namespace)?;
        d.set_item("pid_namespace", i.pid_namespace)?;
        d.set_item("landlock_abi", i.landlock_abi)?;
        d.set_item("unix_sockets_denied", i.unix_sockets_denied)?;
        Ok(d)
    }
}

/// The program in a coder's answer: the last fenced `python` (or untagged) block, else the
/// whole answer when it has no fences; `None` when nothing looks like a program.
#[pyfunction]
fn program_of_answer(answer: &str) -> Option<String> {
    extract_program(answer)
}

/// The tests of a test writer's answer in the `**Test Input:**` / `**Test Output:**` format:
/// `(input, output)` pairs, `None` for a block that could not be parsed.
#[pyfunction]
fn tests_of_answer(answer: &str) -> Vec<Option<(String, String)>> {
    parse_tests(answer)
        .into_iter()
        .map(|t| t.map(|t| (t.input, t.output)))
        .collect()
}
