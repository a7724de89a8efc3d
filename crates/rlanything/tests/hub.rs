//! Models named by their Hugging Face id (`owner/name[@rev]`), found in a hub cache the test
//! makes (`HF_HUB_CACHE` set for the program): in a run config's model paths (`train`), and in
//! `eval --model`, `serve --model` and `lm`'s `--model`; an id missing from the cache is named
//! with the cache searched and the command that fetches it.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
mod common;
use common::{bin, succeeds, TINY_HOUSEHOLD as CONFIG};

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/household")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A hub cache holding the household base's two models as `owner/policy` and `owner/reward`,
/// snapshot `abc`, `refs/main` naming it.
fn cache(dir: &Path) -> PathBuf {
    let cache = dir.join("hub");
    for m in ["policy", "reward"] {
        let repo = cache.join(format!("models--owner--{m}"));
        copy_dir(&models().join(m), &repo.join("snapshots/abc"));
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), "abc\n").unwrap();
    }
    cache
}

/// The program with the test's cache, run in `dir` (which holds no `owner/` folder).
fn with_cache(dir: &Path) -> std::process::Command {
    let mut c = bin();
    c.env("HF_HUB_CACHE", dir.join("hub"))
        .env_remove("HF_HOME")
        .current_dir(dir);
    c
}

#[test]
fn lm_and_eval_open_a_model_by_its_hub_id() {
    let dir = tempfile::tempdir().unwrap();
    cache(dir.path());
    let logprobs = |model: &str| {
        let out = succeeds(with_cache(dir.path()).args([
            "lm",
            "logprobs",
            "--model",
            model,
            "--text",
            "go to fridge 1",
        ]));
        String::from_utf8(out.stdout).unwrap()
    };
    let local = logprobs(models().join("policy").to_str().unwrap());
    assert!(local.contains("logprobs"), "{local}");
    assert_eq!(logprobs("owner/policy"), local);
    assert_eq!(logprobs("owner/policy@abc"), local);
    assert_eq!(logprobs("owner/policy@main"), local);

    let out = with_cache(dir.path())
        .args([
            "lm",
            "generate",
            "--model",
            "owner/nothing",
            "--prompt",
            "x",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("huggingface-cli download owner/nothing") && err.contains("hub"),
        "{err}"
    );

    let eval = |model: &str| {
        let out = succeeds(with_cache(dir.path()).args([
            "eval",
            "--model",
            model,
            "--split",
            "validation",
            "--n",
            "3",
            "--step-limit",
            "4",
        ]));
        let text = String::from_utf8(out.stdout).unwrap();
        // the timing left out
        text.replace(model, "MODEL")
            .lines()
            .map(|l| l.split(" steps in ").next().unwrap().to_string() + "\n")
            .collect::<String>()
    };
    let by_path = models().join("policy");
    let canonical = by_path.canonicalize().unwrap();
    let local = eval(canonical.to_str().unwrap());
    let hub = eval("owner/policy");
    // the same model plays the same episodes; only its name differs
    let strip = |s: &str| {
        s.replace(
            dir.path()
                .join("hub/models--owner--policy/snapshots/abc")
                .to_str()
                .unwrap(),
            "MODEL",
        )
    };
    assert_eq!(strip(&hub), strip(&local), "{hub}\n{local}");
    assert!(local.contains("success"), "{local}");
}

#[test]
fn a_run_config_names_its_models_by_hub_id() {
    let dir = tempfile::tempdir().unwrap();
    cache(dir.path());
    let cfg = dir.path().join("run.toml");
    let text = CONFIG
        .replace("[policy]\n", "[policy]\npath = \"owner/policy\"\n")
        .replace("[reward]\n", "[reward]\npath = \"owner/reward@abc\"\n");
    std::fs::write(&cfg, &text).unwrap();
    let run = dir.path().join("run");
    succeeds(
        with_cache(dir.path())
            .args(["train", "--quiet", "--set", "iterations=1", "--config"])
            .arg(&cfg)
            .arg("--run")
            .arg(&run),
    );
    let recorded: toml::Table =
        toml::from_str(&std::fs::read_to_string(run.join("config.toml")).unwrap()).unwrap();
    for m in ["policy", "reward"] {
        let p = PathBuf::from(recorded[m]["path"].as_str().unwrap());
        assert!(
            p.ends_with(format!("models--owner--{m}/snapshots/abc")),
            "{}",
            p.display()
        );
    }
    assert_eq!(common::metrics(&run).len(), 2);

    // an id that is not in the cache: named before any work, with the way to fetch it
    std::fs::write(&cfg, text.replace("owner/policy", "owner/absent")).unwrap();
    let out = with_cache(dir.path())
        .args(["train", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(dir.path().join("r2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("policy.path = owner/absent")
            && err.contains("huggingface-cli download owner/absent"),
        "{err}"
    );
    assert!(!dir.path().join("r2/pretrained").exists());
}

#[test]
fn serve_serves_a_model_by_its_hub_id_under_that_name() {
    let dir = tempfile::tempdir().unwrap();
    cache(dir.path());
    let mut child = with_cache(dir.path())
        .args(["serve", "--model", "owner/policy", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("serving") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "serve ended early");
    }
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /v1/models HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(reply.contains("\"owner/policy\""), "{reply}");

    // a miss is an error that names the cache
    let out = with_cache(dir.path())
        .args(["serve", "--model", "owner/absent", "--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("huggingface-cli download owner/absent"));
}
