//! What a [`Tensor`](super::Tensor) holds: its storage owned, borrowed read-only, or
//! borrowed writable (ndarray's `OwnedRepr` / `ViewRepr` as the `S` of `ArrayBase<S, D>`).
//!
//! One struct, `Tensor<T, D, S>`, with the representation `S` as its last parameter, so that
//! every method that does not care how the storage is held (accessors, ops, operators,
//! printing) is written once, on `Tensor<T, D, S>` with `S` bounded by what the method needs:
//! [`Repr`] to read the layout and device, [`ReadRepr`] to lend a read-only view, [`WriteRepr`]
//! to lend a writable one. The three representations are sealed: the invariants of
//! `Tensor` (layout within the storage; non-overlapping where writable) are checked by the
//! constructors in this folder, and unsafe engine code relies on them.
//!
//! [`Repr`] and [`OwnedRepr`] are defined with the struct (`base.rs`), the view
//! representations with the engine contract (`backend.rs`), whose methods take views; this
//! file adds what reads and writes through a representation, which needs an engine.

use crate::element::Element;

pub use super::backend::views::{ViewMutRepr, ViewRepr};
pub use super::base::{OwnedRepr, Repr};

use super::backend::Backend;
use super::base::sealed::Sealed;

/// A representation that can lend its storage read-only (all three).
pub trait ReadRepr<T: Element, D: Backend>: Repr<T, D> {
    /// The whole storage, borrowed.
    fn slice(&self) -> &D::Slice<T>;
}

/// A representation that can lend its storage writable: [`OwnedRepr`] and [`ViewMutRepr`].
#[diagnostic::on_unimplemented(
    message = "a `TensorView` is read-only: write through a `TensorViewMut`, from `.view_mut()`",
    label = "this view cannot be written",
    note = "take a writable view of the owning tensor with `x.view_mut()` (layout methods keep it writable: `x.view_mut().t()`, `x.view_mut().narrow(0, 1, 2)?`), or make an owned copy with `.contiguous()`"
)]
pub trait WriteRepr<T: Element, D: Backend>: ReadRepr<T, D> {
    /// The whole storage, borrowed exclusively, and the device (two fields borrowed at once).
    fn slice_mut(&mut self) -> (&mut D::Slice<T>, &D);
}

impl<T: Element, D: Backend> Sealed for ViewRepr<'_, T, D> {}
impl<T: Element, D: Backend> Sealed for ViewMutRepr<'_, T, D> {}

impl<T: Element, D: Backend> Repr<T, D> for ViewRepr<'_, T, D> {
    const NAME: &'static str = "TensorView";
    fn device(&self) -> &D {
        self.device
    }
}

impl<T: Element, D: Backend> Repr<T, D> for ViewMutRepr<'_, T, D> {
    const NAME: &'static str = "TensorViewMut";
    fn device(&self) -> &D {
        self.device
    }
}

impl<T: Element, D: Backend> ReadRepr<T, D> for OwnedRepr<T, D> {
    fn slice(&self) -> &D::Slice<T> {
        D::slice(&self.storage)
    }
}

impl<T: Element, D: Backend> ReadRepr<T, D> for ViewRepr<'_, T, D> {
    fn slice(&self) -> &D::Slice<T> {
        self.data
    }
}

impl<T: Element, D: Backend> ReadRepr<T, D> for ViewMutRepr<'_, T, D> {
    fn slice(&self) -> &D::Slice<T> {
        self.data
    }
}

impl<T: Element, D: Backend> WriteRepr<T, D> for OwnedRepr<T, D> {
    fn slice_mut(&mut self) -> (&mut D::Slice<T>, &D) {
        (D::slice_mut(&mut self.storage), &self.device)
    }
}

impl<T: Element, D: Backend> WriteRepr<T, D> for ViewMutRepr<'_, T, D> {
    fn slice_mut(&mut self) -> (&mut D::Slice<T>, &D) {
        (&mut *self.data, self.device)
    }
}
