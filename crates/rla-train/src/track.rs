//! A run's live tracking (`[logging]`): every scalar of each iteration's metrics record — all
//! that [`IterMetrics`] serialises, so new metrics follow without a list to keep — to TensorBoard
//! event files in the run's `tensorboard/` folder (with the report's table as text) and to
//! Weights & Biases through its Python client ([`rla_track`]).
//!
//! A resumed run continues the same curves with one point an iteration: the event file is
//! rebuilt from the state's kept metrics when the run opens (a redone iteration is not a second
//! point), and the W&B run keeps its id and the last iteration it logged in the run's
//! `wandb.json`, so only later iterations are logged.

use crate::config::{RunConfig, WandbConfig};
use crate::run::IterMetrics;
use anyhow::{Context, Result};
use rla_track::tensorboard::{EventWriter, KeptStep};
use rla_track::wandb::{Wandb, WandbOptions};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The text tag of the report's table.
pub const REPORT_TAG: &str = "report";

/// The run's W&B id and the last iteration logged to it (`RUN/wandb.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WandbState {
    id: String,
    logged: i64,
}

struct WandbRun {
    client: Wandb,
    file: PathBuf,
    state: WandbState,
}

/// The trackers a run's config asks for.
#[derive(Default)]
pub struct Tracker {
    tb: Option<EventWriter>,
    wandb: Option<WandbRun>,
}

/// Checks, before any work, that the trackers can start: W&B's Python has its client.
pub fn check(cfg: &RunConfig) -> Result<()> {
    let Some(w) = &cfg.logging.wandb else {
        return Ok(());
    };
    let out = std::process::Command::new(&w.python)
        .args(["-c", "import wandb"])
        .output()
        .with_context(|| format!("logging.wandb.python = {:?}: cannot run it", w.python))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        anyhow::bail!(
            "logging.wandb: the Python {:?} has no wandb client (install it with `{} -m pip \
             install wandb`, or name another Python with logging.wandb.python): {}",
            w.python,
            w.python,
            err.trim().lines().last().unwrap_or("")
        );
    }
    Ok(())
}

fn record(m: &IterMetrics) -> Result<serde_json::Value> {
    Ok(serde_json::to_value(m)?)
}

/// A step's text: the report's table through it.
fn texts(kept: &[IterMetrics]) -> Vec<(String, String)> {
    vec![(REPORT_TAG.to_string(), crate::report::table(kept))]
}

fn new_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 40);
    format!("rla{mixed:013x}")
}

impl Tracker {
    /// Opens the trackers of `cfg` for the run in `dir` whose kept metrics are `kept`: the event
    /// file is written anew from them, and W&B is started with the run's id and given the kept
    /// iterations it has not logged yet.
    pub fn open(cfg: &RunConfig, dir: &Path, kept: &[IterMetrics]) -> Result<Tracker> {
        let mut t = Tracker::default();
        if cfg.logging.tensorboard {
            let steps: Vec<KeptStep> = kept
                .iter()
                .enumerate()
                .map(|(i, m)| Ok((m.iteration as i64, record(m)?, texts(&kept[..=i]))))
                .collect::<Result<_>>()?;
            t.tb = Some(
                EventWriter::rebuild(&dir.join("tensorboard"), &steps)
                    .context("logging.tensorboard")?,
            );
        }
        if let Some(w) = &cfg.logging.wandb {
            t.wandb = Some(Self::start_wandb(cfg, w, dir)?);
            t.catch_up(kept)?;
        }
        Ok(t)
    }

    fn start_wandb(cfg: &RunConfig, w: &WandbConfig, dir: &Path) -> Result<WandbRun> {
        let file = dir.join("wandb.json");
        let state = match rla_core::file::read_to_string(&file) {
            Ok(text) => serde_json::from_str(&text)
                .with_context(|| format!("{} is not a W&B run record", file.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => WandbState {
                id: new_id(),
                logged: -1,
            },
            Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
        };
        crate::run::write_atomic(&file, &serde_json::to_string(&state)?)?;
        let opts = WandbOptions {
            project: w.project.clone(),
            mode: w.mode.clone(),
            id: state.id.clone(),
            name: w.name.clone(),
        };
        let config = serde_json::to_value(cfg)?;
        let client = Wandb::start(&w.python, dir, &opts, &config).context("logging.wandb")?;
        Ok(WandbRun {
            client,
            file,
            state,
        })
    }

    /// Logs to W&B the kept iterations after the last it logged.
    fn catch_up(&mut self, kept: &[IterMetrics]) -> Result<()> {
        let Some(w) = &mut self.wandb else {
            return Ok(());
        };
        for m in kept {
            let step = m.iteration as i64;
            if step > w.state.logged {
                w.client.log(step, &record(m)?).context("logging.wandb")?;
                w.state.logged = step;
                crate::run::write_atomic(&w.file, &serde_json::to_string(&w.state)?)?;
            }
        }
        Ok(())
    }

    /// Records the last of the run's kept metrics (just checkpointed).
    pub fn push(&mut self, kept: &[IterMetrics]) -> Result<()> {
        let Some(m) = kept.last() else {
            return Ok(());
        };
        if let Some(tb) = &mut self.tb {
            tb.append(m.iteration as i64, &record(m)?, &texts(kept))
                .context("logging.tensorboard")?;
        }
        self.catch_up(kept)
    }

    /// Ends the W&B run (its files complete).
    pub fn finish(self) -> Result<()> {
        if let Some(w) = self.wandb {
            w.client.finish().context("logging.wandb")?;
        }
        Ok(())
    }
}
