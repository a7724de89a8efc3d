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
//! run concurrently. A transport error (a time-out included), a 429 or a 5xx is retried with
//! back-off on another endpoint, and an endpoint that fails is skipped for a while, then tried
//! again. The error comes only when every try has failed, and names the server and what it did.
//!
//! Each request has two deadlines ([`Endpoints::head_timeout`], [`Endpoints::timeout`]) that
//! hold whatever the server does: a server that takes the connection and never answers fails at
//! the first, one that trickles its reply a byte at a time at the second. A base URL may end in
//! `/v1`, as OpenAI's clients take it ([`base_url`]).
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

mod http;
mod publish;
mod routing;
use http::Limits;
use publish::error_message;
pub use publish::{load_adapter, LoraApi};

/// How to reach the servers.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoints {
    /// Base URLs (`http://host:port`, or `http://host:port/v1` as OpenAI's clients take it;
    /// `/v1/...` is added).
    pub urls: Vec<String>,
    /// The model's name on the servers.
    pub model: String,
    /// A bearer token, if the servers want one.
    pub api_key: Option<String>,
    /// Time allowed for one request, from connecting to the reply's last byte (a server that
    /// trickles its reply fails here).
    pub timeout: Duration,
    /// Time allowed for the reply's head: connecting, sending the request, the status line and
    /// headers (a server that takes the connection and never answers fails here). A completion
    /// that does not stream sends its head once it is generated, so this bounds the generation.
    pub head_timeout: Duration,
    /// Tries of a request before it fails (each on the least-loaded live endpoint).
    pub tries: usize,
    /// Requests in flight at once (constrained answers send one per prompt).
    pub concurrency: usize,
    /// How long a failed endpoint is skipped.
    pub cooldown: Duration,
    /// Which call loads LoRA adapters.
    pub lora_api: LoraApi,
}

/// A server's base URL as requests start it: a trailing `/v1` (the base URL OpenAI's clients
/// take) and trailing slashes taken off, so `http://host:8000/v1/` and `http://host:8000` reach
/// the same `http://host:8000/v1/completions`.
pub fn base_url(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let rest = rest.strip_suffix("/v1").unwrap_or(rest);
    format!("{scheme}://{}", rest.trim_end_matches('/'))
}

impl Endpoints {
    /// One server with default time-outs (600 s a request, 4 tries).
    pub fn one(url: &str, model: &str) -> Endpoints {
        Endpoints {
            urls: vec![base_url(url)],
            model: model.to_string(),
            api_key: None,
            timeout: Duration::from_secs(600),
            head_timeout: Duration::from_secs(600),
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

/// A sampler on inference servers.
pub struct RemoteSampler<C: Codec> {
    codec: C,
    cfg: Endpoints,
    endpoints: Vec<Endpoint>,
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
        let endpoints = cfg
            .urls
            .iter()
            .map(|u| Endpoint {
                url: base_url(u),
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
            weights: Mutex::new(Current {
                version: 0,
                weights: Weights::Initial,
                adapters: VecDeque::new(),
            }),
            turn: AtomicUsize::new(0),
        })
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
            let bytes = body.map(|b| serde_json::to_vec(b).expect("serialisable"));
            let res = http::request(method, &url, &self.auth(), bytes.as_deref(), self.limits());
            ep.in_flight.fetch_sub(1, Ordering::Relaxed);
            let (err, unreachable) = match res {
                Ok(r) if (200..300).contains(&r.status) => {
                    let v = serde_json::from_str(&r.body).map_err(|e| RemoteError::Reply {
                        url: url.clone(),
                        message: format!("{e}: {}", excerpt(&r.body)),
                    })?;
                    return Ok((v, url));
                }
                Ok(r) => {
                    let e = RemoteError::Status {
                        url: url.clone(),
                        status: r.status,
                        message: error_message(&r.body),
                    };
                    if r.status != 429 && r.status < 500 {
                        return Err(e); // the request itself is wrong: no retry helps
                    }
                    (e, false)
                }
                Err(message) => (
                    RemoteError::Transport {
                        url: url.clone(),
                        message,
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

    /// How long one request may take.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            head: self.cfg.head_timeout,
            total: self.cfg.timeout,
        }
    }

    /// The headers every request carries: the bearer token, if the servers want one.
    pub(crate) fn auth(&self) -> Vec<(&'static str, String)> {
        self.cfg
            .api_key
            .iter()
            .map(|k| ("Authorization", format!("Bearer {k}")))
            .collect()
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

rla_lm::codec_by_field!([C: Codec] RemoteSampler<C>, codec);

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

    fn sample(&self, r: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        if let Some(s) = r.seeds {
            if s.len() != r.prompts.len() {
                return Err(LmError::Unsupported(format!(
                    "{} seeds for {} prompts",
                    s.len(),
                    r.prompts.len()
                )));
            }
        }
        match r.allowed {
            None => self.completions(r.prompts, r.n, r.params, r.seeds),
            Some(allowed) => self.guided(r.prompts, r.n, r.params, (allowed, r.seeds)),
        }
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

impl<C: Codec> RemoteSampler<C> {
    /// Free completions: one request per endpoint with the prompts routed to it, all at once;
    /// with each prompt's own seed, one request per prompt, seeded by it.
    fn completions(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
        seeds: Option<&[u64]>,
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        if prompts.is_empty() {
            return Ok(vec![]);
        }
        // one request per endpoint, with the prompts routed to it, all at once
        let to: Vec<usize> = self.route(&prompts.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let groups: Vec<(usize, Vec<usize>)> = match seeds {
            Some(_) => (0..prompts.len()).map(|i| (to[i], vec![i])).collect(),
            None => (0..self.endpoints.len())
                .map(|e| (e, (0..prompts.len()).filter(|&i| to[i] == e).collect()))
                .filter(|(_, g): &(usize, Vec<usize>)| !g.is_empty())
                .collect(),
        };
        let done = self
            .concurrently(groups.len(), |g| {
                let (e, idx) = &groups[g];
                let mut q = p.clone();
                // each request its own stream of random numbers
                q.seed = match seeds {
                    Some(s) => s[idx[0]],
                    None => p
                        .seed
                        .wrapping_add((idx[0] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                };
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

    /// Completions among allowed answers (`guided_choice`), one request per prompt.
    fn guided(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
        (allowed, seeds): (&[Vec<Vec<u32>>], Option<&[u64]>),
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
                // each prompt its own stream of random numbers: the rollouts of a task send the
                // same prompt, and must not all draw the same answer
                let q = SampleParams {
                    seed: match seeds {
                        Some(s) => s[i],
                        None => p
                            .seed
                            .wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                    },
                    ..p.clone()
                };
                let mut req = self.request(vec![prompts[i].clone()], n, &q);
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
}

#[cfg(test)]
mod tests {
    use super::routing::*;
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
