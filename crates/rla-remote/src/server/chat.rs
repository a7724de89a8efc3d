//! `/v1/chat/completions`: messages (with images for a vision-language model) through the
//! model's chat template, and the reply in OpenAI's shape.

use super::*;

pub(super) fn chat<S: Sampler>(state: &State<S>, body: &[u8]) -> Result<serde_json::Value, Reply> {
    let r: ChatRequest = parse(body)?;
    let max_tokens = r.max_completion_tokens.or(r.sampling.max_tokens);
    let (n, p) = params(state, &r.sampling, max_tokens)?;
    let top = top_k(r.top_logprobs.unwrap_or(0), "top_logprobs")?;
    if top > 0 && !r.logprobs {
        return Err(bad(
            "top_logprobs needs logprobs = true",
            Some("top_logprobs"),
        ));
    }
    if r.messages.is_empty() {
        return Err(bad("no messages", Some("messages")));
    }
    let mut msgs = Vec::with_capacity(r.messages.len());
    for m in &r.messages {
        if !matches!(m.role.as_str(), "system" | "user" | "assistant") {
            return Err(bad(
                format!(
                    "a message's role is `{}`: system, user or assistant",
                    m.role
                ),
                Some("messages"),
            ));
        }
        msgs.push(visual_message(m)?);
    }
    let models = state.models.read().unwrap_or_else(|e| e.into_inner());
    let s = lookup(state, &models, &r.model)?;
    if msgs.iter().any(|m| m.png.is_some()) {
        if top > 0 {
            return Err(bad(
                "top_logprobs are not served for messages with images",
                Some("top_logprobs"),
            ));
        }
        let guard = state.busy.lock().unwrap_or_else(|e| e.into_inner());
        let samples = match s.generate_visual(std::slice::from_ref(&msgs), n, &p) {
            Ok(mut v) if v.len() == 1 => v.remove(0),
            Ok(v) => {
                return Err(internal(format!(
                    "{} replies for one conversation",
                    v.len()
                )))
            }
            Err(LmError::Unsupported(e)) => {
                return Err(bad(
                    format!("model `{}` cannot read the message's image: {e}", r.model),
                    Some("messages"),
                ))
            }
            Err(e) => return Err(internal(e)),
        };
        drop(guard);
        return Ok(chat_reply(state, s, &r, samples, None, 0));
    }
    let msgs: Vec<Message> = msgs
        .iter()
        .map(|m| Message::new(&m.role, &m.text))
        .collect();
    let prompt = match s.chat_template(&msgs, true).map_err(internal)? {
        Some(t) => t,
        None => {
            return Err(bad(
                "the model has no chat template; use /v1/completions",
                Some("messages"),
            ))
        }
    };
    let ids = s.encode(&prompt).map_err(internal)?;
    context_fits(s, [ids.len()], p.max_new_tokens)?;
    let guard = state.busy.lock().unwrap_or_else(|e| e.into_inner());
    let samples = s
        .generate(std::slice::from_ref(&ids), n, &p)
        .map_err(internal)?
        .into_iter()
        .next()
        .unwrap_or_default();
    let alternatives = if top > 0 {
        let pairs: Vec<(Vec<u32>, Vec<u32>)> = samples
            .iter()
            .map(|smp| (ids.clone(), smp.tokens.clone()))
            .collect();
        Some(s.top_logprobs(&pairs, top).map_err(internal)?)
    } else {
        None
    };
    drop(guard);
    Ok(chat_reply(state, s, &r, samples, alternatives, ids.len()))
}

/// A chat message's text and its image (a PNG data URI, decoded).
pub(super) fn visual_message(m: &ChatMessage) -> Result<VisualMessage, Reply> {
    use base64::Engine as _;
    let (mut text, mut png) = (String::new(), None);
    match &m.content {
        Content::Text(t) => text.push_str(t),
        Content::Parts(parts) => {
            for part in parts {
                match part {
                    Part::Text { text: t } => text.push_str(t),
                    Part::ImageUrl { image_url } => {
                        if png.is_some() {
                            return Err(bad("at most one image per message", Some("messages")));
                        }
                        let data = image_url
                            .url
                            .strip_prefix("data:image/png;base64,")
                            .ok_or_else(|| {
                                bad(
                                    "an image must be a data:image/png;base64 URI (the server fetches no URLs)",
                                    Some("messages"),
                                )
                            })?;
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(data.trim())
                            .map_err(|e| {
                                bad(format!("the image's base64 is bad: {e}"), Some("messages"))
                            })?;
                        png = Some(bytes);
                    }
                }
            }
        }
    }
    Ok(VisualMessage {
        role: m.role.clone(),
        text,
        png,
    })
}

/// The chat completion of `samples` (with their alternatives) for a prompt of `prompt_tokens`.
pub(super) fn chat_reply<S: Sampler>(
    state: &State<S>,
    s: &S,
    r: &ChatRequest,
    samples: Vec<Sample>,
    alternatives: Option<Alternatives>,
    prompt_tokens: usize,
) -> serde_json::Value {
    let mut usage = Usage {
        prompt_tokens,
        ..Default::default()
    };
    let eos = s.eos_ids();
    let mut choices = Vec::new();
    let text = |id: u32| -> String {
        if r.return_tokens_as_token_ids {
            format!("token_id:{id}")
        } else {
            s.decode(&[id]).unwrap_or_default()
        }
    };
    for (j, smp) in samples.into_iter().enumerate() {
        usage.completion_tokens += smp.tokens.len();
        // with token ids every sampled token is listed (the end of sequence too), so a client
        // can rebuild the exact response
        let logprobs = r.logprobs.then(|| ChatLogprobs {
            content: smp
                .tokens
                .iter()
                .zip(&smp.logprobs)
                .enumerate()
                .filter(|(_, (id, _))| r.return_tokens_as_token_ids || !eos.contains(id))
                .map(|(k, (&id, &l))| {
                    let token = text(id);
                    TokenLogprob {
                        bytes: Some(token.as_bytes().to_vec()),
                        token,
                        logprob: l,
                        top_logprobs: alternatives
                            .as_ref()
                            .map(|a| {
                                a[j][k]
                                    .iter()
                                    .map(|&(id, l)| {
                                        let token = text(id);
                                        TopLogprob {
                                            bytes: Some(token.as_bytes().to_vec()),
                                            token,
                                            logprob: l,
                                        }
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    }
                })
                .collect(),
        });
        choices.push(ChatChoice {
            index: j,
            message: ReplyMessage {
                role: "assistant".into(),
                content: smp.text,
            },
            logprobs,
            finish_reason: Some(finish_reason(smp.finish).into()),
        });
    }
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    let id = state.counter.fetch_add(1, Ordering::Relaxed);
    serde_json::to_value(ChatResponse {
        id: format!("chatcmpl-{id}"),
        object: "chat.completion".into(),
        created: now(),
        model: r.model.clone(),
        choices,
        usage,
    })
    .expect("serialisable")
}
