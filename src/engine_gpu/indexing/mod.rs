//! Gather and scatter on the GPU (issue 28): the two primitives of the indexing ops
//! ([`crate::tensor::indexing`]) as NVRTC-compiled kernels (`kernels/indexing.cuh`).
//!
//! - [`source`]: the kernel source of an [`source::IndexSpec`] and its cache key.
//! - `launch`: checks, the offset calculator, argument packing, stream order and the launch.
//!
//! Out-of-range indices: a gather's kernel reports the first out-of-range index it meets in a
//! two-word device flag read back after it (one synchronisation per gather), and
//! `LayoutError::IndexOutOfRange` names it; so does a scatter into a tensor the op made
//! itself (an out-of-place `scatter_add`, a step on a copy), whose result is then dropped.
//! A scatter into the caller's tensor (the in-place ops) has its indices checked the same way
//! by a kernel of their own before it (one more read of the index), so nothing is written
//! when one is out of range. Every kernel also skips any access whose index is out of range,
//! so no index value can reach memory outside a view.
//!
//! Scatter reductions run as atomics: `f32`, `f64`, `i32`, `u32`, `i64`, `u64` sums on the
//! hardware's `atomicAdd`, integer max / min on `atomicMax` / `atomicMin`, the rest
//! (products, float max / min, every `f16` / `bf16` reduction) as compare-and-swap loops.
//! Float results are therefore not deterministic run to run (PyTorch's note on
//! `scatter_add_` / `index_add_` on CUDA).

mod launch;
pub mod source;

use crate::element::Element;
use crate::error::Result;
use crate::runtime::Gpu;
use crate::tensor::indexing::{
    GatherJob, IndexCheck, IndexElement, IndexEngine, ScatterJob, ScatterReduce,
    ScatterReduceEngine,
};
use crate::tensor::{TensorView, TensorViewMut};

// SAFETY: `gather` launches one thread per destination element, each writing its element
// once with a value copied from the source (zero bits, a valid value of every element type,
// for an out-of-range index, which the tensor layer's check rules out before the launch);
// `scatter_assign` writes only destination elements. Neither reads outside a view for any
// index value (`launch.rs`).
unsafe impl<T: Element> IndexEngine<T> for Gpu {
    /// The gather and scatter kernels report the first out-of-range index they meet
    /// (`launch.rs`), after writing.
    const CHECKS: IndexCheck = IndexCheck::AfterWriting;

    fn gather<I: IndexElement>(
        &self,
        job: &GatherJob<'_, T, I, Gpu>,
        dst: &mut TensorViewMut<'_, T, Gpu>,
    ) -> Result<()> {
        launch::gather(self, job, dst)
    }

    fn check_indices<I: IndexElement>(
        &self,
        op: &'static str,
        index: &TensorView<'_, I, Gpu>,
        dim: usize,
        size: usize,
        wrap: bool,
    ) -> Result<bool> {
        launch::check(self, op, index, dim, size, wrap)?;
        Ok(true)
    }

    fn scatter_assign<I: IndexElement>(
        &self,
        job: &ScatterJob<'_, T, I, Gpu>,
        dst: &mut TensorViewMut<'_, T, Gpu>,
    ) -> Result<()> {
        launch::scatter(self, job, ScatterReduce::Assign, dst)
    }
}

/// The element types the GPU scatters with a reduction: those its atomics reach.
macro_rules! scatter_reduce_types {
    ($($t:ty),*) => {$(
        // SAFETY: as `IndexEngine` above; the reductions are atomics on destination elements.
        unsafe impl ScatterReduceEngine<$t> for Gpu {
            fn scatter_reduce<I: IndexElement>(
                &self,
                job: &ScatterJob<'_, $t, I, Gpu>,
                dst: &mut TensorViewMut<'_, $t, Gpu>,
            ) -> Result<()> {
                launch::scatter(self, job, job.reduce, dst)
            }
        }
    )*};
}

scatter_reduce_types!(f32, f64, half::f16, half::bf16, i32, i64, u32, u64);
