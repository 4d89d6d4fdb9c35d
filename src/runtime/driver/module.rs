//! Modules and functions: loading compiled images, looking up entry points, occupancy.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use super::graph::{relax_capture_mode, restore_capture_mode};
use super::CallName;
use crate::error::GpuError;

/// `cuModuleLoadData`: loads a compiled image (PTX or cubin) into `ctx`.
///
/// Runs with the thread's stream-capture mode relaxed ([`relaxed_capture`]): the first use of
/// a kernel may come inside a CUDA graph capture, and loading may allocate device memory,
/// which a capturing thread is otherwise refused. Loading is not recorded into the graph.
pub(crate) fn load_module(ctx: &Arc<CudaContext>, image: Ptx) -> Result<Arc<CudaModule>, GpuError> {
    relaxed_capture(|| ctx.load_module(image).call("cuModuleLoadData"))
}

/// Runs `f` with the calling thread's stream-capture mode relaxed, then restores it (two
/// `cuThreadExchangeStreamCaptureMode` calls, thread-local in the driver; for rare calls such
/// as module loads, which may come inside a capture).
fn relaxed_capture<R>(f: impl FnOnce() -> Result<R, GpuError>) -> Result<R, GpuError> {
    let saved = relax_capture_mode()?;
    let result = f();
    restore_capture_mode(saved)?;
    result
}

/// `cuModuleGetFunction`: the entry point `entry` of `module`.
///
/// # Errors
/// [`GpuError::Driver`] when `entry` holds a NUL byte (refused before the call) or the module
/// has no such function.
pub(crate) fn load_function(
    module: &Arc<CudaModule>,
    entry: &str,
) -> Result<CudaFunction, GpuError> {
    if entry.contains('\0') {
        return Err(GpuError::Driver {
            call: "cuModuleGetFunction",
            message: format!("kernel name {entry:?} contains a NUL byte"),
        });
    }
    // Relaxed as in `load_module`: with lazy loading (CUDA's default) this call is what
    // loads the function onto the device.
    relaxed_capture(|| module.load_function(entry).call("cuModuleGetFunction"))
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor` for `function` launched with `block`
/// threads and no dynamic shared memory.
pub(crate) fn max_active_blocks_per_multiprocessor(
    function: &CudaFunction,
    block: u32,
) -> Result<u32, GpuError> {
    function
        .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
        .call("cuOccupancyMaxActiveBlocksPerMultiprocessor")
}
