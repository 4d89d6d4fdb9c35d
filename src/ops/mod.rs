//! Pointwise ops: one op table, run by the CPU engine and by the GPU kernels.

pub mod op;

pub use op::{BinaryOp, TernaryOp, UnaryOp};
