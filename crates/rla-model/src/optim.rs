//! The optimiser's arithmetic, each in one pass over the data on the CPU: the squared norm of a
//! gradient (for clipping), accumulated in f64, and one AdamW step.

use crate::fused::kernel::{contiguous_slice, fusable, read, Float};
use crate::ops::Result;
use candle_core::{bail, DType, Tensor};
use rayon::prelude::*;

/// `Σ x²` of a tensor, accumulated in f64.
pub fn sum_squares(t: &Tensor) -> Result<f64> {
    fn host<T: Float>(t: &Tensor) -> Result<f64> {
        let t = t.contiguous()?;
        read::<T, _>(&t, |s, l| {
            let s = contiguous_slice(s, l, "sum of squares")?;
            // partial sums added in chunk order: the same result whatever the scheduling
            let parts: Vec<f64> = s
                .par_chunks(1 << 16)
                .map(|c| c.iter().fold(0f64, |a, &x| a + x.to_f64() * x.to_f64()))
                .collect();
            Ok(parts.iter().sum())
        })
    }
    match t.dtype() {
        DType::F32 if t.device().is_cpu() => host::<f32>(t),
        DType::F64 if t.device().is_cpu() => host::<f64>(t),
        _ => t.to_dtype(DType::F64)?.sqr()?.sum_all()?.to_scalar::<f64>(),
    }
}

/// Hyper-parameters of one AdamW step, bias corrections included.
#[derive(Debug, Clone, Copy)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f64,
    /// β₁.
    pub beta1: f64,
    /// β₂.
    pub beta2: f64,
    /// ε.
    pub eps: f64,
    /// Decoupled weight decay.
    pub weight_decay: f64,
    /// `1 − β₁ᵗ`.
    pub bc1: f64,
    /// `1 − β₂ᵗ`.
    pub bc2: f64,
    /// Factor applied to the gradient first (global-norm clipping).
    pub grad_scale: f64,
}

/// One AdamW step in a single pass over the weight `w`, its gradient `g` and the f32 moments
/// `m` and `v`: returns the new weight and moments (all on the CPU), or `None` when the kernel
/// does not apply (other devices or dtypes).
pub fn adamw(
    w: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    s: &AdamStep,
) -> Result<Option<(Tensor, Tensor, Tensor)>> {
    if !(fusable(w)
        && g.dtype() == w.dtype()
        && g.device().is_cpu()
        && m.device().is_cpu()
        && v.device().is_cpu())
        || m.dtype() != DType::F32
        || v.dtype() != DType::F32
    {
        return Ok(None);
    }
    fn run<T: Float>(
        w: &Tensor,
        g: &Tensor,
        m: &Tensor,
        v: &Tensor,
        s: &AdamStep,
    ) -> Result<(Vec<T>, Vec<f32>, Vec<f32>)> {
        let (w, g, m, v) = (
            w.contiguous()?,
            g.contiguous()?,
            m.contiguous()?,
            v.contiguous()?,
        );
        read::<T, _>(&w, |ws, wl| {
            read::<T, _>(&g, |gs, gl| {
                read::<f32, _>(&m, |ms, ml| {
                    read::<f32, _>(&v, |vs, vl| {
                        let (ws, gs) = (
                            contiguous_slice(ws, wl, "adamw")?,
                            contiguous_slice(gs, gl, "adamw")?,
                        );
                        let (ms, vs) = (
                            contiguous_slice(ms, ml, "adamw")?,
                            contiguous_slice(vs, vl, "adamw")?,
                        );
                        if gs.len() != ws.len() || ms.len() != ws.len() || vs.len() != ws.len() {
                            bail!("adamw: weight, gradient and moments differ in size");
                        }
                        let n = ws.len();
                        let (mut nw, mut nm, mut nv) =
                            (vec![T::zero(); n], vec![0f32; n], vec![0f32; n]);
                        const C: usize = 1 << 14;
                        nw.par_chunks_mut(C)
                            .zip(nm.par_chunks_mut(C).zip(nv.par_chunks_mut(C)))
                            .enumerate()
                            .for_each(|(c, (nw, (nm, nv)))| {
                                let o = c * C;
                                for i in 0..nw.len() {
                                    let gi = gs[o + i].to_f64() * s.grad_scale;
                                    let mi = s.beta1 * ms[o + i] as f64 + (1.0 - s.beta1) * gi;
                                    let vi = s.beta2 * vs[o + i] as f64 + (1.0 - s.beta2) * gi * gi;
                                    let wi = ws[o + i].to_f64();
                                    let upd = (mi / s.bc1) / ((vi / s.bc2).sqrt() + s.eps)
                                        + s.weight_decay * wi;
                                    nw[i] = T::from_f64(wi - s.lr * upd);
                                    nm[i] = mi as f32;
                                    nv[i] = vi as f32;
                                }
                            });
                        Ok((nw, nm, nv))
                    })
                })
            })
        })
    }
    let dev = w.device();
    let (nw, nm, nv) = match w.dtype() {
        DType::F32 => {
            let (a, b, c) = run::<f32>(w, g, m, v, s)?;
            (Tensor::from_vec(a, w.shape(), dev)?, b, c)
        }
        _ => {
            let (a, b, c) = run::<f64>(w, g, m, v, s)?;
            (Tensor::from_vec(a, w.shape(), dev)?, b, c)
        }
    };
    Ok(Some((
        nw,
        Tensor::from_vec(nm, m.shape(), dev)?,
        Tensor::from_vec(nv, v.shape(), dev)?,
    )))
}
