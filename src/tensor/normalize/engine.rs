//! The engine contract of the statistics and normalisations (issue 28): what the tensor
//! layer hands an engine after its checks, and what the engine promises back.
//!
//! Every job is over **rows**: the tensor layer moves the normalised dims last (a view; a
//! contiguous copy only where the dims do not merge) and flattens the rest, so an engine
//! sees a 2-D source `[rows, n]` of any strides and writes either a row-major `[rows, n]`
//! destination (the row-to-row ops: softmax, layer norm) or a contiguous `[rows]` one (the
//! statistics: one value per row).

use crate::element::FloatElement;
use crate::error::Result;
use crate::tensor::backend::views::{TensorView, TensorViewMut};
use crate::tensor::Backend;

/// The order `p` of a vector norm ([`Tensor::norm`](crate::tensor::Tensor::norm),
/// `torch.linalg.vector_norm(x, ord)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NormOrd {
    /// `Σ |x|` (`ord=1`).
    L1,
    /// `sqrt(Σ x²)` (`ord=2`, the default).
    L2,
    /// `max |x|` (`ord=inf`); NaN if any element is NaN.
    Inf,
}

/// A row-to-row op: each output row is a function of its input row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowOp {
    /// `exp(x − max) / Σ exp(x − max)`.
    Softmax,
    /// `x − max − log Σ exp(x − max)`.
    LogSoftmax,
    /// `(x − mean) / sqrt(var + eps) · weight + bias`, `var` biased (divided by `n`).
    LayerNorm {
        /// Added to the variance.
        eps: f64,
    },
    /// `x / sqrt(mean(x²) + eps) · weight`.
    RmsNorm {
        /// Added to the mean square.
        eps: f64,
    },
}

/// A statistic of each row: one value per row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowStat {
    /// `max' + log Σ exp(x − max')`, `max'` the row's max or 0 where that is infinite
    /// (PyTorch's rule: an all `−inf` row gives `−inf`, a row with `+inf` gives `+inf`);
    /// `−inf` for an empty row.
    LogSumExp,
    /// `Σ (x − mean)² / max(0, n − correction)`, its square root if `sqrt`; the mean is
    /// written too where the engine is given a destination for it. NaN for an empty row.
    Var {
        /// Subtracted from `n` in the divisor (Bessel's correction is 1).
        correction: f64,
        /// The standard deviation instead of the variance.
        sqrt: bool,
    },
    /// A vector norm; 0 for an empty row (`Inf` of an empty row is refused by the tensor
    /// layer).
    Norm(NormOrd),
}

/// One checked row-to-row job: `dst[r, :] = op(src[r, :])` for every row `r`.
///
/// Made only by the tensor layer (`tensor/normalize/`), after its checks:
/// 1. `src` is 2-D `[rows, n]` with any strides (negative included), within its storage;
/// 2. `weight` and `bias`, present only for `LayerNorm` / `RmsNorm` (`bias` only for
///    `LayerNorm`), are 1-D `[n]` with stride 1 (or `n ≤ 1`);
/// 3. every view lives on the engine's device.
pub struct RowsJob<'v, T: FloatElement, D: Backend> {
    /// The op.
    pub op: RowOp,
    /// The input rows, `[rows, n]`.
    pub src: TensorView<'v, T, D>,
    /// Multiplies each normalised element (`[n]`).
    pub weight: Option<TensorView<'v, T, D>>,
    /// Added after the weight (`[n]`).
    pub bias: Option<TensorView<'v, T, D>>,
}

/// One checked statistics job: `dst[r] = stat(src[r, :])` (and `mean[r]` for `Var`).
///
/// Made only by the tensor layer after the checks of [`RowsJob`]'s point 1 and 3.
pub struct StatJob<'v, T: FloatElement, D: Backend> {
    /// The statistic.
    pub stat: RowStat,
    /// The input rows, `[rows, n]`.
    pub src: TensorView<'v, T, D>,
}

pub(crate) mod sealed {
    use super::*;

    /// An engine that normalises rows of `T`: private to the crate, so no caller can hand an
    /// engine an unchecked job.
    ///
    /// # Safety
    ///
    /// When a method returns `Ok`, every element of each destination's layout has been
    /// written once with a valid value, and no destination was read (the tensor layer hands
    /// [`Backend::alloc_uninit`] memory). Elements of the destinations' storages outside
    /// their layouts are untouched. The engine may assume the job's points above and:
    /// - [`NormalizeEngine::rows`]: `dst` is `[rows, n]` with strides `[n, 1]` (row-major);
    /// - [`NormalizeEngine::row_stats`]: `dst` (and `mean`) are `[rows]` with stride 1, and
    ///   `mean` is given only for [`RowStat::Var`].
    ///
    /// The destinations never overlap `src` or each other (they are fresh or exclusively
    /// borrowed).
    pub unsafe trait NormalizeEngine<T: FloatElement>: Backend {
        /// `dst[r, :] = job.op(job.src[r, :])`.
        ///
        /// # Errors
        /// The device's errors; [`crate::error::LayoutError::ShapeMismatch`] for a job that
        /// breaks the rules above.
        fn rows(
            &self,
            job: &RowsJob<'_, T, Self>,
            dst: &mut TensorViewMut<'_, T, Self>,
        ) -> Result<()>;

        /// `dst[r] = job.stat(job.src[r, :])`, and the row's mean into `mean` if given.
        ///
        /// # Errors
        /// As [`NormalizeEngine::rows`].
        fn row_stats(
            &self,
            job: &StatJob<'_, T, Self>,
            dst: &mut TensorViewMut<'_, T, Self>,
            mean: Option<&mut TensorViewMut<'_, T, Self>>,
        ) -> Result<()>;
    }
}

/// A device that computes softmax, variance and the normalisations of `T`: both engines for
/// the floats (`f16`, `bf16`, `f32`, `f64`; the half types accumulate in `f32`).
#[diagnostic::on_unimplemented(
    message = "softmax / variance / normalisation of `{T}` is not available on `{Self}`",
    label = "no `{T}` normalisation on this device",
    note = "both engines normalise f16, bf16, f32 and f64: cast integers first (`x.cast::<f32>()`)"
)]
pub trait NormalizeBackend<T: FloatElement>: sealed::NormalizeEngine<T> {}

impl<T: FloatElement, D: sealed::NormalizeEngine<T>> NormalizeBackend<T> for D {}
