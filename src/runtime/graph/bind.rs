//! What a capture binds and returns: [`Bound`] (borrowed tensors the user refills between
//! replays) and [`Outputs`] (tensors the closure allocated, owned by the graph).

use std::sync::Arc;

use super::pool::GraphPool;
use crate::element::Element;
use crate::error::Error;
use crate::runtime::buffer::GpuStorage;
use crate::runtime::device::Gpu;
use crate::runtime::stream::Stream;
use crate::tensor::{Tensor, TensorViewMut};

pub(crate) mod sealed {
    use super::*;

    /// A device buffer with its element type erased, for the capture's checks and the
    /// replay's stream order.
    pub trait Erased {
        /// The device address (0 for an empty buffer).
        fn addr(&self) -> u64;
        /// The GPU the memory lives on.
        fn gpu(&self) -> &Gpu;
        /// Whether the memory came from `pool`.
        fn in_pool(&self, pool: *const ()) -> bool;
        /// Orders a read on `stream` (`GpuStorage::access_read`).
        fn order_read(&self, op: &'static str, stream: &Stream) -> Result<(), Error>;
        /// Orders a write on `stream` (`GpuStorage::access_write`).
        fn order_write(&mut self, op: &'static str, stream: &Stream) -> Result<(), Error>;
    }

    /// One bound buffer: read-only (`&Tensor`) or writable (`&mut Tensor`).
    pub enum Slot<'s> {
        /// Bound as `&Tensor`: the graph may only read it.
        Read(&'s dyn Erased),
        /// Bound as `&mut Tensor`.
        Write(&'s mut dyn Erased),
    }

    /// Lists the buffers of a [`Bound`](super::Bound).
    pub trait BoundBuffers {
        /// Pushes one slot per bound tensor.
        fn slots<'s>(&'s mut self, out: &mut Vec<Slot<'s>>);
    }

    /// Lists the buffers of an [`Outputs`](super::Outputs).
    pub trait OutputBuffers {
        /// Pushes every output buffer.
        fn buffers<'s>(&'s mut self, out: &mut Vec<&'s mut dyn Erased>);
    }
}

use sealed::{BoundBuffers, Erased, OutputBuffers, Slot};

impl<T: Element> Erased for GpuStorage<T> {
    fn addr(&self) -> u64 {
        self.device_ptr()
    }

    fn gpu(&self) -> &Gpu {
        GpuStorage::gpu(self)
    }

    fn in_pool(&self, pool: *const ()) -> bool {
        self.graph_pool()
            .is_some_and(|p| Arc::as_ptr(p).cast::<()>() == pool)
    }

    fn order_read(&self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access_read(op, stream)
    }

    fn order_write(&mut self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access_write(op, stream)
    }
}

/// The pool's identity for [`Erased::in_pool`].
pub(crate) fn pool_id(pool: &Arc<GraphPool>) -> *const () {
    Arc::as_ptr(pool).cast::<()>()
}

/// The tensors a capture binds: a `&mut Tensor<T, Gpu>` (read and written by the graph), a
/// `&Tensor<T, Gpu>` (only read), `()`, or a tuple of up to eight of them.
///
/// A [`Graph`](super::Graph) holds the bound value, so the borrows last as long as the graph:
/// a bound tensor cannot be dropped, moved or replaced while the graph can replay (a compile
/// error). The closure, and [`Graph::bound_mut`](super::Graph::bound_mut) between replays,
/// get [views](BoundView::View) of them: writable views for `&mut` tensors, which let their
/// contents be refilled but not their storage be swapped.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be bound to a CUDA graph",
    label = "expected `&mut Tensor<T, Gpu>`, `&Tensor<T, Gpu>`, `()` or a tuple of them",
    note = "bind GPU tensors by reference, several as a tuple: `gpu.capture((&mut x, &w), |(x, w)| ...)`; the graph holds the borrows and lends views of them to the closure and, between replays, through `graph.bound_mut()`",
    note = "a host tensor cannot be bound: copy it first with `.to_gpu(&gpu)?`; a tensor by value, a view or an array cannot either: bind the owning tensors as `&mut x` / `&x` in a tuple"
)]
pub trait Bound: BoundBuffers + for<'v> BoundView<'v> {}

/// The views of a [`Bound`] borrowed for `'v` (a lifetime-generic trait rather than a generic
/// associated type, so that closures can take the views for any borrow).
pub trait BoundView<'v> {
    /// A [`TensorViewMut`] for `&mut Tensor`, a `&Tensor` for `&Tensor`, tuples of those.
    type View;

    /// Views of the bound tensors.
    fn view(&'v mut self) -> Self::View;
}

impl<T: Element> BoundBuffers for &mut Tensor<T, Gpu> {
    fn slots<'s>(&'s mut self, out: &mut Vec<Slot<'s>>) {
        out.push(Slot::Write(self.storage_mut_and_layout().0));
    }
}

impl<'v, T: Element> BoundView<'v> for &mut Tensor<T, Gpu> {
    type View = TensorViewMut<'v, T, Gpu>;

    fn view(&'v mut self) -> TensorViewMut<'v, T, Gpu> {
        self.view_mut()
    }
}

impl<T: Element> Bound for &mut Tensor<T, Gpu> {}

impl<T: Element> BoundBuffers for &Tensor<T, Gpu> {
    fn slots<'s>(&'s mut self, out: &mut Vec<Slot<'s>>) {
        out.push(Slot::Read(self.storage()));
    }
}

impl<'v, T: Element> BoundView<'v> for &Tensor<T, Gpu> {
    type View = &'v Tensor<T, Gpu>;

    fn view(&'v mut self) -> &'v Tensor<T, Gpu> {
        self
    }
}

impl<T: Element> Bound for &Tensor<T, Gpu> {}

impl BoundBuffers for () {
    fn slots<'s>(&'s mut self, _out: &mut Vec<Slot<'s>>) {}
}

impl BoundView<'_> for () {
    type View = ();

    fn view(&mut self) {}
}

impl Bound for () {}

/// What a capture's closure returns: `()`, a `Tensor<T, Gpu>`, a `Vec` of them, or a tuple of
/// up to eight outputs. The graph owns them, and every replay writes them again.
///
/// Every buffer allocated inside the capture must be dropped inside the closure or be part of
/// the outputs; anything else fails the capture with
/// [`GpuError::CaptureEscape`](crate::error::GpuError::CaptureEscape).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the output of a CUDA graph",
    label = "the capture closure returns `Ok(outputs)`: `()`, a `Tensor<T, Gpu>` it computed, or a `Vec` or tuple of them",
    note = "return the GPU tensors the closure computed, owned; read them after each `graph.replay()` through `graph.outputs()` (`graph.outputs().to_cpu()?`, `graph.outputs().item()?`): host copies and `item()` cannot be recorded into a graph",
    note = "a bound tensor is not an output: the graph already holds it, and `graph.bound_mut()` lends it between replays"
)]
pub trait Outputs: OutputBuffers {}

impl OutputBuffers for () {
    fn buffers<'s>(&'s mut self, _out: &mut Vec<&'s mut dyn Erased>) {}
}

impl Outputs for () {}

impl<T: Element> OutputBuffers for Tensor<T, Gpu> {
    fn buffers<'s>(&'s mut self, out: &mut Vec<&'s mut dyn Erased>) {
        out.push(self.storage_mut_and_layout().0);
    }
}

impl<T: Element> Outputs for Tensor<T, Gpu> {}

impl<O: Outputs> OutputBuffers for Vec<O> {
    fn buffers<'s>(&'s mut self, out: &mut Vec<&'s mut dyn Erased>) {
        for o in self {
            o.buffers(out);
        }
    }
}

impl<O: Outputs> Outputs for Vec<O> {}

macro_rules! tuples {
    ($(($($name:ident $idx:tt),+))+) => {$(
        impl<$($name: Bound),+> BoundBuffers for ($($name,)+) {
            fn slots<'s>(&'s mut self, out: &mut Vec<Slot<'s>>) {
                $(self.$idx.slots(out);)+
            }
        }

        impl<'v, $($name: BoundView<'v>),+> BoundView<'v> for ($($name,)+) {
            type View = ($($name::View,)+);

            fn view(&'v mut self) -> Self::View {
                ($(self.$idx.view(),)+)
            }
        }

        impl<$($name: Bound),+> Bound for ($($name,)+) {}

        impl<$($name: Outputs),+> OutputBuffers for ($($name,)+) {
            fn buffers<'s>(&'s mut self, out: &mut Vec<&'s mut dyn Erased>) {
                $(self.$idx.buffers(out);)+
            }
        }

        impl<$($name: Outputs),+> Outputs for ($($name,)+) {}
    )+};
}

tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}
