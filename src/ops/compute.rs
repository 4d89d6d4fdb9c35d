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
    /// The error function (Rust's std has none; `libm` is the musl/FreeBSD port).
    fn erf(self) -> Self;
}

impl ComputeMath for f32 {
    #[inline(always)]
    fn exp(self) -> f32 {
        exp_f32(self)
    }

    #[inline]
    fn erf(self) -> f32 {
        libm::erff(self)
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
}
