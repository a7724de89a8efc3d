//! Weights & Biases through its official Python client: a small Python program beside the run
//! reads one JSON line a step on its standard input (`{"step": k, "scalars": {...}}`) and calls
//! `wandb.log(scalars, step=k)`; `{"finish": true}` ends the run. The client (`pip install wandb`,
//! which brings its own service binary) is needed only where a config asks for it.

use crate::{scalars, TrackError};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

/// The Python side, run with `python -c`.
pub const SIDECAR: &str = r#"
import json, os, sys
try:
    import wandb
except ImportError as e:
    print("error: the wandb Python package is not installed in this Python (pip install wandb): %s" % e, flush=True)
    sys.exit(3)
cfg = json.loads(sys.argv[1])
run = wandb.init(project=cfg["project"], mode=cfg["mode"], dir=cfg["dir"], id=cfg["id"],
                 resume="allow", name=cfg.get("name"), config=cfg.get("config") or {})
print("ready %s" % (run.dir if run is not None else ""), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("finish"):
        break
    wandb.log(msg["scalars"], step=int(msg["step"]))
    print("logged %d" % int(msg["step"]), flush=True)
wandb.finish()
print("finished", flush=True)
"#;

/// Where and how a run logs to Weights & Biases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WandbOptions {
    /// The W&B project.
    pub project: String,
    /// `offline` (files only, synced later with `wandb sync`) or `online`.
    pub mode: String,
    /// The run's id: the same for a resumed run, so its curves continue.
    pub id: String,
    /// A display name.
    pub name: Option<String>,
}

/// A running W&B client.
pub struct Wandb {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<std::process::ChildStdout>,
}

impl Wandb {
    /// Starts the client with `python` (a path or a name on `PATH`), its files under `dir`, the
    /// run's config attached.
    pub fn start(
        python: &str,
        dir: &Path,
        opts: &WandbOptions,
        config: &serde_json::Value,
    ) -> Result<Wandb, TrackError> {
        if !matches!(opts.mode.as_str(), "offline" | "online") {
            return Err(TrackError::Other(format!(
                "wandb mode {:?}: use \"offline\" or \"online\"",
                opts.mode
            )));
        }
        std::fs::create_dir_all(dir)
            .map_err(TrackError::io(format!("creating {}", dir.display())))?;
        let args = serde_json::json!({
            "project": opts.project, "mode": opts.mode, "dir": dir, "id": opts.id,
            "name": opts.name, "config": config,
        });
        let mut child = Command::new(python)
            .arg("-c")
            .arg(SIDECAR)
            .arg(args.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .env("WANDB_SILENT", "true")
            .spawn()
            .map_err(TrackError::io(format!("starting {python} for wandb")))?;
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().expect("piped"));
        let mut w = Wandb { child, stdin, out };
        let line = w.line()?;
        if !line.starts_with("ready") {
            return Err(TrackError::Other(format!("wandb did not start: {line}")));
        }
        Ok(w)
    }

    fn line(&mut self) -> Result<String, TrackError> {
        let mut line = String::new();
        self.out
            .read_line(&mut line)
            .map_err(TrackError::io("reading from the wandb client"))?;
        if line.is_empty() {
            let status = self.child.wait().ok();
            return Err(TrackError::Other(format!(
                "the wandb client ended ({})",
                status.map_or("no status".into(), |s| s.to_string())
            )));
        }
        Ok(line.trim_end().to_string())
    }

    fn send(&mut self, msg: &serde_json::Value) -> Result<(), TrackError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| TrackError::Other("the wandb client is finished".into()))?;
        writeln!(stdin, "{msg}")
            .and_then(|_| stdin.flush())
            .map_err(TrackError::io("writing to the wandb client"))
    }

    /// Logs a step's scalars and waits until the client has them.
    pub fn log(&mut self, step: i64, metrics: &serde_json::Value) -> Result<(), TrackError> {
        let map: serde_json::Map<String, serde_json::Value> = scalars(metrics)
            .into_iter()
            .map(|(k, v)| (k, serde_json::json!(v)))
            .collect();
        self.send(&serde_json::json!({"step": step, "scalars": map}))?;
        let line = self.line()?;
        if line != format!("logged {step}") {
            return Err(TrackError::Other(format!("wandb: {line}")));
        }
        Ok(())
    }

    /// Ends the W&B run and waits for the client.
    pub fn finish(mut self) -> Result<(), TrackError> {
        self.send(&serde_json::json!({"finish": true}))?;
        drop(self.stdin.take());
        let line = self.line()?;
        self.child
            .wait()
            .map_err(TrackError::io("waiting for the wandb client"))?;
        if line != "finished" {
            return Err(TrackError::Other(format!("wandb: {line}")));
        }
        Ok(())
    }
}

impl Drop for Wandb {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
