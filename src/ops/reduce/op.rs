//! The reductions: the [`Reduction`] contract and each op type's semantics, as the engines
//! fold them.

use std::fmt::Debug;

use crate::element::{Element, FloatElement, Numeric};

use super::element::{sealed, Accumulator, MeanElement, ReduceElement};
use super::kind::ReduceKind;

/// A reduction of `T` elements: the op types [`Sum`], [`Prod`], [`Mean`], [`Max`], [`Min`],
/// [`ArgMax`], [`ArgMin`], [`SumAbs`], [`SumSq`]. Sealed.
///
/// An engine folds the elements of each output into an accumulator: it starts from
/// [`identity`](Reduction::identity) (neutral: `combine(identity, a) == a`), turns each
/// element into one with [`map`](Reduction::map) (given the element's index in row-major order
/// of the reduced dims, which only the arg ops read), folds with
/// [`combine`](Reduction::combine) in any order and grouping (it is associative and
/// commutative, up to float rounding), and turns the result into the output with
/// [`project`](Reduction::project) (given the element count, which `mean` divides by). The GPU
/// runs the CUDA functor [`ReduceKind::cuda_functor`] of [`Reduction::KIND`], which does the
/// same in the same types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not reduce `{T}` tensors",
    note = "`sum` takes every element type and `prod` the numeric ones; `mean`, `sum_abs` and `sum_sq` take floats (call `.cast::<f32>()` first); `max`, `min`, `argmax` and `argmin` take numeric types (f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64)"
)]
pub trait Reduction<T: Element>: sealed::Sealed + Copy + Send + Sync + Debug + 'static {
    /// The result's element type.
    type Output: Element;
    /// What is folded.
    type Acc: Copy + Send + Sync + Debug;
    /// The run-time tag.
    const KIND: ReduceKind;
    /// Size in bytes of the CUDA functor's `acc_t` for `T` (the generated source asserts it
    /// with `static_assert`, so the host sizes partial-result buffers right).
    const CUDA_ACC_SIZE: usize;
    /// The neutral accumulator.
    fn identity(&self) -> Self::Acc;
    /// One element as an accumulator; `index` is its position in row-major order of the
    /// reduced dims.
    fn map(&self, x: T, index: i64) -> Self::Acc;
    /// Folds two accumulators.
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The result for an accumulator of `count` elements.
    fn project(&self, a: Self::Acc, count: usize) -> Self::Output;
}

macro_rules! op_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;
        impl sealed::Sealed for $name {}
    };
}

op_type!(
    /// `Σ x`, accumulated in [`ReduceElement::Acc`], as [`ReduceElement::Sum`].
    Sum
);
op_type!(
    /// `Π x`, accumulated in [`ReduceElement::Acc`], as [`ReduceElement::Sum`].
    Prod
);
op_type!(
    /// `Σ x / n` for floats, in the accumulation type, rounded once to the element type.
    Mean
);
op_type!(
    /// The largest element; NaN if any element is NaN.
    Max
);
op_type!(
    /// The smallest element; NaN if any element is NaN.
    Min
);
op_type!(
    /// The `i64` index of the first largest element (a NaN is larger than every number).
    ArgMax
);
op_type!(
    /// The `i64` index of the first smallest element (a NaN is smaller than every number).
    ArgMin
);
op_type!(
    /// `Σ |x|` for floats (BLAS/Caffe `asum`), accumulated in [`ReduceElement::Acc`], as the
    /// element type.
    SumAbs
);
op_type!(
    /// `Σ x²` for floats (Caffe `sumsq`), accumulated in [`ReduceElement::Acc`], as the
    /// element type.
    SumSq
);

impl<T: ReduceElement> Reduction<T> for Sum {
    type Output = T::Sum;
    type Acc = T::Acc;
    const KIND: ReduceKind = ReduceKind::Sum;
    const CUDA_ACC_SIZE: usize = std::mem::size_of::<T::Acc>();
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ZERO
    }
    #[inline(always)]
    fn map(&self, x: T, _: i64) -> T::Acc {
        x.to_acc()
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    fn project(&self, a: T::Acc, _: usize) -> T::Sum {
        T::acc_to_sum(a)
    }
}

impl<T: ReduceElement + Numeric> Reduction<T> for Prod {
    type Output = T::Sum;
    type Acc = T::Acc;
    const KIND: ReduceKind = ReduceKind::Prod;
    const CUDA_ACC_SIZE: usize = std::mem::size_of::<T::Acc>();
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ONE
    }
    #[inline(always)]
    fn map(&self, x: T, _: i64) -> T::Acc {
        x.to_acc()
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.mul(b)
    }
    fn project(&self, a: T::Acc, _: usize) -> T::Sum {
        T::acc_to_sum(a)
    }
}

impl<T: MeanElement> Reduction<T> for Mean {
    type Output = T;
    type Acc = T::Acc;
    const KIND: ReduceKind = ReduceKind::Mean;
    const CUDA_ACC_SIZE: usize = std::mem::size_of::<T::Acc>();
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ZERO
    }
    #[inline(always)]
    fn map(&self, x: T, _: i64) -> T::Acc {
        x.to_acc()
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    fn project(&self, a: T::Acc, count: usize) -> T {
        T::mean_of(a, count)
    }
}

impl<T: ReduceElement<Sum = T> + FloatElement> Reduction<T> for SumAbs {
    type Output = T;
    type Acc = T::Acc;
    const KIND: ReduceKind = ReduceKind::SumAbs;
    const CUDA_ACC_SIZE: usize = std::mem::size_of::<T::Acc>();
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ZERO
    }
    /// `|x|` in the accumulation type (exact: widening a float is).
    #[inline(always)]
    fn map(&self, x: T, _: i64) -> T::Acc {
        x.to_acc().abs()
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    fn project(&self, a: T::Acc, _: usize) -> T {
        T::acc_to_sum(a)
    }
}

impl<T: ReduceElement<Sum = T> + FloatElement> Reduction<T> for SumSq {
    type Output = T;
    type Acc = T::Acc;
    const KIND: ReduceKind = ReduceKind::SumSq;
    const CUDA_ACC_SIZE: usize = std::mem::size_of::<T::Acc>();
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ZERO
    }
    /// `x * x` in the accumulation type (one rounding, as the kernels' `v * v`).
    #[inline(always)]
    fn map(&self, x: T, _: i64) -> T::Acc {
        let v = x.to_acc();
        v.mul(v)
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    fn project(&self, a: T::Acc, _: usize) -> T {
        T::acc_to_sum(a)
    }
}

/// Whether `x` is NaN (never for integers: `x != x` is false).
#[inline(always)]
#[allow(clippy::eq_op)]
fn is_nan<T: PartialEq>(x: T) -> bool {
    x != x
}

impl<T: ReduceElement + Numeric> Reduction<T> for Max {
    type Output = T;
    type Acc = T;
    const KIND: ReduceKind = ReduceKind::Max;
    const CUDA_ACC_SIZE: usize = T::CUDA_COMPUTE_SIZE;
    #[inline(always)]
    fn identity(&self) -> T {
        T::LOWEST
    }
    #[inline(always)]
    fn map(&self, x: T, _: i64) -> T {
        x
    }
    /// `a` if it is NaN or larger, else `b` (which keeps a NaN `b`): `ts_red_max`.
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        if is_nan(a) || a > b {
            a
        } else {
            b
        }
    }
    fn project(&self, a: T, _: usize) -> T {
        a
    }
}

impl<T: ReduceElement + Numeric> Reduction<T> for Min {
    type Output = T;
    type Acc = T;
    const KIND: ReduceKind = ReduceKind::Min;
    const CUDA_ACC_SIZE: usize = T::CUDA_COMPUTE_SIZE;
    #[inline(always)]
    fn identity(&self) -> T {
        T::HIGHEST
    }
    #[inline(always)]
    fn map(&self, x: T, _: i64) -> T {
        x
    }
    /// `a` if it is NaN or smaller, else `b`: `ts_red_min`.
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        if is_nan(a) || a < b {
            a
        } else {
            b
        }
    }
    fn project(&self, a: T, _: usize) -> T {
        a
    }
}

/// Whether `(a, ia)` beats `(b, ib)` for `argmax` (`LARGER`) or `argmin`: a NaN beats every
/// number, a better value wins, equal values go to the smaller index. A strict total order on
/// the pairs (indices are distinct), so folding by it is associative and commutative.
#[inline(always)]
fn arg_beats<T: Element, const LARGER: bool>(a: (T, i64), b: (T, i64)) -> bool {
    let (a_nan, b_nan) = (is_nan(a.0), is_nan(b.0));
    if a_nan || b_nan {
        return a_nan && (!b_nan || a.1 < b.1);
    }
    if a.0 != b.0 {
        return if LARGER { a.0 > b.0 } else { a.0 < b.0 };
    }
    a.1 < b.1
}

impl<T: ReduceElement + Numeric> Reduction<T> for ArgMax {
    type Output = i64;
    type Acc = (T, i64);
    const KIND: ReduceKind = ReduceKind::ArgMax;
    /// `ts_arg<V>`: the value in its compute type and a `long long` index, 16 bytes.
    const CUDA_ACC_SIZE: usize = 16;
    /// The lowest value at an index past every element: loses to every element.
    #[inline(always)]
    fn identity(&self) -> (T, i64) {
        (T::LOWEST, i64::MAX)
    }
    #[inline(always)]
    fn map(&self, x: T, index: i64) -> (T, i64) {
        (x, index)
    }
    #[inline(always)]
    fn combine(&self, a: (T, i64), b: (T, i64)) -> (T, i64) {
        if arg_beats::<T, true>(a, b) {
            a
        } else {
            b
        }
    }
    fn project(&self, a: (T, i64), _: usize) -> i64 {
        a.1
    }
}

impl<T: ReduceElement + Numeric> Reduction<T> for ArgMin {
    type Output = i64;
    type Acc = (T, i64);
    const KIND: ReduceKind = ReduceKind::ArgMin;
    /// As [`ArgMax`]'s.
    const CUDA_ACC_SIZE: usize = 16;
    #[inline(always)]
    fn identity(&self) -> (T, i64) {
        (T::HIGHEST, i64::MAX)
    }
    #[inline(always)]
    fn map(&self, x: T, index: i64) -> (T, i64) {
        (x, index)
    }
    #[inline(always)]
    fn combine(&self, a: (T, i64), b: (T, i64)) -> (T, i64) {
        if arg_beats::<T, false>(a, b) {
            a
        } else {
            b
        }
    }
    fn project(&self, a: (T, i64), _: usize) -> i64 {
        a.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold<T: Element, R: Reduction<T>>(op: R, xs: &[T]) -> R::Output {
        let acc = xs.iter().enumerate().fold(op.identity(), |acc, (i, &x)| {
            op.combine(acc, op.map(x, i as i64))
        });
        op.project(acc, xs.len())
    }

    #[test]
    fn max_and_min_propagate_nan_from_any_position() {
        for pos in 0..3 {
            let mut xs = [1.0f32, 5.0, -2.0];
            xs[pos] = f32::NAN;
            assert!(fold(Max, &xs).is_nan());
            assert!(fold(Min, &xs).is_nan());
        }
        assert_eq!(fold(Max, &[1.0f32, 5.0, -2.0]), 5.0);
        assert_eq!(fold(Min, &[1.0f32, 5.0, -2.0]), -2.0);
        assert_eq!(fold(Max, &[f32::NEG_INFINITY]), f32::NEG_INFINITY);
        assert_eq!(fold(Min, &[3u8, 0, 9]), 0);
    }

    #[test]
    fn arg_ops_take_the_first_tie_and_the_first_nan() {
        assert_eq!(fold(ArgMax, &[1, 7, 3, 7]), 1);
        assert_eq!(fold(ArgMin, &[4, 1, 1, 9]), 1);
        assert_eq!(fold(ArgMax, &[1.0, f64::NAN, 9.0, f64::NAN]), 1);
        assert_eq!(fold(ArgMin, &[1.0, 0.5, f64::NAN]), 2);
        assert_eq!(fold(ArgMax, &[f32::NEG_INFINITY, f32::NEG_INFINITY]), 0);
        assert_eq!(fold(ArgMin, &[i64::MAX, i64::MAX]), 0);
        // Order-independent: combining in reverse gives the same index.
        let op = ArgMax;
        let xs = [2.0f32, 8.0, 8.0, 1.0, 8.0];
        let rev = xs
            .iter()
            .enumerate()
            .rev()
            .fold(op.identity(), |acc, (i, &x)| {
                op.combine(op.map(x, i as i64), acc)
            });
        assert_eq!(rev.1, 1);
    }

    #[test]
    fn integer_sums_promote_and_wrap() {
        assert_eq!(fold(Sum, &[i32::MAX, i32::MAX]), 2 * i64::from(i32::MAX));
        assert_eq!(fold(Sum, &[250u8, 10]), 260i64);
        assert_eq!(fold(Sum, &[true, false, true]), 2i64);
        assert_eq!(fold(Sum, &[i64::MAX, 1]), i64::MIN);
        assert_eq!(fold(Prod, &[i64::MAX, 2]), -2);
        assert_eq!(fold(Prod, &[] as &[u8]), 1i64);
    }

    #[test]
    fn sum_abs_and_sum_sq_fold_magnitudes_and_squares() {
        assert_eq!(fold(SumAbs, &[1.5f32, -2.0, 0.5]), 4.0);
        assert_eq!(fold(SumSq, &[3.0f64, -4.0]), 25.0);
        assert_eq!(fold(SumAbs, &[] as &[f32]), 0.0);
        assert_eq!(fold(SumSq, &[] as &[f64]), 0.0);
        assert!(fold(SumAbs, &[1.0f32, f32::NAN]).is_nan());
        assert!(fold(SumSq, &[f64::NAN]).is_nan());
        assert_eq!(fold(SumAbs, &[-0.0f32]).to_bits(), 0.0f32.to_bits());
        // The half types accumulate in f32: in bf16 steps 256 + 1 + 1 stays 256 (ulp 2).
        let xs = [256.0f32, -1.0, 1.0].map(half::bf16::from_f32);
        assert_eq!(fold(SumAbs, &xs).to_f32(), 258.0);
        // In f16 steps 1024 + 1024 + 1 + 1 stays 2048 (ulp 2); in f32 it is 2050.
        let ys = [32.0f32, -32.0, 1.0, -1.0].map(half::f16::from_f32);
        assert_eq!(fold(SumSq, &ys).to_f32(), 2050.0);
    }

    #[test]
    fn half_sums_accumulate_in_f32_and_round_once() {
        // 2048 + 1 + 1 in f16 steps would stay 2048 (ulp 2); in f32 it is 2050.
        let xs = [2048.0f32, 1.0, 1.0].map(half::f16::from_f32);
        assert_eq!(fold(Sum, &xs).to_f32(), 2050.0);
        let m = fold(Mean, &[1.0f32, 2.0, 4.0].map(half::bf16::from_f32));
        assert_eq!(m, half::bf16::from_f32(7.0 / 3.0));
        assert!(fold(Mean, &[] as &[f64]).is_nan());
    }
}
