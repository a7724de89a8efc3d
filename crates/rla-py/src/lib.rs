//! # rla-py — RLAnything from Python
//!
//! The extension module `rlanything._native`, which the Python package `rlanything` (under
//! `python/` at the repository's root) wraps with documented, typed functions:
//!
//! | submodule | what it holds |
//! |---|---|
//! | [`household`] | the ALFWorld-compatible household: one game, and a batch stepped on Rust threads |
//! | [`rules`] | the paper's rules from `rla-core`: step rewards, advantages, consistency, bands, adaptation, Theorem 1 |
//! | [`sandbox`] | the coding setting's sandbox: programs run under limits, with verdicts on tests |
//! | [`desktop`] | the GUI setting: a spreadsheet task, its accessibility tree, actions and OSWorld's evaluator |
//! | `cli` | the `rlanything` command line, the same program as the Rust binary (the package's `rlanything` console script) |
//!
//! Structured values (task specs, run results) cross the boundary as JSON text, which the Python
//! side turns into dictionaries; lists of numbers and strings cross as Python lists.

use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;

/// mimalloc for the extension's own allocations: households stepped on rayon's threads allocate
/// their text there and free it on others, which the system allocator serialises.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod desktop;
mod household;
mod rules;
mod sandbox;

/// A `ValueError` carrying an error's message.
pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// An environment error as Python's exception: a missing file is `FileNotFoundError`, anything
/// else (a malformed file, a bad field) `ValueError`; both name the file and the field.
pub(crate) fn env_error(e: rla_env::EnvError) -> PyErr {
    match &e {
        rla_env::EnvError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        _ => value_error(e),
    }
}

/// A spec given as a dictionary or as JSON text, as JSON text.
pub(crate) fn json_text(spec: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = spec.extract::<String>() {
        return Ok(s);
    }
    let json = spec.py().import("json")?;
    json.call_method1("dumps", (spec,))?.extract()
}

/// A value (a task spec) given as a dictionary or as JSON text; errors start with `what`.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    v: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<T> {
    serde_json::from_str(&json_text(v)?).map_err(|e| value_error(format!("{what}: {e}")))
}

/// JSON text as Python values (dictionaries, lists, numbers, strings).
pub(crate) fn json_value<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// Runs the `rlanything` command line on `argv` (the program's name first) and returns its exit
/// status; the Python package's `rlanything` console script calls it with `sys.argv`.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| rlanything::main_with(argv))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    household::register(m)?;
    rules::register(m)?;
    sandbox::register(m)?;
    desktop::register(m)?;
    Ok(())
}
