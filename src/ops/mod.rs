//! Pointwise ops: one op table, run by the CPU engine and by the GPU kernels.
//!
//! - [`op`]: the [`UnaryOp`] / [`BinaryOp`] / [`TernaryOp`] traits (CPU closure + CUDA
//!   expression per op).
//! - [`table`]: every op, defined once, with a table of bounds and CUDA expressions.
//! - [`cast`]: element conversion ([`Cast`]).
//! - [`reduce`]: the reductions (`sum`, `prod`, `mean`, `max`, `min`, `argmax`, `argmin`):
//!   accumulation types, NaN and tie rules, CPU semantics beside the CUDA functor names.
//!
//! Op definitions only: what an op computes, per element type. No tensor, no engine: the
//! [`Backend`] contract lives in [`crate::tensor::backend`] (re-exported here under its old
//! paths, `ops::Backend` and `ops::backend`), the engines in `src/engine_cpu/` and
//! `src/engine_gpu/`. See `docs/ARCHITECTURE.md`.

pub mod cast;
pub mod compute;
// Integer, bitwise, logical and float-predicate ops (issue 26).
mod nextafter;
// Float math ops (issue 26).
mod float_math;
pub mod op;
pub mod reduce;
mod special;
pub mod table;

// Compatibility re-exports (the public paths `ops::Backend` and `ops::backend` predate the
// move of the contract to the tensor layer); the architecture test allows exactly these.
pub use crate::tensor::backend;
pub use crate::tensor::backend::Backend;
pub use cast::Cast;
pub use op::{BinaryOp, TernaryOp, UnaryOp};
