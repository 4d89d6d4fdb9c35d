//! The first-hour basics (issue 16, points 3 and 4): scalar and owned operators, compound
//! assignment, comparisons with scalars, constructors, `cat` / `stack`, printing, indexing,
//! iteration, equality and conversions.
//!
//! Tests that mean the same on every device are written once, generic over [`TestDevice`],
//! and instantiated by `test_device!` as `<name>_cpu` and `<name>_gpu` (the GPU variant runs
//! with `--features gpu-tests`; it prints a skip line without a GPU). Inputs are random
//! strided views (sliced with steps, permuted, flipped) of random non-zero data made on the
//! host; references are plain loops over ndarray views of the same data, which never go
//! through the crate's ops. The host-only tests at the end (iteration, indexing, equality,
//! conversions) run on the CPU: on a GPU those calls do not compile (`ui_tests/`).

use crate::common::device::{host, test_device, TestDevice};
use ndarray::{ArrayD, Axis, Dimension, IxDyn, Slice};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::layout::Layout;
use typestate_tensor::tensor::{random::philox4x32_10, Tensor};
use typestate_tensor::{Cpu, Element};

// ---- random strided inputs ---------------------------------------------------------------

/// How a strided case is derived from a contiguous buffer: a step per dim of the buffer,
/// then a permutation, then flips of some dims.
#[derive(Clone, Debug)]
struct Recipe {
    big: Vec<usize>,
    steps: Vec<usize>,
    perm: Vec<usize>,
    flips: Vec<usize>,
}

impl Recipe {
    fn random(rng: &mut SmallRng, rank: usize, max: usize) -> Self {
        let steps: Vec<usize> = (0..rank).map(|_| rng.gen_range(1..=2)).collect();
        let big: Vec<usize> = steps.iter().map(|&s| s * rng.gen_range(1..=max)).collect();
        let mut perm: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            perm.swap(i, rng.gen_range(0..=i));
        }
        let flips = (0..rank).filter(|_| rng.gen_bool(0.3)).collect();
        Recipe {
            big,
            steps,
            perm,
            flips,
        }
    }

    /// The layout, through the crate's layout methods.
    fn layout(&self) -> Layout {
        let mut l = Layout::contiguous(&self.big).unwrap();
        for (d, (&n, &s)) in self.big.iter().zip(&self.steps).enumerate() {
            l = l.slice(d as isize, 0, n, s as isize).unwrap();
        }
        l = l.permute(&self.perm).unwrap();
        for &d in &self.flips {
            l = l.flip(d as isize).unwrap();
        }
        l
    }

    /// The same view of `data` through ndarray (the reference), owned, in logical order.
    fn reference<T: Clone>(&self, data: &[T]) -> ArrayD<T> {
        let a = ArrayD::from_shape_vec(IxDyn(&self.big), data.to_vec()).unwrap();
        let mut v = a.view();
        for (d, &s) in self.steps.iter().enumerate() {
            v.slice_axis_inplace(Axis(d), Slice::new(0, None, s as isize));
        }
        let mut v = v.permuted_axes(IxDyn(&self.perm));
        for &d in &self.flips {
            v.invert_axis(Axis(d));
        }
        v.to_owned()
    }
}

/// A strided tensor on `dev` holding random values from `gen`, and its ndarray reference.
fn strided<T: Element, D: TestDevice>(
    dev: &D,
    rng: &mut SmallRng,
    rank: usize,
    gen: impl Fn(&mut SmallRng) -> T,
) -> (Tensor<T, D>, ArrayD<T>) {
    let recipe = Recipe::random(rng, rank, 4);
    let n: usize = recipe.big.iter().product();
    let data: Vec<T> = (0..n).map(|_| gen(rng)).collect();
    let mut t = dev.upload(&Tensor::from_vec(&recipe.big, data.clone()).unwrap());
    t.set_layout(recipe.layout()).unwrap();
    (t, recipe.reference(&data))
}

/// A non-zero `f32` in `[-8, 8]` with a few significant bits, so sums and products are exact.
fn small_f32(rng: &mut SmallRng) -> f32 {
    let v = rng.gen_range(-32i32..=32) as f32 / 4.0;
    if v == 0.0 {
        0.75
    } else {
        v
    }
}

fn small_i32(rng: &mut SmallRng) -> i32 {
    rng.gen_range(-1000..=1000) | 1
}

fn flat<T: Clone>(a: &ArrayD<T>) -> Vec<T> {
    a.iter().cloned().collect()
}

// ---- operators on every device -----------------------------------------------------------

test_device!(
    scalar_operators_match_loops,
    scalar_operators_match_loops_cpu,
    scalar_operators_match_loops_gpu
);
fn scalar_operators_match_loops<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(1);
    for case in 0..12 {
        let rank = case % 4;
        let (x, r) = strided(dev, &mut rng, rank, small_f32);
        let s = small_f32(&mut rng);
        let map = |f: &dyn Fn(f32) -> f32| r.iter().map(|&a| f(a)).collect::<Vec<_>>();
        assert_eq!(host(&(&x + s).unwrap()), map(&|a| a + s));
        assert_eq!(host(&(&x - s).unwrap()), map(&|a| a - s));
        assert_eq!(host(&(&x * s).unwrap()), map(&|a| a * s));
        assert_eq!(host(&(&x / s).unwrap()), map(&|a| a / s));
        assert_eq!(host(&(s + &x).unwrap()), map(&|a| s + a));
        assert_eq!(host(&(s - &x).unwrap()), map(&|a| s - a));
        assert_eq!(host(&(s * &x).unwrap()), map(&|a| s * a));
        assert_eq!(host(&(s / &x).unwrap()), map(&|a| s / a));
        // Views by value, and the negation of owned tensors and views.
        assert_eq!(host(&(x.t() * s).unwrap()), {
            let t = r.t();
            t.iter().map(|&a| a * s).collect::<Vec<_>>()
        });
        assert_eq!(host(&(-x.view()).unwrap()), map(&|a| -a));
        let owned = x.try_clone().unwrap();
        assert_eq!(host(&(-owned).unwrap()), map(&|a| -a));
        // Results of out-of-place operators are row-major.
        let y = (&x * s).unwrap();
        assert_eq!(y.shape(), r.shape());
        assert!(y.layout().is_contiguous());
    }
    // Integers: wrapping arithmetic and 0 for a division by zero, on the left and right.
    for case in 0..6 {
        let (x, r) = strided(dev, &mut rng, case % 3 + 1, small_i32);
        let s = rng.gen_range(-50..50);
        let map = |f: &dyn Fn(i32) -> i32| r.iter().map(|&a| f(a)).collect::<Vec<_>>();
        assert_eq!(host(&(&x * s).unwrap()), map(&|a| a.wrapping_mul(s)));
        assert_eq!(host(&(&x - s).unwrap()), map(&|a| a.wrapping_sub(s)));
        let div = |a: i32, b: i32| if b == 0 { 0 } else { a.wrapping_div(b) };
        assert_eq!(host(&(&x / s).unwrap()), map(&|a| div(a, s)));
        assert_eq!(host(&(s / &x).unwrap()), map(&|a| div(s, a)));
        assert_eq!(host(&(&x / 0).unwrap()), map(&|_| 0));
    }
}

test_device!(
    tensor_operators_broadcast_every_form,
    tensor_operators_broadcast_every_form_cpu,
    tensor_operators_broadcast_every_form_gpu
);
fn tensor_operators_broadcast_every_form<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(2);
    for _ in 0..8 {
        let (x, rx) = strided(dev, &mut rng, 2, small_f32);
        // A row to broadcast against `x`, itself a strided view.
        let n = x.shape()[1];
        let row_data: Vec<f32> = (0..2 * n).map(|_| small_f32(&mut rng)).collect();
        let row_big = dev.upload(&Tensor::from_vec(&[2 * n], row_data.clone()).unwrap());
        let row = row_big.slice(0, 0, 2 * n, 2).unwrap();
        let rrow: Vec<f32> = row_data.iter().step_by(2).copied().collect();
        let expect = |f: &dyn Fn(f32, f32) -> f32| {
            let mut out = Vec::new();
            for line in rx.outer_iter() {
                for (a, b) in line.iter().zip(&rrow) {
                    out.push(f(*a, *b));
                }
            }
            out
        };
        assert_eq!(host(&(&x + &row).unwrap()), expect(&|a, b| a + b));
        assert_eq!(host(&(&x - row.clone()).unwrap()), expect(&|a, b| a - b));
        assert_eq!(host(&(x.view() * &row).unwrap()), expect(&|a, b| a * b));
        // Owned on the left: the result reuses its storage when the right operand
        // broadcasts to its shape (then the result keeps its strides).
        let owned = x.try_clone().unwrap();
        let key = D::storage_key(owned.storage());
        let sum = (owned + &row).unwrap();
        assert_eq!(D::storage_key(sum.storage()), key, "storage reused");
        assert_eq!(host(&sum), expect(&|a, b| a + b));
        let quotient = (x.try_clone().unwrap() / row.clone()).unwrap();
        assert_eq!(host(&quotient), expect(&|a, b| a / b));
        // A row on the left broadcasts to a new, larger tensor.
        let row_owned = row.contiguous().unwrap();
        let diff = (row_owned - &x).unwrap();
        assert_eq!(diff.shape(), x.shape());
        assert_eq!(host(&diff), expect(&|a, b| b - a));
    }
    // Mismatched shapes: an error naming both shapes; consumed operands come back.
    let a = dev.upload(&Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap());
    let b = dev.upload(&Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap());
    let err = (&a + &b).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::BroadcastMismatch { .. })
    ));
    let back = (a.try_clone().unwrap() * &b).unwrap_err();
    assert!(matches!(
        back.error(),
        Error::Layout(LayoutError::BroadcastMismatch { .. })
    ));
    assert_eq!(host(&back.into_inner()), host(&a));
    let back = (a.try_clone().unwrap() - b.try_clone().unwrap()).unwrap_err();
    let (a2, b2) = back.into_inner();
    assert_eq!((host(&a2), host(&b2)), (host(&a), host(&b)));
}

test_device!(
    compound_assignment_updates_in_place,
    compound_assignment_updates_in_place_cpu,
    compound_assignment_updates_in_place_gpu
);
fn compound_assignment_updates_in_place<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(3);
    for case in 0..8 {
        let (mut x, r) = strided(dev, &mut rng, case % 3 + 1, small_f32);
        let (s, t) = (small_f32(&mut rng), small_f32(&mut rng));
        let other = dev.upload(
            &Tensor::from_vec(
                r.shape(),
                (0..r.len()).map(|_| small_f32(&mut rng)).collect(),
            )
            .unwrap(),
        );
        let o = host(&other);
        let key = D::storage_key(x.storage());
        x += &other;
        x *= s;
        x -= t;
        x /= other.view();
        assert_eq!(D::storage_key(x.storage()), key);
        let expect: Vec<f32> = r
            .iter()
            .zip(&o)
            .map(|(&a, &b)| ((a + b) * s - t) / b)
            .collect();
        assert_eq!(host(&x), expect);
    }
    // Through a writable view: only the view's elements change.
    let base: Vec<i64> = (1..=12).collect();
    let mut t = dev.upload(&Tensor::from_vec(&[3, 4], base.clone()).unwrap());
    {
        let mut corner = t.view_mut().narrow(0, 1, 2).unwrap().t();
        corner *= 10;
        corner += 1;
    }
    let mut expect = base;
    for v in &mut expect[4..] {
        *v = *v * 10 + 1;
    }
    assert_eq!(host(&t), expect);
}

test_device!(
    comparisons_take_scalars_and_tensors,
    comparisons_take_scalars_and_tensors_cpu,
    comparisons_take_scalars_and_tensors_gpu
);
fn comparisons_take_scalars_and_tensors<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(4);
    for case in 0..6 {
        let (x, r) = strided(dev, &mut rng, case % 4, small_f32);
        let s = small_f32(&mut rng);
        let cmp = |f: &dyn Fn(f32) -> bool| r.iter().map(|&a| f(a)).collect::<Vec<_>>();
        assert_eq!(host(&x.gt(s).unwrap()), cmp(&|a| a > s));
        assert_eq!(host(&x.ge(s).unwrap()), cmp(&|a| a >= s));
        assert_eq!(host(&x.lt(s).unwrap()), cmp(&|a| a < s));
        assert_eq!(host(&x.le(s).unwrap()), cmp(&|a| a <= s));
        assert_eq!(host(&x.eq(s).unwrap()), cmp(&|a| a == s));
        assert_eq!(host(&x.ne(s).unwrap()), cmp(&|a| a != s));
        assert_eq!(host(&x.gt(&x).unwrap()), cmp(&|_| false));
        // Scalars elsewhere: `where_`, `clamp`, `maximum`, in place.
        let mask = x.gt(0.0).unwrap();
        let relu = Tensor::where_cond(&mask, &x, 0.0).unwrap();
        assert_eq!(
            host(&relu),
            r.iter()
                .map(|&a| if a > 0.0 { a } else { 0.0 })
                .collect::<Vec<_>>()
        );
        let c = x.clamp(-1.0, 1.5).unwrap();
        assert_eq!(
            host(&c),
            r.iter().map(|&a| a.clamp(-1.0, 1.5)).collect::<Vec<_>>()
        );
        let m = x.maximum(s).unwrap();
        assert_eq!(host(&m), r.iter().map(|&a| a.max(s)).collect::<Vec<_>>());
        let mut y = x.try_clone().unwrap();
        y.sub_(s).unwrap();
        y.minimum_(0.5).unwrap();
        assert_eq!(
            host(&y),
            r.iter().map(|&a| (a - s).min(0.5)).collect::<Vec<_>>()
        );
    }
}

// ---- constructors on every device --------------------------------------------------------

test_device!(
    constructors_match_loops,
    constructors_match_loops_cpu,
    constructors_match_loops_gpu
);
fn constructors_match_loops<D: TestDevice>(dev: &D) {
    assert_eq!(
        host(&Tensor::<f32, D>::ones_on(&[2, 3], dev).unwrap()),
        vec![1.0; 6]
    );
    assert_eq!(
        host(&Tensor::<bool, D>::ones_on(&[3], dev).unwrap()),
        vec![true; 3]
    );
    for n in [0usize, 1, 4, 7] {
        let eye = Tensor::<i32, D>::eye_on(n, dev).unwrap();
        assert_eq!(eye.shape(), [n, n]);
        let expect: Vec<i32> = (0..n * n).map(|k| i32::from(k / n == k % n)).collect();
        assert_eq!(host(&eye), expect);
    }
    // arange_step: count ceil((end - start) / step), values start + i * step.
    let cases: [(f64, f64, f64); 5] = [
        (0.0, 1.0, 0.25),
        (1.5, -2.0, -0.5),
        (3.0, 3.0, 1.0),
        (0.0, 1.0, -1.0),
        (-1.0, 2.0, 0.7),
    ];
    for (a, b, s) in cases {
        let t = Tensor::<f64, D>::arange_step_on(a, b, s, dev).unwrap();
        let count = ((b - a) / s).ceil().max(0.0) as usize;
        let expect: Vec<f64> = (0..count).map(|i| a + i as f64 * s).collect();
        assert_eq!(host(&t), expect, "arange_step({a}, {b}, {s})");
    }
    assert_eq!(
        host(&Tensor::<i64, D>::arange_step_on(10, -3, -4, dev).unwrap()),
        vec![10, 6, 2, -2]
    );
    for step in [0.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            Tensor::<f64, D>::arange_step_on(0.0, 1.0, step, dev),
            Err(Error::Layout(LayoutError::InvalidRange { .. }))
        ));
    }
    // linspace: both ends exact, evenly spaced.
    for steps in [0usize, 1, 2, 5, 11] {
        let t = Tensor::<f64, D>::linspace_on(-1.0, 2.0, steps, dev).unwrap();
        let v = host(&t);
        assert_eq!(v.len(), steps);
        if steps >= 1 {
            assert_eq!(v[0], -1.0);
        }
        if steps >= 2 {
            assert_eq!(v[steps - 1], 2.0);
            let h = 3.0 / (steps - 1) as f64;
            for (i, x) in v.iter().enumerate() {
                assert!((x - (-1.0 + i as f64 * h)).abs() < 1e-12, "{v:?}");
            }
        }
    }
    // Seeded random values: exactly the CPU's, deterministic, different per seed.
    for shape in [&[0usize][..], &[5], &[3, 7], &[2, 3, 5]] {
        let r = Tensor::<f32, D>::rand_on(shape, 11, dev).unwrap();
        assert_eq!(host(&r), Tensor::<f32>::rand(shape, 11).unwrap().to_vec());
        let n = Tensor::<f64, D>::randn_on(shape, 11, dev).unwrap();
        assert_eq!(host(&n), Tensor::<f64>::randn(shape, 11).unwrap().to_vec());
    }
    assert_ne!(
        host(&Tensor::<f32, D>::rand_on(&[8], 1, dev).unwrap()),
        host(&Tensor::<f32, D>::rand_on(&[8], 2, dev).unwrap())
    );
    // `*_like` take the shape and device of any view, and are row-major.
    let mut rng = SmallRng::seed_from_u64(5);
    let (x, r) = strided(dev, &mut rng, 3, small_f32);
    let z = x.t().zeros_like().unwrap();
    assert_eq!(z.shape(), r.t().shape());
    assert!(z.layout().is_contiguous());
    assert_eq!(host(&z), vec![0.0; r.len()]);
    assert_eq!(host(&x.ones_like().unwrap()), vec![1.0; r.len()]);
    assert_eq!(host(&x.full_like(2.5).unwrap()), vec![2.5; r.len()]);
    // from_slice_on and item.
    let t = Tensor::<u8, D>::from_slice_on(&[2, 2], &[1, 2, 3, 4], dev).unwrap();
    assert_eq!(host(&t), vec![1, 2, 3, 4]);
    assert!(matches!(
        Tensor::<u8, D>::from_slice_on(&[3], &[1, 2], dev),
        Err(Error::Layout(LayoutError::LengthMismatch { .. }))
    ));
    assert_eq!(
        t.narrow(0, 1, 1)
            .unwrap()
            .narrow(1, 0, 1)
            .unwrap()
            .item()
            .unwrap(),
        3
    );
    assert!(matches!(
        t.item(),
        Err(Error::Layout(LayoutError::NotOneElement { numel: 4, .. }))
    ));
}

// ---- cat and stack on every device -------------------------------------------------------

test_device!(
    cat_and_stack_match_ndarray,
    cat_and_stack_match_ndarray_cpu,
    cat_and_stack_match_ndarray_gpu
);
fn cat_and_stack_match_ndarray<D: TestDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(6);
    for case in 0..10 {
        let rank = case % 3 + 1;
        let (a, ra) = strided(dev, &mut rng, rank, small_i32);
        let dim = rng.gen_range(0..rank);
        // A second tensor of the same shape but another size along `dim`, also strided.
        let mut shape = ra.shape().to_vec();
        shape[dim] = rng.gen_range(0..4);
        let n: usize = shape.iter().product();
        let data: Vec<i32> = (0..n).map(|_| small_i32(&mut rng)).collect();
        let rb = ArrayD::from_shape_vec(IxDyn(&shape), data.clone()).unwrap();
        let b = dev.upload(&Tensor::from_vec(&shape, data).unwrap());
        let joined = Tensor::cat(&[a.view(), b.view(), a.view()], dim as isize).unwrap();
        let expect = ndarray::concatenate(Axis(dim), &[ra.view(), rb.view(), ra.view()]).unwrap();
        assert_eq!(joined.shape(), expect.shape());
        assert_eq!(host(&joined), flat(&expect));
        // Negative dims count from the end.
        let again = Tensor::cat(&[&a, &b], dim as isize - rank as isize).unwrap();
        let expect2 = ndarray::concatenate(Axis(dim), &[ra.view(), rb.view()]).unwrap();
        assert_eq!(host(&again), flat(&expect2));
        // stack: a new dim anywhere in 0..=rank.
        let new_dim = rng.gen_range(0..=rank);
        let c = (&a * 3).unwrap();
        let rc = ra.mapv(|v| v.wrapping_mul(3));
        let stacked = Tensor::stack(&[a.view(), c.view()], new_dim as isize).unwrap();
        let expect3 = ndarray::stack(Axis(new_dim), &[ra.view(), rc.view()]).unwrap();
        assert_eq!(stacked.shape(), expect3.shape());
        assert_eq!(host(&stacked), flat(&expect3));
    }
    // Errors: empty list, mismatched shapes (naming the tensor), dims out of range.
    let a = dev.upload(&Tensor::from_vec(&[2, 3], (0..6).collect::<Vec<i32>>()).unwrap());
    let b = dev.upload(&Tensor::from_vec(&[3, 2], (0..6).collect::<Vec<i32>>()).unwrap());
    let none: [&Tensor<i32, D>; 0] = [];
    assert!(matches!(
        Tensor::cat(&none, 0),
        Err(Error::Layout(LayoutError::NoTensors { op: "cat" }))
    ));
    assert!(matches!(
        Tensor::stack(&none, 0),
        Err(Error::Layout(LayoutError::NoTensors { op: "stack" }))
    ));
    match Tensor::cat(&[&a, &a, &b], 0) {
        Err(Error::Layout(LayoutError::JoinMismatch {
            index: 2,
            dim: 0,
            expected,
            got,
            ..
        })) => assert_eq!((expected, got), (vec![2, 3], vec![3, 2])),
        other => panic!("{other:?}"),
    }
    match Tensor::stack(&[&a, &b], 1) {
        Err(Error::Layout(LayoutError::JoinMismatch {
            index: 1,
            expected,
            got,
            ..
        })) => assert_eq!((expected, got), (vec![2, 3], vec![3, 2])),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Tensor::cat(&[&a], 2),
        Err(Error::Layout(LayoutError::DimOutOfRange { .. }))
    ));
    assert!(matches!(
        Tensor::stack(&[&a], 3),
        Err(Error::Layout(LayoutError::DimOutOfRange { .. }))
    ));
}

// ---- printing on every device ------------------------------------------------------------

/// `Display` text with the device suffix a GPU adds.
fn suffix<D: TestDevice>(dev: &D) -> String {
    let name = typestate_tensor::Device::name(dev);
    if name == "cpu" {
        String::new()
    } else {
        format!(", device={name}")
    }
}

test_device!(
    display_prints_exact_strings,
    display_prints_exact_strings_cpu,
    display_prints_exact_strings_gpu
);
fn display_prints_exact_strings<D: TestDevice>(dev: &D) {
    let dev_suffix = suffix(dev);
    let m = dev.upload(&Tensor::from_vec(&[2, 2], vec![1.0f32, -2.5, 10.0, 0.1]).unwrap());
    assert_eq!(
        format!("{m}"),
        format!("[[ 1.0, -2.5],\n [10.0,  0.1]], shape=[2, 2], dtype=f32{dev_suffix}")
    );
    // A transposed view prints in its logical order; precision applies to floats.
    assert_eq!(
        format!("{:.2}", m.t()),
        format!("[[ 1.00, 10.00],\n [-2.50,  0.10]], shape=[2, 2], dtype=f32{dev_suffix}")
    );
    let cube = dev.upload(&Tensor::from_vec(&[2, 2, 2], (0..8).collect::<Vec<i64>>()).unwrap());
    assert_eq!(
        format!("{}", cube.flip(2).unwrap()),
        format!(
            "[[[1, 0],\n  [3, 2]],\n\n [[5, 4],\n  [7, 6]]], shape=[2, 2, 2], dtype=i64{dev_suffix}"
        )
    );
    let special =
        dev.upload(&Tensor::from_vec(&[4], vec![f64::NAN, f64::INFINITY, -0.0, 1e-7]).unwrap());
    assert_eq!(
        format!("{special}"),
        format!("[ NaN,  inf, -0.0, 1e-7], shape=[4], dtype=f64{dev_suffix}")
    );
    let halves = dev.upload(
        &Tensor::from_vec(
            &[3],
            vec![
                half::f16::from_f32(0.1),
                half::f16::from_f32(2048.0),
                half::f16::from_f32(-1.5),
            ],
        )
        .unwrap(),
    );
    assert_eq!(
        format!("{halves}"),
        format!("[   0.1, 2048.0,   -1.5], shape=[3], dtype=f16{dev_suffix}")
    );
    let b = dev.upload(
        &Tensor::from_vec(
            &[2],
            vec![half::bf16::from_f32(3.0), half::bf16::from_f32(0.3)],
        )
        .unwrap(),
    );
    assert_eq!(
        format!("{b}"),
        format!("[3.0, 0.3], shape=[2], dtype=bf16{dev_suffix}")
    );
    let mask = dev.upload(&Tensor::from_vec(&[3], vec![true, false, true]).unwrap());
    assert_eq!(
        format!("{mask}"),
        format!("[ true, false,  true], shape=[3], dtype=bool{dev_suffix}")
    );
    let scalar = dev.upload(&Tensor::scalar(2.0f64));
    assert_eq!(
        format!("{scalar}"),
        format!("2.0, shape=[], dtype=f64{dev_suffix}")
    );
    let empty = Tensor::<u8, D>::zeros_on(&[2, 0], dev).unwrap();
    assert_eq!(
        format!("{empty}"),
        format!("[[],\n []], shape=[2, 0], dtype=u8{dev_suffix}")
    );
}

test_device!(
    large_tensors_print_summarised,
    large_tensors_print_summarised_cpu,
    large_tensors_print_summarised_gpu
);
fn large_tensors_print_summarised<D: TestDevice>(dev: &D) {
    let dev_suffix = suffix(dev);
    let line = dev.upload(&Tensor::from_vec(&[1001], (0..1001).collect::<Vec<i32>>()).unwrap());
    assert_eq!(
        format!("{line}"),
        format!("[   0,    1,    2, ...,  998,  999, 1000], shape=[1001], dtype=i32{dev_suffix}")
    );
    // Exactly the threshold: printed whole.
    let whole = dev.upload(&Tensor::from_vec(&[1000], vec![7u8; 1000]).unwrap());
    assert_eq!(format!("{whole}").matches("7").count(), 1000);
    // A matrix: both dims summarised; through a flipped view (strided corners).
    let m = dev.upload(&Tensor::from_vec(&[40, 50], (0..2000).collect::<Vec<i64>>()).unwrap());
    let expect = "[[1999, 1998, 1997, ..., 1952, 1951, 1950],\n \
                   [1949, 1948, 1947, ..., 1902, 1901, 1900],\n \
                   [1899, 1898, 1897, ..., 1852, 1851, 1850],\n \
                   ...,\n \
                   [ 149,  148,  147, ...,  102,  101,  100],\n \
                   [  99,   98,   97, ...,   52,   51,   50],\n \
                   [  49,   48,   47, ...,    2,    1,    0]], shape=[40, 50], dtype=i64";
    let flipped = m.flip(0).unwrap().flip(1).unwrap();
    assert_eq!(format!("{flipped}"), format!("{expect}{dev_suffix}"));
    // Rank 5, every dim summarised (more dims than one GPU copy takes at once): the corners
    // against a plain loop over the indices shown.
    let shape = [7usize, 8, 7, 9, 7];
    let n: usize = shape.iter().product();
    let t = dev.upload(&Tensor::from_vec(&shape, (0..n as i64).collect::<Vec<i64>>()).unwrap());
    let shown = format!("{t}");
    let keep = |len: usize| vec![0, 1, 2, len - 3, len - 2, len - 1];
    let mut corners = Vec::new();
    for a in keep(7) {
        for b in keep(8) {
            for c in keep(7) {
                for d in keep(9) {
                    for e in keep(7) {
                        corners.push((((a * 8 + b) * 7 + c) * 9 + d) * 7 + e);
                    }
                }
            }
        }
    }
    let numbers: Vec<usize> = shown
        .split(|ch: char| !ch.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    // The numbers printed: the corners, then the shape and `dtype=i64`.
    let mut tail = shape.to_vec();
    tail.push(64);
    if !dev_suffix.is_empty() {
        tail.push(0);
    }
    assert_eq!(numbers[..corners.len()], corners[..]);
    assert_eq!(numbers[corners.len()..], tail[..]);
    assert_eq!(shown.matches("...").count(), 1 + 6 + 36 + 216 + 1296);
}

test_device!(
    huge_broadcasts_print_only_their_corners,
    huge_broadcasts_print_only_their_corners_cpu,
    huge_broadcasts_print_only_their_corners_gpu
);
fn huge_broadcasts_print_only_their_corners<D: TestDevice>(dev: &D) {
    let dev_suffix = suffix(dev);
    // One byte viewed as 6^12 = 2,176,782,336 elements: every dim is 6 long, so PyTorch's
    // rule (cut dims longer than 6) alone would print them all. The 10 outer dims show
    // their first and last entries (2^10 * 6 * 6 = 36,864 <= MAX_SHOWN), the last two whole.
    let one = Tensor::<u8, D>::full_on(&[1], 7, dev).unwrap();
    let huge = one.broadcast_to(&[6; 12]).unwrap();
    let shown = format!("{huge}");
    let tail = format!(", shape={:?}, dtype=u8{dev_suffix}", [6; 12]);
    let elements = shown.strip_suffix(&tail).expect("ends with the shape");
    assert_eq!(elements.matches('7').count(), 36_864);
    assert_eq!(elements.matches("...").count(), 1023, "one per cut block");
    assert!(elements.starts_with(&"[".repeat(12)));
    assert!(!elements.contains(|c: char| c.is_ascii_digit() && c != '7'));
    // Varying values: each shown innermost row is the whole `[0, ..., 5]`, and the corners of
    // the cut dims are their first and last entries.
    let row = Tensor::<u8, D>::arange_step_on(0, 6, 1, dev).unwrap();
    let rows = row.broadcast_to(&[6; 12]).unwrap();
    let shown = format!("{rows:?}");
    assert_eq!(
        shown.matches("[0, 1, 2, 3, 4, 5]").count(),
        2usize.pow(10) * 6
    );
    // Values along the outermost (cut) dim: its first and last entries, 0 and 5, each
    // over the 2^9 * 36 elements shown below it.
    let mut column_shape = vec![1usize; 12];
    column_shape[0] = 6;
    let values = Tensor::<u8, D>::arange_step_on(0, 6, 1, dev).unwrap();
    let column = values.reshape(&column_shape).unwrap();
    let shown = format!("{}", column.broadcast_to(&[6; 12]).unwrap());
    let numbers: Vec<usize> = shown
        .split(|ch: char| !ch.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let half = 2usize.pow(9) * 36;
    assert_eq!(numbers[..half], vec![0; half][..]);
    assert_eq!(numbers[half..2 * half], vec![5; half][..]);
    assert_eq!(numbers[2 * half..2 * half + 12], [6; 12]);
    // A small tensor is printed in full, as before.
    let small = dev.upload(&Tensor::from_vec(&[2, 3], vec![1u8, 2, 3, 4, 5, 6]).unwrap());
    assert_eq!(
        format!("{small}"),
        format!("[[1, 2, 3],\n [4, 5, 6]], shape=[2, 3], dtype=u8{dev_suffix}")
    );
}

test_device!(
    debug_shows_elements_dtype_shape_and_device,
    debug_shows_elements_dtype_shape_and_device_cpu,
    debug_shows_elements_dtype_shape_and_device_gpu
);
fn debug_shows_elements_dtype_shape_and_device<D: TestDevice>(dev: &D) {
    let name = typestate_tensor::Device::name(dev);
    let m = dev.upload(&Tensor::from_vec(&[2, 3], vec![1, 2, 3, 4, 5, 6]).unwrap());
    assert_eq!(
        format!("{:?}", m.t()),
        format!(
            "TensorView {{ data: [[1, 4], [2, 5], [3, 6]], dtype: I32, device: {name:?}, \
             shape: [3, 2], strides: [1, 3], offset: 0 }}"
        )
    );
    assert_eq!(
        format!("{m:?}"),
        format!(
            "Tensor {{ data: [[1, 2, 3], [4, 5, 6]], dtype: I32, device: {name:?}, \
             shape: [2, 3], strides: [3, 1], offset: 0 }}"
        )
    );
    let pretty = format!("{m:#?}");
    assert!(
        pretty.contains("data: [[1, 2, 3],\n     [4, 5, 6]],"),
        "{pretty}"
    );
}

// ---- host-only: iteration ----------------------------------------------------------------

#[test]
fn iterators_walk_logical_order() {
    let mut rng = SmallRng::seed_from_u64(7);
    for case in 0..40 {
        let (x, r) = strided(&Cpu, &mut rng, case % 5, small_i32);
        let expect = flat(&r);
        assert_eq!(x.iter().copied().collect::<Vec<_>>(), expect);
        assert_eq!(x.iter().len(), expect.len());
        assert_eq!((&x).into_iter().copied().collect::<Vec<_>>(), expect);
        assert_eq!(x.view().into_iter().copied().collect::<Vec<_>>(), expect);
        let indexed: Vec<(Vec<usize>, i32)> =
            x.indexed_iter().map(|(i, &v)| (i.to_vec(), v)).collect();
        let reference: Vec<(Vec<usize>, i32)> = r
            .indexed_iter()
            .map(|(i, &v)| (i.slice().to_vec(), v))
            .collect();
        assert_eq!(indexed, reference);
        // Owned, by value: the elements in logical order.
        assert_eq!(x.clone().into_iter().collect::<Vec<_>>(), expect);
    }
}

#[test]
fn iter_mut_writes_each_element_once_in_logical_order() {
    let mut rng = SmallRng::seed_from_u64(8);
    for case in 0..40 {
        let recipe = Recipe::random(&mut rng, case % 5, 4);
        let n: usize = recipe.big.iter().product();
        let data: Vec<i32> = (0..n).map(|_| small_i32(&mut rng)).collect();
        let mut big = Tensor::from_vec(&recipe.big, data.clone()).unwrap();
        // Through a strided writable view of the owned buffer: add the position in the walk.
        {
            let storage = big.as_slice_mut().unwrap();
            let mut view =
                typestate_tensor::TensorViewMut::new(storage, recipe.layout(), &Cpu).unwrap();
            for (k, v) in view.iter_mut().enumerate() {
                *v += 1_000_000 * k as i32;
            }
        }
        // The reference: the same walk through ndarray.
        let mut reference = ArrayD::from_shape_vec(IxDyn(&recipe.big), data).unwrap();
        {
            let mut v = reference.view_mut();
            for (d, &s) in recipe.steps.iter().enumerate() {
                v.slice_axis_inplace(Axis(d), Slice::new(0, None, s as isize));
            }
            let mut v = v.permuted_axes(IxDyn(&recipe.perm));
            for &d in &recipe.flips {
                v.invert_axis(Axis(d));
            }
            for (k, x) in v.iter_mut().enumerate() {
                *x += 1_000_000 * k as i32;
            }
        }
        assert_eq!(big.to_vec(), flat(&reference), "{recipe:?}");
    }
    // `for v in &mut x` on an owned tensor with a transposed layout.
    let mut t = Tensor::from_vec(&[2, 3], vec![1, 2, 3, 4, 5, 6]).unwrap();
    let layout = t.layout().t();
    t.set_layout(layout).unwrap();
    for (k, v) in (&mut t).into_iter().enumerate() {
        *v = *v * 10 + k as i32;
    }
    assert_eq!(t.to_vec(), [10, 41, 22, 53, 34, 65]);
}

// ---- host-only: indexing, equality, conversions -----------------------------------------

#[test]
fn indexing_get_and_set_agree() {
    let mut rng = SmallRng::seed_from_u64(9);
    for _ in 0..20 {
        let (mut x, r) = strided(&Cpu, &mut rng, 3, small_i32);
        for (index, &value) in r.indexed_iter() {
            let i = [index[0], index[1], index[2]];
            assert_eq!(x[i], value);
            assert_eq!(x.get(&i).unwrap(), value);
        }
        if r.is_empty() {
            continue;
        }
        let i = [r.shape()[0] - 1, 0, r.shape()[2] - 1];
        x[i] = 7;
        assert_eq!(x.get(&i).unwrap(), 7);
        x.set(&i, -7).unwrap();
        assert_eq!(x[i], -7);
        *x.get_mut(&i).unwrap() += 1;
        assert_eq!(x[i], -6);
        let out = [r.shape()[0], 0, 0];
        assert!(matches!(
            x.set(&out, 1),
            Err(Error::Layout(LayoutError::IndexOutOfBounds { dim: 0, .. }))
        ));
        assert!(matches!(
            x.get(&[0, 0]),
            Err(Error::Layout(LayoutError::IndexLength {
                rank: 3,
                got: 2,
                ..
            }))
        ));
    }
    let mut v: Tensor<f32> = vec![1.0, 2.0, 3.0].into();
    v[1] = 5.0;
    assert_eq!(v[1], 5.0);
    assert_eq!(v.to_vec(), [1.0, 5.0, 3.0]);
}

#[test]
#[should_panic(expected = "index 3 is out of bounds for dim 1 of size 3")]
fn index_out_of_range_panics_with_the_error() {
    let x = Tensor::<i32>::zeros(&[2, 3]).unwrap();
    let _ = x[[1, 3]];
}

#[test]
#[should_panic(expected = "`+=` on a tensor failed")]
fn compound_assignment_panics_on_a_shape_mismatch() {
    let mut x = Tensor::<f32>::zeros(&[2, 3]).unwrap();
    x += &Tensor::<f32>::zeros(&[2]).unwrap();
}

#[test]
fn equality_compares_shape_and_values() {
    let a = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let b = a.t().contiguous().unwrap(); // [3, 2]
    assert!(a == a.clone());
    assert!(a.t() == b); // a view and an owned tensor, other strides
    assert!(a != b); // same elements in memory, other shape
    assert!(a.reshape(&[3, 2]).unwrap() != b);
    let mut c = a.clone();
    c[[1, 2]] = 6.5;
    assert!(a != c);
    let nan = Tensor::from_vec(&[1], vec![f32::NAN]).unwrap();
    assert!(nan != nan.clone());
}

#[test]
fn conversions_from_vec() {
    let t: Tensor<i64> = vec![3, 1, 2].into();
    assert_eq!(t.shape(), [3]);
    assert_eq!(t.to_vec(), [3, 1, 2]);
    let s = Tensor::from(&[1u8, 2][..]);
    assert_eq!(s.to_vec(), [1, 2]);
}

#[test]
#[cfg(feature = "ndarray")]
fn conversions_from_and_to_ndarray() {
    // Owned standard-layout arrays are taken without copying.
    let a = ndarray::Array::from_shape_vec((2, 3), vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let ptr = a.as_ptr();
    let t = Tensor::try_from(a).unwrap();
    assert_eq!(t.as_slice().unwrap().as_ptr(), ptr);
    assert_eq!(t.shape(), [2, 3]);
    // Any other layout is copied in logical order.
    let a = ndarray::Array::from_shape_vec((2, 3), vec![1, 2, 3, 4, 5, 6]).unwrap();
    let t = Tensor::try_from(a.reversed_axes()).unwrap();
    assert_eq!(t.to_vec(), [1, 4, 2, 5, 3, 6]);
    let view = ndarray::arr2(&[[1, 2], [3, 4]]);
    let t = Tensor::try_from(&view.slice(ndarray::s![.., ..;-1])).unwrap();
    assert_eq!(t.to_vec(), [2, 1, 4, 3]);
    // And back.
    let back = ArrayD::try_from(&t.t()).unwrap();
    assert_eq!(back, ndarray::arr2(&[[2, 4], [1, 3]]).into_dyn());
    let owned = ArrayD::try_from(t).unwrap();
    assert_eq!(owned, ndarray::arr2(&[[2, 1], [4, 3]]).into_dyn());
}

// ---- host-only: the random generator -----------------------------------------------------

#[test]
fn philox_known_answers_and_distributions() {
    // Random123's known-answer vectors for philox4x32-10.
    assert_eq!(
        philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
        [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
    );
    assert_eq!(
        philox4x32_10(
            [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
            [0xa409_3822, 0x299f_31d0]
        ),
        [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
    );
    // Element 5 of a seed's f32 uniforms is word 1 of block 1, top 24 bits.
    let seed = 0x1234_5678_9abc_def0u64;
    let u = Tensor::<f32>::rand(&[8], seed).unwrap().to_vec();
    let w = philox4x32_10([1, 0, 0, 0], [seed as u32, (seed >> 32) as u32]);
    assert_eq!(u[5], (w[1] >> 8) as f32 / (1u32 << 24) as f32);
    // Moments of 2^16 samples, each type in range.
    let n = 1 << 16;
    let u = Tensor::<f64>::rand(&[n], 3).unwrap().to_vec();
    let mean = u.iter().sum::<f64>() / n as f64;
    assert!((mean - 0.5).abs() < 0.01, "{mean}");
    assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    let z = Tensor::<f32>::randn(&[n], 3).unwrap().to_vec();
    let mean = z.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64;
    let var = z
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / n as f64;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
        "{mean} {var}"
    );
    for x in Tensor::<half::f16>::rand(&[4096], 9).unwrap().iter() {
        assert!((0.0..1.0).contains(&x.to_f32()));
    }
    for x in Tensor::<half::bf16>::rand(&[4096], 9).unwrap().iter() {
        assert!((0.0..1.0).contains(&x.to_f32()));
    }
    // Same seed, same values; prefixes agree across shapes (element i depends on i only).
    let long = Tensor::<f32>::randn(&[101], 5).unwrap().to_vec();
    let short = Tensor::<f32>::randn(&[10, 3], 5).unwrap().to_vec();
    assert_eq!(long[..30], short[..]);
}

// ---- GPU only: printing inside a CUDA graph capture ---------------------------------------

/// Printing a GPU tensor inside `Gpu::capture` prints a marker instead of the elements (a
/// host copy cannot be captured), queues nothing into the graph, and the capture succeeds.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn printing_inside_a_capture_prints_a_marker_gpu() {
    let Some(gpu) =
        crate::common::device::gpu_or_skip("printing_inside_a_capture_prints_a_marker_gpu")
    else {
        return;
    };
    let x = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap()
        .to_gpu(&gpu)
        .unwrap();
    let big = Tensor::<f32>::rand(&[40, 50], 1)
        .unwrap()
        .to_gpu(&gpu)
        .unwrap();
    let mut shown = Vec::new();
    let graph = gpu
        .capture((&x, &big), |(x, big)| {
            let y = (x * 2.0)?;
            shown.push(format!("{y}"));
            shown.push(format!("{:?}", big.t())); // summarised: corner copies not queued
            Ok(y)
        })
        .unwrap();
    for text in &shown {
        assert!(text.contains("<elements not available:"), "{text}");
    }
    assert!(
        shown[0].ends_with(", shape=[2, 3], dtype=f32, device=cuda:0"),
        "{}",
        shown[0]
    );
    assert_eq!(
        graph.outputs().to_cpu().unwrap().to_vec(),
        [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    );
    // Outside the capture the same tensor prints its elements.
    assert_eq!(
        format!("{}", graph.outputs()),
        "[[ 2.0,  4.0,  6.0],\n [ 8.0, 10.0, 12.0]], shape=[2, 3], dtype=f32, device=cuda:0"
    );
}

// ---- exact integer ranges -----------------------------------------------------------------

/// `arange_step` over integers by an `i128` reference: `start + i * step` while short of `end`.
fn arange_reference(start: i128, end: i128, step: i128) -> Vec<i128> {
    let mut out = Vec::new();
    let mut v = start;
    while (step > 0 && v < end) || (step < 0 && v > end) {
        out.push(v);
        v += step;
    }
    out
}

/// `linspace` over integers by an `i128` reference: the exact value
/// `start + i * (end - start) / (steps - 1)` truncated toward zero (Rust's `/` on a
/// numerator and a positive denominator).
fn linspace_reference(start: i128, end: i128, steps: usize) -> Vec<i128> {
    match steps {
        0 => vec![],
        1 => vec![start],
        _ => {
            let den = steps as i128 - 1;
            (0..steps as i128)
                .map(|i| (start * den + i * (end - start)) / den)
                .collect()
        }
    }
}

#[test]
fn integer_ranges_near_the_bounds_are_exact() {
    let max = i64::MAX;
    let got = Tensor::arange_step(max - 10, max, 1).unwrap().to_vec();
    assert_eq!(got, ((max - 10)..max).collect::<Vec<_>>());
    let big = 10i64.pow(16);
    assert_eq!(
        Tensor::arange_step(big, big + 4, 1).unwrap().to_vec(),
        [big, big + 1, big + 2, big + 3]
    );
    assert_eq!(
        Tensor::arange_step(i64::MIN + 2, i64::MIN, -1)
            .unwrap()
            .to_vec(),
        [i64::MIN + 2, i64::MIN + 1]
    );
    assert_eq!(
        Tensor::linspace(max - 2, max, 3).unwrap().to_vec(),
        [max - 2, max - 1, max]
    );
    assert_eq!(
        Tensor::linspace(i64::MIN, max, 3).unwrap().to_vec(),
        [i64::MIN, 0, max],
        "-0.5 truncates to 0"
    );
    // Truncation of the exact value toward zero, as PyTorch's f64 formula where it is exact.
    assert_eq!(
        Tensor::linspace(0i32, 10, 4).unwrap().to_vec(),
        [0, 3, 6, 10]
    );
    assert_eq!(
        Tensor::linspace(10i32, 0, 4).unwrap().to_vec(),
        [10, 6, 3, 0]
    );
    assert_eq!(
        Tensor::linspace(-10i32, 0, 4).unwrap().to_vec(),
        [-10, -6, -3, 0]
    );
    assert_eq!(
        Tensor::linspace(255u8, 0, 3).unwrap().to_vec(),
        [255, 127, 0]
    );
    // A range of 2^64 - 1 elements is refused, not wrapped.
    assert!(matches!(
        Tensor::arange_step(i64::MIN, max, 1),
        Err(Error::Layout(LayoutError::InvalidRange { .. }))
    ));
    assert!(matches!(
        Tensor::arange_step(3u8, 9, 0),
        Err(Error::Layout(LayoutError::InvalidRange { .. }))
    ));
}

#[test]
fn random_integer_ranges_match_an_i128_reference() {
    let mut rng = SmallRng::seed_from_u64(24);
    for _ in 0..300 {
        // i64 near either bound or anywhere, with spans short enough to allocate.
        let base: i64 = match rng.gen_range(0..3) {
            0 => i64::MAX - rng.gen_range(0..1000),
            1 => i64::MIN + rng.gen_range(0..1000),
            _ => rng.gen(),
        };
        let start = base;
        let end = base.saturating_add(rng.gen_range(-300..300));
        let step = rng.gen_range(1..40i64) * if rng.gen() { 1 } else { -1 };
        let want = arange_reference(start.into(), end.into(), step.into());
        let got: Vec<i128> = Tensor::arange_step(start, end, step)
            .unwrap()
            .to_vec()
            .into_iter()
            .map(i128::from)
            .collect();
        assert_eq!(got, want, "i64 arange_step({start}, {end}, {step})");
        let steps = rng.gen_range(0..50usize);
        let got: Vec<i128> = Tensor::linspace(start, end, steps)
            .unwrap()
            .to_vec()
            .into_iter()
            .map(i128::from)
            .collect();
        assert_eq!(
            got,
            linspace_reference(start.into(), end.into(), steps),
            "i64 linspace({start}, {end}, {steps})"
        );

        let (a, b): (i32, i32) = (rng.gen(), rng.gen());
        let steps = rng.gen_range(0..50usize);
        let got: Vec<i128> = Tensor::linspace(a, b, steps)
            .unwrap()
            .to_vec()
            .into_iter()
            .map(i128::from)
            .collect();
        assert_eq!(
            got,
            linspace_reference(a.into(), b.into(), steps),
            "i32 linspace({a}, {b}, {steps})"
        );
        let step = rng.gen_range(1..1 << 24) * if rng.gen() { 1 } else { -1 };
        let end = i64::from(a) + i64::from(step) * rng.gen_range(-5..40i64);
        let end = end.clamp(i32::MIN.into(), i32::MAX.into()) as i32;
        let got: Vec<i128> = Tensor::arange_step(a, end, step)
            .unwrap()
            .to_vec()
            .into_iter()
            .map(i128::from)
            .collect();
        assert_eq!(
            got,
            arange_reference(a.into(), end.into(), step.into()),
            "i32 arange_step({a}, {end}, {step})"
        );

        let (a, b, s): (u8, u8, u8) = (rng.gen(), rng.gen(), rng.gen_range(1..=255));
        let got: Vec<i128> = Tensor::arange_step(a, b, s)
            .unwrap()
            .to_vec()
            .into_iter()
            .map(i128::from)
            .collect();
        assert_eq!(
            got,
            arange_reference(a.into(), b.into(), s.into()),
            "u8 arange_step({a}, {b}, {s})"
        );
        let steps = rng.gen_range(0..300usize);
        let got: Vec<i128> = Tensor::linspace(a, b, steps)
            .unwrap()
            .to_vec()
            .into_iter()
            .map(i128::from)
            .collect();
        assert_eq!(
            got,
            linspace_reference(a.into(), b.into(), steps),
            "u8 linspace({a}, {b}, {steps})"
        );
    }
}
