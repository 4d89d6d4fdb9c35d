//! The op traits: each pointwise op is a value (zero-sized, or carrying its scalars) that
//! gives both its CPU closure and its CUDA C expression, so the CPU engine and the GPU
//! kernels run the same definition. Adding an op is one table entry (see [`super::table`]).
//!
//! CUDA expressions are C expressions evaluated in the *compute type* of the input
//! ([`Element::CUDA_COMPUTE_TYPE`]: `float` for f16/bf16/f32, `double` for f64, the integer
//! itself for integers): inputs are named `a`, `b`, `c` (a unary op's input is `a`), scalars
//! `p0`, `p1` (already converted to the compute type). The kernel converts the expression's
//! value to the output element type with the same rules as [`Element::from_f64`] for
//! floats-to-ints (truncate, saturate, NaN to 0) and round-to-nearest for floats.
//! The expression may call the helpers of `kernels/ops.cuh` (`ts_add`, `ts_div`, `ts_max`,
//! ...), which mirror [`crate::element::Numeric`]'s total semantics on the GPU.

use crate::element::Element;

/// A pointwise op of one input: `out[i] = op(a[i])`.
pub trait UnaryOp<T: Element>: Copy + Send + Sync + 'static {
    /// The element type written.
    type Output: Element;
    /// Name in errors and kernel cache keys (unique per op).
    const NAME: &'static str;
    /// CUDA C expression in `a`, `p0`, `p1`.
    const CUDA: &'static str;
    /// The op on the CPU.
    fn cpu(&self, a: T) -> Self::Output;
    /// Scalar parameters (`p0`, `p1`), e.g. the `s` of "add a scalar".
    fn scalars(&self) -> [T; 2] {
        [T::ZERO; 2]
    }
}

/// A pointwise op of two inputs of one type: `out[i] = op(a[i], b[i])`.
pub trait BinaryOp<T: Element>: Copy + Send + Sync + 'static {
    /// The element type written (`bool` for comparisons).
    type Output: Element;
    /// Name in errors and kernel cache keys.
    const NAME: &'static str;
    /// CUDA C expression in `a`, `b`, `p0`, `p1`.
    const CUDA: &'static str;
    /// The op on the CPU.
    fn cpu(&self, a: T, b: T) -> Self::Output;
    /// Scalar parameters.
    fn scalars(&self) -> [T; 2] {
        [T::ZERO; 2]
    }
}

/// A pointwise op of three inputs: `out[i] = op(a[i], b[i], c[i])`. The first input may have
/// another type than the other two (`where(mask, x, y)` takes a `bool` mask).
pub trait TernaryOp<A: Element, T: Element>: Copy + Send + Sync + 'static {
    /// The element type written.
    type Output: Element;
    /// Name in errors and kernel cache keys.
    const NAME: &'static str;
    /// CUDA C expression in `a` (compute type of `A`), `b`, `c` (compute type of `T`).
    const CUDA: &'static str;
    /// The op on the CPU.
    fn cpu(&self, a: A, b: T, c: T) -> Self::Output;
}
