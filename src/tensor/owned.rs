//! Owned tensors: built from their parts (checked against the invariants of
//! [`Tensor`]), made on a device, taken apart, cloned.

use crate::device::{Cpu, Device, Storage};
use crate::element::Element;
use crate::error::{Handback, Result};
use crate::layout::Layout;

use super::backend::views::{TensorView, TensorViewMut};
use super::backend::{full_storage, Backend};
use super::base::{OwnedRepr, Tensor};

impl<T: Element, D: Device> Tensor<T, D> {
    /// The owned storage (may hold more elements than the layout reaches).
    pub fn storage(&self) -> &D::Storage<T> {
        &self.repr.storage
    }

    /// Splits the tensor into its storage, layout and device.
    pub fn into_parts(self) -> (D::Storage<T>, Layout, D) {
        (self.repr.storage, self.layout, self.repr.device)
    }

    fn owned(storage: D::Storage<T>, layout: Layout, device: D) -> Self {
        Tensor::from_repr(OwnedRepr { storage, device }, layout)
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    /// A tensor over `storage` with `layout`, checked: the layout must lie within the storage
    /// and must not overlap itself (invariants 1 and 2), and the storage must live on
    /// `device` (invariant 3).
    ///
    /// # Errors
    /// The layout's [`LayoutError`](crate::error::LayoutError), or
    /// [`GpuError::DeviceMismatch`](crate::error::GpuError::DeviceMismatch) for storage of
    /// another GPU, with the three parts handed back unchanged in the [`Handback`] (`?` turns
    /// it into the crate's error).
    #[allow(clippy::type_complexity, clippy::result_large_err)] // the error hands back all three
    pub fn from_parts(
        storage: D::Storage<T>,
        layout: Layout,
        device: D,
    ) -> Result<Self, Handback<(D::Storage<T>, Layout, D)>> {
        const OP: &str = "Tensor::from_parts";
        let checked = layout
            .check_within(OP, storage.len())
            .and_then(|()| layout.check_writable(OP))
            .map_err(crate::error::Error::from)
            .and_then(|()| device.check_device(OP, D::slice(&storage)));
        match checked {
            Ok(()) => Ok(Tensor::owned(storage, layout, device)),
            Err(e) => Err(Handback::new((storage, layout, device), e)),
        }
    }

    /// A new row-major tensor of zeros on `device`.
    pub fn zeros_on(shape: &[usize], device: &D) -> Result<Self> {
        let layout = Layout::contiguous(shape)?;
        let storage = device.zeros(layout.numel())?;
        Ok(Tensor::owned(storage, layout, device.clone()))
    }

    /// A new row-major tensor with every element `value`, on `device`.
    pub fn full_on(shape: &[usize], value: T, device: &D) -> Result<Self> {
        let layout = Layout::contiguous(shape)?;
        let storage = full_storage(device, layout.numel(), value)?;
        Ok(Tensor::owned(storage, layout, device.clone()))
    }

    /// Gives the tensor another layout over the same storage, without copying (e.g.
    /// `t.set_layout(t.layout().t())?` transposes an owned tensor). The layout is checked as in
    /// [`Tensor::from_parts`]; on error the tensor is unchanged.
    pub fn set_layout(&mut self, layout: Layout) -> Result<()> {
        layout.check_within("set_layout", self.repr.storage.len())?;
        layout.check_writable("set_layout")?;
        self.layout = layout;
        Ok(())
    }

    /// The storage, writable, with the layout that indexes it: for the engines' in-place
    /// methods (the fields stay private to this module, so the layout cannot be changed
    /// behind the tensor's back).
    pub(crate) fn storage_mut_and_layout(&mut self) -> (&mut D::Storage<T>, &Layout) {
        (&mut self.repr.storage, &self.layout)
    }

    /// Wraps storage that holds exactly the row-major elements of `layout` (internal: the
    /// layout is contiguous from offset 0 and `storage` was made for it).
    pub(crate) fn from_contiguous(storage: D::Storage<T>, layout: Layout, device: D) -> Self {
        debug_assert!(layout.is_contiguous() && storage.len() == layout.numel());
        Tensor::owned(storage, layout, device)
    }
}

impl<T: Element> Clone for Tensor<T, Cpu> {
    /// Copies the storage and layout as they are (the clone keeps any strides).
    fn clone(&self) -> Self {
        Tensor::owned(self.repr.storage.clone(), self.layout.clone(), Cpu)
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    /// A row-major copy on any device, or the backend's error (e.g. out of device memory).
    pub fn try_clone(&self) -> Result<Self> {
        self.contiguous()
    }
}

static_assertions::assert_impl_all!(Tensor<f32>: Send, Sync);
static_assertions::assert_impl_all!(TensorView<'static, f32>: Send, Sync);
static_assertions::assert_impl_all!(TensorViewMut<'static, f32>: Send, Sync);
