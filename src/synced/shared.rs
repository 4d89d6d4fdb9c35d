//! [`SharedMemory`]: a synced memory frozen in one state and shared read-only.
//!
//! Caffe shares a blob's data between blobs (`ShareData`) through a `shared_ptr`, and any
//! holder may then write it or move its head under the others' feet. Here sharing freezes the
//! state: every holder may read the sides the state makes readable, none may write or change
//! the state, so no holder can see a stale copy. [`SharedMemory::thaw`] gives back the owned
//! memory once it is the last holder.

use std::marker::PhantomData;
use std::sync::Arc;

use super::accel::GpuAccel;
use super::host::OwnedHost;
use super::raw::{RawSynced, TransferStats};
use super::state::{CpuReadable, Head, HeadState, Settled};
use super::synced_memory::SyncedMemory;
use super::transition_error::TransitionError;
use crate::element::Element;
use crate::error::StateError;

/// A [`SyncedMemory`] frozen in state `S` and shared by reference counting; cloning shares.
///
/// Invariants: the memory is in state `S` and stays there while shared (nothing reachable
/// through `&` changes it); reads are offered only where `S` allows them.
pub struct SharedMemory<T: Element, S: HeadState> {
    pub(crate) raw: Arc<RawSynced<T, OwnedHost<T>, GpuAccel>>,
    state: PhantomData<S>,
}

impl<T: Element, S: HeadState> Clone for SharedMemory<T, S> {
    fn clone(&self) -> Self {
        SharedMemory {
            raw: Arc::clone(&self.raw),
            state: PhantomData,
        }
    }
}

impl<T: Element, S: Settled> SyncedMemory<T, S> {
    /// Freezes the memory in its state for read-only sharing (clone the result to share).
    pub fn freeze(self) -> SharedMemory<T, S> {
        SharedMemory {
            raw: Arc::from(self.raw),
            state: PhantomData,
        }
    }
}

impl<T: Element, S: HeadState> SharedMemory<T, S> {
    pub(crate) fn from_arc(raw: Arc<RawSynced<T, OwnedHost<T>, GpuAccel>>) -> Self {
        SharedMemory {
            raw,
            state: PhantomData,
        }
    }

    /// Gives the owned memory back if this is the last holder; otherwise hands itself back
    /// with [`StateError::StillShared`].
    pub fn thaw(self) -> Result<SyncedMemory<T, S>, TransitionError<Self>> {
        match Arc::try_unwrap(self.raw) {
            Ok(raw) => Ok(SyncedMemory::from_raw(Box::new(raw))),
            Err(raw) => {
                let holders = Arc::strong_count(&raw) - 1;
                let error = StateError::StillShared {
                    op: "SharedMemory::thaw",
                    holders,
                };
                Err(TransitionError::new(Self::from_arc(raw), error))
            }
        }
    }

    /// How many holders share the memory (this one included).
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.raw)
    }

    /// The frozen state.
    pub fn head(&self) -> Head {
        S::HEAD
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies and allocations the memory made before it was frozen.
    pub fn stats(&self) -> TransferStats {
        self.raw.stats()
    }

    /// The CPU copy.
    pub fn cpu(&self) -> &[T]
    where
        S: CpuReadable,
    {
        match self.raw.host() {
            Some(h) => h,
            None => unreachable!("a CpuReadable state has a CPU copy"),
        }
    }
}

/// Element types a blob of `T` may share memory of: `T` itself. Sharing reuses the memory
/// as it is, so a blob of `f64` cannot read memory of `f32`; this trait turns that mistake
/// into a message that says so instead of a mismatch of `SharedMemory` types. Sealed.
#[diagnostic::on_unimplemented(
    message = "a blob of `{T}` cannot share memory that holds `{Self}`",
    label = "sharing reuses the memory as it is, so both blobs need one element type",
    note = "share between blobs of one element type; to use the values as `{T}`, copy them with a cast, e.g. `Blob::from_vec(shape, blob.cpu_data_view()?.cast::<{T}>()?.to_vec())`"
)]
pub trait SameElement<T: Element>: Element + sealed::Sealed {
    /// The memory under its one element type.
    fn same<S: HeadState>(memory: SharedMemory<Self, S>) -> SharedMemory<T, S>;
}

impl<T: Element> SameElement<T> for T {
    fn same<S: HeadState>(memory: SharedMemory<T, S>) -> SharedMemory<T, S> {
        memory
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T: crate::element::Element> Sealed for T {}
}

impl<T: Element, S: HeadState> std::fmt::Debug for SharedMemory<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMemory")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len())
            .field("head", &S::HEAD)
            .field("holders", &self.holders())
            .finish()
    }
}

static_assertions::assert_impl_all!(SharedMemory<f32, super::Synced>: Send, Sync, Clone);
