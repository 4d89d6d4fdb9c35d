//! Pointwise ops on the GPU: PyTorch THC's strided Apply kernels, compiled at run time.
//!
//! A launch goes: stream order, the plan this thread keeps for the launch's layout
//! signature, or on a miss: validate the layouts, collapse them, plan the kernel form, index
//! width and vector width, look up (or compile once) the kernel of that [`KernelSpec`](source::KernelSpec), pack
//! the arguments; then the driver call (`kernel::launch`). The kernels' CUDA C is in
//! `kernels/` (`half.cuh`, `ops.cuh`, `apply.cuh`, with `int_divider.cuh` and
//! `offset_calculator.cuh`); [`source`] appends the op's functor and an entry point.
//!
//! - [`launch`]: the launches over [`GpuStorage`](crate::runtime::GpuStorage) views, the
//!   entry of every eager op, and the module's `unsafe`.
//! - [`plan`]: the uncached half: from views to a complete launch plan.
//! - `signature`: a launch's plan signature for the per-thread plan cache.
//! - [`source`]: a kernel's spec, its generated tail and its cache key.
//!
//! The shared machinery (forms and planning, argument packing, the kernel cache, the launch
//! plan, its cache and the driver call) is [`crate::engine_gpu::kernel`].

pub mod launch;
pub(crate) mod plan;
pub(crate) mod signature;
pub mod source;
