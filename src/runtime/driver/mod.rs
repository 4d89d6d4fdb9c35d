//! The one module that talks to the CUDA driver.
//!
//! Like cudarc's `result` layer, every function here is a thin wrapper over one driver call
//! (or one cudarc `safe` call) that returns `Result<_, GpuError>` with the call's name and the
//! driver's error name and string. Functions that are memory-unsafe by nature (freeing,
//! copying through raw addresses) are `unsafe fn` with their contract under `# Safety`; the
//! typed wrappers above (`buffer.rs`, the sources, the driver-pool allocator) uphold it.
//!
//! Grouped by concern, as cudarc groups its result layer (`result::stream`,
//! `result::event`, ...): [`context`] (driver, devices, contexts), [`stream`], [`event`],
//! [`memory`] (allocation and stream-ordered copies), [`mem_pool`] (stream-ordered pools),
//! [`module`] (images and functions), [`launch`] (kernel launches), [`graph`] (stream capture
//! and graphs) and [`peer`] (several GPUs). This file holds what they share: the error
//! mapping ([`driver_error`], `CallName`) and the allocation failure. Callers name the calls
//! through this module (`driver::launch_kernel`), which re-exports them all.
//!
//! Context binding: CUDA keeps a "current context" per thread, and every allocation, copy and
//! synchronisation acts on it. Allocators and buffers are used from many threads, so every
//! function that needs a context takes one (or a stream, which knows its context) and binds it
//! first. Binding is a `cuCtxGetCurrent` check, and a `cuCtxSetCurrent` only when it differs.

mod context;
mod event;
// issue 30 (dlpack): foreign streams and addresses.
mod foreign;
pub(crate) use foreign::{
    pointer_device_ordinal, raw_event_record, raw_stream_synchronize, raw_stream_wait_event,
};
mod graph;
mod launch;
mod mem_pool;
mod memory;
mod module;
mod peer;
mod stream;

pub(crate) use context::{
    bind, compute_capability, context_synchronize, device_attribute, device_count, device_name,
    device_total_memory, memory_info, retain_primary_context,
};
pub(crate) use event::{
    create_event, event_elapsed_ms, event_query, event_record, event_synchronize,
};
pub(crate) use graph::{
    begin_capture, end_capture, is_capturing, relax_capture_mode, restore_capture_mode,
    CapturedGraph, GraphExec,
};
pub(crate) use launch::{launch_kernel, launch_kernel_programmatic};
pub(crate) use mem_pool::{
    default_mem_pool, free_async, pool_alloc_async, pool_get, pool_set, pool_trim_to,
    supports_mem_pools, MemPool, PoolAttribute,
};
pub(crate) use memory::{
    is_driver_host_memory, mem_alloc, mem_free, mem_free_host, mem_host_alloc, memcpy_dtod_async,
    memcpy_dtoh_async, memcpy_htod_async, memset_zero_async,
};
pub(crate) use module::{load_function, load_module, max_active_blocks_per_multiprocessor};
pub(crate) use peer::{can_access_peer, enable_peer_access, memcpy_peer_async};
pub(crate) use stream::{
    create_stream, legacy_default_stream, stream_synchronize, stream_wait_event,
};

use cudarc::driver::result::DriverError;
use cudarc::driver::sys::CUresult;

use crate::error::GpuError;

/// Turns a cudarc [`DriverError`] into our error, naming the call that failed.
pub(crate) fn driver_error(call: &'static str, err: DriverError) -> GpuError {
    let name = err
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", err.0));
    let message = match err.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    };
    GpuError::Driver { call, message }
}

/// Adds the call's name to a cudarc result.
trait CallName<T> {
    fn call(self, name: &'static str) -> Result<T, GpuError>;
}

impl<T> CallName<T> for Result<T, DriverError> {
    fn call(self, name: &'static str) -> Result<T, GpuError> {
        self.map_err(|e| driver_error(name, e))
    }
}

/// Why a driver allocation failed. Out-of-memory is kept apart so sources and allocators can
/// report it as such (and free caches and retry) without parsing messages.
#[derive(Debug)]
pub(crate) enum AllocFailure {
    /// `CUDA_ERROR_OUT_OF_MEMORY`.
    OutOfMemory,
    /// Any other failure.
    Driver(GpuError),
}

fn alloc_failure(call: &'static str, err: DriverError) -> AllocFailure {
    if err.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        AllocFailure::OutOfMemory
    } else {
        AllocFailure::Driver(driver_error(call, err))
    }
}
