//! The learner's side of the worker protocol against workers that misbehave on purpose (a
//! stand-in for torchrun written in plain Python, no PyTorch needed): a reply trickled a byte at
//! a time fails the call at its deadline (the time-out is per call, not per read), and a run that
//! ends leaves no rank behind, not even one stopped with SIGSTOP.

use rla_torch::{LearnerKind, LearnerSpec, Worker};
use std::path::Path;
use std::time::Duration;

/// A stand-in for the interpreter: connects as rank 0, greets, then on its first call behaves as
/// `mode` says. `trickle`: sends a valid reply one byte every 0.2 s (about 12 s in all).
/// `stopped-rank`: has started a second rank in its process group that stops itself with
/// SIGSTOP and does not end on SIGTERM or SIGHUP (as a rank stuck in a collective does not act
/// on them: Python runs its handlers only between bytecodes; SIGHUP, with SIGCONT, is what the
/// kernel sends a stopped process whose group is orphaned), never answers the call, and exits
/// when told to shut down.
fn fake(dir: &Path, mode: &str) -> String {
    let py = dir.join(format!("fake-{mode}.py"));
    std::fs::write(
        &py,
        format!(
            r#"
import json, os, signal, socket, struct, subprocess, sys, time
mode = "{mode}"
rank = None
if mode == "stopped-rank":
    rank = subprocess.Popen([sys.executable, "-c",
        "import os, signal, time\n"
        "for sig in (signal.SIGTERM, signal.SIGHUP): signal.signal(sig, signal.SIG_IGN)\n"
        "os.kill(os.getpid(), signal.SIGSTOP)\n"
        "time.sleep(600)"])
port = [a for a in sys.argv if a.startswith("--connect=")][0].split(":")[-1]
s = socket.create_connection(("127.0.0.1", int(port)))
def message(h):
    h = json.dumps(h).encode()
    return b"RLAW" + struct.pack("<IQ", len(h), 0) + h
hello = {{"v": 1, "op": "hello", "token": os.environ["RLA_WORKER_TOKEN"], "world": 2,
          "rank_pid": rank.pid if rank else None}}
s.sendall(message(hello))
call = s.recv(1 << 16)
if mode == "trickle":
    (hlen,) = struct.unpack("<I", call[4:8])
    cid = json.loads(call[16:16 + hlen])["id"]
    reply = message({{"v": 1, "id": cid, "ok": True, "pad": "x" * 40}})
    for b in reply:
        s.sendall(bytes([b]))
        time.sleep(0.2)
    time.sleep(30)
else:
    s.recv(1 << 16)  # the shutdown
"#
        ),
    )
    .unwrap();
    let sh = dir.join(format!("fake-{mode}"));
    std::fs::write(
        &sh,
        format!("#!/bin/sh\nexec python3 {} \"$@\"\n", py.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sh, std::fs::Permissions::from_mode(0o755)).unwrap();
    sh.to_string_lossy().into_owned()
}

fn spec(python: String) -> LearnerSpec {
    LearnerSpec {
        backend: LearnerKind::Torch,
        python,
        cpu: true,
        timeout_s: 2.0,
        ..Default::default()
    }
}

#[test]
fn a_reply_trickled_a_byte_at_a_time_fails_the_call_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let w = Worker::start(&spec(fake(dir.path(), "trickle")), &dir.path().join("w")).unwrap();
    // every byte comes well within 2 s of the last; the reply as a whole takes about 12 s
    let e = w
        .call("health", serde_json::json!({}), vec![])
        .expect_err("a reply that took about 12 s was taken by a call of 2 s")
        .to_string();
    assert!(e.contains("did not answer health within 2 s"), "{e}");
}

/// Whether a process is gone (or a zombie waiting for its parent).
fn gone(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn a_rank_stopped_with_sigstop_is_killed_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let w = Worker::start(
        &spec(fake(dir.path(), "stopped-rank")),
        &dir.path().join("w"),
    )
    .unwrap();
    let rank = w.hello["rank_pid"].as_i64().unwrap();
    assert!(!gone(rank));
    let e = w
        .call("health", serde_json::json!({}), vec![])
        .unwrap_err()
        .to_string();
    assert!(e.contains("did not answer health"), "{e}");
    drop(w);
    // the group was sent SIGKILL as the worker stopped; give the kernel a moment to reap it
    let mut left = 100;
    while !gone(rank) && left > 0 {
        std::thread::sleep(Duration::from_millis(50));
        left -= 1;
    }
    let alive = !gone(rank);
    if alive {
        // leave nothing behind, then fail
        // SAFETY: kill(2) of the stand-in rank this test started
        unsafe {
            libc::kill(rank as libc::pid_t, libc::SIGKILL);
        }
    }
    assert!(!alive, "the stopped rank {rank} outlived the run");
}
