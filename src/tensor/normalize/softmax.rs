//! `softmax`, `log_softmax` and their `_into` forms.

use crate::element::FloatElement;
use crate::error::Result;
use crate::layout::normalize_dim;
use crate::tensor::{AsViewMut, Dim, ReadRepr, Tensor};

use super::engine::{NormalizeBackend, RowOp};
use super::rows::{rows_into, rows_new};

impl<T: FloatElement, D: NormalizeBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// `exp(x) / Σ exp(x)` along `dim` (negative from the end), computed as PyTorch does
    /// from `x − max` so large inputs do not overflow (`torch.softmax(x, dim)`). A row
    /// containing `+inf`, or of only `−inf`, is NaN, as is any row containing NaN.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 2], vec![0.0f32, 0.0, 1000.0, 1000.0])?;
    /// assert_eq!(x.softmax(-1)?.to_vec(), [0.5, 0.5, 0.5, 0.5]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::error::LayoutError::DimOutOfRange`], the device's errors.
    pub fn softmax(&self, dim: impl Dim) -> Result<Tensor<T, D>> {
        let d = normalize_dim("softmax", dim.to_isize(), self.rank().max(1))?;
        rows_new(
            RowOp::Softmax,
            self.view(),
            &dims_of(self.rank(), d),
            None,
            None,
        )
    }

    /// `x − max − log Σ exp(x − max)` along `dim` (`torch.log_softmax(x, dim)`), in one
    /// pass: more accurate than `softmax(dim)?.log()` for small probabilities.
    ///
    /// # Errors
    /// As [`softmax`](Self::softmax).
    pub fn log_softmax(&self, dim: impl Dim) -> Result<Tensor<T, D>> {
        let d = normalize_dim("log_softmax", dim.to_isize(), self.rank().max(1))?;
        rows_new(
            RowOp::LogSoftmax,
            self.view(),
            &dims_of(self.rank(), d),
            None,
            None,
        )
    }

    /// [`softmax`](Self::softmax) written into `out`, any writable view of this shape.
    ///
    /// # Errors
    /// As [`softmax`](Self::softmax), and [`crate::error::LayoutError::ShapeMismatch`] for
    /// an `out` of another shape.
    pub fn softmax_into(&self, dim: impl Dim, out: &mut impl AsViewMut<T, D>) -> Result<()> {
        let d = normalize_dim("softmax", dim.to_isize(), self.rank().max(1))?;
        let dims = dims_of(self.rank(), d);
        rows_into(
            "softmax",
            RowOp::Softmax,
            self.view(),
            &dims,
            None,
            None,
            out,
        )
    }

    /// [`log_softmax`](Self::log_softmax) written into `out`, any writable view of this
    /// shape.
    ///
    /// # Errors
    /// As [`softmax_into`](Self::softmax_into).
    pub fn log_softmax_into(&self, dim: impl Dim, out: &mut impl AsViewMut<T, D>) -> Result<()> {
        let d = normalize_dim("log_softmax", dim.to_isize(), self.rank().max(1))?;
        let dims = dims_of(self.rank(), d);
        rows_into(
            "log_softmax",
            RowOp::LogSoftmax,
            self.view(),
            &dims,
            None,
            None,
            out,
        )
    }
}

/// The one dim `d` as a list; none for a 0-d tensor (PyTorch accepts dim 0 or −1 there and
/// normalises the single element).
pub(super) fn dims_of(rank: usize, d: usize) -> Vec<usize> {
    if rank == 0 {
        Vec::new()
    } else {
        vec![d]
    }
}
