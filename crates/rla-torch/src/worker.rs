//! The worker process: started with `torchrun` (`python -m torch.distributed.run`), one process
//! per device; its global rank 0 connects back to a loopback port this side listens on, proves
//! it is the worker started here (a one-time token), and then answers one call at a time. Every
//! call carries the protocol version and waits at most the configured time; a worker that
//! exits, hangs or answers garbage becomes an error naming the worker and the end of its log.

use crate::wire::{self, Array, Message, PROTOCOL};
use crate::LearnerSpec;
use serde_json::{json, Value};
use std::io::{BufReader, BufWriter};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The worker's source, written next to its log when it starts (a checkout's copy is
/// `crates/rla-torch/worker/rla_torch_worker.py`, for the torchrun of other machines).
pub const WORKER_SOURCE: &str = include_str!("../worker/rla_torch_worker.py");

/// An error of the worker or of talking to it.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker could not be started, or exited, or stopped answering.
    #[error("the torch learner worker {0}")]
    Lost(String),
    /// The worker refused a call (bad input, a shape that does not fit); it stays usable.
    #[error("the torch learner worker refused {op}: {msg}")]
    Refused {
        /// The call.
        op: String,
        /// What the worker said.
        msg: String,
    },
}

struct Conn {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    next_id: u64,
    /// Set once the connection is lost: every later call fails with it.
    broken: Option<String>,
}

/// A running worker.
pub struct Worker {
    child: Mutex<Child>,
    conn: Mutex<Conn>,
    log: PathBuf,
    timeout: Duration,
    /// What the worker said about itself when it connected (world size, torch version).
    pub hello: Value,
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let t = lines[start..].join("\n");
    if t.is_empty() {
        "(its log is empty)".into()
    } else {
        format!("its log ({}) ends:\n{t}", path.display())
    }
}

fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

impl Worker {
    /// Starts the worker as `spec` says, its source and log in `scratch`, and waits for it to
    /// connect.
    pub fn start(spec: &LearnerSpec, scratch: &Path) -> Result<Worker, WorkerError> {
        let lost = |what: String| WorkerError::Lost(what);
        std::fs::create_dir_all(scratch)
            .map_err(|e| lost(format!("cannot start: {}: {e}", scratch.display())))?;
        let script = scratch.join("rla_torch_worker.py");
        rla_lm::write_atomic(&script, WORKER_SOURCE.as_bytes())
            .map_err(|e| lost(format!("cannot start: {e}")))?;
        let log = scratch.join("worker.log");
        let out = std::fs::File::create(&log)
            .map_err(|e| lost(format!("cannot start: {}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| lost(format!("cannot start: {e}")))?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|_| l))
            .map_err(|e| lost(format!("cannot listen on 127.0.0.1: {e}")))?;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let secret = token();
        let mut cmd = Command::new(&spec.python);
        cmd.args(["-m", "torch.distributed.run"]);
        cmd.arg(format!("--nproc-per-node={}", spec.nproc));
        if spec.nnodes > 1 {
            let ep = spec.rdzv_endpoint.as_deref().unwrap_or_default();
            let (host, p) = ep.rsplit_once(':').unwrap_or((ep, "29500"));
            // static rendezvous: this machine is node 0, where global rank 0 (the rank that
            // talks to the loop) runs
            cmd.args([
                format!("--nnodes={}", spec.nnodes),
                "--node-rank=0".into(),
                format!("--master-addr={host}"),
                format!("--master-port={p}"),
            ]);
        } else {
            cmd.args(["--standalone", "--nnodes=1"]);
        }
        cmd.arg(&script)
            .arg(format!("--connect=127.0.0.1:{port}"))
            .arg(format!("--collective-timeout={}", spec.timeout_s.max(1.0)));
        if spec.cpu {
            cmd.arg("--cpu");
        }
        if let Some(d) = &spec.devices {
            cmd.env("CUDA_VISIBLE_DEVICES", d.replace(' ', ""));
        }
        cmd.env("RLA_WORKER_TOKEN", &secret)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // its own process group, so stopping it stops every rank
            cmd.process_group(0);
        }
        let mut child = cmd.spawn().map_err(|e| {
            lost(format!(
                "could not be started with `{} -m torch.distributed.run` ({e}); set \
                 [*.learner] python to an interpreter with PyTorch",
                spec.python
            ))
        })?;
        let timeout = Duration::from_secs_f64(spec.timeout_s.max(1.0));
        let t0 = Instant::now();
        let stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(lost(format!("could not be reached: {e}"))),
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(lost(format!(
                    "exited before connecting ({status}); {}",
                    tail(&log, 15)
                )));
            }
            if t0.elapsed() > timeout {
                stop(&mut child);
                return Err(lost(format!(
                    "did not connect within {:.0} s; {}",
                    timeout.as_secs_f64(),
                    tail(&log, 15)
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let setup = |s: &TcpStream| -> std::io::Result<TcpStream> {
            s.set_nonblocking(false)?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(timeout))?;
            s.try_clone()
        };
        let r = setup(&stream).map_err(|e| lost(format!("connection failed: {e}")))?;
        let mut conn = Conn {
            reader: BufReader::new(r),
            writer: BufWriter::new(stream),
            next_id: 0,
            broken: None,
        };
        let hello = wire::read(&mut conn.reader)
            .map_err(|e| lost(format!("sent no greeting: {e}; {}", tail(&log, 15))))?;
        if hello.header["token"].as_str() != Some(secret.as_str()) {
            stop(&mut child);
            return Err(lost(
                "that connected is not the one started here (wrong token)".into(),
            ));
        }
        Ok(Worker {
            child: Mutex::new(child),
            conn: Mutex::new(conn),
            log,
            timeout,
            hello: hello.header,
        })
    }

    /// One call: `op` with its arguments and arrays; the reply's header and arrays.
    pub fn call(
        &self,
        op: &str,
        args: Value,
        arrays: Vec<(String, Array)>,
    ) -> Result<Message, WorkerError> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = &conn.broken {
            return Err(WorkerError::Lost(b.clone()));
        }
        conn.next_id += 1;
        let id = conn.next_id;
        let mut header = json!({"v": PROTOCOL, "id": id, "op": op});
        if let Value::Object(m) = args {
            for (k, v) in m {
                header[k] = v;
            }
        }
        let sent = wire::write(&mut conn.writer, &Message { header, arrays });
        let reply = sent.and_then(|_| wire::read(&mut conn.reader));
        let reply = match reply {
            Ok(r) => r,
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
                        "did not answer {op} within {:.0} s",
                        self.timeout.as_secs_f64()
                    ),
                    std::io::ErrorKind::InvalidData => format!("answered {op} with garbage: {e}"),
                    _ => {
                        let status = self
                            .child
                            .lock()
                            .ok()
                            .and_then(|mut c| c.try_wait().ok().flatten());
                        match status {
                            Some(s) => format!("exited during {op} ({s})"),
                            None => format!("dropped the connection during {op}: {e}"),
                        }
                    }
                };
                let msg = format!("{why}; {}", tail(&self.log, 15));
                conn.broken = Some(msg.clone());
                drop(conn);
                self.stop();
                return Err(WorkerError::Lost(msg));
            }
        };
        if reply.header["id"].as_u64() != Some(id) {
            let msg = format!(
                "answered call {id} ({op}) with the reply to {}",
                reply.header["id"]
            );
            conn.broken = Some(msg.clone());
            return Err(WorkerError::Lost(msg));
        }
        if reply.header["ok"].as_bool() != Some(true) {
            let msg = reply.header["error"]
                .as_str()
                .unwrap_or("an error without a message")
                .to_string();
            return Err(WorkerError::Refused { op: op.into(), msg });
        }
        Ok(reply)
    }

    /// The process id of the worker's launcher (the leader of its process group).
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|p| p.into_inner()).id()
    }

    /// Where the worker writes what it prints.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Stops every rank (a shutdown call, then SIGTERM to the process group, then SIGKILL).
    pub fn stop(&self) {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(mut conn) = self.conn.try_lock() {
            if conn.broken.is_none() {
                conn.next_id += 1;
                let m = Message {
                    header: json!({"v": PROTOCOL, "id": conn.next_id, "op": "shutdown"}),
                    arrays: vec![],
                };
                let _ = wire::write(&mut conn.writer, &m);
                conn.broken = Some("was shut down".into());
            }
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        stop(&mut child);
    }
}

/// Sends `sig` to the process group the child leads.
#[cfg(unix)]
fn signal_group(child: &Child, sig: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals that process group and touches no memory
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// SIGTERM to the child's process group (torchrun passes it on to its ranks), then SIGKILL.
fn stop(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return; // reaped: its pid may belong to another process by now
    }
    #[cfg(unix)]
    {
        signal_group(child, libc::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group(child, libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}
