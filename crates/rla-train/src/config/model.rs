//! `[policy]` and `[reward]`: a model of the run, and the inference servers it may be served by.

use super::*;

/// One model of the run (the policy or the reward model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSpec {
    /// A checkpoint folder in HF layout (relative to the config file's folder); without it, a
    /// tiny model is trained from scratch by `pretrain`.
    pub path: Option<PathBuf>,
    /// The tiny model's shape.
    pub tiny: TinyShape,
    /// Learning rate of RL updates.
    pub lr: f64,
    /// Sequences per micro-batch.
    pub micro_batch: usize,
    /// Samples per optimiser step of an RL update (PPO's mini-batch): every epoch shuffles the
    /// iteration's samples and takes one step per mini-batch of this many; 0 takes a single
    /// step over all of them.
    pub mini_batch: usize,
    /// Optimiser steps an RL update takes per epoch (0: as `mini_batch` says): the iteration's
    /// samples, shuffled, in this many mini-batches of near-equal size, whatever their number.
    /// Set at most one of `updates` and `mini_batch`.
    #[serde(skip_serializing_if = "is_zero")]
    pub updates: usize,
    /// The learning rate's linear warm-up over the run's first iterations: iteration k takes
    /// `lr·min(1, k / warmup_iterations)` (0: `lr` from the first).
    #[serde(skip_serializing_if = "is_zero")]
    pub warmup_iterations: usize,
    /// LoRA instead of full fine-tuning.
    pub lora: Option<LoraConfig>,
    /// Compute dtype (`f32`, `bf16`, `f16`).
    pub dtype: String,
    /// Sampling temperature.
    pub temperature: f64,
    /// Most new tokens per answer.
    pub max_new_tokens: usize,
    /// Generate on inference servers instead of in process (`[policy.server]`); the model
    /// still learns here, and its new weights go to the servers after every update.
    pub server: Option<ServerSpec>,
    /// Which learner updates the model (`[policy.learner]`): the candle learner in this
    /// process (the default), or a PyTorch FSDP2 worker launched with torchrun
    /// (`backend = "torch"`; see [`rla_torch::LearnerSpec`]).
    pub learner: rla_torch::LearnerSpec,
}

/// Inference servers for a model (`[policy.server]`, `[reward.server]`): OpenAI-compatible
/// endpoints (vLLM, SGLang, `rlanything serve`) that receive the new weights after every update
/// as `push` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSpec {
    /// Base URLs (`http://host:port`, or `http://host:port/v1` as OpenAI's clients take it).
    pub endpoints: Vec<String>,
    /// The model's name on the servers.
    pub model: String,
    /// An environment variable holding the servers' API key, if they want one.
    pub api_key_env: Option<String>,
    /// Seconds allowed for one request, from connecting to the reply's last byte (a server
    /// that trickles its reply fails here).
    pub timeout_s: f64,
    /// Seconds allowed for a reply's head — connecting, sending the request, the status line
    /// and headers — (default: `timeout_s`): a server that takes the connection and never
    /// answers fails here. A completion's head comes once it is generated.
    pub head_timeout_s: Option<f64>,
    /// Tries of a request (each on the least-loaded live server) before the run fails.
    pub tries: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Where new weights are written for the servers to read (default: the run's
    /// `served/<model>/`); it must be a path the servers see.
    pub weights_dir: Option<PathBuf>,
    /// How new weights reach the servers: `disk` (a checkpoint folder, loaded with SGLang's
    /// `/update_weights_from_disk`), `lora` (the LoRA adapter alone, in PEFT's format, loaded
    /// under a new name with `lora_api`'s call; needs the model's `lora` table), or `command`
    /// (a checkpoint folder, then `reload_command`).
    pub push: Push,
    /// The servers' adapter calls when `push = "lora"`: `vllm` (`/v1/load_lora_adapter`) or
    /// `sglang` (`/load_lora_adapter`).
    pub lora_api: rla_remote::client::LoraApi,
    /// With `push = "command"`: a shell command run after each new checkpoint is written, with
    /// `{path}` replaced by its folder (say, a script that restarts the servers on it); the run
    /// goes on when it exits with status 0.
    pub reload_command: Option<String>,
}

/// How new weights reach inference servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Push {
    /// A checkpoint folder, loaded with `/update_weights_from_disk`.
    #[default]
    Disk,
    /// The LoRA adapter, loaded with `/v1/load_lora_adapter`.
    Lora,
    /// A checkpoint folder, then the configured reload command.
    Command,
}

impl Default for ServerSpec {
    fn default() -> Self {
        ServerSpec {
            endpoints: vec![],
            model: "model".into(),
            api_key_env: None,
            timeout_s: 600.0,
            head_timeout_s: None,
            tries: 4,
            concurrency: 16,
            weights_dir: None,
            push: Push::Disk,
            lora_api: rla_remote::client::LoraApi::Vllm,
            reload_command: None,
        }
    }
}

impl ServerSpec {
    /// Checks the settings; `name` is the table's (`policy.server`).
    pub fn validate(&self, name: &str) -> Result<(), String> {
        if self.endpoints.is_empty() {
            return Err(format!(
                "{name}.endpoints is empty: list the servers' base URLs"
            ));
        }
        if let Some(e) = self
            .endpoints
            .iter()
            .find(|e| !(e.starts_with("http://") || e.starts_with("https://")))
        {
            return Err(format!(
                "{name}.endpoints: `{e}` is not an http:// or https:// URL"
            ));
        }
        if !(self.timeout_s > 0.0 && self.timeout_s.is_finite())
            || self.tries == 0
            || self.concurrency == 0
        {
            return Err(format!(
                "{name}: timeout_s, tries and concurrency must be positive"
            ));
        }
        if let Some(h) = self.head_timeout_s {
            if !(h > 0.0 && h <= 86_400.0) {
                return Err(format!(
                    "{name}.head_timeout_s = {h}: a positive number of seconds, at most 86400"
                ));
            }
        }
        if self.timeout_s > 86_400.0 {
            return Err(format!(
                "{name}.timeout_s = {}: at most 86400 (a day)",
                self.timeout_s
            ));
        }
        super::at_most(&format!("{name}.tries"), self.tries, 100)?;
        super::at_most(&format!("{name}.concurrency"), self.concurrency, 4_096)?;
        match (self.push, &self.reload_command) {
            (Push::Command, None) => {
                return Err(format!(
                    "{name}.push = \"command\" needs {name}.reload_command"
                ))
            }
            (Push::Command, Some(c)) if c.trim().is_empty() => {
                return Err(format!("{name}.reload_command is empty"))
            }
            (Push::Disk | Push::Lora, Some(_)) => {
                return Err(format!(
                    "{name}.reload_command is set but push is not \"command\""
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ModelSpec {
    /// The learning rate of iteration `k` (1-based) under the warm-up.
    pub fn lr_at(&self, k: usize) -> f64 {
        if self.warmup_iterations == 0 {
            self.lr
        } else {
            self.lr * (k as f64 / self.warmup_iterations as f64).min(1.0)
        }
    }

    /// How this model samples (its temperature and answer length) with `seed`.
    pub fn sampling(&self, seed: u64) -> rla_lm::SampleParams {
        rla_lm::SampleParams {
            temperature: self.temperature,
            max_new_tokens: self.max_new_tokens,
            seed,
            ..Default::default()
        }
    }
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            path: None,
            tiny: TinyShape::default(),
            lr: 1e-4,
            micro_batch: 32,
            mini_batch: 0,
            updates: 0,
            warmup_iterations: 0,
            lora: None,
            dtype: "f32".into(),
            temperature: 1.0,
            max_new_tokens: 16,
            server: None,
            learner: rla_torch::LearnerSpec::default(),
        }
    }
}
