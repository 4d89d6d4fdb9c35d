//! The element types `i8`, `i16`, `u16`, `u32` and `u64` beside the older eight, on every
//! device, against references computed on the host in `i128` (integers) and `f64` (floats),
//! never by the code under test:
//!
//! - casts between every pair of the thirteen types, eager and fused, over each type's
//!   extremes (MIN, MAX, values just past every other type's bounds, NaN, ±inf, ±0,
//!   subnormals, halves) and random values, read through flipped views;
//! - integer arithmetic (wrapping `+ - *`, division truncating with `x / 0 == 0` and
//!   `MIN / -1 == MIN`), `abs`, `neg`, `sign`, `square`, `relu`, `maximum`, `minimum`, the
//!   scalar ops with extreme scalars, comparisons and `where_cond`, over transposed and
//!   flipped views mixing random values and extremes;
//! - fused expressions whose intermediate results overflow the narrow types (each op's
//!   result wraps before the next op reads it, as eager evaluation stores it);
//! - reductions (`sum`, `prod` into wrapping `i64`; `max`, `min`, `argmax`, `argmin`) over
//!   whole tensors and along each dim of transposed and flipped views (`mean` takes floats
//!   only: integers do not compile);
//! - constructors, `from_vec` / `to_vec` round trips and printing.
//!
//! Every comparison is exact: conversions and integer arithmetic have one right answer.

use crate::common::device::{host, test_device, TestDevice};
use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::element::{DType, Element, Numeric};
use typestate_tensor::tensor::Tensor;

/// An element's exact value.
#[derive(Clone, Copy, Debug)]
enum Exact {
    Int(i128),
    Float(f64),
}

/// What the tests need of an element type: its exact value, the reference conversion into
/// it, its special values and a random value.
trait Ty: Element {
    fn exact(self) -> Exact;
    /// The C-cast reference (`typestate_tensor::ops::cast`'s documented rules) of `x` into
    /// `Self`; `from_f64` says whether the source is `f64` (the half types then copy
    /// `half`'s `from_f64`, which rounds twice for `f16`).
    fn convert(x: Exact, from_f64: bool) -> Self;
    fn specials() -> Vec<Self>;
    fn random(rng: &mut SmallRng) -> Self;
    /// Equal bits, except that every NaN equals every NaN.
    fn same(self, other: Self) -> bool;
}

/// Integers that sit on or just past some type's bound, wrapped into each integer type and
/// converted to each float type.
const EDGES: [i128; 30] = [
    0,
    1,
    -1,
    2,
    127,
    128,
    -128,
    -129,
    255,
    256,
    32_767,
    32_768,
    -32_768,
    -32_769,
    65_535,
    65_536,
    (1 << 31) - 1,
    1 << 31,
    -(1 << 31),
    -(1 << 31) - 1,
    (1 << 32) - 1,
    1 << 32,
    (1 << 53) + 1,
    (1 << 63) - 1,
    -(1 << 63),
    (1 << 64) - 1,
    0xDEAD_BEEF_CAFE,
    -0x1234_5678_9ABC,
    (1 << 24) + 1,
    -((1 << 24) + 1),
];

/// Floats on, inside and past the integer types' bounds, and the IEEE specials.
const FLOAT_EDGES: [f64; 42] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    0.5,
    -0.5,
    -0.99,
    1.5,
    2.5,
    -2.5,
    127.9,
    128.0,
    -128.9,
    -129.0,
    255.9,
    256.0,
    -1.0,
    32_767.5,
    32_768.0,
    -32_768.9,
    -32_769.0,
    65_535.9,
    65_536.0,
    2_147_483_647.5,
    2_147_483_648.0,
    -2_147_483_649.0,
    4_294_967_295.5,
    4_294_967_296.0,
    9_007_199_254_740_994.0,
    9_223_372_036_854_775_808.0,
    -9_223_372_036_854_775_808.0,
    -9_223_372_036_854_777_856.0,
    18_446_744_073_709_549_568.0,
    18_446_744_073_709_551_616.0,
    1e30,
    -1e30,
    f64::MAX,
    f64::MIN,
    1e-310,
    1e-40,
    -6e-8,
];

/// `f` truncated toward zero and saturated to `[lo, hi]`, NaN to 0 (the float-to-integer
/// rule), in `i128`.
fn saturate(f: f64, lo: i128, hi: i128) -> i128 {
    if f.is_nan() {
        return 0;
    }
    let t = f.trunc();
    if t <= lo as f64 {
        lo
    } else if t >= hi as f64 {
        // `hi as f64` rounds up to a power of two for the 64-bit types; `t` at or above it
        // is out of range either way.
        hi
    } else {
        t as i128
    }
}

macro_rules! int_ty {
    ($($t:ty),*) => {$(
        impl Ty for $t {
            fn exact(self) -> Exact {
                Exact::Int(self as i128)
            }
            fn convert(x: Exact, _from_f64: bool) -> Self {
                match x {
                    Exact::Int(v) => v as $t, // two's complement wrap
                    Exact::Float(f) => saturate(f, <$t>::MIN as i128, <$t>::MAX as i128) as $t,
                }
            }
            fn specials() -> Vec<Self> {
                let mut v = vec![<$t>::MIN, <$t>::MAX, <$t>::MIN.wrapping_add(1), <$t>::MAX - 1];
                v.extend(EDGES.iter().map(|&e| e as $t));
                v
            }
            fn random(rng: &mut SmallRng) -> Self {
                if rng.gen_bool(0.3) {
                    let s = Self::specials();
                    s[rng.gen_range(0..s.len())]
                } else {
                    rng.gen()
                }
            }
            fn same(self, other: Self) -> bool {
                self == other
            }
        }
    )*};
}
int_ty!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Ty for bool {
    fn exact(self) -> Exact {
        Exact::Int(i128::from(self))
    }
    fn convert(x: Exact, _from_f64: bool) -> Self {
        match x {
            Exact::Int(v) => v != 0,
            Exact::Float(f) => f != 0.0, // NaN is true
        }
    }
    fn specials() -> Vec<Self> {
        vec![false, true]
    }
    fn random(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
    fn same(self, other: Self) -> bool {
        self == other
    }
}

macro_rules! float_ty {
    ($t:ty, |$x:ident, $f64src:ident| $convert:expr, from_f64: $from:expr) => {
        impl Ty for $t {
            fn exact(self) -> Exact {
                Exact::Float(self.to_f64())
            }
            fn convert(x: Exact, $f64src: bool) -> Self {
                let $x = x;
                $convert
            }
            fn specials() -> Vec<Self> {
                let mut v: Vec<Self> = FLOAT_EDGES.iter().map(|&f| $from(f)).collect();
                v.extend(EDGES.iter().map(|&e| $from(e as f64)));
                v
            }
            fn random(rng: &mut SmallRng) -> Self {
                let f: f64 = match rng.gen_range(0..4) {
                    0 => rng.gen_range(-300.0..300.0),
                    1 => rng.gen_range(-1e5..1e5),
                    2 => rng.gen_range(-1e19..1e19),
                    _ => rng.gen_range(-3.0..3.0),
                };
                $from(f)
            }
            fn same(self, other: Self) -> bool {
                (self.is_nan() && other.is_nan()) || self.to_bits() == other.to_bits()
            }
        }
    };
}
float_ty!(f64, |x, _f| match x {
    Exact::Int(v) => v as f64,
    Exact::Float(f) => f,
}, from_f64: |f: f64| f);
float_ty!(f32, |x, _f| match x {
    Exact::Int(v) => v as f32, // one rounding from the integer
    Exact::Float(f) => f as f32,
}, from_f64: |f: f64| f as f32);
// f16 from f64 (and from integers, through their f64 value) rounds to f32 first, as `half`
// does on x86-64; from the f32 compute value of f32, f16 and bf16 it rounds once.
float_ty!(f16, |x, _f| match x {
    Exact::Int(v) => f16::from_f32(v as f64 as f32),
    Exact::Float(f) => f16::from_f32(f as f32),
}, from_f64: f16::from_f64);
// bf16 from f64 (and integers) is `half`'s `from_f64`; from f32 values, one rounding.
float_ty!(bf16, |x, from_f64| match x {
    Exact::Int(v) => bf16::from_f64(v as f64),
    Exact::Float(f) if from_f64 => bf16::from_f64(f),
    Exact::Float(f) => bf16::from_f32(f as f32),
}, from_f64: bf16::from_f64);

fn rng_for(what: &str) -> SmallRng {
    let seed = what.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x1000_0000_01b3)
    });
    SmallRng::seed_from_u64(seed)
}

fn assert_same<U: Ty>(what: &str, inputs: &[String], got: &[U], want: &[U]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.same(w),
            "{what}: element {i} (input {}): got {g:?}, want {w:?}",
            inputs[i]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Casts

/// `T -> U` over `T`'s specials and random values, contiguous and through a flip, eagerly
/// and fused.
fn cast_pair<T: Ty, U: Ty, D: TestDevice>(dev: &D) {
    let what = format!("cast {} -> {}", T::NAME, U::NAME);
    let mut rng = rng_for(&what);
    let mut data = T::specials();
    data.extend((0..40).map(|_| T::random(&mut rng)));
    let n = data.len();
    let from_f64 = T::DTYPE == DType::F64;
    let reference = |x: T| U::convert(x.exact(), from_f64);
    let t = dev.upload(&Tensor::from_vec(&[n], data.clone()).unwrap());
    let want: Vec<U> = data.iter().map(|&x| reference(x)).collect();
    let shown: Vec<String> = data.iter().map(|x| format!("{x:?}")).collect();
    assert_same(&what, &shown, &host(&t.cast::<U>().unwrap()), &want);
    // Through a flipped view, and fused.
    let flipped = t.flip(0).unwrap();
    let rev = |v: &[U]| v.iter().rev().copied().collect::<Vec<U>>();
    let shown_rev: Vec<String> = shown.iter().rev().cloned().collect();
    assert_same(
        &format!("{what} (flipped)"),
        &shown_rev,
        &host(&flipped.cast::<U>().unwrap()),
        &rev(&want),
    );
    let fused = flipped.lazy().cast::<U>().eval().unwrap();
    assert_same(
        &format!("{what} (fused)"),
        &shown_rev,
        &host(&fused),
        &rev(&want),
    );
}

test_device!(
    casts_between_all_thirteen_types_match_the_c_rules,
    casts_between_all_thirteen_types_match_the_c_rules_cpu,
    casts_between_all_thirteen_types_match_the_c_rules_gpu
);
fn casts_between_all_thirteen_types_match_the_c_rules<D: TestDevice>(dev: &D) {
    macro_rules! to {
        ($from:ty => $($to:ty),*) => {$(
            cast_pair::<$from, $to, D>(dev);
        )*};
    }
    macro_rules! from {
        ($($from:ty),*) => {$(
            to!($from => f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, bool);
        )*};
    }
    from!(f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, bool);
}

test_device!(
    float_to_new_integer_types_truncate_and_saturate,
    float_to_new_integer_types_truncate_and_saturate_cpu,
    float_to_new_integer_types_truncate_and_saturate_gpu
);
fn float_to_new_integer_types_truncate_and_saturate<D: TestDevice>(dev: &D) {
    // Spelled out, beside the generic reference above.
    let x = dev.upload(
        &Tensor::from_vec(
            &[7],
            vec![-2.9f64, 300.7, -300.7, f64::NAN, f64::INFINITY, -1e30, 7e4],
        )
        .unwrap(),
    );
    assert_eq!(
        host(&x.cast::<i8>().unwrap()),
        [-2, 127, -128, 0, 127, -128, 127]
    );
    assert_eq!(
        host(&x.cast::<u16>().unwrap()),
        [0, 300, 0, 0, 65_535, 0, 65_535]
    );
    assert_eq!(
        host(&x.cast::<i16>().unwrap()),
        [-2, 300, -300, 0, 32_767, -32_768, 32_767]
    );
    assert_eq!(
        host(&x.cast::<u32>().unwrap()),
        [0, 300, 0, 0, u32::MAX, 0, 70_000]
    );
    assert_eq!(
        host(&x.cast::<u64>().unwrap()),
        [0, 300, 0, 0, u64::MAX, 0, 70_000]
    );
    // Integer to integer keeps the low bits; u64 beyond 2^53 to f32/f64 rounds to nearest.
    let big = dev.upload(&Tensor::from_vec(&[3], vec![u64::MAX, (1 << 53) + 1, 0x1_80]).unwrap());
    assert_eq!(host(&big.cast::<i8>().unwrap()), [-1, 1, -128]);
    assert_eq!(host(&big.cast::<i64>().unwrap()), [-1, (1 << 53) + 1, 384]);
    assert_eq!(
        host(&big.cast::<f64>().unwrap()),
        [18_446_744_073_709_551_616.0, 9_007_199_254_740_992.0, 384.0]
    );
    assert_eq!(
        host(&big.cast::<f32>().unwrap()),
        [
            18_446_744_073_709_551_616.0f32,
            9_007_199_254_740_992.0,
            384.0
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Integer arithmetic

/// What the integer tests need beyond [`Ty`]: the value as `i128` and the wrap back.
trait IntTy: Ty + Numeric {
    const SIGNED: bool;
    fn int(self) -> i128;
    fn wrap(v: i128) -> Self;
}
macro_rules! int_ty_ext {
    ($($t:ty: $signed:expr),*) => {$(
        impl IntTy for $t {
            const SIGNED: bool = $signed;
            fn int(self) -> i128 {
                self as i128
            }
            fn wrap(v: i128) -> Self {
                v as $t
            }
        }
    )*};
}
int_ty_ext!(i8: true, i16: true, i32: true, i64: true, u8: false, u16: false, u32: false, u64: false);

/// Truncating division in `i128`, 0 for division by zero (`MIN / -1` is `-MIN`, which the
/// wrap back into the type turns into `MIN`).
fn div_ref(x: i128, y: i128) -> i128 {
    if y == 0 {
        0
    } else {
        x / y
    }
}

/// Random `[r, c]` data mixing extremes and random values.
fn ints<T: IntTy>(rng: &mut SmallRng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::random(rng)).collect()
}

/// The row-major logical values of a `[r, c]` view of a `[c, r]` row-major storage
/// transposed (`t == true`), or of `[r, c]` storage flipped along dim 1.
fn logical<T: Copy>(data: &[T], r: usize, c: usize, transposed: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(r * c);
    for i in 0..r {
        for j in 0..c {
            out.push(if transposed {
                data[j * r + i]
            } else {
                data[i * c + (c - 1 - j)]
            });
        }
    }
    out
}

fn arithmetic_of<T: IntTy, D: TestDevice>(dev: &D) {
    let what = T::NAME;
    let mut rng = rng_for(&format!("arith {what}"));
    for round in 0..6 {
        let (r, c) = (rng.gen_range(1..=9), rng.gen_range(1..=9));
        let (da, db): (Vec<T>, Vec<T>) = (ints(&mut rng, r * c), ints(&mut rng, r * c));
        // `a` transposed from `[c, r]` storage, `b` flipped along dim 1.
        let a_store = dev.upload(&Tensor::from_vec(&[c, r], da.clone()).unwrap());
        let b_store = dev.upload(&Tensor::from_vec(&[r, c], db.clone()).unwrap());
        let a = a_store.t();
        let b = b_store.flip(1).unwrap();
        let (la, lb) = (logical(&da, r, c, true), logical(&db, r, c, false));
        let pairs: Vec<String> = la
            .iter()
            .zip(&lb)
            .map(|(x, y)| format!("{x:?}, {y:?}"))
            .collect();
        let check = |op: &str, got: Vec<T>, f: &dyn Fn(i128, i128) -> i128| {
            let want: Vec<T> = la
                .iter()
                .zip(&lb)
                .map(|(&x, &y)| T::wrap(f(x.int(), y.int())))
                .collect();
            assert_same(&format!("{what} {op} (round {round})"), &pairs, &got, &want);
        };
        check("add", host(&a.add(&b).unwrap()), &|x, y| x + y);
        check("sub", host(&a.sub(&b).unwrap()), &|x, y| x - y);
        check("mul", host(&a.mul(&b).unwrap()), &|x, y| x.wrapping_mul(y));
        check("div", host(&a.div(&b).unwrap()), &div_ref);
        check("maximum", host(&a.maximum(&b).unwrap()), &|x, y| x.max(y));
        check("minimum", host(&a.minimum(&b).unwrap()), &|x, y| x.min(y));
        check("abs", host(&a.abs().unwrap()), &|x, _| x.abs());
        check("sign", host(&a.sign().unwrap()), &|x, _| x.signum());
        check("square", host(&a.square().unwrap()), &|x, _| {
            x.wrapping_mul(x)
        });
        check("relu", host(&a.relu().unwrap()), &|x, _| x.max(0));
        let mask = a.lt(&b).unwrap();
        check(
            "where_cond(a < b, a, b)",
            host(&Tensor::where_cond(&mask, &a, &b).unwrap()),
            &|x, y| if x < y { x } else { y },
        );
        // Comparisons, as bools.
        let cmp = |op: &str, got: Vec<bool>, f: &dyn Fn(i128, i128) -> bool| {
            let want: Vec<bool> = la
                .iter()
                .zip(&lb)
                .map(|(&x, &y)| f(x.int(), y.int()))
                .collect();
            assert_eq!(got, want, "{what} {op}: inputs {pairs:?}");
        };
        cmp("lt", host(&a.lt(&b).unwrap()), &|x, y| x < y);
        cmp("le", host(&a.le(&b).unwrap()), &|x, y| x <= y);
        cmp("gt", host(&a.gt(&b).unwrap()), &|x, y| x > y);
        cmp("ge", host(&a.ge(&b).unwrap()), &|x, y| x >= y);
        cmp("eq", host(&a.eq(&a).unwrap()), &|_, _| true);
        cmp("ne", host(&a.ne(&b).unwrap()), &|x, y| x != y);
        // Scalars at the extremes (the kernels take them in the compute type).
        for s in [
            T::wrap(-1),
            T::wrap(i128::MAX),
            T::specials()[0],
            T::specials()[1],
        ] {
            let si = s.int();
            check("add_scalar", host(&a.add_scalar(s).unwrap()), &|x, _| {
                x + si
            });
            check("mul_scalar", host(&a.mul_scalar(s).unwrap()), &|x, _| {
                x.wrapping_mul(si)
            });
        }
        let (lo, hi) = (T::wrap(-3), T::wrap(100));
        let (l, h) = (lo.int(), hi.int());
        check(
            "clamp_scalar",
            host(&a.clamp_scalar(lo, hi).unwrap()),
            &|x, _| x.max(l).min(h),
        );
    }
    // The spelled-out edges: MIN / -1, division by zero.
    let min = T::specials()[0];
    let x = dev.upload(&Tensor::from_vec(&[3], vec![min, T::ONE, T::wrap(7)]).unwrap());
    let y = dev.upload(&Tensor::from_vec(&[3], vec![T::wrap(-1), T::ZERO, T::ZERO]).unwrap());
    let q = host(&x.div(&y).unwrap());
    let want_first = if T::SIGNED { min } else { T::ZERO };
    assert_eq!(
        q,
        [want_first, T::ZERO, T::ZERO],
        "{what}: MIN / -1 and x / 0"
    );
}

test_device!(
    integer_arithmetic_wraps_and_divides_totally,
    integer_arithmetic_wraps_and_divides_totally_cpu,
    integer_arithmetic_wraps_and_divides_totally_gpu
);
fn integer_arithmetic_wraps_and_divides_totally<D: TestDevice>(dev: &D) {
    arithmetic_of::<i8, D>(dev);
    arithmetic_of::<i16, D>(dev);
    arithmetic_of::<u16, D>(dev);
    arithmetic_of::<u32, D>(dev);
    arithmetic_of::<u64, D>(dev);
    arithmetic_of::<i32, D>(dev);
    arithmetic_of::<i64, D>(dev);
    arithmetic_of::<u8, D>(dev);
}

fn negation_of<T: IntTy + typestate_tensor::element::Signed, D: TestDevice>(dev: &D) {
    let mut rng = rng_for(&format!("neg {}", T::NAME));
    let data: Vec<T> = ints(&mut rng, 60);
    let t = dev.upload(&Tensor::from_vec(&[6, 10], data.clone()).unwrap());
    let got = host(&t.t().neg().unwrap());
    let want: Vec<T> = logical(&data, 10, 6, true)
        .iter()
        .map(|x| T::wrap(-x.int()))
        .collect();
    assert_eq!(got, want, "{} neg", T::NAME);
}

test_device!(
    signed_negation_wraps_at_min,
    signed_negation_wraps_at_min_cpu,
    signed_negation_wraps_at_min_gpu
);
fn signed_negation_wraps_at_min<D: TestDevice>(dev: &D) {
    negation_of::<i8, D>(dev);
    negation_of::<i16, D>(dev);
    let x = dev.upload(&Tensor::from_vec(&[2], vec![i8::MIN, 5]).unwrap());
    assert_eq!(host(&x.neg().unwrap()), [i8::MIN, -5]);
    assert_eq!(host(&x.abs().unwrap()), [i8::MIN, 5]);
}

// ---------------------------------------------------------------------------------------------
// Fused expressions

fn fused_of<T: IntTy, D: TestDevice>(dev: &D) {
    let what = T::NAME;
    let mut rng = rng_for(&format!("fused {what}"));
    let n = 64;
    let (da, db, dc): (Vec<T>, Vec<T>, Vec<T>) =
        (ints(&mut rng, n), ints(&mut rng, n), ints(&mut rng, n));
    let up = |d: &Vec<T>| dev.upload(&Tensor::from_vec(&[8, 8], d.clone()).unwrap());
    let (a, b, c) = (up(&da), up(&db), up(&dc));
    let (a, b) = (a.t(), b.flip(0).unwrap());
    let la = logical(&da, 8, 8, true);
    let lb: Vec<T> = (0..8)
        .flat_map(|i| (0..8).map(move |j| (i, j)))
        .map(|(i, j)| db[(7 - i) * 8 + j])
        .collect();
    let lc = dc.clone();
    let three = T::wrap(3);
    // (a + b) / c: the sum wraps in the type before the division reads it.
    let got = host(&((a.lazy() + &b) / &c).eval().unwrap());
    let want: Vec<T> = (0..n)
        .map(|i| {
            T::wrap(div_ref(
                T::wrap(la[i].int() + lb[i].int()).int(),
                lc[i].int(),
            ))
        })
        .collect();
    assert_eq!(got, want, "{what}: fused (a + b) / c");
    // max(a * 3, b - c) < c ? a * 3 : c, with wrapping products and differences.
    let prod = a.lazy().mul_scalar(three);
    let sel = typestate_tensor::tensor::expr::where_cond(
        prod.clone().maximum(b.lazy() - &c).lt(&c),
        prod,
        c.lazy(),
    );
    let got = host(&sel.eval().unwrap());
    let want: Vec<T> = (0..n)
        .map(|i| {
            let p = T::wrap(la[i].int() * 3).int();
            let d = T::wrap(lb[i].int() - lc[i].int()).int();
            T::wrap(if p.max(d) < lc[i].int() {
                p
            } else {
                lc[i].int()
            })
        })
        .collect();
    assert_eq!(got, want, "{what}: fused where");
    // A cast inside: (a + b) as i64 + c as i64, the sum wrapped in `T` first.
    let got = host(
        &((a.lazy() + &b).cast::<i64>() + c.lazy().cast::<i64>())
            .eval()
            .unwrap(),
    );
    let want: Vec<i64> = (0..n)
        .map(|i| (T::wrap(la[i].int() + lb[i].int()).int() + lc[i].int()) as i64)
        .collect();
    assert_eq!(got, want, "{what}: fused casts");
}

test_device!(
    fused_expressions_wrap_every_op,
    fused_expressions_wrap_every_op_cpu,
    fused_expressions_wrap_every_op_gpu
);
fn fused_expressions_wrap_every_op<D: TestDevice>(dev: &D) {
    fused_of::<i8, D>(dev);
    fused_of::<i16, D>(dev);
    fused_of::<u16, D>(dev);
    fused_of::<u32, D>(dev);
    fused_of::<u64, D>(dev);
    fused_of::<u8, D>(dev);
}

// ---------------------------------------------------------------------------------------------
// Reductions

fn reductions_of<
    T: IntTy + typestate_tensor::ops::reduce::ReduceElement<Sum = i64>,
    D: TestDevice,
>(
    dev: &D,
) {
    let what = T::NAME;
    let mut rng = rng_for(&format!("reduce {what}"));
    for round in 0..8 {
        let (r, c) = (rng.gen_range(1..=12), rng.gen_range(1..=12));
        let data: Vec<T> = ints(&mut rng, r * c);
        let transposed = round % 2 == 0;
        let (store, l) = if transposed {
            (
                dev.upload(&Tensor::from_vec(&[c, r], data.clone()).unwrap()),
                logical(&data, r, c, true),
            )
        } else {
            (
                dev.upload(&Tensor::from_vec(&[r, c], data.clone()).unwrap()),
                logical(&data, r, c, false),
            )
        };
        let v = if transposed {
            store.t()
        } else {
            store.flip(1).unwrap()
        };
        let ctx = format!("{what} round {round} ({r} x {c}): {l:?}");
        let sum = |xs: &[T]| xs.iter().map(|x| x.int()).sum::<i128>() as i64;
        let prod = |xs: &[T]| xs.iter().fold(1i64, |p, x| p.wrapping_mul(x.int() as i64));
        let argmax = |xs: &[T]| {
            let mut best = 0;
            for (i, x) in xs.iter().enumerate() {
                if x.int() > xs[best].int() {
                    best = i;
                }
            }
            best as i64
        };
        let argmin = |xs: &[T]| {
            let mut best = 0;
            for (i, x) in xs.iter().enumerate() {
                if x.int() < xs[best].int() {
                    best = i;
                }
            }
            best as i64
        };
        assert_eq!(v.sum().unwrap().item().unwrap(), sum(&l), "sum {ctx}");
        assert_eq!(v.prod().unwrap().item().unwrap(), prod(&l), "prod {ctx}");
        let mx = l.iter().copied().max_by_key(|x| x.int()).unwrap();
        let mn = l.iter().copied().min_by_key(|x| x.int()).unwrap();
        assert_eq!(v.max().unwrap().item().unwrap(), mx, "max {ctx}");
        assert_eq!(v.min().unwrap().item().unwrap(), mn, "min {ctx}");
        assert_eq!(
            v.argmax().unwrap().item().unwrap(),
            argmax(&l),
            "argmax {ctx}"
        );
        assert_eq!(
            v.argmin().unwrap().item().unwrap(),
            argmin(&l),
            "argmin {ctx}"
        );
        // Along each dim.
        let rows: Vec<Vec<T>> = (0..r).map(|i| l[i * c..(i + 1) * c].to_vec()).collect();
        let cols: Vec<Vec<T>> = (0..c)
            .map(|j| (0..r).map(|i| l[i * c + j]).collect())
            .collect();
        assert_eq!(
            host(&v.sum_dim(1, false).unwrap()),
            rows.iter().map(|x| sum(x)).collect::<Vec<_>>(),
            "sum_dim(1) {ctx}"
        );
        assert_eq!(
            host(&v.prod_dim(0, false).unwrap()),
            cols.iter().map(|x| prod(x)).collect::<Vec<_>>(),
            "prod_dim(0) {ctx}"
        );
        assert_eq!(
            host(&v.max_dim(0, false).unwrap()),
            cols.iter()
                .map(|x| x.iter().copied().max_by_key(|y| y.int()).unwrap())
                .collect::<Vec<_>>(),
            "max_dim(0) {ctx}"
        );
        assert_eq!(
            host(&v.min_dim(1, false).unwrap()),
            rows.iter()
                .map(|x| x.iter().copied().min_by_key(|y| y.int()).unwrap())
                .collect::<Vec<_>>(),
            "min_dim(1) {ctx}"
        );
        assert_eq!(
            host(&v.argmax_dim(1, false).unwrap()),
            rows.iter().map(|x| argmax(x)).collect::<Vec<_>>(),
            "argmax_dim(1) {ctx}"
        );
        assert_eq!(
            host(&v.argmin_dim(0, false).unwrap()),
            cols.iter().map(|x| argmin(x)).collect::<Vec<_>>(),
            "argmin_dim(0) {ctx}"
        );
    }
}

test_device!(
    integer_reductions_match_i128,
    integer_reductions_match_i128_cpu,
    integer_reductions_match_i128_gpu
);
fn integer_reductions_match_i128<D: TestDevice>(dev: &D) {
    reductions_of::<i8, D>(dev);
    reductions_of::<i16, D>(dev);
    reductions_of::<u16, D>(dev);
    reductions_of::<u32, D>(dev);
    reductions_of::<u64, D>(dev);
    // A u64 sum past i64::MAX: the wrapping i64 holds the unsigned sum's bits.
    let t = dev.upload(&Tensor::from_vec(&[3], vec![u64::MAX, u64::MAX, 5]).unwrap());
    let s = t.sum().unwrap();
    assert_eq!(s.item().unwrap(), 3);
    assert_eq!(host(&s.cast::<u64>().unwrap()), [3]);
    let t = dev.upload(&Tensor::from_vec(&[2], vec![1u64 << 63, 1]).unwrap());
    assert_eq!(t.sum().unwrap().item().unwrap(), i64::MIN + 1);
}

// ---------------------------------------------------------------------------------------------
// Construction, round trips, printing

fn construct_of<T: IntTy, D: TestDevice>(dev: &D) {
    let what = T::NAME;
    let specials = T::specials();
    let t = dev.upload(&Tensor::from_vec(&[specials.len()], specials.clone()).unwrap());
    assert_eq!(host(&t), specials, "{what}: from_vec / to_vec");
    assert_eq!(
        host(&Tensor::<T, D>::zeros_on(&[3], dev).unwrap()),
        [T::ZERO; 3],
        "{what}: zeros"
    );
    assert_eq!(
        host(&Tensor::<T, D>::ones_on(&[2], dev).unwrap()),
        [T::ONE; 2],
        "{what}: ones"
    );
    let max = specials[1];
    assert_eq!(
        host(&Tensor::full_on(&[2, 2], max, dev).unwrap()),
        [max; 4],
        "{what}: full"
    );
    // arange up to MAX, exact in i128 however wide the type.
    let top = Tensor::arange_step_on(T::wrap(max.int() - 3), max, T::ONE, dev).unwrap();
    assert_eq!(
        host(&top),
        (1..=3)
            .rev()
            .map(|k| T::wrap(max.int() - k))
            .collect::<Vec<_>>(),
        "{what}: arange_step to MAX"
    );
    let min = specials[0];
    let down = Tensor::arange_step_on(T::wrap(min.int() + 4), min, T::wrap(-2), dev);
    if T::SIGNED {
        assert_eq!(
            host(&down.unwrap()),
            [T::wrap(min.int() + 4), T::wrap(min.int() + 2)],
            "{what}: arange_step down to MIN"
        );
    } else {
        // A negative step does not exist in an unsigned type: `T::wrap(-2)` is a huge step
        // up, and the range is empty.
        assert_eq!(host(&down.unwrap()), Vec::<T>::new(), "{what}: arange_step");
    }
}

test_device!(
    new_types_construct_and_round_trip,
    new_types_construct_and_round_trip_cpu,
    new_types_construct_and_round_trip_gpu
);
fn new_types_construct_and_round_trip<D: TestDevice>(dev: &D) {
    construct_of::<i8, D>(dev);
    construct_of::<i16, D>(dev);
    construct_of::<u16, D>(dev);
    construct_of::<u32, D>(dev);
    construct_of::<u64, D>(dev);
}

test_device!(
    new_types_print_like_rust,
    new_types_print_like_rust_cpu,
    new_types_print_like_rust_gpu
);
fn new_types_print_like_rust<D: TestDevice>(dev: &D) {
    fn shown<T: Element, D: TestDevice>(dev: &D, v: Vec<T>) -> String {
        let n = v.len();
        format!("{}", dev.upload(&Tensor::from_vec(&[n], v).unwrap()))
    }
    let text = shown(dev, vec![i8::MIN, 0, i8::MAX]);
    assert!(
        text.starts_with("[-128,    0,  127], shape=[3], dtype=i8"),
        "{text}"
    );
    let text = shown(dev, vec![i16::MIN, 7]);
    assert!(
        text.starts_with("[-32768,      7], shape=[2], dtype=i16"),
        "{text}"
    );
    let text = shown(dev, vec![u16::MAX, 1]);
    assert!(
        text.starts_with("[65535,     1], shape=[2], dtype=u16"),
        "{text}"
    );
    let text = shown(dev, vec![u32::MAX]);
    assert!(
        text.starts_with("[4294967295], shape=[1], dtype=u32"),
        "{text}"
    );
    let text = shown(dev, vec![u64::MAX, 0]);
    assert!(
        text.starts_with("[18446744073709551615,                    0], shape=[2], dtype=u64"),
        "{text}"
    );
}

#[test]
fn dtype_tags_sizes_and_names() {
    let new = [
        (DType::I8, 1, "i8", i8::DTYPE),
        (DType::I16, 2, "i16", i16::DTYPE),
        (DType::U16, 2, "u16", u16::DTYPE),
        (DType::U32, 4, "u32", u32::DTYPE),
        (DType::U64, 8, "u64", u64::DTYPE),
    ];
    for (d, size, name, of) in new {
        assert_eq!(d, of);
        assert_eq!(d.size_in_bytes(), size);
        assert_eq!(d.name(), name);
        assert_eq!(d.to_string(), name);
    }
    // Appended after the older eight: their order (and cache keys) is unchanged.
    assert!(DType::Bool < DType::I8 && DType::I8 < DType::U64);
    assert!(DType::F32 < DType::Bool);
}

#[cfg(feature = "ndarray")]
#[test]
fn new_types_round_trip_through_ndarray() {
    let a = ndarray::Array2::from_shape_vec((2, 2), vec![u64::MAX, 0, 1, 1 << 40]).unwrap();
    let t = Tensor::<u64, typestate_tensor::Cpu>::from_ndarray(&a).unwrap();
    assert_eq!(t.to_vec(), [u64::MAX, 0, 1, 1 << 40]);
    let back = t.to_ndarray().unwrap();
    assert_eq!(
        back.iter().copied().collect::<Vec<_>>(),
        [u64::MAX, 0, 1, 1 << 40]
    );
    let b = ndarray::Array1::from(vec![-5i8, 100]);
    let t = Tensor::<i8, typestate_tensor::Cpu>::try_from(b).unwrap();
    assert_eq!(t.to_vec(), [-5, 100]);
}
