//! Scans on the CPU: each row folded left to right on one thread.

use rayon::prelude::*;

use super::{rows_of, rows_of_mut, rows_per_task};
use crate::device::Cpu;
use crate::element::{DType, Element, FloatElement};
use crate::error::Result;
use crate::ops::reduce::{Accumulator, ReduceElement};
use crate::tensor::order::{CumOp, Extreme, ScanEngine};
use crate::tensor::{TensorView, TensorViewMut};

// SAFETY: every method below checks that the source and each destination are row-major
// `[rows, n]` (`rows_of`, `rows_of_mut`), splits them into rows of `n` and writes every
// element of each destination row once (the loops run over the whole row), never reading a
// destination; slices of the checked ranges touch nothing outside the layouts. Indices
// written are positions `0..n` within the row.
unsafe impl<T: ReduceElement> ScanEngine<T> for Cpu {
    fn cumulate(
        &self,
        op: CumOp,
        src: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, T::Sum, Self>,
    ) -> Result<()> {
        let [rows, n] = shape2(src.shape());
        let name = match op {
            CumOp::Sum => "cumsum",
            CumOp::Prod => "cumprod",
        };
        let x = rows_of(name, src, rows, n)?;
        let y = rows_of_mut(name, dst, rows, n)?;
        if rows * n == 0 {
            return Ok(());
        }
        y.par_chunks_mut(n)
            .zip(x.par_chunks(n))
            .with_min_len(rows_per_task(n))
            .for_each(|(y, x)| {
                let mut acc = match op {
                    CumOp::Sum => <T::Acc as Accumulator>::ZERO,
                    CumOp::Prod => <T::Acc as Accumulator>::ONE,
                };
                for (o, &v) in y.iter_mut().zip(x) {
                    acc = match op {
                        CumOp::Sum => acc.add(v.to_acc()),
                        CumOp::Prod => acc.mul(v.to_acc()),
                    };
                    *o = T::acc_to_sum(acc);
                }
            });
        Ok(())
    }

    fn cum_extreme(
        &self,
        which: Extreme,
        src: &TensorView<'_, T, Self>,
        values: &mut TensorViewMut<'_, T, Self>,
        indices: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        let [rows, n] = shape2(src.shape());
        let name = match which {
            Extreme::Max => "cummax",
            Extreme::Min => "cummin",
        };
        let x = rows_of(name, src, rows, n)?;
        let v = rows_of_mut(name, values, rows, n)?;
        let ix = rows_of_mut(name, indices, rows, n)?;
        if rows * n == 0 {
            return Ok(());
        }
        v.par_chunks_mut(n)
            .zip(ix.par_chunks_mut(n))
            .zip(x.par_chunks(n))
            .with_min_len(rows_per_task(n))
            .for_each(|((v, ix), x)| {
                // PyTorch's `cummax_cummin_helper`: a NaN, or (while the running value is not
                // NaN) a value `>=` (`<=`) it, takes over.
                let mut best = x[0];
                let mut at = 0i64;
                for (j, ((o, oi), &c)) in v.iter_mut().zip(ix.iter_mut()).zip(x).enumerate() {
                    let takes = match which {
                        Extreme::Max => c >= best,
                        Extreme::Min => c <= best,
                    };
                    if is_nan(c) || (!is_nan(best) && takes) {
                        best = c;
                        at = j as i64;
                    }
                    *o = best;
                    *oi = at;
                }
            });
        Ok(())
    }

    fn logcumsumexp(
        &self,
        src: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, T, Self>,
    ) -> Result<()>
    where
        T: FloatElement,
    {
        let [rows, n] = shape2(src.shape());
        let x = rows_of("logcumsumexp", src, rows, n)?;
        let y = rows_of_mut("logcumsumexp", dst, rows, n)?;
        if rows * n == 0 {
            return Ok(());
        }
        let wide = T::DTYPE == DType::F64;
        y.par_chunks_mut(n)
            .zip(x.par_chunks(n))
            .with_min_len(rows_per_task(n))
            .for_each(|(y, x)| {
                if wide {
                    let mut acc = f64::NEG_INFINITY;
                    for (o, &v) in y.iter_mut().zip(x) {
                        acc = log_add_exp(v.to_f64(), acc);
                        *o = T::from_f64(acc);
                    }
                } else {
                    // f32, f16, bf16: exact in f32, accumulated there (PyTorch's acc type).
                    let mut acc = f32::NEG_INFINITY;
                    for (o, &v) in y.iter_mut().zip(x) {
                        acc = log_add_exp(v.to_f64() as f32, acc);
                        *o = T::from_f32(acc);
                    }
                }
            });
        Ok(())
    }
}

/// PyTorch's `_log_add_exp_helper(x, y)` (`aten/src/ATen/native/ReduceOpsUtils.h`), with
/// `std::min` / `std::max`'s NaN behaviour: NaN in either gives NaN.
pub(crate) fn log_add_exp<F: num_traits::Float>(x: F, y: F) -> F {
    let (min, max) = if y.is_nan() {
        (y, y)
    } else {
        (if y < x { y } else { x }, if x < y { y } else { x })
    };
    if min != max || min.is_finite() {
        (min - max).exp().ln_1p() + max
    } else {
        x
    }
}

fn is_nan<T: Element>(v: T) -> bool {
    // Only NaN is unequal to itself.
    v.partial_cmp(&v).is_none()
}

/// The `[rows, n]` of a 2-D shape (`[0, 0]` for any other: `rows_of` rejects it).
pub(super) fn shape2(s: &[usize]) -> [usize; 2] {
    match s {
        &[r, n] => [r, n],
        _ => [0, 0],
    }
}
