//! What an OpenAI-compatible server offers of what RL runs need: each feature asked for once
//! with a small request, and the reply checked.

use crate::protocol::*;
use std::time::Duration;

/// One feature and what the server did with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The feature.
    pub feature: &'static str,
    /// Whether a run needs it (the others are used when present).
    pub needed: bool,
    /// `Ok(what was seen)` or `Err(why not)`.
    pub result: Result<String, String>,
}

struct Probe {
    agent: ureq::Agent,
    base: String,
    key: Option<String>,
}

impl Probe {
    fn post(&self, path: &str, body: serde_json::Value) -> Result<serde_json::Value, String> {
        let mut req = self.agent.post(&format!("{}{path}", self.base));
        if let Some(k) = &self.key {
            req = req.set("Authorization", &format!("Bearer {k}"));
        }
        match req.send_json(body) {
            Ok(r) => {
                let text = r.into_string().map_err(|e| e.to_string())?;
                serde_json::from_str(&text).map_err(|e| format!("not JSON ({e})"))
            }
            Err(ureq::Error::Status(s, r)) => {
                let text = r.into_string().unwrap_or_default();
                let msg: String = text.chars().take(160).collect();
                Err(format!("HTTP {s}: {}", msg.replace('\n', " ")))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn completion(&self, body: serde_json::Value) -> Result<CompletionResponse, String> {
        let v = self.post("/v1/completions", body)?;
        serde_json::from_value(v).map_err(|e| format!("not a completion ({e})"))
    }
}

/// An HTTP agent with one deadline for each request, its body included, that keeps no
/// connection: servers such as tiny_http close a connection after answering a `Connection:
/// close` request without saying so in the reply, and a pooled connection the server has closed
/// fails the next POST on it with "Unexpected EOF".
fn agent(timeout: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(timeout)
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .build()
}

fn logprobs_of(c: &CompletionChoice) -> Result<&CompletionLogprobs, String> {
    c.logprobs.as_ref().ok_or_else(|| "no logprobs".to_string())
}

/// Probes the server at `url` (a base URL, `/v1` or not) for model `model`.
pub fn probe(url: &str, model: &str, api_key: Option<&str>, timeout: Duration) -> Vec<Check> {
    let p = Probe {
        agent: agent(timeout),
        base: crate::client::base_url(url),
        key: api_key.map(str::to_string),
    };
    let mut out = Vec::new();
    let mut check = |feature, needed, result| {
        out.push(Check {
            feature,
            needed,
            result,
        })
    };
    let models = (|| {
        let mut req = p.agent.get(&format!("{}/v1/models", p.base));
        if let Some(k) = &p.key {
            req = req.set("Authorization", &format!("Bearer {k}"));
        }
        let text = req
            .call()
            .map_err(|e| e.to_string())?
            .into_string()
            .map_err(|e| e.to_string())?;
        let l: ModelList =
            serde_json::from_str(&text).map_err(|e| format!("not a model list ({e})"))?;
        let ids: Vec<String> = l.data.into_iter().map(|m| m.id).collect();
        if ids.iter().any(|i| i == model) {
            Ok(format!("lists {}", ids.join(", ")))
        } else {
            Err(format!("`{model}` is not among {}", ids.join(", ")))
        }
    })();
    check("/v1/models lists the model", true, models);
    let text = p.completion(serde_json::json!({
        "model": model, "prompt": "The capital of France is", "max_tokens": 4,
        "temperature": 0, "logprobs": 0, "n": 2,
    }));
    check(
        "text prompt, n = 2, sampled tokens' logprobs",
        true,
        text.and_then(|r| {
            if r.choices.len() != 2 {
                return Err(format!("{} choices for n = 2", r.choices.len()));
            }
            let lp = logprobs_of(&r.choices[0])?;
            if lp.token_logprobs.len() != lp.tokens.len() || lp.tokens.is_empty() {
                return Err("tokens and logprobs do not pair up".into());
            }
            Ok(format!("{:?}", r.choices[0].text))
        }),
    );
    let ids = p.completion(serde_json::json!({
        "model": model, "prompt": [[5, 6, 7]], "max_tokens": 3, "temperature": 0,
        "logprobs": 0,
    }));
    check(
        "token-id prompts",
        true,
        ids.map(|r| format!("{} choice", r.choices.len())),
    );
    let named = p.completion(serde_json::json!({
        "model": model, "prompt": "The capital of France is", "max_tokens": 3,
        "temperature": 0, "logprobs": 0, "return_tokens_as_token_ids": true,
    }));
    check(
        "sampled token ids (return_tokens_as_token_ids)",
        true,
        named.and_then(|r| {
            let lp = logprobs_of(r.choices.first().ok_or("no choice")?)?;
            if !lp.tokens.is_empty() && lp.tokens.iter().all(|t| token_id(t).is_some()) {
                Ok(format!("{:?}", lp.tokens))
            } else {
                Err(format!("tokens named by their text: {:?}", lp.tokens))
            }
        }),
    );
    let echo = p.completion(serde_json::json!({
        "model": model, "prompt": "The capital of France is Paris", "max_tokens": 0,
        "echo": true, "logprobs": 0,
    }));
    check(
        "scoring (echo, max_tokens = 0)",
        true,
        echo.and_then(|r| {
            let c = r.choices.first().ok_or("no choice")?;
            let lp = logprobs_of(c)?;
            let scored = lp.token_logprobs.iter().filter(|l| l.is_some()).count();
            if c.text != "The capital of France is Paris" {
                return Err(format!("max_tokens = 0 still generated: {:?}", c.text));
            }
            if lp.tokens.len() >= 2 && scored + 1 >= lp.tokens.len() {
                Ok(format!("{} prompt tokens scored", scored))
            } else {
                Err(format!(
                    "{scored} log-probabilities for {} echoed tokens",
                    lp.tokens.len()
                ))
            }
        }),
    );
    let choices = [" yes", " no"];
    let guided = p.completion(serde_json::json!({
        "model": model, "prompt": "Is Paris in France? Answer:", "max_tokens": 4,
        "temperature": 1.0, "seed": 1, "guided_choice": choices,
    }));
    check(
        "constrained answers (guided_choice)",
        false,
        guided.and_then(|r| {
            let t = r.choices.first().ok_or("no choice")?.text.clone();
            if choices.contains(&t.as_str()) {
                Ok(format!("{t:?}"))
            } else {
                Err(format!("answered {t:?}, not one of {choices:?}"))
            }
        }),
    );
    let lora = p.post(
        "/v1/load_lora_adapter",
        serde_json::json!({"lora_name": "rla-probe", "lora_path": "/nonexistent/rla-probe"}),
    );
    check(
        "LoRA adapter loading (/v1/load_lora_adapter)",
        false,
        match lora {
            // a refusal of the missing folder, not of the route
            Err(e) if e.starts_with("HTTP 400") && e.contains("/nonexistent/rla-probe") => {
                Ok("the call exists (a missing folder is refused)".into())
            }
            Err(e) => Err(e),
            Ok(_) => Err("accepted a folder that does not exist".into()),
        },
    );
    out
}
