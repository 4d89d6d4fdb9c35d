//! The head state machine over run-time values: Caffe's `to_cpu` / `to_gpu` /
//! `mutable_*_data`, written once and shared by the typed [`super::SyncedMemory`] (which
//! passes its state's [`Head`] constant) and the erased [`super::AnySyncedMemory`] (which
//! stores the head).
//!
//! Every transition takes the current head and returns the next one; on error it returns the
//! error and the caller keeps the old head. What a failed transition may leave behind is a
//! newly allocated, unused side (kept for the retry); the data and the head are untouched.

use super::accel::Accel;
use super::host::{HostBuffer, HostSlot, OwnsHost};
use super::state::Head;
use crate::element::Element;
use crate::error::{Error, StateError};
use crate::layout::checked_bytes;

/// Copies and allocations one memory has made since it was created.
///
/// Copies count whole-buffer transfers made by transitions (a zero-length memory still counts
/// its logical copies); allocations count buffers the memory allocated itself, not adopted or
/// borrowed ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Host-to-device copies.
    pub h2d_copies: usize,
    /// Bytes copied host to device.
    pub h2d_bytes: usize,
    /// Device-to-host copies.
    pub d2h_copies: usize,
    /// Bytes copied device to host.
    pub d2h_bytes: usize,
    /// CPU buffers allocated (zero-filled).
    pub host_allocs: usize,
    /// GPU buffers allocated (zero-filled).
    pub device_allocs: usize,
    /// Copies of the GPU copy to another GPU (`into_gpu_of`).
    pub peer_copies: usize,
    /// Bytes copied to another GPU.
    pub peer_bytes: usize,
}

impl TransferStats {
    /// Copies in any direction (host to device, device to host, device to device).
    pub fn copies(&self) -> usize {
        self.h2d_copies + self.d2h_copies + self.peer_copies
    }
}

/// The run-time body of a synced memory.
///
/// Invariants (relative to the head the owner holds):
/// 1. `host`, when allocated, and `device`, when allocated, hold exactly `len` elements, and
///    `len * size_of::<T>()` fits in `isize`.
/// 2. `Uninitialized`: `device` is `None`; `host` is `None` unless borrowed or adopted.
/// 3. `HeadAtCpu`: `host` is allocated and holds the data.
/// 4. `HeadAtGpu`: `device` is allocated and holds the data.
/// 5. `Synced` and `InFlight`: both are allocated and hold the data (for `InFlight`, once the
///    queued copy has completed).
/// 6. `device` is `Some` only if `accel` is `Some`.
/// 7. `device_newer` is true exactly when the head is `HeadAtGpu` (the device copy holds data
///    the CPU copy lacks): every transition here and [`replace_device`](Self::replace_device)
///    keep it so. When `H` is a borrowed buffer, `Drop` then copies the device copy into it,
///    so the caller's buffer always ends up with the newest data.
pub(crate) struct RawSynced<T: Element, H: HostSlot<T>, A: Accel> {
    len: usize,
    bytes: usize,
    host: H,
    device: Option<A::Buf<T>>,
    accel: Option<A>,
    stats: TransferStats,
    device_newer: bool,
}

impl<T: Element, H: HostSlot<T>, A: Accel> RawSynced<T, H, A> {
    /// A memory of `len` elements with the given CPU slot, tied to `accel` if given.
    pub(crate) fn new(
        op: &'static str,
        len: usize,
        host: H,
        accel: Option<A>,
    ) -> Result<Self, Error> {
        let bytes = checked_bytes(op, &[len], std::mem::size_of::<T>())?;
        Ok(RawSynced {
            len,
            bytes,
            host,
            device: None,
            accel,
            stats: TransferStats::default(),
            device_newer: false,
        })
    }

    /// A memory whose CPU side is already present in `host` (adopted or borrowed); its
    /// length is the buffer's. Cannot overflow: a live slice's byte size fits in `isize`.
    pub(crate) fn from_host_buffer(host: H, accel: Option<A>) -> Self {
        let (len, bytes) = match host.get() {
            Some(s) => (s.len(), std::mem::size_of_val(s)),
            None => (0, 0),
        };
        RawSynced {
            len,
            bytes,
            host,
            device: None,
            accel,
            stats: TransferStats::default(),
            device_newer: false,
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn stats(&self) -> TransferStats {
        self.stats
    }

    pub(crate) fn accel(&self) -> Option<&A> {
        self.accel.as_ref()
    }

    pub(crate) fn host(&self) -> Option<&[T]> {
        self.host.get()
    }

    pub(crate) fn host_mut(&mut self) -> Option<&mut [T]> {
        self.host.get_mut()
    }

    pub(crate) fn host_slot(&self) -> &H {
        &self.host
    }

    pub(crate) fn host_slot_mut(&mut self) -> &mut H {
        &mut self.host
    }

    /// The CPU slot, taken out. Callers hand back the slot in a state whose CPU copy is
    /// current (after [`write_back`](Self::write_back) for `HeadAtGpu`), so `Drop` has
    /// nothing left to copy.
    pub(crate) fn into_host_slot(mut self) -> H {
        self.device_newer = false;
        self.host.take_slot()
    }

    pub(crate) fn device(&self) -> Option<&A::Buf<T>> {
        self.device.as_ref()
    }

    #[cfg(test)]
    pub(crate) fn device_mut(&mut self) -> Option<&mut A::Buf<T>> {
        self.device.as_mut()
    }

    /// The device copy, mutably, beside the device it lives on (a borrow of each field).
    /// Only for states holding a device copy, which implies a device (invariant 6).
    pub(crate) fn device_mut_and_accel(&mut self) -> (&mut A::Buf<T>, &A) {
        match (&mut self.device, &self.accel) {
            (Some(d), Some(a)) => (d, a),
            _ => unreachable!("invariant 6: a device copy implies a device"),
        }
    }

    /// Replaces the device buffer (adoption), which becomes the head; returns the old one.
    pub(crate) fn replace_device(&mut self, buf: A::Buf<T>) -> Option<A::Buf<T>> {
        self.device_newer = true;
        self.device.replace(buf)
    }

    /// Ties the memory to another device, `accel`, with `device` as its device copy, in head
    /// `head` (the caller built `device` so that `head`'s invariants hold with the CPU copy
    /// as it is); the old device copy is dropped. Keeps invariant 7.
    pub(crate) fn retie(&mut self, accel: A, device: Option<A::Buf<T>>, head: Head) {
        self.accel = Some(accel);
        self.device = device;
        self.device_newer = head == Head::HeadAtGpu;
    }

    /// The counts, for transitions written outside this module (`into_gpu_of`).
    pub(crate) fn stats_mut(&mut self) -> &mut TransferStats {
        &mut self.stats
    }

    /// Keeps invariant 7 after a transition.
    fn noted(&mut self, next: Result<Head, Error>) -> Result<Head, Error> {
        if let Ok(head) = next {
            self.device_newer = head == Head::HeadAtGpu;
        }
        next
    }

    /// Copies the device copy into the CPU copy if the device copy is newer (head
    /// `HeadAtGpu`), leaving the head to the caller: the typed owner hands the buffer back
    /// after it, and `Drop` uses it for a borrowed buffer. A no-op in every other state.
    pub(crate) fn write_back(&mut self) -> Result<(), Error> {
        if !self.device_newer {
            return Ok(());
        }
        self.ensure_host()?;
        let (Some(accel), Some(device), Some(host)) =
            (&self.accel, &self.device, self.host.get_mut())
        else {
            unreachable!(
                "invariants 4, 6 and 7: the device copy is newer, a CPU copy was just ensured"
            );
        };
        accel.download(device, host)?;
        self.stats.d2h_copies += 1;
        self.stats.d2h_bytes += self.bytes;
        self.device_newer = false;
        Ok(())
    }

    /// The CPU copy, allocating it (zero-filled; pinned when tied to a GPU) if absent.
    fn ensure_host(&mut self) -> Result<&mut [T], Error> {
        let (len, accel) = (self.len, &self.accel);
        let (slice, allocated) = self.host.get_or_try_alloc(|| match accel {
            Some(a) => a.alloc_host(len),
            None => HostBuffer::zeroed_plain(len),
        })?;
        if allocated {
            self.stats.host_allocs += 1;
        }
        Ok(slice)
    }

    /// The device copy, allocating it zero-filled if absent.
    fn ensure_device(&mut self, op: &'static str) -> Result<(), Error> {
        let accel = self.accel.as_ref().ok_or(StateError::NoGpu { op })?;
        if self.device.is_none() {
            self.device = Some(accel.alloc_device(self.len)?);
            self.stats.device_allocs += 1;
        }
        Ok(())
    }

    /// Caffe's `to_cpu()`.
    pub(crate) fn ensure_cpu_readable(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.cpu_step(head);
        self.noted(next)
    }

    fn cpu_step(&mut self, head: Head) -> Result<Head, Error> {
        const OP: &str = "to_cpu";
        match head {
            Head::Uninitialized => {
                // A borrowed or adopted buffer in this state holds ignored values: Caffe
                // zero-fills on this transition.
                self.ensure_host()?.fill(T::ZERO);
                Ok(Head::HeadAtCpu)
            }
            Head::HeadAtGpu => {
                self.ensure_host()?;
                let (Some(accel), Some(device), Some(host)) =
                    (&self.accel, &self.device, self.host.get_mut())
                else {
                    unreachable!("invariants 4 and 6: HeadAtGpu has a device copy, and a CPU copy was just ensured");
                };
                accel.download(device, host)?;
                self.stats.d2h_copies += 1;
                self.stats.d2h_bytes += self.bytes;
                Ok(Head::Synced)
            }
            Head::HeadAtCpu | Head::Synced => Ok(head),
            Head::InFlight => Err(StateError::PushInFlight { op: OP }.into()),
        }
    }

    /// Caffe's `to_gpu()`.
    pub(crate) fn ensure_gpu_readable(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.gpu_step(head);
        self.noted(next)
    }

    fn gpu_step(&mut self, head: Head) -> Result<Head, Error> {
        const OP: &str = "to_gpu";
        match head {
            Head::Uninitialized => {
                // Device allocations are zero-filled by the accelerator.
                self.ensure_device(OP)?;
                Ok(Head::HeadAtGpu)
            }
            Head::HeadAtCpu => {
                self.ensure_device(OP)?;
                let (Some(accel), Some(device), Some(host)) =
                    (&self.accel, &mut self.device, self.host.get())
                else {
                    unreachable!("invariants 3 and 6: HeadAtCpu has a CPU copy, and a device was just ensured");
                };
                accel.upload(host, device)?;
                self.stats.h2d_copies += 1;
                self.stats.h2d_bytes += self.bytes;
                Ok(Head::Synced)
            }
            Head::HeadAtGpu | Head::Synced => Ok(head),
            Head::InFlight => Err(StateError::PushInFlight { op: OP }.into()),
        }
    }

    /// Caffe's `mutable_cpu_data()`: `to_cpu()`, then the CPU side is the head.
    pub(crate) fn make_cpu_head(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.cpu_step(head).map(|_| Head::HeadAtCpu);
        self.noted(next)
    }

    /// Caffe's `mutable_gpu_data()`: `to_gpu()`, then the GPU side is the head.
    pub(crate) fn make_gpu_head(&mut self, head: Head) -> Result<Head, Error> {
        let next = self.gpu_step(head).map(|_| Head::HeadAtGpu);
        self.noted(next)
    }
}

/// A borrowed CPU buffer gets the newest data back when the memory goes (invariant 7): one
/// blocking device-to-host copy if the device copy is newer. A failure cannot be returned
/// from here, so it is recorded with the device ([`Accel::record_err`], `Gpu::check_err`)
/// and the buffer keeps its old values; `release()` is the form that returns the error.
impl<T: Element, H: HostSlot<T>, A: Accel> Drop for RawSynced<T, H, A> {
    fn drop(&mut self) {
        if !H::BORROWED || !self.device_newer {
            return;
        }
        if let Err(e) = self.write_back() {
            if let Some(accel) = &self.accel {
                accel.record_err(e);
            }
        }
    }
}

impl<T: Element, H: OwnsHost<T>, A: Accel> RawSynced<T, H, A> {
    /// Caffe's `async_gpu_push(stream)` from `HeadAtCpu`: allocates the device copy if
    /// needed and queues the upload on `stream`. The caller's head becomes `InFlight`.
    pub(crate) fn push(&mut self, stream: &A::Stream) -> Result<Head, Error> {
        const OP: &str = "async_gpu_push";
        self.ensure_device(OP)?;
        let (Some(accel), Some(device), Some(host)) =
            (&self.accel, &mut self.device, self.host.buffer())
        else {
            unreachable!("invariants 3 and 6: HeadAtCpu has a CPU copy; a device was ensured");
        };
        accel.upload_async(host, device, stream)?;
        self.stats.h2d_copies += 1;
        self.stats.h2d_bytes += self.bytes;
        self.device_newer = false;
        Ok(Head::InFlight)
    }

    /// Waits for a queued push: `InFlight -> Synced`.
    pub(crate) fn wait_push(&self) -> Result<Head, Error> {
        if let (Some(accel), Some(host)) = (&self.accel, self.host.buffer()) {
            accel.wait_host(host)?;
        }
        Ok(Head::Synced)
    }

    /// The device copy for work on `stream`, ordered after a queued push.
    pub(crate) fn device_after(&self, stream: &A::Stream) -> Result<&A::Buf<T>, Error> {
        let (Some(accel), Some(device), Some(host)) =
            (&self.accel, &self.device, self.host.buffer())
        else {
            unreachable!("invariant 5: InFlight has both copies");
        };
        accel.order_after(host, device, stream)?;
        Ok(device)
    }
}

#[cfg(test)]
mod tests;
