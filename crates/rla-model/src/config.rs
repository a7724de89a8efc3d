//! Hugging Face `config.json` for the Llama, Qwen2 and Qwen3 architectures.

use crate::ModelError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The supported architectures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arch {
    /// `Qwen2ForCausalLM`: q/k/v biases.
    Qwen2,
    /// `Qwen3ForCausalLM`: per-head RMSNorm on q and k, explicit `head_dim`.
    Qwen3,
    /// `LlamaForCausalLM`: no biases unless `attention_bias`, Llama 3's `rope_scaling`.
    Llama,
}

impl Arch {
    /// The class name in `architectures`.
    pub fn class_name(self) -> &'static str {
        match self {
            Arch::Qwen2 => "Qwen2ForCausalLM",
            Arch::Qwen3 => "Qwen3ForCausalLM",
            Arch::Llama => "LlamaForCausalLM",
        }
    }

    /// transformers' `model_type`.
    pub fn model_type(self) -> &'static str {
        match self {
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
            Arch::Llama => "llama",
        }
    }
}

fn default_eps() -> f64 {
    1e-6
}
fn default_theta() -> f64 {
    10_000.0
}
fn default_max_pos() -> usize {
    32_768
}

/// A model configuration, read from and written to `config.json`. Keys this project does not use
/// are kept, so a saved checkpoint carries them on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Model class names; the first supported one decides the architecture.
    pub architectures: Vec<String>,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the MLP.
    pub intermediate_size: usize,
    /// Number of transformer blocks.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention); defaults to the query heads.
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    /// Per-head width; defaults to `hidden_size / num_attention_heads`.
    #[serde(default)]
    pub head_dim: Option<usize>,
    /// RMSNorm epsilon.
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// Rotary base θ.
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    /// Longest position.
    #[serde(default = "default_max_pos")]
    pub max_position_embeddings: usize,
    /// Whether the output projection shares the embedding matrix.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Whether q/k/v/o projections have biases (Qwen3; Qwen2 always has q/k/v biases).
    #[serde(default)]
    pub attention_bias: Option<bool>,
    /// The dtype the weights were saved in.
    #[serde(default)]
    pub torch_dtype: Option<String>,
    /// Every other key, kept as it was.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl ModelConfig {
    /// Reads and checks `config.json`.
    pub fn load(path: &Path) -> Result<ModelConfig, ModelError> {
        let text = rla_core::file::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
        let cfg: ModelConfig = serde_json::from_str(&text)
            .map_err(|e| ModelError::invalid(path, "config.json", e.to_string()))?;
        cfg.validate()
            .map_err(|m| ModelError::invalid(path, "config.json", m))?;
        Ok(cfg)
    }

    /// The architecture, or an error naming the unsupported classes.
    pub fn arch(&self) -> Result<Arch, String> {
        for a in &self.architectures {
            match a.as_str() {
                "Qwen2ForCausalLM" => return Ok(Arch::Qwen2),
                "Qwen3ForCausalLM" => return Ok(Arch::Qwen3),
                "LlamaForCausalLM" => return Ok(Arch::Llama),
                _ => {}
            }
        }
        Err(format!(
            "unsupported architecture {:?}; supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM",
            self.architectures
        ))
    }

    /// Key/value heads.
    pub fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Per-head width.
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Whether q/k/v carry biases.
    pub fn qkv_bias(&self) -> bool {
        match self.arch() {
            Ok(Arch::Qwen2) => true,
            _ => self.attention_bias.unwrap_or(false),
        }
    }

    /// Whether o_proj carries a bias.
    pub fn o_bias(&self) -> bool {
        matches!(self.arch(), Ok(Arch::Qwen3 | Arch::Llama)) && self.attention_bias.unwrap_or(false)
    }

    /// The rotary inverse frequencies `[head_dim / 2]`, after `rope_scaling` (none, `default`,
    /// `linear`, or Llama 3's `llama3`, as transformers computes them).
    pub fn inv_freq(&self) -> Result<Vec<f64>, String> {
        let hd = self.head_dim();
        let base: Vec<f64> = (0..hd / 2)
            .map(|i| 1.0 / self.rope_theta.powf(2.0 * i as f64 / hd as f64))
            .collect();
        let scaling = match self.extra.get("rope_scaling") {
            None | Some(serde_json::Value::Null) => return Ok(base),
            Some(serde_json::Value::Object(o)) => o,
            Some(v) => return Err(format!("rope_scaling = {v}: an object or null")),
        };
        let kind = scaling
            .get("rope_type")
            .or_else(|| scaling.get("type"))
            .and_then(|t| t.as_str())
            .unwrap_or("default");
        let num = |k: &str| -> Result<f64, String> {
            scaling
                .get(k)
                .and_then(|v| v.as_f64())
                .ok_or_else(|| format!("rope_scaling of type {kind} needs the number {k}"))
        };
        match kind {
            "default" => Ok(base),
            "linear" => {
                let f = num("factor")?;
                if f <= 0.0 {
                    return Err(format!("rope_scaling.factor = {f}: positive"));
                }
                Ok(base.into_iter().map(|x| x / f).collect())
            }
            "llama3" => {
                let (f, lo, hi, old) = (
                    num("factor")?,
                    num("low_freq_factor")?,
                    num("high_freq_factor")?,
                    num("original_max_position_embeddings")?,
                );
                if f <= 0.0 || lo <= 0.0 || hi <= lo || old <= 0.0 {
                    return Err(format!(
                        "rope_scaling (llama3): factor {f}, low_freq_factor {lo}, high_freq_factor {hi}, original_max_position_embeddings {old}: positive, with high above low"
                    ));
                }
                let (lo_wave, hi_wave) = (old / lo, old / hi);
                Ok(base
                    .into_iter()
                    .map(|x| {
                        let wave = 2.0 * std::f64::consts::PI / x;
                        if wave < hi_wave {
                            x
                        } else if wave > lo_wave {
                            x / f
                        } else {
                            let smooth = (old / wave - lo) / (hi - lo);
                            (1.0 - smooth) * x / f + smooth * x
                        }
                    })
                    .collect())
            }
            other => Err(format!(
                "rope_scaling of type {other} is not supported: default, linear or llama3"
            )),
        }
    }

    /// Checks the shape parameters.
    pub fn validate(&self) -> Result<(), String> {
        self.arch()?;
        if self.extra.get("mlp_bias").and_then(|v| v.as_bool()) == Some(true) {
            return Err("mlp_bias = true is not supported (the MLP has no biases here)".into());
        }
        for (k, v) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
        ] {
            if v == 0 {
                return Err(format!("{k} must be positive"));
            }
        }
        if self.kv_heads() == 0 || !self.num_attention_heads.is_multiple_of(self.kv_heads()) {
            return Err(format!(
                "num_attention_heads = {} must be a multiple of num_key_value_heads = {}",
                self.num_attention_heads,
                self.kv_heads()
            ));
        }
        if !self.head_dim().is_multiple_of(2) || self.head_dim() == 0 {
            return Err(format!(
                "head_dim = {} must be even and positive",
                self.head_dim()
            ));
        }
        if self.head_dim.is_none() && !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err("hidden_size must be a multiple of num_attention_heads".into());
        }
        for (k, v) in [
            ("rms_norm_eps", self.rms_norm_eps),
            ("rope_theta", self.rope_theta),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{k} = {v}: must be a positive number"));
            }
        }
        if self.max_position_embeddings == 0 {
            return Err("max_position_embeddings must be positive".into());
        }
        if self
            .checked_num_params()
            .is_none_or(|n| n > usize::MAX as u128)
        {
            return Err(format!(
                "hidden_size = {}, intermediate_size = {}, num_hidden_layers = {}, vocab_size = {}: \
                 the parameter count overflows",
                self.hidden_size, self.intermediate_size, self.num_hidden_layers, self.vocab_size
            ));
        }
        self.inv_freq()?;
        Ok(())
    }

    /// Refuses a model whose weights (`bytes_per_param` bytes each: 4 for f32 weights, 16 for
    /// f32 weights trained with AdamW — the weights, their gradients and two moments) could not
    /// fit in this machine's memory, before anything is allocated.
    pub fn check_fits(&self, bytes_per_param: usize, what: &str) -> Result<(), String> {
        let Some(n) = self.checked_num_params() else {
            return Err("the parameter count overflows".into());
        };
        let need = n.saturating_mul(bytes_per_param as u128);
        if let Some(have) = memory_bytes() {
            if need > have as u128 {
                return Err(format!(
                    "{n} parameters need {:.1} GiB to {what}, and this machine has {:.1} GiB of memory",
                    need as f64 / (1u64 << 30) as f64,
                    have as f64 / (1u64 << 30) as f64
                ));
            }
        }
        Ok(())
    }

    /// A tiny configuration for models trained from scratch.
    pub fn tiny(
        arch: Arch,
        vocab_size: usize,
        hidden: usize,
        layers: usize,
        heads: usize,
        kv_heads: usize,
    ) -> ModelConfig {
        ModelConfig {
            architectures: vec![arch.class_name().to_string()],
            vocab_size,
            hidden_size: hidden,
            intermediate_size: hidden * 3,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: Some(kv_heads),
            // 0 heads is caught by `validate`, not a division by zero here
            head_dim: Some(hidden.checked_div(heads).unwrap_or(0)),
            rms_norm_eps: 1e-6,
            rope_theta: 10_000.0,
            max_position_embeddings: 4096,
            tie_word_embeddings: true,
            attention_bias: Some(false),
            torch_dtype: Some("float32".into()),
            extra: serde_json::Map::new(),
        }
    }

    /// Number of parameters.
    pub fn num_params(&self) -> usize {
        self.checked_num_params()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX)
    }

    /// The parameter count in checked arithmetic; `None` where it overflows.
    pub fn checked_num_params(&self) -> Option<u128> {
        let u = |x: usize| x as u128;
        let (h, i, l, v) = (
            u(self.hidden_size),
            u(self.intermediate_size),
            u(self.num_hidden_layers),
            u(self.vocab_size),
        );
        let hd = u(self.head_dim());
        let q = u(self.num_attention_heads).checked_mul(hd)?;
        let kv = u(self.kv_heads()).checked_mul(hd)?;
        let attn = h
            .checked_mul(q)?
            .checked_add(h.checked_mul(kv)?.checked_mul(2)?)?
            .checked_add(q.checked_mul(h)?)?
            .checked_add(if self.qkv_bias() { q + 2 * kv } else { 0 })?
            .checked_add(if self.o_bias() { h } else { 0 })?;
        let norms = 2 * h
            + if matches!(self.arch(), Ok(Arch::Qwen3)) {
                2 * hd
            } else {
                0
            };
        let per_layer = attn
            .checked_add(h.checked_mul(i)?.checked_mul(3)?)?
            .checked_add(norms)?;
        let emb = v.checked_mul(h)?;
        emb.checked_add(l.checked_mul(per_layer)?)?
            .checked_add(h)?
            .checked_add(if self.tie_word_embeddings { 0 } else { emb })
    }
}

/// This machine's memory in bytes (`MemTotal` of `/proc/meminfo`); `None` where it is not known.
pub fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
