//! `any` and `all`: PyTorch's truth reductions, over every element or chosen dims, with
//! `keepdim`, on both engines.
//!
//! An element is true when it is nonzero, NaN included and `-0.0` excluded (PyTorch's and C's
//! truth of a number). The result is a `bool` tensor on the input's device; `any` of no
//! elements is `false` and `all` of no elements is `true`, as in PyTorch, so neither ever
//! fails for an empty input.
//!
//! Each is composed of the table's `logical_not` and the `sum` reduction, which has an
//! identity and so handles empty inputs and empty outputs without a case of its own: with
//! `zeros = x.logical_not().sum(dims)` (an `i64` count, which cannot overflow), `all` is
//! `zeros == 0` and `any` is `zeros != n`, `n` the number of elements each output reduces.
//! Three kernels where PyTorch's is one.

use super::{ReadRepr, Tensor};
use crate::element::Element;
use crate::error::Result;
use crate::tensor::{Backend, Dim};

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// Whether any element is nonzero (NaN counts as nonzero), as a 0-d `bool` tensor
    /// (`torch.any`); `false` for no elements.
    ///
    /// ```
    /// # use typestate_tensor::tensor::Tensor;
    /// let t = Tensor::from_vec(&[2, 2], vec![0.0f32, 0.0, 2.0, 0.0])?;
    /// assert!(t.any()?.item()?);
    /// assert_eq!(t.any_dim(1, false)?.to_vec(), vec![false, true]);
    /// assert!(!t.all()?.item()?);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn any(&self) -> Result<Tensor<bool, D>> {
        self.some_nonzero(self.logical_not()?.sum()?)
    }

    /// Whether any element along `dim` (negative from the end) is nonzero; `keepdim` keeps
    /// the dim with size 1.
    pub fn any_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<bool, D>> {
        self.some_nonzero(self.logical_not()?.sum_dim(dim, keepdim)?)
    }

    /// Whether any element over `dims` is nonzero (none twice; `&[]` reduces nothing).
    pub fn any_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<bool, D>> {
        self.some_nonzero(self.logical_not()?.sum_dims(dims, keepdim)?)
    }

    /// Whether every element is nonzero (NaN counts as nonzero), as a 0-d `bool` tensor
    /// (`torch.all`); `true` for no elements.
    pub fn all(&self) -> Result<Tensor<bool, D>> {
        self.logical_not()?.sum()?.eq(0i64)
    }

    /// Whether every element along `dim` is nonzero.
    pub fn all_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<bool, D>> {
        self.logical_not()?.sum_dim(dim, keepdim)?.eq(0i64)
    }

    /// Whether every element over `dims` is nonzero.
    pub fn all_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<bool, D>> {
        self.logical_not()?.sum_dims(dims, keepdim)?.eq(0i64)
    }

    /// `zeros != n`: whether each output of a reduction that counted `zeros` zero elements
    /// saw fewer zeros than elements. Each output reduces the same number of elements, the
    /// input's count over the output's (0 when the input is empty).
    fn some_nonzero(&self, zeros: Tensor<i64, D>) -> Result<Tensor<bool, D>> {
        let per_output = self.numel().checked_div(zeros.numel()).unwrap_or(0);
        // Element counts fit in `isize` (layouts check it), so in `i64`.
        let per_output = i64::try_from(per_output).unwrap_or(i64::MAX);
        zeros.ne(per_output)
    }
}
