//! The GPU engine: [`Backend`](crate::tensor::Backend) for [`Gpu`](crate::runtime::Gpu).
//!
//! Everything that turns an op into a kernel and runs it, as a stack (each level imports only
//! the levels below it; `tests/it/architecture.rs` checks it):
//!
//! 1. `backend`: [`Backend`](crate::tensor::Backend) for [`Gpu`](crate::runtime::Gpu), the
//!    engine's front door; beside it the host/device transfers of tensors (`transfer`) and
//!    the stream-ordering test kernel (`sleep`).
//! 2. The kernel families, side by side, none importing another: [`pointwise`] (eager ops),
//!    [`fused`] (one kernel per expression), [`reduce`] (reductions).
//! 3. [`kernel`]: what the families share: forms and planning, source generation and the
//!    `KernelSource` trait, argument packing, the kernel cache, the launch plan with its
//!    per-thread cache, and the driver call.
//! 4. [`compile`] (NVRTC and the compile caches), and the index math the kernels share with
//!    the host ([`int_divider`], [`offset_calculator`]).
//!
//! Launches go through the runtime's driver layer. Public parts are published through
//! [`crate::gpu`] and the crate root.
//!
//! Imports only from the layers below (runtime, storage, tensor, ops, base), never from the
//! CPU engine; see `docs/ARCHITECTURE.md`.

mod backend;
pub(crate) mod compile;
pub(crate) mod fused;
pub(crate) mod int_divider;
pub(crate) mod kernel;
// Issue 27: matrix multiply through cuBLASLt (`MatmulEngine` for `Gpu`).
pub(crate) mod matmul;
// issue 28 (norm): softmax, variance, layer / rms / group norm.
pub(crate) mod normalize;
pub(crate) mod offset_calculator;
pub(crate) mod pointwise;
pub(crate) mod reduce;
// issue 28 (index): gather and scatter kernels.
pub(crate) mod indexing;
// issue 28 (sort): scans and sorting.
pub(crate) mod scan;
mod sleep;
pub(crate) mod sort;
mod transfer;

#[cfg(test)]
mod tests;
