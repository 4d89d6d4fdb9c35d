//! The reduction of every normalisation job to rows: the chosen dims moved last and the
//! rest flattened into a `[rows, n]` view (copied only where the dims do not merge), and
//! the destinations such a job writes.

use crate::element::FloatElement;
use crate::error::{LayoutError, Result};
use crate::layout::{normalize_dim, Layout, MAX_DIMS};
use crate::tensor::{AsViewMut, Backend, Dim, Tensor, TensorView, TensorViewMut};

use super::engine::sealed::NormalizeEngine;
use super::engine::{RowOp, RowStat, RowsJob, StatJob};

/// The dims `dims` of a rank-`rank` tensor, resolved (negative from the end), none twice, in
/// the order given; `None` is every dim.
pub(super) fn resolve_dims<P: Dim>(
    op: &'static str,
    dims: Option<&[P]>,
    rank: usize,
) -> Result<Vec<usize>> {
    let Some(ds) = dims else {
        return Ok((0..rank).collect());
    };
    let mut seen = [false; MAX_DIMS];
    let mut out = Vec::with_capacity(ds.len());
    for &d in ds {
        let d = normalize_dim(op, d.to_isize(), rank)?;
        if std::mem::replace(&mut seen[d], true) {
            return Err(LayoutError::DuplicateDim { op, dim: d, rank }.into());
        }
        out.push(d);
    }
    Ok(out)
}

/// A source as rows: either a view of the input, or a row-major copy where its dims do not
/// merge.
pub(super) struct Rows<'a, T: FloatElement, D: Backend> {
    view: Option<TensorView<'a, T, D>>,
    copy: Option<Tensor<T, D>>,
    /// The permutation that moves the chosen dims last (kept dims first, in order).
    pub perm: Vec<usize>,
    /// The input's shape under `perm`.
    pub permuted: Vec<usize>,
    /// The input's shape with the chosen dims of size 1 (`keepdim`).
    pub kept_ones: Vec<usize>,
    /// The kept dims' sizes (the statistics' shape without `keepdim`).
    pub kept: Vec<usize>,
    /// Rows (the product of the kept dims).
    pub rows: usize,
    /// Elements per row (the product of the chosen dims).
    pub n: usize,
}

impl<'a, T: FloatElement, D: Backend> Rows<'a, T, D> {
    /// `x` with the dims `chosen` (resolved, distinct) moved last and flattened.
    pub(super) fn new(x: TensorView<'a, T, D>, chosen: &[usize]) -> Result<Self> {
        let shape = x.shape().to_vec();
        let rank = shape.len();
        let mut perm: Vec<usize> = (0..rank).filter(|d| !chosen.contains(d)).collect();
        let kept: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
        perm.extend_from_slice(chosen);
        let permuted: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
        let kept_ones: Vec<usize> = (0..rank)
            .map(|d| if chosen.contains(&d) { 1 } else { shape[d] })
            .collect();
        let rows: usize = kept.iter().product();
        let n: usize = chosen.iter().map(|&d| shape[d]).product();
        let p = x.permute(&perm)?;
        let (view, copy) = match p.reshape(&[rows, n]) {
            Ok(v) => (Some(v), None),
            Err(_) => (None, Some(p.reshape_copy(&[rows, n])?)),
        };
        Ok(Rows {
            view,
            copy,
            perm,
            permuted,
            kept_ones,
            kept,
            rows,
            n,
        })
    }

    /// The `[rows, n]` view.
    pub(super) fn src(&self) -> TensorView<'_, T, D> {
        match (&self.view, &self.copy) {
            (Some(v), _) => v.clone(),
            (None, Some(c)) => c.view(),
            // `new` sets one of the two.
            (None, None) => unreachable!("Rows holds a view or a copy"),
        }
    }

    /// The inverse of `perm`.
    pub(super) fn inverse(&self) -> Vec<usize> {
        let mut inv = vec![0; self.perm.len()];
        for (i, &p) in self.perm.iter().enumerate() {
            inv[p] = i;
        }
        inv
    }
}

/// A contiguous `[len]`-element uninitialised tensor of `shape`, filled by `f` (which must
/// write every element through the `[rows, n]` or `[rows]` view it is given).
pub(super) fn fill_new<T: FloatElement, D: Backend>(
    device: &D,
    shape: &[usize],
    view_shape: &[usize],
    f: impl FnOnce(&mut TensorViewMut<'_, T, D>) -> Result<()>,
) -> Result<Tensor<T, D>> {
    let layout = Layout::contiguous(shape)?;
    // SAFETY: every caller passes an `f` that calls a `NormalizeEngine` method with this
    // view as a destination; returning `Ok`, that method has written every element of the
    // view's layout without reading it (the trait's safety contract), and the view is
    // row-major over the whole storage (`view_shape` has `shape`'s element count). On error
    // the storage is dropped unread.
    let mut storage = unsafe { device.alloc_uninit::<T>(layout.numel())? };
    {
        let mut dst = TensorViewMut::new(
            D::slice_mut(&mut storage),
            Layout::contiguous(view_shape)?,
            device,
        )?;
        f(&mut dst)?;
    }
    Ok(Tensor::from_contiguous(storage, layout, device.clone()))
}

/// Runs a row-to-row `op` over `dims` of `x` into a new tensor of `x`'s shape.
pub(super) fn rows_new<T: FloatElement, D: NormalizeEngine<T>>(
    op: RowOp,
    x: TensorView<'_, T, D>,
    chosen: &[usize],
    weight: Option<TensorView<'_, T, D>>,
    bias: Option<TensorView<'_, T, D>>,
) -> Result<Tensor<T, D>> {
    let rows = Rows::new(x.clone(), chosen)?;
    let device = x.device();
    let job = RowsJob {
        op,
        src: rows.src(),
        weight,
        bias,
    };
    let mut out = fill_new(device, &rows.permuted, &[rows.rows, rows.n], |dst| {
        device.rows(&job, dst)
    })?;
    if rows.perm.iter().enumerate().any(|(i, &p)| i != p) {
        let layout = out.layout().permute(&rows.inverse())?;
        out.set_layout(layout)?;
    }
    Ok(out)
}

/// Runs a row-to-row `op` over `dims` of `x` into `out` (any writable view of `x`'s shape):
/// directly where `out` under the same permutation is row-major rows, else through a
/// temporary copied into it.
pub(super) fn rows_into<T: FloatElement, D: NormalizeEngine<T>>(
    name: &'static str,
    op: RowOp,
    x: TensorView<'_, T, D>,
    chosen: &[usize],
    weight: Option<TensorView<'_, T, D>>,
    bias: Option<TensorView<'_, T, D>>,
    out: &mut impl AsViewMut<T, D>,
) -> Result<()> {
    let mut out = out.view_mut();
    if out.shape() != x.shape() {
        return Err(LayoutError::ShapeMismatch {
            op: name,
            expected: x.shape().to_vec(),
            got: out.shape().to_vec(),
        }
        .into());
    }
    let device = x.device();
    device.check_device(name, out.storage())?;
    let rows = Rows::new(x.clone(), chosen)?;
    let direct = out
        .reborrow()
        .permute(&rows.perm)
        .and_then(|p| p.reshape(&[rows.rows, rows.n]));
    if let Ok(mut d) = direct {
        let row_major = rows.rows <= 1 || d.strides()[0] == rows.n as isize;
        let unit = rows.n <= 1 || d.strides()[1] == 1;
        if row_major && unit {
            let job = RowsJob {
                op,
                src: rows.src(),
                weight,
                bias,
            };
            return device.rows(&job, &mut d);
        }
    }
    let job = RowsJob {
        op,
        src: rows.src(),
        weight,
        bias,
    };
    let tmp = fill_new(device, &rows.permuted, &[rows.rows, rows.n], |dst| {
        device.rows(&job, dst)
    })?;
    let back = tmp.permute(&rows.inverse())?;
    out.copy_from(&back)
}

/// A statistic and, when asked for, the mean.
pub(super) type StatAndMean<T, D> = (Tensor<T, D>, Option<Tensor<T, D>>);

/// A statistic over `chosen` dims of `x`: the value (and the mean, if `with_mean`), each of
/// the kept shape (with size-1 dims if `keepdim`).
pub(super) fn stats_new<T: FloatElement, D: NormalizeEngine<T>>(
    stat: RowStat,
    x: TensorView<'_, T, D>,
    chosen: &[usize],
    keepdim: bool,
    with_mean: bool,
) -> Result<StatAndMean<T, D>> {
    let rows = Rows::new(x.clone(), chosen)?;
    let device = x.device();
    let shape = if keepdim { &rows.kept_ones } else { &rows.kept };
    let job = StatJob {
        stat,
        src: rows.src(),
    };
    if !with_mean {
        let v = fill_new(device, shape, &[rows.rows], |dst| {
            device.row_stats(&job, dst, None)
        })?;
        return Ok((v, None));
    }
    let mut mean_slot = None;
    let v = fill_new(device, shape, &[rows.rows], |dst| {
        let m = fill_new(device, shape, &[rows.rows], |mean| {
            device.row_stats(&job, dst, Some(mean))
        })?;
        mean_slot = Some(m);
        Ok(())
    })?;
    Ok((v, mean_slot))
}
