//! Streams and memory other libraries own (issue 30, DLPack): raw `CUstream` handles passed in
//! from foreign code (PyTorch's current stream through `__dlpack__(stream=...)`), and the
//! device of a foreign device address.

use cudarc::driver::result::{event, stream};
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent};

use super::context::bind;
use super::CallName;
use crate::error::GpuError;

/// A raw handle as the driver takes it: the value is the `CUstream` pointer, or one of the
/// driver's special handles (`CU_STREAM_LEGACY` = 1, `CU_STREAM_PER_THREAD` = 2).
fn handle(raw: usize) -> sys::CUstream {
    raw as sys::CUstream
}

/// `cuStreamWaitEvent` on a foreign stream: work queued there from now on waits for `event`.
///
/// # Safety
///
/// `raw` is a live `CUstream` (or `CU_STREAM_LEGACY` / `CU_STREAM_PER_THREAD`) of a context of
/// the event's device.
pub(crate) unsafe fn raw_stream_wait_event(raw: usize, ev: &CudaEvent) -> Result<(), GpuError> {
    bind(ev.context())?;
    // SAFETY: the event is alive (borrowed); the stream is live by the caller's contract.
    unsafe {
        stream::wait_event(
            handle(raw),
            ev.cu_event(),
            sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
        )
    }
    .call("cuStreamWaitEvent")
}

/// `cuEventRecord` on a foreign stream: `event` captures the work queued there so far.
///
/// # Safety
///
/// `raw` is a live `CUstream` (or `CU_STREAM_LEGACY` / `CU_STREAM_PER_THREAD`); the driver
/// refuses a stream of another context than the event's with an error.
pub(crate) unsafe fn raw_event_record(ev: &CudaEvent, raw: usize) -> Result<(), GpuError> {
    bind(ev.context())?;
    // SAFETY: the event is alive (borrowed); the stream is live by the caller's contract.
    unsafe { event::record(ev.cu_event(), handle(raw)) }.call("cuEventRecord")
}

/// `cuStreamSynchronize` on a foreign stream: blocks until its queued work is done.
///
/// # Safety
///
/// `raw` is a live `CUstream` (or `CU_STREAM_LEGACY` / `CU_STREAM_PER_THREAD`) and the current
/// context (bound by the caller) is one it may be used in.
pub(crate) unsafe fn raw_stream_synchronize(raw: usize) -> Result<(), GpuError> {
    // SAFETY: the stream is live by the caller's contract.
    unsafe { stream::synchronize(handle(raw)) }.call("cuStreamSynchronize")
}

/// `cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)`: the ordinal of the device
/// whose memory holds `addr`, or the driver's error for an address it does not know (host
/// memory it did not allocate). Reads nothing at `addr`.
pub(crate) fn pointer_device_ordinal(ctx: &CudaContext, addr: u64) -> Result<i32, GpuError> {
    bind(ctx)?;
    let mut ordinal: i32 = -1;
    // SAFETY: the driver writes one `int` for this attribute, into `ordinal`, which lives
    // through the call; the address is only looked up, never dereferenced.
    unsafe {
        sys::cuPointerGetAttribute(
            (&mut ordinal as *mut i32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            addr,
        )
    }
    .result()
    .call("cuPointerGetAttribute")?;
    Ok(ordinal)
}
