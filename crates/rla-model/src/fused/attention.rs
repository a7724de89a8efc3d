//! Attention: grouped-query, causal or with an additive mask, reading keys and values in any
//! layout, with one small GEMM per head.

use super::kernel::{fusable, read, Float, Out};
use super::reference::attention_plain;
use super::tables::{AttentionMask, Mask};
use crate::ops::Result;
use candle_core::{bail, CpuStorage, CustomOp3, DType, Layout, Shape, Tensor};
use rayon::prelude::*;
use std::sync::Arc;

/// A strided 4-D view: start offset and strides.
#[derive(Clone, Copy, Debug)]
struct View {
    off: usize,
    st: [usize; 4],
}

impl View {
    fn of(l: &Layout) -> Result<(View, [usize; 4])> {
        let (d, s) = (l.dims(), l.stride());
        if d.len() != 4 {
            bail!("fused attention expects 4-D tensors, got {:?}", d);
        }
        Ok((
            View {
                off: l.start_offset(),
                st: [s[0], s[1], s[2], s[3]],
            },
            [d[0], d[1], d[2], d[3]],
        ))
    }

    /// Offset of the matrix `[a, b, ·, ·]`.
    fn at(&self, a: usize, b: usize) -> usize {
        self.off + a * self.st[0] + b * self.st[1]
    }
}

/// `dst[m×n] = (dst if acc) + alpha · lhs[m×k] · rhs[k×n]`, every matrix given by a pointer and
/// its (row, column) strides; single-threaded (the callers parallelise over heads).
#[allow(clippy::too_many_arguments)]
unsafe fn mm<T: Float>(
    (m, n, k): (usize, usize, usize),
    dst: *mut T,
    (d_rs, d_cs): (usize, usize),
    acc: bool,
    lhs: *const T,
    (l_rs, l_cs): (usize, usize),
    rhs: *const T,
    (r_rs, r_cs): (usize, usize),
    alpha: T,
) {
    gemm::gemm(
        m,
        n,
        k,
        dst,
        d_cs as isize,
        d_rs as isize,
        acc,
        lhs,
        l_cs as isize,
        l_rs as isize,
        rhs,
        r_cs as isize,
        r_rs as isize,
        T::one(),
        alpha,
        false,
        false,
        false,
        gemm::Parallelism::None,
    )
}

/// `softmax(scale · q kᵀ + mask) v` per head; query head h reads key/value head `h / (H / KV)`.
/// Without a mask, query i sees keys `0 ..= i + S − T` (causal, after any cached keys).
struct Attention {
    scale: f64,
    mask: Option<Arc<Mask>>,
}

struct Dims {
    b: usize,
    h: usize,
    kv: usize,
    t: usize,
    s: usize,
    d: usize,
}

impl Attention {
    fn dims(&self, q: &[usize; 4], k: &[usize; 4], v: &[usize; 4]) -> Result<Dims> {
        let (b, h, t, d) = (q[0], q[1], q[2], q[3]);
        let (kv, s) = (k[1], k[2]);
        if k[0] != b || k[3] != d || v != k || kv == 0 || h % kv != 0 {
            bail!("fused attention: q {q:?}, k {k:?} and v {v:?} do not fit together");
        }
        if let Some(m) = &self.mask {
            let rows = if m.per_batch { b } else { 1 };
            if m.data.len() != rows * t * s {
                bail!("fused attention: the mask does not match [{b}, 1, {t}, {s}]");
            }
        }
        Ok(Dims { b, h, kv, t, s, d })
    }

    /// Query rows `i0..i1` and the keys they may see: with a causal mask (or none) the keys up to
    /// the block's last query, else all.
    fn keys(&self, dm: &Dims, i1: usize) -> usize {
        let causal = self.mask.as_ref().is_none_or(|m| m.causal);
        if causal {
            (i1 + dm.s - dm.t).min(dm.s)
        } else {
            dm.s
        }
    }

    /// Fills rows `i0..i1` of `p` (`[T, S]`, row-major) with the attention probabilities of head
    /// (b, h) over the first `kmax` keys ([`Attention::keys`]); the keys past `kmax` are never
    /// read.
    #[allow(clippy::too_many_arguments)]
    fn probs<T: Float>(
        &self,
        dm: &Dims,
        b: usize,
        (i0, i1, kmax): (usize, usize, usize),
        qp: *const T,
        qv: View,
        kp: *const T,
        kv: View,
        p: &mut [T],
    ) {
        let (t, s) = (dm.t, dm.s);
        unsafe {
            mm(
                (i1 - i0, kmax, dm.d),
                p.as_mut_ptr().add(i0 * s),
                (s, 1),
                false,
                qp.add(i0 * qv.st[2]),
                (qv.st[2], qv.st[3]),
                kp,
                (kv.st[3], kv.st[2]),
                T::from_f64(self.scale),
            );
        }
        let off = s - t;
        for i in i0..i1 {
            let row = &mut p[i * s..i * s + kmax];
            let end = match &self.mask {
                Some(m) => {
                    let base = (if m.per_batch { b } else { 0 } * t + i) * s;
                    for (x, &a) in row.iter_mut().zip(&m.data[base..base + kmax]) {
                        *x += T::from_f64(a as f64);
                    }
                    kmax
                }
                None => (i + off + 1).min(kmax),
            };
            let (live, dead) = row.split_at_mut(end);
            dead.fill(T::zero());
            let max = live
                .iter()
                .copied()
                .fold(T::neg_infinity(), num_traits::Float::max);
            live.iter_mut().for_each(|x| *x -= max);
            T::exp_in_place(live);
            let sum = live.iter().fold(T::zero(), |a, &x| a + x);
            let inv = T::one() / sum;
            live.iter_mut().for_each(|x| *x *= inv);
        }
    }

    /// The blocks of query rows the kernel works in.
    fn blocks(t: usize) -> impl Iterator<Item = (usize, usize)> {
        const ROWS: usize = 32;
        (0..t.div_ceil(ROWS)).map(move |k| (k * ROWS, ((k + 1) * ROWS).min(t)))
    }

    fn forward<T: Float>(
        &self,
        q: &[T],
        ql: &Layout,
        k: &[T],
        kl: &Layout,
        v: &[T],
        vl: &Layout,
    ) -> Result<(Vec<T>, Shape)> {
        let (qv, qd) = View::of(ql)?;
        let (kv, kd) = View::of(kl)?;
        let (vv, vd) = View::of(vl)?;
        let dm = self.dims(&qd, &kd, &vd)?;
        let (t, s, d, h) = (dm.t, dm.s, dm.d, dm.h);
        let rep = dm.h / dm.kv;
        let mut out = vec![T::zero(); dm.b * t * h * d];
        let o = Out(out.as_mut_ptr());
        (0..dm.b * h).into_par_iter().for_each_init(
            || vec![T::zero(); t * s],
            |p, unit| {
                let (b, hh) = (unit / h, unit % h);
                let qp = q[qv.at(b, hh)..].as_ptr();
                let kp = k[kv.at(b, hh / rep)..].as_ptr();
                let vp = v[vv.at(b, hh / rep)..].as_ptr();
                for (i0, i1) in Self::blocks(t) {
                    let kmax = self.keys(&dm, i1);
                    self.probs(&dm, b, (i0, i1, kmax), qp, qv, kp, kv, p);
                    unsafe {
                        // out is [B, T, H, D]: head (b, hh) is rows b·T·H·D + i·H·D + hh·D
                        mm(
                            (i1 - i0, d, kmax),
                            o.get().add(b * t * h * d + i0 * h * d + hh * d),
                            (h * d, 1),
                            false,
                            p.as_ptr().add(i0 * s),
                            (s, 1),
                            vp,
                            (vv.st[2], vv.st[3]),
                            T::one(),
                        );
                    }
                }
            },
        );
        Ok((out, Shape::from((dm.b, t, h, d))))
    }

    /// Gradients of q, k and v (contiguous `[B, T, H, D]` for q, `[B, KV, S, D]` for k and v).
    #[allow(clippy::too_many_arguments)]
    fn backward<T: Float>(
        &self,
        q: &[T],
        ql: &Layout,
        k: &[T],
        kl: &Layout,
        v: &[T],
        vl: &Layout,
        o: &[T],
        g: &[T],
    ) -> Result<(Vec<T>, Vec<T>, Vec<T>)> {
        let (qv, qd) = View::of(ql)?;
        let (kv, kd) = View::of(kl)?;
        let (vv, vd) = View::of(vl)?;
        let dm = self.dims(&qd, &kd, &vd)?;
        let (t, s, d, h) = (dm.t, dm.s, dm.d, dm.h);
        let rep = h / dm.kv;
        let scale = T::from_f64(self.scale);
        let mut dq = vec![T::zero(); dm.b * t * h * d];
        let mut dk = vec![T::zero(); dm.b * dm.kv * s * d];
        let mut dv = vec![T::zero(); dm.b * dm.kv * s * d];
        let (dqp, dkp, dvp) = (
            Out(dq.as_mut_ptr()),
            Out(dk.as_mut_ptr()),
            Out(dv.as_mut_ptr()),
        );
        (0..dm.b * dm.kv).into_par_iter().for_each_init(
            || {
                (
                    vec![T::zero(); t * s],
                    vec![T::zero(); t * s],
                    vec![T::zero(); t],
                )
            },
            |(p, dp, delta), unit| {
                let (b, kh) = (unit / dm.kv, unit % dm.kv);
                let kp = k[kv.at(b, kh)..].as_ptr();
                let vp = v[vv.at(b, kh)..].as_ptr();
                let dk_u = unsafe { dkp.get().add(unit * s * d) };
                let dv_u = unsafe { dvp.get().add(unit * s * d) };
                for r in 0..rep {
                    let hh = kh * rep + r;
                    let qp = q[qv.at(b, hh)..].as_ptr();
                    let base = b * t * h * d + hh * d; // [B, T, H, D] rows of this head
                    let gp = g[base..].as_ptr();
                    for (i0, i1) in Self::blocks(t) {
                        let kmax = self.keys(&dm, i1);
                        let rows = i1 - i0;
                        self.probs(&dm, b, (i0, i1, kmax), qp, qv, kp, kv, p);
                        for (i, di) in delta.iter_mut().enumerate().take(i1).skip(i0) {
                            let row = base + i * h * d;
                            *di = g[row..row + d]
                                .iter()
                                .zip(&o[row..row + d])
                                .fold(T::zero(), |a, (&x, &y)| a + x * y);
                        }
                        let gb = unsafe { gp.add(i0 * h * d) };
                        unsafe {
                            // dV += Pᵀ dO (dV starts at zero)
                            mm(
                                (kmax, d, rows),
                                dv_u,
                                (d, 1),
                                true,
                                p.as_ptr().add(i0 * s),
                                (1, s),
                                gb,
                                (h * d, 1),
                                T::one(),
                            );
                            // dP = dO Vᵀ
                            mm(
                                (rows, kmax, d),
                                dp.as_mut_ptr().add(i0 * s),
                                (s, 1),
                                false,
                                gb,
                                (h * d, 1),
                                vp,
                                (vv.st[3], vv.st[2]),
                                T::one(),
                            );
                        }
                        // dS = P ⊙ (dP − δ)
                        for i in i0..i1 {
                            let di = delta[i];
                            for (x, &pp) in dp[i * s..i * s + kmax]
                                .iter_mut()
                                .zip(&p[i * s..i * s + kmax])
                            {
                                *x = pp * (*x - di);
                            }
                        }
                        unsafe {
                            // dQ = scale · dS K
                            mm(
                                (rows, d, kmax),
                                dqp.get().add(base + i0 * h * d),
                                (h * d, 1),
                                false,
                                dp.as_ptr().add(i0 * s),
                                (s, 1),
                                kp,
                                (kv.st[2], kv.st[3]),
                                scale,
                            );
                            // dK += scale · dSᵀ Q (dK starts at zero)
                            mm(
                                (kmax, d, rows),
                                dk_u,
                                (d, 1),
                                true,
                                dp.as_ptr().add(i0 * s),
                                (1, s),
                                qp.add(i0 * qv.st[2]),
                                (qv.st[2], qv.st[3]),
                                scale,
                            );
                        }
                    }
                }
            },
        );
        Ok((dq, dk, dv))
    }
}

impl CustomOp3 for Attention {
    fn name(&self) -> &'static str {
        "fused-attention"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        match (s1, s2, s3) {
            (CpuStorage::F32(q), CpuStorage::F32(k), CpuStorage::F32(v)) => {
                let (o, sh) = self.forward(q, l1, k, l2, v, l3)?;
                Ok((CpuStorage::F32(o), sh))
            }
            (CpuStorage::F64(q), CpuStorage::F64(k), CpuStorage::F64(v)) => {
                let (o, sh) = self.forward(q, l1, k, l2, v, l3)?;
                Ok((CpuStorage::F64(o), sh))
            }
            _ => bail!("fused attention: q, k and v must all be f32 or all f64"),
        }
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let res = res.contiguous()?;
        let grad = grad.contiguous()?;
        let (b, h, t, d) = q.dims4()?;
        let (_, kvh, s, _) = k.dims4()?;
        let dev = q.device();
        macro_rules! run {
            ($ty:ty) => {{
                let (dq, dk, dv) = read::<$ty, _>(q, |qs, ql| {
                    read::<$ty, _>(k, |ks, kl| {
                        read::<$ty, _>(v, |vs, vl| {
                            read::<$ty, _>(&res, |os, ol| {
                                read::<$ty, _>(&grad, |gs, gl| {
                                    self.backward(
                                        qs,
                                        ql,
                                        ks,
                                        kl,
                                        vs,
                                        vl,
                                        &os[ol.start_offset()..],
                                        &gs[gl.start_offset()..],
                                    )
                                })
                            })
                        })
                    })
                })?;
                (
                    Tensor::from_vec(dq, (b, t, h, d), dev)?.transpose(1, 2)?,
                    Tensor::from_vec(dk, (b, kvh, s, d), dev)?,
                    Tensor::from_vec(dv, (b, kvh, s, d), dev)?,
                )
            }};
        }
        let (dq, dk, dv) = match q.dtype() {
            DType::F32 => run!(f32),
            DType::F64 => run!(f64),
            other => bail!("fused attention: unsupported dtype {other:?}"),
        };
        Ok((Some(dq), Some(dk), Some(dv)))
    }
}

/// Attention of queries `q` `[B, H, T, D]` over keys and values `[B, KV, S, D]` (H a multiple of
/// KV; any strides), scaled by `scale`, with an additive mask `[B or 1, 1, T, S]` or, without one,
/// causal (query i sees keys up to `i + S − T`). Returns `[B, T, H, D]`.
pub fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&AttentionMask>,
    scale: f64,
) -> Result<Tensor> {
    let (b, _, t, _) = q.dims4()?;
    let s = k.dim(2)?;
    if let Some(m) = mask {
        let (mb, one, mt, ms) = m.tensor.dims4()?;
        if one != 1 || mt != t || ms != s || (mb != b && mb != 1) {
            bail!(
                "attention mask {:?} does not fit [{b}, 1, {t}, {s}]",
                m.tensor.dims()
            );
        }
    }
    let on_cpu = fusable(q)
        && q.dtype() == k.dtype()
        && k.dtype() == v.dtype()
        && k.device().is_cpu()
        && v.device().is_cpu();
    let host = mask.and_then(|m| m.host.clone());
    if on_cpu && (mask.is_none() || host.is_some()) {
        return q.apply_op3(k, v, Attention { scale, mask: host });
    }
    attention_plain(q, k, v, mask.map(|m| &m.tensor), scale)
}
