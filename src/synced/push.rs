//! Caffe's `async_gpu_push` with the race it allows made a compile error.
//!
//! Caffe queues the host-to-device copy on a stream and sets `SYNCED` at once, trusting the
//! caller to synchronize before writing the CPU copy (which the copy is reading) or reading
//! the GPU copy on another stream (which the copy is writing). Here the push gives
//! [`InFlight`], which offers neither: [`SyncedMemory::wait`] gives `Synced`, and
//! [`SyncedMemory::gpu_after`] lends the GPU copy, which orders every use after the copy
//! itself, on any stream (docs/STREAMS.md). Only memory that owns its CPU copy may push. A
//! page-locked CPU copy (what memory tied to a GPU allocates) tracks the copy itself, so the
//! push returns once the copy is queued, and dropping or leaking the memory mid-copy frees
//! nothing under the DMA engine; an adopted pageable vector
//! ([`SyncedMemory::from_vec_with_gpu`]) is copied before the push returns.

use super::any::AnySyncedMemory;
use super::host::{HostSlot, OwnsHost};
use super::state::{Head, HeadAtCpu, InFlight, Synced};
use super::synced_memory::SyncedMemory;
use super::transition_error::TransitionError;
use crate::element::Element;
use crate::error::{Error, GpuError, StateError};
use crate::runtime::{GpuStorage, Stream};

impl<T: Element, H: HostSlot<T>> SyncedMemory<T, HeadAtCpu, H> {
    /// Queues the host-to-device copy on `stream` (Caffe `async_gpu_push`, which requires
    /// `HEAD_AT_CPU`), allocating the GPU copy if needed. The copy is asynchronous when the
    /// CPU copy is page-locked (memory tied to a GPU allocates it so); an adopted pageable
    /// vector is copied before this returns.
    ///
    /// Returns once the copy is queued (page-locked CPU copy: it tracks the copy, its host
    /// access and its free wait for it) or done (pageable); either way the GPU copy orders
    /// later work after it, on any stream.
    pub fn async_gpu_push(
        mut self,
        stream: &Stream,
    ) -> Result<SyncedMemory<T, InFlight, H>, TransitionError<Self>>
    where
        H: OwnsHost<T>,
    {
        const OP: &str = "SyncedMemory::async_gpu_push";
        let check = match self.raw.accel() {
            None => Err(StateError::NoGpu { op: OP }.into()),
            Some(a) if a.gpu().ordinal() != stream.ordinal() => Err(GpuError::DeviceMismatch {
                op: OP,
                lhs: a.gpu().ordinal(),
                rhs: stream.ordinal(),
            }
            .into()),
            Some(_) => self.raw.push(stream),
        };
        match check {
            Ok(next) => {
                debug_assert_eq!(next, Head::InFlight);
                Ok(SyncedMemory::from_raw(self.raw))
            }
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }
}

impl<T: Element, H: OwnsHost<T>> SyncedMemory<T, InFlight, H> {
    /// Blocks until the push has finished: both copies are then equal (`Synced`).
    pub fn wait(self) -> Result<SyncedMemory<T, Synced, H>, TransitionError<Self>> {
        match self.raw.wait_push() {
            Ok(next) => {
                debug_assert_eq!(next, Head::Synced);
                Ok(SyncedMemory::from_raw(self.raw))
            }
            Err(e) => Err(TransitionError::new(self, e)),
        }
    }

    /// Makes `stream` wait (on the GPU, without blocking the host) for the push, and lends
    /// the GPU copy for reading (Caffe's pattern of pushing on one stream and computing on
    /// another, made safe). The lent storage orders every use after the push itself, on
    /// `stream` or any other stream of its GPU (docs/STREAMS.md).
    pub fn gpu_after(&self, stream: &Stream) -> Result<&GpuStorage<T>, Error> {
        self.raw.device_after(stream)
    }
}

impl<T: Element, H: OwnsHost<T>> AnySyncedMemory<T, H> {
    /// Waits for a queued push (`InFlight -> Synced`); does nothing in other states.
    pub fn wait(&mut self) -> Result<(), Error> {
        if self.head() == Head::InFlight {
            self.step(|raw, _| raw.wait_push())?;
        }
        Ok(())
    }
}
