//! Indexing ops (issue 28), with PyTorch's names and semantics, on both engines:
//! [`Tensor::gather`], [`Tensor::index_select`], [`Tensor::take`], [`Tensor::embedding`]
//! (this file); `scatter`, `index_copy`, `index_fill` (`scatter.rs`); `scatter_add`,
//! `scatter_reduce`, `index_add` (`reducing.rs`); `masked_fill`, `masked_select`, `masked_scatter`, `nonzero`
//! (`mask.rs`); `one_hot`, `bincount` (`count.rs`).
//!
//! # Design
//!
//! - **Two engine primitives.** Every op is a gather or a scatter along one dim
//!   (`GatherJob`, `ScatterJob`): `index_select` is a gather whose index is a stride-0
//!   view of the 1-D index over the result's shape, `take` a gather of the flattened tensor,
//!   `embedding` an `index_select` of rows; `index_add` / `index_copy` / `index_fill` are
//!   scatters with the same spread index; `one_hot` and `bincount` scatter into zeros.
//! - **Indices out of range never reach memory.** A value out of range is
//!   [`LayoutError::IndexOutOfRange`] (naming the op, the value, the dim and its size), and
//!   neither `self` nor any argument is written: the CPU engine checks every index before
//!   it writes anything; on the GPU the kernel of a gather, or of a scatter into a result
//!   the op made (every out-of-place op: `scatter_add`, `index_add`, `scatter`, ...), reports
//!   the first bad index it meets in a device flag read back after it, and the result is
//!   dropped; an in-place scatter (`scatter_add_`, ...) has its indices checked by one kernel
//!   before it, so the caller's tensor is untouched. A synchronisation per op either way
//!   (PyTorch instead asserts in the kernel, which kills the CUDA context). The kernels also
//!   skip any out-of-range access, so no index value can make an access leave a tensor.
//! - **Negative indices** are out of range as in PyTorch's `gather`, `scatter*`,
//!   `index_select`, `index_add`, `index_copy`, `embedding`, `one_hot` and `bincount`; they
//!   count from the end in `take` and `index_fill`, as PyTorch's do.
//! - **Index types**: `i64` (PyTorch's) and `i32` ([`IndexElement`]).
//! - **Determinism**: the CPU is deterministic (scatters run in row-major order of the
//!   index). On the GPU, `scatter_add`, `index_add`, `scatter_reduce` and `bincount` use
//!   atomics, so float sums may differ in their last bits from run to run, and `scatter` /
//!   `index_copy` with duplicate indices keep an unspecified one of the sources (PyTorch's
//!   notes on both).

mod check;
mod count;
mod engine;
mod mask;
mod reducing;
mod scatter;

#[allow(unused_imports)] // implemented by the engines
pub(crate) use engine::sealed::{IndexEngine, ScatterReduceEngine};
pub(crate) use engine::{GatherJob, IndexCheck, ScatterJob};
pub use engine::{IndexBackend, IndexElement, ScatterBackend, ScatterReduce};

use super::repr::ReadRepr;
use super::{AsView, Tensor};
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::tensor::Backend;
use crate::tensor::Dim;
use check::{at_least_1d, mismatch, resolve_dim, run_gather, spread_1d};

impl<T: Element, D: IndexBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// PyTorch's `torch.gather(self, dim, index)`: `out[p] = self[p with p[dim] =
    /// index[p]]`, of `index`'s shape (same rank as `self`, no larger than `self` in any dim
    /// but `dim`). Indices must lie in `[0, size(dim))`.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    /// let x = Tensor::from_vec(&[2, 3], vec![1.0f32, 2., 3., 4., 5., 6.])?;
    /// let i = Tensor::from_vec(&[2, 1], vec![2i64, 0])?;
    /// assert_eq!(x.gather(1, &i)?.to_vec(), [3.0, 4.0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::IndexOutOfRange`], [`LayoutError::ShapeMismatch`] for an index of
    /// another rank or larger than `self` in a dim but `dim`, [`LayoutError::DimOutOfRange`],
    /// the device's errors.
    pub fn gather<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
    ) -> Result<Tensor<T, D>> {
        const OP: &str = "gather";
        let src = at_least_1d(self.view())?;
        let index = at_least_1d(index.view())?;
        let dim = resolve_dim(OP, dim.to_isize(), self.rank())?;
        let src = narrow_to(OP, src, index.shape(), dim)?;
        let out = run_gather(OP, src, index, dim, false)?;
        if self.rank() == 0 {
            return Ok(out.into_reshape(&[])?);
        }
        Ok(out)
    }

    /// PyTorch's `torch.index_select(self, dim, index)`: the slices of `self` along `dim` at
    /// the positions of the 1-D `index` (in its order, repeats allowed), as a new row-major
    /// tensor whose `dim` has `index`'s length. Indices must lie in `[0, size(dim))`.
    ///
    /// # Errors
    /// As [`Tensor::gather`]; [`LayoutError::ShapeMismatch`] for an index of rank above 1.
    pub fn index_select<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
    ) -> Result<Tensor<T, D>> {
        const OP: &str = "index_select";
        let src = at_least_1d(self.view())?;
        let dim = resolve_dim(OP, dim.to_isize(), self.rank())?;
        let index = at_least_1d(index.view())?;
        if index.rank() != 1 {
            return Err(mismatch(OP, &[index.numel()], index.shape()));
        }
        let mut shape = src.shape().to_vec();
        shape[dim] = index.shape()[0];
        let spread = spread_1d(OP, index, &shape, dim)?;
        let out = run_gather(OP, src, spread, dim, false)?;
        if self.rank() == 0 {
            return Ok(out.into_reshape(&[])?);
        }
        Ok(out)
    }

    /// PyTorch's `torch.take(self, index)`: `self` read as 1-D in row-major order at
    /// `index` (any shape; the result has it). Negative indices count from the end.
    ///
    /// # Errors
    /// [`LayoutError::IndexOutOfRange`] for an index outside `[-numel, numel)`, the device's
    /// errors.
    pub fn take<I: IndexElement>(&self, index: &impl AsView<I, D>) -> Result<Tensor<T, D>> {
        const OP: &str = "take";
        let flat_src;
        let src = match self.view().reshape(&[self.numel()]) {
            Ok(v) => v,
            Err(_) => {
                flat_src = self.contiguous()?.into_reshape(&[self.numel()])?;
                flat_src.view()
            }
        };
        let index = index.view();
        let shape = index.shape().to_vec();
        let flat_index;
        let idx = match index.reshape(&[index.numel()]) {
            Ok(v) => v,
            Err(_) => {
                flat_index = index.contiguous()?.into_reshape(&[index.numel()])?;
                flat_index.view()
            }
        };
        Ok(run_gather(OP, src, idx, 0, true)?.into_reshape(&shape)?)
    }
}

impl<I: IndexElement, D: Backend, S: ReadRepr<I, D>> Tensor<I, D, S> {
    /// PyTorch's `F.embedding(self, weight)`: the rows of the 2-D `weight` (`[num, dim]`) at
    /// the indices in `self` (any shape `[*]`), as a new tensor `[*, dim]`. Indices must lie
    /// in `[0, num)`.
    ///
    /// # Errors
    /// [`LayoutError::IndexOutOfRange`], [`LayoutError::ShapeMismatch`] for a `weight` that
    /// is not 2-D, the device's errors.
    pub fn embedding<T: Element>(&self, weight: &impl AsView<T, D>) -> Result<Tensor<T, D>>
    where
        D: IndexBackend<T>,
    {
        embedding(self, weight)
    }
}

/// PyTorch's `F.embedding(indices, weight)`: [`Tensor::embedding`] as a function.
///
/// # Errors
/// As [`Tensor::embedding`].
pub fn embedding<T: Element, I: IndexElement, D: IndexBackend<T>>(
    indices: &impl AsView<I, D>,
    weight: &impl AsView<T, D>,
) -> Result<Tensor<T, D>> {
    const OP: &str = "embedding";
    let (indices, weight) = (indices.view(), weight.view());
    if weight.rank() != 2 {
        return Err(mismatch(OP, &[0, 0], weight.shape()));
    }
    let mut shape = indices.shape().to_vec();
    shape.push(weight.shape()[1]);
    let flat_index;
    let idx = match indices.reshape(&[indices.numel()]) {
        Ok(v) => v,
        Err(_) => {
            flat_index = indices.contiguous()?.into_reshape(&[indices.numel()])?;
            flat_index.view()
        }
    };
    let mut rows = weight.shape().to_vec();
    rows[0] = idx.numel();
    let spread = spread_1d(OP, idx, &rows, 0)?;
    Ok(run_gather(OP, weight, spread, 0, false)?.into_reshape(&shape)?)
}

/// `src` narrowed to `shape` in every dim but `dim` (gather's and scatter's rule: the index
/// is no larger than the indexed tensor there), after a rank check.
fn narrow_to<'a, T: Element, D: Backend>(
    op: &'static str,
    mut src: crate::tensor::TensorView<'a, T, D>,
    shape: &[usize],
    dim: usize,
) -> Result<crate::tensor::TensorView<'a, T, D>> {
    if src.rank() != shape.len() {
        return Err(LayoutError::ShapeMismatch {
            op,
            expected: src.shape().to_vec(),
            got: shape.to_vec(),
        }
        .into());
    }
    for (d, &n) in shape.iter().enumerate() {
        if d == dim {
            continue;
        }
        if n > src.shape()[d] {
            return Err(mismatch(op, src.shape(), shape));
        }
        src = src.narrow(d, 0, n)?;
    }
    Ok(src)
}
