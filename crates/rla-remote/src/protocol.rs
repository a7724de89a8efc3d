//! The bodies of the OpenAI-compatible API as vLLM and SGLang serve it, with the extensions RL
//! needs. Fields this project does not use are accepted and ignored, as the servers do.

use serde::{Deserialize, Serialize};

/// A prompt or a batch of them: text or token ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    /// One text.
    Text(String),
    /// Several texts.
    Texts(Vec<String>),
    /// One prompt of token ids.
    Ids(Vec<u32>),
    /// Several prompts of token ids.
    Batch(Vec<Vec<u32>>),
}

/// One stop string or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Stop {
    /// The stop strings.
    pub fn list(&self) -> Vec<String> {
        match self {
            Stop::One(s) => vec![s.clone()],
            Stop::Many(v) => v.clone(),
        }
    }
}

/// The sampling fields both `/v1/completions` and `/v1/chat/completions` take.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sampling {
    /// Samples per prompt (1 if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    /// Softmax temperature (1 if absent; 0 is greedy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus mass (1 if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The k most likely tokens only (vLLM's extension; -1 or 0 keeps all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// The sampler's seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Stop strings: the text is cut before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Most tokens to generate (16 if absent, as in the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    /// Streaming (not served here).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
}

/// `POST /v1/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// The model's name, as `/v1/models` lists it.
    pub model: String,
    /// The prompt(s).
    pub prompt: Prompt,
    /// How to sample.
    #[serde(flatten)]
    pub sampling: Sampling,
    /// Return the log-probability of every sampled token, and in `top_logprobs` this many most
    /// likely alternatives at each position (0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<u32>,
    /// Give the prompt back before the completion, with its tokens' log-probabilities (with
    /// `max_tokens = 0`, this scores a text).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub echo: bool,
    /// Name tokens `token_id:N` in `logprobs.tokens` (vLLM's extension), so token ids survive.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub return_tokens_as_token_ids: bool,
    /// Answer only with one of these texts (vLLM's guided decoding extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guided_choice: Option<Vec<String>>,
}

/// Log-probabilities of a completion choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionLogprobs {
    /// The tokens, as text or `token_id:N`.
    pub tokens: Vec<String>,
    /// `log π(token)` of each; the first prompt token has none (null).
    pub token_logprobs: Vec<Option<f32>>,
    /// The most likely alternatives of each token, when served.
    #[serde(default)]
    pub top_logprobs: Option<Vec<Option<serde_json::Map<String, serde_json::Value>>>>,
    /// Each token's character offset in the choice's text.
    #[serde(default)]
    pub text_offset: Vec<usize>,
}

/// One completion choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionChoice {
    /// Its place: prompt `i`'s sample `j` is `i × n + j`.
    pub index: usize,
    /// The text.
    pub text: String,
    /// The log-probabilities, when asked for.
    #[serde(default)]
    pub logprobs: Option<CompletionLogprobs>,
    /// `stop` (an end-of-sequence token or a stop string) or `length`.
    pub finish_reason: Option<String>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Generated tokens.
    pub completion_tokens: usize,
    /// Both.
    pub total_tokens: usize,
}

/// The reply to `/v1/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionResponse {
    /// The reply's id.
    #[serde(default)]
    pub id: String,
    /// `text_completion`.
    #[serde(default)]
    pub object: String,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// The model.
    pub model: String,
    /// The choices, prompt-major.
    pub choices: Vec<CompletionChoice>,
    /// Token counts.
    #[serde(default)]
    pub usage: Usage,
}

/// A chat message's content: text, or parts (text and images).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Text.
    Text(String),
    /// Parts.
    Parts(Vec<Part>),
}

/// A part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, by URL or as a data URI.
    ImageUrl {
        /// `{"url": …}`.
        image_url: ImageUrl,
    },
}

/// An image's address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// A URL or `data:image/png;base64,…`.
    pub url: String,
}

/// A chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Its content.
    pub content: Content,
}

/// `POST /v1/chat/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model's name.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// How to sample (`max_tokens` or its newer name below).
    #[serde(flatten)]
    pub sampling: Sampling,
    /// The newer name of `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<usize>,
    /// Return log-probabilities of the sampled tokens.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
    /// With `logprobs`: also the most likely alternatives at each position, this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<usize>,
    /// vLLM's extension: sampled tokens named `token_id:N` in `logprobs.content`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub return_tokens_as_token_ids: bool,
}

/// vLLM's `/v1/load_lora_adapter` body (SGLang's `/load_lora_adapter` takes the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadAdapter {
    /// The name requests will give as `model`.
    pub lora_name: String,
    /// A PEFT adapter folder the server can read.
    pub lora_path: String,
}

/// vLLM's `/v1/unload_lora_adapter` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnloadAdapter {
    /// The adapter's name.
    pub lora_name: String,
}

/// A sampled token of a chat reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token's text.
    pub token: String,
    /// `log π(token)`.
    pub logprob: f32,
    /// Its UTF-8 bytes.
    pub bytes: Option<Vec<u8>>,
    /// The most likely tokens at this position (as many as the request's `top_logprobs`).
    #[serde(default)]
    pub top_logprobs: Vec<TopLogprob>,
}

/// An alternative token at a position of a chat reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    /// The token's text.
    pub token: String,
    /// `log π(token)`.
    pub logprob: f32,
    /// Its UTF-8 bytes.
    pub bytes: Option<Vec<u8>>,
}

/// The log-probabilities of a chat choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatLogprobs {
    /// One per sampled token.
    pub content: Vec<TokenLogprob>,
}

/// The reply's message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyMessage {
    /// `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// One chat choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatChoice {
    /// Its place.
    pub index: usize,
    /// The reply.
    pub message: ReplyMessage,
    /// The log-probabilities, when asked for.
    #[serde(default)]
    pub logprobs: Option<ChatLogprobs>,
    /// `stop` or `length`.
    pub finish_reason: Option<String>,
}

/// The reply to `/v1/chat/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The reply's id.
    #[serde(default)]
    pub id: String,
    /// `chat.completion`.
    #[serde(default)]
    pub object: String,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// The model.
    pub model: String,
    /// The choices.
    pub choices: Vec<ChatChoice>,
    /// Token counts.
    #[serde(default)]
    pub usage: Usage,
}

/// A model of `/v1/models`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCard {
    /// Its name.
    pub id: String,
    /// `model`.
    #[serde(default)]
    pub object: String,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// Who serves it.
    #[serde(default)]
    pub owned_by: String,
    /// For a LoRA adapter: the model it adapts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// For a LoRA adapter: the folder it was loaded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// The reply to `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelList {
    /// `list`.
    pub object: String,
    /// The models.
    pub data: Vec<ModelCard>,
}

/// An error reply's body: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A sentence.
    pub message: String,
    /// `invalid_request_error`, `not_found_error`, `server_error`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// The request field at fault, if one is.
    pub param: Option<String>,
    /// A code, if any.
    pub code: Option<String>,
}

/// The token of a `token_id:N` name.
pub fn token_id(name: &str) -> Option<u32> {
    name.strip_prefix("token_id:")?.parse().ok()
}
