//! A loaded language model with its tokenizer and (when training) its optimiser and frozen KL
//! reference, behind the [`Sampler`] and [`Learner`] traits the loop uses.

use crate::config::ModelConfig;
use crate::lora::{self, LoraConfig};
use crate::model::Transformer;
use crate::sample::{self, Sample};
use crate::tok::Message;
use crate::tok::Tok;
use crate::train::{self, AdamW, PpoSample, StepStats, TrainConfig};
use crate::weights::{init_tensors, load_tensors, save_model, write_atomic};
use crate::ModelError;
use candle_core::{DType, Device};
use rla_lm::{Learner, LmError, Sampler};
use std::path::Path;

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
    /// The frozen reference policy of the KL term, when training is enabled with a frozen KL
    /// reference: the model as training started (a fresh LoRA adapter starts at zero, so with
    /// LoRA this is the base with the warm start's adapters, if any), or one loaded with
    /// [`Lm::load_reference`].
    pub reference: Option<Transformer>,
}

impl Lm {
    /// Loads a checkpoint folder in HF layout (with `adapter_config.json` beside it, the adapters too).
    pub fn load(dir: &Path, dtype: DType, device: &Device) -> Result<Lm, ModelError> {
        let cfg = ModelConfig::load(&dir.join("config.json"))?;
        cfg.check_fits(dtype.size_in_bytes(), "hold")
            .map_err(|m| ModelError::invalid(&dir.join("config.json"), "config.json", m))?;
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
            reference: None,
        })
    }

    /// This model with the LoRA adapter in `dir` (PEFT's format) on top, for serving: the
    /// weights are shared, not copied; an adapter this model already has is folded into the
    /// base first.
    pub fn with_adapter(&self, dir: &Path) -> Result<Lm, ModelError> {
        let mut model = self.model.clone();
        lora::merge(&mut model)?;
        let cfg = lora::load_peft(&mut model, dir)?;
        Ok(Lm {
            model,
            tok: self.tok.clone(),
            train_cfg: TrainConfig::default(),
            opt: None,
            lora: Some(cfg),
            reference: None,
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
        cfg.check_fits(dtype.size_in_bytes(), "hold")
            .map_err(ModelError::Config)?;
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
            reference: None,
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
        // The frozen KL reference, when the objective has one: the model as training starts
        // (adapters it was loaded with included), taken before any variable is made (variables
        // copy their data; unchanged weights are shared, not copied). A resumed model is not its
        // own reference: the caller loads the warm start with `load_reference`.
        if lora_cfg.is_none() && self.lora.is_none() {
            // weights, gradients and AdamW's two moments, in f32
            self.model
                .cfg
                .check_fits(16, "train with AdamW")
                .map_err(ModelError::Config)?;
        }
        let frozen = cfg.ppo.frozen_reference();
        self.reference = (frozen && resume.is_none()).then(|| self.model.clone());
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

    /// Makes the model in `dir` (for instance the warm start of a resumed run) the frozen
    /// reference of the KL term.
    pub fn load_reference(&mut self, dir: &Path) -> Result<(), ModelError> {
        let cfg = ModelConfig::load(&dir.join("config.json"))?;
        if cfg.vocab_size != self.model.cfg.vocab_size
            || cfg.hidden_size != self.model.cfg.hidden_size
            || cfg.num_hidden_layers != self.model.cfg.num_hidden_layers
        {
            return Err(ModelError::invalid(
                &dir.join("config.json"),
                "shape",
                "the KL reference must have the trained model's vocabulary and shape",
            ));
        }
        let tensors = load_tensors(dir, self.model.dtype, &self.model.device)?;
        let mut reference =
            Transformer::from_tensors(&cfg, &tensors, &self.model.device, self.model.dtype)?;
        if dir.join("adapter_config.json").exists() {
            lora::load_peft(&mut reference, dir)?;
        }
        self.reference = Some(reference);
        Ok(())
    }

    fn opt(&mut self) -> Result<&mut AdamW, ModelError> {
        self.opt
            .as_mut()
            .ok_or_else(|| ModelError::Other("training is not enabled on this model".into()))
    }
}

impl From<ModelError> for LmError {
    fn from(e: ModelError) -> LmError {
        LmError::backend(e)
    }
}

impl rla_lm::Codec for Tok {
    fn encode(&self, text: &str) -> rla_lm::Result<Vec<u32>> {
        Ok(Tok::encode(self, text)?)
    }

    fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
        Ok(Tok::decode(self, ids)?)
    }

    fn eos_ids(&self) -> &[u32] {
        &self.eos_ids
    }

    fn chat_template(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> rla_lm::Result<Option<String>> {
        match self.chat_template {
            Some(_) => Ok(Some(
                self.apply_chat_template(messages, add_generation_prompt)?,
            )),
            None => Ok(None),
        }
    }
}

rla_lm::codec_by_field!([] Lm, tok);

impl Sampler for Lm {
    fn sample(&self, r: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        // constrained answers end within the longest allowed one
        let longest = r.allowed.map(|al| {
            al.iter()
                .flat_map(|a| a.iter().map(Vec::len))
                .max()
                .unwrap_or(0)
        });
        let new = r.params.max_new_tokens.min(longest.unwrap_or(usize::MAX));
        rla_lm::check_context(r.prompts.iter().map(Vec::len), new, self.context_len())?;
        // the room a batch reserves for its answers is what they can take, not what was asked
        let params = rla_lm::SampleParams {
            max_new_tokens: new,
            ..r.params.clone()
        };
        Ok(sample::generate_seeded(
            &self.model,
            &self.tok,
            r.prompts,
            r.n,
            &params,
            r.allowed,
            r.seeds,
        )?)
    }

    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        rla_lm::check_context(
            pairs.iter().map(|(p, r)| p.len() + r.len()),
            0,
            self.context_len(),
        )?;
        Ok(sample::score(&self.model, pairs)?)
    }

    fn top_logprobs(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        k: usize,
    ) -> rla_lm::Result<rla_lm::Alternatives> {
        Ok(sample::top_logprobs(&self.model, pairs, k)?)
    }

    fn vocab_size(&self) -> Option<usize> {
        Some(self.model.cfg.vocab_size)
    }

    fn parameter_count(&self) -> Option<usize> {
        Some(self.model.cfg.num_params())
    }

    fn context_len(&self) -> Option<usize> {
        Some(self.model.cfg.max_position_embeddings)
    }
}

impl Learner for Lm {
    fn ppo_update(&mut self, samples: &[PpoSample]) -> rla_lm::Result<StepStats> {
        let (cfg, pad) = (self.train_cfg.clone(), self.tok.pad_id);
        let model = self.model.clone();
        Ok(train::ppo_step(&model, self.opt()?, &cfg, samples, pad)?)
    }

    fn sft_update(&mut self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<StepStats> {
        let (cfg, pad) = (self.train_cfg.clone(), self.tok.pad_id);
        let model = self.model.clone();
        Ok(train::sft_step(&model, self.opt()?, &cfg, pairs, pad)?)
    }

    fn reference_logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        let r = self.reference.as_ref().ok_or_else(|| {
            LmError::Unsupported(
                "no KL reference: enable training with kl_beta > 0 and a frozen reference".into(),
            )
        })?;
        Ok(sample::score_within_at(
            r,
            pairs,
            choices,
            self.train_cfg.temperature,
        )?)
    }

    fn logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        Ok(sample::score_within_at(
            &self.model,
            pairs,
            choices,
            self.train_cfg.temperature,
        )?)
    }

    fn sft_loss(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<f64> {
        Ok(train::sft_eval(&self.model, pairs, self.tok.pad_id)?)
    }

    fn set_lr(&mut self, lr: f64) {
        self.train_cfg.lr = lr;
    }

    fn save(&self, dir: &Path) -> rla_lm::Result<()> {
        Ok(self.save_checkpoint(dir)?)
    }

    fn export(&self, dir: &Path, adapter_for: Option<&str>) -> rla_lm::Result<()> {
        match (adapter_for, &self.lora) {
            (Some(base), Some(lc)) => Ok(lora::save_peft(&self.model, lc, dir, base)?),
            (Some(_), None) => Err(LmError::Unsupported(
                "the model trains no LoRA adapter to export".into(),
            )),
            (None, _) => Ok(self.save_weights(dir)?),
        }
    }
}

impl Lm {
    /// Saves a checkpoint (model, tokenizer, generation config, optimiser state, adapters).
    pub fn save_checkpoint(&self, dir: &Path) -> Result<(), ModelError> {
        self.save_weights(dir)?;
        if let Some(o) = &self.opt {
            o.save(&dir.join("optimizer.safetensors"))?;
        }
        Ok(())
    }

    /// Saves the model without its optimiser state (model, tokenizer, generation config,
    /// adapters).
    pub fn save_weights(&self, dir: &Path) -> Result<(), ModelError> {
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
        Ok(())
    }
}
