//! Joining tensors: [`Tensor::cat`] along an existing dim and [`Tensor::stack`] along a new
//! one, on every device.
//!
//! The result is allocated once on the first tensor's device; each input is copied into its
//! slice of it (a narrowed view of the output) by the device's copy (on a GPU, the strided
//! copy kernel), so inputs may have any strides. Mismatched shapes are a
//! [`LayoutError::JoinMismatch`] naming the tensor and both shapes; an empty list is
//! [`LayoutError::NoTensors`]; tensors on another GPU are the backend's
//! [`GpuError::DeviceMismatch`](crate::error::GpuError::DeviceMismatch).

use super::{AsView, Tensor, TensorView};
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::normalize_dim;
use crate::tensor::Backend;
use crate::tensor::Dim;

impl<T: Element, D: Backend> Tensor<T, D> {
    /// The tensors joined along `dim` (negative counts from the end): every other dim must
    /// match. NumPy's `concatenate`, PyTorch's `cat`.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let a = Tensor::from_vec(&[2, 1], vec![1, 2])?;
    /// let b = Tensor::from_vec(&[2, 2], vec![3, 4, 5, 6])?;
    /// let c = Tensor::cat(&[a.view(), b.view()], 1)?;
    /// assert_eq!(c.to_vec(), [1, 3, 4, 2, 5, 6]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::NoTensors`], [`LayoutError::DimOutOfRange`],
    /// [`LayoutError::JoinMismatch`]; the device's allocation or copy error.
    pub fn cat<X: AsView<T, D>>(tensors: &[X], dim: impl Dim) -> Result<Self> {
        let views: Vec<TensorView<'_, T, D>> = tensors.iter().map(|t| t.view()).collect();
        join("cat", &views, dim.to_isize(), false)
    }

    /// The tensors, all of one shape, stacked along a new dim at position `dim` (`0..=rank`;
    /// negative counts from the end, `-1` appends). NumPy's and PyTorch's `stack`.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let a = Tensor::from_vec(&[2], vec![1, 2])?;
    /// let b = Tensor::from_vec(&[2], vec![3, 4])?;
    /// let s = Tensor::stack(&[&a, &b], 1)?;
    /// assert_eq!(s.shape(), [2, 2]);
    /// assert_eq!(s.to_vec(), [1, 3, 2, 4]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::cat`]; [`LayoutError::JoinMismatch`] for any two shapes that differ.
    pub fn stack<X: AsView<T, D>>(tensors: &[X], dim: impl Dim) -> Result<Self> {
        const OP: &str = "stack";
        let views: Vec<TensorView<'_, T, D>> = tensors.iter().map(|t| t.view()).collect();
        let first = views.first().ok_or(LayoutError::NoTensors { op: OP })?;
        let d = normalize_dim(OP, dim.to_isize(), first.rank() + 1)?;
        for (index, v) in views.iter().enumerate().skip(1) {
            if v.shape() != first.shape() {
                return Err(mismatch(OP, d, index, first, v).into());
            }
        }
        let lifted = views
            .iter()
            .map(|v| v.unsqueeze(d as isize))
            .collect::<Result<Vec<_>>>()?;
        join(OP, &lifted, d as isize, true)
    }
}

fn mismatch<T: Element, D: Backend>(
    op: &'static str,
    dim: usize,
    index: usize,
    first: &TensorView<'_, T, D>,
    other: &TensorView<'_, T, D>,
) -> LayoutError {
    LayoutError::JoinMismatch {
        op,
        dim,
        index,
        expected: first.shape().to_vec(),
        got: other.shape().to_vec(),
    }
}

/// `views` joined along `dim` into a new row-major tensor on the first view's device.
fn join<T: Element, D: Backend>(
    op: &'static str,
    views: &[TensorView<'_, T, D>],
    dim: isize,
    stack: bool,
) -> Result<Tensor<T, D>> {
    let first = views.first().ok_or(LayoutError::NoTensors { op })?;
    let d = normalize_dim(op, dim, first.rank())?;
    let mut total = 0usize;
    for (index, v) in views.iter().enumerate() {
        let fits = v.rank() == first.rank()
            && v.shape()
                .iter()
                .zip(first.shape())
                .enumerate()
                .all(|(k, (a, b))| k == d || a == b);
        if !fits {
            // For `stack` the views are lifted; report the shapes as given.
            let (f, o) = if stack {
                (first.squeeze(d as isize)?, v.squeeze(d as isize)?)
            } else {
                (first.clone(), v.clone())
            };
            return Err(mismatch(op, d, index, &f, &o).into());
        }
        total = total
            .checked_add(v.shape()[d])
            .ok_or_else(|| LayoutError::SizeOverflow {
                op,
                shape: first.shape().to_vec(),
                what: "joined dim",
            })?;
    }
    let mut shape = first.shape().to_vec();
    shape[d] = total;
    let mut out = Tensor::zeros_on(&shape, first.device())?;
    let mut start = 0;
    for v in views {
        let len = v.shape()[d];
        if len > 0 {
            out.view_mut()
                .narrow(d as isize, start, len)?
                .copy_from(v)?;
        }
        start += len;
    }
    Ok(out)
}
