//! `x[[i, j]]` and `x[i]`: indexing host tensors and views, with the panic convention of
//! slices and ndarray. [`Tensor::get`], [`Tensor::set`] and [`Tensor::get_mut`] are the forms
//! that return an error instead.

use std::ops::{Index, IndexMut};

use super::backend::HostBackend;
use super::{ReadRepr, Tensor, WriteRepr};
use crate::element::Element;
use crate::layout::Layout;

mod sealed {
    pub trait Sealed {}
}

/// What indexes a tensor with `[]`: `[usize; N]` (one entry per dim, `x[[i, j]]`) or a
/// `usize` (a rank-1 tensor, `x[i]`). Sealed.
#[diagnostic::on_unimplemented(
    message = "a tensor cannot be indexed by `{Self}`",
    label = "expected `[usize; N]` (one entry per dim, `x[[i, j]]`) or a `usize` (rank 1)",
    note = "write `x[[i, j]]` with `usize` entries (`i as usize` for other integers; NumPy's `x[(i, j)]` is `x[[i, j]]` here); `x.get(&[i, j])` returns an error instead of panicking",
    note = "an index held in a tensor (from `argmax`, say) is read with `.item()? as usize`"
)]
pub trait TensorIndex: sealed::Sealed {
    /// The entries, one per dim.
    fn entries(&self) -> &[usize];
}

impl sealed::Sealed for usize {}
impl<const N: usize> sealed::Sealed for [usize; N] {}

impl TensorIndex for usize {
    fn entries(&self) -> &[usize] {
        std::slice::from_ref(self)
    }
}

impl<const N: usize> TensorIndex for [usize; N] {
    fn entries(&self) -> &[usize] {
        self
    }
}

/// The storage offset of `index`, or a panic naming it (the `Index` convention).
#[track_caller]
fn offset_or_panic(layout: &Layout, index: &[usize]) -> usize {
    match layout.index_to_offset(index) {
        Ok(off) => off,
        Err(e) => panic!(
            "tensor index {index:?} into shape {:?}: {e} (`get` and `set` return this error instead)",
            layout.shape()
        ),
    }
}

/// `x[[i, j]]` (one entry per dim) and `x[i]` (rank 1): the element, by reference.
///
/// **Panics** when the index has another number of entries than the tensor has dims or an
/// entry is out of range, as slice and ndarray indexing do; [`Tensor::get`] returns the
/// error instead. Host tensors only: on a GPU tensor this does not compile (call
/// `.to_cpu()` first).
impl<T, D, S, I> Index<I> for Tensor<T, D, S>
where
    T: Element,
    D: HostBackend,
    S: ReadRepr<T, D>,
    I: TensorIndex,
{
    type Output = T;
    #[track_caller]
    fn index(&self, index: I) -> &T {
        let off = offset_or_panic(self.layout(), index.entries());
        let data: &[T] = D::host(self.view().storage());
        &data[off]
    }
}

/// `x[[i, j]] = v` and `x[i] = v`. **Panics** on a bad index, as [`Index`] does;
/// [`Tensor::set`] returns the error instead.
impl<T, D, S, I> IndexMut<I> for Tensor<T, D, S>
where
    T: Element,
    D: HostBackend,
    S: WriteRepr<T, D>,
    I: TensorIndex,
{
    #[track_caller]
    fn index_mut(&mut self, index: I) -> &mut T {
        let off = offset_or_panic(self.layout(), index.entries());
        &mut D::host_mut(self.view_mut().into_slice_mut())[off]
    }
}
