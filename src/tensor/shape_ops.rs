//! Layout methods (views that never copy) on [`Tensor`], [`TensorView`] and
//! [`TensorViewMut`], generated once for all three.
//!
//! On `Tensor` and `TensorView` they borrow and return a `TensorView`; on `TensorViewMut` they
//! consume the handle and return a `TensorViewMut` (checked again: a writable view may not
//! overlap itself, so `broadcast_to` of a real broadcast fails there with
//! [`crate::error::LayoutError::OverlappingOutput`]).

use super::{Tensor, TensorView, TensorViewMut};
use crate::element::Element;
use crate::error::Result;
use crate::tensor::Backend;

/// Emits the layout methods. `$recv` is the receiver, `$s` the `self` token (passed in so that
/// receiver and body share hygiene), `$out` the returned view type.
macro_rules! view_methods {
    ([$($recv:tt)*] $s:tt -> $out:ty) => {
        /// Reorders dims: dim `i` of the result is dim `perm[i]` of this one.
        pub fn permute($($recv)*, perm: &[usize]) -> Result<$out> {
            $s.relayout(|l| l.permute(perm))
        }

        /// Swaps two dims (negative dims count from the end).
        pub fn transpose($($recv)*, dim0: isize, dim1: isize) -> Result<$out> {
            $s.relayout(|l| l.transpose(dim0, dim1))
        }

        /// Reverses the order of all dims (NumPy's `.T`; for a matrix, the transpose).
        pub fn t($($recv)*) -> $out {
            // A permutation reaches the same elements: still valid, still non-overlapping.
            let layout = $s.layout().t();
            $s.with_valid_layout(layout)
        }

        /// Keeps `len` elements of `dim` starting at `start`.
        pub fn narrow($($recv)*, dim: isize, start: usize, len: usize) -> Result<$out> {
            $s.relayout(|l| l.narrow(dim, start, len))
        }

        /// NumPy's `a[.., start:end:step, ..]` along `dim` (`step != 0`; a negative step walks
        /// down from `end - 1`). See [`crate::layout::Layout::slice`].
        pub fn slice($($recv)*, dim: isize, start: usize, end: usize, step: isize) -> Result<$out> {
            $s.relayout(|l| l.slice(dim, start, end, step))
        }

        /// Reverses the elements along `dim` (a negative stride).
        pub fn flip($($recv)*, dim: isize) -> Result<$out> {
            $s.relayout(|l| l.flip(dim))
        }

        /// Broadcasts to `shape` with NumPy's rules (stride-0 dims; not writable).
        pub fn broadcast_to($($recv)*, shape: &[usize]) -> Result<$out> {
            $s.relayout(|l| l.broadcast_to(shape))
        }

        /// PyTorch's name for [`Self::broadcast_to`].
        pub fn expand($($recv)*, shape: &[usize]) -> Result<$out> {
            $s.relayout(|l| l.expand(shape))
        }

        /// Inserts a size-1 dim at `dim` (`-1` appends).
        pub fn unsqueeze($($recv)*, dim: isize) -> Result<$out> {
            $s.relayout(|l| l.unsqueeze(dim))
        }

        /// Removes `dim`, which must have size 1.
        pub fn squeeze($($recv)*, dim: isize) -> Result<$out> {
            $s.relayout(|l| l.squeeze(dim))
        }

        /// Removes every size-1 dim.
        pub fn squeeze_all($($recv)*) -> $out {
            // Dropping size-1 dims reaches the same elements.
            let layout = $s.layout().squeeze_all();
            $s.with_valid_layout(layout)
        }

        /// The same elements in row-major order under `shape`, as a view; fails with
        /// [`crate::error::LayoutError::ReshapeNeedsCopy`] when the strides do not allow one
        /// (use `reshape_copy` then).
        pub fn reshape($($recv)*, shape: &[usize]) -> Result<$out> {
            $s.relayout(|l| l.reshape(shape))
        }
    };
}

impl<T: Element, D: Backend> Tensor<T, D> {
    view_methods!([&self] self -> TensorView<'_, T, D>);

    fn relayout(
        &self,
        f: impl FnOnce(
            &crate::layout::Layout,
        ) -> Result<crate::layout::Layout, crate::error::LayoutError>,
    ) -> Result<TensorView<'_, T, D>> {
        self.view().relayout(f)
    }

    fn with_valid_layout(&self, layout: crate::layout::Layout) -> TensorView<'_, T, D> {
        self.view().with_valid_layout(layout)
    }
}

impl<'a, T: Element, D: Backend> TensorView<'a, T, D> {
    view_methods!([&self] self -> TensorView<'a, T, D>);
}

impl<'a, T: Element, D: Backend> TensorViewMut<'a, T, D> {
    view_methods!([self] self -> TensorViewMut<'a, T, D>);
}
