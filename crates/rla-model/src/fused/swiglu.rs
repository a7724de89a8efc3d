//! The SwiGLU gate.

use super::kernel::{fusable, Binary, Float, Op2};
use super::reference::swiglu_plain;
use crate::ops::Result;
use candle_core::{bail, Shape, Tensor};
use rayon::prelude::*;

/// `silu(g) ⊙ u`.
struct SwiGlu;

impl SwiGlu {
    fn gate<T: Float>(g: &[T], u: &[T]) -> Vec<T> {
        let mut out = vec![T::zero(); g.len()];
        out.par_chunks_mut(1 << 14)
            .zip(g.par_chunks(1 << 14).zip(u.par_chunks(1 << 14)))
            .for_each(|(o, (g, u))| {
                // σ(g) = 1 / (1 + e^−g)
                o.iter_mut().zip(g).for_each(|(o, &g)| *o = -g);
                T::exp_in_place(o);
                for ((o, &g), &u) in o.iter_mut().zip(g).zip(u) {
                    *o = g * u / (T::one() + *o);
                }
            });
        out
    }

    /// `dg = dy·u·σ(g)·(1 + g·(1 − σ(g)))`, `du = dy·g·σ(g)`.
    fn grads<T: Float>(g: &[T], u: &[T], dy: &[T]) -> (Vec<T>, Vec<T>) {
        let mut dg = vec![T::zero(); g.len()];
        let mut du = vec![T::zero(); g.len()];
        const C: usize = 1 << 14;
        dg.par_chunks_mut(C)
            .zip(du.par_chunks_mut(C))
            .zip(g.par_chunks(C).zip(u.par_chunks(C).zip(dy.par_chunks(C))))
            .for_each(|((dg, du), (g, (u, dy)))| {
                dg.iter_mut().zip(g).for_each(|(d, &g)| *d = -g);
                T::exp_in_place(dg);
                for i in 0..g.len() {
                    let s = T::one() / (T::one() + dg[i]);
                    dg[i] = dy[i] * u[i] * s * (T::one() + g[i] * (T::one() - s));
                    du[i] = dy[i] * g[i] * s;
                }
            });
        (dg, du)
    }
}

impl Binary for SwiGlu {
    fn name(&self) -> &'static str {
        "fused swiglu"
    }

    fn shape(&self, g: &Shape, u: &Shape) -> Result<Shape> {
        if g != u {
            bail!("swiglu: shapes {:?} and {:?} differ", g.dims(), u.dims());
        }
        Ok(g.clone())
    }

    fn forward<T: Float>(&self, g: &[T], u: &[T], _: &Shape, _: &Shape) -> Vec<T> {
        Self::gate(g, u)
    }

    fn backward<T: Float>(
        &self,
        g: &[T],
        u: &[T],
        dy: &[T],
        _: &Shape,
        _: &Shape,
    ) -> (Vec<T>, Vec<T>) {
        Self::grads(g, u, dy)
    }
}

/// The SwiGLU gate `silu(g) ⊙ u`.
pub fn swiglu(g: &Tensor, u: &Tensor) -> Result<Tensor> {
    if fusable(g) && g.dtype() == u.dtype() && u.device().is_cpu() && g.dims() == u.dims() {
        return g.contiguous()?.apply_op2(&u.contiguous()?, Op2(SwiGlu));
    }
    swiglu_plain(g, u)
}
