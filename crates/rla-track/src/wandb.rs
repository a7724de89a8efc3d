//! Weights & Biases through its official Python client: a small Python program beside the run
//! reads one JSON line a step on its standard input (`{"step": k, "scalars": {...}}`) and calls
//! `wandb.log(scalars, step=k)`; `{"finish": true}` ends the run. The client (`pip install wandb`,
//! which brings its own service binary) is needed only where a config asks for it.
//!
//! The client never holds the run up. Its lines go through a bounded queue to a thread of its
//! own that writes them, so a client that stops reading costs the run its curves, not its time;
//! the run waits for it only at the start (until `wandb.init` has answered) and at the finish
//! (until `wandb.finish` has), each within a bound ([`Bounds`]). A client that does not answer
//! within its bound, falls a whole queue behind, or ends on its own is dropped with a warning and
//! its process group killed, and the run goes on without it. Nothing of it outlives the run: it
//! runs in a process group of its own, killed once the client has ended, is finished or is
//! dropped, and the kernel kills it if the run's process dies first (the parent-death signal).

use crate::TrackError;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// How long the run waits for the client, and how far it may fall behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// From starting the client to its `wandb.init` answering.
    pub start: Duration,
    /// From asking the client to finish to `wandb.finish` answering.
    pub finish: Duration,
    /// Steps queued for the client before it counts as stuck.
    pub queue: usize,
}

impl Default for Bounds {
    /// 120 s to start, 120 s to finish, 1024 steps queued.
    fn default() -> Self {
        Bounds {
            start: Duration::from_secs(120),
            finish: Duration::from_secs(120),
            queue: 1024,
        }
    }
}

/// What the writer thread is given.
enum Line {
    Step(String),
    Finish,
}

/// The client's process: its id (and its group's) until it is reaped.
struct Proc {
    pid: libc::pid_t,
    reaped: Mutex<bool>,
}

/// The processes descended from `root` now, by the parents `/proc` gives.
fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let parents: Vec<(libc::pid_t, libc::pid_t)> = dir
        .filter_map(|e| {
            let pid: libc::pid_t = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid …`, the command name possibly holding spaces and parentheses
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out.remove(0);
    out
}

impl Proc {
    /// Kills the client's process group and whatever it started outside it (W&B's service
    /// makes a session of its own), unless it is reaped.
    fn kill(&self) {
        let reaped = self.reaped.lock().unwrap_or_else(|e| e.into_inner());
        if !*reaped {
            let below = descendants(self.pid);
            // SAFETY: plain system calls on a group this process made and has not reaped, and
            // on processes descended from it a moment ago
            unsafe {
                libc::killpg(self.pid, libc::SIGKILL);
                for p in below {
                    libc::kill(p, libc::SIGKILL);
                }
            }
        }
    }

    /// Whether the client has exited (it stays unreaped, so its group id stays its own).
    fn exited(&self) -> bool {
        // SAFETY: `info` is zeroed plain data that waitid fills; WNOWAIT leaves the child be
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            rc != 0 || info.si_pid() != 0
        }
    }
}

/// The running client.
struct Live {
    /// Lines for the writer thread (dropped: the client's standard input is closed).
    tx: Option<SyncSender<Line>>,
    /// The client's lines, from the thread that reads them.
    lines: Receiver<String>,
    proc: Arc<Proc>,
    /// The client's exit, once reaped.
    done: Receiver<Option<ExitStatus>>,
}

impl Live {
    /// Kills the client and waits a little for it to be reaped.
    fn kill(mut self) -> Option<ExitStatus> {
        drop(self.tx.take());
        self.proc.kill();
        self.done
            .recv_timeout(Duration::from_secs(10))
            .ok()
            .flatten()
    }
}

/// A W&B client beside the run. [`Wandb::log`] never waits on it; [`Wandb::start`] and
/// [`Wandb::finish`] wait at most their [`Bounds`]. Dropped unfinished, it is finished within the
/// same bound.
pub struct Wandb {
    live: Option<Live>,
    bounds: Bounds,
}

/// The writer thread: starts the client, writes its lines, and once they end (finished, dropped,
/// or the client stopped reading) reaps it and kills what is left of its group. The client's
/// parent-death signal is tied to this thread, which lives exactly as long as the client.
fn writer(
    mut cmd: Command,
    started: mpsc::Sender<std::io::Result<(ChildStdout, Arc<Proc>)>>,
    queue: Receiver<Line>,
    done: mpsc::Sender<Option<ExitStatus>>,
) {
    let mut child: Child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let out = child.stdout.take().expect("piped");
    let mut stdin = child.stdin.take().expect("piped");
    let proc = Arc::new(Proc {
        pid: child.id() as libc::pid_t,
        reaped: Mutex::new(false),
    });
    if started.send(Ok((out, proc.clone()))).is_err() {
        proc.kill();
    }
    for line in queue {
        let (text, last) = match line {
            Line::Step(s) => (s, false),
            Line::Finish => ("{\"finish\": true}".to_string(), true),
        };
        if writeln!(stdin, "{text}")
            .and_then(|_| stdin.flush())
            .is_err()
            || last
        {
            break;
        }
    }
    drop(stdin);
    loop {
        {
            let mut reaped = proc.reaped.lock().unwrap_or_else(|e| e.into_inner());
            if proc.exited() {
                // what it started goes with it, then it is reaped
                // SAFETY: the group of a child not yet reaped
                unsafe {
                    libc::killpg(proc.pid, libc::SIGKILL);
                }
                let status = child.wait().ok();
                *reaped = true;
                let _ = done.send(status);
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Wandb {
    /// Starts the client with `python` (a path or a name on `PATH`), its files under `dir`, the
    /// run's config attached, within the default [`Bounds`].
    pub fn start(
        python: &str,
        dir: &Path,
        opts: &WandbOptions,
        config: &serde_json::Value,
    ) -> Result<Wandb, TrackError> {
        Self::start_within(python, dir, opts, config, Bounds::default())
    }

    /// As [`Wandb::start`], within `bounds`. A client that fails to start (an error, or it ends)
    /// is an error; one that does not answer within `bounds.start` is killed with a warning, and
    /// the writer it gives logs nothing.
    pub fn start_within(
        python: &str,
        dir: &Path,
        opts: &WandbOptions,
        config: &serde_json::Value,
        bounds: Bounds,
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
        let mut cmd = Command::new(python);
        cmd.arg("-c")
            .arg(SIDECAR)
            .arg(args.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .env("WANDB_SILENT", "true")
            .process_group(0);
        // on Linux the client dies with the run (the parent-death signal); elsewhere it is
        // killed with its process group when the writer is dropped
        #[cfg(target_os = "linux")]
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe system calls between fork and exec
        #[cfg(target_os = "linux")]
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    // the run died before the signal was set
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let (tx, queue) = mpsc::sync_channel(bounds.queue.max(1));
        let (started_tx, started) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        std::thread::Builder::new()
            .name("wandb-writer".into())
            .spawn(move || writer(cmd, started_tx, queue, done_tx))
            .map_err(TrackError::io("starting the wandb writer thread"))?;
        let (out, proc) = started
            .recv()
            .map_err(|_| TrackError::Other("the wandb writer thread ended".into()))?
            .map_err(TrackError::io(format!("starting {python} for wandb")))?;
        let (lines_tx, lines) = mpsc::channel();
        let reader = std::thread::Builder::new()
            .name("wandb-reader".into())
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if lines_tx.send(line.trim_end().to_string()).is_err() {
                        break;
                    }
                }
            });
        if let Err(e) = reader {
            proc.kill();
            return Err(TrackError::Io {
                what: "starting the wandb reader thread".into(),
                source: e,
            });
        }
        let live = Live {
            tx: Some(tx),
            lines,
            proc,
            done,
        };
        match live.lines.recv_timeout(bounds.start) {
            Ok(line) if line.starts_with("ready") => Ok(Wandb {
                live: Some(live),
                bounds,
            }),
            Ok(line) => {
                live.kill();
                Err(TrackError::Other(format!("wandb did not start: {line}")))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = live.kill();
                Err(TrackError::Other(format!(
                    "the wandb client ended before it started ({})",
                    status.map_or("no status".into(), |s| s.to_string())
                )))
            }
            Err(RecvTimeoutError::Timeout) => {
                tracing::warn!(
                    "the wandb client did not start within {} s: it is stopped, and the run goes \
                     on without W&B",
                    bounds.start.as_secs_f64()
                );
                live.kill();
                Ok(Wandb { live: None, bounds })
            }
        }
    }

    /// Whether the client is there to take steps (not dropped).
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Drops the client with a warning, killing it.
    fn drop_client(&mut self, why: &str) {
        if let Some(live) = self.live.take() {
            tracing::warn!("wandb: {why}: the client is stopped, and the run goes on without W&B");
            live.kill();
        }
    }

    /// Queues a step's scalars for the client, without waiting for it. False when the client is
    /// gone (it did not start in time, ended, or fell a whole queue behind: then it is dropped
    /// here with a warning) and the step is not logged.
    pub fn log(&mut self, step: i64, metrics: &serde_json::Value) -> bool {
        let Some(live) = &self.live else {
            return false;
        };
        // what the client said meanwhile
        loop {
            match live.lines.try_recv() {
                Ok(l) if l.starts_with("logged ") => {}
                Ok(l) => tracing::warn!("wandb: {l}"),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.drop_client("the client ended");
                    return false;
                }
            }
        }
        let map: serde_json::Map<String, serde_json::Value> = crate::scalars(metrics)
            .into_iter()
            .map(|(k, v)| (k, serde_json::json!(v)))
            .collect();
        let line = serde_json::json!({"step": step, "scalars": map}).to_string();
        let sent = match &live.tx {
            Some(tx) => tx.try_send(Line::Step(line)),
            None => return false,
        };
        match sent {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                let why = format!(
                    "the client has not taken the last {} steps",
                    self.bounds.queue
                );
                self.drop_client(&why);
                false
            }
            Err(TrySendError::Disconnected(_)) => {
                self.drop_client("the client stopped reading");
                false
            }
        }
    }

    /// Ends the W&B run and waits for the client, at most `bounds.finish`. True when the run's
    /// files are complete; false (with a warning) when the client was gone or did not finish in
    /// time, and was killed.
    pub fn finish(mut self) -> bool {
        self.close()
    }

    fn close(&mut self) -> bool {
        let Some(mut live) = self.live.take() else {
            return false;
        };
        let by = Instant::now() + self.bounds.finish;
        let queued = live
            .tx
            .take()
            .is_some_and(|tx| tx.try_send(Line::Finish).is_ok());
        let why = if !queued {
            "the client did not take the finish".to_string()
        } else {
            loop {
                let left = by.saturating_duration_since(Instant::now());
                match live.lines.recv_timeout(left) {
                    Ok(l) if l == "finished" => {
                        // it exits now; what it leaves is killed as it is reaped
                        let left = by.saturating_duration_since(Instant::now());
                        if live.done.recv_timeout(left).is_ok() {
                            return true;
                        }
                        break format!(
                            "the client finished but did not exit within {} s",
                            self.bounds.finish.as_secs_f64()
                        );
                    }
                    Ok(l) if l.starts_with("logged ") => {}
                    Ok(l) => tracing::warn!("wandb: {l}"),
                    Err(RecvTimeoutError::Timeout) => {
                        break format!(
                            "the client did not finish within {} s",
                            self.bounds.finish.as_secs_f64()
                        )
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        break "the client ended before it finished".to_string()
                    }
                }
            }
        };
        tracing::warn!("wandb: {why}: it is stopped, and the W&B run may lack its last steps");
        live.kill();
        false
    }
}

impl Drop for Wandb {
    fn drop(&mut self) {
        self.close();
    }
}
