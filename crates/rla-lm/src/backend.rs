//! The one door to a model back end: a [`Backend`] opens a saved model, or makes a fresh small
//! one, as a [`Model`] the loop samples from and trains. The loop, the settings and the warm
//! starts see only this; which back end stands behind it (candle in process today) is chosen
//! once, outside them.

use crate::{Codec, LmError, Model, Result};
use rla_core::ppo::PpoConfig;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The modules PEFT names for Qwen models.
pub const ALL_TARGETS: [&str; 7] = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

/// LoRA settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoraConfig {
    /// Rank r.
    pub r: usize,
    /// Scale numerator α (the update is scaled by α / r).
    pub alpha: f64,
    /// Module names to adapt (`q_proj` …).
    pub targets: Vec<String>,
}

impl Default for LoraConfig {
    fn default() -> Self {
        LoraConfig {
            r: 8,
            alpha: 16.0,
            targets: ALL_TARGETS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The shape of a small model trained from scratch (a Qwen-architecture transformer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TinyShape {
    /// `qwen2` or `qwen3`.
    pub arch: String,
    /// Width.
    pub hidden_size: usize,
    /// Blocks.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads.
    pub num_key_value_heads: usize,
}

impl Default for TinyShape {
    fn default() -> Self {
        TinyShape {
            arch: "qwen3".into(),
            hidden_size: 96,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: 2,
        }
    }
}

impl TinyShape {
    /// Checks that the shape makes a model: an architecture a back end builds, sizes above zero,
    /// whole heads of an even width, and query heads in whole groups per key/value head.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if !["qwen2", "qwen3"].contains(&self.arch.as_str()) {
            return Err(format!("arch = {:?}: use qwen2 or qwen3", self.arch));
        }
        for (k, v, max) in [
            ("hidden_size", self.hidden_size, 1 << 16),
            ("num_hidden_layers", self.num_hidden_layers, 1 << 10),
            ("num_attention_heads", self.num_attention_heads, 1 << 10),
            ("num_key_value_heads", self.num_key_value_heads, 1 << 10),
        ] {
            if v == 0 {
                return Err(format!("{k} must be positive"));
            }
            if v > max {
                return Err(format!("{k} = {v}: at most {max} for a tiny model"));
            }
        }
        if !self
            .num_attention_heads
            .is_multiple_of(self.num_key_value_heads)
        {
            return Err(format!(
                "num_attention_heads = {} must be a multiple of num_key_value_heads = {}",
                self.num_attention_heads, self.num_key_value_heads
            ));
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err("hidden_size must be a multiple of num_attention_heads".into());
        }
        let head = self.hidden_size / self.num_attention_heads;
        if !head.is_multiple_of(2) {
            return Err(format!("head_dim = {head} must be even and positive"));
        }
        Ok(())
    }
}

/// The precision a model computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// 32-bit floats.
    F32,
    /// 16-bit floats.
    F16,
    /// bfloat16.
    Bf16,
    /// 64-bit floats.
    F64,
}

impl Precision {
    /// Reads a precision by any of its usual names (`f32`, `float16`, `bf16`, `fp32`, `half` …).
    pub fn parse(s: &str) -> std::result::Result<Precision, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "float32" | "f32" | "fp32" => Precision::F32,
            "float16" | "f16" | "fp16" | "half" => Precision::F16,
            "bfloat16" | "bf16" => Precision::Bf16,
            "float64" | "f64" => Precision::F64,
            other => return Err(format!("unknown dtype {other}; use f32, f16, bf16 or f64")),
        })
    }
}

/// How a model trains: its optimiser's rate, the micro-batches a step's gradients accumulate
/// over, the PPO objective, LoRA adapters instead of every weight, and the seed of what starts
/// random.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainOptions {
    /// Learning rate (a schedule changes it with [`crate::Learner::set_lr`]).
    pub lr: f64,
    /// Sequences per forward/backward pass.
    pub micro_batch: usize,
    /// The PPO objective (its KL term decides whether a frozen reference is kept).
    pub ppo: PpoConfig,
    /// Train LoRA adapters only.
    pub lora: Option<LoraConfig>,
    /// Seeds fresh adapters (and a fresh model's weights).
    pub seed: u64,
    /// The temperature the model samples its training episodes at: PPO trains the tempered
    /// policy `softmax(logits / T)`, whose log-probabilities the sampler records (1: the model's
    /// own; values ≤ 0, greedy, count as 1).
    pub temperature: f64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            lr: 1e-5,
            micro_batch: 16,
            ppo: PpoConfig::default(),
            lora: None,
            seed: 0,
            temperature: 1.0,
        }
    }
}

/// How to open a saved model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpenOptions {
    /// The compute precision by name (empty: f32).
    pub dtype: String,
    /// Train it (else it only samples).
    pub train: Option<TrainOptions>,
    /// A checkpoint of the same run whose optimiser state training continues from.
    pub resume: Option<PathBuf>,
    /// The model the KL term compares against when it is not the one opened (a resumed run's
    /// warm start).
    pub reference: Option<PathBuf>,
}

/// A model back end: what opens and makes models for the loop.
pub trait Backend: Send + Sync {
    /// Opens the model saved in `dir` (a checkpoint in Hugging Face's layout).
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Result<Box<dyn Model>>;

    /// A model of `shape` with random weights (seeded by `train.seed`) and a word-level
    /// vocabulary of every word in `corpus`, ready to train with `train`. The same corpus gives
    /// the same vocabulary.
    fn fresh(
        &self,
        shape: &TinyShape,
        corpus: &str,
        train: &TrainOptions,
    ) -> Result<Box<dyn Model>>;

    /// The tokenizer and chat template of the model saved in `dir`, without its weights (for a
    /// sampler that generates elsewhere).
    fn codec(&self, dir: &Path) -> Result<Box<dyn Codec>>;
}

/// Whether `dir` holds a whole checkpoint in Hugging Face's layout (config, weights and
/// tokenizer).
pub fn is_checkpoint(dir: &Path) -> bool {
    dir.join("config.json").is_file()
        && dir.join("tokenizer.json").is_file()
        && (dir.join("model.safetensors").is_file()
            || dir.join("model.safetensors.index.json").is_file())
}

/// Whether a new checkpoint may be written to `dest` (which [`replace_dir_atomic`] would replace
/// whole): a path that does not exist or an empty folder may be; a checkpoint folder only with
/// `force`; anything else never, with or without `force`, since replacing it would delete files
/// that no checkpoint writer made (a folder of models, a home folder). The error says which.
pub fn check_checkpoint_dest(dest: &Path, force: bool) -> std::result::Result<(), String> {
    let meta = match std::fs::metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", dest.display())),
    };
    if !meta.is_dir() {
        return Err(format!(
            "{} is a file, not a folder: it is not replaced; choose a new or empty folder",
            dest.display()
        ));
    }
    let mut entries = std::fs::read_dir(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let first = match entries.next() {
        None => return Ok(()),
        Some(e) => e
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .map_err(|e| format!("{}: {e}", dest.display()))?,
    };
    if is_checkpoint(dest) {
        return if force {
            Ok(())
        } else {
            Err(format!(
                "{} already holds a model; pass --force to replace it (all of it, any optimiser \
                 state too), or choose another folder",
                dest.display()
            ))
        };
    }
    Err(format!(
        "{} exists and is not a checkpoint (no config.json, tokenizer.json and weights; it holds \
         `{first}`): it is never replaced, with or without --force, since that would delete what \
         it holds; choose a new or empty folder",
        dest.display()
    ))
}

pub use rla_core::file::write_atomic;

fn named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Writes a whole folder atomically: `write` fills a temporary sibling (`.NAME.partial`), which
/// then replaces `dest` by renames, so a kill leaves either the old folder or the new one, never
/// a mixture (nor an old file, such as an optimiser state, beside new weights).
pub fn replace_dir_atomic<E: From<std::io::Error>>(
    dest: &Path,
    write: impl FnOnce(&Path) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let name = dest.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: the folder has no name", dest.display()),
        )
    })?;
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| named(&parent, e))?;
    let tmp = parent.join(format!(".{name}.partial"));
    let old = parent.join(format!(".{name}.old"));
    for p in [&tmp, &old] {
        if p.exists() {
            std::fs::remove_dir_all(p).map_err(|e| named(p, e))?;
        }
    }
    if let Err(e) = write(&tmp) {
        // a failed write leaves nothing behind
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if dest.exists() {
        std::fs::rename(dest, &old).map_err(|e| named(dest, e))?;
    }
    std::fs::rename(&tmp, dest).map_err(|e| named(dest, e))?;
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| named(&old, e))?;
    }
    Ok(())
}

impl From<std::io::Error> for LmError {
    fn from(e: std::io::Error) -> Self {
        LmError::backend(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_shape_names_what_is_wrong() {
        assert!(TinyShape::default().validate().is_ok());
        let bad = |f: fn(&mut TinyShape)| {
            let mut s = TinyShape::default();
            f(&mut s);
            s.validate().unwrap_err()
        };
        assert!(bad(|s| s.arch = "llama".into()).contains("qwen2 or qwen3"));
        assert!(bad(|s| s.num_hidden_layers = 0).contains("num_hidden_layers"));
        assert!(bad(|s| s.num_key_value_heads = 3).contains("multiple of num_key_value_heads"));
        assert!(bad(|s| s.hidden_size = 90).contains("hidden_size"));
        assert!(bad(|s| s.hidden_size = 12).contains("head_dim = 3"));
    }

    #[test]
    fn precisions_read_by_their_usual_names() {
        assert_eq!(Precision::parse("BF16"), Ok(Precision::Bf16));
        assert_eq!(Precision::parse("float32"), Ok(Precision::F32));
        assert_eq!(Precision::parse("half"), Ok(Precision::F16));
        assert!(Precision::parse("int8").unwrap_err().contains("int8"));
    }

    #[test]
    fn only_a_checkpoint_folder_may_be_replaced_and_only_when_forced() {
        let dir = std::env::temp_dir().join(format!("rla-lm-dest-{}", std::process::id()));
        let p = dir.as_path();
        assert_eq!(check_checkpoint_dest(&p.join("new"), false), Ok(()));
        std::fs::create_dir_all(p.join("empty")).unwrap();
        assert_eq!(check_checkpoint_dest(&p.join("empty"), false), Ok(()));
        // a folder of other things (here a folder of models) is never replaced
        let models = p.join("models");
        let m = models.join("policy");
        std::fs::create_dir_all(&m).unwrap();
        for f in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::write(m.join(f), b"{}").unwrap();
        }
        for force in [false, true] {
            let e = check_checkpoint_dest(&models, force).unwrap_err();
            assert!(
                e.contains("not a checkpoint") && e.contains("`policy`"),
                "{e}"
            );
        }
        let e = check_checkpoint_dest(&m.join("config.json"), true).unwrap_err();
        assert!(e.contains("is a file"), "{e}");
        // a checkpoint only with force
        assert!(check_checkpoint_dest(&m, false)
            .unwrap_err()
            .contains("--force"));
        assert_eq!(check_checkpoint_dest(&m, true), Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_is_replaced_whole_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("rla-lm-files-{}", std::process::id()));
        let dest = dir.join("m");
        replace_dir_atomic::<std::io::Error>(&dest, |t| {
            std::fs::create_dir_all(t)?;
            write_atomic(&t.join("a"), b"1")
        })
        .unwrap();
        let failed = replace_dir_atomic::<std::io::Error>(&dest, |t| {
            std::fs::create_dir_all(t)?;
            write_atomic(&t.join("b"), b"2")?;
            Err(std::io::Error::other("killed"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(dest.join("a")).unwrap(), b"1");
        assert!(!dest.join("b").exists());
        assert!(!dir.join(".m.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
