//! The worker process: started with `torchrun` (`python -m torch.distributed.run`), one process
//! per device; its global rank 0 connects back to a loopback port this side listens on, proves
//! it is the worker started here (a one-time token), and then answers one call at a time. Every
//! call carries the protocol version and waits at most the configured time; a worker that
//! exits, hangs or answers garbage becomes an error naming the worker and the end of its log.

use crate::wire::{self, Array, Message, PROTOCOL};
use crate::LearnerSpec;
use serde_json::{json, Value};
use std::io::{BufReader, BufWriter, Read, Write};
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

/// The worker's socket, its reads and writes bounded by one deadline: that of the whole call,
/// so a worker that trickles its reply a byte at a time, or stops reading what is sent to it,
/// fails the call when its time is up.
struct Timed {
    s: TcpStream,
    deadline: Instant,
}

impl Timed {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the call's time is up",
            ));
        }
        Ok(left)
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.s.set_read_timeout(Some(left))?;
        self.s.read(buf)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.s.set_write_timeout(Some(left))?;
        self.s.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.s.flush()
    }
}

struct Conn {
    reader: BufReader<Timed>,
    writer: BufWriter<Timed>,
    next_id: u64,
    /// Set once the connection is lost: every later call fails with it.
    broken: Option<String>,
}

/// A running worker.
pub struct Worker {
    child: Mutex<Child>,
    /// Set once [`Worker::stop`] has ended the process group (it is not signalled twice).
    stopped: std::sync::atomic::AtomicBool,
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
            s.try_clone()
        };
        let r = setup(&stream).map_err(|e| lost(format!("connection failed: {e}")))?;
        // the greeting comes within the start's time
        let deadline = t0 + timeout;
        let mut conn = Conn {
            reader: BufReader::new(Timed { s: r, deadline }),
            writer: BufWriter::new(Timed {
                s: stream,
                deadline,
            }),
            next_id: 0,
            broken: None,
        };
        let hello = match wire::read(&mut conn.reader) {
            Ok(h) => h,
            Err(e) => {
                stop(&mut child);
                return Err(lost(format!("sent no greeting: {e}; {}", tail(&log, 15))));
            }
        };
        if hello.header["token"].as_str() != Some(secret.as_str()) {
            stop(&mut child);
            return Err(lost(
                "that connected is not the one started here (wrong token)".into(),
            ));
        }
        Ok(Worker {
            child: Mutex::new(child),
            stopped: std::sync::atomic::AtomicBool::new(false),
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
        let deadline = Instant::now() + self.timeout;
        conn.reader.get_mut().deadline = deadline;
        conn.writer.get_mut().deadline = deadline;
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
                // a worker that reads nothing more does not hold this
                conn.writer.get_mut().deadline = Instant::now() + Duration::from_secs(5);
                let _ = wire::write(&mut conn.writer, &m);
                conn.broken = Some("was shut down".into());
            }
        }
        if self.stopped.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // torchrun gone or not, every rank is ended
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

/// SIGTERM to the child's process group (torchrun passes it on to its ranks), then SIGKILL to
/// the group, whether torchrun has exited or not: a rank stopped (SIGSTOP) or ignoring SIGTERM
/// outlives torchrun. While any rank lives, the group's id (torchrun's pid) is not given to
/// another process, so signalling it reaches only what is left of the worker.
fn stop(child: &mut Child) {
    #[cfg(unix)]
    {
        if !matches!(child.try_wait(), Ok(Some(_))) {
            signal_group(child, libc::SIGTERM);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
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
