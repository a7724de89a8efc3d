//! Log-probabilities of target tokens: log-softmax and gather in one pass.

use super::kernel::{contiguous_slice, fusable, read, Float, ROWS};
use super::reference::token_logprobs_plain;
use crate::ops::Result;
use candle_core::{bail, CpuStorage, CustomOp2, DType, Layout, Shape, Tensor, D};
use rayon::prelude::*;

struct TokenLogprobs;

impl TokenLogprobs {
    fn forward<T: Float>(x: &[T], targets: &[u32], v: usize) -> Result<Vec<T>> {
        if let Some(&t) = targets.iter().find(|&&t| t as usize >= v) {
            bail!("target token {t} outside a vocabulary of {v}");
        }
        let mut out = vec![T::zero(); targets.len()];
        out.par_chunks_mut(ROWS)
            .zip(x.par_chunks(v * ROWS).zip(targets.par_chunks(ROWS)))
            .for_each(|(o, (x, tg))| {
                let mut e = vec![T::zero(); v];
                for ((o, row), &t) in o.iter_mut().zip(x.chunks(v)).zip(tg) {
                    let max = row
                        .iter()
                        .copied()
                        .fold(T::neg_infinity(), num_traits::Float::max);
                    e.iter_mut().zip(row).for_each(|(e, &z)| *e = z - max);
                    T::exp_in_place(&mut e);
                    let sum = e.iter().fold(T::zero(), |a, &z| a + z);
                    *o = row[t as usize] - max - sum.ln();
                }
            });
        Ok(out)
    }

    /// `d logits = g · (onehot(target) − softmax)`, with the log-normaliser recovered from the
    /// result: `lse = logits[target] − logp`.
    fn backward<T: Float>(x: &[T], targets: &[u32], res: &[T], g: &[T], v: usize) -> Vec<T> {
        let mut dx = vec![T::zero(); x.len()];
        dx.par_chunks_mut(v * ROWS)
            .zip(x.par_chunks(v * ROWS))
            .zip(
                targets
                    .par_chunks(ROWS)
                    .zip(res.par_chunks(ROWS).zip(g.par_chunks(ROWS))),
            )
            .for_each(|((dx, x), (tg, (res, g)))| {
                for ((((dx, row), &t), &r), &g) in
                    dx.chunks_mut(v).zip(x.chunks(v)).zip(tg).zip(res).zip(g)
                {
                    let lse = row[t as usize] - r;
                    dx.iter_mut().zip(row).for_each(|(d, &z)| *d = z - lse);
                    T::exp_in_place(dx);
                    dx.iter_mut().for_each(|d| *d *= -g);
                    dx[t as usize] += g;
                }
            });
        dx
    }
}

fn u32_slice<'a>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [u32]> {
    match s {
        CpuStorage::U32(t) => match l.contiguous_offsets() {
            Some((a, b)) => Ok(&t[a..b]),
            None => bail!("token log-probabilities: targets must be contiguous"),
        },
        _ => bail!("token log-probabilities: targets must be u32"),
    }
}

impl CustomOp2 for TokenLogprobs {
    fn name(&self) -> &'static str {
        "fused-token-logprobs"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (n, v) = l1.shape().dims2()?;
        let tg = u32_slice(s2, l2)?;
        if tg.len() != n {
            bail!("token log-probabilities: {} targets for {n} rows", tg.len());
        }
        let out = match s1 {
            CpuStorage::F32(x) => CpuStorage::F32(Self::forward(
                contiguous_slice(x, l1, "log-probabilities")?,
                tg,
                v,
            )?),
            CpuStorage::F64(x) => CpuStorage::F64(Self::forward(
                contiguous_slice(x, l1, "log-probabilities")?,
                tg,
                v,
            )?),
            _ => bail!("token log-probabilities: logits must be f32 or f64"),
        };
        Ok((out, Shape::from(n)))
    }

    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (_, v) = logits.dims2()?;
        let tg = targets.to_vec1::<u32>()?;
        let res = res.contiguous()?;
        let grad = grad.contiguous()?;
        macro_rules! run {
            ($ty:ty) => {{
                let dx = read::<$ty, _>(logits, |xs, xl| {
                    read::<$ty, _>(&res, |rs, rl| {
                        read::<$ty, _>(&grad, |gs, gl| {
                            Ok(Self::backward(
                                contiguous_slice(xs, xl, "log-probabilities")?,
                                &tg,
                                contiguous_slice(rs, rl, "log-probabilities")?,
                                contiguous_slice(gs, gl, "log-probabilities")?,
                                v,
                            ))
                        })
                    })
                })?;
                Tensor::from_vec(dx, logits.shape(), logits.device())?
            }};
        }
        let dx = match logits.dtype() {
            DType::F32 => run!(f32),
            DType::F64 => run!(f64),
            other => bail!("token log-probabilities: unsupported dtype {other:?}"),
        };
        Ok((Some(dx), None))
    }
}

/// `log softmax(logits)[target]` for logits `[…, V]` and u32 targets `[…]`; returns `[…]`.
pub fn token_logprobs(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let v = logits.dim(D::Minus1)?;
    if fusable(logits) && targets.device().is_cpu() && targets.dtype() == DType::U32 {
        let flat = logits.reshape(((), v))?.contiguous()?;
        let tg = targets.flatten_all()?.contiguous()?;
        return flat.apply_op2(&tg, TokenLogprobs)?.reshape(targets.shape());
    }
    token_logprobs_plain(logits, targets)
}
