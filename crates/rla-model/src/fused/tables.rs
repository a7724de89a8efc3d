//! The tables a forward pass makes once and every layer shares, the additive attention mask and
//! the rotary cos/sin, each with its values copied to the host for the CPU kernels.

use crate::ops::Result;
use candle_core::{DType, Tensor};
use std::sync::Arc;

/// An additive attention mask `[B or 1, T, S]` (f32), shared by every head.
#[derive(Debug)]
pub(super) struct Mask {
    pub(super) data: Vec<f32>,
    pub(super) per_batch: bool,
    /// Every query i of `[T, S]` sees no key after `i + S − T` (padded causal, packed rows):
    /// the kernel then skips the keys past each block of queries.
    pub(super) causal: bool,
}

/// An additive attention mask `[B or 1, 1, T, S]`, with its values on the host for the CPU
/// kernel: made once per forward pass and shared by every layer.
pub struct AttentionMask {
    /// The mask.
    pub tensor: Tensor,
    pub(super) host: Option<Arc<Mask>>,
}

impl AttentionMask {
    /// Wraps a mask tensor `[B or 1, 1, T, S]`.
    pub fn new(tensor: &Tensor) -> Result<AttentionMask> {
        let (mb, _, t, s) = tensor.dims4()?;
        let host = if tensor.device().is_cpu() {
            let data = tensor
                .to_dtype(DType::F32)?
                .flatten_all()?
                .to_vec1::<f32>()?;
            let causal = s >= t
                && data.chunks(s.max(1)).enumerate().all(|(r, row)| {
                    let i = r % t.max(1);
                    row[(i + s - t + 1).min(s)..].iter().all(|&x| x <= -1e8)
                });
            Some(Arc::new(Mask {
                data,
                per_batch: mb > 1,
                causal,
            }))
        } else {
            None
        };
        Ok(AttentionMask {
            tensor: tensor.clone(),
            host,
        })
    }
}

/// Rotary tables of a forward pass: `cos` and `sin` `[B, T, 1, D]` (both halves repeated, as the
/// plain rotate-half formula uses them), with their values on the host for the CPU kernel.
pub struct Rotary {
    /// `[B, T, 1, D]`.
    pub cos: Tensor,
    /// `[B, T, 1, D]`.
    pub sin: Tensor,
    pub(super) host: Option<Arc<(Vec<f32>, Vec<f32>)>>,
}

impl Rotary {
    /// Tables for a model of dtype `dtype` (the values are computed in f32, as the plain path does).
    pub fn new(cos: Tensor, sin: Tensor) -> Result<Rotary> {
        let host = if cos.device().is_cpu() {
            Some(Arc::new((
                cos.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?,
                sin.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?,
            )))
        } else {
            None
        };
        Ok(Rotary { cos, sin, host })
    }
}
