//! Borrowed views: storage borrowed for `'a` plus a layout of their own.
//!
//! The two view types are [`Tensor`]s whose representation borrows ([`ViewRepr`],
//! [`ViewMutRepr`]), defined with the engine contract that takes them (`backend.rs`); this
//! file holds what views do: lending them ([`Tensor::view`], [`Tensor::view_mut`]), their
//! checked constructors, the storage borrowed for `'a`, reborrowing, and the [`AsView`] /
//! [`AsViewMut`] traits that ops take their operands through.

use crate::device::Storage;
use crate::element::Element;
use crate::error::Result;
use crate::layout::Layout;

use super::backend::views::{TensorView, TensorViewMut, ViewMutRepr, ViewRepr};
use super::backend::Backend;
use super::base::Tensor;
use super::repr::{ReadRepr, WriteRepr};

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// A read-only view of all elements, borrowing this tensor.
    pub fn view(&self) -> TensorView<'_, T, D> {
        TensorView::from_checked(self.repr.slice(), self.layout.clone(), self.repr.device())
    }
}

impl<T: Element, D: Backend, S: WriteRepr<T, D>> Tensor<T, D, S> {
    /// A writable view of all elements, borrowing this tensor exclusively.
    pub fn view_mut(&mut self) -> TensorViewMut<'_, T, D> {
        let (data, device) = self.repr.slice_mut();
        TensorViewMut::from_checked(data, self.layout.clone(), device)
    }
}

impl<'a, T: Element, D: Backend> TensorView<'a, T, D> {
    /// A view of `data` through `layout`, checked to lie within `data`; `data` must live on
    /// `device` ([`GpuError::DeviceMismatch`](crate::error::GpuError::DeviceMismatch)
    /// otherwise).
    pub fn new(data: &'a D::Slice<T>, layout: Layout, device: &'a D) -> Result<Self> {
        layout.check_within("TensorView::new", data.len())?;
        device.check_device("TensorView::new", data)?;
        Ok(Tensor::from_repr(ViewRepr { data, device }, layout))
    }

    /// Internal constructor for layouts already known to satisfy the invariants.
    pub(crate) fn from_checked(data: &'a D::Slice<T>, layout: Layout, device: &'a D) -> Self {
        debug_assert!(layout.check_within("view", data.len()).is_ok());
        Tensor::from_repr(ViewRepr { data, device }, layout)
    }

    /// The whole borrowed storage (the layout picks elements out of it).
    pub fn storage(&self) -> &'a D::Slice<T> {
        self.repr.data
    }

    /// A view of the same storage with the layout `f` derives from this one.
    pub(crate) fn relayout(
        &self,
        f: impl FnOnce(&Layout) -> Result<Layout, crate::error::LayoutError>,
    ) -> Result<TensorView<'a, T, D>> {
        let layout = f(&self.layout)?;
        TensorView::new(self.repr.data, layout, self.repr.device)
    }

    /// This view's storage under a layout known to be valid for it.
    pub(crate) fn with_valid_layout(&self, layout: Layout) -> TensorView<'a, T, D> {
        TensorView::from_checked(self.repr.data, layout, self.repr.device)
    }
}

impl<T: Element, D: Backend> Clone for TensorView<'_, T, D> {
    fn clone(&self) -> Self {
        Tensor::from_repr(self.repr.clone(), self.layout.clone())
    }
}

impl<'a, T: Element, D: Backend> TensorViewMut<'a, T, D> {
    /// A writable view of `data` through `layout`, checked to lie within `data` and not to
    /// overlap itself ([`crate::error::LayoutError::OverlappingOutput`] for a broadcast);
    /// `data` must live on `device`
    /// ([`GpuError::DeviceMismatch`](crate::error::GpuError::DeviceMismatch) otherwise).
    pub fn new(data: &'a mut D::Slice<T>, layout: Layout, device: &'a D) -> Result<Self> {
        layout.check_within("TensorViewMut::new", data.len())?;
        layout.check_writable("TensorViewMut::new")?;
        device.check_device("TensorViewMut::new", data)?;
        Ok(Tensor::from_repr(ViewMutRepr { data, device }, layout))
    }

    /// Internal constructor for layouts already known to satisfy the invariants.
    pub(crate) fn from_checked(data: &'a mut D::Slice<T>, layout: Layout, device: &'a D) -> Self {
        debug_assert!(layout.check_within("view", data.len()).is_ok());
        debug_assert!(layout.is_non_overlapping());
        Tensor::from_repr(ViewMutRepr { data, device }, layout)
    }

    /// The device, borrowed for as long as the view's storage.
    pub(crate) fn device_ref(&self) -> &'a D {
        self.repr.device
    }

    /// The whole borrowed storage, read-only.
    pub fn storage(&self) -> &D::Slice<T> {
        self.repr.slice()
    }

    /// The whole borrowed storage, writable, for the engines (elements outside the layout
    /// included: the view borrows all of it exclusively). Not public: a `&mut GpuStorage`
    /// could be swapped for another of a different length under its owner; CPU views offer
    /// [`storage_mut`](TensorViewMut::storage_mut) (an unsized `&mut [T]`, which cannot).
    pub(crate) fn slice_mut(&mut self) -> &mut D::Slice<T> {
        self.repr.slice_mut().0
    }

    /// The whole borrowed storage, writable for all of `'a` (consumes the view), for host
    /// element access that returns references living as long as the borrow.
    pub(crate) fn into_slice_mut(self) -> &'a mut D::Slice<T> {
        self.repr.data
    }

    /// A shorter-lived writable handle to the same view, so that a consuming layout method
    /// leaves this one usable.
    pub fn reborrow(&mut self) -> TensorViewMut<'_, T, D> {
        self.view_mut()
    }

    /// Gives up write access for the rest of `'a`.
    pub fn into_view(self) -> TensorView<'a, T, D> {
        TensorView::from_checked(self.repr.data, self.layout, self.repr.device)
    }

    /// The writable view with the layout `f` derives from this one (checked again).
    pub(crate) fn relayout(
        self,
        f: impl FnOnce(&Layout) -> Result<Layout, crate::error::LayoutError>,
    ) -> Result<TensorViewMut<'a, T, D>> {
        let layout = f(&self.layout)?;
        TensorViewMut::new(self.repr.data, layout, self.repr.device)
    }

    /// This view's storage under a layout known to be valid and non-overlapping for it.
    pub(crate) fn with_valid_layout(self, layout: Layout) -> TensorViewMut<'a, T, D> {
        TensorViewMut::from_checked(self.repr.data, layout, self.repr.device)
    }
}

/// Anything that can lend a read-only view of itself: every [`Tensor`], owned or a view.
/// Ops take their operands through it (or through [`Operand`](super::Operand), which adds
/// scalars), so any mix works.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor of `{T}` on `{D}`",
    label = "expected a tensor or view of `{T}` on `{D}`",
    note = "the operands of one op share their element type and device: convert the element type with `.cast::<{T}>()`, move between devices with `.to_cpu()` or `.to_gpu(&gpu)`",
    note = "if this is the mask of `where_cond`: a mask is a tensor of `bool`, made by a comparison such as `x.gt(0.0)` (`x.ne(0.0)` for non-zero)"
)]
pub trait AsView<T: Element, D: Backend> {
    /// A view of all elements.
    fn view(&self) -> TensorView<'_, T, D>;
}

/// Anything that can lend a writable view of itself: [`Tensor`] and [`TensorViewMut`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a writable tensor of `{T}` on `{D}`",
    label = "expected an owned tensor or a `TensorViewMut` of `{T}` on `{D}`",
    note = "write into a `Tensor` or a `TensorViewMut` (`x.view_mut()`) of the op's element type and device: convert with `.cast::<{T}>()`, move with `.to_cpu()` or `.to_gpu(&gpu)`",
    note = "a list of buffers (a `LocalGroup` collective) holds tensors or writable views: `&mut [a.view_mut(), b.view_mut()]` or `&mut tensors`, not `&mut [&mut a, &mut b]`"
)]
pub trait AsViewMut<T: Element, D: Backend>: AsView<T, D> {
    /// A writable view of all elements.
    fn view_mut(&mut self) -> TensorViewMut<'_, T, D>;
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> AsView<T, D> for Tensor<T, D, S> {
    fn view(&self) -> TensorView<'_, T, D> {
        Tensor::view(self)
    }
}

/// A reference lends what it points to, so `&[&a, &b]` and `&[a.view(), b.view()]` both
/// work where a list of operands is taken.
impl<T: Element, D: Backend, X: AsView<T, D> + ?Sized> AsView<T, D> for &X {
    fn view(&self) -> TensorView<'_, T, D> {
        (**self).view()
    }
}

impl<T: Element, D: Backend, S: WriteRepr<T, D>> AsViewMut<T, D> for Tensor<T, D, S> {
    fn view_mut(&mut self) -> TensorViewMut<'_, T, D> {
        Tensor::view_mut(self)
    }
}
