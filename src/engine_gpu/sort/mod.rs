//! Sorting on the GPU (issue 28): [`SortEngine`] for [`Gpu`], as NVRTC-compiled kernels
//! (`kernels/sort.cuh`, `kernels/radix.cuh`).
//!
//! - [`source`]: the kernel source of a [`source::SortSpec`] and its cache key.
//! - `launch`: the plan and the module's `unsafe`. Rows of 257 to 4096 entries (2048 for
//!   8-byte keys) are radix-sorted by one block each in registers and shared memory; shorter
//!   rows run a bitonic network in one block's shared memory; `topk` of at most 2048 keys from
//!   longer rows is a radix select per row (one block each, the row read once per key byte
//!   at most, then once to collect), when there are enough rows to fill the GPU or the rows
//!   are short enough for one block; every other sort of fewer than 2^32 elements is an LSD
//!   radix sort of all rows at once (one counting pass per byte of the key and of the row
//!   number); beyond that, a bitonic network in global scratch.
//!
//! Every plan is stable (equal keys keep their order, also in `topk`) and runs on the GPU's
//! default stream.

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
