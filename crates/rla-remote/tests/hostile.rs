//! The server against hostile clients and odd requests: clients that declare a body and never
//! send it, or trickle it, or send nothing at all, do not hold the workers and are cut off with a
//! reply that says why, `echo` of a one-token prompt is answered, and guided choices the
//! vocabulary cannot write are refused (not answered with something that is none of them).

use rla_lm::{Codec, Finish, LmError, Message, Request, Sample, Sampler};
use rla_remote::server::{self, Options};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A word-level model over a fixed vocabulary (id 0 is `<unk>`, id 1 the end of a sequence)
/// that always answers its first allowed answer, or `yes`.
struct Words;

const VOCAB: [&str; 5] = ["<unk>", "<eos>", "yes", "no", "go"];

impl Codec for Words {
    fn encode(&self, text: &str) -> rla_lm::Result<Vec<u32>> {
        Ok(text
            .split_whitespace()
            .map(|w| VOCAB.iter().position(|v| *v == w).unwrap_or(0) as u32)
            .collect())
    }
    fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
        ids.iter()
            .map(|&i| VOCAB.get(i as usize).copied())
            .collect::<Option<Vec<_>>>()
            .map(|w| w.join(" "))
            .ok_or_else(|| LmError::Unsupported("id".into()))
    }
    fn eos_ids(&self) -> &[u32] {
        &[1]
    }
    fn chat_template(&self, _: &[Message], _: bool) -> rla_lm::Result<Option<String>> {
        Ok(None)
    }
}

impl Sampler for Words {
    fn sample(&self, r: &Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        Ok(r.prompts
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let tokens = match r.allowed {
                    Some(a) => a[i][0].clone(),
                    None => vec![2, 1],
                };
                let text = self.decode(&tokens[..tokens.len() - 1]).unwrap();
                let s = Sample {
                    logprobs: vec![-0.5; tokens.len()],
                    tokens,
                    text,
                    finish: Finish::Eos,
                };
                vec![s; r.n]
            })
            .collect())
    }
    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        // as the real back ends: an empty response has nothing to score
        pairs
            .iter()
            .map(|(_, r)| {
                if r.is_empty() {
                    Err(LmError::Unsupported("an empty response".into()))
                } else {
                    Ok(vec![-1.0; r.len()])
                }
            })
            .collect()
    }
    fn vocab_size(&self) -> Option<usize> {
        Some(VOCAB.len())
    }
}

/// [`Words`], taking a while over each answer.
struct Slow(Duration);

impl Codec for Slow {
    fn encode(&self, text: &str) -> rla_lm::Result<Vec<u32>> {
        Words.encode(text)
    }
    fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
        Words.decode(ids)
    }
    fn eos_ids(&self) -> &[u32] {
        &[1]
    }
    fn chat_template(&self, m: &[Message], g: bool) -> rla_lm::Result<Option<String>> {
        Words.chat_template(m, g)
    }
}

impl Sampler for Slow {
    fn sample(&self, r: &Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        std::thread::sleep(self.0);
        Words.sample(r)
    }
    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        Words.score(pairs)
    }
    fn vocab_size(&self) -> Option<usize> {
        Words.vocab_size()
    }
}

fn post(addr: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    answer(&mut s)
}

fn answer(s: &mut TcpStream) -> (u16, String) {
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    (status, out)
}

#[test]
fn clients_that_never_send_their_body_do_not_hold_the_workers() {
    let opts = Options {
        body_timeout: Duration::from_millis(300),
        ..Options::default()
    };
    let srv = server::start(Words, "w", "127.0.0.1:0", 2, opts).unwrap();
    let addr = srv.addr().to_string();
    // four clients declare a body and send none of it
    let mut stalled: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            write!(
                s,
                "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"
            )
            .unwrap();
            s
        })
        .collect();
    // the workers are free again: a request is answered (it would wait forever before)
    let (st, body) = post(
        &addr,
        "/v1/completions",
        r#"{"model": "w", "prompt": "go", "max_tokens": 2}"#,
    );
    assert_eq!(st, 200, "{body}");
    // each stalled client is told why
    for s in &mut stalled {
        let (st, body) = answer(s);
        assert_eq!(st, 408, "{body}");
        assert!(body.contains("did not come whole within"), "{body}");
    }
}

#[test]
fn a_burst_of_silent_connections_is_closed_and_others_are_answered() {
    let opts = Options {
        body_timeout: Duration::from_millis(300),
        ..Options::default()
    };
    let srv = server::start(Words, "w", "127.0.0.1:0", 2, opts).unwrap();
    let addr = srv.addr().to_string();
    // a burst of connections that send nothing at all
    let mut silent: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    let (st, body) = post(
        &addr,
        "/v1/completions",
        r#"{"model": "w", "prompt": "go", "max_tokens": 2}"#,
    );
    assert_eq!(st, 200, "{body}");
    // each silent one is closed by the server
    for s in &mut silent {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(s.read(&mut buf).unwrap(), 0);
    }
}

fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    answer(&mut s)
}

/// A new connection that has sent a request head declaring a body of `declared` bytes, and none
/// of the body.
fn declare(addr: &str, declared: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    )
    .unwrap();
    s
}

const COMPLETION: &str = r#"{"model": "w", "prompt": "go", "max_tokens": 2}"#;

#[test]
fn sixty_four_silent_bodies_leave_the_health_route_answered_at_once() {
    // the body limit is far off: every stalled client is still held while the others ask
    let opts = Options {
        body_timeout: Duration::from_secs(30),
        ..Options::default()
    };
    let srv = server::start(Words, "w", "127.0.0.1:0", 2, opts).unwrap();
    let addr = srv.addr().to_string();
    let stalled: Vec<TcpStream> = (0..64).map(|_| declare(&addr, 1000)).collect();
    let asked = Instant::now();
    let (st, body) = get(&addr, "/health");
    let took = asked.elapsed();
    println!(
        "/health answered in {took:?} beside {} stalled bodies",
        stalled.len()
    );
    assert_eq!(st, 200, "{body}");
    // asked to be within 1 s; the bound here only guards against a hang
    assert!(took < Duration::from_secs(5), "/health took {took:?}");
    let asked = Instant::now();
    let (st, body) = get(&addr, "/v1/models");
    println!("/v1/models answered in {:?}", asked.elapsed());
    assert_eq!(st, 200, "{body}");
    assert!(body.contains(r#""id":"w""#), "{body}");
    // a completion, whose model calls run on the two workers
    let (st, body) = post(&addr, "/v1/completions", COMPLETION);
    assert_eq!(st, 200, "{body}");
    // and the stalled clients were all still held, none of them answered or closed
    for s in &stalled {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 1];
        let read = (&*s).read(&mut buf);
        assert!(
            matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{read:?}"
        );
    }
}

#[test]
fn a_body_trickled_slower_than_the_limit_is_cut_off_and_others_are_answered() {
    let opts = Options {
        body_timeout: Duration::from_millis(500),
        ..Options::default()
    };
    let srv = server::start(Words, "w", "127.0.0.1:0", 2, opts).unwrap();
    let addr = srv.addr().to_string();
    let mut slow = declare(&addr, 1000);
    let started = Instant::now();
    // a byte every 20 ms: the whole body would take 20 s
    let done = Arc::new(AtomicBool::new(false));
    let trickle = {
        let (mut w, done) = (slow.try_clone().unwrap(), done.clone());
        std::thread::spawn(move || {
            let mut sent = 0;
            while sent < 1000 && !done.load(Ordering::SeqCst) && w.write_all(b" ").is_ok() {
                sent += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            sent
        })
    };
    // others are answered while it trickles
    let (st, body) = post(&addr, "/v1/completions", COMPLETION);
    assert_eq!(st, 200, "{body}");
    let (st, body) = get(&addr, "/health");
    assert_eq!(st, 200, "{body}");
    // the trickling client is told why, and its connection closed
    let (st, body) = answer(&mut slow);
    println!(
        "the trickled body was cut off after {:?}",
        started.elapsed()
    );
    done.store(true, Ordering::SeqCst);
    let sent = trickle.join().unwrap();
    assert_eq!(st, 408, "{body}");
    assert!(body.contains("did not come whole within 0.5 s"), "{body}");
    assert!(sent < 1000, "the whole body went before the reply");
    // and the server still answers
    let (st, body) = post(&addr, "/v1/completions", COMPLETION);
    assert_eq!(st, 200, "{body}");
}

#[test]
fn a_model_call_longer_than_the_limit_is_answered_and_holds_no_other_request() {
    // the limit bounds how long a client may keep the server waiting, not the model
    let opts = Options {
        body_timeout: Duration::from_millis(200),
        ..Options::default()
    };
    let srv = server::start(
        Slow(Duration::from_millis(800)),
        "w",
        "127.0.0.1:0",
        1,
        opts,
    )
    .unwrap();
    let addr = srv.addr().to_string();
    let busy = {
        let addr = addr.clone();
        std::thread::spawn(move || post(&addr, "/v1/completions", COMPLETION))
    };
    // the one worker may be busy with the model: the reactor still answers
    let (st, body) = get(&addr, "/health");
    assert_eq!(st, 200, "{body}");
    let (st, body) = busy.join().unwrap();
    assert_eq!(st, 200, "{body}");
    assert!(body.contains("text_completion"), "{body}");
}

#[test]
fn echo_of_a_one_token_prompt_is_answered() {
    let srv = server::start(Words, "w", "127.0.0.1:0", 1, Options::default()).unwrap();
    let addr = srv.addr().to_string();
    let (st, body) = post(
        &addr,
        "/v1/completions",
        r#"{"model": "w", "prompt": ["go", "go yes"], "echo": true, "logprobs": 0, "max_tokens": 0}"#,
    );
    assert_eq!(st, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {body}"));
    let lp = |i: usize| json["choices"][i]["logprobs"]["token_logprobs"].clone();
    assert_eq!(lp(0), serde_json::json!([null]));
    assert_eq!(lp(1), serde_json::json!([null, -1.0]));
}

#[test]
fn guided_choices_the_vocabulary_cannot_write_are_refused() {
    let srv = server::start(Words, "w", "127.0.0.1:0", 1, Options::default()).unwrap();
    let addr = srv.addr().to_string();
    let (st, body) = post(
        &addr,
        "/v1/completions",
        r#"{"model": "w", "prompt": "go", "guided_choice": ["maybe", "perhaps"], "max_tokens": 4}"#,
    );
    assert_eq!(st, 400, "{body}");
    assert!(
        body.contains("guided_choice") && body.contains("maybe"),
        "{body}"
    );
    let (st, body) = post(
        &addr,
        "/v1/completions",
        r#"{"model": "w", "prompt": "go", "guided_choice": ["no", "yes"], "max_tokens": 4}"#,
    );
    assert_eq!(st, 200, "{body}");
    assert!(body.contains(r#""text":"no""#), "{body}");
}
