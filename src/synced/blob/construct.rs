//! Making and reshaping a [`Blob`]: Caffe's constructors (all on `Blob<T>`, the
//! `Uninitialized` states) and `Reshape`.

use super::base::{Blob, Raw};
use super::shape::BlobShape;
use super::side::BlobSide;
use crate::element::Element;
use crate::error::{Error, LayoutError, StateError};
use crate::runtime::Gpu;
use crate::synced::host::OwnedHost;
use crate::synced::raw::RawSynced;
use crate::synced::state::{HeadAtCpu, Uninitialized};
use crate::synced::synced_memory::SyncedMemory;
use crate::synced::transition_error::TransitionError;

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
    like: &Raw<T>,
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
}
