//! The op table: every pointwise op defined once, its CPU closure next to its CUDA expression.
//!
//! Each op is a zero-sized type (or a tuple struct carrying its scalars) implementing
//! [`UnaryOp`], [`BinaryOp`] or [`TernaryOp`] for every element type its bound allows. CUDA
//! expressions follow the conventions of [`super::op`]: inputs `a`, `b`, `c` and scalars `p0`,
//! `p1` in the compute type, helpers from `kernels/ops.cuh` (`ts_*`), and CUDA math functions
//! that have `float` and `double` overloads. Integer literals in an expression take the type of
//! the float they meet, and `(decltype(a))k` writes a constant in the compute type, so each
//! expression type-checks for every element type its bound allows. Float ops compute in the
//! compute type on the CPU too ([`super::compute`]), so half types round once, like the GPU.
//!
//! The table itself is the three lists below, `for_each_unary_op!`, `for_each_binary_op!` and
//! `for_each_ternary_op!`: each entry is one op (its type, bound, output, kernel name,
//! CUDA expression, CPU closure and, after `=>`, its tensor method names and their doc line).
//! Everything else is generated from them: the op types here, the run-time lists
//! [`UNARY_OPS`], [`BINARY_OPS`] and [`TERNARY_OPS`] (whose docs show each list as a table of
//! op, type, bound, output and CUDA expression), and the `a.op()`, `a.op_into(&mut out)` and
//! `a.op_(..)` methods of the tensor types (`src/tensor/ops.rs`). Conversions are not in the
//! table: `cast_U` is [`Cast<U>`](super::cast::Cast), any [`Element`] to any, CUDA `a` (the
//! store converts).
//!
//! Semantics worth knowing: integer arithmetic wraps and integer division by zero gives 0
//! ([`Numeric`]); `maximum`, `minimum` and both clamps propagate NaN (PyTorch's `maximum`);
//! `relu(NaN)` is NaN and `relu(-0.0)` is `+0.0`; on the GPU, `sigmoid` and `silu`
//! (`ts_sigmoid`, `ts_silu` in `kernels/ops.cuh`) divide by `1 + e^-|a|` without an IEEE
//! division, within the same tolerances; `round` rounds half to even (CUDA `rint`,
//! `torch.round`); `fma` and `lerp` use one fused multiply-add, so NVRTC's `--fmad`
//! contraction cannot make the GPU differ from the CPU; comparisons with NaN are false except
//! `ne`; `exp` on `f32` is vectorised on the CPU (within 1 ulp).
//!
//! Activations (`torch.nn.functional`, float types, the formulas and NaN behaviour of
//! PyTorch's kernels): `relu6`, `leaky_relu`, `elu`, `selu`, `celu`, `softplus`, `softsign`,
//! `mish`, `hardtanh`, `hardsigmoid`, `hardswish`, `logsigmoid`, `tanhshrink`, `softshrink`,
//! `hardshrink`, `threshold`, `gelu_tanh` (`approximate='tanh'`) and the binary `prelu`.
//! Their methods take every parameter; PyTorch's defaults are `leaky_relu(0.01)`,
//! `elu(1.0)`, `celu(1.0)`, `softplus(1.0, 20.0)`, `hardtanh(-1.0, 1.0)`, `softshrink(0.5)`
//! and `hardshrink(0.5)` (`threshold` has none). `softplus` and `logsigmoid` use `log1p`,
//! `elu`, `selu` and `celu` use `expm1`, so small results keep their precision
//! (`softplus(-30)` is `9.36e-14`, not 0).

use super::compute::{in_compute, ComputeMath};
use super::float_math::{self, FloatMath};
use super::op::{sealed::Sealed, BinaryOp, TernaryOp, UnaryOp};
use crate::element::{Element, FloatElement, Numeric, Signed};
// Integer, bitwise, logical and float-predicate ops (issue 26).
pub use super::nextafter::NextAfter;
use crate::element::{Bitwise, DivRem, Integer};

/// One row of the op table, for tools, tests and kernel precompilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The op's `NAME`.
    pub name: &'static str,
    /// The element bound (`"Numeric"`, ...).
    pub bound: &'static str,
    /// The op's `CUDA` expression.
    pub cuda: &'static str,
}

// The entry grammar, one op per entry (the bracketed parts are optional):
//
//     /// Doc of the op type.
//     Name[(p, q)]: Bound => Output, "kernel_name", "CUDA expression", |a| cpu
//         [=> method, method_into[, method_]: "doc line"];
//
// Binary entries take `|a, b|`; ternary entries write the first input's type before the
// bound, `Name: [T] Bound => ...` or `[bool]`, and take `|a, b, c|`. `(p, q)` are the scalars
// an op carries (`p0`, `p1` in CUDA), on unary entries and on ternary entries whose first
// input is `T` (`Addcmul(value): [T] ...`); their methods take the scalars after the tensor
// operands (`a.addcmul(&t1, &t2, value)`). After `=>`: the tensor methods `src/tensor/ops.rs`
// generates (out of place, `_into`, and in place where the output is `T`) and their doc
// line; the closure's and the scalars' names become the methods' parameter names. An entry
// without `=>` gets no method (`copy` is reached through `contiguous` and `copy_from`). A
// ternary op whose first input is `bool` (`where`) gets the associated functions
// `Tensor::where_cond(mask, a, b)` and `Tensor::where_cond_into(.., out)` instead.
//
// Each `for_each_*_op!(m)` calls `m! { entries }`; `m` must accept the whole grammar.

/// Appends nothing and calls `$m! { entries }` when no list is left, else the next list with
/// the entries so far: how the lists of the group files ([`basic`], [`activations`],
/// [`int_logic`], [`float_ops`]) become one `$m! { .. }` call.
macro_rules! chain {
    ([] $m:ident { $($acc:tt)* }) => {
        $m! { $($acc)* }
    };
    ([$next:ident $($rest:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::$next! { [$($rest)*] $m { $($acc)* } }
    };
}

/// Calls `$m! { .. }` with every unary op entry of the table.
macro_rules! for_each_unary_op {
    ($m:ident) => {
        $crate::ops::table::chain! { [basic_unary activations_unary int_logic_unary float_ops_unary] $m {} }
    };
}

/// Calls `$m! { .. }` with every binary op entry of the table.
macro_rules! for_each_binary_op {
    ($m:ident) => {
        $crate::ops::table::chain! { [basic_binary activations_binary int_logic_binary float_ops_binary] $m {} }
    };
}

/// Calls `$m! { .. }` with every ternary op entry of the table.
macro_rules! for_each_ternary_op {
    ($m:ident) => {
        $crate::ops::table::chain! { [basic_ternary float_ops_ternary] $m {} }
    };
}

mod activations;
mod basic;
#[macro_use]
mod define;
mod float_ops;
mod int_logic;
#[cfg(test)]
mod tests;

pub(crate) use activations::{activations_binary, activations_unary};
pub(crate) use basic::{basic_binary, basic_ternary, basic_unary};
pub(crate) use float_ops::{float_ops_binary, float_ops_ternary, float_ops_unary};
pub(crate) use int_logic::{input_free_value, int_logic_binary, int_logic_unary};
pub(crate) use {chain, for_each_binary_op, for_each_ternary_op, for_each_unary_op};

use define::pad_scalars;

for_each_unary_op!(unary_ops);
for_each_binary_op!(binary_ops);
for_each_ternary_op!(ternary_ops);
