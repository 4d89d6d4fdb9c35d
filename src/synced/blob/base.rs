//! The [`Blob`] type: its fields and invariants, the read-only accessors, and the pieces its
//! other files share (a side's CPU prefix and GPU copy, splitting one side off to put a new
//! one back). Constructors and reshapes are in `construct.rs`, state transitions in
//! `transitions.rs`, math in `math.rs`, tensor views in `views.rs`.

use super::shape::BlobShape;
use super::side::private::SideImpl;
use super::side::{BlobSide, Frozen, SideState};
use crate::element::Element;
use crate::runtime::{Gpu, GpuStorage, Stream};
use crate::synced::accel::GpuAccel;
use crate::synced::host::OwnedHost;
use crate::synced::raw::{RawSynced, TransferStats};
use crate::synced::state::{
    CpuReadable, GpuReadable, Head, HeadAtCpu, HeadAtGpu, Synced, Uninitialized,
};

/// A side's run-time body: the memory behind either state of a side.
pub(super) type Raw<T> = RawSynced<T, OwnedHost<T>, GpuAccel>;

/// Caffe's `Blob`: a shape, a data memory in state `D` and a diff memory in state `G`.
///
/// `Blob<f32, HeadAtCpu>` is a blob whose data and diff are both current on the CPU (`G`
/// defaults to `D`); `Blob<f32>` is a new one, `Uninitialized`, the state every constructor
/// is found on (`Blob::<f32>::new(..)`). Reads need the side current where they read,
/// writes need it to be the head, and the calls that change a state consume the blob and
/// return it in the next one; the misuse is a compile error that names the call to make.
///
/// ```
/// use typestate_tensor::synced::{Blob, HeadAtCpu, Uninitialized};
///
/// # fn main() -> typestate_tensor::Result<()> {
/// let fresh: Blob<f32> = Blob::new(&[2, 3])?; // nothing allocated yet
/// let _: &Blob<f32, Uninitialized> = &fresh;
/// // Data from a vector; the diff made writable on the CPU (zero-filled).
/// let mut w: Blob<f32, HeadAtCpu> = Blob::from_vec(&[2, 2], vec![1.0, 2.0, 3.0, 4.0])?
///     .into_cpu_diff_mut()?;
/// assert_eq!(w.shape().dim(-1)?, 2);
/// assert_eq!(w.asum_data()?, 10.0);
/// // A solver step through `&mut`: weight decay writes the diff while reading the data
/// // (a split borrow), then `data -= lr * diff`, both keeping the blob's type.
/// {
///     let (mut g, data) = w.cpu_diff_mut_with_data()?;
///     g.update(|g| g + data.lazy() * 0.5f32)?; // diff += 0.5 * data
/// }
/// w.scale_diff_in_place(0.5)?; // the learning rate
/// w.update_in_place()?;
/// assert_eq!(w.cpu_data(), &[0.75, 1.5, 2.25, 3.0]);
/// // w.gpu_data();                    // does not compile: the GPU copy is not current
/// # Ok(())
/// # }
/// ```
///
/// On a GPU, [`Blob::with_gpu`] ties both memories to it and `into_gpu_data()` /
/// `into_gpu_diff_mut()` move the heads there; blobs in different states share a collection
/// once erased ([`DynBlob`](crate::synced::DynBlob)).
///
/// Invariants:
/// 1. Both memories hold at least `shape.count()` elements; the blob uses the first
///    `count()`. The smaller of their lengths is the [`capacity`](Self::capacity).
/// 2. Each side's state is the truth about that memory (see [`state`](crate::synced::state)), or the side
///    is [`Frozen`] and shared read-only.
/// 3. Both memories are tied to the same GPU, or both to none.
pub struct Blob<T: Element, D: BlobSide = Uninitialized, G: BlobSide = D> {
    pub(super) shape: BlobShape,
    pub(super) data: <D as SideImpl>::Slot<T>,
    pub(super) diff: <G as SideImpl>::Slot<T>,
}

impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    pub(super) fn data_raw(&self) -> &Raw<T> {
        D::raw(&self.data)
    }

    pub(super) fn diff_raw(&self) -> &Raw<T> {
        G::raw(&self.diff)
    }

    /// The shape, with Caffe's axis and offset arithmetic.
    pub fn shape(&self) -> &BlobShape {
        &self.shape
    }

    /// Number of elements (Caffe `count()`).
    pub fn count(&self) -> usize {
        self.shape.count()
    }

    /// Number of axes (Caffe `num_axes()`).
    pub fn num_axes(&self) -> usize {
        self.shape.num_axes()
    }

    /// Elements the memories hold (Caffe `capacity_`): reshapes up to it keep the memories.
    pub fn capacity(&self) -> usize {
        self.data_raw().len().min(self.diff_raw().len())
    }

    /// The data side's head at run time.
    pub fn data_head(&self) -> Head {
        D::HEAD
    }

    /// The diff side's head at run time.
    pub fn diff_head(&self) -> Head {
        G::HEAD
    }

    /// Copies and allocations made by the data memory.
    pub fn data_stats(&self) -> TransferStats {
        self.data_raw().stats()
    }

    /// Copies and allocations made by the diff memory.
    pub fn diff_stats(&self) -> TransferStats {
        self.diff_raw().stats()
    }

    /// Whether the blob is tied to a GPU.
    pub fn has_gpu(&self) -> bool {
        self.data_raw().accel().is_some()
    }

    /// The data on the CPU (Caffe `cpu_data()` once current): `count()` elements.
    pub fn cpu_data(&self) -> &[T]
    where
        D::Base: CpuReadable,
    {
        cpu_prefix(self.data_raw(), self.count())
    }

    /// The diff on the CPU (Caffe `cpu_diff()` once current): `count()` elements.
    pub fn cpu_diff(&self) -> &[T]
    where
        G::Base: CpuReadable,
    {
        cpu_prefix(self.diff_raw(), self.count())
    }

    /// The data on the GPU (Caffe `gpu_data()` once current). The storage holds
    /// [`capacity()`](Self::capacity) elements; the blob's are the first `count()`.
    pub fn gpu_data(&self) -> &GpuStorage<T>
    where
        D::Base: GpuReadable,
    {
        gpu_of(self.data_raw())
    }

    /// The diff on the GPU (Caffe `gpu_diff()` once current); see [`gpu_data`](Self::gpu_data).
    pub fn gpu_diff(&self) -> &GpuStorage<T>
    where
        G::Base: GpuReadable,
    {
        gpu_of(self.diff_raw())
    }

    /// The GPU the blob is tied to, if any.
    pub fn gpu_device(&self) -> Option<&Gpu> {
        self.data_raw().accel().map(GpuAccel::gpu)
    }

    /// The stream the blob's transitions copy on, if it is tied to a GPU.
    pub fn stream(&self) -> Option<&Stream> {
        self.data_raw().accel().map(GpuAccel::stream)
    }
}

/// The first `count` elements of a CPU copy the caller's state says is current.
pub(crate) fn cpu_prefix<T: Element>(raw: &Raw<T>, count: usize) -> &[T] {
    match raw.host().and_then(|h| h.get(..count)) {
        Some(h) => h,
        None => unreachable!("invariants 1 and 2: a readable side holds at least count elements"),
    }
}

/// The device copy of a side the caller's state says is current.
pub(crate) fn gpu_of<T: Element>(raw: &Raw<T>) -> &GpuStorage<T> {
    match raw.device() {
        Some(d) => d,
        None => unreachable!("invariant 2: a GPU-readable side has a GPU copy"),
    }
}

/// The GPU a GPU-side state's memory is tied to, queuing on the memory's stream.
pub(crate) fn gpu_of_raw<T: Element>(raw: &Raw<T>) -> &Gpu {
    match raw.accel() {
        Some(a) => a.gpu(),
        None => unreachable!("invariant 2: a GPU-side state implies a GPU"),
    }
}

/// The blob split into one side's memory and the rest, to be put back with a new side.
pub(super) struct WithoutData<T: Element, G: BlobSide> {
    pub(super) shape: BlobShape,
    pub(super) diff: <G as SideImpl>::Slot<T>,
}

pub(super) struct WithoutDiff<T: Element, D: BlobSide> {
    pub(super) shape: BlobShape,
    pub(super) data: <D as SideImpl>::Slot<T>,
}

impl<T: Element, G: BlobSide> WithoutData<T, G> {
    pub(super) fn put_data<D2: BlobSide>(self, data: <D2 as SideImpl>::Slot<T>) -> Blob<T, D2, G> {
        Blob {
            shape: self.shape,
            data,
            diff: self.diff,
        }
    }
}

impl<T: Element, D: BlobSide> WithoutDiff<T, D> {
    pub(super) fn put_diff<G2: BlobSide>(self, diff: <G2 as SideImpl>::Slot<T>) -> Blob<T, D, G2> {
        Blob {
            shape: self.shape,
            data: self.data,
            diff,
        }
    }
}

impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    pub(super) fn split_data(self) -> (<D as SideImpl>::Slot<T>, WithoutData<T, G>) {
        (
            self.data,
            WithoutData {
                shape: self.shape,
                diff: self.diff,
            },
        )
    }

    pub(super) fn split_diff(self) -> (<G as SideImpl>::Slot<T>, WithoutDiff<T, D>) {
        (
            self.diff,
            WithoutDiff {
                shape: self.shape,
                data: self.data,
            },
        )
    }
}

/// Dtype, shape, each side's state (as its type is written) and capacity:
/// `Blob { dtype: F32, shape: "2 3 (6)", data: HeadAtCpu, diff: Uninitialized, capacity: 6 }`.
impl<T: Element, D: BlobSide, G: BlobSide> std::fmt::Debug for Blob<T, D, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blob")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.shape.to_string())
            .field("data", &format_args!("{}", SideState::of::<D>().name()))
            .field("diff", &format_args!("{}", SideState::of::<G>().name()))
            .field("capacity", &self.capacity())
            .finish()
    }
}

static_assertions::assert_eq_size!(
    Blob<f32, Uninitialized>,
    Blob<f32, HeadAtCpu>,
    Blob<f32, HeadAtGpu>,
    Blob<f32, Synced>,
    Blob<f32, HeadAtCpu, Synced>,
    Blob<f32, Frozen<HeadAtCpu>, HeadAtGpu>,
);
static_assertions::assert_impl_all!(Blob<f32, Synced>: Send, Sync);
static_assertions::assert_impl_all!(Blob<f64, Frozen<Synced>>: Send, Sync);
