//! Streams: creation, the legacy default stream, synchronisation, waits on events.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

use super::CallName;
use crate::error::GpuError;

/// `cuStreamCreate(CU_STREAM_NON_BLOCKING)`: a stream that does not synchronise with the
/// legacy default stream.
pub(crate) fn create_stream(ctx: &Arc<CudaContext>) -> Result<Arc<CudaStream>, GpuError> {
    ctx.new_stream().call("cuStreamCreate")
}

/// The context's legacy default stream (the null `CUstream`).
pub(crate) fn legacy_default_stream(ctx: &Arc<CudaContext>) -> Arc<CudaStream> {
    ctx.default_stream()
}

/// `cuStreamSynchronize`.
pub(crate) fn stream_synchronize(stream: &CudaStream) -> Result<(), GpuError> {
    stream.synchronize().call("cuStreamSynchronize")
}

/// `cuStreamWaitEvent`: later work on `stream` waits until `event` completes (on the GPU; the
/// host does not block).
pub(crate) fn stream_wait_event(stream: &CudaStream, event: &CudaEvent) -> Result<(), GpuError> {
    stream.wait(event).call("cuStreamWaitEvent")
}
