//! The op methods and operators of [`Expr`], generated from the op table like the eager
//! methods (`src/tensor/ops.rs`): every op with a method there has the same method here,
//! taking operands by value ([`IntoExpr`]: expressions, `&tensor`, scalars) and returning a
//! larger expression.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::node::{Binary, Leaf, Node, Ternary, Unary};
use super::{Expr, IntoExpr};
use crate::element::{Element, FloatElement, Numeric, Signed};
// Integer, bitwise, logical and float-predicate ops (issue 26).
use crate::element::{Bitwise, DivRem, Integer};
use crate::ops::table::{self, for_each_binary_op, for_each_ternary_op, for_each_unary_op};
use crate::tensor::{Backend, ReadRepr, Tensor};

/// Unary op methods (`e.exp()`, `e.add_scalar(s)`).
macro_rules! expr_unary {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident| $body:expr $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( expr_unary!(@one $name [$($($p),+)?] $bound => $out, [$($m $d)?]); )*
    };
    (@one $name:ident [$($p:ident),*] $bound:ident => $out:ty, []) => {};
    (@one $name:ident [$($p:ident),*] $bound:ident => $out:ty, [$m:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise, fused into the expression.")]
        pub fn $m(self $(, $p: T)*) -> Expr<$out, D, Unary<expr_unary!(@ty $name [$($p),*]), N>>
        where
            T: $bound,
        {
            Expr::new(Unary { op: expr_unary!(@op $name [$($p),*]), a: self.node })
        }
    };
    (@ty $name:ident []) => { table::$name };
    (@ty $name:ident [$($p:ident),+]) => { table::$name<T> };
    (@op $name:ident []) => { table::$name };
    (@op $name:ident [$($p:ident),+]) => { table::$name($($p),+) };
}

/// Binary op methods (`e.maximum(x)`, `e.lt(y)`).
macro_rules! expr_binary {
    ($(
        $(#[$doc:meta])*
        $name:ident : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident, $b:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( expr_binary!(@one $name $bound => $out, [$($m $d)?]); )*
    };
    (@one $name:ident $bound:ident => $out:ty, []) => {};
    (@one $name:ident $bound:ident => $out:ty, [$m:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise (broadcasting), fused into the expression.")]
        pub fn $m<R: IntoExpr<T, D>>(self, rhs: R) -> Expr<$out, D, Binary<table::$name, N, R::Node>>
        where
            T: $bound,
        {
            Expr::new(Binary { op: table::$name, a: self.node, b: rhs.into_expr().node })
        }
    };
}

/// Ternary op methods whose first input is `T` (`e.clamp(lo, hi)`, `e.fma(b, c)`).
macro_rules! expr_ternary {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : [$first:tt] $bound:ident => $out:ty, $opname:literal,
            $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( expr_ternary!(@one $name [$($($p),+)?] [$first] $b $c $bound => $out, [$($m $d)?]); )*
    };
    (@one $name:ident [$($p:ident),*] [T] $b:ident $c:ident $bound:ident => $out:ty,
        [$m:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise (broadcasting), fused into the expression.")]
        #[allow(clippy::type_complexity)] // the node type is the expression's structure
        pub fn $m<B: IntoExpr<T, D>, C: IntoExpr<T, D>>(
            self,
            $b: B,
            $c: C
            $(, $p: T)*
        ) -> Expr<$out, D, Ternary<expr_unary!(@ty $name [$($p),*]), N, B::Node, C::Node>>
        where
            T: $bound,
        {
            Expr::new(Ternary {
                op: expr_unary!(@op $name [$($p),*]),
                a: self.node,
                b: $b.into_expr().node,
                c: $c.into_expr().node,
            })
        }
    };
    (@one $name:ident [$($p:ident),*] [$first:tt] $b:ident $c:ident $bound:ident => $out:ty,
        [$($rest:tt)*]) => {};
}

// The table's `add`, `sub`, `mul`, `div` and `neg` methods mirror the eager API (and the
// operators, which build the same nodes).
#[allow(clippy::should_implement_trait)]
impl<T: Element, D: Backend, N: Node<D, Out = T>> Expr<T, D, N> {
    for_each_unary_op!(expr_unary);
    for_each_binary_op!(expr_binary);
    for_each_ternary_op!(expr_ternary);
}

/// The node of [`where_cond`].
pub type WhereNode<M, A, B> = Ternary<table::Where, M, A, B>;

/// `mask ? a : b` elementwise (all three broadcast), fused: the expression form of
/// [`Tensor::where_cond`]. The mask must be `bool` (a comparison, or a `bool` tensor).
#[allow(clippy::type_complexity)] // the node type is the expression's structure
pub fn where_cond<T, D, M, A, B>(
    mask: M,
    a: A,
    b: B,
) -> Expr<T, D, WhereNode<M::Node, A::Node, B::Node>>
where
    T: Element,
    D: Backend,
    M: IntoExpr<bool, D>,
    A: IntoExpr<T, D>,
    B: IntoExpr<T, D>,
{
    Expr::new(Ternary {
        op: table::Where,
        a: mask.into_expr().node,
        b: a.into_expr().node,
        c: b.into_expr().node,
    })
}

/// `+ - * /` between an expression and any operand ([`IntoExpr`]).
macro_rules! expr_operator {
    ($tr:ident, $method:ident, $op:ident) => {
        impl<T, D, N, R> $tr<R> for Expr<T, D, N>
        where
            T: Numeric,
            D: Backend,
            N: Node<D, Out = T>,
            R: IntoExpr<T, D>,
        {
            type Output = Expr<T, D, Binary<table::$op, N, R::Node>>;
            fn $method(self, rhs: R) -> Self::Output {
                Expr::new(Binary {
                    op: table::$op,
                    a: self.node,
                    b: rhs.into_expr().node,
                })
            }
        }

        /// A scalar on the left of an expression (`2.0f32 * e`).
        impl<D, N> $tr<Expr<f32, D, N>> for f32
        where
            D: Backend,
            N: Node<D, Out = f32>,
        {
            type Output = Expr<f32, D, Binary<table::$op, super::node::Scalar<f32>, N>>;
            fn $method(self, rhs: Expr<f32, D, N>) -> Self::Output {
                Expr::new(Binary {
                    op: table::$op,
                    a: super::node::Scalar { value: self },
                    b: rhs.node,
                })
            }
        }

        impl<D, N> $tr<Expr<f64, D, N>> for f64
        where
            D: Backend,
            N: Node<D, Out = f64>,
        {
            type Output = Expr<f64, D, Binary<table::$op, super::node::Scalar<f64>, N>>;
            fn $method(self, rhs: Expr<f64, D, N>) -> Self::Output {
                Expr::new(Binary {
                    op: table::$op,
                    a: super::node::Scalar { value: self },
                    b: rhs.node,
                })
            }
        }
    };
}

expr_operator!(Add, add, Add);
expr_operator!(Sub, sub, Sub);
expr_operator!(Mul, mul, Mul);
expr_operator!(Div, div, Div);

impl<T: Signed, D: Backend, N: Node<D, Out = T>> Neg for Expr<T, D, N> {
    type Output = Expr<T, D, Unary<table::Neg, N>>;
    fn neg(self) -> Self::Output {
        Expr::new(Unary {
            op: table::Neg,
            a: self.node,
        })
    }
}

/// `&tensor + expr` and the like: a tensor on the left of an expression.
macro_rules! tensor_lhs_operator {
    ($tr:ident, $method:ident, $op:ident) => {
        impl<'a, T, D, S, N> $tr<Expr<T, D, N>> for &'a Tensor<T, D, S>
        where
            T: Numeric,
            D: Backend,
            S: ReadRepr<T, D>,
            N: Node<D, Out = T>,
        {
            type Output = Expr<T, D, Binary<table::$op, Leaf<'a, T, D>, N>>;
            fn $method(self, rhs: Expr<T, D, N>) -> Self::Output {
                Expr::new(Binary {
                    op: table::$op,
                    a: self.lazy().node,
                    b: rhs.node,
                })
            }
        }
    };
}

tensor_lhs_operator!(Add, add, Add);
tensor_lhs_operator!(Sub, sub, Sub);
tensor_lhs_operator!(Mul, mul, Mul);
tensor_lhs_operator!(Div, div, Div);

// Silence unused-import lints for bounds only some table entries name.
#[allow(dead_code)]
fn _bounds<T: FloatElement + Signed>() {}
