//! The rotary position embedding, which also lays the heads out as `[B, heads, T, D]`.

use super::kernel::{contiguous_slice, fusable, read, Float, Out};
use super::reference::rope_plain;
use super::tables::Rotary;
use crate::ops::Result;
use candle_core::{bail, CpuStorage, DType, Layout, Shape, Tensor};
use rayon::prelude::*;
use std::sync::Arc;

/// Rotates `x` `[B·T, heads, D]` (rows in batch-major order) and lays it out as `[B, heads, T, D]`.
struct RopeOp {
    tables: Arc<(Vec<f32>, Vec<f32>)>,
    b: usize,
    t: usize,
}

impl RopeOp {
    /// `dst[b, h, t, :] = x[n, h, :] ⊙ cos[n] ± rotate_half(x[n, h, :]) ⊙ sin[n]`, or with
    /// `inverse` the transposed map from `[B, heads, T, D]` back to `[B·T, heads, D]`.
    fn run<T: Float>(&self, x: &[T], heads: usize, d: usize, inverse: bool) -> Vec<T> {
        let (t, h2) = (self.t, d / 2);
        let (cos, sin) = (&self.tables.0, &self.tables.1);
        let mut out = vec![T::zero(); x.len()];
        let o = Out(out.as_mut_ptr());
        (0..self.b * heads).into_par_iter().for_each(|unit| {
            let (b, h) = (unit / heads, unit % heads);
            let o = o.get();
            for tt in 0..t {
                let n = b * t + tt;
                let rows = (n * heads + h) * d; // [B·T, heads, D]
                let cols = ((b * heads + h) * t + tt) * d; // [B, heads, T, D]
                let (src, dst) = if inverse { (cols, rows) } else { (rows, cols) };
                let (c, s) = (&cos[n * d..(n + 1) * d], &sin[n * d..(n + 1) * d]);
                for i in 0..d {
                    let (ci, si) = (T::from_f64(c[i] as f64), T::from_f64(s[i] as f64));
                    let v = if !inverse {
                        // rotate_half(x)_i = −x_{i+D/2} (first half), x_{i−D/2} (second)
                        let r = if i < h2 {
                            -x[src + i + h2]
                        } else {
                            x[src + i - h2]
                        };
                        x[src + i] * ci + r * si
                    } else {
                        // transpose: (rotate_half)ᵀ(a)_i = a_{i+D/2} (first half), −a_{i−D/2}
                        let r = if i < h2 {
                            x[src + i + h2] * T::from_f64(s[i + h2] as f64)
                        } else {
                            -x[src + i - h2] * T::from_f64(s[i - h2] as f64)
                        };
                        x[src + i] * ci + r
                    };
                    // SAFETY: each unit writes only the rows of its own (b, h)
                    unsafe { *o.add(dst + i) = v };
                }
            }
        });
        out
    }
}

impl candle_core::CustomOp1 for RopeOp {
    fn name(&self) -> &'static str {
        "fused-rope"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (n, heads, d) = l.shape().dims3()?;
        if n != self.b * self.t || self.tables.0.len() != n * d || d % 2 != 0 {
            bail!("fused rope: input {:?} does not fit the tables", l.dims());
        }
        let shape = Shape::from((self.b, heads, self.t, d));
        Ok(match s {
            CpuStorage::F32(x) => (
                CpuStorage::F32(self.run(contiguous_slice(x, l, "rope")?, heads, d, false)),
                shape,
            ),
            CpuStorage::F64(x) => (
                CpuStorage::F64(self.run(contiguous_slice(x, l, "rope")?, heads, d, false)),
                shape,
            ),
            _ => bail!("fused rope: f32 or f64 only"),
        })
    }

    fn bwd(&self, x: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let (_, heads, d) = x.dims3()?;
        let grad = grad.contiguous()?;
        macro_rules! run {
            ($ty:ty) => {
                read::<$ty, _>(&grad, |gs, gl| {
                    Ok(self.run(contiguous_slice(gs, gl, "rope")?, heads, d, true))
                })
                .and_then(|v| Tensor::from_vec(v, x.shape(), x.device()))?
            };
        }
        Ok(Some(match x.dtype() {
            DType::F32 => run!(f32),
            DType::F64 => run!(f64),
            other => bail!("fused rope: unsupported dtype {other:?}"),
        }))
    }
}

/// Rotary position embedding of `x` `[B·T, heads, D]` (rows of batch b at positions t in order
/// `b·T + t`), returned as `[B, heads, T, D]`.
pub fn rope(x: &Tensor, r: &Rotary) -> Result<Tensor> {
    let (b, t, _, d) = r.cos.dims4()?;
    let (n, _, dx) = x.dims3()?;
    if n != b * t || dx != d {
        bail!(
            "rope: input {:?} does not fit tables for [{b}, {t}, {d}]",
            x.dims()
        );
    }
    match &r.host {
        Some(tables) if fusable(x) => x.contiguous()?.apply_op1(RopeOp {
            tables: tables.clone(),
            b,
            t,
        }),
        _ => rope_plain(x, r),
    }
}
