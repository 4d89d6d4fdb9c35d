//! Events: creation, recording, queries, host waits and GPU-side timing.

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

use super::context::bind;
use super::CallName;
use crate::error::GpuError;

/// `cuEventCreate`, with `CU_EVENT_DISABLE_TIMING` unless `timing` (timing-capable events are
/// slower to record and to wait on).
pub(crate) fn create_event(ctx: &Arc<CudaContext>, timing: bool) -> Result<CudaEvent, GpuError> {
    let flags = if timing {
        sys::CUevent_flags::CU_EVENT_DEFAULT
    } else {
        sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
    };
    ctx.new_event(Some(flags)).call("cuEventCreate")
}

/// `cuEventRecord`.
pub(crate) fn event_record(event: &CudaEvent, stream: &CudaStream) -> Result<(), GpuError> {
    event.record(stream).call("cuEventRecord")
}

/// `cuEventQuery`: whether all work captured by the event has completed (an event never
/// recorded counts as completed).
pub(crate) fn event_query(event: &CudaEvent) -> Result<bool, GpuError> {
    bind(event.context())?;
    event.try_is_complete().call("cuEventQuery")
}

/// `cuEventSynchronize`: blocks until the event completes.
pub(crate) fn event_synchronize(event: &CudaEvent) -> Result<(), GpuError> {
    event.synchronize().call("cuEventSynchronize")
}

/// `cuEventElapsedTime` (waits for both events first).
pub(crate) fn event_elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f32, GpuError> {
    start.elapsed_ms(end).call("cuEventElapsedTime")
}
