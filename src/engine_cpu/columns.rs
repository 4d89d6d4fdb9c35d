//! Reductions in column order (a kept dim innermost in memory, e.g. a first- or middle-axis
//! sum), split across rayon's threads (issue 29).
//!
//! For each index of the outer kept dims, one accumulator per element of the innermost kept
//! dim, and the reduced dims walked outside it, so each step folds one contiguous row into
//! the accumulators (ndarray's lane-wise `sum_axis`). Large reductions are cut into tasks of
//! (outer index, a range of columns): each column's fold is the same sequence of combines
//! whatever the cut, so the result does not depend on the number of threads.

use rayon::prelude::*;

use super::runs::{at, walk};
use crate::element::Element;
use crate::error::Result;
use crate::layout::reduce::ReduceGeometry;
use crate::ops::reduce::Reduction;
use crate::tensor::expr::host::{split_len, GRAIN};

/// Columns below which a task is not cut further: a row piece of 64 elements is at least
/// four cache lines.
const MIN_COLUMNS: usize = 64;

/// Column order: the innermost kept dim as a row of accumulators, the reduced dims outside.
pub(super) fn reduce_columns<T: Element, R: Reduction<T>>(
    op: R,
    src: &[T],
    g: &ReduceGeometry,
    dst: &mut [R::Output],
    count: usize,
) -> Result<()> {
    let (outer, inner) = g.kept.split_at(g.kept.len() - 1);
    let inner = inner[0];
    let m = inner.size;
    let outer_sizes: Vec<usize> = outer.iter().map(|d| d.size).collect();
    let outer_strides: Vec<[isize; 2]> = outer.iter().map(|d| [d.input, d.output]).collect();
    let base = [g.input_offset as isize, g.output_offset as isize];
    let outers = g.num_out / m.max(1);
    let red_sizes: Vec<usize> = g.reduced.iter().map(|d| d.size).collect();
    let red_strides: Vec<[isize; 2]> = g.reduced.iter().map(|d| [d.input, d.logical]).collect();
    // Accumulators of columns `cols` of the outer index whose input starts at `i0`.
    let fold = |i0: isize, cols: std::ops::Range<usize>, accs: &mut Vec<R::Acc>| {
        let w = cols.len();
        accs.clear();
        accs.resize(w, op.identity());
        let first = i0 + cols.start as isize * inner.input;
        walk(
            &red_sizes,
            &red_strides,
            [first, g.logical_offset as isize],
            |[r, l]| {
                let r = r as usize;
                let l = l as i64;
                if inner.input == 1 {
                    for (a, &x) in accs.iter_mut().zip(&src[r..r + w]) {
                        *a = op.combine(*a, op.map(x, l));
                    }
                } else {
                    for (i, a) in accs.iter_mut().enumerate() {
                        *a = op.combine(*a, op.map(src[at(r, inner.input, i)], l));
                    }
                }
            },
        );
    };
    let write = |dst: &mut [R::Output], o0: isize, c0: usize, accs: &[R::Acc]| {
        for (i, &a) in accs.iter().enumerate() {
            dst[(o0 + (c0 + i) as isize * inner.output) as usize] = op.project(a, count);
        }
    };
    if split_len(g.num_out.saturating_mul(count)).is_none() {
        let mut accs = super::vec_with_capacity::<R::Acc>(m)?;
        walk(&outer_sizes, &outer_strides, base, |[i0, o0]| {
            fold(i0, 0..m, &mut accs);
            write(dst, o0, 0, &accs);
        });
        return Ok(());
    }
    // Tasks: about four per thread, each at least MIN_COLUMNS wide and GRAIN elements.
    let tasks_wanted = rayon::current_num_threads() * 4;
    let per_outer = tasks_wanted.div_ceil(outers.max(1)).max(1);
    let width = m
        .div_ceil(per_outer)
        .max(MIN_COLUMNS)
        .max(GRAIN / count.max(1))
        .min(m)
        .max(1);
    let mut tasks = Vec::new();
    walk(&outer_sizes, &outer_strides, base, |[i0, o0]| {
        for c0 in (0..m).step_by(width) {
            tasks.push((i0, o0, c0));
        }
    });
    let results: Vec<Vec<R::Acc>> = tasks
        .par_iter()
        .map(|&(i0, _, c0)| {
            let mut accs = Vec::new();
            fold(i0, c0..(c0 + width).min(m), &mut accs);
            accs
        })
        .collect();
    for (&(_, o0, c0), accs) in tasks.iter().zip(&results) {
        write(dst, o0, c0, accs);
    }
    Ok(())
}
