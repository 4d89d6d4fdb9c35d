//! Statistics and normalisations (issue 28), on both engines, with PyTorch's names and
//! semantics: [`Tensor::softmax`], [`Tensor::log_softmax`], [`Tensor::logsumexp`],
//! [`Tensor::var`] / [`Tensor::std`] / [`Tensor::var_mean`] / [`Tensor::std_mean`] (with
//! `correction`), [`Tensor::norm`] (p = 1, 2, inf), [`Tensor::layer_norm`],
//! [`Tensor::rms_norm`] and [`Tensor::group_norm`].
//!
//! # Design
//!
//! - **Every op is a job over rows.** The normalised dims are moved last (a permuted view)
//!   and the rest flattened, so an engine sees `[rows, n]`; the source is copied only where
//!   its dims do not merge into one row stride. Each engine then runs one pass per row (on
//!   the GPU one kernel, the row held in registers: see `engine_gpu/normalize`).
//! - **Results** of the row-to-row ops have the input's shape; over the last dim they are
//!   row-major, over another dim they keep the permuted order of the computation (a strided
//!   layout, as a view of it would have), so no second pass reorders them. The `_into` forms
//!   write any destination view of the input's shape.
//! - **Element types**: the four floats; `f16` / `bf16` are computed in `f32` and rounded
//!   once. Integers are a compile error naming `cast` ([`NormalizeBackend`]).
//! - **Semantics as PyTorch**: softmax of a row containing `+inf`, or of a row of only
//!   `−inf`, is NaN; NaN propagates through every op; the variance divides by
//!   `max(0, n − correction)` (NaN for one element with `correction = 1`); the statistics of
//!   an empty row are NaN (`var`, `std`, mean), `−inf` (`logsumexp`) or 0 (`norm` 1 and 2).
//! - **Errors** are typed: a bad dim ([`LayoutError::DimOutOfRange`], [`LayoutError::DuplicateDim`]),
//!   a `normalized_shape` that is not the input's trailing dims
//!   ([`LayoutError::NormalizedShapeMismatch`]), a weight or bias of the wrong shape
//!   ([`LayoutError::NormParamShape`]), groups that do not divide the channels
//!   ([`LayoutError::GroupNormGroups`]).
//!
//! Inside fused expressions, the same ops are row stages (`x.lazy().softmax(-1) * &y`,
//! `x.lazy().layer_norm(eps) * &w + &b`): see [`crate::tensor::expr::RowStage`].

mod engine;
mod layer;
mod rows;
mod softmax;
mod stats;

#[allow(unused_imports)] // implemented by the engines
pub(crate) use engine::sealed::NormalizeEngine;
pub use engine::{NormOrd, NormalizeBackend};
pub(crate) use engine::{RowOp, RowStat, RowsJob, StatJob};

#[allow(unused_imports)] // the doc links above
use crate::error::LayoutError;
#[allow(unused_imports)] // the doc links above
use crate::tensor::Tensor;
