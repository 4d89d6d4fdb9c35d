//! Sorting on the CPU: `(key, index)` pairs per row.

use std::cmp::Ordering;

use rayon::prelude::*;

use super::scan::shape2;
use super::{rows_of, rows_of_mut, rows_per_task};
use crate::device::Cpu;
use crate::error::Result;
use crate::tensor::order::{SortElement, SortEngine};
use crate::tensor::{TensorView, TensorViewMut};

/// The order of `(key, index)` pairs: by key (reversed when `descending`), then by index,
/// so equal keys keep their order in the row.
fn order<K: Ord>(descending: bool) -> impl Fn(&(K, u64), &(K, u64)) -> Ordering + Sync {
    move |a, b| {
        let by_key = if descending {
            b.0.cmp(&a.0)
        } else {
            a.0.cmp(&b.0)
        };
        by_key.then(a.1.cmp(&b.1))
    }
}

/// The `(key, index)` pairs of a row.
fn pairs<T: SortElement>(x: &[T]) -> Vec<(T::Key, u64)> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| (v.sort_key(), i as u64))
        .collect()
}

/// Writes the first `out.len()` pairs' values and indices.
fn write_row<T: SortElement>(x: &[T], p: &[(T::Key, u64)], v: &mut [T], ix: &mut [i64]) {
    for ((o, oi), &(_, i)) in v.iter_mut().zip(ix.iter_mut()).zip(p) {
        // `i` came from `enumerate` over `x`: in bounds.
        *o = x[i as usize];
        *oi = i as i64;
    }
}

// SAFETY: every method checks that its views are row-major of the stated shapes
// (`rows_of`, `rows_of_mut`) and writes every destination element once: `sort` writes all
// `n` of each row, `topk` the `k` chosen, `searchsorted` one per value; no destination is
// read. Indices are positions from `enumerate` over the row (`0..n`) or binary-search bounds
// in `0..=m`.
unsafe impl<T: SortElement> SortEngine<T> for Cpu {
    fn sort(
        &self,
        src: &TensorView<'_, T, Self>,
        descending: bool,
        _stable: bool,
        values: &mut TensorViewMut<'_, T, Self>,
        indices: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        let [rows, n] = shape2(src.shape());
        let x = rows_of("sort", src, rows, n)?;
        let v = rows_of_mut("sort", values, rows, n)?;
        let ix = rows_of_mut("sort", indices, rows, n)?;
        if rows * n == 0 {
            return Ok(());
        }
        let cmp = order::<T::Key>(descending);
        v.par_chunks_mut(n)
            .zip(ix.par_chunks_mut(n))
            .zip(x.par_chunks(n))
            .with_min_len(rows_per_task(n))
            .for_each(|((v, ix), x)| {
                let mut p = pairs(x);
                // The index makes every pair distinct: an unstable sort is stable here.
                if rows == 1 && n >= 4 * super::GRAIN {
                    p.par_sort_unstable_by(&cmp);
                } else {
                    p.sort_unstable_by(&cmp);
                }
                write_row(x, &p, v, ix);
            });
        Ok(())
    }

    fn topk(
        &self,
        src: &TensorView<'_, T, Self>,
        k: usize,
        largest: bool,
        values: &mut TensorViewMut<'_, T, Self>,
        indices: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        let [rows, n] = shape2(src.shape());
        let x = rows_of("topk", src, rows, n)?;
        let v = rows_of_mut("topk", values, rows, k)?;
        let ix = rows_of_mut("topk", indices, rows, k)?;
        if rows * k == 0 {
            return Ok(());
        }
        if k > n {
            return Err(crate::error::LayoutError::KOutOfRange {
                op: "topk",
                k,
                dim: 1,
                size: n,
            }
            .into());
        }
        let cmp = order::<T::Key>(largest);
        v.par_chunks_mut(k)
            .zip(ix.par_chunks_mut(k))
            .zip(x.par_chunks(n))
            .with_min_len(rows_per_task(n))
            .for_each(|((v, ix), x)| {
                let mut p = pairs(x);
                if k < n {
                    p.select_nth_unstable_by(k - 1, &cmp);
                }
                p[..k].sort_unstable_by(&cmp);
                write_row(x, &p[..k], v, ix);
            });
        Ok(())
    }

    fn searchsorted(
        &self,
        sorted: &TensorView<'_, T, Self>,
        values: &TensorView<'_, T, Self>,
        right: bool,
        out: &mut TensorViewMut<'_, i64, Self>,
    ) -> Result<()> {
        let m = sorted.numel();
        let count = values.numel();
        let seq = rows_of("searchsorted", &sorted.reshape(&[1, m])?, 1, m)?;
        let vals = rows_of("searchsorted", &values.reshape(&[1, count])?, 1, count)?;
        let mut o = out.reborrow().reshape(&[1, count])?;
        let o = rows_of_mut("searchsorted", &mut o, 1, count)?;
        o.par_iter_mut()
            .zip(vals.par_iter())
            .with_min_len(1024)
            .for_each(|(o, &v)| *o = bound(seq, v, right) as i64);
        Ok(())
    }
}

/// PyTorch's `cus_lower_bound` / `cus_upper_bound`
/// (`aten/src/ATen/native/BucketizationUtils.h`): the same comparisons, so NaN and unsorted
/// sequences give PyTorch's answers.
fn bound<T: SortElement>(seq: &[T], v: T, right: bool) -> usize {
    let (mut start, mut end) = (0usize, seq.len());
    while start < end {
        let mid = start + ((end - start) >> 1);
        let m = seq[mid];
        // `!(m > v)` / `!(m >= v)`: true also when either is NaN (incomparable).
        let go_right = match m.partial_cmp(&v) {
            Some(Ordering::Greater) => false,
            Some(Ordering::Equal) => right,
            _ => true,
        };
        if go_right {
            start = mid + 1;
        } else {
            end = mid;
        }
    }
    start
}
