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

/// Calls `$m! { .. }` with every unary op entry of the table.
macro_rules! for_each_unary_op {
    ($m:ident) => {
        $m! {
            /// `-a` (wrapping for integers).
            Neg: Signed => T, "neg", "ts_neg(a)", |a| a.neg()
                => neg, neg_into, neg_: "-a";
            /// `|a|` (wrapping for `MIN`).
            Abs: Numeric => T, "abs", "ts_abs(a)", |a| a.abs_of()
                => abs, abs_into, abs_: "|a|";
            /// `-1`, `0` or `1` by sign; `±0` and NaN unchanged.
            Sign: Numeric => T, "sign", "ts_sign(a)", |a| a.sign_of()
                => sign, sign_into, sign_: "sign(a)";
            /// `a * a` (wrapping for integers).
            Square: Numeric => T, "square", "ts_mul(a, a)", |a| a.mul(a)
                => square, square_into, square_: "a * a";
            /// `max(a, 0)`, keeping NaN.
            Relu: Numeric => T, "relu", "(a <= 0 ? 0 : a)",
                |a| if a <= T::ZERO { T::ZERO } else { a }
                => relu, relu_into, relu_: "max(a, 0)";
            /// `e^a`.
            Exp: FloatElement => T, "exp", "exp(a)",
                |a| in_compute!(T as C; x = a => ComputeMath::exp(x))
                => exp, exp_into, exp_: "e^a";
            /// Natural logarithm.
            Log: FloatElement => T, "log", "log(a)", |a| in_compute!(T as C; x = a => x.ln())
                => log, log_into, log_: "ln(a)";
            /// Square root.
            Sqrt: FloatElement => T, "sqrt", "sqrt(a)",
                |a| in_compute!(T as C; x = a => x.sqrt())
                => sqrt, sqrt_into, sqrt_: "sqrt(a)";
            /// `1 / sqrt(a)` (CUDA's `rsqrt` is within 2 ulp of this).
            Rsqrt: FloatElement => T, "rsqrt", "rsqrt(a)",
                |a| in_compute!(T as C; x = a => 1.0 / x.sqrt())
                => rsqrt, rsqrt_into, rsqrt_: "1 / sqrt(a)";
            /// Sine.
            Sin: FloatElement => T, "sin", "sin(a)", |a| in_compute!(T as C; x = a => x.sin())
                => sin, sin_into, sin_: "sin(a)";
            /// Cosine.
            Cos: FloatElement => T, "cos", "cos(a)", |a| in_compute!(T as C; x = a => x.cos())
                => cos, cos_into, cos_: "cos(a)";
            /// Hyperbolic tangent.
            Tanh: FloatElement => T, "tanh", "tanh(a)",
                |a| in_compute!(T as C; x = a => x.tanh())
                => tanh, tanh_into, tanh_: "tanh(a)";
            /// `1 / (1 + e^-a)`.
            Sigmoid: FloatElement => T, "sigmoid", "ts_sigmoid(a)",
                |a| in_compute!(T as C; x = a => 1.0 / (1.0 + ComputeMath::exp(-x)))
                => sigmoid, sigmoid_into, sigmoid_: "1 / (1 + e^-a)";
            /// GELU, erf form: `a / 2 * (1 + erf(a / sqrt 2))`.
            Gelu: FloatElement => T, "gelu",
                "a / 2 * (1 + erf(a * (decltype(a))0.70710678118654752440))",
                |a| in_compute!(T as C; x = a =>
                    x / 2.0 * (1.0 + ComputeMath::erf(x * std::f64::consts::FRAC_1_SQRT_2 as C)))
                => gelu, gelu_into, gelu_: "gelu(a)";
            /// SiLU (swish): `a * sigmoid(a)`.
            Silu: FloatElement => T, "silu", "ts_silu(a)",
                |a| in_compute!(T as C; x = a => x / (1.0 + ComputeMath::exp(-x)))
                => silu, silu_into, silu_: "a * sigmoid(a)";
            /// `1 / a`.
            Recip: FloatElement => T, "recip", "1 / a", |a| in_compute!(T as C; x = a => 1.0 / x)
                => recip, recip_into, recip_: "1 / a";
            /// Round toward negative infinity.
            Floor: FloatElement => T, "floor", "floor(a)",
                |a| in_compute!(T as C; x = a => x.floor())
                => floor, floor_into, floor_: "floor(a)";
            /// Round toward positive infinity.
            Ceil: FloatElement => T, "ceil", "ceil(a)",
                |a| in_compute!(T as C; x = a => x.ceil())
                => ceil, ceil_into, ceil_: "ceil(a)";
            /// Round to nearest, half to even.
            Round: FloatElement => T, "round", "rint(a)",
                |a| in_compute!(T as C; x = a => x.round_ties_even())
                => round, round_into, round_: "round_half_even(a)";
            /// The identity (a copy).
            Identity: Element => T, "copy", "a", |a| a;
            /// `a + s`.
            AddScalar(s): Numeric => T, "add_scalar", "ts_add(a, p0)", |a| a.add(s)
                => add_scalar, add_scalar_into, add_scalar_: "a + s";
            /// `a * s`.
            MulScalar(s): Numeric => T, "mul_scalar", "ts_mul(a, p0)", |a| a.mul(s)
                => mul_scalar, mul_scalar_into, mul_scalar_: "a * s";
            /// `min(max(a, lo), hi)`, propagating NaN.
            ClampScalar(lo, hi): Numeric => T, "clamp_scalar", "ts_min(ts_max(a, p0), p1)",
                |a| a.max_of(lo).min_of(hi)
                => clamp_scalar, clamp_scalar_into, clamp_scalar_: "min(max(a, lo), hi)";
            // Activations of `torch.nn.functional` (issue 26). Scalars are the element type;
            // PyTorch's defaults are in each op's docs and the module docs.
            /// ReLU6, `min(max(a, 0), 6)` (`F.relu6`), propagating NaN.
            Relu6: FloatElement => T, "relu6",
                "ts_min(ts_max(a, (decltype(a))0), (decltype(a))6)",
                |a| in_compute!(T as C; x = a => x.max_of(0.0).min_of(6.0))
                => relu6, relu6_into, relu6_: "min(max(a, 0), 6)";
            /// Leaky ReLU, `a > 0 ? a : negative_slope * a` (`F.leaky_relu`; PyTorch's
            /// default `negative_slope` is `0.01`). NaN gives NaN.
            LeakyRelu(negative_slope): FloatElement => T, "leaky_relu", "(a > 0 ? a : a * p0)",
                |a| in_compute!(T as C; x = a, s = negative_slope => if x > 0.0 { x } else { x * s })
                => leaky_relu, leaky_relu_into, leaky_relu_: "a > 0 ? a : a * negative_slope";
            /// ELU, `a > 0 ? a : alpha * (e^a - 1)` with `expm1` (`F.elu`; PyTorch's default
            /// `alpha` is `1.0`). NaN gives NaN; `-inf` gives `-alpha`.
            Elu(alpha): FloatElement => T, "elu", "(a > 0 ? a : p0 * expm1(a))",
                |a| in_compute!(T as C; x = a, al = alpha => if x > 0.0 { x } else { al * x.exp_m1() })
                => elu, elu_into, elu_: "a > 0 ? a : alpha * (e^a - 1)";
            /// SELU, `scale * (a > 0 ? a : alpha * (e^a - 1))` with PyTorch's constants
            /// `alpha = 1.6732632423543772`, `scale = 1.0507009873554805` (`F.selu`).
            Selu: FloatElement => T, "selu",
                "(decltype(a))1.0507009873554805 * (a > 0 ? a : (decltype(a))1.6732632423543772 * expm1(a))",
                |a| in_compute!(T as C; x = a => 1.0507009873554805f64 as C
                    * if x > 0.0 { x } else { 1.6732632423543772f64 as C * x.exp_m1() })
                => selu, selu_into, selu_: "scale * (a > 0 ? a : alpha * (e^a - 1))";
            /// CELU, `a > 0 ? a : alpha * (e^(a / alpha) - 1)` with `expm1` (`F.celu`;
            /// PyTorch's default `alpha` is `1.0`). NaN gives NaN.
            Celu(alpha): FloatElement => T, "celu", "(a > 0 ? a : p0 * expm1(a / p0))",
                |a| in_compute!(T as C; x = a, al = alpha =>
                    if x > 0.0 { x } else { al * (x / al).exp_m1() })
                => celu, celu_into, celu_: "a > 0 ? a : alpha * (e^(a / alpha) - 1)";
            /// Softplus, `a * beta > threshold ? a : log1p(e^(a * beta)) / beta` (`F.softplus`;
            /// PyTorch's defaults `beta = 1`, `threshold = 20`). `log1p` keeps the small
            /// values: `softplus(-30) = 9.357622968839737e-14`, where `log(1 + e^a)` gives 0.
            Softplus(beta, threshold): FloatElement => T, "softplus",
                "(a * p0 > p1 ? a : log1p(exp(a * p0)) / p0)",
                |a| in_compute!(T as C; x = a, be = beta, th = threshold =>
                    if x * be > th { x } else { ComputeMath::exp(x * be).ln_1p() / be })
                => softplus, softplus_into, softplus_: "a * beta > threshold ? a : log1p(e^(a * beta)) / beta";
            /// Softsign, `a / (1 + |a|)` (`F.softsign`); `±inf` gives NaN, as PyTorch's formula.
            Softsign: FloatElement => T, "softsign", "a / (1 + ts_abs(a))",
                |a| in_compute!(T as C; x = a => x / (1.0 + x.abs()))
                => softsign, softsign_into, softsign_: "a / (1 + |a|)";
            /// Mish, `a * tanh(log1p(e^a))` (`F.mish`); `-inf` gives NaN, as PyTorch's formula.
            Mish: FloatElement => T, "mish", "a * tanh(log1p(exp(a)))",
                |a| in_compute!(T as C; x = a => x * ComputeMath::exp(x).ln_1p().tanh())
                => mish, mish_into, mish_: "a * tanh(softplus(a))";
            /// Hardtanh, `min(max(a, min_val), max_val)` (`F.hardtanh`; PyTorch's defaults
            /// `min_val = -1`, `max_val = 1`), propagating NaN.
            Hardtanh(min_val, max_val): FloatElement => T, "hardtanh", "ts_min(ts_max(a, p0), p1)",
                |a| in_compute!(T as C; x = a, lo = min_val, hi = max_val => x.max_of(lo).min_of(hi))
                => hardtanh, hardtanh_into, hardtanh_: "min(max(a, min_val), max_val)";
            /// Hardsigmoid, `min(max(a + 3, 0), 6) / 6` (`F.hardsigmoid`), propagating NaN.
            Hardsigmoid: FloatElement => T, "hardsigmoid",
                "ts_min(ts_max(a + 3, (decltype(a))0), (decltype(a))6) / 6",
                |a| in_compute!(T as C; x = a => (x + 3.0).max_of(0.0).min_of(6.0) / 6.0)
                => hardsigmoid, hardsigmoid_into, hardsigmoid_: "min(max(a + 3, 0), 6) / 6";
            /// Hardswish, `a * min(max(a + 3, 0), 6) / 6` (`F.hardswish`); `-inf` gives NaN,
            /// as PyTorch's formula.
            Hardswish: FloatElement => T, "hardswish",
                "a * ts_min(ts_max(a + 3, (decltype(a))0), (decltype(a))6) / 6",
                |a| in_compute!(T as C; x = a => x * (x + 3.0).max_of(0.0).min_of(6.0) / 6.0)
                => hardswish, hardswish_into, hardswish_: "a * min(max(a + 3, 0), 6) / 6";
            /// Log-sigmoid, `log(1 / (1 + e^-a))` computed stably as
            /// `min(a, 0) - log1p(e^-|a|)` (`F.logsigmoid`, PyTorch's formula).
            Logsigmoid: FloatElement => T, "logsigmoid",
                "ts_min(a, (decltype(a))0) - log1p(exp(-ts_abs(a)))",
                |a| in_compute!(T as C; x = a => x.min_of(0.0) - ComputeMath::exp(-x.abs()).ln_1p())
                => logsigmoid, logsigmoid_into, logsigmoid_: "min(a, 0) - log1p(e^-|a|)";
            /// Tanhshrink, `a - tanh(a)` (`F.tanhshrink`).
            Tanhshrink: FloatElement => T, "tanhshrink", "a - tanh(a)",
                |a| in_compute!(T as C; x = a => x - x.tanh())
                => tanhshrink, tanhshrink_into, tanhshrink_: "a - tanh(a)";
            /// Softshrink, `a > lambd ? a - lambd : (a < -lambd ? a + lambd : 0)`
            /// (`F.softshrink`; PyTorch's default `lambd` is `0.5`). Inside the band the result
            /// is `a * 0`, so NaN gives NaN and negative inputs `-0.0`.
            Softshrink(lambd): FloatElement => T, "softshrink",
                "(a > p0 ? a - p0 : (a < -p0 ? a + p0 : a * 0))",
                |a| in_compute!(T as C; x = a, l = lambd =>
                    if x > l { x - l } else if x < -l { x + l } else { x * 0.0 })
                => softshrink, softshrink_into, softshrink_: "a > lambd ? a - lambd : (a < -lambd ? a + lambd : 0)";
            /// Hardshrink, `-lambd <= a <= lambd ? 0 : a` (`F.hardshrink`; PyTorch's default
            /// `lambd` is `0.5`). NaN gives NaN.
            Hardshrink(lambd): FloatElement => T, "hardshrink",
                "(a >= -p0 ? (a <= p0 ? (decltype(a))0 : a) : a)",
                |a| in_compute!(T as C; x = a, l = lambd => if x >= -l && x <= l { 0.0 } else { x })
                => hardshrink, hardshrink_into, hardshrink_: "-lambd <= a <= lambd ? 0 : a";
            /// Threshold, `a <= threshold ? value : a` (`F.threshold`, no defaults). NaN gives NaN.
            Threshold(threshold, value): FloatElement => T, "threshold", "(a <= p0 ? p1 : a)",
                |a| in_compute!(T as C; x = a, th = threshold, v = value => if x <= th { v } else { x })
                => threshold, threshold_into, threshold_: "a <= threshold ? value : a";
            /// GELU, tanh approximation: `a / 2 * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 a^3)))`
            /// (`F.gelu(x, approximate='tanh')`, PyTorch's formula and order).
            GeluTanh: FloatElement => T, "gelu_tanh",
                "(decltype(a))0.5 * a * (1 + tanh((decltype(a))0.7978845608028654 * (a + (decltype(a))0.044715 * (a * a * a))))",
                |a| in_compute!(T as C; x = a => 0.5 as C * x
                    * (1.0 + (0.7978845608028654f64 as C * (x + 0.044715f64 as C * (x * x * x))).tanh()))
                => gelu_tanh, gelu_tanh_into, gelu_tanh_: "gelu(a), tanh approximation";
            // Integer, bitwise, logical and float-predicate ops (issue 26).
            /// `~a`, every bit flipped (PyTorch's `bitwise_not`); for `bool`, logical not.
            BitwiseNot: Bitwise => T, "bitwise_not", "ts_bit_not(a)", |a| a.bit_not()
                => bitwise_not, bitwise_not_into, bitwise_not_: "~a";
            /// `a == 0` as `bool` (PyTorch's `logical_not`): every nonzero value is true, NaN
            /// included; `-0.0` is zero.
            LogicalNot: Element => bool, "logical_not", "(a == 0)", |a| a == T::ZERO
                => logical_not, logical_not_into: "not a";
            /// Whether `a` is NaN (PyTorch's `isnan`); false for integers and bool.
            IsNan: Element => bool, "isnan", "(a != a)", |a| a.partial_cmp(&a).is_none()
                => isnan, isnan_into: "isnan(a)";
            /// Whether `a` is `+inf` or `-inf` (PyTorch's `isinf`); false for integers and bool.
            IsInf: Element => bool, "isinf", "ts_isinf(a)", |a| a.to_f64().is_infinite()
                => isinf, isinf_into: "isinf(a)";
            /// Whether `a` is `+inf` (PyTorch's `isposinf`); false for integers and bool.
            IsPosInf: Element => bool, "isposinf", "ts_isposinf(a)",
                |a| a.to_f64() == f64::INFINITY
                => isposinf, isposinf_into: "a == +inf";
            /// Whether `a` is `-inf` (PyTorch's `isneginf`); false for integers and bool.
            IsNegInf: Element => bool, "isneginf", "ts_isneginf(a)",
                |a| a.to_f64() == f64::NEG_INFINITY
                => isneginf, isneginf_into: "a == -inf";
            /// Whether `a` is neither NaN nor infinite (PyTorch's `isfinite`); true for
            /// integers and bool.
            IsFinite: Element => bool, "isfinite", "ts_isfinite(a)", |a| a.to_f64().is_finite()
                => isfinite, isfinite_into: "isfinite(a)";
            /// Whether the sign bit is set (PyTorch's `signbit`): true for `-0.0`, for
            /// negative values and for a NaN with its sign bit set; integers: `a < 0`.
            SignBit: Numeric => bool, "signbit", "ts_signbit(a)",
                |a| a.to_f64().is_sign_negative()
                => signbit, signbit_into: "signbit(a)";
            /// NaN replaced by `nan`, other values unchanged: one half of
            /// [`Tensor::nan_to_num`](crate::tensor::Tensor::nan_to_num), which composes it
            /// with [`NanToNumInf`] in one pass.
            NanToNumNan(nan): FloatElement => T, "nan_to_num_nan", "(a != a ? p0 : a)",
                |a| if a.is_nan() { nan } else { a };
            /// `+inf` replaced by `posinf` and `-inf` by `neginf`, other values unchanged: the
            /// other half of [`Tensor::nan_to_num`](crate::tensor::Tensor::nan_to_num).
            NanToNumInf(posinf, neginf): FloatElement => T, "nan_to_num_inf",
                "(ts_isposinf(a) ? p0 : (ts_isneginf(a) ? p1 : a))",
                |a| if a == T::infinity() { posinf } else if a == T::neg_infinity() { neginf } else { a };
            // Float math ops (issue 26).
            /// `2^a`.
            Exp2: FloatElement => T, "exp2", "exp2(a)", |a| in_compute!(T as C; x = a => x.exp2())
                => exp2, exp2_into, exp2_: "2^a";
            /// `e^a - 1`, accurate near 0.
            Expm1: FloatElement => T, "expm1", "expm1(a)",
                |a| in_compute!(T as C; x = a => x.exp_m1())
                => expm1, expm1_into, expm1_: "e^a - 1";
            /// Base-2 logarithm.
            Log2: FloatElement => T, "log2", "log2(a)", |a| in_compute!(T as C; x = a => x.log2())
                => log2, log2_into, log2_: "log2(a)";
            /// Base-10 logarithm.
            Log10: FloatElement => T, "log10", "log10(a)",
                |a| in_compute!(T as C; x = a => x.log10())
                => log10, log10_into, log10_: "log10(a)";
            /// `ln(1 + a)`, accurate near 0 (`-inf` at -1, NaN below).
            Log1p: FloatElement => T, "log1p", "log1p(a)",
                |a| in_compute!(T as C; x = a => x.ln_1p())
                => log1p, log1p_into, log1p_: "ln(1 + a)";
            /// Tangent.
            Tan: FloatElement => T, "tan", "tan(a)", |a| in_compute!(T as C; x = a => x.tan())
                => tan, tan_into, tan_: "tan(a)";
            /// Arcsine (NaN outside `[-1, 1]`).
            Asin: FloatElement => T, "asin", "asin(a)", |a| in_compute!(T as C; x = a => x.asin())
                => asin, asin_into, asin_: "asin(a)";
            /// Arccosine (NaN outside `[-1, 1]`).
            Acos: FloatElement => T, "acos", "acos(a)", |a| in_compute!(T as C; x = a => x.acos())
                => acos, acos_into, acos_: "acos(a)";
            /// Arctangent.
            Atan: FloatElement => T, "atan", "atan(a)", |a| in_compute!(T as C; x = a => x.atan())
                => atan, atan_into, atan_: "atan(a)";
            /// Hyperbolic sine.
            Sinh: FloatElement => T, "sinh", "sinh(a)", |a| in_compute!(T as C; x = a => x.sinh())
                => sinh, sinh_into, sinh_: "sinh(a)";
            /// Hyperbolic cosine.
            Cosh: FloatElement => T, "cosh", "cosh(a)", |a| in_compute!(T as C; x = a => x.cosh())
                => cosh, cosh_into, cosh_: "cosh(a)";
            /// Inverse hyperbolic sine.
            Asinh: FloatElement => T, "asinh", "asinh(a)",
                |a| in_compute!(T as C; x = a => FloatMath::asinh(x))
                => asinh, asinh_into, asinh_: "asinh(a)";
            /// Inverse hyperbolic cosine (NaN below 1, 0 at 1).
            Acosh: FloatElement => T, "acosh", "acosh(a)",
                |a| in_compute!(T as C; x = a => FloatMath::acosh(x))
                => acosh, acosh_into, acosh_: "acosh(a)";
            /// Inverse hyperbolic tangent (`±inf` at `±1`, NaN beyond).
            Atanh: FloatElement => T, "atanh", "atanh(a)",
                |a| in_compute!(T as C; x = a => FloatMath::atanh(x))
                => atanh, atanh_into, atanh_: "atanh(a)";
            /// Degrees to radians: `a * (pi / 180)`, the constant rounded to the compute type.
            Deg2rad: FloatElement => T, "deg2rad", "a * (decltype(a))0.017453292519943295",
                |a| in_compute!(T as C; x = a => x * (std::f64::consts::PI / 180.0) as C)
                => deg2rad, deg2rad_into, deg2rad_: "a * pi / 180";
            /// Radians to degrees: `a * (180 / pi)`, the constant rounded to the compute type.
            Rad2deg: FloatElement => T, "rad2deg", "a * (decltype(a))57.29577951308232",
                |a| in_compute!(T as C; x = a => x * (180.0 / std::f64::consts::PI) as C)
                => rad2deg, rad2deg_into, rad2deg_: "a * 180 / pi";
            /// The normalized sinc, `sin(pi a) / (pi a)`, 1 at 0 (PyTorch's formula: the
            /// product `pi a` is rounded, so near the non-zero integers the error is absolute,
            /// about one epsilon).
            Sinc: FloatElement => T, "sinc", "ts_sinc(a)",
                |a| in_compute!(T as C; x = a => FloatMath::sinc(x))
                => sinc, sinc_into, sinc_: "sin(pi a) / (pi a)";
            /// Round toward zero.
            Trunc: FloatElement => T, "trunc", "trunc(a)",
                |a| in_compute!(T as C; x = a => x.trunc())
                => trunc, trunc_into, trunc_: "trunc(a)";
            /// `a - trunc(a)`, the fractional part with `a`'s sign (NaN for `±inf`).
            Frac: FloatElement => T, "frac", "(a - trunc(a))",
                |a| in_compute!(T as C; x = a => x - x.trunc())
                => frac, frac_into, frac_: "a - trunc(a)";
            /// `a` rounded to `decimals` decimal places, half to even, as PyTorch's
            /// `round(decimals=d)`: `rint(a * 10^d) / 10^d`, or `rint(a / 10^-d) * 10^-d` for
            /// `d < 0`, in the compute type. `decimals` is truncated to a whole number (NaN
            /// counts as 0); `10^|d|` is computed in `f64` (exact up to `10^22`) and rounded to
            /// the compute type, so a `10^|d|` beyond its range gives NaN, like PyTorch.
            RoundDecimals(decimals): FloatElement => T, "round_decimals",
                "ts_round_decimals(a, p0)",
                |a| in_compute!(T as C; x = a, d = decimals => FloatMath::round_decimals(x, d))
                => round_decimals, round_decimals_into, round_decimals_: "round(a, decimals)";
            /// The error function.
            Erf: FloatElement => T, "erf", "erf(a)",
                |a| in_compute!(T as C; x = a => ComputeMath::erf(x))
                => erf, erf_into, erf_: "erf(a)";
            /// The complementary error function `1 - erf(a)`, accurate where it is small.
            Erfc: FloatElement => T, "erfc", "erfc(a)",
                |a| in_compute!(T as C; x = a => FloatMath::erfc(x))
                => erfc, erfc_into, erfc_: "erfc(a)";
            /// The inverse error function: `±inf` at `±1`, NaN outside `[-1, 1]`.
            Erfinv: FloatElement => T, "erfinv", "erfinv(a)",
                |a| in_compute!(T as C; x = a => FloatMath::erfinv(x))
                => erfinv, erfinv_into, erfinv_: "erfinv(a)";
            /// `ln |Γ(a)|`: `+inf` at 0 and the negative integers.
            Lgamma: FloatElement => T, "lgamma", "lgamma(a)",
                |a| in_compute!(T as C; x = a => FloatMath::lgamma(x))
                => lgamma, lgamma_into, lgamma_: "ln |gamma(a)|";
            /// The digamma function `Γ'(a) / Γ(a)`: `∓inf` at `±0`, NaN at the negative integers.
            Digamma: FloatElement => T, "digamma", "ts_digamma(a)",
                |a| in_compute!(T as C; x = a => FloatMath::digamma(x))
                => digamma, digamma_into, digamma_: "digamma(a)";
            /// The modified Bessel function of the first kind, order zero (Cephes' Chebyshev
            /// series, as PyTorch: `f32` overflows to infinity above 88.7; `i0(±inf) = inf`).
            I0: FloatElement => T, "i0", "ts_i0(a)",
                |a| in_compute!(T as C; x = a => FloatMath::i0(x))
                => i0, i0_into, i0_: "i0(a)";
            /// `ln(a / (1 - a))`: `-inf` at 0, `+inf` at 1, NaN outside `[0, 1]`.
            Logit: FloatElement => T, "logit", "log(a / (1 - a))",
                |a| in_compute!(T as C; x = a => (x / (1.0 - x)).ln())
                => logit, logit_into, logit_: "ln(a / (1 - a))";
            /// PyTorch's `logit(a, eps)`: `a` clamped to `[eps, 1 - eps]` (NaN kept), then
            /// `ln(a / (1 - a))`; a negative `eps` clamps nothing.
            LogitEps(eps): FloatElement => T, "logit_eps", "ts_logit_eps(a, p0)",
                |a| in_compute!(T as C; x = a, e = eps => FloatMath::logit_eps(x, e))
                => logit_eps, logit_eps_into, logit_eps_: "ln(a / (1 - a)), a clamped to [eps, 1 - eps]";
            /// `max(a, min)`, propagating NaN (`clamp` with only a lower bound).
            ClampMin(min): Numeric => T, "clamp_min", "ts_max(a, p0)", |a| a.max_of(min)
                => clamp_min, clamp_min_into, clamp_min_: "max(a, min)";
            /// `min(a, max)`, propagating NaN (`clamp` with only an upper bound).
            ClampMax(max): Numeric => T, "clamp_max", "ts_min(a, p0)", |a| a.min_of(max)
                => clamp_max, clamp_max_into, clamp_max_: "min(a, max)";
        }
    };
}

/// Calls `$m! { .. }` with every binary op entry of the table.
macro_rules! for_each_binary_op {
    ($m:ident) => {
        $m! {
            /// `a + b` (wrapping for integers).
            Add: Numeric => T, "add", "ts_add(a, b)", |a, b| a.add(b)
                => add, add_into, add_: "a + b";
            /// `a - b` (wrapping for integers).
            Sub: Numeric => T, "sub", "ts_sub(a, b)", |a, b| a.sub(b)
                => sub, sub_into, sub_: "a - b";
            /// `a * b` (wrapping for integers).
            Mul: Numeric => T, "mul", "ts_mul(a, b)", |a, b| a.mul(b)
                => mul, mul_into, mul_: "a * b";
            /// `a / b` (integers: truncating, 0 on division by zero).
            Div: Numeric => T, "div", "ts_div(a, b)", |a, b| a.div(b)
                => div, div_into, div_: "a / b";
            /// The larger, propagating NaN.
            Maximum: Numeric => T, "maximum", "ts_max(a, b)", |a, b| a.max_of(b)
                => maximum, maximum_into, maximum_: "max(a, b)";
            /// The smaller, propagating NaN.
            Minimum: Numeric => T, "minimum", "ts_min(a, b)", |a, b| a.min_of(b)
                => minimum, minimum_into, minimum_: "min(a, b)";
            /// `a^b`.
            Pow: FloatElement => T, "pow", "ts_pow(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => x.powf(y))
                => pow, pow_into, pow_: "a ^ b";
            /// `a == b`.
            Eq: Element => bool, "eq", "(a == b)", |a, b| a == b => eq, eq_into: "a == b";
            /// `a != b`.
            Ne: Element => bool, "ne", "(a != b)", |a, b| a != b => ne, ne_into: "a != b";
            /// `a < b`.
            Lt: Element => bool, "lt", "(a < b)", |a, b| a < b => lt, lt_into: "a < b";
            /// `a <= b`.
            Le: Element => bool, "le", "(a <= b)", |a, b| a <= b => le, le_into: "a <= b";
            /// `a > b`.
            Gt: Element => bool, "gt", "(a > b)", |a, b| a > b => gt, gt_into: "a > b";
            /// `a >= b`.
            Ge: Element => bool, "ge", "(a >= b)", |a, b| a >= b => ge, ge_into: "a >= b";
            // Activations of `torch.nn.functional` (issue 26).
            /// PReLU, `a > 0 ? a : weight * a` (`F.prelu`), the weight broadcast against the
            /// input NumPy-style (trailing dims): for a per-channel weight of an `[N, C, H, W]`
            /// input, reshape it to `[C, 1, 1]` (PyTorch applies a 1-D weight to dim 1).
            /// NaN gives NaN.
            Prelu: FloatElement => T, "prelu", "(a > 0 ? a : b * a)",
                |a, weight| in_compute!(T as C; x = a, w = weight => if x > 0.0 { x } else { w * x })
                => prelu, prelu_into, prelu_: "a > 0 ? a : weight * a";
            // Integer, bitwise, logical and float-predicate ops (issue 26).
            /// `floor(a / b)` (PyTorch's `floor_divide`, Python's `//`). Floats: PyTorch's
            /// `div_floor_floating` (`a / b` when `b == 0`: ±inf or NaN). Integers: rounded
            /// toward negative infinity, `MIN // -1` wraps to `MIN`, and **`a // 0 == 0`**
            /// (PyTorch raises `ZeroDivisionError` on the CPU).
            FloorDivide: DivRem => T, "floor_divide", "ts_floor_div(a, b)",
                |a, b| a.floor_div(b)
                => floor_divide, floor_divide_into, floor_divide_: "floor(a / b)";
            /// `a - floor(a / b) * b`, the sign of the divisor (PyTorch's `remainder`, Python's
            /// `%`), computed as PyTorch does: `fmod(a, b)`, plus `b` when nonzero and of the
            /// other sign (so `remainder(-1e-20, 1.0)` rounds to `1.0`). Floats: NaN when
            /// `b == 0` or `a` is infinite; `remainder(a, ±inf)` is `a` or `±inf`. Integers:
            /// exact, and **`remainder(a, 0) == 0`** (PyTorch raises `ZeroDivisionError`).
            Remainder: DivRem => T, "remainder", "ts_remainder(a, b)", |a, b| a.remainder(b)
                => remainder, remainder_into, remainder_: "a - floor(a / b) * b";
            /// `a - trunc(a / b) * b`, the sign of the dividend (C's `fmod`, PyTorch's
            /// `fmod`): exact. Floats: NaN when `b == 0` or `a` is infinite, `a` when `b` is
            /// infinite. Integers: **`fmod(a, 0) == 0`** (PyTorch raises `ZeroDivisionError`).
            Fmod: DivRem => T, "fmod", "ts_fmod(a, b)", |a, b| a.fmod(b)
                => fmod, fmod_into, fmod_: "a - trunc(a / b) * b";
            /// `a & b` (PyTorch's `bitwise_and`; for `bool`, logical and).
            BitwiseAnd: Bitwise => T, "bitwise_and", "ts_bit_and(a, b)", |a, b| a.bit_and(b)
                => bitwise_and, bitwise_and_into, bitwise_and_: "a & b";
            /// `a | b` (PyTorch's `bitwise_or`; for `bool`, logical or).
            BitwiseOr: Bitwise => T, "bitwise_or", "ts_bit_or(a, b)", |a, b| a.bit_or(b)
                => bitwise_or, bitwise_or_into, bitwise_or_: "a | b";
            /// `a ^ b` (PyTorch's `bitwise_xor`; for `bool`, `a != b`).
            BitwiseXor: Bitwise => T, "bitwise_xor", "ts_bit_xor(a, b)", |a, b| a.bit_xor(b)
                => bitwise_xor, bitwise_xor_into, bitwise_xor_: "a ^ b";
            /// `a << b` in the type's width (PyTorch's `bitwise_left_shift`): 0 when `b` is
            /// negative or at least the bit width.
            LeftShift: Integer => T, "left_shift", "ts_shl(a, b)", |a, b| a.shl(b)
                => left_shift, left_shift_into, left_shift_: "a << b";
            /// `a >> b`, arithmetic for signed types (PyTorch's `bitwise_right_shift`): when
            /// `b` is negative or at least the bit width, -1 for negative `a`, else 0.
            RightShift: Integer => T, "right_shift", "ts_shr(a, b)", |a, b| a.shr(b)
                => right_shift, right_shift_into, right_shift_: "a >> b";
            /// The greatest common divisor of `|a|` and `|b|` (PyTorch's `gcd`):
            /// non-negative, `gcd(0, 0) == 0`, except `gcd(MIN, MIN)` and `gcd(MIN, 0)`, whose
            /// value `2^(bits-1)` wraps to `MIN`.
            Gcd: Integer => T, "gcd", "ts_gcd(a, b)", |a, b| a.gcd(b)
                => gcd, gcd_into, gcd_: "gcd(a, b)";
            /// The least common multiple, `|a / gcd(a, b) * b|` (PyTorch's `lcm`), wrapping
            /// on overflow; 0 when either is 0.
            Lcm: Integer => T, "lcm", "ts_lcm(a, b)", |a, b| a.lcm(b)
                => lcm, lcm_into, lcm_: "lcm(a, b)";
            /// `a and b` as `bool` (PyTorch's `logical_and`): nonzero is true, NaN included.
            LogicalAnd: Element => bool, "logical_and", "ts_logical_and(a, b)",
                |a, b| a != T::ZERO && b != T::ZERO
                => logical_and, logical_and_into: "a and b";
            /// `a or b` as `bool` (PyTorch's `logical_or`): nonzero is true, NaN included.
            LogicalOr: Element => bool, "logical_or", "ts_logical_or(a, b)",
                |a, b| a != T::ZERO || b != T::ZERO
                => logical_or, logical_or_into: "a or b";
            /// `a xor b` as `bool` (PyTorch's `logical_xor`): nonzero is true, NaN included.
            LogicalXor: Element => bool, "logical_xor", "((a != 0) != (b != 0))",
                |a, b| (a != T::ZERO) != (b != T::ZERO)
                => logical_xor, logical_xor_into: "a xor b";
            /// `|a|` with the sign bit of `b` (PyTorch's `copysign`), NaN and `-0.0` included.
            Copysign: FloatElement => T, "copysign", "copysign(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => x.copysign(y))
                => copysign, copysign_into, copysign_: "copysign(a, b)";
            // Float math ops (issue 26).
            /// `ln(e^a + e^b)` without overflow: `max(a, b) + log1p(e^-|a - b|)`, and `a`
            /// when `a == b` is infinite (so `-inf, -inf` gives `-inf`).
            Logaddexp: FloatElement => T, "logaddexp", "ts_logaddexp(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => FloatMath::logaddexp(x, y))
                => logaddexp, logaddexp_into, logaddexp_: "ln(e^a + e^b)";
            /// `log2(2^a + 2^b)` without overflow, as `logaddexp` in base 2.
            Logaddexp2: FloatElement => T, "logaddexp2", "ts_logaddexp2(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => FloatMath::logaddexp2(x, y))
                => logaddexp2, logaddexp2_into, logaddexp2_: "log2(2^a + 2^b)";
            /// `a^b` computed in `f64` and rounded once to `T` (PyTorch's `float_power` returns
            /// `f64`: cast to `f64` first for that).
            FloatPower: FloatElement => T, "float_power", "ts_float_power(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => FloatMath::float_power(x, y))
                => float_power, float_power_into, float_power_: "a ^ b in f64";
            /// `a * ln(b)`, 0 where `a == 0` unless `b` is NaN.
            Xlogy: FloatElement => T, "xlogy", "ts_xlogy(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => FloatMath::xlogy(x, y))
                => xlogy, xlogy_into, xlogy_: "a * ln(b)";
            /// `a * ln(1 + b)`, 0 where `a == 0` unless `b` is NaN.
            Xlog1py: FloatElement => T, "xlog1py", "ts_xlog1py(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => FloatMath::xlog1py(x, y))
                => xlog1py, xlog1py_into, xlog1py_: "a * ln(1 + b)";
            /// The angle of the point `(b, a)`: `atan(a / b)` in the right quadrant.
            Atan2: FloatElement => T, "atan2", "atan2(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => x.atan2(y))
                => atan2, atan2_into, atan2_: "atan2(a, b)";
            /// `sqrt(a^2 + b^2)` without overflow (`inf` if either is infinite, even with NaN).
            Hypot: FloatElement => T, "hypot", "hypot(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => x.hypot(y))
                => hypot, hypot_into, hypot_: "sqrt(a^2 + b^2)";
            /// The larger, ignoring NaN (C's `fmax`: NaN only when both are); `max` for
            /// integers. Of `0.0` and `-0.0`, `b`.
            Fmax: Numeric => T, "fmax", "ts_fmax(a, b)", |a, b| float_math::fmax(a, b)
                => fmax, fmax_into, fmax_: "fmax(a, b)";
            /// The smaller, ignoring NaN (C's `fmin`: NaN only when both are); `min` for
            /// integers. Of `0.0` and `-0.0`, `b`.
            Fmin: Numeric => T, "fmin", "ts_fmin(a, b)", |a, b| float_math::fmin(a, b)
                => fmin, fmin_into, fmin_: "fmin(a, b)";
        }
    };
}

/// Calls `$m! { .. }` with every ternary op entry of the table.
macro_rules! for_each_ternary_op {
    ($m:ident) => {
        $m! {
            /// `mask ? a : b`.
            Where: [bool] Element => T, "where", "(a ? b : c)",
                |mask, a, b| if mask { a } else { b }
                => where_cond, where_cond_into: "mask ? a : b";
            /// `min(max(x, lo), hi)`, propagating NaN.
            Clamp: [T] Numeric => T, "clamp", "ts_min(ts_max(a, b), c)",
                |x, lo, hi| x.max_of(lo).min_of(hi)
                => clamp, clamp_into, clamp_: "min(max(a, lo), hi)";
            /// `a * b + c` with one rounding.
            Fma: [T] FloatElement => T, "fma", "fma(a, b, c)",
                |a, b, c| in_compute!(T as C; x = a, y = b, z = c => x.mul_add(y, z))
                => fma, fma_into, fma_: "a * b + c";
            /// `a + w * (b - a)`, as one fused multiply-add.
            Lerp: [T] FloatElement => T, "lerp", "fma(c, b - a, a)",
                |a, b, w| in_compute!(T as C; x = a, y = b, z = w => z.mul_add(y - x, x))
                => lerp, lerp_into, lerp_: "a + w * (b - a)";
            // Float math ops (issue 26).
            /// `input + value * tensor1 * tensor2`, as one fused multiply-add of `value` and
            /// the product (PyTorch's CUDA formula, `a + value * (b * c)`, contracted).
            Addcmul(value): [T] FloatElement => T, "addcmul", "fma(p0, b * c, a)",
                |input, tensor1, tensor2| in_compute!(T as C;
                    x = input, y = tensor1, z = tensor2, v = value => v.mul_add(y * z, x))
                => addcmul, addcmul_into, addcmul_: "a + value * t1 * t2";
            /// `input + value * tensor1 / tensor2`, as one fused multiply-add of `value` and
            /// the quotient.
            Addcdiv(value): [T] FloatElement => T, "addcdiv", "fma(p0, b / c, a)",
                |input, tensor1, tensor2| in_compute!(T as C;
                    x = input, y = tensor1, z = tensor2, v = value => v.mul_add(y / z, x))
                => addcdiv, addcdiv_into, addcdiv_: "a + value * t1 / t2";
        }
    };
}

pub(crate) use {for_each_binary_op, for_each_ternary_op, for_each_unary_op};

/// The table's header, for the generated docs of [`UNARY_OPS`], [`BINARY_OPS`] and
/// [`TERNARY_OPS`].
macro_rules! doc_table {
    ($($row:expr),* $(,)?) => {
        concat!(
            "| op | type | bound | output | CUDA expression |\n",
            "|----|------|-------|--------|-----------------|\n",
            $($row, "\n",)*
        )
    };
}

/// Defines the unary op types and [`UNARY_OPS`] from `for_each_unary_op!`.
macro_rules! unary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident| $body:expr $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( unary_ops!(@one $(#[$doc])* $name $(($($p),+))? : $bound => $out, $opname, $cuda, |$a| $body); )*

        /// Every unary op of the table (scalar-free and scalar-carrying; not `cast`):
        ///
        #[doc = doc_table!($(concat!(
            "| `", $opname, "` | [`", stringify!($name), "`](struct@", stringify!($name),
            ") | [`", stringify!($bound), "`] | `", stringify!($out), "` | `", $cuda, "` |"
        )),*)]
        pub const UNARY_OPS: &[OpInfo] = &[
            $( OpInfo { name: $opname, bound: stringify!($bound), cuda: $cuda }, )*
        ];
    };
    (@one $(#[$doc:meta])* $name:ident : $bound:ident => $out:ty, $opname:literal,
        $cuda:literal, |$a:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl Sealed for $name {}

        impl<T: $bound> UnaryOp<T> for $name {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: T) -> $out {
                $body
            }
        }
    };
    (@one $(#[$doc:meta])* $name:ident ($($p:ident),+) : $bound:ident => $out:ty,
        $opname:literal, $cuda:literal, |$a:ident| $body:expr) => {
        unary_ops!(@struct $(#[$doc])* $name ($($p),+));

        impl<T> Sealed for $name<T> {}

        impl<T: $bound> UnaryOp<T> for $name<T> {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: T) -> $out {
                let $name($($p),+) = *self;
                $body
            }
            fn scalars(&self) -> [T; 2] {
                let $name($($p),+) = *self;
                pad_scalars(&[$($p),+])
            }
        }
    };
    (@struct $(#[$doc:meta])* $name:ident ($p:ident)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name<T>(pub T);
    };
    (@struct $(#[$doc:meta])* $name:ident ($p:ident, $q:ident)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name<T>(pub T, pub T);
    };
}

/// `[p0, p1]` with missing scalars zero.
fn pad_scalars<T: Element>(given: &[T]) -> [T; 2] {
    let mut out = [T::ZERO; 2];
    out[..given.len()].copy_from_slice(given);
    out
}

/// Defines the binary op types and [`BINARY_OPS`] from `for_each_binary_op!`.
macro_rules! binary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident, $b:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;

            impl Sealed for $name {}

            impl<T: $bound> BinaryOp<T> for $name {
                type Output = $out;
                const NAME: &'static str = $opname;
                const CUDA: &'static str = $cuda;
                #[inline(always)]
                fn cpu(&self, $a: T, $b: T) -> $out {
                    $body
                }
            }
        )*

        /// Every binary op of the table:
        ///
        #[doc = doc_table!($(concat!(
            "| `", $opname, "` | [`", stringify!($name), "`](struct@", stringify!($name),
            ") | [`", stringify!($bound), "`] | `", stringify!($out), "` | `", $cuda, "` |"
        )),*)]
        pub const BINARY_OPS: &[OpInfo] = &[
            $( OpInfo { name: $opname, bound: stringify!($bound), cuda: $cuda }, )*
        ];
    };
}

/// Defines the ternary op types and [`TERNARY_OPS`] from `for_each_ternary_op!`; `[A]` is the
/// first input's type (`T` or `bool`).
macro_rules! ternary_ops {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : [$first:tt] $bound:ident => $out:ty, $opname:literal,
            $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( ternary_ops!(@one $(#[$doc])* $name $(($($p),+))? : [$first] $bound => $out, $opname,
            $cuda, |$a, $b, $c| $body); )*

        /// Every ternary op of the table (bound: the first input's type, then the bound on
        /// `T`, the type of the other two):
        ///
        #[doc = doc_table!($(concat!(
            "| `", $opname, "` | [`", stringify!($name), "`](struct@", stringify!($name),
            ") | `", stringify!($first), "`, [`", stringify!($bound), "`] | `",
            stringify!($out), "` | `", $cuda, "` |"
        )),*)]
        pub const TERNARY_OPS: &[OpInfo] = &[
            $( OpInfo { name: $opname, bound: stringify!($bound), cuda: $cuda }, )*
        ];
    };
    (@one $(#[$doc:meta])* $name:ident : [$first:tt] $bound:ident => $out:ty, $opname:literal,
        $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl Sealed for $name {}

        impl<T: $bound> TernaryOp<$first, T> for $name {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: $first, $b: T, $c: T) -> $out {
                $body
            }
        }
    };
    // An op carrying scalars (`p0`, `p1`): the first input is `T`.
    (@one $(#[$doc:meta])* $name:ident ($($p:ident),+) : [T] $bound:ident => $out:ty,
        $opname:literal, $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr) => {
        unary_ops!(@struct $(#[$doc])* $name ($($p),+));

        impl<T> Sealed for $name<T> {}

        impl<T: $bound> TernaryOp<T, T> for $name<T> {
            type Output = $out;
            const NAME: &'static str = $opname;
            const CUDA: &'static str = $cuda;
            #[inline(always)]
            fn cpu(&self, $a: T, $b: T, $c: T) -> $out {
                let $name($($p),+) = *self;
                $body
            }
            fn scalars(&self) -> [T; 2] {
                let $name($($p),+) = *self;
                pad_scalars(&[$($p),+])
            }
        }
    };
}

for_each_unary_op!(unary_ops);
for_each_binary_op!(binary_ops);
for_each_ternary_op!(ternary_ops);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::op::check_op_source;
    use half::f16;

    fn all() -> impl Iterator<Item = &'static OpInfo> {
        UNARY_OPS.iter().chain(BINARY_OPS).chain(TERNARY_OPS)
    }

    /// `(kernel name, method name)` of every entry that has methods, from the table itself.
    macro_rules! method_names {
        ($(
            $(#[$doc:meta])*
            $name:ident $(($($s:ident),*))? : $([$first:tt])? $bound:ident => $out:ty,
                $opname:literal, $cuda:literal, |$($p:ident),*| $body:expr
                $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
        )*) => {
            vec![$($(($opname, stringify!($m)),)?)*]
        };
    }

    /// The kernel name (errors, cache keys) and the method name of an entry are written
    /// separately (no `paste` crate); they must agree, except `where`, a Rust keyword
    /// (`where_cond`, candle's name).
    #[test]
    fn kernel_names_match_method_names() {
        let mut pairs: Vec<(&str, &str)> = for_each_unary_op!(method_names);
        pairs.extend(for_each_binary_op!(method_names));
        pairs.extend(for_each_ternary_op!(method_names));
        assert!(pairs.len() > 30, "{pairs:?}");
        for (kernel, method) in pairs {
            let expected = if kernel == "where" {
                "where_cond"
            } else {
                kernel
            };
            assert_eq!(method, expected, "entry {kernel:?} has method {method:?}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = all().map(|o| o.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    /// Every table entry (and every cast, and `fill`) passes the generator's check, so the
    /// check rejects nothing the crate compiles.
    #[test]
    fn every_entry_passes_the_generator_check() {
        for op in all() {
            if let Err(e) = check_op_source(op.name, op.cuda) {
                panic!("{}: {e}", op.name);
            }
        }
        use crate::element::DType;
        let dtypes = [
            DType::F32,
            DType::F64,
            DType::F16,
            DType::BF16,
            DType::I32,
            DType::I64,
            DType::U8,
            DType::Bool,
            DType::I8,
            DType::I16,
            DType::U16,
            DType::U32,
            DType::U64,
        ];
        for dtype in dtypes {
            let name = crate::ops::cast::cast_name(dtype);
            assert!(check_op_source(name, "a").is_ok(), "{name}");
        }
        assert!(check_op_source("fill", "p0").is_ok());
    }

    #[test]
    fn scalar_ops_expose_their_scalars() {
        assert_eq!(UnaryOp::<i32>::scalars(&AddScalar(7)), [7, 0]);
        assert_eq!(
            UnaryOp::<f32>::scalars(&ClampScalar(-1.0, 2.0)),
            [-1.0, 2.0]
        );
        assert_eq!(UnaryOp::<u8>::cpu(&MulScalar(3), 100), 44);
    }

    #[test]
    fn edge_semantics() {
        assert!(UnaryOp::<f32>::cpu(&Relu, f32::NAN).is_nan());
        assert_eq!(UnaryOp::<f32>::cpu(&Relu, -0.0).to_bits(), 0);
        assert_eq!(UnaryOp::<f64>::cpu(&Round, 2.5), 2.0);
        assert_eq!(UnaryOp::<f32>::cpu(&Round, -3.5), -4.0);
        assert_eq!(UnaryOp::<f16>::cpu(&Round, f16::from_f32(0.5)), f16::ZERO);
        assert!(TernaryOp::<f32, f32>::cpu(&Clamp, 1.0, f32::NAN, 2.0).is_nan());
        assert_eq!(TernaryOp::<i32, i32>::cpu(&Clamp, 9, 0, 5), 5);
        assert_eq!(TernaryOp::<bool, u8>::cpu(&Where, false, 1, 2), 2);
        // fma rounds once: (1 + 2^-30)^2 - 1 keeps the 2^-60 term.
        let x = 1.0 + 2f64.powi(-30);
        assert_eq!(
            TernaryOp::<f64, f64>::cpu(&Fma, x, x, -1.0),
            2f64.powi(-29) + 2f64.powi(-60)
        );
        assert_eq!(TernaryOp::<f32, f32>::cpu(&Lerp, 1.0, 3.0, 0.25), 1.5);
        let g = UnaryOp::<f64>::cpu(&Gelu, 1.0);
        assert!((g - 0.841_344_746_068_542_9).abs() < 1e-15);
        assert!(!BinaryOp::<f32>::cpu(&Eq, f32::NAN, f32::NAN));
        assert!(BinaryOp::<f32>::cpu(&Ne, f32::NAN, f32::NAN));
        assert_eq!(BinaryOp::<i32>::cpu(&Div, 7, 0), 0);
    }

    /// Activations (issue 26): the small values `log1p` and `expm1` keep, and NaN.
    #[test]
    fn activation_edges() {
        let sp = UnaryOp::<f32>::cpu(&Softplus(1.0, 20.0), -30.0);
        assert!(
            (sp as f64 / 9.357_622_968_839_737e-14 - 1.0).abs() < 1e-6,
            "{sp}"
        );
        assert_eq!(UnaryOp::<f64>::cpu(&Softplus(1.0, 20.0), 25.0), 25.0);
        let ls = UnaryOp::<f64>::cpu(&Logsigmoid, 40.0);
        assert!((ls / -(-40f64).exp() - 1.0).abs() < 1e-12, "{ls}");
        let e = UnaryOp::<f64>::cpu(&Elu(1.0), -1e-10);
        assert!((e / -1e-10 - 1.0).abs() < 1e-9, "{e}");
        assert!(UnaryOp::<f32>::cpu(&Softshrink(0.5), f32::NAN).is_nan());
        assert!(UnaryOp::<f32>::cpu(&Hardshrink(0.5), f32::NAN).is_nan());
        assert!(UnaryOp::<f32>::cpu(&Relu6, f32::NAN).is_nan());
        assert_eq!(UnaryOp::<f32>::cpu(&Relu6, 7.0), 6.0);
        assert_eq!(UnaryOp::<f32>::cpu(&Threshold(1.0, -5.0), 1.0), -5.0);
        assert_eq!(BinaryOp::<f32>::cpu(&Prelu, -2.0, 0.25), -0.5);
        assert_eq!(
            UnaryOp::<f16>::cpu(&Hardswish, f16::from_f32(3.0)),
            f16::from_f32(3.0)
        );
    }
}
