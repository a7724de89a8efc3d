//! Training objectives on tensors, with the core crate's definitions
//! ([`rla_core::ppo`]): PPO-clip with the log-ratio clamp, the k3 KL estimate, token-mean then
//! sequence-mean; and the supervised (SFT) negative log-likelihood.

use crate::fused;
use crate::model::Transformer;
use crate::ops::{acc_dtype, Result};
use candle_core::{DType, Tensor};
use rla_core::ppo::PpoConfig;

/// Log-probabilities `[B, L]` the model gives `targets[b, t]` after `ids[b, ..=t]`.
///
/// Rows are right-padded: padding after a row's end changes nothing before it (causal attention).
pub fn token_logprobs(model: &Transformer, ids: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let (b, l) = ids.dims2()?;
    let pos = Tensor::arange(0u32, l as u32, ids.device())?
        .unsqueeze(0)?
        .broadcast_as((b, l))?
        .contiguous()?;
    let logits = model.forward(ids, &pos, None, None)?;
    fused::token_logprobs(&logits.to_dtype(acc_dtype(logits.dtype()))?, targets)
}

/// Log-probabilities `[B, R]` of each row's response tokens only: the output projection and the
/// softmax run on the R response positions, not on the whole sequence.
pub fn response_logprobs(model: &Transformer, b: &crate::batch::Batch) -> Result<Tensor> {
    Ok(response_logprobs_and_entropy(model, b, false)?.0)
}

/// [`response_logprobs`], and with `entropy` the summed entropy (nats) of the policy over the
/// batch's decision tokens — real response tokens drawn freely (every token) or among more than
/// one allowed token (over those only) — with their count, read off the same logits.
pub fn response_logprobs_and_entropy(
    model: &Transformer,
    b: &crate::batch::Batch,
    entropy: bool,
) -> Result<(Tensor, Option<(f64, usize)>)> {
    let (rows, l) = b.ids.dims2()?;
    let n = b.resp_targets.dim(0)?;
    let pos = match &b.positions {
        Some(p) => p.clone(),
        None => Tensor::arange(0u32, l as u32, b.ids.device())?
            .unsqueeze(0)?
            .broadcast_as((rows, l))?
            .contiguous()?,
    };
    let h = model.hidden(&b.ids, &pos, b.mask.as_ref(), None)?;
    let hd = h.dim(2)?;
    let picked = h
        .reshape((rows * l, hd))?
        .index_select(&b.resp_idx, 0)?
        .reshape((n, b.resp_len, hd))?;
    let logits = model.logits(&picked)?;
    let mut logits = logits.to_dtype(acc_dtype(logits.dtype()))?;
    if b.temperature != 1.0 {
        // the tempered policy the samples were drawn from
        logits = (logits / b.temperature)?;
    }
    if let Some(choices) = &b.resp_choices {
        logits = logits.broadcast_add(&choice_mask(choices, n, b.resp_len, &logits)?)?;
    }
    let ent = if entropy {
        Some(decision_entropy(&logits, b)?)
    } else {
        None
    };
    Ok((fused::token_logprobs(&logits, &b.resp_targets)?, ent))
}

/// The summed entropy over the decision tokens of `[B, R, V]` logits (choices already masked),
/// and their count.
fn decision_entropy(logits: &Tensor, b: &crate::batch::Batch) -> Result<(f64, usize)> {
    let lp = crate::ops::log_softmax_last(&logits.detach().to_dtype(DType::F32)?)?;
    let h = (lp.exp()? * &lp)?.sum(2)?.neg()?.to_vec2::<f32>()?;
    let mask = b.resp_mask.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    let (mut sum, mut count) = (0.0, 0usize);
    for (i, (hr, mr)) in h.iter().zip(&mask).enumerate() {
        for (j, (&x, &m)) in hr.iter().zip(mr).enumerate() {
            let choices = b
                .resp_choices
                .as_ref()
                .map(|c| c[i * b.resp_len + j].as_slice())
                .filter(|c| !c.is_empty());
            if m > 0.0 && rla_core::vitals::is_decision(choices) {
                sum += x as f64;
                count += 1;
            }
        }
    }
    Ok((sum, count))
}

/// An additive mask `[B, R, V]` that leaves each position's choices (every token where it has
/// none) and pushes the other tokens' logits out of the softmax.
fn choice_mask(choices: &[Vec<u32>], n: usize, r: usize, logits: &Tensor) -> Result<Tensor> {
    let v = logits.dim(2)?;
    let mut m = vec![0f32; n * r * v];
    for (pos, c) in choices.iter().enumerate() {
        if c.is_empty() {
            continue;
        }
        let row = &mut m[pos * v..(pos + 1) * v];
        row.fill(-1e9);
        for &t in c {
            if let Some(x) = row.get_mut(t as usize) {
                *x = 0.0;
            }
        }
    }
    Tensor::from_vec(m, (n, r, v), logits.device())?.to_dtype(logits.dtype())
}

fn masked_sequence_mean(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    // token mean within each sequence, then the mean over sequences
    let per_seq = (x * mask)?
        .sum(1)?
        .broadcast_div(&mask.sum(1)?.clamp(1.0, f64::INFINITY)?)?;
    per_seq.mean_all()
}

/// The PPO-clip loss (plus β·k3 KL when `logp_ref` is given), averaged over response tokens of
/// each sequence and then over sequences. `advantages` is `[B]`, broadcast over the tokens;
/// `mask` `[B, L]` is 1 on response tokens.
pub fn ppo_loss(
    logp: &Tensor,
    logp_old: &Tensor,
    logp_ref: Option<&Tensor>,
    advantages: &Tensor,
    mask: &Tensor,
    cfg: &PpoConfig,
) -> Result<Tensor> {
    let c = cfg.log_ratio_clamp;
    let ratio = (logp - logp_old)?.clamp(-c, c)?.exp()?;
    let adv = advantages.unsqueeze(1)?;
    let unclipped = ratio.broadcast_mul(&adv)?;
    let clipped = ratio
        .clamp(1.0 - cfg.clip_eps, 1.0 + cfg.clip_eps)?
        .broadcast_mul(&adv)?;
    let mut per_tok = unclipped.minimum(&clipped)?.neg()?;
    if let (Some(r), true) = (logp_ref, cfg.kl_beta > 0.0) {
        let q = (r - logp)?;
        let k3 = ((q.exp()? - &q)? - 1.0)?;
        per_tok = (per_tok + (k3 * cfg.kl_beta)?)?;
    }
    masked_sequence_mean(&per_tok, mask)
}

/// Supervised loss: the negative log-likelihood of the response tokens, token-mean within each
/// sequence, then the mean over sequences.
pub fn sft_loss(logp: &Tensor, mask: &Tensor) -> Result<Tensor> {
    masked_sequence_mean(&logp.neg()?, mask)
}
