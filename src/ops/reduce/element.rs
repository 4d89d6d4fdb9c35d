//! What an element type brings to a reduction: the accumulation type ([`Accumulator`]), the
//! sum type and the bounds ([`ReduceElement`]), and the mean ([`MeanElement`]).

use std::fmt::Debug;

use crate::element::{Element, FloatElement};

/// Seals [`Accumulator`] and [`Reduction`](super::Reduction) (and the op types).
pub(crate) mod sealed {
    pub trait Sealed {}
}

/// The type `sum`, `prod` and `mean` accumulate in: `f32`, `f64` or `i64` (wrapping).
/// Sealed.
pub trait Accumulator: sealed::Sealed + Copy + Send + Sync + Debug + PartialEq + 'static {
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// The CUDA C type of the kernels' accumulator (`float`, `double`, `unsigned long long`:
    /// the bits of the wrapping `i64`).
    const CUDA: &'static str;
    /// `self + rhs` (wrapping for `i64`).
    fn add(self, rhs: Self) -> Self;
    /// `self * rhs` (wrapping for `i64`).
    fn mul(self, rhs: Self) -> Self;
    /// `|self|` (wrapping for `i64`: `i64::MIN` stays itself).
    fn abs(self) -> Self;
    /// `self / count` with the count converted as the kernels do (`(float)(double)count`):
    /// the mean. (For `i64`, truncating, 0 for no elements; `mean` takes floats only.)
    fn div_count(self, count: usize) -> Self;
}

impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}
impl sealed::Sealed for i64 {}

impl Accumulator for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const CUDA: &'static str = "float";
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        self + rhs
    }
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        self * rhs
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
    fn div_count(self, count: usize) -> Self {
        self / (count as f64) as f32
    }
}

impl Accumulator for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const CUDA: &'static str = "double";
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        self + rhs
    }
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        self * rhs
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
    fn div_count(self, count: usize) -> Self {
        self / count as f64
    }
}

impl Accumulator for i64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const CUDA: &'static str = "unsigned long long";
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        self.wrapping_add(rhs)
    }
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        self.wrapping_mul(rhs)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.wrapping_abs()
    }
    fn div_count(self, count: usize) -> Self {
        i64::try_from(count)
            .ok()
            .filter(|&n| n != 0)
            .map_or(0, |n| self.wrapping_div(n))
    }
}

/// Element types that reduce: every [`Element`]. Says what `sum` and `prod` return
/// ([`ReduceElement::Sum`]) and accumulate in ([`ReduceElement::Acc`]); see the module docs'
/// table.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor element type",
    note = "elements are f32, f64, half::f16, half::bf16, i8, i16, i32, i64, u8, u16, u32, u64 and bool"
)]
pub trait ReduceElement: Element {
    /// The element type of `sum` and `prod` results: the type itself for floats, `i64` for
    /// integers and `bool` (PyTorch's promotion).
    type Sum: Element;
    /// The type sums, products and means accumulate in.
    type Acc: Accumulator;
    /// The smallest value (`-inf` for floats): the neutral start of `max` and `argmax`.
    const LOWEST: Self;
    /// The largest value (`inf` for floats): the neutral start of `min` and `argmin`.
    const HIGHEST: Self;
    /// Size in bytes of the kernels' compute type (`ts_compute<T>`: `float` for the half
    /// types, `int` for `i8` and `i16`, `unsigned int` for `u8` and `u16`): the accumulator
    /// of `max` and `min`.
    const CUDA_COMPUTE_SIZE: usize;
    /// The value in the accumulation type (exact).
    fn to_acc(self) -> Self::Acc;
    /// An accumulated value as the `sum` / `prod` result (rounded once to nearest even for
    /// the half types, as the kernels store a `float`).
    fn acc_to_sum(acc: Self::Acc) -> Self::Sum;
}

macro_rules! reduce_element {
    ($t:ty, sum: $sum:ty, acc: $acc:ty, lowest: $lo:expr, highest: $hi:expr, compute: $cs:expr,
     to_acc: |$x:ident| $to:expr, from_acc: |$a:ident| $from:expr) => {
        impl ReduceElement for $t {
            type Sum = $sum;
            type Acc = $acc;
            const LOWEST: Self = $lo;
            const HIGHEST: Self = $hi;
            const CUDA_COMPUTE_SIZE: usize = $cs;
            #[inline(always)]
            fn to_acc(self) -> $acc {
                let $x = self;
                $to
            }
            #[inline(always)]
            fn acc_to_sum($a: $acc) -> $sum {
                $from
            }
        }
    };
}

reduce_element!(f32, sum: f32, acc: f32, lowest: f32::NEG_INFINITY, highest: f32::INFINITY,
    compute: 4, to_acc: |x| x, from_acc: |a| a);
reduce_element!(f64, sum: f64, acc: f64, lowest: f64::NEG_INFINITY, highest: f64::INFINITY,
    compute: 8, to_acc: |x| x, from_acc: |a| a);
reduce_element!(half::f16, sum: half::f16, acc: f32, lowest: half::f16::NEG_INFINITY,
    highest: half::f16::INFINITY, compute: 4, to_acc: |x| x.to_f32(),
    from_acc: |a| half::f16::from_f32(a));
reduce_element!(half::bf16, sum: half::bf16, acc: f32, lowest: half::bf16::NEG_INFINITY,
    highest: half::bf16::INFINITY, compute: 4, to_acc: |x| x.to_f32(),
    from_acc: |a| half::bf16::from_f32(a));
reduce_element!(i32, sum: i64, acc: i64, lowest: i32::MIN, highest: i32::MAX, compute: 4,
    to_acc: |x| i64::from(x), from_acc: |a| a);
reduce_element!(i64, sum: i64, acc: i64, lowest: i64::MIN, highest: i64::MAX, compute: 8,
    to_acc: |x| x, from_acc: |a| a);
reduce_element!(u8, sum: i64, acc: i64, lowest: 0, highest: u8::MAX, compute: 4,
    to_acc: |x| i64::from(x), from_acc: |a| a);
reduce_element!(bool, sum: i64, acc: i64, lowest: false, highest: true, compute: 1,
    to_acc: |x| i64::from(x), from_acc: |a| a);
reduce_element!(i8, sum: i64, acc: i64, lowest: i8::MIN, highest: i8::MAX, compute: 4,
    to_acc: |x| i64::from(x), from_acc: |a| a);
reduce_element!(i16, sum: i64, acc: i64, lowest: i16::MIN, highest: i16::MAX, compute: 4,
    to_acc: |x| i64::from(x), from_acc: |a| a);
reduce_element!(u16, sum: i64, acc: i64, lowest: 0, highest: u16::MAX, compute: 4,
    to_acc: |x| i64::from(x), from_acc: |a| a);
reduce_element!(u32, sum: i64, acc: i64, lowest: 0, highest: u32::MAX, compute: 4,
    to_acc: |x| i64::from(x), from_acc: |a| a);
// `u64` accumulates in the wrapping `i64` like every integer: the same 64 bits (the sum
// modulo 2^64), read as two's complement; `.cast::<u64>()` of the result gives them back as
// the unsigned sum modulo 2^64.
reduce_element!(u64, sum: i64, acc: i64, lowest: 0, highest: u64::MAX, compute: 8,
    to_acc: |x| x as i64, from_acc: |a| a);

/// Float element types, which have a mean: `f32`, `f64`, `f16`, `bf16` (PyTorch refuses the
/// mean of integers too). Sealed by [`Element`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` tensors have no `mean`",
    note = "mean takes f32, f64, f16 or bf16: call `.cast::<f32>()` first (or `sum` for an i64 total)"
)]
pub trait MeanElement: ReduceElement + FloatElement {
    /// An accumulated sum of `count` elements divided by `count`, rounded once to `Self`.
    fn mean_of(acc: Self::Acc, count: usize) -> Self;
}

macro_rules! mean_element {
    ($($t:ty),*) => {$(
        impl MeanElement for $t {
            fn mean_of(acc: Self::Acc, count: usize) -> Self {
                Self::acc_to_sum(acc.div_count(count))
            }
        }
    )*};
}
mean_element!(f32, f64, half::f16, half::bf16);
