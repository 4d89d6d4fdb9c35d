//! Building expressions: the [`Expr`] value, its leaves ([`Tensor::lazy`]), scalars, the
//! operands operators and op methods take ([`IntoExpr`]) and conversions. Nothing here
//! evaluates (`eval.rs` does).

use std::marker::PhantomData;

use crate::element::Element;
use crate::tensor::backend::Backend;
use crate::tensor::base::Tensor;
use crate::tensor::repr::ReadRepr;

use super::node::{self, Boxed, Leaf, Node, Scalar};
#[cfg(test)]
use super::node::{Brand, Current};

/// A pointwise expression of element type `T` on device `D`, not yet evaluated.
///
/// Build one with [`Tensor::lazy`] (or any tensor or scalar on the other side of an
/// operator), combine with `+ - * /`, unary `-` and every op method of the table
/// (`e.exp()`, `e.maximum(x)`, `e.lt(y)`, `e.clamp(lo, hi)`, ...), convert with
/// [`Expr::cast`], and evaluate with [`Expr::eval`], [`Expr::eval_into`] or, for several
/// outputs, [`eval_into`](super::eval_into).
pub struct Expr<T: Element, D: Backend, N> {
    pub(crate) node: N,
    _types: PhantomData<fn() -> (T, D)>,
}

impl<T: Element, D: Backend, N: Clone> Clone for Expr<T, D, N> {
    fn clone(&self) -> Self {
        Expr::new(self.node.clone())
    }
}

impl<T: Element, D: Backend, N> Expr<T, D, N> {
    pub(crate) fn new(node: N) -> Self {
        Expr {
            node,
            _types: PhantomData,
        }
    }
}

/// A scalar as an expression (usually not needed: operators and op methods take scalars
/// directly).
pub fn scalar<T: Element, D: Backend>(value: T) -> Expr<T, D, Scalar<T>> {
    Expr::new(Scalar { value })
}

/// Output `K`'s current value under a fresh brand, for the crate's kernel-source tests, which
/// build in-place programs without running an update.
#[cfg(test)]
pub(crate) fn current<T: Element, D: Backend, const K: usize>() -> Expr<T, D, Current<T, K>> {
    Expr::new(Current::new(Brand::fresh()))
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// This tensor as the leaf of a fused expression: nothing is computed until the
    /// expression is evaluated ([`Expr::eval`]).
    pub fn lazy(&self) -> Expr<T, D, Leaf<'_, T, D>> {
        Expr::new(Leaf { view: self.view() })
    }
}

/// What can be an operand of an expression of `T` elements on `D`: an [`Expr`], a reference
/// to a tensor or view of `T` on `D`, or a `T` scalar.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an operand of an expression of `{T}` elements on `{D}`",
    label = "not an expression, tensor or scalar of `{T}` on `{D}`",
    note = "operands of one expression share their element type and device: convert with `.cast::<U>()` (on the tensor or the expression), move tensors with `to_gpu()` / `to_cpu()`, and write scalars in the element type (`2.0f32`)",
    note = "a `where_cond` mask must be an expression or tensor of `bool` (a comparison such as `x.lazy().gt(0.0f32)`)"
)]
pub trait IntoExpr<T: Element, D: Backend> {
    /// The node the operand becomes.
    type Node: Node<D, Out = T>;
    /// The operand as an expression.
    fn into_expr(self) -> Expr<T, D, Self::Node>;
}

impl<T: Element, D: Backend, N: Node<D, Out = T>> IntoExpr<T, D> for Expr<T, D, N> {
    type Node = N;
    fn into_expr(self) -> Self {
        self
    }
}

impl<'a, T: Element, D: Backend, S: ReadRepr<T, D>> IntoExpr<T, D> for &'a Tensor<T, D, S> {
    type Node = Leaf<'a, T, D>;
    fn into_expr(self) -> Expr<T, D, Leaf<'a, T, D>> {
        self.lazy()
    }
}

macro_rules! scalar_operand {
    ($($t:ty),*) => {$(
        impl<D: Backend> IntoExpr<$t, D> for $t {
            type Node = Scalar<$t>;
            fn into_expr(self) -> Expr<$t, D, Scalar<$t>> {
                scalar(self)
            }
        }
    )*};
}

scalar_operand!(f32, f64, half::f16, half::bf16, i32, i64, u8, bool);
scalar_operand!(i8, i16, u16, u32, u64);

impl<T: Element, D: Backend, N: Node<D, Out = T>> Expr<T, D, N> {
    /// Each element converted to `U` with C cast rules, as in [`Tensor::cast`].
    pub fn cast<U: Element>(self) -> Expr<U, D, node::CastTo<U, N>> {
        Expr::new(node::CastTo {
            cast: crate::ops::Cast::new(),
            a: self.node,
        })
    }

    /// The expression with its node type erased ([`node::Boxed`]): one type for every
    /// expression of `T` on `D`, so expressions can be chosen and combined at run time (an
    /// interpreter, a random tree) and stored together. It computes the same values and
    /// generates the same kernel; on the host each node becomes a virtual call.
    pub fn boxed<'a>(self) -> Expr<T, D, Boxed<'a, T, D>>
    where
        N: 'a,
    {
        Expr::new(Boxed::new(self.node))
    }
}
