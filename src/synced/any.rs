//! The erased end of the ladder: a synced memory whose head is known only at run time.
//!
//! Like stm32's `DynamicPin`, [`AnySyncedMemory`] lets memories in different states live in
//! one collection (a net's blobs). It offers Caffe's own run-time API (`cpu_data()`,
//! `mutable_gpu_data()`, ...) with errors instead of `CHECK` failures, and converts back to a
//! typed state with [`AnySyncedMemory::try_into_state`], which hands the value back on a
//! mismatch.

use super::accel::GpuAccel;
use super::host::{HostSlot, OwnedHost};
use super::raw::{RawSynced, TransferStats};
use super::state::{Head, HeadState};
use super::synced_memory::SyncedMemory;
use super::transition_error::TransitionError;
use crate::element::Element;
use crate::error::{Error, StateError};

/// A [`SyncedMemory`] with its head state stored as a value.
///
/// Invariants: `head` is the memory's true state, with the same meaning as the state types
/// (see [`super::state`]); every method keeps it so, and a failed call leaves it unchanged.
pub struct AnySyncedMemory<T: Element, H: HostSlot<T> = OwnedHost<T>> {
    raw: Box<RawSynced<T, H, GpuAccel>>,
    head: Head,
}

impl<T: Element, H: HostSlot<T>> AnySyncedMemory<T, H> {
    pub(crate) fn from_typed(raw: Box<RawSynced<T, H, GpuAccel>>, head: Head) -> Self {
        AnySyncedMemory { raw, head }
    }

    /// The current head (Caffe `head()`).
    pub fn head(&self) -> Head {
        self.head
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies and allocations made so far.
    pub fn stats(&self) -> TransferStats {
        self.raw.stats()
    }

    pub(crate) fn raw(&self) -> &RawSynced<T, H, GpuAccel> {
        &self.raw
    }

    pub(crate) fn raw_mut(&mut self) -> &mut RawSynced<T, H, GpuAccel> {
        &mut self.raw
    }

    /// Runs one machine step; the head changes only on success.
    pub(crate) fn step(
        &mut self,
        f: impl FnOnce(&mut RawSynced<T, H, GpuAccel>, Head) -> Result<Head, Error>,
    ) -> Result<(), Error> {
        self.head = f(&mut self.raw, self.head)?;
        Ok(())
    }

    /// Caffe `cpu_data()`: makes the CPU copy readable (allocating or copying as
    /// [`SyncedMemory::into_cpu`] does) and borrows it.
    pub fn cpu_data(&mut self) -> Result<&[T], Error> {
        self.step(RawSynced::ensure_cpu_readable)?;
        match self.raw.host() {
            Some(h) => Ok(h),
            None => unreachable!("a CPU-readable head has a CPU copy"),
        }
    }

    /// Caffe `mutable_cpu_data()`: syncs the CPU copy if stale, makes it the head, and
    /// borrows it mutably.
    pub fn mutable_cpu_data(&mut self) -> Result<&mut [T], Error> {
        self.step(RawSynced::make_cpu_head)?;
        match self.raw.host_mut() {
            Some(h) => Ok(h),
            None => unreachable!("HeadAtCpu has a CPU copy"),
        }
    }

    /// Converts back to the typed state `S`, or hands the value back with
    /// [`StateError::WrongState`] if it is in another state.
    pub fn try_into_state<S: HeadState>(
        self,
    ) -> Result<SyncedMemory<T, S, H>, TransitionError<Self>> {
        if self.head != S::HEAD {
            let error = StateError::WrongState {
                expected: S::HEAD.name(),
                actual: self.head.name(),
            };
            return Err(TransitionError::new(self, error));
        }
        Ok(SyncedMemory::from_raw(self.raw))
    }
}

/// Erasure lives with the erased type, so the typed memory needs nothing from this file.
impl<T: Element, S: HeadState, H: HostSlot<T>> SyncedMemory<T, S, H> {
    /// Forgets the type-level state; the run-time [`AnySyncedMemory`] keeps it as a value
    /// (for collections of memories in different states).
    pub fn erase(self) -> AnySyncedMemory<T, H> {
        AnySyncedMemory::from_typed(self.raw, S::HEAD)
    }
}

impl<T: Element, S: HeadState, H: HostSlot<T>> From<SyncedMemory<T, S, H>>
    for AnySyncedMemory<T, H>
{
    fn from(m: SyncedMemory<T, S, H>) -> Self {
        m.erase()
    }
}

impl<T: Element, H: HostSlot<T>> std::fmt::Debug for AnySyncedMemory<T, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnySyncedMemory")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len())
            .field("head", &self.head)
            .field("stats", &self.stats())
            .finish()
    }
}

static_assertions::assert_impl_all!(AnySyncedMemory<f32>: Send, Sync);
