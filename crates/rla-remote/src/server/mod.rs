//! The OpenAI-compatible API over a sampler in this process: `GET /v1/models`,
//! `POST /v1/completions` (text or token-id prompts, batches, `n`, temperature, top-p, top-k,
//! seed, stop strings, `max_tokens`, per-token `logprobs`, `echo` to score a text, and vLLM's
//! `return_tokens_as_token_ids` and `guided_choice`) and `POST /v1/chat/completions` (the
//! model's chat template, `logprobs` with `top_logprobs`), SGLang's `POST /update_weights_from_disk`
//! (`{"model_path": DIR}`: the weights a trainer just wrote, loaded between requests) when the
//! server has a weights loader, and LoRA adapters when it has an adapter loader: vLLM's
//! `POST /v1/load_lora_adapter` / `/v1/unload_lora_adapter` (`{"lora_name", "lora_path"}`) and
//! SGLang's `/load_lora_adapter` / `/unload_lora_adapter`; an adapter is then a model of its own
//! in `/v1/models` (with its `parent`) that requests name. Errors are JSON bodies with a 4xx
//! status that say what was wrong; a request never takes the server down.
//!
//! Connections are tasks on a tokio reactor (hyper's HTTP/1.1): a client that is slow or silent
//! holds no thread. The model's calls run on at most `workers` blocking threads.

use crate::protocol::*;
use rla_lm::{
    Alternatives, Finish, LmError, Message, Sample, SampleParams, Sampler, VisualMessage,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

mod chat;
mod connection;
mod weights;

use connection::*;

use weights::{load_adapter, models, unload_adapter, update_weights};

/// What the server allows: the limits of one request, and who may ask.
#[derive(Debug, Clone)]
pub struct Options {
    /// Requests must carry `Authorization: Bearer <key>` (vLLM's `--api-key`); `None` takes any.
    pub api_key: Option<String>,
    /// Most samples per prompt.
    pub max_n: usize,
    /// Most prompts in one request.
    pub max_prompts: usize,
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// How long a client may keep the server waiting for bytes: a body that has not come
    /// whole after this (declared and never sent, or trickled) is answered 408 and its
    /// connection closed, and so is, without a reply, a connection whose next request's head
    /// has not come whole after this (one that sends nothing at all, or stays silent between
    /// requests).
    pub body_timeout: std::time::Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            api_key: None,
            max_n: 128,
            max_prompts: 1024,
            max_tokens: 8192,
            max_body: 8 << 20,
            body_timeout: std::time::Duration::from_secs(60),
        }
    }
}

/// A running server; dropping it (or [`Running::stop`]) stops it.
pub struct Running {
    /// The reactor and the blocking threads; dropped to stop.
    runtime: Option<tokio::runtime::Runtime>,
    /// The task taking connections.
    accepting: Option<tokio::task::JoinHandle<()>>,
    addr: std::net::SocketAddr,
}

impl Running {
    /// The address it listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Its base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let (Some(rt), Some(accepting)) = (&self.runtime, self.accepting.take()) {
            let _ = rt.block_on(accepting);
        }
    }

    /// Stops serving (the port is closed, connections are dropped) and waits for the model
    /// calls under way.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // ends every task; dropping the runtime waits for its blocking threads
        drop(self.runtime.take());
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Loads a sampler from a checkpoint folder (for `/update_weights_from_disk`).
pub type Loader<S> = Box<dyn Fn(&Path) -> Result<S, String> + Send + Sync>;

/// Makes the base sampler with a LoRA adapter from a PEFT folder (for `/v1/load_lora_adapter`).
pub type AdapterLoader<S> = Box<dyn Fn(&S, &Path) -> Result<S, String> + Send + Sync>;

/// How a server changes what it serves; without a loader, the matching calls are refused.
pub struct Loaders<S> {
    /// New base weights from disk.
    pub weights: Option<Loader<S>>,
    /// LoRA adapters on the base.
    pub adapter: Option<AdapterLoader<S>>,
}

impl<S> Default for Loaders<S> {
    fn default() -> Self {
        Loaders {
            weights: None,
            adapter: None,
        }
    }
}

/// The models a server holds: the base, and adapters on it by name (with their folders, so they
/// are loaded again on new base weights).
struct Models<S> {
    base: S,
    adapters: BTreeMap<String, (PathBuf, S)>,
}

struct State<S> {
    models: RwLock<Models<S>>,
    loaders: Loaders<S>,
    name: String,
    limits: Options,
    /// Generation runs one request at a time (the model uses every core itself).
    busy: Mutex<()>,
    counter: AtomicU64,
    /// Requests whose model calls may run at once, each on a blocking thread.
    workers: Arc<tokio::sync::Semaphore>,
}

/// Serves `sampler` as model `name` on `addr` (`127.0.0.1:0` picks a free port), with the model
/// calls of up to `workers` requests at once on threads of their own.
pub fn start<S: Sampler + Send + Sync + 'static>(
    sampler: S,
    name: &str,
    addr: &str,
    workers: usize,
    limits: Options,
) -> std::io::Result<Running> {
    start_with(sampler, Loaders::default(), name, addr, workers, limits)
}

/// [`start`], with loaders for new weights (`/update_weights_from_disk`) and adapters
/// (`/v1/load_lora_adapter`).
pub fn start_with<S: Sampler + Send + Sync + 'static>(
    sampler: S,
    loaders: Loaders<S>,
    name: &str,
    addr: &str,
    workers: usize,
    limits: Options,
) -> std::io::Result<Running> {
    let workers = workers.max(1);
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(workers)
        .thread_name("rla-serve")
        .enable_io()
        .enable_time()
        .build()?;
    let listener = {
        let _inside = runtime.enter();
        tokio::net::TcpListener::from_std(listener)?
    };
    let state = Arc::new(State {
        models: RwLock::new(Models {
            base: sampler,
            adapters: BTreeMap::new(),
        }),
        loaders,
        name: name.to_string(),
        limits,
        busy: Mutex::new(()),
        counter: AtomicU64::new(0),
        workers: Arc::new(tokio::sync::Semaphore::new(workers)),
    });
    let accepting = runtime.spawn(accept(listener, state));
    Ok(Running {
        runtime: Some(runtime),
        accepting: Some(accepting),
        addr,
    })
}

/// An error reply.
#[derive(Debug)]
struct Reply {
    status: u16,
    kind: &'static str,
    message: String,
    param: Option<&'static str>,
}

fn bad(message: impl Into<String>, param: Option<&'static str>) -> Reply {
    Reply {
        status: 400,
        kind: "invalid_request_error",
        message: message.into(),
        param,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A JSON reply; with `close`, the connection is closed after it.
fn respond(status: u16, body: &impl serde::Serialize, close: bool) -> Answer {
    use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
    let text = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut resp = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(text)));
    *resp.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if close {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// The error body of `e`.
fn refusal(e: Reply) -> Answer {
    tracing::debug!(status = e.status, message = %e.message, "request refused");
    // a body refused before it came whole (408, 413) is not read on: the connection closes
    let close = matches!(e.status, 408 | 413);
    let body = ErrorBody {
        error: ErrorDetail {
            message: e.message,
            kind: e.kind.into(),
            param: e.param.map(String::from),
            code: None,
        },
    };
    respond(e.status, &body, close)
}

/// Every route, for the 405 of a wrong method.
const ROUTES: [&str; 9] = [
    "/v1/models",
    "/v1/completions",
    "/v1/chat/completions",
    "/health",
    "/update_weights_from_disk",
    "/v1/load_lora_adapter",
    "/load_lora_adapter",
    "/v1/unload_lora_adapter",
    "/unload_lora_adapter",
];

async fn handle<S: Sampler + Send + Sync + 'static>(
    state: Arc<State<S>>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Answer {
    use hyper::Method;
    let (head, body) = req.into_parts();
    let method = head.method;
    let path = head.uri.path().to_string();
    if let Some(key) = &state.limits.api_key {
        let want = format!("Bearer {key}");
        let ok = head
            .headers
            .get_all(hyper::header::AUTHORIZATION)
            .iter()
            .any(|v| v.as_bytes() == want.as_bytes());
        if !ok {
            let body = ErrorBody {
                error: ErrorDetail {
                    message: "a missing or wrong API key (Authorization: Bearer …)".into(),
                    kind: "authentication_error".into(),
                    param: None,
                    code: None,
                },
            };
            return respond(401, &body, false);
        }
    }
    let body = if method == Method::POST {
        match take_body(body, state.limits.max_body, state.limits.body_timeout).await {
            Ok(b) => b,
            Err(e) => return refusal(e),
        }
    } else {
        Vec::new()
    };
    let result: Result<serde_json::Value, Reply> = match (&method, path.as_str()) {
        (&Method::GET, "/v1/models") => match weights::models_now(&state) {
            Some(v) => Ok(v),
            // the models are being swapped: waited for off the reactor
            None => blocking(&state, |s| Ok(models(s))).await,
        },
        (&Method::GET, "/health") => Ok(serde_json::json!({})),
        (&Method::POST, "/update_weights_from_disk") => {
            blocking(&state, move |s| update_weights(s, &body)).await
        }
        (&Method::POST, "/v1/load_lora_adapter" | "/load_lora_adapter") => {
            blocking(&state, move |s| load_adapter(s, &body)).await
        }
        (&Method::POST, "/v1/unload_lora_adapter" | "/unload_lora_adapter") => {
            blocking(&state, move |s| unload_adapter(s, &body)).await
        }
        (&Method::POST, "/v1/completions") => {
            blocking(&state, move |s| completions(s, &body)).await
        }
        (&Method::POST, "/v1/chat/completions") => {
            blocking(&state, move |s| chat::chat(s, &body)).await
        }
        (_, p) if ROUTES.contains(&p) => Err(Reply {
            status: 405,
            kind: "invalid_request_error",
            message: format!("{path} does not take this method"),
            param: None,
        }),
        _ => Err(Reply {
            status: 404,
            kind: "not_found_error",
            message: format!("no such endpoint: {path}"),
            param: None,
        }),
    };
    match result {
        Ok(v) => respond(200, &v, false),
        Err(e) => refusal(e),
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Reply> {
    serde_json::from_slice(body).map_err(|e| bad(format!("the request is not valid: {e}"), None))
}

/// The sampling parameters of a request, checked; `max_tokens` is the request's (chat has two
/// names for it).
fn params<S>(
    state: &State<S>,
    sampling: &Sampling,
    max_tokens: Option<usize>,
) -> Result<(usize, SampleParams), Reply> {
    let Sampling {
        n,
        temperature,
        top_p,
        top_k,
        seed,
        ref stop,
        stream,
        ..
    } = *sampling;
    if stream {
        return Err(bad("streaming is not served", Some("stream")));
    }
    let n = n.unwrap_or(1);
    if n == 0 || n > state.limits.max_n {
        return Err(bad(
            format!("n = {n}: must lie in 1..={}", state.limits.max_n),
            Some("n"),
        ));
    }
    let temperature = temperature.unwrap_or(1.0);
    if !(0.0..=100.0).contains(&temperature) {
        return Err(bad(
            format!("temperature = {temperature}: must lie in 0..=100"),
            Some("temperature"),
        ));
    }
    let top_p = top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(bad(
            format!("top_p = {top_p}: must lie in (0, 1]"),
            Some("top_p"),
        ));
    }
    let top_k = match top_k {
        None | Some(-1) | Some(0) => 0,
        Some(k) if k > 0 => k as usize,
        Some(k) => {
            return Err(bad(
                format!("top_k = {k}: must be positive, or -1 to keep every token"),
                Some("top_k"),
            ))
        }
    };
    let max_tokens = max_tokens.unwrap_or(16);
    if max_tokens > state.limits.max_tokens {
        return Err(bad(
            format!(
                "max_tokens = {max_tokens}: at most {}",
                state.limits.max_tokens
            ),
            Some("max_tokens"),
        ));
    }
    let stop = stop.as_ref().map(Stop::list).unwrap_or_default();
    if stop.iter().any(String::is_empty) {
        return Err(bad("an empty stop string", Some("stop")));
    }
    let seed = seed.unwrap_or_else(|| {
        state.counter.fetch_add(1, Ordering::Relaxed) ^ now().wrapping_mul(0x9E37_79B9)
    });
    Ok((
        n,
        SampleParams {
            temperature,
            top_p,
            top_k,
            max_new_tokens: max_tokens,
            stop,
            seed,
        },
    ))
}

fn internal(e: impl std::fmt::Display) -> Reply {
    // the first line: a back end's error may carry its backtrace after it
    let e = e.to_string();
    Reply {
        status: 500,
        kind: "server_error",
        message: format!("the model failed: {}", e.lines().next().unwrap_or("")),
        param: None,
    }
}

fn finish_reason(f: Finish) -> &'static str {
    match f {
        Finish::Eos | Finish::Stop => "stop",
        Finish::Length => "length",
    }
}

fn completions<S: Sampler>(state: &State<S>, body: &[u8]) -> Result<serde_json::Value, Reply> {
    let r: CompletionRequest = parse(body)?;
    let (n, p) = params(state, &r.sampling, r.sampling.max_tokens)?;
    let top = top_k(r.logprobs.unwrap_or(0) as usize, "logprobs")?;
    let models = state.models.read().unwrap_or_else(|e| e.into_inner());
    let s = lookup(state, &models, &r.model)?;
    let prompts: Vec<Vec<u32>> = match &r.prompt {
        Prompt::Text(t) => vec![s
            .encode(t)
            .map_err(|e| bad(e.to_string(), Some("prompt")))?],
        Prompt::Texts(ts) => ts
            .iter()
            .map(|t| s.encode(t))
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string(), Some("prompt")))?,
        Prompt::Ids(ids) => vec![ids.clone()],
        Prompt::Batch(b) => b.clone(),
    };
    if prompts.is_empty() || prompts.len() > state.limits.max_prompts {
        return Err(bad(
            format!(
                "{} prompts: from 1 to {}",
                prompts.len(),
                state.limits.max_prompts
            ),
            Some("prompt"),
        ));
    }
    if let Some(i) = prompts.iter().position(Vec::is_empty) {
        return Err(bad(format!("prompt {i} is empty"), Some("prompt")));
    }
    context_fits(s, prompts.iter().map(Vec::len), p.max_new_tokens)?;
    if let Some(v) = s.vocab_size() {
        for (i, q) in prompts.iter().enumerate() {
            if let Some(t) = q.iter().find(|&&t| t as usize >= v) {
                return Err(bad(
                    format!("prompt {i} has token id {t}; the model's vocabulary has {v} ids"),
                    Some("prompt"),
                ));
            }
        }
    }
    let allowed = match &r.guided_choice {
        None => None,
        Some(c) if c.is_empty() => return Err(bad("no choices", Some("guided_choice"))),
        Some(c) => {
            let eos = s.eos_ids().first().copied();
            let mut seqs = Vec::with_capacity(c.len());
            for (i, t) in c.iter().enumerate() {
                let mut ids = s.encode(t).map_err(|e| bad(e.to_string(), None))?;
                // a choice the vocabulary cannot write (a word read as `<unk>`) would be
                // answered as something that is none of the choices
                let back = s.decode(&ids).map_err(internal)?;
                let squeeze = |x: &str| x.split_whitespace().collect::<String>();
                if ids.is_empty() || squeeze(&back) != squeeze(t) {
                    return Err(bad(
                        format!(
                            "choice {i} ({t:?}) cannot be written in this model's vocabulary (it reads back as {back:?})"
                        ),
                        Some("guided_choice"),
                    ));
                }
                ids.extend(eos);
                seqs.push(ids);
            }
            Some(vec![seqs; prompts.len()])
        }
    };
    let _guard = state.busy.lock().unwrap_or_else(|e| e.into_inner());
    // the prompt's own log-probabilities, for `echo`
    // (a one-token prompt has nothing to score: its only token has no log-probability)
    let scored: Vec<usize> = (0..prompts.len())
        .filter(|&i| prompts[i].len() > 1)
        .collect();
    let echo_pairs: Vec<(Vec<u32>, Vec<u32>)> = scored
        .iter()
        .map(|&i| (prompts[i][..1].to_vec(), prompts[i][1..].to_vec()))
        .collect();
    fn spread<T: Clone>(n: usize, scored: &[usize], got: Vec<Vec<T>>) -> Vec<Vec<T>> {
        let mut all = vec![Vec::new(); n];
        for (&i, g) in scored.iter().zip(got) {
            all[i] = g;
        }
        all
    }
    let n_prompts = prompts.len();
    let echoed: Option<Vec<Vec<f32>>> = match r.echo {
        true if echo_pairs.is_empty() => Some(vec![Vec::new(); prompts.len()]),
        true => Some(spread(
            n_prompts,
            &scored,
            s.score(&echo_pairs).map_err(internal)?,
        )),
        false => None,
    };
    let echoed_top = match (&echoed, top) {
        (Some(_), k) if k > 0 && echo_pairs.is_empty() => Some(vec![Vec::new(); prompts.len()]),
        (Some(_), k) if k > 0 => Some(spread(
            n_prompts,
            &scored,
            s.top_logprobs(&echo_pairs, k).map_err(internal)?,
        )),
        _ => None,
    };
    let samples: Vec<Vec<Sample>> = if p.max_new_tokens == 0 {
        prompts
            .iter()
            .map(|_| {
                (0..n)
                    .map(|_| Sample {
                        tokens: vec![],
                        logprobs: vec![],
                        text: String::new(),
                        finish: Finish::Length,
                    })
                    .collect()
            })
            .collect()
    } else {
        match &allowed {
            Some(a) => s.generate_within(&prompts, n, &p, a),
            None => s.generate(&prompts, n, &p),
        }
        .map_err(internal)?
    };
    // the alternatives at each sampled position
    let sampled_top: Option<rla_lm::Alternatives> = if top > 0 {
        let pairs: Vec<(Vec<u32>, Vec<u32>)> = prompts
            .iter()
            .zip(&samples)
            .flat_map(|(q, g)| g.iter().map(move |smp| (q.clone(), smp.tokens.clone())))
            .collect();
        Some(s.top_logprobs(&pairs, top).map_err(internal)?)
    } else {
        None
    };
    drop(_guard);
    let name = |id: u32| -> String {
        if r.return_tokens_as_token_ids {
            format!("token_id:{id}")
        } else {
            s.decode(&[id]).unwrap_or_default()
        }
    };
    let mut choices = Vec::new();
    let mut usage = Usage::default();
    for (i, (q, group)) in prompts.iter().zip(&samples).enumerate() {
        usage.prompt_tokens += q.len();
        for (j, smp) in group.iter().enumerate() {
            usage.completion_tokens += smp.tokens.len();
            let mut text = String::new();
            let mut lp = CompletionLogprobs {
                tokens: vec![],
                token_logprobs: vec![],
                top_logprobs: (top > 0).then(Vec::new),
                text_offset: vec![],
            };
            let alternatives = |alts: &[(u32, f32)]| {
                let mut m = serde_json::Map::new();
                for &(id, l) in alts {
                    m.insert(name(id), serde_json::json!(l));
                }
                m
            };
            if let Some(e) = &echoed {
                let t = s.decode(q).map_err(internal)?;
                let mut offset = 0;
                for (k, &id) in q.iter().enumerate() {
                    lp.tokens.push(name(id));
                    lp.token_logprobs
                        .push(if k == 0 { None } else { Some(e[i][k - 1]) });
                    if let (Some(t), Some(et)) = (lp.top_logprobs.as_mut(), &echoed_top) {
                        t.push((k > 0).then(|| alternatives(&et[i][k - 1])));
                    }
                    lp.text_offset.push(offset);
                    offset += s.decode(&[id]).map(|x| x.len()).unwrap_or(0);
                }
                text.push_str(&t);
            }
            let start = text.len();
            let mut offset = start;
            for (k, (&id, &l)) in smp.tokens.iter().zip(&smp.logprobs).enumerate() {
                lp.tokens.push(name(id));
                lp.token_logprobs.push(Some(l));
                if let (Some(t), Some(st)) = (lp.top_logprobs.as_mut(), &sampled_top) {
                    t.push(Some(alternatives(&st[i * n + j][k])));
                }
                lp.text_offset.push(offset);
                offset += s.decode(&[id]).map(|x| x.len()).unwrap_or(0);
            }
            text.push_str(&smp.text);
            choices.push(CompletionChoice {
                index: i * n + j,
                text,
                logprobs: r.logprobs.map(|_| lp),
                finish_reason: Some(finish_reason(smp.finish).into()),
            });
        }
    }
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    let id = state.counter.fetch_add(1, Ordering::Relaxed);
    Ok(serde_json::to_value(CompletionResponse {
        id: format!("cmpl-{id}"),
        object: "text_completion".into(),
        created: now(),
        model: r.model.clone(),
        choices,
        usage,
    })
    .expect("serialisable"))
}

/// The model a request names: the base or one of its adapters.
/// Refuses prompts that, with `max_tokens` new tokens, would run past the model's context (as
/// vLLM answers 400 past `max_model_len`).
fn context_fits<S: Sampler>(
    s: &S,
    lengths: impl IntoIterator<Item = usize>,
    max_tokens: usize,
) -> Result<(), Reply> {
    rla_lm::check_context(lengths, max_tokens, s.context_len()).map_err(|e| {
        bad(
            format!("{e}; shorten the prompt or lower max_tokens"),
            Some("max_tokens"),
        )
    })
}

fn lookup<'a, S>(state: &State<S>, m: &'a Models<S>, model: &str) -> Result<&'a S, Reply> {
    if model == state.name {
        return Ok(&m.base);
    }
    match m.adapters.get(model) {
        Some((_, a)) => Ok(a),
        None => {
            let mut names = vec![format!("`{}`", state.name)];
            names.extend(m.adapters.keys().map(|k| format!("`{k}`")));
            Err(Reply {
                status: 404,
                kind: "not_found_error",
                message: format!(
                    "the model `{model}` does not exist; this server serves {}",
                    names.join(", ")
                ),
                param: Some("model"),
            })
        }
    }
}

/// The number of alternatives asked for, checked (vLLM's default limit is 20).
fn top_k(k: usize, param: &'static str) -> Result<usize, Reply> {
    if k > 20 {
        return Err(bad(format!("{param} = {k}: at most 20"), Some(param)));
    }
    Ok(k)
}
