//! Sorting along a dim: `sort`, `argsort`, `topk`, `kthvalue`.

use super::engine::SortBackend;
use super::key::SortElement;
use super::rows::Rows;
use crate::error::{LayoutError, Result};
use crate::tensor::Dim;
use crate::tensor::{AsViewMut, ReadRepr, Tensor};

/// Values and their `i64` indices along the dim (`torch.return_types.sort`, `topk`, ...).
pub type ValuesIndices<T, D> = (Tensor<T, D>, Tensor<i64, D>);

impl<T: SortElement, D: SortBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// Sorts along `dim` (`torch.sort(x, dim, descending, stable)`; PyTorch's default dim is
    /// `-1`): the sorted values and, for each, its index along the dim (`i64`). NaN sorts
    /// last ascending and first descending; `-0.0` and `0.0` are equal. With `stable`, equal
    /// values keep their order in the input (both engines always sort stably; the flag is
    /// PyTorch's and promises it).
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[5], vec![3.0f32, f32::NAN, -1.0, 3.0, 0.5])?;
    /// let (v, i) = x.sort(-1, false, true)?;
    /// assert_eq!(i.to_vec(), [2i64, 4, 0, 3, 1]);
    /// assert_eq!(&v.to_vec()[..4], [-1.0, 0.5, 3.0, 3.0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`]; the device's errors.
    pub fn sort(
        &self,
        dim: impl Dim,
        descending: bool,
        stable: bool,
    ) -> Result<ValuesIndices<T, D>> {
        let rows = Rows::new("sort", self.view(), dim.to_isize())?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: `SortEngine::sort` returning `Ok` wrote every element of both (its contract).
        unsafe {
            rows.output_pair(device, rows.n, |v, i| {
                device.sort(&src, descending, stable, v, i)
            })
        }
    }

    /// [`sort`](Self::sort) into `values` and `indices` (writable views of the input's shape).
    ///
    /// # Errors
    /// As [`sort`](Self::sort), and `ShapeMismatch` for outputs of another shape.
    pub fn sort_into(
        &self,
        dim: impl Dim,
        descending: bool,
        stable: bool,
        values: &mut impl AsViewMut<T, D>,
        indices: &mut impl AsViewMut<i64, D>,
    ) -> Result<()> {
        let rows = Rows::new("sort", self.view(), dim.to_isize())?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: as in `sort`.
        unsafe {
            rows.output_pair_into(device, rows.n, values, indices, |v, i| {
                device.sort(&src, descending, stable, v, i)
            })
        }
    }

    /// The indices that sort along `dim` (`torch.argsort(x, dim, descending, stable)`): the
    /// indices of [`sort`](Self::sort).
    ///
    /// # Errors
    /// As [`sort`](Self::sort).
    pub fn argsort(&self, dim: impl Dim, descending: bool, stable: bool) -> Result<Tensor<i64, D>> {
        Ok(self.sort(dim, descending, stable)?.1)
    }

    /// The `k` largest (`largest`) or smallest elements along `dim` and their indices
    /// (`torch.topk(x, k, dim, largest, sorted)`). The result is always in sorted order
    /// (largest first for `largest`), which `sorted = false` permits; among equal values the
    /// lower index comes first. NaN counts as larger than every number, as in PyTorch.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 4], vec![1i32, 9, 9, 4, 7, 0, 2, 8])?;
    /// let (v, i) = x.topk(2, -1, true, true)?;
    /// assert_eq!(v.to_vec(), [9, 9, 8, 7]);
    /// assert_eq!(i.to_vec(), [1i64, 2, 3, 0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::KOutOfRange`] for `k` larger than the dim;
    /// [`LayoutError::DimOutOfRange`]; the device's errors.
    pub fn topk(
        &self,
        k: usize,
        dim: impl Dim,
        largest: bool,
        sorted: bool,
    ) -> Result<ValuesIndices<T, D>> {
        let _ = sorted; // always sorted
        let rows = Rows::new("topk", self.view(), dim.to_isize())?;
        check_k("topk", k, &rows, 0)?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: `SortEngine::topk` returning `Ok` wrote every element of both (its
        // contract).
        unsafe { rows.output_pair(device, k, |v, i| device.topk(&src, k, largest, v, i)) }
    }

    /// The `k`-th smallest element along `dim` (1-based, `torch.kthvalue(x, k, dim,
    /// keepdim)`) and its index; `keepdim` keeps the dim with size 1. NaN counts as the
    /// largest value. Among equal values, the index of the lowest such position in the sorted
    /// order.
    ///
    /// # Errors
    /// [`LayoutError::KOutOfRange`] for `k` outside `1..=size`;
    /// [`LayoutError::DimOutOfRange`]; the device's errors.
    pub fn kthvalue(&self, k: usize, dim: impl Dim, keepdim: bool) -> Result<ValuesIndices<T, D>> {
        let rows = Rows::new("kthvalue", self.view(), dim.to_isize())?;
        check_k("kthvalue", k, &rows, 1)?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: as in `topk`.
        let (v, i) =
            unsafe { rows.output_pair(device, k, |v, i| device.topk(&src, k, false, v, i))? };
        let shape = rows.out_shape(1, keepdim);
        if v.rank() == 0 {
            return Ok((v, i));
        }
        Ok((
            kth_of(&v, rows.dim, k, &shape)?,
            kth_of(&i, rows.dim, k, &shape)?,
        ))
    }
}

/// Column `k − 1` of `t` along `dim`, as a new row-major tensor of `shape`.
fn kth_of<U: crate::element::Element, D: crate::tensor::Backend>(
    t: &Tensor<U, D>,
    dim: usize,
    k: usize,
    shape: &[usize],
) -> Result<Tensor<U, D>> {
    let last = t.narrow(dim, k - 1, 1)?;
    last.contiguous()?
        .into_reshape(shape)
        .map_err(|h| h.into_parts().1)
}

/// `k` within `lowest..=n` of the dim.
fn check_k<T: SortElement, D: SortBackend<T>>(
    op: &'static str,
    k: usize,
    rows: &Rows<'_, T, D>,
    lowest: usize,
) -> Result<()> {
    if k < lowest || k > rows.n {
        return Err(LayoutError::KOutOfRange {
            op,
            k,
            dim: rows.dim,
            size: rows.n,
        }
        .into());
    }
    Ok(())
}
