//! The float functions of the op table's math ops (issue 26) in both compute types, `f32`
//! and `f64`, computed the way their CUDA expressions compute them (`kernels/ops.cuh`,
//! "Float math ops"): the same formulas, PyTorch's, in the same order.
//!
//! Rust's `f32`/`f64` methods call the platform's libm (`exp2`, `expm1`, `log1p`, `tan`,
//! `atan2`, `hypot`, ...); `asinh`, `acosh`, `atanh`, `erfc` and `lgamma` come from the `libm`
//! crate (std's `acosh` loses digits near 1); `erfinv`, `digamma` and `i0` from
//! [`super::special`].

use super::special;

/// Float functions beyond `f32`/`f64`'s own methods and [`super::compute::ComputeMath`].
pub(crate) trait FloatMath: Sized {
    /// Inverse hyperbolic sine.
    fn asinh(self) -> Self;
    /// Inverse hyperbolic cosine (NaN below 1).
    fn acosh(self) -> Self;
    /// Inverse hyperbolic tangent (`±inf` at `±1`, NaN beyond).
    fn atanh(self) -> Self;
    /// The complementary error function `1 - erf(x)`.
    fn erfc(self) -> Self;
    /// The inverse error function.
    fn erfinv(self) -> Self;
    /// `ln |Γ(x)|` (`+inf` at the non-positive integers).
    fn lgamma(self) -> Self;
    /// `Γ'(x) / Γ(x)`.
    fn digamma(self) -> Self;
    /// The modified Bessel function of the first kind, order zero.
    fn i0(self) -> Self;
    /// `ln(e^a + e^b)` as `max + log1p(e^-|a - b|)`; `a` when `a == b` is infinite.
    fn logaddexp(self, b: Self) -> Self;
    /// `log2(2^a + 2^b)` as `max + log1p(2^-|a - b|) / ln 2`; `a` when `a == b` is infinite.
    fn logaddexp2(self, b: Self) -> Self;
    /// `a^b` computed in `f64`, rounded once to the type.
    fn float_power(self, b: Self) -> Self;
    /// `a * ln(b)`; 0 where `a == 0` unless `b` is NaN.
    fn xlogy(self, b: Self) -> Self;
    /// `a * ln(1 + b)`; 0 where `a == 0` unless `b` is NaN.
    fn xlog1py(self, b: Self) -> Self;
    /// `sin(pi a) / (pi a)`, 1 at 0.
    fn sinc(self) -> Self;
    /// `a` rounded to `decimals` decimal places (PyTorch's `round(decimals=)`).
    fn round_decimals(self, decimals: Self) -> Self;
    /// `ln(a / (1 - a))`, `a` first clamped to `[eps, 1 - eps]` when `eps >= 0`.
    fn logit_eps(self, eps: Self) -> Self;
}

/// `10^n` for `n = trunc(|d|)` (0 for NaN, at most 400, beyond which it is infinite), by
/// squaring in `f64`: exact up to `10^22`, and the same bits as `ts_pow10` on the GPU (the
/// same IEEE multiplications; PyTorch's host `std::pow(10, d)` is correctly rounded, which
/// can differ in the last bit of `f64` beyond `10^22`).
pub(crate) fn pow10(d: f64) -> f64 {
    let mut n = if d.is_nan() {
        0
    } else {
        d.abs().min(400.0) as u32
    };
    let (mut r, mut b) = (1.0f64, 10.0f64);
    while n != 0 {
        if n & 1 != 0 {
            r *= b;
        }
        b *= b;
        n >>= 1;
    }
    r
}

/// C's `fmax`: the larger, ignoring a NaN (NaN only when both are); for integers, `max`.
/// Ties (`0.0` and `-0.0`) give `b`, as `ts_fmax` on the GPU.
#[allow(clippy::eq_op)] // NaN is the one value unequal to itself
#[inline]
pub(crate) fn fmax<T: PartialOrd + Copy>(a: T, b: T) -> T {
    if a != a {
        b
    } else if b != b || a > b {
        a
    } else {
        b
    }
}

/// C's `fmin`: the smaller, ignoring a NaN (NaN only when both are); for integers, `min`.
#[allow(clippy::eq_op)] // NaN is the one value unequal to itself
#[inline]
pub(crate) fn fmin<T: PartialOrd + Copy>(a: T, b: T) -> T {
    if a != a {
        b
    } else if b != b || a < b {
        a
    } else {
        b
    }
}

macro_rules! float_math {
    ($t:ident, $pi:expr, $wide:ident, $narrow:ident, $asinh:path, $acosh:path, $atanh:path,
        $erfc:path, $lgamma:path, $erfinv:path, $digamma:path, $i0:path) => {
        impl FloatMath for $t {
            #[inline]
            fn asinh(self) -> $t {
                $asinh(self)
            }
            #[inline]
            fn acosh(self) -> $t {
                $acosh(self)
            }
            #[inline]
            fn atanh(self) -> $t {
                $atanh(self)
            }
            #[inline]
            fn erfc(self) -> $t {
                $erfc(self)
            }
            #[inline]
            fn erfinv(self) -> $t {
                $erfinv(self)
            }
            #[inline]
            fn lgamma(self) -> $t {
                $lgamma(self)
            }
            #[inline]
            fn digamma(self) -> $t {
                $digamma(self)
            }
            #[inline]
            fn i0(self) -> $t {
                $i0(self)
            }
            #[inline]
            fn logaddexp(self, b: $t) -> $t {
                if self.is_infinite() && self == b {
                    self
                } else {
                    // std::max(a, b): `a` unless `a < b` (a NaN `b` still propagates below).
                    let m = if self < b { b } else { self };
                    m + (-(self - b).abs()).exp().ln_1p()
                }
            }
            #[inline]
            fn logaddexp2(self, b: $t) -> $t {
                if self.is_infinite() && self == b {
                    self
                } else {
                    let m = if self < b { b } else { self };
                    m + (-(self - b).abs()).exp2().ln_1p() * std::f64::consts::LOG2_E as $t
                }
            }
            #[inline]
            fn float_power(self, b: $t) -> $t {
                $wide(self).powf($wide(b)) as $t
            }
            #[inline]
            fn xlogy(self, b: $t) -> $t {
                if b.is_nan() {
                    <$t>::NAN
                } else if self == 0.0 {
                    0.0
                } else {
                    self * b.ln()
                }
            }
            #[inline]
            fn xlog1py(self, b: $t) -> $t {
                if b.is_nan() {
                    <$t>::NAN
                } else if self == 0.0 {
                    0.0
                } else {
                    self * b.ln_1p()
                }
            }
            #[inline]
            fn sinc(self) -> $t {
                if self == 0.0 {
                    1.0
                } else {
                    let p = $pi * self;
                    p.sin() / p
                }
            }
            #[inline]
            fn round_decimals(self, decimals: $t) -> $t {
                let ten = $narrow(pow10($wide(decimals)));
                if decimals < 0.0 {
                    (self / ten).round_ties_even() * ten
                } else {
                    (self * ten).round_ties_even() / ten
                }
            }
            #[inline]
            fn logit_eps(self, eps: $t) -> $t {
                let x = if eps >= 0.0 {
                    if self < eps {
                        eps
                    } else if self > 1.0 - eps {
                        1.0 - eps
                    } else {
                        self
                    }
                } else {
                    self
                };
                (x / (1.0 - x)).ln()
            }
        }
    };
}

#[inline(always)]
fn f32_to_f64(x: f32) -> f64 {
    f64::from(x)
}
#[inline(always)]
fn f64_to_f32(x: f64) -> f32 {
    x as f32
}
#[inline(always)]
fn f64_id(x: f64) -> f64 {
    x
}

float_math!(
    f32,
    std::f32::consts::PI,
    f32_to_f64,
    f64_to_f32,
    libm::asinhf,
    libm::acoshf,
    libm::atanhf,
    libm::erfcf,
    libm::lgammaf,
    special::erfinv_f32,
    special::digamma_f32,
    special::i0_f32
);
float_math!(
    f64,
    std::f64::consts::PI,
    f64_id,
    f64_id,
    libm::asinh,
    libm::acosh,
    libm::atanh,
    libm::erfc,
    libm::lgamma,
    special::erfinv_f64,
    special::digamma_f64,
    special::i0_f64
);
