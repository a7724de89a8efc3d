//! New weights on the servers: a checkpoint on disk or a LoRA adapter pushed to every endpoint,
//! and pushed again to a server that missed it before its next request.

use super::*;

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

/// Loads the adapter in `dir` as `name` on the server at `url` (a base URL, `/v1` or not): one
/// call, no retries, within 600 s.
pub fn load_adapter(
    url: &str,
    api_key: Option<&str>,
    name: &str,
    dir: &str,
) -> Result<(), RemoteError> {
    let limits = Limits {
        head: Duration::from_secs(600),
        total: Duration::from_secs(600),
    };
    let url = format!("{}/v1/load_lora_adapter", base_url(url));
    let auth: Vec<_> = api_key
        .iter()
        .map(|k| ("Authorization", format!("Bearer {k}")))
        .collect();
    post(&url, &auth, &load_body(name, dir), limits)
}

pub(super) fn load_body(name: &str, dir: &str) -> serde_json::Value {
    serde_json::to_value(LoadAdapter {
        lora_name: name.into(),
        lora_path: dir.into(),
    })
    .expect("serialisable")
}

/// One POST whose reply body does not matter (vLLM answers adapter calls with plain text).
pub(super) fn post(
    url: &str,
    headers: &[(&str, String)],
    body: &serde_json::Value,
    limits: Limits,
) -> Result<(), RemoteError> {
    let bytes = serde_json::to_vec(body).expect("serialisable");
    match http::request("POST", url, headers, Some(&bytes), limits) {
        Ok(r) if (200..300).contains(&r.status) => Ok(()),
        Ok(r) => Err(RemoteError::Status {
            url: url.to_string(),
            status: r.status,
            message: error_message(&r.body),
        }),
        Err(message) => Err(RemoteError::Transport {
            url: url.to_string(),
            message,
        }),
    }
}

/// Whether a transport error is a refused connection (nothing listens: trying again at once
/// does not help), rather than one dropped after it was made.
pub(super) fn refused(message: &str) -> bool {
    message.starts_with(http::REFUSED)
}

/// The message of an error body: OpenAI's `{"error": {"message"}}`, vLLM's `{"message"}`, or
/// the start of the text.
pub(super) fn error_message(text: &str) -> String {
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

impl LoraApi {
    fn paths(self) -> (&'static str, &'static str) {
        match self {
            LoraApi::Vllm => ("/v1/load_lora_adapter", "/v1/unload_lora_adapter"),
            LoraApi::Sglang => ("/load_lora_adapter", "/unload_lora_adapter"),
        }
    }
}

impl<C: Codec> RemoteSampler<C> {
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

    pub(super) fn publish(&self, weights: Weights) -> Result<(), RemoteError> {
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
    pub(super) fn post_retried(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<(), RemoteError> {
        let mut attempt = 0;
        loop {
            match post(url, &self.auth(), body, self.limits()) {
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
    pub(super) fn push_weights(
        &self,
        ep: &Endpoint,
        version: u64,
        w: &Weights,
    ) -> Result<(), RemoteError> {
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
    pub(super) fn ensure_weights(&self, ep: &Endpoint) -> Result<(), RemoteError> {
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
}
