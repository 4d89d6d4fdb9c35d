//! `erfinv`, `digamma` and `i0` in `f32` and `f64`, ported from the published algorithms
//! PyTorch uses (the GPU kernels run the same algorithms from `kernels/ops.cuh`, except
//! `erfinv`, which is CUDA's own there, as in PyTorch).
//!
//! - `erfinv`: Giles' single-precision approximation ("Approximating the erfinv function",
//!   GPU Computing Gems, 2011; the starting point CUDA's `erfinvf` is built on) as the first
//!   guess, then Newton steps on `erf(x) = |y|`, with the residual taken as
//!   `ln erfc(x) - ln(1 - |y|)` above `|y| = 0.5`, where `erf(x)` rounds to 1 and `1 - |y|` is
//!   exact; beyond Giles' range (`w >= 16`, only reachable in `f64`) the first guess is the
//!   asymptotic inverse of `erfc(x) ~ e^-x^2 / (x sqrt(pi))`. PyTorch's CPU `calc_erfinv`
//!   (Pavlis' rational start, two plain Newton steps) loses most digits near `±1`; this keeps
//!   them (within 2 ulps of the correctly rounded value, `src/ops/special.rs`'s tests).
//! - `digamma`: PyTorch's `calc_digamma` (Cephes' `psi`): reflection for `x < 0` (its
//!   `pi / tan(pi r)` term in `f64`, `r` the fraction of `x` moved into `[-1/2, 1/2]`, where
//!   PyTorch's `(-1, 0)` loses digits next to the poles), the recurrence up to `x >= 10`, then
//!   the asymptotic series. `digamma(±0) = ∓inf`, `digamma` of a negative integer is NaN.
//! - `i0`: Cephes' `i0` (PyTorch's `calc_i0`): Chebyshev series of `e^-x i0(x)` on `[0, 8]`
//!   and of `e^-x sqrt(x) i0(x)` on `(8, inf)`, times `e^x`, so `f32` overflows to infinity
//!   from `x > 88.7` like PyTorch (the true value does from 91.9); `i0(±inf) = inf`, where
//!   PyTorch's formula gives `inf / inf = NaN`.

// Cephes' and Giles' coefficients are kept as published (the digits `kernels/ops.cuh` has
// too), not rounded to the nearest `f64` by hand: the compiler rounds them the same way.
#![allow(clippy::excessive_precision)]

/// Giles' single-precision `erfinv(t) / t` polynomial in `w = -ln((1 - t)(1 + t))`.
macro_rules! giles {
    ($t:ty, $w:expr) => {{
        let w: $t = $w;
        if w < 5.0 {
            let w = w - 2.5;
            let mut p: $t = 2.810_226_36e-8;
            for c in [
                3.432_739_39e-7,
                -3.523_387_7e-6,
                -4.391_506_54e-6,
                2.185_808_7e-4,
                -1.253_725_03e-3,
                -4.177_681_64e-3,
                2.466_407_27e-1,
                1.501_409_41,
            ] {
                p = c + p * w;
            }
            p
        } else {
            let w = w.sqrt() - 3.0;
            let mut p: $t = -2.002_142_57e-4;
            for c in [
                1.009_505_58e-4,
                1.349_343_22e-3,
                -3.673_428_44e-3,
                5.739_507_73e-3,
                -7.622_461_3e-3,
                9.438_870_47e-3,
                1.001_674_06,
                2.832_976_82,
            ] {
                p = c + p * w;
            }
            p
        }
    }};
}

/// Cephes' `digamma` asymptotic coefficients (PyTorch's `A`), highest degree first.
const PSI_A: [f64; 7] = [
    8.333_333_333_333_333_333_33E-2,
    -2.109_279_609_279_609_279_61E-2,
    7.575_757_575_757_575_757_58E-3,
    -4.166_666_666_666_666_666_67E-3,
    3.968_253_968_253_968_253_97E-3,
    -8.333_333_333_333_333_333_33E-3,
    8.333_333_333_333_333_333_33E-2,
];
/// `digamma(10)`.
const PSI_10: f64 = 2.251_752_589_066_721_107_64;

/// Cephes' Chebyshev coefficients of `e^-x i0(x)` on `[0, 8]` (in `x / 2 - 2`).
#[rustfmt::skip]
const I0_A: [f64; 30] = [
    -4.415_341_646_479_339_379_50E-18, 3.330_794_518_822_238_097_83E-17,
    -2.431_279_846_547_954_693_59E-16, 1.715_391_285_555_133_030_61E-15,
    -1.168_533_287_799_345_168_08E-14, 7.676_185_498_604_935_616_88E-14,
    -4.856_446_783_111_929_460_90E-13, 2.955_052_663_129_639_834_61E-12,
    -1.726_826_291_441_555_707_23E-11, 9.675_809_035_373_236_912_24E-11,
    -5.189_795_601_635_262_906_66E-10, 2.659_823_724_682_386_650_35E-9,
    -1.300_025_009_986_248_042_12E-8, 6.046_995_022_541_918_949_32E-8,
    -2.670_793_853_940_611_733_91E-7, 1.117_387_539_120_103_718_15E-6,
    -4.416_738_358_458_750_563_59E-6, 1.644_844_807_072_889_708_93E-5,
    -5.754_195_010_082_103_703_98E-5, 1.885_028_850_958_416_557_29E-4,
    -5.763_755_745_385_823_658_85E-4, 1.639_475_616_941_335_798_42E-3,
    -4.324_309_995_050_575_944_30E-3, 1.054_646_039_459_499_831_83E-2,
    -2.373_741_480_589_946_881_56E-2, 4.930_528_423_967_070_848_78E-2,
    -9.490_109_704_804_764_442_10E-2, 1.716_209_015_222_087_753_49E-1,
    -3.046_826_723_431_983_986_83E-1, 6.767_952_744_094_760_849_95E-1,
];

/// Cephes' Chebyshev coefficients of `e^-x sqrt(x) i0(x)` on `(8, inf)` (in `32 / x - 2`).
#[rustfmt::skip]
const I0_B: [f64; 25] = [
    -7.233_180_487_874_753_954_56E-18, -4.830_504_485_944_182_071_26E-18,
    4.465_621_420_296_759_999_01E-17, 3.461_222_867_697_461_093_10E-17,
    -2.827_623_980_516_583_484_94E-16, -3.425_485_619_677_219_134_62E-16,
    1.772_560_133_056_526_383_60E-15, 3.811_680_669_352_622_420_75E-15,
    -9.554_846_698_828_307_648_70E-15, -4.150_569_347_287_222_086_63E-14,
    1.540_086_217_521_409_826_91E-14, 3.852_778_382_742_142_701_14E-13,
    7.180_124_451_383_666_233_67E-13, -1.794_178_531_506_806_117_78E-12,
    -1.321_581_184_044_771_311_88E-11, -3.149_916_527_963_241_364_54E-11,
    1.188_914_710_784_643_834_24E-11, 4.940_602_388_224_969_589_10E-10,
    3.396_232_025_708_386_345_15E-9, 2.266_668_990_498_178_064_59E-8,
    2.048_918_589_469_063_741_83E-7, 2.891_370_520_834_756_482_97E-6,
    6.889_758_346_916_823_984_26E-5, 3.369_116_478_255_694_089_90E-3,
    8.044_904_110_141_088_316_08E-1,
];

/// The three functions for one float type; `$erf`, `$erfc` are libm's.
macro_rules! special {
    ($t:ident, $erfinv:ident, $digamma:ident, $i0:ident, $erf:path, $erfc:path, $steps:expr) => {
        /// The inverse error function (see the module docs): NaN outside `[-1, 1]` and for
        /// NaN, `±inf` at `±1`, `erfinv(-0) = -0`.
        pub(crate) fn $erfinv(y: $t) -> $t {
            let t = y.abs();
            if t.is_nan() || t > 1.0 {
                return <$t>::NAN;
            }
            if t == 1.0 {
                return <$t>::INFINITY.copysign(y);
            }
            let w = -((1.0 - t) * (1.0 + t)).ln();
            let mut x = if w < 16.0 {
                giles!($t, w) * t
            } else {
                // x^2 = L - ln(x sqrt(pi)) from erfc(x) ~ e^-x^2 / (x sqrt(pi)), L = -ln(1 - t).
                let l = -(1.0 - t).ln();
                let sqrt_pi = std::f64::consts::PI.sqrt() as $t;
                let mut x = l.sqrt();
                for _ in 0..2 {
                    x = (l - (sqrt_pi * x).ln()).sqrt();
                }
                x
            };
            let d = std::f64::consts::FRAC_2_SQRT_PI as $t;
            for _ in 0..$steps {
                let slope = d * (-x * x).exp();
                if t <= 0.5 {
                    x -= ($erf(x) - t) / slope;
                } else {
                    let c = $erfc(x);
                    x += (c.ln() - (1.0 - t).ln()) * c / slope;
                }
            }
            x.copysign(y)
        }

        /// The digamma function `Γ'(x) / Γ(x)` (see the module docs).
        pub(crate) fn $digamma(x: $t) -> $t {
            if x == 0.0 {
                return <$t>::INFINITY.copysign(-x);
            }
            let mut x = x;
            let mut result: $t = 0.0;
            if x < 0.0 {
                if x == x.trunc() {
                    return <$t>::NAN;
                }
                // psi(1 - x) - psi(x) = pi / tan(pi x), with the fraction of x (exact) so
                // that pi * r loses nothing to the integer part, moved into [-1/2, 1/2]
                // (exact; the period is 1) so that tan is not taken next to -pi.
                let mut r = x.fract();
                if r < -0.5 {
                    r += 1.0;
                }
                let r = f64::from(r);
                result = (-std::f64::consts::PI / (std::f64::consts::PI * r).tan()) as $t;
                x = 1.0 - x;
            }
            while x < 10.0 {
                result -= 1.0 / x;
                x += 1.0;
            }
            if x == 10.0 {
                return result + PSI_10 as $t;
            }
            let mut y: $t = 0.0;
            if x < 1.0e17 {
                let z = 1.0 / (x * x);
                let mut p: $t = 0.0;
                for a in PSI_A {
                    p = p * z + a as $t;
                }
                y = z * p;
            }
            x.ln() - 0.5 / x - y + result
        }

        /// The modified Bessel function of the first kind, order zero (see the module docs).
        pub(crate) fn $i0(x: $t) -> $t {
            let x = x.abs();
            if x == <$t>::INFINITY {
                // PyTorch's formula gives inf / inf = NaN here.
                return x;
            }
            if x <= 8.0 {
                x.exp() * chbevl!($t, x / 2.0 - 2.0, I0_A)
            } else {
                x.exp() * chbevl!($t, 32.0 / x - 2.0, I0_B) / x.sqrt()
            }
        }
    };
}

/// Cephes' `chbevl`: the Chebyshev series `coeffs` at `x` by Clenshaw's recurrence.
macro_rules! chbevl {
    ($t:ty, $x:expr, $coeffs:expr) => {{
        let x: $t = $x;
        let mut b0 = $coeffs[0] as $t;
        let mut b1: $t = 0.0;
        let mut b2: $t = 0.0;
        for &c in &$coeffs[1..] {
            b2 = b1;
            b1 = b0;
            b0 = x * b1 - b2 + c as $t;
        }
        0.5 * (b0 - b2)
    }};
}

special!(
    f32,
    erfinv_f32,
    digamma_f32,
    i0_f32,
    libm::erff,
    libm::erfcf,
    2
);
special!(
    f64,
    erfinv_f64,
    digamma_f64,
    i0_f64,
    libm::erf,
    libm::erfc,
    3
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from mpmath (`mp.dps = 40`): `erfinv`, `digamma`, `i0` at a few points.
    #[test]
    fn known_values() {
        let close = |got: f64, want: f64, ulps: f64| {
            (got - want).abs() <= ulps * f64::EPSILON * want.abs().max(f64::MIN_POSITIVE)
        };
        assert!(close(digamma_f64(1.0), -0.577_215_664_901_532_9, 2.0));
        assert!(close(erfinv_f64(0.5), 0.476_936_276_204_469_9, 2.0));
        assert!(close(i0_f64(1.0), 1.266_065_877_752_008_4, 2.0));
        assert_eq!(digamma_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(digamma_f32(-0.0), f32::INFINITY);
        assert!(digamma_f64(-2.0).is_nan());
        assert_eq!(erfinv_f32(1.0), f32::INFINITY);
        assert_eq!(erfinv_f64(-1.0), f64::NEG_INFINITY);
        assert_eq!(erfinv_f64(-0.0).to_bits(), (-0.0f64).to_bits());
        assert!(erfinv_f32(1.5).is_nan());
        // Cephes' float series sums to 1 within an ulp at 0.
        assert!((i0_f32(0.0) - 1.0).abs() <= f32::EPSILON);
        assert_eq!(i0_f64(0.0), 1.0);
    }
}
