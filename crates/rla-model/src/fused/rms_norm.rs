//! RMSNorm over the last dimension.

use super::kernel::{fusable, Binary, Float, Op2, ROWS};
use super::reference::rms_norm_plain;
use crate::ops::Result;
use candle_core::{bail, Shape, Tensor};
use rayon::prelude::*;

struct RmsNorm {
    eps: f64,
}

impl RmsNorm {
    fn inv_rms<T: Float>(&self, x: &[T]) -> T {
        let ms = x.iter().fold(T::zero(), |a, &v| a + v * v) / T::from_f64(x.len() as f64);
        T::one() / (ms + T::from_f64(self.eps)).sqrt()
    }

    fn rows<T: Float>(&self, x: &[T], w: &[T]) -> Vec<T> {
        let d = w.len();
        let mut out = vec![T::zero(); x.len()];
        out.par_chunks_mut(d * ROWS)
            .zip(x.par_chunks(d * ROWS))
            .for_each(|(o, x)| {
                for (o, x) in o.chunks_mut(d).zip(x.chunks(d)) {
                    let r = self.inv_rms(x);
                    for ((o, &x), &w) in o.iter_mut().zip(x).zip(w) {
                        *o = x * r * w;
                    }
                }
            });
        out
    }

    fn grads<T: Float>(&self, x: &[T], w: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
        let d = w.len();
        let mut dx = vec![T::zero(); x.len()];
        let dw = dx
            .par_chunks_mut(d * ROWS)
            .zip(x.par_chunks(d * ROWS).zip(g.par_chunks(d * ROWS)))
            .map(|(dx, (x, g))| {
                let mut dw = vec![T::zero(); d];
                for ((dx, x), g) in dx.chunks_mut(d).zip(x.chunks(d)).zip(g.chunks(d)) {
                    let r = self.inv_rms(x);
                    // c = mean(g ⊙ w ⊙ x̂)
                    let mut c = T::zero();
                    for i in 0..d {
                        let xh = x[i] * r;
                        c += g[i] * w[i] * xh;
                        dw[i] += g[i] * xh;
                    }
                    c /= T::from_f64(d as f64);
                    for i in 0..d {
                        dx[i] = r * (g[i] * w[i] - x[i] * r * c);
                    }
                }
                dw
            })
            .collect::<Vec<_>>();
        // the partial sums are added in chunk order, whichever thread computed them, so that the
        // result does not depend on scheduling (runs are reproducible)
        let mut total = vec![T::zero(); d];
        for part in dw {
            total.iter_mut().zip(part).for_each(|(a, b)| *a += b);
        }
        (dx, total)
    }
}

impl Binary for RmsNorm {
    fn name(&self) -> &'static str {
        "fused rms norm"
    }

    fn shape(&self, x: &Shape, w: &Shape) -> Result<Shape> {
        if w.dims() != [*x.dims().last().unwrap_or(&0)] {
            bail!("rms norm: weight {:?} for rows of {:?}", w.dims(), x.dims());
        }
        Ok(x.clone())
    }

    fn forward<T: Float>(&self, x: &[T], w: &[T], _: &Shape, _: &Shape) -> Vec<T> {
        self.rows(x, w)
    }

    fn backward<T: Float>(
        &self,
        x: &[T],
        w: &[T],
        g: &[T],
        _: &Shape,
        _: &Shape,
    ) -> (Vec<T>, Vec<T>) {
        self.grads(x, w, g)
    }
}

/// RMSNorm over the last dimension: `x / sqrt(mean(x²) + ε) · w`.
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f64) -> Result<Tensor> {
    if fusable(x) && x.dtype() == w.dtype() && w.device().is_cpu() {
        // the kernel's `shape` checks the weight against the rows
        return x
            .contiguous()?
            .apply_op2(&w.contiguous()?, Op2(RmsNorm { eps }));
    }
    rms_norm_plain(x, w, eps)
}
