//! Every engine against independent references, for every op and every element type it
//! accepts: random shapes (rank 0-6, zero-size dims included), inputs viewed through random
//! permutations, steps, flips and offsets and broadcast to the output shape, outputs written
//! out of place, into strided views (poisoned first), and in place.
//!
//! Each test body is written once, generic over [`TestDevice`], and instantiated by
//! `test_device!` as `<name>_cpu` and `<name>_gpu`; the GPU instance prints
//! `<name>_gpu: skipped, no CUDA driver or GPU on this machine` without a GPU. Both check the
//! same references with the same tolerances, except one documented per-device allowance on
//! the GPU ([`TestDevice::LIBM_EXTRA_ULPS`] for transcendental ops), 0 on the CPU. The tests at the end are CPU-only by nature (host reductions, views
//! made from host slices), each with the reason.
//!
//! References: ndarray builds the same views of the same storage with its own view methods
//! (`permuted_axes`, `slice_axis`, `invert_axis`, `broadcast`) and `Zip` walks them; each
//! element's expected value comes from an `f64` computation (floats, rounded once to the
//! element type) or an `i128` one (integers, wrapped), never from the code under test.
//! Floats are compared in ulps of the element type, with an absolute allowance for ops that
//! cancel (GELU, lerp); integers and bools exactly.

use crate::common::device::{host, test_device, TestDevice};

use crate::harness::*;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use typestate_tensor::element::{DType, Element};
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::layout::Layout;
use typestate_tensor::ops::table::*;
use typestate_tensor::ops::Cast;
use typestate_tensor::tensor::ops::{map, zip, zip3};
use typestate_tensor::tensor::{AsView, Tensor, TensorView, TensorViewMut};
use typestate_tensor::Cpu;

// ---------------------------------------------------------------------------------------------
// Tests: unary

macro_rules! float_unary_test {
    ($test:ident, $cpu:ident, $gpu:ident, $op:expr, $dom:expr, $f:expr, $tol:expr) => {
        test_device!($test, $cpu, $gpu);
        fn $test<D: TestDevice>(dev: &D) {
            float_unary_test!(@ty dev, $op, $dom, $f, $tol; f32, f64, f16, bf16);
        }
    };
    (@ty $dev:ident, $op:expr, $dom:expr, $f:expr, $tol:expr; $($t:ty),*) => {$(
        let mut rng = rng_for(stringify!($op), stringify!($t));
        for _ in 0..CASES {
            unary_case::<D, $t, $t, _>($dev, &mut rng, $op, $dom, &f1::<$t>($f), $tol);
            unary_inplace_case::<D, $t, _>($dev, &mut rng, $op, $dom, &f1::<$t>($f), $tol);
        }
    )*};
}

float_unary_test!(
    exp_matches_f64,
    exp_matches_f64_cpu,
    exp_matches_f64_gpu,
    Exp,
    Domain::Any,
    f64::exp,
    TRANS.libm::<D>()
);
float_unary_test!(
    log_matches_f64,
    log_matches_f64_cpu,
    log_matches_f64_gpu,
    Log,
    Domain::Positive,
    f64::ln,
    TRANS.libm::<D>()
);
float_unary_test!(
    sqrt_matches_f64,
    sqrt_matches_f64_cpu,
    sqrt_matches_f64_gpu,
    Sqrt,
    Domain::Positive,
    f64::sqrt,
    ulps(1)
);
float_unary_test!(
    rsqrt_matches_f64,
    rsqrt_matches_f64_cpu,
    rsqrt_matches_f64_gpu,
    Rsqrt,
    Domain::Positive,
    |x| 1.0 / x.sqrt(),
    TRANS.libm::<D>()
);
float_unary_test!(
    sin_matches_f64,
    sin_matches_f64_cpu,
    sin_matches_f64_gpu,
    Sin,
    Domain::Any,
    f64::sin,
    TRANS.libm::<D>()
);
float_unary_test!(
    cos_matches_f64,
    cos_matches_f64_cpu,
    cos_matches_f64_gpu,
    Cos,
    Domain::Any,
    f64::cos,
    TRANS.libm::<D>()
);
float_unary_test!(
    tanh_matches_f64,
    tanh_matches_f64_cpu,
    tanh_matches_f64_gpu,
    Tanh,
    Domain::Any,
    f64::tanh,
    TRANS.libm::<D>()
);
float_unary_test!(
    sigmoid_matches_f64,
    sigmoid_matches_f64_cpu,
    sigmoid_matches_f64_gpu,
    Sigmoid,
    Domain::Any,
    |x| 1.0 / (1.0 + (-x).exp()),
    tol(3, 1.0).libm::<D>()
);
float_unary_test!(
    gelu_matches_f64,
    gelu_matches_f64_cpu,
    gelu_matches_f64_gpu,
    Gelu,
    Domain::Any,
    gelu,
    tol(3, 4.0).libm::<D>()
);
float_unary_test!(
    silu_matches_f64,
    silu_matches_f64_cpu,
    silu_matches_f64_gpu,
    Silu,
    Domain::Any,
    |x| x / (1.0 + (-x).exp()),
    tol(3, 2.0).libm::<D>()
);
float_unary_test!(
    recip_matches_f64,
    recip_matches_f64_cpu,
    recip_matches_f64_gpu,
    Recip,
    Domain::Any,
    |x| 1.0 / x,
    ulps(1)
);
float_unary_test!(
    floor_matches_f64,
    floor_matches_f64_cpu,
    floor_matches_f64_gpu,
    Floor,
    Domain::Quarters,
    f64::floor,
    EXACT
);
float_unary_test!(
    ceil_matches_f64,
    ceil_matches_f64_cpu,
    ceil_matches_f64_gpu,
    Ceil,
    Domain::Quarters,
    f64::ceil,
    EXACT
);
float_unary_test!(
    round_is_half_to_even,
    round_is_half_to_even_cpu,
    round_is_half_to_even_gpu,
    Round,
    Domain::Quarters,
    f64::round_ties_even,
    EXACT
);

macro_rules! numeric_unary_test {
    ($test:ident, $cpu:ident, $gpu:ident, $op:expr, $float:expr, $int:expr, [$($t:ty),*]) => {
        test_device!($test, $cpu, $gpu);
        fn $test<D: TestDevice>(dev: &D) {
            $(
                let mut rng = rng_for(stringify!($op), stringify!($t));
                for _ in 0..CASES {
                    if <$t as TestElem>::KIND == Kind::Float {
                        unary_case::<D, $t, $t, _>(dev, &mut rng, $op, Domain::Any, &f1::<$t>($float), EXACT);
                        unary_inplace_case::<D, $t, _>(dev, &mut rng, $op, Domain::Any, &f1::<$t>($float), EXACT);
                    } else {
                        unary_case::<D, $t, $t, _>(dev, &mut rng, $op, Domain::Any, &i1::<$t>($int), EXACT);
                        unary_inplace_case::<D, $t, _>(dev, &mut rng, $op, Domain::Any, &i1::<$t>($int), EXACT);
                    }
                }
            )*
        }
    };
}

numeric_unary_test!(
    neg_matches_reference,
    neg_matches_reference_cpu,
    neg_matches_reference_gpu,
    Neg,
    |x| -x,
    |x| -x,
    [f32, f64, f16, bf16, i32, i64, i8, i16]
);
numeric_unary_test!(
    abs_matches_reference,
    abs_matches_reference_cpu,
    abs_matches_reference_gpu,
    Abs,
    f64::abs,
    i128::abs,
    [f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64]
);
numeric_unary_test!(
    sign_matches_reference,
    sign_matches_reference_cpu,
    sign_matches_reference_gpu,
    Sign,
    sign,
    i128::signum,
    [f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64]
);
numeric_unary_test!(
    square_matches_reference,
    square_matches_reference_cpu,
    square_matches_reference_gpu,
    Square,
    |x| x * x,
    // Wrapping in i128 keeps the low 64 bits exact (a u64 square overflows i128).
    |x: i128| x.wrapping_mul(x),
    [f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64]
);
numeric_unary_test!(
    relu_matches_reference,
    relu_matches_reference_cpu,
    relu_matches_reference_gpu,
    Relu,
    |x| if x.is_nan() { x } else { x.max(0.0) },
    |x| x.max(0),
    [f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64]
);
numeric_unary_test!(
    copy_is_identity,
    copy_is_identity_cpu,
    copy_is_identity_gpu,
    Identity,
    |x| x,
    |x| x,
    [f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64]
);

test_device!(
    square_of_f32_rounds_once,
    square_of_f32_rounds_once_cpu,
    square_of_f32_rounds_once_gpu
);
fn square_of_f32_rounds_once<D: TestDevice>(dev: &D) {
    // f32 x*x rounded once from the exact f64 product.
    let mut rng = rng_for("square", "exact");
    for _ in 0..CASES {
        unary_case::<D, f32, f32, _>(
            dev,
            &mut rng,
            Square,
            Domain::Any,
            &f1::<f32>(|x| x * x),
            EXACT,
        );
    }
}

test_device!(
    copy_of_bool_is_identity,
    copy_of_bool_is_identity_cpu,
    copy_of_bool_is_identity_gpu
);
fn copy_of_bool_is_identity<D: TestDevice>(dev: &D) {
    let mut rng = rng_for("copy", "bool");
    for _ in 0..CASES {
        unary_case::<D, bool, bool, _>(dev, &mut rng, Identity, Domain::Any, &|x| x, EXACT);
    }
}

macro_rules! scalar_test {
    ($test:ident, $cpu:ident, $gpu:ident, $make:expr, $float:expr, $int:expr) => {
        test_device!($test, $cpu, $gpu);
        fn $test<D: TestDevice>(dev: &D) {
            scalar_test!(@ty dev, $make, $float, $int; f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64);
        }
    };
    (@ty $dev:ident, $make:expr, $float:expr, $int:expr; $($t:ty),*) => {$(
        let mut rng = rng_for(stringify!($make), stringify!($t));
        for _ in 0..CASES {
            let (p, q) = (<$t>::random(&mut rng, Domain::Small), <$t>::random(&mut rng, Domain::Small));
            let op = $make(p, q);
            if <$t as TestElem>::KIND == Kind::Float {
                let (pf, qf) = (p.to_f64(), q.to_f64());
                let r = move |x: $t| <$t>::from_f64($float(x.to_f64(), pf, qf));
                unary_case::<D, $t, $t, _>($dev, &mut rng, op, Domain::Any, &r, EXACT);
                unary_inplace_case::<D, $t, _>($dev, &mut rng, op, Domain::Any, &r, EXACT);
            } else {
                let (pi, qi) = (p.int(), q.int());
                let r = move |x: $t| <$t>::wrap($int(x.int(), pi, qi));
                unary_case::<D, $t, $t, _>($dev, &mut rng, op, Domain::Any, &r, EXACT);
                unary_inplace_case::<D, $t, _>($dev, &mut rng, op, Domain::Any, &r, EXACT);
            }
        }
    )*};
}

scalar_test!(
    add_scalar_matches_reference,
    add_scalar_matches_reference_cpu,
    add_scalar_matches_reference_gpu,
    |p, _| AddScalar(p),
    |x, p, _| x + p,
    |x, p, _| x + p
);
scalar_test!(
    mul_scalar_matches_reference,
    mul_scalar_matches_reference_cpu,
    mul_scalar_matches_reference_gpu,
    |p, _| MulScalar(p),
    |x, p, _| x * p,
    |x, p, _| x * p
);
scalar_test!(
    clamp_scalar_matches_reference,
    clamp_scalar_matches_reference_cpu,
    clamp_scalar_matches_reference_gpu,
    ClampScalar,
    |x, p, q| nan_min(nan_max(x, p), q),
    |x: i128, p: i128, q: i128| x.max(p).min(q)
);

// ---------------------------------------------------------------------------------------------
// Tests: binary

macro_rules! numeric_binary_test {
    ($test:ident, $cpu:ident, $gpu:ident, $op:expr, $doms:expr, $float:expr, $int:expr, $tol:expr) => {
        test_device!($test, $cpu, $gpu);
        fn $test<D: TestDevice>(dev: &D) {
            numeric_binary_test!(@ty dev, $op, $doms, $float, $int, $tol; f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64);
        }
    };
    (@ty $dev:ident, $op:expr, $doms:expr, $float:expr, $int:expr, $tol:expr; $($t:ty),*) => {$(
        let mut rng = rng_for(stringify!($op), stringify!($t));
        for _ in 0..CASES {
            if <$t as TestElem>::KIND == Kind::Float {
                binary_case::<D, $t, $t, _>($dev, &mut rng, $op, $doms, &f2::<$t>($float), $tol);
                binary_inplace_case::<D, $t, _>($dev, &mut rng, $op, $doms, &f2::<$t>($float), $tol);
            } else {
                binary_case::<D, $t, $t, _>($dev, &mut rng, $op, $doms, &i2::<$t>($int), EXACT);
                binary_inplace_case::<D, $t, _>($dev, &mut rng, $op, $doms, &i2::<$t>($int), EXACT);
            }
        }
    )*};
}

const ANY2: [Domain; 2] = [Domain::Any, Domain::Any];

numeric_binary_test!(
    add_matches_reference,
    add_matches_reference_cpu,
    add_matches_reference_gpu,
    Add,
    ANY2,
    |x, y| x + y,
    |x, y| x + y,
    EXACT
);
numeric_binary_test!(
    sub_matches_reference,
    sub_matches_reference_cpu,
    sub_matches_reference_gpu,
    Sub,
    ANY2,
    |x, y| x - y,
    |x, y| x - y,
    EXACT
);
numeric_binary_test!(
    mul_matches_reference,
    mul_matches_reference_cpu,
    mul_matches_reference_gpu,
    Mul,
    ANY2,
    |x, y| x * y,
    // Wrapping in i128 keeps the low 64 bits exact (a u64 product overflows i128).
    |x: i128, y| x.wrapping_mul(y),
    EXACT
);
numeric_binary_test!(
    div_matches_reference,
    div_matches_reference_cpu,
    div_matches_reference_gpu,
    Div,
    ANY2,
    |x, y| x / y,
    int_div,
    EXACT
);
numeric_binary_test!(
    maximum_matches_reference,
    maximum_matches_reference_cpu,
    maximum_matches_reference_gpu,
    Maximum,
    ANY2,
    nan_max,
    i128::max,
    EXACT
);
numeric_binary_test!(
    minimum_matches_reference,
    minimum_matches_reference_cpu,
    minimum_matches_reference_gpu,
    Minimum,
    ANY2,
    nan_min,
    i128::min,
    EXACT
);

test_device!(
    integer_division_by_zero_and_overflow,
    integer_division_by_zero_and_overflow_cpu,
    integer_division_by_zero_and_overflow_gpu
);
fn integer_division_by_zero_and_overflow<D: TestDevice>(dev: &D) {
    let mut rng = rng_for("div", "small ints");
    for _ in 0..CASES {
        // Small values hit zero divisors often.
        binary_case::<D, i32, i32, _>(
            dev,
            &mut rng,
            Div,
            [Domain::Small; 2],
            &i2::<i32>(int_div),
            EXACT,
        );
        binary_case::<D, u8, u8, _>(
            dev,
            &mut rng,
            Div,
            [Domain::Small; 2],
            &i2::<u8>(int_div),
            EXACT,
        );
    }
    let a = dev.upload(&Tensor::from_vec(&[3], vec![i32::MIN, 7, -7]).unwrap());
    let b = dev.upload(&Tensor::from_vec(&[3], vec![-1, 0, 2]).unwrap());
    assert_eq!(host(&(&a / &b).unwrap()), vec![i32::MIN, 0, -3]);
}

test_device!(pow_matches_f64, pow_matches_f64_cpu, pow_matches_f64_gpu);
fn pow_matches_f64<D: TestDevice>(dev: &D) {
    macro_rules! each {
        ($($t:ty),*) => {$(
            let mut rng = rng_for("pow", stringify!($t));
            for _ in 0..CASES {
                let doms = [Domain::Positive, Domain::Small];
                binary_case::<D, $t, $t, _>(dev, &mut rng, Pow, doms, &f2::<$t>(f64::powf), ulps(3).libm::<D>());
                binary_inplace_case::<D, $t, _>(dev, &mut rng, Pow, doms, &f2::<$t>(f64::powf), ulps(3).libm::<D>());
            }
        )*};
    }
    each!(f32, f64, f16, bf16);
}

macro_rules! compare_test {
    ($test:ident, $cpu:ident, $gpu:ident, $op:expr, $cmp:expr) => {
        test_device!($test, $cpu, $gpu);
        fn $test<D: TestDevice>(dev: &D) {
            compare_test!(@ty dev, $op, $cmp; f32, f64, f16, bf16, i32, i64, u8, bool, i8, i16, u16, u32, u64);
        }
    };
    (@ty $dev:ident, $op:expr, $cmp:expr; $($t:ty),*) => {$(
        let mut rng = rng_for(stringify!($op), stringify!($t));
        for _ in 0..CASES {
            // Small integer ranges make equal pairs common.
            let doms = if <$t as TestElem>::KIND == Kind::Int { [Domain::Small; 2] } else { ANY2 };
            let r = |x: $t, y: $t| -> bool {
                if <$t as TestElem>::KIND == Kind::Float {
                    $cmp(x.to_f64(), y.to_f64())
                } else {
                    $cmp(x.int() as f64, y.int() as f64)
                }
            };
            binary_case::<D, $t, bool, _>($dev, &mut rng, $op, doms, &r, EXACT);
        }
    )*};
}

compare_test!(
    eq_matches_reference,
    eq_matches_reference_cpu,
    eq_matches_reference_gpu,
    Eq,
    |x: f64, y: f64| x == y
);
compare_test!(
    ne_matches_reference,
    ne_matches_reference_cpu,
    ne_matches_reference_gpu,
    Ne,
    |x: f64, y: f64| x != y
);
compare_test!(
    lt_matches_reference,
    lt_matches_reference_cpu,
    lt_matches_reference_gpu,
    Lt,
    |x: f64, y: f64| x < y
);
compare_test!(
    le_matches_reference,
    le_matches_reference_cpu,
    le_matches_reference_gpu,
    Le,
    |x: f64, y: f64| x <= y
);
compare_test!(
    gt_matches_reference,
    gt_matches_reference_cpu,
    gt_matches_reference_gpu,
    Gt,
    |x: f64, y: f64| x > y
);
compare_test!(
    ge_matches_reference,
    ge_matches_reference_cpu,
    ge_matches_reference_gpu,
    Ge,
    |x: f64, y: f64| x >= y
);

// ---------------------------------------------------------------------------------------------
// Tests: ternary

test_device!(where_selects, where_selects_cpu, where_selects_gpu);
fn where_selects<D: TestDevice>(dev: &D) {
    macro_rules! each {
        ($($t:ty),*) => {$(
            let mut rng = rng_for("where", stringify!($t));
            for _ in 0..CASES {
                let r = |m: bool, x: $t, y: $t| if m { x } else { y };
                ternary_case::<D, bool, $t, _>(dev, &mut rng, Where, [Domain::Any; 3], &r, EXACT);
            }
        )*};
    }
    each!(f32, f64, f16, bf16, i32, i64, u8, bool, i8, i16, u16, u32, u64);
}

test_device!(
    clamp_matches_reference,
    clamp_matches_reference_cpu,
    clamp_matches_reference_gpu
);
fn clamp_matches_reference<D: TestDevice>(dev: &D) {
    macro_rules! each {
        ($($t:ty),*) => {$(
            let mut rng = rng_for("clamp", stringify!($t));
            for _ in 0..CASES {
                let doms = [Domain::Any, Domain::Small, Domain::Small];
                if <$t as TestElem>::KIND == Kind::Float {
                    let r = f3::<$t>(|x, lo, hi| nan_min(nan_max(x, lo), hi));
                    ternary_case::<D, $t, $t, _>(dev, &mut rng, Clamp, doms, &r, EXACT);
                    ternary_inplace_case::<D, $t, _>(dev, &mut rng, Clamp, doms, &r, EXACT);
                } else {
                    let r = |x: $t, lo: $t, hi: $t| <$t>::wrap(x.int().max(lo.int()).min(hi.int()));
                    ternary_case::<D, $t, $t, _>(dev, &mut rng, Clamp, doms, &r, EXACT);
                    ternary_inplace_case::<D, $t, _>(dev, &mut rng, Clamp, doms, &r, EXACT);
                }
            }
        )*};
    }
    each!(f32, f64, f16, bf16, i32, i64, u8, i8, i16, u16, u32, u64);
}

test_device!(
    fma_and_lerp_match_f64,
    fma_and_lerp_match_f64_cpu,
    fma_and_lerp_match_f64_gpu
);
fn fma_and_lerp_match_f64<D: TestDevice>(dev: &D) {
    macro_rules! each {
        ($($t:ty),*) => {$(
            let mut rng = rng_for("fma", stringify!($t));
            for _ in 0..CASES {
                let doms = [Domain::Any; 3];
                let r = f3::<$t>(f64::mul_add);
                ternary_case::<D, $t, $t, _>(dev, &mut rng, Fma, doms, &r, ulps(1));
                ternary_inplace_case::<D, $t, _>(dev, &mut rng, Fma, doms, &r, ulps(1));
                // lerp rounds b - a in the compute type: allow that rounding, scaled by |w|.
                let doms = [Domain::Small, Domain::Small, Domain::Unit];
                let r = f3::<$t>(|a, b, w| a + w * (b - a));
                let tol = tol(1, 2.0);
                ternary_case::<D, $t, $t, _>(dev, &mut rng, Lerp, doms, &r, tol);
                ternary_inplace_case::<D, $t, _>(dev, &mut rng, Lerp, doms, &r, tol);
            }
        )*};
    }
    each!(f32, f64, f16, bf16);
}

// ---------------------------------------------------------------------------------------------
// Tests: casts

/// The reference conversion of a C cast (see `typestate_tensor::ops::cast`), from exact
/// values: floats through f64 (from `f32`, `f16` and `bf16`, the `f32` value rounded once to
/// a half type, by `half`'s `from_f32`), integers through i128.
fn cast_reference<T: TestElem, U: TestElem>(x: T) -> U {
    match (T::KIND, U::KIND) {
        (Kind::Float, Kind::Float) if T::DTYPE != DType::F64 => {
            let v = x.to_f64() as f32; // exact
            match U::DTYPE {
                // `U` is the half type itself: its value converts exactly.
                DType::F16 => U::from_f64(f16::from_f32(v).to_f64()),
                DType::BF16 => U::from_f64(bf16::from_f32(v).to_f64()),
                _ => U::from_f64(f64::from(v)),
            }
        }
        (Kind::Float, _) => U::from_f64(x.to_f64()),
        (_, Kind::Int) | (_, Kind::Bool) => U::wrap(x.int()),
        (_, Kind::Float) => {
            if U::DTYPE == DType::F32 {
                // One rounding, straight from the integer.
                U::from_f64((x.int() as f32) as f64)
            } else {
                U::from_f64(x.int() as f64)
            }
        }
    }
}

test_device!(
    cast_between_every_pair_of_types,
    cast_between_every_pair_of_types_cpu,
    cast_between_every_pair_of_types_gpu
);
fn cast_between_every_pair_of_types<D: TestDevice>(dev: &D) {
    macro_rules! to {
        ($from:ty => $($to:ty),*) => {$(
            let mut rng = rng_for(stringify!($from), stringify!($to));
            for _ in 0..8 {
                let op = Cast::<$to>::new();
                unary_case::<D, $from, $to, _>(dev, &mut rng, op, Domain::Any, &cast_reference::<$from, $to>, EXACT);
            }
            // The tensor method too.
            let t = Tensor::from_vec(&[4], (0..4).map(|_| <$from>::random(&mut rng, Domain::Any)).collect()).unwrap();
            let want: Vec<$to> = t.to_vec().into_iter().map(cast_reference::<$from, $to>).collect();
            let t = dev.upload(&t);
            assert_all_close("cast method", &host(&t.cast::<$to>().unwrap()), &want, EXACT);
        )*};
    }
    macro_rules! from {
        ($($from:ty),*) => {$(
            to!($from => f32, f64, f16, bf16, i32, i64, u8, bool, i8, i16, u16, u32, u64);
        )*};
    }
    from!(f32, f64, f16, bf16, i32, i64, u8, bool, i8, i16, u16, u32, u64);
}

test_device!(
    float_to_int_casts_saturate_and_map_nan_to_zero,
    float_to_int_casts_saturate_and_map_nan_to_zero_cpu,
    float_to_int_casts_saturate_and_map_nan_to_zero_gpu
);
fn float_to_int_casts_saturate_and_map_nan_to_zero<D: TestDevice>(dev: &D) {
    let t =
        dev.upload(&Tensor::from_vec(&[5], vec![1e10f32, -1e10, f32::NAN, -2.7, 255.9]).unwrap());
    assert_eq!(
        host(&t.cast::<i32>().unwrap()),
        vec![i32::MAX, i32::MIN, 0, -2, 255]
    );
    assert_eq!(host(&t.cast::<u8>().unwrap()), vec![255, 0, 0, 0, 255]);
    assert_eq!(
        host(&t.cast::<bool>().unwrap()),
        vec![true, true, true, true, true]
    );
}

// ---------------------------------------------------------------------------------------------
// Tests: fill, copy, reductions (the reductions CPU-only)

test_device!(
    fill_and_copy_from_write_exactly_the_view,
    fill_and_copy_from_write_exactly_the_view_cpu,
    fill_and_copy_from_write_exactly_the_view_gpu
);
fn fill_and_copy_from_write_exactly_the_view<D: TestDevice>(dev: &D) {
    let mut rng = rng_for("fill", "copy");
    for _ in 0..CASES * 2 {
        let shape = random_shape(&mut rng);
        let r = Recipe::random(&mut rng, &shape);
        let before: Vec<i64> = storage(&mut rng, &r, Domain::Any);
        let mut dst = upload_storage(dev, &before);
        let v = i64::random(&mut rng, Domain::Any);
        r.view_mut(&mut dst).fill_(v).unwrap();
        check_written(
            "fill_",
            &r,
            &before,
            &host(&dst),
            &ArrayD::from_elem(IxDyn(&shape), v),
            EXACT,
        );

        let src = Input::<i64, D>::new(dev, &mut rng, &shape, Domain::Any, false);
        let mut dst = upload_storage(dev, &before);
        r.view_mut(&mut dst).copy_from(&src.ours()).unwrap();
        check_written(
            "copy_from",
            &r,
            &before,
            &host(&dst),
            &src.nd(&shape),
            EXACT,
        );
    }
}

/// CPU-only: the deprecated `sum_f64`, and `asum` and `sumsq`, are host reductions in `f64`
/// (the tensor reductions on both engines are tested in `tests/it/reduce.rs`).
#[test]
#[allow(deprecated)]
fn reductions_match_f64_sums() {
    let mut rng = rng_for("reduce", "all");
    for _ in 0..CASES * 2 {
        let shape = random_shape(&mut rng);
        let a = Input::<f32, Cpu>::new(&Cpu, &mut rng, &shape, Domain::Small, true);
        let view = a.ours();
        let nd = a.nd(&shape);
        let (s, abs, sq) = nd.iter().fold((0.0, 0.0, 0.0), |(s, a, q), &x| {
            let x = x as f64;
            (s + x, a + x.abs(), q + x * x)
        });
        let tol = 1e-12 * (1.0 + sq);
        assert!(
            (view.cast::<f64>().unwrap().sum().unwrap().item().unwrap() - s).abs() <= tol,
            "sum {} vs {s}",
            view.cast::<f64>().unwrap().sum().unwrap().item().unwrap()
        );
        assert!((view.asum() - abs).abs() <= tol);
        assert!((view.sumsq() - sq).abs() <= tol);

        let b = Input::<i64, Cpu>::new(&Cpu, &mut rng, &shape, Domain::Small, true);
        let want: i128 = b.nd(&shape).iter().map(|&x| x as i128).sum();
        assert_eq!(
            b.ours()
                .cast::<f64>()
                .unwrap()
                .sum()
                .unwrap()
                .item()
                .unwrap(),
            want as f64
        );
        let want: i128 = b.nd(&shape).iter().map(|&x| (x as i128).abs()).sum();
        assert_eq!(b.ours().asum(), want as f64);
        let want: i128 = b
            .nd(&shape)
            .iter()
            .map(|&x| (x as i128) * (x as i128))
            .sum();
        assert_eq!(b.ours().sumsq(), want as f64);
    }
    // Broadcast views sum every repeated element.
    let t = Tensor::from_vec(&[3], vec![1u8, 2, 250]).unwrap();
    assert_eq!(
        t.broadcast_to(&[4, 3])
            .unwrap()
            .cast::<f64>()
            .unwrap()
            .sum()
            .unwrap()
            .item()
            .unwrap(),
        4.0 * 253.0
    );
}

// ---------------------------------------------------------------------------------------------
// Tests: large and transposed operands (the tiled path), and the public methods

test_device!(
    tiled_transposed_inputs_match_ndarray,
    tiled_transposed_inputs_match_ndarray_cpu,
    tiled_transposed_inputs_match_ndarray_gpu
);
fn tiled_transposed_inputs_match_ndarray<D: TestDevice>(dev: &D) {
    let mut rng = rng_for("tiles", "f32");
    for &(r, c) in &[(70usize, 45usize), (129, 257), (1, 300), (300, 2)] {
        let a: Vec<f32> = (0..r * c)
            .map(|_| f32::random(&mut rng, Domain::Small))
            .collect();
        let b: Vec<f32> = (0..r * c)
            .map(|_| f32::random(&mut rng, Domain::Small))
            .collect();
        let ta = dev.upload(&Tensor::from_vec(&[c, r], a.clone()).unwrap());
        let tb = dev.upload(&Tensor::from_vec(&[r, c], b.clone()).unwrap());
        let na = ndarray::Array2::from_shape_vec((c, r), a).unwrap();
        let nb = ndarray::Array2::from_shape_vec((r, c), b).unwrap();
        let want = &na.t() + &nb;
        let got = (&ta.t() + &tb).unwrap();
        assert_eq!(host(&got), want.iter().copied().collect::<Vec<_>>());
        // In place and into a transposed output (poisoned: NaN is no sum of finite values).
        let mut acc = tb.try_clone().unwrap();
        acc.add_(&ta.t()).unwrap();
        assert_eq!(host(&acc), want.iter().copied().collect::<Vec<_>>());
        let mut out = Tensor::<f32, D>::full_on(&[c, r], f32::NAN, dev).unwrap();
        ta.t().add_into(&tb, &mut out.view_mut().t()).unwrap();
        assert_eq!(host(&out), want.t().iter().copied().collect::<Vec<_>>());
    }
}

/// [`host`] as a method, for the chains below.
trait ToHost<T, D> {
    fn to_host(&self) -> Vec<T>;
}

impl<T: Element, D: TestDevice, X: AsView<T, D>> ToHost<T, D> for X {
    fn to_host(&self) -> Vec<T> {
        host(self)
    }
}

test_device!(
    named_methods_run_their_ops,
    named_methods_run_their_ops_cpu,
    named_methods_run_their_ops_gpu
);
fn named_methods_run_their_ops<D: TestDevice>(dev: &D) {
    let mut rng = rng_for("methods", "f32");
    let data: Vec<f32> = (0..12)
        .map(|_| f32::random(&mut rng, Domain::Positive))
        .collect();
    let a = dev.upload(&Tensor::from_vec(&[3, 4], data).unwrap());
    let b = (&a.t().contiguous().unwrap().t() + &a).unwrap(); // 2a, non-trivial values
    let v = a.view();
    let same = |x: Tensor<f32, D>, y: Tensor<f32, D>| assert_eq!(x.to_host(), y.to_host());
    let av = &a.view();
    same(a.neg().unwrap(), map(Neg, av).unwrap());
    same(v.abs().unwrap(), map(Abs, av).unwrap());
    same(a.sign().unwrap(), map(Sign, av).unwrap());
    same(a.square().unwrap(), map(Square, av).unwrap());
    same(a.relu().unwrap(), map(Relu, av).unwrap());
    same(a.exp().unwrap(), map(Exp, av).unwrap());
    same(a.log().unwrap(), map(Log, av).unwrap());
    same(a.sqrt().unwrap(), map(Sqrt, av).unwrap());
    same(a.rsqrt().unwrap(), map(Rsqrt, av).unwrap());
    same(a.sin().unwrap(), map(Sin, av).unwrap());
    same(a.cos().unwrap(), map(Cos, av).unwrap());
    same(a.tanh().unwrap(), map(Tanh, av).unwrap());
    same(a.sigmoid().unwrap(), map(Sigmoid, av).unwrap());
    same(a.gelu().unwrap(), map(Gelu, av).unwrap());
    same(a.silu().unwrap(), map(Silu, av).unwrap());
    same(a.recip().unwrap(), map(Recip, av).unwrap());
    same(a.floor().unwrap(), map(Floor, av).unwrap());
    same(a.ceil().unwrap(), map(Ceil, av).unwrap());
    same(a.round().unwrap(), map(Round, av).unwrap());
    same(a.add_scalar(1.5).unwrap(), map(AddScalar(1.5), av).unwrap());
    same(
        a.mul_scalar(-2.0).unwrap(),
        map(MulScalar(-2.0), av).unwrap(),
    );
    same(
        a.clamp_scalar(1.0, 2.0).unwrap(),
        map(ClampScalar(1.0, 2.0), av).unwrap(),
    );
    let bv = &b.view();
    same(a.add(&b).unwrap(), zip(Add, av, bv).unwrap());
    same(a.sub(&b).unwrap(), zip(Sub, av, bv).unwrap());
    same(a.mul(&b).unwrap(), zip(Mul, av, bv).unwrap());
    same(a.div(&b).unwrap(), zip(Div, av, bv).unwrap());
    same(a.maximum(&b).unwrap(), zip(Maximum, av, bv).unwrap());
    same(a.minimum(&b).unwrap(), zip(Minimum, av, bv).unwrap());
    same(a.pow(&b).unwrap(), zip(Pow, av, bv).unwrap());
    same((&a + &b).unwrap(), zip(Add, av, bv).unwrap());
    same((&a - &v).unwrap(), zip(Sub, av, av).unwrap());
    same((&v * &b).unwrap(), zip(Mul, av, bv).unwrap());
    #[allow(clippy::eq_op)] // `v / v` on purpose: the operator on two views
    same((&v / &v).unwrap(), zip(Div, av, av).unwrap());
    same((-&a).unwrap(), map(Neg, av).unwrap());
    same((-&v).unwrap(), map(Neg, av).unwrap());
    let cmp = |x: Tensor<bool, D>, y: Tensor<bool, D>| assert_eq!(x.to_host(), y.to_host());
    cmp(a.eq(&a).unwrap(), zip(Eq, av, av).unwrap());
    cmp(a.ne(&b).unwrap(), zip(Ne, av, bv).unwrap());
    cmp(a.lt(&b).unwrap(), zip(Lt, av, bv).unwrap());
    cmp(a.le(&b).unwrap(), zip(Le, av, bv).unwrap());
    cmp(a.gt(&b).unwrap(), zip(Gt, av, bv).unwrap());
    cmp(a.ge(&b).unwrap(), zip(Ge, av, bv).unwrap());
    let mask = a.gt(&dev.upload(&Tensor::scalar(3.0f32))).unwrap();
    same(
        Tensor::where_cond(&mask, &a, &b).unwrap(),
        zip3(Where, &mask.view(), av, bv).unwrap(),
    );
    same(a.clamp(&b, &b).unwrap(), zip3(Clamp, av, bv, bv).unwrap());
    same(a.fma(&b, &a).unwrap(), zip3(Fma, av, bv, av).unwrap());
    same(a.lerp(&b, &a).unwrap(), zip3(Lerp, av, bv, av).unwrap());

    // In place and into forms agree with out of place.
    macro_rules! inplace {
        ($($m:ident / $into:ident / $out:ident),*) => {$(
            let mut x = a.try_clone().unwrap();
            x.$m().unwrap();
            let mut y = Tensor::<f32, D>::zeros_on(&[3, 4], dev).unwrap();
            a.$into(&mut y).unwrap();
            assert_eq!(x.to_host(), a.$out().unwrap().to_host(), stringify!($m));
            assert_eq!(y.to_host(), x.to_host(), stringify!($into));
        )*};
    }
    inplace!(
        neg_ / neg_into / neg,
        abs_ / abs_into / abs,
        sign_ / sign_into / sign,
        square_ / square_into / square,
        relu_ / relu_into / relu,
        exp_ / exp_into / exp,
        log_ / log_into / log,
        sqrt_ / sqrt_into / sqrt,
        rsqrt_ / rsqrt_into / rsqrt,
        sin_ / sin_into / sin,
        cos_ / cos_into / cos,
        tanh_ / tanh_into / tanh,
        sigmoid_ / sigmoid_into / sigmoid,
        gelu_ / gelu_into / gelu,
        silu_ / silu_into / silu,
        recip_ / recip_into / recip,
        floor_ / floor_into / floor,
        ceil_ / ceil_into / ceil,
        round_ / round_into / round
    );
    macro_rules! inplace2 {
        ($($m:ident / $into:ident / $out:ident),*) => {$(
            let mut x = a.try_clone().unwrap();
            x.$m(&b).unwrap();
            let mut y = Tensor::<f32, D>::zeros_on(&[3, 4], dev).unwrap();
            a.$into(&b, &mut y).unwrap();
            assert_eq!(x.to_host(), a.$out(&b).unwrap().to_host(), stringify!($m));
            assert_eq!(y.to_host(), x.to_host(), stringify!($into));
        )*};
    }
    inplace2!(
        add_ / add_into / add,
        sub_ / sub_into / sub,
        mul_ / mul_into / mul,
        div_ / div_into / div,
        maximum_ / maximum_into / maximum,
        minimum_ / minimum_into / minimum,
        pow_ / pow_into / pow
    );
    let mut x = a.try_clone().unwrap();
    x.add_scalar_(2.0).unwrap();
    x.mul_scalar_(3.0).unwrap();
    x.clamp_scalar_(4.0, 9.0).unwrap();
    let mut y = Tensor::<f32, D>::zeros_on(&[3, 4], dev).unwrap();
    a.add_scalar_into(2.0, &mut y).unwrap();
    assert_eq!(y.to_host(), a.add_scalar(2.0).unwrap().to_host());
    let want = a
        .add_scalar(2.0)
        .unwrap()
        .mul_scalar(3.0)
        .unwrap()
        .clamp_scalar(4.0, 9.0)
        .unwrap();
    assert_eq!(x.to_host(), want.to_host());
    let mut z = Tensor::<f32, D>::zeros_on(&[3, 4], dev).unwrap();
    a.mul_scalar_into(3.0, &mut z).unwrap();
    a.clamp_scalar_into(1.0, 2.0, &mut y).unwrap();
    assert_eq!(z.to_host(), a.mul_scalar(3.0).unwrap().to_host());
    assert_eq!(y.to_host(), a.clamp_scalar(1.0, 2.0).unwrap().to_host());
    for (m, want) in [
        ("clamp", a.clamp(&b, &b.add_scalar(1.0).unwrap()).unwrap()),
        ("fma", a.fma(&b, &a).unwrap()),
        ("lerp", a.lerp(&b, &a.mul_scalar(0.1).unwrap()).unwrap()),
    ] {
        let mut x = a.try_clone().unwrap();
        let mut y = Tensor::<f32, D>::zeros_on(&[3, 4], dev).unwrap();
        match m {
            "clamp" => {
                let hi = b.add_scalar(1.0).unwrap();
                x.clamp_(&b, &hi).unwrap();
                a.clamp_into(&b, &hi, &mut y).unwrap();
            }
            "fma" => {
                x.fma_(&b, &a).unwrap();
                a.fma_into(&b, &a, &mut y).unwrap();
            }
            _ => {
                let w = a.mul_scalar(0.1).unwrap();
                x.lerp_(&b, &w).unwrap();
                a.lerp_into(&b, &w, &mut y).unwrap();
            }
        }
        assert_eq!(x.to_host(), want.to_host(), "{m}_");
        assert_eq!(y.to_host(), want.to_host(), "{m}_into");
    }
    let mut y = Tensor::<f32, D>::zeros_on(&[3, 4], dev).unwrap();
    Tensor::where_cond_into(&mask, &a, &b, &mut y).unwrap();
    assert_eq!(
        y.to_host(),
        Tensor::where_cond(&mask, &a, &b).unwrap().to_host()
    );
    let mut m = Tensor::<bool, D>::zeros_on(&[3, 4], dev).unwrap();
    a.view().eq_into(&b, &mut m).unwrap();
    assert_eq!(m.to_host(), a.eq(&b).unwrap().to_host());
    a.lt_into(&b, &mut m.view_mut()).unwrap();
    assert_eq!(m.to_host(), a.lt(&b).unwrap().to_host());
}

// ---------------------------------------------------------------------------------------------
// Tests: errors

test_device!(
    broadcast_mismatch_names_op_and_shapes,
    broadcast_mismatch_names_op_and_shapes_cpu,
    broadcast_mismatch_names_op_and_shapes_gpu
);
fn broadcast_mismatch_names_op_and_shapes<D: TestDevice>(dev: &D) {
    let a = Tensor::<f32, D>::zeros_on(&[2, 3], dev).unwrap();
    let b = Tensor::<f32, D>::zeros_on(&[4], dev).unwrap();
    let err = (&a + &b).unwrap_err();
    assert!(matches!(
        &err,
        Error::Layout(LayoutError::BroadcastMismatch { op: "add", lhs, rhs })
            if lhs == &[2, 3] && rhs == &[4]
    ));
    let msg = err.to_string();
    assert!(
        msg.contains("add") && msg.contains("[2, 3]") && msg.contains("[4]"),
        "{msg}"
    );
    let err = a.lt(&b).unwrap_err().to_string();
    assert!(err.starts_with("lt:"), "{err}");
    let c = Tensor::<f32, D>::zeros_on(&[5, 1], dev).unwrap();
    let err = a.fma(&a, &c).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::BroadcastMismatch { op: "fma", .. })
    ));
    // In place: the other operand must broadcast to the destination's shape.
    let mut d = Tensor::<f32, D>::zeros_on(&[3], dev).unwrap();
    let err = d.add_(&a).unwrap_err();
    assert!(
        matches!(&err, Error::Layout(LayoutError::ShapeMismatch { op: "add", expected, got })
            if expected == &[3] && got == &[2, 3]),
        "{err}"
    );
}

test_device!(
    into_needs_the_broadcast_shape,
    into_needs_the_broadcast_shape_cpu,
    into_needs_the_broadcast_shape_gpu
);
fn into_needs_the_broadcast_shape<D: TestDevice>(dev: &D) {
    let a = dev.upload(&Tensor::<i32>::arange(6).unwrap());
    let mut out = Tensor::<i32, D>::zeros_on(&[5], dev).unwrap();
    let err = a.neg_into(&mut out).unwrap_err();
    assert!(
        matches!(&err, Error::Layout(LayoutError::BroadcastMismatch { op: "neg", lhs, rhs })
            if lhs == &[5] && rhs == &[6]),
        "{err}"
    );
    // Inputs broadcasting to more than the output is a shape mismatch.
    let wide = Tensor::<i32, D>::zeros_on(&[2, 6], dev).unwrap();
    let mut narrow = Tensor::<i32, D>::zeros_on(&[6], dev).unwrap();
    let err = a.add_into(&wide, &mut narrow).unwrap_err();
    assert!(
        matches!(&err, Error::Layout(LayoutError::ShapeMismatch { op: "add", expected, got })
            if expected == &[6] && got == &[2, 6]),
        "{err}"
    );
    // A larger output the input broadcasts to is fine (NumPy's out=).
    let mut big = Tensor::<i32, D>::zeros_on(&[2, 6], dev).unwrap();
    a.neg_into(&mut big).unwrap();
    assert_eq!(host(&big), [0, -1, -2, -3, -4, -5].repeat(2));
}

/// CPU-only: builds a writable view over a host slice (`TensorViewMut::new`).
#[test]
fn writing_through_a_broadcast_view_is_an_error() {
    let mut data = [1.0f32, 2.0, 3.0];
    let layout = Layout::contiguous(&[3])
        .unwrap()
        .broadcast_to(&[2, 3])
        .unwrap();
    let err = TensorViewMut::new(&mut data[..], layout, &Cpu).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::OverlappingOutput { .. })
    ));
    let mut t = Tensor::from_vec(&[1, 3], vec![1.0f32, 2.0, 3.0]).unwrap();
    let err = t.view_mut().broadcast_to(&[4, 3]).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::OverlappingOutput { .. })
    ));
    // Broadcasting to the same shape is no broadcast, and stays writable.
    let mut v = t.view_mut().broadcast_to(&[1, 3]).unwrap();
    v.fill_(7.0).unwrap();
    assert_eq!(t.to_vec(), vec![7.0; 3]);
    // set_layout refuses an overlapping layout and leaves the tensor unchanged.
    let bl = t.layout().broadcast_to(&[2, 3]).unwrap();
    assert!(t.set_layout(bl).is_err());
    assert_eq!(t.shape(), &[1, 3]);
}

/// CPU-only: builds a view over a host slice (`TensorView::new`) and uses host constructors.
#[test]
fn out_of_range_views_and_overflowing_shapes_are_errors() {
    let data = [0u8; 10];
    let too_far = Layout::new(&[3, 4], &[4, 1], 0).unwrap();
    assert!(matches!(
        TensorView::new(&data[..], too_far, &Cpu),
        Err(Error::Layout(LayoutError::OutOfStorage {
            storage_len: 10,
            ..
        }))
    ));
    let t = Tensor::<u8>::zeros(&[2, 3]).unwrap();
    assert!(matches!(
        t.narrow(1, 2, 2),
        Err(Error::Layout(LayoutError::RangeOutOfBounds {
            op: "narrow",
            ..
        }))
    ));
    assert!(matches!(
        t.permute(&[0, 0]),
        Err(Error::Layout(LayoutError::InvalidPermutation { .. }))
    ));
    assert!(matches!(
        Tensor::<f32>::zeros(&[usize::MAX / 2, 3]),
        Err(Error::Layout(LayoutError::SizeOverflow { .. }))
    ));
    let big = Tensor::<f32>::zeros(&[1, 1]).unwrap();
    assert!(matches!(
        big.broadcast_to(&[usize::MAX / 2, 4]),
        Err(Error::Layout(LayoutError::SizeOverflow { .. }))
    ));
    let err = Tensor::from_vec(&[2, 2], vec![1i32, 2, 3]).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::LengthMismatch {
            op: "from_vec",
            expected: 4,
            got: 3,
            ..
        })
    ));
}
