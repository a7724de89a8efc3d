//! Bad input and bad workers: no PyTorch, no interpreter, a worker that crashes, answers garbage
//! or never answers, a checkpoint of another shape, token ids outside the vocabulary. Each is an
//! error that names what was wrong; none is a panic or a hang.

mod common;
use common::*;
use rla_lm::{Learner, OpenOptions};
use rla_model::config::Arch;
use rla_torch::{LearnerSpec, TorchLearner};
use std::path::Path;

fn start(base: &Path, spec: &LearnerSpec, scratch: &Path) -> String {
    match TorchLearner::start(base, &options(1e-3, 2, None), spec, scratch) {
        Ok(_) => panic!("the learner started"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_interpreter_without_torch_or_no_interpreter_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    checkpoint(Arch::Qwen3, &base, None);
    let mut s = spec(1);
    s.python = "/nonexistent/python3".into();
    let e = start(&base, &s, &dir.path().join("a"));
    assert!(
        e.contains("could not be started") && e.contains("/nonexistent/python3"),
        "{e}"
    );
    // an interpreter without PyTorch (a fresh virtual environment's)
    let venv = dir.path().join("venv");
    let ok = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(ok.success());
    s.python = venv.join("bin/python").to_string_lossy().into_owned();
    let e = start(&base, &s, &dir.path().join("b"));
    assert!(
        e.contains("exited before connecting") && e.contains("No module named"),
        "{e}"
    );
}

/// A stand-in for the interpreter that connects as the worker and then misbehaves as `mode`
/// says: `garbage` (answers a call with bytes that are not a message) or `silent` (never
/// answers).
fn fake(dir: &Path, mode: &str) -> String {
    let py = dir.join(format!("fake-{mode}.py"));
    std::fs::write(
        &py,
        format!(
            r#"
import os, socket, struct, sys, json, time
port = [a for a in sys.argv if a.startswith("--connect=")][0].split(":")[-1]
s = socket.create_connection(("127.0.0.1", int(port)))
h = json.dumps({{"v": 1, "op": "hello", "token": os.environ["RLA_WORKER_TOKEN"], "world": 1}}).encode()
s.sendall(b"RLAW" + struct.pack("<IQ", len(h), 0) + h)
s.recv(1 << 16)
if "{mode}" == "garbage":
    s.sendall(b"<html>502 Bad Gateway</html>" * 4)
time.sleep(30)
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

#[test]
fn a_worker_that_answers_garbage_or_nothing_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    checkpoint(Arch::Qwen3, &base, None);
    let mut s = spec(1);
    s.python = fake(dir.path(), "garbage");
    let e = start(&base, &s, &dir.path().join("a"));
    assert!(
        e.contains("answered init with garbage") && e.contains("not a protocol message"),
        "{e}"
    );
    s.python = fake(dir.path(), "silent");
    s.timeout_s = 2.0;
    let t0 = std::time::Instant::now();
    let e = start(&base, &s, &dir.path().join("b"));
    assert!(e.contains("did not answer init within 2 s"), "{e}");
    assert!(
        t0.elapsed().as_secs() < 25,
        "the silent worker held the learner {:?}",
        t0.elapsed()
    );
}

#[test]
fn a_crashed_worker_bad_tokens_and_a_checkpoint_of_another_shape_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let m = checkpoint(Arch::Qwen3, &base, None);
    let mut t = TorchLearner::start(
        &base,
        &options(1e-3, 2, None),
        &spec(1),
        &dir.path().join("a"),
    )
    .unwrap();
    // token ids outside the vocabulary: refused, and the worker goes on
    let vocab = m.model.cfg.vocab_size as u32;
    let e = t
        .sft_update(&[(vec![1, 2], vec![vocab + 5])])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("token id {}", vocab + 5)) && e.contains("vocabulary"),
        "{e}"
    );
    let ok = t.sft_update(&pairs(&m)).unwrap();
    assert!(ok.loss.is_finite());
    // a checkpoint of another shape to resume from
    let ck = dir.path().join("ck");
    t.save(&ck).unwrap();
    let other = dir.path().join("other");
    let tok = rla_model::tok::build_word_level(CORPUS, 1).unwrap();
    let cfg = rla_model::config::ModelConfig::tiny(Arch::Qwen3, tok.vocab_size(), 64, 2, 4, 2);
    rla_model::Lm::init(
        &cfg,
        tok,
        1,
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap()
    .save_weights(&other)
    .unwrap();
    let opts = OpenOptions {
        resume: Some(ck.clone()),
        ..options(1e-3, 2, None)
    };
    let e = match TorchLearner::start(&other, &opts, &spec(1), &dir.path().join("b")) {
        Ok(_) => panic!("resumed a state of another shape"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("loading")
            && e.contains("refused init")
            && e.contains(
                "another model's: model.embed_tokens.weight is [30, 32] there and [30, 64] here"
            ),
        "{e}"
    );
    // weights that do not fit the config
    std::fs::copy(other.join("config.json"), dir.path().join("ck/config.json")).unwrap();
    let e = match TorchLearner::start(
        &ck,
        &options(1e-3, 2, None),
        &spec(1),
        &dir.path().join("c"),
    ) {
        Ok(_) => panic!("loaded weights of another shape"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("size mismatch") || e.contains("do not fit"),
        "{e}"
    );
    // the worker killed between two calls: the next call says so, with the end of its log
    // rank 0 itself, as a crash would
    let pid = t.worker().hello["pid"].as_i64().unwrap();
    assert!(pid > 1);
    // SAFETY: kill(2) signals the worker's rank 0
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let e = t.sft_update(&pairs(&m)).unwrap_err().to_string();
    assert!(
        e.contains("torch learner worker")
            && (e.contains("exited during") || e.contains("dropped the connection")),
        "{e}"
    );
    assert!(e.contains("worker.log"), "{e}");
    // and every later call too, without waiting
    let e = t.sft_update(&pairs(&m)).unwrap_err().to_string();
    assert!(e.contains("torch learner worker"), "{e}");
}
