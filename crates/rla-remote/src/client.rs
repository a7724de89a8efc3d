//! A [`Sampler`] whose generation happens on OpenAI-compatible servers (vLLM, SGLang,
//! `rlanything serve`); the tokenizer and chat template stay here.
//!
//! - `generate` sends the batch's token-id prompts in one `/v1/completions` request with `n`,
//!   the sampling parameters, `logprobs` and `return_tokens_as_token_ids`, and checks the reply:
//!   every choice present once, token ids and one log-probability per token — a reply that is
//!   not so is an error, never a sample fed to the update.
//! - `generate_within` (constrained answers) uses vLLM's `guided_choice`: one request per
//!   prompt with its allowed answers as text, sent concurrently; an answer outside them is an
//!   error.
//! - `score` asks for the prompt's log-probabilities with `echo` and `max_tokens = 0`.
//!
//! A batch is split over the live endpoints by cache-aware routing, as SGLang's router does: a
//! prompt goes to the endpoint that served the longest prefix of it (when that covers at least
//! half of it), so the steps of one episode, whose prompts grow from the same start, meet the
//! server's prefix cache; other prompts go to the least-loaded endpoint, and no endpoint takes
//! more than a fair share (a quarter over an even split) of one batch. The endpoints' requests
//! run concurrently. A transport error (a timeout included), a 429 or a 5xx is retried with
//! back-off on another endpoint, and an endpoint that fails is skipped for a while, then tried
//! again. The error comes only when every try has failed.
//!
//! New weights reach the servers by an explicit call after each update:
//! [`RemoteSampler::update_weights`] points every server at a checkpoint on disk (SGLang's
//! `/update_weights_from_disk`), and [`RemoteSampler::load_adapter`] loads a LoRA adapter in
//! PEFT's format (vLLM's `/v1/load_lora_adapter`, or SGLang's `/load_lora_adapter`) under a new
//! name that the following requests give as their `model`. A server that missed an update (it
//! was down, or restarted) gets the latest before its next request, so no sample comes from
//! stale weights.

use crate::protocol::*;
use crate::RemoteError;
use rla_lm::{Codec, Finish, LmError, Message, Sample, SampleParams, Sampler, VisualMessage};
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How to reach the servers.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoints {
    /// Base URLs (`http://host:port`; `/v1/...` is added).
    pub urls: Vec<String>,
    /// The model's name on the servers.
    pub model: String,
    /// A bearer token, if the servers want one.
    pub api_key: Option<String>,
    /// Time allowed for one request.
    pub timeout: Duration,
    /// Tries of a request before it fails (each on the least-loaded live endpoint).
    pub tries: usize,
    /// Requests in flight at once (constrained answers send one per prompt).
    pub concurrency: usize,
    /// How long a failed endpoint is skipped.
    pub cooldown: Duration,
    /// Which call loads LoRA adapters.
    pub lora_api: LoraApi,
}

/// The servers' calls for LoRA adapters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoraApi {
    /// vLLM's `/v1/load_lora_adapter` and `/v1/unload_lora_adapter` (its server needs
    /// `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True` and `--enable-lora`).
    #[default]
    Vllm,
    /// SGLang's `/load_lora_adapter` and `/unload_lora_adapter`.
    Sglang,
}

impl LoraApi {
    fn paths(self) -> (&'static str, &'static str) {
        match self {
            LoraApi::Vllm => ("/v1/load_lora_adapter", "/v1/unload_lora_adapter"),
            LoraApi::Sglang => ("/load_lora_adapter", "/unload_lora_adapter"),
        }
    }
}

/// Loads the adapter in `dir` as `name` on the server at `url`: one call, no retries.
pub fn load_adapter(
    url: &str,
    api_key: Option<&str>,
    name: &str,
    dir: &str,
) -> Result<(), RemoteError> {
    let agent = agent(Duration::from_secs(600));
    let url = format!("{}/v1/load_lora_adapter", url.trim_end_matches('/'));
    post(&agent, &url, api_key, &load_body(name, dir))
}

/// An HTTP agent that opens a connection per request and keeps none: servers such as
/// tiny_http close a connection after answering a `Connection: close` request without saying so
/// in the reply, and a pooled connection the server has closed fails the next POST on it with
/// "Unexpected EOF".
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(timeout)
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .build()
}

fn load_body(name: &str, dir: &str) -> serde_json::Value {
    serde_json::to_value(LoadAdapter {
        lora_name: name.into(),
        lora_path: dir.into(),
    })
    .expect("serialisable")
}

/// One POST whose reply body does not matter (vLLM answers adapter calls with plain text).
fn post(
    agent: &ureq::Agent,
    url: &str,
    api_key: Option<&str>,
    body: &serde_json::Value,
) -> Result<(), RemoteError> {
    let mut req = agent.post(url).set("Connection", "close");
    if let Some(k) = api_key {
        req = req.set("Authorization", &format!("Bearer {k}"));
    }
    match req.send_json(body.clone()) {
        // read to the end, so the connection closes cleanly
        Ok(r) => r.into_string().map(|_| ()).map_err(|e| RemoteError::Reply {
            url: url.to_string(),
            message: format!("the body could not be read: {e}"),
        }),
        Err(ureq::Error::Status(status, resp)) => {
            let text = resp.into_string().unwrap_or_default();
            Err(RemoteError::Status {
                url: url.to_string(),
                status,
                message: error_message(&text),
            })
        }
        Err(ureq::Error::Transport(t)) => Err(RemoteError::Transport {
            url: url.to_string(),
            message: t.to_string(),
        }),
    }
}

/// Whether a transport error is a refused connection (nothing listens: trying again at once
/// does not help), rather than one dropped after it was made.
fn refused(message: &str) -> bool {
    message.contains("Connection Failed")
}

/// The message of an error body: OpenAI's `{"error": {"message"}}`, vLLM's `{"message"}`, or
/// the start of the text.
fn error_message(text: &str) -> String {
    if let Ok(b) = serde_json::from_str::<ErrorBody>(text) {
        return b.error.message;
    }
    if let Some(m) = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("message")?.as_str().map(str::to_string))
    {
        return m;
    }
    excerpt(text)
}

impl Endpoints {
    /// One server with default timeouts.
    pub fn one(url: &str, model: &str) -> Endpoints {
        Endpoints {
            urls: vec![url.trim_end_matches('/').to_string()],
            model: model.to_string(),
            api_key: None,
            timeout: Duration::from_secs(600),
            tries: 4,
            concurrency: 16,
            cooldown: Duration::from_secs(5),
            lora_api: LoraApi::Vllm,
        }
    }
}

struct Endpoint {
    url: String,
    in_flight: AtomicUsize,
    down_until: Mutex<Option<Instant>>,
    /// The weights version it has loaded (0: none pushed yet, or it was unreachable since).
    version: AtomicU64,
    /// Hashes of the prompt prefixes it has served (cache-aware routing).
    prefixes: Mutex<HashSet<u64>>,
}

/// What the servers should be serving.
#[derive(Debug, Clone, PartialEq)]
enum Weights {
    /// What they started with.
    Initial,
    /// A checkpoint folder (`/update_weights_from_disk`).
    Disk(String),
    /// A LoRA adapter on the base, by name and folder.
    Adapter { name: String, dir: String },
}

struct Current {
    version: u64,
    weights: Weights,
    /// The adapters loaded, oldest first (the two newest stay loaded).
    adapters: VecDeque<String>,
}

/// Tokens per block of prefix hashes (vLLM's prefix cache block).
const BLOCK: usize = 16;
/// Most prefix hashes remembered per endpoint before they are forgotten.
const MAX_PREFIXES: usize = 1 << 16;

/// A hash of every block-aligned prefix of a prompt, and of the whole prompt, shortest first.
fn prefix_hashes(prompt: &[u32]) -> Vec<u64> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut out = Vec::with_capacity(prompt.len() / BLOCK + 1);
    for (i, t) in prompt.iter().enumerate() {
        t.hash(&mut h);
        if (i + 1) % BLOCK == 0 || i + 1 == prompt.len() {
            let mut f = h.clone();
            (i + 1).hash(&mut f);
            out.push(f.finish());
        }
    }
    out
}

/// Cache-aware routing of a batch: for each prompt (by its prefix hashes), the endpoint among
/// `live` whose served prefixes cover most of it, when that is at least half; else the one with
/// the fewest prompts of this batch plus requests in flight (`load`), turns (`turn`) breaking
/// ties. No endpoint takes more than `⌈1.25·N / live⌉` prompts. Each prompt's prefixes are
/// added to its endpoint's set.
fn route(
    prompts: &[Vec<u64>],
    live: &[usize],
    prefixes: &mut [HashSet<u64>],
    load: &[usize],
    turn: usize,
) -> Vec<usize> {
    let cap = (prompts.len() * 5).div_ceil(4 * live.len().max(1)).max(1);
    let mut taken = vec![0usize; prefixes.len()];
    let mut out = Vec::with_capacity(prompts.len());
    for (p, hashes) in prompts.iter().enumerate() {
        let open: Vec<usize> = live.iter().copied().filter(|&e| taken[e] < cap).collect();
        let matched = |e: usize| {
            hashes
                .iter()
                .rposition(|h| prefixes[e].contains(h))
                .map_or(0, |i| i + 1)
        };
        let best = open
            .iter()
            .copied()
            .map(|e| (matched(e), e))
            .max_by_key(|&(m, e)| (m, std::cmp::Reverse(e)));
        let n = prefixes.len().max(1);
        let e = match best {
            Some((m, e)) if m > 0 && 2 * m >= hashes.len() => e,
            _ => open
                .iter()
                .copied()
                .min_by_key(|&e| (taken[e] + load[e], (e + n - (turn + p) % n) % n))
                .unwrap_or(live[0]),
        };
        taken[e] += 1;
        if prefixes[e].len() + hashes.len() > MAX_PREFIXES {
            prefixes[e].clear();
        }
        prefixes[e].extend(hashes.iter().copied());
        out.push(e);
    }
    out
}

/// A sampler on inference servers.
pub struct RemoteSampler<C: Codec> {
    codec: C,
    cfg: Endpoints,
    endpoints: Vec<Endpoint>,
    agent: ureq::Agent,
    /// The weights the servers should serve, and their version (0: what they started with).
    weights: Mutex<Current>,
    /// Turns among equally loaded endpoints.
    turn: AtomicUsize,
}

fn lm(e: RemoteError) -> LmError {
    LmError::backend(e)
}

impl<C: Codec> RemoteSampler<C> {
    /// A sampler on `cfg`'s servers that tokenises with `codec` (the model's own tokenizer).
    pub fn new(codec: C, cfg: Endpoints) -> Result<Self, RemoteError> {
        if cfg.urls.is_empty() {
            return Err(RemoteError::Transport {
                url: String::new(),
                message: "no server endpoints are configured".into(),
            });
        }
        let agent = agent(cfg.timeout);
        let endpoints = cfg
            .urls
            .iter()
            .map(|u| Endpoint {
                url: u.trim_end_matches('/').to_string(),
                in_flight: AtomicUsize::new(0),
                down_until: Mutex::new(None),
                version: AtomicU64::new(0),
                prefixes: Mutex::new(HashSet::new()),
            })
            .collect();
        Ok(RemoteSampler {
            codec,
            cfg,
            endpoints,
            agent,
            weights: Mutex::new(Current {
                version: 0,
                weights: Weights::Initial,
                adapters: VecDeque::new(),
            }),
            turn: AtomicUsize::new(0),
        })
    }

    /// Points every server at the weights in `dir` (a checkpoint folder they can read). Servers
    /// that cannot be reached now get them before their next request; it is an error only when
    /// none took them.
    pub fn update_weights(&self, dir: &str) -> Result<(), RemoteError> {
        self.publish(Weights::Disk(dir.to_string()))
    }

    /// Loads the LoRA adapter in `dir` (PEFT's format, a folder the servers can read) as model
    /// `name` on every server; the following requests name it. The adapter before it stays
    /// loaded (a request may still use it); older ones are unloaded. Like
    /// [`RemoteSampler::update_weights`], a server that misses it gets it before its next
    /// request.
    pub fn load_adapter(&self, name: &str, dir: &str) -> Result<(), RemoteError> {
        self.publish(Weights::Adapter {
            name: name.to_string(),
            dir: dir.to_string(),
        })?;
        let old = {
            let mut c = self.weights.lock().unwrap_or_else(|e| e.into_inner());
            c.adapters.push_back(name.to_string());
            if c.adapters.len() > 2 {
                c.adapters.pop_front()
            } else {
                None
            }
        };
        if let Some(old) = old {
            let body =
                serde_json::to_value(UnloadAdapter { lora_name: old }).expect("serialisable");
            for ep in &self.endpoints {
                let url = format!("{}{}", ep.url, self.cfg.lora_api.paths().1);
                if let Err(e) = self.post_retried(&url, &body) {
                    tracing::warn!(error = %e, "an old adapter was not unloaded");
                }
            }
        }
        Ok(())
    }

    /// The model name requests give: the current adapter's, else the configured one.
    pub fn model(&self) -> String {
        match &self
            .weights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .weights
        {
            Weights::Adapter { name, .. } => name.clone(),
            _ => self.cfg.model.clone(),
        }
    }

    fn publish(&self, weights: Weights) -> Result<(), RemoteError> {
        let version = {
            let mut c = self.weights.lock().unwrap_or_else(|e| e.into_inner());
            c.version += 1;
            c.weights = weights.clone();
            c.version
        };
        let mut last = None;
        let mut ok = 0;
        for ep in &self.endpoints {
            match self.push_weights(ep, version, &weights) {
                Ok(()) => ok += 1,
                Err(e) => {
                    tracing::warn!(error = %e, "a server did not take the new weights; it gets them before its next request");
                    last = Some(e);
                }
            }
        }
        match (ok, last) {
            (0, Some(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// One POST, tried again with back-off on a transport error (a server may close a fresh
    /// connection without answering).
    fn post_retried(&self, url: &str, body: &serde_json::Value) -> Result<(), RemoteError> {
        let mut attempt = 0;
        loop {
            match post(&self.agent, url, self.cfg.api_key.as_deref(), body) {
                Err(RemoteError::Transport { message, .. })
                    if attempt + 1 < self.cfg.tries.max(1) && !refused(&message) =>
                {
                    std::thread::sleep(Duration::from_millis(100 << attempt.min(6)));
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    /// Loads `w` on one server (each call tried again on a dropped connection).
    fn push_weights(&self, ep: &Endpoint, version: u64, w: &Weights) -> Result<(), RemoteError> {
        let res = match w {
            Weights::Initial => Ok(()),
            Weights::Disk(dir) => self.post_retried(
                &format!("{}/update_weights_from_disk", ep.url),
                &serde_json::json!({"model_path": dir}),
            ),
            Weights::Adapter { name, dir } => {
                let url = format!("{}{}", ep.url, self.cfg.lora_api.paths().0);
                match self.post_retried(&url, &load_body(name, dir)) {
                    // vLLM refuses a name it has (a server that kept it while unreachable)
                    Err(RemoteError::Status {
                        status: 400,
                        message,
                        ..
                    }) if message.contains("already") => Ok(()),
                    r => r,
                }
            }
        };
        if res.is_ok() {
            ep.version.store(version, Ordering::Relaxed);
        }
        res
    }

    /// Brings an endpoint to the current weights before it serves.
    fn ensure_weights(&self, ep: &Endpoint) -> Result<(), RemoteError> {
        let (version, w) = {
            let c = self.weights.lock().unwrap_or_else(|e| e.into_inner());
            (c.version, c.weights.clone())
        };
        if w != Weights::Initial && ep.version.load(Ordering::Relaxed) < version {
            self.push_weights(ep, version, &w)
        } else {
            Ok(())
        }
    }

    /// The models the first live server lists (`GET /v1/models`).
    pub fn models(&self) -> Result<Vec<String>, RemoteError> {
        let (v, _): (ModelList, _) = self.call("GET", "/v1/models", None, None)?;
        Ok(v.data.into_iter().map(|m| m.id).collect())
    }

    fn live(&self, i: usize, now: Instant) -> bool {
        self.endpoints[i]
            .down_until
            .lock()
            .map(|d| d.is_none_or(|t| t <= now))
            .unwrap_or(true)
    }

    /// The endpoints not cooling down (every one, if all are).
    fn live_endpoints(&self) -> Vec<usize> {
        let now = Instant::now();
        let live: Vec<usize> = (0..self.endpoints.len())
            .filter(|&i| self.live(i, now))
            .collect();
        if live.is_empty() {
            (0..self.endpoints.len()).collect()
        } else {
            live
        }
    }

    /// The endpoint for each prompt (cache-aware routing over the live endpoints).
    fn route(&self, prompts: &[&[u32]]) -> Vec<usize> {
        let live = self.live_endpoints();
        if live.len() == 1 && self.endpoints.len() == 1 {
            return vec![live[0]; prompts.len()];
        }
        let hashes: Vec<Vec<u64>> = prompts.iter().map(|p| prefix_hashes(p)).collect();
        let mut sets: Vec<HashSet<u64>> = self
            .endpoints
            .iter()
            .map(|e| std::mem::take(&mut *e.prefixes.lock().unwrap_or_else(|x| x.into_inner())))
            .collect();
        let load: Vec<usize> = self
            .endpoints
            .iter()
            .map(|e| e.in_flight.load(Ordering::Relaxed))
            .collect();
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        let out = route(&hashes, &live, &mut sets, &load, turn);
        for (e, set) in self.endpoints.iter().zip(sets) {
            *e.prefixes.lock().unwrap_or_else(|x| x.into_inner()) = set;
        }
        out
    }

    /// The least-loaded live endpoint other than `skip` (any, if none is), taking turns among
    /// equals.
    fn pick(&self, skip: Option<usize>) -> usize {
        let now = Instant::now();
        let order: Vec<usize> = (0..self.endpoints.len()).collect();
        let candidates: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| self.live(i, now) && Some(i) != skip)
            .collect();
        let pool = if candidates.is_empty() {
            order
        } else {
            candidates
        };
        let n = self.endpoints.len();
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        pool.into_iter()
            .min_by_key(|&i| {
                (
                    self.endpoints[i].in_flight.load(Ordering::Relaxed),
                    (i + n - turn % n) % n,
                )
            })
            .unwrap_or(0)
    }

    /// Takes an endpoint out for the cooldown; one that could not be reached gets the current
    /// weights again when it is back (it may have restarted).
    fn fail(&self, i: usize, unreachable: bool) {
        let ep = &self.endpoints[i];
        if let Ok(mut d) = ep.down_until.lock() {
            *d = Some(Instant::now() + self.cfg.cooldown);
        }
        if unreachable {
            ep.version.store(0, Ordering::Relaxed);
        }
    }

    /// One request, first to `prefer` (if given and live), retried on transport errors (time-outs
    /// included), 429 and 5xx on other endpoints. Returns the reply and the URL that gave it.
    fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
        prefer: Option<usize>,
    ) -> Result<(T, String), RemoteError> {
        let mut last = None;
        let mut skip = None;
        for attempt in 0..self.cfg.tries.max(1) {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(100 << (attempt - 1).min(6)));
            }
            let i = match prefer {
                Some(p) if attempt == 0 && self.live(p, Instant::now()) => p,
                _ => self.pick(skip),
            };
            let ep = &self.endpoints[i];
            let url = format!("{}{path}", ep.url);
            if let Err(e) = self.ensure_weights(ep) {
                tracing::warn!(error = %e, attempt, "a server could not load the current weights");
                self.fail(i, matches!(e, RemoteError::Transport { .. }));
                if self.endpoints.len() > 1 {
                    skip = Some(i);
                }
                last = Some(e);
                continue;
            }
            ep.in_flight.fetch_add(1, Ordering::Relaxed);
            // one connection per request: generation dwarfs the handshake, and no request waits
            // on a kept-alive connection that a server stopped reading
            let mut req = self.agent.request(method, &url).set("Connection", "close");
            if let Some(k) = &self.cfg.api_key {
                req = req.set("Authorization", &format!("Bearer {k}"));
            }
            let res = match body {
                Some(b) => req.send_json(b.clone()),
                None => req.call(),
            };
            ep.in_flight.fetch_sub(1, Ordering::Relaxed);
            let (err, unreachable) = match res {
                Ok(resp) => {
                    let text = resp.into_string().map_err(|e| RemoteError::Reply {
                        url: url.clone(),
                        message: format!("the body could not be read: {e}"),
                    })?;
                    let v = serde_json::from_str(&text).map_err(|e| RemoteError::Reply {
                        url: url.clone(),
                        message: format!("{e}: {}", excerpt(&text)),
                    })?;
                    return Ok((v, url));
                }
                Err(ureq::Error::Status(status, resp)) => {
                    let text = resp.into_string().unwrap_or_default();
                    let e = RemoteError::Status {
                        url: url.clone(),
                        status,
                        message: error_message(&text),
                    };
                    if status != 429 && status < 500 {
                        return Err(e); // the request itself is wrong: no retry helps
                    }
                    (e, false)
                }
                Err(ureq::Error::Transport(t)) => (
                    RemoteError::Transport {
                        url: url.clone(),
                        message: t.to_string(),
                    },
                    true,
                ),
            };
            tracing::warn!(error = %err, attempt, "request failed; trying again");
            self.fail(i, unreachable);
            if self.endpoints.len() > 1 {
                skip = Some(i);
            }
            last = Some(err);
        }
        Err(last.expect("at least one try"))
    }

    fn completion(
        &self,
        req: &CompletionRequest,
        prefer: Option<usize>,
    ) -> Result<(CompletionResponse, String), RemoteError> {
        let body = serde_json::to_value(req).expect("serialisable");
        self.call("POST", "/v1/completions", Some(&body), prefer)
    }

    fn request(&self, prompts: Vec<Vec<u32>>, n: usize, p: &SampleParams) -> CompletionRequest {
        CompletionRequest {
            model: self.model(),
            prompt: Prompt::Batch(prompts),
            sampling: Sampling {
                n: Some(n),
                temperature: Some(p.temperature),
                top_p: Some(p.top_p),
                top_k: (p.top_k > 0).then_some(p.top_k as i64),
                seed: Some(p.seed),
                stop: (!p.stop.is_empty()).then(|| Stop::Many(p.stop.clone())),
                max_tokens: Some(p.max_new_tokens),
                stream: false,
            },
            // the sampled tokens' log-probabilities, no alternatives
            logprobs: Some(0),
            echo: false,
            return_tokens_as_token_ids: true,
            guided_choice: None,
        }
    }

    /// `n` replies to a conversation through `/v1/chat/completions`, the server applying its
    /// own chat template: the path for messages a local template cannot render, such as images
    /// (a [`Part::ImageUrl`] holding a `data:image/png;base64,…` URI) for a vision-language
    /// model. Each reply's tokens and log-probabilities come back as in
    /// [`Sampler::generate`] (vLLM's `return_tokens_as_token_ids`), and are checked the same way.
    pub fn chat(
        &self,
        messages: Vec<ChatMessage>,
        n: usize,
        p: &SampleParams,
    ) -> Result<Vec<Sample>, RemoteError> {
        let base = self.request(vec![], n, p);
        let req = ChatRequest {
            model: base.model,
            messages,
            sampling: base.sampling,
            max_completion_tokens: None,
            logprobs: true,
            top_logprobs: None,
            return_tokens_as_token_ids: true,
        };
        let body = serde_json::to_value(&req).expect("serialisable");
        let (resp, url): (ChatResponse, String) =
            self.call("POST", "/v1/chat/completions", Some(&body), None)?;
        let bad = |message: String| RemoteError::Reply {
            url: url.clone(),
            message,
        };
        if resp.choices.len() != n {
            return Err(bad(format!("{} choices for n = {n}", resp.choices.len())));
        }
        // the same checks as completions, on the same shape
        let choices = resp
            .choices
            .into_iter()
            .map(|c| {
                let lp = c
                    .logprobs
                    .ok_or_else(|| bad(format!("choice {} has no logprobs", c.index)))?;
                Ok(CompletionChoice {
                    index: c.index,
                    text: c.message.content,
                    logprobs: Some(CompletionLogprobs {
                        tokens: lp.content.iter().map(|t| t.token.clone()).collect(),
                        token_logprobs: lp.content.iter().map(|t| Some(t.logprob)).collect(),
                        top_logprobs: None,
                        text_offset: vec![],
                    }),
                    finish_reason: c.finish_reason,
                })
            })
            .collect::<Result<Vec<_>, RemoteError>>()?;
        let as_completion = CompletionResponse {
            id: resp.id,
            object: resp.object,
            created: resp.created,
            model: resp.model,
            choices,
            usage: resp.usage,
        };
        Ok(self
            .samples((as_completion, url), 1, n)?
            .pop()
            .expect("one prompt"))
    }

    /// The samples of a reply, checked against what was asked.
    fn samples(
        &self,
        (resp, url): (CompletionResponse, String),
        prompts: usize,
        n: usize,
    ) -> Result<Vec<Vec<Sample>>, RemoteError> {
        let bad = |message: String| RemoteError::Reply {
            url: url.clone(),
            message,
        };
        if resp.choices.len() != prompts * n {
            return Err(bad(format!(
                "{} choices for {prompts} prompts × n = {n}",
                resp.choices.len()
            )));
        }
        let mut slots: Vec<Option<Sample>> = vec![None; prompts * n];
        for c in resp.choices {
            let i = c.index;
            if i >= slots.len() || slots[i].is_some() {
                return Err(bad(format!("a choice's index {i} is out of place")));
            }
            let lp = c
                .logprobs
                .ok_or_else(|| bad(format!("choice {i} has no logprobs")))?;
            if lp.tokens.len() != lp.token_logprobs.len() {
                return Err(bad(format!(
                    "choice {i} has {} tokens and {} log-probabilities",
                    lp.tokens.len(),
                    lp.token_logprobs.len()
                )));
            }
            let mut tokens = Vec::with_capacity(lp.tokens.len());
            for t in &lp.tokens {
                tokens.push(token_id(t).ok_or_else(|| {
                    bad(format!(
                        "choice {i}'s token `{t}` is not `token_id:N` (does the server take return_tokens_as_token_ids?)"
                    ))
                })?);
            }
            let mut logprobs = Vec::with_capacity(tokens.len());
            for (k, l) in lp.token_logprobs.iter().enumerate() {
                match l {
                    Some(x) if x.is_finite() && *x <= 1e-3 => logprobs.push(*x),
                    Some(x) => {
                        return Err(bad(format!(
                            "choice {i}'s token {k} has log-probability {x}"
                        )))
                    }
                    None => {
                        return Err(bad(format!(
                            "choice {i}'s token {k} has no log-probability"
                        )))
                    }
                }
            }
            let finish = match (tokens.last(), c.finish_reason.as_deref()) {
                (Some(t), _) if self.codec.eos_ids().contains(t) => Finish::Eos,
                (_, Some("stop")) => Finish::Stop,
                (_, Some("length")) => Finish::Length,
                (_, other) => {
                    return Err(bad(format!(
                        "choice {i}'s finish_reason is {other:?}: stop or length"
                    )))
                }
            };
            slots[i] = Some(Sample {
                tokens,
                logprobs,
                text: c.text,
                finish,
            });
        }
        let mut out = Vec::with_capacity(prompts);
        let mut it = slots.into_iter().map(|s| s.expect("every index filled"));
        for _ in 0..prompts {
            out.push(it.by_ref().take(n).collect());
        }
        Ok(out)
    }

    /// Runs `jobs` with at most `concurrency` in flight, in order.
    fn concurrently<T: Send>(
        &self,
        jobs: usize,
        f: impl Fn(usize) -> Result<T, RemoteError> + Sync,
    ) -> Result<Vec<T>, RemoteError> {
        let width = self.cfg.concurrency.max(1);
        let mut out: Vec<Option<Result<T, RemoteError>>> = (0..jobs).map(|_| None).collect();
        for chunk in (0..jobs).collect::<Vec<_>>().chunks(width) {
            let done: Vec<(usize, Result<T, RemoteError>)> = std::thread::scope(|s| {
                let hs: Vec<_> = chunk
                    .iter()
                    .map(|&i| {
                        let f = &f;
                        (i, s.spawn(move || f(i)))
                    })
                    .collect();
                hs.into_iter()
                    .map(|(i, h)| {
                        (
                            i,
                            h.join().unwrap_or_else(|_| {
                                Err(RemoteError::Transport {
                                    url: String::new(),
                                    message: "a request thread panicked".into(),
                                })
                            }),
                        )
                    })
                    .collect()
            });
            for (i, r) in done {
                out[i] = Some(r);
            }
        }
        out.into_iter().map(|r| r.expect("every job ran")).collect()
    }
}

/// A message with an image as the API sends it: its text, then the PNG as a data URI.
fn chat_message(m: &VisualMessage) -> ChatMessage {
    use base64::Engine as _;
    let content = match &m.png {
        None => Content::Text(m.text.clone()),
        Some(png) => Content::Parts(vec![
            Part::Text {
                text: m.text.clone(),
            },
            Part::ImageUrl {
                image_url: ImageUrl {
                    url: format!(
                        "data:image/png;base64,{}",
                        base64::engine::general_purpose::STANDARD.encode(png)
                    ),
                },
            },
        ]),
    };
    ChatMessage {
        role: m.role.clone(),
        content,
    }
}

/// The [`Codec`] of a model whose tokenizer lives only on its server (a vision-language model
/// the loop evaluates through chat): no local tokenisation, no chat template, and replies end
/// where the server's `finish_reason` says.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerTokenizer;

impl Codec for ServerTokenizer {
    fn encode(&self, _: &str) -> rla_lm::Result<Vec<u32>> {
        Err(LmError::Unsupported(
            "this model's tokenizer is on its server: only chat requests reach it".into(),
        ))
    }
    fn decode(&self, _: &[u32]) -> rla_lm::Result<String> {
        Err(LmError::Unsupported(
            "this model's tokenizer is on its server: its replies come as text".into(),
        ))
    }
    fn eos_ids(&self) -> &[u32] {
        &[]
    }
    fn chat_template(&self, _: &[Message], _: bool) -> rla_lm::Result<Option<String>> {
        Ok(None)
    }
}

fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(200).collect();
    if t.is_empty() {
        "an empty body".into()
    } else {
        t
    }
}

impl<C: Codec> Codec for RemoteSampler<C> {
    fn encode(&self, text: &str) -> rla_lm::Result<Vec<u32>> {
        self.codec.encode(text)
    }

    fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
        self.codec.decode(ids)
    }

    fn eos_ids(&self) -> &[u32] {
        self.codec.eos_ids()
    }

    fn chat_template(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> rla_lm::Result<Option<String>> {
        self.codec.chat_template(messages, add_generation_prompt)
    }
}

impl<C: Codec> Sampler for RemoteSampler<C> {
    fn generate_visual(
        &self,
        chats: &[Vec<VisualMessage>],
        n: usize,
        p: &SampleParams,
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        self.concurrently(chats.len(), |i| {
            let p = SampleParams {
                seed: p.seed.wrapping_add(i as u64),
                ..p.clone()
            };
            self.chat(chats[i].iter().map(chat_message).collect(), n, &p)
        })
        .map_err(lm)
    }

    fn generate(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        if prompts.is_empty() {
            return Ok(vec![]);
        }
        // one request per endpoint, with the prompts routed to it, all at once
        let to: Vec<usize> = self.route(&prompts.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let groups: Vec<(usize, Vec<usize>)> = (0..self.endpoints.len())
            .map(|e| (e, (0..prompts.len()).filter(|&i| to[i] == e).collect()))
            .filter(|(_, g): &(usize, Vec<usize>)| !g.is_empty())
            .collect();
        let done = self
            .concurrently(groups.len(), |g| {
                let (e, idx) = &groups[g];
                let mut q = p.clone();
                // each request its own stream of random numbers
                q.seed = p
                    .seed
                    .wrapping_add((idx[0] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let req = self.request(idx.iter().map(|&i| prompts[i].clone()).collect(), n, &q);
                let resp = self.completion(&req, Some(*e))?;
                self.samples(resp, idx.len(), n)
            })
            .map_err(lm)?;
        let mut out: Vec<Vec<Sample>> = vec![vec![]; prompts.len()];
        for ((_, idx), group) in groups.iter().zip(done) {
            for (&i, s) in idx.iter().zip(group) {
                out[i] = s;
            }
        }
        Ok(out)
    }

    fn generate_within(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
        allowed: &[Vec<Vec<u32>>],
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        if allowed.len() != prompts.len() {
            return Err(LmError::Unsupported(format!(
                "{} prompts and {} lists of allowed answers",
                prompts.len(),
                allowed.len()
            )));
        }
        let eos = self.codec.eos_ids().to_vec();
        // the allowed answers as text, their end-of-sequence token taken off
        let mut choices = Vec::with_capacity(allowed.len());
        for a in allowed {
            let mut texts = Vec::with_capacity(a.len());
            for seq in a {
                let body = match seq.last() {
                    Some(t) if eos.contains(t) => &seq[..seq.len() - 1],
                    _ => &seq[..],
                };
                texts.push(self.codec.decode(body)?);
            }
            choices.push(texts);
        }
        let to = self.route(&prompts.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let out = self
            .concurrently(prompts.len(), |i| {
                let mut req = self.request(vec![prompts[i].clone()], n, p);
                req.guided_choice = Some(choices[i].clone());
                let resp = self.completion(&req, Some(to[i]))?;
                let url = resp.1.clone();
                let mut s = self.samples(resp, 1, n)?;
                let group = s.pop().expect("one prompt");
                for smp in &group {
                    if !allowed[i].contains(&smp.tokens) {
                        return Err(RemoteError::Reply {
                            url,
                            message: format!(
                                "prompt {i}'s answer {:?} is not among its allowed answers",
                                smp.text
                            ),
                        });
                    }
                }
                Ok(group)
            })
            .map_err(lm)?;
        Ok(out)
    }

    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        let to = self.route(&pairs.iter().map(|(q, _)| q.as_slice()).collect::<Vec<_>>());
        let out = self
            .concurrently(pairs.len(), |i| {
                let (q, r) = &pairs[i];
                let mut all = q.clone();
                all.extend(r);
                let mut req = self.request(vec![all.clone()], 1, &SampleParams::greedy(0));
                req.echo = true;
                req.sampling.max_tokens = Some(0);
                let (resp, url) = self.completion(&req, Some(to[i]))?;
                let bad = |message: String| RemoteError::Reply {
                    url: url.clone(),
                    message,
                };
                let c = resp
                    .choices
                    .into_iter()
                    .next()
                    .ok_or_else(|| bad("no choice".into()))?;
                let lp = c.logprobs.ok_or_else(|| bad("no logprobs".into()))?;
                let ids: Vec<Option<u32>> = lp.tokens.iter().map(|t| token_id(t)).collect();
                if ids.len() != all.len()
                    || lp.token_logprobs.len() != all.len()
                    || ids.iter().zip(&all).any(|(a, b)| *a != Some(*b))
                {
                    return Err(bad(format!(
                        "the echoed prompt has {} tokens, not the {} sent",
                        ids.len(),
                        all.len()
                    )));
                }
                lp.token_logprobs[q.len()..]
                    .iter()
                    .map(|l| l.ok_or_else(|| bad("a response token has no log-probability".into())))
                    .collect()
            })
            .map_err(lm)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(task: u32, len: usize) -> Vec<u32> {
        // a shared system prompt, then the task, then its history
        let mut p: Vec<u32> = (0..20).collect();
        p.extend((0..len).map(|i| 1000 * (task + 1) + i as u32));
        p
    }

    #[test]
    fn prefix_hashes_cover_blocks_and_the_whole_prompt() {
        let p: Vec<u32> = (0..40).collect();
        let h = prefix_hashes(&p);
        assert_eq!(h.len(), 3); // 16, 32 and 40 tokens
        assert_eq!(prefix_hashes(&p[..32]), h[..2].to_vec());
        assert_ne!(prefix_hashes(&p[..33])[2], h[2]);
        assert!(prefix_hashes(&[]).is_empty());
    }

    #[test]
    fn the_steps_of_an_episode_go_to_the_server_that_served_its_start() {
        let mut sets = vec![HashSet::new(), HashSet::new()];
        let load = [0, 0];
        // step 1 of 4 episodes, then step 2 of each (their prompts grown by one exchange), in
        // another order
        let step1: Vec<Vec<u64>> = (0..4).map(|t| prefix_hashes(&prompt(t, 40))).collect();
        let first = route(&step1, &[0, 1], &mut sets, &load, 0);
        assert_eq!(first.iter().filter(|&&e| e == 0).count(), 2, "{first:?}");
        let order = [2, 0, 3, 1];
        let step2: Vec<Vec<u64>> = order
            .iter()
            .map(|&t| prefix_hashes(&prompt(t, 60)))
            .collect();
        let second = route(&step2, &[0, 1], &mut sets, &load, 7);
        for (k, &t) in order.iter().enumerate() {
            assert_eq!(second[k], first[t as usize], "episode {t}");
        }
        // with one server down, everything goes to the other
        let third = route(&step2, &[1], &mut sets, &load, 0);
        assert!(third.iter().all(|&e| e == 1));
    }

    #[test]
    fn routing_keeps_a_task_together_and_the_load_fair() {
        // 16 tasks × 8 rollouts over 3 servers: the rollouts of a task share their prompt
        let mut batch = vec![];
        for t in 0..16 {
            for _ in 0..8 {
                batch.push(prefix_hashes(&prompt(t, 30)));
            }
        }
        let mut sets = vec![HashSet::new(); 3];
        let to = route(&batch, &[0, 1, 2], &mut sets, &[0, 0, 0], 0);
        let cap = (128 * 5usize).div_ceil(12);
        for e in 0..3 {
            let n = to.iter().filter(|&&x| x == e).count();
            assert!(n > 0 && n <= cap, "server {e} took {n}");
        }
        // most tasks on one server only (a task splits only where a server filled up)
        let split = (0..16)
            .filter(|t| {
                let g = &to[t * 8..t * 8 + 8];
                g.iter().any(|&e| e != g[0])
            })
            .count();
        assert!(split <= 2, "{split} tasks split: {to:?}");
        // requests in flight count as load: an idle server takes new prompts first
        let mut fresh = vec![HashSet::new(); 2];
        let new = vec![prefix_hashes(&prompt(99, 30))];
        assert_eq!(route(&new, &[0, 1], &mut fresh, &[5, 0], 0), vec![1]);
    }
}
