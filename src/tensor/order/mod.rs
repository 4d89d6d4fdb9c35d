//! Scans and sorting along a dim (issue 28), on both engines, with PyTorch's names and
//! semantics: [`Tensor::cumsum`], [`Tensor::cumprod`], [`Tensor::cummax`],
//! [`Tensor::cummin`], [`Tensor::logcumsumexp`] (and their `_into` forms); [`Tensor::sort`],
//! [`Tensor::argsort`], [`Tensor::topk`], [`Tensor::kthvalue`], [`Tensor::unique`],
//! [`Tensor::searchsorted`].
//!
//! # Design
//!
//! - **Rows.** Each op works along one dim (negative from the end; a 0-d tensor takes `0` or
//!   `-1`). The tensor layer moves that dim last with a permuted view, copies it to row-major
//!   only when that view is not row-major already, and hands the engine a `[rows, n]`
//!   source and row-major destinations (the sealed traits of `engine.rs`). Results come back as
//!   the destinations' storage viewed in the input's dim order: for a dim other than the
//!   last, a permuted (not row-major) layout, with no copy; `contiguous()` makes it
//!   row-major.
//! - **Types as PyTorch.** `cumsum` / `cumprod` of integers and `bool` are `i64` (wrapping),
//!   of floats the same float (`f16` / `bf16` accumulated in `f32`); indices are `i64`;
//!   `logcumsumexp` takes floats (a compile error otherwise).
//! - **Order.** One total order for every sort-like op ([`SortElement::sort_key`]): NaN
//!   after `+inf` (so last ascending, first descending), `-0.0` equal to `0.0`. Sorts are
//!   stable on both engines; `topk` breaks ties by the lower index.
//! - **Errors** are typed: [`LayoutError::DimOutOfRange`], [`LayoutError::KOutOfRange`],
//!   [`LayoutError::SortedSequenceShape`].
//!
//! [`LayoutError::DimOutOfRange`]: crate::error::LayoutError::DimOutOfRange
//! [`LayoutError::KOutOfRange`]: crate::error::LayoutError::KOutOfRange
//! [`LayoutError::SortedSequenceShape`]: crate::error::LayoutError::SortedSequenceShape
//! [`Tensor::cumsum`]: crate::tensor::Tensor::cumsum
//! [`Tensor::cumprod`]: crate::tensor::Tensor::cumprod
//! [`Tensor::cummax`]: crate::tensor::Tensor::cummax
//! [`Tensor::cummin`]: crate::tensor::Tensor::cummin
//! [`Tensor::logcumsumexp`]: crate::tensor::Tensor::logcumsumexp
//! [`Tensor::sort`]: crate::tensor::Tensor::sort
//! [`Tensor::argsort`]: crate::tensor::Tensor::argsort
//! [`Tensor::topk`]: crate::tensor::Tensor::topk
//! [`Tensor::kthvalue`]: crate::tensor::Tensor::kthvalue
//! [`Tensor::unique`]: crate::tensor::Tensor::unique
//! [`Tensor::searchsorted`]: crate::tensor::Tensor::searchsorted

mod engine;
mod key;
mod rows;
mod scan;
mod sort;
mod unique;

#[allow(unused_imports)] // implemented by the engines
pub(crate) use engine::sealed::{ScanEngine, SortEngine};
pub(crate) use engine::{check_rows, CumOp, Extreme};
pub use engine::{ScanBackend, SortBackend};
pub use key::SortElement;
pub use sort::ValuesIndices;
pub use unique::Unique;
