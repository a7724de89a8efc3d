//! `[logging]`: experiment tracking of a run's metrics.

use super::*;

/// Experiment tracking of a run's metrics (`[logging]`): every scalar of each iteration's
/// metrics record, as `metrics.jsonl` holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingConfig {
    /// TensorBoard event files in the run's `tensorboard/` folder, with the report's table as
    /// text.
    pub tensorboard: bool,
    /// Weights & Biases through its Python client (`wandb = { project = "…", mode = "offline" }`).
    pub wandb: Option<WandbConfig>,
}

/// A run's Weights & Biases logging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WandbConfig {
    /// The W&B project.
    pub project: String,
    /// `offline` (files in the run's `wandb/` folder, synced later with `wandb sync`) or
    /// `online`.
    #[serde(default = "WandbConfig::default_mode")]
    pub mode: String,
    /// The Python that has the `wandb` package (a path or a name on `PATH`).
    #[serde(default = "WandbConfig::default_python")]
    pub python: String,
    /// The run's display name (default: W&B's own).
    #[serde(default)]
    pub name: Option<String>,
    /// Seconds the run waits for the client's `wandb.init`; a client that has not answered by
    /// then is stopped with a warning, and the run goes on without W&B.
    #[serde(default = "WandbConfig::default_timeout_s")]
    pub start_timeout_s: f64,
    /// Seconds the run's end waits for the client's `wandb.finish`; a client that has not
    /// answered by then is stopped with a warning.
    #[serde(default = "WandbConfig::default_timeout_s")]
    pub finish_timeout_s: f64,
}

impl WandbConfig {
    fn default_mode() -> String {
        "offline".into()
    }
    fn default_python() -> String {
        "python3".into()
    }
    fn default_timeout_s() -> f64 {
        120.0
    }
}

impl LoggingConfig {
    /// Rejects impossible values, naming them.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(w) = &self.wandb {
            if w.project.trim().is_empty() {
                return Err("logging.wandb.project is empty: name the W&B project".into());
            }
            if !matches!(w.mode.as_str(), "offline" | "online") {
                return Err(format!(
                    "logging.wandb.mode = {:?}: use \"offline\" or \"online\"",
                    w.mode
                ));
            }
            if w.python.trim().is_empty() {
                return Err("logging.wandb.python is empty: name a Python with wandb".into());
            }
            for (key, s) in [
                ("start_timeout_s", w.start_timeout_s),
                ("finish_timeout_s", w.finish_timeout_s),
            ] {
                if !(s > 0.0 && s <= 86_400.0) {
                    return Err(format!(
                        "logging.wandb.{key} = {s}: a positive number of seconds, at most 86400"
                    ));
                }
            }
        }
        Ok(())
    }
}
