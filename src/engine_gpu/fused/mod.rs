//! Fused expressions on the GPU: one kernel per expression (or per set of up to four), its
//! CUDA C generated from the expression's [`Program`](crate::tensor::expr::program::Program)
//! and compiled once per structure, element types and layout class.
//!
//! The generated functor evaluates the expression over the leaves' values (each in its
//! compute type, each op's result rounded to its element type as an eager op's stored result
//! is) and returns one value per output; the Apply templates of `kernels/apply.cuh` do the
//! rest, exactly as for eager ops: the same planning ([`plan_checked_outputs`]), so the
//! contiguous, vectorised, inner-vectorised and tiled (transposed leaf) forms all apply.
//!
//! - [`handles`]: type-erased views of leaf and output storage.
//! - [`source`]: the generated functor and entry point, and the cache signature.
//! - `launch`: broadcasting, collapsing, planning, the kernel cache, argument packing and
//!   the launch (the module's `unsafe`); a repeated launch takes its cached plan.
//! - `signature`: a launch's plan signature for the per-thread plan cache.
//! - `rows`: a program with a row stage (softmax, a norm or a row statistic inside the
//!   expression) as one row kernel (`kernels/normalize.cuh`'s `ts_row_stage`).
//!
//! [`plan_checked_outputs`]: crate::engine_gpu::kernel::plan::plan_checked_outputs

pub mod handles;
pub(crate) mod launch;
pub(crate) mod rows;
mod signature;

pub mod source;
