//! The engine contract of scans and sorting: what the tensor layer hands an engine after its
//! checks, and what the engine promises back.
//!
//! The tensor layer moves the op's dim last (a permuted view; a row-major copy only where
//! that view is not row-major already) so that every engine sees **rows**: a row-major
//! `[rows, n]` source, each row one lane of the dim, and row-major `[rows, m]` destinations.
//! An engine works row by row and never maps strides.

use crate::element::FloatElement;
use crate::error::Result;
use crate::ops::reduce::ReduceElement;
use crate::tensor::backend::views::{TensorView, TensorViewMut};
use crate::tensor::Backend;

use super::key::SortElement;

/// Which running fold a scan computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CumOp {
    /// `cumsum`.
    Sum,
    /// `cumprod`.
    Prod,
}

/// Which running extreme a scan keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extreme {
    /// `cummax`: the largest so far (the latest index on ties, as `>=`).
    Max,
    /// `cummin`: the smallest so far (the latest index on ties, as `<=`).
    Min,
}

pub(crate) mod sealed {
    use super::*;

    /// An engine that scans rows of `T`: private to the crate, so no caller can hand an
    /// engine an unchecked job.
    ///
    /// Every method gets a row-major `src` of shape `[rows, n]` and row-major destinations of
    /// the same shape, all on `self` (the tensor layer made them so; an engine returns
    /// [`crate::error::LayoutError::ShapeMismatch`] for anything else and never panics).
    ///
    /// # Safety
    ///
    /// When a method returns `Ok`, every element of every destination's layout has been
    /// written once with a valid value and no destination was read: the tensor layer hands
    /// them [`Backend::alloc_uninit`] memory. Elements of the storages outside the layouts are
    /// untouched. An index written to an `i64` destination is in `0..n`.
    pub unsafe trait ScanEngine<T: ReduceElement>: Backend {
        /// `dst[r, j] = op(src[r, 0..=j])`, accumulated in `T::Acc` (wrapping `i64` for the
        /// integers and bool, `f32` for the half types), rounded once per element.
        fn cumulate(
            &self,
            op: CumOp,
            src: &TensorView<'_, T, Self>,
            dst: &mut TensorViewMut<'_, T::Sum, Self>,
        ) -> Result<()>;

        /// The running extreme of each row and the index where it was found: a NaN replaces
        /// the running value (and a later NaN its index), so once a NaN is seen the values
        /// stay NaN, as PyTorch's `cummax` / `cummin`.
        fn cum_extreme(
            &self,
            which: Extreme,
            src: &TensorView<'_, T, Self>,
            values: &mut TensorViewMut<'_, T, Self>,
            indices: &mut TensorViewMut<'_, i64, Self>,
        ) -> Result<()>;

        /// `dst[r, j] = log Σ_{i ≤ j} exp(src[r, i])`, as PyTorch's `logcumsumexp`
        /// (`max + log1p(exp(min − max))` per step; `f32` for the half types).
        fn logcumsumexp(
            &self,
            src: &TensorView<'_, T, Self>,
            dst: &mut TensorViewMut<'_, T, Self>,
        ) -> Result<()>
        where
            T: FloatElement;
    }

    /// An engine that sorts rows of `T`: private to the crate.
    ///
    /// # Safety
    ///
    /// As [`ScanEngine`]: on `Ok` every element of every destination's layout has been
    /// written once with a valid value, no destination was read, nothing outside the layouts
    /// was touched, and every `i64` index written is in `0..n` of its row (for
    /// `searchsorted`, in `0..=m`).
    pub unsafe trait SortEngine<T: SortElement>: Backend {
        /// Sorts each row of the `[rows, n]` `src` into `values` and `indices` (`[rows, n]`):
        /// ascending by [`SortElement::sort_key`] (NaN last, `-0.0 == 0.0`), or descending
        /// (NaN first); with `stable`, equal keys keep their order in the row (an engine may
        /// always sort stably).
        fn sort(
            &self,
            src: &TensorView<'_, T, Self>,
            descending: bool,
            stable: bool,
            values: &mut TensorViewMut<'_, T, Self>,
            indices: &mut TensorViewMut<'_, i64, Self>,
        ) -> Result<()>;

        /// The `k` largest (or smallest) elements of each row of the `[rows, n]` `src`, in
        /// sorted order (largest first for `largest`), into `[rows, k]` destinations; `k <= n`.
        /// Among equal keys the lower index comes first.
        fn topk(
            &self,
            src: &TensorView<'_, T, Self>,
            k: usize,
            largest: bool,
            values: &mut TensorViewMut<'_, T, Self>,
            indices: &mut TensorViewMut<'_, i64, Self>,
        ) -> Result<()>;

        /// For each element `v` of the row-major `[count]` `values`, the insertion point in
        /// the 1-D row-major `[m]` `sorted`, by PyTorch's binary search (`right`: it moves
        /// right past `sorted[mid]` while `!(sorted[mid] > v)`; otherwise while
        /// `!(sorted[mid] >= v)`; so a NaN `v` gives `m`), into `out` (`[count]`).
        fn searchsorted(
            &self,
            sorted: &TensorView<'_, T, Self>,
            values: &TensorView<'_, T, Self>,
            right: bool,
            out: &mut TensorViewMut<'_, i64, Self>,
        ) -> Result<()>;
    }
}

/// A device that scans tensors of `T` (`cumsum`, `cumprod`, `cummax`, `cummin`, and
/// `logcumsumexp` for the floats): the CPU and the GPU, for every element type.
#[diagnostic::on_unimplemented(
    message = "scans of `{T}` are not available on `{Self}`",
    label = "no `{T}` scans on this device",
    note = "the CPU and the GPU scan every element type"
)]
pub trait ScanBackend<T: ReduceElement>: sealed::ScanEngine<T> {}

impl<T: ReduceElement, D: sealed::ScanEngine<T>> ScanBackend<T> for D {}

/// A device that sorts tensors of `T` (`sort`, `argsort`, `topk`, `kthvalue`, `unique`,
/// `searchsorted`): the CPU and the GPU, for every element type.
#[diagnostic::on_unimplemented(
    message = "sorting `{T}` is not available on `{Self}`",
    label = "no `{T}` sort on this device",
    note = "the CPU and the GPU sort every element type"
)]
pub trait SortBackend<T: SortElement>: sealed::SortEngine<T> {}

impl<T: SortElement, D: sealed::SortEngine<T>> SortBackend<T> for D {}

/// Checks that `v` is row-major with shape `shape` (the contract of every engine method).
pub(crate) fn check_rows(
    op: &'static str,
    v: &crate::layout::Layout,
    shape: &[usize],
) -> Result<()> {
    if v.shape() != shape || !v.is_contiguous() {
        return Err(crate::error::LayoutError::ShapeMismatch {
            op,
            expected: shape.to_vec(),
            got: v.shape().to_vec(),
        }
        .into());
    }
    Ok(())
}
