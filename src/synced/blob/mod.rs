//! [`Blob`]: Caffe's N-D array of data and gradients (diff), each a synced memory with its
//! own head state in the type.
//!
//! `Blob<T, D, G>` has the data side in state `D` and the diff side in state `G` (which
//! defaults to `D`), so `Blob<f32, HeadAtCpu>` is a blob whose data and diff are both current
//! on the CPU. A side may also be [`Frozen`]: shared read-only with other blobs (Caffe's
//! `ShareData` / `ShareDiff`).
//!
//! | Caffe | here |
//! |---|---|
//! | `Blob(shape)`, `Blob(n, c, h, w)` | [`Blob::new`], [`Blob::legacy`] (CPU-only) |
//! | `cpu_data()`, `gpu_data()` | [`into_cpu_data()`](Blob::into_cpu_data) / `into_gpu_data()`, then [`cpu_data()`](Blob::cpu_data) / `gpu_data()` |
//! | `mutable_cpu_data()` | [`into_cpu_data_mut()`](Blob::into_cpu_data_mut), then [`cpu_data_mut()`](Blob::cpu_data_mut) |
//! | `cpu_diff()`, `mutable_cpu_diff()`, ... | the same with `diff` |
//! | `Reshape(shape)` | [`reshape`](Blob::reshape) (may reallocate: returns [`Reshaped`]), [`reshape_in_place`](Blob::reshape_in_place) |
//! | `ShareData(other)`, `ShareDiff(other)` | [`freeze_data`](Blob::freeze_data) + [`with_shared_data`](Blob::with_shared_data) (and `diff`) |
//! | `shape()`, `count()`, `num()`, `offset()`, `CanonicalAxisIndex()` | [`shape()`](Blob::shape) ([`BlobShape`]) |
//! | `Update()`, `scale_data()`, `asum_diff()`, ... | [`update()`](Blob::update), [`scale_data()`](Blob::scale_data), [`asum_diff()`](Blob::asum_diff), ...; through `&mut` where the state stays: [`update_in_place()`](Blob::update_in_place), [`scale_data_in_place()`](Blob::scale_data_in_place), [`sgd_update_in_place()`](Blob::sgd_update_in_place) |
//! | a net's blobs in any state, Caffe's run-time calls | [`DynBlob`] (`erase()`, then `cpu_data()`, `update()`, ...; [`try_into_blob`](DynBlob::try_into_blob) back) |

mod collective;
mod dyn_blob;
mod math;
mod peer;
mod shape;
mod side;
mod views;

pub use collective::CollectiveSide;
pub use dyn_blob::{DynBlob, SideState, TypedBlobOnly};
pub use math::{BlobElement, DiffOnCpu, DiffOnGpu, InPlaceMath, MathPlace, MathSide, UpdateWith};
pub use shape::BlobShape;
pub use side::{BlobSide, Frozen, OwnedSide};

use side::private::SideImpl;

use super::accel::GpuAccel;
use super::raw::{RawSynced, TransferStats};
use super::shared::{SameElement, SharedMemory};
use super::state::{
    CpuReadable, CpuWritable, GpuReadable, GpuWritable, Head, HeadAtCpu, HeadAtGpu, HeadState,
    Settled, ToCpu, ToGpu, Uninitialized,
};
use super::synced_memory::SyncedMemory;
use super::transition_error::TransitionError;
use super::OwnedHost;
use crate::element::Element;
use crate::error::{Error, GpuError, LayoutError, StateError};
use crate::runtime::{Gpu, GpuStorage, GpuStorageMut, Stream};

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
/// once erased ([`DynBlob`]).
///
/// Invariants:
/// 1. Both memories hold at least `shape.count()` elements; the blob uses the first
///    `count()`. The smaller of their lengths is the [`capacity`](Self::capacity).
/// 2. Each side's state is the truth about that memory (see [`super::state`]), or the side
///    is [`Frozen`] and shared read-only.
/// 3. Both memories are tied to the same GPU, or both to none.
pub struct Blob<T: Element, D: BlobSide = Uninitialized, G: BlobSide = D> {
    shape: BlobShape,
    data: <D as SideImpl>::Slot<T>,
    diff: <G as SideImpl>::Slot<T>,
}

/// The result of [`Blob::reshape`]: Caffe keeps the memories when the new count fits the
/// capacity and allocates new, uninitialized ones otherwise.
#[derive(Debug)]
pub enum Reshaped<T: Element, D: BlobSide, G: BlobSide> {
    /// The count fit: same memories, same states.
    InPlace(Blob<T, D, G>),
    /// The count grew past the capacity: new memories, nothing allocated yet.
    Reallocated(Blob<T, Uninitialized>),
}

impl<T: Element> Reshaped<T, Uninitialized, Uninitialized> {
    /// An uninitialized blob reshapes to an uninitialized blob either way.
    pub fn into_blob(self) -> Blob<T, Uninitialized> {
        match self {
            Reshaped::InPlace(b) | Reshaped::Reallocated(b) => b,
        }
    }
}

/// Fresh, unallocated memory of `len` elements tied to the GPU `like` is tied to.
fn fresh_like<T: Element>(
    op: &'static str,
    len: usize,
    like: &RawSynced<T, OwnedHost<T>, GpuAccel>,
) -> Result<SyncedMemory<T, Uninitialized>, Error> {
    Ok(SyncedMemory::from_raw(Box::new(RawSynced::new(
        op,
        len,
        OwnedHost::empty(),
        like.accel().cloned(),
    )?)))
}

/// The constructors, all on `Blob<T>` (the default states, `Uninitialized`), so that
/// `Blob::<f32>::new(..)` and `Blob::<f32>::from_vec(..)` name them; each returns the state it
/// makes.
impl<T: Element> Blob<T, Uninitialized> {
    /// A CPU-only blob of the given shape (Caffe `Blob(shape)`); nothing is allocated until a
    /// side is first made readable.
    pub fn new(shape: &[usize]) -> Result<Self, Error> {
        Self::from_shape(BlobShape::new(shape)?)
    }

    /// A CPU-only blob whose data is `data` (row-major, `shape`'s count long); the diff is
    /// not allocated. A length mismatch hands `data` back.
    pub fn from_vec(
        shape: &[usize],
        data: Vec<T>,
    ) -> Result<Blob<T, HeadAtCpu, Uninitialized>, TransitionError<Vec<T>>> {
        let shape = match BlobShape::new(shape) {
            Ok(s) => s,
            Err(e) => return Err(TransitionError::new(data, e)),
        };
        if data.len() != shape.count() {
            let error = LayoutError::LengthMismatch {
                op: "Blob::from_vec",
                shape: shape.dims().to_vec(),
                expected: shape.count(),
                got: data.len(),
            };
            return Err(TransitionError::new(data, error));
        }
        let diff = match SyncedMemory::new(shape.count()) {
            Ok(d) => d,
            Err(e) => return Err(TransitionError::new(data, e)),
        };
        Ok(Blob {
            data: SyncedMemory::from_vec(data),
            diff,
            shape,
        })
    }

    /// A CPU-only `num x channels x height x width` blob (Caffe's legacy constructor).
    pub fn legacy(num: usize, channels: usize, height: usize, width: usize) -> Result<Self, Error> {
        Self::from_shape(BlobShape::legacy(num, channels, height, width)?)
    }

    /// Caffe's default `Blob()`: no axes, no elements.
    pub fn empty() -> Self {
        Blob {
            shape: BlobShape::empty(),
            data: SyncedMemory::from_raw(Box::new(RawSynced::from_host_buffer(
                OwnedHost::empty(),
                None,
            ))),
            diff: SyncedMemory::from_raw(Box::new(RawSynced::from_host_buffer(
                OwnedHost::empty(),
                None,
            ))),
        }
    }

    /// A blob of the given shape tied to `gpu` (Caffe's `Blob(shape)` in GPU mode); its
    /// transitions copy on the GPU's default stream.
    pub fn with_gpu(gpu: &Gpu, shape: &[usize]) -> Result<Self, Error> {
        let shape = BlobShape::new(shape)?;
        Ok(Blob {
            data: SyncedMemory::with_gpu(gpu, shape.count())?,
            diff: SyncedMemory::with_gpu(gpu, shape.count())?,
            shape,
        })
    }

    fn from_shape(shape: BlobShape) -> Result<Self, Error> {
        Ok(Blob {
            data: SyncedMemory::new(shape.count())?,
            diff: SyncedMemory::new(shape.count())?,
            shape,
        })
    }
}

impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    fn data_raw(&self) -> &RawSynced<T, OwnedHost<T>, GpuAccel> {
        D::raw(&self.data)
    }

    fn diff_raw(&self) -> &RawSynced<T, OwnedHost<T>, GpuAccel> {
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

    /// Changes the shape within the capacity, keeping the memories and their states (the
    /// case of Caffe's `Reshape` that does not reallocate); growing past the capacity is
    /// [`StateError::ExceedsCapacity`] (use [`reshape`](Self::reshape)).
    pub fn reshape_in_place(&mut self, shape: &[usize]) -> Result<(), Error> {
        let shape = BlobShape::new(shape)?;
        if shape.count() > self.capacity() {
            return Err(StateError::ExceedsCapacity {
                op: "Blob::reshape_in_place",
                requested: shape.count(),
                capacity: self.capacity(),
            }
            .into());
        }
        self.shape = shape;
        Ok(())
    }

    /// Caffe's `Reshape`: within the capacity the memories and states are kept
    /// ([`Reshaped::InPlace`]); past it both sides are replaced by new, unallocated memories
    /// of the new count, tied to the same GPU ([`Reshaped::Reallocated`]).
    pub fn reshape(mut self, shape: &[usize]) -> Result<Reshaped<T, D, G>, TransitionError<Self>> {
        const OP: &str = "Blob::reshape";
        let new = match BlobShape::new(shape) {
            Ok(s) => s,
            Err(e) => return Err(TransitionError::new(self, e)),
        };
        if new.count() <= self.capacity() {
            self.shape = new;
            return Ok(Reshaped::InPlace(self));
        }
        let fresh = fresh_like(OP, new.count(), self.data_raw())
            .and_then(|data| Ok((data, fresh_like(OP, new.count(), self.data_raw())?)));
        match fresh {
            Ok((data, diff)) => Ok(Reshaped::Reallocated(Blob {
                shape: new,
                data,
                diff,
            })),
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }

    /// Erases both sides' states for a collection of blobs (a net's).
    pub fn erase(self) -> DynBlob<T> {
        DynBlob::from_sides(
            self.shape,
            (D::HEAD, D::into_any(self.data)),
            (G::HEAD, G::into_any(self.diff)),
        )
    }
}

/// The first `count` elements of a CPU copy the caller's state says is current.
pub(super) fn cpu_prefix<T: Element>(
    raw: &RawSynced<T, OwnedHost<T>, GpuAccel>,
    count: usize,
) -> &[T] {
    match raw.host().and_then(|h| h.get(..count)) {
        Some(h) => h,
        None => unreachable!("invariants 1 and 2: a readable side holds at least count elements"),
    }
}

/// The device copy of a side the caller's state says is current.
pub(super) fn gpu_of<T: Element>(raw: &RawSynced<T, OwnedHost<T>, GpuAccel>) -> &GpuStorage<T> {
    match raw.device() {
        Some(d) => d,
        None => unreachable!("invariant 2: a GPU-readable side has a GPU copy"),
    }
}

/// Whether `shared` may replace a side of a blob of `count` elements tied to `gpu`
/// (invariants 1 and 3): the same count, and the same GPU or none on both.
fn check_shareable<T: Element, S: HeadState>(
    op: &'static str,
    count: usize,
    gpu: Option<&Gpu>,
    shared: &SharedMemory<T, S>,
) -> Result<(), Error> {
    if shared.len() != count {
        return Err(LayoutError::ShapeMismatch {
            op,
            expected: vec![count],
            got: vec![shared.len()],
        }
        .into());
    }
    match (gpu, shared.raw.accel().map(GpuAccel::gpu)) {
        (Some(a), Some(b)) if a.ordinal() != b.ordinal() => Err(GpuError::DeviceMismatch {
            op,
            lhs: a.ordinal(),
            rhs: b.ordinal(),
        }
        .into()),
        (Some(_), None) | (None, Some(_)) => Err(StateError::NoGpu { op }.into()),
        _ => Ok(()),
    }
}

/// Generates one side's (data's or diff's) transitions, writable borrows and sharing.
///
/// The bounds are on the side's `Base` state behind [`OwnedSide`], so misuse reports the
/// capability or ownership that is missing, with its message, rather than a bare "method
/// not found".
macro_rules! side_methods {
    ($side:ident, $Side:ident, $put:ident, $split:ident,
     $into_cpu:ident, $into_gpu:ident, $into_cpu_mut:ident, $into_gpu_mut:ident,
     $mut_cpu:ident, $mut_gpu:ident, $freeze:ident, $with_shared:ident, $name:literal,
     [$($pre:tt)*] [$($post:tt)*]) => {
        impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
            #[doc = concat!("Makes the ", $name, " readable on the CPU (Caffe `cpu_", $name, "()`; see [`SyncedMemory::into_cpu`]).")]
            #[allow(clippy::type_complexity)] // the next state is computed by the trait
            pub fn $into_cpu(
                self,
            ) -> Result<Blob<T, $($pre)* <$Side::Base as ToCpu>::Next $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: ToCpu,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_cpu() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("Makes the ", $name, " readable on the GPU (Caffe `gpu_", $name, "()`; see [`SyncedMemory::into_gpu`]).")]
            #[allow(clippy::type_complexity)] // the next state is computed by the trait
            pub fn $into_gpu(
                self,
            ) -> Result<Blob<T, $($pre)* <$Side::Base as ToGpu>::Next $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: ToGpu,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_gpu() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("Takes the ", $name, " for writing on the CPU (Caffe `mutable_cpu_", $name, "()`).")]
            pub fn $into_cpu_mut(self) -> Result<Blob<T, $($pre)* HeadAtCpu $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: Settled,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_cpu_mut() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("Takes the ", $name, " for writing on the GPU (Caffe `mutable_gpu_", $name, "()`).")]
            pub fn $into_gpu_mut(self) -> Result<Blob<T, $($pre)* HeadAtGpu $($post)*>, TransitionError<Self>>
            where
                $Side: OwnedSide,
                $Side::Base: Settled,
            {
                let (mem, rest) = self.$split();
                match $Side::into_owned(mem).into_gpu_mut() {
                    Ok(m) => Ok(rest.$put(m)),
                    Err(e) => Err(e.map(|m| rest.$put($Side::from_owned(m)))),
                }
            }

            #[doc = concat!("The ", $name, " on the CPU, writable (Caffe `mutable_cpu_", $name, "()` once the CPU side is the head): `count()` elements.")]
            pub fn $mut_cpu(&mut self) -> &mut [T]
            where
                $Side: OwnedSide,
                $Side::Base: CpuWritable,
            {
                let count = self.shape.count();
                match $Side::owned_mut(&mut self.$side).cpu_mut().get_mut(..count) {
                    Some(h) => h,
                    None => unreachable!("invariant 1: a side holds at least count elements"),
                }
            }

            #[doc = concat!("The ", $name, " on the GPU, writable (Caffe `mutable_gpu_", $name, "()` once the GPU side is the head); it holds `capacity()` elements.")]
            pub fn $mut_gpu(&mut self) -> GpuStorageMut<'_, T>
            where
                $Side: OwnedSide,
                $Side::Base: GpuWritable,
            {
                $Side::owned_mut(&mut self.$side).gpu_mut()
            }

            #[doc = concat!("Freezes the ", $name, " for read-only sharing with other blobs (the first half of Caffe's `Share", $name, "`); `shared_", $name, "()` then hands out the shared memory.")]
            pub fn $freeze(self) -> Blob<T, $($pre)* Frozen<$Side::Base> $($post)*>
            where
                $Side: OwnedSide,
                $Side::Base: Settled,
            {
                let (mem, rest) = self.$split();
                rest.$put($Side::into_owned(mem).freeze())
            }

            #[doc = concat!("Replaces the ", $name, " with `shared` (Caffe `Share", $name, "`, which `CHECK`s equal counts): the old memory is dropped. A count mismatch ([`LayoutError::ShapeMismatch`]), memories on two GPUs ([`GpuError::DeviceMismatch`]) or on a GPU and none ([`StateError::NoGpu`]) hand both back. The memory must hold the blob's element type ([`SameElement`]: sharing memory of another type does not compile).")]
            #[allow(clippy::type_complexity, clippy::result_large_err)] // hands back both inputs
            pub fn $with_shared<U: SameElement<T>, S: HeadState>(
                self,
                shared: SharedMemory<U, S>,
            ) -> Result<Blob<T, $($pre)* Frozen<S> $($post)*>, TransitionError<(Self, SharedMemory<T, S>)>> {
                const OP: &str = concat!("Blob::", stringify!($with_shared));
                let shared = U::same(shared);
                if let Err(error) = check_shareable(OP, self.count(), self.gpu_device(), &shared) {
                    return Err(TransitionError::new((self, shared), error));
                }
                let (_, rest) = self.$split();
                Ok(rest.$put(shared))
            }
        }
    };
}

/// The blob split into one side's memory and the rest, to be put back with a new side.
struct WithoutData<T: Element, G: BlobSide> {
    shape: BlobShape,
    diff: <G as SideImpl>::Slot<T>,
}

struct WithoutDiff<T: Element, D: BlobSide> {
    shape: BlobShape,
    data: <D as SideImpl>::Slot<T>,
}

impl<T: Element, G: BlobSide> WithoutData<T, G> {
    fn put_data<D2: BlobSide>(self, data: <D2 as SideImpl>::Slot<T>) -> Blob<T, D2, G> {
        Blob {
            shape: self.shape,
            data,
            diff: self.diff,
        }
    }
}

impl<T: Element, D: BlobSide> WithoutDiff<T, D> {
    fn put_diff<G2: BlobSide>(self, diff: <G2 as SideImpl>::Slot<T>) -> Blob<T, D, G2> {
        Blob {
            shape: self.shape,
            data: self.data,
            diff,
        }
    }
}

impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    fn split_data(self) -> (<D as SideImpl>::Slot<T>, WithoutData<T, G>) {
        (
            self.data,
            WithoutData {
                shape: self.shape,
                diff: self.diff,
            },
        )
    }

    fn split_diff(self) -> (<G as SideImpl>::Slot<T>, WithoutDiff<T, D>) {
        (
            self.diff,
            WithoutDiff {
                shape: self.shape,
                data: self.data,
            },
        )
    }
}

side_methods!(
    data, D, put_data, split_data, into_cpu_data, into_gpu_data, into_cpu_data_mut,
    into_gpu_data_mut, cpu_data_mut, gpu_data_mut, freeze_data, with_shared_data,
    "data", [] [, G]
);
side_methods!(
    diff, G, put_diff, split_diff, into_cpu_diff, into_gpu_diff, into_cpu_diff_mut,
    into_gpu_diff_mut, cpu_diff_mut, gpu_diff_mut, freeze_diff, with_shared_diff,
    "diff", [D,] []
);

impl<T: Element, S: HeadState, G: BlobSide> Blob<T, Frozen<S>, G> {
    /// A handle on the frozen data, to share with other blobs
    /// ([`with_shared_data`](Self::with_shared_data)).
    pub fn shared_data(&self) -> SharedMemory<T, S> {
        self.data.clone()
    }

    /// Gives the data back in its head state once no other blob shares it; otherwise hands
    /// the blob back with [`StateError::StillShared`].
    pub fn thaw_data(self) -> Result<Blob<T, S, G>, TransitionError<Self>> {
        let (mem, rest) = self.split_data();
        match mem.thaw() {
            Ok(m) => Ok(rest.put_data(m)),
            Err(e) => Err(e.map(|m| rest.put_data(m))),
        }
    }
}

impl<T: Element, D: BlobSide, S: HeadState> Blob<T, D, Frozen<S>> {
    /// A handle on the frozen diff, to share with other blobs
    /// ([`with_shared_diff`](Self::with_shared_diff)).
    pub fn shared_diff(&self) -> SharedMemory<T, S> {
        self.diff.clone()
    }

    /// Gives the diff back in its head state once no other blob shares it; otherwise hands
    /// the blob back with [`StateError::StillShared`].
    pub fn thaw_diff(self) -> Result<Blob<T, D, S>, TransitionError<Self>> {
        let (mem, rest) = self.split_diff();
        match mem.thaw() {
            Ok(m) => Ok(rest.put_diff(m)),
            Err(e) => Err(e.map(|m| rest.put_diff(m))),
        }
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
    Blob<f32, super::Synced>,
    Blob<f32, HeadAtCpu, super::Synced>,
    Blob<f32, Frozen<HeadAtCpu>, HeadAtGpu>,
);
static_assertions::assert_impl_all!(Blob<f32, super::Synced>: Send, Sync);
static_assertions::assert_impl_all!(Blob<f64, Frozen<super::Synced>>: Send, Sync);
