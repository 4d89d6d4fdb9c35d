//! [`ForeignStream`]: a CUDA stream another library owns (issue 30, DLPack's stream
//! handshake), known by its raw handle, ordered against this crate's streams with events.

use super::driver;
use super::event::Event;
use super::stream::Stream;
use crate::error::GpuError;

/// A raw `CUstream` handle from foreign code: PyTorch's current stream passed to
/// `__dlpack__(stream=...)`, or the driver's special handles 1 (`CU_STREAM_LEGACY`, the
/// legacy default stream) and 2 (`CU_STREAM_PER_THREAD`).
///
/// Invariant: the handle is a live stream of the primary context of the device it is used
/// with, for as long as this value (or a copy) exists. Made only by the `unsafe`
/// [`ForeignStream::new`], whose caller promises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForeignStream {
    raw: usize,
}

impl ForeignStream {
    /// # Safety
    ///
    /// `raw` is 1, 2 or a live `CUstream` of the primary context of the device it will be
    /// ordered against, and stays live while this value or a copy of it exists.
    pub(crate) unsafe fn new(raw: usize) -> ForeignStream {
        ForeignStream { raw }
    }

    /// Makes work queued on the foreign stream from now on wait for the work queued on
    /// `ours` so far (an event recorded on `ours`, `cuStreamWaitEvent` on the foreign stream).
    /// The host does not block.
    pub(crate) fn wait_for(&self, ours: &Stream) -> Result<(), GpuError> {
        let ev = ours.record_event()?;
        // SAFETY: the handle is live (the type's invariant); the event is ours, alive.
        unsafe { driver::raw_stream_wait_event(self.raw, ev.cuda()) }
    }

    /// Makes work queued on `ours` from now on wait for the work queued on the foreign stream
    /// so far: an event recorded there that `ours` waits on, without blocking the host. If
    /// the driver refuses the record (a stream of another context), blocks until the foreign
    /// stream's work is done instead, which orders the same.
    pub(crate) fn hold_back(&self, ours: &Stream) -> Result<(), GpuError> {
        let ev = Event::create(ours.context(), false)?;
        // SAFETY: the handle is live (the type's invariant); the event is ours, alive.
        match unsafe { driver::raw_event_record(ev.cuda(), self.raw) } {
            Ok(()) => ours.wait_event(&ev),
            Err(_) => {
                driver::bind(ours.context())?;
                // SAFETY: live handle (invariant), of the context just bound.
                unsafe { driver::raw_stream_synchronize(self.raw) }
            }
        }
    }
}

/// The ordinal of the GPU whose memory holds `addr` (the driver's record of the address),
/// for checking a foreign device pointer before use.
pub(crate) fn device_of_address(gpu: &super::device::Gpu, addr: u64) -> Result<i32, GpuError> {
    driver::pointer_device_ordinal(gpu.context(), addr)
}
