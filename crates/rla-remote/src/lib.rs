//! # rla-remote — generation on inference servers
//!
//! At scale almost all of RL's compute is generation, and it runs on inference servers that
//! speak the OpenAI-compatible API (vLLM, SGLang, and `rlanything serve`). This crate holds
//! both ends of that protocol, over any [`rla_lm::Sampler`] and without a tensor library:
//!
//! - [`protocol`]: the request and response bodies of `/v1/completions`,
//!   `/v1/chat/completions` and `/v1/models`, with the extensions vLLM offers that RL needs
//!   (token-id prompts, `return_tokens_as_token_ids`, `guided_choice`, `echo` for scoring);
//! - [`client::RemoteSampler`]: a [`rla_lm::Sampler`] whose generation happens on a server, and
//!   whose tokenizer and chat template stay local (a [`rla_lm::Codec`]);
//! - [`server`]: the same API over a sampler in this process.

pub mod client;
pub mod probe;
pub mod protocol;
pub mod server;

pub use rla_core::remote::RemoteError;
