//! Reductions (`sum`, `prod`, `mean`, `max`, `min`, `argmax`, `argmin`) on every engine against
//! plain references: random shapes (rank 0-6, zero-size dims included), inputs viewed through
//! random permutations, steps, flips and offsets and broadcast, random dims (negative ones,
//! in any order, or all) and `keepdim`; then edges (empty, size-1, NaN, ties, typed errors),
//! sizes that split a reduction across blocks, stream order, and every kernel source through
//! NVRTC.
//!
//! Each test body is written once, generic over [`TestDevice`], and instantiated by
//! `test_device!` as `<name>_cpu` and `<name>_gpu` (the GPU instance runs with
//! `--features gpu-tests` and prints a skip line without a GPU).
//!
//! References: ndarray builds the same views of the same host storage; each output's elements
//! are collected in row-major order over the reduced dims ([`groups`]) and folded in `f64`
//! (floats) or `i128` / wrapping `i64` (integers), never by the code under test.
//!
//! # Tolerances
//!
//! - Integer results, `max`, `min`, `argmax` and `argmin` are exact on every type.
//! - Float sums of integer-valued data in [-8, 8] are exact: every partial sum, in any order,
//!   is an integer of magnitude at most `Σ|x| <= 729 * 8 < 2^24`, so representable in the
//!   `f32` (or `f64`) accumulator; the one rounding to the element type is the reference's.
//! - Float sums of arbitrary data: any order of `n - 1` additions in a type of unit roundoff
//!   `u` is within `γ(n-1) * Σ|x|`, `γ(k) = k u / (1 - k u)` (Higham, *Accuracy and Stability
//!   of Numerical Algorithms*, 2nd ed., §4.2), plus half an ulp of the result type for the
//!   final rounding (and the smallest subnormal, for results that round into that range).
//!   `u` is the accumulator's: `2^-24` for `f32`, `f16`, `bf16`; `2^-53` for `f64`.
//! - Products of factors in ±[0.9, 1.1]: every partial product of at most 729 such factors
//!   lies in [2^-111, 2^101], inside the normal `f32` range, so each multiplication has a
//!   relative error of at most `u` and the product, in any order, is within `γ(n-1)` relative.
//! - Means: the sum's bound divided by `n`, plus one rounding for the division.

#[allow(dead_code)]
use std::fmt::Debug;

use crate::common::device::{host, test_device, TestDevice};
use crate::harness::{
    broadcastable_from, random_shape, rng_for, upload_storage, Domain, Kind, Recipe, TestElem,
};
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use rand::rngs::SmallRng;
use rand::Rng;
use typestate_tensor::element::{DType, Element};
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::ops::reduce::{
    ArgMax, ArgMin, Max, Mean, Min, Prod, Reduction, Sum, SumAbs, SumSq,
};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

/// Random cases per op and element type: 40 on the CPU; 12 on the GPU, where each new
/// (op, type, form, rank) compiles a kernel with NVRTC (about 11 distinct kernels per op and
/// type at 40 cases, 6 at 12, so the GPU run compiles a few hundred, not a thousand).
fn cases<D: TestDevice>() -> usize {
    if std::any::TypeId::of::<D>() == std::any::TypeId::of::<Cpu>() {
        40
    } else {
        12
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs and references

/// A random strided input: host storage, its copy on the device, and a view of it (permuted,
/// stepped, flipped, offset) broadcast to `shape`.
struct Case<T: Element, D: TestDevice> {
    data: Vec<T>,
    recipe: Recipe,
    storage: Tensor<T, D>,
    shape: Vec<usize>,
}

impl<T: Element, D: TestDevice> Case<T, D> {
    fn new(dev: &D, rng: &mut SmallRng, gen: &mut impl FnMut(&mut SmallRng) -> T) -> Self {
        let shape = random_shape(rng);
        Self::with_shape(dev, rng, shape, gen)
    }

    fn with_shape(
        dev: &D,
        rng: &mut SmallRng,
        shape: Vec<usize>,
        gen: &mut impl FnMut(&mut SmallRng) -> T,
    ) -> Self {
        let src = if rng.gen_ratio(1, 4) {
            broadcastable_from(rng, &shape)
        } else {
            shape.clone()
        };
        let recipe = Recipe::random(rng, &src);
        let data: Vec<T> = (0..recipe.storage_len).map(|_| gen(rng)).collect();
        Case {
            storage: upload_storage(dev, &data),
            data,
            recipe,
            shape,
        }
    }

    fn view(&self) -> TensorView<'_, T, D> {
        self.recipe
            .view(&self.storage)
            .broadcast_to(&self.shape)
            .unwrap()
    }

    fn nd(&self) -> ArrayD<T> {
        self.recipe
            .nd(&self.data)
            .broadcast(IxDyn(&self.shape))
            .unwrap()
            .to_owned()
    }
}

/// The elements folded into each output: outputs in row-major order over the kept dims, each
/// output's elements in row-major order over the reduced dims (`dims`, any order).
fn groups<T: Copy>(a: &ArrayD<T>, dims: &[usize]) -> Vec<Vec<T>> {
    let shape = a.shape();
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
    let red: Vec<usize> = (0..shape.len()).filter(|d| dims.contains(d)).collect();
    let count = |ds: &[usize]| ds.iter().map(|&d| shape[d]).product::<usize>();
    let mut idx = vec![0usize; shape.len()];
    let mut out = Vec::with_capacity(count(&kept));
    for o in 0..count(&kept) {
        let mut rest = o;
        for &d in kept.iter().rev() {
            idx[d] = rest % shape[d];
            rest /= shape[d];
        }
        let mut g = Vec::with_capacity(count(&red));
        for j in 0..count(&red) {
            let mut rest = j;
            for &d in red.iter().rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            g.push(a[IxDyn(&idx)]);
        }
        out.push(g);
    }
    out
}

/// Random dims to reduce: all (`None`) or a random subset (each dim named at most once, in
/// random order, some as negative indices); `one`: exactly one dim, or all.
fn random_dims(rng: &mut SmallRng, rank: usize, one: bool) -> Option<Vec<isize>> {
    if rank == 0 || rng.gen_ratio(1, 4) {
        return None;
    }
    let mut dims: Vec<usize> = if one {
        vec![rng.gen_range(0..rank)]
    } else {
        (0..rank).filter(|_| rng.gen_bool(0.5)).collect()
    };
    for i in (1..dims.len()).rev() {
        dims.swap(i, rng.gen_range(0..=i));
    }
    Some(
        dims.into_iter()
            .map(|d| {
                if rng.gen_bool(0.3) {
                    d as isize - rank as isize
                } else {
                    d as isize
                }
            })
            .collect(),
    )
}

fn resolve(dims: &Option<Vec<isize>>, rank: usize) -> Vec<usize> {
    match dims {
        None => (0..rank).collect(),
        Some(ds) => ds
            .iter()
            .map(|&d| {
                if d < 0 {
                    (d + rank as isize) as usize
                } else {
                    d as usize
                }
            })
            .collect(),
    }
}

/// Runs [`cases`] random reductions with `op` over data from `gen` and checks each output with
/// `check(elements, got)`.
fn run_cases<D, T, R>(
    dev: &D,
    rng: &mut SmallRng,
    op: R,
    mut gen: impl FnMut(&mut SmallRng) -> T,
    check: impl Fn(&[T], R::Output) -> Result<(), String>,
) where
    D: TestDevice,
    T: TestElem,
    R: Reduction<T>,
    R::Output: Debug,
{
    for _ in 0..cases::<D>() {
        let case = Case::<T, D>::new(dev, rng, &mut gen);
        check_case(rng, op, &case, &check);
    }
}

fn check_case<D, T, R>(
    rng: &mut SmallRng,
    op: R,
    case: &Case<T, D>,
    check: &impl Fn(&[T], R::Output) -> Result<(), String>,
) where
    D: TestDevice,
    T: TestElem,
    R: Reduction<T>,
    R::Output: Debug,
{
    let rank = case.shape.len();
    let dims = random_dims(rng, rank, false);
    let resolved = resolve(&dims, rank);
    let keepdim = rng.gen_bool(0.5);
    let what = || {
        format!(
            "{} of {} shape {:?} over {dims:?} (keepdim {keepdim}), view {:?}",
            R::KIND,
            T::NAME,
            case.shape,
            case.view().layout()
        )
    };
    let got = case.view().reduce(op, dims.as_deref(), keepdim);
    let kept: Vec<usize> = (0..rank)
        .filter(|d| !resolved.contains(d))
        .map(|d| case.shape[d])
        .collect();
    let reduced: usize = resolved.iter().map(|&d| case.shape[d]).product();
    let num_out: usize = kept.iter().product();
    if !R::KIND.has_identity() && reduced == 0 && num_out > 0 {
        assert!(
            matches!(got, Err(Error::Layout(LayoutError::EmptyReduction { .. }))),
            "{}: {got:?}",
            what()
        );
        return;
    }
    let got = got.unwrap_or_else(|e| panic!("{}: {e}", what()));
    let want_shape: Vec<usize> = if keepdim {
        (0..rank)
            .map(|d| {
                if resolved.contains(&d) {
                    1
                } else {
                    case.shape[d]
                }
            })
            .collect()
    } else {
        kept
    };
    assert_eq!(got.shape(), want_shape.as_slice(), "{}", what());
    let values = host(&got);
    let gs = groups(&case.nd(), &resolved);
    assert_eq!(values.len(), gs.len(), "{}", what());
    for (o, (g, v)) in gs.iter().zip(values).enumerate() {
        if let Err(msg) = check(g, v) {
            panic!("{}: output {o} of {} elements: {msg}", what(), g.len());
        }
    }
}

/// Unit roundoff of the accumulator of `T`'s sums.
fn acc_u<T: Element>() -> f64 {
    if T::DTYPE == DType::F64 {
        f64::EPSILON / 2.0
    } else {
        f32::EPSILON as f64 / 2.0
    }
}

/// The smallest positive subnormal of `T`.
fn min_subnormal<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F16 => 2f64.powi(-24),
        DType::BF16 => 2f64.powi(-133),
        DType::F32 => 2f64.powi(-149),
        _ => 0.0,
    }
}

/// `γ(k) = k u / (1 - k u)`.
fn gamma(k: usize, u: f64) -> f64 {
    let ku = k as f64 * u;
    ku / (1.0 - ku)
}

/// `got` against `want` (computed in `f64`) within `tol` plus the final rounding to `T`.
fn close_f64<T: TestElem>(got: T, want: f64, tol: f64) -> Result<(), String> {
    let g = got.to_f64();
    let ok = if want.is_nan() {
        g.is_nan()
    } else if want.is_infinite() {
        g == want
    } else {
        let bound = tol + (want.abs() + tol) * T::EPS / 2.0 + min_subnormal::<T>();
        (g - want).abs() <= bound
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "got {got:?} ({g}), want {want} (tolerance {tol:e})"
        ))
    }
}

/// `T` as the sum's output rounds an exact value: once, from the `f32` accumulator (or `f64`).
fn round_once<T: Element>(v: f64) -> T {
    if T::DTYPE == DType::F64 {
        T::from_f64(v)
    } else {
        T::from_f32(v as f32)
    }
}

fn sum_f64<T: Element>(g: &[T]) -> (f64, f64) {
    g.iter().fold((0.0, 0.0), |(s, a), x| {
        (s + x.to_f64(), a + x.to_f64().abs())
    })
}

fn small_int<T: Element>(rng: &mut SmallRng) -> T {
    T::from_f64(rng.gen_range(-8i32..=8) as f64)
}

// ---------------------------------------------------------------------------------------------
// Tests: every op against its reference

macro_rules! for_floats {
    ($m:ident) => {
        $m!(f32);
        $m!(f64);
        $m!(f16);
        $m!(bf16);
    };
}

macro_rules! for_ints {
    ($m:ident) => {
        $m!(i32);
        $m!(i64);
        $m!(u8);
        $m!(i8);
        $m!(i16);
        $m!(u16);
        $m!(u32);
        $m!(u64);
    };
}

test_device!(
    sum_matches_reference,
    sum_matches_reference_cpu,
    sum_matches_reference_gpu
);
fn sum_matches_reference<D: TestDevice>(dev: &D) {
    macro_rules! float {
        ($t:ty) => {
            let mut rng = rng_for("sum exact", stringify!($t));
            run_cases::<D, $t, _>(dev, &mut rng, Sum, small_int, |g, got| {
                let (s, _) = sum_f64(g);
                let want: $t = round_once(s);
                (got == want)
                    .then_some(())
                    .ok_or(format!("got {got:?}, want {want:?}"))
            });
            let mut rng = rng_for("sum", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                Sum,
                |r| <$t>::random(r, Domain::Any),
                |g, got| {
                    let (s, a) = sum_f64(g);
                    close_f64(got, s, gamma(g.len(), acc_u::<$t>()) * a)
                },
            );
        };
    }
    for_floats!(float);
    macro_rules! int {
        ($t:ty) => {
            let mut rng = rng_for("sum", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                Sum,
                |r| <$t>::random(r, Domain::Any),
                |g, got: i64| {
                    let want = g.iter().map(|&x| x.int()).sum::<i128>() as i64;
                    (got == want)
                        .then_some(())
                        .ok_or(format!("got {got}, want {want}"))
                },
            );
        };
    }
    for_ints!(int);
    let mut rng = rng_for("sum", "bool");
    run_cases::<D, bool, _>(
        dev,
        &mut rng,
        Sum,
        |r| r.gen(),
        |g, got| {
            let want = g.iter().filter(|&&b| b).count() as i64;
            (got == want)
                .then_some(())
                .ok_or(format!("got {got}, want {want}"))
        },
    );
}

test_device!(
    prod_matches_reference,
    prod_matches_reference_cpu,
    prod_matches_reference_gpu
);
fn prod_matches_reference<D: TestDevice>(dev: &D) {
    macro_rules! float {
        ($t:ty) => {
            let mut rng = rng_for("prod", stringify!($t));
            let gen = |r: &mut SmallRng| {
                let m = r.gen_range(0.9..1.1);
                <$t>::from_f64(if r.gen_bool(0.5) { -m } else { m })
            };
            run_cases::<D, $t, _>(dev, &mut rng, Prod, gen, |g, got| {
                let want = g.iter().map(|x| x.to_f64()).product::<f64>();
                close_f64(got, want, gamma(g.len(), acc_u::<$t>()) * want.abs())
            });
        };
    }
    for_floats!(float);
    macro_rules! int {
        ($t:ty) => {
            let mut rng = rng_for("prod", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                Prod,
                |r| <$t>::random(r, Domain::Any),
                |g, got: i64| {
                    let want = g.iter().fold(1i64, |p, &x| p.wrapping_mul(x.int() as i64));
                    (got == want)
                        .then_some(())
                        .ok_or(format!("got {got}, want {want}"))
                },
            );
        };
    }
    for_ints!(int);
}

test_device!(
    mean_matches_reference,
    mean_matches_reference_cpu,
    mean_matches_reference_gpu
);
fn mean_matches_reference<D: TestDevice>(dev: &D) {
    macro_rules! float {
        ($t:ty) => {
            let mut rng = rng_for("mean", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                Mean,
                |r| <$t>::random(r, Domain::Any),
                |g, got| {
                    let (s, a) = sum_f64(g);
                    let n = g.len() as f64;
                    let u = acc_u::<$t>();
                    let want = s / n;
                    close_f64(got, want, gamma(g.len(), u) * a / n + u * want.abs())
                },
            );
        };
    }
    for_floats!(float);
}

test_device!(
    sum_abs_and_sum_sq_match_reference,
    sum_abs_and_sum_sq_match_reference_cpu,
    sum_abs_and_sum_sq_match_reference_gpu
);
/// `sum_abs` and `sum_sq` over random strided views against `f64` references: exact on small
/// integers (every partial sum is representable in the accumulator, so only the final rounding
/// to `T` remains), within Higham's bound on values in [-4, 4] with NaN, ±inf and -0.
fn sum_abs_and_sum_sq_match_reference<D: TestDevice>(dev: &D) {
    macro_rules! float {
        ($t:ty) => {
            let exact = |want: f64, got: $t| {
                let want: $t = round_once(want);
                (got == want)
                    .then_some(())
                    .ok_or(format!("got {got:?}, want {want:?}"))
            };
            let mut rng = rng_for("sum_abs exact", stringify!($t));
            run_cases::<D, $t, _>(dev, &mut rng, SumAbs, small_int, |g, got| {
                exact(g.iter().map(|x| x.to_f64().abs()).sum(), got)
            });
            let mut rng = rng_for("sum_sq exact", stringify!($t));
            run_cases::<D, $t, _>(dev, &mut rng, SumSq, small_int, |g, got| {
                exact(g.iter().map(|x| x.to_f64() * x.to_f64()).sum(), got)
            });
            let mut rng = rng_for("sum_abs", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                SumAbs,
                |r| <$t>::random(r, Domain::Any),
                |g, got| {
                    let a: f64 = g.iter().map(|x| x.to_f64().abs()).sum();
                    close_f64(got, a, gamma(g.len(), acc_u::<$t>()) * a)
                },
            );
            let mut rng = rng_for("sum_sq", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                SumSq,
                |r| <$t>::random(r, Domain::Any),
                |g, got| {
                    let q: f64 = g.iter().map(|x| x.to_f64() * x.to_f64()).sum();
                    // One more rounding per element: the square.
                    close_f64(got, q, gamma(g.len() + 1, acc_u::<$t>()) * q)
                },
            );
        };
    }
    for_floats!(float);
}

test_device!(
    sum_abs_and_sum_sq_methods,
    sum_abs_and_sum_sq_methods_cpu,
    sum_abs_and_sum_sq_methods_gpu
);
/// The method forms: all elements, one dim, several dims, keepdim, empty tensors, a transposed
/// view.
fn sum_abs_and_sum_sq_methods<D: TestDevice>(dev: &D) {
    let x = upload(dev, &[2, 3], vec![1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0]);
    assert_eq!(x.sum_abs().unwrap().item().unwrap(), 21.0);
    assert_eq!(x.sum_sq().unwrap().item().unwrap(), 91.0);
    assert_eq!(host(&x.sum_abs_dim(1, false).unwrap()), [6.0, 15.0]);
    assert_eq!(host(&x.sum_sq_dim(-2, true).unwrap()), [17.0, 29.0, 45.0]);
    assert_eq!(x.sum_sq_dim(0, true).unwrap().shape(), &[1, 3]);
    assert_eq!(host(&x.t().sum_abs_dim(0, false).unwrap()), [6.0, 15.0]);
    assert_eq!(host(&x.sum_abs_dims(&[0, 1], false).unwrap()), [21.0]);
    assert_eq!(
        host(&x.sum_sq_dims::<isize>(&[], false).unwrap()),
        host(&x.mul(&x).unwrap())
    );
    let e = upload(dev, &[0, 4], Vec::<f64>::new());
    assert_eq!(e.sum_abs().unwrap().item().unwrap(), 0.0);
    assert_eq!(host(&e.sum_sq_dim(0, false).unwrap()), [0.0; 4]);
    let h = upload(
        dev,
        &[3],
        vec![f16::from_f32(-1.5), f16::from_f32(2.0), f16::NAN],
    );
    assert!(h.sum_abs().unwrap().item().unwrap().is_nan());
}

/// The reference `max` (`LARGER`) or `min` of `g`: NaN if any element is NaN.
fn extreme<T: TestElem, const LARGER: bool>(g: &[T]) -> Option<T> {
    let mut best: Option<T> = None;
    for &x in g {
        #[allow(clippy::eq_op)]
        if x != x {
            return Some(x);
        }
        best = Some(match best {
            Some(b) if (LARGER && b >= x) || (!LARGER && b <= x) => b,
            _ => x,
        });
    }
    best
}

/// The reference `argmax` (`LARGER`) or `argmin`: the first NaN, else the first extreme.
fn arg_extreme<T: TestElem, const LARGER: bool>(g: &[T]) -> i64 {
    #[allow(clippy::eq_op)]
    if let Some(i) = g.iter().position(|&x| x != x) {
        return i as i64;
    }
    let best = extreme::<T, LARGER>(g).expect("a non-empty group");
    g.iter()
        .position(|&x| x == best)
        .expect("the extreme is an element") as i64
}

fn same_value<T: TestElem>(got: T, want: T) -> Result<(), String> {
    #[allow(clippy::eq_op)]
    let ok = if T::KIND == Kind::Float && want != want {
        got != got
    } else {
        got == want
    };
    ok.then_some(())
        .ok_or(format!("got {got:?}, want {want:?}"))
}

test_device!(
    max_min_match_reference,
    max_min_match_reference_cpu,
    max_min_match_reference_gpu
);
fn max_min_match_reference<D: TestDevice>(dev: &D) {
    macro_rules! each {
        ($t:ty, $dom:expr) => {
            let mut rng = rng_for("max", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                Max,
                |r| <$t>::random(r, $dom),
                |g, got| same_value(got, extreme::<$t, true>(g).unwrap()),
            );
            let mut rng = rng_for("min", stringify!($t));
            run_cases::<D, $t, _>(
                dev,
                &mut rng,
                Min,
                |r| <$t>::random(r, $dom),
                |g, got| same_value(got, extreme::<$t, false>(g).unwrap()),
            );
        };
    }
    macro_rules! float {
        ($t:ty) => {
            each!($t, Domain::Any);
        };
    }
    for_floats!(float);
    macro_rules! int {
        ($t:ty) => {
            each!($t, Domain::Any);
        };
    }
    for_ints!(int);
}

test_device!(
    argmax_argmin_match_reference,
    argmax_argmin_match_reference_cpu,
    argmax_argmin_match_reference_gpu
);
fn argmax_argmin_match_reference<D: TestDevice>(dev: &D) {
    // Quarters and small integers tie often; `Any` brings NaN, infinities and -0.0 (which
    // ties with 0.0).
    macro_rules! each {
        ($t:ty, $dom:expr) => {
            for dom in [$dom, Domain::Any] {
                let mut rng = rng_for("argmax", stringify!($t));
                run_cases::<D, $t, _>(
                    dev,
                    &mut rng,
                    ArgMax,
                    |r| <$t>::random(r, dom),
                    |g, got| {
                        let want = arg_extreme::<$t, true>(g);
                        (got == want)
                            .then_some(())
                            .ok_or(format!("got {got}, want {want} of {g:?}"))
                    },
                );
                let mut rng = rng_for("argmin", stringify!($t));
                run_cases::<D, $t, _>(
                    dev,
                    &mut rng,
                    ArgMin,
                    |r| <$t>::random(r, dom),
                    |g, got| {
                        let want = arg_extreme::<$t, false>(g);
                        (got == want)
                            .then_some(())
                            .ok_or(format!("got {got}, want {want} of {g:?}"))
                    },
                );
            }
        };
    }
    macro_rules! float {
        ($t:ty) => {
            each!($t, Domain::Quarters);
        };
    }
    for_floats!(float);
    macro_rules! int {
        ($t:ty) => {
            each!($t, Domain::Small);
        };
    }
    for_ints!(int);
    // The named one-dim forms agree with the generic form over one dim.
    let mut rng = rng_for("argmax_dim", "f32");
    for _ in 0..cases::<D>() {
        let case = Case::<f32, D>::new(dev, &mut rng, &mut |r| f32::random(r, Domain::Quarters));
        if case.shape.is_empty() || case.shape.contains(&0) {
            continue;
        }
        let d = rng.gen_range(0..case.shape.len()) as isize;
        let v = case.view();
        let a = host(&v.argmax_dim(d, true).unwrap());
        let b = host(&v.reduce(ArgMax, Some(&[d]), true).unwrap());
        assert_eq!(a, b);
        let want: Vec<i64> = groups(&case.nd(), &[d as usize])
            .iter()
            .map(|g| arg_extreme::<f32, false>(g))
            .collect();
        assert_eq!(
            host(&v.argmin_dim(d - case.shape.len() as isize, false).unwrap()),
            want
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Tests: the methods, edges and errors

fn upload<T: Element, D: TestDevice>(dev: &D, shape: &[usize], data: Vec<T>) -> Tensor<T, D> {
    dev.upload(&Tensor::from_vec(shape, data).unwrap())
}

test_device!(
    methods_and_shapes,
    methods_and_shapes_cpu,
    methods_and_shapes_gpu
);
fn methods_and_shapes<D: TestDevice>(dev: &D) {
    // [[1, 5, 2], [-4, 0.5, 3]]
    let x = upload(dev, &[2, 3], vec![1.0f32, 5.0, 2.0, -4.0, 0.5, 3.0]);
    assert_eq!(x.sum().unwrap().shape(), &[] as &[usize]);
    assert_eq!(x.sum().unwrap().item().unwrap(), 7.5);
    assert_eq!(host(&x.sum_dim(0, false).unwrap()), [-3.0, 5.5, 5.0]);
    assert_eq!(x.sum_dim(-1, true).unwrap().shape(), &[2, 1]);
    assert_eq!(host(&x.sum_dim(-1, true).unwrap()), [8.0, -0.5]);
    assert_eq!(x.sum_dims(&[1, 0], true).unwrap().shape(), &[1, 1]);
    assert_eq!(x.sum_dims(&[1, 0], true).unwrap().item().unwrap(), 7.5);
    // No dims: nothing reduced (NumPy's `axis=()`), the same values in the sum's type.
    assert_eq!(host(&x.sum_dims::<isize>(&[], false).unwrap()), host(&x));
    assert_eq!(x.prod().unwrap().item().unwrap(), -60.0);
    assert_eq!(host(&x.prod_dim(1, false).unwrap()), [10.0, -6.0]);
    assert_eq!(host(&x.prod_dims(&[0], false).unwrap()), [-4.0, 2.5, 6.0]);
    assert_eq!(x.mean().unwrap().item().unwrap(), 1.25);
    assert_eq!(host(&x.mean_dim(0, false).unwrap()), [-1.5, 2.75, 2.5]);
    assert_eq!(
        host(&x.mean_dims(&[-1], true).unwrap()),
        [8.0 / 3.0, -0.5 / 3.0]
    );
    assert_eq!(x.max().unwrap().item().unwrap(), 5.0);
    assert_eq!(host(&x.max_dim(0, false).unwrap()), [1.0, 5.0, 3.0]);
    assert_eq!(host(&x.max_dims(&[0, 1], false).unwrap()), [5.0]);
    assert_eq!(x.min().unwrap().item().unwrap(), -4.0);
    assert_eq!(host(&x.min_dim(1, true).unwrap()), [1.0, -4.0]);
    assert_eq!(host(&x.min_dims(&[1], false).unwrap()), [1.0, -4.0]);
    assert_eq!(x.argmax().unwrap().item().unwrap(), 1);
    assert_eq!(x.argmin().unwrap().item().unwrap(), 3);
    assert_eq!(host(&x.argmax_dim(0, false).unwrap()), [0i64, 0, 1]);
    assert_eq!(host(&x.argmin_dim(1, true).unwrap()), [0i64, 0]);
    assert_eq!(x.argmin_dim(1, true).unwrap().shape(), &[2, 1]);
    // Views reduce without a copy: transposed, flipped, broadcast.
    let t = x.t();
    assert_eq!(host(&t.sum_dim(1, false).unwrap()), [-3.0, 5.5, 5.0]);
    assert_eq!(host(&t.argmax_dim(0, false).unwrap()), [1i64, 2]);
    let f = x.flip(1).unwrap();
    assert_eq!(host(&f.argmax_dim(1, false).unwrap()), [1i64, 0]);
    let b = x.narrow(0, 0, 1).unwrap().broadcast_to(&[4, 3]).unwrap();
    assert_eq!(host(&b.sum_dim(0, false).unwrap()), [4.0, 20.0, 8.0]);
    // keepdim results broadcast against the input.
    let centred = (&x - &x.mean_dim(-1, true).unwrap()).unwrap();
    let s = host(&centred.sum_dim(-1, false).unwrap());
    assert!(s.iter().all(|v| v.abs() < 1e-6), "{s:?}");
    // Result types: integer and bool sums are i64; mean keeps the float type.
    let i = upload(dev, &[3], vec![i32::MAX, i32::MAX, 2]);
    let s: Tensor<i64, D> = i.sum().unwrap();
    assert_eq!(s.item().unwrap(), 2 * i64::from(i32::MAX) + 2);
    let m = x.gt(&dev.upload(&Tensor::scalar(1.0f32))).unwrap();
    let c: Tensor<i64, D> = m.sum_dim(1, false).unwrap();
    assert_eq!(host(&c), [2, 1]);
    let h = upload(
        dev,
        &[3],
        vec![f16::from_f32(1.0), f16::from_f32(2.0), f16::from_f32(4.0)],
    );
    let hm: Tensor<f16, D> = h.mean().unwrap();
    assert_eq!(hm.item().unwrap(), f16::from_f32(7.0 / 3.0));
    // The generic form.
    assert_eq!(x.reduce(Max, None, false).unwrap().item().unwrap(), 5.0);
    assert_eq!(
        host(&x.reduce(Sum, Some(&[0]), true).unwrap()),
        [-3.0, 5.5, 5.0]
    );
    // A rank-0 tensor reduces to itself.
    let z = dev.upload(&Tensor::scalar(3u8));
    assert_eq!(z.sum().unwrap().item().unwrap(), 3i64);
    assert_eq!(z.argmax().unwrap().item().unwrap(), 0);
    assert_eq!(z.max().unwrap().item().unwrap(), 3u8);
}

test_device!(edge_cases, edge_cases_cpu, edge_cases_gpu);
fn edge_cases<D: TestDevice>(dev: &D) {
    // Empty inputs: sum 0, prod 1, mean NaN; max and the arg ops have no identity.
    let e = upload(dev, &[0, 3], Vec::<f32>::new());
    assert_eq!(e.sum().unwrap().item().unwrap(), 0.0);
    assert_eq!(e.prod().unwrap().item().unwrap(), 1.0);
    assert!(e.mean().unwrap().item().unwrap().is_nan());
    assert_eq!(host(&e.sum_dim(0, false).unwrap()), [0.0; 3]);
    assert_eq!(host(&e.prod_dim(0, true).unwrap()), [1.0; 3]);
    assert!(host(&e.mean_dim(0, false).unwrap())
        .iter()
        .all(|v| v.is_nan()));
    for r in [e.max(), e.min(), e.max_dim(0, false)] {
        assert!(
            matches!(r, Err(Error::Layout(LayoutError::EmptyReduction { .. }))),
            "{r:?}"
        );
    }
    for r in [e.argmax(), e.argmin(), e.argmax_dim(0, true)] {
        assert!(
            matches!(r, Err(Error::Layout(LayoutError::EmptyReduction { .. }))),
            "{r:?}"
        );
    }
    let err = e.max().unwrap_err().to_string();
    assert!(
        err.contains("no identity") && err.contains("[0, 3]"),
        "{err}"
    );
    // ... unless the output is empty too: reducing the non-empty dim of [0, 3].
    let r = e.max_dim(1, false).unwrap();
    assert_eq!(r.shape(), &[0]);
    assert_eq!(e.argmin_dim(1, true).unwrap().shape(), &[0, 1]);
    // Size-1 dims.
    let one = upload(dev, &[1, 4, 1], vec![3i64, -7, 9, 9]);
    assert_eq!(host(&one.sum_dim(0, false).unwrap()), [3, -7, 9, 9]);
    assert_eq!(host(&one.max_dims(&[0, 2], true).unwrap()), [3, -7, 9, 9]);
    assert_eq!(host(&one.argmax_dim(1, false).unwrap()), [2]);
    assert_eq!(host(&one.argmax_dim(2, false).unwrap()), [0, 0, 0, 0]);
    // NaN propagates through max and min; the arg ops pick the first NaN.
    let n = upload(
        dev,
        &[2, 3],
        vec![1.0f64, f64::NAN, 3.0, -1.0, 4.0, f64::NAN],
    );
    assert!(n.max().unwrap().item().unwrap().is_nan());
    let m = host(&n.min_dim(0, false).unwrap());
    assert_eq!(m[0], -1.0);
    assert!(m[1].is_nan() && m[2].is_nan());
    assert_eq!(n.argmax().unwrap().item().unwrap(), 1);
    assert_eq!(n.argmin().unwrap().item().unwrap(), 1);
    assert_eq!(host(&n.argmax_dim(1, false).unwrap()), [1, 2]);
    assert_eq!(host(&n.argmin_dim(0, false).unwrap()), [1, 0, 1]);
    assert!(n.sum().unwrap().item().unwrap().is_nan());
    // Infinities: max of only -inf is -inf, a sum of +inf and -inf is NaN.
    let inf = upload(dev, &[3], vec![f32::NEG_INFINITY; 3]);
    assert_eq!(inf.max().unwrap().item().unwrap(), f32::NEG_INFINITY);
    assert_eq!(inf.argmax().unwrap().item().unwrap(), 0);
    let pm = upload(dev, &[2], vec![f32::INFINITY, f32::NEG_INFINITY]);
    assert!(pm.sum().unwrap().item().unwrap().is_nan());
    // Ties: the first index, also between 0.0 and -0.0.
    let t = upload(dev, &[6], vec![2.0f32, 7.0, -0.0, 7.0, 0.0, -3.0]);
    assert_eq!(t.argmax().unwrap().item().unwrap(), 1);
    let z = upload(dev, &[3], vec![-0.0f32, 0.0, 1.0]);
    assert_eq!(z.argmin().unwrap().item().unwrap(), 0);
    let z = upload(dev, &[3], vec![0.0f32, -0.0, -1.0]);
    assert_eq!(z.argmax().unwrap().item().unwrap(), 0);
    let u = upload(dev, &[5], vec![4u8, 255, 0, 255, 0]);
    assert_eq!(u.argmax().unwrap().item().unwrap(), 1);
    assert_eq!(u.argmin().unwrap().item().unwrap(), 2);
    assert_eq!(u.max().unwrap().item().unwrap(), 255);
    assert_eq!(u.sum().unwrap().item().unwrap(), 514);
    // Integer sums and products wrap in i64.
    let w = upload(dev, &[2], vec![i64::MAX, 1]);
    assert_eq!(w.sum().unwrap().item().unwrap(), i64::MIN);
    assert_eq!(w.prod().unwrap().item().unwrap(), i64::MAX);
    let w = upload(dev, &[2], vec![i64::MAX, 2]);
    assert_eq!(w.prod().unwrap().item().unwrap(), -2);
    // Typed errors for bad dims and for `item` of several elements.
    let x = upload(dev, &[2, 3], vec![1i32; 6]);
    assert!(matches!(
        x.sum_dim(2, false),
        Err(Error::Layout(LayoutError::DimOutOfRange {
            dim: 2,
            rank: 2,
            ..
        }))
    ));
    assert!(matches!(
        x.max_dims(&[-3], false),
        Err(Error::Layout(LayoutError::DimOutOfRange { dim: -3, .. }))
    ));
    assert!(matches!(
        x.sum_dims(&[1, -1], false),
        Err(Error::Layout(LayoutError::DuplicateDim { dim: 1, .. }))
    ));
    assert!(matches!(
        x.item(),
        Err(Error::Layout(LayoutError::NotOneElement { numel: 6, .. }))
    ));
    assert!(x
        .sum_dims(&[1, -1], false)
        .unwrap_err()
        .to_string()
        .contains("more than once"));
    // `item` of a one-element view anywhere in its storage.
    let v = x.narrow(0, 1, 1).unwrap().narrow(1, 2, 1).unwrap();
    assert_eq!(v.item().unwrap(), 1);
    let y = upload(dev, &[2, 3], vec![0.5f64, 1.5, 2.5, 3.5, 4.5, 5.5]);
    assert_eq!(
        y.narrow(1, 1, 1)
            .unwrap()
            .narrow(0, 1, 1)
            .unwrap()
            .item()
            .unwrap(),
        4.5
    );
}

test_device!(large_reductions, large_reductions_cpu, large_reductions_gpu);
/// Sizes that take the GPU's other paths: splits across blocks and a second pass (full,
/// first-axis, middle-axis and short-row reductions), vector column loads, misaligned
/// starts. Integer-valued data keeps float sums exact (partial sums stay below 2^24).
fn large_reductions<D: TestDevice>(dev: &D) {
    let mut rng = rng_for("large", "all");
    for shape in [
        vec![1 << 20],
        vec![4096, 96],
        vec![96, 4096],
        vec![33, 1000, 17],
        vec![200_000, 3],
        vec![7, 1 << 16],
    ] {
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|_| rng.gen_range(-4i32..=4) as f32).collect();
        let nd = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), data.clone()).unwrap();
        let host_t = Tensor::from_vec(&shape, data).unwrap();
        let t = dev.upload(&host_t);
        let rank = shape.len();
        for dims in
            (1u32..(1 << rank)).map(|m| (0..rank).filter(|d| m & (1 << d) != 0).collect::<Vec<_>>())
        {
            let idims: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
            let gs = groups(&nd, &dims);
            let sums = host(&t.sum_dims(&idims, false).unwrap());
            let maxs = host(&t.max_dims(&idims, false).unwrap());
            for (o, g) in gs.iter().enumerate() {
                let want: f64 = g.iter().map(|&x| x as f64).sum();
                assert_eq!(
                    sums[o] as f64, want,
                    "sum of {shape:?} over {dims:?}, output {o}"
                );
                assert_eq!(maxs[o], extreme::<f32, true>(g).unwrap());
            }
            if dims.len() == 1 {
                let a = host(&t.argmin_dim(idims[0], false).unwrap());
                for (o, g) in gs.iter().enumerate() {
                    assert_eq!(
                        a[o],
                        arg_extreme::<f32, false>(g),
                        "argmin of {shape:?} over {dims:?}"
                    );
                }
            }
        }
        // A view starting one element in (misaligned for vector loads), reduced along each dim.
        let flat = t.reshape(&[n]).unwrap().narrow(0, 1, n - 1).unwrap();
        let want: f64 = nd.iter().skip(1).map(|&x| x as f64).sum();
        assert_eq!(flat.sum().unwrap().item().unwrap() as f64, want);
    }
    // Half types accumulate in f32: 20000 * 0.5 is exact in f32 but would stall at 2048 in
    // f16 steps (ulp 2 there, so + 0.5 rounds away) and at 256 in bf16.
    let h = dev.upload(&Tensor::full(&[20_000], f16::from_f32(0.5)).unwrap());
    assert_eq!(h.sum().unwrap().item().unwrap(), f16::from_f32(10_000.0));
    let b = dev.upload(&Tensor::full(&[20_000], bf16::from_f32(0.5)).unwrap());
    assert_eq!(b.sum().unwrap().item().unwrap(), bf16::from_f32(10_000.0));
    assert_eq!(b.mean().unwrap().item().unwrap(), bf16::from_f32(0.5));
    // Arg ops over many blocks find a unique extreme far from the start, and the first of
    // several.
    let mut v = vec![0i32; 3 << 20];
    v[(3 << 20) - 5] = 9;
    v[(3 << 20) - 2] = 9;
    v[1 << 20] = -9;
    let t = upload(dev, &[3 << 20], v);
    assert_eq!(t.argmax().unwrap().item().unwrap(), (3 << 20) - 5);
    assert_eq!(t.argmin().unwrap().item().unwrap(), 1 << 20);
    let t2 = t.reshape(&[3, 1 << 20]).unwrap();
    // Row 1 holds -9 at column 0 and zeros after it: its first maximum is column 1.
    assert_eq!(
        host(&t2.argmax_dim(1, false).unwrap()),
        [0, 1, (1 << 20) - 5]
    );
    assert_eq!(host(&t2.argmax_dim(0, false).unwrap())[(1 << 20) - 5], 2);
}

test_device!(
    backend_reduce_writes_strided_outputs,
    backend_reduce_writes_strided_outputs_cpu,
    backend_reduce_writes_strided_outputs_gpu
);
/// `Backend::reduce` into random writable views (permuted, stepped, flipped, offset) of a
/// poisoned storage: every element of the view written with its result, nothing else touched.
fn backend_reduce_writes_strided_outputs<D: TestDevice>(dev: &D) {
    let mut rng = rng_for("backend", "strided outputs");
    for i in 0..cases::<D>() {
        // Small integers: sums exact in any order, and many ties.
        let case = Case::<f32, D>::new(dev, &mut rng, &mut small_int);
        let rank = case.shape.len();
        let dims = resolve(&random_dims(&mut rng, rank, false), rank);
        let kept: Vec<usize> = (0..rank)
            .filter(|d| !dims.contains(d))
            .map(|d| case.shape[d])
            .collect();
        let recipe = Recipe::random(&mut rng, &kept);
        let gs = groups(&case.nd(), &dims);
        let arg = i % 2 == 1;
        if arg && gs.first().is_some_and(|g| g.is_empty()) {
            continue; // no identity: covered by the other tests
        }
        macro_rules! check {
            ($t:ty, $poison:expr, $op:expr, $want:expr) => {{
                let poison: Vec<$t> = vec![$poison; recipe.storage_len];
                let mut out = upload_storage(dev, &poison);
                {
                    let mut dst = recipe.view_mut(&mut out);
                    dev.reduce($op, &case.view(), &dims, &mut dst).unwrap();
                }
                let mut want = poison.clone();
                for (w, g) in recipe.nd_mut(&mut want).iter_mut().zip(&gs) {
                    *w = $want(g);
                }
                assert_eq!(
                    D::storage_to_host(out.storage()),
                    want,
                    "{:?} over {dims:?}",
                    case.shape
                );
            }};
        }
        if arg {
            check!(i64, -7, ArgMax, |g: &Vec<f32>| arg_extreme::<f32, true>(g));
        } else {
            check!(f32, -1.0e30, Sum, |g: &Vec<f32>| g.iter().sum::<f32>());
        }
    }
}

/// An `f64` accumulation is a cast then a sum; `asum` is Caffe's `f64` sum of magnitudes.
#[test]
fn f64_sums_through_a_cast_and_asum() {
    let t = Tensor::from_vec(&[3], vec![1u8, 2, 250]).unwrap();
    let wide = t.broadcast_to(&[4, 3]).unwrap().cast::<f64>().unwrap();
    assert_eq!(wide.sum().unwrap().item().unwrap(), 4.0 * 253.0);
    let f = Tensor::from_vec(&[2], vec![1.0e8f32, 1.0]).unwrap();
    assert_eq!(f.asum(), 100_000_001.0);
    let cpu: Tensor<i64, Cpu> = t.sum().unwrap();
    assert_eq!(cpu.item().unwrap(), 253);
}

// ---------------------------------------------------------------------------------------------
// GPU only: stream order, and more than 2^31 elements

#[cfg(test)]
mod gpu {
    use super::*;
    use std::time::Duration;
    use typestate_tensor::gpu::{Gpu, GpuStorage};
    use typestate_tensor::layout::Layout;

    const WINDOW: Duration = Duration::from_millis(40);

    fn gpu_or_skip(test: &str) -> Option<Gpu> {
        crate::common::device::gpu_or_skip(test)
    }

    /// A reduction on the default stream reads data pushed on another stream behind a sleep,
    /// and a read of its result on another stream waits for it (also for a split reduction
    /// and its second pass).
    #[test]
    #[cfg_attr(
        not(feature = "gpu-tests"),
        ignore = "needs a GPU: cargo test --features gpu-tests"
    )]
    fn reductions_keep_stream_order_gpu() {
        let Some(gpu) = gpu_or_skip("reductions_keep_stream_order_gpu") else {
            return;
        };
        for n in [1000usize, 1 << 21] {
            let s = gpu.new_stream().unwrap();
            let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
            let want: f64 = x.iter().map(|&v| v as f64).sum();
            let mut a = GpuStorage::<f32>::zeros(&gpu, n, &s).unwrap();
            s.sleep(WINDOW).unwrap();
            a.copy_from_host_async(&x, &s).unwrap().detach(); // behind the sleep on s
            let layout = Layout::contiguous(&[n]).unwrap();
            let v = TensorView::new(&a, layout, &gpu).unwrap();
            // Default stream: must wait for the push on s.
            gpu.default_stream().sleep(WINDOW).unwrap();
            let total = v.sum().unwrap();
            let m = v.max_dims(&[0], false).unwrap();
            // Read back on another stream: must wait for the default stream's kernels.
            let other = gpu.new_stream().unwrap();
            let (storage, _, _) = total.into_parts();
            assert_eq!(storage.to_vec(&other).unwrap()[0] as f64, want, "n = {n}");
            let (storage, _, _) = m.into_parts();
            assert_eq!(storage.to_vec(&other).unwrap()[0], 3.0);
        }
    }

    /// More than 2^31 elements (u8, 2049 * 2^20): 64-bit indices, an argmax past 2^31.
    #[test]
    #[ignore = "slow, 7 GB of GPU memory: cargo test --features gpu-tests -- --ignored"]
    fn more_than_2_pow_31_elements_gpu() {
        let Some(gpu) = gpu_or_skip("more_than_2_pow_31_elements_gpu") else {
            return;
        };
        const ROWS: usize = 2049;
        const COLS: usize = 1 << 20;
        let pattern: Vec<u8> = (0..COLS).map(|i| (i % 201) as u8).collect();
        let row_sum: i64 = pattern.iter().map(|&p| i64::from(p)).sum();
        let p = Tensor::from_vec(&[1, COLS], pattern)
            .unwrap()
            .to_gpu(&gpu)
            .unwrap();
        let x = p.broadcast_to(&[ROWS, COLS]).unwrap();
        // The broadcast view itself: 2^31 + 2^20 elements read from 1 MiB.
        assert_eq!(x.sum().unwrap().item().unwrap(), ROWS as i64 * row_sum);
        // A real buffer, with one element raised to a unique maximum near the end.
        let k = 12_345usize;
        let mut c = vec![0u8; ROWS];
        c[ROWS - 1] = 1;
        let mut q = vec![0u8; COLS];
        q[k] = 1;
        let c = Tensor::from_vec(&[ROWS, 1], c)
            .unwrap()
            .to_gpu(&gpu)
            .unwrap();
        let q = Tensor::from_vec(&[1, COLS], q)
            .unwrap()
            .to_gpu(&gpu)
            .unwrap();
        let bump = (&c * &q).unwrap();
        let y = (&x + &bump).unwrap();
        drop(bump);
        assert_eq!(y.numel(), ROWS * COLS);
        assert_eq!(y.sum().unwrap().item().unwrap(), ROWS as i64 * row_sum + 1);
        assert_eq!(y.max().unwrap().item().unwrap(), 201);
        let flat = ((ROWS - 1) * COLS + k) as i64;
        assert!(flat > i64::from(i32::MAX));
        assert_eq!(y.argmax().unwrap().item().unwrap(), flat);
        assert_eq!(y.argmin().unwrap().item().unwrap(), 0);
        let rows = y.argmax_dim(1, false).unwrap().to_cpu().unwrap().into_vec();
        assert_eq!(rows[ROWS - 1], k as i64);
        assert_eq!(rows[0], 200);
        let cols = y.sum_dim(0, false).unwrap().to_cpu().unwrap().into_vec();
        assert_eq!(cols[k], ROWS as i64 * i64::from((k % 201) as u8) + 1);
        assert_eq!(cols[7], ROWS as i64 * 7);
    }
}
