//! Scans and sorting on the CPU (issue 28): [`ScanEngine`] and [`SortEngine`] for [`Cpu`].
//!
//! The tensor layer hands row-major `[rows, n]` views (`tensor/order/`), so each row is a
//! contiguous slice; rows run in parallel on rayon's pool (`par_chunks`, at least
//! [`GRAIN`] elements per task, as PyTorch's `parallel_for` grain), each row on one thread,
//! so results do not depend on the thread count.
//!
//! - Scans fold each row left to right in the accumulation type ([`scan`]).
//! - Sorts sort `(key, index)` pairs ([`sort`]): the key is the element's order-preserving
//!   unsigned key ([`SortElement::sort_key`]: NaN last, `-0.0 == 0.0`) and the index breaks
//!   ties, so an unstable sort of the pairs is stable on the values. `topk` selects with
//!   `select_nth_unstable_by` and sorts only the `k` chosen.
//!
//! [`SortElement::sort_key`]: crate::tensor::order::SortElement::sort_key

mod scan;
mod sort;

use crate::device::Cpu;
use crate::element::Element;
use crate::error::Result;
use crate::tensor::order::check_rows;
use crate::tensor::{TensorView, TensorViewMut};

/// Elements per rayon task, at least.
const GRAIN: usize = 32 * 1024;

/// The `[rows, n]` row-major source as a slice.
fn rows_of<'a, T: Element>(
    op: &'static str,
    v: &TensorView<'a, T, Cpu>,
    rows: usize,
    n: usize,
) -> Result<&'a [T]> {
    check_rows(op, v.layout(), &[rows, n])?;
    let range = v.layout().contiguous_range().unwrap_or(0..0);
    Ok(&v.storage()[range])
}

/// The `[rows, n]` row-major destination as a slice.
fn rows_of_mut<'s, T: Element>(
    op: &'static str,
    v: &'s mut TensorViewMut<'_, T, Cpu>,
    rows: usize,
    n: usize,
) -> Result<&'s mut [T]> {
    check_rows(op, v.layout(), &[rows, n])?;
    let range = v.layout().contiguous_range().unwrap_or(0..0);
    Ok(&mut v.slice_mut()[range])
}

/// Rows per rayon task for rows of `n` elements.
fn rows_per_task(n: usize) -> usize {
    (GRAIN / n.max(1)).max(1)
}
