//! A run's live tracking (`[logging]`): every scalar of each iteration's metrics record — all
//! that [`IterMetrics`] serialises, so new metrics follow without a list to keep — to TensorBoard
//! event files in the run's `tensorboard/` folder (with the report's table as text) and to
//! Weights & Biases through its Python client ([`rla_track`]).
//!
//! A resumed run continues the same curves with one point an iteration: the event file is
//! rebuilt from the state's kept metrics when the run opens (a redone iteration is not a second
//! point), and the W&B run keeps its id and the last iteration it logged in the run's
//! `wandb.json`, so only later iterations are logged.
//!
//! Neither tracker stops or holds up the run: a TensorBoard write that fails (a full disk) is a
//! warning, and the W&B client is waited for only within `start_timeout_s` and
//! `finish_timeout_s`, dropped with a warning when it does not answer ([`rla_track::wandb`]).

use crate::config::{RunConfig, WandbConfig};
use crate::run::IterMetrics;
use anyhow::{Context, Result};
use rla_track::tensorboard::{EventWriter, KeptStep};
use rla_track::wandb::{Bounds, Wandb, WandbOptions};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// Checks, before any work, that the trackers can start: W&B's Python has its client (its
/// import answering within `logging.wandb.start_timeout_s`).
pub fn check(cfg: &RunConfig) -> Result<()> {
    use std::io::Read;
    let Some(w) = &cfg.logging.wandb else {
        return Ok(());
    };
    let mut child = std::process::Command::new(&w.python)
        .args(["-c", "import wandb"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("logging.wandb.python = {:?}: cannot run it", w.python))?;
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let by = std::time::Instant::now() + Duration::from_secs_f64(w.start_timeout_s);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() >= by {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!(
                "logging.wandb: `{} -c \"import wandb\"` did not finish within {} s \
                 (logging.wandb.start_timeout_s)",
                w.python,
                w.start_timeout_s
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        let err = reader.join().unwrap_or_default();
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
            match EventWriter::rebuild(&dir.join("tensorboard"), &steps) {
                Ok(w) => t.tb = Some(w),
                Err(e) => {
                    tracing::warn!("logging.tensorboard: {e}; the run goes on without TensorBoard")
                }
            }
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
        let bounds = Bounds {
            start: Duration::from_secs_f64(w.start_timeout_s),
            finish: Duration::from_secs_f64(w.finish_timeout_s),
            ..Bounds::default()
        };
        let client =
            Wandb::start_within(&w.python, dir, &opts, &config, bounds).context("logging.wandb")?;
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
                if !w.client.log(step, &record(m)?) {
                    // the client is gone (warned): a resumed run logs from here
                    return Ok(());
                }
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
            if let Err(e) = tb.append(m.iteration as i64, &record(m)?, &texts(kept)) {
                tracing::warn!(
                    iteration = m.iteration,
                    "logging.tensorboard: {e}; the step is not in the event file"
                );
            }
        }
        self.catch_up(kept)
    }

    /// Ends the W&B run (its files complete), waiting for the client at most
    /// `logging.wandb.finish_timeout_s`.
    pub fn finish(self) -> Result<()> {
        if let Some(w) = self.wandb {
            w.client.finish();
        }
        Ok(())
    }
}
