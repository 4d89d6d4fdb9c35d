//! Shared inputs of the scan and sort tests (`scan.rs`, `sort.rs`): random shapes and views,
//! data with many ties, NaN and ±0, and a reference order independent of the crate's keys.

use std::cmp::Ordering;

use crate::common::device::TestDevice;
use crate::common::rng::Rng;
use typestate_tensor::element::{DType, Element};
use typestate_tensor::tensor::order::{ScanBackend, SortBackend};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

/// Whether `T` is a float type.
pub fn is_float<T: Element>() -> bool {
    matches!(T::DTYPE, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
}

/// One random element: an integer in `-spread..=spread` (many ties for a small spread), and
/// now and then a special: NaN, `-0.0`, `±inf` for floats, the type's bounds for integers
/// (`from_f64` saturates).
pub fn element<T: Element>(rng: &mut Rng, spread: i64, specials: bool) -> T {
    if specials && rng.below(8) == 0 {
        let s = [
            f64::NAN,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            -1e300,
        ];
        return T::from_f64(s[rng.below(s.len())]);
    }
    let v = rng.below((2 * spread + 1) as usize) as i64 - spread;
    T::from_f64(v as f64)
}

/// A random shape of rank 0 to 3 (sizes 0 to 6 mostly), with, now and then, one dim long
/// enough to cross GPU tiles (up to `long`).
pub fn shape(rng: &mut Rng, long: usize) -> Vec<usize> {
    let rank = rng.below(4);
    let mut s: Vec<usize> = (0..rank).map(|_| rng.below(7)).collect();
    if rank > 0 && rng.below(3) == 0 {
        let d = rng.below(rank);
        s[d] = 1 + rng.below(long);
    }
    s
}

/// A host tensor of `shape` and a view of it on `dev`, the view chosen at random: as it is,
/// transposed, stepped or flipped (taken on both sides the same way). Returns the host
/// view's elements in row-major order and the device tensor it was made from, with the
/// closure that makes the same view.
pub struct Case<T: Element, D: TestDevice> {
    /// The device tensor.
    pub dev: Tensor<T, D>,
    /// The host tensor.
    pub host: Tensor<T, Cpu>,
    /// Which view: 0 as is, 1 transposed (first and last dims), 2 stepped, 3 flipped.
    pub view: usize,
}

impl<T: Element, D: TestDevice> Case<T, D> {
    /// A random case.
    pub fn new(dev: &D, rng: &mut Rng, long: usize, spread: i64, specials: bool) -> Self {
        let mut s = shape(rng, long);
        let view = if s.len() >= 2 { rng.below(4) } else { 0 };
        if view == 2 {
            // Stepped by 2 along dim 0: twice the rows.
            s[0] *= 2;
        }
        let n: usize = s.iter().product();
        let data: Vec<T> = (0..n)
            .map(|_| element::<T>(rng, spread, specials))
            .collect();
        let host = Tensor::from_vec(&s, data).expect("host tensor");
        Case {
            dev: dev.upload(&host),
            host,
            view,
        }
    }

    /// The chosen view of a tensor.
    pub fn of<'a, U: Element, E: typestate_tensor::tensor::Backend>(
        &self,
        t: &'a Tensor<U, E>,
    ) -> TensorView<'a, U, E> {
        let r = t.rank();
        match self.view {
            1 => t.transpose(0, r - 1).expect("transpose"),
            2 => {
                let n0 = t.shape()[0];
                t.slice(0, 0, n0, 2).expect("step")
            }
            3 => t.flip(r - 1).expect("flip"),
            _ => t.view(),
        }
    }

    /// The host view's shape.
    pub fn shape(&self) -> Vec<usize> {
        self.of(&self.host).shape().to_vec()
    }

    /// The host view's elements, row-major.
    pub fn values(&self) -> Vec<T> {
        self.of(&self.host).to_vec()
    }
}

/// The row-major positions of each lane along `dim` of `shape` (a 0-d shape is one lane of
/// one element).
pub fn lanes(shape: &[usize], dim: usize) -> Vec<Vec<usize>> {
    if shape.is_empty() {
        return vec![vec![0]];
    }
    let strides: Vec<usize> = (0..shape.len())
        .map(|d| shape[d + 1..].iter().product())
        .collect();
    let n: usize = shape.iter().product();
    let mut out = Vec::new();
    for flat in 0..n {
        if (flat / strides[dim]).is_multiple_of(shape[dim]) {
            out.push((0..shape[dim]).map(|j| flat + j * strides[dim]).collect());
        }
    }
    if n == 0 {
        let others: usize = shape
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != dim)
            .map(|(_, s)| s)
            .product();
        if shape[dim] == 0 {
            return vec![vec![]; others];
        }
    }
    out
}

/// A random dim of a tensor of `rank` (negative half the time; `0` or `-1` for rank 0).
pub fn dim(rng: &mut Rng, rank: usize) -> (isize, usize) {
    let r = rank.max(1);
    let d = rng.below(r);
    if rng.below(2) == 0 {
        (d as isize - r as isize, d)
    } else {
        (d as isize, d)
    }
}

/// The reference order: numbers by value (`-0.0 == 0.0`), NaN after every number; integers
/// as `i128` (read from their decimal form, independent of the crate's keys).
pub fn ref_cmp<T: Element>(a: T, b: T) -> Ordering {
    if is_float::<T>() {
        let (x, y) = (a.to_f64(), b.to_f64());
        match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(&y).expect("numbers"),
        }
    } else {
        as_i128(a).cmp(&as_i128(b))
    }
}

/// The reference sort key of an element: NaN after every number, numbers by value (`-0.0` as
/// `0.0`), integers as `i128`; compared as a tuple, a total order equal to [`ref_cmp`]'s.
pub fn ref_key<T: Element>(v: T) -> (u8, f64, i128) {
    if is_float::<T>() {
        let x = v.to_f64();
        if x.is_nan() {
            (1, 0.0, 0)
        } else {
            (0, x + 0.0, 0)
        }
    } else {
        (0, 0.0, as_i128(v))
    }
}

/// An integer or bool element as `i128`.
pub fn as_i128<T: Element>(v: T) -> i128 {
    match format!("{v:?}").as_str() {
        "true" => 1,
        "false" => 0,
        s => s.parse().expect("an integer"),
    }
}

/// Whether two elements are the same value (NaN equal to NaN, `-0.0` and `0.0` told apart).
pub fn same<T: Element>(a: T, b: T) -> bool {
    if is_float::<T>() {
        let (x, y) = (a.to_f64(), b.to_f64());
        (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
    } else {
        a == b
    }
}

/// Runs `$body::<T>(dev, seed)` for every element type.
macro_rules! each_type {
    ($body:ident, $dev:expr) => {{
        $body::<f32, _>($dev, 1);
        $body::<f64, _>($dev, 2);
        $body::<half::f16, _>($dev, 3);
        $body::<half::bf16, _>($dev, 4);
        $body::<i8, _>($dev, 5);
        $body::<i16, _>($dev, 6);
        $body::<i32, _>($dev, 7);
        $body::<i64, _>($dev, 8);
        $body::<u8, _>($dev, 9);
        $body::<u16, _>($dev, 10);
        $body::<u32, _>($dev, 11);
        $body::<u64, _>($dev, 12);
        $body::<bool, _>($dev, 13);
    }};
}
pub(crate) use each_type;

/// A device that scans and sorts every element type.
pub trait OrderDevice:
    TestDevice
    + ScanBackend<f32>
    + ScanBackend<f64>
    + ScanBackend<half::f16>
    + ScanBackend<half::bf16>
    + ScanBackend<i8>
    + ScanBackend<i16>
    + ScanBackend<i32>
    + ScanBackend<i64>
    + ScanBackend<u8>
    + ScanBackend<u16>
    + ScanBackend<u32>
    + ScanBackend<u64>
    + ScanBackend<bool>
    + SortBackend<f32>
    + SortBackend<f64>
    + SortBackend<half::f16>
    + SortBackend<half::bf16>
    + SortBackend<i8>
    + SortBackend<i16>
    + SortBackend<i32>
    + SortBackend<i64>
    + SortBackend<u8>
    + SortBackend<u16>
    + SortBackend<u32>
    + SortBackend<u64>
    + SortBackend<bool>
{
}

impl<D> OrderDevice for D where
    D: TestDevice
        + ScanBackend<f32>
        + ScanBackend<f64>
        + ScanBackend<half::f16>
        + ScanBackend<half::bf16>
        + ScanBackend<i8>
        + ScanBackend<i16>
        + ScanBackend<i32>
        + ScanBackend<i64>
        + ScanBackend<u8>
        + ScanBackend<u16>
        + ScanBackend<u32>
        + ScanBackend<u64>
        + ScanBackend<bool>
        + SortBackend<f32>
        + SortBackend<f64>
        + SortBackend<half::f16>
        + SortBackend<half::bf16>
        + SortBackend<i8>
        + SortBackend<i16>
        + SortBackend<i32>
        + SortBackend<i64>
        + SortBackend<u8>
        + SortBackend<u16>
        + SortBackend<u32>
        + SortBackend<u64>
        + SortBackend<bool>
{
}
