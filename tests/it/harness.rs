//! Shared machinery of the pointwise tests: element types with exact references, random
//! views built identically on our side and on ndarray's, and one driver per op arity that
//! checks the out-of-place, `_into` and in-place forms, on any [`TestDevice`].
//!
//! Storage is made on the host, uploaded as a 1-D tensor with [`TestDevice::upload`], and
//! viewed on the device with the tensor view methods (`narrow`, `reshape`, `permute`,
//! `slice`, `flip`; the ops broadcast); the references are ndarray's views of the host copy.
//! Results come back with [`host`]: out-of-place results in logical order, `_into` and
//! in-place targets as their whole storage, so that a write outside the view is caught. The
//! elements of an `_into` target's view are poisoned first (each set to a value far from the
//! one expected there), so that an element the engine does not write is caught too.

use half::{bf16, f16};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, Slice, Zip};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::element::Element;
use typestate_tensor::ops::{BinaryOp, TernaryOp, UnaryOp};
use typestate_tensor::tensor::ops::{
    map, map_inplace, map_into, zip, zip3, zip3_inplace, zip3_into, zip_inplace, zip_into,
};
use typestate_tensor::tensor::{Tensor, TensorView, TensorViewMut};

use crate::common::device::{host, TestDevice};

// ---------------------------------------------------------------------------------------------
// Element types under test

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Float,
    Int,
    Bool,
}

/// Value ranges for generated data.
#[derive(Clone, Copy, Debug)]
pub enum Domain {
    /// Moderate values (floats in [-4, 4], with a few NaN/inf/-0; integers over their whole
    /// range so that arithmetic wraps).
    Any,
    /// Small values: floats in [-4, 4] without specials, integers in [-40, 40] (unsigned
    /// types [0, 40]).
    Small,
    /// Floats in [0.05, 6] (log, sqrt, pow bases).
    Positive,
    /// Multiples of 0.25 in [-6, 6] plus random values (rounding ties).
    Quarters,
    /// Floats in [0, 1] (lerp weights).
    Unit,
}

pub trait TestElem: Element {
    const KIND: Kind;
    /// One random value of `dom` (never a constant: data is never all zeros).
    fn random(rng: &mut SmallRng, dom: Domain) -> Self;
    /// The value of an integer or bool element, exactly.
    fn int(self) -> i128 {
        unreachable!()
    }
    /// An integer wrapped into the type (two's complement), like C and Rust `as`.
    fn wrap(_v: i128) -> Self {
        unreachable!()
    }
    /// Floats: a monotone integer image (ulp distance = difference); others: the value.
    fn ordered(self) -> i64;
    /// Machine epsilon of the type (floats).
    const EPS: f64 = 0.0;
}

pub fn rand_float(rng: &mut SmallRng, dom: Domain) -> f64 {
    match dom {
        Domain::Any => match rng.gen_range(0..40) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            _ => rng.gen_range(-4.0..4.0),
        },
        Domain::Small => rng.gen_range(-4.0..4.0),
        Domain::Positive => rng.gen_range(0.05..6.0),
        Domain::Quarters => {
            if rng.gen_bool(0.7) {
                rng.gen_range(-24i32..=24) as f64 / 4.0
            } else {
                rng.gen_range(-6.0..6.0)
            }
        }
        Domain::Unit => rng.gen_range(0.0..1.0),
    }
}

macro_rules! float_elem {
    ($t:ty, $bits:ty, $eps:expr) => {
        impl TestElem for $t {
            const KIND: Kind = Kind::Float;
            const EPS: f64 = $eps;
            fn random(rng: &mut SmallRng, dom: Domain) -> Self {
                <$t as Element>::from_f64(rand_float(rng, dom))
            }
            fn ordered(self) -> i64 {
                if self == <$t as Element>::ZERO {
                    return 0; // +0 and -0
                }
                let bits = self.to_bits() as i64;
                let sign = 1i64 << (<$bits>::BITS - 1);
                if bits & sign != 0 {
                    -(bits & !sign)
                } else {
                    bits
                }
            }
        }
    };
}
float_elem!(f32, u32, f32::EPSILON as f64);
float_elem!(f64, u64, f64::EPSILON);
float_elem!(f16, u16, 0.0009765625);
float_elem!(bf16, u16, 0.0078125);

macro_rules! int_elem {
    ($t:ty, $small_lo:expr) => {
        impl TestElem for $t {
            const KIND: Kind = Kind::Int;
            fn random(rng: &mut SmallRng, dom: Domain) -> Self {
                match dom {
                    Domain::Any => rng.gen(),
                    _ => rng.gen_range($small_lo..=40),
                }
            }
            fn int(self) -> i128 {
                self as i128
            }
            fn wrap(v: i128) -> Self {
                v as $t
            }
            fn ordered(self) -> i64 {
                self as i64
            }
        }
    };
}
int_elem!(i32, -40);
int_elem!(i64, -40);
int_elem!(u8, 0);
int_elem!(i8, -40);
int_elem!(i16, -40);
int_elem!(u16, 0);
int_elem!(u32, 0);
int_elem!(u64, 0);

impl TestElem for bool {
    const KIND: Kind = Kind::Bool;
    fn random(rng: &mut SmallRng, _dom: Domain) -> Self {
        rng.gen()
    }
    fn int(self) -> i128 {
        self as i128
    }
    fn wrap(v: i128) -> Self {
        v != 0
    }
    fn ordered(self) -> i64 {
        self as i64
    }
}

/// Allowed error: `ulps` in the output type, or `abs` (in units of the type's epsilon, times
/// 8). Both engines round `f32` results to `f16`/`bf16` once, to nearest even
/// (`tests/bf16_rounding.rs`), so exact ops are exact for every float type on every device.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    pub ulps: i64,
    pub abs: f64,
}

pub const EXACT: Tol = tol(0, 0.0);

pub const fn tol(ulps: i64, abs: f64) -> Tol {
    Tol { ulps, abs }
}

pub const fn ulps(u: i64) -> Tol {
    tol(u, 0.0)
}

impl Tol {
    /// For a transcendental op: this (CPU) tolerance plus the device's
    /// [`TestDevice::LIBM_EXTRA_ULPS`] (0 on the CPU, so the CPU check is unchanged).
    pub fn libm<D: TestDevice>(self) -> Tol {
        Tol {
            ulps: self.ulps + D::LIBM_EXTRA_ULPS,
            ..self
        }
    }
}

pub fn close<U: TestElem>(got: U, want: U, tol: Tol) -> bool {
    if U::KIND != Kind::Float {
        return got == want;
    }
    let (g, w) = (got.to_f64(), want.to_f64());
    if g.is_nan() || w.is_nan() {
        return g.is_nan() && w.is_nan();
    }
    if g == w {
        return true;
    }
    if got.ordered().abs_diff(want.ordered()) <= tol.ulps as u64 {
        return true;
    }
    (g - w).abs() <= tol.abs * U::EPS * 8.0
}

pub fn assert_all_close<U: TestElem>(what: &str, got: &[U], want: &[U], tol: Tol) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(g, w, tol),
            "{what}: element {i} ({}): got {g:?}, want {w:?} (tolerance {tol:?})",
            U::NAME
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Random views, built the same way on our side and on ndarray's

/// A view of a storage: a contiguous base at `offset`, permuted, then sliced (with steps) and
/// flipped per dim.
#[derive(Clone, Debug)]
pub struct Recipe {
    pub storage_len: usize,
    pub offset: usize,
    pub base_shape: Vec<usize>,
    pub perm: Vec<usize>,
    /// Per final dim: (start, end, step).
    pub slices: Vec<(usize, usize, isize)>,
    pub flips: Vec<usize>,
}

pub fn random_shape(rng: &mut SmallRng) -> Vec<usize> {
    let rank = rng.gen_range(0..=6);
    let max = if rank > 4 { 3 } else { 5 };
    (0..rank)
        .map(|_| {
            if rng.gen_ratio(1, 25) {
                0
            } else {
                rng.gen_range(1..=max)
            }
        })
        .collect()
}

impl Recipe {
    /// A random view whose final shape is `shape`.
    pub fn random(rng: &mut SmallRng, shape: &[usize]) -> Recipe {
        let rank = shape.len();
        let mut perm: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            perm.swap(i, rng.gen_range(0..=i));
        }
        let mut base_shape = vec![0; rank];
        let mut slices = Vec::with_capacity(rank);
        for (d, &n) in shape.iter().enumerate() {
            let step: isize = [1, 1, 1, 2, -1, -2, 3][rng.gen_range(0..7)];
            let extra = rng.gen_range(0..=2);
            let start = rng.gen_range(0..=extra);
            let span = if n == 0 {
                0
            } else {
                (n - 1) * step.unsigned_abs() + 1
            };
            base_shape[perm[d]] = span + extra;
            slices.push((start, start + span, step));
        }
        let flips = (0..rank).filter(|_| rng.gen_ratio(1, 3)).collect();
        let offset = rng.gen_range(0..=3);
        let numel: usize = base_shape.iter().product();
        Recipe {
            storage_len: offset + numel + rng.gen_range(0..=3),
            offset,
            base_shape,
            perm,
            slices,
            flips,
        }
    }

    fn numel(&self) -> usize {
        self.base_shape.iter().product()
    }

    /// The view of the 1-D device tensor `storage` (as made by [`upload_storage`]), built with
    /// the tensor view methods.
    pub fn view<'a, T: Element, D: TestDevice>(
        &self,
        storage: &'a Tensor<T, D>,
    ) -> TensorView<'a, T, D> {
        let mut v = storage
            .narrow(0, self.offset, self.numel())
            .unwrap()
            .reshape(&self.base_shape)
            .unwrap()
            .permute(&self.perm)
            .unwrap();
        for (d, &(start, end, step)) in self.slices.iter().enumerate() {
            v = v.slice(d as isize, start, end, step).unwrap();
        }
        for &d in &self.flips {
            v = v.flip(d as isize).unwrap();
        }
        v
    }

    /// The writable view of the 1-D device tensor `storage`.
    pub fn view_mut<'a, T: Element, D: TestDevice>(
        &self,
        storage: &'a mut Tensor<T, D>,
    ) -> TensorViewMut<'a, T, D> {
        let mut v = storage
            .view_mut()
            .narrow(0, self.offset, self.numel())
            .unwrap()
            .reshape(&self.base_shape)
            .unwrap()
            .permute(&self.perm)
            .unwrap();
        for (d, &(start, end, step)) in self.slices.iter().enumerate() {
            v = v.slice(d as isize, start, end, step).unwrap();
        }
        for &d in &self.flips {
            v = v.flip(d as isize).unwrap();
        }
        v
    }

    pub fn nd_slice(&self, d: usize) -> Slice {
        let (start, end, step) = self.slices[d];
        Slice::new(start as isize, Some(end as isize), step)
    }

    pub fn nd<'a, T>(&self, data: &'a [T]) -> ArrayViewD<'a, T> {
        let numel: usize = self.base_shape.iter().product();
        let base = &data[self.offset..self.offset + numel];
        let mut v = ArrayViewD::from_shape(IxDyn(&self.base_shape), base)
            .unwrap()
            .permuted_axes(IxDyn(&self.perm));
        for d in 0..self.slices.len() {
            v.slice_axis_inplace(Axis(d), self.nd_slice(d));
        }
        for &d in &self.flips {
            v.invert_axis(Axis(d));
        }
        v
    }

    pub fn nd_mut<'a, T>(&self, data: &'a mut [T]) -> ArrayViewMutD<'a, T> {
        let numel: usize = self.base_shape.iter().product();
        let base = &mut data[self.offset..self.offset + numel];
        let mut v = ArrayViewMutD::from_shape(IxDyn(&self.base_shape), base)
            .unwrap()
            .permuted_axes(IxDyn(&self.perm));
        for d in 0..self.slices.len() {
            v.slice_axis_inplace(Axis(d), self.nd_slice(d));
        }
        for &d in &self.flips {
            v.invert_axis(Axis(d));
        }
        v
    }
}

/// `data` as a 1-D tensor on `dev`.
pub fn upload_storage<T: Element, D: TestDevice>(dev: &D, data: &[T]) -> Tensor<T, D> {
    dev.upload(&Tensor::from_vec(&[data.len()], data.to_vec()).unwrap())
}

/// Random storage of `T` for `recipe`.
pub fn storage<T: TestElem>(rng: &mut SmallRng, recipe: &Recipe, dom: Domain) -> Vec<T> {
    (0..recipe.storage_len)
        .map(|_| T::random(rng, dom))
        .collect()
}

/// A shape that broadcasts to `out`: some leading dims dropped, some dims set to 1.
pub fn broadcastable_from(rng: &mut SmallRng, out: &[usize]) -> Vec<usize> {
    let drop = if rng.gen_ratio(1, 3) {
        rng.gen_range(0..=out.len())
    } else {
        0
    };
    out[drop..]
        .iter()
        .map(|&n| if rng.gen_ratio(1, 4) { 1 } else { n })
        .collect()
}

/// An input: host storage, its copy on the device, and the recipe of a view whose shape
/// broadcasts to `out`.
pub struct Input<T: Element, D: TestDevice> {
    pub data: Vec<T>,
    pub recipe: Recipe,
    pub storage: Tensor<T, D>,
}

impl<T: TestElem, D: TestDevice> Input<T, D> {
    pub fn new(dev: &D, rng: &mut SmallRng, out: &[usize], dom: Domain, full: bool) -> Self {
        let shape = if full {
            out.to_vec()
        } else {
            broadcastable_from(rng, out)
        };
        let recipe = Recipe::random(rng, &shape);
        let data = storage(rng, &recipe, dom);
        Input {
            storage: upload_storage(dev, &data),
            data,
            recipe,
        }
    }

    /// The view on the device.
    pub fn ours(&self) -> TensorView<'_, T, D> {
        self.recipe.view(&self.storage)
    }

    /// The reference input (ndarray's own views of the same storage), broadcast to `shape`.
    pub fn nd(&self, shape: &[usize]) -> ArrayD<T> {
        self.recipe
            .nd(&self.data)
            .broadcast(IxDyn(shape))
            .unwrap()
            .to_owned()
    }
}

pub fn broadcast_of(shapes: &[&[usize]]) -> Vec<usize> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            shapes
                .iter()
                .filter_map(|s| (i + s.len()).checked_sub(rank).map(|j| s[j]))
                .fold(1, |acc, n| if n == 1 { acc } else { n })
        })
        .collect()
}

/// Checks an `_into` result: inside the output view the expected values, elsewhere the old
/// storage untouched.
pub fn check_written<U: TestElem>(
    what: &str,
    recipe: &Recipe,
    before: &[U],
    after: &[U],
    expected: &ArrayD<U>,
    tol: Tol,
) {
    let mut want = before.to_vec();
    recipe.nd_mut(&mut want).assign(expected);
    assert_all_close(what, after, &want, tol);
}

/// A value of `U` that is not `close` to `want` (so that an unwritten element cannot pass).
pub fn poison<U: TestElem>(want: U, tol: Tol) -> U {
    [12345.0, -7.0, 0.0, 1.0, 3.0]
        .into_iter()
        .map(U::from_f64)
        .find(|&p| !close(p, want, tol))
        .expect("a poison value differs from any value")
}

/// The output storage `before` with each element of `recipe`'s view set to a poison value
/// for the one expected there, on the device.
pub fn poisoned<U: TestElem, D: TestDevice>(
    dev: &D,
    recipe: &Recipe,
    before: &mut [U],
    expected: &ArrayD<U>,
    tol: Tol,
) -> Tensor<U, D> {
    Zip::from(recipe.nd_mut(before))
        .and(expected)
        .for_each(|b, &w| *b = poison(w, tol));
    upload_storage(dev, before)
}

// ---------------------------------------------------------------------------------------------
// Drivers: one random case of an op in all its forms

pub const CASES: u64 = 64;

// The references through ndarray, with the op's reference function as a `dyn`: ndarray's
// mapping code is then compiled once per element type, not once per op (it was 15 MB of the
// test binary's code).

/// `a.map(f)`, in ndarray's (logical) order.
pub fn nd_map<T: Copy, U>(a: &ArrayViewD<'_, T>, f: &dyn Fn(T) -> U) -> ArrayD<U> {
    a.map(|&x| f(x))
}

/// `f(a, b)` elementwise (same shapes).
pub fn nd_zip<T: Copy, U>(
    a: &ArrayViewD<'_, T>,
    b: &ArrayViewD<'_, T>,
    f: &dyn Fn(T, T) -> U,
) -> ArrayD<U> {
    Zip::from(a).and(b).map_collect(|&x, &y| f(x, y))
}

/// `f(a, b, c)` elementwise (same shapes).
pub fn nd_zip3<A: Copy, T: Copy, U>(
    a: &ArrayViewD<'_, A>,
    b: &ArrayViewD<'_, T>,
    c: &ArrayViewD<'_, T>,
    f: &dyn Fn(A, T, T) -> U,
) -> ArrayD<U> {
    Zip::from(a)
        .and(b)
        .and(c)
        .map_collect(|&x, &y, &z| f(x, y, z))
}

pub fn unary_case<D: TestDevice, T: TestElem, U: TestElem, O: UnaryOp<T, Output = U>>(
    dev: &D,
    rng: &mut SmallRng,
    op: O,
    dom: Domain,
    reference: &impl Fn(T) -> U,
    tol: Tol,
) {
    let out_shape = random_shape(rng);
    let a = Input::<T, D>::new(dev, rng, &out_shape, dom, false);
    let what = format!("{} {}", O::NAME, T::NAME);

    // Out of place: the input's own shape.
    let got = map(op, &a.ours()).unwrap();
    let want = nd_map(&a.nd(a.recipe.nd(&a.data).shape()).view(), reference);
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_all_close(
        &what,
        &host(&got),
        &want.iter().copied().collect::<Vec<_>>(),
        tol,
    );

    // Into a strided output view, the input broadcast to it.
    let o = Recipe::random(rng, &out_shape);
    let mut before: Vec<U> = storage(rng, &o, Domain::Any);
    let want = nd_map(&a.nd(&out_shape).view(), reference);
    let mut out = poisoned(dev, &o, &mut before, &want, tol);
    map_into(op, &a.ours(), &mut o.view_mut(&mut out)).unwrap();
    check_written(
        &format!("{what} into"),
        &o,
        &before,
        &host(&out),
        &want,
        tol,
    );
}

pub fn unary_inplace_case<D: TestDevice, T: TestElem, O: UnaryOp<T, Output = T>>(
    dev: &D,
    rng: &mut SmallRng,
    op: O,
    dom: Domain,
    reference: &impl Fn(T) -> T,
    tol: Tol,
) {
    let shape = random_shape(rng);
    let r = Recipe::random(rng, &shape);
    let before: Vec<T> = storage(rng, &r, dom);
    let mut dst = upload_storage(dev, &before);
    map_inplace(op, &mut r.view_mut(&mut dst)).unwrap();
    let want = nd_map(&r.nd(&before), reference);
    check_written(
        &format!("{} {} in place", O::NAME, T::NAME),
        &r,
        &before,
        &host(&dst),
        &want,
        tol,
    );
}

pub fn binary_case<D: TestDevice, T: TestElem, U: TestElem, O: BinaryOp<T, Output = U>>(
    dev: &D,
    rng: &mut SmallRng,
    op: O,
    doms: [Domain; 2],
    reference: &impl Fn(T, T) -> U,
    tol: Tol,
) {
    let out_shape = random_shape(rng);
    let a = Input::<T, D>::new(dev, rng, &out_shape, doms[0], false);
    let b = Input::<T, D>::new(dev, rng, &out_shape, doms[1], false);
    let what = format!("{} {}", O::NAME, T::NAME);
    let expect = |shape: &[usize]| nd_zip(&a.nd(shape).view(), &b.nd(shape).view(), reference);

    let got = zip(op, &a.ours(), &b.ours()).unwrap();
    let shape = broadcast_of(&[a.ours().shape(), b.ours().shape()]);
    let want = expect(&shape);
    assert_eq!(got.shape(), &shape[..], "{what}: shape");
    assert_all_close(
        &what,
        &host(&got),
        &want.iter().copied().collect::<Vec<_>>(),
        tol,
    );

    let o = Recipe::random(rng, &out_shape);
    let mut before: Vec<U> = storage(rng, &o, Domain::Any);
    let want = expect(&out_shape);
    let mut out = poisoned(dev, &o, &mut before, &want, tol);
    zip_into(op, &a.ours(), &b.ours(), &mut o.view_mut(&mut out)).unwrap();
    check_written(
        &format!("{what} into"),
        &o,
        &before,
        &host(&out),
        &want,
        tol,
    );
}

pub fn binary_inplace_case<D: TestDevice, T: TestElem, O: BinaryOp<T, Output = T>>(
    dev: &D,
    rng: &mut SmallRng,
    op: O,
    doms: [Domain; 2],
    reference: &impl Fn(T, T) -> T,
    tol: Tol,
) {
    let shape = random_shape(rng);
    let r = Recipe::random(rng, &shape);
    let b = Input::<T, D>::new(dev, rng, &shape, doms[1], false);
    let before: Vec<T> = storage(rng, &r, doms[0]);
    let mut dst = upload_storage(dev, &before);
    zip_inplace(op, &mut r.view_mut(&mut dst), &b.ours()).unwrap();
    let want = nd_zip(&r.nd(&before), &b.nd(&shape).view(), reference);
    check_written(
        &format!("{} {} in place", O::NAME, T::NAME),
        &r,
        &before,
        &host(&dst),
        &want,
        tol,
    );
}

pub fn ternary_case<D: TestDevice, A: TestElem, T: TestElem, O: TernaryOp<A, T, Output = T>>(
    dev: &D,
    rng: &mut SmallRng,
    op: O,
    doms: [Domain; 3],
    reference: &impl Fn(A, T, T) -> T,
    tol: Tol,
) {
    let out_shape = random_shape(rng);
    let a = Input::<A, D>::new(dev, rng, &out_shape, doms[0], false);
    let b = Input::<T, D>::new(dev, rng, &out_shape, doms[1], false);
    let c = Input::<T, D>::new(dev, rng, &out_shape, doms[2], false);
    let what = format!("{} {}", O::NAME, T::NAME);
    let expect = |shape: &[usize]| {
        nd_zip3(
            &a.nd(shape).view(),
            &b.nd(shape).view(),
            &c.nd(shape).view(),
            reference,
        )
    };

    let got = zip3(op, &a.ours(), &b.ours(), &c.ours()).unwrap();
    let shape = broadcast_of(&[a.ours().shape(), b.ours().shape(), c.ours().shape()]);
    assert_eq!(got.shape(), &shape[..], "{what}: shape");
    let want = expect(&shape);
    assert_all_close(
        &what,
        &host(&got),
        &want.iter().copied().collect::<Vec<_>>(),
        tol,
    );

    let o = Recipe::random(rng, &out_shape);
    let mut before: Vec<T> = storage(rng, &o, Domain::Any);
    let want = expect(&out_shape);
    let mut out = poisoned(dev, &o, &mut before, &want, tol);
    zip3_into(
        op,
        &a.ours(),
        &b.ours(),
        &c.ours(),
        &mut o.view_mut(&mut out),
    )
    .unwrap();
    check_written(
        &format!("{what} into"),
        &o,
        &before,
        &host(&out),
        &want,
        tol,
    );
}

pub fn ternary_inplace_case<D: TestDevice, T: TestElem, O: TernaryOp<T, T, Output = T>>(
    dev: &D,
    rng: &mut SmallRng,
    op: O,
    doms: [Domain; 3],
    reference: &impl Fn(T, T, T) -> T,
    tol: Tol,
) {
    let shape = random_shape(rng);
    let r = Recipe::random(rng, &shape);
    let b = Input::<T, D>::new(dev, rng, &shape, doms[1], false);
    let c = Input::<T, D>::new(dev, rng, &shape, doms[2], false);
    let before: Vec<T> = storage(rng, &r, doms[0]);
    let mut dst = upload_storage(dev, &before);
    zip3_inplace(op, &mut r.view_mut(&mut dst), &b.ours(), &c.ours()).unwrap();
    let want = nd_zip3(
        &r.nd(&before),
        &b.nd(&shape).view(),
        &c.nd(&shape).view(),
        reference,
    );
    check_written(
        &format!("{} {} in place", O::NAME, T::NAME),
        &r,
        &before,
        &host(&dst),
        &want,
        tol,
    );
}

pub fn rng_for(name: &str, ty: &str) -> SmallRng {
    let seed = name
        .bytes()
        .chain(ty.bytes())
        .fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        });
    SmallRng::seed_from_u64(seed)
}

// ---------------------------------------------------------------------------------------------
// References

/// `f` in f64, rounded once to the float type.
pub fn f1<T: TestElem>(f: fn(f64) -> f64) -> impl Fn(T) -> T {
    move |x| T::from_f64(f(x.to_f64()))
}

pub fn f2<T: TestElem>(f: fn(f64, f64) -> f64) -> impl Fn(T, T) -> T {
    move |x, y| T::from_f64(f(x.to_f64(), y.to_f64()))
}

pub fn f3<T: TestElem>(f: fn(f64, f64, f64) -> f64) -> impl Fn(T, T, T) -> T {
    move |x, y, z| T::from_f64(f(x.to_f64(), y.to_f64(), z.to_f64()))
}

/// `f` on exact integers, wrapped to the type.
pub fn i1<T: TestElem>(f: fn(i128) -> i128) -> impl Fn(T) -> T {
    move |x| T::wrap(f(x.int()))
}

pub fn i2<T: TestElem>(f: fn(i128, i128) -> i128) -> impl Fn(T, T) -> T {
    move |x, y| T::wrap(f(x.int(), y.int()))
}

pub fn nan_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        x.max(y)
    }
}

pub fn nan_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        x.min(y)
    }
}

pub fn int_div(x: i128, y: i128) -> i128 {
    if y == 0 {
        0
    } else {
        x / y // i128 does not overflow for i64 inputs; the wrap gives MIN / -1 = MIN.
    }
}

pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

pub fn gelu(x: f64) -> f64 {
    x / 2.0 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

/// Per-type float tolerance for a transcendental computed in the compute type: a couple of
/// ulps of f32/f64 libm; one ulp for half types (one rounding of an f32 value).
pub const TRANS: Tol = ulps(2);
