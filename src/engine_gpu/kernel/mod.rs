//! What every kernel family of the GPU engine shares (`pointwise`, `fused`, `reduce` sit
//! above it, side by side, and it imports none of them):
//!
//! - [`form`]: the launch's kernel form, index width, tile shape, launch-shape constants and
//!   grid size.
//! - [`plan`]: which form, index width and vector width a launch over a collapsed layout
//!   takes (pure host logic); [`tiled`]: the tiled form's part of it.
//! - [`source`]: the `kernels/` headers, the operand types, the Apply entry point, and the
//!   [`KernelSource`](source::KernelSource) trait every kernel spec implements.
//! - [`args`]: argument packing (the operand addresses, count, scalars and offset
//!   calculator image) and the frozen arguments a plan launches with.
//! - [`cache`]: the NVRTC options, loaded kernels by spec, and the one way a spec is compiled
//!   and loaded.
//! - [`launch`]: the complete launch plan, the per-thread plan cache, and the driver call.
//! - [`pdl`]: when a launch is a programmatic dependent of the kernel before it (Hopper).
//! - [`profile`]: where a launch's host time goes, stage by stage (opt-in).
//! - [`rows`]: the row kernels' header, group size and register form (the eager
//!   normalisations and the fused row stages).

pub mod args;
pub mod cache;
pub mod form;
pub mod launch;
pub mod pdl;
pub mod plan;
pub mod profile;
pub mod rows;
pub mod source;
pub mod tiled;
