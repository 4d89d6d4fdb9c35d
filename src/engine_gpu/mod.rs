//! The GPU engine: [`Backend`](crate::tensor::Backend) for [`Gpu`](crate::runtime::Gpu).
//!
//! Everything that turns an op into a kernel and runs it: code generation and plans
//! ([`pointwise`]), NVRTC and the kernel caches ([`compile`]), the index math the kernels
//! share with the host ([`int_divider`], [`offset_calculator`]), the Blob reductions
//! (`reduce`), the stream-ordering test kernel (`Stream::sleep`), and the host/device
//! transfers of tensors (`Tensor::to_gpu` / `to_cpu`). Launches go through the runtime's
//! driver layer. Public parts are published through [`crate::gpu`] and the crate root.
//!
//! Imports only from the layers below (runtime, storage, tensor, ops, base), never from the
//! CPU engine; see `docs/ARCHITECTURE.md`.

pub(crate) mod compile;
pub(crate) mod fused;
pub(crate) mod int_divider;
pub(crate) mod offset_calculator;
pub(crate) mod pointwise;
pub(crate) mod reduce;
mod sleep;
mod transfer;

#[cfg(test)]
mod tests;
