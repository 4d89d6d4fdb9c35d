//! Ops that count into new tensors: `one_hot` and `bincount`, scatters into zeros whose
//! size may come from the data (a max read back, as PyTorch reads it).

use super::check::{check_range, min_max, mismatch};
use super::scatter::{reduce, Owner, Values};
use super::{IndexElement, ScatterBackend};
use crate::element::Numeric;
use crate::error::{LayoutError, Result};
use crate::tensor::repr::ReadRepr;
use crate::tensor::{AsView, Tensor};

impl<I: IndexElement, D: ScatterBackend<i64>, S: ReadRepr<I, D>> Tensor<I, D, S> {
    /// PyTorch's `F.one_hot(self, num_classes)`: an `i64` tensor `[*, C]` with a 1 at each
    /// index of `self` (shape `[*]`) and 0 elsewhere; `C` is `num_classes`, or the largest
    /// index plus one for `None` (read back from the device).
    ///
    /// # Errors
    /// [`LayoutError::IndexOutOfRange`] for a negative index or one of at least
    /// `num_classes`, the device's errors.
    pub fn one_hot(&self, num_classes: Option<usize>) -> Result<Tensor<i64, D>> {
        const OP: &str = "one_hot";
        let index = self.view();
        let classes = match num_classes {
            Some(c) => c,
            None if index.numel() == 0 => 0,
            None => usize::try_from(min_max(&index)?.1.max(-1).saturating_add(1)).unwrap_or(0),
        };
        let mut shape = index.shape().to_vec();
        shape.push(classes);
        let last = shape.len() - 1;
        check_range(OP, &index, last, classes, false)?;
        let mut out = Tensor::<i64, D>::zeros_on(&shape, self.device())?;
        let idx = index.unsqueeze(-1)?;
        let dst = (out.view_mut(), Owner::Op);
        reduce(
            OP,
            dst,
            -1,
            idx,
            Values::Value(1),
            false,
            super::ScatterReduce::Sum,
        )?;
        Ok(out)
    }

    /// PyTorch's `torch.bincount(self, minlength=minlength)`: for the 1-D non-negative
    /// `self`, how often each value occurs, as `i64` of length `max(max + 1, minlength)`.
    ///
    /// # Errors
    /// [`LayoutError::IndexOutOfRange`] for a negative value, [`LayoutError::ShapeMismatch`]
    /// for `self` not 1-D, the device's errors.
    pub fn bincount(&self, minlength: usize) -> Result<Tensor<i64, D>> {
        let (n, index) = bins("bincount", &self.view(), minlength)?;
        let mut out = Tensor::<i64, D>::zeros_on(&[n], self.device())?;
        let values = Values::Value(1);
        reduce(
            "bincount",
            (out.view_mut(), Owner::Op),
            0,
            index,
            values,
            false,
            super::ScatterReduce::Sum,
        )?;
        Ok(out)
    }

    /// PyTorch's `torch.bincount(self, weights, minlength)`: for the 1-D non-negative
    /// `self`, the sum of `weights` (`self`'s shape) at each value, of the weights' type.
    ///
    /// # Errors
    /// As [`Tensor::bincount`]; [`LayoutError::ShapeMismatch`] for weights of another shape.
    pub fn bincount_weighted<T: Numeric>(
        &self,
        weights: &impl AsView<T, D>,
        minlength: usize,
    ) -> Result<Tensor<T, D>>
    where
        D: ScatterBackend<T>,
    {
        const OP: &str = "bincount";
        let weights = weights.view();
        if weights.shape() != self.shape() {
            return Err(mismatch(OP, self.shape(), weights.shape()));
        }
        let (n, index) = bins(OP, &self.view(), minlength)?;
        let mut out = Tensor::<T, D>::zeros_on(&[n], self.device())?;
        let values = Values::Src(weights);
        reduce(
            OP,
            (out.view_mut(), Owner::Op),
            0,
            index,
            values,
            false,
            super::ScatterReduce::Sum,
        )?;
        Ok(out)
    }
}

/// The bin count of a `bincount` and its checked 1-D input.
fn bins<'a, I: IndexElement, D: crate::tensor::Backend>(
    op: &'static str,
    index: &crate::tensor::TensorView<'a, I, D>,
    minlength: usize,
) -> Result<(usize, crate::tensor::TensorView<'a, I, D>)> {
    if index.rank() != 1 {
        return Err(mismatch(op, &[index.numel()], index.shape()));
    }
    if index.numel() == 0 {
        return Ok((minlength, index.clone()));
    }
    let (lo, hi) = min_max(index)?;
    if lo < 0 {
        return Err(LayoutError::IndexOutOfRange {
            op,
            index: lo,
            dim: 0,
            size: usize::try_from(hi.saturating_add(1)).unwrap_or(0),
        }
        .into());
    }
    let n = usize::try_from(hi.saturating_add(1))
        .unwrap_or(usize::MAX)
        .max(minlength);
    Ok((n, index.clone()))
}
