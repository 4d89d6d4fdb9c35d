//! `logsumexp`, `var`, `std`, `var_mean`, `std_mean` and `norm`, each over every dim, one
//! dim or several (`_dim` / `_dims`), with `keepdim`.

use crate::element::FloatElement;
use crate::error::{LayoutError, Result};
use crate::tensor::{Dim, ReadRepr, Tensor};

use super::engine::{NormOrd, NormalizeBackend, RowStat};
use super::rows::{resolve_dims, stats_new};

/// The statistic's value and, for `var_mean` / `std_mean`, the mean.
type Pair<T, D> = (Tensor<T, D>, Tensor<T, D>);

impl<T: FloatElement, D: NormalizeBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    fn stat<P: Dim>(
        &self,
        op: &'static str,
        stat: RowStat,
        dims: Option<&[P]>,
        keepdim: bool,
    ) -> Result<Tensor<T, D>> {
        let chosen = resolve_dims(op, dims, self.rank())?;
        if stat == RowStat::Norm(NormOrd::Inf) {
            check_nonempty(op, self.shape(), &chosen)?;
        }
        Ok(stats_new(stat, self.view(), &chosen, keepdim, false)?.0)
    }

    fn stat_mean<P: Dim>(
        &self,
        op: &'static str,
        correction: f64,
        sqrt: bool,
        dims: Option<&[P]>,
        keepdim: bool,
    ) -> Result<Pair<T, D>> {
        let chosen = resolve_dims(op, dims, self.rank())?;
        let stat = RowStat::Var { correction, sqrt };
        let (v, m) = stats_new(stat, self.view(), &chosen, keepdim, true)?;
        // `stats_new` returns the mean when asked for it.
        let m = m.ok_or(LayoutError::NoTensors { op })?;
        Ok((v, m))
    }

    /// `log Σ exp(x)` over every element, as a 0-d tensor, computed from `x − max`
    /// (`torch.logsumexp`): `+inf` if an element is `+inf`, `−inf` if all are `−inf` or
    /// there are none, NaN if one is NaN.
    ///
    /// # Errors
    /// The device's errors.
    pub fn logsumexp(&self) -> Result<Tensor<T, D>> {
        self.stat::<isize>("logsumexp", RowStat::LogSumExp, None, false)
    }

    /// `log Σ exp(x)` along `dim`; `keepdim` keeps it with size 1.
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`], the device's errors.
    pub fn logsumexp_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T, D>> {
        self.stat("logsumexp", RowStat::LogSumExp, Some(&[dim]), keepdim)
    }

    /// `log Σ exp(x)` over `dims` (none twice).
    ///
    /// # Errors
    /// As [`logsumexp_dim`](Self::logsumexp_dim), and [`LayoutError::DuplicateDim`].
    pub fn logsumexp_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T, D>> {
        self.stat("logsumexp", RowStat::LogSumExp, Some(dims), keepdim)
    }

    /// The variance of every element, `Σ (x − mean)² / max(0, n − correction)`, as a 0-d
    /// tensor (`torch.var(x, correction=c)`; PyTorch's default `correction` is 1, Bessel's;
    /// 0 is the population variance). NaN for no elements, or one with `correction = 1`.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[4], vec![1.0f64, 2.0, 3.0, 4.0])?;
    /// assert_eq!(x.var(1.0)?.item()?, 5.0 / 3.0);
    /// assert_eq!(x.var(0.0)?.item()?, 1.25);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// The device's errors.
    pub fn var(&self, correction: f64) -> Result<Tensor<T, D>> {
        let stat = RowStat::Var {
            correction,
            sqrt: false,
        };
        self.stat::<isize>("var", stat, None, false)
    }

    /// The variance along `dim` (see [`var`](Self::var)).
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`], the device's errors.
    pub fn var_dim(&self, dim: impl Dim, correction: f64, keepdim: bool) -> Result<Tensor<T, D>> {
        let stat = RowStat::Var {
            correction,
            sqrt: false,
        };
        self.stat("var", stat, Some(&[dim]), keepdim)
    }

    /// The variance over `dims` (none twice).
    ///
    /// # Errors
    /// As [`var_dim`](Self::var_dim), and [`LayoutError::DuplicateDim`].
    pub fn var_dims<P: Dim>(
        &self,
        dims: &[P],
        correction: f64,
        keepdim: bool,
    ) -> Result<Tensor<T, D>> {
        let stat = RowStat::Var {
            correction,
            sqrt: false,
        };
        self.stat("var", stat, Some(dims), keepdim)
    }

    /// The standard deviation of every element, `sqrt` of [`var`](Self::var)
    /// (`torch.std(x, correction=c)`).
    ///
    /// # Errors
    /// The device's errors.
    pub fn std(&self, correction: f64) -> Result<Tensor<T, D>> {
        let stat = RowStat::Var {
            correction,
            sqrt: true,
        };
        self.stat::<isize>("std", stat, None, false)
    }

    /// The standard deviation along `dim`.
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`], the device's errors.
    pub fn std_dim(&self, dim: impl Dim, correction: f64, keepdim: bool) -> Result<Tensor<T, D>> {
        let stat = RowStat::Var {
            correction,
            sqrt: true,
        };
        self.stat("std", stat, Some(&[dim]), keepdim)
    }

    /// The standard deviation over `dims` (none twice).
    ///
    /// # Errors
    /// As [`std_dim`](Self::std_dim), and [`LayoutError::DuplicateDim`].
    pub fn std_dims<P: Dim>(
        &self,
        dims: &[P],
        correction: f64,
        keepdim: bool,
    ) -> Result<Tensor<T, D>> {
        let stat = RowStat::Var {
            correction,
            sqrt: true,
        };
        self.stat("std", stat, Some(dims), keepdim)
    }

    /// `(var, mean)` of every element in one pass (`torch.var_mean`).
    ///
    /// # Errors
    /// The device's errors.
    pub fn var_mean(&self, correction: f64) -> Result<Pair<T, D>> {
        self.stat_mean::<isize>("var_mean", correction, false, None, false)
    }

    /// `(var, mean)` along `dim`.
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`], the device's errors.
    pub fn var_mean_dim(
        &self,
        dim: impl Dim,
        correction: f64,
        keepdim: bool,
    ) -> Result<Pair<T, D>> {
        self.stat_mean("var_mean", correction, false, Some(&[dim]), keepdim)
    }

    /// `(var, mean)` over `dims` (none twice).
    ///
    /// # Errors
    /// As [`var_mean_dim`](Self::var_mean_dim), and [`LayoutError::DuplicateDim`].
    pub fn var_mean_dims<P: Dim>(
        &self,
        dims: &[P],
        correction: f64,
        keepdim: bool,
    ) -> Result<Pair<T, D>> {
        self.stat_mean("var_mean", correction, false, Some(dims), keepdim)
    }

    /// `(std, mean)` of every element in one pass (`torch.std_mean`).
    ///
    /// # Errors
    /// The device's errors.
    pub fn std_mean(&self, correction: f64) -> Result<Pair<T, D>> {
        self.stat_mean::<isize>("std_mean", correction, true, None, false)
    }

    /// `(std, mean)` along `dim`.
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`], the device's errors.
    pub fn std_mean_dim(
        &self,
        dim: impl Dim,
        correction: f64,
        keepdim: bool,
    ) -> Result<Pair<T, D>> {
        self.stat_mean("std_mean", correction, true, Some(&[dim]), keepdim)
    }

    /// `(std, mean)` over `dims` (none twice).
    ///
    /// # Errors
    /// As [`std_mean_dim`](Self::std_mean_dim), and [`LayoutError::DuplicateDim`].
    pub fn std_mean_dims<P: Dim>(
        &self,
        dims: &[P],
        correction: f64,
        keepdim: bool,
    ) -> Result<Pair<T, D>> {
        self.stat_mean("std_mean", correction, true, Some(dims), keepdim)
    }

    /// The vector norm of order `p` of every element, as a 0-d tensor
    /// (`torch.linalg.vector_norm(x, p)`): `Σ |x|`, `sqrt(Σ x²)` or `max |x|`. 0 for no
    /// elements with `L1` / `L2`.
    ///
    /// # Errors
    /// [`LayoutError::EmptyReduction`] for `Inf` over no elements (as PyTorch raises); the
    /// device's errors.
    pub fn norm(&self, p: NormOrd) -> Result<Tensor<T, D>> {
        self.stat::<isize>("norm", RowStat::Norm(p), None, false)
    }

    /// The vector norm of order `p` along `dim`.
    ///
    /// # Errors
    /// As [`norm`](Self::norm), and [`LayoutError::DimOutOfRange`].
    pub fn norm_dim(&self, p: NormOrd, dim: impl Dim, keepdim: bool) -> Result<Tensor<T, D>> {
        self.stat("norm", RowStat::Norm(p), Some(&[dim]), keepdim)
    }

    /// The vector norm of order `p` over `dims` (none twice).
    ///
    /// # Errors
    /// As [`norm_dim`](Self::norm_dim), and [`LayoutError::DuplicateDim`].
    pub fn norm_dims<P: Dim>(&self, p: NormOrd, dims: &[P], keepdim: bool) -> Result<Tensor<T, D>> {
        self.stat("norm", RowStat::Norm(p), Some(dims), keepdim)
    }
}

/// [`LayoutError::EmptyReduction`] where the chosen dims hold no element but the output does
/// (a max of nothing).
fn check_nonempty(op: &'static str, shape: &[usize], chosen: &[usize]) -> Result<()> {
    let n: usize = chosen.iter().map(|&d| shape[d]).product();
    let rows: usize = (0..shape.len())
        .filter(|d| !chosen.contains(d))
        .map(|d| shape[d])
        .product();
    if n == 0 && rows > 0 {
        return Err(LayoutError::EmptyReduction {
            op,
            shape: shape.to_vec(),
            dims: chosen.to_vec(),
        }
        .into());
    }
    Ok(())
}
