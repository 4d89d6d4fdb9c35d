//! Tensors: owned storage plus a [`Layout`](crate::layout::Layout), and borrowed views of them.
//!
//! - [`Tensor<T, D>`] owns its storage (`D::Storage<T>`, a `Vec<T>` on the [`Cpu`](crate::device::Cpu)).
//! - [`TensorView<'a, T, D>`] and [`TensorViewMut<'a, T, D>`] borrow storage for `'a`, so the
//!   storage cannot be freed or moved while a view of it exists (ndarray's `ArrayView` /
//!   `ArrayViewMut`).
//!
//! All three are one struct, `Tensor<T, D, S>`, whose last parameter `S` ([`repr`]) says how
//! the storage is held; the view types are aliases. Accessors, ops, operators and printing
//! are written once for every `S` that supports them, as in ndarray's `ArrayBase<S, D>`.
//!
//! # The API in one paragraph
//!
//! Layout methods (`permute`, `transpose`, `t`, `narrow`, `slice`, `flip`, `broadcast_to` /
//! `expand`, `unsqueeze`, `squeeze`, `reshape`) never copy and always return a view: on a
//! [`Tensor`] or a [`TensorView`] they borrow (`&self`) and return a [`TensorView`]; on a
//! [`TensorViewMut`] they consume the handle and return a [`TensorViewMut`] (call
//! [`TensorViewMut::reborrow`] first to keep it). `tensor.view_mut().t()` is a writable
//! transposed view. Copies are explicit: [`TensorView::contiguous`], `reshape_copy`,
//! `cast::<U>()` and every out-of-place op return a new row-major [`Tensor`]. To give an owned
//! tensor a new layout without copying, use [`Tensor::set_layout`].
//!
//! Pointwise ops (see [`ops`]) come in three forms on every type: out-of-place
//! (`a.exp()`, `a.add(&b)`, `&a + &b`), into a destination view (`a.add_into(&b, &mut out)`),
//! and in place on the writable types (`a.exp_()`, `a.add_(&b)`). All broadcast with NumPy's
//! rules and return [`crate::Result`]: bad shapes are errors, never panics. Operands may be
//! scalars of the element type ([`Operand`]: `a.gt(0.0)`, `a.clamp(-1.0, 1.0)`); the
//! operators take tensors and views by reference or by value and scalars on either side
//! (`&a * 2.0`, `2.0 - &a`, `a + &b`), and `+=`-style assignments update in place (they
//! panic on a bad shape, having no error channel; `add_` and friends return it).
//!
//! On the host, tensors index (`a[[i, j]]`, [`Tensor::get`], [`Tensor::set`]), iterate in
//! logical order whatever the strides ([`iter`]: `for v in &a`, `a.iter_mut()`,
//! `a.indexed_iter()`), compare (`a == b`: shapes and elements) and convert (`Vec`, ndarray).
//! On every device they print their elements ([`mod@print`]), join ([`Tensor::cat`],
//! [`Tensor::stack`]) and are made by the constructors (`ones_on`, `eye_on`, `linspace_on`,
//! `arange_step_on`, seeded `rand_on` / `randn_on` ([`random`]), `zeros_like`, ...; the CPU
//! forms drop `_on`).

mod any_all;
mod arith;
pub mod backend;
mod base;
mod construct;
pub mod expr;
mod index;
// issue 28 (index): gather, scatter, index_select, masked ops, one_hot, bincount.
pub mod indexing;
#[cfg(feature = "ndarray")]
mod interop;
pub mod iter;
mod join;
pub mod matmul;
// issue 28 (norm): softmax, variance, layer / rms / group norm.
pub mod normalize;
mod operand;
// issue 28 (sort): scans and sorting.
pub mod ops;
pub mod order;
// Integer, bitwise, logical and float-predicate ops (issue 26).
mod ops_by_hand;
pub use ops_by_hand::NanToNumNode;
mod owned;
// Shape basics (issue 28): padding, repeats and rolls, triangles, splits.
pub mod pad;
pub mod print;
pub mod random;
pub mod reduce;
pub mod repr;
mod shape_ops;
mod split;
mod tile;
mod triangle;
mod view;
// Integer division into floats (issue 26).
mod true_divide;

pub use arith::ArithOperand;
pub use backend::views::{TensorView, TensorViewMut};
pub use backend::{Backend, HostBackend, Transfer};
pub use base::Tensor;
pub use index::TensorIndex;
#[cfg(feature = "ndarray")]
pub use interop::FromNdarray;
pub use operand::Operand;
pub use repr::{OwnedRepr, ReadRepr, Repr, ViewMutRepr, ViewRepr, WriteRepr};
pub use shape_ops::Dim;
pub use view::{AsView, AsViewMut};
