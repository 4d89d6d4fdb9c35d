//! `true_divide`: integer tensors divided into `f32`, as PyTorch's `/` and
//! `torch.true_divide` do for integer tensors (the result takes the default float type).
//!
//! Both operands are converted to `f32` and divided there, in one fused pass (one kernel on
//! the GPU): `a.lazy().cast::<f32>() / b.lazy().cast::<f32>()`. Like PyTorch, integers
//! above 2^24 in magnitude (`i32`, `i64`) round to the nearest `f32` before the division,
//! so `16777217 / 1` is `16777216.0`; dividing by zero gives `±inf`, or NaN for `0 / 0`.

use super::expr::node::{Binary, CastTo, Node};
use super::expr::{Expr, IntoExpr};
use super::operand::{materialize, Operand};
use super::{AsViewMut, Backend, ReadRepr, Tensor};
use crate::element::Integer;
use crate::error::Result;
use crate::ops::table::Div;

impl<T: Integer, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// `a / b` as floats (`torch.true_divide`, PyTorch's `/` on integer tensors): both
    /// converted to `f32`, then divided, broadcasting, as a new row-major `f32` tensor, in
    /// one fused pass. `rhs` is a tensor, view or scalar of `T` ([`Operand`]). Values above
    /// 2^24 in magnitude round to `f32` first, as in PyTorch; `x / 0` is `±inf` and `0 / 0`
    /// is NaN (float division, unlike the integer [`div`](Self::div)).
    ///
    /// # Errors
    /// [`crate::error::LayoutError::BroadcastMismatch`] when the shapes do not broadcast;
    /// the engine's errors.
    pub fn true_divide(&self, rhs: impl Operand<T, D>) -> Result<Tensor<f32, D>> {
        let a = self.view();
        let mut slot = None;
        let b = materialize(rhs.held(), a.device(), &mut slot)?;
        a.lazy().true_divide(&b).eval()
    }

    /// [`true_divide`](Self::true_divide) written into `out` (the inputs broadcast to its
    /// shape).
    ///
    /// # Errors
    /// [`crate::error::LayoutError::ShapeMismatch`] when the inputs do not broadcast to
    /// exactly `out`'s shape; the engine's errors.
    pub fn true_divide_into(
        &self,
        rhs: impl Operand<T, D>,
        out: &mut impl AsViewMut<f32, D>,
    ) -> Result<()> {
        let a = self.view();
        let mut slot = None;
        let b = materialize(rhs.held(), a.device(), &mut slot)?;
        a.lazy().true_divide(&b).eval_into(out)
    }
}

impl<T: Integer, D: Backend, N: Node<D, Out = T>> Expr<T, D, N> {
    /// `a / b` as floats, fused: both operands converted to `f32`, then divided, as
    /// [`Tensor::true_divide`] (PyTorch's `/` on integer tensors). Values above 2^24 in
    /// magnitude round to `f32` first, as in PyTorch.
    #[allow(clippy::type_complexity)] // the node type is the expression's structure
    pub fn true_divide<R: IntoExpr<T, D>>(
        self,
        rhs: R,
    ) -> Expr<f32, D, Binary<Div, CastTo<f32, N>, CastTo<f32, R::Node>>> {
        self.cast::<f32>() / rhs.into_expr().cast::<f32>()
    }
}
