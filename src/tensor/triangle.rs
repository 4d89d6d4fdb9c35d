//! `tril` and `triu`: the lower and upper triangles of the last two dims, one fused pass
//! (the keep-mask comes from two index ranges broadcast against each other, so no `m × n`
//! mask is stored).

use super::expr::{scalar, where_cond};
use super::{ReadRepr, Tensor};
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::tensor::Backend;

/// Which triangle to keep.
#[derive(Clone, Copy)]
enum Triangle {
    Lower,
    Upper,
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// The elements on and below the `diagonal`-th diagonal of the last two dims, the rest
    /// zero, as a new row-major tensor (PyTorch's `tril`; `diagonal = 0` is the main
    /// diagonal, positive ones lie above it). Batch dims are kept.
    ///
    /// ```
    /// use typestate_tensor::Tensor;
    ///
    /// let x = Tensor::<i32>::from_vec(&[2, 3], vec![1, 2, 3, 4, 5, 6])?;
    /// assert_eq!(x.tril(0)?.to_vec(), [1, 0, 0, 4, 5, 0]);
    /// assert_eq!(x.triu(1)?.to_vec(), [0, 2, 3, 0, 0, 6]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::RankTooSmall`] below two dims; the device's errors.
    pub fn tril(&self, diagonal: isize) -> Result<Tensor<T, D>> {
        self.triangle("tril", diagonal, Triangle::Lower)
    }

    /// The elements on and above the `diagonal`-th diagonal of the last two dims, the rest
    /// zero (PyTorch's `triu`; see [`Self::tril`]).
    ///
    /// # Errors
    /// [`LayoutError::RankTooSmall`] below two dims; the device's errors.
    pub fn triu(&self, diagonal: isize) -> Result<Tensor<T, D>> {
        self.triangle("triu", diagonal, Triangle::Upper)
    }

    fn triangle(&self, op: &'static str, diagonal: isize, keep: Triangle) -> Result<Tensor<T, D>> {
        let rank = self.rank();
        if rank < 2 {
            return Err(LayoutError::RankTooSmall { op, rank, min: 2 }.into());
        }
        let (m, n) = (self.shape()[rank - 2], self.shape()[rank - 1]);
        let device = self.device();
        let index = |len: usize, shape: [usize; 2]| -> Result<Tensor<i64, D>> {
            let end = i64::try_from(len).map_err(|_| LayoutError::SizeOverflow {
                op,
                shape: vec![m, n],
                what: "an index past i64",
            })?;
            Ok(Tensor::arange_step_on(0, end, 1, device)?.into_reshape(&shape)?)
        };
        let rows = index(m, [m, 1])?;
        let cols = index(n, [1, n])?;
        // Element (i, j) lies on diagonal j - i; `diagonal` saturates into i64 (a diagonal
        // beyond every index keeps all or nothing either way).
        let k = diagonal as i64;
        let offset = cols.lazy() - &rows;
        match keep {
            Triangle::Lower => where_cond(offset.le(k), self.lazy(), scalar(T::ZERO)).eval(),
            Triangle::Upper => where_cond(offset.ge(k), self.lazy(), scalar(T::ZERO)).eval(),
        }
    }
}
