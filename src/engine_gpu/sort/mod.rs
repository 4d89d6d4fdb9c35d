//! Sorting on the GPU (issue 28): [`SortEngine`] for [`Gpu`], as NVRTC-compiled kernels
//! (`kernels/sort.cuh`).
//!
//! - [`source`]: the kernel source of a [`source::SortSpec`] and its cache key.
//! - `launch`: rows of at most 2048 sort in one block's shared memory (a bitonic network on
//!   `(key, index)` pairs, one launch); longer rows run the same network in global scratch
//!   (one launch per global stage, the stages within 2048 entries in shared memory); the
//!   module's `unsafe`.
//!
//! `topk` is the sort keeping the first `k` of each row (no radix select yet): correct for
//! every `k`, at the sort's cost. Every call is queued on the GPU's default stream.

mod launch;
pub mod source;

use crate::error::Result;
use crate::runtime::Gpu;
use crate::tensor::order::{SortElement, SortEngine};
use crate::tensor::{TensorView, TensorViewMut};

// SAFETY: `launch::sort` checks the views are row-major of the stated shapes and its kernels
// write each of the first `m` entries of every sorted row once (values gathered from the row
// at the sorted index, which is a real position `0..n` because padding sorts last), never
// reading a destination; `launch::searchsorted` writes each output once with a bound in
// `0..=m`. Nothing outside the layouts is addressed.
unsafe impl<T: SortElement> SortEngine<T> for Gpu {
    fn sort(
        &self,
        src: &TensorView<'_, T, Self>,
        descending: bool,
        _stable: bool,
        values: &mut TensorViewMut<'_, T, Self>,
        indices: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        let n = src.shape().get(1).copied().unwrap_or(0);
        launch::sort(self, "sort", src, descending, n, values, indices)
    }

    fn topk(
        &self,
        src: &TensorView<'_, T, Self>,
        k: usize,
        largest: bool,
        values: &mut TensorViewMut<'_, T, Self>,
        indices: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        launch::sort(self, "topk", src, largest, k, values, indices)
    }

    fn searchsorted(
        &self,
        sorted: &TensorView<'_, T, Self>,
        values: &TensorView<'_, T, Self>,
        right: bool,
        out: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        launch::searchsorted(self, sorted, values, right, out)
    }
}
