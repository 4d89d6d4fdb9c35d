//! The integer, bitwise, logical and float-predicate ops of issue 26 on every engine, against
//! independent references written here: exact `i128` arithmetic for integers (wrapped to the
//! type at the end), `f64` for floats (every value of the float element types is an `f64`, and
//! `fmod`, `copysign` and the sum of two values are exact there), Python's / C's definitions
//! for the special cases. Never the crate's own CPU closures.
//!
//! Each op runs on random seeded data through the harness's random strided, permuted, flipped,
//! offset and broadcast views, out of place, into poisoned strided outputs and in place; then
//! on every pair of the type's special values (±0, ±inf, NaN, subnormals, MIN/MAX, shifts by
//! 0, width - 1, width, width + 5 and negative amounts, division by zero), contiguous and
//! through a flipped view.
//!
//! Tolerances: every op here is exact on both engines (0 ulps). Integer ops are exact by
//! construction; `fmod` and `copysign` are exact in IEEE arithmetic; `remainder` adds two
//! values of the type once in the compute type and `floor_divide` returns an integer value,
//! both rounded once, as the `f64` reference rounded to the type; `nextafter` returns a value
//! of the type. Float results are compared bit for bit on the sign of zero too (every NaN
//! equal to every NaN).

use crate::common::device::{host, test_device, TestDevice};
use crate::harness::*;
use half::{bf16, f16};
use typestate_tensor::element::{DivRem, Element, FloatElement, Integer, Numeric};
use typestate_tensor::ops::table::*;
use typestate_tensor::ops::{BinaryOp, UnaryOp};
use typestate_tensor::tensor::ops::{map, zip};
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Cpu;

// ---------------------------------------------------------------------------------------------
// References

fn bits_of<T: Element>() -> i128 {
    8 * std::mem::size_of::<T>() as i128
}

/// Python's `//` on exact integers (0 when `y == 0`, this crate's choice).
fn floor_div_ref(x: i128, y: i128) -> i128 {
    if y == 0 {
        return 0;
    }
    let q = x.div_euclid(y);
    // div_euclid rounds toward -inf for y > 0 and toward +inf for y < 0 (inexact cases).
    if y < 0 && x.rem_euclid(y) != 0 {
        q - 1
    } else {
        q
    }
}

fn remainder_ref(x: i128, y: i128) -> i128 {
    if y == 0 {
        0
    } else {
        x - y * floor_div_ref(x, y)
    }
}

fn fmod_ref(x: i128, y: i128) -> i128 {
    if y == 0 {
        0
    } else {
        x % y // i128's `%` truncates, like C
    }
}

fn gcd_ref(x: i128, y: i128) -> i128 {
    let (mut a, mut b) = (x.abs(), y.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Integer references that need the type: shifts (its width) and lcm (its wrapping abs).
fn shl_ref<T: TestElem>(x: T, y: T) -> T {
    let (a, s) = (x.int(), y.int());
    if s < 0 || s >= bits_of::<T>() {
        T::wrap(0)
    } else {
        T::wrap(a << s)
    }
}

fn shr_ref<T: TestElem>(x: T, y: T) -> T {
    let (a, s) = (x.int(), y.int());
    if s < 0 || s >= bits_of::<T>() {
        T::wrap(if a < 0 { -1 } else { 0 })
    } else {
        T::wrap(a >> s)
    }
}

fn lcm_ref<T: TestElem>(x: T, y: T) -> T {
    let g = gcd_ref(x.int(), y.int());
    if g == 0 {
        return T::wrap(0);
    }
    // C's arithmetic (PyTorch's `calc_lcm`): the product in the compute type, at least 32
    // bits wide (integer promotion), then `abs` there, then truncated to the element type.
    let m = (x.int().abs() / g).wrapping_mul(y.int().abs());
    let width = bits_of::<T>().max(32);
    let signed = T::wrap(-1).int() < 0;
    if !signed {
        return T::wrap(m);
    }
    let modulus = 1i128 << width;
    let mut in_width = m.rem_euclid(modulus);
    if in_width >= modulus / 2 {
        in_width -= modulus;
    }
    T::wrap(in_width.abs())
}

/// Python's float `//` (PyTorch's `floor_divide`): NaN for an infinite dividend, -1 or ±0
/// for a finite one over an infinite divisor, `x / y` for a zero divisor.
fn py_floor_div(x: f64, y: f64) -> f64 {
    if y == 0.0 {
        return x / y;
    }
    if x.is_nan() || y.is_nan() || x.is_infinite() {
        return f64::NAN;
    }
    if y.is_infinite() {
        return if x != 0.0 && (x < 0.0) != (y < 0.0) {
            -1.0
        } else {
            0f64.copysign(x / y)
        };
    }
    // `x / y` rounds (1.0 // 0.001 is 999, not floor(1000.0)): the quotient from the exact
    // remainder instead, `x = n * y + m` with `n` an integer.
    let m = x % y;
    let n = ((x - m) / y).round();
    let q = if m != 0.0 && (m < 0.0) != (y < 0.0) {
        n - 1.0
    } else {
        n
    };
    if q == 0.0 {
        0f64.copysign(x / y)
    } else {
        q
    }
}

/// Python's float `%` as PyTorch computes it: `fmod`, plus `y` when nonzero and of the other
/// sign (in `f64`, exact for the values of every float element type).
fn py_remainder(x: f64, y: f64) -> f64 {
    let m = x % y;
    if m != 0.0 && (m < 0.0) != (y < 0.0) {
        m + y
    } else {
        m
    }
}

/// C's `nextafter` on the bits of the element type, from its `f64` value.
fn next_after_ref<T: TestElem>(x: T, y: T) -> T {
    let (a, b) = (x.to_f64(), y.to_f64());
    if a.is_nan() || b.is_nan() {
        return T::from_f64(f64::NAN);
    }
    if a == b {
        return y;
    }
    // The bits as a sign-magnitude integer of the type's width.
    let (bits, sign): (u64, u64) = match T::DTYPE.name() {
        "f64" => (a.to_bits(), 1 << 63),
        "f32" => ((a as f32).to_bits().into(), 1 << 31),
        "f16" => (f16::from_f64(a).to_bits().into(), 1 << 15),
        "bf16" => (bf16::from_f64(a).to_bits().into(), 1 << 15),
        other => unreachable!("{other}"),
    };
    let r = if a == 0.0 {
        (if b < 0.0 { sign } else { 0 }) | 1
    } else if (b > a) == (a > 0.0) {
        bits + 1
    } else {
        bits - 1
    };
    let v = match T::DTYPE.name() {
        "f64" => f64::from_bits(r),
        "f32" => f32::from_bits(r as u32).into(),
        "f16" => f16::from_bits(r as u16).to_f64(),
        _ => bf16::from_bits(r as u16).to_f64(),
    };
    T::from_f64(v)
}

fn truth<T: Element>(x: T) -> bool {
    let v = x.to_f64();
    v != 0.0 || v.is_nan()
}

/// Equal, with `+0 != -0` for floats and every NaN equal.
fn same<T: Element>(got: T, want: T) -> bool {
    let (g, w) = (got.to_f64(), want.to_f64());
    (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative())
}

fn assert_same<T: Element>(what: &str, inputs: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            same(g, w),
            "{what} ({}): element {i} of {inputs}: got {g:?}, want {w:?}",
            T::NAME
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Special values

/// The special values of a type: zeros, ones, extremes, and for floats infinities, NaN,
/// subnormals and non-integers.
trait Specials: TestElem {
    fn specials() -> Vec<Self>;
}

macro_rules! int_specials {
    ($($t:ty),*) => {$(
        impl Specials for $t {
            fn specials() -> Vec<Self> {
                let w = <$t>::BITS as i128;
                let mut v: Vec<i128> = vec![
                    0, 1, 2, 3, 7, -1, -2, -7, w - 1, w, w + 5, -w,
                    <$t>::MIN as i128, <$t>::MAX as i128, <$t>::MIN as i128 + 1,
                    <$t>::MAX as i128 - 1, 12, 18,
                ];
                v.retain(|&x| x >= <$t>::MIN as i128 && x <= <$t>::MAX as i128);
                v.into_iter().map(|x| x as $t).collect()
            }
        }
    )*};
}
int_specials!(i32, i64, u8, i8, i16, u16, u32, u64);

macro_rules! float_specials {
    ($($t:ty),*) => {$(
        impl Specials for $t {
            fn specials() -> Vec<Self> {
                let tiny = <$t as num_traits::Float>::min_positive_value()
                    * <$t as num_traits::Float>::epsilon();
                let normal = <$t as num_traits::Float>::min_positive_value();
                let max = <$t as num_traits::Float>::max_value();
                let mut v: Vec<$t> = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.75, -3.0, 7.0, 1e-3]
                    .iter()
                    .map(|&x| <$t as Element>::from_f64(x))
                    .collect();
                v.extend([
                    tiny, -tiny, normal, -normal, max, -max,
                    <$t as num_traits::Float>::infinity(),
                    <$t as num_traits::Float>::neg_infinity(),
                    <$t as num_traits::Float>::nan(),
                    -<$t as num_traits::Float>::nan(),
                ]);
                v
            }
        }
    )*};
}
float_specials!(f32, f64, f16, bf16);

/// The special pairs: both inputs on the host, then on the device.
type Pairs<T, D> = (Vec<T>, Vec<T>, Tensor<T, D>, Tensor<T, D>);

/// Every pair of special values as two 1-D tensors on the device.
fn special_pairs<T: Specials, D: TestDevice>(dev: &D) -> Pairs<T, D> {
    let s = T::specials();
    let xs: Vec<T> = s.iter().flat_map(|&x| s.iter().map(move |_| x)).collect();
    let ys: Vec<T> = s.iter().flat_map(|_| s.iter().copied()).collect();
    let n = xs.len();
    let a = dev.upload(&Tensor::<T, Cpu>::from_vec(&[n], xs.clone()).unwrap());
    let b = dev.upload(&Tensor::<T, Cpu>::from_vec(&[n], ys.clone()).unwrap());
    (xs, ys, a, b)
}

/// `op` on every pair of special values, contiguous and through flipped views, against
/// `reference`.
fn binary_specials<D: TestDevice, T: Specials, U: TestElem, O: BinaryOp<T, Output = U>>(
    dev: &D,
    op: O,
    reference: impl Fn(T, T) -> U,
) {
    let (xs, ys, a, b) = special_pairs::<T, D>(dev);
    let want: Vec<U> = xs.iter().zip(&ys).map(|(&x, &y)| reference(x, y)).collect();
    let got = host(&zip(op, &a.view(), &b.view()).unwrap());
    assert_same(O::NAME, "the special pairs", &got, &want);
    let flipped = zip(op, &a.flip(0).unwrap(), &b.flip(0).unwrap()).unwrap();
    let mut want_rev = want.clone();
    want_rev.reverse();
    assert_same(
        O::NAME,
        "the flipped special pairs",
        &host(&flipped),
        &want_rev,
    );
}

fn unary_specials<D: TestDevice, T: Specials, U: TestElem, O: UnaryOp<T, Output = U>>(
    dev: &D,
    op: O,
    reference: impl Fn(T) -> U,
) {
    let xs = T::specials();
    let a = dev.upload(&Tensor::<T, Cpu>::from_vec(&[xs.len()], xs.clone()).unwrap());
    let want: Vec<U> = xs.iter().map(|&x| reference(x)).collect();
    assert_same(
        O::NAME,
        "the specials",
        &host(&map(op, &a.view()).unwrap()),
        &want,
    );
    let mut want_rev = want.clone();
    want_rev.reverse();
    let got = host(&map(op, &a.flip(0).unwrap()).unwrap());
    assert_same(O::NAME, "the flipped specials", &got, &want_rev);
}

// ---------------------------------------------------------------------------------------------
// Random views: every form, through the harness

fn binary_random<D: TestDevice, T: TestElem, O: BinaryOp<T, Output = T>>(
    dev: &D,
    op: O,
    doms: [Domain; 2],
    reference: impl Fn(T, T) -> T,
) {
    let mut rng = rng_for(O::NAME, T::NAME);
    for _ in 0..CASES {
        binary_case::<D, T, T, _>(dev, &mut rng, op, doms, &reference, EXACT);
        binary_inplace_case::<D, T, _>(dev, &mut rng, op, doms, &reference, EXACT);
    }
}

fn binary_random_bool<D: TestDevice, T: TestElem, O: BinaryOp<T, Output = bool>>(
    dev: &D,
    op: O,
    reference: impl Fn(T, T) -> bool,
) {
    let mut rng = rng_for(O::NAME, T::NAME);
    for _ in 0..CASES / 2 {
        binary_case::<D, T, bool, _>(dev, &mut rng, op, [Domain::Any; 2], &reference, EXACT);
        binary_case::<D, T, bool, _>(dev, &mut rng, op, [Domain::Small; 2], &reference, EXACT);
    }
}

fn unary_random_bool<D: TestDevice, T: TestElem, O: UnaryOp<T, Output = bool>>(
    dev: &D,
    op: O,
    reference: impl Fn(T) -> bool,
) {
    let mut rng = rng_for(O::NAME, T::NAME);
    for _ in 0..CASES / 2 {
        unary_case::<D, T, bool, _>(dev, &mut rng, op, Domain::Any, &reference, EXACT);
    }
}

// ---------------------------------------------------------------------------------------------
// Tests: division and remainders

macro_rules! for_ints {
    ($f:ident, $dev:expr) => {
        $f::<_, i32>($dev);
        $f::<_, i64>($dev);
        $f::<_, u8>($dev);
        $f::<_, i8>($dev);
        $f::<_, i16>($dev);
        $f::<_, u16>($dev);
        $f::<_, u32>($dev);
        $f::<_, u64>($dev);
    };
}
macro_rules! for_floats {
    ($f:ident, $dev:expr) => {
        $f::<_, f32>($dev);
        $f::<_, f64>($dev);
        $f::<_, f16>($dev);
        $f::<_, bf16>($dev);
    };
}

fn int_division<D: TestDevice, T: Specials + Integer>(dev: &D) {
    binary_random(
        dev,
        FloorDivide,
        [Domain::Any, Domain::Small],
        i2::<T>(floor_div_ref),
    );
    binary_random(
        dev,
        Remainder,
        [Domain::Any, Domain::Small],
        i2::<T>(remainder_ref),
    );
    binary_random(dev, Fmod, [Domain::Any, Domain::Small], i2::<T>(fmod_ref));
    binary_random(dev, Remainder, [Domain::Any; 2], i2::<T>(remainder_ref));
    binary_specials(dev, FloorDivide, i2::<T>(floor_div_ref));
    binary_specials(dev, Remainder, i2::<T>(remainder_ref));
    binary_specials(dev, Fmod, i2::<T>(fmod_ref));
}

fn float_division<D: TestDevice, T: Specials + DivRem>(dev: &D) {
    binary_random(dev, FloorDivide, [Domain::Any; 2], f2::<T>(py_floor_div));
    binary_random(dev, Remainder, [Domain::Any; 2], f2::<T>(py_remainder));
    binary_random(dev, Fmod, [Domain::Any; 2], f2::<T>(|x, y| x % y));
    binary_random(dev, Remainder, [Domain::Quarters; 2], f2::<T>(py_remainder));
    binary_random(
        dev,
        FloorDivide,
        [Domain::Quarters; 2],
        f2::<T>(py_floor_div),
    );
    binary_specials(dev, FloorDivide, f2::<T>(py_floor_div));
    binary_specials(dev, Remainder, f2::<T>(py_remainder));
    binary_specials(dev, Fmod, f2::<T>(|x, y| x % y));
}

test_device!(
    division_and_remainders_match_python,
    division_cpu,
    division_gpu
);
fn division_and_remainders_match_python<D: TestDevice>(dev: &D) {
    for_ints!(int_division, dev);
    for_floats!(float_division, dev);
}

test_device!(
    integer_division_by_zero_gives_zero,
    div_zero_cpu,
    div_zero_gpu
);
fn integer_division_by_zero_gives_zero<D: TestDevice>(dev: &D) {
    let a = dev.upload(&Tensor::<i64, Cpu>::from_vec(&[4], vec![7, -7, i64::MIN, 0]).unwrap());
    let z = dev.upload(&Tensor::<i64, Cpu>::zeros(&[4]).unwrap());
    for out in [
        a.div(&z).unwrap(),
        a.floor_divide(&z).unwrap(),
        a.remainder(&z).unwrap(),
        a.fmod(&z).unwrap(),
    ] {
        assert_eq!(host(&out), [0; 4]);
    }
    // Floats: C's NaN for both remainders, ±inf / NaN for floor division.
    let x = dev.upload(&Tensor::<f32, Cpu>::from_vec(&[3], vec![1.0, -1.0, 0.0]).unwrap());
    assert!(host(&x.remainder(0.0f32).unwrap())
        .iter()
        .all(|v| v.is_nan()));
    assert!(host(&x.fmod(0.0f32).unwrap()).iter().all(|v| v.is_nan()));
    let q = host(&x.floor_divide(0.0f32).unwrap());
    assert_eq!(&q[..2], [f32::INFINITY, f32::NEG_INFINITY]);
    assert!(q[2].is_nan());
    // MIN // -1 and MIN % -1 wrap like `div`.
    let m = dev.upload(&Tensor::<i32, Cpu>::from_vec(&[1], vec![i32::MIN]).unwrap());
    assert_eq!(host(&m.floor_divide(-1).unwrap()), [i32::MIN]);
    assert_eq!(host(&m.remainder(-1).unwrap()), [0]);
    assert_eq!(host(&m.fmod(-1).unwrap()), [0]);
}

// ---------------------------------------------------------------------------------------------
// Tests: bitwise ops, shifts, gcd, lcm

fn int_bits<D: TestDevice, T: Specials + Integer>(dev: &D) {
    let any = [Domain::Any; 2];
    binary_random(dev, BitwiseAnd, any, i2::<T>(|x, y| x & y));
    binary_random(dev, BitwiseOr, any, i2::<T>(|x, y| x | y));
    binary_random(dev, BitwiseXor, any, i2::<T>(|x, y| x ^ y));
    binary_random(dev, LeftShift, [Domain::Any, Domain::Small], shl_ref::<T>);
    binary_random(dev, RightShift, [Domain::Any, Domain::Small], shr_ref::<T>);
    binary_random(dev, Gcd, any, i2::<T>(gcd_ref));
    binary_random(dev, Gcd, [Domain::Small; 2], i2::<T>(gcd_ref));
    binary_random(dev, Lcm, any, lcm_ref::<T>);
    binary_random(dev, Lcm, [Domain::Small; 2], lcm_ref::<T>);
    let mut rng = rng_for("bitwise_not", T::NAME);
    let not = i1::<T>(|x| !x);
    for _ in 0..CASES {
        unary_case::<D, T, T, _>(dev, &mut rng, BitwiseNot, Domain::Any, &not, EXACT);
        unary_inplace_case::<D, T, _>(dev, &mut rng, BitwiseNot, Domain::Any, &not, EXACT);
    }
    binary_specials(dev, BitwiseAnd, i2::<T>(|x, y| x & y));
    binary_specials(dev, BitwiseOr, i2::<T>(|x, y| x | y));
    binary_specials(dev, BitwiseXor, i2::<T>(|x, y| x ^ y));
    binary_specials(dev, LeftShift, shl_ref::<T>);
    binary_specials(dev, RightShift, shr_ref::<T>);
    binary_specials(dev, Gcd, i2::<T>(gcd_ref));
    binary_specials(dev, Lcm, lcm_ref::<T>);
    unary_specials(dev, BitwiseNot, not);
}

test_device!(bitwise_shift_gcd_lcm_match_i128, bits_cpu, bits_gpu);
fn bitwise_shift_gcd_lcm_match_i128<D: TestDevice>(dev: &D) {
    for_ints!(int_bits, dev);
    // bool: logical and, or, xor, not.
    let any = [Domain::Any; 2];
    binary_random(dev, BitwiseAnd, any, |x: bool, y| x && y);
    binary_random(dev, BitwiseOr, any, |x: bool, y| x || y);
    binary_random(dev, BitwiseXor, any, |x: bool, y| x != y);
    let mut rng = rng_for("bitwise_not", "bool");
    for _ in 0..CASES {
        unary_case::<D, bool, bool, _>(dev, &mut rng, BitwiseNot, Domain::Any, &|x| !x, EXACT);
    }
}

test_device!(u8_shifts_keep_eight_bits, u8_shifts_cpu, u8_shifts_gpu);
fn u8_shifts_keep_eight_bits<D: TestDevice>(dev: &D) {
    let a = dev.upload(&Tensor::<u8, Cpu>::from_vec(&[5], vec![0xFF, 0x81, 1, 200, 255]).unwrap());
    let s = dev.upload(&Tensor::<u8, Cpu>::from_vec(&[5], vec![1, 7, 8, 200, 0]).unwrap());
    assert_eq!(host(&a.left_shift(&s).unwrap()), [0xFE, 0x80, 0, 0, 255]);
    assert_eq!(host(&a.right_shift(&s).unwrap()), [0x7F, 1, 0, 0, 255]);
    // In a fused chain the shifted-out bits stay lost: (0xFF << 4) >> 4 == 0x0F.
    let e = a.lazy().left_shift(4u8).right_shift(4u8).eval().unwrap();
    assert_eq!(host(&e), [0x0F, 0x01, 0x01, 0x08, 0x0F]);
    let i = dev.upload(&Tensor::<i32, Cpu>::from_vec(&[3], vec![-8, 8, -1]).unwrap());
    assert_eq!(host(&i.right_shift(40).unwrap()), [-1, 0, -1]);
    assert_eq!(host(&i.right_shift(-1).unwrap()), [-1, 0, -1]);
    assert_eq!(host(&i.left_shift(32).unwrap()), [0, 0, 0]);
    assert_eq!(host(&i.left_shift(31).unwrap()), [0, 0, i32::MIN]);
    assert_eq!(host(&i.bitwise_not().unwrap()), [7, -9, 0]);
}

// ---------------------------------------------------------------------------------------------
// Tests: logical ops and predicates, every element type

fn logic_of<D: TestDevice, T: Specials>(dev: &D) {
    binary_random_bool(dev, LogicalAnd, |x: T, y| truth(x) && truth(y));
    binary_random_bool(dev, LogicalOr, |x: T, y| truth(x) || truth(y));
    binary_random_bool(dev, LogicalXor, |x: T, y| truth(x) != truth(y));
    unary_random_bool(dev, LogicalNot, |x: T| !truth(x));
    unary_random_bool(dev, IsNan, |x: T| x.to_f64().is_nan());
    unary_random_bool(dev, IsInf, |x: T| x.to_f64().is_infinite());
    unary_random_bool(dev, IsPosInf, |x: T| x.to_f64() == f64::INFINITY);
    unary_random_bool(dev, IsNegInf, |x: T| x.to_f64() == f64::NEG_INFINITY);
    unary_random_bool(dev, IsFinite, |x: T| x.to_f64().is_finite());
    binary_specials(dev, LogicalAnd, |x: T, y| truth(x) && truth(y));
    binary_specials(dev, LogicalOr, |x: T, y| truth(x) || truth(y));
    binary_specials(dev, LogicalXor, |x: T, y| truth(x) != truth(y));
    unary_specials(dev, LogicalNot, |x: T| !truth(x));
    unary_specials(dev, IsNan, |x: T| x.to_f64().is_nan());
    unary_specials(dev, IsInf, |x: T| x.to_f64().is_infinite());
    unary_specials(dev, IsPosInf, |x: T| x.to_f64() == f64::INFINITY);
    unary_specials(dev, IsNegInf, |x: T| x.to_f64() == f64::NEG_INFINITY);
    unary_specials(dev, IsFinite, |x: T| x.to_f64().is_finite());
}

fn signbit_of<D: TestDevice, T: Specials + Numeric>(dev: &D) {
    // The sign bit: of -0.0, and of -NaN (the specials hold both NaN signs).
    let reference = |x: T| {
        let v = x.to_f64();
        v.is_sign_negative()
    };
    unary_random_bool(dev, SignBit, reference);
    unary_specials(dev, SignBit, reference);
}

test_device!(
    logical_ops_and_predicates_take_every_type,
    logic_cpu,
    logic_gpu
);
fn logical_ops_and_predicates_take_every_type<D: TestDevice>(dev: &D) {
    for_ints!(logic_of, dev);
    for_floats!(logic_of, dev);
    for_ints!(signbit_of, dev);
    for_floats!(signbit_of, dev);
    // bool: its own truth.
    binary_random_bool(dev, LogicalAnd, |x: bool, y| x && y);
    binary_random_bool(dev, LogicalXor, |x: bool, y| x != y);
    unary_random_bool(dev, LogicalNot, |x: bool| !x);
    unary_random_bool(dev, IsNan, |_: bool| false);
    unary_random_bool(dev, IsFinite, |_: bool| true);
}

test_device!(
    signbit_reads_the_bit_of_negative_nan,
    signbit_nan_cpu,
    signbit_nan_gpu
);
fn signbit_reads_the_bit_of_negative_nan<D: TestDevice>(dev: &D) {
    let neg_nan = f32::from_bits(0xFFC0_0000);
    let x = dev
        .upload(&Tensor::<f32, Cpu>::from_vec(&[4], vec![neg_nan, f32::NAN, -0.0, 0.0]).unwrap());
    assert_eq!(host(&x.signbit().unwrap()), [true, false, true, false]);
    let y = dev.upload(&Tensor::<f64, Cpu>::from_vec(&[2], vec![-f64::NAN, -0.0]).unwrap());
    assert_eq!(host(&y.signbit().unwrap()), [true, true]);
}

// ---------------------------------------------------------------------------------------------
// Tests: copysign, nextafter, nan_to_num

fn float_cleaning<D: TestDevice, T: Specials + FloatElement>(dev: &D) {
    binary_random(dev, Copysign, [Domain::Any; 2], f2::<T>(f64::copysign));
    binary_specials(dev, Copysign, f2::<T>(f64::copysign));
    binary_random(dev, NextAfter, [Domain::Any; 2], next_after_ref::<T>);
    binary_random(dev, NextAfter, [Domain::Quarters; 2], next_after_ref::<T>);
    binary_specials(dev, NextAfter, next_after_ref::<T>);

    // nan_to_num: defaults, then set values; out of place, into a strided output, in place,
    // fused, on a flipped transposed view.
    let xs = T::specials();
    let n = xs.len();
    let host_t = Tensor::<T, Cpu>::from_vec(&[2, n], [xs.clone(), xs.clone()].concat()).unwrap();
    let t = dev.upload(&host_t);
    let v = t.t().flip(0).unwrap(); // [n, 2], rows reversed
    let order: Vec<T> = xs.iter().rev().flat_map(|&x| [x, x]).collect();
    let max = <T as num_traits::Float>::max_value();
    let lowest = <T as num_traits::Float>::min_value();
    let clean = |x: T, nan: T, pos: T, neg: T| {
        let f = x.to_f64();
        if f.is_nan() {
            nan
        } else if f == f64::INFINITY {
            pos
        } else if f == f64::NEG_INFINITY {
            neg
        } else {
            x
        }
    };
    let want: Vec<T> = order
        .iter()
        .map(|&x| clean(x, T::ZERO, max, lowest))
        .collect();
    assert_same(
        "nan_to_num",
        "defaults",
        &host(&v.nan_to_num(None, None, None).unwrap()),
        &want,
    );
    let (nan, pos, neg) = (T::from_f64(-1.5), T::from_f64(3.0), T::from_f64(-7.0));
    let want: Vec<T> = order.iter().map(|&x| clean(x, nan, pos, neg)).collect();
    let args = (Some(nan), Some(pos), Some(neg));
    assert_same(
        "nan_to_num",
        "set values",
        &host(&v.nan_to_num(args.0, args.1, args.2).unwrap()),
        &want,
    );
    let mut out = dev.upload(&Tensor::<T, Cpu>::zeros(&[2, n]).unwrap());
    v.nan_to_num_into(args.0, args.1, args.2, &mut out.view_mut().t())
        .unwrap();
    let got = host(&out.t());
    assert_same("nan_to_num_into", "a transposed output", &got, &want);
    let mut w = v.contiguous().unwrap();
    w.nan_to_num_(args.0, None, args.2).unwrap();
    let want_mixed: Vec<T> = order.iter().map(|&x| clean(x, nan, max, neg)).collect();
    assert_same("nan_to_num_", "in place", &host(&w), &want_mixed);
    let fused = v
        .lazy()
        .nan_to_num(args.0, args.1, args.2)
        .mul_scalar(T::ONE)
        .eval()
        .unwrap();
    assert_same("nan_to_num", "fused", &host(&fused), &want);
}

test_device!(
    copysign_nextafter_nan_to_num_are_exact,
    clean_cpu,
    clean_gpu
);
fn copysign_nextafter_nan_to_num_are_exact<D: TestDevice>(dev: &D) {
    for_floats!(float_cleaning, dev);
    // The half types step in their own representation.
    let h = dev
        .upload(&Tensor::<f16, Cpu>::from_vec(&[3], vec![f16::ONE, f16::ONE, f16::MAX]).unwrap());
    let toward = [f16::from_f32(2.0), f16::ZERO, f16::INFINITY];
    let got = host(
        &h.nextafter(&dev.upload(&Tensor::from_vec(&[3], toward.to_vec()).unwrap()))
            .unwrap(),
    );
    assert_eq!(
        got,
        [
            f16::from_f32(1.0 + 2f32.powi(-10)),
            f16::from_f32(1.0 - 2f32.powi(-11)),
            f16::INFINITY
        ]
    );
    let b = dev.upload(&Tensor::<bf16, Cpu>::from_vec(&[1], vec![bf16::ONE]).unwrap());
    assert_eq!(
        host(&b.nextafter(bf16::ZERO).unwrap()),
        [bf16::from_f32(1.0 - 2f32.powi(-8))]
    );
}
