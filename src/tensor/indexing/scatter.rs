//! The scatter side of the indexing ops: the job builder and the two runners every scatter
//! goes through, and `scatter`, `index_copy`, `index_fill`, each out of place and in place
//! (`_`); the reducing ones are in `reducing.rs`.

use super::check::{at_least_1d, check_range, mismatch, resolve_dim, spread_1d};
use super::engine::sealed::{IndexEngine, ScatterReduceEngine};
use super::engine::{IndexElement, ScatterJob, ScatterReduce};
use super::{narrow_to, IndexBackend};
use crate::element::{Element, Numeric};
use crate::error::Result;
use crate::tensor::repr::{ReadRepr, WriteRepr};
use crate::tensor::{AsView, Backend, Dim, Tensor, TensorView, TensorViewMut};

/// What a scatter writes: a tensor of values or one scalar.
pub(super) enum Values<'a, T: Element, D: Backend> {
    Src(TensorView<'a, T, D>),
    Value(T),
}

/// Whose tensor a scatter writes, which decides when its indices are checked
/// ([`IndexCheck::scatter_needs_check`](super::engine::IndexCheck::scatter_needs_check)).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// The caller's (an in-place op): nothing may be written before every index is known to
    /// be in range.
    Caller,
    /// A tensor the op made and drops on an error (an out-of-place op's result, a step on a
    /// copy): an engine may find bad indices while it writes.
    Op,
}

/// Checks a scatter of `index` (and `src`) into `dst` along `dim` and builds its job. `spread`
/// says the index is 1-D and spreads over `src`'s shape (or, for a scalar, over `dst`'s shape
/// with `dim` of the index's length): the `index_*` ops.
#[allow(clippy::too_many_arguments)]
fn job<'a, T: Element, I: IndexElement, D: IndexEngine<T>>(
    op: &'static str,
    (dst, owner): (&TensorViewMut<'_, T, D>, Owner),
    dim: isize,
    index: TensorView<'a, I, D>,
    values: Values<'a, T, D>,
    spread: bool,
    wrap: bool,
    reduce: ScatterReduce,
) -> Result<ScatterJob<'a, T, I, D>> {
    let rank = dst.rank().max(1);
    let dim = resolve_dim(op, dim, dst.rank())?;
    let mut dst_shape = dst.shape().to_vec();
    if dst_shape.is_empty() {
        dst_shape.push(1);
    }
    let device = dst.repr.device;
    device.check_device(op, index.storage())?;
    let index = if spread {
        // The index spreads over the source's shape (index_add, index_copy) or over `dst`'s
        // with `dim` of its length (index_fill).
        let n = at_least_1d(index.clone())?.numel();
        let shape = match &values {
            Values::Src(s) => {
                let mut want = dst_shape.clone();
                want[dim] = n;
                let got = if s.rank() == 0 {
                    vec![1]
                } else {
                    s.shape().to_vec()
                };
                if got != want {
                    return Err(mismatch(op, &want, &got));
                }
                want
            }
            Values::Value(_) => {
                let mut want = dst_shape.clone();
                want[dim] = n;
                want
            }
        };
        spread_1d(op, index, &shape, dim)?
    } else {
        let index = at_least_1d(index)?;
        if index.rank() != rank {
            return Err(mismatch(op, &dst_shape, index.shape()));
        }
        for d in 0..rank {
            if d != dim && index.shape()[d] > dst_shape[d] {
                return Err(mismatch(op, &dst_shape, index.shape()));
            }
        }
        index
    };
    let (src, value) = match values {
        Values::Src(s) => {
            device.check_device(op, s.storage())?;
            let s = narrow_to(op, at_least_1d(s)?, index.shape(), usize::MAX)?;
            (Some(s), T::ZERO)
        }
        Values::Value(v) => (None, v),
    };
    let range_checked = <D as IndexEngine<T>>::CHECKS.scatter_needs_check(owner == Owner::Op);
    if range_checked && !device.check_indices(op, &index, dim, dst_shape[dim], wrap)? {
        check_range(op, &index, dim, dst_shape[dim], wrap)?;
    }
    Ok(ScatterJob {
        index,
        src,
        value,
        dim,
        wrap,
        reduce,
        range_checked,
        op,
    })
}

/// `dst` with at least one dim (a 0-d destination as `[1]`).
fn dst_1d<'a, T: Element, D: Backend>(
    dst: TensorViewMut<'a, T, D>,
) -> Result<TensorViewMut<'a, T, D>> {
    if dst.rank() == 0 {
        dst.unsqueeze(0)
    } else {
        Ok(dst)
    }
}

/// Runs an assigning scatter into `dst`.
pub(super) fn assign<T: Element, I: IndexElement, D: IndexEngine<T>>(
    op: &'static str,
    (dst, owner): (TensorViewMut<'_, T, D>, Owner),
    dim: isize,
    index: TensorView<'_, I, D>,
    values: Values<'_, T, D>,
    spread: bool,
    wrap: bool,
) -> Result<()> {
    let mut dst = dst_1d(dst)?;
    let job = job(
        op,
        (&dst, owner),
        dim,
        index,
        values,
        spread,
        wrap,
        ScatterReduce::Assign,
    )?;
    let device = dst.repr.device;
    device.scatter_assign(&job, &mut dst)
}

/// Runs a reducing scatter (not `Mean`) into `dst`.
#[allow(clippy::too_many_arguments)]
pub(super) fn reduce<T: Numeric, I: IndexElement, D: ScatterReduceEngine<T>>(
    op: &'static str,
    (dst, owner): (TensorViewMut<'_, T, D>, Owner),
    dim: isize,
    index: TensorView<'_, I, D>,
    values: Values<'_, T, D>,
    spread: bool,
    reduce: ScatterReduce,
) -> Result<()> {
    let mut dst = dst_1d(dst)?;
    let job = job(op, (&dst, owner), dim, index, values, spread, false, reduce)?;
    let device = dst.repr.device;
    device.scatter_reduce(&job, &mut dst)
}

impl<T: Element, D: IndexBackend<T>, S: WriteRepr<T, D>> Tensor<T, D, S> {
    /// PyTorch's `self.scatter_(dim, index, src)`: `self[p with p[dim] = index[p]] = src[p]`
    /// for every position `p` of `index` (same rank as `self`; no larger than `src` in any
    /// dim, nor than `self` in any dim but `dim`). With duplicate indices one source wins:
    /// the last in row-major order on the CPU, an unspecified one on the GPU.
    ///
    /// # Errors
    /// [`LayoutError::IndexOutOfRange`](crate::error::LayoutError::IndexOutOfRange) (nothing
    /// written), `LayoutError::ShapeMismatch`,
    /// `LayoutError::DimOutOfRange`, the device's errors.
    pub fn scatter_<I: IndexElement>(
        &mut self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
    ) -> Result<()> {
        let values = Values::Src(src.view());
        let dst = (self.view_mut(), Owner::Caller);
        assign(
            "scatter_",
            dst,
            dim.to_isize(),
            index.view(),
            values,
            false,
            false,
        )
    }

    /// PyTorch's `self.scatter_(dim, index, value)`: [`Tensor::scatter_`] with one scalar.
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn scatter_value_<I: IndexElement>(
        &mut self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        value: T,
    ) -> Result<()> {
        let values = Values::Value(value);
        let dst = (self.view_mut(), Owner::Caller);
        assign(
            "scatter_",
            dst,
            dim.to_isize(),
            index.view(),
            values,
            false,
            false,
        )
    }

    /// PyTorch's `self.index_copy_(dim, index, src)`: the slices of `src` along `dim` copied
    /// to the positions of the 1-D `index` (`src` is `self`'s shape with `dim` of
    /// `index`'s length). Indices in `[0, size(dim))`; with duplicates one slice wins.
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn index_copy_<I: IndexElement>(
        &mut self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
    ) -> Result<()> {
        let values = Values::Src(src.view());
        let dst = (self.view_mut(), Owner::Caller);
        assign(
            "index_copy_",
            dst,
            dim.to_isize(),
            index.view(),
            values,
            true,
            false,
        )
    }

    /// PyTorch's `self.index_fill_(dim, index, value)`: the slices along `dim` at the
    /// positions of the 1-D `index` set to `value`. Negative indices count from the end.
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn index_fill_<I: IndexElement>(
        &mut self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        value: T,
    ) -> Result<()> {
        let values = Values::Value(value);
        let dst = (self.view_mut(), Owner::Caller);
        assign(
            "index_fill_",
            dst,
            dim.to_isize(),
            index.view(),
            values,
            true,
            true,
        )
    }
}

impl<T: Element, D: IndexBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// An assigning scatter into a row-major copy of `self`, returned. The copy is the op's
    /// own until it returns ([`Owner::Op`]), so an engine may find a bad index while it
    /// writes the copy, which is then dropped.
    fn assign_copy<I: IndexElement>(
        &self,
        op: &'static str,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        values: Values<'_, T, D>,
        (spread, wrap): (bool, bool),
    ) -> Result<Tensor<T, D>> {
        let mut out = self.contiguous()?;
        let dst = (out.view_mut(), Owner::Op);
        assign(op, dst, dim.to_isize(), index.view(), values, spread, wrap)?;
        Ok(out)
    }

    /// [`Tensor::scatter_`] on a row-major copy of `self`, returned (`torch.scatter`).
    ///
    /// # Errors
    /// As [`Tensor::scatter_`] (`self` is never written).
    pub fn scatter<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
    ) -> Result<Tensor<T, D>> {
        let values = Values::Src(src.view());
        self.assign_copy("scatter", dim, index, values, (false, false))
    }

    /// [`Tensor::scatter_value_`] on a copy (`torch.scatter(self, dim, index, value)`).
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn scatter_value<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        value: T,
    ) -> Result<Tensor<T, D>> {
        let values = Values::Value(value);
        self.assign_copy("scatter", dim, index, values, (false, false))
    }

    /// [`Tensor::index_copy_`] on a copy (`torch.index_copy`).
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn index_copy<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
    ) -> Result<Tensor<T, D>> {
        let values = Values::Src(src.view());
        self.assign_copy("index_copy", dim, index, values, (true, false))
    }

    /// [`Tensor::index_fill_`] on a copy (`torch.index_fill`).
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn index_fill<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        value: T,
    ) -> Result<Tensor<T, D>> {
        let values = Values::Value(value);
        self.assign_copy("index_fill", dim, index, values, (true, true))
    }
}
