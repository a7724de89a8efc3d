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
//! Requests go to the least-loaded of the endpoints; a transport error, a 429 or a 5xx is
//! retried with back-off on the next endpoint, and an endpoint that fails is skipped for a
//! while, then tried again. The error comes only when every try has failed.
//!
//! [`RemoteSampler::update_weights`] points every server at new weights on disk (SGLang's
//! `/update_weights_from_disk`); a server that missed an update (it was down, or restarted)
//! gets the latest before its next request, so no sample comes from stale weights.

use crate::protocol::*;
use crate::RemoteError;
use rla_lm::{Codec, Finish, LmError, Message, Sample, SampleParams, Sampler};
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
        }
    }
}

struct Endpoint {
    url: String,
    in_flight: AtomicUsize,
    down_until: Mutex<Option<Instant>>,
    /// The weights version it has loaded.
    version: AtomicU64,
}

/// A sampler on inference servers.
pub struct RemoteSampler<C: Codec> {
    codec: C,
    cfg: Endpoints,
    endpoints: Vec<Endpoint>,
    agent: ureq::Agent,
    /// The current weights: their version (0: what the servers started with) and folder.
    weights: Mutex<(u64, Option<String>)>,
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
        let agent = ureq::AgentBuilder::new()
            .timeout(cfg.timeout)
            .max_idle_connections_per_host(cfg.concurrency.max(1))
            .build();
        let endpoints = cfg
            .urls
            .iter()
            .map(|u| Endpoint {
                url: u.trim_end_matches('/').to_string(),
                in_flight: AtomicUsize::new(0),
                down_until: Mutex::new(None),
                version: AtomicU64::new(0),
            })
            .collect();
        Ok(RemoteSampler {
            codec,
            cfg,
            endpoints,
            agent,
            weights: Mutex::new((0, None)),
            turn: AtomicUsize::new(0),
        })
    }

    /// Points every server at the weights in `dir` (a checkpoint folder they can read). Servers
    /// that cannot be reached now get them before their next request; it is an error only when
    /// none took them.
    pub fn update_weights(&self, dir: &str) -> Result<(), RemoteError> {
        let version = {
            let mut w = self.weights.lock().unwrap_or_else(|e| e.into_inner());
            w.0 += 1;
            w.1 = Some(dir.to_string());
            w.0
        };
        let mut last = None;
        let mut ok = 0;
        for ep in &self.endpoints {
            match self.push_weights(ep, version, dir) {
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

    fn push_weights(&self, ep: &Endpoint, version: u64, dir: &str) -> Result<(), RemoteError> {
        let url = format!("{}/update_weights_from_disk", ep.url);
        let body = serde_json::json!({"model_path": dir});
        let mut req = self.agent.post(&url);
        if let Some(k) = &self.cfg.api_key {
            req = req.set("Authorization", &format!("Bearer {k}"));
        }
        match req.send_json(body) {
            Ok(_) => {
                ep.version.store(version, Ordering::Relaxed);
                Ok(())
            }
            Err(ureq::Error::Status(status, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                let message = serde_json::from_str::<ErrorBody>(&text)
                    .map(|b| b.error.message)
                    .unwrap_or_else(|_| excerpt(&text));
                Err(RemoteError::Status {
                    url,
                    status,
                    message,
                })
            }
            Err(ureq::Error::Transport(t)) => Err(RemoteError::Transport {
                url,
                message: t.to_string(),
            }),
        }
    }

    /// Brings an endpoint to the current weights before it serves.
    fn ensure_weights(&self, ep: &Endpoint) -> Result<(), RemoteError> {
        let (version, dir) = self
            .weights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match dir {
            Some(d) if ep.version.load(Ordering::Relaxed) < version => {
                self.push_weights(ep, version, &d)
            }
            _ => Ok(()),
        }
    }

    /// The models the first live server lists (`GET /v1/models`).
    pub fn models(&self) -> Result<Vec<String>, RemoteError> {
        let v: ModelList = self.call("GET", "/v1/models", None)?;
        Ok(v.data.into_iter().map(|m| m.id).collect())
    }

    /// The least-loaded endpoint not cooling down (any, if all are), taking turns among equals.
    fn pick(&self, skip: Option<usize>) -> usize {
        let now = Instant::now();
        let live = |i: usize| {
            self.endpoints[i]
                .down_until
                .lock()
                .map(|d| d.is_none_or(|t| t <= now))
                .unwrap_or(true)
        };
        let order: Vec<usize> = (0..self.endpoints.len()).collect();
        let candidates: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| live(i) && Some(i) != skip)
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

    /// One request, retried on transport errors, 429 and 5xx.
    fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, RemoteError> {
        let mut last = None;
        let mut skip = None;
        for attempt in 0..self.cfg.tries.max(1) {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(100 << (attempt - 1).min(6)));
            }
            let i = self.pick(skip);
            let ep = &self.endpoints[i];
            let url = format!("{}{path}", ep.url);
            if let Err(e) = self.ensure_weights(ep) {
                tracing::warn!(error = %e, attempt, "a server could not load the current weights");
                if let Ok(mut d) = ep.down_until.lock() {
                    *d = Some(Instant::now() + self.cfg.cooldown);
                }
                if self.endpoints.len() > 1 {
                    skip = Some(i);
                }
                last = Some(e);
                continue;
            }
            ep.in_flight.fetch_add(1, Ordering::Relaxed);
            let mut req = self.agent.request(method, &url);
            if let Some(k) = &self.cfg.api_key {
                req = req.set("Authorization", &format!("Bearer {k}"));
            }
            let res = match body {
                Some(b) => req.send_json(b.clone()),
                None => req.call(),
            };
            ep.in_flight.fetch_sub(1, Ordering::Relaxed);
            let err = match res {
                Ok(resp) => {
                    let text = resp.into_string().map_err(|e| RemoteError::Reply {
                        url: url.clone(),
                        message: format!("the body could not be read: {e}"),
                    })?;
                    return serde_json::from_str(&text).map_err(|e| RemoteError::Reply {
                        url: url.clone(),
                        message: format!("{e}: {}", excerpt(&text)),
                    });
                }
                Err(ureq::Error::Status(status, resp)) => {
                    let text = resp.into_string().unwrap_or_default();
                    let message = serde_json::from_str::<ErrorBody>(&text)
                        .map(|b| b.error.message)
                        .unwrap_or_else(|_| excerpt(&text));
                    let e = RemoteError::Status {
                        url: url.clone(),
                        status,
                        message,
                    };
                    if status != 429 && status < 500 {
                        return Err(e); // the request itself is wrong: no retry helps
                    }
                    e
                }
                Err(ureq::Error::Transport(t)) => RemoteError::Transport {
                    url: url.clone(),
                    message: t.to_string(),
                },
            };
            tracing::warn!(error = %err, attempt, "request failed; trying again");
            if let Ok(mut d) = ep.down_until.lock() {
                *d = Some(Instant::now() + self.cfg.cooldown);
            }
            if self.endpoints.len() > 1 {
                skip = Some(i);
            }
            last = Some(err);
        }
        Err(last.expect("at least one try"))
    }

    fn completion(&self, req: &CompletionRequest) -> Result<CompletionResponse, RemoteError> {
        let body = serde_json::to_value(req).expect("serialisable");
        self.call("POST", "/v1/completions", Some(&body))
    }

    fn request(&self, prompts: Vec<Vec<u32>>, n: usize, p: &SampleParams) -> CompletionRequest {
        CompletionRequest {
            model: self.cfg.model.clone(),
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
            logprobs: Some(1),
            echo: false,
            return_tokens_as_token_ids: true,
            guided_choice: None,
        }
    }

    /// The samples of a reply, checked against what was asked.
    fn samples(
        &self,
        resp: CompletionResponse,
        prompts: usize,
        n: usize,
    ) -> Result<Vec<Vec<Sample>>, RemoteError> {
        let url = format!("{}/v1/completions", self.endpoints[0].url);
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

fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(200).collect();
    if t.is_empty() {
        "an empty body".into()
    } else {
        t
    }
}

impl<C: Codec> Sampler for RemoteSampler<C> {
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

    fn generate(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        if prompts.is_empty() {
            return Ok(vec![]);
        }
        let req = self.request(prompts.to_vec(), n, p);
        let resp = self.completion(&req).map_err(lm)?;
        self.samples(resp, prompts.len(), n).map_err(lm)
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
        let out = self
            .concurrently(prompts.len(), |i| {
                let mut req = self.request(vec![prompts[i].clone()], n, p);
                req.guided_choice = Some(choices[i].clone());
                let resp = self.completion(&req)?;
                let mut s = self.samples(resp, 1, n)?;
                let group = s.pop().expect("one prompt");
                for smp in &group {
                    if !allowed[i].contains(&smp.tokens) {
                        return Err(RemoteError::Reply {
                            url: self.endpoints[0].url.clone(),
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
        let out = self
            .concurrently(pairs.len(), |i| {
                let (q, r) = &pairs[i];
                let mut all = q.clone();
                all.extend(r);
                let mut req = self.request(vec![all.clone()], 1, &SampleParams::greedy(0));
                req.echo = true;
                req.sampling.max_tokens = Some(0);
                let resp = self.completion(&req)?;
                let url = format!("{}/v1/completions", self.endpoints[0].url);
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
