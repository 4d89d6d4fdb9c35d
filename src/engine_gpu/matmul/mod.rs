//! The GPU engine of matrix multiplication (issue 27): [`MatmulEngine`] for [`Gpu`] through
//! cuBLASLt, loaded at run time (a missing library is [`GpuError::NoCublasLt`]).
//!
//! Every call is queued on the GPU's default stream, in stream order with the buffers it
//! touches (`access_read` / `access_write` right before the call, as every launch does), and
//! is capturable in a CUDA graph: the workspace and any temporary come from the caching
//! allocator on that stream and are freed in stream order; nothing synchronises.
//!
//! # Layouts
//! Row-major `C = A·B` is cuBLASLt's column-major `Cᵀ = Bᵀ·Aᵀ` (see `layout`). Without a
//! copy:
//! - an operand whose matrix has a unit stride on one of its two dims (contiguous, transposed,
//!   stepped rows or columns, size-1 dims of any stride);
//! - a destination whose rows have a unit stride (`[.., m, n]` with stride 1 on `n`);
//! - batch dims whose strides nest go as one strided batch (broadcast batch dims, stride 0,
//!   included); other batch dims are looped, one cuBLASLt call each.
//!
//! Copied first (one copy kernel into contiguous memory): an operand with two non-unit
//! strides, a negative (flipped) or zero (broadcast) stride inside its matrix, or rows that
//! overlap; a strided bias (or one not 16-byte aligned). A destination whose rows are not
//! unit-stride (a transposed `out`) is computed into a temporary and copied back (read first
//! when `beta != 0`). When cuBLASLt has no algorithm for the layout as given (an alignment it
//! does not support), every operand is copied and the call retried.
//!
//! # Epilogue
//! Bias, `Relu` and `GeluTanh` are cuBLASLt epilogues (`BIAS`, `RELU(_BIAS)`, `GELU(_BIAS)`;
//! cuBLASLt's GELU is the tanh form). Exact `Gelu` (erf) has no epilogue: the crate's `gelu`
//! kernel runs in place after the product, one extra pass. Where cuBLASLt has no algorithm
//! with the epilogue (some element types), the bias add and the activation run as pointwise
//! kernels after it.
//!
//! # Element types
//! `f16` and `bf16` multiply with f32 accumulation (f32 `alpha`/`beta`), `f32` in f32 or, with
//! `allow_tf32`, on TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`), `f64` in f64.

mod cublaslt;
mod layout;
mod operands;
mod plan;
mod problem;
mod run;

#[cfg(test)]
mod tests;

use crate::element::FloatElement;
use crate::error::Result;
use crate::runtime::Gpu;
use crate::tensor::matmul::MatmulEngine;
use crate::tensor::matmul::MatmulJob;
use crate::tensor::TensorViewMut;

// SAFETY: `run::matmul` writes every element of the destination's layout once: cuBLASLt
// writes every element of D (each strided batch, each looped call), or a temporary that one
// copy kernel then copies over every destination element; the pointwise epilogue kernels
// read and write each element in place after that, on the same stream. With `beta == 0` it
// never reads the destination: cuBLASLt does not read C when beta is zero, and a temporary is
// filled from the destination only when `beta != 0`. Elements outside the layout are not
// addressed: every matrix layout handed to cuBLASLt is derived from the view's own shape and
// strides (a valid, non-overlapping layout within its storage).
unsafe impl<T: FloatElement> MatmulEngine<T> for Gpu {
    fn matmul(
        &self,
        job: &MatmulJob<'_, T, Self>,
        dst: &mut TensorViewMut<'_, T, Self>,
    ) -> Result<()> {
        problem::check(self, job, dst)?;
        run::matmul(self, job, dst)
    }
}
