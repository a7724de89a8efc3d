//! Plain tensor ops that the model, its kernels and its losses share: the result type of tensor
//! code, the dtype reductions run in, softmax and log-softmax over the last dimension, and the
//! additive attention masks.

use candle_core::{DType, Device, Tensor, D};

/// Result type of tensor code.
pub type Result<T> = std::result::Result<T, candle_core::Error>;

/// The dtype reductions run in: f64 for f64 models, f32 otherwise.
pub fn acc_dtype(d: DType) -> DType {
    if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Softmax over the last dimension from plain ops (the maximum is subtracted for stability).
pub fn softmax_last(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let e = x.broadcast_sub(&max)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}

/// Log-softmax over the last dimension from plain ops.
pub fn log_softmax_last(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let shifted = x.broadcast_sub(&max)?;
    let lse = shifted.exp()?.sum_keepdim(D::Minus1)?.log()?;
    shifted.broadcast_sub(&lse)
}

/// Additive causal mask `[B, 1, T, offset + T]`: query t sees keys `0 ..= offset + t`.
pub fn causal_mask(b: usize, t: usize, offset: usize, device: &Device) -> Result<Tensor> {
    let s = offset + t;
    let mut m = vec![0f32; t * s];
    for i in 0..t {
        for j in (offset + i + 1)..s {
            m[i * s + j] = -1e9;
        }
    }
    Tensor::from_vec(m, (1, 1, t, s), device)?
        .broadcast_as((b, 1, t, s))?
        .contiguous()
}

/// Additive mask for left-padded rows: `valid[b][s]` says whether key s of row b is a real
/// token; query t (key index `S − T + t`) sees the valid keys at or before it.
pub fn padded_causal_mask(valid: &[Vec<bool>], t: usize, device: &Device) -> Result<Tensor> {
    let b = valid.len();
    let s = valid.first().map(|v| v.len()).unwrap_or(0);
    let mut m = vec![0f32; b * t * s];
    for (r, row) in valid.iter().enumerate() {
        for i in 0..t {
            let qi = s - t + i;
            for (j, ok) in row.iter().enumerate() {
                if j > qi || !ok {
                    m[(r * t + i) * s + j] = -1e9;
                }
            }
        }
    }
    Tensor::from_vec(m, (b, 1, t, s), device)
}
