//! Generation over real HTTP: the OpenAI-compatible server over a checkpoint and the remote
//! sampler that talks to it give what the model gives in process; bad requests get JSON errors
//! with a 4xx status; bad replies are errors, never samples; a dead endpoint is skipped.

use rla_lm::{Finish, Message, SampleParams, Sampler};
use rla_model::config::{Arch, ModelConfig};
use rla_model::tok::build_word_level;
use rla_model::Lm;
use rla_remote::client::{Endpoints, LoraApi, RemoteSampler};
use rla_remote::server::{self, Options};
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;
mod common;
use common::{serve, serve_with, TINY_HOUSEHOLD as RUN};
use rla_lm::Codec;

const CORPUS: &str =
    "go to the fridge 1 open close take apple from in on put cabinet 2 3 look yes no \
                      \nThe capital of France is Paris\n\
                      <|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n";

fn lm() -> Lm {
    let tok = build_word_level(CORPUS, 1).unwrap();
    let cfg = ModelConfig::tiny(Arch::Qwen3, tok.vocab_size(), 32, 2, 4, 2);
    Lm::init(
        &cfg,
        tok,
        11,
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap()
}

fn served() -> (server::Running, Lm) {
    let s = server::start(lm(), "tiny", "127.0.0.1:0", 4, Options::default()).unwrap();
    (s, lm())
}

fn remote(urls: Vec<String>) -> RemoteSampler<rla_model::tok::Tok> {
    let mut e = Endpoints::one(&urls[0], "tiny");
    e.urls = urls;
    e.timeout = Duration::from_secs(60);
    e.cooldown = Duration::from_millis(200);
    RemoteSampler::new(lm().tok, e).unwrap()
}

fn prompts(m: &Lm) -> Vec<Vec<u32>> {
    ["go to the fridge 1", "open the cabinet 2 and take", "look"]
        .iter()
        .map(|t| m.encode(t).unwrap())
        .collect()
}

#[test]
fn the_same_prompt_sent_twice_among_allowed_answers_draws_its_own_sample() {
    // the rollouts of a task send the same prompt at the same step: each must be a draw of its
    // own, as in process
    let (s, local) = served();
    let r = remote(vec![s.url()]);
    let eos = local.tok.eos_ids[0];
    let answers: Vec<Vec<u32>> = ["go", "open", "look", "take", "the", "cabinet"]
        .iter()
        .map(|t| {
            let mut a = local.encode(t).unwrap();
            a.push(eos);
            a
        })
        .collect();
    let prompt = local.encode("go to the fridge 1").unwrap();
    let prompts = vec![prompt; 12];
    let allowed = vec![answers; 12];
    let p = SampleParams {
        temperature: 1.5,
        max_new_tokens: 4,
        ..Default::default()
    };
    for (name, out) in [
        (
            "remote",
            r.generate_within(&prompts, 1, &p, &allowed).unwrap(),
        ),
        (
            "in process",
            local.generate_within(&prompts, 1, &p, &allowed).unwrap(),
        ),
    ] {
        let distinct: std::collections::BTreeSet<&str> =
            out.iter().map(|g| g[0].text.as_str()).collect();
        assert!(distinct.len() > 1, "{name}: 12 draws all gave {distinct:?}");
    }
}

#[test]
fn remote_generation_equals_in_process() {
    let (s, local) = served();
    let r = remote(vec![s.url()]);
    assert_eq!(r.models().unwrap(), ["tiny"]);
    let ps = prompts(&local);
    for p in [
        SampleParams::greedy(12),
        SampleParams {
            temperature: 1.0,
            max_new_tokens: 10,
            seed: 5,
            ..Default::default()
        },
        SampleParams {
            temperature: 0.8,
            top_p: 0.9,
            top_k: 5,
            max_new_tokens: 10,
            stop: vec!["apple".into()],
            seed: 9,
        },
    ] {
        for n in [1, 3] {
            let a = local.generate(&ps, n, &p).unwrap();
            let b = r.generate(&ps, n, &p).unwrap();
            assert_eq!(a, b, "{p:?} n = {n}");
        }
    }
    // constrained answers through guided_choice: the same as the in-process trie
    let allowed: Vec<Vec<Vec<u32>>> = ps
        .iter()
        .map(|_| {
            ["take apple", "open fridge 1", "look"]
                .iter()
                .map(|t| {
                    let mut ids = local.encode(t).unwrap();
                    ids.push(local.eos_ids()[0]);
                    ids
                })
                .collect()
        })
        .collect();
    let p = SampleParams::greedy(8);
    // (one request per prompt: the same answers, log-probabilities to rounding of the batch shape)
    let a = local.generate_within(&ps, 1, &p, &allowed).unwrap();
    let b = r.generate_within(&ps, 1, &p, &allowed).unwrap();
    for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
        assert_eq!(
            (&x.tokens, &x.text, x.finish),
            (&y.tokens, &y.text, y.finish)
        );
        for (u, v) in x.logprobs.iter().zip(&y.logprobs) {
            assert!((u - v).abs() < 1e-4, "{u} vs {v}");
        }
    }
    // scoring through echo
    let pairs: Vec<(Vec<u32>, Vec<u32>)> = ps
        .iter()
        .map(|q| (q.clone(), local.encode("take apple").unwrap()))
        .collect();
    let a = local.score(&pairs).unwrap();
    let b = r.score(&pairs).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.len(), y.len());
        for (u, v) in x.iter().zip(y) {
            assert!((u - v).abs() < 1e-4, "{u} vs {v}");
        }
    }
    s.stop();
}

/// A raw HTTP request; returns (status, body).
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    write!(
        c,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (status, body)
}

#[test]
fn the_api_shapes_and_its_errors() {
    let (s, local) = served();
    let addr = s.addr().to_string();
    // completions with text prompts, n, logprobs and usage
    let (st, body) = http(
        &addr,
        "POST",
        "/v1/completions",
        r#"{"model": "tiny", "prompt": ["go to the", "look"], "n": 2, "max_tokens": 4, "temperature": 0, "logprobs": 1}"#,
    );
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "text_completion");
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 4);
    let idx: Vec<u64> = choices
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(idx, [0, 1, 2, 3]);
    let lp = &choices[0]["logprobs"];
    assert_eq!(
        lp["tokens"].as_array().unwrap().len(),
        lp["token_logprobs"].as_array().unwrap().len()
    );
    assert!(["stop", "length"].contains(&choices[0]["finish_reason"].as_str().unwrap()));
    let u = &v["usage"];
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap()
    );
    // greedy text equals the model's own
    let want = local
        .generate(
            &[local.encode("go to the").unwrap()],
            1,
            &SampleParams::greedy(4),
        )
        .unwrap();
    assert_eq!(choices[0]["text"], want[0][0].text.as_str());
    // chat completions through the chat template, with logprobs.content
    let (st, body) = http(
        &addr,
        "POST",
        "/v1/chat/completions",
        r#"{"model": "tiny", "messages": [{"role": "user", "content": "go to the fridge 1"}], "max_tokens": 5, "temperature": 0, "logprobs": true}"#,
    );
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    let prompt = local
        .chat_template(&[Message::new("user", "go to the fridge 1")], true)
        .unwrap()
        .unwrap();
    let want = local
        .generate(
            &[local.encode(&prompt).unwrap()],
            1,
            &SampleParams::greedy(5),
        )
        .unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        want[0][0].text.as_str()
    );
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert!(v["choices"][0]["logprobs"]["content"].is_array());
    // models
    let (st, body) = http(&addr, "GET", "/v1/models", "");
    assert_eq!(st, 200);
    assert!(body.contains(r#""id":"tiny""#), "{body}");
    // errors: JSON bodies, 4xx, naming what was wrong
    for (method, path, body, status, says) in [
        ("POST", "/v1/completions", "{not json", 400, "not valid"),
        (
            "POST",
            "/v1/completions",
            r#"{"model": "tiny"}"#,
            400,
            "prompt",
        ),
        (
            "POST",
            "/v1/completions",
            r#"{"model": "big", "prompt": "go"}"#,
            404,
            "big",
        ),
        (
            "POST",
            "/v1/completions",
            r#"{"model": "tiny", "prompt": "go", "n": 0}"#,
            400,
            "n = 0",
        ),
        (
            "POST",
            "/v1/completions",
            r#"{"model": "tiny", "prompt": "go", "top_p": 0}"#,
            400,
            "top_p",
        ),
        (
            "POST",
            "/v1/completions",
            r#"{"model": "tiny", "prompt": "go", "stream": true}"#,
            400,
            "stream",
        ),
        (
            "POST",
            "/v1/completions",
            r#"{"model": "tiny", "prompt": "go", "max_tokens": 100000}"#,
            400,
            "max_tokens",
        ),
        (
            "POST",
            "/v1/completions",
            r#"{"model": "tiny", "prompt": [[]]}"#,
            400,
            "empty",
        ),
        (
            "POST",
            "/v1/chat/completions",
            r#"{"model": "tiny", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]}"#,
            400,
            "image",
        ),
        (
            "POST",
            "/v1/chat/completions",
            r#"{"model": "tiny", "messages": [{"role": "robot", "content": "hi"}]}"#,
            400,
            "robot",
        ),
        ("GET", "/v1/completions", "", 405, "method"),
        ("GET", "/v2/anything", "", 404, "no such endpoint"),
    ] {
        let (st, b) = http(&addr, method, path, body);
        assert_eq!(st, status, "{path} {body}: {b}");
        let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_else(|_| panic!("{b}"));
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains(says), "{m} should say {says}");
    }
    // and the server still serves
    let r = remote(vec![s.url()]);
    assert_eq!(
        r.generate(&prompts(&local), 1, &SampleParams::greedy(3))
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn prompts_past_the_context_and_large_bodies_are_refused_and_the_server_lives_on() {
    let (s, _) = served();
    let addr = s.addr().to_string();
    let ask = |body: String| http(&addr, "POST", "/v1/completions", &body);
    // a 1 MB prompt (about 350k tokens) against a 4096-token context: 400, as vLLM answers
    let huge = "go ".repeat(350_000);
    let (st, body) = ask(format!(
        r#"{{"model": "tiny", "prompt": "{huge}", "max_tokens": 1}}"#
    ));
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("context of 4096"), "{body}");
    // a prompt that fits, with max_tokens past the context
    let (st, body) = ask(format!(
        r#"{{"model": "tiny", "prompt": "{}", "max_tokens": 200}}"#,
        "go ".repeat(4000)
    ));
    assert_eq!(st, 400, "{body}");
    let (st, body) = ask(r#"{"model": "tiny", "prompt": "go to", "max_tokens": 5000}"#.into());
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("max_tokens"), "{body}");
    // chat too
    let (st, body) = http(
        &addr,
        "POST",
        "/v1/chat/completions",
        &format!(
            r#"{{"model": "tiny", "messages": [{{"role": "user", "content": "{}"}}], "max_tokens": 4}}"#,
            "go ".repeat(5000)
        ),
    );
    assert_eq!(st, 400, "{body}");
    // and the server still answers
    let (st, body) = ask(r#"{"model": "tiny", "prompt": "go to", "max_tokens": 3}"#.into());
    assert_eq!(st, 200, "{body}");
    // bodies over the limit: 413 (the default limit is far below what broke the server)
    assert!(Options::default().max_body <= 8 << 20);
    let small = server::start(
        lm(),
        "tiny",
        "127.0.0.1:0",
        1,
        Options {
            max_body: 1024,
            ..Options::default()
        },
    )
    .unwrap();
    let (st, body) = http(
        &small.addr().to_string(),
        "POST",
        "/v1/completions",
        &format!(r#"{{"model": "tiny", "prompt": "{}"}}"#, "go ".repeat(700)),
    );
    assert_eq!(st, 413, "{body}");
}

#[test]
fn a_dead_endpoint_is_skipped_and_bad_requests_are_not_retried() {
    let (s, local) = served();
    // a port nothing listens on: freed on 127.0.0.2, where no other test's server binds (the
    // others take 127.0.0.1, so the port cannot be handed to one of them meanwhile)
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let r = remote(vec![dead.clone(), s.url()]);
    let ps = prompts(&local);
    let want = local.generate(&ps, 1, &SampleParams::greedy(6)).unwrap();
    for _ in 0..3 {
        same(
            &r.generate(&ps, 1, &SampleParams::greedy(6)).unwrap(),
            &want,
        );
    }
    // only dead endpoints: a clear error naming them
    let r = remote(vec![dead.clone()]);
    let e = r
        .generate(&ps, 1, &SampleParams::greedy(6))
        .unwrap_err()
        .to_string();
    assert!(e.contains(&dead), "{e}");
    // a wrong model name is the request's fault: one answer, the server's message
    let mut cfg = Endpoints::one(&s.url(), "other");
    cfg.tries = 3;
    let r = RemoteSampler::new(lm().tok, cfg).unwrap();
    let e = r
        .generate(&ps, 1, &SampleParams::greedy(2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("404") && e.contains("other"), "{e}");
}

/// A server that answers every request with `body` (status 200).
fn fake(body: &'static str) -> (String, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        for c in l.incoming().take(1) {
            let mut c = c.unwrap();
            let mut r = BufReader::new(c.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut b = vec![0; len];
            r.read_exact(&mut b).unwrap();
            write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
    });
    (url, h)
}

#[test]
fn malformed_replies_are_errors_not_samples() {
    let m = lm();
    let ps = vec![m.encode("go to the").unwrap()];
    for (body, says) in [
        ("not json", "malformed"),
        (
            r#"{"id": "x", "object": "text_completion", "created": 0, "model": "tiny", "choices": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}"#,
            "0 choices",
        ),
        (
            r#"{"id": "x", "object": "text_completion", "created": 0, "model": "tiny", "choices": [{"index": 0, "text": "a", "logprobs": null, "finish_reason": "stop"}], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}"#,
            "no logprobs",
        ),
        (
            r#"{"id": "x", "object": "text_completion", "created": 0, "model": "tiny", "choices": [{"index": 0, "text": "a", "logprobs": {"tokens": ["token_id:5", "token_id:6"], "token_logprobs": [-0.5]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}"#,
            "2 tokens and 1",
        ),
        (
            r#"{"id": "x", "object": "text_completion", "created": 0, "model": "tiny", "choices": [{"index": 0, "text": "a", "logprobs": {"tokens": ["apple"], "token_logprobs": [-0.5]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}"#,
            "token_id",
        ),
        (
            r#"{"id": "x", "object": "text_completion", "created": 0, "model": "tiny", "choices": [{"index": 0, "text": "a", "logprobs": {"tokens": ["token_id:5"], "token_logprobs": [0.7]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}"#,
            "log-probability 0.7",
        ),
        (
            r#"{"id": "x", "object": "text_completion", "created": 0, "model": "tiny", "choices": [{"index": 3, "text": "a", "logprobs": {"tokens": ["token_id:5"], "token_logprobs": [-0.7]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}"#,
            "index 3",
        ),
    ] {
        let (url, h) = fake(body);
        let mut cfg = Endpoints::one(&url, "tiny");
        cfg.tries = 1;
        let r = RemoteSampler::new(lm().tok, cfg).unwrap();
        let e = r
            .generate(&ps, 1, &SampleParams::greedy(2))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e} should say {says}");
        h.join().unwrap();
    }
}

#[test]
fn the_serve_command_serves_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    lm().save_checkpoint(&ck).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args([
            "serve",
            "--model",
            ck.to_str().unwrap(),
            "--port",
            "0",
            "--name",
            "tiny",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let r = remote(vec![url]);
    let local = lm();
    let ps = prompts(&local);
    let p = SampleParams::greedy(8);
    assert_eq!(
        r.generate(&ps, 1, &p).unwrap(),
        local.generate(&ps, 1, &p).unwrap()
    );
    let out = r
        .generate(
            &ps,
            2,
            &SampleParams {
                seed: 3,
                max_new_tokens: 4,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(out.iter().flatten().all(|s| s.finish != Finish::Stop));
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn a_training_run_samples_on_servers_loads_each_update_and_survives_a_dead_server() {
    // both models train LoRA adapters and send them after every update, the policy's with
    // vLLM's call, the judge's with SGLang's
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, RUN).unwrap();
    let bin = env!("CARGO_BIN_EXE_rlanything");
    let st = std::process::Command::new(bin)
        .args(["pretrain", "--config", plain.to_str().unwrap(), "--out"])
        .arg(run.join("pretrained"))
        .status()
        .unwrap();
    assert!(st.success());
    let logs: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("server{i}.log")))
        .collect();
    let (mut a, ua) = serve(&run.join("pretrained/policy"), "policy", &logs[0]);
    let (mut b, ub) = serve(&run.join("pretrained/policy"), "policy", &logs[1]);
    let (mut c, uc) = serve(&run.join("pretrained/reward"), "reward", &logs[2]);
    let cfg = dir.path().join("served.toml");
    let judge_weights = dir.path().join("shared/judge");
    std::fs::write(
        &cfg,
        format!(
            "{RUN}\n[policy.lora]\nr = 4\n[policy.server]\nendpoints = [\"{ua}\", \"{ub}\"]\nmodel = \"policy\"\ntries = 8\npush = \"lora\"\n\
             [reward.lora]\nr = 2\n[reward.server]\nendpoints = [\"{uc}\"]\nmodel = \"reward\"\nweights_dir = \"{}\"\npush = \"lora\"\nlora_api = \"sglang\"\n",
            judge_weights.display()
        ),
    )
    .unwrap();
    let mut train = std::process::Command::new(bin)
        .args([
            "train",
            "--quiet",
            "--config",
            cfg.to_str().unwrap(),
            "--run",
        ])
        .arg(&run)
        .spawn()
        .unwrap();
    // kill one policy server once the first iteration is done: the rest of the run is on the other
    let metrics = run.join("metrics.jsonl");
    let t0 = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(&metrics).unwrap_or_default();
        if text.contains("\"iteration\":1,") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no first iteration"
        );
        if let Some(s) = train.try_wait().unwrap() {
            panic!("the run ended early: {s}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    a.kill().unwrap();
    let _ = a.wait();
    let st = train.wait().unwrap();
    b.kill().unwrap();
    c.kill().unwrap();
    let _ = (b.wait(), c.wait());
    assert!(st.success(), "the run failed after a server died");
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(text.contains("\"iteration\":3,"), "{text}");
    // the starting adapters and one update per iteration reached the live servers, named
    // after their version
    for (log, name) in [(&logs[1], "policy"), (&logs[2], "reward")] {
        let l = std::fs::read_to_string(log).unwrap();
        for v in 1..=4 {
            assert!(l.contains(&format!("adapter={name}-v{v} ")), "{l}");
        }
        assert!(!l.contains("weights updated"), "{l}");
    }
    // the policy's checkpoints hold its adapters in PEFT's format beside the base weights
    let ck = run.join("checkpoint/policy");
    assert!(ck.join("adapter_config.json").is_file(), "{}", ck.display());
    assert!(ck.join("adapter_model.safetensors").is_file());
    let pushed = run.join("served/policy");
    let newest = std::fs::read_dir(&pushed)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    // what the servers got is the adapter alone
    assert!(newest.join("adapter_model.safetensors").is_file());
    assert!(!newest.join("model.safetensors").exists());
    // the policy's weights in the run's served/, the judge's where the config put them
    assert!(run.join("served/policy").is_dir());
    assert!(!run.join("served/reward").exists() && judge_weights.is_dir());
    // and the last version is what the judge's server loaded last
    let last = std::fs::read_dir(&judge_weights)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .max()
        .unwrap();
    let l = std::fs::read_to_string(&logs[2]).unwrap();
    assert!(l
        .lines()
        .rev()
        .find(|x| x.contains("adapter loaded"))
        .unwrap()
        .contains(&last));
}

#[test]
fn greedy_evaluation_through_two_servers_equals_in_process() {
    use rla_train::setting::{Ctx, Setting, Split};
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, RUN).unwrap();
    let out = dir.path().join("pre");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args(["pretrain", "--config", plain.to_str().unwrap(), "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let load = || {
        Lm::load(
            &out.join("policy"),
            candle_core::DType::F32,
            &candle_core::Device::Cpu,
        )
        .unwrap()
    };
    let a = server::start(load(), "policy", "127.0.0.1:0", 2, Options::default()).unwrap();
    let b = server::start(load(), "policy", "127.0.0.1:0", 2, Options::default()).unwrap();
    let mut e = Endpoints::one(&a.url(), "policy");
    e.urls.push(b.url());
    let remote = RemoteSampler::new(load().tok, e).unwrap();
    let local = load();
    let cfg = rla_train::RunConfig::load(&plain).unwrap();
    let ctx = Ctx {
        cfg: &cfg,
        k: 0,
        progress: false,
        run: None,
    };
    let mut h = rla_train::household::Household::default();
    for split in [Split::InDomain, Split::Ood] {
        let x = h.evaluate(ctx, &local, split, 12).unwrap();
        let y = h.evaluate(ctx, &remote, split, 12).unwrap();
        assert_eq!(x, y, "{split:?}");
    }
}

/// The interpreter with the `openai` package: `$RLA_OPENAI_PYTHON`, else the one
/// `scripts/openai-client.sh` installs.
fn openai_python() -> String {
    std::env::var("RLA_OPENAI_PYTHON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/openai-venv/bin/python"
        )
        .to_string()
    })
}

#[test]
fn the_official_openai_client_talks_to_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    lm().save_checkpoint(&ck).unwrap();
    let (a1, a2) = (dir.path().join("a1"), dir.path().join("a2"));
    adapter(lm(), &a1, 5);
    adapter(lm(), &a2, 6);
    let (mut child, url) = serve_with(
        &ck,
        "tiny",
        &dir.path().join("log"),
        &["--adapter", &format!("first={}", a1.display())],
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openai/client.py");
    let out = std::process::Command::new(openai_python())
        .args([script, &url, "tiny", "first", a2.to_str().unwrap()])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {} ({e}): run scripts/openai-client.sh or set RLA_OPENAI_PYTHON",
                openai_python()
            )
        });
    child.kill().unwrap();
    let _ = child.wait();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["models"], serde_json::json!(["tiny", "first"]));
    // the client's greedy texts are the model's own
    let local = lm();
    for (i, p) in ["go to the", "look"].iter().enumerate() {
        let want = local
            .generate(&[local.encode(p).unwrap()], 1, &SampleParams::greedy(5))
            .unwrap();
        for j in 0..2 {
            assert_eq!(v["greedy"][i * 2 + j], want[0][0].text.as_str());
        }
    }
    // the adapters' greedy texts are theirs
    for (k, a) in [("adapter_greedy", &a1), ("loaded_greedy", &a2)] {
        let m = local.with_adapter(a).unwrap();
        let want = m
            .generate(
                &[m.encode("go to the").unwrap()],
                1,
                &SampleParams::greedy(4),
            )
            .unwrap();
        assert_eq!(v[k], want[0][0].text.as_str(), "{k}");
    }
    assert_eq!(
        v["models_with_adapter"],
        serde_json::json!(["tiny", "first"])
    );
    assert_eq!(
        v["models_after_unload"],
        serde_json::json!(["tiny", "first"])
    );
    assert_eq!(v["top_logprobs"].as_array().unwrap().len(), 3);
    let e = &v["errors"];
    assert_eq!(e["model"][0], 404);
    assert_eq!(e["unloaded"][0], 404);
    for k in ["n", "top_p", "image"] {
        assert_eq!(e[k][0], 400, "{k}: {e}");
    }
    assert!(e["image"][1].as_str().unwrap().contains("image"), "{e}");
}

#[test]
fn an_api_key_is_asked_for_and_sent() {
    let loader: server::Loader<Lm> = Box::new(|d: &std::path::Path| {
        Lm::load(d, candle_core::DType::F32, &candle_core::Device::Cpu).map_err(|e| e.to_string())
    });
    let opts = Options {
        api_key: Some("s3cret".into()),
        ..Default::default()
    };
    let loaders = server::Loaders {
        weights: Some(loader),
        adapter: None,
    };
    let s = server::start_with(lm(), loaders, "tiny", "127.0.0.1:0", 2, opts).unwrap();
    let ps = prompts(&lm());
    // no key: 401, not retried
    let e = remote(vec![s.url()])
        .generate(&ps, 1, &SampleParams::greedy(2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("401") && e.contains("API key"), "{e}");
    // a run's model reads the key from the variable its config names, and sends it
    std::env::set_var("RLA_SERVE_TEST_KEY", "s3cret");
    let spec = rla_train::config::ServerSpec {
        endpoints: vec![s.url()],
        model: "tiny".into(),
        api_key_env: Some("RLA_SERVE_TEST_KEY".into()),
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let l = lm();
    let tok = Box::new(l.tok.clone());
    let served =
        rla_train::served::Served::new(Box::new(l), tok, &spec, dir.path().join("w")).unwrap();
    let local = lm();
    let p = SampleParams::greedy(6);
    assert_eq!(
        served.generate(&ps, 1, &p).unwrap(),
        local.generate(&ps, 1, &p).unwrap()
    );
}

/// Log-probabilities equal up to float rounding (a batch split over servers, or scored one by
/// one, pads differently).
fn close(a: &[Vec<f32>], b: &[Vec<f32>]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len());
        for (p, q) in x.iter().zip(y) {
            assert!((p - q).abs() < 1e-5, "{x:?} vs {y:?}");
        }
    }
}

/// The same samples: tokens, texts and ends equal, log-probabilities up to float rounding.
fn same(a: &[Vec<rla_lm::Sample>], b: &[Vec<rla_lm::Sample>]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len());
        for (s, t) in x.iter().zip(y) {
            assert_eq!(
                (&s.tokens, &s.text, s.finish),
                (&t.tokens, &t.text, t.finish)
            );
            close(
                std::slice::from_ref(&s.logprobs),
                std::slice::from_ref(&t.logprobs),
            );
        }
    }
}

/// The server's loaders for new weights and adapters, as `rlanything serve` has them.
fn loaders() -> server::Loaders<Lm> {
    server::Loaders {
        weights: Some(Box::new(|d: &std::path::Path| {
            Lm::load(d, candle_core::DType::F32, &candle_core::Device::Cpu)
                .map_err(|e| e.to_string())
        })),
        adapter: Some(Box::new(|base: &Lm, d: &std::path::Path| {
            base.with_adapter(d).map_err(|e| e.to_string())
        })),
    }
}

/// A server of the tiny model that loads weights and adapters.
fn adapter_server() -> server::Running {
    server::start_with(
        lm(),
        loaders(),
        "tiny",
        "127.0.0.1:0",
        2,
        Options::default(),
    )
    .unwrap()
}

/// Trains a LoRA adapter on `base` for a few SFT steps and writes it in PEFT's format to `dir`.
fn adapter(mut base: Lm, dir: &std::path::Path, seed: u64) {
    let tc = rla_model::train::TrainConfig {
        lr: 5e-2,
        micro_batch: 4,
        ..Default::default()
    };
    let lc = rla_model::lora::LoraConfig {
        r: 4,
        ..Default::default()
    };
    base.enable_training(tc, Some(lc.clone()), seed, None)
        .unwrap();
    let answer = base.encode("take apple").unwrap();
    let pairs: Vec<_> = prompts(&base)
        .into_iter()
        .map(|p| (p, answer.clone()))
        .collect();
    for _ in 0..3 {
        rla_lm::Learner::sft_update(&mut base, &pairs).unwrap();
    }
    rla_model::lora::save_peft(&base.model, &lc, dir, "tiny").unwrap();
}

fn model_ids(addr: &str) -> Vec<serde_json::Value> {
    let (st, body) = http(addr, "GET", "/v1/models", "");
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"].as_array().unwrap().clone()
}

#[test]
fn adapters_are_loaded_served_by_name_and_unloaded() {
    let dir = tempfile::tempdir().unwrap();
    let (a1, a2) = (dir.path().join("a1"), dir.path().join("a2"));
    adapter(lm(), &a1, 5);
    adapter(lm(), &a2, 6);
    let s = adapter_server();
    let addr = s.addr().to_string();
    let r = remote(vec![s.url()]);
    let base = lm();
    let ps = prompts(&base);
    let answer = base.encode("take apple").unwrap();
    let pairs: Vec<_> = ps.iter().map(|p| (p.clone(), answer.clone())).collect();
    let before = r.score(&pairs).unwrap();
    close(&before, &base.score(&pairs).unwrap());
    // the adapter, loaded under a new name that the following requests give
    r.load_adapter("tiny-v1", a1.to_str().unwrap()).unwrap();
    assert_eq!(r.model(), "tiny-v1");
    let adapted = base.with_adapter(&a1).unwrap();
    let after = r.score(&pairs).unwrap();
    close(&after, &adapted.score(&pairs).unwrap());
    assert!(
        after
            .concat()
            .iter()
            .zip(before.concat())
            .any(|(a, b)| (a - b).abs() > 1e-3),
        "the adapter changes the model"
    );
    let g = SampleParams::greedy(6);
    same(
        &r.generate(&ps, 1, &g).unwrap(),
        &adapted.generate(&ps, 1, &g).unwrap(),
    );
    let cards = model_ids(&addr);
    assert_eq!(cards.len(), 2);
    assert_eq!(cards[1]["id"], "tiny-v1");
    assert_eq!(cards[1]["parent"], "tiny");
    assert_eq!(cards[1]["root"], a1.to_str().unwrap());
    // the base is still served under its own name
    let (st, body) = http(
        &addr,
        "POST",
        "/v1/completions",
        r#"{"model": "tiny", "prompt": "look", "max_tokens": 2, "temperature": 0}"#,
    );
    assert_eq!(st, 200, "{body}");
    // two newer versions: the oldest is unloaded, the two newest stay
    r.load_adapter("tiny-v2", a2.to_str().unwrap()).unwrap();
    r.load_adapter("tiny-v3", a1.to_str().unwrap()).unwrap();
    let ids: Vec<_> = model_ids(&addr).iter().map(|c| c["id"].clone()).collect();
    assert_eq!(ids, ["tiny", "tiny-v2", "tiny-v3"]);
    // new base weights: the adapters are loaded again on them
    let ck = dir.path().join("ck");
    base.save_checkpoint(&ck).unwrap();
    r.update_weights(ck.to_str().unwrap()).unwrap();
    assert_eq!(model_ids(&addr).len(), 3);
    // bad adapter calls get clear errors
    let other = {
        let tok = build_word_level(CORPUS, 1).unwrap();
        let cfg = ModelConfig::tiny(Arch::Qwen3, tok.vocab_size(), 16, 2, 4, 2);
        Lm::init(
            &cfg,
            tok,
            2,
            candle_core::DType::F32,
            &candle_core::Device::Cpu,
        )
        .unwrap()
    };
    let wrong = dir.path().join("wrong");
    adapter(other, &wrong, 1);
    for (path, body, status, says) in [
        (
            "/v1/load_lora_adapter",
            r#"{"lora_name": "x", "lora_path": "/no/such/adapter"}"#.to_string(),
            400,
            "/no/such/adapter",
        ),
        (
            "/v1/load_lora_adapter",
            format!(
                r#"{{"lora_name": "x", "lora_path": "{}"}}"#,
                wrong.display()
            ),
            400,
            "shapes",
        ),
        (
            "/v1/load_lora_adapter",
            format!(
                r#"{{"lora_name": "tiny", "lora_path": "{}"}}"#,
                a1.display()
            ),
            400,
            "name of its own",
        ),
        (
            "/v1/load_lora_adapter",
            r#"{"lora_path": "/x"}"#.to_string(),
            400,
            "lora_name",
        ),
        (
            "/v1/unload_lora_adapter",
            r#"{"lora_name": "nope"}"#.to_string(),
            404,
            "nope",
        ),
    ] {
        let (st, text) = http(&addr, "POST", path, &body);
        assert_eq!(st, status, "{body}: {text}");
        assert!(text.contains(says), "{body}: {text}");
    }
    let (st, text) = http(
        &addr,
        "POST",
        "/v1/completions",
        r#"{"model": "tiny-v1", "prompt": "look", "max_tokens": 2}"#,
    );
    assert_eq!(st, 404);
    assert!(
        text.contains("tiny-v2") && text.contains("tiny-v3"),
        "{text}"
    );
    // SGLang's calls do the same
    let mut e = Endpoints::one(&s.url(), "tiny");
    e.lora_api = LoraApi::Sglang;
    let sg = RemoteSampler::new(lm().tok, e).unwrap();
    sg.load_adapter("sg", a2.to_str().unwrap()).unwrap();
    close(
        &sg.score(&pairs).unwrap(),
        &base.with_adapter(&a2).unwrap().score(&pairs).unwrap(),
    );
    // a server without an adapter loader says so
    let (plain, _) = served();
    let (st, text) = http(
        &plain.addr().to_string(),
        "POST",
        "/v1/load_lora_adapter",
        &format!(r#"{{"lora_name": "x", "lora_path": "{}"}}"#, a1.display()),
    );
    assert_eq!(st, 400);
    assert!(text.contains("cannot load LoRA"), "{text}");
}

#[test]
fn top_logprobs_are_the_most_likely_tokens() {
    let (s, local) = served();
    let addr = s.addr().to_string();
    let (st, body) = http(
        &addr,
        "POST",
        "/v1/completions",
        r#"{"model": "tiny", "prompt": "go to the", "max_tokens": 4, "temperature": 0, "logprobs": 3, "return_tokens_as_token_ids": true}"#,
    );
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let lp = &v["choices"][0]["logprobs"];
    let tokens: Vec<u32> = lp["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| rla_remote::protocol::token_id(t.as_str().unwrap()).unwrap())
        .collect();
    let q = local.encode("go to the").unwrap();
    let want = local
        .top_logprobs(&[(q.clone(), tokens.clone())], 3)
        .unwrap()
        .remove(0);
    let top = lp["top_logprobs"].as_array().unwrap();
    assert_eq!(top.len(), tokens.len());
    for (k, alts) in top.iter().enumerate() {
        let m = alts.as_object().unwrap();
        assert_eq!(m.len(), 3);
        for (id, l) in &want[k] {
            let got = m[&format!("token_id:{id}")].as_f64().unwrap();
            assert!((got - *l as f64).abs() < 1e-5);
        }
        // greedy: the sampled token is the most likely one
        assert_eq!(want[k][0].0, tokens[k]);
        let sampled = lp["token_logprobs"][k].as_f64().unwrap();
        assert!((sampled - want[k][0].1 as f64).abs() < 1e-4, "{sampled}");
    }
    // chat: the alternatives of each reply token
    let (st, body) = http(
        &addr,
        "POST",
        "/v1/chat/completions",
        r#"{"model": "tiny", "messages": [{"role": "user", "content": "look"}], "max_tokens": 3, "temperature": 0, "logprobs": true, "top_logprobs": 2}"#,
    );
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    for t in v["choices"][0]["logprobs"]["content"].as_array().unwrap() {
        let alts = t["top_logprobs"].as_array().unwrap();
        assert_eq!(alts.len(), 2);
        assert_eq!(alts[0]["token"], t["token"]);
        assert!(alts[0]["logprob"].as_f64() >= alts[1]["logprob"].as_f64());
    }
    for (body, param) in [
        (
            r#"{"model": "tiny", "messages": [{"role": "user", "content": "look"}], "top_logprobs": 2}"#,
            "/v1/chat/completions",
        ),
        (
            r#"{"model": "tiny", "prompt": "look", "logprobs": 21}"#,
            "/v1/completions",
        ),
    ] {
        let (st, text) = http(&addr, "POST", param, body);
        assert_eq!(st, 400, "{text}");
        assert!(text.contains("logprobs"), "{text}");
    }
}

/// A server that takes connections and never answers them.
fn silent() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            held.push(c);
        }
    });
    url
}

#[test]
fn a_slow_server_times_out_and_its_requests_go_elsewhere() {
    let (s, local) = served();
    let slow = silent();
    let mut e = Endpoints::one(&slow, "tiny");
    e.urls.push(s.url());
    e.timeout = Duration::from_millis(300);
    e.cooldown = Duration::from_secs(60);
    let r = RemoteSampler::new(lm().tok, e).unwrap();
    let ps = prompts(&local);
    let g = SampleParams::greedy(6);
    let want = local.generate(&ps, 1, &g).unwrap();
    for _ in 0..2 {
        same(&r.generate(&ps, 1, &g).unwrap(), &want);
    }
    // with only the slow one, the error names it and the time-out
    let mut e = Endpoints::one(&slow, "tiny");
    e.timeout = Duration::from_millis(200);
    e.tries = 2;
    let r = RemoteSampler::new(lm().tok, e).unwrap();
    let err = r.generate(&ps, 1, &g).unwrap_err().to_string();
    assert!(err.contains(&slow) && err.contains("timed out"), "{err}");
}

#[test]
fn a_chat_with_an_image_goes_as_a_data_uri_and_is_refused_by_a_text_model() {
    use rla_remote::protocol::{ChatMessage, Content, ImageUrl, Part};
    let (s, local) = served();
    let r = remote(vec![s.url()]);
    let text = ChatMessage {
        role: "user".into(),
        content: Content::Text("look".into()),
    };
    // a text conversation: the reply's tokens and log-probabilities are the model's
    let got = r
        .chat(vec![text.clone()], 2, &SampleParams::greedy(4))
        .unwrap();
    assert_eq!(got.len(), 2);
    let prompt = local
        .chat_template(&[Message::new("user", "look")], true)
        .unwrap()
        .unwrap();
    let ids = local.encode(&prompt).unwrap();
    let want = local
        .generate(&[ids], 1, &SampleParams::greedy(4))
        .unwrap()
        .remove(0)
        .remove(0);
    assert_eq!(got[0], want);
    // an image part: a text-only server refuses it, and the error says why
    let image = ChatMessage {
        role: "user".into(),
        content: Content::Parts(vec![
            Part::Text {
                text: "what is on the screen?".into(),
            },
            Part::ImageUrl {
                image_url: ImageUrl {
                    url: "data:image/png;base64,iVBORw0KGgo=".into(),
                },
            },
        ]),
    };
    let e = r
        .chat(vec![image], 1, &SampleParams::greedy(4))
        .unwrap_err()
        .to_string();
    assert!(e.contains("400") && e.contains("image"), "{e}");
}

#[test]
fn probe_says_what_a_server_offers() {
    let s = adapter_server();
    let checks = rla_remote::probe::probe(&s.url(), "tiny", None, Duration::from_secs(60));
    assert_eq!(checks.len(), 7);
    for c in &checks {
        assert!(c.result.is_ok(), "{c:?}");
    }
    // a server without adapters, asked for another model: the model is missing, and so is
    // everything that names it
    let (plain, _) = served();
    let checks = rla_remote::probe::probe(&plain.url(), "other", None, Duration::from_secs(60));
    assert!(checks.iter().all(|c| c.result.is_err()), "{checks:?}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args(["probe", "--url", &plain.url(), "--model", "tiny"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // everything a run needs is there; adapters are not
    assert!(out.status.success(), "{text}");
    assert!(text.contains("serves what RL runs need"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("no") && l.contains("LoRA") && l.contains("cannot load")),
        "{text}"
    );
}

/// A server that answers every request with `status` and a JSON error; counts the requests.
fn refusing(status: u16) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let mut r = BufReader::new(c.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut b = vec![0; len];
            let _ = r.read_exact(&mut b);
            seen.fetch_add(1, Ordering::SeqCst);
            let body = format!(
                r#"{{"error": {{"message": "busy ({status})", "type": "server_error", "param": null, "code": null}}}}"#
            );
            let _ = write!(
                c,
                "HTTP/1.1 {status} Busy\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, count)
}

#[test]
fn overloaded_and_failing_servers_are_retried_elsewhere() {
    use std::sync::atomic::Ordering;
    let (s, local) = served();
    let ps = prompts(&local);
    let g = SampleParams::greedy(6);
    let want = local.generate(&ps, 1, &g).unwrap();
    for status in [429, 500, 503] {
        let (bad, count) = refusing(status);
        let r = remote(vec![bad.clone(), s.url()]);
        same(&r.generate(&ps, 1, &g).unwrap(), &want);
        assert!(count.load(Ordering::SeqCst) >= 1, "{status} was tried");
        // alone, it is tried `tries` times with back-off, and the error is its own
        let mut e = Endpoints::one(&bad, "tiny");
        e.tries = 3;
        e.cooldown = Duration::from_millis(1);
        let before = count.load(Ordering::SeqCst);
        let err = RemoteSampler::new(lm().tok, e)
            .unwrap()
            .generate(&ps, 1, &g)
            .unwrap_err()
            .to_string();
        assert_eq!(count.load(Ordering::SeqCst) - before, 3, "{status}");
        assert!(
            err.contains(&format!("HTTP {status}")) && err.contains("busy"),
            "{err}"
        );
    }
}
