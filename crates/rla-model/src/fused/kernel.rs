//! What every kernel shares: the element types, access to a tensor's CPU data, the custom op of a
//! two-input kernel, a pointer for workers that write disjoint elements, and the rows per
//! parallel task of the row-wise kernels.

use super::exp::exp_f32_slice;
use crate::ops::Result;
use candle_core::{bail, CpuStorage, CustomOp2, DType, Layout, Shape, Storage, Tensor, WithDType};

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

/// Whether the fused kernels handle this tensor (f32 or f64 on the CPU).
pub fn fusable(t: &Tensor) -> bool {
    t.device().is_cpu() && matches!(t.dtype(), DType::F32 | DType::F64)
}

/// Runs `f` on the CPU data of `t` (the whole storage; index it with the layout).
pub(crate) fn read<T: Float, R>(
    t: &Tensor,
    f: impl FnOnce(&[T], &Layout) -> Result<R>,
) -> Result<R> {
    let (s, l) = t.storage_and_layout();
    match &*s {
        Storage::Cpu(c) => f(c.as_slice::<T>()?, l),
        _ => bail!("fused kernels run on the CPU only"),
    }
}

pub(crate) fn contiguous_slice<'a, T: Float>(
    s: &'a [T],
    l: &Layout,
    what: &str,
) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s[a..b]),
        None => bail!("fused {what}: expected a contiguous tensor"),
    }
}

/// A fused kernel of two inputs of one dtype, read as contiguous data, with the gradients of both.
pub(super) trait Binary: Send + Sync + 'static {
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
pub(super) struct Op2<K>(pub(super) K);

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
pub(super) struct Out<T>(pub(super) *mut T);
unsafe impl<T> Send for Out<T> {}
unsafe impl<T> Sync for Out<T> {}

impl<T> Out<T> {
    /// The pointer (a method, so that closures capture the whole `Send` wrapper).
    pub(super) fn get(self) -> *mut T {
        self.0
    }
}

/// Rows per parallel task of the row-wise kernels.
pub(super) const ROWS: usize = 32;
