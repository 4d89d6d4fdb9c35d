//! Splitting a tensor into views along one dim: `chunk`, `split`, `split_sizes`, `unbind`
//! (PyTorch's names and rules). The pieces are read-only views of the same storage; to
//! write into pieces, take `narrow` of a [`TensorViewMut`](super::TensorViewMut) one at a
//! time (two writable views of one storage cannot be alive at once).

use super::{Tensor, TensorView};
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::normalize_dim;
use crate::tensor::shape_ops::Dim;
use crate::tensor::Backend;

/// `(start, len)` of each piece of a dim of `size` cut into pieces of `step` (the last
/// shorter).
fn even_pieces(size: usize, step: usize) -> Vec<(usize, usize)> {
    (0..size)
        .step_by(step)
        .map(|start| (start, step.min(size - start)))
        .collect()
}

impl<'a, T: Element, D: Backend> TensorView<'a, T, D> {
    fn pieces(&self, d: usize, pieces: &[(usize, usize)]) -> Result<Vec<TensorView<'a, T, D>>> {
        pieces
            .iter()
            .map(|&(start, len)| self.narrow(d, start, len))
            .collect()
    }

    /// `chunks` views along `dim` of `ceil(size / chunks)` elements each, the last one
    /// shorter, as PyTorch's `chunk` (so fewer than `chunks` where the size does not allow
    /// that many: a dim of 5 in 4 chunks gives pieces of 2, 2, 1).
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`]; [`LayoutError::InvalidSplit`] for zero chunks.
    pub fn chunk(&self, chunks: usize, dim: impl Dim) -> Result<Vec<TensorView<'a, T, D>>> {
        let d = normalize_dim("chunk", dim.to_isize(), self.rank())?;
        let size = self.shape()[d];
        if chunks == 0 {
            return Err(split_error("chunk", d, size, "the number of chunks is 0").into());
        }
        if size == 0 {
            // PyTorch gives `chunks` empty pieces of an empty dim.
            return self.pieces(d, &vec![(0, 0); chunks]);
        }
        self.pieces(d, &even_pieces(size, size.div_ceil(chunks)))
    }

    /// Views along `dim` of `split_size` elements each, the last one shorter (PyTorch's
    /// `split` with an integer).
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`]; [`LayoutError::InvalidSplit`] for a zero
    /// `split_size` of a non-empty dim.
    pub fn split(&self, split_size: usize, dim: impl Dim) -> Result<Vec<TensorView<'a, T, D>>> {
        let d = normalize_dim("split", dim.to_isize(), self.rank())?;
        let size = self.shape()[d];
        if split_size == 0 {
            if size == 0 {
                return self.pieces(d, &[(0, 0)]);
            }
            return Err(split_error("split", d, size, "the split size is 0").into());
        }
        if size == 0 {
            return self.pieces(d, &[(0, 0)]);
        }
        self.pieces(d, &even_pieces(size, split_size))
    }

    /// Views along `dim` of the given sizes, which must add up to the dim's size (PyTorch's
    /// `split` with a list).
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`]; [`LayoutError::InvalidSplit`] when the sizes do not
    /// add up.
    pub fn split_sizes(&self, sizes: &[usize], dim: impl Dim) -> Result<Vec<TensorView<'a, T, D>>> {
        let d = normalize_dim("split_sizes", dim.to_isize(), self.rank())?;
        let size = self.shape()[d];
        let mut pieces = Vec::with_capacity(sizes.len());
        let mut start = 0usize;
        for &len in sizes {
            pieces.push((start, len));
            start = start.saturating_add(len);
        }
        if start != size {
            let reason = "the section sizes do not add up to the dim's size";
            return Err(split_error("split_sizes", d, size, reason).into());
        }
        self.pieces(d, &pieces)
    }

    /// One view per index along `dim`, each with that dim removed (PyTorch's `unbind`).
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`].
    pub fn unbind(&self, dim: impl Dim) -> Result<Vec<TensorView<'a, T, D>>> {
        let d = normalize_dim("unbind", dim.to_isize(), self.rank())?;
        (0..self.shape()[d])
            .map(|i| self.select(d, i as isize))
            .collect()
    }
}

fn split_error(op: &'static str, dim: usize, size: usize, reason: &'static str) -> LayoutError {
    LayoutError::InvalidSplit {
        op,
        dim,
        size,
        reason,
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    /// [`TensorView::chunk`] of this tensor: views borrowing it.
    ///
    /// ```
    /// use typestate_tensor::Tensor;
    ///
    /// let x = Tensor::<f32>::arange(5)?;
    /// let parts = x.chunk(3, 0)?;
    /// assert_eq!(parts.len(), 3);
    /// assert_eq!(parts[2].to_vec(), [4.0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`TensorView::chunk`].
    pub fn chunk(&self, chunks: usize, dim: impl Dim) -> Result<Vec<TensorView<'_, T, D>>> {
        self.view().chunk(chunks, dim)
    }

    /// [`TensorView::split`] of this tensor.
    ///
    /// # Errors
    /// As [`TensorView::split`].
    pub fn split(&self, split_size: usize, dim: impl Dim) -> Result<Vec<TensorView<'_, T, D>>> {
        self.view().split(split_size, dim)
    }

    /// [`TensorView::split_sizes`] of this tensor.
    ///
    /// # Errors
    /// As [`TensorView::split_sizes`].
    pub fn split_sizes(&self, sizes: &[usize], dim: impl Dim) -> Result<Vec<TensorView<'_, T, D>>> {
        self.view().split_sizes(sizes, dim)
    }

    /// [`TensorView::unbind`] of this tensor.
    ///
    /// # Errors
    /// As [`TensorView::unbind`].
    pub fn unbind(&self, dim: impl Dim) -> Result<Vec<TensorView<'_, T, D>>> {
        self.view().unbind(dim)
    }
}
