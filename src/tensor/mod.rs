//! Tensors: owned storage plus a [`Layout`], and borrowed views of them.
//!
//! - [`Tensor<T, D>`] owns its storage (`D::Storage<T>`, a `Vec<T>` on the [`Cpu`]).
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

mod arith;
pub mod backend;
mod construct;
pub mod expr;
mod index;
#[cfg(feature = "ndarray")]
mod interop;
pub mod iter;
mod join;
mod operand;
pub mod ops;
pub mod print;
pub mod random;
pub mod reduce;
pub mod repr;
mod shape_ops;
mod view;

pub use arith::ArithOperand;
pub use backend::{Backend, HostBackend, Transfer};
pub use index::TensorIndex;
#[cfg(feature = "ndarray")]
pub use interop::FromNdarray;
pub use operand::Operand;
pub use repr::{OwnedRepr, ReadRepr, Repr, ViewMutRepr, ViewRepr, WriteRepr};
pub use shape_ops::Dim;
pub use view::{AsView, AsViewMut, TensorView, TensorViewMut};

use std::marker::PhantomData;

use crate::device::{Cpu, Device, Storage};
use crate::element::Element;
use crate::error::{Handback, Result};
use crate::layout::Layout;

/// An n-dimensional array on device `D`: owned ([`Tensor<T, D>`], the default), or a view
/// borrowing another tensor's storage ([`TensorView`], [`TensorViewMut`]).
///
/// The third parameter says how the storage is held ([`repr`]): owned ([`OwnedRepr`], the
/// default, so `Tensor<f32>` is an owned CPU tensor), borrowed read-only ([`ViewRepr`], the
/// alias [`TensorView`]) or borrowed writable ([`ViewMutRepr`], the alias [`TensorViewMut`]).
/// Every method that works the same on all three (accessors, pointwise ops, operators,
/// printing) is written once here, ndarray's `ArrayBase` design.
///
/// Invariants:
/// 1. `layout` reaches only indices below the storage's length ([`Layout::check_within`]).
/// 2. Where the tensor can be written (owned, [`TensorViewMut`]), `layout` is
///    non-overlapping ([`Layout::check_writable`]); broadcast layouts exist only in
///    [`TensorView`]s.
/// 3. The representation's device is the device the storage lives on.
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
/// let picked = Tensor::where_cond(&mask, &t, &Tensor::scalar(0.0f32))?;
/// assert_eq!(picked.to_vec(), [0.0, 4.0, 0.0, 5.0, 3.0, 6.0]);
/// # Ok::<(), typestate_tensor::Error>(())
/// ```
pub struct Tensor<T: Element, D: Device = Cpu, S: Repr<T, D> = OwnedRepr<T, D>> {
    repr: S,
    layout: Layout,
    /// `T` and `D` are named by `S`'s bounds only; `fn() -> _` keeps `Send`/`Sync` and
    /// variance up to `S`.
    _names: PhantomData<fn() -> (T, D)>,
}

impl<T: Element, D: Device, S: Repr<T, D>> Tensor<T, D, S> {
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
        self.repr.device()
    }

    /// A tensor of `repr` under `layout`, which the caller has checked against the
    /// invariants for this representation.
    fn from_repr(repr: S, layout: Layout) -> Self {
        Tensor {
            repr,
            layout,
            _names: PhantomData,
        }
    }
}

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
        let mut t = Self::zeros_on(shape, device)?;
        t.fill_(value)?;
        Ok(t)
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
