//! Stream-ordered memory pools (`cuMemAllocFromPoolAsync`, `cuMemFreeAsync`) and their
//! attributes.

use std::ffi::c_void;

use cudarc::driver::result;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream};

use super::context::{bind, device_attribute};
use super::{alloc_failure, AllocFailure, CallName};
use crate::error::GpuError;

/// A device's default memory pool (`cuDeviceGetDefaultMemPool`). Only [`default_mem_pool`]
/// makes one, so the handle is always valid: the default pool lives as long as the device's
/// context, which the holder keeps retained. Pool calls take that context and bind it, like
/// every other call here.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemPool(sys::CUmemoryPool);

// SAFETY: a `CUmemoryPool` is an opaque handle the driver owns; the driver's pool API is
// thread safe, and the handle is never dereferenced on the host.
unsafe impl Send for MemPool {}
// SAFETY: as for `Send`: all access goes through thread-safe driver calls.
unsafe impl Sync for MemPool {}

/// Whether the device supports stream-ordered allocation (`cuMemAllocAsync`).
pub(crate) fn supports_mem_pools(ctx: &CudaContext) -> Result<bool, GpuError> {
    let supported = device_attribute(
        ctx,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
    )?;
    Ok(supported > 0)
}

/// `cuDeviceGetDefaultMemPool`.
pub(crate) fn default_mem_pool(ctx: &CudaContext) -> Result<MemPool, GpuError> {
    bind(ctx)?;
    // SAFETY: `cu_device` is the device the live context `ctx` was created for.
    let pool = unsafe { result::device::get_default_mem_pool(ctx.cu_device()) }
        .call("cuDeviceGetDefaultMemPool")?;
    Ok(MemPool(pool))
}

/// A 64-bit pool attribute (release threshold, reserved memory and its peak, peak of used
/// memory).
#[derive(Clone, Copy, Debug)]
pub(crate) enum PoolAttribute {
    ReleaseThreshold,
    ReservedCurrent,
    ReservedHigh,
    UsedHigh,
}

impl PoolAttribute {
    fn raw(self) -> sys::CUmemPool_attribute {
        use sys::CUmemPool_attribute as A;
        match self {
            PoolAttribute::ReleaseThreshold => A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            PoolAttribute::ReservedCurrent => A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
            PoolAttribute::ReservedHigh => A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
            PoolAttribute::UsedHigh => A::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
        }
    }
}

/// `cuMemPoolGetAttribute` for a 64-bit attribute.
pub(crate) fn pool_get(
    ctx: &CudaContext,
    pool: MemPool,
    attribute: PoolAttribute,
) -> Result<u64, GpuError> {
    bind(ctx)?;
    let mut value: u64 = 0;
    // SAFETY: `pool` is a valid pool (see `MemPool`), and every `PoolAttribute` is a
    // `cuuint64_t` attribute, so the driver writes exactly one `u64` through `value`.
    unsafe {
        result::mem_pool::get_attribute(
            pool.0,
            attribute.raw(),
            (&mut value as *mut u64).cast::<c_void>(),
        )
    }
    .call("cuMemPoolGetAttribute")?;
    Ok(value)
}

/// `cuMemPoolSetAttribute` for a 64-bit attribute. The driver allows setting the release
/// threshold to any value and the two high-water marks to 0 only (a reset).
pub(crate) fn pool_set(
    ctx: &CudaContext,
    pool: MemPool,
    attribute: PoolAttribute,
    value: u64,
) -> Result<(), GpuError> {
    bind(ctx)?;
    let mut value = value;
    // SAFETY: `pool` is valid, and every `PoolAttribute` is a `cuuint64_t` attribute, so the
    // driver reads exactly one `u64` through the pointer.
    unsafe {
        result::mem_pool::set_attribute(
            pool.0,
            attribute.raw(),
            (&mut value as *mut u64).cast::<c_void>(),
        )
    }
    .call("cuMemPoolSetAttribute")
}

/// `cuMemPoolTrimTo`: returns unused pool memory to the driver, keeping at least `keep`
/// bytes reserved. Memory still allocated, or freed by work that has not completed, stays.
pub(crate) fn pool_trim_to(ctx: &CudaContext, pool: MemPool, keep: usize) -> Result<(), GpuError> {
    bind(ctx)?;
    // SAFETY: `pool` is a valid pool (see `MemPool`).
    unsafe { result::mem_pool::trim_to(pool.0, keep) }.call("cuMemPoolTrimTo")
}

/// `cuMemAllocFromPoolAsync`: `bytes` from `pool`, usable on `stream` in stream order (and on
/// other streams once they are ordered after this point).
pub(crate) fn pool_alloc_async(
    pool: MemPool,
    bytes: usize,
    stream: &CudaStream,
) -> Result<u64, AllocFailure> {
    bind(stream.context()).map_err(AllocFailure::Driver)?;
    // SAFETY: `pool` is valid and `stream` alive (borrowed). The call is unsafe only because
    // the memory is uninitialised; readers uphold initialisation themselves.
    unsafe { result::mem_pool::alloc_async(pool.0, bytes, stream.cu_stream()) }
        .map_err(|e| alloc_failure("cuMemAllocFromPoolAsync", e))
}

/// `cuMemFreeAsync`: frees `addr` in stream order on `stream`.
///
/// # Safety
///
/// `addr` came from [`pool_alloc_async`], has not been freed, and all work that uses it is
/// ordered before this point of `stream` (queued earlier on `stream`, or on streams `stream`
/// waits on).
pub(crate) unsafe fn free_async(addr: u64, stream: &CudaStream) -> Result<(), GpuError> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees a live pool allocation whose uses are all ordered before
    // this point of the (alive, borrowed) stream.
    unsafe { result::free_async(addr, stream.cu_stream()) }.call("cuMemFreeAsync")
}
