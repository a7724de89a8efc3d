//! The linear projection `x·Wᵀ`.

use super::kernel::{fusable, Binary, Float, Op2};
use super::reference::linear_plain;
use crate::ops::Result;
use candle_core::{bail, Shape, Tensor};

/// `y = x·Wᵀ` for rows `x` `[N, in]` and a weight `[out, in]` (Hugging Face's layout), as one
/// custom op: no transposed copy of the weight enters the autograd graph, and the GEMMs read both
/// operands in place.
struct LinearOp;

/// Rows below which the product is computed as `(W·xᵀ)ᵀ`: with few rows (decoding) the GEMM
/// kernel is 1.5–2× faster with the weight on the left.
const FEW_ROWS: usize = 48;

fn parallelism(flops: usize) -> gemm::Parallelism {
    let n = rayon::current_num_threads();
    if n > 1 && flops > 1 << 17 {
        gemm::Parallelism::Rayon(n)
    } else {
        gemm::Parallelism::None
    }
}

/// `dst[m×n] = lhs[m×k] · rhs[k×n]` with the given (row, column) strides, written whole.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_into<T: Float>(
    (m, n, k): (usize, usize, usize),
    dst: *mut T,
    (d_rs, d_cs): (usize, usize),
    lhs: *const T,
    (l_rs, l_cs): (usize, usize),
    rhs: *const T,
    (r_rs, r_cs): (usize, usize),
) {
    gemm::gemm(
        m,
        n,
        k,
        dst,
        d_cs as isize,
        d_rs as isize,
        false,
        lhs,
        l_cs as isize,
        l_rs as isize,
        rhs,
        r_cs as isize,
        r_rs as isize,
        T::zero(),
        T::one(),
        false,
        false,
        false,
        parallelism(2 * m * n * k),
    )
}

impl LinearOp {
    fn product<T: Float>(x: &[T], w: &[T], n: usize, k: usize, out: usize) -> Vec<T> {
        let mut y = vec![T::zero(); n * out];
        unsafe {
            if n < FEW_ROWS {
                // yᵀ = W·xᵀ, then transposed
                let mut yt = vec![T::zero(); n * out];
                gemm_into(
                    (out, n, k),
                    yt.as_mut_ptr(),
                    (n, 1),
                    w.as_ptr(),
                    (k, 1),
                    x.as_ptr(),
                    (1, k),
                );
                for j in 0..out {
                    for i in 0..n {
                        y[i * out + j] = yt[j * n + i];
                    }
                }
            } else {
                gemm_into(
                    (n, out, k),
                    y.as_mut_ptr(),
                    (out, 1),
                    x.as_ptr(),
                    (k, 1),
                    w.as_ptr(),
                    (1, k),
                );
            }
        }
        y
    }

    /// `dx = g·W` `[N, in]`, `dW = gᵀ·x` `[out, in]`.
    fn grads<T: Float>(
        x: &[T],
        w: &[T],
        g: &[T],
        n: usize,
        k: usize,
        out: usize,
    ) -> (Vec<T>, Vec<T>) {
        let mut dx = vec![T::zero(); n * k];
        let mut dw = vec![T::zero(); out * k];
        unsafe {
            gemm_into(
                (n, k, out),
                dx.as_mut_ptr(),
                (k, 1),
                g.as_ptr(),
                (out, 1),
                w.as_ptr(),
                (k, 1),
            );
            gemm_into(
                (out, k, n),
                dw.as_mut_ptr(),
                (k, 1),
                g.as_ptr(),
                (1, out),
                x.as_ptr(),
                (k, 1),
            );
        }
        (dx, dw)
    }
}

impl Binary for LinearOp {
    fn name(&self) -> &'static str {
        "fused linear"
    }

    fn shape(&self, x: &Shape, w: &Shape) -> Result<Shape> {
        let (n, k) = x.dims2()?;
        let (out, k2) = w.dims2()?;
        if k != k2 {
            bail!("linear: rows of {k} against a weight [{out}, {k2}]");
        }
        Ok(Shape::from((n, out)))
    }

    fn forward<T: Float>(&self, x: &[T], w: &[T], sx: &Shape, sw: &Shape) -> Vec<T> {
        let ((n, k), out) = (sx.dims2().unwrap_or((0, 0)), sw.dims()[0]);
        Self::product(x, w, n, k, out)
    }

    fn backward<T: Float>(
        &self,
        x: &[T],
        w: &[T],
        g: &[T],
        sx: &Shape,
        sw: &Shape,
    ) -> (Vec<T>, Vec<T>) {
        let ((n, k), out) = (sx.dims2().unwrap_or((0, 0)), sw.dims()[0]);
        Self::grads(x, w, g, n, k, out)
    }
}

/// `x·Wᵀ` for rows `x` `[N, in]` and a weight `[out, in]`; returns `[N, out]`.
pub fn linear(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    if fusable(x) && w.dtype() == x.dtype() && w.device().is_cpu() {
        return x.contiguous()?.apply_op2(&w.contiguous()?, Op2(LinearOp));
    }
    linear_plain(x, w)
}
