//! Tensors: owned storage plus a [`Layout`], and borrowed views of them.
//!
//! - [`Tensor<T, D>`] owns its storage (`D::Storage<T>`, a `Vec<T>` on the [`Cpu`]).
//! - [`TensorView<'a, T, D>`] and [`TensorViewMut<'a, T, D>`] borrow storage for `'a`, so the
//!   storage cannot be freed or moved while a view of it exists (ndarray's `ArrayView` /
//!   `ArrayViewMut`).
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
//! rules and return [`crate::Result`]: bad shapes are errors, never panics.

mod arith;
pub mod backend;
mod interop;
pub mod ops;
mod shape_ops;
mod view;

pub use backend::Backend;
pub use view::{AsView, AsViewMut, TensorView, TensorViewMut};

use crate::device::{Cpu, Device, Storage};
use crate::element::Element;
use crate::error::{Handback, Result};
use crate::layout::Layout;

/// An n-dimensional array that owns its memory on device `D`.
///
/// Invariants:
/// 1. `layout` reaches only indices below the storage's length ([`Layout::check_within`]).
/// 2. `layout` is non-overlapping ([`Layout::check_writable`]), so the tensor can always be
///    written through [`Tensor::view_mut`]; broadcast layouts exist only as views.
/// 3. `device` is the device `storage` lives on.
///
/// Element type and device are type parameters: an op mixing `f32` with `f64`, or `Cpu` with
/// `Gpu`, does not compile. Convert explicitly with [`Tensor::cast`].
///
/// ```
/// use typestate_tensor::tensor::Tensor;
///
/// let a = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let row = Tensor::from_vec(&[3], vec![10.0f32, 20.0, 30.0])?;
/// let sum = (&a + &row)?; // broadcasts; bad shapes are errors, not panics
/// assert_eq!(sum.to_vec(), [11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
/// let t = a.t(); // a view: no copy
/// assert_eq!(t.get(&[2, 1])?, 6.0);
/// let mask = t.gt(&Tensor::scalar(2.5f32))?;
/// let picked = Tensor::where_(&mask, &t, &Tensor::scalar(0.0f32))?;
/// assert_eq!(picked.to_vec(), [0.0, 4.0, 0.0, 5.0, 3.0, 6.0]);
/// # Ok::<(), typestate_tensor::Error>(())
/// ```
pub struct Tensor<T: Element, D: Device = Cpu> {
    storage: D::Storage<T>,
    layout: Layout,
    device: D,
}

impl<T: Element, D: Device> Tensor<T, D> {
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
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The owned storage (may hold more elements than the layout reaches).
    pub fn storage(&self) -> &D::Storage<T> {
        &self.storage
    }

    /// Splits the tensor into its storage, layout and device.
    pub fn into_parts(self) -> (D::Storage<T>, Layout, D) {
        (self.storage, self.layout, self.device)
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    /// A tensor over `storage` with `layout`, checked: the layout must lie within the storage
    /// and must not overlap itself (invariants 1 and 2).
    ///
    /// # Errors
    /// The layout's [`LayoutError`](crate::error::LayoutError), with the three parts handed
    /// back unchanged in the [`Handback`] (`?` turns it into the crate's error).
    #[allow(clippy::type_complexity, clippy::result_large_err)] // the error hands back all three
    pub fn from_parts(
        storage: D::Storage<T>,
        layout: Layout,
        device: D,
    ) -> Result<Self, Handback<(D::Storage<T>, Layout, D)>> {
        let checked = layout
            .check_within("Tensor::from_parts", storage.len())
            .and_then(|()| layout.check_writable("Tensor::from_parts"));
        match checked {
            Ok(()) => Ok(Tensor {
                storage,
                layout,
                device,
            }),
            Err(e) => Err(Handback::new((storage, layout, device), e)),
        }
    }

    /// A new row-major tensor of zeros on `device`.
    pub fn zeros_on(shape: &[usize], device: &D) -> Result<Self> {
        let layout = Layout::contiguous(shape)?;
        let storage = device.zeros(layout.numel())?;
        Ok(Tensor {
            storage,
            layout,
            device: device.clone(),
        })
    }

    /// A new row-major tensor with every element `value`, on `device`.
    pub fn full_on(shape: &[usize], value: T, device: &D) -> Result<Self> {
        let mut t = Self::zeros_on(shape, device)?;
        t.fill_(value)?;
        Ok(t)
    }

    /// Gives the tensor another layout over the same storage, without copying (e.g.
    /// `t.set_layout(t.layout().t())?` transposes an owned tensor). The layout is checked as in
    /// [`Tensor::from_parts`]; on error the tensor is unchanged.
    pub fn set_layout(&mut self, layout: Layout) -> Result<()> {
        layout.check_within("set_layout", self.storage.len())?;
        layout.check_writable("set_layout")?;
        self.layout = layout;
        Ok(())
    }

    /// A read-only view of the whole tensor.
    pub fn view(&self) -> TensorView<'_, T, D> {
        TensorView::from_checked(D::slice(&self.storage), self.layout.clone(), &self.device)
    }

    /// A writable view of the whole tensor.
    pub fn view_mut(&mut self) -> TensorViewMut<'_, T, D> {
        TensorViewMut::from_checked(
            D::slice_mut(&mut self.storage),
            self.layout.clone(),
            &self.device,
        )
    }

    /// The storage, writable, with the layout that indexes it: for the engines' in-place
    /// methods (the fields stay private to this module, so the layout cannot be changed
    /// behind the tensor's back).
    pub(crate) fn storage_mut_and_layout(&mut self) -> (&mut D::Storage<T>, &Layout) {
        (&mut self.storage, &self.layout)
    }

    /// Wraps storage that holds exactly the row-major elements of `layout` (internal: the
    /// layout is contiguous from offset 0 and `storage` was made for it).
    pub(crate) fn from_contiguous(storage: D::Storage<T>, layout: Layout, device: D) -> Self {
        debug_assert!(layout.is_contiguous() && storage.len() == layout.numel());
        Tensor {
            storage,
            layout,
            device,
        }
    }
}

impl<T: Element> Clone for Tensor<T, Cpu> {
    /// Copies the storage and layout as they are (the clone keeps any strides).
    fn clone(&self) -> Self {
        Tensor {
            storage: self.storage.clone(),
            layout: self.layout.clone(),
            device: Cpu,
        }
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    /// A row-major copy on any device, or the backend's error (e.g. out of device memory).
    pub fn try_clone(&self) -> Result<Self> {
        self.contiguous()
    }
}

impl<T: Element, D: Device> std::fmt::Debug for Tensor<T, D> {
    /// Type, device and layout (no elements: they may live on a GPU).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        view::debug_layout(f, "Tensor", T::DTYPE, &self.device.name(), &self.layout)
    }
}

static_assertions::assert_impl_all!(Tensor<f32>: Send, Sync);
static_assertions::assert_impl_all!(TensorView<'static, f32>: Send, Sync);
static_assertions::assert_impl_all!(TensorViewMut<'static, f32>: Send, Sync);
