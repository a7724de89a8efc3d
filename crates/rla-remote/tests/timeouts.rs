//! The client against servers that misbehave over real HTTP: one that takes connections and
//! never answers fails the call at the head's time-out, one that sends its head and then trickles
//! the body a byte a second fails it at the request's time-out — each error naming the server's
//! URL and what it did — and a base URL given as OpenAI's clients take it (`…/v1`, `…/v1/`)
//! reaches `/v1/completions`, not `/v1/v1/completions`.

use rla_lm::{Codec, Message, SampleParams, Sampler};
use rla_remote::client::{base_url, load_adapter, Endpoints, RemoteSampler};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Ids as text: `7` is token 7; id 1 ends a sequence.
struct Ids;

impl Codec for Ids {
    fn encode(&self, text: &str) -> rla_lm::Result<Vec<u32>> {
        Ok(text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect())
    }
    fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
        Ok(ids.iter().map(u32::to_string).collect::<Vec<_>>().join(" "))
    }
    fn eos_ids(&self) -> &[u32] {
        &[1]
    }
    fn chat_template(&self, _: &[Message], _: bool) -> rla_lm::Result<Option<String>> {
        Ok(None)
    }
}

fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    (l, url)
}

/// Reads a request's head and body; returns its request line.
fn read_request(c: &mut TcpStream) -> String {
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match c.read(&mut chunk) {
            Ok(0) | Err(_) => return String::new(),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < end + 4 + length {
        match c.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    head.lines().next().unwrap_or_default().to_string()
}

/// A server that takes connections and never answers them.
fn silent() -> String {
    let (l, url) = listener();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            held.push(c);
        }
    });
    url
}

/// A server that reads the request, sends a head announcing a 100,000-byte body, then trickles
/// it one byte a second.
fn trickling() -> String {
    let (l, url) = listener();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                read_request(&mut c);
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{";
                if c.write_all(head.as_bytes()).is_err() {
                    return;
                }
                // whitespace, a byte a second, until the client hangs up
                while c.write_all(b" ").and_then(|_| c.flush()).is_ok() {
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
    });
    url
}

/// How a recording server ends its replies' bodies.
#[derive(Clone, Copy)]
enum Framing {
    Length,
    Chunked,
    Close,
}

/// A server that records each request's line and answers `/v1/completions` with one sampled
/// token, `/v1/models` with one model and anything else with `ok`.
fn recording(framing: Framing) -> (String, Arc<Mutex<Vec<String>>>) {
    let (l, url) = listener();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let line = read_request(&mut c);
            let path = line.split(' ').nth(1).unwrap_or_default().to_string();
            log.lock().unwrap().push(line);
            let body = match path.as_str() {
                "/v1/completions" => serde_json::json!({
                    "id": "c", "object": "text_completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "text": "7", "finish_reason": "length",
                                 "logprobs": {"tokens": ["token_id:7"], "token_logprobs": [-0.5]}}],
                })
                .to_string(),
                "/v1/models" => {
                    r#"{"object": "list", "data": [{"id": "m", "object": "model"}]}"#.to_string()
                }
                "/v1/load_lora_adapter" => "ok".to_string(),
                _ => {
                    let nf = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
                    let _ = c.write_all(nf.as_bytes());
                    continue;
                }
            };
            let reply = match framing {
                Framing::Length => format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                ),
                Framing::Chunked => {
                    let mut r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_string();
                    for piece in body.as_bytes().chunks(7) {
                        r.push_str(&format!("{:x}\r\n", piece.len()));
                        r.push_str(std::str::from_utf8(piece).unwrap());
                        r.push_str("\r\n");
                    }
                    r + "0\r\n\r\n"
                }
                Framing::Close => format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{body}"
                ),
            };
            let _ = c.write_all(reply.as_bytes());
        }
    });
    (url, seen)
}

fn sampler(url: &str, head: f64, total: f64, tries: usize) -> RemoteSampler<Ids> {
    let mut e = Endpoints::one(url, "m");
    e.head_timeout = Duration::from_secs_f64(head);
    e.timeout = Duration::from_secs_f64(total);
    e.tries = tries;
    e.cooldown = Duration::from_millis(1);
    RemoteSampler::new(Ids, e).unwrap()
}

fn generate(r: &RemoteSampler<Ids>) -> Result<Vec<Vec<rla_lm::Sample>>, String> {
    r.generate(&[vec![5, 6]], 1, &SampleParams::greedy(1))
        .map_err(|e| e.to_string())
}

/// A hang guard: far above the bounds the calls are given, far below the 40 minutes the
/// defaults would wait.
const GUARD: Duration = Duration::from_secs(60);

#[test]
fn a_server_that_never_answers_fails_at_the_head_time_out_and_is_named() {
    let url = silent();
    let r = sampler(&url, 1.0, 600.0, 2);
    let t = Instant::now();
    let err = generate(&r).unwrap_err();
    assert!(t.elapsed() < GUARD, "{:?}: {err}", t.elapsed());
    assert!(
        err.contains(&format!(
            "{url}/v1/completions: timed out: no response head within 1 s"
        )),
        "{err}"
    );
}

#[test]
fn a_server_that_trickles_its_body_fails_at_the_request_time_out_and_is_named() {
    let url = trickling();
    let r = sampler(&url, 1.0, 3.0, 1);
    let t = Instant::now();
    let err = generate(&r).unwrap_err();
    assert!(t.elapsed() < GUARD, "{:?}: {err}", t.elapsed());
    assert!(
        err.contains(&format!(
            "{url}/v1/completions: timed out: the body did not finish within 3 s"
        )),
        "{err}"
    );
}

#[test]
fn nothing_listening_is_named_too() {
    let (l, url) = listener();
    drop(l);
    let err = generate(&sampler(&url, 1.0, 1.0, 1)).unwrap_err();
    assert!(
        err.contains(&format!("{url}/v1/completions: connection refused")),
        "{err}"
    );
}

#[test]
fn a_base_url_ending_in_v1_reaches_the_api_s_paths() {
    for (framing, tail) in [
        (Framing::Length, "/v1"),
        (Framing::Chunked, "/v1/"),
        (Framing::Close, "/"),
    ] {
        let (url, seen) = recording(framing);
        let r = sampler(&format!("{url}{tail}"), 30.0, 30.0, 1);
        let got = generate(&r).unwrap();
        assert_eq!(got[0][0].tokens, vec![7]);
        assert_eq!(r.models().unwrap(), vec!["m".to_string()]);
        load_adapter(&format!("{url}{tail}"), None, "a", "/nowhere").unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                "POST /v1/completions HTTP/1.1",
                "GET /v1/models HTTP/1.1",
                "POST /v1/load_lora_adapter HTTP/1.1"
            ],
            "{tail}"
        );
    }
}

#[test]
fn base_urls_lose_a_trailing_v1_and_slashes() {
    for (given, base) in [
        ("http://h:8000", "http://h:8000"),
        ("http://h:8000/", "http://h:8000"),
        ("http://h:8000/v1", "http://h:8000"),
        ("http://h:8000/v1/", "http://h:8000"),
        (" http://h:8000/proxy/v1 ", "http://h:8000/proxy"),
        ("http://v1", "http://v1"),
        ("http://h/v10", "http://h/v10"),
    ] {
        assert_eq!(base_url(given), base, "{given}");
    }
}
