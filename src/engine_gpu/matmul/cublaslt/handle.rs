//! cuBLASLt handles: one per thread and device, made on first use with the device's context
//! current, destroyed when the thread ends.

use std::cell::RefCell;
use std::collections::HashMap;

use cudarc::cublaslt::sys as lt;
use cudarc::driver::CudaContext;

use super::{require, Call};
use crate::error::GpuError;
use crate::runtime::driver::bind;
use crate::runtime::graph::state;

/// A cuBLASLt handle, destroyed on drop.
struct Handle(lt::cublasLtHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was made by `cublasLtCreate` and is destroyed once, here; its
        // owner (this thread's map) no longer hands it out.
        let _ = unsafe { lt::cublasLtDestroy(self.0) };
    }
}

thread_local! {
    /// This thread's handle per device ordinal.
    static HANDLES: RefCell<HashMap<usize, Handle>> = RefCell::new(HashMap::new());
}

/// Runs `f` with this thread's handle for device `ordinal` (made on first use, with the
/// device's context current).
pub(super) fn with_handle<R>(
    ctx: &CudaContext,
    f: impl FnOnce(lt::cublasLtHandle_t) -> Result<R, GpuError>,
) -> Result<R, GpuError> {
    require()?;
    bind(ctx)?;
    // Inside a graph capture (`Gpu::capture`, global mode) cuBLASLt's own setup work (its
    // first use of a handle or a kernel) makes calls the global mode refuses, and the call
    // fails with CUBLAS_STATUS_INTERNAL_ERROR: relax this thread's mode around cuBLASLt, as
    // the allocator does around `cuMemAlloc`. Its launches are still recorded into the graph;
    // a synchronisation of the capturing stream is still refused.
    state::relaxed(|| with_handle_relaxed(ctx, f))
}

fn with_handle_relaxed<R>(
    ctx: &CudaContext,
    f: impl FnOnce(lt::cublasLtHandle_t) -> Result<R, GpuError>,
) -> Result<R, GpuError> {
    let ordinal = ctx.ordinal();
    let raw = HANDLES.with(|h| -> Result<lt::cublasLtHandle_t, GpuError> {
        let mut map = h.borrow_mut();
        if let Some(handle) = map.get(&ordinal) {
            return Ok(handle.0);
        }
        let mut raw: lt::cublasLtHandle_t = std::ptr::null_mut();
        // SAFETY: the library is present (`require`); `raw` is a live local it writes.
        unsafe { lt::cublasLtCreate(&mut raw) }.call("cublasLtCreate")?;
        map.insert(ordinal, Handle(raw));
        Ok(raw)
    })?;
    f(raw)
}
