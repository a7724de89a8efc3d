//! `rlanything lm …`: the language model from the command line, checkable against other
//! implementations on the same files.

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device};
use rla_model::config::{Arch, ModelConfig};
use rla_model::sample::SampleParams;
use rla_model::tok::{build_word_level, Message};
use rla_model::weights::parse_dtype;
use rla_model::{Lm, Sampler};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum LmCmd {
    /// Print, as JSON, the token ids of a text and the log-probability of each token after the first.
    Logprobs {
        /// Checkpoint folder (HF layout), or a Hugging Face id (`owner/name[@rev]`) in the hub cache.
        #[arg(long)]
        model: PathBuf,
        /// The text.
        #[arg(long)]
        text: String,
        /// Compute dtype (f32, bf16, f16).
        #[arg(long, default_value = "f32")]
        dtype: String,
    },
    /// Generate a continuation of a prompt.
    Generate {
        /// Checkpoint folder (HF layout), or a Hugging Face id (`owner/name[@rev]`) in the hub cache.
        #[arg(long)]
        model: PathBuf,
        /// The prompt (a user message with --chat).
        #[arg(long)]
        prompt: String,
        /// Wrap the prompt in the model's chat template.
        #[arg(long)]
        chat: bool,
        /// Greedy decoding.
        #[arg(long)]
        greedy: bool,
        /// Most new tokens.
        #[arg(long, default_value_t = 64)]
        max_tokens: usize,
        /// Sampling temperature.
        #[arg(long, default_value_t = 1.0)]
        temperature: f64,
        /// Nucleus mass.
        #[arg(long, default_value_t = 1.0)]
        top_p: f64,
        /// Top-k (0: off).
        #[arg(long, default_value_t = 0)]
        top_k: usize,
        /// Number of samples.
        #[arg(long, default_value_t = 1)]
        n: usize,
        /// Seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Compute dtype (f32, bf16, f16).
        #[arg(long, default_value = "f32")]
        dtype: String,
    },
    /// Create a tiny model with random weights and a word-level tokenizer built from a corpus.
    Init {
        /// TOML model configuration (see configs/tiny.toml).
        #[arg(long)]
        config: PathBuf,
        /// Text the tokenizer's vocabulary is built from.
        #[arg(long)]
        tokenizer_corpus: PathBuf,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
        /// Seed of the weights.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Replace a checkpoint already in the output folder (all of it, optimiser state too); a
        /// folder that is not a checkpoint is never replaced.
        #[arg(long)]
        force: bool,
    },
    /// Convert a GGUF file (llama.cpp's format; Llama architecture) into a checkpoint folder
    /// that every other command reads: config.json, model.safetensors, tokenizer.json,
    /// tokenizer_config.json (with the chat template) and generation_config.json.
    Convert {
        /// The GGUF file.
        #[arg(long)]
        gguf: PathBuf,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
        /// The dtype of the saved weights (f32 keeps the dequantised values exactly).
        #[arg(long, default_value = "f32")]
        dtype: String,
        /// Replace a checkpoint already in the output folder; a folder that is not a checkpoint is
        /// never replaced.
        #[arg(long)]
        force: bool,
    },
}

/// The tiny-model TOML.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TinyConfig {
    /// llama, qwen2 or qwen3.
    pub arch: String,
    /// Width.
    pub hidden_size: usize,
    /// MLP width.
    pub intermediate_size: usize,
    /// Blocks.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads.
    pub num_key_value_heads: usize,
    /// Rotary base.
    #[serde(default = "theta")]
    pub rope_theta: f64,
    /// Longest position.
    #[serde(default = "max_pos")]
    pub max_position_embeddings: usize,
    /// Tie input and output embeddings.
    #[serde(default = "yes")]
    pub tie_word_embeddings: bool,
    /// Tokenizer pieces must occur this often.
    #[serde(default = "one")]
    pub min_count: usize,
}

fn theta() -> f64 {
    10_000.0
}
fn max_pos() -> usize {
    4096
}
fn yes() -> bool {
    true
}
fn one() -> usize {
    1
}

impl TinyConfig {
    /// Reads and checks a TOML file.
    pub fn load(path: &Path) -> Result<TinyConfig> {
        let text = rla_core::file::read_arg_to_string(path, rla_core::file::MAX_BYTES)
            .with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("{}", path.display()))
    }

    /// The model configuration for a vocabulary size.
    pub fn model_config(&self, vocab: usize) -> Result<ModelConfig> {
        let arch = match self.arch.as_str() {
            "qwen2" => Arch::Qwen2,
            "qwen3" => Arch::Qwen3,
            "llama" => Arch::Llama,
            a => bail!("arch = {a:?}: use \"llama\", \"qwen2\" or \"qwen3\""),
        };
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            bail!(
                "hidden_size = {} must be a positive multiple of num_attention_heads = {}",
                self.hidden_size,
                self.num_attention_heads
            );
        }
        let mut c = ModelConfig::tiny(
            arch,
            vocab,
            self.hidden_size,
            self.num_hidden_layers,
            self.num_attention_heads,
            self.num_key_value_heads,
        );
        c.intermediate_size = self.intermediate_size;
        c.rope_theta = self.rope_theta;
        c.max_position_embeddings = self.max_position_embeddings;
        c.tie_word_embeddings = self.tie_word_embeddings;
        c.validate().map_err(anyhow::Error::msg)?;
        Ok(c)
    }
}

fn load(model: &Path, dtype: &str) -> Result<Lm> {
    let dtype: DType = parse_dtype(dtype).map_err(anyhow::Error::msg)?;
    Ok(Lm::load(
        &crate::backend::model_dir(model)?,
        dtype,
        &Device::Cpu,
    )?)
}

pub fn run(cmd: LmCmd) -> Result<()> {
    match cmd {
        LmCmd::Logprobs { model, text, dtype } => {
            let lm = load(&model, &dtype)?;
            let ids = lm.tok.encode(&text)?;
            if ids.len() < 2 {
                bail!(
                    "--text must have at least two tokens (it has {})",
                    ids.len()
                );
            }
            let lp = lm.score(&[(ids[..1].to_vec(), ids[1..].to_vec())])?;
            if let Some(i) = lp[0].iter().position(|x| !x.is_finite()) {
                bail!(
                    "{}: the log-probability of token {} is {}: the model's weights hold NaN or \
                     infinite values",
                    model.display(),
                    i + 1,
                    lp[0][i]
                );
            }
            println!(
                "{}",
                serde_json::json!({"token_ids": ids, "logprobs": lp[0]})
            );
        }
        LmCmd::Generate {
            model,
            prompt,
            chat,
            greedy,
            max_tokens,
            temperature,
            top_p,
            top_k,
            n,
            seed,
            dtype,
        } => {
            if n == 0 {
                bail!("--n 0: ask for at least one sample");
            }
            if !(temperature.is_finite() && temperature >= 0.0) {
                bail!("--temperature {temperature}: must be finite and ≥ 0 (0 is greedy)");
            }
            if !(top_p > 0.0 && top_p <= 1.0) {
                bail!("--top-p {top_p}: must lie in (0, 1]");
            }
            if max_tokens == 0 {
                bail!("--max-tokens 0: ask for at least one token");
            }
            let lm = load(&model, &dtype)?;
            let text = if chat {
                lm.tok
                    .apply_chat_template(&[Message::new("user", &prompt)], true)?
            } else {
                prompt
            };
            let ids = lm.tok.encode(&text)?;
            if ids.is_empty() {
                bail!("--prompt is empty after tokenisation");
            }
            let p = SampleParams {
                temperature: if greedy { 0.0 } else { temperature },
                top_p,
                top_k,
                max_new_tokens: max_tokens,
                stop: vec![],
                seed,
            };
            for s in &lm.generate(&[ids], n, &p)?[0] {
                println!("{}", s.text);
            }
        }
        LmCmd::Init {
            config,
            tokenizer_corpus,
            out,
            seed,
            force,
        } => {
            rla_model::weights::check_checkpoint_dest(&out, force)
                .map_err(|m| anyhow::anyhow!("--out {m}"))?;
            let tc = TinyConfig::load(&config)?;
            let corpus = rla_core::file::read_arg_to_string(&tokenizer_corpus, 1 << 30)
                .with_context(|| format!("reading {}", tokenizer_corpus.display()))?;
            let tok = build_word_level(&corpus, tc.min_count)?;
            let cfg = tc.model_config(tok.vocab_size())?;
            let lm = Lm::init(&cfg, tok, seed, DType::F32, &Device::Cpu)?;
            rla_model::weights::replace_dir_atomic(&out, |tmp| lm.save_checkpoint(tmp))?;
            println!(
                "{}: {} parameters, vocabulary of {} tokens",
                out.display(),
                cfg.num_params(),
                lm.tok.vocab_size()
            );
        }
        LmCmd::Convert {
            gguf,
            out,
            dtype,
            force,
        } => {
            rla_model::weights::check_checkpoint_dest(&out, force)
                .map_err(|m| anyhow::anyhow!("--out {m}"))?;
            let dt = parse_dtype(&dtype).map_err(anyhow::Error::msg)?;
            let c = rla_model::gguf::convert(&gguf, &out, dt)?;
            let types: Vec<String> = c.types.iter().map(|(t, n)| format!("{n} {t}")).collect();
            println!(
                "{}{}: {} parameters ({} layers, hidden {}, {} heads / {} KV heads, vocabulary {}, {} embeddings); tensors {}; written to {} in {dtype}",
                gguf.display(),
                c.name.map(|n| format!(" ({n})")).unwrap_or_default(),
                c.config.num_params(),
                c.config.num_hidden_layers,
                c.config.hidden_size,
                c.config.num_attention_heads,
                c.config.kv_heads(),
                c.config.vocab_size,
                if c.config.tie_word_embeddings { "tied" } else { "untied" },
                types.join(", "),
                out.display()
            );
        }
    }
    Ok(())
}
