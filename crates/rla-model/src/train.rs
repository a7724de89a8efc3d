//! Updates: PPO-clip with a per-sample advantage broadcast over the response tokens, supervised
//! fine-tuning on response tokens, AdamW with decoupled weight decay, global-norm gradient
//! clipping, gradient accumulation over micro-batches. The optimiser state saves and loads, so
//! training resumes exactly.

use crate::batch::Batch;
use crate::loss::{ppo_loss, response_logprobs, response_logprobs_and_entropy, sft_loss};
use crate::model::Transformer;
use crate::ops::acc_dtype;
use crate::optim;
use crate::ModelError;
use candle_core::{DType, Tensor, Var};
use rla_core::ppo::PpoConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Optimiser and batching settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Learning rate.
    pub lr: f64,
    /// AdamW β₁.
    pub beta1: f64,
    /// AdamW β₂.
    pub beta2: f64,
    /// AdamW ε.
    pub eps: f64,
    /// Decoupled weight decay.
    pub weight_decay: f64,
    /// Global gradient-norm clip (0 disables).
    pub max_grad_norm: f64,
    /// Sequences per forward/backward pass; gradients accumulate over the micro-batches of a step.
    pub micro_batch: usize,
    /// The PPO objective.
    pub ppo: PpoConfig,
    /// The temperature the PPO samples were drawn at: the policy trained is the tempered one,
    /// whose log-probabilities the sampler records (1: the model's own).
    pub temperature: f64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            lr: 1e-5,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            max_grad_norm: 1.0,
            micro_batch: 16,
            ppo: PpoConfig::default(),
            temperature: 1.0,
        }
    }
}

/// AdamW over named variables.
#[derive(Debug)]
pub struct AdamW {
    /// The variables it updates.
    pub vars: Vec<(String, Var)>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    /// Steps taken.
    pub step: u64,
}

impl AdamW {
    /// A fresh optimiser.
    pub fn new(vars: Vec<(String, Var)>) -> candle_core::Result<Self> {
        let m = vars
            .iter()
            .map(|(_, v)| v.as_tensor().zeros_like()?.to_dtype(DType::F32))
            .collect::<candle_core::Result<_>>()?;
        let v = vars
            .iter()
            .map(|(_, v)| v.as_tensor().zeros_like()?.to_dtype(DType::F32))
            .collect::<candle_core::Result<_>>()?;
        Ok(AdamW {
            vars,
            m,
            v,
            step: 0,
        })
    }

    /// One update with the given gradients (by variable index); missing gradients skip the variable.
    pub fn update(&mut self, grads: &[Option<Tensor>], c: &TrainConfig) -> candle_core::Result<()> {
        self.update_scaled(grads, 1.0, c)
    }

    /// [`AdamW::update`] with every gradient first multiplied by `grad_scale` (clipping).
    pub fn update_scaled(
        &mut self,
        grads: &[Option<Tensor>],
        grad_scale: f64,
        c: &TrainConfig,
    ) -> candle_core::Result<()> {
        self.step += 1;
        let t = self.step as i32;
        let (bc1, bc2) = (1.0 - c.beta1.powi(t), 1.0 - c.beta2.powi(t));
        let hp = optim::AdamStep {
            lr: c.lr,
            beta1: c.beta1,
            beta2: c.beta2,
            eps: c.eps,
            weight_decay: c.weight_decay,
            bc1,
            bc2,
            grad_scale,
        };
        for (i, (_, var)) in self.vars.iter().enumerate() {
            let Some(g) = &grads[i] else { continue };
            // one pass on the CPU; plain tensor ops elsewhere
            if let Some((w, m, v)) = optim::adamw(var.as_tensor(), g, &self.m[i], &self.v[i], &hp)?
            {
                var.set(&w)?;
                self.m[i] = m;
                self.v[i] = v;
                continue;
            }
            let g = (g.to_dtype(DType::F32)? * grad_scale)?;
            self.m[i] = ((&self.m[i] * c.beta1)? + (&g * (1.0 - c.beta1))?)?;
            self.v[i] = ((&self.v[i] * c.beta2)? + (g.sqr()? * (1.0 - c.beta2))?)?;
            let mhat = (&self.m[i] / bc1)?;
            let vhat = (&self.v[i] / bc2)?;
            let w = var.as_tensor().to_dtype(DType::F32)?;
            let upd = ((mhat / (vhat.sqrt()? + c.eps)?)? + (&w * c.weight_decay)?)?;
            let nw = (w - (upd * c.lr)?)?.to_dtype(var.dtype())?;
            var.set(&nw)?;
        }
        Ok(())
    }

    /// Saves the moments and the step count.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let mut t = BTreeMap::new();
        for (i, (n, _)) in self.vars.iter().enumerate() {
            t.insert(format!("m.{n}"), self.m[i].clone());
            t.insert(format!("v.{n}"), self.v[i].clone());
        }
        t.insert(
            "step".into(),
            Tensor::new(&[self.step as f64], &candle_core::Device::Cpu)?,
        );
        crate::weights::save_tensors(&t, path)
    }

    /// Loads moments saved by [`AdamW::save`] for the same variables.
    pub fn load(&mut self, path: &Path) -> Result<(), ModelError> {
        let t = crate::weights::read_safetensors(path)?;
        let dev = self
            .vars
            .first()
            .map(|(_, v)| v.device().clone())
            .unwrap_or(candle_core::Device::Cpu);
        for (i, (n, _)) in self.vars.iter().enumerate() {
            let get = |k: String| {
                t.get(&k)
                    .cloned()
                    .ok_or_else(|| ModelError::invalid(path, k, "missing"))
            };
            self.m[i] = get(format!("m.{n}"))?.to_device(&dev)?;
            self.v[i] = get(format!("v.{n}"))?.to_device(&dev)?;
        }
        let step = t
            .get("step")
            .ok_or_else(|| ModelError::invalid(path, "step", "missing"))?;
        self.step = step.to_vec1::<f64>()?[0] as u64;
        Ok(())
    }
}

pub use rla_lm::{PpoSample, StepStats};

fn pad_rows(rows: &[&[f32]], b: &Batch, dtype: DType) -> candle_core::Result<Tensor> {
    let (n, r) = (rows.len(), b.resp_len);
    let mut out = vec![0f32; n * r];
    for (i, row) in rows.iter().enumerate() {
        out[i * r..i * r + row.len()].copy_from_slice(row);
    }
    Tensor::from_vec(out, (n, r), b.ids.device())?.to_dtype(dtype)
}

/// Accumulates `(loss · weight)` gradients of micro-batches, clips, steps the optimiser.
/// On the CPU the step runs inside the kernels' thread pool (see [`crate::sample::generate`]).
/// `sizes[i]`: the sequences of item i (a row of a packed batch holds several); a micro-batch
/// takes `micro_batch` items, and its loss, a mean over its sequences, weighs by their share.
/// Two micro-batches are worked on at once (their forward and backward passes are independent);
/// their gradients, losses and `micro`'s extra results `E` are summed in micro-batch order, so
/// the step is the one a micro-batch at a time would take.
fn accumulate_and_step<E: Default + Send + std::ops::AddAssign>(
    dev: &candle_core::Device,
    opt: &mut AdamW,
    cfg: &TrainConfig,
    sizes: &[usize],
    micro: impl Fn(std::ops::Range<usize>) -> Result<(Tensor, usize, E), ModelError> + Sync + Send,
) -> Result<(StepStats, E), ModelError> {
    dev.with_context(|| accumulate_and_step_inner(opt, cfg, sizes, micro))
}

/// One micro-batch's weighted loss, tokens, extra results and detached gradients.
type MicroOut<E> = (f64, usize, E, Vec<Option<Tensor>>);

fn accumulate_and_step_inner<E: Default + Send + std::ops::AddAssign>(
    opt: &mut AdamW,
    cfg: &TrainConfig,
    sizes: &[usize],
    micro: impl Fn(std::ops::Range<usize>) -> Result<(Tensor, usize, E), ModelError> + Sync,
) -> Result<(StepStats, E), ModelError> {
    let mb = cfg.micro_batch.max(1);
    let mut acc: Vec<Option<Tensor>> = vec![None; opt.vars.len()];
    let (n, total) = (sizes.len(), sizes.iter().sum::<usize>());
    let mut stats = StepStats {
        sequences: total,
        ..Default::default()
    };
    let mut extra = E::default();
    let ranges: Vec<std::ops::Range<usize>> =
        (0..n).step_by(mb).map(|s| s..(s + mb).min(n)).collect();
    let vars = &opt.vars;
    let work = |r: &std::ops::Range<usize>| -> Result<MicroOut<E>, ModelError> {
        let (loss, toks, e) = micro(r.clone())?;
        let w = sizes[r.clone()].iter().sum::<usize>() as f64 / total as f64;
        let scaled = (loss * w)?;
        let value = scaled.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        let grads = scaled.backward()?;
        // detached: a gradient computed from tracked tensors records its own graph, which would
        // keep every micro-batch's activations alive until the step
        let g = vars
            .iter()
            .map(|(_, v)| grads.get(v.as_tensor()).map(|g| g.detach()))
            .collect();
        Ok((value, toks, e, g))
    };
    for pair in ranges.chunks(2) {
        let outs = match pair {
            [a, b] => {
                let (x, y) = rayon::join(|| work(a), || work(b));
                vec![x?, y?]
            }
            [a] => vec![work(a)?],
            _ => vec![],
        };
        for (value, toks, e, grads) in outs {
            stats.loss += value;
            stats.tokens += toks;
            extra += e;
            for (i, g) in grads.into_iter().enumerate() {
                if let Some(g) = g {
                    acc[i] = Some(match acc[i].take() {
                        Some(a) => (a + g)?,
                        None => g,
                    });
                }
            }
        }
    }
    let mut sq = 0f64;
    for g in acc.iter().flatten() {
        sq += optim::sum_squares(g)?;
    }
    stats.grad_norm = sq.sqrt();
    let scale = if cfg.max_grad_norm > 0.0 && stats.grad_norm > cfg.max_grad_norm {
        cfg.max_grad_norm / (stats.grad_norm + 1e-6)
    } else {
        1.0
    };
    opt.update_scaled(&acc, scale, cfg)?;
    Ok((stats, extra))
}

/// No extra results.
#[derive(Default)]
struct Nothing;

impl std::ops::AddAssign for Nothing {
    fn add_assign(&mut self, _: Nothing) {}
}

/// What a PPO micro-batch measures besides its loss: (tokens the clip bounds, response tokens),
/// (entropy summed, decision tokens).
#[derive(Default)]
struct PpoExtra((usize, usize), (f64, usize));

impl std::ops::AddAssign for PpoExtra {
    fn add_assign(&mut self, o: PpoExtra) {
        self.0 .0 += o.0 .0;
        self.0 .1 += o.0 .1;
        self.1 .0 += o.1 .0;
        self.1 .1 += o.1 .1;
    }
}

/// The items in order of length (stable), so that each micro-batch pads its rows to nearly the
/// same length. The step's gradient is a sum over micro-batches, so the order changes nothing
/// but the padding computed (and the order floating-point sums are taken in).
fn by_length<T>(items: &[T], len: impl Fn(&T) -> usize) -> Vec<&T> {
    let mut v: Vec<&T> = items.iter().collect();
    v.sort_by_key(|x| len(x));
    v
}

/// One PPO-clip update over `samples`. Its stats hold, besides the loss and the gradient norm,
/// the share of response tokens whose ratio the clip bounds and the policy's mean entropy at the
/// decision tokens (both measured before the step).
pub fn ppo_step(
    model: &Transformer,
    opt: &mut AdamW,
    cfg: &TrainConfig,
    samples: &[PpoSample],
    pad: u32,
) -> Result<StepStats, ModelError> {
    PpoSample::check_all(samples).map_err(ModelError::Other)?;
    let acc = acc_dtype(model.dtype);
    // the samples of one prompt share a packed row; rows in order of length
    let groups = crate::batch::packed_groups(samples, |s| &s.prompt, |s| s.response.len());
    let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
    let (mut stats, extra) = accumulate_and_step(&model.device, opt, cfg, &sizes, |r| {
        // (tokens the clip bounds, response tokens), (entropy summed, decision tokens)
        let (mut clip, mut ent) = ((0usize, 0usize), (0f64, 0usize));
        let rows = &groups[r];
        let part: Vec<&PpoSample> = rows.iter().flatten().map(|&i| &samples[i]).collect();
        let b = Batch::packed_rows(
            samples,
            rows,
            |s| &s.prompt,
            |s| &s.response,
            pad,
            &model.device,
        )?
        .within(part.iter().map(|s| s.choices.as_deref()))?
        .tempered(cfg.temperature);
        let old_rows: Vec<&[f32]> = part.iter().map(|s| s.old_logprobs.as_slice()).collect();
        let old = pad_rows(&old_rows, &b, acc)?;
        let refp = match (
            cfg.ppo.kl_beta > 0.0,
            part.iter().all(|s| s.ref_logprobs.is_some()),
        ) {
            (true, true) => {
                let rows: Vec<&[f32]> = part
                    .iter()
                    .map(|s| s.ref_logprobs.as_deref().expect("checked"))
                    .collect();
                Some(pad_rows(&rows, &b, acc)?)
            }
            (true, false) => Some(old.clone()),
            _ => None,
        };
        let adv = Tensor::from_vec(
            part.iter().map(|s| s.advantage).collect::<Vec<f32>>(),
            part.len(),
            &model.device,
        )?
        .to_dtype(acc)?;
        let (lp, e) = response_logprobs_and_entropy(model, &b, true)?;
        if let Some((sum, n)) = e {
            ent.0 += sum;
            ent.1 += n;
        }
        let lpv = lp.detach().to_dtype(DType::F64)?.to_vec2::<f64>()?;
        for (s, row) in part.iter().zip(&lpv) {
            let new = &row[..s.response.len()];
            let old: Vec<f64> = s.old_logprobs.iter().map(|&x| x as f64).collect();
            if let Some(f) = rla_core::vitals::clip_fraction(new, &old, cfg.ppo.clip_eps) {
                clip.0 += (f * new.len() as f64).round() as usize;
                clip.1 += new.len();
            }
        }
        let mask = b.resp_mask.to_dtype(acc)?;
        let loss = ppo_loss(&lp, &old, refp.as_ref(), &adv, &mask, &cfg.ppo)?;
        let toks = part.iter().map(|s| s.response.len()).sum();
        Ok((loss, toks, PpoExtra(clip, ent)))
    })?;
    let PpoExtra(clip, ent) = extra;
    stats.clip_fraction = (clip.1 > 0).then(|| clip.0 as f64 / clip.1 as f64);
    stats.decision_entropy = (ent.1 > 0).then(|| ent.0 / ent.1 as f64);
    Ok(stats)
}

/// One supervised update over (prompt, response) pairs.
pub fn sft_step(
    model: &Transformer,
    opt: &mut AdamW,
    cfg: &TrainConfig,
    pairs: &[(Vec<u32>, Vec<u32>)],
    pad: u32,
) -> Result<StepStats, ModelError> {
    let acc = acc_dtype(model.dtype);
    let pairs: Vec<&(Vec<u32>, Vec<u32>)> = by_length(pairs, |(p, x)| p.len() + x.len());
    accumulate_and_step(&model.device, opt, cfg, &vec![1; pairs.len()], |r| {
        let part = &pairs[r];
        let b = Batch::new(
            part.iter().map(|(p, x)| (p.as_slice(), x.as_slice())),
            pad,
            &model.device,
        )?;
        let lp = response_logprobs(model, &b)?;
        let loss = sft_loss(&lp, &b.resp_mask.to_dtype(acc)?)?;
        Ok((loss, part.iter().map(|(_, x)| x.len()).sum(), Nothing))
    })
    .map(|(stats, Nothing)| stats)
}

/// Mean SFT loss without updating (for evaluation).
pub fn sft_eval(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
    pad: u32,
) -> Result<f64, ModelError> {
    model
        .device
        .with_context(|| sft_eval_inner(model, pairs, pad))
}

fn sft_eval_inner(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
    pad: u32,
) -> Result<f64, ModelError> {
    let acc = acc_dtype(model.dtype);
    let mut total = 0.0;
    for chunk in pairs.chunks(16) {
        let b = Batch::new(
            chunk.iter().map(|(p, x)| (p.as_slice(), x.as_slice())),
            pad,
            &model.device,
        )?;
        let lp = response_logprobs(model, &b)?.detach();
        total += sft_loss(&lp, &b.resp_mask.to_dtype(acc)?)?
            .to_dtype(DType::F64)?
            .to_scalar::<f64>()?
            * chunk.len() as f64;
    }
    Ok(total / pairs.len().max(1) as f64)
}
