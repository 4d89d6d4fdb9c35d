//! CUDA graphs: stream capture, the thread's capture mode, instantiation and replay.

use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream};

use super::context::bind;
use super::CallName;
use crate::error::GpuError;

/// `cuStreamBeginCapture` in thread-local mode: work queued on `stream` from now on is
/// recorded into a graph instead of run. Thread-local mode restricts only the calling thread
/// (from calls that could synchronise); other threads go on as usual.
pub(crate) fn begin_capture(stream: &CudaStream) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: `stream` is a live stream (borrowed); the call only changes its mode.
    unsafe {
        result::stream::begin_capture(
            stream.cu_stream(),
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        )
    }
    .call("cuStreamBeginCapture")
}

/// `cuStreamEndCapture`: ends the capture on `stream` and returns the graph recorded. The
/// stream leaves capture mode whether or not this succeeds (an invalidated capture gives
/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` and no graph).
pub(crate) fn end_capture(stream: &CudaStream) -> Result<CapturedGraph, GpuError> {
    bind(stream.context())?;
    // SAFETY: `stream` is a live stream (borrowed); the returned handle is owned by the
    // caller, which `CapturedGraph` destroys exactly once.
    let graph =
        unsafe { result::stream::end_capture(stream.cu_stream()) }.call("cuStreamEndCapture")?;
    if graph.is_null() {
        return Err(GpuError::Driver {
            call: "cuStreamEndCapture",
            message: "the driver returned no graph".to_owned(),
        });
    }
    Ok(CapturedGraph {
        graph,
        ctx: Arc::clone(stream.context()),
    })
}

/// `cuStreamIsCapturing`: whether `stream` is capturing now.
pub(crate) fn is_capturing(stream: &CudaStream) -> Result<bool, GpuError> {
    bind(stream.context())?;
    // SAFETY: `stream` is a live stream (borrowed); the call only reads its status.
    let status =
        unsafe { result::stream::is_capturing(stream.cu_stream()) }.call("cuStreamIsCapturing")?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// The calling thread's stream-capture mode before [`relax_capture_mode`], for
/// [`restore_capture_mode`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CaptureMode(sys::CUstreamCaptureMode);

/// `cuThreadExchangeStreamCaptureMode(RELAXED)`: lets the calling thread make calls that are
/// refused while it captures (`cuMemAlloc`), as PyTorch does around `cudaMalloc`. Returns the
/// mode to restore.
pub(crate) fn relax_capture_mode() -> Result<CaptureMode, GpuError> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: `mode` is a valid, writable `CUstreamCaptureMode` for the duration of the call;
    // the driver swaps the thread's mode with it.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .call("cuThreadExchangeStreamCaptureMode")?;
    Ok(CaptureMode(mode))
}

/// Restores the thread's capture mode saved by [`relax_capture_mode`].
pub(crate) fn restore_capture_mode(saved: CaptureMode) -> Result<(), GpuError> {
    let mut mode = saved.0;
    // SAFETY: as in `relax_capture_mode`.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .call("cuThreadExchangeStreamCaptureMode")
}

/// A graph recorded by [`end_capture`] (`CUgraph`), destroyed on drop (`cuGraphDestroy`).
pub(crate) struct CapturedGraph {
    graph: sys::CUgraph,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `CUgraph` is an opaque driver handle, never dereferenced on the host. The driver
// requires that one graph not be used by two threads at once: every use here (`instantiate`,
// drop) takes the owning value or `&mut`, and there is no `&self` method.
unsafe impl Send for CapturedGraph {}

impl CapturedGraph {
    /// `cuGraphInstantiateWithFlags(0)`: an executable graph. The recorded graph may be
    /// dropped afterwards; the executable one does not depend on it.
    pub(crate) fn instantiate(&mut self) -> Result<GraphExec, GpuError> {
        bind(&self.ctx)?;
        // SAFETY: `self.graph` is the live graph this value owns (destroyed only in drop).
        let exec =
            unsafe { result::graph::instantiate(self.graph, sys::CUgraphInstantiate_flags(0)) }
                .call("cuGraphInstantiate")?;
        Ok(GraphExec {
            exec,
            ctx: Arc::clone(&self.ctx),
        })
    }
}

impl Drop for CapturedGraph {
    fn drop(&mut self) {
        // Errors cannot be returned from a drop and would only mean the handle is already
        // gone with its context; nothing is left to clean.
        if bind(&self.ctx).is_ok() {
            // SAFETY: `self.graph` is live and owned by this value; it is destroyed once.
            let _ = unsafe { result::graph::destroy(self.graph) };
        }
    }
}

/// An executable graph (`CUgraphExec`), destroyed on drop (`cuGraphExecDestroy`: a launch
/// still running completes first; the driver frees the graph after it).
pub(crate) struct GraphExec {
    exec: sys::CUgraphExec,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `CUgraphExec` is an opaque driver handle, never dereferenced on the host. The
// driver forbids using one executable graph from two threads at once: `launch` takes
// `&mut self` and drop the value, and no method takes `&self`, so shared references allow no
// driver call at all (hence also `Sync`).
unsafe impl Send for GraphExec {}
// SAFETY: see `Send`: `&GraphExec` gives access to nothing.
unsafe impl Sync for GraphExec {}

impl GraphExec {
    /// `cuGraphLaunch`: queues one run of the graph on `stream`.
    ///
    /// # Safety
    ///
    /// Every address the graph's nodes read or write must be valid for those accesses, and
    /// hold what the nodes expect (initialised elements where they read), until the launch
    /// has run on `stream`; and the launch must be ordered after all other work on that
    /// memory that it must follow.
    pub(crate) unsafe fn launch(&mut self, stream: &CudaStream) -> Result<(), GpuError> {
        bind(&self.ctx)?;
        // SAFETY: `self.exec` is live (destroyed only in drop) and `stream` is alive
        // (borrowed); the memory contract is the caller's.
        unsafe { result::graph::launch(self.exec, stream.cu_stream()) }.call("cuGraphLaunch")
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // As for `CapturedGraph`: nothing useful can be done with an error here.
        if bind(&self.ctx).is_ok() {
            // SAFETY: `self.exec` is live and owned by this value; it is destroyed once.
            // A launch in flight completes before the driver releases it.
            let _ = unsafe { result::graph::exec_destroy(self.exec) };
        }
    }
}
