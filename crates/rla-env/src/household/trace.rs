//! Replaying traces recorded from ALFWorld's engine, to check this household against it.
//!
//! A trace is JSON Lines: line 0 `{"initial", "admissible", "won"}`, then one
//! `{"command", "feedback", "admissible", "won", "done"}` per step.

use super::game::{GameFile, Household};
use crate::{EnvError, Environment};
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
    /// The trace file.
    pub trace: PathBuf,
    /// Steps replayed.
    pub steps: usize,
    /// Differences found (empty when the trace replays exactly).
    pub mismatches: Vec<Mismatch>,
}

fn diff_list(expected: &[String], actual: &[String]) -> String {
    let missing: Vec<&String> = expected.iter().filter(|c| !actual.contains(c)).collect();
    let extra: Vec<&String> = actual.iter().filter(|c| !expected.contains(c)).collect();
    format!("missing {missing:?}, extra {extra:?}")
}

/// Replays one trace file against a loaded game.
pub fn replay_trace(game: &GameFile, trace: &Path) -> Result<TraceReport, EnvError> {
    let text = EnvError::read(trace)?;
    let mut env = Household::new(game.world.clone());
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
    for (i, raw) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line: Line = serde_json::from_str(raw)
            .map_err(|e| EnvError::invalid(trace, format!("line {}", i + 1), e.to_string()))?;
        let (feedback, won, done) = if i == 0 {
            let Some(init) = &line.initial else {
                return Err(EnvError::invalid(
                    trace,
                    "line 1",
                    "the first line must have 'initial'",
                ));
            };
            let obs = env.reset();
            if &obs != init {
                push(0, "initial", format!("{init:?}"), format!("{obs:?}"));
            }
            (None, env.won(), None)
        } else {
            let cmd = line.command.as_deref().ok_or_else(|| {
                EnvError::invalid(trace, format!("line {}", i + 1), "missing 'command'")
            })?;
            steps += 1;
            let s = env.step(cmd);
            (Some(s.feedback), s.won, Some(s.done))
        };
        if let (Some(f), Some(expected)) = (&feedback, &line.feedback) {
            if f != expected {
                push(i, "feedback", format!("{expected:?}"), format!("{f:?}"));
            }
        }
        let adm = env.admissible();
        if adm != line.admissible.as_slice() {
            let d = diff_list(&line.admissible, adm);
            push(
                i,
                "admissible",
                format!("{} commands", line.admissible.len()),
                d,
            );
        }
        if won != line.won {
            push(i, "won", line.won.to_string(), won.to_string());
        }
        if let (Some(d), Some(expected)) = (done, line.done) {
            if d != expected {
                push(i, "done", expected.to_string(), d.to_string());
            }
        }
    }
    Ok(TraceReport {
        trace: trace.to_path_buf(),
        steps,
        mismatches,
    })
}

/// Replays every `trace-*.jsonl` of every game folder under `dir` (one folder per game, each
/// with `game.tw-pddl`; `dir` itself may be such a folder).
pub fn replay_dir(dir: &Path) -> Result<Vec<TraceReport>, EnvError> {
    let mut games: Vec<PathBuf> = Vec::new();
    if dir.join("game.tw-pddl").exists() {
        games.push(dir.to_path_buf());
    } else {
        let entries = std::fs::read_dir(dir).map_err(|source| EnvError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        for e in entries.flatten() {
            if e.path().join("game.tw-pddl").exists() {
                games.push(e.path());
            }
        }
    }
    if games.is_empty() {
        return Err(EnvError::invalid(
            dir,
            "folder",
            "no game folders (with game.tw-pddl) found",
        ));
    }
    games.sort();
    let mut reports = Vec::new();
    for g in games {
        let game = GameFile::load(&g)?;
        let mut traces: Vec<PathBuf> = std::fs::read_dir(&g)
            .map_err(|source| EnvError::Io {
                path: g.clone(),
                source,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("trace-") && n.ends_with(".jsonl"))
            })
            .collect();
        traces.sort();
        for t in traces {
            reports.push(replay_trace(&game, &t)?);
        }
    }
    Ok(reports)
}
