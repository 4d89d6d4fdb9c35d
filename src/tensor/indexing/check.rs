//! The checks every indexing op makes before an engine sees a job: index values in range,
//! dims resolved, shapes that fit, every view on one device.

use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::{normalize_dim, Layout};
use crate::tensor::backend::views::TensorView;
use crate::tensor::{Backend, Tensor, TensorViewMut};

use super::engine::sealed::IndexEngine;
use super::engine::{GatherJob, IndexCheck, IndexElement};

/// Checks that every value of `index` lies in `[0, size)` (or `[-size, size)` when `wrap`),
/// with one min and one max reduction over it, read back: for engines without a check of
/// their own (`IndexEngine::CHECKS`, `IndexEngine::check_indices`). An empty index is always
/// in range.
///
/// # Errors
/// [`LayoutError::IndexOutOfRange`] naming the smallest or largest value out of range.
pub(crate) fn check_range<I: IndexElement, D: Backend>(
    op: &'static str,
    index: &TensorView<'_, I, D>,
    dim: usize,
    size: usize,
    wrap: bool,
) -> Result<()> {
    if index.numel() == 0 {
        return Ok(());
    }
    let (lo, hi) = min_max(index)?;
    let size_i = i64::try_from(size).unwrap_or(i64::MAX);
    let floor = if wrap { -size_i } else { 0 };
    for v in [lo, hi] {
        if v < floor || v >= size_i {
            return Err(LayoutError::IndexOutOfRange {
                op,
                index: v,
                dim,
                size,
            }
            .into());
        }
    }
    Ok(())
}

/// The smallest and largest value of a non-empty index tensor, on the host. Broadcast dims
/// (stride 0, as `index_select` spreads its 1-D index) are read once, not once per position.
pub(crate) fn min_max<I: IndexElement, D: Backend>(
    index: &TensorView<'_, I, D>,
) -> Result<(i64, i64)> {
    let once: Vec<usize> = index
        .shape()
        .iter()
        .zip(index.strides())
        .map(|(&n, &s)| if s == 0 { n.min(1) } else { n })
        .collect();
    let layout = Layout::new(&once, index.strides(), index.layout().offset())?;
    let v = index.clone();
    let unique = TensorView::new(v.repr.data, layout, v.repr.device)?;
    let lo = unique.min()?.item()?.to_i64();
    let hi = unique.max()?.item()?.to_i64();
    Ok((lo, hi))
}

/// `dim` resolved against `rank`, where a 0-d tensor takes dims 0 and -1 as PyTorch does.
pub(crate) fn resolve_dim(op: &'static str, dim: isize, rank: usize) -> Result<usize> {
    Ok(normalize_dim(op, dim, rank.max(1))?)
}

/// A view of `v` with at least one dim (a 0-d view as `[1]`).
pub(crate) fn at_least_1d<'a, T: Element, D: Backend>(
    v: TensorView<'a, T, D>,
) -> Result<TensorView<'a, T, D>> {
    if v.rank() == 0 {
        v.unsqueeze(0)
    } else {
        Ok(v)
    }
}

/// The shape-mismatch error of an indexing op.
pub(crate) fn mismatch(op: &'static str, expected: &[usize], got: &[usize]) -> crate::Error {
    LayoutError::ShapeMismatch {
        op,
        expected: expected.to_vec(),
        got: got.to_vec(),
    }
    .into()
}

/// A 1-D `index` (`[n]`, or 0-d as `[1]`) seen as a tensor of `shape` (whose `dim` is `n`):
/// stride 0 in every other dim, so the gather / scatter primitives serve `index_select`,
/// `index_add`, `index_copy` and `index_fill`.
pub(crate) fn spread_1d<'a, I: Element, D: Backend>(
    op: &'static str,
    index: TensorView<'a, I, D>,
    shape: &[usize],
    dim: usize,
) -> Result<TensorView<'a, I, D>> {
    let index = at_least_1d(index)?;
    if index.rank() != 1 || shape.get(dim) != Some(&index.shape()[0]) {
        return Err(LayoutError::ShapeMismatch {
            op,
            expected: vec![shape.get(dim).copied().unwrap_or(0)],
            got: index.shape().to_vec(),
        }
        .into());
    }
    let mut strides = vec![0isize; shape.len()];
    strides[dim] = index.strides()[0];
    let layout = Layout::new(shape, &strides, index.layout().offset())?;
    TensorView::new(index.repr.data, layout, index.repr.device)
}

/// Gathers `src` along `dim` at `index` (already shaped as the result) into a new row-major
/// tensor, after the range check.
pub(crate) fn run_gather<T: Element, I: IndexElement, D: IndexEngine<T>>(
    op: &'static str,
    src: TensorView<'_, T, D>,
    index: TensorView<'_, I, D>,
    dim: usize,
    wrap: bool,
) -> Result<Tensor<T, D>> {
    let device = src.repr.device;
    device.check_device(op, index.storage())?;
    // A gather writes only the result made here, dropped on an error: an engine that finds
    // bad indices itself, before or while writing, needs no check first.
    if <D as IndexEngine<T>>::CHECKS == IndexCheck::Never {
        check_range(op, &index, dim, src.shape()[dim], wrap)?;
    }
    let layout = Layout::contiguous(index.shape())?;
    // SAFETY: `IndexEngine::gather` returning `Ok` has written every element of `dst`'s
    // layout without reading it (the trait's safety contract); the layout is row-major over
    // the whole storage. On error the storage is dropped unread.
    let mut storage = unsafe { device.alloc_uninit::<T>(layout.numel())? };
    {
        let mut dst = TensorViewMut::new(D::slice_mut(&mut storage), layout.clone(), device)?;
        let job = GatherJob {
            src,
            index,
            dim,
            wrap,
            op,
        };
        device.gather(&job, &mut dst)?;
    }
    Ok(Tensor::from_contiguous(storage, layout, device.clone()))
}
