//! The CPU matmul against host references, every element type, random jobs
//! (`tests.rs` builds and runs them).
//!
//! Floats: an `f64` reference `act(alpha·Σ a·b + beta·old + bias)`, per element within
//! `tol = 1.2·4·ε_acc·S + ε_T·|ref|` (`2·ε_T·S` more for `f32` and `f64`, whose product is
//! stored before the bias and activation round it again) where
//! `S = |alpha|·Σ|a·b| + |beta·old| + |bias|` bounds every partial sum, `ε_acc` is the
//! accumulator's epsilon (`f32`'s for `f32`, `f16`, `bf16`; `f64`'s for `f64`), `ε_T` the
//! element type's (the half types round once, at the store: half an ulp is `ε_T/2·|ref|`);
//! 1.2 covers the GELUs' slope (at most 1.13). Integers: an `i128` reference, wrapped to the type, equal exactly.

use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::tests::{run_case, Case};
use crate::element::{DType, Numeric};
use crate::tensor::matmul::Activation;

const FLOAT_ACTS: [Option<Activation>; 4] = [
    None,
    Some(Activation::Relu),
    Some(Activation::Gelu),
    Some(Activation::GeluTanh),
];

fn act_f64(act: Option<Activation>, x: f64) -> f64 {
    match act {
        None => x,
        Some(Activation::Relu) => {
            if x <= 0.0 {
                0.0
            } else {
                x
            }
        }
        Some(Activation::Gelu) => x * 0.5 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
        Some(Activation::GeluTanh) => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        }
    }
}

/// `(ε_acc, ε_T)` of a float type.
fn eps<T: Numeric>() -> (f64, f64) {
    let e32 = f32::EPSILON as f64;
    match T::DTYPE {
        DType::F64 => (f64::EPSILON, f64::EPSILON),
        DType::F32 => (e32, e32),
        DType::F16 => (e32, f16::EPSILON.to_f64()),
        _ => (e32, bf16::EPSILON.to_f64()),
    }
}

/// `cases` random jobs of a float type against the `f64` reference.
fn check_float<T: Numeric>(seed: u64, cases: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let scalar = |r: &mut SmallRng| T::from_f64([0.5, -1.25, 2.0, -0.75][r.gen_range(0..4)]);
    let mut checked = 0usize;
    for _ in 0..cases {
        let case = Case::<T>::draw(&mut rng, scalar, &FLOAT_ACTS);
        checked += check_fixed_float(&case, rng.gen());
    }
    assert!(checked > 1000, "{} elements checked", checked);
}

/// One float job against the reference; the number of elements checked.
fn check_fixed_float<T: Numeric>(case: &Case<T>, seed: u64) -> usize {
    let mut rng = SmallRng::seed_from_u64(seed);
    let draw = |r: &mut SmallRng| T::from_f64(r.gen_range(-1.0..1.0));
    let (e_acc, e_t) = eps::<T>();
    let mut checked = 0;
    {
        let out = run_case(&mut rng, case, draw, T::from_f64(f64::NAN));
        let (m, k, n) = (case.m, case.k, case.n);
        let count: usize = case.batch.iter().product();
        let (alpha, beta) = (case.alpha.to_f64(), case.beta.to_f64());
        for bi in 0..count {
            for i in 0..m {
                for j in 0..n {
                    let (mut sum, mut abs) = (0.0f64, 0.0f64);
                    for p in 0..k {
                        let t = out.a[(bi * m + i) * k + p].to_f64()
                            * out.b[(bi * k + p) * n + j].to_f64();
                        sum += t;
                        abs += t.abs();
                    }
                    let at = (bi * m + i) * n + j;
                    let old = if beta != 0.0 {
                        beta * out.old[at].to_f64()
                    } else {
                        0.0
                    };
                    let bias = out.bias.as_ref().map_or(0.0, |b| b[j].to_f64());
                    let pre = alpha * sum + old + bias;
                    let s = alpha.abs() * abs + old.abs() + bias.abs();
                    let want = act_f64(case.act, pre);
                    let got = out.got[at].to_f64();
                    let twice = if e_acc == e_t { 2.0 * e_t * s } else { 0.0 };
                    // Below f16's normal range its spacing is absolute, 2^-24.
                    let sub = if T::DTYPE == DType::F16 {
                        2f64.powi(-24)
                    } else {
                        1e-300
                    };
                    let tol = 1.2 * 4.0 * e_acc * s + twice + e_t * want.abs() + sub;
                    assert!(
                        (got - want).abs() <= tol,
                        "{}: [{bi}, {i}, {j}] got {got}, want {want} (tol {tol}) in {case:?}",
                        T::NAME
                    );
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn f32_random_jobs() {
    check_float::<f32>(1, 150);
}

#[test]
fn f64_random_jobs() {
    check_float::<f64>(2, 150);
}

#[test]
fn f16_random_jobs() {
    check_float::<f16>(3, 150);
}

#[test]
fn bf16_random_jobs() {
    check_float::<bf16>(4, 150);
}

/// The integer types' exact values.
trait IntCase: Numeric {
    fn draw(rng: &mut SmallRng) -> Self;
    fn to_i128(self) -> i128;
    fn wrap(v: i128) -> Self;
}

macro_rules! int_case {
    ($($t:ty),*) => {$(
        impl IntCase for $t {
            fn draw(rng: &mut SmallRng) -> Self {
                rng.gen()
            }
            fn to_i128(self) -> i128 {
                self as i128
            }
            fn wrap(v: i128) -> Self {
                v as $t
            }
        }
    )*};
}
int_case!(i8, i16, i32, i64, u8, u16, u32, u64);

/// `cases` random jobs of an integer type against the `i128` reference (wrapping: products
/// of 64-bit values wrap in `i128`, which is exact modulo 2^64).
fn check_int<T: IntCase>(seed: u64, cases: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let acts = [None, Some(Activation::Relu)];
    let mut checked = 0usize;
    for _ in 0..cases {
        let case = Case::<T>::draw(&mut rng, T::draw, &acts);
        checked += check_fixed_int(&case, rng.gen());
    }
    assert!(checked > 1000, "{} elements checked", checked);
}

/// One integer job against the reference; the number of elements checked.
fn check_fixed_int<T: IntCase>(case: &Case<T>, seed: u64) -> usize {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut checked = 0;
    {
        // Garbage for `beta == 0`: a nonzero value (reading it could not show: 0·x = 0).
        let out = run_case(&mut rng, case, T::draw, T::wrap(0x5a5a_5a5a_5a5a_5a5a));
        let (m, k, n) = (case.m, case.k, case.n);
        let count: usize = case.batch.iter().product();
        let (alpha, beta) = (case.alpha.to_i128(), case.beta.to_i128());
        for bi in 0..count {
            for i in 0..m {
                for j in 0..n {
                    let mut sum = 0i128;
                    for p in 0..k {
                        let t = out.a[(bi * m + i) * k + p]
                            .to_i128()
                            .wrapping_mul(out.b[(bi * k + p) * n + j].to_i128());
                        sum = sum.wrapping_add(t);
                    }
                    let at = (bi * m + i) * n + j;
                    let mut v = alpha.wrapping_mul(sum);
                    if beta != 0 {
                        v = v.wrapping_add(beta.wrapping_mul(out.old[at].to_i128()));
                    }
                    v = v.wrapping_add(out.bias.as_ref().map_or(0, |b| b[j].to_i128()));
                    let mut want = T::wrap(v);
                    if case.act == Some(Activation::Relu) && want.to_i128() <= 0 {
                        want = T::ZERO;
                    }
                    assert_eq!(
                        out.got[at],
                        want,
                        "{}: [{bi}, {i}, {j}] in {case:?}",
                        T::NAME
                    );
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn int_random_jobs() {
    check_int::<i8>(11, 80);
    check_int::<i16>(12, 80);
    check_int::<i32>(13, 80);
    check_int::<i64>(14, 80);
    check_int::<u8>(15, 80);
    check_int::<u16>(16, 80);
    check_int::<u32>(17, 80);
    check_int::<u64>(18, 80);
}

/// Past the blocking of `gemm` and of the integer kernel (`KC = 256`, `NC = 512`, several
/// row blocks): a few large jobs with every form, bias and activation.
#[test]
fn large_jobs_cross_the_blocks() {
    use super::tests::Form;
    let forms = [
        [Form::Trans, Form::Step, Form::FlipCols],
        [Form::FlipRows, Form::Trans, Form::Trans],
        [Form::Plain, Form::FlipBatch, Form::Step],
    ];
    for (s, f) in forms.into_iter().enumerate() {
        let seed = 100 + s as u64;
        let mut rng = SmallRng::seed_from_u64(seed);
        let sizes = [(67, 301, 530), (130, 517, 37), (9, 260, 515)][s];
        let mut case = Case::<f32>::draw(&mut rng, |_| 0.5, &FLOAT_ACTS);
        (case.m, case.k, case.n, case.forms, case.batch) = (sizes.0, sizes.1, sizes.2, f, vec![2]);
        check_fixed_float(&case, seed);
        let mut icase = Case::<i32>::draw(&mut rng, i32::draw, &[None, Some(Activation::Relu)]);
        (icase.m, icase.k, icase.n, icase.forms, icase.batch) =
            (sizes.0, sizes.1, sizes.2, f, vec![2]);
        check_fixed_int(&icase, seed);
    }
}
