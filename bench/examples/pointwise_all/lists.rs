//! The lists of `--all-ops`: the element types of each bound and the ops, one line each.

/// Runs `$body` once per element type of `$bound`, with `$t` naming the type.
macro_rules! each_type {
    (FloatElement, $t:ident => $body:block) => {{
        { type $t = f32; $body }
        { type $t = f16; $body }
        { type $t = bf16; $body }
        { type $t = f64; $body }
    }};
    (Signed, $t:ident => $body:block) => {{
        each_type!(FloatElement, $t => $body);
        { type $t = i32; $body }
        { type $t = i64; $body }
        { type $t = i8; $body }
        { type $t = i16; $body }
    }};
    (Numeric, $t:ident => $body:block) => {{
        each_type!(Signed, $t => $body);
        { type $t = u8; $body }
        { type $t = u16; $body }
        { type $t = u32; $body }
        { type $t = u64; $body }
    }};
    (DivRem, $t:ident => $body:block) => {{
        each_type!(Numeric, $t => $body);
    }};
    (Integer, $t:ident => $body:block) => {{
        { type $t = i8; $body }
        { type $t = i16; $body }
        { type $t = i32; $body }
        { type $t = i64; $body }
        { type $t = u8; $body }
        { type $t = u16; $body }
        { type $t = u32; $body }
        { type $t = u64; $body }
    }};
    (Bitwise, $t:ident => $body:block) => {{
        each_type!(Integer, $t => $body);
        { type $t = bool; $body }
    }};
    (Element, $t:ident => $body:block) => {{
        each_type!(Numeric, $t => $body);
        { type $t = bool; $body }
    }};
}

/// Every op the bench runs, one line each: `"name" => method_into(scalar args)`, grouped by
/// kind (`unary`: `a.m(.., out)`; `binary`: `a.m(b, .., out)`; `ternary`: `a.m(b, c, out)`;
/// `select`: `Tensor::m(mask, a, b, out)`), the element bound and the output type. `"name"` is
/// the kernel name, the key `scripts/bench_torch_ops.py` maps to a PyTorch call; scalars are
/// written with `s::<T>(x)` (`x` as `T`, the way the torch script converts it). Adding an op
/// is one line here (and one in the torch script's `OPS`, if it is not there yet).
macro_rules! op_list {
    ($m:ident!($($pre:tt)*)) => {
        $m! {
            $($pre)*
            unary Numeric -> T {
                "abs" => abs_into(),
                "sign" => sign_into(),
                "square" => square_into(),
                "relu" => relu_into(),
                "add_scalar" => add_scalar_into(s::<T>(3.0)),
                "mul_scalar" => mul_scalar_into(s::<T>(3.0)),
                "clamp_scalar" => clamp_scalar_into(s::<T>(0.75), s::<T>(1.25)),
                "clamp_min" => clamp_min_into(s::<T>(0.75)),
                "clamp_max" => clamp_max_into(s::<T>(1.25)),
            }
            unary Signed -> T {
                "neg" => neg_into(),
            }
            unary FloatElement -> T {
                "exp" => exp_into(),
                "log" => log_into(),
                "sqrt" => sqrt_into(),
                "rsqrt" => rsqrt_into(),
                "sin" => sin_into(),
                "cos" => cos_into(),
                "tanh" => tanh_into(),
                "sigmoid" => sigmoid_into(),
                "gelu" => gelu_into(),
                "silu" => silu_into(),
                "recip" => recip_into(),
                "floor" => floor_into(),
                "ceil" => ceil_into(),
                "round" => round_into(),
                "exp2" => exp2_into(),
                "expm1" => expm1_into(),
                "log2" => log2_into(),
                "log10" => log10_into(),
                "log1p" => log1p_into(),
                "tan" => tan_into(),
                "asin" => asin_into(),
                "acos" => acos_into(),
                "atan" => atan_into(),
                "sinh" => sinh_into(),
                "cosh" => cosh_into(),
                "asinh" => asinh_into(),
                "acosh" => acosh_into(),
                "atanh" => atanh_into(),
                "deg2rad" => deg2rad_into(),
                "rad2deg" => rad2deg_into(),
                "sinc" => sinc_into(),
                "trunc" => trunc_into(),
                "frac" => frac_into(),
                "round_decimals" => round_decimals_into(s::<T>(2.0)),
                "erf" => erf_into(),
                "erfc" => erfc_into(),
                "erfinv" => erfinv_into(),
                "lgamma" => lgamma_into(),
                "digamma" => digamma_into(),
                "i0" => i0_into(),
                "logit" => logit_into(),
                "logit_eps" => logit_eps_into(s::<T>(1e-6)),
                "nan_to_num" => nan_to_num_into(Some(s::<T>(0.0)), Some(s::<T>(1e4)), Some(s::<T>(-1e4))),
                "relu6" => relu6_into(),
                "leaky_relu" => leaky_relu_into(s::<T>(0.01)),
                "elu" => elu_into(s::<T>(1.0)),
                "selu" => selu_into(),
                "celu" => celu_into(s::<T>(1.0)),
                "softplus" => softplus_into(s::<T>(1.0), s::<T>(20.0)),
                "softsign" => softsign_into(),
                "mish" => mish_into(),
                "hardtanh" => hardtanh_into(s::<T>(-1.0), s::<T>(1.0)),
                "hardsigmoid" => hardsigmoid_into(),
                "hardswish" => hardswish_into(),
                "logsigmoid" => logsigmoid_into(),
                "tanhshrink" => tanhshrink_into(),
                "softshrink" => softshrink_into(s::<T>(0.5)),
                "hardshrink" => hardshrink_into(s::<T>(0.5)),
                "threshold" => threshold_into(s::<T>(1.0), s::<T>(0.0)),
                "gelu_tanh" => gelu_tanh_into(),
            }
            unary Element -> bool {
                "isnan" => isnan_into(),
                "isinf" => isinf_into(),
                "isposinf" => isposinf_into(),
                "isneginf" => isneginf_into(),
                "isfinite" => isfinite_into(),
                "logical_not" => logical_not_into(),
            }
            unary Numeric -> bool {
                "signbit" => signbit_into(),
            }
            unary Bitwise -> T {
                "bitwise_not" => bitwise_not_into(),
            }
            binary Numeric -> T {
                "add" => add_into(),
                "sub" => sub_into(),
                "mul" => mul_into(),
                "div" => div_into(),
                "maximum" => maximum_into(),
                "minimum" => minimum_into(),
                "fmax" => fmax_into(),
                "fmin" => fmin_into(),
            }
            binary DivRem -> T {
                "remainder" => remainder_into(),
                "fmod" => fmod_into(),
                "floor_divide" => floor_divide_into(),
            }
            binary FloatElement -> T {
                "pow" => pow_into(),
                "copysign" => copysign_into(),
                "nextafter" => nextafter_into(),
                "logaddexp" => logaddexp_into(),
                "logaddexp2" => logaddexp2_into(),
                "float_power" => float_power_into(),
                "xlogy" => xlogy_into(),
                "xlog1py" => xlog1py_into(),
                "atan2" => atan2_into(),
                "hypot" => hypot_into(),
                "prelu" => prelu_into(),
            }
            binary Element -> bool {
                "eq" => eq_into(),
                "ne" => ne_into(),
                "lt" => lt_into(),
                "le" => le_into(),
                "gt" => gt_into(),
                "ge" => ge_into(),
                "logical_and" => logical_and_into(),
                "logical_or" => logical_or_into(),
                "logical_xor" => logical_xor_into(),
            }
            binary Bitwise -> T {
                "bitwise_and" => bitwise_and_into(),
                "bitwise_or" => bitwise_or_into(),
                "bitwise_xor" => bitwise_xor_into(),
            }
            binary Integer -> T {
                "left_shift" => left_shift_into(),
                "right_shift" => right_shift_into(),
                "gcd" => gcd_into(),
                "lcm" => lcm_into(),
            }
            binary Integer -> f32 {
                "true_divide" => true_divide_into(),
            }
            ternary Numeric -> T {
                "clamp" => clamp_into(),
            }
            ternary FloatElement -> T {
                "fma" => fma_into(),
                "lerp" => lerp_into(),
                "addcmul" => addcmul_into(s::<T>(0.5)),
                "addcdiv" => addcdiv_into(s::<T>(0.5)),
            }
            select Element -> T {
                "where" => where_cond_into(),
            }
        }
    };
}
