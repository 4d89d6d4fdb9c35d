//! The engine interface: what a device must do for tensors to run on it.
//!
//! [`Backend`] works on views of one shape; broadcasting, shape checks against the caller's
//! request and allocation of results happen above it, in [`crate::tensor`]. The CPU engine
//! (`engine_cpu/`) and the GPU engine (`engine_gpu/`) implement it.
//!
//! The types the contract's signatures name, and which name it back, are defined here too:
//! the view representations and the [`TensorView`] / [`TensorViewMut`] aliases (a view holds a
//! [`Backend::Slice`]), and the fused job an engine runs with its program and outputs (they
//! hold the engine's handles). Below this file are only the `Tensor` struct (`base.rs`) and
//! the engine-free program (`expr/program.rs`), so the folder imports one way
//! (docs/ARCHITECTURE.md, "No import circles").
//!
//! # Contract
//!
//! - **Shapes.** Every view passed to one call has the same shape. An implementation returns
//!   [`LayoutError::ShapeMismatch`](crate::error::LayoutError::ShapeMismatch) otherwise; it
//!   never panics.
//! - **Validity.** Views are valid by construction: their layouts lie within their storage,
//!   and a destination ([`TensorViewMut`]) does not overlap itself (a broadcast destination
//!   cannot exist). Every view of a call lives on `self` (a backend with several devices, the
//!   GPU, checks this and returns an error).
//! - **Aliasing.** Sources may alias each other freely (`a.add(&a)`). A source never aliases
//!   the destination: Rust's borrows forbid it, so in-place ops have their own methods, where
//!   the destination is also the first input, read and written through the same layout.
//! - **Writes.** `fill`, `copy`, `unary`, `binary` and `ternary` write every element of the
//!   destination exactly once and never read it, so the destination may be uninitialised.
//!   Elements of the destination's storage outside its layout are left untouched.
//! - **Errors.** A failed call may have written part of the destination; it never leaves the
//!   storage invalid for its element type.

use crate::device::{Cpu, Device, Storage};
use crate::element::Element;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::reduce::Reduction;

use super::base::Tensor;
use super::expr::inline::InlineList;
use super::expr::program::{ProgramOf, MAX_OUTPUTS};

use crate::ops::op::{BinaryOp, TernaryOp, UnaryOp};
use crate::ops::table::Identity;

/// The view types, in a module of their own so that their public paths are the ones
/// [`crate::tensor`] and [`crate::tensor::repr`] give them.
pub(crate) mod views {
    use super::*;

    /// Storage borrowed read-only for `'a`: the representation of
    /// [`TensorView<'a, T, D>`](TensorView).
    ///
    /// Defined beside [`Backend`] because the two name each other: it holds a
    /// [`Backend::Slice`], and the engine's methods take views of it.
    pub struct ViewRepr<'a, T: Element, D: Backend> {
        pub(in crate::tensor) data: &'a D::Slice<T>,
        pub(in crate::tensor) device: &'a D,
    }

    /// Storage borrowed exclusively for `'a`: the representation of
    /// [`TensorViewMut<'a, T, D>`](TensorViewMut).
    pub struct ViewMutRepr<'a, T: Element, D: Backend> {
        pub(in crate::tensor) data: &'a mut D::Slice<T>,
        pub(in crate::tensor) device: &'a D,
    }

    impl<T: Element, D: Backend> Clone for ViewRepr<'_, T, D> {
        fn clone(&self) -> Self {
            ViewRepr {
                data: self.data,
                device: self.device,
            }
        }
    }

    /// A read-only view: borrowed storage and a layout into it.
    ///
    /// Invariants (besides [`Tensor`]'s):
    /// 1. `layout` reaches only indices below the borrowed slice's length.
    /// 2. The layout may alias elements (broadcast views have zero strides).
    ///
    /// The borrow keeps the storage alive and unchanged for `'a`. Every read-only method of
    /// [`Tensor`] works on a view.
    pub type TensorView<'a, T, D = Cpu> = Tensor<T, D, ViewRepr<'a, T, D>>;

    /// A writable view: exclusively borrowed storage and a layout into it.
    ///
    /// Invariants (besides [`Tensor`]'s):
    /// 1. `layout` reaches only indices below the borrowed slice's length.
    /// 2. `layout` is non-overlapping ([`Layout::check_writable`]): no two elements share a
    ///    storage index, so every write is well defined. A broadcast layout is rejected when the
    ///    view is made, not when it is written.
    pub type TensorViewMut<'a, T, D = Cpu> = Tensor<T, D, ViewMutRepr<'a, T, D>>;
}

use views::{TensorView, TensorViewMut};

/// A device with a pointwise engine.
///
/// Required: borrowed storage ([`Backend::Slice`], [`Backend::slice`],
/// [`Backend::slice_mut`]), allocation ([`Backend::zeros`], [`Backend::alloc_uninit`]) and
/// the four writes into a destination view ([`Backend::fill`], [`Backend::unary`],
/// [`Backend::binary`], [`Backend::ternary`]). The provided methods (copy, in-place ops,
/// out-of-place ops into new storage) are built from those; a backend overrides them when it
/// can do better (in place without a temporary; results without zero-filling).
///
/// # Safety
///
/// The provided `*_new` methods hand [`Backend::alloc_uninit`] memory to `unary`, `binary`
/// and `ternary` and then return it as initialised, so an implementation promises: when
/// `fill`, `unary`, `binary` or `ternary` returns `Ok`, every element of the destination's
/// layout has been written with a valid value, and the destination was not read; an
/// overridden `*_new` method returns storage whose every element is initialised. The same
/// holds for [`Backend::reduce`]: the tensor methods hand it `alloc_uninit` memory too.
pub unsafe trait Backend: Device + Transfer + sealed::FusedBackend {
    /// What a view borrows: `[T]` on the CPU. May be the storage type itself.
    type Slice<T: Element>: ?Sized + Storage<T>;

    /// The storage as a borrowed slice.
    fn slice<T: Element>(storage: &Self::Storage<T>) -> &Self::Slice<T>;

    /// The storage as a writable borrowed slice.
    fn slice_mut<T: Element>(storage: &mut Self::Storage<T>) -> &mut Self::Slice<T>;

    /// Checks that `storage` lives on this device, for the constructors that pair storage
    /// with a device (`Tensor::from_parts`, `TensorView::new`, `TensorViewMut::new`). The
    /// device type says which kind of device; a backend with several devices of one type
    /// (the GPU) compares them here and returns
    /// [`GpuError::DeviceMismatch`](crate::error::GpuError::DeviceMismatch). The default,
    /// for a backend with one device, accepts everything.
    fn check_device<T: Element>(&self, op: &'static str, storage: &Self::Slice<T>) -> Result<()> {
        let _ = (op, storage);
        Ok(())
    }

    /// `len` zero elements (all-zero bits, which is [`Element::ZERO`]).
    fn zeros<T: Element>(&self, len: usize) -> Result<Self::Storage<T>>;

    /// `len` elements with unspecified contents.
    ///
    /// # Safety
    ///
    /// The caller writes every element before reading any (a backend whose uninitialised
    /// memory could be an invalid value, e.g. a non-0/1 `bool` copied to the host, relies on
    /// it). A backend that cannot hand out uninitialised memory safely returns zeros.
    unsafe fn alloc_uninit<T: Element>(&self, len: usize) -> Result<Self::Storage<T>>;

    /// Sets every element of `dst` to `value`.
    fn fill<T: Element>(&self, dst: &mut TensorViewMut<'_, T, Self>, value: T) -> Result<()>;

    /// `dst[i] = op(a[i])`.
    fn unary<T: Element, O: UnaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, O::Output, Self>,
    ) -> Result<()>;

    /// `dst[i] = op(a[i], b[i])`.
    fn binary<T: Element, O: BinaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Self>,
        b: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, O::Output, Self>,
    ) -> Result<()>;

    /// `dst[i] = op(a[i], b[i], c[i])`.
    fn ternary<A: Element, T: Element, O: TernaryOp<A, T>>(
        &self,
        op: O,
        a: &TensorView<'_, A, Self>,
        b: &TensorView<'_, T, Self>,
        c: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, O::Output, Self>,
    ) -> Result<()>;

    // ---- Reductions (`crate::tensor::reduce`, `crate::ops::reduce`, docs/REDUCTIONS.md) ----

    /// Reduces `src` over its dims `dims` (in any order, none twice) with `op`: every element
    /// of `dst`, whose shape is `src`'s without `dims`, is written once with `op` folded over
    /// the elements of `src` at its index
    /// ([`ReduceGeometry`](crate::layout::reduce::ReduceGeometry) says which), and never read.
    /// An op without identity over dims holding no elements fails (for a non-empty `dst`).
    ///
    /// # Errors
    /// [`LayoutError`](crate::error::LayoutError)s from
    /// [`ReduceGeometry::new`](crate::layout::reduce::ReduceGeometry::new) (bad dims, a
    /// `dst` of the wrong shape, `EmptyReduction`), the device's errors.
    fn reduce<T: Element, R: Reduction<T>>(
        &self,
        op: R,
        src: &TensorView<'_, T, Self>,
        dims: &[usize],
        dst: &mut TensorViewMut<'_, R::Output, Self>,
    ) -> Result<()>;

    /// The element at index `offset` of `data`, copied to the host (waiting for the work that
    /// writes it).
    ///
    /// # Errors
    /// [`LayoutError::OutOfStorage`](crate::error::LayoutError::OutOfStorage) for an offset
    /// past the storage; the device's copy errors.
    fn read_element<T: Element>(&self, data: &Self::Slice<T>, offset: usize) -> Result<T>;

    /// `dst[i] = src[i]`.
    fn copy<T: Element>(
        &self,
        src: &TensorView<'_, T, Self>,
        dst: &mut TensorViewMut<'_, T, Self>,
    ) -> Result<()> {
        self.unary(Identity, src, dst)
    }

    /// `dst[i] = op(dst[i])`. Default: through a contiguous copy of `dst`.
    fn unary_inplace<T: Element, O: UnaryOp<T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Self>,
    ) -> Result<()> {
        let tmp = self.unary_new(Identity, &dst.view())?;
        let tmp = TensorView::new(Self::slice(&tmp), Layout::contiguous(dst.shape())?, self)?;
        self.unary(op, &tmp, dst)
    }

    /// `dst[i] = op(dst[i], b[i])`. Default: through a contiguous copy of `dst`.
    fn binary_inplace<T: Element, O: BinaryOp<T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Self>,
        b: &TensorView<'_, T, Self>,
    ) -> Result<()> {
        let tmp = self.unary_new(Identity, &dst.view())?;
        let tmp = TensorView::new(Self::slice(&tmp), Layout::contiguous(dst.shape())?, self)?;
        self.binary(op, &tmp, b, dst)
    }

    /// `dst[i] = op(dst[i], b[i], c[i])`. Default: through a contiguous copy of `dst`.
    fn ternary_inplace<T: Element, O: TernaryOp<T, T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Self>,
        b: &TensorView<'_, T, Self>,
        c: &TensorView<'_, T, Self>,
    ) -> Result<()> {
        let tmp = self.unary_new(Identity, &dst.view())?;
        let tmp = TensorView::new(Self::slice(&tmp), Layout::contiguous(dst.shape())?, self)?;
        self.ternary(op, &tmp, b, c, dst)
    }

    /// New storage holding `op(a)` in row-major order of `a`'s shape.
    fn unary_new<T: Element, O: UnaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Self>,
    ) -> Result<Self::Storage<O::Output>> {
        let layout = Layout::contiguous(a.shape())?;
        // SAFETY: `unary` returning `Ok` has written every element of `layout`, which covers
        // the whole storage, without reading it (the trait's safety contract); on error the
        // storage is dropped unread.
        let mut out = unsafe { self.alloc_uninit(layout.numel())? };
        let mut view = TensorViewMut::new(Self::slice_mut(&mut out), layout, self)?;
        self.unary(op, a, &mut view)?;
        Ok(out)
    }

    /// New storage holding `op(a, b)` in row-major order (`a` and `b` of one shape).
    fn binary_new<T: Element, O: BinaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Self>,
        b: &TensorView<'_, T, Self>,
    ) -> Result<Self::Storage<O::Output>> {
        let layout = Layout::contiguous(a.shape())?;
        // SAFETY: as in `unary_new`: `binary` writes the whole storage or fails.
        let mut out = unsafe { self.alloc_uninit(layout.numel())? };
        let mut view = TensorViewMut::new(Self::slice_mut(&mut out), layout, self)?;
        self.binary(op, a, b, &mut view)?;
        Ok(out)
    }

    /// New storage holding `op(a, b, c)` in row-major order (all of one shape).
    fn ternary_new<A: Element, T: Element, O: TernaryOp<A, T>>(
        &self,
        op: O,
        a: &TensorView<'_, A, Self>,
        b: &TensorView<'_, T, Self>,
        c: &TensorView<'_, T, Self>,
    ) -> Result<Self::Storage<O::Output>> {
        let layout = Layout::contiguous(a.shape())?;
        // SAFETY: as in `unary_new`: `ternary` writes the whole storage or fails.
        let mut out = unsafe { self.alloc_uninit(layout.numel())? };
        let mut view = TensorViewMut::new(Self::slice_mut(&mut out), layout, self)?;
        self.ternary(op, a, b, c, &mut view)?;
        Ok(out)
    }
}

/// New storage of `len` elements, every one `value`: one write pass ([`Backend::fill`] over
/// uninitialised memory), where zeros then a fill would write twice.
pub(crate) fn full_storage<T: Element, D: Backend>(
    device: &D,
    len: usize,
    value: T,
) -> Result<D::Storage<T>> {
    let layout = Layout::contiguous(&[len])?;
    // SAFETY: `fill` returning `Ok` has written every element of `layout`, which covers the
    // whole storage, without reading it (the trait's safety contract); on error the storage
    // is dropped unread.
    let mut out = unsafe { device.alloc_uninit(len)? };
    let mut view = TensorViewMut::new(D::slice_mut(&mut out), layout, device)?;
    device.fill(&mut view, value)?;
    Ok(out)
}

pub(crate) mod sealed {
    use super::*;

    /// The part of [`Backend`] that fused expressions run through, private to the crate: the
    /// storage handles a code generator reads and writes through, and the call that runs a
    /// fused job. A job ([`Fused`]) is made only by the evaluators of
    /// [`crate::tensor::expr`], after checking shapes, outputs and current values, so no
    /// caller can hand an engine a program or a handle of its own.
    pub trait FusedBackend: Sized {
        /// Issue 28: whether [`FusedBackend::fused`] runs a program with one row stage
        /// (`Instr::Row`, no current value) as one kernel. Otherwise the evaluator
        /// evaluates every row stage into a tensor first, and the engine never sees one.
        const ROW_STAGE_KERNEL: bool = false;

        /// An engine's read handle to a fused expression's leaf storage (`()` for an engine that
        /// evaluates fused expressions on the host).
        type LeafHandle<'s>
        where
            Self: 's;

        /// An engine's write handle to a fused expression's output storage.
        type OutHandle<'s>
        where
            Self: 's;

        /// The read handle of `storage`.
        fn leaf_handle<'s, T: Element>(
            storage: &'s <Self as Backend>::Slice<T>,
        ) -> Self::LeafHandle<'s>
        where
            Self: Backend;

        /// A key equal for two borrows of one storage and different for storages alive at once
        /// (an address and a length), so a fused kernel loads a tensor it reads twice once.
        fn leaf_key<T: Element>(storage: &<Self as Backend>::Slice<T>) -> (u64, usize)
        where
            Self: Backend;

        /// The write handle of `storage`.
        fn out_handle<'s, T: Element>(
            storage: &'s mut <Self as Backend>::Slice<T>,
        ) -> Self::OutHandle<'s>
        where
            Self: Backend;

        /// Evaluates fused expressions into their outputs
        /// ([`crate::tensor::expr::eval_into`]): every element of every output written once,
        /// from the expressions' leaves (broadcast to the outputs' shape, which the caller
        /// checked), never reading an output except where the program reads its current value
        /// (`Instr::Current`, an in-place [`crate::tensor::expr::update`], whose outputs hold
        /// valid values): there only the element about to be written, through the output's
        /// layout, before it is written; otherwise the same contract as [`Backend::unary`] for
        /// each output.
        fn fused<F: Fused<Self>>(&self, job: &mut F) -> Result<()>
        where
            Self: Backend;
    }

    /// Expressions with the views they write, ready for an engine: what
    /// [`FusedBackend::fused`] evaluates. Only `Assignment` (`tensor/expr/eval.rs`)
    /// implements it, and only the evaluators of [`crate::tensor::expr`] make one, after
    /// checking the shapes, the outputs and the current values.
    pub trait Fused<D: Backend> {
        /// The program for a code generator, with the outputs' element types, layouts and
        /// handles in output order.
        fn program(&mut self) -> (Program<'_, D>, FusedOutputs<'_, D>);

        /// One pass over the elements on the host: every output element written once, from
        /// the expressions evaluated at that element.
        fn run_host(&mut self) -> Result<()>
        where
            D: HostBackend;
    }

    /// A fused expression's program on engine `D`: its leaves hold `D`'s read handles.
    pub type Program<'s, D> = ProgramOf<'s, <D as FusedBackend>::LeafHandle<'s>>;

    /// An output of a fused program.
    pub struct FusedOutput<'s, D: Backend> {
        /// Its element type.
        pub dtype: crate::element::DType,
        /// Its layout.
        pub layout: Layout,
        /// The engine's handle to its storage.
        pub handle: D::OutHandle<'s>,
    }

    /// The outputs of a fused program, in output order.
    pub type FusedOutputs<'s, D> = InlineList<FusedOutput<'s, D>, MAX_OUTPUTS>;
}

/// Checks that every layout of one backend call has the shape of the first.
pub(crate) fn check_same_shape(op: &'static str, layouts: &[&Layout]) -> Result<()> {
    let expected = layouts.first().map_or(&[][..], |l| l.shape());
    for l in layouts {
        if l.shape() != expected {
            return Err(crate::error::LayoutError::ShapeMismatch {
                op,
                expected: expected.to_vec(),
                got: l.shape().to_vec(),
            }
            .into());
        }
    }
    Ok(())
}

/// A device whose memory the host reads and writes directly (the [`crate::device::Cpu`]):
/// what host evaluation of fused expressions, element access (`get`, `set`, indexing),
/// iteration, `to_vec` and `as_slice` need.
///
/// The host-only methods of [`Tensor`] are written for every device
/// with a `where D: HostBackend` bound, so calling one on a GPU tensor is a compile error
/// that says to copy it to the host with `.to_cpu()` first.
#[diagnostic::on_unimplemented(
    message = "this needs the tensor's elements in host memory, but it lives on `{Self}`: call `.to_cpu()` first",
    label = "host-only call on a `{Self}` tensor",
    note = "element access, iteration, slices and `to_vec` read host memory; `t.to_cpu()?` copies a GPU tensor to the host (ops such as `add`, `exp`, `cat` and printing work on every device)"
)]
pub trait HostBackend: Backend {
    /// The storage as a host slice.
    fn host<T: Element>(storage: &Self::Slice<T>) -> &[T];
    /// The storage as a writable host slice.
    fn host_mut<T: Element>(storage: &mut Self::Slice<T>) -> &mut [T];
    /// The owned storage as a `Vec`, without copying.
    fn into_host_vec<T: Element>(storage: Self::Storage<T>) -> Vec<T>;
}

/// A device that copies to and from host memory: what printing, [`Tensor::item`] and the
/// constructors built on the host (`arange_step_on`, `linspace_on`, `rand_on`, ...) need on
/// every device. A supertrait of [`Backend`], so every engine has it.
///
/// [`Tensor::item`]: crate::tensor::Tensor::item
pub trait Transfer: Device {
    /// The elements of `src` in row-major (logical) order, on the host (a copy; on a GPU,
    /// made on its default stream and waited for). Refused while this thread captures a
    /// CUDA graph, before any work is queued.
    fn to_host<T: Element>(&self, src: &TensorView<'_, T, Self>) -> Result<Vec<T>>
    where
        Self: Backend;

    /// New storage on this device holding `data` (on a GPU, copied on its default stream
    /// and waited for).
    fn host_to_storage<T: Element>(&self, data: &[T]) -> Result<Self::Storage<T>>;

    /// Whether a copy to the host may start now: on a GPU, refused while this thread
    /// captures a CUDA graph (checked before any work is queued, so that printing inside a
    /// capture records nothing into it). The CPU always may.
    fn check_host_copy(&self) -> Result<()> {
        Ok(())
    }

    /// [`Transfer::host_to_storage`] of an owned buffer (the CPU keeps it without copying).
    fn host_vec_to_storage<T: Element>(&self, data: Vec<T>) -> Result<Self::Storage<T>> {
        self.host_to_storage(&data)
    }
}
