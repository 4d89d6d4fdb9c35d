//! The reducing scatters: `scatter_add`, `scatter_reduce` and `index_add`, each out of place
//! and in place (`_`), on the types a device scatters with a reduction ([`ScatterBackend`]).

use super::engine::{IndexElement, ScatterReduce};
use super::scatter::{assign, reduce, Owner, Values};
use super::ScatterBackend;
use crate::element::{DType, DivRem, Numeric};
use crate::error::Result;
use crate::tensor::repr::{ReadRepr, WriteRepr};
use crate::tensor::{AsView, Dim, Tensor, TensorView, TensorViewMut};

/// The value a reduction starts from where `include_self` is false.
fn identity<T: Numeric>(r: ScatterReduce) -> T {
    match r {
        ScatterReduce::Prod => T::ONE,
        // Saturating conversions: the type's lowest / highest value for integers, ∓inf for
        // floats.
        ScatterReduce::Amax => T::from_f64(f64::NEG_INFINITY),
        ScatterReduce::Amin => T::from_f64(f64::INFINITY),
        _ => T::ZERO,
    }
}

impl<T: Numeric, D: ScatterBackend<T>, S: WriteRepr<T, D>> Tensor<T, D, S> {
    /// PyTorch's `self.scatter_add_(dim, index, src)`: `self[p with p[dim] = index[p]] +=
    /// src[p]`, duplicates accumulating (shapes as [`Tensor::scatter_`]). Deterministic on
    /// the CPU; atomic on the GPU, where float sums may differ in the last bits run to run.
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn scatter_add_<I: IndexElement>(
        &mut self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
    ) -> Result<()> {
        let values = Values::Src(src.view());
        let dst = (self.view_mut(), Owner::Caller);
        let (dim, sum) = (dim.to_isize(), ScatterReduce::Sum);
        reduce("scatter_add_", dst, dim, index.view(), values, false, sum)
    }

    /// PyTorch's `self.scatter_reduce_(dim, index, src, reduce, include_self)`: each source
    /// value combined into the element it lands on with `reduce` (`Sum`, `Prod`, `Mean`,
    /// `Amax`, `Amin`; `Assign` is [`Tensor::scatter_`]); with `include_self == false` the
    /// elements written start from the reduction's identity instead of their own value.
    /// `Mean` divides the sum by the count: floats exactly, integers rounding toward negative
    /// infinity (`floor_divide`), as PyTorch does.
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn scatter_reduce_<I: IndexElement>(
        &mut self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
        reduce_op: ScatterReduce,
        include_self: bool,
    ) -> Result<()>
    where
        T: DivRem,
    {
        const OP: &str = "scatter_reduce_";
        let (d, index, src) = (dim.to_isize(), index.view(), src.view());
        if one_step(reduce_op, include_self) {
            // One step, whose job is checked before anything is written.
            let dst = (self.view_mut(), Owner::Caller);
            return reduce_once(OP, dst, d, index, src, reduce_op);
        }
        // Several steps (the identity written first, or a sum, a count and a division): run
        // them on a copy, so that an error in a later step (a `src` of the wrong shape, say)
        // leaves `self` unchanged.
        let mut work = self.contiguous()?;
        reduce_steps(OP, &mut work, d, index, src, reduce_op, include_self)?;
        self.copy_from(&work)
    }

    /// PyTorch's `self.index_add_(dim, index, src, alpha=alpha)`: `alpha · src`'s slices
    /// along `dim` added to the slices at the positions of the 1-D `index` (`src` is
    /// `self`'s shape with `dim` of `index`'s length), duplicates accumulating.
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn index_add_<I: IndexElement>(
        &mut self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
        alpha: T,
    ) -> Result<()> {
        let dst = (self.view_mut(), Owner::Caller);
        index_add_into(
            "index_add_",
            dst,
            dim.to_isize(),
            index.view(),
            src.view(),
            alpha,
        )
    }
}

impl<T: Numeric, D: ScatterBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// [`Tensor::scatter_add_`] on a row-major copy of `self`, returned (`torch.scatter_add`).
    ///
    /// # Errors
    /// As [`Tensor::scatter_`] (`self` is never written).
    pub fn scatter_add<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
    ) -> Result<Tensor<T, D>> {
        let mut out = self.contiguous()?;
        let values = Values::Src(src.view());
        // The copy is this op's own (`Owner::Op`): dropped on an error.
        let dst = (out.view_mut(), Owner::Op);
        let (dim, sum) = (dim.to_isize(), ScatterReduce::Sum);
        reduce("scatter_add", dst, dim, index.view(), values, false, sum)?;
        Ok(out)
    }

    /// [`Tensor::scatter_reduce_`] on a copy (`torch.scatter_reduce`).
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn scatter_reduce<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
        reduce_op: ScatterReduce,
        include_self: bool,
    ) -> Result<Tensor<T, D>>
    where
        T: DivRem,
    {
        const OP: &str = "scatter_reduce";
        let mut out = self.contiguous()?;
        let (d, index, src) = (dim.to_isize(), index.view(), src.view());
        if one_step(reduce_op, include_self) {
            reduce_once(OP, (out.view_mut(), Owner::Op), d, index, src, reduce_op)?;
        } else {
            reduce_steps(OP, &mut out, d, index, src, reduce_op, include_self)?;
        }
        Ok(out)
    }

    /// [`Tensor::index_add_`] on a copy (`torch.index_add`).
    ///
    /// # Errors
    /// As [`Tensor::scatter_`].
    pub fn index_add<I: IndexElement>(
        &self,
        dim: impl Dim,
        index: &impl AsView<I, D>,
        src: &impl AsView<T, D>,
        alpha: T,
    ) -> Result<Tensor<T, D>> {
        let mut out = self.contiguous()?;
        let dst = (out.view_mut(), Owner::Op);
        index_add_into(
            "index_add",
            dst,
            dim.to_isize(),
            index.view(),
            src.view(),
            alpha,
        )?;
        Ok(out)
    }
}

/// Whether `scatter_reduce` with `reduce_op` is one scatter (else [`reduce_steps`]).
fn one_step(reduce_op: ScatterReduce, include_self: bool) -> bool {
    reduce_op == ScatterReduce::Assign || (include_self && reduce_op != ScatterReduce::Mean)
}

/// `scatter_reduce` as one scatter into `dst` (see [`one_step`]).
fn reduce_once<T: Numeric, I: IndexElement, D: ScatterBackend<T>>(
    op: &'static str,
    dst: (TensorViewMut<'_, T, D>, Owner),
    d: isize,
    index: TensorView<'_, I, D>,
    src: TensorView<'_, T, D>,
    reduce_op: ScatterReduce,
) -> Result<()> {
    let values = Values::Src(src);
    if reduce_op == ScatterReduce::Assign {
        return assign(op, dst, d, index, values, false, false);
    }
    reduce(op, dst, d, index, values, false, reduce_op)
}

/// `index_add` into `dst`: `alpha · src` (scaled first unless `alpha` is one) summed in.
fn index_add_into<T: Numeric, I: IndexElement, D: ScatterBackend<T>>(
    op: &'static str,
    dst: (TensorViewMut<'_, T, D>, Owner),
    dim: isize,
    index: TensorView<'_, I, D>,
    src: TensorView<'_, T, D>,
    alpha: T,
) -> Result<()> {
    let scaled;
    let src = if alpha == T::ONE {
        src
    } else {
        let a = Tensor::full_on(&[], alpha, dst.0.device())?;
        scaled = src.mul(&a)?;
        scaled.view()
    };
    let values = Values::Src(src);
    reduce(op, dst, dim, index, values, true, ScatterReduce::Sum)
}

/// [`Tensor::scatter_reduce_`]'s steps for `include_self == false` or `Mean`, on `dst`, a
/// copy the op made (so each step may find bad indices as it writes): the identity where
/// values land (without `self`), then the reduction; for `Mean` a sum, a count of the values
/// summed into each element (itself included when `include_self`), and a division where the
/// count is not 0.
fn reduce_steps<T: DivRem, I: IndexElement, D: ScatterBackend<T>>(
    op: &'static str,
    dst: &mut Tensor<T, D>,
    d: isize,
    index: TensorView<'_, I, D>,
    src: TensorView<'_, T, D>,
    reduce_op: ScatterReduce,
    include_self: bool,
) -> Result<()> {
    if !include_self {
        let v = Values::Value(identity::<T>(reduce_op));
        assign(
            op,
            (dst.view_mut(), Owner::Op),
            d,
            index.clone(),
            v,
            false,
            false,
        )?;
    }
    if reduce_op != ScatterReduce::Mean {
        let values = Values::Src(src);
        return reduce(
            op,
            (dst.view_mut(), Owner::Op),
            d,
            index,
            values,
            false,
            reduce_op,
        );
    }
    let sum = ScatterReduce::Sum;
    let values = Values::Src(src);
    reduce(
        op,
        (dst.view_mut(), Owner::Op),
        d,
        index.clone(),
        values,
        false,
        sum,
    )?;
    let mut count = if include_self {
        dst.ones_like()?
    } else {
        dst.zeros_like()?
    };
    let ones = Values::Value(T::ONE);
    reduce(
        op,
        (count.view_mut(), Owner::Op),
        d,
        index,
        ones,
        false,
        sum,
    )?;
    let device = dst.device().clone();
    let one = Tensor::full_on(&[], T::ONE, &device)?;
    let zero = Tensor::full_on(&[], T::ZERO, &device)?;
    let count = Tensor::where_cond(&count.eq(&zero)?, &one, &count)?;
    // PyTorch's `scatter_reduce` mean: `div_` for floats, `div_(.., rounding_mode="floor")`
    // for integers.
    let float = matches!(T::DTYPE, DType::F16 | DType::BF16 | DType::F32 | DType::F64);
    let mean = if float {
        dst.div(&count)?
    } else {
        dst.floor_divide(&count)?
    };
    dst.copy_from(&mean)
}
