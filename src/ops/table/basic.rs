//! The first ops of the table: arithmetic, comparisons, the common float functions and
//! activations, the scalar ops, `where`, `clamp`, `fma` and `lerp`.
//!
//! Entries in the grammar of the table's module docs, one macro per list; each macro
//! appends its entries to the ones it is given and passes them on ([`super::chain`]).

/// The unary entries of this group.
macro_rules! basic_unary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
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
            Log: FloatElement => T, "log", "log(a)", |a| in_compute!(T as C; x = a => ComputeMath::ln(x))
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
                |a| in_compute!(T as C; x = a => ComputeMath::tanh(x))
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
        } }
    };
}
pub(crate) use basic_unary;

/// The binary entries of this group.
macro_rules! basic_binary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
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
        } }
    };
}
pub(crate) use basic_binary;

/// The ternary entries of this group.
macro_rules! basic_ternary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
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
        } }
    };
}
pub(crate) use basic_ternary;
