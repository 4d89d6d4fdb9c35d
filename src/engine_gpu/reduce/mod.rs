//! Reductions on the GPU: the tensor reductions of [`crate::ops::reduce`] as NVRTC-compiled
//! CUDA kernels (`kernels/reduce.cuh`); the Blob's `asum` / `sumsq` are two of them
//! (`sum_abs`, `sum_sq`).
//!
//! - [`plan`]: the kernel form (row or column), vector widths, block and grid, splits and
//!   index width of a launch (pure host logic).
//! - [`source`]: the kernel source of a [`source::ReduceSpec`] and its cache key.
//! - `launch`: geometry, kernel lookup (compiled once per spec through
//!   [`crate::engine_gpu::kernel::cache`]), argument packing, stream order and the launches
//!   (through [`crate::engine_gpu::kernel::launch`]); the module's `unsafe`.
//!
//! See docs/REDUCTIONS.md for the design and the figures beside PyTorch's.

mod launch;
pub mod plan;
pub mod source;

pub(crate) use launch::reduce as reduce_view;
