//! A loaded language model with its tokenizer and (when training) its optimiser, behind the small
//! [`LanguageModel`] trait the trainer uses.

use crate::config::ModelConfig;
use crate::lora::{self, LoraConfig};
use crate::model::Transformer;
use crate::sample::{self, Sample, SampleParams};
use crate::tok::Tok;
use crate::train::{self, AdamW, PpoSample, StepStats, TrainConfig};
use crate::weights::{init_tensors, load_tensors, save_model, write_atomic};
use crate::ModelError;
use candle_core::{DType, Device};
use std::path::Path;

/// What the trainer needs from a model, whichever model is behind it.
pub trait LanguageModel {
    /// The tokenizer.
    fn tok(&self) -> &Tok;
    /// `n` samples per prompt.
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
    ) -> Result<Vec<Vec<Sample>>, ModelError>;
    /// `n` samples per prompt, each drawn only among `allowed[prompt]` (complete token sequences;
    /// see [`sample::generate_within`]).
    fn generate_within(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
        allowed: &[Vec<Vec<u32>>],
    ) -> Result<Vec<Vec<Sample>>, ModelError>;
    /// Log-probabilities of responses.
    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<Vec<Vec<f32>>, ModelError>;
    /// One PPO-clip update.
    fn ppo_update(&mut self, samples: &[PpoSample]) -> Result<StepStats, ModelError>;
    /// One supervised update.
    fn sft_update(&mut self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<StepStats, ModelError>;
    /// Saves a checkpoint (model, tokenizer, optimiser state, adapters) into a folder.
    fn save(&self, dir: &Path) -> Result<(), ModelError>;
}

/// Picks the device: CUDA device 0 when asked for and compiled with the `cuda` feature.
pub fn device(cuda: bool) -> Result<Device, ModelError> {
    if cuda {
        Device::new_cuda(0).map_err(|e| {
            ModelError::Other(format!(
                "CUDA unavailable ({e}); build with --features cuda on a machine with a GPU"
            ))
        })
    } else {
        Ok(Device::Cpu)
    }
}

/// A model, its tokenizer and its optimiser.
pub struct Lm {
    /// The transformer.
    pub model: Transformer,
    /// The tokenizer.
    pub tok: Tok,
    /// Training settings.
    pub train_cfg: TrainConfig,
    /// The optimiser, once training is enabled.
    pub opt: Option<AdamW>,
    /// LoRA settings, when only adapters train.
    pub lora: Option<LoraConfig>,
}

impl Lm {
    /// Loads a checkpoint folder in HF layout (with `adapter_config.json` beside it, the adapters too).
    pub fn load(dir: &Path, dtype: DType, device: &Device) -> Result<Lm, ModelError> {
        let cfg = ModelConfig::load(&dir.join("config.json"))?;
        let tensors = load_tensors(dir, dtype, device)?;
        let mut model = Transformer::from_tensors(&cfg, &tensors, device, dtype)?;
        let tok = Tok::load(dir)?;
        if tok.vocab_size() > cfg.vocab_size {
            return Err(ModelError::invalid(
                &dir.join("tokenizer.json"),
                "vocab",
                format!(
                    "{} tokens but the model has vocab_size {}",
                    tok.vocab_size(),
                    cfg.vocab_size
                ),
            ));
        }
        let lora = if dir.join("adapter_config.json").exists() {
            Some(lora::load_peft(&mut model, dir)?)
        } else {
            None
        };
        Ok(Lm {
            model,
            tok,
            train_cfg: TrainConfig::default(),
            opt: None,
            lora,
        })
    }

    /// A new model with random weights.
    pub fn init(
        cfg: &ModelConfig,
        tok: Tok,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Lm, ModelError> {
        cfg.validate().map_err(ModelError::Config)?;
        if tok.vocab_size() > cfg.vocab_size {
            return Err(ModelError::Config(format!(
                "the tokenizer has {} tokens but vocab_size is {}",
                tok.vocab_size(),
                cfg.vocab_size
            )));
        }
        let t = init_tensors(cfg, seed, dtype, device)?;
        Ok(Lm {
            model: Transformer::from_tensors(cfg, &t, device, dtype)?,
            tok,
            train_cfg: TrainConfig::default(),
            opt: None,
            lora: None,
        })
    }

    /// Makes the model trainable: every weight, or only fresh LoRA adapters. Loads the optimiser
    /// state from `resume` if given.
    pub fn enable_training(
        &mut self,
        cfg: TrainConfig,
        lora_cfg: Option<LoraConfig>,
        seed: u64,
        resume: Option<&Path>,
    ) -> Result<(), ModelError> {
        let vars = match (&lora_cfg, self.lora.is_some()) {
            (Some(_), true) | (None, true) => {
                // adapters loaded from a checkpoint: train them
                let mut v = Vec::new();
                for (path, lin) in self.model.projections_mut() {
                    if let Some(l) = &mut lin.lora {
                        let a = candle_core::Var::from_tensor(&l.a)?;
                        let b = candle_core::Var::from_tensor(&l.b)?;
                        l.a = a.as_tensor().clone();
                        l.b = b.as_tensor().clone();
                        v.push((format!("{path}.lora_A.weight"), a));
                        v.push((format!("{path}.lora_B.weight"), b));
                    }
                }
                v
            }
            (Some(lc), false) => {
                self.lora = Some(lc.clone());
                lora::attach(&mut self.model, lc, seed)?
            }
            (None, false) => self.model.make_trainable()?,
        };
        let mut opt = AdamW::new(vars)?;
        if let Some(dir) = resume {
            opt.load(&dir.join("optimizer.safetensors"))?;
        }
        self.opt = Some(opt);
        self.train_cfg = cfg;
        Ok(())
    }

    fn opt(&mut self) -> Result<&mut AdamW, ModelError> {
        self.opt
            .as_mut()
            .ok_or_else(|| ModelError::Other("training is not enabled on this model".into()))
    }
}

impl LanguageModel for Lm {
    fn tok(&self) -> &Tok {
        &self.tok
    }

    fn generate(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
    ) -> Result<Vec<Vec<Sample>>, ModelError> {
        sample::generate(&self.model, &self.tok, prompts, n, p)
    }

    fn generate_within(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        p: &SampleParams,
        allowed: &[Vec<Vec<u32>>],
    ) -> Result<Vec<Vec<Sample>>, ModelError> {
        sample::generate_within(&self.model, &self.tok, prompts, n, p, Some(allowed))
    }

    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<Vec<Vec<f32>>, ModelError> {
        sample::score(&self.model, pairs)
    }

    fn ppo_update(&mut self, samples: &[PpoSample]) -> Result<StepStats, ModelError> {
        let (cfg, pad) = (self.train_cfg.clone(), self.tok.pad_id);
        let model = self.model.clone();
        train::ppo_step(&model, self.opt()?, &cfg, samples, pad)
    }

    fn sft_update(&mut self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<StepStats, ModelError> {
        let (cfg, pad) = (self.train_cfg.clone(), self.tok.pad_id);
        let model = self.model.clone();
        train::sft_step(&model, self.opt()?, &cfg, pairs, pad)
    }

    fn save(&self, dir: &Path) -> Result<(), ModelError> {
        let mut base = self.model.clone();
        if let Some(lc) = &self.lora {
            lora::save_peft(&self.model, lc, dir, "./")?;
            for (_, lin) in base.projections_mut() {
                lin.lora = None;
            }
        }
        save_model(&base, dir)?;
        self.tok.save(dir)?;
        let gen =
            serde_json::json!({"eos_token_id": self.tok.eos_ids, "pad_token_id": self.tok.pad_id});
        write_atomic(
            &dir.join("generation_config.json"),
            gen.to_string().as_bytes(),
        )?;
        if let Some(o) = &self.opt {
            o.save(&dir.join("optimizer.safetensors"))?;
        }
        Ok(())
    }
}
