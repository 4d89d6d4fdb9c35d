//! Events: markers recorded in a stream's queue, for cross-stream ordering, host waits and
//! GPU-side timing.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent};

use super::driver;
use super::graph::state;
use crate::error::GpuError;

/// A CUDA event (`CUevent`).
///
/// Recording it on a [`Stream`] captures the work queued there so far; the event completes
/// when that work has finished. Another stream can wait on it ([`Stream::wait_event`]) without
/// blocking the host; the host can poll ([`Event::is_complete`]) or block
/// ([`Event::synchronize`]). An event never recorded counts as complete.
///
/// Events made by [`Stream::record_event`] cannot time (they are cheaper to record and wait
/// on); use [`Stream::record_timing_event`] for [`Event::elapsed_ms`].
///
/// (`Event::record` is written in `stream.rs`, so that this module does not import streams:
/// streams make and wait on events, events only name the stream they are recorded on.)
///
/// [`Stream`]: crate::gpu::Stream
/// [`Stream::wait_event`]: crate::gpu::Stream::wait_event
/// [`Stream::record_event`]: crate::gpu::Stream::record_event
/// [`Stream::record_timing_event`]: crate::gpu::Stream::record_timing_event
pub struct Event {
    inner: CudaEvent,
    timing: bool,
}

impl Event {
    /// A new event, never recorded.
    pub(crate) fn create(ctx: &Arc<CudaContext>, timing: bool) -> Result<Event, GpuError> {
        Ok(Event {
            inner: driver::create_event(ctx, timing)?,
            timing,
        })
    }

    /// Whether the captured work has finished (`cuEventQuery`); never blocks.
    pub fn is_complete(&self) -> Result<bool, GpuError> {
        driver::event_query(&self.inner)
    }

    /// Blocks the calling thread until the captured work has finished (`cuEventSynchronize`).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        state::check_host_sync("Event::synchronize", 0, state::SYNC)?;
        driver::event_synchronize(&self.inner)
    }

    /// Milliseconds of GPU time from `self` to `end` (`cuEventElapsedTime`), waiting for both.
    /// Both must be timing events recorded on streams of one device: events of two GPUs give
    /// [`GpuError::DeviceMismatch`].
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, GpuError> {
        if self.ordinal() != end.ordinal() {
            return Err(GpuError::DeviceMismatch {
                op: "Event::elapsed_ms",
                lhs: self.ordinal(),
                rhs: end.ordinal(),
            });
        }
        if !(self.timing && end.timing) {
            // Refused here rather than by the driver: same error, no failed API call.
            return Err(GpuError::Driver {
                call: "cuEventElapsedTime",
                message: "CUDA_ERROR_INVALID_HANDLE: both events must be timing events \
                          (record them with `record_timing_event`)"
                    .to_owned(),
            });
        }
        driver::event_elapsed_ms(&self.inner, &end.inner)
    }

    /// Whether this event can time ([`Event::elapsed_ms`]).
    pub fn is_timing(&self) -> bool {
        self.timing
    }

    /// The cudarc event, for modules that launch through cudarc.
    pub(crate) fn cuda(&self) -> &CudaEvent {
        &self.inner
    }

    /// The ordinal of the GPU whose context the event was made in (it can be recorded only
    /// on that GPU's streams, and waited on by any GPU's).
    pub fn ordinal(&self) -> usize {
        self.inner.context().ordinal()
    }

    /// The context the event was made in.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        self.inner.context()
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("ordinal", &self.inner.context().ordinal())
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

static_assertions::assert_impl_all!(Event: Send, Sync);
static_assertions::assert_not_impl_any!(Event: Clone);
