//! The candle back end behind [`rla_lm::Backend`]: models opened from Hugging Face folders and
//! fresh tiny models, trained in this process on the CPU (GPUs train through the PyTorch
//! learner, `rla-torch`).

use crate::config::{Arch, ModelConfig};
use crate::lm::Lm;
use crate::tok::{build_pieces, Tok};
use crate::train::TrainConfig;
use crate::weights::parse_dtype;
use crate::ModelError;
use candle_core::{DType, Device};
use rla_lm::{Backend, Codec, Model, OpenOptions, TinyShape, TrainOptions};
use std::path::Path;

/// Models in candle, in this process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Candle;

fn train_config(t: &TrainOptions) -> TrainConfig {
    TrainConfig {
        lr: t.lr,
        micro_batch: t.micro_batch,
        ppo: t.ppo,
        temperature: if t.temperature > 0.0 {
            t.temperature
        } else {
            1.0
        },
        ..Default::default()
    }
}

/// The model config of a tiny shape over `vocab` tokens.
pub fn tiny_config(shape: &TinyShape, vocab: usize) -> Result<ModelConfig, ModelError> {
    shape.validate().map_err(ModelError::Config)?;
    let arch = match shape.arch.as_str() {
        "qwen2" => Arch::Qwen2,
        _ => Arch::Qwen3,
    };
    let c = ModelConfig::tiny(
        arch,
        vocab,
        shape.hidden_size,
        shape.num_hidden_layers,
        shape.num_attention_heads,
        shape.num_key_value_heads,
    );
    c.validate().map_err(ModelError::Config)?;
    Ok(c)
}

impl Candle {
    /// [`Backend::open`] with the model's own type.
    pub fn open_lm(&self, dir: &Path, opts: &OpenOptions) -> Result<Lm, ModelError> {
        let dtype = match opts.dtype.as_str() {
            "" => DType::F32,
            d => parse_dtype(d).map_err(ModelError::Config)?,
        };
        let mut lm = Lm::load(dir, dtype, &Device::Cpu)?;
        if let Some(t) = &opts.train {
            lm.enable_training(
                train_config(t),
                t.lora.clone(),
                t.seed,
                opts.resume.as_deref(),
            )?;
            if let (Some(_), Some(r), true) =
                (&opts.resume, &opts.reference, t.ppo.frozen_reference())
            {
                lm.load_reference(r).map_err(|e| {
                    ModelError::Other(format!("loading the KL reference {}: {e}", r.display()))
                })?;
            }
        }
        Ok(lm)
    }
}

impl Backend for Candle {
    fn open(&self, dir: &Path, opts: &OpenOptions) -> rla_lm::Result<Box<dyn Model>> {
        let lm = self
            .open_lm(dir, opts)
            .map_err(|e| ModelError::Other(format!("loading {}: {e}", dir.display())))?;
        Ok(Box::new(lm))
    }

    fn fresh(
        &self,
        shape: &TinyShape,
        corpus: &str,
        train: &TrainOptions,
    ) -> rla_lm::Result<Box<dyn Model>> {
        let tok = build_pieces(corpus, 1, &[])?;
        let mc = tiny_config(shape, tok.vocab_size())?;
        let mut lm = Lm::init(&mc, tok, train.seed, DType::F32, &Device::Cpu)?;
        lm.enable_training(train_config(train), train.lora.clone(), train.seed, None)?;
        Ok(Box::new(lm))
    }

    fn codec(&self, dir: &Path) -> rla_lm::Result<Box<dyn Codec>> {
        Ok(Box::new(Tok::load(dir)?))
    }
}
