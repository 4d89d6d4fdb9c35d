//! Borrowed views: storage borrowed for `'a` plus a layout of their own.

use crate::device::{Cpu, Storage};
use crate::element::Element;
use crate::error::Result;
use crate::layout::Layout;
use crate::tensor::Backend;

use super::Tensor;

/// A read-only view: borrowed storage and a layout into it.
///
/// Invariants:
/// 1. `layout` reaches only indices below `data.len()` ([`Layout::check_within`]).
/// 2. `device` is the device `data` lives on.
///
/// The layout may alias elements (broadcast views have zero strides). The borrow keeps the
/// storage alive and unchanged for `'a`.
pub struct TensorView<'a, T: Element, D: Backend = Cpu> {
    data: &'a D::Slice<T>,
    layout: Layout,
    device: &'a D,
}

/// A writable view: exclusively borrowed storage and a layout into it.
///
/// Invariants:
/// 1. `layout` reaches only indices below `data.len()` ([`Layout::check_within`]).
/// 2. `layout` is non-overlapping ([`Layout::check_writable`]): no two elements share a
///    storage index, so every write is well defined. A broadcast layout is rejected when the
///    view is made, not when it is written.
/// 3. `device` is the device `data` lives on.
pub struct TensorViewMut<'a, T: Element, D: Backend = Cpu> {
    data: &'a mut D::Slice<T>,
    layout: Layout,
    device: &'a D,
}

impl<'a, T: Element, D: Backend> TensorView<'a, T, D> {
    /// A view of `data` through `layout`, checked to lie within `data`.
    pub fn new(data: &'a D::Slice<T>, layout: Layout, device: &'a D) -> Result<Self> {
        layout.check_within("TensorView::new", data.len())?;
        Ok(TensorView {
            data,
            layout,
            device,
        })
    }

    /// Internal constructor for layouts already known to satisfy the invariants.
    pub(crate) fn from_checked(data: &'a D::Slice<T>, layout: Layout, device: &'a D) -> Self {
        debug_assert!(layout.check_within("view", data.len()).is_ok());
        TensorView {
            data,
            layout,
            device,
        }
    }

    /// The shape, strides and offset into the storage.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Size of each dim.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// Strides in elements.
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.layout.rank()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The device the storage lives on.
    pub fn device(&self) -> &'a D {
        self.device
    }

    /// The whole borrowed storage (the layout picks elements out of it).
    pub fn storage(&self) -> &'a D::Slice<T> {
        self.data
    }

    /// Another handle to the same view.
    pub fn view(&self) -> TensorView<'a, T, D> {
        self.clone()
    }

    /// A view of the same storage with the layout `f` derives from this one.
    pub(crate) fn relayout(
        &self,
        f: impl FnOnce(&Layout) -> Result<Layout, crate::error::LayoutError>,
    ) -> Result<TensorView<'a, T, D>> {
        let layout = f(&self.layout)?;
        TensorView::new(self.data, layout, self.device)
    }

    /// This view's storage under a layout known to be valid for it.
    pub(crate) fn with_valid_layout(&self, layout: Layout) -> TensorView<'a, T, D> {
        TensorView::from_checked(self.data, layout, self.device)
    }
}

impl<T: Element, D: Backend> Clone for TensorView<'_, T, D> {
    fn clone(&self) -> Self {
        TensorView {
            data: self.data,
            layout: self.layout.clone(),
            device: self.device,
        }
    }
}

impl<'a, T: Element, D: Backend> TensorViewMut<'a, T, D> {
    /// A writable view of `data` through `layout`, checked to lie within `data` and not to
    /// overlap itself ([`crate::error::LayoutError::OverlappingOutput`] for a broadcast).
    pub fn new(data: &'a mut D::Slice<T>, layout: Layout, device: &'a D) -> Result<Self> {
        layout.check_within("TensorViewMut::new", data.len())?;
        layout.check_writable("TensorViewMut::new")?;
        Ok(TensorViewMut {
            data,
            layout,
            device,
        })
    }

    /// Internal constructor for layouts already known to satisfy the invariants.
    pub(crate) fn from_checked(data: &'a mut D::Slice<T>, layout: Layout, device: &'a D) -> Self {
        debug_assert!(layout.check_within("view", data.len()).is_ok());
        debug_assert!(layout.is_non_overlapping());
        TensorViewMut {
            data,
            layout,
            device,
        }
    }

    /// The shape, strides and offset into the storage.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Size of each dim.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// Strides in elements.
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.layout.rank()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The device the storage lives on.
    pub fn device(&self) -> &'a D {
        self.device
    }

    /// The whole borrowed storage, read-only.
    pub fn storage(&self) -> &D::Slice<T> {
        &*self.data
    }

    /// The whole borrowed storage, writable, for the engines (elements outside the layout
    /// included: the view borrows all of it exclusively). Not public: a `&mut GpuStorage`
    /// could be swapped for another of a different length under its owner; CPU views offer
    /// [`storage_mut`](TensorViewMut::storage_mut) (an unsized `&mut [T]`, which cannot).
    pub(crate) fn slice_mut(&mut self) -> &mut D::Slice<T> {
        &mut *self.data
    }

    /// A read-only view of the same elements, borrowing this one.
    pub fn view(&self) -> TensorView<'_, T, D> {
        TensorView::from_checked(&*self.data, self.layout.clone(), self.device)
    }

    /// A shorter-lived writable handle to the same view, so that a consuming layout method
    /// leaves this one usable.
    pub fn reborrow(&mut self) -> TensorViewMut<'_, T, D> {
        TensorViewMut::from_checked(&mut *self.data, self.layout.clone(), self.device)
    }

    /// Gives up write access for the rest of `'a`.
    pub fn into_view(self) -> TensorView<'a, T, D> {
        TensorView::from_checked(self.data, self.layout, self.device)
    }

    /// The writable view with the layout `f` derives from this one (checked again).
    pub(crate) fn relayout(
        self,
        f: impl FnOnce(&Layout) -> Result<Layout, crate::error::LayoutError>,
    ) -> Result<TensorViewMut<'a, T, D>> {
        let layout = f(&self.layout)?;
        TensorViewMut::new(self.data, layout, self.device)
    }

    /// This view's storage under a layout known to be valid and non-overlapping for it.
    pub(crate) fn with_valid_layout(self, layout: Layout) -> TensorViewMut<'a, T, D> {
        TensorViewMut::from_checked(self.data, layout, self.device)
    }
}

/// Anything that can lend a read-only view of itself: [`Tensor`], [`TensorView`] and
/// [`TensorViewMut`]. Ops take their operands as `&impl AsView<T, D>`, so any mix works.
pub trait AsView<T: Element, D: Backend> {
    /// A view of all elements.
    fn view(&self) -> TensorView<'_, T, D>;
}

/// Anything that can lend a writable view of itself: [`Tensor`] and [`TensorViewMut`].
pub trait AsViewMut<T: Element, D: Backend>: AsView<T, D> {
    /// A writable view of all elements.
    fn view_mut(&mut self) -> TensorViewMut<'_, T, D>;
}

impl<T: Element, D: Backend> AsView<T, D> for Tensor<T, D> {
    fn view(&self) -> TensorView<'_, T, D> {
        Tensor::view(self)
    }
}

impl<T: Element, D: Backend> AsView<T, D> for TensorView<'_, T, D> {
    fn view(&self) -> TensorView<'_, T, D> {
        TensorView::view(self)
    }
}

impl<T: Element, D: Backend> AsView<T, D> for TensorViewMut<'_, T, D> {
    fn view(&self) -> TensorView<'_, T, D> {
        TensorViewMut::view(self)
    }
}

impl<T: Element, D: Backend> AsViewMut<T, D> for Tensor<T, D> {
    fn view_mut(&mut self) -> TensorViewMut<'_, T, D> {
        Tensor::view_mut(self)
    }
}

impl<T: Element, D: Backend> AsViewMut<T, D> for TensorViewMut<'_, T, D> {
    fn view_mut(&mut self) -> TensorViewMut<'_, T, D> {
        self.reborrow()
    }
}

impl<T: Element, D: Backend> std::fmt::Debug for TensorView<'_, T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_layout(f, "TensorView", T::DTYPE, &self.device.name(), &self.layout)
    }
}

impl<T: Element, D: Backend> std::fmt::Debug for TensorViewMut<'_, T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_layout(
            f,
            "TensorViewMut",
            T::DTYPE,
            &self.device.name(),
            &self.layout,
        )
    }
}

pub(super) fn debug_layout(
    f: &mut std::fmt::Formatter<'_>,
    what: &str,
    dtype: crate::element::DType,
    device: &str,
    layout: &Layout,
) -> std::fmt::Result {
    f.debug_struct(what)
        .field("dtype", &dtype)
        .field("device", &device)
        .field("shape", &layout.shape())
        .field("strides", &layout.strides())
        .field("offset", &layout.offset())
        .finish()
}
