//! Replaying traces recorded from ALFWorld's engine, to check this household against it.
//!
//! A trace is JSON Lines: line 0 `{"initial", "admissible", "won"}`, then one
//! `{"command", "feedback", "admissible", "won", "done"}` per step.

use super::game::{GameFile, HouseholdGame};
use crate::EnvError;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    initial: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    feedback: Option<String>,
    admissible: Vec<String>,
    won: bool,
    #[serde(default)]
    done: Option<bool>,
}

/// One difference between the engine's trace and this household.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The trace file.
    pub trace: PathBuf,
    /// 0 for the initial observation, then the step number.
    pub step: usize,
    /// What differed (`feedback`, `admissible`, `won`, `done`).
    pub field: String,
    /// What the engine recorded.
    pub expected: String,
    /// What this household produced.
    pub actual: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} step {}: {} differs\n  expected: {}\n  actual:   {}",
            self.trace.display(),
            self.step,
            self.field,
            self.expected,
            self.actual
        )
    }
}

/// The result of replaying one trace.
#[derive(Debug, Clone)]
pub struct TraceReport {
    /// The trace file, or the game file when the game itself could not be loaded.
    pub trace: PathBuf,
    /// Steps replayed.
    pub steps: usize,
    /// Differences found (empty when the trace replays exactly).
    pub mismatches: Vec<Mismatch>,
    /// Why the trace (or its game) could not be replayed; the message names the file.
    pub error: Option<String>,
}

impl TraceReport {
    /// Whether the trace replayed exactly.
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.mismatches.is_empty()
    }

    fn failed(trace: &Path, error: String) -> TraceReport {
        TraceReport {
            trace: trace.to_path_buf(),
            steps: 0,
            mismatches: Vec::new(),
            error: Some(error),
        }
    }
}

/// Why [`replay_dir`] could not replay anything.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The folder could not be read. (Not a `source`: its message already says why, so an
    /// error chain would repeat it.)
    #[error("{0}")]
    Env(EnvError),
    /// The folder holds no traces to replay.
    #[error("no traces found in {0} (expected game folders with game.tw-pddl and trace-*.jsonl)")]
    NoTraces(String),
}

/// Describes how two command lists differ: the commands missing or extra (counting repeats),
/// or, when both hold the same commands, where their order first differs.
pub fn diff_list(expected: &[String], actual: &[String]) -> String {
    let count = |l: &[String], c: &String| l.iter().filter(|x| *x == c).count();
    let mut seen: Vec<&String> = Vec::new();
    let (mut missing, mut extra, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    for c in expected.iter().chain(actual) {
        if seen.contains(&c) {
            continue;
        }
        seen.push(c);
        let (e, a) = (count(expected, c), count(actual, c));
        let times = |n: usize| {
            if n > 1 {
                format!("{c:?} ({n} times)")
            } else {
                format!("{c:?}")
            }
        };
        match (e, a) {
            (_, 0) => missing.push(times(e)),
            (0, _) => extra.push(times(a)),
            (e, a) if e != a => counts.push(format!("{c:?} listed {a} times, expected {e}")),
            _ => {}
        }
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("missing [{}]", missing.join(", ")));
    }
    if !extra.is_empty() {
        parts.push(format!("extra [{}]", extra.join(", ")));
    }
    parts.extend(counts);
    if !parts.is_empty() {
        return parts.join("; ");
    }
    match expected.iter().zip(actual).position(|(e, a)| e != a) {
        Some(k) => format!(
            "same commands in a different order: first difference at position {}: expected {:?}, got {:?}",
            k + 1,
            expected[k],
            actual[k]
        ),
        None => "same commands".to_string(),
    }
}

/// Replays one trace file against a loaded game.
pub fn replay_trace(game: &GameFile, trace: &Path) -> Result<TraceReport, EnvError> {
    let text = EnvError::read(trace)?;
    let mut env = HouseholdGame::new(game.world.clone());
    let mut mismatches = Vec::new();
    let mut steps = 0;
    let mut push = |step: usize, field: &str, e: String, a: String| {
        mismatches.push(Mismatch {
            trace: trace.to_path_buf(),
            step,
            field: field.to_string(),
            expected: e,
            actual: a,
        })
    };
    let mut first = true;
    for (i, raw) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = format!("line {}", i + 1);
        let line: Line =
            serde_json::from_str(raw).map_err(|e| EnvError::invalid(trace, &at, e.to_string()))?;
        let (feedback, won, done) = if first {
            first = false;
            let Some(init) = &line.initial else {
                return Err(EnvError::invalid(
                    trace,
                    at,
                    "the first line must have 'initial'",
                ));
            };
            let obs = env.reset();
            if &obs != init {
                push(0, "initial", format!("{init:?}"), format!("{obs:?}"));
            }
            (None, env.won(), None)
        } else {
            let cmd = line
                .command
                .as_deref()
                .ok_or_else(|| EnvError::invalid(trace, at, "missing 'command'"))?;
            steps += 1;
            let s = env.step(cmd);
            (Some(s.feedback), s.won, Some(s.done))
        };
        if let (Some(f), Some(expected)) = (&feedback, &line.feedback) {
            if f != expected {
                push(steps, "feedback", format!("{expected:?}"), format!("{f:?}"));
            }
        }
        let adm = env.admissible();
        if adm != line.admissible.as_slice() {
            let d = diff_list(&line.admissible, adm);
            push(
                steps,
                "admissible",
                format!("{} commands", line.admissible.len()),
                format!("{} commands: {d}", adm.len()),
            );
        }
        if won != line.won {
            push(steps, "won", line.won.to_string(), won.to_string());
        }
        if let (Some(d), Some(expected)) = (done, line.done) {
            if d != expected {
                push(steps, "done", expected.to_string(), d.to_string());
            }
        }
    }
    if first {
        return Err(EnvError::invalid(trace, "line 1", "the trace is empty"));
    }
    Ok(TraceReport {
        trace: trace.to_path_buf(),
        steps,
        mismatches,
        error: None,
    })
}

fn list_dir(dir: &Path) -> Result<Vec<PathBuf>, EnvError> {
    let entries = std::fs::read_dir(dir).map_err(|source| EnvError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    Ok(paths)
}

/// Replays every `trace-*.jsonl` of every game folder under `dir` (one folder per game, each
/// with `game.tw-pddl`; `dir` itself may be such a folder).
///
/// A game that cannot be loaded, or a trace that cannot be read, is reported as one failed
/// [`TraceReport`] with its [`error`](TraceReport::error), and the others are still replayed.
/// It is an error when `dir` cannot be read or holds no traces at all.
pub fn replay_dir(dir: &Path) -> Result<Vec<TraceReport>, ReplayError> {
    let games: Vec<PathBuf> = if dir.join("game.tw-pddl").exists() {
        vec![dir.to_path_buf()]
    } else {
        list_dir(dir)
            .map_err(ReplayError::Env)?
            .into_iter()
            .filter(|p| p.join("game.tw-pddl").exists())
            .collect()
    };
    let mut reports = Vec::new();
    for g in games {
        let traces: Vec<PathBuf> = match list_dir(&g) {
            Ok(paths) => paths
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("trace-") && n.ends_with(".jsonl"))
                })
                .collect(),
            Err(e) => {
                reports.push(TraceReport::failed(&g, e.to_string()));
                continue;
            }
        };
        if traces.is_empty() {
            continue;
        }
        let game = match GameFile::load(&g) {
            Ok(game) => game,
            Err(e) => {
                reports.push(TraceReport::failed(&g.join("game.tw-pddl"), e.to_string()));
                continue;
            }
        };
        for t in traces {
            reports.push(
                replay_trace(&game, &t).unwrap_or_else(|e| TraceReport::failed(&t, e.to_string())),
            );
        }
    }
    if reports.is_empty() {
        return Err(ReplayError::NoTraces(dir.display().to_string()));
    }
    Ok(reports)
}
