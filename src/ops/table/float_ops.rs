//! Exponentials, logs, trigonometry, rounding, special functions and the min/max ops of
//! issue 26, with `addcmul` / `addcdiv` (the ternary entries with a scalar).
//!
//! Entries in the grammar of the table's module docs, one macro per list; each macro
//! appends its entries to the ones it is given and passes them on ([`super::chain`]).

/// The unary entries of this group.
macro_rules! float_ops_unary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
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
                |a| in_compute!(T as C; x = a => ComputeMath::ln(x / (1.0 - x)))
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
        } }
    };
}
pub(crate) use float_ops_unary;

/// The binary entries of this group.
macro_rules! float_ops_binary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
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
        } }
    };
}
pub(crate) use float_ops_binary;

/// The ternary entries of this group.
macro_rules! float_ops_ternary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
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
        } }
    };
}
pub(crate) use float_ops_ternary;
