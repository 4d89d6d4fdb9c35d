//! Driver library, devices and contexts: loading and initialising the driver, retaining a
//! device's primary context, binding it to the calling thread, device attributes.

use std::sync::{Arc, OnceLock};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::CudaContext;

use super::{driver_error, CallName};
use crate::error::GpuError;

/// Whether libcuda can be loaded. Probed once: cudarc panics on the first driver call when the
/// library is missing, so every path into the driver goes through [`init`] which checks this.
fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: `is_culib_present` is unsafe only because loading a shared library runs its
        // initialisers. It loads the NVIDIA driver library under its standard names, which is
        // exactly what cudarc does on the first driver call anyway; libcuda's initialisers
        // are designed to run in any process that loads it. The library is unloaded again.
        unsafe { sys::is_culib_present() }
    })
}

/// `cuInit`, after checking that the driver library exists. A machine with a driver but no
/// device reports `Ok(false)`.
fn init() -> Result<bool, GpuError> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    match result::init() {
        Ok(()) => Ok(true),
        Err(DriverError(CUresult::CUDA_ERROR_NO_DEVICE)) => Ok(false),
        Err(e) => Err(driver_error("cuInit", e)),
    }
}

/// `cuDeviceGetCount` (0 when the driver finds no device).
pub(crate) fn device_count() -> Result<usize, GpuError> {
    if !init()? {
        return Ok(0);
    }
    let count = result::device::get_count().call("cuDeviceGetCount")?;
    // A negative count would be a driver bug; treat it as no device rather than wrapping.
    Ok(usize::try_from(count).unwrap_or(0))
}

/// Retains the primary context of device `ordinal` (`cuDevicePrimaryCtxRetain`) and binds it
/// to the calling thread.
pub(crate) fn retain_primary_context(ordinal: usize) -> Result<Arc<CudaContext>, GpuError> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(GpuError::NoSuchDevice { ordinal, count });
    }
    CudaContext::new(ordinal).call("cuDevicePrimaryCtxRetain")
}

/// Makes `ctx` current on the calling thread.
pub(crate) fn bind(ctx: &CudaContext) -> Result<(), GpuError> {
    ctx.bind_to_thread().call("cuCtxSetCurrent")
}

/// `cuDeviceGetAttribute`.
pub(crate) fn device_attribute(
    ctx: &CudaContext,
    attribute: sys::CUdevice_attribute,
) -> Result<i32, GpuError> {
    ctx.attribute(attribute).call("cuDeviceGetAttribute")
}

/// `cuDeviceGetName`.
pub(crate) fn device_name(ctx: &CudaContext) -> Result<String, GpuError> {
    ctx.name().call("cuDeviceGetName")
}

/// `cuDeviceTotalMem`.
pub(crate) fn device_total_memory(ctx: &CudaContext) -> Result<usize, GpuError> {
    ctx.total_mem().call("cuDeviceTotalMem")
}

/// `cuMemGetInfo`: `(free, total)` bytes of the context's device.
pub(crate) fn memory_info(ctx: &CudaContext) -> Result<(usize, usize), GpuError> {
    bind(ctx)?;
    result::mem_get_info().call("cuMemGetInfo")
}

/// `cuCtxSynchronize`: waits for all work in the context.
pub(crate) fn context_synchronize(ctx: &CudaContext) -> Result<(), GpuError> {
    ctx.synchronize().call("cuCtxSynchronize")
}

/// The compute capability `(major, minor)` of `ctx`'s device: two `cuDeviceGetAttribute`
/// calls.
pub(crate) fn compute_capability(ctx: &CudaContext) -> Result<(i32, i32), GpuError> {
    ctx.compute_capability().call("cuDeviceGetAttribute")
}
