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

use super::compute::{in_compute, ComputeMath};
use super::float_math::{self, FloatMath};
use super::op::{sealed::Sealed, BinaryOp, TernaryOp, UnaryOp};
use crate::element::{Element, FloatElement, Numeric, Signed};

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
}
