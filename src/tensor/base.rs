//! The tensor value: one struct, [`Tensor<T, D, S>`], over a representation `S` that says how
//! its storage is held ([`Repr`]), and the owned representation ([`OwnedRepr`]).
//!
//! The bottom of the folder: it names devices and layouts only, so the engine contract
//! ([`super::backend`]), whose views are `Tensor`s, builds on it. What needs an engine
//! (views, constructors, ops) is written in the files above.

use std::marker::PhantomData;

use crate::device::{Cpu, Device};
use crate::element::Element;
use crate::layout::Layout;

pub(crate) mod sealed {
    /// Seals [`Repr`](super::Repr): only this folder's representations implement it.
    pub trait Sealed {}
}

/// An n-dimensional array on device `D`: owned ([`Tensor<T, D>`], the default), or a view
/// borrowing another tensor's storage ([`TensorView`](super::TensorView), [`TensorViewMut`](super::TensorViewMut)).
///
/// The third parameter says how the storage is held ([`repr`](super::repr)): owned ([`OwnedRepr`], the
/// default, so `Tensor<f32>` is an owned CPU tensor), borrowed read-only ([`ViewRepr`](super::ViewRepr), the
/// alias [`TensorView`](super::TensorView)) or borrowed writable ([`ViewMutRepr`](super::ViewMutRepr), the alias [`TensorViewMut`](super::TensorViewMut)).
/// Every method that works the same on all three (accessors, pointwise ops, operators,
/// printing) is written once here, ndarray's `ArrayBase` design.
///
/// Invariants:
/// 1. `layout` reaches only indices below the storage's length ([`Layout::check_within`]).
/// 2. Where the tensor can be written (owned, [`TensorViewMut`](super::TensorViewMut)), `layout` is
///    non-overlapping ([`Layout::check_writable`]); broadcast layouts exist only in
///    [`TensorView`](super::TensorView)s.
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
    pub(super) repr: S,
    pub(super) layout: Layout,
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
    pub(super) fn from_repr(repr: S, layout: Layout) -> Self {
        Tensor {
            repr,
            layout,
            _names: PhantomData,
        }
    }
}

/// Owned storage and its device: the representation of [`Tensor<T, D>`].
pub struct OwnedRepr<T: Element, D: Device> {
    pub(super) storage: D::Storage<T>,
    pub(super) device: D,
}

/// How a tensor holds its storage. Sealed: implemented by [`OwnedRepr`], [`ViewRepr`](super::ViewRepr) and
/// [`ViewMutRepr`](super::ViewMutRepr) only.
pub trait Repr<T: Element, D: Device>: sealed::Sealed {
    /// The type's name as users write it, for `Debug` (`"Tensor"`, `"TensorView"`, ...).
    const NAME: &'static str;

    /// The device the storage lives on.
    fn device(&self) -> &D;
}

impl<T: Element, D: Device> sealed::Sealed for OwnedRepr<T, D> {}

impl<T: Element, D: Device> Repr<T, D> for OwnedRepr<T, D> {
    const NAME: &'static str = "Tensor";
    fn device(&self) -> &D {
        &self.device
    }
}
