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

mod build;
mod eval;
pub(crate) mod inline;
pub mod node;
mod ops;
pub(crate) mod program;

#[cfg(test)]
pub(crate) use build::current;
pub use build::{scalar, Expr, IntoExpr};
pub use eval::{eval_into, update, Exprs, Targets};
pub use ops::where_cond;
pub use program::{MAX_LEAVES, MAX_OUTPUTS};

// The fused job's types, defined with the engine contract that takes them, named here
// where the engines look for them.
#[allow(unused_imports)]
pub(crate) use crate::tensor::backend::sealed::{Fused, FusedOutput, FusedOutputs};
