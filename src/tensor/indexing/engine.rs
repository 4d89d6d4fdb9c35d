//! The engine contract of the indexing ops: two primitives, a gather and a scatter along one
//! dim, that every public indexing method (`gather`, `index_select`, `take`, `embedding`,
//! `scatter*`, `index_add`, `index_copy`, `index_fill`, `one_hot`, `bincount`,
//! `masked_select`, `masked_scatter`) is built from in the tensor layer.
//!
//! The tensor layer checks shapes before it builds a job, and **every index value** unless
//! the engine finds bad indices itself where that loses nothing ([`IndexCheck`]): the CPU
//! engine checks each index before it writes anything, so its jobs are never pre-checked; the
//! GPU's gather and its scatters into a tensor the op made itself (out-of-place ops, steps on
//! a copy) report a bad index from the kernel that meets it, and the op drops its result;
//! only a GPU scatter into the caller's tensor is checked first (one kernel over the index).
//! Engines never access memory outside a view for any index value: a GPU kernel skips an
//! access whose index is out of range.
//!
//! [`LayoutError::IndexOutOfRange`]: crate::error::LayoutError::IndexOutOfRange

use crate::element::{Element, Numeric};
use crate::error::Result;
use crate::ops::reduce::ReduceElement;
use crate::tensor::backend::views::{TensorView, TensorViewMut};
use crate::tensor::Backend;

mod index_sealed {
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for i32 {}
}

/// The element types of index tensors: `i64` (PyTorch's `LongTensor`) and `i32` (which
/// PyTorch also takes for `index_select`, `gather`, `scatter` on recent versions).
pub trait IndexElement: Numeric + ReduceElement + index_sealed::Sealed {
    /// The value as `i64` (exact).
    fn to_i64(self) -> i64;
    /// `v` as this type (the caller knows it fits: a position along a dim of a tensor whose
    /// index type is this one, or a count that the caller checked).
    fn from_i64(v: i64) -> Self;
}

impl IndexElement for i64 {
    fn to_i64(self) -> i64 {
        self
    }
    fn from_i64(v: i64) -> Self {
        v
    }
}

impl IndexElement for i32 {
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn from_i64(v: i64) -> Self {
        // Callers pass values that fit (see the trait); saturate rather than wrap otherwise.
        i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX })
    }
}

/// How a scatter combines a source value with the destination element it lands on
/// (`scatter_reduce`'s `reduce`; `mean` is a sum and a count in the tensor layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScatterReduce {
    /// `dst = src` (`scatter`; with duplicate indices, one of the sources wins: the last in
    /// row-major order on the CPU, unspecified on the GPU, as in PyTorch).
    Assign,
    /// `dst += src` (`scatter_add`, `reduce="sum"`).
    Sum,
    /// `dst *= src` (`reduce="prod"`).
    Prod,
    /// `dst = max(dst, src)`, NaN propagating (`reduce="amax"`).
    Amax,
    /// `dst = min(dst, src)`, NaN propagating (`reduce="amin"`).
    Amin,
    /// `dst = sum / count`: the tensor layer's name for `reduce="mean"`; never sent to an
    /// engine (it runs as [`ScatterReduce::Sum`] and a count).
    Mean,
}

impl ScatterReduce {
    /// PyTorch's string for the reduction (`"sum"`, `"prod"`, `"mean"`, `"amax"`, `"amin"`;
    /// `"assign"` for a plain scatter).
    pub fn name(self) -> &'static str {
        match self {
            ScatterReduce::Assign => "assign",
            ScatterReduce::Sum => "sum",
            ScatterReduce::Prod => "prod",
            ScatterReduce::Amax => "amax",
            ScatterReduce::Amin => "amin",
            ScatterReduce::Mean => "mean",
        }
    }
}

/// One checked gather: `dst[p] = src[p with p[dim] = index[p]]` for every position `p` of
/// `dst`'s shape (negative indices count from the end when `wrap`).
///
/// Made only by the tensor layer (`tensor/indexing/`), after its checks:
/// 1. `src`, `index` and the destination have one rank; `index` has the destination's shape;
///    `src` has it too in every dim but `dim` (the tensor layer narrows it).
/// 2. Every index `i` satisfies `0 <= i < src.shape[dim]`, or `-size <= i < size` when
///    `wrap` (then `i + size` is used for negative `i`).
/// 3. Every view lives on the engine's device.
pub struct GatherJob<'v, T: Element, I: IndexElement, D: Backend> {
    /// The tensor read.
    pub src: TensorView<'v, T, D>,
    /// The positions along `dim`, one per destination element (broadcast views allowed).
    pub index: TensorView<'v, I, D>,
    /// The dim indexed (resolved).
    pub dim: usize,
    /// Negative indices count from the end (`take`); otherwise they are out of range.
    pub wrap: bool,
    /// The public op, for errors.
    pub op: &'static str,
}

/// One checked scatter into the destination: for every position `p` of `index`'s shape,
/// `dst[p with p[dim] = index[p]] = reduce(dst[..], src[p])` (`value` where `src` is `None`).
///
/// Made only by the tensor layer, after its checks:
/// 1. `index`, `src` (when present) and the destination have one rank; `src` has `index`'s
///    shape (the tensor layer narrows it); the destination has it in every dim but `dim`.
/// 2. When `range_checked`, every index is in range as in [`GatherJob`] (rule 2). Otherwise
///    the engine finds out-of-range indices itself (its [`IndexCheck`] says how) and the
///    destination is a tensor the op made, dropped unread on an error.
/// 3. The destination holds valid values: it is read (by every reduction but `Assign`) and
///    written only at the positions indexed.
pub struct ScatterJob<'v, T: Element, I: IndexElement, D: Backend> {
    /// The positions along `dim` in the destination.
    pub index: TensorView<'v, I, D>,
    /// The values scattered, or `None` to scatter `value` everywhere.
    pub src: Option<TensorView<'v, T, D>>,
    /// The scalar scattered when `src` is `None`.
    pub value: T,
    /// The dim indexed (resolved).
    pub dim: usize,
    /// Negative indices count from the end (`index_fill`).
    pub wrap: bool,
    /// How a value combines with the destination ([`ScatterReduce::Mean`] is never sent).
    pub reduce: ScatterReduce,
    /// Whether the tensor layer checked every index (rule 2); `false` only where the
    /// engine's [`IndexCheck`] lets it find them itself.
    pub range_checked: bool,
    /// The public op, for errors.
    pub op: &'static str,
}

/// When an engine's gather and scatter find out-of-range indices themselves (its
/// `IndexEngine::CHECKS`), so that the tensor layer need not read the index tensor first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexCheck {
    /// Never: the tensor layer checks every index before each call.
    Never,
    /// Before anything is written: an out-of-range index is
    /// [`LayoutError::IndexOutOfRange`] with the destination untouched, so no job needs a
    /// check first (the CPU).
    BeforeWriting,
    /// While running: the call returns [`LayoutError::IndexOutOfRange`] after it, with the
    /// destination's contents unspecified (valid values, never out-of-view writes). The
    /// tensor layer skips its check only where the destination is a tensor the op made and
    /// drops on an error: a gather's result, a scatter into a copy (the GPU).
    AfterWriting,
}

impl IndexCheck {
    /// Whether a scatter into a destination that `scratch` says the op made itself (true)
    /// or the caller owns (false) needs the tensor layer's check first.
    pub(crate) fn scatter_needs_check(self, scratch: bool) -> bool {
        match self {
            IndexCheck::Never => true,
            IndexCheck::BeforeWriting => false,
            IndexCheck::AfterWriting => !scratch,
        }
    }
}

pub(crate) mod sealed {
    use super::*;

    /// An engine that gathers and scatters elements of `T`: private to the crate, so no
    /// caller can hand an engine an unchecked job.
    ///
    /// # Safety
    ///
    /// When [`IndexEngine::gather`] returns `Ok`, every element of `dst`'s layout has been
    /// written once with a valid value and `dst` was not read (the tensor layer hands it
    /// [`Backend::alloc_uninit`] memory). [`IndexEngine::scatter`] writes only elements of
    /// `dst`'s layout, only valid values. For **any** index values (the tensor layer's
    /// checks notwithstanding) no access leaves a view's layout: an out-of-range index is an
    /// error before anything is written (the CPU) or a skipped access (a GPU kernel, whose
    /// outputs are then unspecified but valid). Elements of `dst`'s storage outside its layout
    /// are untouched.
    pub unsafe trait IndexEngine<T: Element>: Backend {
        /// When [`IndexEngine::gather`] and the scatters find an out-of-range index
        /// themselves and return [`crate::error::LayoutError::IndexOutOfRange`] for it
        /// ([`IndexCheck`]); a gather's destination is always the op's own result, dropped
        /// unread on an error. A scatter whose job is not `range_checked` must find them.
        const CHECKS: IndexCheck = IndexCheck::Never;

        /// Runs a [`GatherJob`] into `dst`.
        ///
        /// # Errors
        /// [`crate::error::LayoutError::IndexOutOfRange`], shape errors for a job that breaks
        /// [`GatherJob`]'s rules, the device's errors.
        fn gather<I: IndexElement>(
            &self,
            job: &GatherJob<'_, T, I, Self>,
            dst: &mut TensorViewMut<'_, T, Self>,
        ) -> Result<()>;

        /// Checks, before a scatter, that every value of `index` lies in `[0, size)` (or
        /// `[-size, size)` with `wrap`) along `dim`, if this engine has a check of its own:
        /// `Ok(true)` when it checked and found every value in range, `Ok(false)` when it
        /// has none (the default), and the tensor layer reads the index's min and max.
        ///
        /// # Errors
        /// [`crate::error::LayoutError::IndexOutOfRange`] naming a value out of range; the
        /// device's errors.
        fn check_indices<I: IndexElement>(
            &self,
            op: &'static str,
            index: &TensorView<'_, I, Self>,
            dim: usize,
            size: usize,
            wrap: bool,
        ) -> Result<bool> {
            let _ = (op, index, dim, size, wrap);
            Ok(false)
        }

        /// Runs a [`ScatterJob`] into `dst` as [`ScatterReduce::Assign`] (the job's
        /// `reduce` is not read).
        ///
        /// # Errors
        /// As [`IndexEngine::gather`].
        fn scatter_assign<I: IndexElement>(
            &self,
            job: &ScatterJob<'_, T, I, Self>,
            dst: &mut TensorViewMut<'_, T, Self>,
        ) -> Result<()>;
    }

    /// An engine that scatters `T` with a reduction (`Sum`, `Prod`, `Amax`, `Amin`).
    ///
    /// # Safety
    /// As [`IndexEngine`]'s, for [`ScatterReduceEngine::scatter_reduce`].
    pub unsafe trait ScatterReduceEngine<T: Numeric>: IndexEngine<T> {
        /// Runs a [`ScatterJob`] with any reduction but `Mean` into `dst`.
        ///
        /// # Errors
        /// As [`IndexEngine::gather`].
        fn scatter_reduce<I: IndexElement>(
            &self,
            job: &ScatterJob<'_, T, I, Self>,
            dst: &mut TensorViewMut<'_, T, Self>,
        ) -> Result<()>;
    }
}

/// A device that gathers and scatters elements of `T`: both engines, every element type.
#[diagnostic::on_unimplemented(
    message = "indexing `{T}` is not available on `{Self}`",
    label = "no `{T}` gather / scatter on this device",
    note = "both the CPU and the GPU index every element type"
)]
pub trait IndexBackend<T: Element>: sealed::IndexEngine<T> {}

impl<T: Element, D: sealed::IndexEngine<T>> IndexBackend<T> for D {}

/// A device that scatters `T` with a reduction (`scatter_add`, `index_add`, `scatter_reduce`,
/// `bincount` with weights): the CPU for every numeric type; the GPU for `f32`, `f64`, `f16`,
/// `bf16`, `i32`, `i64`, `u32` and `u64` (the types its atomics reach).
#[diagnostic::on_unimplemented(
    message = "scatter with a reduction of `{T}` is not available on `{Self}`",
    label = "no `{T}` scatter_add / index_add / scatter_reduce on this device",
    note = "the GPU scatters with atomics on f32, f64, f16, bf16, i32, i64, u32 and u64; cast narrow integers first (`x.cast::<i32>()`); the CPU takes every numeric type"
)]
pub trait ScatterBackend<T: Numeric>: sealed::ScatterReduceEngine<T> {}

impl<T: Numeric, D: sealed::ScatterReduceEngine<T>> ScatterBackend<T> for D {}
