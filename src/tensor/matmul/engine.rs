//! The engine contract of matrix multiplication: what `Tensor::matmul` and its relatives hand
//! an engine after checking shapes, and what the engine promises back.
//!
//! The tensor layer resolves PyTorch's shape rules (1-D operands, broadcast batch dims) into
//! views of one rank `r ≥ 2` before an engine sees them: `a` is `[B.., m, k]`, `b` is
//! `[B.., k, n]` and the destination `[B.., m, n]`, with the same batch dims `B..` on all three
//! (a broadcast batch dim of an operand is a zero stride). An engine only maps strided views
//! onto its library's calls (transpose flags, leading dimensions, batch strides) and copies
//! where no call can express a layout.

use crate::element::Element;
use crate::error::Result;
use crate::tensor::backend::views::{TensorView, TensorViewMut};
use crate::tensor::Backend;

/// The activation a fused matmul epilogue applies to `alpha·A·B (+ beta·C) (+ bias)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Activation {
    /// `max(x, 0)` (`torch.relu`).
    Relu,
    /// `x·Φ(x)` with the exact normal CDF (`F.gelu(x)`, `approximate="none"`).
    Gelu,
    /// The tanh approximation of GELU (`F.gelu(x, approximate="tanh")`), the form cuBLASLt's
    /// epilogue computes.
    GeluTanh,
}

/// One checked batched product for an engine: `dst = act(alpha·a·b + beta·dst + bias)`.
///
/// Made only by the tensor layer (`tensor/matmul/`), after its checks:
/// 1. `a`, `b` and the destination have one rank `r ≥ 2`; their first `r − 2` dims (the batch
///    dims) are equal; `a` is `[.., m, k]`, `b` is `[.., k, n]`, the destination `[.., m, n]`.
/// 2. `bias`, when present, has shape `[n]` (any stride, stride 0 included).
/// 3. Every view lives on the engine's device (checked when the views were made).
/// 4. `beta == T::ZERO` means the destination is **not read** (it may be uninitialised);
///    otherwise it holds valid values and is read once per element before it is written.
pub struct MatmulJob<'v, T: Element, D: Backend> {
    /// The left operand, `[B.., m, k]`.
    pub a: TensorView<'v, T, D>,
    /// The right operand, `[B.., k, n]`.
    pub b: TensorView<'v, T, D>,
    /// Scales the product (Caffe's `alpha`; 1 for `matmul`).
    pub alpha: T,
    /// Scales the destination's current value (Caffe's `beta`; 0 for `matmul`: not read).
    pub beta: T,
    /// Added to every row of the result, `[n]`, before the activation.
    pub bias: Option<TensorView<'v, T, D>>,
    /// Applied last.
    pub activation: Option<Activation>,
    /// `f32` products may use TF32 tensor cores (PyTorch's
    /// `torch.backends.cuda.matmul.allow_tf32`); ignored by engines without them and for
    /// other element types.
    pub allow_tf32: bool,
}

pub(crate) mod sealed {
    use super::*;

    /// An engine that multiplies matrices of `T`: private to the crate, so no caller can hand
    /// an engine an unchecked job.
    ///
    /// # Safety
    ///
    /// When [`MatmulEngine::matmul`] returns `Ok`, every element of `dst`'s layout has been
    /// written once with a valid value, and when `job.beta` is zero `dst` was not read: the
    /// tensor layer hands it [`Backend::alloc_uninit`] memory. Elements of `dst`'s storage
    /// outside its layout are untouched. A failed call may have written part of `dst`, never
    /// an invalid value.
    pub unsafe trait MatmulEngine<T: Element>: Backend {
        /// `dst = act(alpha·a·b + beta·dst + bias)` for every batch index (see [`MatmulJob`]).
        ///
        /// # Errors
        /// The device's errors (a missing library is a typed error, never a panic); for a
        /// job that breaks [`MatmulJob`]'s rules, [`crate::error::LayoutError::ShapeMismatch`].
        fn matmul(
            &self,
            job: &MatmulJob<'_, T, Self>,
            dst: &mut TensorViewMut<'_, T, Self>,
        ) -> Result<()>;
    }
}

/// A device that multiplies matrices of `T`: the CPU for every [`Numeric`] type (integers
/// wrap as PyTorch's CPU does), the GPU for the floats (`f16`, `bf16`, `f32`, `f64`).
///
/// [`Numeric`]: crate::element::Numeric
#[diagnostic::on_unimplemented(
    message = "matrix multiply of `{T}` is not available on `{Self}`",
    label = "no `{T}` matmul on this device",
    note = "the GPU multiplies f16, bf16, f32 and f64; the CPU also multiplies the integer types; bool has no matmul: cast first (`x.cast::<f32>()`)"
)]
pub trait MatmulBackend<T: Element>: sealed::MatmulEngine<T> {}

impl<T: Element, D: sealed::MatmulEngine<T>> MatmulBackend<T> for D {}
