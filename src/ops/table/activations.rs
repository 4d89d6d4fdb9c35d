//! Activations of `torch.nn.functional` (issue 26): float types, PyTorch's formulas and NaN
//! behaviour; scalars are the element type, PyTorch's defaults are in each op's docs.
//!
//! Entries in the grammar of the table's module docs, one macro per list; each macro
//! appends its entries to the ones it is given and passes them on ([`super::chain`]).

/// The unary entries of this group.
macro_rules! activations_unary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
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
                |a| in_compute!(T as C; x = a => x * ComputeMath::tanh(ComputeMath::exp(x).ln_1p()))
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
                |a| in_compute!(T as C; x = a => x - ComputeMath::tanh(x))
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
                    * (1.0 + ComputeMath::tanh(0.7978845608028654f64 as C * (x + 0.044715f64 as C * (x * x * x)))))
                => gelu_tanh, gelu_tanh_into, gelu_tanh_: "gelu(a), tanh approximation";
        } }
    };
}
pub(crate) use activations_unary;

/// The binary entries of this group.
macro_rules! activations_binary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
            /// PReLU, `a > 0 ? a : weight * a` (`F.prelu`), the weight broadcast against the
            /// input NumPy-style (trailing dims): for a per-channel weight of an `[N, C, H, W]`
            /// input, reshape it to `[C, 1, 1]` (PyTorch applies a 1-D weight to dim 1).
            /// NaN gives NaN.
            Prelu: FloatElement => T, "prelu", "(a > 0 ? a : b * a)",
                |a, weight| in_compute!(T as C; x = a, w = weight => if x > 0.0 { x } else { w * x })
                => prelu, prelu_into, prelu_: "a > 0 ? a : weight * a";
        } }
    };
}
pub(crate) use activations_binary;
