//! Fused CPU kernels with their own backward passes: attention (grouped-query, causal or with an
//! additive mask, reading keys and values in any layout), RMSNorm, and the log-probability of
//! target tokens (log-softmax and gather in one pass).
//!
//! A chain of plain tensor ops allocates and traverses a fresh tensor per op, forward and
//! backward; these kernels do each job in one pass over the data (attention with one small GEMM
//! per head instead of a batched product per op). Each is a candle custom op whose `bwd` returns
//! the exact gradient, so training goes through them. They run for f32 and f64 tensors on the CPU;
//! on other devices and dtypes the plain-op versions run instead, and the tests check that both
//! agree in value and in gradient.

use crate::model::{log_softmax_last, softmax_last, Result};
use candle_core::{
    bail, CpuStorage, CustomOp2, CustomOp3, DType, Layout, Shape, Storage, Tensor, WithDType, D,
};
use rayon::prelude::*;
use std::sync::Arc;

/// The element types the kernels run in.
pub trait Float:
    WithDType + num_traits::Float + num_traits::NumAssign + Send + Sync + 'static
{
    /// `x ← exp(x)` over a slice.
    fn exp_in_place(xs: &mut [Self]) {
        xs.iter_mut().for_each(|x| *x = x.exp());
    }
}

impl Float for f32 {
    fn exp_in_place(xs: &mut [f32]) {
        exp_f32_slice(xs)
    }
}

impl Float for f64 {}

/// `exp` of one f32 to about one unit in the last place (Cephes' polynomial after the reduction
/// `x = n·ln 2 + r`), written so that a loop over a slice vectorises; below −87.3 it is 0 (so
/// that masked −∞ scores vanish), above 88.7 infinite.
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding and subtracting it rounds to an integer
    const LO: f32 = -87.336_55;
    const HI: f32 = 88.722_83;
    let xc = x.clamp(LO, HI);
    let n = (xc * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let r = xc - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    // 2ⁿ from the exponent bits (n + 127 lies in [1, 254] after the clamp)
    let y = e * f32::from_bits((((n + 127.0) as i32) << 23) as u32);
    if x < LO {
        0.0
    } else if x > HI {
        f32::INFINITY
    } else {
        y
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_f32_slice_avx2(xs: &mut [f32]) {
    xs.iter_mut().for_each(|x| *x = exp_f32(*x));
}

/// `x ← exp(x)` over f32s, with AVX2 where the CPU has it.
pub fn exp_f32_slice(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the enabled features
        return unsafe { exp_f32_slice_avx2(xs) };
    }
    xs.iter_mut().for_each(|x| *x = exp_f32(*x));
}

/// Whether the fused kernels handle this tensor (f32 or f64 on the CPU).
pub fn fusable(t: &Tensor) -> bool {
    t.device().is_cpu() && matches!(t.dtype(), DType::F32 | DType::F64)
}

/// Runs `f` on the CPU data of `t` (the whole storage; index it with the layout).
fn read<T: Float, R>(t: &Tensor, f: impl FnOnce(&[T], &Layout) -> Result<R>) -> Result<R> {
    let (s, l) = t.storage_and_layout();
    match &*s {
        Storage::Cpu(c) => f(c.as_slice::<T>()?, l),
        _ => bail!("fused kernels run on the CPU only"),
    }
}

fn contiguous_slice<'a, T: Float>(s: &'a [T], l: &Layout, what: &str) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s[a..b]),
        None => bail!("fused {what}: expected a contiguous tensor"),
    }
}

/// A fused kernel of two inputs of one dtype, read as contiguous data, with the gradients of both.
trait Binary: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    /// The output's shape, once the inputs are checked.
    fn shape(&self, a: &Shape, b: &Shape) -> Result<Shape>;
    fn forward<T: Float>(&self, a: &[T], b: &[T], sa: &Shape, sb: &Shape) -> Vec<T>;
    fn backward<T: Float>(
        &self,
        a: &[T],
        b: &[T],
        g: &[T],
        sa: &Shape,
        sb: &Shape,
    ) -> (Vec<T>, Vec<T>);
}

/// The custom op of a [`Binary`] kernel.
struct Op2<K>(K);

impl<K: Binary> CustomOp2 for Op2<K> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (k, name) = (&self.0, self.0.name());
        let shape = k.shape(l1.shape(), l2.shape())?;
        let out = match (s1, s2) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => CpuStorage::F32(k.forward(
                contiguous_slice(a, l1, name)?,
                contiguous_slice(b, l2, name)?,
                l1.shape(),
                l2.shape(),
            )),
            (CpuStorage::F64(a), CpuStorage::F64(b)) => CpuStorage::F64(k.forward(
                contiguous_slice(a, l1, name)?,
                contiguous_slice(b, l2, name)?,
                l1.shape(),
                l2.shape(),
            )),
            _ => bail!("{name}: both inputs must be f32 or both f64"),
        };
        Ok((out, shape))
    }

    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        fn run<T: Float, K: Binary>(
            k: &K,
            a: &Tensor,
            b: &Tensor,
            g: &Tensor,
        ) -> Result<(Tensor, Tensor)> {
            let name = k.name();
            let (da, db) = read::<T, _>(a, |sa, la| {
                read::<T, _>(b, |sb, lb| {
                    read::<T, _>(g, |sg, lg| {
                        Ok(k.backward(
                            contiguous_slice(sa, la, name)?,
                            contiguous_slice(sb, lb, name)?,
                            contiguous_slice(sg, lg, name)?,
                            la.shape(),
                            lb.shape(),
                        ))
                    })
                })
            })?;
            Ok((
                Tensor::from_vec(da, a.shape(), a.device())?,
                Tensor::from_vec(db, b.shape(), b.device())?,
            ))
        }
        let grad = grad.contiguous()?;
        let (da, db) = match a.dtype() {
            DType::F32 => run::<f32, K>(&self.0, a, b, &grad)?,
            DType::F64 => run::<f64, K>(&self.0, a, b, &grad)?,
            other => bail!("{}: unsupported dtype {other:?}", self.0.name()),
        };
        Ok((Some(da), Some(db)))
    }
}

/// A raw pointer shared by workers that write disjoint elements.
#[derive(Clone, Copy)]
struct Out<T>(*mut T);
unsafe impl<T> Send for Out<T> {}
unsafe impl<T> Sync for Out<T> {}

impl<T> Out<T> {
    /// The pointer (a method, so that closures capture the whole `Send` wrapper).
    fn get(self) -> *mut T {
        self.0
    }
}

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

// ---------------------------------------------------------------------------------------------
// Attention

/// An additive attention mask `[B or 1, T, S]` (f32), shared by every head.
#[derive(Debug)]
struct Mask {
    data: Vec<f32>,
    per_batch: bool,
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

    /// Fills `p` (`[T, S]`, row-major) with the attention probabilities of head (b, h).
    #[allow(clippy::too_many_arguments)]
    fn probs<T: Float>(
        &self,
        dm: &Dims,
        b: usize,
        qp: *const T,
        qv: View,
        kp: *const T,
        kv: View,
        p: &mut [T],
    ) {
        let (t, s) = (dm.t, dm.s);
        unsafe {
            mm(
                (t, s, dm.d),
                p.as_mut_ptr(),
                (s, 1),
                false,
                qp,
                (qv.st[2], qv.st[3]),
                kp,
                (kv.st[3], kv.st[2]),
                T::from_f64(self.scale),
            );
        }
        let off = s - t;
        for i in 0..t {
            let row = &mut p[i * s..(i + 1) * s];
            match &self.mask {
                Some(m) => {
                    let base = (if m.per_batch { b } else { 0 } * t + i) * s;
                    for (x, &a) in row.iter_mut().zip(&m.data[base..base + s]) {
                        *x += T::from_f64(a as f64);
                    }
                }
                None => row[(i + off + 1).min(s)..].fill(T::neg_infinity()),
            }
            let max = row
                .iter()
                .copied()
                .fold(T::neg_infinity(), num_traits::Float::max);
            row.iter_mut().for_each(|x| *x -= max);
            T::exp_in_place(row);
            let sum = row.iter().fold(T::zero(), |a, &x| a + x);
            let inv = T::one() / sum;
            row.iter_mut().for_each(|x| *x *= inv);
        }
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
                self.probs(&dm, b, qp, qv, kp, kv, p);
                unsafe {
                    // out is [B, T, H, D]: head (b, hh) is rows b·T·H·D + i·H·D + hh·D
                    mm(
                        (t, d, s),
                        o.get().add(b * t * h * d + hh * d),
                        (h * d, 1),
                        false,
                        p.as_ptr(),
                        (s, 1),
                        vp,
                        (vv.st[2], vv.st[3]),
                        T::one(),
                    );
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
                    self.probs(&dm, b, qp, qv, kp, kv, p);
                    for (i, di) in delta.iter_mut().enumerate() {
                        let row = base + i * h * d;
                        *di = g[row..row + d]
                            .iter()
                            .zip(&o[row..row + d])
                            .fold(T::zero(), |a, (&x, &y)| a + x * y);
                    }
                    unsafe {
                        // dV += Pᵀ dO
                        mm(
                            (s, d, t),
                            dv_u,
                            (d, 1),
                            r > 0,
                            p.as_ptr(),
                            (1, s),
                            gp,
                            (h * d, 1),
                            T::one(),
                        );
                        // dP = dO Vᵀ
                        mm(
                            (t, s, d),
                            dp.as_mut_ptr(),
                            (s, 1),
                            false,
                            gp,
                            (h * d, 1),
                            vp,
                            (vv.st[3], vv.st[2]),
                            T::one(),
                        );
                    }
                    // dS = P ⊙ (dP − δ)
                    for i in 0..t {
                        let di = delta[i];
                        for (x, &pp) in dp[i * s..(i + 1) * s]
                            .iter_mut()
                            .zip(&p[i * s..(i + 1) * s])
                        {
                            *x = pp * (*x - di);
                        }
                    }
                    unsafe {
                        // dQ = scale · dS K
                        mm(
                            (t, d, s),
                            dqp.get().add(base),
                            (h * d, 1),
                            false,
                            dp.as_ptr(),
                            (s, 1),
                            kp,
                            (kv.st[2], kv.st[3]),
                            scale,
                        );
                        // dK += scale · dSᵀ Q
                        mm(
                            (s, d, t),
                            dk_u,
                            (d, 1),
                            r > 0,
                            dp.as_ptr(),
                            (1, s),
                            qp,
                            (qv.st[2], qv.st[3]),
                            scale,
                        );
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

/// An additive attention mask `[B or 1, 1, T, S]`, with its values on the host for the CPU
/// kernel: made once per forward pass and shared by every layer.
pub struct AttentionMask {
    /// The mask.
    pub tensor: Tensor,
    host: Option<Arc<Mask>>,
}

impl AttentionMask {
    /// Wraps a mask tensor `[B or 1, 1, T, S]`.
    pub fn new(tensor: &Tensor) -> Result<AttentionMask> {
        let (mb, ..) = tensor.dims4()?;
        let host = if tensor.device().is_cpu() {
            Some(Arc::new(Mask {
                data: tensor
                    .to_dtype(DType::F32)?
                    .flatten_all()?
                    .to_vec1::<f32>()?,
                per_batch: mb > 1,
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

/// [`attention`] from plain tensor ops (for devices and dtypes without the fused kernel, and as
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
    let acc = crate::model::acc_dtype(q.dtype());
    let scores = (q.contiguous()?.matmul(&k.t()?.contiguous()?)? * scale)?.to_dtype(acc)?;
    let own;
    let mask = match mask {
        Some(m) => m,
        None => {
            own = crate::model::causal_mask(b, t, s - t, q.device())?;
            &own
        }
    };
    let scores = scores.broadcast_add(&mask.to_dtype(acc)?)?;
    let att = softmax_last(&scores)?.to_dtype(q.dtype())?;
    att.matmul(&v.contiguous()?)?.transpose(1, 2)
}

// ---------------------------------------------------------------------------------------------
// RMSNorm

struct RmsNorm {
    eps: f64,
}

/// Rows per parallel task of the row-wise kernels.
const ROWS: usize = 32;

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
    crate::model::rms_norm_plain(x, w, eps)
}

// ---------------------------------------------------------------------------------------------
// Log-probabilities of target tokens

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

/// [`token_logprobs`] from plain tensor ops.
pub fn token_logprobs_plain(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    log_softmax_last(logits)?
        .gather(&targets.unsqueeze(D::Minus1)?, D::Minus1)?
        .squeeze(D::Minus1)
}

// ---------------------------------------------------------------------------------------------
// Rotary embedding

/// Rotary tables of a forward pass: `cos` and `sin` `[B, T, 1, D]` (both halves repeated, as the
/// plain rotate-half formula uses them), with their values on the host for the CPU kernel.
pub struct Rotary {
    /// `[B, T, 1, D]`.
    pub cos: Tensor,
    /// `[B, T, 1, D]`.
    pub sin: Tensor,
    host: Option<Arc<(Vec<f32>, Vec<f32>)>>,
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

/// [`rope`] from plain tensor ops.
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

// ---------------------------------------------------------------------------------------------
// SwiGLU

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

/// [`swiglu`] from plain tensor ops.
pub fn swiglu_plain(g: &Tensor, u: &Tensor) -> Result<Tensor> {
    candle_nn::ops::silu(g)? * u
}

// ---------------------------------------------------------------------------------------------
// Optimiser arithmetic

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

// ---------------------------------------------------------------------------------------------
// Linear projection

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

/// [`linear`] from plain tensor ops.
pub fn linear_plain(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.matmul(&w.t()?)
}
