//! Layout methods (views that never copy) on [`Tensor`], [`TensorView`] and
//! [`TensorViewMut`], generated once for all three.
//!
//! On `Tensor` and `TensorView` they borrow and return a `TensorView`; on `TensorViewMut` they
//! consume the handle and return a `TensorViewMut` (checked again: a writable view may not
//! overlap itself, so `broadcast_to` of a real broadcast fails there with
//! [`crate::error::LayoutError::OverlappingOutput`]). An owned tensor that should keep its
//! storage under a new shape (a temporary, say) takes [`Tensor::into_reshape`].
//!
//! Dim (axis) arguments are [`Dim`]: any integer, negative ones counting from the end as in
//! PyTorch and NumPy (`-1` is the last dim). Positions, lengths and shapes are `usize`.

use super::{Tensor, TensorView, TensorViewMut};
use crate::element::Element;
use crate::error::{Handback, Result};
use crate::layout::normalize_dim;
use crate::tensor::Backend;

mod sealed {
    pub trait Sealed {}
}

/// A dim (axis) argument: any primitive integer. A non-negative dim counts from the front
/// (`0` is the first dim), a negative one from the back (`-1` is the last), as in PyTorch and
/// NumPy; out of range is [`crate::error::LayoutError::DimOutOfRange`]. So `t.flip(-1)`,
/// `t.flip(1)` and `t.flip(d)` with `d: usize` all work. Positions, lengths and shapes are
/// `usize`. Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a dim",
    label = "expected one integer dim (negative ones count from the end)",
    note = "a dim argument is one integer: `x.sum_dim(1, false)`, `x.flip(-1)`; for several dims at once use the `_dims` form with a slice, `x.sum_dims(&[0, 1], false)`, or `x.permute(&[..])`"
)]
pub trait Dim: Copy + sealed::Sealed {
    /// The dim as an `isize`; values beyond `isize` saturate (out of range for every rank).
    fn to_isize(self) -> isize;
}

macro_rules! dim_ints {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Dim for $t {
            fn to_isize(self) -> isize {
                match isize::try_from(self) {
                    Ok(d) => d,
                    // Only values beyond isize's range fail: past the end either way.
                    Err(_) if self > 0 => isize::MAX,
                    Err(_) => isize::MIN,
                }
            }
        }
    )*};
}
dim_ints!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// `perm` with negative entries resolved against `rank`. Entries that are out of range stay
/// as given when none is negative, so that [`crate::layout::Layout::permute`] reports the
/// whole permutation ([`crate::error::LayoutError::InvalidPermutation`]); a negative one out
/// of range is [`crate::error::LayoutError::DimOutOfRange`].
fn resolve_perm<P: Dim>(
    perm: &[P],
    rank: usize,
) -> std::result::Result<Vec<usize>, crate::error::LayoutError> {
    perm.iter()
        .map(|p| match p.to_isize() {
            d if d >= 0 => Ok(d.unsigned_abs()),
            d => normalize_dim("permute", d, rank),
        })
        .collect()
}

/// Emits the layout methods. `$recv` is the receiver, `$s` the `self` token (passed in so that
/// receiver and body share hygiene), `$out` the returned view type.
macro_rules! view_methods {
    ([$($recv:tt)*] $s:tt -> $out:ty) => {
        /// Reorders dims: dim `i` of the result is dim `perm[i]` of this one (negative
        /// entries count from the end: `permute(&[-1, 0])` moves the last dim first).
        pub fn permute<P: Dim>($($recv)*, perm: &[P]) -> Result<$out> {
            $s.relayout(|l| l.permute(&resolve_perm(perm, l.rank())?))
        }

        /// Swaps two dims (negative dims count from the end: `transpose(-2, -1)` swaps the
        /// last two).
        pub fn transpose($($recv)*, dim0: impl Dim, dim1: impl Dim) -> Result<$out> {
            $s.relayout(|l| l.transpose(dim0.to_isize(), dim1.to_isize()))
        }

        /// Reverses the order of all dims (NumPy's `.T`; for a matrix, the transpose).
        pub fn t($($recv)*) -> $out {
            // A permutation reaches the same elements: still valid, still non-overlapping.
            let layout = $s.layout().t();
            $s.with_valid_layout(layout)
        }

        /// Keeps `len` elements of `dim` starting at `start` (a negative `dim` counts from
        /// the end; `start` and `len` are positions along it).
        pub fn narrow($($recv)*, dim: impl Dim, start: usize, len: usize) -> Result<$out> {
            $s.relayout(|l| l.narrow(dim.to_isize(), start, len))
        }

        /// NumPy's `a[.., start:end:step, ..]` along `dim` (a negative `dim` counts from the
        /// end; `step != 0`, and a negative step walks down from `end - 1`). See
        /// [`crate::layout::Layout::slice`].
        pub fn slice($($recv)*, dim: impl Dim, start: usize, end: usize, step: isize) -> Result<$out> {
            $s.relayout(|l| l.slice(dim.to_isize(), start, end, step))
        }

        /// PyTorch's `x[.., start:end, ..]` along `dim` with Python's rules: `range` is any
        /// Rust range of `isize` whose bounds may be negative (counting from the end) and
        /// are clamped to the dim (`x.slice_range(0, -3.., 1)` is `x[-3:]`, and
        /// `x.slice_range(1, 1..-1, 2)` is `x[:, 1:-1:2]`); `step` as in [`Self::slice`].
        pub fn slice_range($($recv)*, dim: impl Dim, range: impl std::ops::RangeBounds<isize>, step: isize) -> Result<$out> {
            $s.relayout(|l| l.slice_range(dim.to_isize(), range, step))
        }

        /// `x[.., index, ..]` at `dim`: the view with that dim removed (PyTorch's
        /// `select`; a negative `index` counts from the end).
        pub fn select($($recv)*, dim: impl Dim, index: isize) -> Result<$out> {
            $s.relayout(|l| l.select(dim.to_isize(), index))
        }

        /// Dims `start_dim..=end_dim` merged into one, as a view (PyTorch's `flatten`;
        /// `flatten(0, -1)` makes a 1-D view). Fails with
        /// [`crate::error::LayoutError::ReshapeNeedsCopy`] where the strides need a copy
        /// (call `contiguous()` first).
        pub fn flatten($($recv)*, start_dim: impl Dim, end_dim: impl Dim) -> Result<$out> {
            $s.relayout(|l| l.flatten(start_dim.to_isize(), end_dim.to_isize()))
        }

        /// Dim `dim` split into dims of `sizes`, whose product must be its size (PyTorch's
        /// `unflatten`); always a view.
        pub fn unflatten($($recv)*, dim: impl Dim, sizes: &[usize]) -> Result<$out> {
            $s.relayout(|l| l.unflatten(dim.to_isize(), sizes))
        }

        /// Reverses the elements along `dim` (a negative stride; a negative `dim` counts from
        /// the end).
        pub fn flip($($recv)*, dim: impl Dim) -> Result<$out> {
            $s.relayout(|l| l.flip(dim.to_isize()))
        }

        /// Broadcasts to `shape` with NumPy's rules (stride-0 dims; not writable).
        pub fn broadcast_to($($recv)*, shape: &[usize]) -> Result<$out> {
            $s.relayout(|l| l.broadcast_to(shape))
        }

        /// PyTorch's name for [`Self::broadcast_to`].
        pub fn expand($($recv)*, shape: &[usize]) -> Result<$out> {
            $s.relayout(|l| l.expand(shape))
        }

        /// Inserts a size-1 dim at `dim` (counted in the result: `-1` appends).
        pub fn unsqueeze($($recv)*, dim: impl Dim) -> Result<$out> {
            $s.relayout(|l| l.unsqueeze(dim.to_isize()))
        }

        /// Removes `dim`, which must have size 1 (a negative `dim` counts from the end).
        pub fn squeeze($($recv)*, dim: impl Dim) -> Result<$out> {
            $s.relayout(|l| l.squeeze(dim.to_isize()))
        }

        /// Removes every size-1 dim.
        pub fn squeeze_all($($recv)*) -> $out {
            // Dropping size-1 dims reaches the same elements.
            let layout = $s.layout().squeeze_all();
            $s.with_valid_layout(layout)
        }

        /// The same elements in row-major order under `shape`, as a view; fails with
        /// [`crate::error::LayoutError::ReshapeNeedsCopy`] when the strides do not allow one
        /// (use `reshape_copy` then). The view borrows: to reshape an owned tensor and keep
        /// it (a temporary such as `Tensor::arange(6)?`), use [`Tensor::into_reshape`], which
        /// keeps the storage and copies nothing.
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

impl<T: Element, D: Backend> Tensor<T, D> {
    /// [`reshape`](Self::reshape) for an owned tensor: the same elements in row-major order
    /// under `shape`, keeping this tensor's storage (no copy), so it works on a temporary:
    ///
    /// ```
    /// use typestate_tensor::Tensor;
    ///
    /// let m = Tensor::<f32>::arange(6)?.into_reshape(&[2, 3])?;
    /// assert_eq!(m.shape(), &[2, 3]);
    /// assert_eq!(m.get(&[1, 0])?, 3.0);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// A shape of another element count, or strides that need a copy
    /// ([`crate::error::LayoutError::ReshapeNeedsCopy`]: use `reshape_copy`), with the tensor
    /// handed back unchanged.
    #[allow(clippy::result_large_err)] // hands the tensor back
    pub fn into_reshape(mut self, shape: &[usize]) -> Result<Tensor<T, D>, Handback<Self>> {
        match self.layout().reshape(shape) {
            Ok(layout) => match self.set_layout(layout) {
                Ok(()) => Ok(self),
                Err(e) => Err(Handback::new(self, e)),
            },
            Err(e) => Err(Handback::new(self, e)),
        }
    }
}

impl<'a, T: Element, D: Backend> TensorView<'a, T, D> {
    view_methods!([&self] self -> TensorView<'a, T, D>);
}

impl<'a, T: Element, D: Backend> TensorViewMut<'a, T, D> {
    view_methods!([self] self -> TensorViewMut<'a, T, D>);
}
