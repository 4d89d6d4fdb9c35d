//! Fused pointwise expressions: a chain of ops evaluated in one pass (one kernel on the GPU),
//! built with the same operators and op methods as eager code.
//!
//! ```
//! use typestate_tensor::tensor::{expr, Tensor};
//!
//! let a = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let b = Tensor::from_vec(&[3], vec![0.5f32, 1.0, 2.0])?;
//! // Nothing runs yet: `e` is a typed expression tree over views of `a` and `b`.
//! let e = (a.lazy() * &b + 1.0f32).relu().sqrt();
//! let fused = e.eval()?; // one pass, no temporaries
//! let eager = a.mul(&b)?.add_scalar(1.0)?.relu()?.sqrt()?;
//! assert_eq!(fused.to_vec(), eager.to_vec());
//! // Several outputs from one pass:
//! let (mut s, mut d) = (Tensor::zeros(&[2, 3])?, Tensor::zeros(&[2, 3])?);
//! expr::eval_into((a.lazy() + &b, a.lazy() - &b), (&mut s, &mut d))?;
//! assert_eq!(d.to_vec(), [0.5, 1.0, 1.0, 3.5, 4.0, 4.0]);
//! # Ok::<(), typestate_tensor::Error>(())
//! ```
//!
//! An [`Expr<T, D, N>`] is a value: `N` is its tree of node types ([`node`]), `T` its element
//! type and `D` its device, so mixing element types or devices, a float op on integers, or a
//! mask that is not `bool` does not compile. Leaves are views (any layout: strided,
//! broadcast, flipped, transposed), each broadcast to the result's shape at evaluation;
//! shapes that do not broadcast are a [`LayoutError`](crate::error::LayoutError) then. Scalars are arguments of the
//! generated kernel: a new value does not recompile. In-place updates, which read the
//! outputs they write, go through [`Tensor::update`](crate::tensor::Tensor::update) and [`update`]; [`Expr::boxed`] erases
//! the node type for expressions built at run time. See `docs/FUSION.md` for the design.
//!
//! # Your own ops
//!
//! The op table is sealed (each op's CUDA is compiled from safe code), but a function from
//! expressions to an expression is an op of your own: it composes table ops, and the
//! expression it is used in still evaluates in one pass (one kernel on the GPU), on every
//! engine. Take operands as [`IntoExpr`] (expressions, `&tensor`, views) and return
//! `Expr<T, D, impl Node<D, Out = T>>` ([`node::Node`] names any node):
//!
//! ```
//! use typestate_tensor::element::FloatElement;
//! use typestate_tensor::tensor::expr::{node::Node, Expr, IntoExpr};
//! use typestate_tensor::tensor::{Backend, Tensor};
//!
//! /// Swish, `x * sigmoid(beta * x)`, for every float type and device.
//! fn swish<T: FloatElement, D: Backend>(
//!     x: impl IntoExpr<T, D>,
//!     beta: T,
//! ) -> Expr<T, D, impl Node<D, Out = T>> {
//!     let x = x.into_expr();
//!     x.clone() * x.mul_scalar(beta).sigmoid()
//! }
//!
//! let a = Tensor::from_vec(&[2, 2], vec![-2.0f32, -0.5, 0.5, 2.0])?;
//! let b = Tensor::from_vec(&[2], vec![1.0f32, 3.0])?;
//! let fused = (swish(a.lazy(), 1.0) * &b).eval()?; // one pass: swish, then `* b`
//! let eager = a.mul(&a.mul_scalar(1.0)?.sigmoid()?)?.mul(&b)?;
//! assert_eq!(fused.to_vec(), eager.to_vec());
//! // A tensor reference is an operand too: `swish(&a, 1.0)`.
//! assert_eq!(swish(&a, 1.0).eval()?.to_vec(), a.mul(&a.sigmoid()?)?.to_vec());
//! # Ok::<(), typestate_tensor::Error>(())
//! ```
//!
//! A kernel loads a tensor that an expression uses twice (`x.clone()` above) once. For a
//! closure that no table op can express, [`Tensor::map`](crate::tensor::Tensor::map) and
//! [`Tensor::zip_map`](crate::tensor::Tensor::zip_map) run Rust code on CPU tensors.

mod build;
mod eval;
// Issue 29 (cpu): the host's blocked, multi-threaded iteration.
pub(crate) mod host;
pub(crate) mod inline;
pub mod node;
mod ops;
pub(crate) mod program;
mod row;

#[cfg(test)]
pub(crate) use build::current;
pub use build::{scalar, Expr, IntoExpr};
pub use eval::{eval_into, update, Exprs, Targets};
pub use ops::where_cond;
pub use program::{MAX_LEAVES, MAX_OUTPUTS};
pub use row::RowStage;

// The fused job's types, defined with the engine contract that takes them, named here
// where the engines look for them.
#[allow(unused_imports)]
pub(crate) use crate::tensor::backend::sealed::{Fused, FusedOutput, FusedOutputs};
