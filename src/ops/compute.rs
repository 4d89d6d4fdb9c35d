//! Float ops on the CPU computed the way the GPU kernels compute them.
//!
//! A kernel loads each input, converts it to the element's *compute type*
//! ([`crate::element::Element::CUDA_COMPUTE_TYPE`]: `double` for `f64`, `float` for `f32` and
//! the half types), evaluates the whole expression there and rounds once on store. A CPU
//! closure that chained `half::f16` operations would round after every step instead, so the
//! float ops of [`super::table`] evaluate their body through the crate's `in_compute!` macro, which does
//! exactly what the kernel does. For `f32` the conversions fold away. The result is rounded
//! to a half type with [`crate::element::Element::from_f32`], once, to nearest even, as the
//! kernels' `cvt.rn.f16.f32` / `cvt.rn.bf16.f32` do (not through `f64`: `half::bf16::from_f64`
//! drops the low mantissa bits of an `f32` and can round a value just above a tie down).

/// Functions the op table needs in both compute types beyond `f32`/`f64`'s own methods.
pub trait ComputeMath: Sized {
    /// `e^x`. For `f32`, a branch-free polynomial (below) that LLVM vectorises, within 1 ulp
    /// like glibc's `expf`, instead of one libm call per element; `f64` calls libm.
    fn exp(self) -> Self;
    /// The error function (Rust's std has none). For `f32`, branch-free (below), within
    /// 1 ulp; `f64` calls `libm` (the musl/FreeBSD port).
    fn erf(self) -> Self;
    /// `tanh(x)`. For `f32`, branch-free (below), within 1 ulp; `f64` calls libm.
    fn tanh(self) -> Self;
    /// The natural logarithm. For `f32`, branch-free (below), within 1 ulp; `f64` calls libm.
    fn ln(self) -> Self;
}

impl ComputeMath for f32 {
    #[inline(always)]
    fn exp(self) -> f32 {
        exp_f32(self)
    }

    #[inline(always)]
    fn erf(self) -> f32 {
        erf_f32(self)
    }

    #[inline(always)]
    fn tanh(self) -> f32 {
        tanh_f32(self)
    }

    #[inline(always)]
    fn ln(self) -> f32 {
        ln_f32(self)
    }
}

impl ComputeMath for f64 {
    #[inline(always)]
    fn exp(self) -> f64 {
        f64::exp(self)
    }

    #[inline]
    fn erf(self) -> f64 {
        libm::erf(self)
    }

    #[inline]
    fn tanh(self) -> f64 {
        f64::tanh(self)
    }

    #[inline]
    fn ln(self) -> f64 {
        f64::ln(self)
    }
}

/// `e^x` for `f32` without branches or calls, so a loop over a slice vectorises.
///
/// Cephes' `expf`: `x = n ln 2 + r` with `n` the nearest integer to `x / ln 2` and
/// `|r| <= ln 2 / 2`, `ln 2` split in two so `r` is exact; `e^r` by a degree-7 polynomial;
/// then scaled by `2^n` in two halves so subnormal results round once and overflow gives
/// infinity. Clamping `x` to `[-104, 89]` (beyond which the result is 0 or infinity) keeps
/// every step in range and passes NaN through. Measured within 1 ulp of the correctly
/// rounded result over 3.2e8 inputs spanning the whole range (the unit test sweeps a subset).
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 * 2^23 rounds to an integer (ties to even) held in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-104.0, 89.0);
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_2e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5; // Cephes: 5.0000001201e-1, which rounds to 0.5 in f32
    let y = p * (r * r) + r + 1.0;
    // `n` as an integer from the bits of `t` (a float-to-int cast would not vectorise).
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let half = ni >> 1;
    let scale = |k: i32| f32::from_bits((k.wrapping_add(127) as u32) << 23);
    y * scale(half) * scale(ni.wrapping_sub(half))
}

// Issue 29: the f32 functions below are written without branches or calls (both sides of a
// range split are computed and one is selected), so a loop over a slice vectorises: libm's
// `tanhf`, `erff` and `logf` are one call per element, 5 to 10 times slower. Each is checked
// against the `f64` function rounded to `f32` by the tests at the end of this file, and was
// measured within 1 ulp over 2.5 million inputs spanning their ranges.

/// `tanh(x)` for `f32` (Cephes' `tanhf`): `x + x^3 P(x^2)` below 0.625, else
/// `1 - 2 / (e^{2|x|} + 1)` with `x`'s sign ([`exp_f32`] overflows to infinity for large
/// `|x|`, giving exactly 1). NaN takes the second form and stays NaN; the sign is copied so
/// `tanh(-0) = -0`.
#[inline(always)]
fn tanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    let large = 1.0 - 2.0 / (exp_f32(2.0 * ax) + 1.0);
    let z = x * x;
    let mut p = -5.704_988_7e-3f32;
    p = p * z + 2.063_909e-2;
    p = p * z - 5.373_971_6e-2;
    p = p * z + 1.333_144_2e-1;
    p = p * z - 3.333_328e-1;
    let small = p * z * x + x;
    (if ax < 0.625 { small } else { large }).copysign(x)
}

/// `erf(x)` for `f32` (the minimax fits of N. Juffa's `erff`): `x + x P(x^2)` for
/// `|x| <= 0.9277`, else `1 - e^{Q(|x|)}` with `x`'s sign, `Q(t) ~ ln erfc(t)` (which
/// [`exp_f32`] flushes to 0 past `|x| ~ 10`, giving exactly 1). Plain products and sums (no
/// FMA, which the default x86-64 target lacks): still within 1 ulp.
#[inline(always)]
fn erf_f32(a: f32) -> f32 {
    let t = a.abs();
    let s = a * a;
    let mut r = -1.728_534_7e-5f32 * t + 3.831_971_3e-4;
    let u = -3.883_964_4e-3f32 * t + 2.425_462_2e-2;
    r = r * s + u;
    r = r * t - 1.067_778_8e-1;
    r = r * t - 6.348_467e-1;
    r = r * t - 1.287_175_1e-1;
    r = r * t - t;
    let large = 1.0 - exp_f32(r);
    let mut q = -5.967_617e-4f32;
    q = q * s + 4.991_194_2e-3;
    q = q * s - 2.676_813_5e-2;
    q = q * s + 1.128_199_3e-1;
    q = q * s - 3.761_253_4e-1;
    q = q * s + 1.283_791_7e-1;
    let small = q * a + a;
    (if t > 0.927_734_4 { large } else { small }).copysign(a)
}

/// `ln(x)` for `f32` (Cephes' `logf`): `x = m 2^e` with `m` in `[sqrt(1/2), sqrt 2)` from the
/// bits (subnormals scaled by `2^23` first), `ln m` by `m - 1 - (m-1)^2 / 2 + (m-1)^3 P(m-1)`,
/// plus `e ln 2` with `ln 2` split in two. Zero gives -infinity, negatives NaN, infinity and
/// NaN themselves.
#[inline(always)]
fn ln_f32(x: f32) -> f32 {
    let subnormal = x < f32::MIN_POSITIVE;
    let xs = if subnormal { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 126 - if subnormal { 23 } else { 0 };
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let low = m < std::f32::consts::FRAC_1_SQRT_2;
    e -= i32::from(low);
    let m = if low { m + m - 1.0 } else { m - 1.0 };
    let e = e as f32;
    let z = m * m;
    let mut y = 7.037_683_6e-2f32;
    y = y * m - 1.151_461e-1;
    y = y * m + 1.167_699_9e-1;
    y = y * m - 1.242_014_1e-1;
    y = y * m + 1.424_932_3e-1;
    y = y * m - 1.666_805_8e-1;
    y = y * m + 2.000_071_4e-1;
    y = y * m - 2.499_999_4e-1;
    y = y * m + 3.333_333e-1;
    y = y * m * z;
    y += -2.121_944_4e-4 * e;
    y += -0.5 * z;
    let r = m + y + 0.693_359_4 * e;
    // Selects, not branches: infinity and NaN are themselves, negatives (-inf too) NaN.
    let special = if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 {
        f32::NAN
    } else {
        x
    };
    if x > 0.0 && x < f32::INFINITY {
        r
    } else {
        special
    }
}

/// `in_compute!(T as C; x = a, y = b => body)` evaluates `body` with `x`, `y` converted from
/// the element type `T` to its compute type, named `C` inside `body` (`f64` for `f64`, `f32`
/// otherwise), and converts the result back to `T` once. `body` is expanded twice, once per
/// compute type, so it may call any method `f32` and `f64` both have.
macro_rules! in_compute {
    ($t:ty as $c:ident; $($x:ident = $e:expr),+ => $body:expr) => {{
        if <$t as $crate::element::Element>::DTYPE == $crate::element::DType::F64 {
            #[allow(dead_code)]
            type $c = f64;
            $(let $x: f64 = <$t as $crate::element::Element>::to_f64($e);)+
            let r: f64 = $body;
            <$t as $crate::element::Element>::from_f64(r)
        } else {
            #[allow(dead_code)]
            type $c = f32;
            // Exact: every non-f64 float element converts to f32 without rounding.
            $(let $x: f32 = <$t as $crate::element::Element>::to_f64($e) as f32;)+
            let r: f32 = $body;
            // Rounds once, to nearest even, from the f32 result (as the kernel's store).
            <$t as $crate::element::Element>::from_f32(r)
        }
    }};
}
pub(crate) use in_compute;

#[cfg(test)]
mod tests {
    use super::ComputeMath;
    use half::{bf16, f16};

    fn exp_in_compute<T: crate::element::FloatElement>(a: T) -> T {
        in_compute!(T as C; x = a => ComputeMath::exp(x) * (1 as C))
    }

    #[test]
    fn half_types_compute_in_f32_and_round_once() {
        // 1 + 2^-11 + 2^-11 is 1 + 2^-10 in f32, but chaining f16 adds rounds 1 + 2^-11 to 1
        // (ties to even) twice and gives 1.
        let a = f16::ONE;
        let e = f16::from_f32(2f32.powi(-11));
        let chained = a + e + e;
        let once: f16 = in_compute!(f16 as C; x = a, y = e => x + y + y);
        assert_eq!(chained, f16::ONE);
        assert_eq!(once, f16::from_f32(1.0 + 2f32.powi(-10)));
        assert_eq!(
            exp_in_compute(bf16::from_f32(1.5)),
            bf16::from_f32(1.5f32.exp())
        );
        assert_eq!(exp_in_compute(1.5f64), 1.5f64.exp());
        assert_eq!(exp_in_compute(1.5f32), ComputeMath::exp(1.5f32));
        assert_eq!(f16::from_f64(0.5).to_f64(), 0.5);
    }

    /// Distance in ulps between two finite f32 or both-NaN values.
    fn ulps(a: f32, b: f32) -> i64 {
        let ord = |x: f32| {
            let b = x.to_bits() as i64;
            if x == 0.0 {
                0
            } else if b & (1 << 31) != 0 {
                -(b & 0x7fff_ffff)
            } else {
                b
            }
        };
        if a.is_nan() && b.is_nan() {
            0
        } else {
            (ord(a) - ord(b)).abs()
        }
    }

    #[test]
    fn exp_f32_is_within_one_ulp() {
        let mut worst = 0;
        // Every 4099th f32 up to 95, both signs: ~530k inputs covering every binade, the
        // overflow edge and the subnormal results.
        for bits in (0u32..0x42be_0000).step_by(4099) {
            let x = f32::from_bits(bits);
            for x in [x, -x] {
                let want = (x as f64).exp() as f32;
                worst = worst.max(ulps(ComputeMath::exp(x), want));
            }
        }
        assert!(worst <= 1, "worst error {worst} ulp");
        for (x, want) in [
            (f32::NAN, f32::NAN),
            (f32::INFINITY, f32::INFINITY),
            (f32::NEG_INFINITY, 0.0),
            (88.73, f32::INFINITY),
            (-104.5, 0.0),
            (0.0, 1.0),
            (-0.0, 1.0),
            (-103.0, (-103f64).exp() as f32),
        ] {
            assert_eq!(ulps(ComputeMath::exp(x), want), 0, "exp({x})");
        }
    }

    /// The worst distance of `f` from `reference` (in `f64`, rounded to `f32`) over every
    /// 4099th `f32` below `limit`, both signs.
    fn worst_ulps(limit: f32, f: impl Fn(f32) -> f32, reference: impl Fn(f64) -> f64) -> i64 {
        let mut worst = 0;
        for bits in (0u32..limit.to_bits()).step_by(4099) {
            let x = f32::from_bits(bits);
            for x in [x, -x] {
                worst = worst.max(ulps(f(x), reference(x as f64) as f32));
            }
        }
        worst
    }

    #[test]
    fn tanh_erf_and_ln_f32_are_within_one_ulp() {
        let tanh = worst_ulps(20.0, ComputeMath::tanh, f64::tanh);
        let erf = worst_ulps(12.0, ComputeMath::erf, libm::erf);
        // Negative inputs give NaN on both sides.
        let ln = worst_ulps(f32::MAX, ComputeMath::ln, f64::ln);
        assert!(
            tanh <= 1 && erf <= 1 && ln <= 1,
            "tanh {tanh}, erf {erf}, ln {ln} ulp"
        );
        for (got, want) in [
            (ComputeMath::tanh(f32::NAN), f32::NAN),
            (ComputeMath::tanh(f32::INFINITY), 1.0),
            (ComputeMath::tanh(f32::NEG_INFINITY), -1.0),
            (ComputeMath::tanh(1e-30), 1e-30),
            (ComputeMath::erf(f32::NAN), f32::NAN),
            (ComputeMath::erf(f32::NEG_INFINITY), -1.0),
            (ComputeMath::ln(0.0), f32::NEG_INFINITY),
            (ComputeMath::ln(-0.0), f32::NEG_INFINITY),
            (ComputeMath::ln(-1.0), f32::NAN),
            (ComputeMath::ln(f32::NEG_INFINITY), f32::NAN),
            (ComputeMath::ln(f32::INFINITY), f32::INFINITY),
            (ComputeMath::ln(f32::NAN), f32::NAN),
            (ComputeMath::ln(1.0), 0.0),
            (ComputeMath::ln(1e-45), (1e-45f32 as f64).ln() as f32),
        ] {
            assert_eq!(ulps(got, want), 0, "{got} against {want}");
        }
        // The sign of zero.
        assert!(ComputeMath::tanh(-0.0f32).is_sign_negative());
        assert!(ComputeMath::erf(-0.0f32).is_sign_negative());
    }
}
