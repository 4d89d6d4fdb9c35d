//! Matrix multiplication (issue 27): `matmul` with PyTorch's shape rules, `bmm`,
//! `matmul_into`, and the fused bias + activation epilogue.

mod engine;

#[allow(unused_imports)] // the engines implement it in the next commits
pub(crate) use engine::sealed::MatmulEngine;
#[allow(unused_imports)]
pub(crate) use engine::MatmulJob;
pub use engine::{Activation, MatmulBackend};
