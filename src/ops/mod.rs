//! Pointwise ops: one op table, run by the CPU engine and by the GPU kernels.
//!
//! - [`op`]: the [`UnaryOp`] / [`BinaryOp`] / [`TernaryOp`] traits (CPU closure + CUDA
//!   expression per op).
//! - [`table`]: every op, defined once, with a table of bounds and CUDA expressions.
//! - [`cast`]: element conversion ([`Cast`]).
//! - [`backend`]: the [`Backend`] trait engines implement.
//! - `cpu`: the CPU engine (`impl Backend for Cpu`).

pub mod backend;
pub mod cast;
pub mod compute;
pub(crate) mod cpu;
pub mod op;
pub mod table;

pub use backend::Backend;
pub use cast::Cast;
pub use op::{BinaryOp, TernaryOp, UnaryOp};
