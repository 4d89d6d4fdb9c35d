//! Reductions on every tensor, on both engines: `sum`, `prod`, `mean`, `max`, `min`,
//! `argmax`, `argmin`, `sum_abs` (`Σ |x|`) and `sum_sq` (`Σ x²`), over all elements or chosen
//! dims, with `keepdim`; and
//! [`item`](Tensor::item), the value of a one-element tensor on the host.
//!
//! # Design
//!
//! - **Results are tensors, on the input's device** (PyTorch's `x.sum()`, candle's
//!   `sum_all`): `x.sum()?` is a 0-d tensor, so a GPU reduction queues its kernel and returns
//!   without waiting, and chains on the device (`(&x - &x.mean()?)`). `.item()?` copies the
//!   value to the host when it is wanted: `let s: f32 = x.sum()?.item()?;`.
//! - **Three forms per op, named as PyTorch's arguments are**: `op()` over every element,
//!   `op_dim(dim, keepdim)` over one dim, `op_dims(&dims, keepdim)` over several (NumPy's
//!   tuple `axis`; PyTorch's `dim=[..]`, `amax(dim=[..])`). Dims are any integer
//!   ([`Dim`]), negative from the end, as every dim argument of the crate is. `argmax` / `argmin` take no dim list:
//!   their index is over one dim, or over the flattened tensor in row-major order, as in
//!   PyTorch. An empty dim list reduces nothing (NumPy's `axis=()`; PyTorch's deprecated
//!   `dim=[]` reduces everything instead, a trap). A dim named twice is an error.
//! - **`keepdim`** keeps each reduced dim with size 1, so the result broadcasts against the
//!   input (`&x - &x.max_dim(-1, true)?`).
//! - **Types follow PyTorch** (see [`crate::ops::reduce`] for the table and the reasons):
//!   `sum` and `prod` of integers and `bool` are `i64` (wrapping), of floats the same float
//!   (`f16` / `bf16` accumulated in `f32`); `mean` takes floats only (a compile error
//!   otherwise, naming `cast`); `max` / `min` keep the type and propagate NaN; `argmax` /
//!   `argmin` are `i64`, first index on ties, first NaN wins.
//! - **Empty reductions**: `sum` 0, `prod` 1, `mean` NaN; `max`, `min`, `argmax` and
//!   `argmin` of no elements are [`LayoutError::EmptyReduction`] (a typed error where
//!   PyTorch raises), unless the output itself is empty.
//! - **Any view**: permuted, broadcast, flipped, stepped or offset inputs reduce without a
//!   copy; each engine maps elements with [`crate::layout::reduce::ReduceGeometry`].
//! - **The generic form** [`Tensor::reduce`] takes the op type ([`Sum`], [`ArgMax`], ...);
//!   every method above is one line over it. Engines implement one backend method,
//!   [`Backend::reduce`].
//!
//! - **`sum_abs` and `sum_sq`** are PyTorch's `x.abs().sum()` (`torch.linalg.vector_norm(x,
//!   1)`) and `(x * x).sum()` (`vector_norm(x) ** 2`) in one pass with no temporary, for
//!   floats, accumulated as `sum` is (`f32` and `f64` in their own type, as Caffe's `asum`
//!   does; `f16` / `bf16` in `f32`). Named after `sum` so the forms line up (`sum_sq_dim`);
//!   the L1 / L2 norms are `sum_abs()` and `sum_sq()?.sqrt()`.
//!
//! For an `f64` accumulation, cast first: `x.cast::<f64>()?.sum()?`; the CPU's `asum` and
//! `sumsq` (Caffe's names) return `f64` directly.
//!
//! ```
//! use typestate_tensor::tensor::Tensor;
//!
//! let x = Tensor::from_vec(&[2, 3], vec![1.0f32, 5.0, 2.0, -4.0, 0.5, 3.0])?;
//! assert_eq!(x.sum()?.item()?, 7.5);
//! assert_eq!(x.max_dim(1, false)?.to_vec(), [5.0, 3.0]);
//! assert_eq!(x.argmin()?.item()?, 3); // row-major index of -4.0
//! assert_eq!(x.mean_dim(0, true)?.shape(), &[1, 3]);
//! let counts = x.gt(&Tensor::scalar(1.0f32))?.sum_dim(-1, false)?; // bool sums are i64
//! assert_eq!(counts.to_vec(), [2i64, 1]);
//! # Ok::<(), typestate_tensor::Error>(())
//! ```

use super::{ReadRepr, Tensor, TensorViewMut};
use crate::element::{Element, FloatElement, Numeric};
use crate::error::{LayoutError, Result};
use crate::layout::{normalize_dim, Layout};
use crate::ops::reduce::{
    ArgMax, ArgMin, Max, Mean, MeanElement, Min, Prod, ReduceElement, Reduction, Sum, SumAbs, SumSq,
};
use crate::tensor::Backend;
use crate::tensor::Dim;

/// Which dims a reduction folds.
enum Dims<'a, P> {
    /// Every dim.
    All,
    /// These (negative from the end).
    Some(&'a [P]),
}

/// [`Dims::All`] with its (unused) dim type named.
const ALL: Dims<'static, isize> = Dims::All;

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// Reduces with `op` over `dims` (every dim for `None`; negative dims count from the
    /// end), keeping each reduced dim with size 1 if `keepdim`: the generic form of every
    /// reduction method (`x.reduce(Sum, Some(&[0, 2]), false)` is `x.sum_dims(&[0, 2],
    /// false)`). A new row-major tensor on the same device.
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`], [`LayoutError::DuplicateDim`],
    /// [`LayoutError::EmptyReduction`] (for ops without identity), the device's errors.
    pub fn reduce<R: Reduction<T>>(
        &self,
        op: R,
        dims: Option<&[isize]>,
        keepdim: bool,
    ) -> Result<Tensor<R::Output, D>> {
        let dims = match dims {
            None => Dims::All,
            Some(d) => Dims::Some(d),
        };
        self.reduce_over(op, dims, keepdim)
    }

    fn reduce_over<R: Reduction<T>, P: Dim>(
        &self,
        op: R,
        dims: Dims<'_, P>,
        keepdim: bool,
    ) -> Result<Tensor<R::Output, D>> {
        let name = R::KIND.name();
        let rank = self.rank();
        let resolved: Vec<usize> = match dims {
            Dims::All => (0..rank).collect(),
            Dims::Some(ds) => {
                let mut seen = [false; crate::layout::MAX_DIMS];
                let mut out = Vec::with_capacity(ds.len());
                for &d in ds {
                    let d = normalize_dim(name, d.to_isize(), rank)?;
                    if std::mem::replace(&mut seen[d], true) {
                        return Err(LayoutError::DuplicateDim {
                            op: name,
                            dim: d,
                            rank,
                        }
                        .into());
                    }
                    out.push(d);
                }
                out
            }
        };
        let shape = self.shape();
        let kept: Vec<usize> = (0..rank)
            .filter(|d| !resolved.contains(d))
            .map(|d| shape[d])
            .collect();
        let out_layout = Layout::contiguous(&kept)?;
        let device = self.device();
        // SAFETY: `Backend::reduce` returning `Ok` has written every element of `dst`'s
        // layout without reading it (the trait's safety contract); that layout is row-major
        // over `kept`, so it covers the whole storage of `numel` elements. On error the
        // storage is dropped unread.
        let mut storage = unsafe { device.alloc_uninit::<R::Output>(out_layout.numel())? };
        {
            let mut dst =
                TensorViewMut::new(D::slice_mut(&mut storage), out_layout.clone(), device)?;
            device.reduce(op, &self.view(), &resolved, &mut dst)?;
        }
        let layout = if keepdim {
            let with_ones: Vec<usize> = (0..rank)
                .map(|d| if resolved.contains(&d) { 1 } else { shape[d] })
                .collect();
            Layout::contiguous(&with_ones)?
        } else {
            out_layout
        };
        Ok(Tensor::from_contiguous(storage, layout, device.clone()))
    }

    /// The value of a tensor of exactly one element (any shape: `[]`, `[1]`, `[1, 1]`), on
    /// the host; from a GPU it is copied back, after the work that computes it.
    ///
    /// # Errors
    /// [`LayoutError::NotOneElement`] for another element count; the device's copy errors.
    pub fn item(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(LayoutError::NotOneElement {
                op: "item",
                shape: self.shape().to_vec(),
                numel: self.numel(),
            }
            .into());
        }
        let v = self.view();
        // Every index is 0, so the element is at the layout's offset.
        self.device().read_element(v.storage(), v.layout().offset())
    }

    /// `Σ x` over every element, as a 0-d tensor: `i64` for integers and `bool` (wrapping),
    /// the element type for floats (`f16` / `bf16` accumulated in `f32`).
    pub fn sum(&self) -> Result<Tensor<T::Sum, D>>
    where
        T: ReduceElement,
    {
        self.reduce_over(Sum, ALL, false)
    }

    /// `Σ x` along `dim` (negative from the end); `keepdim` keeps it with size 1.
    pub fn sum_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T::Sum, D>>
    where
        T: ReduceElement,
    {
        self.reduce_over(Sum, Dims::Some(&[dim]), keepdim)
    }

    /// `Σ x` over `dims` (none twice; `&[]` reduces nothing).
    pub fn sum_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T::Sum, D>>
    where
        T: ReduceElement,
    {
        self.reduce_over(Sum, Dims::Some(dims), keepdim)
    }

    /// `Π x` over every element, as a 0-d tensor (types as [`sum`](Self::sum); 1 for no
    /// elements).
    pub fn prod(&self) -> Result<Tensor<T::Sum, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Prod, ALL, false)
    }

    /// `Π x` along `dim`.
    pub fn prod_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T::Sum, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Prod, Dims::Some(&[dim]), keepdim)
    }

    /// `Π x` over `dims`.
    pub fn prod_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T::Sum, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Prod, Dims::Some(dims), keepdim)
    }

    /// The mean of every element, as a 0-d tensor (floats only; NaN for no elements).
    pub fn mean(&self) -> Result<Tensor<T, D>>
    where
        T: MeanElement,
    {
        self.reduce_over(Mean, ALL, false)
    }

    /// The mean along `dim`.
    pub fn mean_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: MeanElement,
    {
        self.reduce_over(Mean, Dims::Some(&[dim]), keepdim)
    }

    /// The mean over `dims`.
    pub fn mean_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: MeanElement,
    {
        self.reduce_over(Mean, Dims::Some(dims), keepdim)
    }

    /// The largest element, as a 0-d tensor; NaN if any element is NaN.
    ///
    /// # Errors
    /// [`LayoutError::EmptyReduction`] for a tensor with no elements.
    pub fn max(&self) -> Result<Tensor<T, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Max, ALL, false)
    }

    /// The largest element along `dim` (PyTorch's `amax`; the indices are
    /// [`argmax_dim`](Self::argmax_dim)).
    pub fn max_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Max, Dims::Some(&[dim]), keepdim)
    }

    /// The largest element over `dims`.
    pub fn max_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Max, Dims::Some(dims), keepdim)
    }

    /// The smallest element, as a 0-d tensor; NaN if any element is NaN.
    ///
    /// # Errors
    /// [`LayoutError::EmptyReduction`] for a tensor with no elements.
    pub fn min(&self) -> Result<Tensor<T, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Min, ALL, false)
    }

    /// The smallest element along `dim`.
    pub fn min_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Min, Dims::Some(&[dim]), keepdim)
    }

    /// The smallest element over `dims`.
    pub fn min_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(Min, Dims::Some(dims), keepdim)
    }

    /// The row-major index of the first largest element (the first NaN, if any), as a 0-d
    /// `i64` tensor.
    ///
    /// # Errors
    /// [`LayoutError::EmptyReduction`] for a tensor with no elements.
    pub fn argmax(&self) -> Result<Tensor<i64, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(ArgMax, ALL, false)
    }

    /// The index along `dim` of the first largest element of each lane.
    pub fn argmax_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<i64, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(ArgMax, Dims::Some(&[dim]), keepdim)
    }

    /// The row-major index of the first smallest element (the first NaN, if any), as a 0-d
    /// `i64` tensor.
    ///
    /// # Errors
    /// [`LayoutError::EmptyReduction`] for a tensor with no elements.
    pub fn argmin(&self) -> Result<Tensor<i64, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(ArgMin, ALL, false)
    }

    /// The index along `dim` of the first smallest element of each lane.
    pub fn argmin_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<i64, D>>
    where
        T: ReduceElement + Numeric,
    {
        self.reduce_over(ArgMin, Dims::Some(&[dim]), keepdim)
    }

    /// `Σ |x|` over every element, as a 0-d tensor (floats; PyTorch's `x.abs().sum()`, BLAS
    /// `asum`): one pass, no temporary; `f16` / `bf16` accumulated in `f32`; 0 for no
    /// elements, NaN if any element is NaN.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 2], vec![1.0f32, -2.0, 3.0, -4.0])?;
    /// assert_eq!(x.sum_abs()?.item()?, 10.0);
    /// assert_eq!(x.sum_sq()?.item()?, 30.0);
    /// assert_eq!(x.sum_sq_dim(1, false)?.to_vec(), [5.0, 25.0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn sum_abs(&self) -> Result<Tensor<T, D>>
    where
        T: ReduceElement<Sum = T> + FloatElement,
    {
        self.reduce_over(SumAbs, ALL, false)
    }

    /// `Σ |x|` along `dim`; `keepdim` keeps it with size 1.
    pub fn sum_abs_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement<Sum = T> + FloatElement,
    {
        self.reduce_over(SumAbs, Dims::Some(&[dim]), keepdim)
    }

    /// `Σ |x|` over `dims` (none twice; `&[]` reduces nothing).
    pub fn sum_abs_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement<Sum = T> + FloatElement,
    {
        self.reduce_over(SumAbs, Dims::Some(dims), keepdim)
    }

    /// `Σ x²` over every element, as a 0-d tensor (floats; PyTorch's `(x * x).sum()`, Caffe
    /// `sumsq`): one pass, no temporary; accumulated as [`sum_abs`](Self::sum_abs).
    pub fn sum_sq(&self) -> Result<Tensor<T, D>>
    where
        T: ReduceElement<Sum = T> + FloatElement,
    {
        self.reduce_over(SumSq, ALL, false)
    }

    /// `Σ x²` along `dim`; `keepdim` keeps it with size 1.
    pub fn sum_sq_dim(&self, dim: impl Dim, keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement<Sum = T> + FloatElement,
    {
        self.reduce_over(SumSq, Dims::Some(&[dim]), keepdim)
    }

    /// `Σ x²` over `dims` (none twice; `&[]` reduces nothing).
    pub fn sum_sq_dims<P: Dim>(&self, dims: &[P], keepdim: bool) -> Result<Tensor<T, D>>
    where
        T: ReduceElement<Sum = T> + FloatElement,
    {
        self.reduce_over(SumSq, Dims::Some(dims), keepdim)
    }
}
