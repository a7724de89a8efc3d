//! The plain-op versions of the kernels: they run on other devices and dtypes, and they are the
//! references the kernels are tested against.

use super::tables::Rotary;
use crate::ops::{acc_dtype, causal_mask, log_softmax_last, softmax_last, Result};
use candle_core::{Tensor, D};

/// [`attention`](super::attention) from plain tensor ops (for devices and dtypes without the fused kernel, and as
/// the reference the kernel is tested against).
pub fn attention_plain(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    scale: f64,
) -> Result<Tensor> {
    let (b, h, t, d) = q.dims4()?;
    let (_, kvh, s, _) = k.dims4()?;
    let rep = h / kvh;
    let expand = |x: &Tensor| -> Result<Tensor> {
        if rep == 1 {
            Ok(x.clone())
        } else {
            x.unsqueeze(2)?
                .broadcast_as((b, kvh, rep, s, d))?
                .reshape((b, h, s, d))
        }
    };
    let (k, v) = (expand(k)?, expand(v)?);
    let acc = acc_dtype(q.dtype());
    let scores = (q.contiguous()?.matmul(&k.t()?.contiguous()?)? * scale)?.to_dtype(acc)?;
    let own;
    let mask = match mask {
        Some(m) => m,
        None => {
            own = causal_mask(b, t, s - t, q.device())?;
            &own
        }
    };
    let scores = scores.broadcast_add(&mask.to_dtype(acc)?)?;
    let att = softmax_last(&scores)?.to_dtype(q.dtype())?;
    att.matmul(&v.contiguous()?)?.transpose(1, 2)
}

/// RMSNorm from plain ops: `x / sqrt(mean(x²) + ε) · w`, computed in f32 (f64 for f64 models).
/// The model calls [`crate::fused::rms_norm`], which runs this where its kernel does not apply.
pub fn rms_norm_plain(x: &Tensor, w: &Tensor, eps: f64) -> Result<Tensor> {
    let dtype = x.dtype();
    let xf = x.to_dtype(acc_dtype(dtype))?;
    let ms = xf.sqr()?.mean_keepdim(D::Minus1)?;
    let y = xf.broadcast_div(&(ms + eps)?.sqrt()?)?;
    y.to_dtype(dtype)?.broadcast_mul(w)
}

/// [`token_logprobs`](super::token_logprobs) from plain tensor ops.
pub fn token_logprobs_plain(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    log_softmax_last(logits)?
        .gather(&targets.unsqueeze(D::Minus1)?, D::Minus1)?
        .squeeze(D::Minus1)
}

/// [`rope`](super::rope) from plain tensor ops.
pub fn rope_plain(x: &Tensor, r: &Rotary) -> Result<Tensor> {
    let (b, t, _, d) = r.cos.dims4()?;
    let heads = x.dim(1)?;
    let x = x.reshape((b, t, heads, d))?;
    let half = d / 2;
    let rot = Tensor::cat(
        &[
            &x.narrow(D::Minus1, half, half)?.neg()?,
            &x.narrow(D::Minus1, 0, half)?,
        ],
        D::Minus1,
    )?;
    let y = (x.broadcast_mul(&r.cos)? + rot.broadcast_mul(&r.sin)?)?;
    y.transpose(1, 2)?.contiguous()
}

/// [`swiglu`](super::swiglu) from plain tensor ops.
pub fn swiglu_plain(g: &Tensor, u: &Tensor) -> Result<Tensor> {
    g.silu()? * u
}

/// [`linear`](super::linear) from plain tensor ops.
pub fn linear_plain(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.matmul(&w.t()?)
}
