//! The float math ops of issue 26 (exponentials and logs, trigonometric and hyperbolic,
//! rounding, special functions, NaN-ignoring min/max, `addcmul`/`addcdiv`) against
//! independent references computed on the host in `f64` (std/libm, a power series for `i0`,
//! an asymptotic series for `digamma`, bisection on `erf` for `erfinv`), plus values from
//! mpmath (`mp.dps = 40`) and the special values (±0, ±inf, NaN, subnormals, domain edges).
//!
//! Every op runs in every form through the harness drivers (random shapes, strided, flipped,
//! permuted and broadcast views, `_into` poisoned targets, in place), for f32, f64, f16 and
//! bf16; a sweep then checks 1500 values over each op's domain and its special values.
//!
//! Tolerances, in ulps of the output type (`abs`: an absolute allowance in units of 8
//! epsilons, for results that cancel); the GPU adds `TestDevice::LIBM_EXTRA_ULPS` (2,
//! libdevice's documented error) to the ops marked libm:
//!
//! | op | CPU | GPU | why |
//! |----|-----|-----|-----|
//! | exp2 expm1 log2 log10 log1p tan asin acos atan sinh cosh asinh acosh atanh atan2 hypot erf erfc | 2 | 2 + libm | one libm call (CUDA: 1-2 ulp, `erfc` 4-5) |
//! | xlogy xlog1py float_power | 2 | 2 + libm | a libm call and a product |
//! | logaddexp logaddexp2 | 2, abs 1 | 2 + libm, abs 1 | `max + log1p(..)` cancels near 0 |
//! | sinc | 2, abs 1 | 2 + libm, abs 1 | `pi a` is rounded: absolute error ~eps near the integers |
//! | logit logit_eps | 2, abs 1 | 2 + libm, abs 1 | `ln(q)` of `q` near 1 |
//! | deg2rad rad2deg | 1 | 1 | a rounded constant and a product |
//! | trunc frac round_decimals fmax fmin clamp_min clamp_max | 0 | 0 | exact (round_decimals against PyTorch's algorithm in the compute type) |
//! | addcmul addcdiv | 1 | 1 | one fma; the reference rounds twice |
//! | erfinv | 2 | 2 + libm (f64: 5 + libm) | CPU: Giles + Newton; GPU: CUDA `erfinv` (2 ulp, double 5) |
//! | lgamma | 2, abs 1 | 6 + libm, abs 1 | CUDA `lgammaf` 6 ulp; absolute near the zeros 1, 2 |
//! | digamma | 4, abs 4 | 4 + libm, abs 4 | rounding of the recurrence's terms (up to ~16): absolute near the roots (1.46, and where reflection cancels) |
//! | i0 | 4 | 4 + libm | a 30-term Chebyshev sum in the compute type, times `exp` |

use std::any::TypeId;

use crate::common::device::{host, test_device, TestDevice};
use crate::harness::*;
use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::Rng;
use typestate_tensor::element::Element;
use typestate_tensor::ops::table::*;
use typestate_tensor::ops::UnaryOp;
use typestate_tensor::tensor::ops::map;
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Cpu;

fn is_cpu<D: 'static>() -> bool {
    TypeId::of::<D>() == TypeId::of::<Cpu>()
}

/// The CPU tolerance on the CPU, the GPU's on the GPU (the table above).
fn per_device<D: TestDevice + 'static>(cpu: Tol, gpu: Tol) -> Tol {
    if is_cpu::<D>() {
        cpu
    } else {
        gpu
    }
}

/// `$body` once per float element type, with `$t` naming it.
macro_rules! each_float {
    ($t:ident => $body:block) => {{
        {
            type $t = f32;
            $body
        }
        {
            type $t = f64;
            $body
        }
        {
            type $t = f16;
            $body
        }
        {
            type $t = bf16;
            $body
        }
    }};
}

// ---------------------------------------------------------------------------------------------
// Independent references

/// A double-double: `hi + lo`, about 106 bits.
#[derive(Clone, Copy)]
struct Dd(f64, f64);

impl Dd {
    fn new(x: f64) -> Dd {
        Dd(x, 0.0)
    }
    fn add(self, o: Dd) -> Dd {
        let s = self.0 + o.0;
        let bb = s - self.0;
        let e = (self.0 - (s - bb)) + (o.0 - bb) + self.1 + o.1;
        let hi = s + e;
        Dd(hi, e - (hi - s))
    }
    fn mul(self, o: Dd) -> Dd {
        let p = self.0 * o.0;
        let e = self.0.mul_add(o.0, -p) + self.0 * o.1 + self.1 * o.0;
        let hi = p + e;
        Dd(hi, e - (hi - p))
    }
    fn div(self, d: Dd) -> Dd {
        let q1 = self.0 / d.0;
        let r = self.add(d.mul(Dd::new(-q1)));
        let q2 = r.0 / d.0;
        let r = r.add(d.mul(Dd::new(-q2)));
        Dd::new(q1).add(Dd::new(q2)).add(Dd::new(r.0 / d.0))
    }
}

/// `i0(x)` by its power series `sum ((x/2)^2k / k!^2)` in double-double (positive terms).
fn i0_ref(x: f64) -> f64 {
    if x.is_nan() || x.is_infinite() {
        return x.abs();
    }
    let h = Dd::new(x).mul(Dd::new(x)).div(Dd::new(4.0));
    let (mut term, mut sum, mut k) = (Dd::new(1.0), Dd::new(1.0), 1.0f64);
    while term.0 > sum.0 * 1e-34 && k < 500.0 {
        term = term.mul(h).div(Dd::new(k * k));
        sum = sum.add(term);
        k += 1.0;
    }
    sum.0 + sum.1
}

/// `digamma(x)`: the recurrence `psi(x) = psi(x + 1) - 1 / x` up to `x + k >= 20` summed in
/// double-double (negative `x` included), or for `x < -20` the reflection
/// `psi(x) = psi(1 - x) - pi cot(pi x)`; then the asymptotic series to `B_14` (a different
/// shift and more terms than the crate's).
fn digamma_ref(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x < 0.0 && x == x.trunc() {
        return f64::NAN;
    }
    if x.abs() < 1e-300 {
        // psi(x) = -1/x - gamma + O(x): -1/x overflows here (or nearly).
        return -1.0 / x - 0.577_215_664_901_532_9;
    }
    let mut acc = Dd::new(0.0);
    let mut xk = Dd::new(x);
    if x < -20.0 {
        let pi = std::f64::consts::PI;
        // cot(pi x) from the fraction of x in [-1/2, 1/2] (exact; cot has period 1).
        let r = x - x.round();
        acc = Dd::new(-pi * (pi * r).cos() / (pi * r).sin());
        xk = Dd::new(1.0).add(Dd::new(-x));
    }
    while xk.0 < 20.0 {
        acc = acc.add(Dd::new(-1.0).div(xk));
        xk = xk.add(Dd::new(1.0));
    }
    let x = xk.0;
    if x.is_infinite() {
        return x;
    }
    let z = 1.0 / (x * x);
    // B_2k / 2k for k = 1..7.
    let c = [
        1.0 / 12.0,
        -1.0 / 120.0,
        1.0 / 252.0,
        -1.0 / 240.0,
        1.0 / 132.0,
        -691.0 / 32760.0,
        1.0 / 12.0,
    ];
    let mut s = 0.0;
    for &ck in c.iter().rev() {
        s = s * z + ck;
    }
    // psi(hi + lo) = psi(hi) + lo / hi to far below an ulp.
    let tail = Dd::new(x.ln())
        .add(Dd::new(xk.1 / x))
        .add(Dd::new(-0.5 / x))
        .add(Dd::new(-z * s));
    let r = acc.add(tail);
    r.0 + r.1
}

/// `erfinv(y)` by bisection on libm's `erf` (`erfc` above 0.5, where `1 - |y|` is exact).
fn erfinv_ref(y: f64) -> f64 {
    let t = y.abs();
    if t.is_nan() || t > 1.0 {
        return f64::NAN;
    }
    if t == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if t == 0.0 {
        return y;
    }
    let (mut lo, mut hi) = (0.0f64, 7.0f64);
    for _ in 0..1100 {
        let mid = 0.5 * (lo + hi);
        if mid == lo || mid == hi {
            break;
        }
        let below = if t <= 0.5 {
            libm::erf(mid) < t
        } else {
            libm::erfc(mid) > 1.0 - t
        };
        if below {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).copysign(y)
}

/// `atanh(x) = sign(x) ln1p(2|x| / (1 - |x|)) / 2`: `1 - |x|` is exact near 1 (std's
/// `atanh` divides by `1 - x` for negative `x` too and loses bits near -1).
fn atanh_ref(x: f64) -> f64 {
    let t = x.abs();
    (0.5 * (2.0 * t / (1.0 - t)).ln_1p()).copysign(x)
}

/// `acosh(x)` as `ln1p(t + sqrt(t (t + 2)))`, `t = x - 1` exact below 2 (std's formula
/// loses bits near 1); `ln(x) + ln 2` where `x^2` would overflow.
fn acosh_ref(x: f64) -> f64 {
    if x < 2.0 {
        let t = x - 1.0;
        (t + (t * (t + 2.0)).sqrt()).ln_1p()
    } else if x < 1e150 {
        (x + (x * x - 1.0).sqrt()).ln()
    } else {
        x.ln() + std::f64::consts::LN_2
    }
}

fn logaddexp_ref(a: f64, b: f64) -> f64 {
    if a.is_infinite() && a == b {
        return a;
    }
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    a.max(b) + (-(a - b).abs()).exp().ln_1p()
}

fn logaddexp2_ref(a: f64, b: f64) -> f64 {
    if a.is_infinite() && a == b {
        return a;
    }
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    a.max(b) + (-(a - b).abs()).exp2().ln_1p() / std::f64::consts::LN_2
}

fn xlogy_ref(a: f64, b: f64) -> f64 {
    if b.is_nan() {
        f64::NAN
    } else if a == 0.0 {
        0.0
    } else {
        a * b.ln()
    }
}

fn xlog1py_ref(a: f64, b: f64) -> f64 {
    if b.is_nan() {
        f64::NAN
    } else if a == 0.0 {
        0.0
    } else {
        a * b.ln_1p()
    }
}

fn sinc_ref(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
    }
}

fn fmax_ref(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else {
        a.max(b)
    }
}

fn fmin_ref(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else {
        a.min(b)
    }
}

// ---------------------------------------------------------------------------------------------
// Drivers

/// Every form of a unary op through the harness (random views, `_into`, in place).
fn forms1<D: TestDevice, T: TestElem, O: UnaryOp<T, Output = T>>(
    dev: &D,
    op: O,
    dom: Domain,
    reference: &impl Fn(T) -> T,
    tol: Tol,
) {
    let mut rng = rng_for(O::NAME, T::NAME);
    for _ in 0..CASES / 2 {
        unary_case::<D, T, T, _>(dev, &mut rng, op, dom, reference, tol);
        unary_inplace_case::<D, T, _>(dev, &mut rng, op, dom, reference, tol);
    }
}

/// `op` on 1500 values drawn by `draw` and on `specials`, out of place, against `reference`.
fn sweep1<D: TestDevice, T: TestElem, O: UnaryOp<T, Output = T>>(
    dev: &D,
    op: O,
    draw: fn(&mut SmallRng) -> f64,
    specials: &[f64],
    reference: &impl Fn(T) -> T,
    tol: Tol,
) {
    let mut rng = rng_for(&format!("{} sweep", O::NAME), T::NAME);
    let mut xs: Vec<T> = (0..1500).map(|_| T::from_f64(draw(&mut rng))).collect();
    xs.extend(specials.iter().map(|&s| T::from_f64(s)));
    xs.extend(SPECIALS.iter().map(|&s| T::from_f64(s)));
    let t = dev.upload(&Tensor::from_vec(&[xs.len()], xs.clone()).unwrap());
    let got = host(&map(op, &t.view()).unwrap());
    for (x, g) in xs.iter().zip(got) {
        let w = reference(*x);
        assert!(
            close(g, w, tol),
            "{} {}({x:?}) = {g:?}, want {w:?} (tolerance {tol:?})",
            O::NAME,
            T::NAME
        );
    }
}

/// Values every sweep includes: signed zeros, infinities, NaN, subnormals, ±1.
const SPECIALS: [f64; 12] = [
    0.0,
    -0.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    1.0,
    -1.0,
    1e-40,
    -1e-40,
    5e-310,
    6e-8,
    -6e-8,
];

/// A unary op's test: all forms on `dom`, then a sweep of `draw` and `specials`.
macro_rules! unary_test {
    ($test:ident, $cpu:ident, $gpu:ident, $op:expr, $dom:expr, $draw:expr, [$($s:expr),*],
        $f:expr, $tol:expr) => {
        test_device!($test, $cpu, $gpu);
        fn $test<D: TestDevice + 'static>(dev: &D) {
            each_float!(T => {
                let reference = f1::<T>($f);
                let tol: Tol = $tol;
                forms1::<D, T, _>(dev, $op, $dom, &reference, tol);
                sweep1::<D, T, _>(dev, $op, $draw, &[$($s),*], &reference, tol);
            });
        }
    };
}

fn trans<D: TestDevice>() -> Tol {
    TRANS.libm::<D>()
}

unary_test!(
    exp2_matches_f64,
    exp2_cpu,
    exp2_gpu,
    Exp2,
    Domain::Any,
    |r| r.gen_range(-130.0..130.0),
    [-1074.5, 1023.9, -149.0, 16.0],
    f64::exp2,
    trans::<D>()
);
unary_test!(
    expm1_matches_f64,
    expm1_cpu,
    expm1_gpu,
    Expm1,
    Domain::Any,
    |r| if r.gen_bool(0.5) {
        r.gen_range(-1e-3..1e-3)
    } else {
        r.gen_range(-90.0..90.0)
    },
    [1e-30, 88.7, 709.7, -50.0],
    f64::exp_m1,
    trans::<D>()
);
unary_test!(
    log2_matches_f64,
    log2_cpu,
    log2_gpu,
    Log2,
    Domain::Positive,
    |r| 2f64.powf(r.gen_range(-140.0..140.0)),
    [2.0, 0.5, 1024.0],
    f64::log2,
    trans::<D>()
);
unary_test!(
    log10_matches_f64,
    log10_cpu,
    log10_gpu,
    Log10,
    Domain::Positive,
    |r| 10f64.powf(r.gen_range(-40.0..38.0)),
    [10.0, 1000.0, 0.1],
    f64::log10,
    trans::<D>()
);
unary_test!(
    log1p_matches_f64,
    log1p_cpu,
    log1p_gpu,
    Log1p,
    Domain::Any,
    |r| if r.gen_bool(0.5) {
        r.gen_range(-1.0..1.0) * 1e-4
    } else {
        r.gen_range(-1.0..100.0)
    },
    [-1.0, -0.999, -2.0, 1e-30],
    f64::ln_1p,
    trans::<D>()
);
unary_test!(
    tan_matches_f64,
    tan_cpu,
    tan_gpu,
    Tan,
    Domain::Any,
    |r| r.gen_range(-10.0..10.0),
    [std::f64::consts::FRAC_PI_2, -std::f64::consts::FRAC_PI_2],
    f64::tan,
    trans::<D>()
);
unary_test!(
    asin_matches_f64,
    asin_cpu,
    asin_gpu,
    Asin,
    Domain::Unit,
    |r| r.gen_range(-1.0..=1.0),
    [0.5, -0.999999, 1.0000001],
    f64::asin,
    trans::<D>()
);
unary_test!(
    acos_matches_f64,
    acos_cpu,
    acos_gpu,
    Acos,
    Domain::Unit,
    |r| r.gen_range(-1.0..=1.0),
    [0.5, -0.999999, 1.0000001],
    f64::acos,
    trans::<D>()
);
unary_test!(
    atan_matches_f64,
    atan_cpu,
    atan_gpu,
    Atan,
    Domain::Any,
    |r| r.gen_range(-1.0..1.0) * 10f64.powf(r.gen_range(-5.0..8.0)),
    [1e30],
    f64::atan,
    trans::<D>()
);
unary_test!(
    sinh_matches_f64,
    sinh_cpu,
    sinh_gpu,
    Sinh,
    Domain::Any,
    |r| r.gen_range(-89.0..89.0),
    [1e-5, 710.0, -710.0],
    f64::sinh,
    trans::<D>()
);
unary_test!(
    cosh_matches_f64,
    cosh_cpu,
    cosh_gpu,
    Cosh,
    Domain::Any,
    |r| r.gen_range(-89.0..89.0),
    [1e-5, 710.0, -710.0],
    f64::cosh,
    trans::<D>()
);
unary_test!(
    asinh_matches_f64,
    asinh_cpu,
    asinh_gpu,
    Asinh,
    Domain::Any,
    |r| r.gen_range(-1.0..1.0) * 10f64.powf(r.gen_range(-5.0..30.0)),
    [1e-20],
    f64::asinh,
    trans::<D>()
);
unary_test!(
    acosh_matches_f64,
    acosh_cpu,
    acosh_gpu,
    Acosh,
    Domain::Positive,
    |r| 1.0 + 10f64.powf(r.gen_range(-8.0..30.0)),
    [1.0000001, 0.9999, 1e30],
    acosh_ref,
    trans::<D>()
);
unary_test!(
    atanh_matches_f64,
    atanh_cpu,
    atanh_gpu,
    Atanh,
    Domain::Unit,
    |r| r.gen_range(-1.0..=1.0),
    [0.9999999, -0.9999999, 1.5, 1e-20],
    atanh_ref,
    trans::<D>()
);
unary_test!(
    deg2rad_matches_f64,
    deg2rad_cpu,
    deg2rad_gpu,
    Deg2rad,
    Domain::Any,
    |r| r.gen_range(-720.0..720.0),
    [180.0, 90.0, 3e38],
    |x| x * (std::f64::consts::PI / 180.0),
    ulps(1)
);
unary_test!(
    rad2deg_matches_f64,
    rad2deg_cpu,
    rad2deg_gpu,
    Rad2deg,
    Domain::Any,
    |r| r.gen_range(-7.0..7.0),
    [std::f64::consts::PI, 3e38],
    |x| x * (180.0 / std::f64::consts::PI),
    ulps(1)
);
unary_test!(
    sinc_matches_f64,
    sinc_cpu,
    sinc_gpu,
    Sinc,
    Domain::Any,
    |r| r.gen_range(-20.0..20.0),
    [0.5, 1.0, 2.0, -3.0, 1e-20],
    sinc_ref,
    tol(2, 1.0).libm::<D>()
);
unary_test!(
    trunc_is_exact,
    trunc_cpu,
    trunc_gpu,
    Trunc,
    Domain::Quarters,
    |r| r.gen_range(-1e6..1e6),
    [-0.5, 0.5, 2.5, -2.5, 1e30],
    f64::trunc,
    EXACT
);
unary_test!(
    frac_is_exact,
    frac_cpu,
    frac_gpu,
    Frac,
    Domain::Quarters,
    |r| r.gen_range(-1e4..1e4),
    [-0.5, 0.5, 2.5, -2.5, 1e30],
    |x| x - x.trunc(),
    EXACT
);
unary_test!(
    erf_matches_f64,
    erf_cpu,
    erf_gpu,
    Erf,
    Domain::Any,
    |r| r.gen_range(-6.0..6.0),
    [0.5, 1e-30, 10.0],
    libm::erf,
    trans::<D>()
);
unary_test!(
    erfc_matches_f64,
    erfc_cpu,
    erfc_gpu,
    Erfc,
    Domain::Any,
    |r| r.gen_range(-6.0..27.0),
    [0.5, 1e-30, 10.0, 26.5],
    libm::erfc,
    per_device::<D>(ulps(2), ulps(5).libm::<D>())
);
unary_test!(
    erfinv_matches_bisection,
    erfinv_cpu,
    erfinv_gpu,
    Erfinv,
    Domain::Unit,
    |r| if r.gen_bool(0.7) {
        r.gen_range(-1.0..=1.0)
    } else {
        1.0 - 10f64.powf(r.gen_range(-16.0..0.0))
    },
    [0.5, -0.5, 0.9999999, 1.5, -1.5, 1e-300],
    erfinv_ref,
    per_device::<D>(
        ulps(2),
        ulps(if T::NAME == "f64" { 5 } else { 2 }).libm::<D>()
    )
);
unary_test!(
    lgamma_matches_f64,
    lgamma_cpu,
    lgamma_gpu,
    Lgamma,
    Domain::Positive,
    |r| r.gen_range(0.0..40.0),
    [0.5, 2.0, 3.0, -3.0, -2.0, 1e30, 1e-30],
    libm::lgamma,
    per_device::<D>(tol(2, 1.0), tol(6, 1.0).libm::<D>())
);
unary_test!(
    digamma_matches_series,
    digamma_cpu,
    digamma_gpu,
    Digamma,
    Domain::Positive,
    |r| if r.gen_bool(0.8) {
        r.gen_range(-12.0..40.0)
    } else {
        r.gen_range(-1.0..1.0) * 1e6
    },
    [-1.0, -2.0, -2.5, 1e-30, 1e20, 10.0, 1.4616321449683622],
    digamma_ref,
    tol(4, 4.0).libm::<D>()
);
unary_test!(
    i0_matches_series,
    i0_cpu,
    i0_gpu,
    I0,
    Domain::Any,
    |r| r.gen_range(-30.0..30.0),
    [8.0, -8.0, 7.999, 8.001, 85.0],
    i0_ref,
    ulps(4).libm::<D>()
);
unary_test!(
    logit_matches_f64,
    logit_cpu,
    logit_gpu,
    Logit,
    Domain::Unit,
    |r| r.gen_range(0.0..=1.0),
    [0.5, 1e-30, 0.999999],
    |x| (x / (1.0 - x)).ln(),
    tol(2, 1.0).libm::<D>()
);

// ---------------------------------------------------------------------------------------------
// Ops carrying a scalar

/// `round(x, d)` as PyTorch computes it, in `C` (the compute type), independently of the
/// crate: `10^|d|` exact for `|d| <= 22`.
fn round_decimals_ref<T: TestElem>(x: T, d: i32) -> T {
    let ten = 10f64.powi(d.abs());
    if T::NAME == "f64" {
        let x = x.to_f64();
        T::from_f64(if d < 0 {
            (x / ten).round_ties_even() * ten
        } else {
            (x * ten).round_ties_even() / ten
        })
    } else {
        let (x, ten) = (x.to_f64() as f32, ten as f32);
        T::from_f32(if d < 0 {
            (x / ten).round_ties_even() * ten
        } else {
            (x * ten).round_ties_even() / ten
        })
    }
}

test_device!(
    round_decimals_is_pytorchs,
    round_decimals_cpu,
    round_decimals_gpu
);
fn round_decimals_is_pytorchs<D: TestDevice + 'static>(dev: &D) {
    each_float!(T => {
        for d in [-3, -1, 0, 1, 2, 4] {
            let op = RoundDecimals(T::from_f64(d as f64));
            let reference = move |x: T| round_decimals_ref(x, d);
            forms1::<D, T, _>(dev, op, Domain::Any, &reference, EXACT);
            sweep1::<D, T, _>(dev, op, |r| r.gen_range(-2000.0..2000.0), &[0.125, 2.5, 0.005],
                &reference, EXACT);
        }
        // 10^400 is infinite in every compute type: NaN, as PyTorch's `x * inf / inf`.
        let t = dev.upload(&Tensor::from_vec(&[2], vec![T::from_f64(1.5), T::ONE]).unwrap());
        let got = host(&t.round_decimals(T::from_f64(400.0)).unwrap());
        assert!(got.iter().all(|v| v.to_f64().is_nan()), "{got:?}");
        // A fractional `decimals` is truncated: 2.9 rounds to 2 places.
        let x = T::from_f64(0.125);
        let t = dev.upload(&Tensor::from_vec(&[1], vec![x]).unwrap());
        let got = host(&t.round_decimals(T::from_f64(2.9)).unwrap());
        assert_eq!(got, vec![round_decimals_ref(x, 2)]);
    });
}

test_device!(logit_eps_clamps, logit_eps_cpu, logit_eps_gpu);
fn logit_eps_clamps<D: TestDevice + 'static>(dev: &D) {
    each_float!(T => {
        for eps in [-1.0, 0.0, 1e-3, 0.25] {
            let e = T::from_f64(eps);
            let reference = move |x: T| {
                let (x, eps) = (x.to_f64(), e.to_f64());
                // `1 - eps` in the compute type, as the op (and PyTorch) clamp to it.
                let hi = if T::NAME == "f64" { 1.0 - eps } else { f64::from(1.0 - eps as f32) };
                let z = if eps >= 0.0 && !x.is_nan() { x.max(eps).min(hi) } else { x };
                T::from_f64((z / (1.0 - z)).ln())
            };
            let tol = tol(2, 1.0).libm::<D>();
            forms1::<D, T, _>(dev, LogitEps(e), Domain::Unit, &reference, tol);
            sweep1::<D, T, _>(dev, LogitEps(e), |r| r.gen_range(-0.5..1.5), &[0.5], &reference,
                tol);
        }
    });
}

test_device!(
    clamp_min_max_propagate_nan,
    clamp_min_max_cpu,
    clamp_min_max_gpu
);
fn clamp_min_max_propagate_nan<D: TestDevice + 'static>(dev: &D) {
    each_float!(T => {
        for s in [-1.0, 0.0, 2.5, f64::NAN] {
            let v = T::from_f64(s);
            let lo = move |x: T| T::from_f64(nan_max(x.to_f64(), v.to_f64()));
            let hi = move |x: T| T::from_f64(nan_min(x.to_f64(), v.to_f64()));
            forms1::<D, T, _>(dev, ClampMin(v), Domain::Any, &lo, EXACT);
            forms1::<D, T, _>(dev, ClampMax(v), Domain::Any, &hi, EXACT);
        }
    });
    macro_rules! ints {
        ($($t:ty),*) => {$(
            let lo = |x: $t| x.max(7 as $t);
            let hi = |x: $t| x.min(7 as $t);
            forms1::<D, $t, _>(dev, ClampMin(7 as $t), Domain::Any, &lo, EXACT);
            forms1::<D, $t, _>(dev, ClampMax(7 as $t), Domain::Any, &hi, EXACT);
        )*};
    }
    ints!(i32, i64, u8);
}

// ---------------------------------------------------------------------------------------------
// Binary ops

/// Every form of a binary op through the harness, then a sweep over `draw` x `draw` with the
/// special values paired with each other.
macro_rules! binary_test {
    ($test:ident, $cpu:ident, $gpu:ident, $op:expr, $doms:expr, $draw:expr, $f:expr, $tol:expr) => {
        test_device!($test, $cpu, $gpu);
        fn $test<D: TestDevice + 'static>(dev: &D) {
            each_float!(T => {
                let reference = f2::<T>($f);
                let tol: Tol = $tol;
                let mut rng = rng_for(stringify!($op), T::NAME);
                for _ in 0..CASES / 2 {
                    binary_case::<D, T, T, _>(dev, &mut rng, $op, $doms, &reference, tol);
                    binary_inplace_case::<D, T, _>(dev, &mut rng, $op, $doms, &reference, tol);
                }
                let draw: fn(&mut SmallRng) -> f64 = $draw;
                let mut pairs: Vec<(f64, f64)> =
                    (0..1500).map(|_| (draw(&mut rng), draw(&mut rng))).collect();
                for &a in &SPECIALS {
                    for &b in &SPECIALS {
                        pairs.push((a, b));
                    }
                }
                let a: Vec<T> = pairs.iter().map(|p| T::from_f64(p.0)).collect();
                let b: Vec<T> = pairs.iter().map(|p| T::from_f64(p.1)).collect();
                let ta = dev.upload(&Tensor::from_vec(&[a.len()], a.clone()).unwrap());
                let tb = dev.upload(&Tensor::from_vec(&[b.len()], b.clone()).unwrap());
                let got = host(&typestate_tensor::tensor::ops::zip($op, &ta.view(), &tb.view()).unwrap());
                for ((x, y), g) in a.iter().zip(&b).zip(got) {
                    let w = reference(*x, *y);
                    assert!(close(g, w, tol), "{}({x:?}, {y:?}) {} = {g:?}, want {w:?} ({tol:?})",
                        stringify!($op), T::NAME);
                }
            });
        }
    };
}

binary_test!(
    logaddexp_is_stable,
    logaddexp_cpu,
    logaddexp_gpu,
    Logaddexp,
    [Domain::Any, Domain::Any],
    |r| r.gen_range(-100.0..100.0),
    logaddexp_ref,
    tol(2, 1.0).libm::<D>()
);
binary_test!(
    logaddexp2_is_stable,
    logaddexp2_cpu,
    logaddexp2_gpu,
    Logaddexp2,
    [Domain::Any, Domain::Any],
    |r| r.gen_range(-100.0..100.0),
    logaddexp2_ref,
    tol(2, 1.0).libm::<D>()
);
binary_test!(
    float_power_matches_f64,
    float_power_cpu,
    float_power_gpu,
    FloatPower,
    [Domain::Positive, Domain::Small],
    |r| r.gen_range(-10.0..10.0),
    f64::powf,
    trans::<D>()
);
binary_test!(
    xlogy_matches_f64,
    xlogy_cpu,
    xlogy_gpu,
    Xlogy,
    [Domain::Any, Domain::Positive],
    |r| if r.gen_bool(0.1) {
        0.0
    } else {
        r.gen_range(-10.0..10.0)
    },
    xlogy_ref,
    trans::<D>()
);
binary_test!(
    xlog1py_matches_f64,
    xlog1py_cpu,
    xlog1py_gpu,
    Xlog1py,
    [Domain::Any, Domain::Positive],
    |r| if r.gen_bool(0.1) {
        0.0
    } else {
        r.gen_range(-1.5..10.0)
    },
    xlog1py_ref,
    trans::<D>()
);
binary_test!(
    atan2_matches_f64,
    atan2_cpu,
    atan2_gpu,
    Atan2,
    [Domain::Any, Domain::Any],
    |r| r.gen_range(-10.0..10.0),
    f64::atan2,
    trans::<D>()
);
binary_test!(
    hypot_matches_f64,
    hypot_cpu,
    hypot_gpu,
    Hypot,
    [Domain::Any, Domain::Any],
    |r| r.gen_range(-1.0..1.0) * 10f64.powf(r.gen_range(-30.0..30.0)),
    f64::hypot,
    trans::<D>()
);
binary_test!(
    fmax_ignores_nan,
    fmax_cpu,
    fmax_gpu,
    Fmax,
    [Domain::Any, Domain::Any],
    |r| r.gen_range(-10.0..10.0),
    fmax_ref,
    EXACT
);
binary_test!(
    fmin_ignores_nan,
    fmin_cpu,
    fmin_gpu,
    Fmin,
    [Domain::Any, Domain::Any],
    |r| r.gen_range(-10.0..10.0),
    fmin_ref,
    EXACT
);

test_device!(fmax_fmin_on_integers, fmax_int_cpu, fmax_int_gpu);
fn fmax_fmin_on_integers<D: TestDevice + 'static>(dev: &D) {
    macro_rules! ints {
        ($($t:ty),*) => {$(
            let mut rng = rng_for("fmax int", stringify!($t));
            for _ in 0..CASES / 2 {
                binary_case::<D, $t, $t, _>(dev, &mut rng, Fmax, [Domain::Any; 2], &i2::<$t>(|a, b| a.max(b)), EXACT);
                binary_inplace_case::<D, $t, _>(dev, &mut rng, Fmin, [Domain::Any; 2], &i2::<$t>(|a, b| a.min(b)), EXACT);
            }
        )*};
    }
    ints!(i32, i64, u8);
}

// ---------------------------------------------------------------------------------------------
// Ternary ops with a scalar

test_device!(addcmul_addcdiv_match_f64, addc_cpu, addc_gpu);
fn addcmul_addcdiv_match_f64<D: TestDevice + 'static>(dev: &D) {
    each_float!(T => {
        for value in [1.0, -0.5, 3.0] {
            let v = T::from_f64(value);
            // The product (quotient) in the compute type, then `a + v * p` rounded once: in
            // f64 exactly for the f32 pieces (so rounded twice), by `mul_add` for f64.
            let combine = move |a: T, p64: f64, p32: f32| {
                if T::NAME == "f64" {
                    T::from_f64(v.to_f64().mul_add(p64, a.to_f64()))
                } else {
                    T::from_f64(a.to_f64() + v.to_f64() * f64::from(p32))
                }
            };
            let mul = move |a: T, b: T, c: T| {
                let (b, c) = (b.to_f64(), c.to_f64());
                combine(a, b * c, (b as f32) * (c as f32))
            };
            let div = move |a: T, b: T, c: T| {
                let (b, c) = (b.to_f64(), c.to_f64());
                combine(a, b / c, (b as f32) / (c as f32))
            };
            let mut rng = rng_for("addc", T::NAME);
            let doms = [Domain::Any, Domain::Small, Domain::Positive];
            for _ in 0..CASES / 2 {
                ternary_case::<D, T, T, _>(dev, &mut rng, Addcmul(v), doms, &mul, ulps(1));
                ternary_inplace_case::<D, T, _>(dev, &mut rng, Addcmul(v), doms, &mul, ulps(1));
                ternary_case::<D, T, T, _>(dev, &mut rng, Addcdiv(v), doms, &div, ulps(1));
                ternary_inplace_case::<D, T, _>(dev, &mut rng, Addcdiv(v), doms, &div, ulps(1));
            }
        }
        // The methods: scalars after the tensor operands, tensors or scalars as operands.
        let a = dev.upload(&Tensor::from_vec(&[2], vec![T::ONE, T::from_f64(2.0)]).unwrap());
        let b = dev.upload(&Tensor::from_vec(&[2], vec![T::from_f64(3.0), T::from_f64(4.0)]).unwrap());
        let got = host(&a.addcmul(&b, T::from_f64(0.5), T::from_f64(2.0)).unwrap());
        assert_eq!(got, vec![T::from_f64(4.0), T::from_f64(6.0)]);
        let got = host(&a.addcdiv(&b, T::from_f64(0.5), T::from_f64(-1.0)).unwrap());
        assert_eq!(got, vec![T::from_f64(-5.0), T::from_f64(-6.0)]);
    });
}

// ---------------------------------------------------------------------------------------------
// Known values and domain edges

/// `(x, f(x))` from mpmath (`mp.dps = 40`, rounded to f64).
const ERFINV_TABLE: &[(f64, f64)] = &[
    (1e-300, 8.86226925452758e-301),
    (1e-10, 8.862269254527581e-11),
    (0.1, 0.08885599049425769),
    (0.25, 0.2253120550121781),
    (0.5, 0.4769362762044699),
    (0.7, 0.7328690779592167),
    (0.9, 1.1630871536766743),
    (0.99, 1.8213863677184494),
    (0.999999, 3.458910737275499),
    (-0.3, -0.2724627147267543),
    (0.9999999990686774, 4.328028275800946),
    (0.9999999999999998, 5.805018683193453),
];
const DIGAMMA_TABLE: &[(f64, f64)] = &[
    (1.0, -0.5772156649015329),
    (0.5, -1.9635100260214235),
    (2.0, 0.42278433509846713),
    (10.0, 2.251752589066721),
    (1e-08, -100000000.57721564),
    (3.7, 1.1671535393615113),
    (25.5, 3.2189424728839198),
    (1000000.0, 13.815510057964191),
    (-0.5, 0.03648997397857652),
    (-2.5, 1.103156640645243),
    (-7.25, 5.189977214956288),
];
const I0_TABLE: &[(f64, f64)] = &[
    (0.0, 1.0),
    (0.5, 1.0634833707413236),
    (1.0, 1.2660658777520084),
    (2.5, 3.289839144050123),
    (7.9, 389.406283282158),
    (8.0, 427.5641157218048),
    (8.5, 683.1619269901156),
    (20.0, 43558282.559553534),
    (-3.0, 4.8807925858650245),
    (50.0, 2.9325537838493362e+20),
    (100.0, 1.0737517071310738e+42),
    (700.0, 1.5295933476718737e+302),
];
const LGAMMA_TABLE: &[(f64, f64)] = &[
    (0.5, 0.5723649429247001),
    (1.5, -0.12078223763524522),
    (3.0, std::f64::consts::LN_2),
    (10.0, 12.801827480081469),
    (100.0, 359.1342053695754),
    (-0.5, 1.2655121234846454),
    (-2.5, -0.056243716497674054),
    (1e-10, 23.025850929882736),
];

/// `op` at the table's points (those whose input and value the type holds), within `tol`.
fn known<D: TestDevice, T: TestElem, O: UnaryOp<T, Output = T>>(
    dev: &D,
    op: O,
    table: &[(f64, f64)],
    tol: Tol,
) {
    let rows: Vec<(f64, f64)> = table
        .iter()
        .copied()
        .filter(|&(x, y)| T::from_f64(x).to_f64() == x && T::from_f64(y).to_f64().is_finite())
        .collect();
    let xs: Vec<T> = rows.iter().map(|r| T::from_f64(r.0)).collect();
    let t = dev.upload(&Tensor::from_vec(&[xs.len()], xs).unwrap());
    let got = host(&map(op, &t.view()).unwrap());
    for ((x, y), g) in rows.iter().zip(got) {
        assert!(
            close(g, T::from_f64(*y), tol),
            "{} {}({x}) = {g:?}, want {y}",
            O::NAME,
            T::NAME
        );
    }
}

test_device!(special_functions_match_mpmath, mpmath_cpu, mpmath_gpu);
fn special_functions_match_mpmath<D: TestDevice + 'static>(dev: &D) {
    known::<D, f64, _>(
        dev,
        Erfinv,
        ERFINV_TABLE,
        per_device::<D>(ulps(2), ulps(5).libm::<D>()),
    );
    known::<D, f32, _>(dev, Erfinv, ERFINV_TABLE, ulps(2).libm::<D>());
    known::<D, f64, _>(dev, Digamma, DIGAMMA_TABLE, tol(4, 4.0).libm::<D>());
    known::<D, f32, _>(dev, Digamma, DIGAMMA_TABLE, tol(4, 4.0).libm::<D>());
    known::<D, f64, _>(dev, I0, I0_TABLE, ulps(4).libm::<D>());
    known::<D, f32, _>(dev, I0, I0_TABLE, ulps(4).libm::<D>());
    let lgamma = per_device::<D>(tol(2, 1.0), tol(6, 1.0).libm::<D>());
    known::<D, f64, _>(dev, Lgamma, LGAMMA_TABLE, lgamma);
    known::<D, f32, _>(dev, Lgamma, LGAMMA_TABLE, lgamma);
}

/// One op at one input.
fn at<D: TestDevice, O: UnaryOp<f32, Output = f32>>(dev: &D, op: O, x: f32) -> f32 {
    let t = dev.upload(&Tensor::from_vec(&[1], vec![x]).unwrap());
    host(&map(op, &t.view()).unwrap())[0]
}

/// NaN for NaN; zeros and infinities exactly (with their sign); other values within `ulps`
/// (a libm result).
fn same(got: f32, want: f32, ulps: i64) -> bool {
    if want.is_nan() || got.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    if want == 0.0 || want.is_infinite() {
        return got.to_bits() == want.to_bits();
    }
    close(got, want, Tol { ulps, abs: 0.0 })
}

type Pair<'a, D> = &'a dyn Fn(&Tensor<f32, D>, &Tensor<f32, D>) -> Tensor<f32, D>;

test_device!(domain_edges, domain_edges_cpu, domain_edges_gpu);
fn domain_edges<D: TestDevice + 'static>(dev: &D) {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let u = 1 + D::LIBM_EXTRA_ULPS;
    macro_rules! check {
        ($op:expr, $x:expr, $want:expr) => {
            let got = at(dev, $op, $x);
            assert!(
                same(got, $want, u),
                "{}({}) = {got}, want {}",
                stringify!($op),
                $x,
                $want
            );
        };
    }
    check!(Log1p, -1.0, -inf);
    check!(Log1p, -2.0, nan);
    check!(Log1p, -0.0, -0.0);
    check!(Expm1, -0.0, -0.0);
    check!(Expm1, -inf, -1.0);
    check!(Exp2, -inf, 0.0);
    check!(Log2, 0.0, -inf);
    check!(Log10, -1.0, nan);
    check!(Atanh, 1.0, inf);
    check!(Atanh, -1.0, -inf);
    check!(Atanh, 2.0, nan);
    check!(Acosh, 1.0, 0.0);
    check!(Acosh, 0.5, nan);
    check!(Asin, -0.0, -0.0);
    check!(Asin, 1.5, nan);
    check!(Acos, 1.0, 0.0);
    check!(Atan, inf, std::f32::consts::FRAC_PI_2);
    check!(Sinh, -0.0, -0.0);
    check!(Cosh, -inf, inf);
    check!(Lgamma, 0.0, inf);
    check!(Lgamma, -3.0, inf);
    check!(Lgamma, 1.0, 0.0);
    check!(Lgamma, -inf, inf);
    check!(Digamma, 0.0, -inf);
    check!(Digamma, -0.0, inf);
    check!(Digamma, -3.0, nan);
    check!(Digamma, inf, inf);
    check!(Digamma, -inf, nan);
    check!(Erfinv, 1.0, inf);
    check!(Erfinv, -1.0, -inf);
    check!(Erfinv, -0.0, -0.0);
    check!(Erfinv, 1.0001, nan);
    check!(Erfc, inf, 0.0);
    check!(Erfc, -inf, 2.0);
    check!(Logit, 0.0, -inf);
    check!(Logit, 1.0, inf);
    check!(Logit, 2.0, nan);
    check!(LogitEps(0.25), 0.0, (1f32 / 3.0).ln());
    check!(LogitEps(0.25), nan, nan);
    check!(Sinc, 0.0, 1.0);
    check!(Sinc, -0.0, 1.0);
    check!(Sinc, inf, nan);
    check!(Trunc, -0.5, -0.0);
    check!(Frac, -0.0, 0.0);
    check!(Frac, inf, nan);
    check!(Frac, -2.75, -0.75);
    check!(I0, inf, inf);
    check!(RoundDecimals(2.0), 0.125, 0.12);
    check!(RoundDecimals(-1.0), 25.0, 20.0);
    check!(RoundDecimals(0.0), -0.5, -0.0);

    let pair = |op: Pair<'_, D>, a: f32, b: f32| {
        let ta = dev.upload(&Tensor::from_vec(&[1], vec![a]).unwrap());
        let tb = dev.upload(&Tensor::from_vec(&[1], vec![b]).unwrap());
        host(&op(&ta, &tb))[0]
    };
    let lae = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.logaddexp(b).unwrap();
    let lae2 = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.logaddexp2(b).unwrap();
    let xlogy = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.xlogy(b).unwrap();
    let xlog1py = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.xlog1py(b).unwrap();
    let fmax = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.fmax(b).unwrap();
    let fmin = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.fmin(b).unwrap();
    let hypot = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.hypot(b).unwrap();
    let atan2 = |a: &Tensor<f32, D>, b: &Tensor<f32, D>| a.atan2(b).unwrap();
    let cases: Vec<(&str, Pair<'_, D>, f32, f32, f32)> = vec![
        ("logaddexp", &lae, -inf, -inf, -inf),
        ("logaddexp", &lae, inf, inf, inf),
        ("logaddexp", &lae, inf, -inf, inf),
        ("logaddexp", &lae, nan, 1.0, nan),
        ("logaddexp", &lae, 1.0, nan, nan),
        ("logaddexp", &lae, 0.0, 0.0, std::f32::consts::LN_2),
        ("logaddexp2", &lae2, -inf, -inf, -inf),
        ("logaddexp2", &lae2, 3.0, 3.0, 4.0),
        ("xlogy", &xlogy, 0.0, 0.0, 0.0),
        ("xlogy", &xlogy, 0.0, nan, nan),
        ("xlogy", &xlogy, 0.0, -1.0, 0.0),
        ("xlogy", &xlogy, nan, 1.0, nan),
        ("xlog1py", &xlog1py, 0.0, -1.0, 0.0),
        ("xlog1py", &xlog1py, 1.0, -1.0, -inf),
        ("fmax", &fmax, nan, 1.0, 1.0),
        ("fmax", &fmax, 1.0, nan, 1.0),
        ("fmax", &fmax, -0.0, 0.0, 0.0),
        ("fmin", &fmin, nan, -1.0, -1.0),
        ("fmin", &fmin, nan, nan, nan),
        ("hypot", &hypot, inf, nan, inf),
        ("atan2", &atan2, 0.0, -0.0, std::f32::consts::PI),
    ];
    for (name, op, a, b, want) in cases {
        let got = pair(op, a, b);
        assert!(same(got, want, u), "{name}({a}, {b}) = {got}, want {want}");
    }
}
