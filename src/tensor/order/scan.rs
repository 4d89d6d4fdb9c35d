//! The scans: `cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`, and their `_into`
//! forms.

use super::engine::{CumOp, Extreme, ScanBackend};
use super::rows::Rows;
use crate::element::FloatElement;
use crate::error::Result;
use crate::ops::reduce::ReduceElement;
use crate::tensor::Dim;
use crate::tensor::{AsViewMut, ReadRepr, Tensor};

impl<T: ReduceElement, D: ScanBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// The running sum along `dim` (`torch.cumsum`): `y[.., j, ..] = Σ_{i ≤ j} x[.., i, ..]`.
    /// Integers and `bool` give `i64` (wrapping), floats their own type (`f16` / `bf16`
    /// accumulated in `f32`, rounded once per element).
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 3], vec![1i32, 2, 3, 4, 5, 6])?;
    /// assert_eq!(x.cumsum(-1)?.to_vec(), [1i64, 3, 6, 4, 9, 15]);
    /// assert_eq!(x.cumsum(0)?.to_vec(), [1i64, 2, 3, 5, 7, 9]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::error::LayoutError::DimOutOfRange`]; the device's errors.
    pub fn cumsum(&self, dim: impl Dim) -> Result<Tensor<T::Sum, D>> {
        self.cumulate(CumOp::Sum, dim.to_isize())
    }

    /// The running product along `dim` (`torch.cumprod`); types as [`cumsum`](Self::cumsum).
    ///
    /// # Errors
    /// As [`cumsum`](Self::cumsum).
    pub fn cumprod(&self, dim: impl Dim) -> Result<Tensor<T::Sum, D>> {
        self.cumulate(CumOp::Prod, dim.to_isize())
    }

    /// [`cumsum`](Self::cumsum) into `out` (any writable view of the input's shape).
    ///
    /// # Errors
    /// As [`cumsum`](Self::cumsum), and `ShapeMismatch` for an `out` of another shape.
    pub fn cumsum_into(&self, dim: impl Dim, out: &mut impl AsViewMut<T::Sum, D>) -> Result<()> {
        self.cumulate_into(CumOp::Sum, dim.to_isize(), out)
    }

    /// [`cumprod`](Self::cumprod) into `out` (any writable view of the input's shape).
    ///
    /// # Errors
    /// As [`cumsum_into`](Self::cumsum_into).
    pub fn cumprod_into(&self, dim: impl Dim, out: &mut impl AsViewMut<T::Sum, D>) -> Result<()> {
        self.cumulate_into(CumOp::Prod, dim.to_isize(), out)
    }

    /// The running maximum along `dim` and where it was found (`torch.cummax`): `(values,
    /// indices)`, indices `i64` along the dim. On ties the later index is kept; a NaN is kept
    /// from where it appears on (each later NaN moves the index), as PyTorch.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[5], vec![1.0f32, 3.0, 2.0, 3.0, f32::NAN])?;
    /// let (v, i) = x.cummax(0)?;
    /// assert_eq!(i.to_vec(), [0i64, 1, 1, 3, 4]);
    /// assert!(v.to_vec()[4].is_nan());
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`cumsum`](Self::cumsum).
    pub fn cummax(&self, dim: impl Dim) -> Result<(Tensor<T, D>, Tensor<i64, D>)> {
        self.extreme(Extreme::Max, dim.to_isize())
    }

    /// The running minimum along `dim` and where it was found (`torch.cummin`); rules as
    /// [`cummax`](Self::cummax).
    ///
    /// # Errors
    /// As [`cumsum`](Self::cumsum).
    pub fn cummin(&self, dim: impl Dim) -> Result<(Tensor<T, D>, Tensor<i64, D>)> {
        self.extreme(Extreme::Min, dim.to_isize())
    }

    /// [`cummax`](Self::cummax) into `values` and `indices` (writable views of the input's
    /// shape).
    ///
    /// # Errors
    /// As [`cumsum_into`](Self::cumsum_into).
    pub fn cummax_into(
        &self,
        dim: impl Dim,
        values: &mut impl AsViewMut<T, D>,
        indices: &mut impl AsViewMut<i64, D>,
    ) -> Result<()> {
        self.extreme_into(Extreme::Max, dim.to_isize(), values, indices)
    }

    /// [`cummin`](Self::cummin) into `values` and `indices`.
    ///
    /// # Errors
    /// As [`cumsum_into`](Self::cumsum_into).
    pub fn cummin_into(
        &self,
        dim: impl Dim,
        values: &mut impl AsViewMut<T, D>,
        indices: &mut impl AsViewMut<i64, D>,
    ) -> Result<()> {
        self.extreme_into(Extreme::Min, dim.to_isize(), values, indices)
    }

    /// `log Σ_{i ≤ j} exp(x_i)` along `dim` (`torch.logcumsumexp`), without overflow (each
    /// step adds `log1p(exp(min − max))` to the larger term; `f32` for the half types).
    ///
    /// # Errors
    /// As [`cumsum`](Self::cumsum).
    pub fn logcumsumexp(&self, dim: impl Dim) -> Result<Tensor<T, D>>
    where
        T: FloatElement,
    {
        let rows = Rows::new("logcumsumexp", self.view(), dim.to_isize())?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: `ScanEngine::logcumsumexp` returning `Ok` wrote every element (its contract).
        unsafe { rows.output(device, rows.n, |dst| device.logcumsumexp(&src, dst)) }
    }

    /// [`logcumsumexp`](Self::logcumsumexp) into `out`.
    ///
    /// # Errors
    /// As [`cumsum_into`](Self::cumsum_into).
    pub fn logcumsumexp_into(&self, dim: impl Dim, out: &mut impl AsViewMut<T, D>) -> Result<()>
    where
        T: FloatElement,
    {
        let rows = Rows::new("logcumsumexp", self.view(), dim.to_isize())?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: as in `logcumsumexp`.
        unsafe { rows.output_into(device, rows.n, out, |dst| device.logcumsumexp(&src, dst)) }
    }

    fn cumulate(&self, op: CumOp, dim: isize) -> Result<Tensor<T::Sum, D>> {
        let rows = Rows::new(cum_name(op), self.view(), dim)?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: `ScanEngine::cumulate` returning `Ok` wrote every element (its contract).
        unsafe { rows.output(device, rows.n, |dst| device.cumulate(op, &src, dst)) }
    }

    fn cumulate_into(
        &self,
        op: CumOp,
        dim: isize,
        out: &mut impl AsViewMut<T::Sum, D>,
    ) -> Result<()> {
        let rows = Rows::new(cum_name(op), self.view(), dim)?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: as in `cumulate`.
        unsafe { rows.output_into(device, rows.n, out, |dst| device.cumulate(op, &src, dst)) }
    }

    fn extreme(&self, which: Extreme, dim: isize) -> Result<(Tensor<T, D>, Tensor<i64, D>)> {
        let rows = Rows::new(extreme_name(which), self.view(), dim)?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: `ScanEngine::cum_extreme` returning `Ok` wrote every element of both
        // destinations (its contract).
        unsafe { rows.output_pair(device, rows.n, |v, i| device.cum_extreme(which, &src, v, i)) }
    }

    fn extreme_into(
        &self,
        which: Extreme,
        dim: isize,
        values: &mut impl AsViewMut<T, D>,
        indices: &mut impl AsViewMut<i64, D>,
    ) -> Result<()> {
        let rows = Rows::new(extreme_name(which), self.view(), dim)?;
        let src = rows.view()?;
        let device = self.device();
        // SAFETY: as in `extreme`.
        unsafe {
            rows.output_pair_into(device, rows.n, values, indices, |v, i| {
                device.cum_extreme(which, &src, v, i)
            })
        }
    }
}

fn cum_name(op: CumOp) -> &'static str {
    match op {
        CumOp::Sum => "cumsum",
        CumOp::Prod => "cumprod",
    }
}

fn extreme_name(which: Extreme) -> &'static str {
    match which {
        Extreme::Max => "cummax",
        Extreme::Min => "cummin",
    }
}
