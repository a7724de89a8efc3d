//! A sandbox for untrusted, model-written programs.
//!
//! Every run gets its own process in its own session (so its whole process group can be killed),
//! a fresh temporary working directory that is removed afterwards, and these limits:
//!
//! | limit | how |
//! |---|---|
//! | descendants | a fresh PID namespace in which the program is PID 1: when it exits or is killed, the kernel kills every process it started, detached or not, and the pipes close |
//! | wall-clock time | the parent waits with a deadline, then kills the process group (and with it the namespace) |
//! | CPU time | `RLIMIT_CPU` (SIGXCPU, then SIGKILL) |
//! | memory | `RLIMIT_AS` (allocations fail; Python raises `MemoryError`) |
//! | processes | `RLIMIT_NPROC`, enforced because the program runs under its own unprivileged uid when the sandbox runs as root |
//! | output | the parent stops reading and kills the group past `output_bytes`; `RLIMIT_FSIZE` caps files |
//! | network | a fresh, empty network namespace (`unshare(CLONE_NEWNET)`, root or user namespaces); Landlock's TCP rules where the kernel has them |
//! | files | Landlock (where the kernel has it): read-only system directories and the interpreter's prefix, read-write only the working directory; without Landlock, the unprivileged uid's file permissions |
//! | descriptors | every descriptor above 2 is marked close-on-exec before the interpreter starts: none the caller left open reaches the program |
//! | unix sockets | a seccomp filter refuses `socket(AF_UNIX)` (and `io_uring_setup`, `pidfd_getfd`): pathname sockets such as an X server's lie outside the network namespace and Landlock |
//!
//! What applied on this machine is reported by [`Sandbox::isolation`]; docs/coding.md lists what is
//! and is not isolated. Namespaces, Landlock and per-run uids are Linux-only: elsewhere (macOS)
//! the crate builds and runs get the limits, the session and the cleared environment only.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::{Gid, Pid, Uid};
use rlimit::Resource;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod owners;
#[cfg(target_os = "linux")]
mod pid_namespace;
mod probes;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod seccomp;
pub use owners::remove_live_folders;
use owners::*;
use probes::*;

/// The limits of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock seconds.
    pub wall_secs: f64,
    /// CPU seconds.
    pub cpu_secs: u64,
    /// Address-space bytes.
    pub memory_bytes: u64,
    /// Processes (and threads) of the program's user.
    pub processes: u64,
    /// Bytes of standard output plus standard error kept; more is a verdict.
    pub output_bytes: usize,
    /// Largest file the program may write.
    pub file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_secs: 5.0,
            cpu_secs: 4,
            memory_bytes: 512 << 20,
            processes: 16,
            output_bytes: 1 << 20,
            file_bytes: 16 << 20,
        }
    }
}

/// The longest wall-clock limit a run may have: a day.
pub const MAX_WALL_SECS: f64 = 86_400.0;

impl Limits {
    /// Checks that every limit is positive, and the wall-clock limit at most [`MAX_WALL_SECS`].
    pub fn validate(&self) -> Result<(), String> {
        if !(self.wall_secs > 0.0 && self.wall_secs.is_finite()) {
            return Err(format!("wall_secs = {}: must be > 0", self.wall_secs));
        }
        if self.wall_secs > MAX_WALL_SECS {
            return Err(format!(
                "wall_secs = {}: at most {MAX_WALL_SECS} (a day)",
                self.wall_secs
            ));
        }
        for (name, v) in [
            ("cpu_secs", self.cpu_secs),
            ("memory_bytes", self.memory_bytes),
            ("processes", self.processes),
            ("output_bytes", self.output_bytes as u64),
            ("file_bytes", self.file_bytes),
        ] {
            if v == 0 {
                return Err(format!("{name} = 0: must be > 0"));
            }
        }
        if self.memory_bytes < 32 << 20 {
            return Err(format!(
                "memory_bytes = {}: an interpreter needs at least 32 MiB",
                self.memory_bytes
            ));
        }
        Ok(())
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The program exited with status 0.
    Exited,
    /// Past the wall-clock or CPU limit.
    Timeout,
    /// Out of memory.
    Memory,
    /// Non-zero exit or a signal.
    Crash,
    /// Printed more than the output limit.
    OutputLimit,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// How it ended.
    pub status: Status,
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal that ended it, if any.
    pub signal: Option<i32>,
    /// Standard output (at most the output limit).
    pub stdout: String,
    /// Standard error (at most the output limit).
    pub stderr: String,
    /// Wall-clock seconds.
    pub secs: f64,
}

/// What isolation applies on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isolation {
    /// Programs run under their own unprivileged uid (the sandbox runs as root).
    pub own_uid: bool,
    /// A fresh network namespace.
    pub network_namespace: bool,
    /// A fresh PID namespace whose init is the program, so that no descendant outlives it.
    pub pid_namespace: bool,
    /// The Landlock ABI version in force for files (and TCP from ABI 4), or none.
    pub landlock_abi: Option<i32>,
    /// A seccomp filter refuses unix sockets (`socket(AF_UNIX)`), so that the program reaches
    /// no server listening on one outside its folder (an X server, a D-Bus bus).
    #[serde(default)]
    pub unix_sockets_denied: bool,
}

/// Errors of the sandbox itself (not of the program).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Setting up a run failed.
    #[error("sandbox: {0}")]
    Setup(String),
    /// The limits are impossible.
    #[error("sandbox limits: {0}")]
    Limits(String),
}

fn setup<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> SandboxError + '_ {
    move |e| SandboxError::Setup(format!("{what}: {e}"))
}

/// Where a reader thread keeps what a stream gave.
type Buffer = Arc<Mutex<Vec<u8>>>;

/// The most descriptors a run gets beyond its standard streams.
const MAX_EXTRA_FDS: usize = 4;

/// A run's standard input: bytes fed from a thread, or a descriptor (a pipe's end).
enum Input {
    Bytes(Vec<u8>),
    Fd(std::os::fd::OwnedFd),
}

/// How a run's streams are joined: its input, its output (collected, or handed to a
/// descriptor), descriptors it keeps open (their numbers in its environment's `RLA_FDS`, in
/// order), and a flag that stops it early.
struct Wiring {
    stdin: Input,
    stdout: Option<std::os::fd::OwnedFd>,
    extra: Vec<std::os::fd::OwnedFd>,
    stop: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Wiring {
    /// Bytes in, output collected: a plain run.
    fn collect(stdin: &[u8]) -> Wiring {
        Wiring {
            stdin: Input::Bytes(stdin.to_vec()),
            stdout: None,
            extra: Vec::new(),
            stop: None,
        }
    }
}

/// A pipe whose ends are closed at exec (a run gets them through [`Wiring`] only).
fn cloexec_pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), SandboxError> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    #[cfg(target_os = "linux")]
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    #[cfg(not(target_os = "linux"))]
    let r = unsafe {
        let r = libc::pipe(fds.as_mut_ptr());
        if r == 0 {
            for fd in fds {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        r
    };
    if r < 0 {
        return Err(SandboxError::Setup(format!(
            "pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// How long the harness waits, after the program ended, for its output pipes to close.
const PIPE_GRACE: Duration = Duration::from_secs(2);
/// Runs programs under limits; cheap to clone and share between threads.
#[derive(Clone)]
pub struct Sandbox {
    python: PathBuf,
    limits: Limits,
    base: Arc<BaseDir>,
    isolation: Isolation,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("python", &self.python)
            .field("limits", &self.limits)
            .field("isolation", &self.isolation)
            .finish()
    }
}

/// The Python interpreter programs run with: `RLA_PYTHON`, else the system's `/usr/bin/python3`
/// (readable by unprivileged users), else `python3` on the `PATH`.
pub fn find_python() -> Result<PathBuf, SandboxError> {
    if let Some(p) = std::env::var_os("RLA_PYTHON") {
        return Ok(PathBuf::from(p));
    }
    for c in ["/usr/bin/python3", "/usr/local/bin/python3"] {
        if Path::new(c).exists() {
            return Ok(PathBuf::from(c));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            let c = d.join("python3");
            if c.exists() {
                return Ok(c);
            }
        }
    }
    Err(SandboxError::Setup(
        "no Python interpreter: install python3 or set RLA_PYTHON".into(),
    ))
}

impl Sandbox {
    /// A sandbox running `python` under `limits`. Runs may be made from many threads at once.
    pub fn new(python: PathBuf, limits: Limits) -> Result<Sandbox, SandboxError> {
        limits.validate().map_err(SandboxError::Limits)?;
        if !python.exists() {
            return Err(SandboxError::Setup(format!(
                "interpreter {} does not exist",
                python.display()
            )));
        }
        let root = Uid::effective().is_root();
        remove_orphaned_folders(&std::env::temp_dir());
        let base = tempfile::Builder::new()
            .prefix(&folder_prefix(std::process::id()))
            .tempdir()
            .map_err(setup("temporary directory"))?;
        // Others may pass through the base but neither list nor write it.
        std::fs::set_permissions(
            base.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o711),
        )
        .map_err(setup("temporary directory"))?;
        let isolation = Isolation {
            // switching uids and reaping by uid use Linux's setgroups and /proc
            own_uid: root && cfg!(target_os = "linux"),
            network_namespace: probe_unshare(root, true, false),
            pid_namespace: probe_unshare(root, false, true),
            landlock_abi: landlock_abi(),
            unix_sockets_denied: probe_seccomp(),
        };
        if isolation.own_uid {
            // programs run as a user of their own, who must be able to enter every folder above
            // their working folder
            use std::os::unix::fs::PermissionsExt;
            for dir in base.path().ancestors().skip(1) {
                let mode = std::fs::metadata(dir)
                    .map(|m| m.permissions().mode())
                    .unwrap_or(0o755);
                if mode & 0o001 == 0 {
                    return Err(SandboxError::Setup(format!(
                        "the sandbox's folder {} lies in {}, which other users cannot enter \
                         (mode {:o}), and programs run as a user of their own: set TMPDIR to a \
                         folder they can enter, such as /tmp",
                        base.path().display(),
                        dir.display(),
                        mode & 0o777
                    )));
                }
            }
        }
        Ok(Sandbox {
            python,
            limits,
            base: Arc::new(BaseDir::register(base)),
            isolation,
        })
    }

    /// A sandbox with the default interpreter ([`find_python`]).
    pub fn with_limits(limits: Limits) -> Result<Sandbox, SandboxError> {
        Sandbox::new(find_python()?, limits)
    }

    /// What isolation applies here.
    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The same sandbox with a lower wall-clock limit (and CPU limit, in whole seconds, at
    /// least one); a limit that is not lower, or not a positive number, leaves it as it is.
    pub fn with_wall_secs(&self, secs: f64) -> Sandbox {
        let mut sb = self.clone();
        if secs.is_finite() && secs > 0.0 && secs < self.limits.wall_secs {
            sb.limits.wall_secs = secs;
            sb.limits.cpu_secs = self.limits.cpu_secs.min((secs.ceil() as u64).max(1));
        }
        sb
    }

    /// Runs a Python program with `stdin` as its input.
    pub fn run_python(&self, source: &str, stdin: &[u8]) -> Result<RunResult, SandboxError> {
        self.run_wired(source, Wiring::collect(stdin))
    }

    /// Runs two Python programs side by side, each in a run of its own (its own folder, uid,
    /// namespaces and limits, so neither can read the other's files or memory), joined by two
    /// pipes: what `a` writes to the second descriptor its `RLA_FDS` names is `b`'s standard
    /// input, and what `b` writes to its standard output is what `a` reads from the first. `a` gets `a_stdin` and its
    /// output is collected; `b`'s standard error is collected, its standard output goes to `a`
    /// only. When `a` ends, `b` is stopped. Returns `a`'s result and `b`'s (its `stdout` empty).
    pub fn run_pair(
        &self,
        a_src: &str,
        a_stdin: &[u8],
        b_src: &str,
    ) -> Result<(RunResult, RunResult), SandboxError> {
        let (req_r, req_w) = cloexec_pipe()?;
        let (rep_r, rep_w) = cloexec_pipe()?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        std::thread::scope(|s| {
            let b_wiring = Wiring {
                stdin: Input::Fd(req_r),
                stdout: Some(rep_w),
                extra: Vec::new(),
                stop: Some(stop.clone()),
            };
            let b = s.spawn(move || self.run_wired(b_src, b_wiring));
            let mut a_wiring = Wiring::collect(a_stdin);
            a_wiring.extra = vec![rep_r, req_w];
            let a = self.run_wired(a_src, a_wiring);
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            let b = b
                .join()
                .map_err(|_| SandboxError::Setup("the second run's thread panicked".into()))?;
            Ok((a?, b?))
        })
    }

    fn run_wired(&self, source: &str, wiring: Wiring) -> Result<RunResult, SandboxError> {
        let uid = self.isolation.own_uid.then(take_pool_uid);
        let r = self.run_as(uid, source, wiring);
        if let Some(u) = uid {
            give_back_uid(u);
        }
        r
    }

    fn run_as(
        &self,
        uid: Option<u32>,
        source: &str,
        wiring: Wiring,
    ) -> Result<RunResult, SandboxError> {
        let Wiring {
            stdin,
            stdout: stdout_fd,
            extra,
            stop,
        } = wiring;
        if extra.len() > MAX_EXTRA_FDS {
            return Err(SandboxError::Setup(format!(
                "at most {MAX_EXTRA_FDS} extra descriptors"
            )));
        }
        let mut extra_raw = [-1 as std::os::fd::RawFd; MAX_EXTRA_FDS];
        for (slot, fd) in extra_raw.iter_mut().zip(&extra) {
            *slot = std::os::fd::AsRawFd::as_raw_fd(fd);
        }
        let n_extra = extra.len();
        let work = tempfile::Builder::new()
            .prefix("run-")
            .tempdir_in(self.base.path())
            .map_err(setup("working directory"))?;
        let prog = work.path().join("main.py");
        std::fs::write(&prog, source).map_err(setup("writing the program"))?;
        if let Some(u) = uid {
            for p in [work.path(), prog.as_path()] {
                nix::unistd::chown(p, Some(Uid::from_raw(u)), Some(Gid::from_raw(u)))
                    .map_err(setup("chown"))?;
            }
        }
        #[cfg(target_os = "linux")]
        let ruleset = match self.isolation.landlock_abi {
            Some(_) => Some(self.ruleset(work.path())?),
            None => None,
        };
        #[cfg(not(target_os = "linux"))]
        let ruleset: Option<()> = None;
        let mut cmd = Command::new(&self.python);
        cmd.arg("-I") // isolated mode: no user site, no PYTHON* variables
            .arg("-S") // no site module: faster start-up
            .arg("main.py")
            .current_dir(work.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", work.path())
            .env("LANG", "C.UTF-8")
            .env("PYTHONHASHSEED", "0")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stderr(Stdio::piped());
        if n_extra > 0 {
            let names: Vec<String> = extra_raw[..n_extra].iter().map(|f| f.to_string()).collect();
            cmd.env("RLA_FDS", names.join(" "));
        }
        let input = match stdin {
            Input::Bytes(b) => {
                cmd.stdin(Stdio::piped());
                Some(b)
            }
            Input::Fd(fd) => {
                cmd.stdin(Stdio::from(fd));
                None
            }
        };
        let collect_stdout = match stdout_fd {
            None => {
                cmd.stdout(Stdio::piped());
                true
            }
            Some(fd) => {
                cmd.stdout(Stdio::from(fd));
                false
            }
        };
        let lim = self.limits.clone();
        let netns = self.isolation.network_namespace;
        let pidns = self.isolation.pid_namespace;
        let deny_unix = self.isolation.unix_sockets_denied;
        let mut ruleset = ruleset;
        #[cfg(target_os = "linux")]
        let harness = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
        // Runs in the child between fork and exec: system calls only, no allocation.
        unsafe {
            cmd.pre_exec(move || {
                cloexec_above_stderr();
                // the extra descriptors stay open across exec, at the numbers `RLA_FDS` names
                // (moving them would risk the descriptors this child still uses before exec)
                for fd in extra_raw.iter().take(n_extra) {
                    if libc::fcntl(*fd, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                // Whatever ends this process (Ctrl-C, SIGKILL, a panic), its child is killed
                // with it; with a PID namespace that child is the keeper, whose death kills
                // init and so the whole namespace.
                #[cfg(target_os = "linux")]
                die_with_parent(harness)?;
                Resource::CORE.set(0, 0)?;
                Resource::CPU.set(lim.cpu_secs, lim.cpu_secs + 1)?;
                Resource::AS.set(lim.memory_bytes, lim.memory_bytes)?;
                Resource::FSIZE.set(lim.file_bytes, lim.file_bytes)?;
                Resource::NPROC.set(lim.processes, lim.processes)?;
                #[cfg(target_os = "linux")]
                {
                    let flags = namespace_flags(uid.is_some(), netns, pidns);
                    if !flags.is_empty() {
                        nix::sched::unshare(flags).map_err(std::io::Error::from)?;
                    }
                    if pidns {
                        pid_namespace::enter()?;
                    }
                    if let Some(u) = uid {
                        nix::unistd::setgroups(&[]).map_err(std::io::Error::from)?;
                        nix::unistd::setgid(Gid::from_raw(u)).map_err(std::io::Error::from)?;
                        nix::unistd::setuid(Uid::from_raw(u)).map_err(std::io::Error::from)?;
                        // a change of credentials clears the parent-death signal
                        if !pidns {
                            die_with_parent(harness)?;
                        }
                    }
                    if let Some(rs) = ruleset.take() {
                        rs.restrict_self().map_err(std::io::Error::other)?;
                    }
                }
                #[cfg(all(
                    target_os = "linux",
                    any(target_arch = "x86_64", target_arch = "aarch64")
                ))]
                if deny_unix {
                    seccomp::install()?;
                }
                #[cfg(not(target_os = "linux"))]
                let _ = (netns, pidns, uid, ruleset.take());
                let _ = deny_unix;
                Ok(())
            });
        }
        let start = Instant::now();
        let spawned = cmd.spawn().map_err(setup("starting the interpreter"));
        // this side's copies of the descriptors the program got: a pipe's other end must see
        // its end of file when the program ends
        drop(cmd);
        drop(extra);
        let mut child = spawned?;
        let pgid = Pid::from_raw(child.id() as i32);
        // Feed the input from a thread: a program that never reads it must not block us.
        let feeder = match (input, child.stdin.take()) {
            (Some(input), Some(mut sin)) => Some(std::thread::spawn(move || {
                let _ = sin.write_all(&input);
            })),
            _ => None,
        };
        let over = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let outputs: Vec<Arc<Mutex<Vec<u8>>>> = (0..2).map(|_| Arc::default()).collect();
        let mut streams: Vec<(Box<dyn Read + Send>, Buffer)> = Vec::new();
        if collect_stdout {
            if let Some(out) = child.stdout.take() {
                streams.push((Box::new(out), outputs[0].clone()));
            }
        }
        if let Some(err) = child.stderr.take() {
            streams.push((Box::new(err), outputs[1].clone()));
        }
        let n_streams = streams.len();
        for (mut r, buf) in streams {
            let over = over.clone();
            let done = done_tx.clone();
            let cap = lim.output_bytes;
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                loop {
                    match r.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(k) => {
                            let mut b = buf.lock().unwrap_or_else(|e| e.into_inner());
                            if b.len() + k > cap {
                                over.store(true, std::sync::atomic::Ordering::SeqCst);
                                let _ = killpg(pgid, Signal::SIGKILL);
                                break;
                            }
                            b.extend_from_slice(&chunk[..k]);
                        }
                    }
                }
                let _ = done.send(());
            });
        }
        drop(done_tx);
        let deadline = start + Duration::from_secs_f64(lim.wall_secs);
        let mut timed_out = false;
        let status = loop {
            if let Some(s) = child.try_wait().map_err(setup("waiting"))? {
                break s;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                let _ = killpg(pgid, Signal::SIGKILL);
                break child.wait().map_err(setup("waiting"))?;
            }
            if stop
                .as_ref()
                .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
            {
                let _ = killpg(pgid, Signal::SIGKILL);
                break child.wait().map_err(setup("waiting"))?;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        // Children that left the program's namespace or group would hold the pipes open: kill
        // the group, then wait a bounded time for the pipes to close, never forever.
        let _ = killpg(pgid, Signal::SIGKILL);
        let secs = start.elapsed().as_secs_f64();
        let grace = Instant::now() + PIPE_GRACE;
        for _ in 0..n_streams {
            let left = grace.saturating_duration_since(Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                break;
            }
        }
        drop(feeder); // detached: a leftover that never reads its input must not block us
        let mut outs: Vec<Vec<u8>> = outputs
            .iter()
            .map(|b| std::mem::take(&mut *b.lock().unwrap_or_else(|e| e.into_inner())))
            .collect();
        let stderr = String::from_utf8_lossy(&outs.pop().unwrap_or_default()).into_owned();
        let stdout = String::from_utf8_lossy(&outs.pop().unwrap_or_default()).into_owned();
        let code = status.code();
        let signal = status.signal();
        let over = over.load(std::sync::atomic::Ordering::SeqCst);
        let status = if over {
            Status::OutputLimit
        } else if timed_out || signal == Some(libc::SIGXCPU) {
            Status::Timeout
        } else if code == Some(0) {
            Status::Exited
        } else if stderr.contains("MemoryError") || stderr.contains("Cannot allocate memory") {
            Status::Memory
        } else {
            Status::Crash
        };
        drop(work);
        Ok(RunResult {
            status,
            code,
            signal,
            stdout,
            stderr,
            secs,
        })
    }

    #[cfg(target_os = "linux")]
    fn ruleset(&self, work: &Path) -> Result<landlock::RulesetCreated, SandboxError> {
        use landlock::{
            Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI,
        };
        let abi = ABI::V4;
        let ll = |e: landlock::RulesetError| SandboxError::Setup(format!("landlock: {e}"));
        let mut read: Vec<PathBuf> = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc"]
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect();
        // The interpreter's own installation (e.g. a virtual environment or pyenv prefix).
        if let Ok(real) = self.python.canonicalize() {
            if let Some(prefix) = real.parent().and_then(Path::parent) {
                read.push(prefix.to_path_buf());
            }
        }
        let rs = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(ll)?
            .handle_access(AccessNet::from_all(abi))
            .map_err(ll)?
            .create()
            .map_err(ll)?
            .add_rules(landlock::path_beneath_rules(
                &read,
                AccessFs::from_read(abi),
            ))
            .map_err(ll)?
            .add_rules(landlock::path_beneath_rules(
                ["/dev/null", "/dev/zero", "/dev/urandom"],
                AccessFs::from_read(abi) | AccessFs::WriteFile,
            ))
            .map_err(ll)?
            .add_rules(landlock::path_beneath_rules(
                [work],
                AccessFs::from_all(abi),
            ))
            .map_err(ll)?;
        Ok(rs)
    }
}

/// Asks the kernel to kill this process (between fork and exec) when its parent dies, and ends
/// it at once if the parent `expected` is already gone. Raw system calls only.
#[cfg(target_os = "linux")]
fn die_with_parent(expected: libc::pid_t) -> std::io::Result<()> {
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if unsafe { libc::getppid() } != expected {
        unsafe { libc::_exit(137) };
    }
    Ok(())
}
