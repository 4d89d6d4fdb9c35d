//! Pointwise ops on the GPU: PyTorch THC's strided Apply kernels, compiled at run time.
//!
//! A launch goes: validate the layouts, [`collapse`](fn@crate::layout::collapse) them (drop
//! size-1 dims, merge dims contiguous in every operand), [`plan`](plan::plan) the kernel form,
//! index width and vector width, look up (or compile once) the kernel of that
//! [`KernelSpec`], pack the arguments and launch. The kernels' CUDA C is
//! in `kernels/` (`half.cuh`, `ops.cuh`, `apply.cuh`, with `int_divider.cuh` and
//! `offset_calculator.cuh`); [`source`] appends the op's functor and an entry point.
//!
//! - [`source`]: kernel source assembly and the cache key.
//! - [`plan`]: form, index width, vector width, grid (pure host logic).
//! - `args`: a kernel's packed parameters, shared by [`launch`] and `plan_cache`.
//! - [`launch`]: argument packing and the raw launches over device addresses (the module's
//!   `unsafe`).
//! - [`safe`]: the launches over [`GpuStorage`](crate::gpu::GpuStorage) views.
//! - `backend`: [`Backend`](crate::ops::Backend) for [`Gpu`](crate::gpu::Gpu), so tensors on
//!   the GPU run their pointwise ops here.
//! - [`kernel_cache`]: compiled kernels, once per device and spec.
//! - `plan_cache`: the plans of repeated launches by layout signature, per thread, so a
//!   repeated small op skips collapse, planning and packing.
//! - [`profile`]: where a launch's host time goes, stage by stage (opt-in).
//! - [`pdl`]: when a launch is a programmatic dependent of the kernel before it (Hopper).

mod args;
mod backend;
pub mod kernel_cache;
pub mod launch;
pub mod pdl;
pub mod plan;
pub(crate) mod plan_cache;
pub mod profile;
pub mod safe;
pub mod source;
