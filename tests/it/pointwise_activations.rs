//! The activations of `torch.nn.functional` in the op table (issue 26) against independent
//! `f64` references written here from PyTorch's formulas, on every device
//! (`test_device!`): every float element type, eager out of place, `_into` a strided view
//! (the input broadcast to it, the view poisoned first), in place, and fused (`e.op().eval()`).
//!
//! Inputs are seeded random values over random strided, sliced, permuted and flipped views
//! (the pointwise harness's [`Recipe`]), mixed with the values activations get wrong: ±30,
//! ±100, values up to ±6e4, tiny and subnormal values, ±0, ±inf, NaN, and the break points
//! of each op (±lambd, ±3, 6, the threshold). The scalars are PyTorch's defaults and other
//! values, each rounded to the element type before the reference sees it.
//!
//! # Tolerances
//!
//! A result passes when it is the reference rounded to the element type, or within `ulps`
//! of it (ulps of the element type), or within an absolute allowance of `xulps` ulps of the
//! input in the compute type (for ops that cancel: `a - tanh(a)`, `1 + tanh(..)` in
//! `gelu_tanh`) plus `tiny` times `max(1, |a|)` times the compute type's smallest subnormal
//! (for intermediates that are subnormal: `e^a` in `mish` below -87 in `f32`). NaN must
//! be NaN and an infinite reference must be met exactly. Transcendental ops (T) add
//! [`TestDevice::LIBM_EXTRA_ULPS`] to each of the three on the GPU (CUDA's libdevice is
//! within 1 to 2 ulps for `expf`, `expm1f`, `log1pf`, `tanhf`); the CPU adds nothing.
//!
//! | op | ulps | xulps | tiny | why |
//! |----|------|-------|------|-----|
//! | `relu6`, `hardtanh`, `threshold`, `hardshrink` | 0 | 0 | 0 | selects or clamps, no rounding |
//! | `leaky_relu`, `prelu`, `softshrink` | 1 | 0 | 0 | one rounding, in the compute type and then to a half type |
//! | `hardsigmoid` | 1 | 0 | 0 | `a + 3` and `/ 6` each round |
//! | `hardswish`, `softsign` | 2 | 0 | 0 | three roundings |
//! | `elu` (T) | 2 | 0 | 0 | `expm1` (1 ulp) and the product |
//! | `celu`, `selu`, `softplus`, `logsigmoid` (T) | 3 | 0 | 0 | one more rounding (`a / alpha`, the constants, `log1p`) |
//! | `mish` (T) | 4 | 0 | 2 | `exp`, `log1p`, `tanh` and the product; `e^a` subnormal far below 0 |
//! | `tanhshrink` (T) | 2 | 2 | 0 | `tanh`'s error, absolute near 0 where `a - tanh(a)` cancels |
//! | `gelu_tanh` (T) | 4 | 4 | 0 | `1 + tanh(..)` cancels for negative inputs |
//!
//! Half types compute in `f32` and round once, so their results are within 1 ulp of the
//! reference (the `f32` error is far below a half ulp), which every inexact op's `ulps` allows.
//!
//! The file also tests the other ways to pointwise code of issue 26: a user's own op written
//! as a generic function over expressions (`swish`), fused, against the same table ops run
//! eagerly, bit for bit, on both devices; `Tensor::map` and `Tensor::zip_map` (CPU only, by
//! design) against explicit index loops over strided, broadcast and transposed views with a
//! change of element type; and `true_divide` of `i32`, `i64` and `u8` tensors into `f32`
//! (eager, `_into`, by a scalar and fused) against `f32(a) / f32(b)`, exactly.

use crate::common::device::{host, test_device, TestDevice};
use crate::harness::{broadcastable_from, random_shape, rng_for, upload_storage, Recipe, TestElem};
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn, Zip};
use rand::rngs::SmallRng;
use rand::Rng;
use typestate_tensor::element::{DType, Element, FloatElement};
use typestate_tensor::error::{LayoutError, Result};
use typestate_tensor::ops::table::*;
use typestate_tensor::ops::UnaryOp;
use typestate_tensor::tensor::expr::{node::Node, Expr, IntoExpr};
use typestate_tensor::tensor::ops::{map, map_inplace, map_into, zip, zip_inplace, zip_into};
use typestate_tensor::tensor::{Backend, Tensor, TensorView};
use typestate_tensor::Cpu;

/// Random cases per op, element type and scalar set.
const CASES: usize = 24;

// ---------------------------------------------------------------------------------------------
// Tolerances

#[derive(Clone, Copy, Debug)]
struct Tol {
    ulps: u64,
    xulps: f64,
    tiny: f64,
}

const fn tol(ulps: u64, xulps: f64, tiny: f64) -> Tol {
    Tol { ulps, xulps, tiny }
}

const EXACT: Tol = tol(0, 0.0, 0.0);

impl Tol {
    /// A transcendental op's tolerance on `D`: each allowance plus the device's libm error.
    fn libm<D: TestDevice>(self) -> Tol {
        let extra = D::LIBM_EXTRA_ULPS as u64;
        Tol {
            ulps: self.ulps + extra,
            xulps: if self.xulps > 0.0 {
                self.xulps + extra as f64
            } else {
                0.0
            },
            tiny: if self.tiny > 0.0 {
                self.tiny + extra as f64
            } else {
                0.0
            },
        }
    }
}

/// Whether the compute type of `T` is `f64`.
fn computes_in_f64<T: Element>() -> bool {
    T::DTYPE == DType::F64
}

/// The distance from `|x|` to the next value of the compute type of `T`.
fn compute_ulp<T: Element>(x: f64) -> f64 {
    if computes_in_f64::<T>() {
        let x = x.abs();
        f64::from_bits(x.to_bits() + 1) - x
    } else {
        let x = x.abs() as f32;
        (f32::from_bits(x.to_bits() + 1) - x) as f64
    }
}

/// The smallest subnormal of the compute type of `T`.
fn compute_min_subnormal<T: Element>() -> f64 {
    if computes_in_f64::<T>() {
        f64::from_bits(1)
    } else {
        f32::from_bits(1) as f64
    }
}

/// Whether `got` passes for the reference `want` (unrounded) of input `x`.
fn close<T: TestElem>(got: T, want: f64, x: f64, tol: Tol) -> bool {
    let g = got.to_f64();
    let want_t = T::from_f64(want);
    if want.is_nan() || g.is_nan() {
        return want.is_nan() && g.is_nan();
    }
    if want_t.to_f64().is_infinite() || g.is_infinite() {
        return g == want_t.to_f64();
    }
    if g == want_t.to_f64() || got.ordered().abs_diff(want_t.ordered()) <= tol.ulps {
        return true;
    }
    let allowance = tol.xulps * compute_ulp::<T>(x)
        + tol.tiny * x.abs().max(1.0) * compute_min_subnormal::<T>();
    (g - want).abs() <= allowance
}

/// One expected element: the input(s) and the unrounded reference.
#[derive(Clone, Copy, Debug)]
struct Want {
    x: f64,
    y: f64,
    value: f64,
}

fn check<T: TestElem>(what: &str, got: &[T], want: &[Want], tol: Tol) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(g, w.value, w.x, tol),
            "{what} {}: element {i}: f({}, {}) got {g:?}, want {:?} ({}), tolerance {tol:?}",
            T::NAME,
            w.x,
            w.y,
            T::from_f64(w.value),
            w.value,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// The smallest normal value of `T`.
fn min_normal<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F64 => f64::MIN_POSITIVE,
        DType::F16 => 6.103_515_625e-5,
        _ => f32::MIN_POSITIVE as f64,
    }
}

/// A random input value of `T`, rich in the values activations get wrong.
fn draw<T: Element>(rng: &mut SmallRng) -> T {
    let sign = if rng.gen_bool(0.5) { 1.0 } else { -1.0 };
    let x = match rng.gen_range(0..40) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => 0.0,
        4 => -0.0,
        5 | 6 => sign * 30.0,
        7 => sign * 100.0,
        8 | 9 => sign * min_normal::<T>() * rng.gen_range(0.0..1.0),
        10 | 11 => sign * rng.gen_range(15.0..120.0),
        12 => sign * rng.gen_range(100.0..6e4),
        13 => sign * 10f64.powi(rng.gen_range(-30..-1)),
        14 | 15 => sign * [0.25, 0.5, 1.0, 3.0, 6.0, 5.0, 10.0, 20.0][rng.gen_range(0..8)],
        _ => rng.gen_range(-6.0..6.0),
    };
    T::from_f64(x)
}

/// Random storage for `recipe`.
fn data<T: Element>(rng: &mut SmallRng, recipe: &Recipe) -> Vec<T> {
    (0..recipe.storage_len).map(|_| draw(rng)).collect()
}

/// A value far from `want` (so that an element an engine fails to write cannot pass).
fn poison<T: Element>(want: f64) -> T {
    [12345.0, -7.0, 0.375, 3.0]
        .into_iter()
        .find(|p| want.is_nan() || (p - want).abs() > 1.0)
        .map_or(T::ZERO, T::from_f64)
}

/// The storage `before` with the elements of `recipe`'s view poisoned, and the expected
/// storage after writing `want` there (elements outside the view unchanged).
fn expected_storage<T: Element>(
    recipe: &Recipe,
    before: &mut [T],
    want: &ArrayD<Want>,
) -> Vec<Want> {
    Zip::from(recipe.nd_mut(before))
        .and(want)
        .for_each(|b, w| *b = poison(w.value));
    let mut all: Vec<Want> = before
        .iter()
        .map(|b| Want {
            x: b.to_f64(),
            y: 0.0,
            value: b.to_f64(),
        })
        .collect();
    recipe.nd_mut(&mut all).assign(want);
    all
}

// ---------------------------------------------------------------------------------------------
// Drivers

/// The fused form of an op: `|view| view.lazy().op(..).eval()`.
type Fused<'f, T, D> = &'f dyn Fn(&TensorView<'_, T, D>) -> Result<Tensor<T, D>>;

/// `op` against `reference` in all its forms, on random views of `T` on `dev`.
fn unary_cases<D: TestDevice, T: TestElem, O: UnaryOp<T, Output = T>>(
    dev: &D,
    op: O,
    reference: &dyn Fn(f64) -> f64,
    fused: Fused<'_, T, D>,
    tol: Tol,
) {
    let scalars = op.scalars().map(|s| s.to_f64());
    let mut rng = rng_for(O::NAME, &format!("{}{scalars:?}", T::NAME));
    let what = format!("{}{scalars:?}", O::NAME);
    let expect = |x: &T| {
        let x = x.to_f64();
        Want {
            x,
            y: 0.0,
            value: reference(x),
        }
    };
    for _ in 0..CASES {
        // Out of place and fused, on a random view.
        let out_shape = random_shape(&mut rng);
        let in_shape = broadcastable_from(&mut rng, &out_shape);
        let r = Recipe::random(&mut rng, &in_shape);
        let stored: Vec<T> = data(&mut rng, &r);
        let storage = upload_storage(dev, &stored);
        let view = r.view(&storage);
        let want: Vec<Want> = r.nd(&stored).iter().map(expect).collect();
        let got = map(op, &view).unwrap();
        assert_eq!(got.shape(), &in_shape[..], "{what}: shape");
        check(&what, &host(&got), &want, tol);
        let got = fused(&view).unwrap();
        check(&format!("{what} fused"), &host(&got), &want, tol);

        // Into a poisoned strided view, the input broadcast to it.
        let o = Recipe::random(&mut rng, &out_shape);
        let mut before: Vec<T> = data(&mut rng, &o);
        let want = r
            .nd(&stored)
            .broadcast(IxDyn(&out_shape))
            .unwrap()
            .map(expect);
        let want = expected_storage(&o, &mut before, &want);
        let mut out = upload_storage(dev, &before);
        map_into(op, &view, &mut o.view_mut(&mut out)).unwrap();
        check(&format!("{what} into"), &host(&out), &want, tol);

        // In place.
        let before: Vec<T> = data(&mut rng, &r);
        let want = r.nd(&before).map(expect);
        let want = expected_storage(&r, &mut before.clone(), &want);
        let mut dst = upload_storage(dev, &before);
        map_inplace(op, &mut r.view_mut(&mut dst)).unwrap();
        check(&format!("{what} in place"), &host(&dst), &want, tol);
    }
}

/// Runs `$body` once per float element type, with `$t` naming it.
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

/// A test of a scalar-free unary activation: `$op` (its type), `$m` (its method).
macro_rules! unary_test {
    ($body:ident, $cpu:ident, $gpu:ident, $op:ident, $m:ident, $reference:expr, $tol:expr) => {
        test_device!($body, $cpu, $gpu);
        fn $body<D: TestDevice>(dev: &D) {
            each_float!(T => {
                unary_cases::<D, T, _>(dev, $op, &$reference, &|v: &TensorView<'_, T, D>| v.lazy().$m().eval(), $tol);
            });
        }
    };
}

/// A test of a unary activation with scalars, once per scalar set of `$sets`.
macro_rules! scalar_test {
    ($body:ident, $cpu:ident, $gpu:ident, $op:ident, $m:ident, [$($p:ident),+],
        $sets:expr, $reference:expr, $tol:expr) => {
        test_device!($body, $cpu, $gpu);
        fn $body<D: TestDevice>(dev: &D) {
            each_float!(T => {
                for set in $sets {
                    let mut it = set.into_iter().map(T::from_f64);
                    $( let $p = it.next().unwrap(); )+
                    let ps = [$($p.to_f64()),+];
                    let reference = |x: f64| $reference(x, ps);
                    unary_cases::<D, T, _>(
                        dev,
                        $op($($p),+),
                        &reference,
                        &|v: &TensorView<'_, T, D>| v.lazy().$m($($p),+).eval(),
                        $tol,
                    );
                }
            });
        }
    };
}

// ---------------------------------------------------------------------------------------------
// References: PyTorch's formulas (aten/src/ATen/native/cpu/Activation.cpp and the CUDA
// kernels), in f64.

fn clamp_nan(x: f64, lo: f64, hi: f64) -> f64 {
    if x.is_nan() {
        x
    } else {
        x.max(lo).min(hi)
    }
}

const SELU_ALPHA: f64 = 1.673_263_242_354_377_284_817_042_991_671_7;
const SELU_SCALE: f64 = 1.050_700_987_355_480_493_419_334_985_294_6;
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_355_879_892_119_868_8;

fn softplus_ref(x: f64, [beta, threshold]: [f64; 2]) -> f64 {
    if x * beta > threshold {
        x
    } else {
        (x * beta).exp().ln_1p() / beta
    }
}

fn gelu_tanh_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
}

// ---------------------------------------------------------------------------------------------
// Tests

unary_test!(
    relu6_matches_f64,
    relu6_cpu,
    relu6_gpu,
    Relu6,
    relu6,
    |x| clamp_nan(x, 0.0, 6.0),
    EXACT
);
unary_test!(
    selu_matches_f64,
    selu_cpu,
    selu_gpu,
    Selu,
    selu,
    |x: f64| SELU_SCALE * if x > 0.0 { x } else { SELU_ALPHA * x.exp_m1() },
    tol(3, 0.0, 0.0).libm::<D>()
);
unary_test!(
    softsign_matches_f64,
    softsign_cpu,
    softsign_gpu,
    Softsign,
    softsign,
    |x: f64| x / (1.0 + x.abs()),
    tol(2, 0.0, 0.0)
);
unary_test!(
    mish_matches_f64,
    mish_cpu,
    mish_gpu,
    Mish,
    mish,
    |x: f64| x * x.exp().ln_1p().tanh(),
    tol(4, 0.0, 2.0).libm::<D>()
);
unary_test!(
    hardsigmoid_matches_f64,
    hardsigmoid_cpu,
    hardsigmoid_gpu,
    Hardsigmoid,
    hardsigmoid,
    |x: f64| clamp_nan(x + 3.0, 0.0, 6.0) / 6.0,
    tol(1, 0.0, 0.0)
);
unary_test!(
    hardswish_matches_f64,
    hardswish_cpu,
    hardswish_gpu,
    Hardswish,
    hardswish,
    |x: f64| x * clamp_nan(x + 3.0, 0.0, 6.0) / 6.0,
    tol(2, 0.0, 0.0)
);
unary_test!(
    logsigmoid_matches_f64,
    logsigmoid_cpu,
    logsigmoid_gpu,
    Logsigmoid,
    logsigmoid,
    |x: f64| x.min(0.0) - (-x.abs()).exp().ln_1p(),
    tol(3, 0.0, 0.0).libm::<D>()
);
unary_test!(
    tanhshrink_matches_f64,
    tanhshrink_cpu,
    tanhshrink_gpu,
    Tanhshrink,
    tanhshrink,
    |x: f64| x - x.tanh(),
    tol(2, 2.0, 0.0).libm::<D>()
);
unary_test!(
    gelu_tanh_matches_f64,
    gelu_tanh_cpu,
    gelu_tanh_gpu,
    GeluTanh,
    gelu_tanh,
    gelu_tanh_ref,
    tol(4, 4.0, 0.0).libm::<D>()
);

scalar_test!(
    leaky_relu_matches_f64,
    leaky_relu_cpu,
    leaky_relu_gpu,
    LeakyRelu,
    leaky_relu,
    [slope],
    [[0.01], [0.2], [1.5]],
    |x: f64, [s]: [f64; 1]| if x > 0.0 { x } else { x * s },
    tol(1, 0.0, 0.0)
);
scalar_test!(
    elu_matches_f64,
    elu_cpu,
    elu_gpu,
    Elu,
    elu,
    [alpha],
    [[1.0], [0.5], [2.0]],
    |x: f64, [a]: [f64; 1]| if x > 0.0 { x } else { a * x.exp_m1() },
    tol(2, 0.0, 0.0).libm::<D>()
);
scalar_test!(
    celu_matches_f64,
    celu_cpu,
    celu_gpu,
    Celu,
    celu,
    [alpha],
    [[1.0], [0.5], [3.0]],
    |x: f64, [a]: [f64; 1]| if x > 0.0 { x } else { a * (x / a).exp_m1() },
    tol(3, 0.0, 0.0).libm::<D>()
);
scalar_test!(
    softplus_matches_f64,
    softplus_cpu,
    softplus_gpu,
    Softplus,
    softplus,
    [beta, threshold],
    [[1.0, 20.0], [2.0, 10.0], [0.5, 5.0]],
    softplus_ref,
    tol(3, 0.0, 0.0).libm::<D>()
);
scalar_test!(
    hardtanh_matches_f64,
    hardtanh_cpu,
    hardtanh_gpu,
    Hardtanh,
    hardtanh,
    [min_val, max_val],
    [[-1.0, 1.0], [-2.5, 0.5], [0.0, 6.0]],
    |x: f64, [lo, hi]: [f64; 2]| clamp_nan(x, lo, hi),
    EXACT
);
scalar_test!(
    softshrink_matches_f64,
    softshrink_cpu,
    softshrink_gpu,
    Softshrink,
    softshrink,
    [lambd],
    [[0.5], [1.0], [0.25]],
    |x: f64, [l]: [f64; 1]| if x > l {
        x - l
    } else if x < -l {
        x + l
    } else {
        x * 0.0
    },
    tol(1, 0.0, 0.0)
);
scalar_test!(
    hardshrink_matches_f64,
    hardshrink_cpu,
    hardshrink_gpu,
    Hardshrink,
    hardshrink,
    [lambd],
    [[0.5], [1.0], [0.25]],
    |x: f64, [l]: [f64; 1]| if x >= -l && x <= l { 0.0 } else { x },
    EXACT
);
scalar_test!(
    threshold_matches_f64,
    threshold_cpu,
    threshold_gpu,
    Threshold,
    threshold,
    [threshold, value],
    [[0.1, 20.0], [-1.0, 0.0], [0.5, -3.0]],
    |x: f64, [th, v]: [f64; 2]| if x <= th { v } else { x },
    EXACT
);

/// `prelu(a, w)` with `w` broadcast against `a` (random broadcast shapes, and a per-channel
/// weight `[C, 1, 1]` of an `[N, C, H, W]` input), in all its forms.
fn prelu_matches_f64<D: TestDevice>(dev: &D) {
    fn reference(x: f64, w: f64) -> f64 {
        if x > 0.0 {
            x
        } else {
            w * x
        }
    }
    let t = tol(1, 0.0, 0.0);
    each_float!(T => {
        let mut rng = rng_for("prelu", T::NAME);
        for case in 0..CASES {
            let out_shape = if case % 4 == 0 {
                vec![2, 3, rng.gen_range(1..4), rng.gen_range(1..5)]
            } else {
                random_shape(&mut rng)
            };
            let w_shape = if case % 4 == 0 {
                vec![3, 1, 1]
            } else {
                broadcastable_from(&mut rng, &out_shape)
            };
            let ra = Recipe::random(&mut rng, &out_shape);
            let rw = Recipe::random(&mut rng, &w_shape);
            let (sa, sw): (Vec<T>, Vec<T>) = (data(&mut rng, &ra), data(&mut rng, &rw));
            let (ta, tw) = (upload_storage(dev, &sa), upload_storage(dev, &sw));
            let (a, w) = (ra.view(&ta), rw.view(&tw));
            let nw = rw.nd(&sw).broadcast(IxDyn(&out_shape)).unwrap().to_owned();
            let want = Zip::from(&ra.nd(&sa)).and(&nw).map_collect(|x, w| {
                let (x, w) = (x.to_f64(), w.to_f64());
                Want { x, y: w, value: reference(x, w) }
            });
            let flat: Vec<Want> = want.iter().copied().collect();
            check("prelu", &host(&zip(Prelu, &a, &w).unwrap()), &flat, t);
            check("prelu method", &host(&a.prelu(&w).unwrap()), &flat, t);
            check("prelu fused", &host(&a.lazy().prelu(&w).eval().unwrap()), &flat, t);

            let o = Recipe::random(&mut rng, &out_shape);
            let mut before: Vec<T> = data(&mut rng, &o);
            let all = expected_storage(&o, &mut before, &want);
            let mut out = upload_storage(dev, &before);
            zip_into(Prelu, &a, &w, &mut o.view_mut(&mut out)).unwrap();
            check("prelu into", &host(&out), &all, t);

            let all = expected_storage(&ra, &mut sa.clone(), &want);
            let mut dst = upload_storage(dev, &sa);
            zip_inplace(Prelu, &mut ra.view_mut(&mut dst), &w).unwrap();
            check("prelu in place", &host(&dst), &all, t);
        }
    });
}
test_device!(prelu_matches_f64, prelu_cpu, prelu_gpu);

/// The values the issue names: `softplus(-30)` through `log1p`, not `log(1 + e^a)` (which
/// gives 0), eager and fused, and `logsigmoid` far out on both sides.
fn small_results_keep_their_precision<D: TestDevice>(dev: &D) {
    let x = dev.upload(&Tensor::from_vec(&[3], vec![-30.0f32, -100.0, 40.0]).unwrap());
    let want = [9.357_622_968_839_737e-14, 3.720_075_976_020_836e-44];
    for got in [
        host(&x.softplus(1.0, 20.0).unwrap()),
        host(&x.lazy().softplus(1.0, 20.0).eval().unwrap()),
    ] {
        for (g, w) in got.iter().zip(want) {
            let rel = (*g as f64 - w).abs() / w;
            // -100: e^-100 is subnormal in f32 (26 times the smallest): within 2 of it.
            assert!(
                rel < 1e-6 || (*g as f64 - w).abs() <= 2.0 * f32::from_bits(1) as f64,
                "softplus: got {g:e}, want {w:e}"
            );
        }
        assert_eq!(got[2], 40.0);
    }
    let got = host(&x.logsigmoid().unwrap());
    assert_eq!(got[0], -30.0);
    assert!(
        (got[2] as f64 / -(-40f64).exp() - 1.0).abs() < 1e-6,
        "{got:?}"
    );
    let got = host(&x.cast::<f64>().unwrap().softplus(1.0, 20.0).unwrap());
    assert!(
        (got[0] / 9.357_622_968_839_737e-14 - 1.0).abs() < 1e-14,
        "{got:?}"
    );
}
test_device!(
    small_results_keep_their_precision,
    small_results_keep_their_precision_cpu,
    small_results_keep_their_precision_gpu
);

// ---------------------------------------------------------------------------------------------
// A user's own op: a function over expressions

/// Swish written by a user from table ops: generic over the float type and the device.
fn swish<T: FloatElement, D: Backend>(
    x: impl IntoExpr<T, D>,
    beta: T,
) -> Expr<T, D, impl Node<D, Out = T>> {
    let x = x.into_expr();
    x.clone() * x.mul_scalar(beta).sigmoid()
}

/// The elements formatted, so that NaNs compare equal whatever their payload.
fn bits<T: Element>(v: Vec<T>) -> Vec<String> {
    v.iter().map(|x| format!("{x:?}")).collect()
}

/// `(swish(a) * b)` fused in one pass gives the bits of the same table ops run eagerly, on
/// random strided and broadcast views.
fn users_function_fuses_like_table_ops<D: TestDevice>(dev: &D) {
    each_float!(T => {
        let mut rng = rng_for("swish", T::NAME);
        for _ in 0..CASES {
            let shape = random_shape(&mut rng);
            let ra = Recipe::random(&mut rng, &shape);
            let rb_shape = broadcastable_from(&mut rng, &shape);
                let rb = Recipe::random(&mut rng, &rb_shape);
            let (sa, sb): (Vec<T>, Vec<T>) = (data(&mut rng, &ra), data(&mut rng, &rb));
            let (ta, tb) = (upload_storage(dev, &sa), upload_storage(dev, &sb));
            let (a, b) = (ra.view(&ta), rb.view(&tb));
            let beta = T::from_f64(rng.gen_range(0.25..2.0));
            let fused = (swish(a.lazy(), beta) * &b).eval().unwrap();
            let eager = a
                .mul(&a.mul_scalar(beta).unwrap().sigmoid().unwrap())
                .unwrap()
                .mul(&b)
                .unwrap();
            assert_eq!(fused.shape(), eager.shape());
            assert_eq!(bits(host(&fused)), bits(host(&eager)), "swish {}", T::NAME);
            let alone = swish(&a, beta).eval().unwrap();
            let eager = a.mul(&a.mul_scalar(beta).unwrap().sigmoid().unwrap()).unwrap();
            assert_eq!(bits(host(&alone)), bits(host(&eager)), "swish alone {}", T::NAME);
        }
    });
}
test_device!(
    users_function_fuses_like_table_ops,
    users_function_cpu,
    users_function_gpu
);

// ---------------------------------------------------------------------------------------------
// `map` and `zip_map`: Rust closures on the CPU engine (CPU-only by design: no GPU instance)

/// The multi-indices of `shape` in row-major order.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0; shape.len()];
    for _ in 0..n {
        out.push(idx.clone());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

#[test]
fn map_matches_a_loop_on_strided_views_with_a_type_change() {
    let mut rng = rng_for("map", "f32 i32");
    for _ in 0..64 {
        let shape = random_shape(&mut rng);
        let r = Recipe::random(&mut rng, &shape);
        let stored: Vec<f32> = data(&mut rng, &r);
        let storage = Tensor::from_vec(&[stored.len()], stored.clone()).unwrap();
        let v = r.view(&storage);
        let f = |x: f32| (x as f64) * 0.5 - 1.0;
        let got = v.map(f).unwrap();
        assert_eq!(got.shape(), &shape[..]);
        let nd = r.nd(&stored);
        let mut want = Vec::new();
        for i in indices(&shape) {
            want.push(f(nd[IxDyn(&i)]));
        }
        assert_eq!(bits(got.to_vec()), bits(want));
        assert!(got.as_slice().is_some(), "a row-major result");

        // A broadcast view (stride 0) of integers into bool.
        let big: Vec<usize> = [2].iter().chain(&shape).copied().collect();
        let ints: Vec<i32> = (0..stored.len()).map(|_| rng.gen()).collect();
        let storage = Tensor::from_vec(&[ints.len()], ints.clone()).unwrap();
        let b = r.view(&storage).broadcast_to(&big).unwrap();
        let got = b.map(|x| x % 3 == 0).unwrap();
        let nd = r.nd(&ints);
        let mut want = Vec::new();
        for i in indices(&big) {
            want.push(nd[IxDyn(&i[1..])] % 3 == 0);
        }
        assert_eq!(got.shape(), &big[..]);
        assert_eq!(got.to_vec(), want);
    }
    // Owned tensors too, and a permuted (tiled) one.
    let t = Tensor::from_vec(&[2, 3], vec![1u8, 2, 3, 4, 5, 250]).unwrap();
    assert_eq!(
        t.map(|x| x as f32 / 2.0).unwrap().to_vec(),
        [0.5, 1.0, 1.5, 2.0, 2.5, 125.0]
    );
    assert_eq!(
        t.t().map(|x| x as i64).unwrap().to_vec(),
        [1, 4, 2, 5, 3, 250]
    );
}

#[test]
fn zip_map_broadcasts_like_binary_ops() {
    let mut rng = rng_for("zip_map", "f32 i64 f64");
    for _ in 0..64 {
        let shape = random_shape(&mut rng);
        let a_shape = broadcastable_from(&mut rng, &shape);
        let b_shape = broadcastable_from(&mut rng, &shape);
        let (ra, rb) = (
            Recipe::random(&mut rng, &a_shape),
            Recipe::random(&mut rng, &b_shape),
        );
        let sa: Vec<f32> = data(&mut rng, &ra);
        let sb: Vec<i64> = (0..rb.storage_len).map(|_| rng.gen_range(-9..9)).collect();
        let ta = Tensor::from_vec(&[sa.len()], sa.clone()).unwrap();
        let tb = Tensor::from_vec(&[sb.len()], sb.clone()).unwrap();
        let (a, b) = (ra.view(&ta), rb.view(&tb));
        let f = |x: f32, k: i64| x as f64 * k as f64;
        let got = a.zip_map(&b, f).unwrap();
        let out: Vec<usize> = broadcast(&a_shape, &b_shape);
        assert_eq!(got.shape(), &out[..]);
        let na = ra.nd(&sa).broadcast(IxDyn(&out)).unwrap().to_owned();
        let nb = rb.nd(&sb).broadcast(IxDyn(&out)).unwrap().to_owned();
        let mut want = Vec::new();
        for i in indices(&out) {
            want.push(f(na[IxDyn(&i)], nb[IxDyn(&i)]));
        }
        assert_eq!(bits(got.to_vec()), bits(want));
    }
    let a = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let mask = Tensor::from_vec(&[3], vec![true, false, true]).unwrap();
    let kept = a
        .zip_map(&mask, |v, keep| if keep { v } else { 0.0 })
        .unwrap();
    assert_eq!(kept.to_vec(), [1.0, 0.0, 3.0, 4.0, 0.0, 6.0]);
    let err = a
        .zip_map(&Tensor::<i32, Cpu>::zeros(&[4]).unwrap(), |x, _| x)
        .unwrap_err();
    assert!(
        matches!(
            err,
            typestate_tensor::Error::Layout(LayoutError::BroadcastMismatch { op: "zip_map", .. })
        ),
        "{err:?}"
    );
}

/// The shape two shapes broadcast to (both known to broadcast).
fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    let rank = a.len().max(b.len());
    (0..rank)
        .map(|i| {
            let get = |s: &[usize]| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
            let (x, y) = (get(a), get(b));
            if x == 1 {
                y
            } else {
                x
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// `true_divide`: integers into f32

/// A random integer of `T` with the extremes, zero (division by zero), ±1 and 2^24 + 1.
fn draw_int<T: TestElem>(rng: &mut SmallRng) -> T {
    let v: i128 = match rng.gen_range(0..12) {
        0 => 0,
        1 => 1,
        2 => -1,
        3 => i128::MAX,
        4 => i128::MIN,
        5 => (1 << 24) + 1,
        6 => rng.gen_range(-(1i128 << 62)..(1i128 << 62)),
        _ => rng.gen_range(-100..100),
    };
    // Saturate into the type (T::wrap would wrap the extremes to 0 or -1).
    let (lo, hi) = match T::DTYPE {
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        DType::I64 => (i64::MIN as i128, i64::MAX as i128),
        _ => (0, 255),
    };
    T::wrap(v.clamp(lo, hi))
}

fn true_divide_matches_f32_division<D: TestDevice>(dev: &D) {
    macro_rules! each_int {
        ($($t:ty),*) => {$({
            type T = $t;
            let mut rng = rng_for("true_divide", T::NAME);
            // PyTorch's int / int: both to f32 (one rounding each), then an IEEE division.
            let reference = |x: T, y: T| Want {
                x: x.int() as f64,
                y: y.int() as f64,
                value: ((x.int() as f32) as f64 / (y.int() as f32) as f64) as f32 as f64,
            };
            for _ in 0..CASES {
                let shape = random_shape(&mut rng);
                let ra_shape = broadcastable_from(&mut rng, &shape);
                let ra = Recipe::random(&mut rng, &ra_shape);
                let rb_shape = broadcastable_from(&mut rng, &shape);
                let rb = Recipe::random(&mut rng, &rb_shape);
                let sa: Vec<T> = (0..ra.storage_len).map(|_| draw_int(&mut rng)).collect();
                let sb: Vec<T> = (0..rb.storage_len).map(|_| draw_int(&mut rng)).collect();
                let (ta, tb) = (upload_storage(dev, &sa), upload_storage(dev, &sb));
                let (a, b) = (ra.view(&ta), rb.view(&tb));
                let out = broadcast(a.shape(), b.shape());
                let na = ra.nd(&sa).broadcast(IxDyn(&out)).unwrap().to_owned();
                let nb = rb.nd(&sb).broadcast(IxDyn(&out)).unwrap().to_owned();
                let want = Zip::from(&na).and(&nb).map_collect(|&x, &y| reference(x, y));
                let flat: Vec<Want> = want.iter().copied().collect();
                let got = a.true_divide(&b).unwrap();
                assert_eq!(got.shape(), &out[..]);
                check::<f32>("true_divide", &host(&got), &flat, EXACT);
                let fused = (a.lazy().true_divide(&b) * 2.0f32).eval().unwrap();
                let doubled: Vec<Want> =
                    flat.iter().map(|w| Want { value: w.value * 2.0, ..*w }).collect();
                check::<f32>("true_divide fused", &host(&fused), &doubled, EXACT);

                // Into a strided f32 view, and by a scalar.
                let o = Recipe::random(&mut rng, &out);
                let mut before: Vec<f32> = data(&mut rng, &o);
                let all = expected_storage(&o, &mut before, &want);
                let mut dst = upload_storage(dev, &before);
                a.true_divide_into(&b, &mut o.view_mut(&mut dst)).unwrap();
                check::<f32>("true_divide into", &host(&dst), &all, EXACT);
                let s: T = draw_int(&mut rng);
                let want: Vec<Want> = ra.nd(&sa).iter().map(|&x| reference(x, s)).collect();
                check::<f32>("true_divide scalar", &host(&a.true_divide(s).unwrap()), &want, EXACT);
            }
        })*};
    }
    each_int!(i32, i64, u8);
    // The documented rounding and division by zero.
    let a = dev.upload(&Tensor::from_vec(&[4], vec![(1i64 << 24) + 1, 5, -5, 0]).unwrap());
    let b = dev.upload(&Tensor::from_vec(&[4], vec![1i64, 0, 0, 0]).unwrap());
    let got = host(&a.true_divide(&b).unwrap());
    assert_eq!(got[..3], [16_777_216.0, f32::INFINITY, f32::NEG_INFINITY]);
    assert!(got[3].is_nan());
}
test_device!(
    true_divide_matches_f32_division,
    true_divide_cpu,
    true_divide_gpu
);
