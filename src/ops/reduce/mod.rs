//! Reductions: what `sum`, `prod`, `mean`, `max`, `min`, `argmax`, `argmin`, `sum_abs` and
//! `sum_sq` compute, per element type. The CPU semantics (identity, map, combine, project) and the name of the CUDA
//! functor (`kernels/reduce.cuh`) of each op sit side by side, as the pointwise table does for
//! its ops; the engines run them (`src/engine_cpu/reduce.rs`, `src/engine_gpu/reduce/`), the
//! tensor methods are in [`crate::tensor::reduce`], and docs/REDUCTIONS.md gives the design.
//!
//! # Accumulation (PyTorch's rules)
//!
//! | input | `sum` / `prod` result | accumulated in | `mean` | `max` / `min` | `argmax` / `argmin` |
//! | --- | --- | --- | --- | --- | --- |
//! | `f32` | `f32` | `f32` | `f32` | `f32` | `i64` |
//! | `f64` | `f64` | `f64` | `f64` | `f64` | `i64` |
//! | `f16`, `bf16` | same type | `f32`, rounded once at the end | same type | same type | `i64` |
//! | `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`, `u64` | `i64` | `i64`, wrapping | not defined | same type | `i64` |
//! | `bool` | `i64` (counts `true`) | `i64` | not defined | not defined | not defined |
//!
//! `sum_abs` (`Σ |x|`, BLAS/Caffe `asum`, PyTorch's `x.abs().sum()` or
//! `torch.linalg.vector_norm(x, 1)`) and `sum_sq` (`Σ x²`, Caffe `sumsq`, PyTorch's
//! `(x * x).sum()` or `vector_norm(x) ** 2`) take floats only, like `mean`, and accumulate as
//! `sum` does: `f32` and `f64` in their own type (as Caffe's `asum` / `dot` do), `f16` and
//! `bf16` in `f32`, rounded once at the end. Each is one pass with no temporary: the absolute
//! value or square is taken in the accumulation type as the element is folded.
//!
//! - **Integer sums and products** are `i64` and wrap on overflow, as PyTorch's `int64`
//!   results do (PyTorch promotes every integer and `bool` sum to `int64`); the result is the
//!   exact value modulo 2^64 whatever the order of evaluation. A `u64` sum or product is
//!   the same 64 bits read as two's complement: `.cast::<u64>()` of it is the unsigned
//!   result modulo 2^64.
//! - **Float sums** are accumulated in the compute type (`f32` for the half types, as PyTorch
//!   and CUDA do), in an order each engine chooses (trees on the GPU, lanes and pairwise
//!   blocks on the CPU), so two engines may differ in the last bits; the error of any order is
//!   at most `(n - 1) * eps * Σ|x|` (Higham, *Accuracy and Stability*, §4.2).
//! - **`mean`** is the sum divided by the count, in the accumulation type, rounded once to the
//!   element type; the mean of no elements is NaN (0 / 0), as in PyTorch.
//! - **`max` / `min`** propagate NaN: a reduction that meets a NaN returns NaN (PyTorch's
//!   `max`, `amax`). The sign of a zero result is unspecified when `0.0` and `-0.0` tie.
//! - **`argmax` / `argmin`** return the index of the first maximal (minimal) element in
//!   row-major order of the reduced dims; a NaN counts as larger (for `argmax`) and smaller
//!   (for `argmin`) than every number, so the first NaN wins, as in PyTorch. Ties between
//!   `0.0` and `-0.0` are ties.
//! - **Empty reductions**: `sum`, `sum_abs` and `sum_sq` give 0, `prod` 1, `mean` NaN; `max`, `min`, `argmax` and
//!   `argmin` have no identity and return
//!   [`LayoutError::EmptyReduction`](crate::error::LayoutError::EmptyReduction).
//!
//! Every combine is associative and commutative (for floats, up to rounding in `sum`, `prod`
//! and `mean`): `argmax` compares (value, index) pairs under a total order, so the first index
//! wins whatever order an engine visits the elements in.

mod element;
mod kind;
mod op;

pub use element::{Accumulator, MeanElement, ReduceElement};
pub use kind::ReduceKind;
pub use op::{ArgMax, ArgMin, Max, Mean, Min, Prod, Reduction, Sum, SumAbs, SumSq};
